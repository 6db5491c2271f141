use std::{
    borrow::Cow,
    collections::hash_map::DefaultHasher,
    fmt::Write,
    hash::{Hash, Hasher},
    mem,
    ops::Deref,
};

use monty_types::ExcType;

use crate::{
    args::ArgValues,
    asyncio::{Awaiter, Coroutine, ExternalFuture, ExternalFutureState, GatherFuture, GatherState},
    bytecode::{CallResult, VM},
    defer_drop,
    exception_private::{ExcTypeExt, RunResult, SimpleException},
    expressions::CmpOperator,
    hash::{HashValue, identity_hash},
    heap::{DropWithContext, HeapId, HeapItem, HeapObjectRead, HeapReadOutput},
    intern::FunctionId,
    types::{LazyHeapSet, LongInt, PyTrait, Type},
    value::{EitherStr, Value},
};

macro_rules! heap_storage_type {
    (inline $payload:ty) => {
        $payload
    };
    (boxed $payload:ty) => {
        Box<$payload>
    };
}

/// Invokes a consumer macro with every concrete payload stored by the heap.
///
/// This is the single payload registry. Dumps tag each variant by its serde name, so
/// renaming a variant needs an alias; hot variants take one letter to keep dumps small.
macro_rules! heap_payloads {
    ($consumer:ident) => {
        $consumer! {
            #[serde(rename = "S")]
            Str(inline $crate::types::Str),
            #[serde(rename = "B")]
            Bytes(inline $crate::types::Bytes),
            #[serde(rename = "L")]
            List(inline $crate::types::List),
            /// `collections.deque` — a double-ended queue with an optional `maxlen`.
            #[serde(rename = "Q")]
            Deque(inline $crate::types::Deque),
            #[serde(rename = "T")]
            Tuple(inline $crate::types::Tuple),
            #[serde(rename = "N")]
            NamedTuple(boxed $crate::types::NamedTuple),
            /// A `collections.namedtuple` class object (the callable that builds instances).
            NamedTupleClass(boxed $crate::types::NamedTupleClass),
            #[serde(rename = "D")]
            Dict(inline $crate::types::Dict),
            DictKeysView(inline $crate::types::DictKeysView),
            DictItemsView(inline $crate::types::DictItemsView),
            DictValuesView(inline $crate::types::DictValuesView),
            #[serde(rename = "E")]
            Set(inline $crate::types::Set),
            #[serde(rename = "F")]
            FrozenSet(inline $crate::types::FrozenSet),
            #[serde(rename = "C")]
            Closure(inline $crate::heap_data::Closure),
            #[serde(rename = "U")]
            FunctionDefaults(inline $crate::heap_data::FunctionDefaults),
            /// A cell wrapping a single mutable value for closure support.
            #[serde(rename = "K")]
            Cell(inline $crate::heap_data::CellValue),
            /// A range object such as `range(1, 10, 2)`.
            Range(inline $crate::types::Range),
            /// A slice object such as `slice(1, 10, 2)`.
            Slice(inline $crate::types::Slice),
            /// An exception instance such as `ValueError('message')`.
            #[serde(rename = "X")]
            Exception(inline $crate::exception_private::SimpleException),
            /// A host-backed class instance (the heap form of the wire `ClassInstance`).
            HostClass(boxed $crate::types::HostClass),
            /// The lightweight type object `type(x)` materializes for a `HostClass`
            /// instance — the real class lives on the host, so this is a named
            /// stand-in (see `HostClassType`).
            HostClassType(boxed $crate::types::HostClassType),
            /// A user-defined class object created by a `class` statement.
            #[serde(rename = "A")]
            Class(boxed $crate::types::Class),
            /// An instance of a user-defined class.
            #[serde(rename = "I")]
            Instance(boxed $crate::types::Instance),
            /// A method bound to an instance.
            #[serde(rename = "M")]
            BoundMethod(inline $crate::types::BoundMethod),
            /// One `dataclasses.Field` held by a class's `__dataclass_fields__` dictionary.
            /// Boxed: a name, an annotation and a default or factory are already
            /// wider than the 32-bit ceiling, and `Field` has attributes left to gain.
            DataclassField(boxed $crate::modules::dataclasses::DataclassField),
            /// A method `@dataclass` generated into a class namespace.
            /// Boxed: its `__init__` form carries every field's captured default.
            DataclassMethod(boxed $crate::modules::dataclasses::DataclassMethod),
            /// A `list_iterator` object.
            ListIterator(inline $crate::types::list::ListIterator),
            /// A `_collections._deque_iterator` object.
            DequeIterator(inline $crate::types::deque::DequeIterator),
            /// A `tuple_iterator` object.
            TupleIterator(inline $crate::types::TupleIterator),
            /// A `str_ascii_iterator` or `str_iterator` object.
            StringIterator(inline $crate::types::StringIterator),
            /// A `bytes_iterator` object.
            BytesIterator(inline $crate::types::BytesIterator),
            /// A `range_iterator` object.
            RangeIterator(inline $crate::types::RangeIterator),
            /// A `dict_keyiterator` object.
            DictKeyIterator(inline $crate::types::DictKeyIterator),
            /// A `dict_itemiterator` object.
            DictItemIterator(inline $crate::types::DictItemIterator),
            /// A `dict_valueiterator` object.
            DictValueIterator(inline $crate::types::DictValueIterator),
            /// A `set_iterator` object.
            SetIterator(inline $crate::types::SetIterator),
            /// A `callable_iterator` object from `iter(callable, sentinel)`.
            CallableIterator(inline $crate::types::callable_iterator::CallableIterator),
            /// An arbitrary-precision integer used when a Python `int` does not fit in `i64`.
            #[serde(rename = "G")]
            LongInt(inline $crate::types::LongInt),
            /// A `complex` number: two doubles, too wide for an immediate `Value`.
            #[serde(rename = "J")]
            Complex(inline $crate::types::Complex),
            /// A Python module and its attributes.
            Module(boxed $crate::types::Module),
            /// A coroutine object from an async function call.
            #[serde(rename = "O")]
            Coroutine(inline $crate::asyncio::Coroutine),
            /// An `asyncio.gather()` result tracking multiple coroutines or tasks.
            GatherFuture(boxed $crate::asyncio::GatherFuture),
            /// An external future driven by the host.
            ExternalFuture(boxed $crate::asyncio::ExternalFuture),
            /// A filesystem path from `pathlib.Path`.
            Path(inline $crate::types::Path),
            /// A path-backed file object returned by `open()`.
            OpenFile(boxed $crate::types::OpenFile),
            /// A compiled regular-expression pattern.
            RePattern(boxed $crate::types::RePattern),
            /// A regular-expression match result.
            ReMatch(boxed $crate::types::ReMatch),
            /// A reference to an external function supplied by the host.
            ExtFunction(inline $crate::types::ExtFunction),
            /// A `datetime.date` value.
            Date(inline $crate::types::date::Date),
            /// A `datetime.datetime` value.
            DateTime(inline $crate::types::datetime::DateTime),
            /// A `datetime.timedelta` value.
            TimeDelta(inline $crate::types::timedelta::TimeDelta),
            /// A fixed-offset `datetime.timezone` value.
            TimeZone(inline $crate::types::timezone::TimeZone),
            /// Any `itertools` iterator (`count`, `repeat`, and others).
            Itertools(inline $crate::types::ItertoolsIter),
            /// The options of a `@dataclass`, held in `__dataclass_params__`.
            DataclassParams(inline $crate::modules::dataclasses::DataclassParams),
            /// A `datetime.time` value stored with narrow integer fields.
            Time(inline $crate::types::time::Time),
            /// A `functools.partial` object.
            Partial(boxed $crate::types::Partial),
            /// A `types.GenericAlias` such as `list[int]`.
            GenericAlias(inline $crate::types::GenericAlias),
            /// A `typing.Union` such as `int | None`.
            Union(inline $crate::types::Union),
            /// A `random.Random` generator instance.
            Random(boxed $crate::types::Random),
            /// A `functools.lru_cache` / `functools.cache` wrapper.
            LruCache(boxed $crate::types::LruCache),
            /// A `hashlib` hash object mid-stream.
            HashObject(boxed $crate::types::HashObject),
            /// An `os.DirEntry`, `os.scandir()` iterator or `os.walk()` iterator.
            DirScan(boxed $crate::types::DirScan),
            /// Any `csv` object: a reader, writer, `DictReader`, `DictWriter` or dialect.
            Csv(boxed $crate::types::CsvObject),
            /// A `decimal.Decimal` value.
            Decimal(inline $crate::types::decimal::Decimal),
            /// A mutable `decimal.Context`.
            DecimalContext(inline $crate::types::decimal::DecContext),
            /// A context's `flags` or `traps` mapping.
            DecimalSignalDict(inline $crate::types::decimal::py_context::SignalDict),
            /// The manager `decimal.localcontext()` returns.
            DecimalContextManager(inline $crate::types::decimal::py_context::ContextManager),
            /// An `object()` instance (chainbox patch).
            PlainObject(inline $crate::types::PlainObject),
        }
    };
}

