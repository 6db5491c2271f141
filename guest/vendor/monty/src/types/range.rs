//! Python range type implementation.
//!
//! Provides a range object that supports iteration over a sequence of integers
//! with configurable start, stop, and step values.

// chainbox patch: imports for this file's patches (CHAINBOX.md)
use std::{fmt::Write, hash::Hash};

use num_integer::div_ceil;

use crate::{
    args::ArgValues,
    bytecode::{CallResult, VM},
    defer_drop,
    exception_private::{ExcType, ExcTypeExt, RunResult},
    hash::{HashValue, hash_i64, hash_none, hash_python_long_int, hash_tuple_of},
    heap::{Heap, HeapData, HeapId, HeapItem, HeapObjectRead, HeapReadOutput},
    intern::StaticStrings,
    types::{LazyHeapSet, PyTrait, Type},
    value::{EitherStr, Value},
};

/// Python range object representing an immutable sequence of integers.
///
/// Supports three forms of construction:
/// - `range(stop)` - integers from 0 to stop-1
/// - `range(start, stop)` - integers from start to stop-1
/// - `range(start, stop, step)` - integers from start, incrementing by step
///
/// The range is computed lazily during iteration, not stored as a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub(crate) struct Range {
    /// The starting value (inclusive). Defaults to 0.
    pub start: i64,
    /// The ending value (exclusive).
    pub stop: i64,
    /// The step between values. Defaults to 1. Cannot be 0.
    pub step: i64,
}

impl Range {
    /// Creates a new range with the given start, stop, and step.
    ///
    /// # Panics
    /// Panics if step is 0. Use `new_checked` for fallible construction.
    #[must_use]
    pub(crate) fn new(start: i64, stop: i64, step: i64) -> Self {
        debug_assert!(step != 0, "range step cannot be 0");
        Self { start, stop, step }
    }

    /// Creates a range from just a stop value (start=0, step=1).
    #[must_use]
    fn from_stop(stop: i64) -> Self {
        Self {
            start: 0,
            stop,
            step: 1,
        }
    }

    /// Creates a range from start and stop (step=1).
    #[must_use]
    fn from_start_stop(start: i64, stop: i64) -> Self {
        Self { start, stop, step: 1 }
    }

    /// Returns the length of the range (number of elements it will yield).
    #[must_use]
    pub fn len(&self) -> usize {
        self.len_i128().try_into().unwrap_or(usize::MAX)
    }

