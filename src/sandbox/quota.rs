//! The CPython guest's workspace write quota. The monty guest's files go
//! through `monty-fs`, which counts every byte written against
//! [`MAX_WORKSPACE_WRITE_BYTES`]; the CPython guest writes through WASI
//! preview 2 instead, so the same cap is kept here, on the host: the WASI
//! functions that write bytes (`wasi:io/streams` output-stream writes,
//! zeroes and splices, and `wasi:filesystem` `descriptor.write`) are
//! redefined to count what they write and to refuse, with an I/O error the
//! script sees as `OSError`, once the chain has written its share. The
//! guest's stdout goes through its own `host.stdout`, not a WASI stream, and
//! it has no sockets, so every stream it writes is a workspace file.
//! Without the cap a script wrote host disk at disk speed for the whole
//! total timeout: WASI file I/O runs on tokio's blocking threads, outside
//! the chain's CPU clock.

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::filesystem::WasiFilesystemView;
use wasmtime_wasi::p2::bindings::filesystem::types::{self as fs, HostDescriptor};
use wasmtime_wasi::p2::bindings::io::streams::{self, HostOutputStream};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, FsError, StreamError};

use super::ChainState;
use crate::workspace::MAX_WORKSPACE_WRITE_BYTES;

const STREAMS: &str = "wasi:io/streams@0.2.12";
const FILESYSTEM: &str = "wasi:filesystem/types@0.2.12";

/// The WIT-level result of a stream write.
type WitStream<T> = wasmtime::Result<(Result<T, streams::StreamError>,)>;

impl ChainState {
    /// Takes `bytes` from the chain's workspace write allowance; `false`
    /// (and nothing taken) when they do not fit.
    fn take_write_allowance(&mut self, bytes: u64) -> bool {
        match self.written.checked_add(bytes) {
            Some(total) if total <= MAX_WORKSPACE_WRITE_BYTES => {
                self.written = total;
                true
            }
            _ => false,
        }
    }

    /// The error a refused write reports, converted for the guest: the
    /// disk-full error (`ENOSPC`), which the guest's libc reads back from
    /// the stream error and Python raises as `OSError`.
    fn quota_stream_error(&mut self) -> wasmtime::Result<streams::StreamError> {
        let error = StreamError::LastOperationFailed(wasmtime::Error::new(disk_full()));
        streams::Host::convert_stream_error(self.ctx().table, error)
    }
}

fn disk_full() -> std::io::Error {
    #[cfg(unix)]
    return std::io::Error::from_raw_os_error(libc::ENOSPC);
    #[cfg(not(unix))]
    return std::io::Error::other(format!(
        "workspace write limit of {MAX_WORKSPACE_WRITE_BYTES} bytes reached"
    ));
}

/// A stream result as the guest sees it (errors converted into its table).
fn to_wit<T>(state: &mut ChainState, result: Result<T, StreamError>) -> WitStream<T> {
    match result {
        Ok(value) => Ok((Ok(value),)),
        Err(e) => Ok((Err(streams::Host::convert_stream_error(state.ctx().table, e)?),)),
    }
}

/// Redefines the byte-writing WASI functions of `linker` (already holding
/// wasmtime-wasi's) with counting ones.
pub(crate) fn add_to_linker(linker: &mut Linker<ChainState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut io = linker.instance(STREAMS)?;
    io.func_wrap(
        "[method]output-stream.write",
        |mut store: StoreContextMut<'_, ChainState>, (stream, bytes): (Resource<DynOutputStream>, Vec<u8>)| {
            let state = store.data_mut();
            if !state.take_write_allowance(bytes.len() as u64) {
                return Ok((Err(state.quota_stream_error()?),));
            }
            let result = HostOutputStream::write(state.ctx().table, stream, bytes);
            to_wit(state, result)
        },
    )?;
    io.func_wrap_async(
        "[method]output-stream.blocking-write-and-flush",
        |mut store: StoreContextMut<'_, ChainState>, (stream, bytes): (Resource<DynOutputStream>, Vec<u8>)| {
            Box::new(async move {
                let state = store.data_mut();
                if !state.take_write_allowance(bytes.len() as u64) {
                    return Ok((Err(state.quota_stream_error()?),));
                }
                let result = HostOutputStream::blocking_write_and_flush(state.ctx().table, stream, bytes).await;
                to_wit(state, result)
            })
        },
    )?;
    io.func_wrap(
        "[method]output-stream.write-zeroes",
        |mut store: StoreContextMut<'_, ChainState>, (stream, len): (Resource<DynOutputStream>, u64)| {
            let state = store.data_mut();
            if !state.take_write_allowance(len) {
                return Ok((Err(state.quota_stream_error()?),));
            }
            let result = HostOutputStream::write_zeroes(state.ctx().table, stream, len);
            to_wit(state, result)
        },
    )?;
    io.func_wrap_async(
        "[method]output-stream.blocking-write-zeroes-and-flush",
        |mut store: StoreContextMut<'_, ChainState>, (stream, len): (Resource<DynOutputStream>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                if !state.take_write_allowance(len) {
                    return Ok((Err(state.quota_stream_error()?),));
                }
                let result = HostOutputStream::blocking_write_zeroes_and_flush(state.ctx().table, stream, len).await;
                to_wit(state, result)
            })
        },
    )?;
    io.func_wrap(
        "[method]output-stream.splice",
        |mut store: StoreContextMut<'_, ChainState>,
         (dest, src, len): (Resource<DynOutputStream>, Resource<DynInputStream>, u64)| {
            let state = store.data_mut();
            if !state.take_write_allowance(len) {
                return Ok((Err(state.quota_stream_error()?),));
            }
            let result = HostOutputStream::splice(state.ctx().table, dest, src, len);
            to_wit(state, result)
        },
    )?;
    io.func_wrap_async(
        "[method]output-stream.blocking-splice",
        |mut store: StoreContextMut<'_, ChainState>,
         (dest, src, len): (Resource<DynOutputStream>, Resource<DynInputStream>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                if !state.take_write_allowance(len) {
                    return Ok((Err(state.quota_stream_error()?),));
                }
                let result = HostOutputStream::blocking_splice(state.ctx().table, dest, src, len).await;
                to_wit(state, result)
            })
        },
    )?;
    let mut files = linker.instance(FILESYSTEM)?;
    files.func_wrap_async(
        "[method]descriptor.write",
        |mut store: StoreContextMut<'_, ChainState>, (fd, buf, offset): (Resource<fs::Descriptor>, Vec<u8>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                let result = if state.take_write_allowance(buf.len() as u64) {
                    HostDescriptor::write(&mut state.filesystem(), fd, buf, offset).await
                } else {
                    Err(FsError::from(fs::ErrorCode::InsufficientSpace))
                };
                match result {
                    Ok(written) => Ok((Ok(written),)),
                    Err(e) => Ok((Err(fs::Host::convert_error_code(&mut state.filesystem(), e)?),)),
                }
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}
