use std::{cell::Cell, fmt::Write, mem};

use monty_types::{ResourceError, ResourceTracker};

// chainbox patch: imports for this file's patches (CHAINBOX.md)
use super::{
    PyTrait,
    iter::{checked_preallocation_hint, collect_owned_iterable},
};
use crate::{
    args::ArgValues,
    bytecode::{CallResult, ContainsVM, RecursionToken, VM},
    defer_drop, defer_drop_mut,
    exception_private::{ExcType, ExcTypeExt, RunError, RunResult},
    expressions::CmpOperator,
    hash::{HashValue, hash_frozenset_of},
    heap::{
        BorrowedHeapRead, BorrowedHeapReadMut, ContainsHeap, DropGuard, DropWithContext, Heap, HeapData, HeapId,
        HeapItem, HeapObjectRead, HeapRead, HeapReadMut, HeapReadOutput, heap_read_ref_as_field,
        heap_read_ref_as_field_mut,
    },
    intern::StaticStrings,
    modules::copy::{Memo, PyDeepCopy, deep_copy},
    py_value::PyValue,
    types::{
        LazyHeapSet, Type,
        hash_table::{Live, PyHashTable, TableCursor, TableEntry, TableProbe, TableSource, TableWalk},
        list::repr_items_fmt,
    },
    value::{EitherStr, VALUE_SIZE, Value},
};

/// Entry in the set storage, containing a value and its cached hash.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct SetEntry {
    #[serde(rename = "V")]
    pub(crate) value: Value,
    /// Cached hash for efficient lookup and reinsertion.
    #[serde(rename = "H")]
    pub(crate) hash: u64,
}

impl TableEntry for SetEntry {
    #[inline]
    fn probe_key(&self) -> &Value {
        &self.value
    }

    #[inline]
    fn hash(&self) -> u64 {
        self.hash
    }

    /// CPython's dummy: the hash no element has (`-1`), so it reads apart
    /// from a [`vacant`](Self::vacant) slot.
    fn tombstone() -> Self {
        Self {
            value: Value::Undefined,
            hash: u64::MAX,
        }
    }

    #[inline]
    fn is_live(&self) -> bool {
        !matches!(self.value, Value::Undefined)
    }

    fn vacant() -> Self {
        Self {
            value: Value::Undefined,
            hash: 0,
        }
    }

    fn is_vacant(&self) -> bool {
        !self.is_live() && self.hash != u64::MAX
    }

    fn changed_size_error() -> RunError {
        ExcType::runtime_error_set_changed_size()
    }
}

/// Internal storage shared between Set and FrozenSet.
///
/// A [`PyHashTable`] of elements, so the probe that has to survive a user
/// `__eq__` is the one in [`TableSource`] rather than a set-shaped copy of it.
///
/// chainbox patch: the table is laid out as CPython's set table (see
/// "CPython's set layout" in `hash_table`), and the operations below follow
/// Objects/setobject.c step for step, so a set iterates, prints and pops in
/// CPython's order: where upstream kept insertion order, `list({3, 1, 2})`
/// was `[3, 1, 2]` against CPython's `[1, 2, 3]`.
#[derive(Debug, Default)]
pub(crate) struct SetStorage {
    table: PyHashTable<SetEntry>,
    /// CPython's `fill`: live plus tombstoned slots. The table is resized
    /// when it reaches 3/5 of the slots.
    fill: usize,
    /// CPython's `finger`: where `pop` starts looking.
    finger: usize,
}

impl SetStorage {
    /// Creates a new empty set storage.
    fn new() -> Self {
        Self::default()
    }

    /// Adds entries that already carry their hashes and are distinct, in the
    /// order given, as CPython adds them one by one.
    fn from_entry_vec(entries: Vec<SetEntry>) -> Self {
        let mut storage = Self::new();
        for entry in entries {
            storage.place(entry);
        }
        storage
    }

    /// Places an entry known to be absent: CPython's `set_add_entry` once
    /// its probe found no equal element, including the resize it may end with.
    fn place(&mut self, entry: SetEntry) {
        if self.table.set_place(entry) {
            self.fill += 1;
            let mask = self.table.set_slot_count() - 1;
            if self.fill * 5 >= mask * 3 {
                self.resize(grown_size(self.len()));
            }
        }
    }

    /// CPython's `set_table_resize`: tombstones gone, `fill` back to `used`.
    fn resize(&mut self, min_used: usize) {
        self.table.set_resize(min_used, self.fill != self.len());
        self.fill = self.len();
    }

    /// Preflights what one more [`place`](Self::place) may allocate: the
    /// first slots, or the resized table.
    fn check_growth(&self, tracker: &ResourceTracker) -> Result<(), ResourceError> {
        let mask = self.table.set_slot_count() - 1;
        if (self.fill + 1) * 5 < mask * 3 {
            return Ok(());
        }
        let slots = (grown_size(self.len() + 1) + 1).next_power_of_two();
        // The slots and the index beside them.
        let per_slot = mem::size_of::<SetEntry>() + 2 * mem::size_of::<usize>();
        tracker.check_pending_allocation(slots.saturating_mul(per_slot))
    }

    /// A copy of every slot, vacant and tombstoned ones included, with
    /// `fill` and `finger`: the other side of a set operation, read as CPython
    /// reads the set itself (its slot order, its table size).
    fn clone_exact(&self, heap: &impl ContainsHeap) -> Self {
        Self {
            table: self.clone_slots(heap),
            fill: self.fill,
            finger: self.finger,
        }
    }

    /// The table slot for slot, vacant and tombstoned slots included.
    fn clone_slots(&self, heap: &impl ContainsHeap) -> PyHashTable<SetEntry> {
        let slots = self
            .table
            .set_slots()
            .iter()
            .map(|e| SetEntry {
                value: e.value.clone_with_heap(heap),
                hash: e.hash,
            })
            .collect();
        PyHashTable::set_from_slots(slots)
    }

    /// The part of CPython's `set_merge` that runs no `__eq__`: the one big
    /// resize up front and, into an empty table, the copy slot for slot (same
    /// size, no tombstones) or in `other`'s slot order. Returns whether the
    /// merge is done; if not, the caller adds `other`'s entries one by one.
    fn merge_fast(&mut self, other: &Self, heap: &impl ContainsHeap) -> bool {
        if other.is_empty() {
            return true;
        }
        let mask = self.table.set_slot_count() - 1;
        if (self.fill + other.len()) * 5 >= mask * 3 {
            self.resize((self.len() + other.len()) * 2);
        }
        if self.fill != 0 {
            return false;
        }
        let size = self.table.set_slot_count();
        if size == other.table.set_slot_count() && other.fill == other.len() {
            self.table = other.clone_slots(heap);
        } else {
            let entries = other.live().map(|e| SetEntry {
                value: e.value.clone_with_heap(heap),
                hash: e.hash,
            });
            self.table.set_rebuild(size, entries);
        }
        self.fill = other.len();
        true
    }

    /// The live entries, in insertion order, tombstones skipped.
    #[inline]
    fn live(&self) -> Live<'_, SetEntry> {
        self.table.live()
    }

    /// Clones entries with proper reference counting.
    ///
    /// The returned entries are owned: they implement [`DropWithContext`], so
    /// a caller that may abandon them partway must hold them in a guard.
    fn clone_entries(&self, heap: &impl ContainsHeap) -> Vec<SetEntry> {
        self.live()
            .map(|e| SetEntry {
                value: e.value.clone_with_heap(heap),
                hash: e.hash,
            })
            .collect()
    }

    /// Returns the number of elements in the set.
    fn len(&self) -> usize {
        self.table.len()
    }

    /// Returns true if the set is empty.
    fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Adds an element to the set, transferring ownership.
    ///
    /// Returns `Ok(true)` if the element was added (not already present),
    /// `Ok(false)` if the element was already in the set.
    /// Returns `Err` if the element is unhashable.
    ///
    /// The caller transfers ownership of `value`. If the value is already in
    /// the set, it will be dropped.
    fn add(&mut self, value: Value, vm: &mut VM<'_>) -> RunResult<bool> {
        let mut value_guard = DropGuard::new(value, vm);
        let (value, vm) = value_guard.as_parts();
        let hash = set_element_hash(value, vm)?;
        let (value, vm) = value_guard.into_parts();
        self.add_with_hash(value, hash, vm)
    }

    /// Adds an element whose hash the caller already knows.
    ///
    /// Set-to-set algebra reuses the source entry's cached hash instead of
    /// re-running `__hash__`, matching CPython's `set_add_entry`. Passing a
    /// hash that does not match the value corrupts the index table, so only
    /// pass one taken from an existing entry for the same value.
    ///
    /// Only for storages guest code cannot reach — a set still being built, or
    /// the fresh result of an algebra op. Those cannot be mutated mid-probe,
    /// so unlike [`TableProbe::find_index`] this needs no revalidation. Use the
    /// `HeapReadMut` twin for a published set.
    fn add_with_hash(&mut self, value: Value, hash: u64, vm: &mut VM<'_>) -> RunResult<bool> {
        let mut value_guard = DropGuard::new(value, vm);
        let (value, vm) = value_guard.as_parts_mut();

        // CPython compares the stored element on the left, which an asymmetric
        // user `__eq__` can tell apart — `TableProbe::find_index` does the same.
        let existing = self
            .table
            .try_find(hash, |entry| entry.value.py_eq(value, vm))?
            .is_some();

        if existing {
            Ok(false)
        } else {
            let (value, vm) = value_guard.into_parts();
            // chainbox patch (CHAINBOX.md)
            if let Err(err) = self.check_growth(&vm.heap.tracker) {
                value.drop_with(vm);
                return Err(err.into());
            }
            self.place(SetEntry { value, hash });
            Ok(true)
        }
    }
}

impl<'h> HeapReadMut<'h, SetStorage> {
    /// Removes an element from the set.
    ///
    /// Returns `Ok(true)` if the element was removed, `Ok(false)` if not found.
    /// Returns `Err` if the key is unhashable.
    fn remove(&self, value: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        // chainbox patch (CHAINBOX.md)
        let hash = set_lookup_hash(value, vm)?;

        let Some(slot) = self.find_index(value, hash, vm)? else {
            return Ok(false);
        };

        // Remove via short-lived mutable borrow
        let removed_entry = self.get_mut(vm.heap).table.remove(slot);
        removed_entry.value.drop_with(vm);
        Ok(true)
    }

    /// Removes an element from the set without raising an error if not found.
    ///
    /// Returns `Ok(())` always (unless the key is unhashable).
    fn discard(&self, value: &Value, vm: &mut VM<'h>) -> RunResult<()> {
        self.remove(value, vm)?;
        Ok(())
    }

    /// Removes and returns an arbitrary element from the set.
    ///
    /// Returns `Err(KeyError)` if the set is empty.
    fn pop(&self, vm: &mut VM<'h>) -> RunResult<Value> {
        if self.get(vm.heap).is_empty() {
            return Err(ExcType::key_error_pop_empty_set());
        }

        // chainbox patch: CPython's `set_pop`, from the finger on.
        let storage = self.get_mut(vm.heap);
        let entry = storage.table.set_pop(&mut storage.finger).expect("checked non-empty");
        Ok(entry.value)
    }

    /// Removes all elements from the set.
    fn clear(&self, vm: &mut VM<'h>) {
        let storage = self.get_mut(vm.heap);
        storage.fill = 0;
        let entries = storage.table.take_entries();
        entries.drop_with(vm);
    }
}

impl SetStorage {
    /// A copy with proper reference counting, laid out as CPython's
    /// `set.copy()` lays it out: a new set with this one merged in.
    fn clone_with_heap(&self, heap: &impl ContainsHeap) -> Self {
        let mut copy = Self::new();
        let done = copy.merge_fast(self, heap);
        debug_assert!(done, "a merge into an empty set needs no comparison");
        copy
    }
}

impl<'h> HeapRead<'h, SetStorage> {
    /// Checks if the set contains a value.
    pub fn contains(&self, value: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        let hash = set_lookup_hash(value, vm)?;
        self.contains_with_hash(value, hash, vm)
    }

