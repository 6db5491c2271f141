//! The host side of the guest contract: the monty guest's `chainbox`
//! core-wasm imports (`chainbox_protocol::imports`, and the only code that
//! touches guest memory) and the CPython guest's `host` interface
//! (`guest/cpython/wit/chain.wit`, whose strings are read in place in its
//! memory, as [`wasmtime::component::WasmStr`]s, never copied whole: each
//! is length-checked first, as the monty guest's messages are). Both carry
//! the same protocol messages and end in the same functions below, so a
//! tool call behaves the same from either guest.

use chainbox_protocol::{
    CallOutcome, Completions, Finish, FsOutcome, LoadArtifact, MAX_GUEST_MESSAGE_BYTES, ToolCall, Wait, decode, encode,
    imports, sleep_of,
};
use monty_fs::MountCallOutcome;
use monty_types::{ExcType, MontyException, MontyObject, OsFunctionCall};
use std::sync::Arc;
use std::time::Duration;
use tracing::instrument::WithSubscriber as _;

use wasmtime::component::{self, WasmStr};
use wasmtime::{AsContext, StoreContextMut};
use wasmtime::{Caller, Linker};

use super::{ChainState, Fatal, c_math};
use crate::invoker::{Admitted, InvokerSession};

/// Runs `f` on the `len` bytes at `ptr` in guest memory, in place (no copy),
/// refusing oversize or out-of-bounds requests.
fn with_guest_bytes<R>(
    caller: &mut Caller<'_, ChainState>,
    ptr: i32,
    len: i32,
    f: impl FnOnce(&[u8]) -> R,
) -> wasmtime::Result<R> {
    let (ptr, len) = (ptr as u32 as usize, len as u32 as usize);
    if len > MAX_GUEST_MESSAGE_BYTES {
        let e = format!("guest message of {len} bytes exceeds the {MAX_GUEST_MESSAGE_BYTES}-byte limit");
        return Err(caller.data_mut().fail(Fatal::Protocol(e)));
    }
    let Some(memory) = caller.data().guest_memory else {
        return Err(caller
            .data_mut()
            .fail(Fatal::Protocol("guest exports no memory".into())));
    };
    let result = ptr
        .checked_add(len)
        .and_then(|end| memory.data(&caller).get(ptr..end))
        .map(f);
    result.ok_or_else(|| {
        caller
            .data_mut()
            .fail(Fatal::Protocol("guest passed an out-of-bounds buffer".into()))
    })
}

/// Decodes the guest's `what` message at `ptr`, straight from its memory.
fn decode_guest<T: serde::de::DeserializeOwned>(
    caller: &mut Caller<'_, ChainState>,
    what: &'static str,
    ptr: i32,
    len: i32,
) -> wasmtime::Result<T> {
    let decoded = with_guest_bytes(caller, ptr, len, |bytes| decode::<T>(what, bytes))?;
    decoded.map_err(|e| caller.data_mut().fail(Fatal::Protocol(e.to_string())))
}

