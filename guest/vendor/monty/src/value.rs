use std::{
    borrow::Cow,
    cmp::Ordering,
    fmt::{self, Write},
    mem,
    str::FromStr,
};

use num_bigint::{BigInt, Sign};
use num_traits::{Signed, ToPrimitive};
use serde::de::Error as _;
use smallvec::smallvec;

use crate::{
    builtins::Builtins,
    bytecode::{CallResult, VM},
    defer_drop,
    exception_private::{ExcType, ExcTypeExt, RunError, RunResult, SimpleException},
    expressions::CmpOperator,
    // chainbox patch: imports for this file's patches (CHAINBOX.md)
    hash::{HashValue, hash_f64, hash_i64, hash_named, hash_none, hash_one, identity_hash},
    heap::{ContainsHeap, DropWithContext, Heap, HeapData, HeapId, HeapReadOutput},
    heap_data::{Closure, FunctionDefaults},
    identity::Identity,
    intern::{BytesId, FunctionId, Interns, LongIntId, StaticStrings, StringId},
    modules::ModuleFunctions,
    py_value::PyValue,
    types::{
        BytesIterator, CmpOrder, Complex, LazyHeapSet, Property, PyTrait, StringIterator, Type,
        bytes::PyBytes,
        decimal, host_class_type,
        instance::{class_defines, instance_getattr, instance_str, instance_user_eq},
        long_int::{
            PyInt, bigint_cmp_f64, bigint_cmp_i64, bigint_divmod_tuple, bigint_eq_f64, bigint_eq_i64, i64_cmp_f64,
        },
        namedtuple::cmp_item_seqs,
        // chainbox patch: imports for this file's patches (CHAINBOX.md)
        number_methods,
        str::{PyStr, allocate_string},
        tuple::allocate_tuple,
    },
};

/// Primary value type representing Python objects at runtime.
///
/// This enum uses a hybrid design: small immediate values (Int, Bool, None) are stored
/// inline, while heap-allocated values (List, Str, Dict, etc.) are stored in the arena
/// and referenced via `Ref(HeapId)`.
///
/// NOTE: `Clone` is intentionally NOT derived. Use `clone_with_heap()`. Direct cloning via `.clone()` would
/// bypass reference counting and cause memory leaks.
///
/// NOTE: it's important to keep this size small to minimize memory overhead!
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) enum Value {
    // Immediate values (stored inline, no heap allocation)
    #[serde(rename = "U")]
    Undefined,
    #[serde(rename = "E")]
    Ellipsis,
    #[serde(rename = "N")]
    NotImplemented,
    #[serde(rename = "O")]
    None,
    #[serde(rename = "B")]
    Bool(bool),
    #[serde(rename = "I")]
    Int(i64),
    #[serde(rename = "F")]
    Float(f64),
    /// An interned string literal. The StringId references the string in the Interns table.
    /// To get the actual string content, use `interns.get(string_id)`.
    #[serde(rename = "T")]
    InternString(StringId),
    /// An interned bytes literal. The BytesId references the bytes in the Interns table.
    /// To get the actual bytes content, use `interns.get_bytes(bytes_id)`.
    #[serde(rename = "R")]
    InternBytes(BytesId),
    /// An interned long integer literal. The `LongIntId` references the `BigInt` in the Interns table.
    /// Used for integer literals exceeding i64 range; loading them shares the interned payload.
    #[serde(rename = "L")]
    InternLongInt(LongIntId),
    /// A builtin function or exception type
    #[serde(rename = "A")]
    Builtin(Builtins),
    /// A function from a module (not a global builtin).
    /// Module functions require importing a module to access (e.g., `asyncio.gather`).
    #[serde(rename = "M")]
    ModuleFunction(ModuleFunctions),
    /// A function defined in the module (not a closure, doesn't capture any variables)
    #[serde(rename = "D")]
    DefFunction(FunctionId),
    /// A marker value representing special objects like sys.stdout/stderr.
    /// These exist but have minimal functionality in the sandboxed environment.
    #[serde(rename = "K")]
    Marker(Marker),
    /// A property descriptor that computes its value when accessed.
    /// When retrieved via `py_getattr`, the property's getter is invoked.
    #[serde(rename = "P")]
    Property(Property),

    // Heap-allocated values (stored in arena)
    #[serde(rename = "C")]
    Ref(HeapId),

    /// Sentinel value indicating this Value was properly cleaned up via `drop_with`.
    /// Only exists when `memory-model-checks` feature is enabled. Used to verify reference counting
    /// correctness - if a `Ref` variant is dropped without calling `drop_with`, the
    /// Drop impl will panic.
    #[cfg(feature = "memory-model-checks")]
    #[serde(rename = "G")]
    Dereferenced,
}

/// Scoped view of a value that keeps a referenced heap entry open for repeated operations.
pub(crate) enum ValueRead<'h, 'v> {
    /// Immediate values need no heap access.
    Immediate(&'v Value),
    /// Heap values retain the typed heap object handle.
    Heap {
        value: HeapReadOutput<'h>,
        /// `py_next` calls made through this view, keying its amortized
        /// time check.
        steps: usize,
    },
}

impl<'h> ValueRead<'h, '_> {
    /// Advances this value without reacquiring its heap entry.
    ///
    /// This is the timeout boundary for Rust-side loops over retained iterators
    /// (amortized on the view's step count). Bytecode iteration dispatches
    /// directly after the VM's per-opcode check.
    ///
    /// The step count lives on the view, so a loop must hold one across its
    /// iterations; rebuilding one per call (as `itertools.chain` does) never
    /// polls, and is only safe under a caller whose own view counts.
    pub(crate) fn py_next(&mut self, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        match self {
            Self::Immediate(value) => Err(ExcType::type_error_not_iterator(&value.py_type_name(vm))),
            Self::Heap { value, steps } => {
                vm.heap.tracker.check_memory_time_every(*steps)?;
                *steps += 1;
                value.py_next(vm)
            }
        }
    }

    /// Returns the iterator's internal remaining-length hint when available.
    pub(crate) fn iter_size_hint(&self, vm: &VM<'h>) -> usize {
        match self {
            Self::Heap {
                value: HeapReadOutput::ListIterator(iter),
                ..
            } => iter.get(vm.heap).size_hint(vm.heap),
            Self::Heap {
                value: HeapReadOutput::DequeIterator(iter),
                ..
            } => iter.get(vm.heap).size_hint(vm.heap),
            Self::Heap {
                value: HeapReadOutput::TupleIterator(iter),
                ..
            } => iter.get(vm.heap).size_hint(vm.heap),
            Self::Heap {
                value: HeapReadOutput::StringIterator(iter),
                ..
            } => iter.get(vm.heap).size_hint(vm),
            Self::Heap {
                value: HeapReadOutput::BytesIterator(iter),
                ..
            } => iter.get(vm.heap).size_hint(vm),
            Self::Heap {
                value: HeapReadOutput::RangeIterator(iter),
                ..
            } => iter.get(vm.heap).size_hint(),
            Self::Heap {
                value: HeapReadOutput::DictKeyIterator(iter),
                ..
            } => iter.get(vm.heap).size_hint(),
            Self::Heap {
                value: HeapReadOutput::DictItemIterator(iter),
                ..
            } => iter.get(vm.heap).size_hint(),
            Self::Heap {
                value: HeapReadOutput::DictValueIterator(iter),
                ..
            } => iter.get(vm.heap).size_hint(),
            Self::Heap {
                value: HeapReadOutput::SetIterator(iter),
                ..
            } => iter.get(vm.heap).size_hint(),
            Self::Heap {
                value: HeapReadOutput::Itertools(iter),
                ..
            } => iter.get(vm.heap).size_hint(),
            _ => 0,
        }
    }
}

/// Size of a single `Value` slot in bytes.
///
/// Used to preflight operations that allocate many value slots at once.
pub(crate) const VALUE_SIZE: usize = mem::size_of::<Value>();

/// Runs a protocol method on the Python-type view of `$value`.
///
/// Immediate ints dominate arithmetic and truth tests in hot loops, so they open
/// their `PyInt` view directly instead of building the full `PyValue`
/// (whose wide match the optimizer cannot thread through). `PyValue::Int`
/// forwards every protocol to the same `PyInt`, so semantics are unchanged.
macro_rules! dispatch_py_value {
    ($value:expr, $vm:expr, |$view:ident| $body:expr) => {
        match $value {
            Value::Int(small) => {
                let $view = PyInt::Small(*small);
                $body
            }
            value => {
                let $view = value.py_value($vm);
                $body
            }
        }
    };
}