    /// Checks membership using a hash the caller already knows.
    ///
    /// CPython's `set_contains_entry` takes the stored hash, so set-to-set
    /// operations never re-run `__hash__` on an element that is already a set
    /// member. Monty does the same: besides matching CPython's call counts, it
    /// keeps user code out of the loops that walk a live set.
    pub fn contains_with_hash(&self, value: &Value, hash: u64, vm: &mut VM<'h>) -> RunResult<bool> {
        Ok(self.find_index(value, hash, vm)?.is_some())
    }
}

/// Probing and walking a live set goes through the shared table machinery, so
/// the mutation-safety reasoning lives in one place rather than in a set-shaped
/// copy of the dict probe.
impl<'h> TableSource<'h> for HeapRead<'h, SetStorage> {
    type Entry = SetEntry;

    fn table<'r>(&'r self, vm: &'r VM<'h>) -> &'r PyHashTable<SetEntry> {
        &self.get(vm.heap).table
    }
}

impl SetStorage {
    /// Appends a clone of every member to `members`, polling the clock as it goes.
    ///
    /// `copy.deepcopy` snapshots a set this way before copying any member, as
    /// CPython's reduction through `list(x)` does, so a hook that mutates the
    /// source cannot disturb the walk. `members` is the caller's to release.
    pub(crate) fn clone_members_into(&self, members: &mut Vec<Value>, heap: &Heap) -> RunResult<()> {
        for (index, value) in self.iter().enumerate() {
            heap.tracker.check_time_every(index)?;
            members.push(value.clone_with_heap(heap));
        }
        Ok(())
    }

    /// Returns an iterator over the values in the set.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Value> {
        self.live().map(|e| &e.value)
    }

    /// Collects heap IDs for reference counting cleanup.
    ///
    /// Only called on a set being freed, so its entries can be taken.
    fn collect_dec_ref_ids(&mut self, stack: &mut Vec<HeapId>) {
        for entry in &mut self.table.take_entries() {
            if let Value::Ref(id) = &entry.value {
                stack.push(*id);
                #[cfg(feature = "memory-model-checks")]
                entry.value.dec_ref_forget();
            }
        }
    }
}