    /// Exact length before `len()` saturates to the target pointer width.
    pub(crate) fn len_i128(&self) -> i128 {
        // self.stop - self.start could be up to i64::MAX - i64::MIN, which overflows i64,
        // so we use i128 for the calculation to avoid overflow.
        let start = i128::from(self.start);
        let stop = i128::from(self.stop);
        let step = i128::from(self.step);

        div_ceil(stop - start, step).max(0)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks if an integer value is contained within this range (O(1)).
    ///
    /// A value is contained if it falls within the range bounds and is aligned
    /// with the step (i.e., `(n - start) % step == 0`).
    ///
    /// The subtraction is widened to `i128` because `n - self.start` would
    /// overflow `i64` for ranges spanning the full integer span (e.g.
    /// `range(i64::MIN, i64::MAX, k)` checked against any positive `n`).
    #[must_use]
    pub fn contains(&self, n: i64) -> bool {
        let in_bounds = if self.step > 0 {
            n >= self.start && n < self.stop
        } else {
            n <= self.start && n > self.stop
        };
        if !in_bounds {
            return false;
        }
        (i128::from(n) - i128::from(self.start)) % i128::from(self.step) == 0
    }

    /// Creates a range from the `range()` constructor call.
    ///
    /// Supports:
    /// - `range(stop)` - range from 0 to stop
    /// - `range(start, stop)` - range from start to stop
    /// - `range(start, stop, step)` - range with custom step
    pub fn init(vm: &mut VM<'_>, args: ArgValues) -> RunResult<Value> {
        let pos_args = args.into_pos_only("range", vm.heap)?;
        defer_drop!(pos_args, vm);

        let range = match pos_args.as_slice() {
            [] => return Err(ExcType::type_error_at_least("range", 1, 0)),
            [first_arg] => {
                let stop = first_arg.as_int(vm)?;
                Self::from_stop(stop)
            }
            [first_arg, second_arg] => {
                let start = first_arg.as_int(vm)?;
                let stop = second_arg.as_int(vm)?;
                Self::from_start_stop(start, stop)
            }
            [first_arg, second_arg, third_arg] => {
                let start = first_arg.as_int(vm)?;
                let stop = second_arg.as_int(vm)?;
                let step = third_arg.as_int(vm)?;
                if step == 0 {
                    return Err(ExcType::value_error_range_step_zero());
                }
                Self::new(start, stop, step)
            }
            _ => return Err(ExcType::type_error_at_most("range", 3, pos_args.len())),
        };

        Ok(Value::Ref(vm.heap.allocate(HeapData::Range(range))))
    }

    /// Handles slice-based indexing for ranges.
    ///
    /// Returns a new range object representing the sliced view.
    /// The new range has computed start, stop, and step values.
    fn getitem_slice(&self, slice: &super::Slice, heap: &Heap) -> RunResult<Value> {
        // chainbox patch: the exact length (`len()` saturates on 32-bit).
        let range_len = i64::try_from(self.len_i128()).unwrap_or(i64::MAX);
        let (start, stop, step) = slice.indices_i64(range_len)?;

        // All intermediate arithmetic is done in `i128` to avoid saturating during
        // calculation. If any of the resulting `start`, `stop`, or `step`
        // values do not fit in `i64`, we raise `OverflowError` — Monty's `Range`
        // stores `i64`, so unlike CPython we cannot represent a range whose
        // parameters exceed that span.
        let self_step = i128::from(self.step);
        let self_start = i128::from(self.start);
        let slice_step = i128::from(step);

        let new_step_i128 = self_step * slice_step;
        let new_start_i128 = self_start + i128::from(start) * self_step;

        // chainbox patch: the stop is the item at the slice's stop index, as
        // CPython's `compute_slice` takes it (`range(10)[1:5:3]` is
        // `range(1, 5, 3)`; the stop after the last item gave `range(1, 7, 3)`).
        let new_stop_i128 = self_start + i128::from(stop) * self_step;

        let new_step = i64::try_from(new_step_i128).map_err(|_| ExcType::overflow_c_ssize_t())?;
        let new_start = i64::try_from(new_start_i128).map_err(|_| ExcType::overflow_c_ssize_t())?;
        let new_stop = i64::try_from(new_stop_i128).map_err(|_| ExcType::overflow_c_ssize_t())?;

        let new_range = Self::new(new_start, new_stop, new_step);
        Ok(Value::Ref(heap.allocate(HeapData::Range(new_range))))
    }
}

impl Default for Range {
    fn default() -> Self {
        Self::from_stop(0)
    }
}

impl<'h> PyTrait<'h> for HeapObjectRead<'h, Range> {
    fn py_is_iterable(&self, _vm: &VM<'h>) -> bool {
        true
    }

    /// chainbox patch: `range.count(x)` and `range.index(x)` (upstream: an
    /// AttributeError). An int or bool is found by arithmetic, as CPython's
    /// fast path; anything else by `==` over the items (`2.0`, a `Decimal`),
    /// as its `_PySequence_IterSearch`.
    fn py_call_attr(&mut self, vm: &mut VM<'h>, attr: &EitherStr, args: ArgValues) -> RunResult<CallResult> {
        let counting = match attr.static_string(vm.interns) {
            Some(StaticStrings::Count) => true,
            Some(StaticStrings::Index) => false,
            _ => return Err(ExcType::attribute_error_method(Type::Range, attr, args, vm)),
        };
        let item = args.get_one_arg(if counting { "range.count" } else { "range.index" }, vm.heap)?;
        defer_drop!(item, vm);
        let range = *self.get(vm.heap);
        let at = |n: i64| i64::try_from((i128::from(n) - i128::from(range.start)) / i128::from(range.step));
        let small = match item {
            Value::Int(n) => Some(*n),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        };
        let (found, first) = if let Some(n) = small {
            let first = range.contains(n).then(|| at(n).unwrap_or(i64::MAX));
            (i64::from(first.is_some()), first)
        } else {
            let (mut found, mut first) = (0, None);
            for i in 0..range.len_i128() {
                vm.heap
                    .tracker
                    .check_time_every(usize::try_from(i).unwrap_or(usize::MAX))?;
                let element = i64::try_from(i128::from(range.start) + i * i128::from(range.step)).unwrap_or(i64::MAX);
                if item.py_eq(&Value::Int(element), vm)? {
                    found += 1;
                    first = first.or(Some(i64::try_from(i).unwrap_or(i64::MAX)));
                    if !counting {
                        break;
                    }
                }
            }
            (found, first)
        };
        if counting {
            return Ok(CallResult::Value(Value::Int(found)));
        }
        match first {
            Some(index) => Ok(CallResult::Value(Value::Int(index))),
            // CPython 3.14's words (3.11: "5 is not in range").
            None if small.is_some() => Err(ExcType::value_error("range.index(x): x not in range")),
            None => Err(ExcType::value_error("sequence.index(x): x not in sequence")),
        }
    }