/// Registers the `chainbox` host imports (and the WASI preview 1 functions)
/// on the engine's linker.
pub(crate) fn add_to_linker(linker: &mut Linker<ChainState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p1::add_to_linker_async(linker, |s: &mut ChainState| &mut s.wasi)?;
    let m = imports::MODULE;

    linker.func_wrap(m, imports::REQUEST, |mut caller: Caller<'_, ChainState>| -> i32 {
        let state = caller.data_mut();
        let request = state.request.take().unwrap_or_default();
        state.stage(request)
    })?;

    linker.func_wrap(
        m,
        imports::TAKE,
        |mut caller: Caller<'_, ChainState>, ptr: i32, len: i32| -> wasmtime::Result<()> {
            let staged = std::mem::take(&mut caller.data_mut().staged);
            if len as u32 as usize != staged.len() {
                return Err(caller
                    .data_mut()
                    .fail(Fatal::Protocol("guest asked for the wrong message length".into())));
            }
            let Some(memory) = caller.data().guest_memory else {
                return Err(caller
                    .data_mut()
                    .fail(Fatal::Protocol("guest exports no memory".into())));
            };
            if memory.write(&mut caller, ptr as u32 as usize, &staged).is_err() {
                return Err(caller
                    .data_mut()
                    .fail(Fatal::Protocol("guest passed an out-of-bounds buffer".into())));
            }
            Ok(())
        },
    )?;

    linker.func_wrap_async(
        m,
        imports::CALL,
        |mut caller: Caller<'_, ChainState>, (ptr, len): (i32, i32)| {
            Box::new(async move {
                let call: ToolCall = decode_guest(&mut caller, "tool call", ptr, len)?;
                let outcome = call_now(caller.data_mut(), call).await?;
                Ok(caller.data_mut().stage(outcome))
            })
        },
    )?;

    linker.func_wrap(
        m,
        imports::START,
        |mut caller: Caller<'_, ChainState>, id: i32, ptr: i32, len: i32| -> wasmtime::Result<()> {
            let call: ToolCall = decode_guest(&mut caller, "tool call", ptr, len)?;
            start(caller.data_mut(), id as u32, call)
        },
    )?;

    linker.func_wrap_async(
        m,
        imports::WAIT,
        |mut caller: Caller<'_, ChainState>, (ptr, len): (i32, i32)| {
            Box::new(async move {
                let wait: Wait = decode_guest(&mut caller, "wait", ptr, len)?;
                let completions = wait_for(caller.data_mut(), wait, None).await?;
                Ok(caller.data_mut().stage(completions))
            })
        },
    )?;

    linker.func_wrap_async(
        m,
        imports::OS,
        |mut caller: Caller<'_, ChainState>, (ptr, len): (i32, i32)| {
            Box::new(async move {
                let call: OsFunctionCall = decode_guest(&mut caller, "os call", ptr, len)?;
                let clock = caller.data().meters.clock.clone();
                let host = clock.enter_host();
                let outcome = os_call(caller.data_mut(), call).await;
                clock.leave_host(host);
                Ok(caller.data_mut().stage(encode(&outcome)))
            })
        },
    )?;

    linker.func_wrap(
        m,
        imports::LOAD_ARTIFACT,
        |mut caller: Caller<'_, ChainState>, ptr: i32, len: i32| -> wasmtime::Result<i32> {
            let request: LoadArtifact = decode_guest(&mut caller, "load_artifact", ptr, len)?;
            let outcome = load_artifact(caller.data_mut(), request);
            Ok(caller.data_mut().stage(outcome))
        },
    )?;

    linker.func_wrap(
        m,
        imports::STDOUT,
        |mut caller: Caller<'_, ChainState>, ptr: i32, len: i32| -> wasmtime::Result<()> {
            let text = with_guest_bytes(&mut caller, ptr, len, |bytes| {
                String::from_utf8_lossy(bytes).into_owned()
            })?;
            caller.data().meters.print(&text);
            Ok(())
        },
    )?;

    linker.func_wrap(
        m,
        imports::FINISH,
        |mut caller: Caller<'_, ChainState>, ptr: i32, len: i32| -> wasmtime::Result<()> {
            let finish: Finish = decode_guest(&mut caller, "finish", ptr, len)?;
            caller.data_mut().finish = Some(finish);
            Ok(())
        },
    )?;
    linker.func_wrap(
        m,
        imports::CELL,
        |mut caller: Caller<'_, ChainState>, index: i32| -> wasmtime::Result<()> {
            enter_cell(caller.data_mut(), index as u32)
        },
    )?;
    linker.func_wrap(
        m,
        imports::C_MATH,
        |mut caller: Caller<'_, ChainState>, code: i32, x: f64, y: f64| -> wasmtime::Result<f64> {
            match c_math::eval(code as u32, x, y) {
                Some(result) => Ok(result),
                None => Err(caller
                    .data_mut()
                    .fail(Fatal::Protocol(format!("unknown C math function {code}")))),
            }
        },
    )?;
    Ok(())
}

