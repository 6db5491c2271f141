//! Recursion-depth tracking for the [`VM`].
//!
// chainbox patch (CHAINBOX.md)
//! The counters live on the `VM` (not the heap) because every site that
//! charges depth has a `&mut VM` in scope. Non-frozen call frames charge the
//! Python recursion limit ([`VM::incr_recursion`]); nested data traversals —
//! container `repr`/`eq`/`cmp`/`hash`, `isinstance`, json encoding — charge
//! their own depth, bounded by the stack left as in CPython 3.12+
//! ([`VM::incr_data_depth`]). Two primitives charge a data level:
//!
//! - [`VM::recursion_guard`] for lexically-scoped recursion: an RAII guard that
//!   derefs to the VM and releases the level on drop (every path, incl. `?`).
//! - [`VM::recursion_token`] for reservations that must outlive a lexical scope —
//!   notably the container iterators, which store the [`RecursionToken`] so the
//!   bound is owned by the iterator and a caller cannot forget to charge it.
//!
//! A stored token can't be released through the heap alone (the heap has no path
//! back to the VM counter), so its [`DropWithContext`] impl is bound by
//! [`ContainsVM`] rather than [`ContainsHeap`], and it is cleaned up through the
//! same `defer_drop!` machinery as any other value.

use std::ops::{Deref, DerefMut};

use monty_types::ResourceError;

use super::VM;
use crate::{
    heap::{ContainsHeap, DropWithContext},
    intern::{FunctionId, Interns},
};

/// Counts charged frames when restoring a VM or switching tasks.
/// The first frame is the uncharged root; frozen implementation frames never contribute.
pub(super) fn frame_recursion_depth(frames: impl Iterator<Item = Option<FunctionId>>, interns: &Interns) -> usize {
    frames
        .skip(1)
        .filter(|id| id.is_none_or(|id| !interns.is_internal_function(id)))
        .count()
}

impl<'h> VM<'h> {
    /// Enters a lexically-scoped recursive operation, returning a guard that
    /// releases the depth level when dropped.
    ///
    /// The guard derefs to the VM, so recursive calls run through `&mut *guard`:
    ///
    /// ```ignore
    /// let mut guard = vm.recursion_guard()?;
    /// let vm = &mut *guard;
    /// // ... recurse through `vm`; the level is released when `guard` drops ...
    /// ```
    ///
    /// Returns `Err(ResourceError::Recursion)` if the limit would be exceeded.
    pub(crate) fn recursion_guard(&mut self) -> Result<RecursionGuard<'_, 'h>, ResourceError> {
        // chainbox patch (CHAINBOX.md)
        self.incr_data_depth()?;
        Ok(RecursionGuard { vm: self })
    }

    /// Reserves one recursion level as a standalone [`RecursionToken`], released
    /// via [`DropWithContext`] rather than tied to a lexical scope.
    ///
    /// Unlike [`recursion_guard`](Self::recursion_guard), the token does not
    /// borrow the VM, so it can be stored (e.g. inside a container iterator) and
    /// released later with `defer_drop!`.
    pub(crate) fn recursion_token(&mut self) -> Result<RecursionToken, ResourceError> {
        self.incr_data_depth()?;
        Ok(RecursionToken(()))
    }

    /// Checks the recursion limit against the heap's tracker and increments the
    /// depth counter.
    #[inline]
    pub(crate) fn incr_recursion(&mut self) -> Result<(), ResourceError> {
        self.heap.tracker.check_recursion_depth(self.recursion_depth)?;
        self.recursion_depth += 1;
        Ok(())
    }

    /// Releases one recursion level. Paired with [`incr_recursion`](Self::incr_recursion);
    /// called by the guard/token cleanup and by `pop_frame`.
    #[inline]
    pub(crate) fn decr_recursion(&mut self) {
        debug_assert!(self.recursion_depth > 0, "decr_recursion called when depth is 0");
        self.recursion_depth -= 1;
    }
}

// chainbox patch (CHAINBOX.md)
/// Backstop on nested data traversals (`repr`, `==`, `<`, `hash`, json,
/// `deepcopy`, `isinstance` tuples), counted apart from Python frames.
///
/// CPython 3.12+ bounds these by its C stack, not by `sys.getrecursionlimit()`:
/// `repr` of a list nested 5,000 deep works there, so charging them to the
/// 1,000-frame Python limit made monty raise `RecursionError` (and write `...`
/// in reprs) where CPython answers. Like CPython, the real bound on wasm32 is
/// the stack left ([`stack_nearly_exhausted`]) and this count a backstop;
/// on native targets, where the stack cannot be measured, the count is the
/// bound and stays at the old 1,000.
#[cfg(target_arch = "wasm32")]
pub(crate) const MAX_DATA_DEPTH: usize = 100_000;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) const MAX_DATA_DEPTH: usize = 1000;