    /// O(1) containment: bounds plus step alignment, no iteration. Non-integral
    /// items can never be members, matching CPython's fast path.
    fn py_contains_impl(&self, item: &Value, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        let range = self.get(vm.heap);
        let n = match item {
            Value::Int(i) => *i,
            Value::Bool(b) => i64::from(*b),
            Value::Float(f) => {
                if f.fract() != 0.0 {
                    return Ok(Some(false));
                }
                let int_val = f.trunc();
                // Exclusive upper bound: `i64::MAX as f64` rounds up to 2^63, which
                // `int_val as i64` would saturate back down to `i64::MAX`.
                if int_val < i64::MIN as f64 || int_val >= i64::MAX as f64 {
                    return Ok(Some(false));
                }
                #[expect(clippy::cast_possible_truncation)]
                let n = int_val as i64;
                n
            }
            _ => return Ok(Some(false)),
        };
        Ok(Some(range.contains(n)))
    }

    fn py_type(&self, _vm: &VM<'h>) -> Type {
        Type::Range
    }

    fn py_iter(&self, vm: &mut VM<'h>) -> RunResult<CallResult> {
        Ok(CallResult::Value(RangeIterator::allocate(*self.get(vm.heap), vm)))
    }

    fn py_len(&self, vm: &VM<'h>) -> Option<usize> {
        Some(self.get(vm.heap).len())
    }

    fn py_getitem(&self, key: &Value, vm: &mut VM<'h>) -> RunResult<Value> {
        // Check for slice first (Value::Ref pointing to HeapData::Slice)
        if let Value::Ref(id) = key
            && let HeapData::Slice(slice) = vm.heap.get(*id)
        {
            let range = *self.get(vm.heap);
            return range.getitem_slice(slice, vm.heap);
        }

        let range = *self.get(vm.heap);

        // Calculate in i128 space to avoid overflow issues with large ranges and indices.

        // Extract integer index, accepting Int, Bool (True=1, False=0), and LongInt
        // chainbox patch: CPython computes a range's item with Python ints, so
        // an index past i64 is out of range (upstream: "cannot fit 'int' into
        // an index-sized integer").
        if key.long_int_to_i64_saturating(vm).is_some() {
            return Err(ExcType::range_index_error());
        }
        let index = i128::from(key.as_index(vm, Type::Range)?);

        // Get range length for normalization
        let len = range.len_i128();

        let normalized = if index < 0 { index + len } else { index };

        // Bounds check
        if normalized < 0 || normalized >= len {
            return Err(ExcType::range_index_error());
        }

        // Calculate: start + normalized * step.
        //
        // Mathematically `offset` falls within `[min(start, stop), max(start, stop))`
        // — within i64 — when the `Range` invariant holds (every element is a valid
        // i64). The fallible conversion below is defence-in-depth so that an invariant
        // violation surfaces as a Python `OverflowError` rather than a host panic.
        let offset = i128::from(range.start) + (normalized * i128::from(range.step));
        let offset_i64 = i64::try_from(offset).map_err(|_| ExcType::overflow_c_ssize_t())?;
        Ok(Value::Int(offset_i64))
    }