impl<'h> HeapRead<'h, SetStorage> {
    /// Compares two sets for equality.
    fn eq(&self, other: &Self, vm: &mut VM<'h>) -> RunResult<bool> {
        if self.get(vm.heap).len() != other.get(vm.heap).len() {
            return Ok(false);
        }
        let iter = self.iter(vm)?;
        defer_drop_mut!(iter, vm);
        while let Some((elem, hash)) = iter.next_entry(vm)? {
            if !other.contains_with_hash(elem, hash, vm)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Set ordering tests containment; overlapping sets can satisfy neither <= nor >=.
    fn compare_storage(&self, other: &Self, op: CmpOperator, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        let lhs_len = self.get(vm.heap).len();
        let rhs_len = other.get(vm.heap).len();

        // Strict containment requires different lengths; non-strict containment includes equality.
        let (smaller, larger) = match op {
            CmpOperator::Lt if lhs_len < rhs_len => (self, other),
            CmpOperator::LtE if lhs_len <= rhs_len => (self, other),
            CmpOperator::Gt if lhs_len > rhs_len => (other, self),
            CmpOperator::GtE if lhs_len >= rhs_len => (other, self),
            CmpOperator::Lt | CmpOperator::LtE | CmpOperator::Gt | CmpOperator::GtE => return Ok(Some(false)),
            _ => return Ok(None),
        };

        Ok(Some(smaller.is_subset(larger, vm)?))
    }

    /// Tests containment using cached hashes, without cloning either set's storage.
    fn is_subset(&self, other: &Self, vm: &mut VM<'h>) -> RunResult<bool> {
        let iter = self.iter(vm)?;
        defer_drop_mut!(iter, vm);
        while let Some((elem, hash)) = iter.next_entry(vm)? {
            if !other.contains_with_hash(elem, hash, vm)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Ordering accepts set, frozenset, dict_keys and dict_items, in either operand position.
    /// Other iterables (including dict_values) are accepted by issubset/issuperset, but not by these operators.
    fn compare_operand(&self, other: &Value, op: CmpOperator, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        match other.read_heap(vm) {
            Some(HeapReadOutput::Set(other)) => self.compare_storage(&other.storage(), op, vm),
            Some(HeapReadOutput::FrozenSet(other)) => self.compare_storage(&other.storage(), op, vm),
            Some(view @ (HeapReadOutput::DictKeysView(_) | HeapReadOutput::DictItemsView(_))) => {
                let view = PyValue::from(view);
                let lhs_len = self.get(vm.heap).len();
                let rhs_len = view.py_len(vm).expect("dict views have a length");
                let possible = match op {
                    CmpOperator::Lt => lhs_len < rhs_len,
                    CmpOperator::LtE => lhs_len <= rhs_len,
                    CmpOperator::Gt => lhs_len > rhs_len,
                    CmpOperator::GtE => lhs_len >= rhs_len,
                    _ => return Ok(None),
                };
                if !possible {
                    return Ok(Some(false));
                }

                // Probe the view directly: an items view may contain unhashable values
                // without preventing a set from being its subset.
                if matches!(op, CmpOperator::Lt | CmpOperator::LtE) {
                    let iter = self.iter(vm)?;
                    defer_drop_mut!(iter, vm);
                    while let Some(elem) = iter.next(vm)? {
                        if view.py_contains_impl(elem, vm)? != Some(true) {
                            return Ok(Some(false));
                        }
                    }
                    return Ok(Some(true));
                }

                // chainbox patch (CHAINBOX.md)
                let Some(storage) = set_operand_storage(other, vm)? else {
                    return Ok(None);
                };
                defer_drop!(storage, vm);
                self.compare_storage(&vm.heap.protect(storage), op, vm)
            }
            _ => Ok(None),
        }
    }

    /// Returns a stack-borrowed lending iterator over the set's elements in
    /// insertion order, holding a recursion-depth token for its lifetime.
    ///
    /// Named `iter` despite returning a non-stdlib lending iterator (see
    /// [`SetIter`]) because that's the obvious entry point for "iterate
    /// this container".
    #[expect(clippy::iter_not_returning_iterator)]
    pub(crate) fn iter(&self, vm: &mut VM<'h>) -> RunResult<SetIter<'_, 'h>> {
        SetIter::new(self, vm)
    }
}

/// Stack-borrowed lending iterator over a heap-allocated set's elements in
/// insertion order.
///
/// Borrows a [`HeapRead`] for its lifetime, retaining its object guard or
/// protected source for the duration of iteration.
///
/// **Lending shape.** [`next`](Self::next) returns `Option<&Value>`. The
/// iterator itself owns the most-recently-yielded element (using
/// [`Value::Undefined`] as the empty sentinel) and drops the previous
/// element at the start of each `next` call, so call sites do **not** need
/// a per-item `defer_drop!`.
///
/// **Recursion guard.** Acquires a [`RecursionToken`] at construction and
/// releases it via [`DropWithContext`]. The iterator MUST be wrapped in
/// [`defer_drop_mut!`] so the token (and any in-flight element) is released
/// on every exit path — set iteration usually feeds into `py_eq` /
/// `py_hash` / membership checks which recurse on cyclic structures (e.g.
/// frozensets of frozensets).
///
/// **Mutation policy.** The initial length is captured at construction. If
/// the set's size changes between [`next`](Self::next) calls, the next step
/// returns `RuntimeError: Set changed size during iteration` (matching
/// CPython and Monty's set-iterator behavior).
pub(crate) struct SetIter<'a, 'h> {
    walk: TableWalk<'a, 'h, HeapRead<'h, SetStorage>>,
    token: RecursionToken,
    /// Most-recently-yielded element. `Value::Undefined` when nothing is
    /// held — drops on that variant are no-ops, so `next` can
    /// unconditionally release the previous slot before fetching the next.
    current: Value,
}

impl<'a, 'h> SetIter<'a, 'h> {
    fn new(storage: &'a HeapRead<'h, SetStorage>, vm: &mut VM<'h>) -> RunResult<Self> {
        let token = vm.recursion_token()?;
        Ok(Self {
            walk: TableWalk::new(storage, vm),
            token,
            current: Value::Undefined,
        })
    }

    /// Advances the iterator and returns a borrow of the next element, or
    /// `Ok(None)` on exhaustion. The returned reference is valid until the
    /// next call to `next` (or until the iterator is dropped).
    ///
    /// Returns `Err(RuntimeError)` if the set's size has changed since
    /// construction.
    pub(crate) fn next<'i>(&'i mut self, vm: &mut VM<'h>) -> RunResult<Option<&'i Value>> {
        Ok(self.next_entry(vm)?.map(|(value, _)| value))
    }

    /// [`next`](Self::next), but also yielding the element's cached hash.
    ///
    /// Set algebra passes that hash straight to the membership test and to the
    /// result set, so no element that is already a set member gets hashed
    /// again — see [`HeapRead::contains_with_hash`].
    pub(crate) fn next_entry<'i>(&'i mut self, vm: &mut VM<'h>) -> RunResult<Option<(&'i Value, u64)>> {
        // Drop the previously-yielded element (no-op when `current` is `Undefined`).
        mem::replace(&mut self.current, Value::Undefined).drop_with(vm.heap);
        let Some(entry) = self.walk.next(vm)? else {
            return Ok(None);
        };
        let hash = entry.hash;
        self.current = entry.value.clone_with_heap(vm.heap);
        Ok(Some((&self.current, hash)))
    }
}

impl<'h, C: ContainsVM<'h>> DropWithContext<C> for SetIter<'_, 'h> {
    fn drop_with(self, container: &mut C) {
        self.current.drop_with(container);
        self.token.drop_with(container);
    }
}

impl SetStorage {
    /// Returns true if this set has no elements in common with other.
    fn is_disjoint(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<bool> {
        // Iterate over the smaller set for efficiency
        let (smaller, larger) = if self.len() <= other.len() {
            (self, other)
        } else {
            (other, self)
        };

        for entry in smaller.live() {
            if vm
                .heap
                .protect(larger)
                .contains_with_hash(&entry.value, entry.hash, vm)?
            {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The other side of a set operation, held the way CPython's set code reads
/// it (chainbox patch): which path CPython takes, and so the order of the
/// result, depends on whether it is a set, an exact dict or anything else.
#[derive(Debug)]
pub(crate) enum Operand {
    /// A set or frozenset, slot for slot ([`SetStorage::clone_exact`]).
    Set(SetStorage),
    /// An exact dict's keys, in order: CPython presizes for them.
    Dict(Vec<Value>),
    /// Any other iterable's items, in iteration order.
    Items(Vec<Value>),
}

impl<C: ContainsHeap> DropWithContext<C> for Operand {
    fn drop_with(self, heap: &mut C) {
        match self {
            Self::Set(storage) => storage.drop_with(heap),
            Self::Dict(values) | Self::Items(values) => values.drop_with(heap),
        }
    }
}

impl Operand {
    /// Reads `value` as the other side of a set method (`s.union(value)`).
    fn from_value(value: Value, vm: &mut VM<'_>) -> RunResult<Self> {
        let (storage, is_dict) = match &value {
            Value::Ref(id) => match vm.heap.get(*id) {
                HeapData::Set(set) => (Some(set.0.clone_exact(vm.heap)), false),
                HeapData::FrozenSet(set) => (Some(set.storage.clone_exact(vm.heap)), false),
                HeapData::Dict(_) => (None, true),
                _ => (None, false),
            },
            _ => (None, false),
        };
        if let Some(storage) = storage {
            value.drop_with(vm);
            return Ok(Self::Set(storage));
        }
        let items: Vec<Value> = collect_owned_iterable(value, vm)?;
        Ok(if is_dict { Self::Dict(items) } else { Self::Items(items) })
    }
}

impl SetStorage {
    /// Removes an element whose hash is known, from a set guest code cannot
    /// reach. Returns whether it was there.
    fn discard_with_hash(&mut self, value: &Value, hash: u64, vm: &mut VM<'_>) -> RunResult<bool> {
        let Some(slot) = self.table.try_find(hash, |entry| entry.value.py_eq(value, vm))? else {
            return Ok(false);
        };
        let removed = self.table.remove(slot);
        removed.value.drop_with(vm);
        Ok(true)
    }

    /// Discards, or adds when absent: one step of CPython's
    /// `set_symmetric_difference_update`.
    fn toggle(&mut self, value: &Value, hash: u64, vm: &mut VM<'_>) -> RunResult<()> {
        if !self.discard_with_hash(value, hash, vm)? {
            self.add_with_hash(value.clone_with_heap(vm.heap), hash, vm)?;
        }
        Ok(())
    }

    /// CPython's `set_update_internal`: merge a set, add a dict's keys after
    /// one presize, add anything else's items one by one.
    fn update(&mut self, other: &Operand, vm: &mut VM<'_>) -> RunResult<()> {
        match other {
            Operand::Set(other) => {
                if !self.merge_fast(other, vm.heap) {
                    for entry in other.live() {
                        self.add_with_hash(entry.value.clone_with_heap(vm.heap), entry.hash, vm)?;
                    }
                }
            }
            Operand::Dict(keys) => {
                let mask = self.table.set_slot_count() - 1;
                if (self.fill + keys.len()) * 5 >= mask * 3 {
                    self.resize((self.len() + keys.len()) * 2);
                }
                for key in keys {
                    self.add(key.clone_with_heap(vm.heap), vm)?;
                }
            }
            Operand::Items(items) => {
                for item in items {
                    self.add(item.clone_with_heap(vm.heap), vm)?;
                }
            }
        }
        Ok(())
    }

    /// CPython's `set_difference_update_internal`, for a set guest code cannot
    /// reach: discard what `other` holds, then resize away the tombstones if
    /// they are more than a quarter of the table.
    fn difference_update(&mut self, other: &Operand, vm: &mut VM<'_>) -> RunResult<()> {
        match other {
            Operand::Set(other) => {
                for entry in other.live() {
                    self.discard_with_hash(&entry.value, entry.hash, vm)?;
                }
            }
            Operand::Dict(items) | Operand::Items(items) => {
                for item in items {
                    let hash = set_element_hash(item, vm)?;
                    self.discard_with_hash(item, hash, vm)?;
                }
            }
        }
        let mask = self.table.set_slot_count() - 1;
        if self.fill - self.len() > mask / 4 {
            self.resize(grown_size(self.len()));
        }
        Ok(())
    }

    /// CPython's `set_symmetric_difference_update`, for a set guest code
    /// cannot reach.
    fn symmetric_difference_update(&mut self, other: &Operand, vm: &mut VM<'_>) -> RunResult<()> {
        match other {
            Operand::Set(other) => {
                for entry in other.live() {
                    self.toggle(&entry.value, entry.hash, vm)?;
                }
            }
            Operand::Dict(keys) => {
                for key in keys {
                    let hash = set_element_hash(key, vm)?;
                    self.toggle(key, hash, vm)?;
                }
            }
            Operand::Items(_) => {
                // CPython makes a set of the items first and walks that.
                let mut items = DropGuard::new(Self::new(), vm);
                let (items_set, vm) = items.as_parts_mut();
                items_set.update(other, vm)?;
                for entry in items_set.live() {
                    self.toggle(&entry.value, entry.hash, vm)?;
                }
            }
        }
        Ok(())
    }

    /// A new set built from `other` as CPython's `make_new_set` builds one.
    fn from_operand(other: &Operand, vm: &mut VM<'_>) -> RunResult<Self> {
        let mut result = DropGuard::new(Self::new(), vm);
        let (storage, vm) = result.as_parts_mut();
        storage.update(other, vm)?;
        Ok(result.into_inner())
    }
}

impl<'h> HeapRead<'h, SetStorage> {
    /// `self | other`: a copy of `self` (CPython's `set_copy`) updated by `other`.
    fn union(&self, other: &Operand, vm: &mut VM<'h>) -> RunResult<SetStorage> {
        let mut result = DropGuard::new(self.get(vm.heap).clone_with_heap(vm.heap), vm);
        let (storage, vm) = result.as_parts_mut();
        storage.update(other, vm)?;
        Ok(result.into_inner())
    }

    /// `self & other`, as CPython's `set_intersection`: walk the smaller set
    /// (`other` on a tie) testing the larger, or walk an iterable until the
    /// result is as big as `self`; `s & s` is a copy.
    fn intersection(&self, other: &Operand, same: bool, vm: &mut VM<'h>) -> RunResult<SetStorage> {
        if same {
            return Ok(self.get(vm.heap).clone_with_heap(vm.heap));
        }
        let mut result_guard = DropGuard::new(SetStorage::new(), vm);
        let (result, vm) = result_guard.as_parts_mut();
        let self_len = self.get(vm.heap).len();
        match other {
            Operand::Set(other) if other.len() > self_len => {
                let other = vm.heap.protect(other);
                let iter = self.iter(vm)?;
                defer_drop_mut!(iter, vm);
                while let Some((value, hash)) = iter.next_entry(vm)? {
                    if other.contains_with_hash(value, hash, vm)? {
                        result.add_with_hash(value.clone_with_heap(vm.heap), hash, vm)?;
                    }
                }
            }
            Operand::Set(other) => {
                for entry in other.live() {
                    if self.contains_with_hash(&entry.value, entry.hash, vm)? {
                        result.add_with_hash(entry.value.clone_with_heap(vm.heap), entry.hash, vm)?;
                    }
                }
            }
            Operand::Dict(items) | Operand::Items(items) => {
                for item in items {
                    let hash = set_element_hash(item, vm)?;
                    if self.contains_with_hash(item, hash, vm)? {
                        result.add_with_hash(item.clone_with_heap(vm.heap), hash, vm)?;
                        if result.len() >= self_len {
                            break;
                        }
                    }
                }
            }
        }
        Ok(result_guard.into_inner())
    }

    /// `self - other`, as CPython's `set_difference`: against a much smaller
    /// set or dict, or any other iterable, a copy of `self` with `other`
    /// discarded; otherwise a new set of what `self` holds and `other` lacks.
    fn difference(&self, other: &Operand, vm: &mut VM<'h>) -> RunResult<SetStorage> {
        let other_len = match other {
            Operand::Set(other) => Some(other.len()),
            Operand::Dict(keys) => Some(keys.len()),
            Operand::Items(_) => None,
        };
        let self_len = self.get(vm.heap).len();
        if other_len.is_none_or(|other_len| (self_len >> 2) > other_len) {
            let mut result = DropGuard::new(self.get(vm.heap).clone_with_heap(vm.heap), vm);
            let (storage, vm) = result.as_parts_mut();
            storage.difference_update(other, vm)?;
            return Ok(result.into_inner());
        }
        // Membership in a dict's keys, through a set of them.
        let mut lookup_guard = DropGuard::new(
            match other {
                Operand::Dict(_) => Some(SetStorage::from_operand(other, vm)?),
                _ => None,
            },
            vm,
        );
        let (lookup, vm) = lookup_guard.as_parts_mut();
        let lookup = match (other, lookup.as_ref()) {
            (_, Some(keys)) => keys,
            (Operand::Set(other), None) => other,
            _ => unreachable!("an iterable took the copy path"),
        };
        let lookup = vm.heap.protect(lookup);
        let mut result_guard = DropGuard::new(SetStorage::new(), vm);
        {
            let (result, vm) = result_guard.as_parts_mut();
            let iter = self.iter(vm)?;
            defer_drop_mut!(iter, vm);
            while let Some((value, hash)) = iter.next_entry(vm)? {
                if !lookup.contains_with_hash(value, hash, vm)? {
                    result.add_with_hash(value.clone_with_heap(vm.heap), hash, vm)?;
                }
            }
        }
        Ok(result_guard.into_inner())
    }

    /// `self ^ other`, as CPython's `set_symmetric_difference`: a new set
    /// made from `other`, then each of `self`'s elements toggled in it.
    fn symmetric_difference(&self, other: &Operand, vm: &mut VM<'h>) -> RunResult<SetStorage> {
        let mut result_guard = DropGuard::new(SetStorage::from_operand(other, vm)?, vm);
        {
            let (result, vm) = result_guard.as_parts_mut();
            let iter = self.iter(vm)?;
            defer_drop_mut!(iter, vm);
            while let Some((value, hash)) = iter.next_entry(vm)? {
                result.toggle(value, hash, vm)?;
            }
        }
        Ok(result_guard.into_inner())
    }
}

impl<'h> HeapRead<'h, SetStorage> {
    /// Writes the repr format to a formatter.
    fn repr_fmt(
        &self,
        f: &mut impl Write,
        vm: &mut VM<'h>,
        heap_ids: &mut LazyHeapSet,
        type_name: &str,
    ) -> RunResult<()> {
        let len = self.get(vm.heap).len();
        if len == 0 {
            return Ok(write!(f, "{type_name}()")?);
        }

        // Check depth limit before recursing
        // chainbox patch (CHAINBOX.md)
        let mut guard = vm.recursion_guard()?;
        let vm = &mut *guard;

        // frozenset needs type prefix: frozenset({...}), but set doesn't: {...}
        let needs_prefix = type_name != "set";
        if needs_prefix {
            write!(f, "{type_name}(")?;
        }

        // Format a refcount-bumped snapshot of the elements: CPython's set repr
        // copies to a list first, so a user `__repr__` mutating the set
        // mid-format changes nothing (and can't invalidate indices here).
        vm.heap.tracker.check_allocation(len.saturating_mul(VALUE_SIZE))?;
        let items = Vec::with_capacity(len);
        defer_drop_mut!(items, vm);
        // One borrow for the whole snapshot, so no user code can run under it.
        for (i, value) in self.get(vm.heap).iter().enumerate() {
            // The whole snapshot runs before `repr_items_fmt` reaches its first
            // checkpoint, so it polls the deadline itself — otherwise a big set
            // overshoots the time limit by the entire copy.
            vm.heap.tracker.check_time_every(i)?;
            items.push(value.clone_with_heap(vm.heap));
        }

        f.write_char('{')?;
        repr_items_fmt(items, f, vm, heap_ids)?;
        f.write_char('}')?;

        if needs_prefix {
            f.write_char(')')?;
        }

        Ok(())
    }
}

/// Python set type - mutable, unordered collection of unique hashable elements.
///
/// Sets support standard operations like add, remove, discard, pop, clear, as well
/// as set algebra operations like union, intersection, difference, and symmetric
/// difference.
///
/// # Reference Counting
/// When values are added, their reference counts are NOT incremented by the set -
/// the caller transfers ownership. When values are removed or the set is cleared,
/// their reference counts are decremented.
#[derive(Debug, Default)]
pub(crate) struct Set(SetStorage);

impl Set {
    /// Creates a new empty set.
    #[must_use]
    pub fn new() -> Self {
        Self(SetStorage::new())
    }

    /// Creates a set for about `capacity` elements. The capacity is only a
    /// hint: a set's table grows as CPython's does, so that its order is
    /// CPython's (chainbox patch).
    #[must_use]
    pub fn with_capacity(_capacity: usize) -> Self {
        Self::new()
    }

    /// Validates and clamps a capacity before native set preallocation.
    pub(crate) fn preallocation_capacity(requested: usize, tracker: &ResourceTracker) -> Result<usize, ResourceError> {
        checked_preallocation_hint(requested, mem::size_of::<SetEntry>(), tracker)
    }

    /// Returns the number of elements in the set.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Returns true if the set is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds an element to the set, transferring ownership.
    ///
    /// Returns `Ok(true)` if added, `Ok(false)` if already present.
    pub fn add(&mut self, value: Value, vm: &mut VM<'_>) -> RunResult<bool> {
        self.0.add(value, vm)
    }
}

impl<'h> HeapReadMut<'h, Set> {
    /// Removes an element from the set.
    ///
    /// Returns `Err(KeyError)` if the element is not present.
    pub fn remove(&self, value: &Value, vm: &mut VM<'h>) -> RunResult<()> {
        if self.storage_mut().remove(value, vm)? {
            Ok(())
        } else {
            Err(ExcType::key_error(value, vm))
        }
    }

    /// Removes an element from the set if present.
    ///
    /// Does not raise an error if the element is not found.
    pub fn discard(&self, value: &Value, vm: &mut VM<'h>) -> RunResult<()> {
        self.storage_mut().discard(value, vm)
    }

    /// Removes and returns an arbitrary element from the set.
    ///
    /// Returns `Err(KeyError)` if the set is empty.
    pub fn pop(&self, vm: &mut VM<'h>) -> RunResult<Value> {
        self.storage_mut().pop(vm)
    }

    /// Removes all elements from the set.
    pub fn clear(&self, vm: &mut VM<'h>) {
        self.storage_mut().clear(vm);
    }

    /// Borrows the inline storage for reader-gated mutation.
    fn storage_mut(&self) -> BorrowedHeapReadMut<'_, 'h, SetStorage> {
        heap_read_ref_as_field_mut!(self, Set, 0)
    }
}

impl<'h> HeapRead<'h, Set> {
    /// Returns a shallow copy of the set.
    #[must_use]
    pub fn copy(&self, vm: &VM<'h>) -> Set {
        Set(self.get(vm.heap).0.clone_with_heap(vm.heap))
    }

    /// Borrows the inline storage for mutation-safe lookups and iteration.
    fn storage(&self) -> BorrowedHeapRead<'_, 'h, SetStorage> {
        heap_read_ref_as_field!(self, Set, 0)
    }
}

impl Set {
    /// Returns the internal storage (for set operations between Set and FrozenSet).
    pub(crate) fn storage(&self) -> &SetStorage {
        &self.0
    }

    /// Returns an iterator over the set's elements in insertion order.
    ///
    /// This is primarily used by other runtime helpers that need to implement
    /// set-like protocols while still preserving Monty's single canonical set
    /// storage implementation.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Value> {
        self.0.iter()
    }

    /// Creates a set from the `set()` constructor call.
    ///
    /// - `set()` with no args returns an empty set
    /// - `set(iterable)` creates a set from any iterable (list, tuple, set, dict, range, str, bytes)
    pub fn init(vm: &mut VM<'_>, args: ArgValues) -> RunResult<Value> {
        let value = args.get_zero_one_arg("set", vm.heap)?;
        let set = match value {
            None => Self::new(),
            Some(v) => Self::from_iterable(v, vm)?,
        };
        let heap_id = vm.heap.allocate(HeapData::Set(set));
        Ok(Value::Ref(heap_id))
    }

    /// Creates a set from an iterable value, adding and hashing items incrementally.
    ///
    /// A set or frozenset source is copied wholesale instead, carrying its
    /// cached hashes over so `set(s)` runs no user `__hash__` — CPython's
    /// `set_update_internal` shortcut. That copy runs whole between two
    /// checkpoints, so it is preflighted: otherwise only the allocator's hard
    /// ceiling would stop `set(huge)`, killing the worker.
    fn from_iterable(iterable: Value, vm: &mut VM<'_>) -> RunResult<Self> {
        // The preflight can refuse the copy, so the argument rides in a guard;
        // only the iterator path below takes it back.
        let mut guard = DropGuard::new(iterable, vm);
        let (iterable, vm) = guard.as_parts();
        let storage = match iterable {
            Value::Ref(id) => match vm.heap.get(*id) {
                HeapData::Set(set) => Some(clone_storage_checked(&set.0, vm)?),
                HeapData::FrozenSet(set) => Some(clone_storage_checked(&set.storage, vm)?),
                _ => None,
            },
            _ => None,
        };
        if let Some(storage) = storage {
            return Ok(Self(storage));
        }
        // chainbox patch: CPython presizes for a dict's keys, which shows in the order.
        if matches!(iterable, Value::Ref(id) if matches!(vm.heap.get(*id), HeapData::Dict(_))) {
            let (iterable, vm) = guard.into_parts();
            let keys = Operand::from_value(iterable, vm)?;
            defer_drop!(keys, vm);
            return Ok(Self(SetStorage::from_operand(keys, vm)?));
        }

        let (iterable, vm) = guard.into_parts();
        let iterator = iterable.into_py_iter(vm)?.require_synchronous(vm)?;
        defer_drop!(iterator, vm);
        let mut iterator = iterator.read(vm);
        let hint = iterator.iter_size_hint(vm);
        let capacity = checked_preallocation_hint(hint, mem::size_of::<SetEntry>(), &vm.heap.tracker)?;
        // Both the item being hashed and the items already inserted have to
        // survive an insertion that raises — an unhashable item, or a
        // colliding `__eq__` that raises — so the half-built set rides in a
        // guard until it is handed back whole.
        let mut set_guard = DropGuard::new(Self::with_capacity(capacity), vm);
        loop {
            let (set, vm) = set_guard.as_parts_mut();
            let Some(item) = iterator.py_next(vm)? else {
                break;
            };
            set.add(item, vm)?;
        }
        Ok(set_guard.into_inner())
    }
}

/// Copies a set's storage, charging its entries against the memory limit first.
///
/// The copy runs whole between two execution checkpoints, so without this only
/// the allocator's hard ceiling would catch it. The index table it rebuilds is
/// bounded by those entries, which is why charging them is enough.
fn clone_storage_checked(storage: &SetStorage, vm: &VM<'_>) -> RunResult<SetStorage> {
    vm.heap
        .tracker
        .check_allocation(storage.len().saturating_mul(mem::size_of::<SetEntry>()))?;
    Ok(storage.clone_with_heap(vm.heap))
}

impl<'h> HeapReadMut<'h, Set> {
    /// Adds an element to the set, transferring ownership.
    ///
    /// Returns `Ok(true)` if the element was added (not already present),
    /// `Ok(false)` if the element was already in the set (and the value is dropped).
    /// Returns `Err` if the element is unhashable (and the value is dropped).
    ///
    /// Uses the mutation-safe storage lookup ([`TableProbe::find_index`]) to
    /// detect duplicates, so a user `__eq__` mutating the set mid-add cannot
    /// leave the probe holding stale indices.
    pub fn add(&self, value: Value, vm: &mut VM<'h>) -> RunResult<bool> {
        let mut value_guard = DropGuard::new(value, vm);
        let (value, vm) = value_guard.as_parts();
        let hash = set_element_hash(value, vm)?;
        let (value, vm) = value_guard.into_parts();
        self.add_with_hash(value, hash, vm)
    }

    /// Adds an element whose hash the caller already knows.
    ///
    /// The `HeapReadMut` twin of [`SetStorage::add_with_hash`], carrying the same
    /// obligation: the hash must be the one stored for this value.
    pub(crate) fn add_with_hash(&self, value: Value, hash: u64, vm: &mut VM<'h>) -> RunResult<bool> {
        let mut value_guard = DropGuard::new(value, vm);
        let (value, vm) = value_guard.as_parts();

        if self.storage().find_index(value, hash, vm)?.is_some() {
            return Ok(false);
        }

        // Add new entry
        let (value, vm) = value_guard.into_parts();
        if let Err(err) = self.get(vm.heap).0.check_growth(&vm.heap.tracker) {
            value.drop_with(vm);
            return Err(err.into());
        }
        self.get_mut(vm.heap).0.place(SetEntry { value, hash });
        Ok(true)
    }

    /// `s.update(other)` (and `SET_UPDATE`): CPython's `set_update_internal`
    /// on this set's own table.
    pub(crate) fn hr_update(&self, other: Value, vm: &mut VM<'h>) -> RunResult<()> {
        self.in_place_method(other, InPlace::Update, vm)
    }

    /// Runs `op` on this set's own table, as CPython's in-place set
    /// operations mutate it (chainbox patch: upstream replaced the set with a
    /// fresh result, which CPython lays out differently). The storage is
    /// taken out of the heap for the operation, so a comparison's guest code
    /// sees an empty set meanwhile, and is put back whatever the outcome.
    fn with_own_storage(
        &self,
        vm: &mut VM<'h>,
        op: impl FnOnce(&mut SetStorage, &mut VM<'h>) -> RunResult<()>,
    ) -> RunResult<()> {
        let mut storage = mem::take(&mut self.get_mut(vm.heap).0);
        let result = op(&mut storage, vm);
        let placeholder = mem::replace(&mut self.get_mut(vm.heap).0, storage);
        placeholder.drop_with(vm);
        result
    }

    /// `s.update(t)`, `s.difference_update(t)`, `s.symmetric_difference_update(t)`:
    /// as the operators, with any iterable `t`.
    fn in_place_method(&self, other: Value, op: InPlace, vm: &mut VM<'h>) -> RunResult<()> {
        if is_same_set(&other, &self.get(vm.heap).0, vm.heap) {
            other.drop_with(vm);
            self.in_place_on_itself(op, vm);
            return Ok(());
        }
        let other = Operand::from_value(other, vm)?;
        defer_drop!(other, vm);
        self.with_own_storage(vm, |storage, vm| op.apply(storage, other, vm))
    }

    /// `s |= t`, `s -= t`, `s ^= t` with a set-like `t`, in place.
    fn in_place(&self, other: &Value, op: InPlace, vm: &mut VM<'h>) -> RunResult<bool> {
        if is_same_set(other, &self.get(vm.heap).0, vm.heap) {
            self.in_place_on_itself(op, vm);
            return Ok(true);
        }
        let Some(other) = get_storage_from_set_operand(other, vm)? else {
            return Ok(false);
        };
        defer_drop!(other, vm);
        self.with_own_storage(vm, |storage, vm| op.apply(storage, other, vm))?;
        Ok(true)
    }

    /// `s |= s` changes nothing; `s -= s` and `s ^= s` empty the set (CPython
    /// clears it rather than leaving a table of dummies).
    fn in_place_on_itself(&self, op: InPlace, vm: &mut VM<'h>) {
        if !matches!(op, InPlace::Update) {
            self.clear(vm);
        }
    }
}

/// Which in-place set operation [`HeapReadMut::in_place`] runs.
#[derive(Debug, Clone, Copy)]
enum InPlace {
    Update,
    DifferenceUpdate,
    SymmetricDifferenceUpdate,
}

impl InPlace {
    /// Runs the operation on a storage guest code cannot reach.
    fn apply(self, storage: &mut SetStorage, other: &Operand, vm: &mut VM<'_>) -> RunResult<()> {
        match self {
            Self::Update => storage.update(other, vm),
            Self::DifferenceUpdate => storage.difference_update(other, vm),
            Self::SymmetricDifferenceUpdate => storage.symmetric_difference_update(other, vm),
        }
    }
}

impl<'h> HeapRead<'h, Set> {
    /// Checks membership through the live storage's guarded probe.
    pub(crate) fn contains(&self, value: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        self.storage().contains(value, vm)
    }

    /// Set algebra operations (union, intersection, difference, symmetric_difference)
    /// via HeapRead. Snapshots the other operand once so only `self` is read
    /// live, then calls the matching `SetStorage` method.
    fn set_algebra(&self, args: ArgValues, op: SetAlgebra, vm: &mut VM<'h>) -> RunResult<Value> {
        let result = algebra_call(&self.storage(), args, op, "set", vm)?;
        let heap_id = vm.heap.allocate(HeapData::Set(Set(result)));
        Ok(Value::Ref(heap_id))
    }

    /// Set comparison operations (issubset, issuperset, isdisjoint) via HeapRead.
    /// Clones self's storage once for the comparison.
    fn comparison_op(&self, other: &Value, op: SetComparison, vm: &mut VM<'h>) -> RunResult<bool> {
        // Get other's storage
        let entries_opt = match other {
            Value::Ref(id) => match vm.heap.get(*id) {
                HeapData::Set(s) => Some(s.0.clone_entries(vm.heap)),
                HeapData::FrozenSet(fs) => Some(fs.storage.clone_entries(vm.heap)),
                _ => None,
            },
            _ => None,
        };

        let other_storage = if let Some(entries) = entries_opt {
            SetStorage::from_entry_vec(entries)
        } else {
            let temp = Set::from_iterable(other.clone_with_heap(vm), vm)?;
            temp.0
        };
        defer_drop!(other_storage, vm);

        let self_storage = self.get(vm.heap).0.clone_with_heap(vm.heap);
        defer_drop!(self_storage, vm);

        let self_read = vm.heap.protect(self_storage);
        let other_read = vm.heap.protect(other_storage);

        match op {
            SetComparison::Subset => self_read.is_subset(&other_read, vm),
            SetComparison::Superset => other_read.is_subset(&self_read, vm),
            SetComparison::Disjoint => self_storage.is_disjoint(other_storage, vm),
        }
    }
}

/// Which set algebra operation to perform.
#[derive(Debug, Clone, Copy)]
enum SetAlgebra {
    Union,
    Intersection,
    Difference,
    SymmetricDifference,
}

/// Which set comparison operation to perform.
#[derive(Debug, Clone, Copy)]
enum SetComparison {
    Subset,
    Superset,
    Disjoint,
}

impl<C: ContainsHeap> DropWithContext<C> for Set {
    fn drop_with(self, heap: &mut C) {
        self.0.drop_with(heap);
    }
}

impl<C: ContainsHeap> DropWithContext<C> for SetStorage {
    fn drop_with(mut self, heap: &mut C) {
        self.table.take_entries().drop_with(heap);
    }
}

impl<C: ContainsHeap> DropWithContext<C> for FrozenSet {
    fn drop_with(self, heap: &mut C) {
        self.storage.drop_with(heap);
    }
}

impl<'h> HeapRead<'h, FrozenSet> {
    /// Checks if the frozenset contains a value, using the candidate collection pattern
    /// to avoid holding a borrow on the storage during `py_eq` calls.
    pub(crate) fn contains(&self, value: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        self.storage().contains(value, vm)
    }

    /// Binary set operation via HeapRead. Creates a new frozenset from the result.
    ///
    /// Clones self's storage entries to release the heap borrow before calling
    /// the set operations (which need `&mut VM` for hashing and equality checks).
    /// Applies set sub when the other value is a set operand.
    fn sub_value(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<FrozenSet>> {
        let Some(other_storage) = get_storage_from_set_operand(other, vm)? else {
            return Ok(None);
        };
        defer_drop!(other_storage, vm);
        // chainbox patch (CHAINBOX.md)
        Ok(Some(FrozenSet::wrap(self.storage().difference(other_storage, vm)?)))
    }

    /// Applies set and when the other value is a set operand.
    fn and_value(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<FrozenSet>> {
        let Some(other_storage) = get_storage_from_set_operand(other, vm)? else {
            return Ok(None);
        };
        defer_drop!(other_storage, vm);
        Ok(Some(FrozenSet::wrap(self.storage().intersection(
            other_storage,
            is_same_set(other, &self.storage().get(vm.heap), vm.heap),
            vm,
        )?)))
    }

    /// Applies set or when the other value is a set operand.
    fn or_value(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<FrozenSet>> {
        let Some(other_storage) = get_storage_from_set_operand(other, vm)? else {
            return Ok(None);
        };
        defer_drop!(other_storage, vm);
        Ok(Some(FrozenSet::wrap(self.storage().union(other_storage, vm)?)))
    }

    /// Applies set xor when the other value is a set operand.
    fn xor_value(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<FrozenSet>> {
        let Some(other_storage) = get_storage_from_set_operand(other, vm)? else {
            return Ok(None);
        };
        defer_drop!(other_storage, vm);
        Ok(Some(FrozenSet::wrap(
            self.storage().symmetric_difference(other_storage, vm)?,
        )))
    }

    /// Set algebra operations for frozenset via HeapRead.
    fn set_algebra(&self, args: ArgValues, op: SetAlgebra, vm: &mut VM<'h>) -> RunResult<Value> {
        let result = algebra_call(&self.storage(), args, op, "frozenset", vm)?;
        let heap_id = vm.heap.allocate(HeapData::FrozenSet(FrozenSet::wrap(result)));
        Ok(Value::Ref(heap_id))
    }

    /// Set comparison operations for frozenset via HeapRead.
    fn comparison_op(&self, other: &Value, op: SetComparison, vm: &mut VM<'h>) -> RunResult<bool> {
        let entries_opt = match other {
            Value::Ref(id) => match vm.heap.get(*id) {
                HeapData::Set(s) => Some(s.0.clone_entries(vm.heap)),
                HeapData::FrozenSet(fs) => Some(fs.storage.clone_entries(vm.heap)),
                _ => None,
            },
            _ => None,
        };

        let other_storage = if let Some(entries) = entries_opt {
            SetStorage::from_entry_vec(entries)
        } else {
            let temp = Set::from_iterable(other.clone_with_heap(vm), vm)?;
            temp.0
        };
        defer_drop!(other_storage, vm);

        let self_storage = self.get(vm.heap).storage.clone_with_heap(vm.heap);
        defer_drop!(self_storage, vm);

        let self_read = vm.heap.protect(self_storage);
        let other_read = vm.heap.protect(other_storage);

        match op {
            SetComparison::Subset => self_read.is_subset(&other_read, vm),
            SetComparison::Superset => other_read.is_subset(&self_read, vm),
            SetComparison::Disjoint => self_storage.is_disjoint(other_storage, vm),
        }
    }

    fn storage(&self) -> BorrowedHeapRead<'_, 'h, SetStorage> {
        heap_read_ref_as_field!(self, FrozenSet, storage)
    }
}

impl<C: ContainsHeap> DropWithContext<C> for SetEntry {
    fn drop_with(self, heap: &mut C) {
        self.value.drop_with(heap);
    }
}

impl<'h> PyTrait<'h> for HeapObjectRead<'h, Set> {
    fn py_is_iterable(&self, _vm: &VM<'h>) -> bool {
        true
    }

    fn py_contains_impl(&self, item: &Value, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        self.contains(item, vm).map(Some)
    }

    fn py_type(&self, _vm: &VM<'h>) -> Type {
        Type::Set
    }

    fn py_iter(&self, vm: &mut VM<'h>) -> RunResult<CallResult> {
        Ok(CallResult::Value(SetIterator::from_set(
            self.id(),
            self.get(vm.heap).len(),
            vm,
        )))
    }

    fn py_len(&self, vm: &VM<'h>) -> Option<usize> {
        Some(self.get(vm.heap).len())
    }

    fn py_cmp_op(&self, other: &Value, op: CmpOperator, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        self.storage().compare_operand(other, op, vm)
    }

    fn py_eq_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        // `set` and `frozenset` compare equal by their members, regardless of
        // mutability. `set == dict_keys`/`dict_items` is handled by the reflected
        // pass via the dict-view impls.
        match other.read_heap(vm) {
            Some(HeapReadOutput::Set(other)) => Ok(Some(self.storage().eq(&other.storage(), vm)?)),
            Some(HeapReadOutput::FrozenSet(other)) => Ok(Some(self.storage().eq(&other.storage(), vm)?)),
            _ => Ok(None),
        }
    }

    fn py_bool(&self, vm: &mut VM<'h>) -> RunResult<bool> {
        Ok(!self.get(vm.heap).is_empty())
    }

    fn py_sub_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        let Some(result) = self.sub_value(other, vm)? else {
            return Ok(None);
        };
        let result_id = vm.heap.allocate(HeapData::Set(result));
        Ok(Some(Value::Ref(result_id)))
    }

    fn py_and_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        let Some(result) = self.and_value(other, vm)? else {
            return Ok(None);
        };
        let result_id = vm.heap.allocate(HeapData::Set(result));
        Ok(Some(Value::Ref(result_id)))
    }

    fn py_or_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        let Some(result) = self.or_value(other, vm)? else {
            return Ok(None);
        };
        let result_id = vm.heap.allocate(HeapData::Set(result));
        Ok(Some(Value::Ref(result_id)))
    }

    fn py_xor_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        let Some(result) = self.xor_value(other, vm)? else {
            return Ok(None);
        };
        let result_id = vm.heap.allocate(HeapData::Set(result));
        Ok(Some(Value::Ref(result_id)))
    }

    // chainbox patch (CHAINBOX.md)
    fn py_isub_impl(&mut self, other: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        if !is_set_or_frozenset(other, vm) {
            return Ok(false);
        }
        self.in_place(other, InPlace::DifferenceUpdate, vm)
    }

    fn py_iand_impl(&mut self, other: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        if !is_set_or_frozenset(other, vm) {
            return Ok(false);
        }
        let result = self.and_value(other, vm)?;
        self.update_in_place(result, vm)
    }

    fn py_ior_impl(&mut self, other: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        if !is_set_or_frozenset(other, vm) {
            return Ok(false);
        }
        self.in_place(other, InPlace::Update, vm)
    }

    fn py_ixor_impl(&mut self, other: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        if !is_set_or_frozenset(other, vm) {
            return Ok(false);
        }
        self.in_place(other, InPlace::SymmetricDifferenceUpdate, vm)
    }

    fn py_repr_fmt(&self, f: &mut impl Write, vm: &mut VM<'h>, heap_ids: &mut LazyHeapSet) -> RunResult<()> {
        self.storage().repr_fmt(f, vm, heap_ids, "set")
    }

    fn py_call_attr(&mut self, vm: &mut VM<'h>, attr: &EitherStr, args: ArgValues) -> RunResult<CallResult> {
        let value = match attr.static_string(vm.interns) {
            Some(StaticStrings::Add) => {
                let value = args.get_one_arg("set.add", vm.heap)?;
                self.add(value, vm)?;
                Ok(Value::None)
            }
            Some(StaticStrings::Remove) => {
                let value = args.get_one_arg("set.remove", vm.heap)?;
                defer_drop!(value, vm);
                self.remove(value, vm)?;
                Ok(Value::None)
            }
            Some(StaticStrings::Discard) => {
                let value = args.get_one_arg("set.discard", vm.heap)?;
                defer_drop!(value, vm);
                self.discard(value, vm)?;
                Ok(Value::None)
            }
            Some(StaticStrings::Pop) => {
                args.check_zero_args("set.pop", vm.heap)?;
                self.pop(vm)
            }
            Some(StaticStrings::Clear) => {
                args.check_zero_args("set.clear", vm.heap)?;
                self.clear(vm);
                Ok(Value::None)
            }
            Some(StaticStrings::Copy) => {
                args.check_zero_args("set.copy", vm.heap)?;
                let copy = self.copy(vm);
                let heap_id = vm.heap.allocate(HeapData::Set(copy));
                Ok(Value::Ref(heap_id))
            }
            Some(StaticStrings::Update) => {
                for other in args.into_pos_only("set.update", vm.heap)? {
                    self.hr_update(other, vm)?;
                }
                Ok(Value::None)
            }
            // chainbox patch: the in-place methods, on the set's own table.
            Some(StaticStrings::DifferenceUpdate) => {
                for other in args.into_pos_only("set.difference_update", vm.heap)? {
                    self.in_place_method(other, InPlace::DifferenceUpdate, vm)?;
                }
                Ok(Value::None)
            }
            Some(StaticStrings::SymmetricDifferenceUpdate) => {
                let other = args.get_one_arg("set.symmetric_difference_update", vm.heap)?;
                self.in_place_method(other, InPlace::SymmetricDifferenceUpdate, vm)?;
                Ok(Value::None)
            }
            Some(StaticStrings::IntersectionUpdate) => {
                let result = algebra_call(&self.storage(), args, SetAlgebra::Intersection, "set", vm)?;
                // CPython swaps the result's table in (`set_swap_bodies`), finger kept.
                let storage = &mut self.get_mut(vm.heap).0;
                let finger = storage.finger;
                let old = mem::replace(storage, result);
                self.get_mut(vm.heap).0.finger = finger;
                old.drop_with(vm);
                Ok(Value::None)
            }
            Some(StaticStrings::Union) => self.set_algebra(args, SetAlgebra::Union, vm),
            Some(StaticStrings::Intersection) => self.set_algebra(args, SetAlgebra::Intersection, vm),
            Some(StaticStrings::Difference) => self.set_algebra(args, SetAlgebra::Difference, vm),
            Some(StaticStrings::SymmetricDifference) => self.set_algebra(args, SetAlgebra::SymmetricDifference, vm),
            Some(StaticStrings::Issubset) => {
                let other = args.get_one_arg("set.issubset", vm.heap)?;
                defer_drop!(other, vm);
                Ok(Value::Bool(self.comparison_op(other, SetComparison::Subset, vm)?))
            }
            Some(StaticStrings::Issuperset) => {
                let other = args.get_one_arg("set.issuperset", vm.heap)?;
                defer_drop!(other, vm);
                Ok(Value::Bool(self.comparison_op(other, SetComparison::Superset, vm)?))
            }
            Some(StaticStrings::Isdisjoint) => {
                let other = args.get_one_arg("set.isdisjoint", vm.heap)?;
                defer_drop!(other, vm);
                Ok(Value::Bool(self.comparison_op(other, SetComparison::Disjoint, vm)?))
            }
            _ => {
                args.drop_with(vm);
                return Err(ExcType::attribute_error(Type::Set, attr.as_str(vm.interns)));
            }
        };
        value.map(CallResult::Value)
    }
}

/// chainbox patch: `s |= t`, `s &= t`, `s -= t` and `s ^= t` with a set or
/// frozenset `t` update `s` itself, as CPython's `set_ior` and the others
/// do, so an alias (`u = s`, a set passed to a function) sees the update.
/// Any other operand falls back to the binary operator (`s |= d.keys()`
/// rebinds `s` in CPython too).
fn is_set_or_frozenset(value: &Value, vm: &VM<'_>) -> bool {
    matches!(value, Value::Ref(id) if matches!(vm.heap.get(*id), HeapData::Set(_) | HeapData::FrozenSet(_)))
}

impl<'h> HeapReadMut<'h, Set> {
    /// Replaces the set's items by an operation's `result`, in place.
    fn update_in_place(&self, result: Option<Set>, vm: &mut VM<'h>) -> RunResult<bool> {
        let Some(result) = result else {
            return Ok(false);
        };
        let old = std::mem::replace(self.get_mut(vm.heap), result);
        old.drop_with(vm);
        Ok(true)
    }
}

/// Helper methods for set operations with arbitrary iterables.
impl<'h> HeapRead<'h, Set> {
    /// Implements operator-form set algebra, which only accepts set/frozenset operands.
    ///
    /// Unlike method forms such as `set.union(iterable)`, the binary operators
    /// `& | ^ -` are intentionally strict and return `None` for operands outside
    /// the set-like values CPython accepts here (`set`, `frozenset`,
    /// `dict_keys`, and `dict_items`) so the VM can raise the standard
    /// unsupported-operands `TypeError`.
    /// Applies set sub when the other value is a set operand.
    fn sub_value(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Set>> {
        let Some(other_storage) = get_storage_from_set_operand(other, vm)? else {
            return Ok(None);
        };
        defer_drop!(other_storage, vm);
        // chainbox patch (CHAINBOX.md)
        Ok(Some(Set(self.storage().difference(other_storage, vm)?)))
    }

    /// Applies set and when the other value is a set operand.
    fn and_value(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Set>> {
        let Some(other_storage) = get_storage_from_set_operand(other, vm)? else {
            return Ok(None);
        };
        defer_drop!(other_storage, vm);
        Ok(Some(Set(self.storage().intersection(
            other_storage,
            is_same_set(other, &self.storage().get(vm.heap), vm.heap),
            vm,
        )?)))
    }

    /// Applies set or when the other value is a set operand.
    fn or_value(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Set>> {
        let Some(other_storage) = get_storage_from_set_operand(other, vm)? else {
            return Ok(None);
        };
        defer_drop!(other_storage, vm);
        Ok(Some(Set(self.storage().union(other_storage, vm)?)))
    }

    /// Applies set xor when the other value is a set operand.
    fn xor_value(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Set>> {
        let Some(other_storage) = get_storage_from_set_operand(other, vm)? else {
            return Ok(None);
        };
        defer_drop!(other_storage, vm);
        Ok(Some(Set(self.storage().symmetric_difference(other_storage, vm)?)))
    }
}

impl HeapItem for Set {
    fn py_dec_ref_ids(&mut self, stack: &mut Vec<HeapId>) {
        self.0.collect_dec_ref_ids(stack);
    }
}

/// Python frozenset type - immutable, unordered collection of unique hashable elements.
///
/// FrozenSets support the same set algebra operations as sets (union, intersection,
/// difference, symmetric difference) but are immutable and therefore hashable.
///
/// # Hashability
/// Unlike mutable sets, frozensets can be used as dict keys or set elements because
/// they are immutable. The hash is computed as the XOR of element hashes (order-independent).
#[derive(Debug, Default)]
pub(crate) struct FrozenSet {
    storage: SetStorage,
    /// Lazily-computed Python hash.
    cached_hash: Cell<Option<HashValue>>,
}

impl FrozenSet {
    /// Wraps an existing `SetStorage` as a frozenset.
    ///
    /// The freshly-wrapped frozenset starts with an empty hash cache; the
    /// hash is computed lazily on first `py_hash` call. Inherited cache
    /// state is *not* propagated from a source frozenset — each instance
    /// manages its own cache.
    #[must_use]
    pub fn wrap(storage: SetStorage) -> Self {
        Self {
            storage,
            cached_hash: Cell::new(None),
        }
    }

    /// Creates a new empty frozenset.
    #[must_use]
    pub fn new() -> Self {
        Self::wrap(SetStorage::new())
    }

    /// Returns the number of elements in the frozenset.
    #[must_use]
    pub fn len(&self) -> usize {
        self.storage.len()
    }

    /// Returns true if the frozenset is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.storage.is_empty()
    }

    /// Returns the internal storage.
    pub(crate) fn storage(&self) -> &SetStorage {
        &self.storage
    }
}

impl FrozenSet {
    /// Creates a frozenset from a Set, consuming the Set's storage.
    ///
    /// This is used when we need to convert a mutable set to an immutable frozenset
    /// without cloning.
    pub fn from_set(set: Set) -> Self {
        Self::wrap(set.0)
    }

    /// Creates a frozenset from the `frozenset()` constructor call.
    ///
    /// - `frozenset()` with no args returns an empty frozenset
    /// - `frozenset(iterable)` creates a frozenset from any iterable (list, tuple, set, dict, range, str, bytes)
    pub fn init(vm: &mut VM<'_>, args: ArgValues) -> RunResult<Value> {
        let value = args.get_zero_one_arg("frozenset", vm.heap)?;
        let frozenset = match value {
            None => Self::new(),
            Some(v) => Self::from_set(Set::from_iterable(v, vm)?),
        };
        let heap_id = vm.heap.allocate(HeapData::FrozenSet(frozenset));
        Ok(Value::Ref(heap_id))
    }
}

impl<'h> PyTrait<'h> for HeapObjectRead<'h, FrozenSet> {
    fn py_is_iterable(&self, _vm: &VM<'h>) -> bool {
        true
    }

    fn py_contains_impl(&self, item: &Value, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        self.contains(item, vm).map(Some)
    }

    fn py_type(&self, _vm: &VM<'h>) -> Type {
        Type::FrozenSet
    }

    fn py_iter(&self, vm: &mut VM<'h>) -> RunResult<CallResult> {
        Ok(CallResult::Value(SetIterator::from_frozen_set(
            self.id(),
            self.get(vm.heap).len(),
            vm,
        )))
    }

    fn py_len(&self, vm: &VM<'h>) -> Option<usize> {
        Some(self.get(vm.heap).len())
    }

    fn py_cmp_op(&self, other: &Value, op: CmpOperator, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        self.storage().compare_operand(other, op, vm)
    }

    fn py_eq_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        // `frozenset` and `set` compare equal by their members, regardless of
        // mutability. `frozenset == dict_keys`/`dict_items` is handled by the
        // reflected pass via the dict-view impls.
        match other.read_heap(vm) {
            Some(HeapReadOutput::FrozenSet(other)) => Ok(Some(self.storage().eq(&other.storage(), vm)?)),
            Some(HeapReadOutput::Set(other)) => Ok(Some(self.storage().eq(&other.storage(), vm)?)),
            _ => Ok(None),
        }
    }

    /// Hashes the frozenset by XORing all element hashes.
    ///
    /// XOR is commutative, so the hash is independent of insertion order — two
    /// frozensets with the same members hash equally regardless of how they were built.
    /// Caches the computed hash on first call (frozensets are immutable).
    fn py_hash(&self, vm: &mut VM<'h>) -> RunResult<Option<HashValue>> {
        if let Some(cached) = self.get(vm.heap).cached_hash.get() {
            return Ok(Some(cached));
        }
        // chainbox patch: CPython's frozenset hash over the cached member hashes.
        let hash = hash_frozenset_of(self.get(vm.heap).storage.live().map(|entry| entry.hash));
        self.get(vm.heap).cached_hash.set(Some(hash));
        Ok(Some(hash))
    }

    fn py_bool(&self, vm: &mut VM<'h>) -> RunResult<bool> {
        Ok(!self.get(vm.heap).is_empty())
    }

    fn py_sub_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        let Some(result) = self.sub_value(other, vm)? else {
            return Ok(None);
        };
        let result_id = vm.heap.allocate(HeapData::FrozenSet(result));
        Ok(Some(Value::Ref(result_id)))
    }

    fn py_and_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        let Some(result) = self.and_value(other, vm)? else {
            return Ok(None);
        };
        let result_id = vm.heap.allocate(HeapData::FrozenSet(result));
        Ok(Some(Value::Ref(result_id)))
    }

    fn py_or_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        let Some(result) = self.or_value(other, vm)? else {
            return Ok(None);
        };
        let result_id = vm.heap.allocate(HeapData::FrozenSet(result));
        Ok(Some(Value::Ref(result_id)))
    }

    fn py_xor_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        let Some(result) = self.xor_value(other, vm)? else {
            return Ok(None);
        };
        let result_id = vm.heap.allocate(HeapData::FrozenSet(result));
        Ok(Some(Value::Ref(result_id)))
    }

    fn py_repr_fmt(&self, f: &mut impl Write, vm: &mut VM<'h>, heap_ids: &mut LazyHeapSet) -> RunResult<()> {
        self.storage().repr_fmt(f, vm, heap_ids, "frozenset")
    }

    fn py_call_attr(&mut self, vm: &mut VM<'h>, attr: &EitherStr, args: ArgValues) -> RunResult<CallResult> {
        let value = match attr.static_string(vm.interns) {
            Some(StaticStrings::Copy) => {
                args.check_zero_args("frozenset.copy", vm.heap)?;
                let cloned = self.get(vm.heap).storage.clone_with_heap(vm.heap);
                let heap_id = vm.heap.allocate(HeapData::FrozenSet(FrozenSet::wrap(cloned)));
                Ok(Value::Ref(heap_id))
            }
            // chainbox patch (CHAINBOX.md)
            Some(StaticStrings::Union) => self.set_algebra(args, SetAlgebra::Union, vm),
            Some(StaticStrings::Intersection) => self.set_algebra(args, SetAlgebra::Intersection, vm),
            Some(StaticStrings::Difference) => self.set_algebra(args, SetAlgebra::Difference, vm),
            Some(StaticStrings::SymmetricDifference) => self.set_algebra(args, SetAlgebra::SymmetricDifference, vm),
            Some(StaticStrings::Issubset) => {
                let other = args.get_one_arg("frozenset.issubset", vm.heap)?;
                defer_drop!(other, vm);
                Ok(Value::Bool(self.comparison_op(other, SetComparison::Subset, vm)?))
            }
            Some(StaticStrings::Issuperset) => {
                let other = args.get_one_arg("frozenset.issuperset", vm.heap)?;
                defer_drop!(other, vm);
                Ok(Value::Bool(self.comparison_op(other, SetComparison::Superset, vm)?))
            }
            Some(StaticStrings::Isdisjoint) => {
                let other = args.get_one_arg("frozenset.isdisjoint", vm.heap)?;
                defer_drop!(other, vm);
                Ok(Value::Bool(self.comparison_op(other, SetComparison::Disjoint, vm)?))
            }
            _ => {
                args.drop_with(vm);
                return Err(ExcType::attribute_error(Type::FrozenSet, attr.as_str(vm.interns)));
            }
        };
        value.map(CallResult::Value)
    }
}

impl HeapItem for FrozenSet {
    fn py_dec_ref_ids(&mut self, stack: &mut Vec<HeapId>) {
        self.storage.collect_dec_ref_ids(stack);
    }
}

/// Returns temporary set storage only for operator-valid set operands.
///
/// This is stricter than `Set::get_storage_from_value(...)`: operator forms
/// only accept CPython's set-like operands (`set`, `frozenset`, `dict_keys`,
/// and `dict_items`), while method forms accept any iterable.
fn get_storage_from_set_operand(value: &Value, vm: &mut VM<'_>) -> RunResult<Option<Operand>> {
    // chainbox patch: a dict view is not a set operand here, as in CPython,
    // whose set operators return NotImplemented for it: the view's reflected
    // operator (`dict_view_op`) computes `s | d.keys()`.
    if let Value::Ref(id) = value
        && matches!(vm.heap.get(*id), HeapData::DictKeysView(_) | HeapData::DictItemsView(_))
    {
        return Ok(None);
    }
    Ok(set_operand_storage(value, vm)?.map(Operand::Set))
}

/// The storage behind a set-like operand, slot for slot for a set or frozenset.
fn set_operand_storage(value: &Value, vm: &mut VM<'_>) -> RunResult<Option<SetStorage>> {
    let Value::Ref(id) = value else {
        return Ok(None);
    };

    match vm.heap.read(*id) {
        HeapReadOutput::Set(set) => Ok(Some(set.get(vm.heap).0.clone_exact(vm.heap))),
        HeapReadOutput::FrozenSet(set) => Ok(Some(set.get(vm.heap).storage.clone_exact(vm.heap))),
        HeapReadOutput::DictKeysView(view) => {
            let Set(storage) = view.to_set(vm)?;
            Ok(Some(storage))
        }
        HeapReadOutput::DictItemsView(view) => {
            let Set(storage) = view.to_set(vm)?;
            Ok(Some(storage))
        }
        _ => Ok(None),
    }
}

// chainbox patch (CHAINBOX.md)
/// Whether `other` is the very set `this` reads (`s & s`, `s -= s`), which
/// CPython's set code tells apart.
fn is_same_set(other: &Value, this: &SetStorage, heap: &Heap) -> bool {
    match other {
        Value::Ref(id) => match heap.get(*id) {
            HeapData::Set(set) => std::ptr::eq(&set.0, this),
            HeapData::FrozenSet(set) => std::ptr::eq(&set.storage, this),
            _ => false,
        },
        _ => false,
    }
}

// Custom serde implementations for SetStorage, Set, and FrozenSet.
// Only serialize entries; rebuild the indices hash table on deserialize.

impl serde::Serialize for SetStorage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.table.serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for SetStorage {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // chainbox patch (CHAINBOX.md)
        // The slots come back as they were dumped; `fill` counts the
        // non-vacant ones, and `pop` restarts from the table's start.
        let table: PyHashTable<SetEntry> = PyHashTable::deserialize(deserializer)?;
        let fill = table.set_slots().iter().filter(|e| !e.is_vacant()).count();
        Ok(Self { table, fill, finger: 0 })
    }
}

impl serde::Serialize for Set {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for Set {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self(SetStorage::deserialize(deserializer)?))
    }
}

impl serde::Serialize for FrozenSet {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Skip `cached_hash` — it's recomputable from the entries and we
        // don't want to lock the snapshot format to the current hash function.
        self.storage.serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for FrozenSet {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::wrap(SetStorage::deserialize(deserializer)?))
    }
}