/// Drop implementation that panics if a `Ref` variant is dropped without calling `drop_with`.
/// This helps catch reference counting bugs during development/testing.
/// Only enabled when the `memory-model-checks` feature is active.
#[cfg(feature = "memory-model-checks")]
impl Drop for Value {
    fn drop(&mut self) {
        if let Self::Ref(id) = self {
            panic!("Value::Ref({id:?}) dropped without calling drop_with() - this is a reference counting bug");
        }
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}

impl<'h> PyTrait<'h> for Value {
    /// Forwards to the inherent [`Value::py_type_name`], so generic `PyTrait`
    /// callers also see the real class name of a named tuple or host instance.
    fn py_type_name(&self, vm: &VM<'h>) -> Cow<'h, str> {
        Self::py_type_name(self, vm)
    }

    fn py_type(&self, vm: &VM<'_>) -> Type {
        match self {
            Self::Undefined => panic!("Cannot get type of undefined value"),
            Self::Ellipsis => Type::Ellipsis,
            Self::NotImplemented => Type::NotImplementedType,
            Self::None => Type::NoneType,
            Self::Bool(_) => Type::Bool,
            Self::Int(_) | Self::InternLongInt(_) => Type::Int,
            Self::Float(_) => Type::Float,
            Self::InternString(_) => Type::Str,
            Self::InternBytes(_) => Type::Bytes,
            Self::Builtin(c) => c.py_type(),
            Self::ModuleFunction(_) => Type::BuiltinFunction,
            Self::DefFunction(_) => Type::Function,
            Self::Marker(m) => m.py_type(),
            Self::Property(_) => Type::Property,
            Self::Ref(id) => vm.heap.read(*id).py_type(vm),
            #[cfg(feature = "memory-model-checks")]
            Self::Dereferenced => panic!("Cannot access Dereferenced object"),
        }
    }

    fn py_len(&self, vm: &VM<'_>) -> Option<usize> {
        self.py_value(vm).py_len(vm)
    }

    fn py_eq_impl(&self, other: &Value, vm: &mut VM<'_>) -> RunResult<Option<bool>> {
        match self {
            // `Undefined` is a sentinel and is never equal to anything.
            Self::Undefined => Ok(Some(false)),

            Self::None => Ok(matches!(other, Self::None).then_some(true)),
            Self::Ellipsis => Ok(matches!(other, Self::Ellipsis).then_some(true)),
            Self::NotImplemented => Ok(matches!(other, Self::NotImplemented).then_some(true)),
            Self::Bool(b) => Ok(eq_i64(i64::from(*b), other, vm)),
            Self::Int(a) => Ok(eq_i64(*a, other, vm)),
            Self::Float(f) => Ok(eq_f64(*f, other, vm)),
            Self::InternLongInt(id) => Ok(eq_bigint(vm.interns.get_long_int(*id), other, vm)),
            Self::InternString(id) => Ok(match other {
                // Interned strings are deduplicated, so equal ids ⇔ equal content.
                Self::InternString(o) => Some(id == o),
                _ => eq_str(vm.interns.get_str(*id), other, vm),
            }),
            Self::InternBytes(id) => Ok(match other {
                // Fast path for the same interned bytes; otherwise compare content
                // (interned bytes are not deduplicated, unlike strings).
                Self::InternBytes(o) if id == o => Some(true),
                _ => eq_bytes(vm.interns.get_bytes(*id), other, vm),
            }),
            Self::Builtin(b) => Ok(match other {
                Self::Builtin(o) => Some(b == o),
                _ => None,
            }),
            Self::ModuleFunction(mf) => Ok(match other {
                Self::ModuleFunction(o) => Some(mf == o),
                _ => None,
            }),
            Self::DefFunction(f) => Ok(match other {
                Self::DefFunction(o) => Some(f == o),
                _ => None,
            }),
            Self::Marker(m) => Ok(match other {
                Self::Marker(o) => Some(m == o),
                _ => None,
            }),
            Self::Property(p) => Ok(match other {
                Self::Property(o) => Some(p == o),
                _ => None,
            }),
            Self::Ref(id) => vm.heap.read(*id).py_eq_impl(other, vm),
            #[cfg(feature = "memory-model-checks")]
            Self::Dereferenced => panic!("Cannot access Dereferenced object"),
        }
    }

    fn py_cmp(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<CmpOrder> {
        let interns = vm.interns;
        // py_cmp handles numbers, strings, bytes, tuples, and lists.
        // Recursion depth tracking for tuples/lists is handled by their iterators.
        //
        // `from_numeric` maps a `None` from a numeric helper to
        // `CmpOrder::Unordered` (only `NaN` yields `None` there), while
        // `from_total` maps `None` from a total-order comparison to
        // `CmpOrder::Incomparable`. Any operand pair with no comparison at all
        // falls through to the catch-alls below, which try a `Decimal` operand last so
        // the common types never pay for that check.
        match (self, other) {
            (Self::Int(s), Self::Int(o)) => Ok(CmpOrder::Ordered(s.cmp(o))),
            (Self::Float(s), Self::Float(o)) => Ok(CmpOrder::from_numeric(s.partial_cmp(o))),
            // Int/float ordering is exact (no rounding of either operand).
            (Self::Int(s), Self::Float(o)) => Ok(CmpOrder::from_numeric(i64_cmp_f64(*s, *o))),
            (Self::Float(s), Self::Int(o)) => Ok(CmpOrder::from_numeric(i64_cmp_f64(*o, *s).map(Ordering::reverse))),
            (Self::Int(a), Self::InternLongInt(b)) => Ok(CmpOrder::Ordered(
                bigint_cmp_i64(interns.get_long_int(*b), *a).reverse(),
            )),
            (Self::InternLongInt(a), Self::Int(b)) => {
                Ok(CmpOrder::Ordered(bigint_cmp_i64(interns.get_long_int(*a), *b)))
            }
            (Self::Float(a), Self::InternLongInt(b)) => Ok(CmpOrder::from_numeric(
                bigint_cmp_f64(interns.get_long_int(*b), *a).map(Ordering::reverse),
            )),
            (Self::InternLongInt(a), Self::Float(b)) => {
                Ok(CmpOrder::from_numeric(bigint_cmp_f64(interns.get_long_int(*a), *b)))
            }
            (Self::InternLongInt(a), Self::InternLongInt(b)) => Ok(CmpOrder::Ordered(
                interns.get_long_int(*a).cmp(interns.get_long_int(*b)),
            )),
            // Bool promotion: convert to Int and re-dispatch. Recursion is bounded
            // to at most 2 levels (Bool→Int, then Int matches directly above).
            (Self::Bool(s), _) => Self::Int(i64::from(*s)).py_cmp(other, vm),
            (_, Self::Bool(s)) => self.py_cmp(&Self::Int(i64::from(*s)), vm),
            // Int vs LongInt comparison
            (Self::Int(a), Self::Ref(id)) if let HeapData::LongInt(li) = vm.heap.get(*id) => {
                Ok(CmpOrder::Ordered(bigint_cmp_i64(li.inner(), *a).reverse()))
            }
            (Self::InternLongInt(a), Self::Ref(id)) if let HeapData::LongInt(li) = vm.heap.get(*id) => {
                Ok(CmpOrder::Ordered(interns.get_long_int(*a).cmp(li.inner())))
            }
            // LongInt vs Int comparison
            (Self::Ref(id), Self::Int(b)) if let HeapData::LongInt(li) = vm.heap.get(*id) => {
                Ok(CmpOrder::Ordered(bigint_cmp_i64(li.inner(), *b)))
            }
            (Self::Ref(id), Self::InternLongInt(b)) if let HeapData::LongInt(li) = vm.heap.get(*id) => {
                Ok(CmpOrder::Ordered(li.inner().cmp(interns.get_long_int(*b))))
            }
            // Float vs LongInt comparison (exact, no precision loss)
            (Self::Float(s), Self::Ref(id)) if let HeapData::LongInt(li) = vm.heap.get(*id) => Ok(
                CmpOrder::from_numeric(bigint_cmp_f64(li.inner(), *s).map(Ordering::reverse)),
            ),
            // LongInt vs Float comparison (exact, no precision loss)
            (Self::Ref(id), Self::Float(o)) if let HeapData::LongInt(li) = vm.heap.get(*id) => {
                Ok(CmpOrder::from_numeric(li.partial_cmp_f64(*o)))
            }
            // Ref vs Ref comparison: same-kind heap values, then a `Decimal` operand
            (Self::Ref(id1), Self::Ref(id2)) => {
                let order = cmp_heap_pair(*id1, *id2, vm)?;
                if order == CmpOrder::Incomparable {
                    decimal_cmp_or_incomparable(self, other, vm)
                } else {
                    Ok(order)
                }
            }
            // Interned string comparisons
            (Self::InternString(s1), Self::InternString(s2)) => {
                Ok(CmpOrder::Ordered(interns.get_str(*s1).cmp(interns.get_str(*s2))))
            }
            // Cross-type string comparisons: interned vs heap-allocated
            (Self::InternString(s1), Self::Ref(id2)) if let HeapData::Str(s2) = vm.heap.get(*id2) => {
                Ok(CmpOrder::Ordered(interns.get_str(*s1).cmp(s2.as_str())))
            }
            (Self::Ref(id1), Self::InternString(s2)) if let HeapData::Str(s1) = vm.heap.get(*id1) => {
                Ok(CmpOrder::Ordered(s1.as_str().cmp(interns.get_str(*s2))))
            }
            (Self::InternBytes(b1), Self::InternBytes(b2)) => {
                Ok(CmpOrder::Ordered(interns.get_bytes(*b1).cmp(interns.get_bytes(*b2))))
            }
            // Cross-type bytes comparisons: interned vs heap-allocated
            (Self::InternBytes(b1), Self::Ref(id2)) if let HeapData::Bytes(b2) = vm.heap.get(*id2) => {
                Ok(CmpOrder::Ordered(interns.get_bytes(*b1).cmp(b2.as_slice())))
            }
            (Self::Ref(id1), Self::InternBytes(b2)) if let HeapData::Bytes(b1) = vm.heap.get(*id1) => {
                Ok(CmpOrder::Ordered(b1.as_slice().cmp(interns.get_bytes(*b2))))
            }
            _ => decimal_cmp_or_incomparable(self, other, vm),
        }
    }

    fn py_bool(&self, vm: &mut VM<'_>) -> RunResult<bool> {
        // Comparison results feed every conditional jump; answer them before opening a view.
        if let Self::Bool(value) = self {
            return Ok(*value);
        }
        dispatch_py_value!(self, vm, |view| view.py_bool(vm))
    }

    fn py_repr_fmt(&self, f: &mut impl Write, vm: &mut VM<'_>, heap_ids: &mut LazyHeapSet) -> RunResult<()> {
        self.py_value(vm).py_repr_fmt(f, vm, heap_ids)
    }

    /// Overrides the default `py_repr` with allocation-light fast paths for the
    /// values whose repr is cheap to produce:
    /// - singletons (`None`/`True`/`False`/`Ellipsis`) resolve to a pre-interned
    ///   `StringId`, so `repr`/`str`/`print`/f-strings allocate nothing at all;
    /// - `int` formats via `itoa` straight into a right-sized `allocate_string`,
    ///   skipping the grow-then-shrink intermediate `String`.
    ///
    /// Every other variant takes the generic `py_repr_fmt` buffered path. `str`
    /// is also served allocation-free, but by [`py_str`](Self::py_str) — `repr`
    /// of a `str` still needs a buffer for quoting/escaping.
    fn py_repr(&self, vm: &mut VM<'h>) -> RunResult<Value> {
        match self {
            Self::None => Ok(Self::InternString(vm.interns.intern_static(StaticStrings::NoneRepr))),
            Self::Bool(true) => Ok(Self::InternString(vm.interns.intern_static(StaticStrings::TrueRepr))),
            Self::Bool(false) => Ok(Self::InternString(vm.interns.intern_static(StaticStrings::FalseRepr))),
            Self::Ellipsis => Ok(Self::InternString(
                vm.interns.intern_static(StaticStrings::EllipsisRepr),
            )),
            Self::NotImplemented => Ok(Self::InternString(
                vm.interns.intern_static(StaticStrings::NotImplementedRepr),
            )),
            Self::Int(i) => Ok(allocate_string(itoa::Buffer::new().format(*i), vm.heap)),
            _ => {
                let mut s = String::new();
                let mut heap_ids = LazyHeapSet::default();
                self.py_repr_fmt(&mut s, vm, &mut heap_ids)?;
                Ok(allocate_string(s, vm.heap))
            }
        }
    }

    fn py_str(&self, vm: &mut VM<'h>) -> RunResult<Value> {
        match self {
            // Interned/heap strings are already what `str()` returns — hand the
            // same value back (inc-ref'd for the heap case) instead of cloning
            // the bytes into a fresh allocation.
            Self::InternString(string_id) => Ok(Self::InternString(*string_id)),
            Self::Ref(id) if matches!(vm.heap.get(*id), HeapData::Str(_)) => Ok(self.clone_with_heap(vm.heap)),
            // Instances dispatch to a user `__str__`/`__repr__` (needs the heap id).
            Self::Ref(id) if matches!(vm.heap.get(*id), HeapData::Instance(_)) => instance_str(*id, vm),
            Self::Ref(id) => PyValue::from(vm.heap.read(*id)).py_str(vm),
            _ => self.py_repr(vm),
        }
    }

    fn py_iadd_impl(&mut self, other: &Self, vm: &mut VM<'_>) -> RunResult<bool> {
        if let Self::Ref(id) = self {
            vm.heap.read(*id).py_iadd_impl(other, vm)
        } else {
            Ok(false)
        }
    }

    fn py_isub_impl(&mut self, other: &Self, vm: &mut VM<'_>) -> RunResult<bool> {
        if let Self::Ref(id) = self {
            vm.heap.read(*id).py_isub_impl(other, vm)
        } else {
            Ok(false)
        }
    }

    fn py_iand_impl(&mut self, other: &Self, vm: &mut VM<'_>) -> RunResult<bool> {
        if let Self::Ref(id) = self {
            vm.heap.read(*id).py_iand_impl(other, vm)
        } else {
            Ok(false)
        }
    }

    fn py_ior_impl(&mut self, other: &Self, vm: &mut VM<'_>) -> RunResult<bool> {
        if let Self::Ref(id) = self {
            vm.heap.read(*id).py_ior_impl(other, vm)
        } else {
            Ok(false)
        }
    }

    // chainbox patch (CHAINBOX.md)
    fn py_imul_impl(&mut self, other: &Self, vm: &mut VM<'_>) -> RunResult<bool> {
        if let Self::Ref(id) = self {
            vm.heap.read(*id).py_imul_impl(other, vm)
        } else {
            Ok(false)
        }
    }

    fn py_ixor_impl(&mut self, other: &Self, vm: &mut VM<'_>) -> RunResult<bool> {
        if let Self::Ref(id) = self {
            vm.heap.read(*id).py_ixor_impl(other, vm)
        } else {
            Ok(false)
        }
    }

    fn py_cmp_op(&self, other: &Self, op: CmpOperator, vm: &mut VM<'_>) -> RunResult<Option<bool>> {
        if let Self::Ref(id) = self {
            vm.heap.read(*id).py_cmp_op(other, op, vm)
        } else {
            Ok(None)
        }
    }

    fn py_index_impl(&self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_index_impl(vm))
    }

    fn py_abs_impl(&self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_abs_impl(vm))
    }

    fn py_invert_impl(&self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_invert_impl(vm))
    }

    fn py_round_impl(&self, ndigits: Option<&Self>, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_round_impl(ndigits, vm))
    }

    fn py_int_impl(&self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_int_impl(vm))
    }

    fn py_float_impl(&self, vm: &mut VM<'_>) -> RunResult<Option<f64>> {
        dispatch_py_value!(self, vm, |view| view.py_float_impl(vm))
    }

    fn py_floor_impl(&self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_floor_impl(vm))
    }

    fn py_ceil_impl(&self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_ceil_impl(vm))
    }

    fn py_trunc_impl(&self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_trunc_impl(vm))
    }

    fn py_neg_impl(&self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_neg_impl(vm))
    }

    fn py_pos_impl(&self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_pos_impl(vm))
    }

    /// One-sided implementation of Python `+` over logical operand types.
    fn py_add_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_add_impl(other, vm))
    }

    /// Reflected implementation of Python `+`.
    fn py_radd_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_radd_impl(other, vm))
    }

    /// One-sided implementation of Python `-`.
    fn py_sub_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_sub_impl(other, vm))
    }

    /// Reflected implementation of Python `-`.
    fn py_rsub_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_rsub_impl(other, vm))
    }

    /// One-sided implementation of Python `*` over logical operand types.
    fn py_mul_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_mul_impl(other, vm))
    }

    /// Reflected implementation of Python `*`, including sequence repetition.
    fn py_rmul_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_rmul_impl(other, vm))
    }

    /// One-sided implementation of Python `/`.
    fn py_truediv_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_truediv_impl(other, vm))
    }

    /// Reflected implementation of Python `/`.
    fn py_rtruediv_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_rtruediv_impl(other, vm))
    }

    /// One-sided implementation of Python `//`.
    fn py_floordiv_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_floordiv_impl(other, vm))
    }

    /// Reflected implementation of Python `//`.
    fn py_rfloordiv_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_rfloordiv_impl(other, vm))
    }

    /// One-sided implementation of Python `%`.
    fn py_mod_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_mod_impl(other, vm))
    }

    /// Reflected implementation of Python `%`.
    fn py_rmod_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_rmod_impl(other, vm))
    }

    /// One-sided implementation of Python `divmod()`.
    fn py_divmod_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_divmod_impl(other, vm))
    }

    /// Reflected implementation of Python `divmod()`.
    fn py_rdivmod_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_rdivmod_impl(other, vm))
    }

    /// One-sided implementation of Python `** or pow()`.
    fn py_pow_impl(&self, other: &Self, modulus: Option<&Self>, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_pow_impl(other, modulus, vm))
    }

    /// Reflected implementation of Python `** or pow()`.
    fn py_rpow_impl(&self, other: &Self, modulus: Option<&Self>, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_rpow_impl(other, modulus, vm))
    }

    /// One-sided implementation of Python `&`.
    fn py_and_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_and_impl(other, vm))
    }

    /// Reflected implementation of Python `&`.
    fn py_rand_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_rand_impl(other, vm))
    }

    /// One-sided implementation of Python `|`.
    fn py_or_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_or_impl(other, vm))
    }

    /// Reflected implementation of Python `|`.
    fn py_ror_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_ror_impl(other, vm))
    }

    /// One-sided implementation of Python `^`.
    fn py_xor_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_xor_impl(other, vm))
    }

    /// Reflected implementation of Python `^`.
    fn py_rxor_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_rxor_impl(other, vm))
    }

    /// One-sided implementation of Python `<<`.
    fn py_lshift_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_lshift_impl(other, vm))
    }

    /// Reflected implementation of Python `<<`.
    fn py_rlshift_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_rlshift_impl(other, vm))
    }

    /// One-sided implementation of Python `>>`.
    fn py_rshift_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_rshift_impl(other, vm))
    }

    /// Reflected implementation of Python `>>`.
    fn py_rrshift_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        dispatch_py_value!(self, vm, |view| view.py_rrshift_impl(other, vm))
    }

    /// One-sided implementation of matrix multiplication.
    fn py_matmul_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        if let Self::Ref(id) = self {
            vm.heap.read(*id).py_matmul_impl(other, vm)
        } else {
            Ok(None)
        }
    }

    /// Reflected implementation of matrix multiplication.
    fn py_rmatmul_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        if let Self::Ref(id) = self {
            vm.heap.read(*id).py_rmatmul_impl(other, vm)
        } else {
            Ok(None)
        }
    }

    fn py_getitem(&self, key: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.py_value(vm).subscript(key, vm)
    }

    fn py_setitem(&mut self, key: Self, value: Self, vm: &mut VM<'_>) -> RunResult<()> {
        if let Self::Ref(id) = self {
            vm.heap.read(*id).py_setitem(key, value, vm)
        } else {
            key.drop_with(vm);
            value.drop_with(vm);
            Err(ExcType::type_error_not_sub_assignment(&self.py_type_name(vm)))
        }
    }

    // chainbox patch: `del obj[key]`.
    fn py_delitem(&mut self, key: Self, vm: &mut VM<'_>) -> RunResult<()> {
        if let Self::Ref(id) = self {
            vm.heap.read(*id).py_delitem(key, vm)
        } else {
            let error = crate::types::py_trait::delitem_unsupported(
                &PyTrait::py_type(self, vm),
                &self.py_type_name(vm),
                &key,
                vm,
            );
            key.drop_with(vm);
            Err(error)
        }
    }

    fn py_is_iterator(&self, vm: &VM<'_>) -> bool {
        // No immediate value is an iterator; interned `str`/`bytes` are iterable
        // but, as in CPython, are not their own iterators.
        match self {
            Self::Ref(id) => vm.heap.read(*id).py_is_iterator(vm),
            _ => false,
        }
    }

    fn py_is_iterable(&self, vm: &VM<'_>) -> bool {
        match self {
            // Interned string and bytes literals iterate without ever reaching
            // the heap, so they answer here rather than in `HeapReadOutput`.
            Self::InternString(_) | Self::InternBytes(_) => true,
            Self::Ref(id) => vm.heap.read(*id).py_is_iterable(vm),
            _ => false,
        }
    }

    fn py_iter(&self, vm: &mut VM<'_>) -> RunResult<CallResult> {
        if let Self::Ref(id) = self {
            vm.heap.read(*id).py_iter(vm)
        } else {
            match self {
                Self::InternString(id) => Ok(CallResult::Value(StringIterator::from_intern(*id, vm))),
                Self::InternBytes(id) => Ok(CallResult::Value(BytesIterator::from_intern(*id, vm))),
                _ => Err(ExcType::type_error_not_iterable(&self.py_type_name(vm))),
            }
        }
    }

    fn py_next(&mut self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        if let Self::Ref(id) = self {
            vm.heap.read(*id).py_next(vm)
        } else {
            Err(ExcType::type_error_not_iterator(&self.py_type_name(vm)))
        }
    }
}

