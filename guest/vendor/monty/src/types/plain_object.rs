//! `object()`: a featureless instance, equal and hashed only by identity.
//!
//! chainbox patch. Scripts make one as a sentinel (`_MISSING = object()`,
//! `d.get(k, _MISSING) is _MISSING`), and monty refused the call ("cannot
//! create 'object' instances"). It holds nothing: its identity is its heap
//! slot, so each call is a new object, as in CPython.

use std::{borrow::Cow, fmt::Write};

use crate::{
    args::ArgValues,
    bytecode::VM,
    exception_private::{ExcType, ExcTypeExt, RunResult},
    hash::{HashValue, identity_hash},
    heap::DropWithContext,
    heap::{HeapData, HeapId, HeapItem, HeapObjectRead},
    types::{LazyHeapSet, PyTrait, Type},
    value::Value,
};

/// The payload of an `object()` instance: nothing but its heap identity.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(crate) struct PlainObject;

/// `object()`: a new instance; CPython's `object` takes no arguments.
pub(crate) fn init(vm: &mut VM<'_>, args: ArgValues) -> RunResult<Value> {
    if !matches!(args, ArgValues::Empty) {
        args.drop_with(vm);
        return Err(ExcType::type_error("object() takes no arguments"));
    }
    Ok(allocate(vm))
}

/// A new `object()` instance, as `copy.copy` and `copy.deepcopy` make one
/// (CPython rebuilds it through `copyreg.__newobj__`: a different object).
pub(crate) fn allocate(vm: &mut VM<'_>) -> Value {
    Value::Ref(vm.heap.allocate(HeapData::PlainObject(PlainObject)))
}

impl HeapItem for PlainObject {
    fn py_dec_ref_ids(&mut self, _stack: &mut Vec<HeapId>) {}
}

impl<'h> PyTrait<'h> for HeapObjectRead<'h, PlainObject> {
    fn py_type(&self, _: &VM<'h>) -> Type {
        Type::Object
    }

    fn py_type_name(&self, _: &VM<'h>) -> Cow<'h, str> {
        Cow::Borrowed("object")
    }

    fn py_len(&self, _: &VM<'h>) -> Option<usize> {
        None
    }

    /// Equal only to itself, which `==` checks by identity before asking.
    fn py_eq_impl(&self, _: &Value, _: &mut VM<'h>) -> RunResult<Option<bool>> {
        Ok(None)
    }

    fn py_hash(&self, _: &mut VM<'h>) -> RunResult<Option<HashValue>> {
        Ok(Some(identity_hash(self.id())))
    }

    fn py_bool(&self, _: &mut VM<'h>) -> RunResult<bool> {
        Ok(true)
    }

    fn py_repr_fmt(&self, f: &mut impl Write, vm: &mut VM<'h>, _heap_ids: &mut LazyHeapSet) -> RunResult<()> {
        self.py_default_repr_fmt(f, vm)
    }
}