/// The CPython guest's imports: the `host` interface of
/// `guest/cpython/wit/chain.wit`, and WASI preview 2 (whose capabilities the
/// chain's `WasiCtx` limits to clocks, randomness and the workspace), its
/// byte-writing functions counted against the workspace quota ([`super::quota`]).
pub(crate) fn add_to_component_linker(linker: &mut component::Linker<ChainState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    super::quota::add_to_linker(linker)?;
    let mut host = linker.instance(CPYTHON_HOST_INTERFACE)?;
    host.func_wrap(
        "start",
        |mut store: StoreContextMut<'_, ChainState>, (id, call): (u32, WasmStr)| {
            let call: ToolCall = decode_component(&mut store, "tool call", &call)?;
            start(store.data_mut(), id, call)
        },
    )?;
    host.func_wrap(
        "arm",
        |mut store: StoreContextMut<'_, ChainState>, (memory,): (super::interrupt::GuestMemory,)| {
            let state = store.data_mut();
            let Some(interrupt) = state.interrupt.clone() else {
                return Ok(());
            };
            match interrupt.arm(memory) {
                Ok(page) => {
                    state.guard_page = page;
                    Ok(())
                }
                Err(e) => Err(state.fail(Fatal::Protocol(e.to_string()))),
            }
        },
    )?;
    host.func_wrap("cancel", |mut store: StoreContextMut<'_, ChainState>, (id,): (u32,)| {
        cancel(store.data_mut(), id);
        Ok(())
    })?;
    host.func_wrap_async(
        "call",
        |mut store: StoreContextMut<'_, ChainState>, (call,): (WasmStr,)| {
            Box::new(async move {
                let call: ToolCall = decode_component(&mut store, "tool call", &call)?;
                let outcome = call_now(store.data_mut(), call).await?;
                Ok((String::from_utf8_lossy(&outcome).into_owned(),))
            })
        },
    )?;
    host.func_wrap_async(
        "wait",
        |mut store: StoreContextMut<'_, ChainState>, (wait, timeout_ns): (WasmStr, Option<u64>)| {
            Box::new(async move {
                let wait: Wait = decode_component(&mut store, "wait", &wait)?;
                let completions = wait_for(store.data_mut(), wait, timeout_ns.map(Duration::from_nanos)).await?;
                Ok((String::from_utf8_lossy(&completions).into_owned(),))
            })
        },
    )?;
    host.func_wrap(
        "load-artifact",
        |mut store: StoreContextMut<'_, ChainState>, (request,): (WasmStr,)| {
            let request: LoadArtifact = decode_component(&mut store, "load_artifact", &request)?;
            let state = store.data_mut();
            Ok((String::from_utf8_lossy(&load_artifact(state, request)).into_owned(),))
        },
    )?;
    host.func_wrap(
        "stdout",
        |store: StoreContextMut<'_, ChainState>, (text,): (WasmStr,)| {
            // Read in place: the bounded stdout copies only what it keeps.
            let text = text.to_str(store.as_context())?;
            store.data().meters.print(&text);
            Ok(())
        },
    )?;
    host.func_wrap(
        "cell",
        |mut store: StoreContextMut<'_, ChainState>, (index,): (u32,)| enter_cell(store.data_mut(), index),
    )?;
    host.func_wrap(
        "c-math",
        |mut store: StoreContextMut<'_, ChainState>, (code, x, y): (u32, f64, f64)| match c_math::eval(code, x, y) {
            Some(result) => Ok((result,)),
            None => Err(store
                .data_mut()
                .fail(Fatal::Protocol(format!("unknown C math function {code}")))),
        },
    )?;
    Ok(())
}

/// The WIT interface the CPython guest imports its host functions from.
const CPYTHON_HOST_INTERFACE: &str = "chainbox:guest/host@0.1.0";

/// Whether `component` is a CPython guest whose chains can be stopped: it
/// imports `arm`, as the build that puts the interruption points in makes
/// it (`guest/build/src/interrupt`). A component without them (a stale
/// `CHAINBOX_CPYTHON_WASM`) would run a CPU-bound script past every limit.
pub(crate) fn check_cpython_guest(
    engine: &wasmtime::Engine,
    component: &component::Component,
) -> Result<(), UnstoppableGuest> {
    let ty = component.component_type();
    let arms = ty
        .get_import(engine, CPYTHON_HOST_INTERFACE)
        .is_some_and(|host| match host.ty {
            component::types::ComponentItem::ComponentInstance(host) => host.get_export(engine, "arm").is_some(),
            _ => false,
        });
    if arms { Ok(()) } else { Err(UnstoppableGuest) }
}

/// A CPython guest without the `arm` import (see [`check_cpython_guest`]).
#[derive(Debug, thiserror::Error)]
#[error(
    "the CPython guest does not import `{CPYTHON_HOST_INTERFACE}#arm`: it was built without interruption points, so \
     its chains could not be stopped (rebuild it, or unset CHAINBOX_CPYTHON_WASM)"
)]
pub struct UnstoppableGuest;