/// Orders two heap values of the same kind: long ints, strings, bytes, sequences and
/// temporal values; `Incomparable` for any other pair.
///
/// Separate from `py_cmp` so its read guards are released before the caller's
/// `Decimal` fallback, which needs the heap mutably.
fn cmp_heap_pair(id1: HeapId, id2: HeapId, vm: &mut VM<'_>) -> RunResult<CmpOrder> {
    match (vm.heap.read(id1), vm.heap.read(id2)) {
        (HeapReadOutput::LongInt(a), HeapReadOutput::LongInt(b)) => {
            Ok(CmpOrder::Ordered(a.get(vm.heap).inner().cmp(b.get(vm.heap).inner())))
        }
        (HeapReadOutput::Str(a), HeapReadOutput::Str(b)) => {
            Ok(CmpOrder::Ordered(a.get(vm.heap).as_str().cmp(b.get(vm.heap).as_str())))
        }
        (HeapReadOutput::Bytes(a), HeapReadOutput::Bytes(b)) => Ok(CmpOrder::Ordered(
            a.get(vm.heap).as_slice().cmp(b.get(vm.heap).as_slice()),
        )),
        (HeapReadOutput::Tuple(a), HeapReadOutput::Tuple(b)) => a.py_cmp(&b, vm),
        // A namedtuple orders like the tuple it subclasses, including
        // against a plain tuple in either direction. Both sides are
        // cloned first because the comparison needs `&mut VM`, which
        // cannot coexist with two live `HeapRead`s.
        (HeapReadOutput::NamedTuple(a), HeapReadOutput::NamedTuple(b)) => {
            let (a, b) = (a.cloned_items(vm)?, b.cloned_items(vm)?);
            cmp_item_seqs(a, b, vm)
        }
        (HeapReadOutput::NamedTuple(a), HeapReadOutput::Tuple(b)) => {
            let (a, b) = (a.cloned_items(vm)?, b.cloned_items(vm)?);
            cmp_item_seqs(a, b, vm)
        }
        (HeapReadOutput::Tuple(a), HeapReadOutput::NamedTuple(b)) => {
            let (a, b) = (a.cloned_items(vm)?, b.cloned_items(vm)?);
            cmp_item_seqs(a, b, vm)
        }
        (HeapReadOutput::List(a), HeapReadOutput::List(b)) => a.py_cmp(&b, vm),
        (HeapReadOutput::Deque(a), HeapReadOutput::Deque(b)) => a.py_cmp(&b, vm),
        (HeapReadOutput::Date(a), HeapReadOutput::Date(b)) => {
            Ok(CmpOrder::from_total(a.get(vm.heap).partial_cmp(b.get(vm.heap))))
        }
        (HeapReadOutput::DateTime(a), HeapReadOutput::DateTime(b)) => a.py_cmp(&b, vm),
        (HeapReadOutput::Time(a), HeapReadOutput::Time(b)) => a.py_cmp(&b, vm),
        (HeapReadOutput::TimeDelta(a), HeapReadOutput::TimeDelta(b)) => {
            Ok(CmpOrder::from_total(a.get(vm.heap).partial_cmp(b.get(vm.heap))))
        }
        // chainbox patch: paths order (`sorted(paths)`), see `Path`'s `py_cmp`.
        (HeapReadOutput::Path(a), HeapReadOutput::Path(b)) => a.py_cmp(&b, vm),
        _ => Ok(CmpOrder::Incomparable),
    }
}

/// The ordering of a pair with a `Decimal` operand, `Incomparable` for any other pair.
///
/// Tried only once the common types have missed, keeping them off this check.
fn decimal_cmp_or_incomparable(lhs: &Value, rhs: &Value, vm: &mut VM<'_>) -> RunResult<CmpOrder> {
    Ok(decimal::py::cmp_order(lhs, rhs, vm)?.unwrap_or(CmpOrder::Incomparable))
}

/// `Value` releases its (possible) heap reference through any [`ContainsHeap`]
/// context — `Heap`, `HeapReader`, `VM`, or the json `Encoder`. Forwards to the
/// inherent [`Value::drop_with`], which also serves direct callers.
impl<C: ContainsHeap> DropWithContext<C> for Value {
    #[inline]
    fn drop_with(self, ctx: &mut C) {
        // Resolves to the inherent `Value::drop_with` (inherent methods take
        // priority), not this trait method — so no recursion.
        Self::drop_with(self, ctx);
    }
}

/// The `def` or lambda behind a function value a script holds: the
/// function itself, as a closure or with defaults, or bound to an instance.
fn script_function_id(value: &Value, vm: &VM<'_>) -> Option<FunctionId> {
    match value {
        Value::DefFunction(func_id) => Some(*func_id),
        Value::Ref(heap_id) => match vm.heap.get(*heap_id) {
            HeapData::Closure(Closure { func_id, .. })
            | HeapData::FunctionDefaults(FunctionDefaults { func_id, .. }) => Some(*func_id),
            HeapData::BoundMethod(method) => script_function_id(&method.func, vm),
            _ => None,
        },
        _ => None,
    }
}

/// A function's `__name__` or `__qualname__`, as CPython gives them, or `None`
/// for another attribute or a value that is not a function. Covers what a
/// script can hold as a function: a `def` or lambda (also as a closure or with
/// defaults, and bound to an instance), a builtin and a module's function.
fn function_name_attr(value: &Value, attr: &EitherStr, vm: &mut VM<'_>) -> Option<Value> {
    let qualified = match attr.as_str(vm.interns) {
        "__name__" => false,
        "__qualname__" => true,
        _ => return None,
    };
    if let Some(func_id) = script_function_id(value, vm) {
        let function = vm.interns.get_function(func_id);
        return Some(Value::InternString(if qualified {
            function.qualname
        } else {
            function.name.name_id
        }));
    }
    let name = match value {
        // A tool: CPython's guest makes each one a module-level function.
        Value::Ref(heap_id) => match vm.heap.get(*heap_id) {
            HeapData::ExtFunction(tool) => tool.as_str().to_owned(),
            _ => return None,
        },
        Value::Builtin(Builtins::Function(function)) => function.to_string(),
        // chainbox patch: an exception class (`type(e).__name__`, now that
        // `type(e)` is the class its name is bound to): the name without
        // its module (`re.PatternError` is `PatternError`).
        Value::Builtin(Builtins::ExcType(exc_type)) => {
            let name = exc_type.to_string();
            name.rsplit('.').next().map_or_else(String::new, str::to_owned)
        }
        // `random`'s functions are the methods of a hidden `Random` instance.
        Value::ModuleFunction(function @ ModuleFunctions::Random(_)) if qualified => format!("Random.{function}"),
        Value::ModuleFunction(function) => function.to_string(),
        _ => return None,
    };
    Some(allocate_string(name, vm.heap))
}

/// How CPython's call errors name the callee (its `_PyObject_FunctionStr`):
/// a script's function or class as `__main__.<qualname>`, a module's
/// function as `json.dumps`, a builtin as `print`. Used where CPython
/// names the function an argument list was being built for (`f(*5)`,
/// `f(**5)`, a keyword given twice through `**`). `None` for a value this
/// does not know how to name, so the caller keeps its call-site name.
pub(crate) fn callee_display(value: &Value, vm: &VM<'_>) -> Option<String> {
    if let Some(func_id) = script_function_id(value, vm) {
        let qualname = vm.interns.get_str(vm.interns.get_function(func_id).qualname);
        return Some(format!("__main__.{qualname}"));
    }
    match value {
        Value::Ref(heap_id) => match vm.heap.get(*heap_id) {
            HeapData::Class(class) => Some(format!("__main__.{}", class.name().as_str(vm.interns))),
            // A tool is a host function with no module, like a builtin.
            HeapData::ExtFunction(tool) => Some(tool.as_str().to_owned()),
            _ => None,
        },
        Value::Builtin(Builtins::Function(function)) => Some(function.to_string()),
        Value::Builtin(Builtins::Type(type_)) => type_.builtin_name().map(str::to_owned),
        Value::Builtin(Builtins::ExcType(exc_type)) => Some(exc_type.to_string()),
        Value::ModuleFunction(function) => function.module_qualifier().map(|module| format!("{module}.{function}")),
        _ => None,
    }
}

/// [`callee_display`] for a method call `receiver.name(...)`, which monty
/// resolves only when it calls: a script's method by the function its class
/// holds, a module's function by the module's attribute, and a builtin
/// type's method as `list.sort`.
pub(crate) fn method_callee_display(receiver: &Value, name: &str, vm: &VM<'_>) -> String {
    let member = match receiver {
        Value::Ref(heap_id) => match vm.heap.get(*heap_id) {
            HeapData::Instance(instance) => match vm.heap.get(instance.class()) {
                HeapData::Class(class) => class.namespace().get_by_str(name, vm.heap, vm.interns),
                _ => None,
            },
            HeapData::Module(module) => module.attrs().get_by_str(name, vm.heap, vm.interns),
            _ => None,
        },
        _ => None,
    };
    member
        .and_then(|member| callee_display(member, vm))
        .unwrap_or_else(|| format!("{}.{name}", receiver.py_type_name(vm)))
}