/// Set-like source retained by a set iterator.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
enum SetIteratorSource {
    Set(HeapId),
    FrozenSet(HeapId),
}

/// Iterator over set or frozen-set storage.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct SetIterator {
    source: SetIteratorSource,
    /// Position and the size guard.
    ///
    /// `setiterobject` has no `di->len` counterpart, so
    /// [`TableSource::changed_keys_error`] is `None` for a set and a
    /// renumbering mid-walk ends the walk instead of raising.
    #[serde(flatten)]
    cursor: TableCursor,
}

impl SetIterator {
    /// Allocates an iterator retaining a mutable set.
    fn from_set(id: HeapId, expected_len: usize, vm: &mut VM<'_>) -> Value {
        Self::allocate(SetIteratorSource::Set(id), expected_len, vm)
    }

    /// Allocates an iterator retaining a frozen set.
    fn from_frozen_set(id: HeapId, expected_len: usize, vm: &mut VM<'_>) -> Value {
        Self::allocate(SetIteratorSource::FrozenSet(id), expected_len, vm)
    }

    /// Returns the retained set-like source id for GC tracing.
    pub(crate) fn source_id(&self) -> HeapId {
        match self.source {
            SetIteratorSource::Set(id) | SetIteratorSource::FrozenSet(id) => id,
        }
    }