pub(crate) use heap_payloads;

macro_rules! define_heap_data {
    ($(
        $(#[$meta:meta])*
        $variant:ident($storage:ident $payload:ty)
    ),* $(,)?) => {
        /// Every runtime value that can be stored in the heap arena.
        #[derive(Debug, serde::Serialize, serde::Deserialize)]
        pub(crate) enum HeapData {
            $(
                $(#[$meta])*
                $variant(heap_storage_type!($storage $payload)),
            )*
        }
    };
}

heap_payloads!(define_heap_data);

/// The widest `HeapData` may be, per target.
///
/// `Dict` sets it on 64-bit hosts. On 32-bit (the wasm worker) `Dict` halves
/// while `Value`-built payloads do not, so the itertools family sets it instead
/// — see the budget those adaptors are held to in `types::itertools`.
const MAX_HEAP_DATA_SIZE: usize = if cfg!(target_pointer_width = "64") { 80 } else { 56 };

// `HeapData` is copied on every allocate and free, and every byte past the
// ceiling widens every slot of every heap page. Box the variant that trips
// this, not the enum: growing the budget here charges the hot variants too.
const _: () = assert!(mem::size_of::<HeapData>() <= MAX_HEAP_DATA_SIZE);

impl HeapData {
    /// Returns whether this heap data type can participate in reference cycles.
    ///
    /// Only container types that can hold references to other heap objects need to be
    /// tracked for GC purposes. Leaf types like Str, Bytes, Range, and Exception cannot
    /// form cycles and should not count toward the GC allocation threshold.
    ///
    /// This optimization allows programs that allocate many leaf objects (like strings)
    /// to avoid triggering unnecessary GC cycles.
    ///
    /// Matched exhaustively so new variants must choose.
    #[inline]
    pub(crate) fn is_gc_tracked(&self) -> bool {
        match self {
            Self::Itertools(iter) => iter.is_gc_tracked(),
            Self::DirScan(scan) => scan.is_gc_tracked(),
            Self::List(_)
            | Self::Deque(_)
            | Self::Tuple(_)
            | Self::NamedTuple(_)
            | Self::NamedTupleClass(_)
            | Self::Dict(_)
            | Self::DictKeysView(_)
            | Self::DictItemsView(_)
            | Self::DictValuesView(_)
            | Self::Set(_)
            | Self::FrozenSet(_)
            | Self::Closure(_)
            | Self::FunctionDefaults(_)
            | Self::Cell(_)
            | Self::HostClass(_)
            | Self::HostClassType(_)
            | Self::Class(_)
            | Self::Instance(_)
            | Self::BoundMethod(_)
            | Self::DataclassField(_)
            | Self::DataclassMethod(_)
            | Self::ListIterator(_)
            | Self::DequeIterator(_)
            | Self::TupleIterator(_)
            | Self::DictKeyIterator(_)
            | Self::DictItemIterator(_)
            | Self::DictValueIterator(_)
            | Self::SetIterator(_)
            | Self::CallableIterator(_)
            | Self::Module(_)
            | Self::Coroutine(_)
            | Self::GatherFuture(_)
            | Self::ExternalFuture(_)
            | Self::Partial(_)
            | Self::GenericAlias(_)
            | Self::Union(_)
            | Self::LruCache(_)
            | Self::Csv(_) => true,
            // chainbox patch: an exception with an args tuple can be part of a
            // cycle (`e = ValueError(items); items.append(e)`).
            Self::Exception(exc) => exc.heap_args().is_some(),
            // Leaf types, plus iterators whose heap refs only point at leaves and so
            // cannot close a cycle. Move one up if it gains a container-valued field.
            Self::Str(_)
            | Self::Bytes(_)
            | Self::Range(_)
            | Self::Slice(_)
            | Self::DataclassParams(_)
            | Self::StringIterator(_)
            | Self::BytesIterator(_)
            | Self::RangeIterator(_)
            | Self::LongInt(_)
            | Self::Complex(_)
            | Self::Path(_)
            | Self::OpenFile(_)
            | Self::RePattern(_)
            | Self::ReMatch(_)
            | Self::ExtFunction(_)
            | Self::Date(_)
            | Self::DateTime(_)
            | Self::Time(_)
            | Self::TimeDelta(_)
            | Self::TimeZone(_)
            | Self::Random(_)
            | Self::HashObject(_)
            // A signal dict and a `localcontext()` manager only hold contexts, which are leaves.
            | Self::Decimal(_)
            | Self::DecimalContext(_)
            | Self::DecimalSignalDict(_)
            // chainbox patch (CHAINBOX.md)
            | Self::DecimalContextManager(_)
            | Self::PlainObject(_) => false,
        }
    }

    /// Whether calling a `Ref` to this heap data would succeed at dispatch.
    ///
    /// A conservative subset of the types overriding [`PyTrait::py_call`]: it
    /// is what `partial()` and friends screen a callable argument with, and it
    /// has never admitted `HostClassType` or `NamedTupleClass`, both of which
    /// dispatch perfectly well. Widening it changes what those builtins accept,
    /// so it is not simply the list of `py_call` overrides.
    #[must_use]
    pub(crate) fn is_callable(&self) -> bool {
        matches!(
            self,
            Self::Class(_)
                | Self::BoundMethod(_)
                | Self::DataclassMethod(_)
                | Self::Closure(_)
                | Self::FunctionDefaults(_)
                | Self::ExtFunction(_)
                | Self::Partial(_)
                | Self::GenericAlias(_)
                | Self::LruCache(_)
        )
    }

    /// Returns the Python `Type` for this heap data without requiring VM access.
    ///
    /// This is a lightweight alternative to the `PyTrait::py_type` dispatch on
    /// `HeapReadOutput`, useful in error messages and diagnostics where only a
    /// `&Heap` is available (not a full `&VM`).
    #[must_use]
    pub(crate) fn py_type(&self) -> Type {
        match self {
            Self::Str(_) => Type::Str,
            Self::Bytes(_) => Type::Bytes,
            Self::List(_) => Type::List,
            Self::Deque(_) => Type::Deque,
            Self::Tuple(_) | Self::NamedTuple(_) => Type::Tuple,
            Self::NamedTupleClass(_) => Type::Type,
            Self::Dict(_) => Type::Dict,
            Self::Partial(_) => Type::Partial,
            Self::Random(_) => Type::Random,
            Self::HashObject(hash) => hash.algorithm().py_type(),
            Self::GenericAlias(_) => Type::GenericAlias,
            Self::Union(_) => Type::Union,
            Self::LruCache(_) => Type::LruCacheWrapper,
            Self::DictKeysView(_) => Type::DictKeys,
            Self::DictItemsView(_) => Type::DictItems,
            Self::DictValuesView(_) => Type::DictValues,
            Self::Set(_) => Type::Set,
            Self::FrozenSet(_) => Type::FrozenSet,
            Self::Closure(_) | Self::FunctionDefaults(_) | Self::ExtFunction(_) => Type::Function,
            Self::Cell(_) => Type::Cell,
            Self::Range(_) => Type::Range,
            Self::Slice(_) => Type::Slice,
            Self::Exception(e) => Type::Exception(e.exc_type()),
            Self::HostClass(_) => Type::HostClass,
            Self::HostClassType(_) => Type::Type,
            // A class object's type is `type`; an instance's carries its class id.
            Self::Class(_) => Type::Type,
            Self::Instance(instance) => Type::Instance(instance.class()),
            Self::BoundMethod(_) => Type::Function,
            Self::DataclassField(_) => Type::DataclassField,
            Self::DataclassMethod(_) => Type::Function,
            Self::DataclassParams(_) => Type::DataclassParams,
            Self::LongInt(_) => Type::Int,
            Self::Complex(_) => Type::Complex,
            Self::Module(_) => Type::Module,
            Self::Coroutine(_) | Self::GatherFuture(_) | Self::ExternalFuture(_) => Type::Coroutine,
            Self::Path(_) => Type::Path,
            Self::OpenFile(file) => file.file_type(),
            Self::RePattern(_) => Type::RePattern,
            Self::ReMatch(_) => Type::ReMatch,
            Self::Date(_) => Type::Date,
            Self::DateTime(_) => Type::DateTime,
            Self::Time(_) => Type::Time,
            Self::TimeDelta(_) => Type::TimeDelta,
            Self::TimeZone(_) => Type::TimeZone,
            Self::ListIterator(_) => Type::ListIterator,
            Self::DequeIterator(_) => Type::DequeIterator,
            Self::TupleIterator(_) => Type::TupleIterator,
            Self::StringIterator(iter) => iter.py_type(),
            Self::BytesIterator(_) => Type::BytesIterator,
            Self::RangeIterator(_) => Type::RangeIterator,
            Self::DictKeyIterator(_) => Type::DictKeyIterator,
            Self::DictItemIterator(_) => Type::DictItemIterator,
            Self::DictValueIterator(_) => Type::DictValueIterator,
            Self::SetIterator(_) => Type::SetIterator,
            Self::CallableIterator(_) => Type::CallableIterator,
            Self::Itertools(i) => i.py_type(),
            Self::DirScan(scan) => scan.py_type(),
            Self::Csv(csv) => csv.py_type(),
            Self::Decimal(_) => Type::Decimal,
            Self::DecimalContext(_) => Type::DecimalContext,
            Self::DecimalSignalDict(_) => Type::DecimalSignalDict,
            Self::DecimalContextManager(_) => Type::DecimalContextManager,
            // chainbox patch (CHAINBOX.md)
            Self::PlainObject(_) => Type::Object,
        }
    }
}

/// Thin wrapper around `Value` which is used in the `Cell` variant above.
///
/// The inner value is the cell's mutable payload.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
#[repr(transparent)]
pub(crate) struct CellValue(pub(crate) Value);

impl Deref for CellValue {
    type Target = Value;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// A closure: a function that captures variables from enclosing scopes.
///
/// Contains a reference to the function definition, a vector of captured cell HeapIds,
/// evaluated default values (if any) and the globals dict it was defined under
/// (if any). When the closure is called, the cells are passed to the frame for
/// variable access. When the closure is dropped, we must decrement the ref
/// count on each captured cell, each default value and the globals dict.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Closure {
    /// The function definition being captured.
    #[serde(rename = "F")]
    pub func_id: FunctionId,
    /// Captured cells from enclosing scopes. Boxed slices rather than `Vec`s
    /// (never grown after construction) keep this the size of the largest
    /// `HeapData` variant, not larger.
    #[serde(rename = "C")]
    pub cells: Box<[HeapId]>,
    /// Evaluated default parameter values (if any).
    #[serde(rename = "D")]
    pub defaults: Box<[Value]>,
    /// Owned reference to the `exec()` / `eval()` globals dict the closure was
    /// defined under; `None` when its globals are module slots.
    #[serde(rename = "G")]
    pub globals: Option<HeapId>,
}

/// A `def` that needs a heap object but captures nothing: it has evaluated
/// default values, an explicit globals dict, or both.
///
/// When the function is called, defaults are cloned for missing optional
/// parameters and the frame resolves globals through the dict. When dropped,
/// we must decrement the ref count on each default value and the dict.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct FunctionDefaults {
    /// The function definition being captured.
    #[serde(rename = "F")]
    pub func_id: FunctionId,
    /// Evaluated default parameter values (if any).
    #[serde(rename = "D")]
    pub defaults: Vec<Value>,
    /// Owned reference to the `exec()` / `eval()` globals dict the function
    /// was defined under; `None` when its globals are module slots.
    #[serde(rename = "G")]
    pub globals: Option<HeapId>,
}

impl HeapItem for CellValue {
    fn py_dec_ref_ids(&mut self, stack: &mut Vec<HeapId>) {
        self.0.py_dec_ref_ids(stack);
    }
}

impl HeapItem for Closure {
    fn py_dec_ref_ids(&mut self, stack: &mut Vec<HeapId>) {
        // Decrement ref count for captured cells
        stack.extend(self.cells.iter().copied());
        // Decrement ref count for default values that are heap references
        for default in &mut self.defaults {
            default.py_dec_ref_ids(stack);
        }
        stack.extend(self.globals);
    }
}

impl HeapItem for FunctionDefaults {
    fn py_dec_ref_ids(&mut self, stack: &mut Vec<HeapId>) {
        // Decrement ref count for default values that are heap references
        for default in &mut self.defaults {
            default.py_dec_ref_ids(stack);
        }
        stack.extend(self.globals);
    }
}

/// The shared tail of calling a `def`: both function representations differ only
/// in whether they carry captured cells.
///
/// The cells and defaults are copied out before dispatching, so no borrow on the
/// callable is live while its body runs and the body may reach it again.
fn call_def(
    func_id: FunctionId,
    cells: &[HeapId],
    defaults: Vec<Value>,
    globals: Option<HeapId>,
    args: ArgValues,
    vm: &mut VM<'_>,
) -> RunResult<CallResult> {
    defer_drop!(defaults, vm);
    vm.call_def_function(func_id, cells, defaults, globals, args)
}

impl<'h> PyTrait<'h> for HeapObjectRead<'h, Closure> {
    fn py_type(&self, _: &VM<'h>) -> Type {
        Type::Function
    }

    fn py_len(&self, _: &VM<'h>) -> Option<usize> {
        None
    }

    /// Two closures over the same `def` are equal only if they captured the
    /// same cells; the defaults play no part, as in CPython.
    fn py_eq_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        Ok(match other.read_heap(vm) {
            Some(HeapReadOutput::Closure(other)) => {
                let this = self.get(vm.heap);
                let other = other.get(vm.heap);
                Some(this.func_id == other.func_id && this.cells == other.cells)
            }
            _ => None,
        })
    }

    /// Hashes by `def`, so a closure and its equal share a bucket.
    fn py_hash(&self, vm: &mut VM<'h>) -> RunResult<Option<HashValue>> {
        Ok(Some(hash_func_id(self.get(vm.heap).func_id)))
    }

    fn py_bool(&self, _: &mut VM<'h>) -> RunResult<bool> {
        Ok(true)
    }

    fn py_repr_fmt(&self, f: &mut impl Write, vm: &mut VM<'h>, _: &mut LazyHeapSet) -> RunResult<()> {
        let func_id = self.get(vm.heap).func_id;
        // chainbox patch (CHAINBOX.md)
        let address = crate::identity::Identity::from_heap_id(self.id()).encoded();
        Ok(vm.interns.get_function(func_id).py_repr_fmt(f, vm.interns, address)?)
    }

    fn py_call(&mut self, args: ArgValues, vm: &mut VM<'h>) -> RunResult<CallResult> {
        let closure = self.get(vm.heap);
        let (func_id, cells, globals) = (closure.func_id, closure.cells.clone(), closure.globals);
        let defaults = closure.defaults.iter().map(|v| v.clone_with_heap(vm)).collect();
        call_def(func_id, &cells, defaults, globals, args, vm)
    }
}

