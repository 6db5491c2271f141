//! Implementation of the sum() builtin function.

use std::mem;

use crate::{
    args::{ArgValues, FromArgs},
    bytecode::VM,
    defer_drop, defer_drop_mut,
    exception_private::{ExcType, ExcTypeExt, RunResult},
    heap::DropGuard,
    types::{PyTrait, Type},
    value::Value,
};

/// Argument shape for `sum(iterable, /, start=0)` — Argument Clinic in
/// CPython, so `start` is keyword-capable while `iterable` is positional-only.
/// `at_most_total` reproduces `_PyArg_UnpackKeywords`' total pre-count
/// (`sum() takes at most 2 arguments (3 given)`).
#[derive(FromArgs)]
#[from_args(name = "sum", at_most_total)]
struct SumArgs {
    #[from_args(pos_only)]
    iterable: Value,
    #[from_args(default = Value::Int(0))]
    start: Value,
}

/// Implementation of the sum() builtin function.
///
/// Sums the items of an iterable from left to right with an optional start value.
/// The default start value is 0. Str and bytes start values are explicitly
/// rejected, pointing at `''.join(seq)` / `b''.join(seq)` instead.
pub fn builtin_sum(vm: &mut VM<'_>, args: ArgValues) -> RunResult<Value> {
    let SumArgs { iterable, start } = SumArgs::from_args(args, vm)?;
    defer_drop_mut!(start, vm);

    let iter = iterable.into_py_iter(vm)?.require_synchronous(vm)?;
    defer_drop!(iter, vm);
    let mut iter = iter.read(vm);

    // Reject str/bytes start values - Python explicitly forbids these
    match start.py_type(vm) {
        Type::Str => return Err(ExcType::type_error_sum_start("strings", "''")),
        Type::Bytes => return Err(ExcType::type_error_sum_start("bytes", "b''")),
        _ => {}
    }
    // Take the start value out of its guard (dropping `None` is a no-op).
    let accumulator = mem::replace(start, Value::None);

    // DropGuard for accumulator: on success we extract it via into_inner(),
    // on any error path it's dropped automatically
    let mut acc_guard = DropGuard::new(accumulator, vm);
    let (accumulator, vm) = acc_guard.as_parts_mut();

    // chainbox patch: CPython's phases (3.14, `builtin_sum_impl`): while the
    // total is an int and the items are ints it adds ints; once a float
    // joins it, it adds floats (and ints) with Neumaier's compensation
    // until an item of another type ends that phase for good. Upstream added
    // left to right, so `sum([1e16, 123456.789, 2.5])` lost a digit CPython
    // keeps.
    let mut phase = match *accumulator {
        Value::Int(_) => SumPhase::Int,
        Value::Float(sum) => SumPhase::Float { sum, compensation: 0.0 },
        _ => SumPhase::Generic,
    };
    while let Some(item) = iter.py_next(vm)? {
        defer_drop!(item, vm);

        if let SumPhase::Float { sum, compensation } = &mut phase {
            match *item {
                Value::Float(x) => {
                    neumaier_add(sum, compensation, x);
                    continue;
                }
                // CPython 3.14 adds `(double)` of an int that fits a C long,
                // compensated too (3.12 and 3.13 did not compensate it).
                Value::Int(i) => {
                    neumaier_add(sum, compensation, i as f64);
                    continue;
                }
                Value::Bool(b) => {
                    neumaier_add(sum, compensation, f64::from(u8::from(b)));
                    continue;
                }
                _ => {
                    let total = compensated_total(*sum, *compensation);
                    let old = mem::replace(accumulator, Value::Float(total));
                    old.drop_with(vm);
                    phase = SumPhase::Generic;
                }
            }
        }
        let ends_int_phase = matches!(phase, SumPhase::Int) && !matches!(*item, Value::Int(_) | Value::Bool(_));
        let new_value = accumulator.py_add(item, vm)?;
        let old = mem::replace(accumulator, new_value);
        old.drop_with(vm);
        if matches!(phase, SumPhase::Int) {
            phase = match *accumulator {
                Value::Int(_) => SumPhase::Int,
                Value::Float(sum) if ends_int_phase => SumPhase::Float { sum, compensation: 0.0 },
                _ => SumPhase::Generic,
            };
        }
    }
    if let SumPhase::Float { sum, compensation } = phase {
        let old = mem::replace(accumulator, Value::Float(compensated_total(sum, compensation)));
        old.drop_with(vm);
    }

    Ok(acc_guard.into_inner())
}

/// Which of CPython's `sum` loops is running (see `builtin_sum`).
enum SumPhase {
    Int,
    Float { sum: f64, compensation: f64 },
    Generic,
}

/// One step of Neumaier's improved Kahan–Babuška summation, as CPython's `sum`.
fn neumaier_add(sum: &mut f64, compensation: &mut f64, x: f64) {
    let t = *sum + x;
    if sum.abs() >= x.abs() {
        *compensation += (*sum - t) + x;
    } else {
        *compensation += (x - t) + *sum;
    }
    *sum = t;
}

/// The compensated total; as CPython, a compensation that is zero or not
/// finite is not added (it would lose a negative zero's sign or turn an
/// infinite sum into a NaN).
fn compensated_total(sum: f64, compensation: f64) -> f64 {
    if compensation != 0.0 && compensation.is_finite() {
        sum + compensation
    } else {
        sum
    }
}
