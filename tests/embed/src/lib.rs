//! Nothing: the crate is its test (`tests/resident.rs`).