impl Value {
    /// Opens a Python-type view without copying heap payloads or borrowing this owner.
    /// Drop the view before releasing the owning `Value`, so its heap readers are gone at cleanup.
    pub(crate) fn py_value<'h>(&self, vm: &VM<'h>) -> PyValue<'h> {
        match self {
            Self::InternString(id) => PyValue::Str(PyStr::Interned(*id)),
            Self::InternBytes(id) => PyValue::Bytes(PyBytes::Interned(*id)),
            Self::Int(value) => PyValue::Int(PyInt::Small(*value)),
            Self::InternLongInt(id) => PyValue::Int(PyInt::Interned(*id)),
            Self::Ref(id) => vm.heap.read(*id).into(),
            Self::Undefined => PyValue::Undefined,
            Self::Ellipsis => PyValue::Ellipsis,
            Self::NotImplemented => PyValue::NotImplemented,
            Self::None => PyValue::None,
            Self::Bool(value) => PyValue::Bool(*value),
            Self::Float(value) => PyValue::Float(*value),
            Self::Builtin(value) => PyValue::Builtin(*value),
            Self::ModuleFunction(value) => PyValue::ModuleFunction(*value),
            Self::DefFunction(id) => PyValue::DefFunction(*id),
            Self::Marker(value) => PyValue::Marker(*value),
            Self::Property(value) => PyValue::Property(*value),
            #[cfg(feature = "memory-model-checks")]
            Self::Dereferenced => panic!("Cannot access Dereferenced object"),
        }
    }

    /// Returns the Python `Type` for this value using only `&Heap` (no full VM borrow).
    ///
    /// Wraps [`py_type_shallow`](Self::py_type_shallow) for immediate values and
    /// delegates to [`HeapData::py_type`] for `Value::Ref`. Useful in code paths
    /// that need a type label (e.g. CPython-style "argument N must be X, not Y"
    /// errors) but don't have a `&VM` handy — notably the macro-generated
    /// `from_args` bodies, which are passed `heap` + `interns` rather than a VM.
    #[must_use]
    pub(crate) fn py_type_heap(&self, heap: &Heap) -> Type {
        match self {
            Self::Ref(id) => heap.get(*id).py_type(),
            _ => self.py_type_shallow(),
        }
    }

    /// Resolved display name of this value's type for error messages and
    /// reprs — user-class instances, named tuples, and host class instances
    /// render as their real class name rather than a generic placeholder.
    ///
    /// The result borrows only `vm.interns` (never the heap), so it can be
    /// captured before `drop_with` cleanup and formatted after.
    #[must_use]
    pub(crate) fn py_type_name<'h>(&self, vm: &VM<'h>) -> Cow<'h, str> {
        self.dynamic_class_name(vm.heap, vm.interns)
            .unwrap_or_else(|| self.py_type(vm).name(vm.heap, vm.interns))
    }

    /// [`py_type_name`](Self::py_type_name) for contexts without a `&VM` —
    /// notably the macro-generated `from_args` bodies, which are passed
    /// `heap` + `interns` instead (mirrors [`py_type_heap`](Self::py_type_heap)).
    #[must_use]
    pub(crate) fn py_type_name_heap<'i>(&self, heap: &Heap, interns: &'i Interns) -> Cow<'i, str> {
        self.dynamic_class_name(heap, interns)
            .unwrap_or_else(|| self.py_type_heap(heap).name(heap, interns))
    }

    /// Class name to use in error messages when [`Type`] does not carry it:
    /// a named tuple, a host class instance, or a `random.Random`.
    ///
    /// Named tuples and host classes keep their class name in the heap entry
    /// (unlike `Type::Instance`, whose payload is the refcounted class
    /// object), so messages name the class (`'P'`, `'Point'`) rather than
    /// the generic `'namedtuple'` / `'HostClass'`, matching CPython. That
    /// includes structseqs, whose stored name is already the qualified
    /// `sys.version_info`. `Random` is the reverse case: its `Type` name is
    /// the qualified `random.Random`, but messages use the bare class name.
    #[must_use]
    fn dynamic_class_name<'i>(&self, heap: &Heap, interns: &'i Interns) -> Option<Cow<'i, str>> {
        let Self::Ref(heap_id) = self else {
            return None;
        };
        let name = match heap.get(*heap_id) {
            HeapData::NamedTuple(nt) => nt.name_either(),
            HeapData::HostClass(hc) => host_class_type(heap, hc.class_id()).name_either(),
            // A Python class in CPython, so messages carry the bare name and
            // only `repr(type(x))` the module-qualified one.
            HeapData::Random(_) => return Some(Cow::Borrowed("Random")),
            _ => return None,
        };
        Some(name.to_cow(interns))
    }

    /// Returns the Python `Type` for immediate (non-heap) values without VM access.
    ///
    /// For `Value::Ref` variants this cannot determine the concrete type (that requires
    /// reading from the heap), so it falls back to `Type::NoneType` as a sentinel.
    /// Callers handling `Ref` should use `HeapData::py_type()` on the resolved data instead.
    #[must_use]
    pub(crate) fn py_type_shallow(&self) -> Type {
        match self {
            Self::Undefined | Self::None => Type::NoneType,
            Self::Ellipsis => Type::Ellipsis,
            Self::NotImplemented => Type::NotImplementedType,
            Self::Bool(_) => Type::Bool,
            Self::Int(_) | Self::InternLongInt(_) => Type::Int,
            Self::Float(_) => Type::Float,
            Self::InternString(_) => Type::Str,
            Self::InternBytes(_) => Type::Bytes,
            Self::Builtin(_) => Type::BuiltinFunction,
            Self::ModuleFunction(_) | Self::DefFunction(_) => Type::Function,
            Self::Marker(m) => m.py_type(),
            Self::Property(_) => Type::Property,
            Self::Ref(_) => Type::NoneType, // callers should resolve Ref via HeapData::py_type()
            #[cfg(feature = "memory-model-checks")]
            Self::Dereferenced => Type::NoneType,
        }
    }

    /// Returns this value's complete structural identity.
    ///
    /// Immediate values retain Monty's value-derived identity, while heap objects
    /// use their arena index.
    pub(crate) fn id(&self) -> Identity {
        Identity::new(self)
    }

    /// Returns the Ref ID if this value is a reference, otherwise returns None.
    pub fn ref_id(&self) -> Option<HeapId> {
        match self {
            Self::Ref(id) => Some(*id),
            _ => None,
        }
    }

    /// Consumes this Value as a reference, returning the contained HeapId otherwise returns None.
    ///
    /// The caller is responsible for ensuring the `HeapId` is properly decref'd.
    pub fn into_ref_id(self) -> Option<HeapId> {
        match self {
            Self::Ref(id) => {
                #[cfg(feature = "memory-model-checks")]
                {
                    // Mark the value as dereferenced to prevent double-free
                    mem::forget(self);
                }
                Some(id)
            }
            _ => None,
        }
    }

    /// Python-visible `is` operator using complete structural identity.
    ///
    /// Values compare using their full immediate or arena identity.
    pub fn is(&self, other: &Self) -> bool {
        self.id() == other.id()
    }

    /// Whether this value is Python's `NotImplemented` singleton.
    #[must_use]
    pub(crate) fn is_not_implemented(&self) -> bool {
        matches!(self, Self::NotImplemented)
    }

    /// Equality as containers perform it: identity before user equality.
    pub fn py_eq(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<bool> {
        if self.is(other) {
            Ok(true)
        } else {
            self.py_eq_operator(other, vm)
        }
    }

    /// Python's `==` operator normalized to a boolean.
    pub fn py_eq_operator(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<bool> {
        let result = self.py_rich_eq(other, vm)?;
        defer_drop!(result, vm);
        result.py_bool(vm)
    }

    /// Direct Python `==`, preserving any arbitrary value returned by `__eq__`.
    ///
    /// Tries the left operand, then reflected equality when it returns
    /// `NotImplemented`; identity is only the final fallback after both decline.
    pub(crate) fn py_rich_eq(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        let lhs_result = self.py_rich_eq_impl(other, vm)?;
        if !lhs_result.is_not_implemented() {
            return Ok(lhs_result);
        }

        let rhs_result = other.py_rich_eq_impl(self, vm)?;
        if !rhs_result.is_not_implemented() {
            return Ok(rhs_result);
        }

        Ok(Self::Bool(self.is(other)))
    }

    /// Runs one side of rich equality, using `NotImplemented` to request reflected dispatch.
    fn py_rich_eq_impl(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        if let Self::Ref(id) = self
            && matches!(vm.heap.get(*id), HeapData::Instance(_))
        {
            if let Some(result) = instance_user_eq(*id, other, vm)? {
                Ok(result)
            } else if self.is(other) {
                Ok(Self::Bool(true))
            } else {
                Ok(Self::NotImplemented)
            }
        } else if let Some(result) = self.py_eq_impl(other, vm)? {
            Ok(Self::Bool(result))
        } else {
            Ok(Self::NotImplemented)
        }
    }

    /// Acquires and validates an iterator, allowing user `__iter__` methods to suspend.
    /// Rust consumers which cannot yield must explicitly require synchronous completion.
    pub fn py_iter(&self, vm: &mut VM<'_>) -> RunResult<CallResult> {
        <Self as PyTrait<'_>>::py_iter(self, vm)
    }

    /// Advances this value synchronously for native iterator consumers.
    pub(crate) fn py_next(&mut self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        <Self as PyTrait<'_>>::py_next(self, vm)
    }

    /// Converts an owned value into its Python iterator and releases the original reference.
    ///
    /// This is the ownership-preserving entry point for Rust consumers of the
    /// iteration protocol; the pending call or resulting iterator retains its source as needed.
    pub(crate) fn into_py_iter(self, vm: &mut VM<'_>) -> RunResult<CallResult> {
        let iterator = self.py_iter(vm);
        self.drop_with(vm);
        iterator
    }

    /// Creates a scoped view that retains this value's heap reader when needed.
    pub(crate) fn read<'h, 'v>(&'v self, vm: &VM<'h>) -> ValueRead<'h, 'v> {
        match self {
            Self::Ref(id) => ValueRead::Heap {
                value: vm.heap.read(*id),
                steps: 0,
            },
            _ => ValueRead::Immediate(self),
        }
    }

    /// Reads the heap entry this value references, or `None` if it is not a
    /// heap reference.
    ///
    /// Used by per-type [`PyTrait::py_eq_impl`] impls to resolve the other operand
    /// to a heap object of their own type, returning `NotImplemented` otherwise.
    pub(crate) fn read_heap<'a>(&self, vm: &VM<'a>) -> Option<HeapReadOutput<'a>> {
        match self {
            Self::Ref(id) => Some(vm.heap.read(*id)),
            _ => None,
        }
    }

    /// Computes the hash value for this value, used for dict keys.
    ///
    /// Returns `Ok(Some(hash))` for hashable types (immediate values and immutable heap types).
    /// Returns `Ok(None)` for unhashable types (list, dict).
    /// Returns `Err(ResourceError::Recursion)` if the recursion limit is exceeded
    /// while hashing deeply nested containers (e.g., tuples of tuples).
    ///
    /// For heap-allocated values (Ref variant), this computes the hash lazily
    /// on first use and caches it for subsequent calls.
    pub fn py_hash(&self, vm: &mut VM<'_>) -> RunResult<Option<HashValue>> {
        // The hot arms (int/str/ref) return precomputed or cached hashes; only the
        // cold arms construct a hasher, via `hash_one`.
        match self {
            Self::InternString(string_id) => Ok(Some(vm.interns.str_hash(*string_id))),
            Self::InternBytes(bytes_id) => Ok(Some(vm.interns.bytes_hash(*bytes_id))),
            Self::InternLongInt(long_int_id) => Ok(Some(vm.interns.long_int_hash(*long_int_id))),
            // Bool and int hash directly as their value, and are equivalent
            Self::Bool(b) => Ok(Some(HashValue::new((*b).into()))),
            // chainbox patch (CHAINBOX.md)
            Self::Int(i) => Ok(Some(hash_i64(*i))),
            Self::Float(f) => Ok(Some(hash_f64(*f))),
            // For heap-allocated values, dispatch to the per-type `py_hash`
            // impl. Types that benefit from caching (Str/Bytes/Tuple/
            // NamedTuple/FrozenSet/Path) carry an inline `cached_hash`;
            // cheap-to-hash types recompute each call.
            Self::Ref(id) => vm.heap.read(*id).py_hash(vm),
            // Values with no heap identity hash by name, never by discriminant:
            // dict and set entries persist their hash, so a hash tied to an
            // enum's declaration order would break lookups in older dumps.
            Self::Undefined => Ok(Some(hash_named("singleton", "Undefined"))),
            Self::Ellipsis => Ok(Some(hash_named("singleton", "Ellipsis"))),
            Self::NotImplemented => Ok(Some(hash_named("singleton", "NotImplemented"))),
            // chainbox patch: CPython's constant, as the order of a set holding None shows.
            Self::None => Ok(Some(hash_none())),
            Self::Builtin(Builtins::Function(function)) => Ok(Some(hash_named("builtin", (*function).into()))),
            Self::Builtin(Builtins::ExcType(exc_type)) => Ok(Some(hash_named("type", (*exc_type).into()))),
            // an instance's class is a heap object, hashed by identity like its instances
            Self::Builtin(Builtins::Type(Type::Instance(class_id))) => Ok(Some(identity_hash(*class_id))),
            Self::Builtin(Builtins::Type(ty)) => Ok(Some(hash_named("type", &ty.name(vm.heap, vm.interns)))),
            // the `Debug` form carries the module too, so `time.sleep` and `asyncio.sleep` differ
            Self::ModuleFunction(function) => Ok(Some(hash_named("module_function", &format!("{function:?}")))),
            // Hash functions based on function ID
            Self::DefFunction(f_id) => Ok(Some(hash_one(f_id))),
            Self::Marker(marker) => Ok(Some(hash_named("marker", marker.0.into()))),
            Self::Property(property) => Ok(Some(hash_named("property", property.name()))),
            #[cfg(feature = "memory-model-checks")]
            Self::Dereferenced => panic!("Cannot access Dereferenced object"),
        }
    }

    /// Checks if `item` is contained in `self` (the container) — Python's `in`.
    ///
    /// Type-specific logic lives on each type's [`PyTrait::py_contains_impl`]; this
    /// resolves the value and applies CPython's protocol order: a type's own
    /// containment first (`sq_contains`), then consuming it by iteration
    /// (`tp_iter`), then `TypeError`.
    pub fn py_contains(&self, item: &Self, vm: &mut VM<'_>) -> RunResult<bool> {
        let result = self.py_value(vm).py_contains_impl(item, vm)?;
        match result {
            Some(found) => Ok(found),
            None if self.py_is_iterable(vm) => self.contains_by_iteration(item, vm),
            None => Err(ExcType::type_error_not_container(&self.py_type_name(vm))),
        }
    }

    /// Consumes `self` as an iterable, reporting whether `item` compares equal
    /// to any element — the `in` fallback for anything without `__contains__`.
    ///
    /// Only called for values already known to be iterable, so it does not
    /// re-check. An endless iterable runs until a resource limit fires.
    fn contains_by_iteration(&self, item: &Self, vm: &mut VM<'_>) -> RunResult<bool> {
        let iter = self.py_iter(vm)?.require_synchronous(vm)?;
        defer_drop!(iter, vm);
        let mut iter = iter.read(vm);
        loop {
            let Some(el) = iter.py_next(vm)? else {
                break Ok(false);
            };
            let eq = item.py_eq(&el, vm);
            el.drop_with(vm);
            if eq? {
                break Ok(true);
            }
        }
    }

    /// Gets an attribute from this value.
    ///
    /// Dispatches to `py_getattr` on the underlying types where appropriate.
    /// Accepts `EitherStr` to support both interned and heap-allocated attribute names.
    ///
    /// Returns `AttributeError` for other types or unknown attributes.
    pub fn py_getattr(&self, attr: &EitherStr, vm: &mut VM<'_>) -> RunResult<CallResult> {
        match self {
            // Instances resolve attributes (instance dict → class methods/vars,
            // binding methods) in a dedicated path that has the heap id needed to
            // build bound methods.
            Self::Ref(heap_id) if matches!(vm.heap.get(*heap_id), HeapData::Instance(_)) => {
                return instance_getattr(*heap_id, attr, vm);
            }
            // chainbox patch: every object's `__class__` is its type, as
            // `type(x)` (upstream: instances only, so `e.__class__.__name__`
            // in an `except` clause was an AttributeError).
            _ if attr.as_str(vm.interns) == "__class__" => {
                return Ok(CallResult::Value(crate::builtins::type_of_ref(vm, self)));
            }
            Self::Ref(heap_id) => {
                if let Some(call_result) = vm.heap.read(*heap_id).py_getattr(attr, vm)? {
                    return Ok(call_result);
                }
                // CPython names the module, not its type, for a missing module attribute.
                if let HeapData::Module(module) = vm.heap.get(*heap_id) {
                    return Err(ExcType::attribute_error_module(
                        module.name_str(vm.interns),
                        attr.as_str(vm.interns),
                    ));
                }
            }
            // Type objects (`list`, `date`, `chain`) answer for themselves:
            // `__name__`, class constants and the members handed out as values
            // all live with the type, including the `AttributeError`.
            Self::Builtin(Builtins::Type(t)) => {
                return match t.class_getattr(attr, vm) {
                    Some(value) => Ok(CallResult::Value(value)),
                    None => Err(t.attribute_error(attr, vm)),
                };
            }
            _ => {}
        }
        // chainbox patch: the data attributes of numbers (`n.real`, `x.imag`).
        if let Some(value) = number_methods::number_attribute(self, attr, vm) {
            return Ok(CallResult::Value(value));
        }
        // Functions have no attributes of their own in monty but their names,
        // looked up last so that no other attribute pays for them.
        if let Some(name) = function_name_attr(self, attr, vm) {
            return Ok(CallResult::Value(name));
        }
        let type_name = self.py_type_name(vm);
        Err(ExcType::attribute_error(type_name, attr.as_str(vm.interns)))
    }

    /// Sets an attribute, consuming `value` on both success and error.
    pub fn py_set_attr(&self, name: &EitherStr, value: Self, vm: &mut VM<'_>) -> RunResult<()> {
        if let Self::Ref(heap_id) = self {
            vm.heap.read(*heap_id).py_set_attr(name, value, vm)
        } else {
            value.drop_with(vm);
            // chainbox patch: a number's attributes are read-only or not writable.
            if let Some(receiver) = number_methods::number_type(self, vm) {
                return Err(number_methods::number_attribute_write_error(receiver, name, vm));
            }
            let type_name = self.py_type_name(vm);
            Err(ExcType::attribute_error_no_setattr(&type_name, name.as_str(vm.interns)))
        }
    }

    /// chainbox patch: `del obj.attr`. Instances and classes delete from
    /// their namespace; every other object's attributes are fixed, and
    /// CPython's error names an existing one read-only (a method) or not
    /// writable (a data attribute), any other as missing with no `__dict__`.
    pub fn py_del_attr(&self, name: &EitherStr, vm: &mut VM<'_>) -> RunResult<()> {
        if let Self::Ref(heap_id) = self
            && matches!(vm.heap.get(*heap_id), HeapData::Instance(_) | HeapData::Class(_))
        {
            return vm.heap.read(*heap_id).py_del_attr(name, vm);
        }
        // chainbox patch: as `py_set_attr`, for numbers.
        if let Some(receiver) = number_methods::number_type(self, vm) {
            return Err(number_methods::number_attribute_write_error(receiver, name, vm));
        }
        let type_name = self.py_type_name(vm).into_owned();
        let attr = name.as_str(vm.interns).to_owned();
        let message = match self.py_getattr(name, vm) {
            Ok(CallResult::Value(value)) => {
                let method = matches!(PyTrait::py_type(&value, vm), Type::BuiltinFunction);
                value.drop_with(vm);
                if method {
                    format!("'{type_name}' object attribute '{attr}' is read-only")
                } else {
                    format!("attribute '{attr}' of '{type_name}' objects is not writable")
                }
            }
            Ok(other) => {
                other.drop_with(vm);
                return Err(ExcType::attribute_error_no_setattr(&type_name, &attr));
            }
            Err(_) => return Err(ExcType::attribute_error_no_setattr(&type_name, &attr)),
        };
        Err(SimpleException::new_msg(ExcType::AttributeError, message).into())
    }

    /// Extracts an integer value from the Value.
    ///
    /// Accepts `Int`, `Bool` (True=1, False=0) and `LongInt` (if it fits in
    /// i64), and falls back to a user `__index__` — CPython's `PyNumber_Index`,
    /// which is what every "cannot be interpreted as an integer" consumer uses.
    /// Returns a `TypeError` for other types and an `OverflowError` if the value
    /// is too large.
    ///
    /// Takes `&mut VM` because `__index__` re-enters the interpreter; it runs
    /// synchronously, so one calling an external/OS function raises rather than
    /// suspending (see `limitations/classes.md`).
    ///
    /// Note: The LongInt-to-i64 conversion path is defensive code. In normal execution,
    /// heap-allocated `LongInt` values always exceed i64 range because `LongInt::into_value()`
    /// automatically demotes i64-fitting values to `Value::Int`. However, this path could be
    /// reached via deserialization of crafted snapshot data.
    pub fn as_int(&self, vm: &mut VM<'_>) -> RunResult<i64> {
        self.as_int_with_overflow(vm, ExcType::overflow_c_ssize_t)
    }

    /// Returns an owned integer through `__index__` without narrowing its magnitude.
    pub(crate) fn py_index(&self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.py_index_impl(vm)?
            .ok_or_else(|| ExcType::type_error_not_integer(&self.py_type_name(vm)))
    }

    /// Converts an index to `i64`, saturating rather than raising on overflow.
    pub(crate) fn saturating_index(&self, vm: &mut VM<'_>) -> RunResult<i64> {
        let index = self.py_index(vm)?;
        defer_drop!(index, vm);
        Ok(match index {
            Self::Int(n) => *n,
            Self::Bool(b) => i64::from(*b),
            _ => {
                let n = index.as_long_int(vm).expect("py_index returned an integer");
                n.to_i64()
                    .unwrap_or_else(|| if n.is_negative() { i64::MIN } else { i64::MAX })
            }
        })
    }

    /// Numeric float conversion, trying `__float__` before `__index__`.
    /// Leaves unsupported-type errors to the consumer and never parses strings.
    pub(crate) fn py_float(&self, vm: &mut VM<'_>) -> RunResult<Option<f64>> {
        if let Some(value) = self.py_float_impl(vm)? {
            Ok(Some(value))
        } else if let Some(index) = self.py_index_impl(vm)? {
            defer_drop!(index, vm);
            index.py_float_impl(vm)
        } else {
            Ok(None)
        }
    }

    /// [`Self::as_int`] with a caller-chosen overflow error.
    ///
    /// The width a value must fit is a property of the *consumer*, not of the
    /// coercion: CPython's clinic `int` parameters (`str.expandtabs`'s
    /// `tabsize`) report `... to C int` where an `ssize_t` parameter reports
    /// `... to C ssize_t`, at every magnitude and through `__index__` alike.
    /// Callers narrower than `i64` still range-check the result themselves —
    /// this only makes the message theirs to choose.
    pub(crate) fn as_int_with_overflow(&self, vm: &mut VM<'_>, on_overflow: fn() -> RunError) -> RunResult<i64> {
        match self {
            // Fast path for the common case; `py_index_impl` answers identically
            // for a plain `int`, just via a clone the caller then drops.
            Self::Int(i) => Ok(*i),
            // Everything else is either `__index__`-able — `bool` and `LongInt`
            // included, since both are ints — or a type error, and the protocol
            // answers which without this arm inspecting the heap.
            _ => {
                if let Some(index) = self.py_index_impl(vm)? {
                    Self::narrow_index_to_i64(index, vm, on_overflow)
                } else {
                    let msg = format!("'{}' object cannot be interpreted as an integer", self.py_type_name(vm));
                    Err(SimpleException::new_msg(ExcType::TypeError, msg).into())
                }
            }
        }
    }

    /// Extracts an index value for sequence operations.
    ///
    /// Accepts `Int`, `Bool` (True=1, False=0), and `LongInt` (if it fits in
    /// i64), and falls back to a user `__index__` as CPython's subscript path
    /// does. Returns a `TypeError` for other types with the container type name
    /// included, and an `IndexError` if the value is too large to use as an index.
    ///
    /// Takes `&mut VM` for the same reason as [`Self::as_int`].
    ///
    /// Note: The LongInt-to-i64 conversion path is defensive code. In normal execution,
    /// heap-allocated `LongInt` values always exceed i64 range because `LongInt::into_value()`
    /// automatically demotes i64-fitting values to `Value::Int`. However, this path could be
    /// reached via deserialization of crafted snapshot data.
    pub fn as_index(&self, vm: &mut VM<'_>, container_type: Type) -> RunResult<i64> {
        match self {
            Self::Int(i) => Ok(*i),
            // Shaped like [`Self::as_int`]'s fallback, differing only in messages.
            _ => match self.py_index_impl(vm)? {
                Some(index) => {
                    // Resolved before narrowing because the closure cannot hold
                    // `vm` while `narrow_index_to_i64` borrows it mutably. CPython
                    // names the *original* object, so an over-large `__index__`
                    // result reports the class, not the `int` it returned.
                    let name = self.py_type_name(vm).into_owned();
                    Self::narrow_index_to_i64(index, vm, move || ExcType::index_error_cannot_fit(&name))
                }
                None => Err(ExcType::type_error_indices(container_type, &self.py_type_name(vm))),
            },
        }
    }

    /// Narrows an `__index__` result to `i64`, consuming it.
    ///
    /// Shared by [`Self::as_int`] and [`Self::as_index`], which disagree on the
    /// overflow message (`OverflowError` vs `IndexError`), hence `on_overflow`.
    /// The value is already validated as an int by [`PyTrait::py_index_impl`],
    /// so the non-int arms are unreachable.
    fn narrow_index_to_i64(index: Self, vm: &mut VM<'_>, on_overflow: impl FnOnce() -> RunError) -> RunResult<i64> {
        let converted = match &index {
            Self::Int(i) => Ok(*i),
            Self::Bool(b) => Ok(i64::from(*b)),
            Self::InternLongInt(id) => vm.interns.get_long_int(*id).to_i64().ok_or_else(on_overflow),
            Self::Ref(id) => match vm.heap.get(*id) {
                HeapData::LongInt(li) => li.to_i64().ok_or_else(on_overflow),
                _ => unreachable!("py_index_impl validated the result is an int"),
            },
            _ => unreachable!("py_index_impl validated the result is an int"),
        };
        index.drop_with(vm);
        converted
    }

    /// True when this is a `LongInt`-valued int (interned or heap-allocated)
    /// that is negative — lets fixed-width consumers pick the right overflow
    /// direction/message (`round`'s i64 clamp, `os`'s fd converter). False for
    /// every other value, `Int`/`Bool` included: pair it with
    /// [`is_long_int`](crate::args::is_long_int) rather than using it alone to
    /// classify an int.
    pub(crate) fn long_int_is_negative(&self, vm: &VM<'_>) -> bool {
        match self {
            Self::InternLongInt(id) => vm.interns.get_long_int(*id).sign() == Sign::Minus,
            Self::Ref(id) => matches!(vm.heap.get(*id), HeapData::LongInt(li) if li.is_negative()),
            _ => false,
        }
    }

    /// Saturating `i64` view of a `LongInt`-valued int (interned or
    /// heap-allocated), for the consumers that clamp rather than raise on
    /// overflow — slice bounds, where CPython clamps to the sequence so
    /// `[1, 2, 3][10**30:]` is `[]` rather than an error.
    ///
    /// Returns `None` for every other value, `Int`/`Bool` included, so callers
    /// keep their own fast paths for those. Do NOT use it for arguments that
    /// must reject out-of-range ints — [`Self::as_int`] and [`Self::as_index`]
    /// raise there instead.
    pub(crate) fn long_int_to_i64_saturating(&self, vm: &VM<'_>) -> Option<i64> {
        match self {
            Self::InternLongInt(id) => Some(saturating_i64(vm.interns.get_long_int(*id))),
            Self::Ref(id) => match vm.heap.get(*id) {
                HeapData::LongInt(li) => Some(saturating_i64(li.inner())),
                _ => None,
            },
            _ => None,
        }
    }

    /// Borrows the arbitrary-precision value of a `LongInt`-valued int (interned
    /// or heap-allocated). `None` for every other value, `Int`/`Bool` included,
    /// so callers keep their own fast paths for those.
    pub(crate) fn as_long_int<'a>(&self, vm: &'a VM<'_>) -> Option<&'a BigInt> {
        match self {
            Self::InternLongInt(id) => Some(vm.interns.get_long_int(*id)),
            Self::Ref(id) => match vm.heap.get(*id) {
                HeapData::LongInt(li) => Some(li.inner()),
                _ => None,
            },
            _ => None,
        }
    }

    /// Performs Python `+` with reflected-operation fallback.
    pub(crate) fn py_add(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        if let Some(result) = self.py_add_result(other, vm)? {
            Ok(result)
        } else {
            let lhs_type = self.py_type(vm);
            Err(ExcType::binary_type_error(
                "+",
                lhs_type,
                self.py_type_name(vm),
                other.py_type_name(vm),
            ))
        }
    }

    /// Tries direct and reflected addition without producing the final type error.
    pub(crate) fn py_add_result(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Option<Self>> {
        self.binary_op_result(
            other,
            vm,
            |vm| self.py_add_impl(other, vm),
            |vm| other.py_radd_impl(self, vm),
        )
    }

    /// Performs Python `-` with reflected-operation fallback.
    pub(crate) fn py_sub(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.binary_op(
            other,
            vm,
            |vm| self.py_sub_impl(other, vm),
            |vm| other.py_rsub_impl(self, vm),
            "-",
        )
    }

    /// Performs Python `*` with reflected-operation fallback.
    pub(crate) fn py_mul(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.binary_op(
            other,
            vm,
            |vm| self.py_mul_impl(other, vm),
            |vm| other.py_rmul_impl(self, vm),
            "*",
        )
    }

    /// Performs Python `@` with reflected-operation fallback.
    pub(crate) fn py_matmul(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.binary_op(
            other,
            vm,
            |vm| self.py_matmul_impl(other, vm),
            |vm| other.py_rmatmul_impl(self, vm),
            "@",
        )
    }

    /// Performs Python `/` with reflected-operation fallback.
    pub(crate) fn py_truediv(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.binary_op(
            other,
            vm,
            |vm| self.py_truediv_impl(other, vm),
            |vm| other.py_rtruediv_impl(self, vm),
            "/",
        )
    }

    /// Performs Python `//` with reflected-operation fallback.
    pub(crate) fn py_floordiv(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.binary_op(
            other,
            vm,
            |vm| self.py_floordiv_impl(other, vm),
            |vm| other.py_rfloordiv_impl(self, vm),
            "//",
        )
    }

    /// Performs Python `%` with reflected-operation fallback.
    pub(crate) fn py_mod(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.binary_op(
            other,
            vm,
            |vm| self.py_mod_impl(other, vm),
            |vm| other.py_rmod_impl(self, vm),
            "%",
        )
    }

    /// Performs Python `divmod()` with reflected-operation fallback.
    ///
    /// CPython spells the operator as `divmod()` in the `TypeError` an
    /// unsupported pair raises, so that is the name passed through.
    pub(crate) fn py_divmod(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.binary_op(
            other,
            vm,
            |vm| self.py_divmod_impl(other, vm),
            |vm| other.py_rdivmod_impl(self, vm),
            "divmod()",
        )
    }

    /// Performs Python `** or pow()` with reflected-operation fallback.
    pub(crate) fn py_pow(&self, other: &Self, modulus: Option<&Self>, vm: &mut VM<'_>) -> RunResult<Self> {
        let modulus = modulus.filter(|value| !matches!(value, Self::None));
        let result = self.binary_op_result(
            other,
            vm,
            |vm| self.py_pow_impl(other, modulus, vm),
            |vm| other.py_rpow_impl(self, modulus, vm),
        )?;
        if let Some(result) = result {
            Ok(result)
        } else if let Some(modulus) = modulus {
            // CPython also offers builtin numeric slots on the third operand
            // the triple. A user modulus does not dispatch its __pow__.
            if matches!(modulus, Self::Float(_)) {
                Err(ExcType::type_error_pow_modulo())
            } else if modulus.py_type(vm) == Type::Complex
                && [self, other]
                    .iter()
                    .all(|value| matches!(value.py_type(vm), Type::Int | Type::Bool | Type::Float | Type::Complex))
            {
                Err(ExcType::value_error_complex_modulo())
            } else {
                Err(ExcType::ternary_pow_type_error(
                    self.py_type_name(vm),
                    other.py_type_name(vm),
                    modulus.py_type_name(vm),
                ))
            }
        } else {
            Err(ExcType::binary_type_error(
                "** or pow()",
                self.py_type(vm),
                self.py_type_name(vm),
                other.py_type_name(vm),
            ))
        }
    }

    /// Performs Python `&` with reflected-operation fallback.
    pub(crate) fn py_and(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.binary_op(
            other,
            vm,
            |vm| self.py_and_impl(other, vm),
            |vm| other.py_rand_impl(self, vm),
            "&",
        )
    }

    /// Performs Python `|` with reflected-operation fallback.
    pub(crate) fn py_or(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.binary_op(
            other,
            vm,
            |vm| self.py_or_impl(other, vm),
            |vm| other.py_ror_impl(self, vm),
            "|",
        )
    }

    /// Performs Python `^` with reflected-operation fallback.
    pub(crate) fn py_xor(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.binary_op(
            other,
            vm,
            |vm| self.py_xor_impl(other, vm),
            |vm| other.py_rxor_impl(self, vm),
            "^",
        )
    }

    /// Performs Python `<<` with reflected-operation fallback.
    pub(crate) fn py_lshift(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.binary_op(
            other,
            vm,
            |vm| self.py_lshift_impl(other, vm),
            |vm| other.py_rlshift_impl(self, vm),
            "<<",
        )
    }

    /// Performs Python `>>` with reflected-operation fallback.
    pub(crate) fn py_rshift(&self, other: &Self, vm: &mut VM<'_>) -> RunResult<Self> {
        self.binary_op(
            other,
            vm,
            |vm| self.py_rshift_impl(other, vm),
            |vm| other.py_rrshift_impl(self, vm),
            ">>",
        )
    }

    /// chainbox patch: an augmented assignment that falls back to its binary
    /// operator (`x *= y` where `x` has no in-place form). The same protocol as
    /// the binary operator, but CPython's error names the augmented one:
    /// `unsupported operand type(s) for *=: 'NoneType' and 'int'`, `for **=`.
    pub(crate) fn py_augmented(&self, other: &Self, op: AugmentedOp, vm: &mut VM<'_>) -> RunResult<Self> {
        let symbol = op.symbol();
        match op {
            AugmentedOp::Sub => self.binary_op(
                other,
                vm,
                |vm| self.py_sub_impl(other, vm),
                |vm| other.py_rsub_impl(self, vm),
                symbol,
            ),
            AugmentedOp::Mul => self.binary_op(
                other,
                vm,
                |vm| self.py_mul_impl(other, vm),
                |vm| other.py_rmul_impl(self, vm),
                symbol,
            ),
            AugmentedOp::TrueDiv => self.binary_op(
                other,
                vm,
                |vm| self.py_truediv_impl(other, vm),
                |vm| other.py_rtruediv_impl(self, vm),
                symbol,
            ),
            AugmentedOp::FloorDiv => self.binary_op(
                other,
                vm,
                |vm| self.py_floordiv_impl(other, vm),
                |vm| other.py_rfloordiv_impl(self, vm),
                symbol,
            ),
            AugmentedOp::Mod => self.binary_op(
                other,
                vm,
                |vm| self.py_mod_impl(other, vm),
                |vm| other.py_rmod_impl(self, vm),
                symbol,
            ),
            AugmentedOp::Pow => self.binary_op(
                other,
                vm,
                |vm| self.py_pow_impl(other, None, vm),
                |vm| other.py_rpow_impl(self, None, vm),
                symbol,
            ),
            AugmentedOp::And => self.binary_op(
                other,
                vm,
                |vm| self.py_and_impl(other, vm),
                |vm| other.py_rand_impl(self, vm),
                symbol,
            ),
            AugmentedOp::Or => self.binary_op(
                other,
                vm,
                |vm| self.py_or_impl(other, vm),
                |vm| other.py_ror_impl(self, vm),
                symbol,
            ),
            AugmentedOp::Xor => self.binary_op(
                other,
                vm,
                |vm| self.py_xor_impl(other, vm),
                |vm| other.py_rxor_impl(self, vm),
                symbol,
            ),
            AugmentedOp::LShift => self.binary_op(
                other,
                vm,
                |vm| self.py_lshift_impl(other, vm),
                |vm| other.py_rlshift_impl(self, vm),
                symbol,
            ),
            AugmentedOp::RShift => self.binary_op(
                other,
                vm,
                |vm| self.py_rshift_impl(other, vm),
                |vm| other.py_rrshift_impl(self, vm),
                symbol,
            ),
        }
    }

    /// Applies the shared direct, reflected, then unsupported binary protocol.
    fn binary_op(
        &self,
        other: &Self,
        vm: &mut VM<'_>,
        direct: impl FnOnce(&mut VM<'_>) -> RunResult<Option<Self>>,
        reflected: impl FnOnce(&mut VM<'_>) -> RunResult<Option<Self>>,
        operator: &'static str,
    ) -> RunResult<Self> {
        if let Some(result) = self.binary_op_result(other, vm, direct, reflected)? {
            Ok(result)
        } else {
            let lhs_type = self.py_type(vm);
            let lhs_name = self.py_type_name(vm);
            // chainbox patch (CHAINBOX.md)
            let repeat = operator == "*" || operator == "*=";
            if repeat && lhs_type.has_sequence_repeat() {
                Err(ExcType::type_error_sequence_repeat(other.py_type_name(vm)))
            } else if repeat && other.py_type(vm).has_sequence_repeat() {
                Err(ExcType::type_error_sequence_repeat(lhs_name))
            } else {
                Err(ExcType::binary_type_error(
                    operator,
                    lhs_type,
                    lhs_name,
                    other.py_type_name(vm),
                ))
            }
        }
    }

    /// Tries numeric slots, suppressing reflected dispatch between instances of the same class.
    /// Builtin representations still need both sides: an immediate `int` can
    /// delegate to a heap `LongInt` even though both have Python type `int`.
    fn binary_op_result(
        &self,
        other: &Self,
        vm: &mut VM<'_>,
        direct: impl FnOnce(&mut VM<'_>) -> RunResult<Option<Self>>,
        reflected: impl FnOnce(&mut VM<'_>) -> RunResult<Option<Self>>,
    ) -> RunResult<Option<Self>> {
        if let Some(result) = direct(vm)? {
            Ok(Some(result))
        } else if matches!(self.py_type(vm), Type::Instance(_)) && self.py_type(vm) == other.py_type(vm) {
            Ok(None)
        } else {
            reflected(vm)
        }
    }

    /// Clones a value with proper heap reference counting.
    ///
    /// For immediate values (Int, Bool, None, etc.), this performs a simple copy.
    /// For heap-allocated values (Ref variant), this increments the reference count
    /// and returns a new reference to the same heap value.
    ///
    /// Takes `ContainsHeap` to allow directly passing the `VM` in many contexts. Where
    /// borrow checking creates conflicts, it may be preferred to pass `&Heap` directly
    /// (e.g. as `vm.heap` / `self.heap` etc.).
    ///
    /// # Important
    /// This method MUST be used instead of the derived `Clone` implementation to ensure
    /// proper reference counting. Using `.clone()` directly will bypass reference counting
    /// and cause memory leaks or double-frees.
    #[must_use]
    #[inline]
    pub fn clone_with_heap(&self, heap: &impl ContainsHeap) -> Self {
        if let Self::Ref(id) = self {
            heap.heap().inc_ref(*id);
            Self::Ref(*id)
        } else {
            self.copy_immediate()
        }
    }

    /// Copies a value that holds no heap reference, for contexts with no heap
    /// to count against — the compiler's constant arena, which only ever holds
    /// literals and interned ids.
    ///
    /// # Panics
    ///
    /// Panics on `Ref`, which must go through
    /// [`clone_with_heap`](Self::clone_with_heap) to stay refcounted.
    #[must_use]
    #[inline]
    pub fn copy_immediate(&self) -> Self {
        match self {
            Self::Undefined => Self::Undefined,
            Self::Ellipsis => Self::Ellipsis,
            Self::NotImplemented => Self::NotImplemented,
            Self::None => Self::None,
            Self::Bool(b) => Self::Bool(*b),
            Self::Int(v) => Self::Int(*v),
            Self::Float(v) => Self::Float(*v),
            Self::Builtin(b) => Self::Builtin(*b),
            Self::ModuleFunction(mf) => Self::ModuleFunction(*mf),
            Self::DefFunction(f) => Self::DefFunction(*f),
            Self::InternString(s) => Self::InternString(*s),
            Self::InternBytes(b) => Self::InternBytes(*b),
            Self::InternLongInt(bi) => Self::InternLongInt(*bi),
            Self::Marker(m) => Self::Marker(*m),
            Self::Property(p) => Self::Property(*p),
            Self::Ref(_) => panic!("heap reference copied without refcounting"),
            #[cfg(feature = "memory-model-checks")]
            Self::Dereferenced => panic!("Cannot copy Dereferenced object"),
        }
    }

    /// Drops an value, decrementing its heap reference count if applicable.
    ///
    /// For immediate values, this is a no-op. For heap-allocated values (Ref variant),
    /// this decrements the reference count and frees the value (and any children) when
    /// the count reaches zero. For Closure variants, this decrements ref counts on all
    /// captured cells.
    ///
    /// Takes `ContainsHeap` to allow directly passing the `VM` in many contexts. Where
    /// borrow checking creates conflicts, it may be preferred to pass `&mut Heap` directly
    /// (e.g. as `vm.heap` / `self.heap` etc.).
    ///
    /// # Important
    /// This method MUST be called before overwriting a namespace slot or discarding
    /// a value to prevent memory leaks. Call it directly only on a simple, linear
    /// cleanup path; use `defer_drop!` or `DropGuard` when any branch or `?` could
    /// bypass cleanup.
    #[cfg(not(feature = "memory-model-checks"))]
    #[inline]
    pub fn drop_with(self, heap: &mut impl ContainsHeap) {
        if let Self::Ref(id) = self {
            heap.heap_mut().dec_ref(id);
        }
    }
    /// With `memory-model-checks` enabled, `Ref` variants are replaced with `Dereferenced` and
    /// the original is forgotten to prevent the Drop impl from panicking. Non-Ref variants
    /// are left unchanged since they don't trigger the Drop panic.
    #[cfg(feature = "memory-model-checks")]
    pub fn drop_with(mut self, heap: &mut impl ContainsHeap) {
        let old = mem::replace(&mut self, Self::Dereferenced);
        if let Self::Ref(id) = &old {
            heap.heap_mut().dec_ref(*id);
            mem::forget(old);
        }
    }

    /// Mark as Dereferenced to prevent Drop panic
    ///
    /// This should be called from `py_dec_ref_ids` methods only
    #[cfg(feature = "memory-model-checks")]
    pub fn dec_ref_forget(&mut self) {
        let old = mem::replace(self, Self::Dereferenced);
        mem::forget(old);
    }

    /// Pushes any contained `HeapId` onto the stack for reference counting.
    ///
    /// For `Value::Ref` variants, pushes the heap ID so the referenced object's
    /// refcount can be decremented. When `memory-model-checks` is enabled, also marks
    /// this value as `Dereferenced` to prevent Drop panics.
    pub fn py_dec_ref_ids(&mut self, stack: &mut Vec<HeapId>) {
        if let Self::Ref(id) = self {
            stack.push(*id);
            #[cfg(feature = "memory-model-checks")]
            self.dec_ref_forget();
        }
    }

    /// Converts the value into a keyword string representation if possible.
    ///
    /// Returns `Some(KeywordStr)` for `InternString` values or heap `str`
    /// objects, otherwise returns `None`.
    pub fn as_either_str(&self, heap: &Heap) -> Option<EitherStr> {
        match self {
            Self::InternString(id) => Some(EitherStr::Interned(*id)),
            Self::Ref(heap_id) => match heap.get(*heap_id) {
                HeapData::Str(s) => Some(EitherStr::Heap(s.as_str().to_owned())),
                _ => None,
            },
            _ => None,
        }
    }

    /// Borrows the value as a `&str` if it is a string (interned or heap `str`).
    ///
    /// Unlike [`as_either_str`](Self::as_either_str) this never allocates — both
    /// interned and heap strings are returned by borrow — and it errors rather
    /// than returning `None` for non-strings, with CPython's generic `expected
    /// string, not <type>` message. Use it wherever a function reads a `str`
    /// argument it does not need to own; the borrow keeps `self` and the heap
    /// pinned, so drop/allocate only once it ends.
    pub(crate) fn to_str<'a>(&'a self, vm: &'a VM<'_>) -> RunResult<&'a str> {
        self.to_str_heap(vm.heap, vm.interns)
    }

    /// [`to_str`](Self::to_str) for contexts without a `&VM` — takes `heap` and
    /// `interns` separately so callers can keep a disjoint `&mut` borrow of
    /// another `VM` field alive (e.g. resolving a `str` `Value` produced by
    /// `py_str` while writing it to `vm.print_writer`).
    pub(crate) fn to_str_heap<'a>(&'a self, heap: &'a Heap, interns: &'a Interns) -> RunResult<&'a str> {
        match self {
            Self::InternString(string_id) => return Ok(interns.get_str(*string_id)),
            Self::Ref(heap_id) => {
                if let HeapData::Str(s) = heap.get(*heap_id) {
                    return Ok(s.as_str());
                }
            }
            _ => {}
        }
        Err(ExcType::type_error(format!(
            "expected string, not {}",
            self.py_type_name_heap(heap, interns)
        )))
    }

    /// check if the value is a string.
    pub fn is_str(&self, heap: &Heap) -> bool {
        match self {
            Self::InternString(_) => true,
            Self::Ref(heap_id) => matches!(heap.get(*heap_id), HeapData::Str(_)),
            _ => false,
        }
    }

    /// Whether calling this value would succeed at dispatch.
    ///
    /// Dispatch can't double as the predicate — it pushes a frame, clones
    /// defaults, constructs an instance. For user instances, a class-level
    /// `__call__` enables the protocol even when that member is not callable.
    pub(crate) fn is_callable(&self, vm: &VM<'_>) -> bool {
        match self {
            Self::Builtin(_) | Self::ModuleFunction(_) | Self::DefFunction(_) => true,
            Self::Ref(id) => match vm.heap.get(*id) {
                HeapData::Instance(instance) => class_defines(instance.class(), "__call__", vm),
                value => value.is_callable(),
            },
            _ => false,
        }
    }
}