impl<'h> PyTrait<'h> for HeapObjectRead<'h, FunctionDefaults> {
    fn py_type(&self, _: &VM<'h>) -> Type {
        Type::Function
    }

    fn py_len(&self, _: &VM<'h>) -> Option<usize> {
        None
    }

    /// Equal when they decorate the same `def`: with no captured scope, the
    /// defaults are all that could differ and CPython ignores those too.
    fn py_eq_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        Ok(match other.read_heap(vm) {
            Some(HeapReadOutput::FunctionDefaults(other)) => {
                Some(self.get(vm.heap).func_id == other.get(vm.heap).func_id)
            }
            _ => None,
        })
    }

    fn py_hash(&self, vm: &mut VM<'h>) -> RunResult<Option<HashValue>> {
        Ok(Some(hash_func_id(self.get(vm.heap).func_id)))
    }

    fn py_bool(&self, _: &mut VM<'h>) -> RunResult<bool> {
        Ok(true)
    }

    fn py_repr_fmt(&self, f: &mut impl Write, vm: &mut VM<'h>, _: &mut LazyHeapSet) -> RunResult<()> {
        let func_id = self.get(vm.heap).func_id;
        // chainbox patch (CHAINBOX.md)
        let address = crate::identity::Identity::from_heap_id(self.id()).encoded();
        Ok(vm.interns.get_function(func_id).py_repr_fmt(f, vm.interns, address)?)
    }

    fn py_call(&mut self, args: ArgValues, vm: &mut VM<'h>) -> RunResult<CallResult> {
        let function = self.get(vm.heap);
        let (func_id, globals) = (function.func_id, function.globals);
        let defaults = function.defaults.iter().map(|v| v.clone_with_heap(vm)).collect();
        call_def(func_id, &[], defaults, globals, args, vm)
    }
}

