//! MCP, both ways, through the official Rust SDK (`rmcp`).
//!
//! - [`config`]: an `[[mcp]]` entry of the tools manifest, as data.
//! - [`upstream`]: MCP servers named by `[[mcp]]` entries of the tools
//!   manifest, started as child processes over stdio; their tools join the
//!   registry as local tools named `server__tool`, so chains call them like
//!   any other tool and the invoker polices every call.
//! - [`serve`]: `chainbox serve`, an MCP server (stdio or streamable HTTP)
//!   exposing one `run_chain` tool over a registry; `request_limit`
//!   bounds the requests it reads on both transports.
//! - [`sealed_state`]: the sealed `requestState` of `serve --state`, naming
//!   a suspended durable chain so that any node of its store resumes it.

pub mod config;
mod request_limit;
pub mod sealed_state;
pub mod serve;
pub mod upstream;
