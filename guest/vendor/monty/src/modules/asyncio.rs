//! Implementation of the `asyncio` module.
//!
//! Provides a minimal implementation of Python's `asyncio` module with:
//! - `run(coro)`: Runs a coroutine to completion, equivalent to `await coro`
// chainbox patch (CHAINBOX.md)
//! - `gather(*awaitables, return_exceptions=False)`: Collects coroutines for concurrent execution
//! - `sleep(delay, result=None)`: An awaitable governed by the session's `SleepMode`
//!
//! Other asyncio functions (`create_task`, `wait`, etc.) are not implemented.
//! The host acts as the event loop - Monty yields control when tasks are blocked.

use monty_types::{OsFunctionCall, sleep_duration_saturating};
use num_traits::ToPrimitive;

use crate::{
    args::{ArgValues, FromArgs},
    asyncio::GatherFuture,
    bytecode::{CallResult, VM},
    defer_drop, defer_drop_mut,
    exception_private::{ExcType, ExcTypeExt, RunResult},
    heap::{Heap, HeapData, HeapId},
    heap_traits::DropGuard,
    intern::StaticStrings,
    modules::{
        ModuleFunctions,
        time::{HostSleep, host_sleep},
    },
    os_dispatch::PostConversionEffect,
    // chainbox patch: imports for this file's patches (CHAINBOX.md)
    types::{Module, PyTrait},
    value::Value,
};

/// Async Functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::Display, serde::Serialize, serde::Deserialize)]
#[strum(serialize_all = "lowercase")]
pub(crate) enum AsyncioFunctions {
    Gather,
    Run,
    Sleep,
}

/// Creates the `asyncio` module and allocates it on the heap.
///
/// The module contains only the `run`, `gather` and `sleep` functions. Other asyncio
/// functions are not implemented as they would require additional VM/scheduler features.
pub fn create_module(vm: &mut VM<'_>) -> HeapId {
    let mut module = Module::new(StaticStrings::Asyncio, vm.interns);

    module.set_attr(
        StaticStrings::Gather,
        Value::ModuleFunction(ModuleFunctions::Asyncio(AsyncioFunctions::Gather)),
        vm,
    );
    module.set_attr(
        StaticStrings::Run,
        Value::ModuleFunction(ModuleFunctions::Asyncio(AsyncioFunctions::Run)),
        vm,
    );
    module.set_attr(
        StaticStrings::Sleep,
        Value::ModuleFunction(ModuleFunctions::Asyncio(AsyncioFunctions::Sleep)),
        vm,
    );

    vm.heap.allocate(HeapData::Module(Box::new(module)))
}
pub(super) fn call(vm: &mut VM<'_>, functions: AsyncioFunctions, args: ArgValues) -> RunResult<CallResult> {
    match functions {
        AsyncioFunctions::Gather => gather(vm, args).map(CallResult::Value),
        AsyncioFunctions::Run => run(vm.heap, args),
        AsyncioFunctions::Sleep => sleep(vm, args),
    }
}

/// Returns an awaitable producing `result`, retained by [`PostConversionEffect::SleepResult`].
/// Unlike CPython, waiting starts at the call. The host answers with a future
/// or inline; [`host_sleep`] determines the destination and delay.
/// `Zero` and zero-length system sleeps settle immediately. See `limitations/asyncio.md`.
fn sleep(vm: &mut VM<'_>, args: ArgValues) -> RunResult<CallResult> {
    let SleepArgs { delay, result } = SleepArgs::from_args(args, vm)?;
    // `result` outlives `delay`: it moves into the awaitable once the delay is valid.
    let mut result_guard = DropGuard::new(result, vm);
    let delay = {
        let (_, vm) = result_guard.as_parts_mut();
        defer_drop!(delay, vm);
        let seconds = delay_seconds(delay, vm)?;
        // NaN is the one delay CPython refuses; the rest clamp.
        let delay = sleep_duration_saturating(seconds)
            .map_err(|_| ExcType::value_error("Invalid delay: NaN (not a number)"))?;
        host_sleep(vm, delay)
    };
    let (result, vm) = result_guard.into_parts();
    let call = match delay {
        Some(HostSleep::CallHost(delay)) => OsFunctionCall::AsyncSleep(delay),
        // Avoid a host round trip for a zero-length system sleep.
        Some(HostSleep::System(delay)) if !delay.is_zero() => OsFunctionCall::AsyncSystemSleep(delay),
        _ => return Ok(CallResult::Value(vm.settled_awaitable(result))),
    };
    Ok(CallResult::OsCallWithEffect {
        call,
        effect: PostConversionEffect::SleepResult { result }.into(),
    })
}

