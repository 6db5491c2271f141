//! The build passes over the CPython guest component that componentize-py
//! makes, run by chainbox's `build.rs`: 64-bit CPython's numeric hashes
//! spliced into its libpython ([`hashes`]), then interruption points in
//! every core module with a memory ([`interrupt::checks`]); both put their
//! rewritten modules back with [`component`]. Last, the snapshot's objects
//! are made immortal in its memory image ([`immortal`]). [`inputs`] is the key the
//! build keeps to rebuild the component only when a source changed.
//! [`interrupt::page`], the
//! guard page's layout, is shared with the engine, which protects it to
//! stop a guest (it needs no wasm libraries: the `passes` feature off).

#[cfg(feature = "passes")]
pub mod component;
#[cfg(feature = "passes")]
mod error;
#[cfg(feature = "passes")]
pub mod hashes;
#[cfg(feature = "passes")]
pub mod immortal;
#[cfg(feature = "passes")]
pub mod inputs;
pub mod interrupt;

#[cfg(feature = "passes")]
pub use error::Error;
