//! Shared sorting utilities for `sorted()` and `list.sort()`.
//!
//! Both `sorted()` and `list.sort()` use index-based sorting: they build
//! a vector of indices `[0, 1, 2, ...]`, sort the indices by comparing the
//! corresponding items (or key values), then rearrange items according to
//! the sorted indices.
//!
//! This module provides [`sort_indices`] for the comparison step and
//! [`apply_permutation`] for the in-place rearrangement step.

// chainbox patch: imports for this file's patches (CHAINBOX.md)
use crate::{
    args::{ArgValues, FromArgs, LaxBool},
    bytecode::VM,
    defer_drop, defer_drop_mut,
    exception_private::{RunError, RunResult},
    expressions::CmpOperator,
    value::Value,
};

/// Argument shape for `list.sort(*, key=None, reverse=False)` and, by
/// extension, the kwargs accepted by the `sorted()` builtin. Both fields
/// are keyword-only (CPython rejects positional `key`/`reverse`). `key` is
/// held as a raw `Option<Value>` so callers can normalise `key=None` to
/// "no key"; `reverse` uses [`LaxBool`] to match CPython's `bool()`-style
/// truth test (so `reverse=[]` is `False`, not a `TypeError`).
#[derive(FromArgs)]
#[from_args(name = "sort")]
struct ListSortArgs {
    #[from_args(kw_only, default)]
    key: Option<Value>,
    #[from_args(kw_only, default = LaxBool::new(false))]
    reverse: LaxBool,
}

/// Parses `key`/`reverse` kwargs and sorts `items` in place. The single
/// entry point for sorting used by both `list.sort` and the `sorted()`
/// builtin — sharing here is what makes unknown-kwarg errors uniformly
/// read `sort() got an unexpected keyword argument 'X'` (matching
/// CPython, whose `sorted` delegates to `list.sort` internally).
pub fn parse_and_sort(items: &mut [Value], args: ArgValues, vm: &mut VM<'_>) -> RunResult<()> {
    let ListSortArgs { key, reverse } = ListSortArgs::from_args(args, vm)?;
    let key_fn = match key {
        Some(v) if matches!(v, Value::None) => {
            v.drop_with(vm);
            None
        }
        other => other,
    };
    defer_drop!(key_fn, vm);
    sort_values(items, key_fn.as_ref(), reverse.bool(), vm)
}

/// Sorts a vector of values, with optional key function.
pub fn sort_values(values: &mut [Value], key_fn: Option<&Value>, reverse: bool, vm: &mut VM<'_>) -> RunResult<()> {
    // chainbox patch (CHAINBOX.md)
    let mut indices = (0..values.len()).collect::<Vec<_>>();
    let result = if let Some(f) = key_fn {
        // Sort by key function: compute all the keys, sort an index buffer, then
        // rearrange the original values in-place according to the sorted indices.
        let keys: Vec<Value> = Vec::with_capacity(values.len());
        defer_drop_mut!(keys, vm);

        // Each key call re-enters `run()` with a fresh dispatch countdown, so a
        // short key reaches no checkpoint: this is the pass's only clock poll.
        for (i, item) in values.iter().enumerate() {
            vm.heap.tracker.check_time_every(i)?;
            let item = item.clone_with_heap(vm);
            keys.push(vm.evaluate_function(f, ArgValues::One(item))?);
        }
        sort_indices(&mut indices, keys, reverse, vm)
    } else {
        sort_indices(&mut indices, values, reverse, vm)
    };
    // Also after a failed comparison: CPython leaves the list in the order
    // its sort had reached.
    apply_permutation(values, &mut indices);
    result
}

/// Sorts a vector of indices by comparing items at those positions.
///
/// Compares `values[a]` vs `values[b]` as CPython's `list.sort` does, by
/// `<` alone. If any comparison fails (type error or runtime error), the
/// sort stops and the error is returned, with `indices` in the order the
/// sort had reached.
///
/// The `values` slice is typically either the items themselves (no key function)
/// or the pre-computed key values.
pub fn sort_indices(indices: &mut [usize], values: &[Value], reverse: bool, vm: &mut VM<'_>) -> Result<(), RunError> {
    if indices.len() < 2 {
        return Ok(());
    }
    if reverse {
        indices.reverse();
    }
    let mut compares = 0usize;
    let mut less = |a: usize, b: usize, vm: &mut VM<'_>| -> RunResult<bool> {
        compares += 1;
        vm.heap.tracker.check_time_every(compares)?;
        vm.cmp_values(CmpOperator::Lt, &values[a], &values[b])
    };
    let result = run_sort(indices, &mut less, vm);
    if reverse {
        indices.reverse();
    }
    result
}

/// CPython's `MAX_MINRUN`: a list shorter than this is sorted by one natural
/// run and a binary insertion sort, with no merging.
const MAX_MINRUN: usize = 64;

