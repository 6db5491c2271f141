//! `chainbox serve`: chainbox as an MCP server (see the module docs of [`crate::mcp`]).