/// `asyncio.sleep(delay, result=None)` — a pure-Python `def` in CPython, so
/// both parameters bind by keyword and neither is type-checked while binding.
#[derive(FromArgs)]
#[from_args(name = "sleep", style = def)]
struct SleepArgs {
    #[from_args(static_string = "Delay")]
    delay: Value,
    #[from_args(static_string = "ResultArg", default = Value::None)]
    result: Value,
}

/// Reads `delay` as float seconds.
///
/// CPython never converts it: it compares `delay <= 0` and hands whatever is
/// left to the loop, so only real numbers work — an `__index__`-able class is
/// rejected here although `time.sleep()` accepts it — and a non-number fails as
/// an unsupported comparison rather than as a bad argument.
fn delay_seconds(delay: &Value, vm: &VM<'_>) -> RunResult<f64> {
    match delay {
        Value::Float(f) => Ok(*f),
        Value::Int(n) => Ok(*n as f64),
        Value::Bool(b) => Ok(f64::from(*b)),
        _ => match delay.as_long_int(vm) {
            Some(n) => Ok(n.to_f64().unwrap_or(f64::INFINITY)),
            None => Err(ExcType::type_error_ordering("<=", &delay.py_type_name(vm), "int")),
        },
    }
}

/// Implementation of `asyncio.run(coro)`.
///
/// Runs a single coroutine to completion, equivalent to `await coro` at the top level.
/// Accepts exactly one positional argument (the coroutine) and no keyword arguments.
///
/// Returns `CallResult::AwaitValue` so the VM executes `exec_get_awaitable` on
/// the value, which handles validation that it's actually a coroutine/awaitable.
fn run(heap: &mut Heap, args: ArgValues) -> RunResult<CallResult> {
    let coroutine = args.get_one_arg("asyncio.run", heap)?;
    Ok(CallResult::AwaitValue(coroutine))
}

/// Implementation of `asyncio.gather(*awaitables)`.
///
/// Collects coroutines and external futures for concurrent execution. Does NOT
/// spawn tasks immediately - just validates and stores the references. Tasks are
/// spawned when the returned `GatherFuture` is awaited (in the `Await` opcode handler).
///
/// # Behavior when awaited
///
/// 1. Each coroutine is spawned as a separate Task
/// 2. External futures are tracked for resolution by the host
/// 3. The current task blocks until all items complete
/// 4. Results are collected in order and returned as a list
// chainbox patch (CHAINBOX.md)
/// 5. On any task failure, sibling tasks are cancelled and the exception propagates,
///    unless `return_exceptions` is true: then the exception is that item's result
///
/// # Arguments
/// * `heap` - The heap for allocating the GatherFuture
/// * `args` - Variadic awaitable arguments (coroutines or external futures)
///
/// # Errors
/// Returns `TypeError` if any argument is not awaitable.
pub(crate) fn gather(vm: &mut VM<'_>, args: ArgValues) -> RunResult<Value> {
    let GatherArgs {
        awaitables,
        return_exceptions,
    } = GatherArgs::from_args(args, vm)?;
    defer_drop_mut!(awaitables, vm);
    // CPython tests the flag for truth (`if return_exceptions:`).
    let return_exceptions = {
        let flag = return_exceptions;
        defer_drop!(flag, vm);
        flag.py_bool(vm)?
    };

    // Validate every argument before transferring any references to the gather,
    // so an invalid later argument needs no raw-HeapId rollback.
    for arg in awaitables.iter() {
        if !matches!(
            arg,
            Value::Ref(id)
                if matches!(
                    vm.heap.get(*id),
                    HeapData::Coroutine(_) | HeapData::ExternalFuture(_) | HeapData::GatherFuture(_)
                )
        ) {
            return Err(ExcType::type_error(
                "An asyncio.Future, a coroutine or an awaitable is required",
            ));
        }
    }

    let items = awaitables
        .drain(..)
        .map(|arg| arg.into_ref_id().expect("validated gather awaitable is heap-backed"))
        .collect();
    let gather_future = GatherFuture::new(items, return_exceptions);
    let id = vm.heap.allocate(HeapData::GatherFuture(Box::new(gather_future)));
    Ok(Value::Ref(id))
}

/// `asyncio.gather(*awaitables, return_exceptions=False)`.
///
/// chainbox patch: `return_exceptions` was rejected with a
/// `NotImplementedError`; a true value now makes a failed child's exception
/// its result (see `GatherFuture::return_exceptions`).
#[derive(FromArgs)]
#[from_args(name = "gather")]
struct GatherArgs {
    #[from_args(varargs)]
    awaitables: Vec<Value>,
    #[from_args(kw_only, default = Value::Bool(false))]
    return_exceptions: Value,
}