// ---------------------------------------------------------------------------
// Shared one-sided equality helpers
//
// Each compares a primitive operand (extracted from either an inline `Value`
// or a heap object) against an arbitrary `other: &Value`, resolving `other`'s
// representation as needed. They return `None` (NotImplemented) when `other`
// is not a compatible Python type, so the reflected comparison can run. These
// are shared by `Value::py_eq_impl` (inline operands) and
// `HeapReadOutput::py_eq_impl` (heap operands) so the interned-vs-heap and
// numeric-tower logic lives once.
// ---------------------------------------------------------------------------

/// `a == other` over Python's numeric tower (`int`/`bool`/`float`/big `int`).
pub(crate) fn eq_i64(a: i64, other: &Value, vm: &VM<'_>) -> Option<bool> {
    match other {
        Value::Int(b) => Some(a == *b),
        Value::Bool(b) => Some(a == i64::from(*b)),
        Value::Float(f) => Some(i64_cmp_f64(a, *f) == Some(Ordering::Equal)),
        Value::InternLongInt(id) => Some(bigint_eq_i64(vm.interns.get_long_int(*id), a)),
        Value::Ref(id) if let HeapData::LongInt(li) = vm.heap.get(*id) => Some(bigint_eq_i64(li.inner(), a)),
        _ => None,
    }
}

