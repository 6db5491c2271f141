//! Upstream MCP servers as chainbox tools (see the module docs of [`crate::mcp`]).
