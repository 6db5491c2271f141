//! The integration tests, in one binary: linking wasmtime, Cranelift and
//! monty once instead of once per area. One module per area; what they
//! share (the engine, test tools, registries, policies, run helpers and
//! checks) is in `fixtures`.
//!
//! Run one area with a filter: `cargo test --test it adversarial::`.

mod fixtures;

mod adversarial;
mod artifacts;
mod auth;
mod auth_provider;
mod cancellation;
mod capacity;
mod check;
mod cli;
mod corpus;
mod cpython;
mod discovery;
mod durable;
mod durable_cli;
mod durable_serve;
mod flow;
mod fuzz_regressions;
mod generated;
mod interruption_points;
mod invoker;
mod invoker_gates;
mod journal;
mod layers;
mod live;
mod mcp_serve;
mod mcp_upstream;
mod monty_cases;
mod observability;
mod permissions;
mod provenance;
mod readme;
mod resident;
mod s3;
mod sandbox;
mod seeded;
mod sessions;
mod sessions_warm;
mod skills;
mod soak;
mod specs;
mod store;
mod sweeps;
mod tasks;
mod tool_kinds;
mod vendored_monty;