/// Shadow stack kept free below the deepest data traversal: room for what a
/// traversal does at its leaves (a user `__repr__`/`__eq__` re-entering the VM,
/// formatting a big int) without overflowing.
#[cfg(target_arch = "wasm32")]
const STACK_RESERVE: usize = 256 * 1024;

/// Whether a data traversal should stop with `RecursionError` because the
/// stack is nearly used up — CPython 3.14's `_Py_ReachedRecursionLimit`.
///
/// On wasm32 the linker puts the shadow stack first in linear memory, growing
/// down towards address 0 (rustc's `--stack-first`, which is why an overflow
/// traps instead of corrupting data), so the address of a local is the stack
/// left. Elsewhere only [`MAX_DATA_DEPTH`] applies.
#[inline]
fn stack_nearly_exhausted() -> bool {
    #[cfg(target_arch = "wasm32")]
    {
        let probe = 0u8;
        (std::hint::black_box(&probe) as *const u8 as usize) < STACK_RESERVE
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        false
    }
}

impl VM<'_> {
    /// Charges one level of nested data traversal; errors when the stack is
    /// nearly used up or past [`MAX_DATA_DEPTH`].
    #[inline]
    pub(crate) fn incr_data_depth(&mut self) -> Result<(), ResourceError> {
        if self.data_depth >= MAX_DATA_DEPTH || stack_nearly_exhausted() {
            return Err(ResourceError::Recursion {
                limit: MAX_DATA_DEPTH,
                depth: self.data_depth + 1,
            });
        }
        self.data_depth += 1;
        Ok(())
    }

    /// Releases one level charged by [`incr_data_depth`](Self::incr_data_depth).
    #[inline]
    pub(crate) fn decr_data_depth(&mut self) {
        debug_assert!(self.data_depth > 0, "decr_data_depth called when depth is 0");
        self.data_depth -= 1;
    }
}

/// RAII guard for a lexically-scoped recursion level (see [`VM::recursion_guard`]).
///
/// Derefs to the [`VM`] so recursive operations run through the guard; the
/// reserved level is released when the guard is dropped on any code path.
pub(crate) struct RecursionGuard<'a, 'h> {
    vm: &'a mut VM<'h>,
}

impl<'h> Deref for RecursionGuard<'_, 'h> {
    type Target = VM<'h>;
    fn deref(&self) -> &Self::Target {
        self.vm
    }
}

impl DerefMut for RecursionGuard<'_, '_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.vm
    }
}

impl Drop for RecursionGuard<'_, '_> {
    fn drop(&mut self) {
        self.vm.decr_data_depth();
    }
}

/// Hard cap on native Rust call-stack re-entry, enforced by
/// [`VM::enter_run_reentry`] and released by [`RunReentryGuard`]. Each level
/// costs a real nested call to [`VM::run`], not a switch of the VM's current
/// frame.
///
/// Upstream tuned 12 conservatively from the smallest native stack observed
/// (a debug worker with ~2 MiB crashed at depth 19 on macOS/arm64), and keeps
/// that off wasm. chainbox patch: in the wasm guest the stack left is measured
/// ([`stack_nearly_exhausted`]), so the cap is the Python recursion limit's
/// 1,000 — a `__repr__` or `__eq__` that recurses through nested objects 13
/// deep raised `RecursionError` where CPython answers.
///
/// A hard safety constant, not a Python-visible setting: unlike ordinary
/// recursion depth, it does not go through the tracker and cannot be changed
/// by sandboxed code or test hooks.
#[cfg(target_arch = "wasm32")]
pub(crate) const MAX_RUN_REENTRY_DEPTH: u16 = 1000;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) const MAX_RUN_REENTRY_DEPTH: u16 = 12;