/// `f == other`, comparing against ints/bools/big ints *exactly* (no rounding).
pub(crate) fn eq_f64(f: f64, other: &Value, vm: &VM<'_>) -> Option<bool> {
    match other {
        Value::Float(o) => Some(f == *o),
        Value::Int(o) => Some(i64_cmp_f64(*o, f) == Some(Ordering::Equal)),
        Value::Bool(o) => Some(i64_cmp_f64(i64::from(*o), f) == Some(Ordering::Equal)),
        Value::InternLongInt(id) => Some(bigint_eq_f64(vm.interns.get_long_int(*id), f)),
        Value::Ref(id) if let HeapData::LongInt(li) = vm.heap.get(*id) => Some(bigint_eq_f64(li.inner(), f)),
        _ => None,
    }
}

/// `b == other` over the numeric tower, for heap `LongInt` / interned long-int
/// operands. A heap `LongInt` is always outside i64 range, so it never equals
/// an `Int`/`Bool` — but comparing exactly keeps the logic uniform.
pub(crate) fn eq_bigint(b: &BigInt, other: &Value, vm: &VM<'_>) -> Option<bool> {
    match other {
        Value::Int(o) => Some(bigint_eq_i64(b, *o)),
        Value::Bool(o) => Some(bigint_eq_i64(b, i64::from(*o))),
        Value::Float(f) => Some(bigint_eq_f64(b, *f)),
        Value::InternLongInt(id) => Some(b == vm.interns.get_long_int(*id)),
        Value::Ref(id) if let HeapData::LongInt(li) = vm.heap.get(*id) => Some(b == li.inner()),
        _ => None,
    }
}