/// Decodes a message the CPython guest passed as a string, in place in its
/// memory (a script can call the `host` bridge directly, with a string of
/// any size its memory holds). One over [`MAX_GUEST_MESSAGE_BYTES`] is
/// refused before anything is copied or parsed, as the monty guest's are:
/// by wasmtime as it lifts the argument (the store's hostcall fuel, see
/// `new_store`), and here again should that fuel ever be larger.
fn decode_component<T: serde::de::DeserializeOwned>(
    store: &mut StoreContextMut<'_, ChainState>,
    what: &'static str,
    text: &WasmStr,
) -> wasmtime::Result<T> {
    let decoded = match text.to_str(store.as_context()) {
        // The guest's strings are UTF-8 (componentize-py's encoding), so
        // this borrows its memory: nothing is copied yet.
        Ok(text) if text.len() > MAX_GUEST_MESSAGE_BYTES => Err(format!(
            "guest message of {} bytes exceeds the {MAX_GUEST_MESSAGE_BYTES}-byte limit",
            text.len()
        )),
        Ok(text) => decode::<T>(what, text.as_bytes()).map_err(|e| e.to_string()),
        Err(e) => Err(format!("the guest's {what} is not a valid string: {e}")),
    };
    decoded.map_err(|e| store.data_mut().fail(Fatal::Protocol(e)))
}

/// Starts `call` running concurrently with the script, under `id`; ends the
/// chain when the call budget is spent.
fn start(state: &mut ChainState, id: u32, call: ToolCall) -> wasmtime::Result<()> {
    let (session, admitted) = admit(state, call)?;
    let slot = admitted.slot();
    // With the chain's subscriber (an embedder's may be its thread's
    // alone): the call's span is its chain's child wherever it runs.
    let handle = state
        .running
        .spawn(async move { (id, session.run(admitted).await) }.with_current_subscriber());
    state.running_ids.insert(handle.id(), id);
    state.cancellable.insert(id, (handle, slot));
    Ok(())
}

/// What a call's record says when the script stopped waiting for it.
const CANCELLED_BY_SCRIPT: &str = "cancelled: the script stopped waiting for it";

/// Stops call `id`, which the script no longer waits for (the CPython
/// guest's cancelled task), and closes its record; one that already
/// finished is left as it ended.
fn cancel(state: &mut ChainState, id: u32) {
    if let Some((task, slot)) = state.cancellable.remove(&id) {
        task.abort();
        state.session.close_cancelled(slot, CANCELLED_BY_SCRIPT);
    }
}

/// The guest begins cell `index` of a session's run (the `cell` import);
/// a cell the run does not have ends the chain.
fn enter_cell(state: &mut ChainState, index: u32) -> wasmtime::Result<()> {
    let session = state.session.clone();
    session
        .enter_cell(index)
        .map_err(|refused| state.fail(Fatal::Refused(refused)))
}

/// Admits `call` against the chain's budget (ending the chain when it is
/// spent): the session to run it on, and the admitted call.
fn admit(state: &mut ChainState, call: ToolCall) -> wasmtime::Result<(Arc<InvokerSession>, Admitted)> {
    let session = state.session.clone();
    let admitted = session
        .admit(call)
        .map_err(|refused| state.fail(Fatal::Refused(refused)))?;
    Ok((session, admitted))
}

/// Runs `call` to its end on the chain's own task and answers with the
/// encoded [`CallOutcome`] (both guests' awaited call; for the CPython
/// guest, what `start` then `wait` for that call alone do, without a task,
/// a join set or a `Completions` between them). The CPU clock stops
/// meanwhile (the tool's work is not the script's CPU; see
/// `CpuClock::leave_host`); a tool that panics is the invoker's to
/// contain, as for every call.
async fn call_now(state: &mut ChainState, call: ToolCall) -> wasmtime::Result<Vec<u8>> {
    let (session, admitted) = admit(state, call)?;
    let clock = state.meters.clock.clone();
    let host = clock.enter_host();
    let outcome = session.run(admitted).await;
    clock.leave_host(host);
    suspend_if_asked(state).await?;
    Ok(encode(&outcome))
}

/// Ends the chain if a call suspended it (a durable chain's call that waits
/// on a decision): first the calls still running finish, so each is
/// journaled and none runs again when the chain resumes.
async fn suspend_if_asked(state: &mut ChainState) -> wasmtime::Result<()> {
    if let Some(failure) = state.session.journal_failure() {
        return Err(state.fail(Fatal::Journal(failure)));
    }
    if state.session.suspended().is_none() {
        return Ok(());
    }
    while let Some(joined) = state.running.join_next().await {
        let _ = joined;
    }
    Err(state.fail(Fatal::Suspended))
}

