//! The workspace's resident-memory test (`tests/it/resident.rs`), built as
//! a crate depending on chainbox builds it: with the registry's wasmtime.

#[path = "../../it/resident.rs"]
mod resident;
