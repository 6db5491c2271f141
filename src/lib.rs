//! # chainbox
//!
//! Code mode for agents: a model writes one short Python script that calls
//! tools as `async` functions; chainbox runs it in a WebAssembly sandbox and
//! sends every tool call through a policy-enforcing invoker on the host.
//!
//! ```no_run
//! use std::sync::Arc;
//! use chainbox::{Approval, ChainPolicy, Engine, ToolRegistry, ToolRisk};
//! # async fn demo(weather: Arc<dyn chainbox::Tool>) -> Result<(), Box<dyn std::error::Error>> {
//! let engine = Engine::new()?; // compile once per process (cached on disk)
//! let registry = ToolRegistry::from_local([weather])?;
//! let result = engine
//!     .run(
//!         "w = await get_weather(city='Paris')\nw['temp_c']",
//!         &registry,
//!         &ChainPolicy::default(),
//!         &Approval::auto(ToolRisk::Safe),
//!     )
//!     .await;
//! println!("{} after {} calls", result.output_text, result.tool_calls);
//! # Ok(()) }
//! ```
//!
//! ## Core concepts
//! - [`Engine`]: one per process. Holds the wasmtime engine, the guest module
//!   (precompiled, cached on disk), the pooling allocator and the epoch ticker.
//! - A chain: one [`Engine::run`] call. It gets its own wasmtime `Store`, its
//!   own workspace directory and its own invoker session; many run at once.
//! - [`Tool`] / [`ToolRegistry`]: what scripts may call.
//! - [`ChainPolicy`]: limits and gates, enforced in code on the host.
//! - [`ChainRunResult`]: what comes back on every outcome, always with the
//!   [`ChainCallRecord`] trace of the calls made.
//!
//! See `ARCHITECTURE.md` for the code map and the invariants.
#![deny(missing_docs)]

pub mod approval;
pub mod artifacts;
#[cfg(feature = "oauth")]
pub mod auth;
pub mod chain;
pub mod check;
pub mod cli;
mod deep_stack;
pub mod demo;
pub mod digest;
pub mod discovery;
pub mod durable;
pub mod engine;
pub mod flow;
mod guests;
mod housekeeper;
pub mod invoker;
pub mod journal;
pub mod live;
pub mod manifest;
pub mod mcp;
pub mod policy;
mod prefault;
pub mod principal;
pub mod python_choice;
pub mod result;
pub mod run_chain;
mod sandbox;
pub mod skills;
pub mod store;
pub mod telemetry;
// Internal parts the fuzz targets drive directly: public only with the
// `fuzzing` feature, never a stable API.
#[cfg(feature = "fuzzing")]
pub mod shaping;
#[cfg(not(feature = "fuzzing"))]
mod shaping;
mod snapshot;
pub mod specs;
pub mod stubs;
pub mod tools;
mod util;
#[cfg(feature = "fuzzing")]
pub mod workspace;
#[cfg(not(feature = "fuzzing"))]
mod workspace;

pub use approval::{
    Approval, ApprovalDecision, ApprovalError, ApprovalHandler, ApprovalRequest, ChannelApproval, PendingApproval,
    TerminalApproval,
};
#[cfg(feature = "s3")]
pub use artifacts::ObjectArtifactStore;
pub use artifacts::{ArtifactRef, ArtifactStore, FsArtifactStore, MemoryArtifactStore};
pub use chain::{Cells, RunOptions};
pub use engine::{Engine, EngineConfig, EngineError};
pub use policy::{ChainPolicy, PolicyError, PythonChoice, TypeCheck};
pub use principal::{Owner, Principal};
pub use result::{
    CallStatus, ChainCallRecord, ChainError, ChainRunResult, ChainStatus, ChainWarning, ErrorKind, Interpreter,
    PolicyDecision, SessionCell,
};
pub use tools::{
    AnyTool, ContentBlock, Tool, ToolCallRequest, ToolContext, ToolError, ToolExecutionResult, ToolInfo, ToolKind,
    ToolOutput, ToolRegistry, ToolRisk,
};