/// Hashes a function identity, the hash both `def` representations report.
fn hash_func_id(func_id: FunctionId) -> HashValue {
    let mut hasher = DefaultHasher::new();
    func_id.hash(&mut hasher);
    HashValue::new(hasher.finish())
}

impl HeapItem for SimpleException {
    fn py_dec_ref_ids(&mut self, stack: &mut Vec<HeapId>) {
        // chainbox patch: an exception built with general args owns its args
        // tuple; others hold no heap references.
        stack.extend(self.heap_args());
    }
}

impl HeapItem for LongInt {
    fn py_dec_ref_ids(&mut self, _stack: &mut Vec<HeapId>) {
        // LongInt doesn't contain heap references
    }
}

impl HeapItem for Coroutine {
    fn py_dec_ref_ids(&mut self, stack: &mut Vec<HeapId>) {
        // Decrement ref count for namespace values that are heap references
        for value in &mut self.namespace {
            value.py_dec_ref_ids(stack);
        }
        stack.extend(self.globals);
    }
}

impl HeapItem for GatherFuture {
    fn py_dec_ref_ids(&mut self, stack: &mut Vec<HeapId>) {
        // Decrement ref count for items the gather owns (every entry in
        // `items` is inc_ref'd at construction time).
        stack.extend(self.items.iter().copied());
        // Release per-state heap refs: in-flight slot results plus this
        // gather's own awaiter (if `GatherSlot`, it owns an inc_ref on the
        // outer gather), or the cached result list once the gather has
        // completed successfully. `Pending` and `Failed` carry no heap refs.
        match &mut self.state {
            GatherState::Awaited(awaited) => {
                if let Awaiter::GatherSlot { gather, .. } = &awaited.awaiter {
                    stack.push(*gather);
                }
                for result in awaited.results.iter_mut().flatten() {
                    result.py_dec_ref_ids(stack);
                }
            }
            GatherState::Completed(Value::Ref(id)) => stack.push(*id),
            GatherState::Pending | GatherState::Failed(_) | GatherState::Completed(_) => {}
        }
    }
}