    fn py_eq_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        let Some(HeapReadOutput::Range(other)) = other.read_heap(vm) else {
            return Ok(None);
        };
        let a = self.get(vm.heap);
        let b = other.get(vm.heap);
        // Compare ranges by their actual sequences, not parameters.
        // Two ranges are equal if they produce the same elements.
        // chainbox patch: exact lengths; on 32-bit `len()` saturates, and
        // `range(2**33) == range(2**34)` was True.
        let len1 = a.len_i128();
        let len2 = b.len_i128();
        Ok(Some(if len1 != len2 {
            false
        } else if len1 == 0 {
            true // Both empty
        } else if len1 == 1 {
            // Single-element ranges are equal when their one element matches,
            // regardless of step (e.g. range(0, 1, 1) == range(0, 2, 2)).
            a.start == b.start
        } else {
            // Same length (>1) - compare first element and step.
            a.start == b.start && a.step == b.step
        }))
    }

    fn py_hash(&self, vm: &mut VM<'h>) -> RunResult<Option<HashValue>> {
        // Ranges are equal by the sequence they produce, so the hash must depend
        // only on what equality compares: length, then start (if non-empty), then
        // step (only if length > 1). Hashing the raw `start`/`stop`/`step` fields
        // would break `hash(a) == hash(b)` for equal ranges like `range(0, 1, 1)`
        // and `range(0, 2, 2)`.
        let r = self.get(vm.heap);
        // chainbox patch: the exact length, as `py_eq_impl` compares it.
        let len = u64::try_from(r.len_i128()).unwrap_or(u64::MAX);
        // chainbox patch: CPython hashes the tuple `(len, start, step)`, with
        // None for what equality ignores.
        let len_hash = i64::try_from(len).map_or_else(|_| hash_python_long_int(&r.len_i128().into()), hash_i64);
        let start = if len > 0 { hash_i64(r.start) } else { hash_none() };
        let step = if len > 1 { hash_i64(r.step) } else { hash_none() };
        Ok(Some(hash_tuple_of([len_hash, start, step])))
    }

    fn py_bool(&self, vm: &mut VM<'h>) -> RunResult<bool> {
        Ok(!self.get(vm.heap).is_empty())
    }

    fn py_repr_fmt(&self, f: &mut impl Write, vm: &mut VM<'h>, _heap_ids: &mut LazyHeapSet) -> RunResult<()> {
        let this = self.get(vm.heap);
        if this.step == 1 {
            Ok(write!(f, "range({}, {})", this.start, this.stop)?)
        } else {
            Ok(write!(f, "range({}, {}, {})", this.start, this.stop, this.step)?)
        }
    }
}

impl HeapItem for Range {
    fn py_dec_ref_ids(&mut self, _stack: &mut Vec<HeapId>) {
        // Range doesn't contain heap references, nothing to do
    }
}

/// Iterator over the arithmetic progression represented by a range.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct RangeIterator {
    next: i64,
    step: i64,
    /// chainbox patch: `u64`, not `usize`, so iterating a range longer than
    /// 2**32 - 1 on a 32-bit target does not stop early.
    remaining: u64,
}

impl RangeIterator {
    /// Allocates independent iteration state copied from `range`.
    fn allocate(range: Range, vm: &mut VM<'_>) -> Value {
        Value::Ref(vm.heap.allocate(HeapData::RangeIterator(Self {
            next: range.start,
            step: range.step,
            remaining: u64::try_from(range.len_i128()).unwrap_or(u64::MAX),
        })))
    }

    /// Returns the number of values not yet yielded (saturating at `usize::MAX`).
    pub(crate) fn size_hint(&self) -> usize {
        usize::try_from(self.remaining).unwrap_or(usize::MAX)
    }
}

impl HeapItem for RangeIterator {
    fn py_dec_ref_ids(&mut self, _: &mut Vec<HeapId>) {}
}

impl<'h> PyTrait<'h> for HeapObjectRead<'h, RangeIterator> {
    fn py_is_iterable(&self, _: &VM<'h>) -> bool {
        true
    }

    fn py_type(&self, _: &VM<'h>) -> Type {
        Type::RangeIterator
    }

    fn py_len(&self, _: &VM<'h>) -> Option<usize> {
        None
    }

    fn py_eq_impl(&self, _: &Value, _: &mut VM<'h>) -> RunResult<Option<bool>> {
        Ok(None)
    }

    fn py_iter(&self, vm: &mut VM<'h>) -> RunResult<CallResult> {
        Ok(CallResult::Value(self.clone_value(vm.heap)))
    }

    fn py_next(&mut self, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        let iter = self.get_mut(vm.heap);
        if iter.remaining == 0 {
            Ok(None)
        } else {
            let value = iter.next;
            iter.remaining -= 1;
            if iter.remaining > 0 {
                iter.next += iter.step;
            }
            Ok(Some(Value::Int(value)))
        }
    }
}