    /// Returns the captured number of values not yet yielded.
    pub(crate) fn size_hint(&self) -> usize {
        self.cursor.size_hint()
    }

    /// Allocates an iterator and retains its source.
    fn allocate(source: SetIteratorSource, expected_len: usize, vm: &mut VM<'_>) -> Value {
        let source_id = match source {
            SetIteratorSource::Set(id) | SetIteratorSource::FrozenSet(id) => id,
        };
        let id = vm.heap.allocate(HeapData::SetIterator(Self {
            source,
            cursor: TableCursor::new(expected_len),
        }));
        vm.heap.inc_ref(source_id);
        Value::Ref(id)
    }
}

impl HeapItem for SetIterator {
    fn py_dec_ref_ids(&mut self, stack: &mut Vec<HeapId>) {
        stack.push(self.source_id());
    }
}

impl<'h> PyTrait<'h> for HeapObjectRead<'h, SetIterator> {
    fn py_is_iterable(&self, _: &VM<'h>) -> bool {
        true
    }

    fn py_type(&self, _: &VM<'h>) -> Type {
        Type::SetIterator
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
        // The cursor lives in this heap entry and the table in another, so a
        // copy is stepped under the storage borrow and stored back after. A
        // frozen set cannot change size, so its length check is a no-op
        // rather than a special case.
        let (cursor, value) = {
            let storage = match vm.heap.get(self.get(vm.heap).source_id()) {
                HeapData::Set(set) => set.storage(),
                HeapData::FrozenSet(set) => set.storage(),
                _ => unreachable!("set iterator must retain set-like storage"),
            };
            let mut cursor = self.get(vm.heap).cursor.clone();
            let entry = storage.table.step(&mut cursor);
            (
                cursor,
                entry.map(|entry| entry.map(|entry| entry.value.clone_with_heap(vm.heap))),
            )
        };
        // Stored back on an error too: the error is sticky, as in CPython.
        self.get_mut(vm.heap).cursor = cursor;
        value
    }
}