impl HeapItem for ExternalFuture {
    fn py_dec_ref_ids(&mut self, stack: &mut Vec<HeapId>) {
        // `Pending { awaiter: Some(Awaiter::GatherSlot { gather, .. }) }`
        // owns an inc_ref on `gather` — release it when this entry is
        // freed. `Awaiter::Task` and `None` own nothing. `Resolved` owns
        // the cached value; `Failed` carries no heap refs. A pending sleep
        // result is owned until resolution takes it.
        if let Some(result) = &mut self.sleep_result {
            result.py_dec_ref_ids(stack);
        }
        match &mut self.state {
            ExternalFutureState::Resolved(value) => value.py_dec_ref_ids(stack),
            ExternalFutureState::Pending {
                awaiter: Some(Awaiter::GatherSlot { gather, .. }),
            } => stack.push(*gather),
            ExternalFutureState::Pending {
                awaiter: None | Some(Awaiter::Task(_)),
            }
            | ExternalFutureState::Failed(_) => {}
        }
    }
}

/// Exhaustive concrete-type dispatch shared by storage and logical views.
macro_rules! heap_read_output_py_trait_forward {
    ($self:expr, |$value:ident| $body:expr, else $fallback:expr) => {
        $crate::heap_data::heap_read_output_py_trait_forward!(
            $self, |$value| $body, {
                Self::LongInt($value) => $body,
                Self::Cell(_)
                | Self::Exception(_)
                | Self::Module(_)
                | Self::Coroutine(_)
                | Self::GatherFuture(_)
                | Self::ExternalFuture(_) => $fallback,
            }
        )
    };
    ($self:expr, |$value:ident| $body:expr, {$($custom:tt)*}) => {
        match $self {
            Self::Str($value) => $body,
            Self::Bytes($value) => $body,
            Self::List($value) => $body,
            Self::Deque($value) => $body,
            Self::ListIterator($value) => $body,
            Self::DequeIterator($value) => $body,
            Self::TupleIterator($value) => $body,
            Self::StringIterator($value) => $body,
            Self::BytesIterator($value) => $body,
            Self::RangeIterator($value) => $body,
            Self::DictKeyIterator($value) => $body,
            Self::DictItemIterator($value) => $body,
            Self::DictValueIterator($value) => $body,
            Self::SetIterator($value) => $body,
            Self::CallableIterator($value) => $body,
            Self::Itertools($value) => $body,
            Self::DirScan($value) => $body,
            Self::Csv($value) => $body,
            Self::Partial($value) => $body,
            Self::Random($value) => $body,
            Self::HashObject($value) => $body,
            Self::GenericAlias($value) => $body,
            Self::Union($value) => $body,
            Self::LruCache($value) => $body,
            Self::Tuple($value) => $body,
            Self::NamedTuple($value) => $body,
            Self::NamedTupleClass($value) => $body,
            Self::Dict($value) => $body,
            Self::DictKeysView($value) => $body,
            Self::DictItemsView($value) => $body,
            Self::DictValuesView($value) => $body,
            Self::Set($value) => $body,
            Self::FrozenSet($value) => $body,
            Self::Range($value) => $body,
            Self::Slice($value) => $body,
            Self::HostClass($value) => $body,
            Self::HostClassType($value) => $body,
            Self::Class($value) => $body,
            Self::Instance($value) => $body,
            Self::BoundMethod($value) => $body,
            Self::DataclassField($value) => $body,
            Self::DataclassMethod($value) => $body,
            Self::DataclassParams($value) => $body,
            Self::Complex($value) => $body,
            Self::Path($value) => $body,
            Self::OpenFile($value) => $body,
            Self::RePattern($value) => $body,
            Self::ReMatch($value) => $body,
            Self::Date($value) => $body,
            Self::DateTime($value) => $body,
            Self::Time($value) => $body,
            Self::TimeDelta($value) => $body,
            Self::TimeZone($value) => $body,
            Self::Closure($value) => $body,
            Self::FunctionDefaults($value) => $body,
            Self::ExtFunction($value) => $body,
            Self::Decimal($value) => $body,
            Self::DecimalContext($value) => $body,
            Self::DecimalSignalDict($value) => $body,
            Self::DecimalContextManager($value) => $body,
            // chainbox patch (CHAINBOX.md)
            Self::PlainObject($value) => $body,
            $($custom)*
        }
    };
}

