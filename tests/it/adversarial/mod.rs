//! The adversarial suite of "Prove the sandbox holds": hostile scripts,
//! hostile tools and hostile callers against one shared engine. Every case
//! asserts the typed ending (`status`, `error.kind`), that the trace holds
//! every call made, and that the next chain on the same engine succeeds
//! (the host process being alive is implied by the test running on).
//!
//! Limits are tight (64 MiB, 1 s CPU, 2 s total) so the suite stays fast.
//! The engine, tools, registry (`adversarial_registry`), policies (`tight`,
//! `cpu_capped`) and checks the cases share are in `crate::fixtures`.

mod both_guests;
mod cancellation;
mod concurrency;
mod cpu;
mod escapes;
mod handlers;
mod memory;
mod names;
mod output;
mod stack;
mod tool_calls;
mod tool_results;