/// Hashes a value about to become a set element, raising CPython's
/// `cannot use 'T' as a set element (unhashable type: 'U')` when it cannot be.
pub(crate) fn set_element_hash(value: &Value, vm: &mut VM<'_>) -> RunResult<u64> {
    if let Some(hash) = value.py_hash(vm)? {
        Ok(hash.raw())
    } else {
        let element_type = value.py_type_name(vm).into_owned();
        let unhashable_type = unhashable_type_name(value, vm)?;
        Err(ExcType::type_error_unhashable_set_element(
            &element_type,
            &unhashable_type,
        ))
    }
}

/// The hash a set looks `value` up by for `in`, `remove` and `discard`:
/// chainbox patch: a `set`, unhashable, is looked up as the frozenset of its
/// members, as CPython's `set_contains`, `set_discard` and `set_remove` do
/// (`{1, 2} in {frozenset({1, 2})}` is True, `s.remove({1})` a KeyError).
fn set_lookup_hash(value: &Value, vm: &mut VM<'_>) -> RunResult<u64> {
    if let Value::Ref(id) = value
        && let HeapData::Set(set) = vm.heap.get(*id)
    {
        return Ok(hash_frozenset_of(set.storage().live().map(|entry| entry.hash)).raw());
    }
    set_element_hash(value, vm)
}

