//! Stopping the CPython guest: the guard page ([`page`]) and the checks
//! that read it ([`checks`]).

#[cfg(feature = "passes")]
pub mod checks;
pub mod page;