impl VM<'_> {
    /// Charges one native re-entry level, counting the remaining budget down
    /// from [`MAX_RUN_REENTRY_DEPTH`]; errors when it's exhausted. Pair with
    /// [`RunReentryGuard::new`] to release the level on every exit path.
    ///
    /// Split into a plain `Result<(), _>` check (unlike
    /// [`recursion_guard`](Self::recursion_guard)'s combined check-and-wrap) so
    /// `evaluate_function` can `if let Err(e) = ...` it and run its own cleanup
    /// (dropping owned arguments) without a `Drop` guard extending `self`'s
    /// borrow across the match. Bypasses the tracker: a fixed safety constant,
    /// not a user-configurable limit.
    #[inline]
    pub(crate) fn enter_run_reentry(&mut self) -> Result<(), ResourceError> {
        // chainbox patch (CHAINBOX.md)
        if let Some(new_value) = self.run_reentry_depth.checked_sub(1)
            && !stack_nearly_exhausted()
        {
            self.run_reentry_depth = new_value;
            Ok(())
        } else {
            Err(ResourceError::Recursion {
                limit: MAX_RUN_REENTRY_DEPTH as usize,
                depth: MAX_RUN_REENTRY_DEPTH as usize,
            })
        }
    }

    /// Releases one native re-entry level. Paired with
    /// [`enter_run_reentry`](Self::enter_run_reentry); called only by
    /// [`RunReentryGuard`]'s `Drop` impl.
    #[inline]
    pub(crate) fn release_run_reentry(&mut self) {
        debug_assert!(
            self.run_reentry_depth < MAX_RUN_REENTRY_DEPTH,
            "release_run_reentry called when depth is MAX_RUN_REENTRY_DEPTH"
        );
        self.run_reentry_depth += 1;
    }
}

/// RAII guard for one level of native `run()` re-entry, wrapping a level
/// already reserved via [`VM::enter_run_reentry`].
///
/// Derefs to the [`VM`] so the nested `call_function`/`run()` call runs
/// through the guard; the reserved level is released when the guard is
/// dropped on any code path (normal return, `?`, or early return).
///
/// Dropping it also restores `instruction_ip`: the nested run leaves it on the
/// next instruction, and a suspension the outer instruction makes afterwards
/// must report the outer instruction's position.
pub(crate) struct RunReentryGuard<'a, 'h> {
    vm: &'a mut VM<'h>,
    /// The outer instruction's `instruction_ip`, restored on drop.
    instruction_ip: usize,
}

impl<'a, 'h> RunReentryGuard<'a, 'h> {
    /// Wraps a re-entry level already charged by a prior
    /// [`VM::enter_run_reentry`] call.
    pub(crate) fn new(vm: &'a mut VM<'h>) -> Self {
        let instruction_ip = vm.instruction_ip;
        Self { vm, instruction_ip }
    }
}

impl<'h> Deref for RunReentryGuard<'_, 'h> {
    type Target = VM<'h>;
    fn deref(&self) -> &Self::Target {
        self.vm
    }
}

impl DerefMut for RunReentryGuard<'_, '_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.vm
    }
}

impl Drop for RunReentryGuard<'_, '_> {
    fn drop(&mut self) {
        self.vm.instruction_ip = self.instruction_ip;
        self.vm.release_run_reentry();
    }
}

/// Zero-size reservation of one recursion level, returned by [`VM::incr_recursion`].
///
/// Released via [`DropWithContext`] (it cannot reach the VM counter through the heap).
/// Stored by container iterators so the depth bound is owned by the iterator and
/// released on every exit path via `defer_drop!`.
pub(crate) struct RecursionToken(());

/// Accessor for the [`VM`] behind a cleanup context — the VM-capable extension of
/// [`ContainsHeap`](crate::heap::ContainsHeap).
///
/// Implemented by the [`VM`] itself and by wrappers that own a `&mut VM` (the json
/// `Encoder`). A [`DropWithContext`] impl bounds its context `C` by `ContainsVM`
/// (rather than just `ContainsHeap`) when it must reach the VM-side recursion
/// counter — e.g. dropping a [`RecursionToken`] — while a wrapper like the encoder
/// stays borrowable through the same handle. Because `ContainsVM: ContainsHeap`,
/// such a context can still drop plain heap fields via `drop_with(ctx)`.
pub(crate) trait ContainsVM<'h>: ContainsHeap {
    fn vm(&mut self) -> &mut VM<'h>;
}

impl<'h> ContainsVM<'h> for VM<'h> {
    fn vm(&mut self) -> &mut Self {
        self
    }
}

/// A [`RecursionToken`] releases its reserved level through any [`ContainsVM`]
/// context. The `C: ContainsVM<'h>` bound (rather than `ContainsHeap`) is what
/// confines token cleanup to a `VM`/`Encoder` — a bare heap cannot reach the
/// counter — and there is no overlap with the heap-only impls because those are
/// for different `Self` types.
impl<'h, C: ContainsVM<'h>> DropWithContext<C> for RecursionToken {
    fn drop_with(self, ctx: &mut C) {
        // chainbox patch (CHAINBOX.md)
        ctx.vm().decr_data_depth();
    }
}