/// Finds the nested value responsible for a tuple-like element being unhashable.
fn unhashable_type_name(value: &Value, vm: &mut VM<'_>) -> RunResult<String> {
    let Value::Ref(id) = value else {
        return Ok(value.py_type_name(vm).into_owned());
    };
    let len = match vm.heap.get(*id) {
        HeapData::Tuple(tuple) => tuple.as_slice().len(),
        HeapData::NamedTuple(namedtuple) => namedtuple.as_vec().len(),
        _ => return Ok(value.py_type_name(vm).into_owned()),
    };

    for index in 0..len {
        let item = match vm.heap.get(*id) {
            HeapData::Tuple(tuple) => tuple.as_slice()[index].clone_with_heap(vm.heap),
            HeapData::NamedTuple(namedtuple) => namedtuple.as_vec()[index].clone_with_heap(vm.heap),
            _ => unreachable!("tuple-like heap value changed type"),
        };
        defer_drop!(item, vm);
        if item.py_hash(vm)?.is_none() {
            return unhashable_type_name(item, vm);
        }
    }

    Ok(value.py_type_name(vm).into_owned())
}

impl<'h> PyDeepCopy<'h> for HeapRead<'h, Set> {
    /// Copies a set, re-inserting each copied item so it hashes into its own slot.
    #[inline(never)]
    fn py_deep_copy(&self, source: &Value, memo: &mut Memo, vm: &mut VM<'h>) -> RunResult<Value> {
        let copy_id = vm.heap.allocate(HeapData::Set(Set::new()));
        let mut guard = DropGuard::new(Value::Ref(copy_id), vm);
        let (copy, vm) = guard.as_parts_mut();
        memo.insert(source, copy, vm)?;
        // CPython reduces a set through `list(x)`, snapshotting its members before
        // any of them is copied, so a hook that mutates the source mid-walk cannot
        // disturb the copy. Taking the same snapshot keeps that behaviour — and
        // keeps the walk off an index into a container Python can resize.
        let len = self.get(vm.heap).len();
        // `clone_items` preflights the snapshot; the destination set holds the
        // same number of slots again, and the walk works off the snapshot so
        // that width is fixed here. Checked at 2× for the pair, as `py_iadd`
        // checks a clone plus the growth it feeds.
        vm.heap.tracker.check_allocation(len.saturating_mul(VALUE_SIZE))?;
        let mut members = DropGuard::new(Vec::with_capacity(len), vm);
        let (snapshot, vm) = members.as_parts_mut();
        self.get(vm.heap).storage().clone_members_into(snapshot, vm.heap)?;
        for index in 0..len {
            let (members, vm) = members.as_parts_mut();
            vm.heap.tracker.check_time_every(index)?;
            let copied = deep_copy(&members[index], memo, vm)?;
            let HeapReadOutput::Set(dest) = vm.heap.read(copy_id) else {
                unreachable!("copy was allocated as a set")
            };
            dest.add(copied, vm)?;
        }
        let (members, vm) = members.into_parts();
        members.drop_with(vm);
        let (copy, _) = guard.into_parts();
        Ok(copy)
    }
}