/// `s == other`, resolving the other operand from an interned or heap string.
pub(crate) fn eq_str(s: &str, other: &Value, vm: &VM<'_>) -> Option<bool> {
    match other {
        Value::InternString(id) => Some(s == vm.interns.get_str(*id)),
        Value::Ref(id) if let HeapData::Str(o) = vm.heap.get(*id) => Some(s == o.as_str()),
        _ => None,
    }
}

/// `b == other`, resolving the other operand from interned or heap bytes.
pub(crate) fn eq_bytes(b: &[u8], other: &Value, vm: &VM<'_>) -> Option<bool> {
    match other {
        Value::InternBytes(id) => Some(b == vm.interns.get_bytes(*id)),
        Value::Ref(id) if let HeapData::Bytes(o) = vm.heap.get(*id) => Some(b == o.as_slice()),
        _ => None,
    }
}

/// Interned or heap-owned string identifier.
///
/// Used when a string value can come from either the intern table (for known
/// static strings and keywords) or from a heap-allocated Python string object.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) enum EitherStr {
    /// Interned string identifier (cheap comparisons and no allocation).
    Interned(StringId),
    /// Heap-owned string extracted from a `str` object.
    Heap(String),
}

impl From<StringId> for EitherStr {
    fn from(id: StringId) -> Self {
        Self::Interned(id)
    }
}

/// Converts owned text without assuming an executor-local intern ID.
impl From<String> for EitherStr {
    fn from(s: String) -> Self {
        Self::Heap(s)
    }
}

impl EitherStr {
    /// Returns the keyword as a str slice for error messages or comparisons.
    pub fn as_str<'a>(&'a self, interns: &'a Interns) -> &'a str {
        match self {
            Self::Interned(id) => interns.get_str(*id),
            Self::Heap(s) => s.as_str(),
        }
    }

    /// The text as a `Cow` borrowing only `interns`, so it outlives heap
    /// borrows — error messages format the name after `drop_with` cleanup.
    pub fn to_cow<'i>(&self, interns: &'i Interns) -> Cow<'i, str> {
        match self {
            Self::Interned(id) => Cow::Borrowed(interns.get_str(*id)),
            Self::Heap(s) => Cow::Owned(s.clone()),
        }
    }

    /// Re-resolves a heap string to its interned id when the interner already
    /// knows the text.
    ///
    /// Builtin attribute dispatch matches on `StringId`, so a name computed at
    /// runtime (`getattr(x, 'up' + 'per')`) arrives as [`Heap`](Self::Heap) and
    /// misses every builtin attribute — while still resolving on instances and
    /// modules, which compare by text. Interning is a lookup, never an insert,
    /// so sandboxed code cannot grow the interner by guessing names.
    #[must_use]
    pub fn resolve_interned(self, interns: &Interns) -> Self {
        match self {
            Self::Heap(s) => match interns.get_string_id_by_name(&s) {
                Some(id) => Self::Interned(id),
                None => Self::Heap(s),
            },
            already @ Self::Interned(_) => already,
        }
    }

    /// Checks whether this keyword matches the given interned identifier.
    pub fn matches(&self, target: StringId, interns: &Interns) -> bool {
        match self {
            Self::Interned(id) => *id == target,
            Self::Heap(s) => s == interns.get_str(target),
        }
    }

    /// Returns the `StringId` if this is an interned attribute.
    #[inline]
    pub fn string_id(&self) -> Option<StringId> {
        match self {
            Self::Interned(id) => Some(*id),
            Self::Heap(_) => None,
        }
    }

    /// Returns the static classification of this name, if recognized.
    #[inline]
    pub fn static_string(&self, interns: &Interns) -> Option<StaticStrings> {
        match self {
            Self::Interned(id) => interns.static_string(*id),
            Self::Heap(value) => StaticStrings::from_str(value).ok(),
        }
    }

    /// Converts this `EitherStr` into an owned `String`.
    ///
    /// For interned strings, looks up and clones the string content.
    /// For heap strings, returns the owned string directly.
    pub fn into_string(self, interns: &Interns) -> String {
        match self {
            Self::Interned(id) => interns.get_str(id).to_owned(),
            Self::Heap(s) => s,
        }
    }
}

/// Marker values for special objects that exist but have minimal functionality.
///
/// These are used for:
/// - System objects like `sys.stdout` and `sys.stderr` that need to exist but don't
///   provide functionality in the sandboxed environment
/// - Typing constructs from the `typing` module that are imported for type hints but
///   don't need runtime functionality
/// - Stateless sentinels such as `dataclasses.MISSING`, compared only by identity
///
/// Wraps a `StaticStrings` variant to leverage its string conversion capabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Marker(pub StaticStrings);

impl serde::Serialize for Marker {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value: &'static str = self.0.into();
        serde::Serialize::serialize(value, serializer)
    }
}

impl<'de> serde::Deserialize<'de> for Marker {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = <String as serde::Deserialize>::deserialize(deserializer)?;
        StaticStrings::from_str(&value).map(Self).map_err(D::Error::custom)
    }
}

impl Marker {
    /// Returns the Python type of this marker.
    ///
    /// System markers (stdout, stderr) are `TextIOWrapper`, `dataclasses.MISSING`
    /// is `_MISSING_TYPE`, and the typing markers (Any, Optional, etc.) are
    /// `_SpecialForm`. (`typing.Union` is a real type, `Type::Union`, not a marker.)
    pub(crate) fn py_type(self) -> Type {
        match self.0 {
            StaticStrings::Stdout | StaticStrings::Stderr => Type::TextIOWrapper,
            StaticStrings::Missing => Type::MissingType,
            _ => Type::SpecialForm,
        }
    }

    /// Writes the Python repr for this marker.
    ///
    /// System markers have special repr formats ("<stdout>", "<stderr>");
    /// `dataclasses.MISSING` is a plain object, so it prints with its `id()`;
    /// typing markers are prefixed with "typing." (e.g., "typing.Any").
    pub(crate) fn py_repr_fmt(self, f: &mut impl Write) -> fmt::Result {
        let s: &'static str = self.0.into();
        match self.0 {
            StaticStrings::Stdout => f.write_str("<stdout>")?,
            StaticStrings::Stderr => f.write_str("<stderr>")?,
            StaticStrings::Missing => write!(
                f,
                "<dataclasses._MISSING_TYPE object at 0x{:x}>",
                Identity::Marker(self).encoded()
            )?,
            _ => write!(f, "typing.{s}")?,
        }
        Ok(())
    }
}