pub(crate) use heap_read_output_py_trait_forward;

// Only unmigrated protocols dispatch here; normalized operations use PyValue.
impl<'h> PyTrait<'h> for HeapReadOutput<'h> {
    fn py_len(&self, vm: &VM<'h>) -> Option<usize> {
        heap_read_output_py_trait_forward!(self, |value| value.py_len(vm), else None)
    }

    /// Forwards so host class instances and named tuples name their real class.
    fn py_type_name(&self, vm: &VM<'h>) -> Cow<'h, str> {
        heap_read_output_py_trait_forward!(
            self,
            |value| value.py_type_name(vm),
            else self.py_type(vm).name(vm.heap, vm.interns)
        )
    }

    fn py_matmul_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        heap_read_output_py_trait_forward!(self, |value| value.py_matmul_impl(other, vm), else Ok(None))
    }

    fn py_rmatmul_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        heap_read_output_py_trait_forward!(self, |value| value.py_rmatmul_impl(other, vm), else Ok(None))
    }

    fn py_call(&mut self, args: ArgValues, vm: &mut VM<'h>) -> RunResult<CallResult> {
        heap_read_output_py_trait_forward!(
            self,
            |value| value.py_call(args, vm),
            else {
                args.drop_with(vm);
                Err(ExcType::type_error_not_callable_object(&self.py_type_name(vm)))
            }
        )
    }

    fn py_is_iterator(&self, vm: &VM<'h>) -> bool {
        match self {
            // A user-defined class is an iterator only if it defines `__next__`.
            Self::Instance(inst) => inst.py_is_iterator(vm),
            // Every built-in iterator is identified by its type, so there is no
            // list to keep in step with new iterator types here.
            other => other.py_type(vm).is_iterator(),
        }
    }

    fn py_is_iterable(&self, vm: &VM<'h>) -> bool {
        heap_read_output_py_trait_forward!(self, |value| value.py_is_iterable(vm), else false)
    }

    fn py_is_context_manager(&self, vm: &VM<'h>) -> bool {
        // Only types that implement the protocol return true; everything else
        // inherits the default `false`. The `with` statement gates `py_enter`
        // / `py_exit` on this check, so a real context manager whose
        // `__enter__` happens to raise `AttributeError` is no longer
        // misdiagnosed as "not a context manager".
        heap_read_output_py_trait_forward!(self, |value| value.py_is_context_manager(vm), else false)
    }

    fn py_enter(&mut self, vm: &mut VM<'h>) -> RunResult<CallResult> {
        // Only types that override the trait default need explicit arms; all
        // others fall through to the catch-all `AttributeError`, matching how
        // `py_call_attr` is structured.
        heap_read_output_py_trait_forward!(
            self,
            |value| value.py_enter(vm),
            else { Err(ExcType::attribute_error(self.py_type_name(vm), "__enter__")) }
        )
    }

    fn py_exit(&mut self, vm: &mut VM<'h>, exc: Option<HeapId>) -> RunResult<CallResult> {
        heap_read_output_py_trait_forward!(
            self,
            |value| value.py_exit(vm, exc),
            else { Err(ExcType::attribute_error(self.py_type_name(vm), "__exit__")) }
        )
    }

    fn py_type(&self, vm: &VM<'h>) -> Type {
        heap_read_output_py_trait_forward!(
            self,
            |value| value.py_type(vm),
            else {
                match self {
                    Self::Cell(_) => Type::Cell,
                    Self::Exception(e) => e.py_type(vm),
                    Self::Module(_) => Type::Module,
                    Self::Coroutine(_) | Self::GatherFuture(_) | Self::ExternalFuture(_) => Type::Coroutine,
                    _ => unreachable!("py-trait variants handled by heap_read_output_py_trait_forward"),
                }
            }
        )
    }

    fn py_eq_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        heap_read_output_py_trait_forward!(
            self,
            |value| value.py_eq_impl(other, vm),
            else {
                match self {
                    Self::Cell(_)
                    | Self::Exception(_)
                    | Self::Module(_)
                    | Self::Coroutine(_)
                    | Self::GatherFuture(_)
                    | Self::ExternalFuture(_) => Ok(None),
                    _ => unreachable!("py-trait variants handled by heap_read_output_py_trait_forward"),
                }
            }
        )
    }

    /// Dispatches hashing to per-type `PyTrait` implementations where possible.
    fn py_hash(&self, vm: &mut VM<'h>) -> RunResult<Option<HashValue>> {
        heap_read_output_py_trait_forward!(
            self,
            |value| value.py_hash(vm),
            else {
                match self {
                    Self::Cell(value) => Ok(Some(identity_hash(value.id()))),
                    // modules hash by identity, as CPython's do
                    Self::Module(value) => Ok(Some(identity_hash(value.id()))),
                    Self::Exception(_)
                    | Self::Coroutine(_)
                    | Self::GatherFuture(_)
                    | Self::ExternalFuture(_) => Ok(None),
                    _ => unreachable!("py-trait variants handled by heap_read_output_py_trait_forward"),
                }
            }
        )
    }

    fn py_iadd_impl(&mut self, other: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        heap_read_output_py_trait_forward!(self, |value| value.py_iadd_impl(other, vm), else Ok(false))
    }

    fn py_isub_impl(&mut self, other: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        heap_read_output_py_trait_forward!(self, |value| value.py_isub_impl(other, vm), else Ok(false))
    }

    fn py_iand_impl(&mut self, other: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        heap_read_output_py_trait_forward!(self, |value| value.py_iand_impl(other, vm), else Ok(false))
    }

    fn py_ior_impl(&mut self, other: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        heap_read_output_py_trait_forward!(self, |value| value.py_ior_impl(other, vm), else Ok(false))
    }

    // chainbox patch (CHAINBOX.md)
    fn py_imul_impl(&mut self, other: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        heap_read_output_py_trait_forward!(self, |value| value.py_imul_impl(other, vm), else Ok(false))
    }

    fn py_ixor_impl(&mut self, other: &Value, vm: &mut VM<'h>) -> RunResult<bool> {
        heap_read_output_py_trait_forward!(self, |value| value.py_ixor_impl(other, vm), else Ok(false))
    }

    fn py_cmp_op(&self, other: &Value, op: CmpOperator, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        heap_read_output_py_trait_forward!(self, |value| value.py_cmp_op(other, op, vm), else Ok(None))
    }

    fn py_setitem(&mut self, key: Value, value: Value, vm: &mut VM<'h>) -> RunResult<()> {
        heap_read_output_py_trait_forward!(
            self,
            |item| item.py_setitem(key, value, vm),
            else {
                key.drop_with(vm);
                value.drop_with(vm);
                Err(ExcType::type_error_not_sub_assignment(
                    &self.py_type_name(vm),
                ))
            }
        )
    }

    // chainbox patch (CHAINBOX.md)
    fn py_delitem(&mut self, key: Value, vm: &mut VM<'h>) -> RunResult<()> {
        heap_read_output_py_trait_forward!(
            self,
            |item| item.py_delitem(key, vm),
            else {
                let error = crate::types::py_trait::delitem_unsupported(
                    &self.py_type(vm),
                    &self.py_type_name(vm),
                    &key,
                    vm,
                );
                key.drop_with(vm);
                Err(error)
            }
        )
    }

    fn py_del_attr(&mut self, name: &EitherStr, vm: &mut VM<'h>) -> RunResult<()> {
        heap_read_output_py_trait_forward!(
            self,
            |item| item.py_del_attr(name, vm),
            else {
                let type_name = self.py_type_name(vm);
                Err(ExcType::attribute_error_no_setattr(
                    &type_name,
                    name.as_str(vm.interns),
                ))
            }
        )
    }

    fn py_set_attr(&mut self, name: &EitherStr, value: Value, vm: &mut VM<'h>) -> RunResult<()> {
        heap_read_output_py_trait_forward!(
            self,
            |item| item.py_set_attr(name, value, vm),
            else {
                value.drop_with(vm);
                let type_name = self.py_type_name(vm);
                Err(ExcType::attribute_error_no_setattr(
                    &type_name,
                    name.as_str(vm.interns),
                ))
            }
        )
    }

    fn py_getattr(&self, attr: &EitherStr, vm: &mut VM<'h>) -> RunResult<Option<CallResult>> {
        heap_read_output_py_trait_forward!(
            self,
            |value| value.py_getattr(attr, vm),
            else {
                match self {
                    Self::Module(m) => Ok(m.py_getattr(attr, vm)),
                    Self::Exception(e) => Ok(e.py_getattr(attr, vm)),
                    _ => Ok(None),
                }
            }
        )
    }

    fn py_iter(&self, vm: &mut VM<'h>) -> RunResult<CallResult> {
        match self {
            Self::Str(value) => value.py_iter(vm),
            Self::Bytes(value) => value.py_iter(vm),
            Self::List(value) => value.py_iter(vm),
            Self::Deque(value) => value.py_iter(vm),
            Self::ListIterator(value) => value.py_iter(vm),
            Self::DequeIterator(value) => value.py_iter(vm),
            Self::TupleIterator(value) => value.py_iter(vm),
            Self::StringIterator(value) => value.py_iter(vm),
            Self::BytesIterator(value) => value.py_iter(vm),
            Self::RangeIterator(value) => value.py_iter(vm),
            Self::DictKeyIterator(value) => value.py_iter(vm),
            Self::DictItemIterator(value) => value.py_iter(vm),
            Self::DictValueIterator(value) => value.py_iter(vm),
            Self::SetIterator(value) => value.py_iter(vm),
            Self::CallableIterator(value) => value.py_iter(vm),
            Self::Itertools(value) => value.py_iter(vm),
            Self::DirScan(value) => value.py_iter(vm),
            Self::Csv(value) => value.py_iter(vm),
            Self::Tuple(value) => value.py_iter(vm),
            Self::NamedTuple(value) => value.py_iter(vm),
            Self::Dict(value) => value.py_iter(vm),
            Self::DictKeysView(value) => value.py_iter(vm),
            Self::DictItemsView(value) => value.py_iter(vm),
            Self::DictValuesView(value) => value.py_iter(vm),
            Self::Set(value) => value.py_iter(vm),
            Self::FrozenSet(value) => value.py_iter(vm),
            Self::Range(value) => value.py_iter(vm),
            Self::Slice(value) => value.py_iter(vm),
            Self::HostClass(value) => value.py_iter(vm),
            Self::HostClassType(value) => value.py_iter(vm),
            Self::Class(value) => value.py_iter(vm),
            Self::Instance(value) => value.py_iter(vm),
            Self::BoundMethod(value) => value.py_iter(vm),
            Self::DataclassField(value) => value.py_iter(vm),
            Self::DataclassMethod(value) => value.py_iter(vm),
            Self::DataclassParams(value) => value.py_iter(vm),
            Self::Path(value) => value.py_iter(vm),
            Self::OpenFile(value) => value.py_iter(vm),
            Self::ReMatch(value) => value.py_iter(vm),
            Self::RePattern(value) => value.py_iter(vm),
            Self::Date(value) => value.py_iter(vm),
            Self::DateTime(value) => value.py_iter(vm),
            Self::Time(value) => value.py_iter(vm),
            Self::TimeDelta(value) => value.py_iter(vm),
            Self::TimeZone(value) => value.py_iter(vm),
            Self::DecimalSignalDict(value) => value.py_iter(vm),
            Self::Decimal(_)
            | Self::DecimalContext(_)
            | Self::DecimalContextManager(_)
            // chainbox patch (CHAINBOX.md)
            | Self::PlainObject(_)
            | Self::NamedTupleClass(_)
            | Self::Closure(_)
            | Self::FunctionDefaults(_)
            | Self::ExtFunction(_)
            | Self::Partial(_)
            | Self::Random(_)
            | Self::HashObject(_)
            | Self::GenericAlias(_)
            | Self::Union(_)
            | Self::LruCache(_)
            | Self::Cell(_)
            | Self::Exception(_)
            | Self::LongInt(_)
            | Self::Complex(_)
            | Self::Module(_)
            | Self::Coroutine(_)
            | Self::GatherFuture(_)
            | Self::ExternalFuture(_) => Err(ExcType::type_error_not_iterable(&self.py_type_name(vm))),
        }
    }

    fn py_next(&mut self, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        match self {
            Self::Str(value) => value.py_next(vm),
            Self::Bytes(value) => value.py_next(vm),
            Self::List(value) => value.py_next(vm),
            Self::ListIterator(value) => value.py_next(vm),
            Self::DequeIterator(value) => value.py_next(vm),
            Self::TupleIterator(value) => value.py_next(vm),
            Self::StringIterator(value) => value.py_next(vm),
            Self::BytesIterator(value) => value.py_next(vm),
            Self::RangeIterator(value) => value.py_next(vm),
            Self::DictKeyIterator(value) => value.py_next(vm),
            Self::DictItemIterator(value) => value.py_next(vm),
            Self::DictValueIterator(value) => value.py_next(vm),
            Self::SetIterator(value) => value.py_next(vm),
            Self::CallableIterator(value) => value.py_next(vm),
            Self::Itertools(value) => value.py_next(vm),
            Self::DirScan(value) => value.py_next(vm),
            Self::Csv(value) => value.py_next(vm),
            Self::Tuple(value) => value.py_next(vm),
            Self::NamedTuple(value) => value.py_next(vm),
            Self::Dict(value) => value.py_next(vm),
            Self::DictKeysView(value) => value.py_next(vm),
            Self::DictItemsView(value) => value.py_next(vm),
            Self::DictValuesView(value) => value.py_next(vm),
            Self::Set(value) => value.py_next(vm),
            Self::FrozenSet(value) => value.py_next(vm),
            Self::Range(value) => value.py_next(vm),
            Self::Slice(value) => value.py_next(vm),
            Self::HostClass(value) => value.py_next(vm),
            Self::HostClassType(value) => value.py_next(vm),
            Self::Class(value) => value.py_next(vm),
            Self::Instance(value) => value.py_next(vm),
            Self::BoundMethod(value) => value.py_next(vm),
            Self::DataclassField(value) => value.py_next(vm),
            Self::DataclassMethod(value) => value.py_next(vm),
            Self::DataclassParams(value) => value.py_next(vm),
            Self::Path(value) => value.py_next(vm),
            Self::OpenFile(value) => value.py_next(vm),
            Self::ReMatch(value) => value.py_next(vm),
            Self::RePattern(value) => value.py_next(vm),
            Self::Date(value) => value.py_next(vm),
            Self::DateTime(value) => value.py_next(vm),
            Self::Time(value) => value.py_next(vm),
            Self::TimeDelta(value) => value.py_next(vm),
            Self::TimeZone(value) => value.py_next(vm),
            other => Err(ExcType::type_error_not_iterator(&other.py_type_name(vm))),
        }
    }
}