impl<'h> PyDeepCopy<'h> for HeapRead<'h, FrozenSet> {
    /// Copies a frozenset, building its members before the copy exists.
    ///
    /// A hashable member can point back at the frozenset, so a cycle is
    /// possible, but CPython reduces one through `_reconstruct`, which copies
    /// the members before it memoises and so rebuilds a second frozenset for
    /// the back-reference. Memoising an empty shell here would diverge.
    #[inline(never)]
    fn py_deep_copy(&self, _source: &Value, memo: &mut Memo, vm: &mut VM<'h>) -> RunResult<Value> {
        let len = self.get(vm.heap).len();
        vm.heap.tracker.check_allocation(len.saturating_mul(VALUE_SIZE))?;
        let members = Vec::with_capacity(len);
        defer_drop_mut!(members, vm);
        self.get(vm.heap).storage().clone_members_into(members, vm.heap)?;
        let mut guard = DropGuard::new(Set::new(), vm);
        for (index, member) in members.iter().enumerate() {
            let (built, vm) = guard.as_parts_mut();
            vm.heap.tracker.check_time_every(index)?;
            let copied = deep_copy(member, memo, vm)?;
            built.add(copied, vm)?;
        }
        let (built, vm) = guard.into_parts();
        Ok(Value::Ref(
            vm.heap.allocate(HeapData::FrozenSet(FrozenSet::from_set(built))),
        ))
    }
}

/// The `minused` CPython's `set_add_entry` resizes to once the table is 3/5 full.
fn grown_size(used: usize) -> usize {
    if used > 50_000 { used * 2 } else { used * 4 }
}

/// `set.union(*others)` and its siblings (frozenset's too), as CPython runs
/// them: `union` copies and updates by each operand (skipping the set
/// itself), `intersection` chains, `difference` takes the first and then
/// discards the rest, `symmetric_difference` takes exactly one; with no
/// operand, a copy.
fn algebra_call<'h>(
    this: &HeapRead<'h, SetStorage>,
    args: ArgValues,
    op: SetAlgebra,
    type_name: &str,
    vm: &mut VM<'h>,
) -> RunResult<SetStorage> {
    let values: Vec<Value> = if matches!(op, SetAlgebra::SymmetricDifference) {
        vec![args.get_one_arg(&format!("{type_name}.symmetric_difference"), vm.heap)?]
    } else {
        args.into_pos_only(&format!("{type_name}.{}", op.method_name()), vm.heap)?
            .collect()
    };
    let same: Vec<bool> = values
        .iter()
        .map(|value| is_same_set(value, this.get(vm.heap), vm.heap))
        .collect();
    let values = values.into_iter();
    defer_drop_mut!(values, vm);
    let mut operands = Vec::with_capacity(same.len());
    loop {
        let Some(value) = values.next() else { break };
        match Operand::from_value(value, vm) {
            Ok(operand) => operands.push(operand),
            Err(err) => {
                operands.drop_with(vm);
                return Err(err);
            }
        }
    }
    defer_drop!(operands, vm);
    let Some((first, rest)) = operands.split_first() else {
        return Ok(this.get(vm.heap).clone_with_heap(vm.heap));
    };
    match op {
        SetAlgebra::Union => {
            let mut result = DropGuard::new(this.get(vm.heap).clone_with_heap(vm.heap), vm);
            let (storage, vm) = result.as_parts_mut();
            for (operand, same) in operands.iter().zip(same) {
                if !same {
                    storage.update(operand, vm)?;
                }
            }
            Ok(result.into_inner())
        }
        SetAlgebra::Intersection => {
            let mut result = this.intersection(first, same[0], vm)?;
            for operand in rest {
                let next = vm.heap.protect(&result).intersection(operand, false, vm);
                mem::replace(&mut result, SetStorage::new()).drop_with(vm);
                result = next?;
            }
            Ok(result)
        }
        SetAlgebra::Difference => {
            let mut result = DropGuard::new(this.difference(first, vm)?, vm);
            let (storage, vm) = result.as_parts_mut();
            for operand in rest {
                storage.difference_update(operand, vm)?;
            }
            Ok(result.into_inner())
        }
        SetAlgebra::SymmetricDifference => this.symmetric_difference(first, vm),
    }
}

impl SetAlgebra {
    /// The method's name, for its argument errors.
    fn method_name(self) -> &'static str {
        match self {
            Self::Union => "union",
            Self::Intersection => "intersection",
            Self::Difference => "difference",
            Self::SymmetricDifference => "symmetric_difference",
        }
    }
}

/// A dict-view set operator (chainbox patch).
#[derive(Debug, Clone, Copy)]
pub(crate) enum ViewOp {
    Sub,
    And,
    Or,
    Xor,
}

/// A dict view's members in its dict's order: keys, or `(key, value)` tuples.
#[derive(Debug)]
pub(crate) struct ViewMembers {
    pub(crate) members: Vec<Value>,
    /// A keys view (`dictviews_to_set` makes its set from the dict, presized).
    pub(crate) keys: bool,
}

impl<C: ContainsHeap> DropWithContext<C> for ViewMembers {
    fn drop_with(self, heap: &mut C) {
        self.members.drop_with(heap);
    }
}

impl ViewMembers {
    fn cloned(&self, heap: &impl ContainsHeap) -> Vec<Value> {
        self.members.iter().map(|m| m.clone_with_heap(heap)).collect()
    }
}

/// `left OP right` with a dict view on one side at least (`view` is that
/// side's members, `view_on_left` which side it is; `other_view` the other
/// side's, when it is a view too), as CPython's dictobject.c computes it, so
/// the result set is laid out, and iterates, as CPython's:
/// `dictviews_sub`/`_or`/`_xor` make a set of the left side
/// (`dictviews_to_set`) and update it by the right; `dictitems_xor` walks the
/// right items then the left's unmatched ones; `_PyDictView_Intersect` asks
/// a bigger exact set for its `intersection`, else walks the smaller side
/// testing the view.
pub(crate) fn dict_view_op(
    view: ViewMembers,
    view_on_left: bool,
    other: &Value,
    other_view: Option<ViewMembers>,
    op: ViewOp,
    vm: &mut VM<'_>,
) -> RunResult<Value> {
    defer_drop!(view, vm);
    defer_drop!(other_view, vm);
    let result = match op {
        ViewOp::And => view_intersect(view, other, other_view.as_ref(), vm)?,
        ViewOp::Xor if other_view.as_ref().is_some_and(|o| !o.keys) && !view.keys => {
            let (left, right) = if view_on_left {
                (view, other_view.as_ref().expect("checked"))
            } else {
                (other_view.as_ref().expect("checked"), view)
            };
            items_xor(left, right, vm)?
        }
        _ => {
            let (left, right) = if view_on_left {
                (Some(view), other_view.as_ref())
            } else {
                (other_view.as_ref(), Some(view))
            };
            // `dictviews_to_set(left)`.
            let left_operand = match left {
                Some(v) if v.keys => Operand::Dict(v.cloned(vm.heap)),
                Some(v) => Operand::Items(v.cloned(vm.heap)),
                None => Operand::from_value(other.clone_with_heap(vm.heap), vm)?,
            };
            defer_drop!(left_operand, vm);
            let mut result_guard = DropGuard::new(SetStorage::from_operand(left_operand, vm)?, vm);
            {
                let (result, vm) = result_guard.as_parts_mut();
                let right_operand = match right {
                    Some(v) => Operand::Items(v.cloned(vm.heap)),
                    None => Operand::from_value(other.clone_with_heap(vm.heap), vm)?,
                };
                defer_drop!(right_operand, vm);
                match op {
                    ViewOp::Sub => result.difference_update(right_operand, vm)?,
                    ViewOp::Or => result.update(right_operand, vm)?,
                    _ => result.symmetric_difference_update(right_operand, vm)?,
                }
            }
            result_guard.into_inner()
        }
    };
    Ok(Value::Ref(vm.heap.allocate(HeapData::Set(Set(result)))))
}

/// `_PyDictView_Intersect`.
fn view_intersect(
    view: &ViewMembers,
    other: &Value,
    other_view: Option<&ViewMembers>,
    vm: &mut VM<'_>,
) -> RunResult<SetStorage> {
    let len_self = view.members.len();
    // A bigger exact set: its own `intersection` with the view's members.
    if let Value::Ref(id) = other
        && let HeapData::Set(set) = vm.heap.get(*id)
        && len_self <= set.len()
    {
        let lookup = set.0.clone_exact(vm.heap);
        defer_drop!(lookup, vm);
        let lookup = vm.heap.protect(lookup);
        let mut result_guard = DropGuard::new(SetStorage::new(), vm);
        {
            let (result, vm) = result_guard.as_parts_mut();
            let limit = lookup.get(vm.heap).len();
            for member in &view.members {
                let hash = set_element_hash(member, vm)?;
                if lookup.contains_with_hash(member, hash, vm)? {
                    result.add_with_hash(member.clone_with_heap(vm.heap), hash, vm)?;
                    if result.len() >= limit {
                        break;
                    }
                }
            }
        }
        return Ok(result_guard.into_inner());
    }
    // Walk the smaller side (the other view if it is not bigger), testing the bigger.
    let (tested, walked): (&ViewMembers, Vec<Value>) = match other_view {
        Some(o) if o.members.len() > len_self => (o, view.cloned(vm.heap)),
        Some(o) => (view, o.cloned(vm.heap)),
        None => (view, collect_owned_iterable(other.clone_with_heap(vm.heap), vm)?),
    };
    defer_drop!(walked, vm);
    // Pairs with an unhashable value (`{'a': [1]}.items()`) cannot go in a
    // set; CPython tests them by key and value, so they are compared one by one.
    let lookup = match SetStorage::from_operand(&Operand::Items(tested.cloned(vm.heap)), vm) {
        Ok(lookup) => Some(lookup),
        Err(_) if !tested.keys => None,
        Err(err) => return Err(err),
    };
    defer_drop!(lookup, vm);
    let mut result_guard = DropGuard::new(SetStorage::new(), vm);
    {
        let (result, vm) = result_guard.as_parts_mut();
        for item in walked.iter() {
            let found = match lookup.as_ref() {
                Some(lookup) => match set_element_hash(item, vm) {
                    Ok(hash) => vm.heap.protect(lookup).contains_with_hash(item, hash, vm)?,
                    Err(_) if !tested.keys => false,
                    Err(err) => return Err(err),
                },
                None => {
                    let mut found = false;
                    for member in &tested.members {
                        if member.py_eq(item, vm)? {
                            found = true;
                            break;
                        }
                    }
                    found
                }
            };
            if found {
                result.add(item.clone_with_heap(vm.heap), vm)?;
            }
        }
    }
    Ok(result_guard.into_inner())
}

/// `dictitems_xor`: the right side's pairs the left lacks, in the right's
/// order, then the left's pairs the right did not match, in the left's.
fn items_xor(left: &ViewMembers, right: &ViewMembers, vm: &mut VM<'_>) -> RunResult<SetStorage> {
    let left_pairs = SetStorage::from_operand(&Operand::Items(left.cloned(vm.heap)), vm)?;
    defer_drop!(left_pairs, vm);
    let left_pairs = vm.heap.protect(left_pairs);
    let mut guards = DropGuard::new((SetStorage::new(), SetStorage::new()), vm);
    {
        let ((result, matched), vm) = guards.as_parts_mut();
        for pair in &right.members {
            let hash = set_element_hash(pair, vm)?;
            if left_pairs.contains_with_hash(pair, hash, vm)? {
                matched.add_with_hash(pair.clone_with_heap(vm.heap), hash, vm)?;
            } else {
                result.add_with_hash(pair.clone_with_heap(vm.heap), hash, vm)?;
            }
        }
        let matched = vm.heap.protect(&*matched);
        for pair in &left.members {
            let hash = set_element_hash(pair, vm)?;
            if !matched.contains_with_hash(pair, hash, vm)? {
                result.add_with_hash(pair.clone_with_heap(vm.heap), hash, vm)?;
            }
        }
    }
    let (result, matched) = guards.into_inner();
    matched.drop_with(vm);
    Ok(result)
}