/// Clamps a `BigInt` to `i64`, pinning out-of-range values to the bound they
/// overflowed past. Backs [`Value::long_int_to_i64_saturating`].
fn saturating_i64(value: &BigInt) -> i64 {
    value.to_i64().unwrap_or({
        if value.sign() == Sign::Minus {
            i64::MIN
        } else {
            i64::MAX
        }
    })
}

/// Builds `divmod()`'s `(quotient, remainder)` tuple for two machine integers.
///
/// Only `i64::MIN // -1` overflows `i64`, and that lone case promotes to a
/// `LongInt` pair — too small to be worth preflighting against the tracker.
pub(crate) fn int_divmod_tuple(lhs: i64, rhs: i64, heap: &Heap) -> RunResult<Value> {
    if rhs == 0 {
        Err(ExcType::zero_division().into())
    } else if let Some((quotient, remainder)) = floor_divmod(lhs, rhs) {
        Ok(allocate_tuple(
            smallvec![Value::Int(quotient), Value::Int(remainder)],
            heap,
        ))
    } else {
        Ok(bigint_divmod_tuple(&BigInt::from(lhs), &BigInt::from(rhs), heap))
    }
}

/// Builds `divmod()`'s `(quotient, remainder)` tuple for float operands.
///
/// Shared with big-integer mixed-type arithmetic, which widens its long operand first.
pub(crate) fn float_divmod_tuple(lhs: f64, rhs: f64, heap: &Heap) -> RunResult<Value> {
    if rhs == 0.0 {
        Err(ExcType::zero_division().into())
    } else {
        let (quotient, remainder) = py_float_divmod(lhs, rhs);
        Ok(allocate_tuple(
            smallvec![Value::Float(quotient), Value::Float(remainder)],
            heap,
        ))
    }
}

/// Computes Python-style floor division and modulo.
///
/// Python's division rounds toward negative infinity (floor division),
/// and the remainder has the same sign as the divisor.
/// This differs from Rust's truncating division.
///
/// Returns `None` on overflow (i64::MIN / -1 doesn't fit in i64).
pub(crate) fn floor_divmod(a: i64, b: i64) -> Option<(i64, i64)> {
    let quot = a.checked_div(b)?;
    let rem = a.checked_rem(b)?;

    if rem != 0 && (rem < 0) != (b < 0) {
        Some((quot - 1, rem + b))
    } else {
        Some((quot, rem))
    }
}

/// Computes Python-style float floor division and modulo together (CPython's `float_divmod`).
///
/// The remainder comes from `fmod` adjusted to the divisor's sign, and the quotient is
/// floored from the exactly adjusted dividend rather than from `a / b`, which keeps
/// `quotient * b + remainder == a` as close as floats allow. Callers must reject a zero
/// divisor first; this helper assumes `b != 0`.
pub(crate) fn py_float_divmod(a: f64, b: f64) -> (f64, f64) {
    let mut modulus = a % b;
    let mut div = (a - modulus) / b;
    if modulus == 0.0 {
        modulus = 0.0f64.copysign(b);
    } else if (b < 0.0) != (modulus < 0.0) {
        modulus += b;
        div -= 1.0;
    }
    let floordiv = if div == 0.0 {
        0.0f64.copysign(a / b)
    } else {
        // `div` is within an ulp of an integer; an excess above one half means it rounded down.
        let floordiv = div.floor();
        if div - floordiv > 0.5 { floordiv + 1.0 } else { floordiv }
    };
    (floordiv, modulus)
}

/// Python `base ** exp` for real operands: [`float_pow`], except that a negative
/// base with a fractional exponent yields a `complex` as CPython's `float_pow` does
/// (`(-8.0) ** (1/3)`), which is why the result is a `Value` rather than an `f64`.
pub(crate) fn float_pow_value(base: f64, exp: f64, heap: &Heap) -> RunResult<Value> {
    if base < 0.0 && base.is_finite() && exp.is_finite() && exp.fract() != 0.0 {
        Ok(Complex::new(base, 0.0).pow(Complex::new(exp, 0.0))?.into_value(heap))
    } else {
        float_pow(base, exp).map(Value::Float)
    }
}

/// Raises `base` to `exp` with CPython's `float_pow` error rules, for callers that
/// know the result is real; Python-level `**` goes through [`float_pow_value`].
///
/// Zero to a finite negative power is `ZeroDivisionError`, and finite operands whose
/// result overflows raise `OverflowError` where C's `pow` would set `ERANGE`. Infinite or
/// NaN operands pass straight through `powf`, whose special cases match C99 `pow`
/// (so `0.0 ** -inf` is `inf`, not an error).
pub(crate) fn float_pow(base: f64, exp: f64) -> RunResult<f64> {
    if base == 0.0 && exp.is_finite() && exp < 0.0 {
        Err(ExcType::zero_negative_power())
    } else {
        // chainbox patch (CHAINBOX.md)
        let result = crate::c_math::pow(base, exp);
        if result.is_infinite() && base.is_finite() && exp.is_finite() {
            Err(ExcType::overflow_float_pow())
        } else {
            Ok(result)
        }
    }
}

/// Computes Python-style float modulo (CPython's `float_rem`).
///
/// Unlike Rust's `%` (which follows the dividend's sign), the result takes the
/// divisor's sign — `-7.0 % 3.0 == 2.0` — and a zero result gets the divisor's
/// sign too (`6.0 % -3.0 == -0.0`). Callers must reject a zero divisor first
/// (`ZeroDivisionError`); this helper assumes `b != 0`.
pub(crate) fn py_float_mod(a: f64, b: f64) -> f64 {
    let r = a % b;
    if r == 0.0 {
        0.0f64.copysign(b)
    } else if (b < 0.0) != (r < 0.0) {
        r + b
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use monty_types::{PrintWriter, ResourceTracker};
    use num_bigint::BigInt;

    use super::*;
    use crate::{
        heap::HeapReader,
        run::{Program, SessionTables},
        types::LongInt,
    };

    /// Creates a heap and directly allocates a LongInt with the given BigInt value.
    ///
    /// This bypasses `LongInt::into_value()` which would demote i64-fitting values.
    /// Used to test defensive code paths that handle LongInt-as-index scenarios.
    fn create_heap_with_longint(value: BigInt) -> (Heap, HeapId) {
        let heap = Heap::new(16, ResourceTracker::default());
        let long_int = LongInt::new(value);
        let heap_id = heap.allocate(HeapData::LongInt(long_int));
        (heap, heap_id)
    }

    /// Tests that `as_index()` correctly handles a LongInt containing an i64-fitting value.
    ///
    /// This tests a defensive code path that's normally unreachable because
    /// `LongInt::into_value()` demotes i64-fitting values to `Value::Int`.
    /// However, this path could be reached via deserialization of crafted data.
    #[test]
    fn as_index_longint_fits_in_i64() {
        let (mut heap, heap_id) = create_heap_with_longint(BigInt::from(42));
        let value = Value::Ref(heap_id);

        let mut tables = SessionTables::default();
        let program = Program::for_tests();
        let result = HeapReader::with(&mut heap, &mut (&program, &mut tables), |reader, (program, tables)| {
            let mut vm = VM::new(Vec::new(), tables, program, reader, PrintWriter::Disabled);
            value.as_index(&mut vm, Type::List)
        });
        assert_eq!(result.unwrap(), 42);
        value.drop_with(&mut heap);
    }

    /// Tests that `as_index()` correctly handles a negative LongInt that fits in i64.
    #[test]
    fn as_index_longint_negative_fits_in_i64() {
        let (mut heap, heap_id) = create_heap_with_longint(BigInt::from(-100));
        let value = Value::Ref(heap_id);

        let mut tables = SessionTables::default();
        let program = Program::for_tests();
        let result = HeapReader::with(&mut heap, &mut (&program, &mut tables), |reader, (program, tables)| {
            let mut vm = VM::new(Vec::new(), tables, program, reader, PrintWriter::Disabled);
            value.as_index(&mut vm, Type::List)
        });
        assert_eq!(result.unwrap(), -100);
        value.drop_with(&mut heap);
    }

    /// Tests that `as_index()` returns IndexError for LongInt values too large for i64.
    #[test]
    fn as_index_longint_too_large() {
        // 2^100 is way larger than i64::MAX
        let big_value = BigInt::from(2).pow(100);
        let (mut heap, heap_id) = create_heap_with_longint(big_value);
        let value = Value::Ref(heap_id);

        let mut tables = SessionTables::default();
        let program = Program::for_tests();
        let result = HeapReader::with(&mut heap, &mut (&program, &mut tables), |reader, (program, tables)| {
            let mut vm = VM::new(Vec::new(), tables, program, reader, PrintWriter::Disabled);
            value.as_index(&mut vm, Type::List)
        });
        assert!(result.is_err());
        value.drop_with(&mut heap);
    }

    /// Tests that `as_int()` correctly handles a LongInt containing an i64-fitting value.
    ///
    /// Similar to `as_index`, this tests a defensive code path normally unreachable.
    #[test]
    fn as_int_longint_fits_in_i64() {
        let (mut heap, heap_id) = create_heap_with_longint(BigInt::from(12345));
        let value = Value::Ref(heap_id);

        let mut tables = SessionTables::default();
        let program = Program::for_tests();
        let result = HeapReader::with(&mut heap, &mut (&program, &mut tables), |reader, (program, tables)| {
            let mut vm = VM::new(Vec::new(), tables, program, reader, PrintWriter::Disabled);
            value.as_int(&mut vm)
        });
        assert_eq!(result.unwrap(), 12345);
        value.drop_with(&mut heap);
    }

    /// Tests that `as_int()` returns an error for LongInt values too large for i64.
    #[test]
    fn as_int_longint_too_large() {
        let big_value = BigInt::from(2).pow(100);
        let (mut heap, heap_id) = create_heap_with_longint(big_value);
        let value = Value::Ref(heap_id);

        let mut tables = SessionTables::default();
        let program = Program::for_tests();
        let result = HeapReader::with(&mut heap, &mut (&program, &mut tables), |reader, (program, tables)| {
            let mut vm = VM::new(Vec::new(), tables, program, reader, PrintWriter::Disabled);
            value.as_int(&mut vm)
        });
        assert!(result.is_err());
        value.drop_with(&mut heap);
    }

    /// Tests boundary values: i64::MAX as a LongInt.
    #[test]
    fn as_index_longint_at_i64_max() {
        let (mut heap, heap_id) = create_heap_with_longint(BigInt::from(i64::MAX));
        let value = Value::Ref(heap_id);

        let mut tables = SessionTables::default();
        let program = Program::for_tests();
        let result = HeapReader::with(&mut heap, &mut (&program, &mut tables), |reader, (program, tables)| {
            let mut vm = VM::new(Vec::new(), tables, program, reader, PrintWriter::Disabled);
            value.as_index(&mut vm, Type::List)
        });
        assert_eq!(result.unwrap(), i64::MAX);
        value.drop_with(&mut heap);
    }

    /// Tests boundary values: i64::MIN as a LongInt.
    #[test]
    fn as_index_longint_at_i64_min() {
        let (mut heap, heap_id) = create_heap_with_longint(BigInt::from(i64::MIN));
        let value = Value::Ref(heap_id);

        let mut tables = SessionTables::default();
        let program = Program::for_tests();
        let result = HeapReader::with(&mut heap, &mut (&program, &mut tables), |reader, (program, tables)| {
            let mut vm = VM::new(Vec::new(), tables, program, reader, PrintWriter::Disabled);
            value.as_index(&mut vm, Type::List)
        });
        assert_eq!(result.unwrap(), i64::MIN);
        value.drop_with(&mut heap);
    }

    /// Tests boundary values: i64::MAX + 1 as a LongInt (should fail).
    #[test]
    fn as_index_longint_just_over_i64_max() {
        let big_value = BigInt::from(i64::MAX) + BigInt::from(1);
        let (mut heap, heap_id) = create_heap_with_longint(big_value);
        let value = Value::Ref(heap_id);

        let mut tables = SessionTables::default();
        let program = Program::for_tests();
        let result = HeapReader::with(&mut heap, &mut (&program, &mut tables), |reader, (program, tables)| {
            let mut vm = VM::new(Vec::new(), tables, program, reader, PrintWriter::Disabled);
            value.as_index(&mut vm, Type::List)
        });
        assert!(result.is_err());
        value.drop_with(&mut heap);
    }

    /// Tests boundary values: i64::MIN - 1 as a LongInt (should fail).
    #[test]
    fn as_index_longint_just_under_i64_min() {
        let big_value = BigInt::from(i64::MIN) - BigInt::from(1);
        let (mut heap, heap_id) = create_heap_with_longint(big_value);
        let value = Value::Ref(heap_id);

        let mut tables = SessionTables::default();
        let program = Program::for_tests();
        let result = HeapReader::with(&mut heap, &mut (&program, &mut tables), |reader, (program, tables)| {
            let mut vm = VM::new(Vec::new(), tables, program, reader, PrintWriter::Disabled);
            value.as_index(&mut vm, Type::List)
        });
        assert!(result.is_err());
        value.drop_with(&mut heap);
    }
}

/// chainbox patch: the augmented assignments whose fallback is their binary
/// operator (see [`Value::py_augmented`]); `+=` has its own path.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AugmentedOp {
    Sub,
    Mul,
    TrueDiv,
    FloorDiv,
    Mod,
    Pow,
    And,
    Or,
    Xor,
    LShift,
    RShift,
}

impl AugmentedOp {
    /// The operator as CPython's `TypeError` spells it.
    fn symbol(self) -> &'static str {
        match self {
            Self::Sub => "-=",
            Self::Mul => "*=",
            Self::TrueDiv => "/=",
            Self::FloorDiv => "//=",
            Self::Mod => "%=",
            Self::Pow => "**=",
            Self::And => "&=",
            Self::Or => "|=",
            Self::Xor => "^=",
            Self::LShift => "<<=",
            Self::RShift => ">>=",
        }
    }
}