/// CPython's `list.sort` (Objects/listobject.c, 3.13+) as far as a script
/// can see it: the same `<` comparisons in the same order for fewer than
/// [`MAX_MINRUN`] items (`count_run`, then `binarysort`), and for longer
/// lists the same runs, merged by a plain stable merge instead of CPython's
/// galloping one. Which comparison of a mixed list fails first decides the
/// error (`sorted([3, None, 1.5])` names `NoneType` and `float` or `int`),
/// and a `NaN` lands where the comparisons put it, so the order matters to
/// the answer. Written out rather than `slice::sort_by`, which may panic
/// when `<` is not a total order (a `NaN` among numbers). `reverse` (done
/// by the caller) sorts the reversed list and reverses the result, as
/// CPython does to keep equal items stable. On a failed comparison
/// `indices` holds every index once, in the order reached.
fn run_sort(
    a: &mut [usize],
    less: &mut impl FnMut(usize, usize, &mut VM<'_>) -> RunResult<bool>,
    vm: &mut VM<'_>,
) -> RunResult<()> {
    let len = a.len();
    let min_run = compute_min_run(len);
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    while start < len {
        let rest = &mut a[start..];
        let mut run = count_run(rest, less, vm)?;
        if run < min_run {
            let force = min_run.min(rest.len());
            binary_sort(&mut rest[..force], run, less, vm)?;
            run = force;
        }
        runs.push((start, run));
        start += run;
    }
    while runs.len() > 1 {
        let mut merged = Vec::with_capacity(runs.len().div_ceil(2));
        for pair in runs.chunks(2) {
            if let [(first, first_len), (_, second_len)] = *pair {
                merge(&mut a[first..first + first_len + second_len], first_len, less, vm)?;
                merged.push((first, first_len + second_len));
            } else {
                merged.extend_from_slice(pair);
            }
        }
        runs = merged;
    }
    Ok(())
}

/// CPython's `merge_compute_minrun`: `len` below [`MAX_MINRUN`], else a
/// length between half of it and it such that `len / min_run` is just
/// under a power of two.
fn compute_min_run(mut len: usize) -> usize {
    let mut shifted_off = 0;
    while len >= MAX_MINRUN {
        shifted_off |= len & 1;
        len >>= 1;
    }
    len + shifted_off
}

/// Stably merges the sorted `a[..mid]` and `a[mid..]`; on a failed
/// comparison `a` still holds each index once.
fn merge(
    a: &mut [usize],
    mid: usize,
    less: &mut impl FnMut(usize, usize, &mut VM<'_>) -> RunResult<bool>,
    vm: &mut VM<'_>,
) -> RunResult<()> {
    let left = a[..mid].to_vec();
    let (mut i, mut j, mut k) = (0, mid, 0);
    let mut result = Ok(());
    while i < left.len() && j < a.len() {
        match less(a[j], left[i], vm) {
            Ok(true) => {
                a[k] = a[j];
                j += 1;
            }
            Ok(false) => {
                a[k] = left[i];
                i += 1;
            }
            Err(err) => {
                result = Err(err);
                break;
            }
        }
        k += 1;
    }
    // The slots a[k..j] are free for what is left of the first run.
    a[k..k + left.len() - i].copy_from_slice(&left[i..]);
    result
}


/// The length of the run at the start of `a`, made ascending in place: an
/// ascending run, or a strictly descending one (whose equal neighbours are
/// kept in order) reversed and extended by any ascending items after it.
fn count_run(
    a: &mut [usize],
    less: &mut impl FnMut(usize, usize, &mut VM<'_>) -> RunResult<bool>,
    vm: &mut VM<'_>,
) -> RunResult<usize> {
    let len = a.len();
    let mut n = 1;
    while n < len && !less(a[n], a[n - 1], vm)? {
        n += 1;
    }
    if n == len {
        return Ok(n);
    }
    // a[n] is strictly less than a[n - 1]. An ascending prefix longer than
    // one item is a run unless all of it is equal, which then starts a
    // descending run.
    if n > 1 {
        if less(a[0], a[n - 1], vm)? {
            return Ok(n);
        }
        a[..n].reverse();
    }
    n += 1;
    // The most recent `equal + 1` items are equal; they are reversed in
    // place so that the final reversal restores their order.
    let mut equal = 0;
    while n < len {
        if less(a[n], a[n - 1], vm)? {
            if equal > 0 {
                a[n - equal - 1..n].reverse();
                equal = 0;
            }
        } else if less(a[n - 1], a[n], vm)? {
            break;
        } else {
            equal += 1;
        }
        n += 1;
    }
    if equal > 0 {
        a[n - equal - 1..n].reverse();
    }
    a[..n].reverse();
    while n < len && !less(a[n], a[n - 1], vm)? {
        n += 1;
    }
    Ok(n)
}

/// Stable binary insertion sort of `a`, whose first `sorted` items are in
/// order. On a failed comparison `a` is left as it was before that item.
fn binary_sort(
    a: &mut [usize],
    sorted: usize,
    less: &mut impl FnMut(usize, usize, &mut VM<'_>) -> RunResult<bool>,
    vm: &mut VM<'_>,
) -> RunResult<()> {
    for ok in sorted.max(1)..a.len() {
        let pivot = a[ok];
        let (mut low, mut high) = (0, ok);
        while low < high {
            let middle = (low + high) / 2;
            if less(pivot, a[middle], vm)? {
                high = middle;
            } else {
                low = middle + 1;
            }
        }
        a[low..=ok].rotate_right(1);
    }
    Ok(())
}

/// Rearranges `items` in-place according to a permutation of indices.
///
/// After calling this, `items[i]` will hold the element that was originally at
/// `items[indices[i]]`. The algorithm chases permutation cycles and swaps
/// elements into their final positions, using O(1) extra memory beyond the
/// `indices` slice (which is mutated to track visited positions).
///
/// The helper is generic so callers can avoid allocating a second buffer when
/// reordering either raw `Value`s or compound structures that already own their
/// contents. Each element is moved at most twice (one swap = two moves), so
/// the total work is O(n) moves while preserving the target permutation.
pub fn apply_permutation<T>(items: &mut [T], indices: &mut [usize]) {
    for i in 0..items.len() {
        if indices[i] == i {
            continue;
        }
        let mut current = i;
        loop {
            let target = indices[current];
            indices[current] = current;
            if target == i {
                break;
            }
            items.swap(current, target);
            current = target;
        }
    }
// chainbox patch (CHAINBOX.md)
}