/// Answers a `wait` with the encoded [`Completions`]: the named calls that
/// have finished (at least one, unless `timeout` passes first). The CPU
/// clock stops meanwhile: waiting is not the script's CPU.
async fn wait_for(state: &mut ChainState, Wait { ids }: Wait, timeout: Option<Duration>) -> wasmtime::Result<Vec<u8>> {
    let clock = state.meters.clock.clone();
    clock.pause();
    let done = match (timeout, ids.is_empty()) {
        (None, _) => collect(state, &ids).await,
        (Some(pause), true) => {
            // A sleep: parks this chain only; the chain's deadline still bounds it.
            tokio::time::sleep(pause).await;
            Vec::new()
        }
        (Some(limit), false) => tokio::time::timeout(limit, collect(state, &ids))
            .await
            .unwrap_or_default(),
    };
    clock.resume();
    suspend_if_asked(state).await?;
    Ok(encode(&Completions { done }))
}

/// Answers a `load_artifact` with the encoded [`CallOutcome`].
fn load_artifact(state: &mut ChainState, LoadArtifact { handle }: LoadArtifact) -> Vec<u8> {
    encode(&state.session.load_artifact(&handle))
}

/// Waits until at least one of `ids` has finished and returns every one of
/// them that has.
async fn collect(state: &mut ChainState, ids: &[u32]) -> Vec<(u32, CallOutcome)> {
    loop {
        let (ready, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut state.done)
            .into_iter()
            .partition(|(id, _)| ids.contains(id));
        state.done = rest;
        if !ready.is_empty() {
            return ready;
        }
        match state.running.join_next_with_id().await {
            Some(Ok((task, (id, outcome)))) => {
                state.running_ids.remove(&task);
                state.cancellable.remove(&id);
                state.done.push((id, outcome));
            }
            // A call the script cancelled: nobody waits for it.
            Some(Err(e)) if e.is_cancelled() => {
                state.running_ids.remove(&e.id());
            }
            Some(Err(e)) => {
                if let Some(id) = state.running_ids.remove(&e.id()) {
                    state.cancellable.remove(&id);
                    let message = "the tool call's task failed".to_owned();
                    state.done.push((id, CallOutcome::Error { message }));
                }
            }
            None => {
                // Nothing is running: the guest waits for calls it never
                // started. Answer instead of hanging.
                return ids
                    .iter()
                    .map(|id| {
                        let message = format!("call {id} was never started");
                        (*id, CallOutcome::Error { message })
                    })
                    .collect();
            }
        }
    }
}

/// Serves one OS request of the interpreter: workspace files and sleeps.
async fn os_call(state: &mut ChainState, call: OsFunctionCall) -> FsOutcome {
    if let Some(d) = sleep_of(&call) {
        // Parks this chain only; the chain's deadline still bounds it.
        tokio::time::sleep(d).await;
        return Ok(MontyObject::none());
    }
    if call.fs_primary_path().is_none() {
        return Err(call.on_no_handler());
    }
    let mut workspace = state.workspace.lock().unwrap_or_else(|p| p.into_inner());
    let mounts = match workspace.mounts() {
        Ok(m) => m,
        Err(e) => return Err(MontyException::new(ExcType::OSError, Some(e.to_string()))),
    };
    match mounts.handle_os_call(call) {
        MountCallOutcome::Handled(Ok(value)) => Ok(value),
        MountCallOutcome::Handled(Err(err)) => Err(err.into_exception()),
        MountCallOutcome::NotHandled(call) => Err(call.on_no_handler()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn a_cpython_guest_without_interruption_points_is_refused() {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        let engine = wasmtime::Engine::new(&config).expect("engine");
        let bare = wasm_encoder::Component::new().finish();
        let bare = component::Component::new(&engine, bare).expect("an empty component");
        let refused = check_cpython_guest(&engine, &bare).expect_err("refused");
        assert!(refused.to_string().contains("#arm"), "{refused}");
    }

    /// The names the guest module imports from `chainbox`.
    fn guest_imports() -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for payload in wasmparser::Parser::new(0).parse_all(crate::guests::GUEST_WASM) {
            if let Ok(wasmparser::Payload::ImportSection(section)) = payload {
                for import in section.into_imports().flatten() {
                    if import.module == imports::MODULE {
                        names.insert(import.name.to_owned());
                    }
                }
            }
        }
        names
    }

    /// With `Engine::new` refusing a guest whose imports the linker does not
    /// define (`instantiate_pre`), this pins the contract from both sides.
    #[test]
    fn the_guest_imports_exactly_the_protocols_imports() {
        let protocol: BTreeSet<String> = imports::ALL.iter().map(|s| s.to_string()).collect();
        assert_eq!(guest_imports(), protocol);
    }
}
