//! Comparison operation helpers for the VM.

use super::VM;
use crate::{
    defer_drop,
    exception_private::{ExcType, ExcTypeExt, RunError, RunResult},
    expressions::CmpOperator,
    heap::HeapData,
    heap_traits::DropWithContext,
    types::{CmpOrder, PyTrait},
    value::Value,
};

/// Builds the `TypeError` for an ordering (`op` is `<`, `<=`, `>` or `>=`)
/// between `lhs` and `rhs` that neither side supports.
///
/// CPython orders two sequences by applying the operator to their first
/// unequal items, so the error names those items' types: `[1, 'a'] < ['a', 1]`
/// says `'int' and 'str'`, not `'list' and 'list'`. Monty decides orderings
/// through [`CmpOrder`], which does not carry the failing pair, so this walks
/// back down to it: only on the error path, where the extra `==` checks cost
/// nothing that matters.
#[cold]
pub(crate) fn ordering_type_error(op: &str, lhs: &Value, rhs: &Value, vm: &mut VM<'_>) -> RunError {
    let mut pair = (lhs.clone_with_heap(vm.heap), rhs.clone_with_heap(vm.heap));
    // Bounded because each step goes one level deeper into finite data; the
    // cap only guards against a container mutated into a cycle mid-walk.
    for _ in 0..256 {
        match first_unequal_items(&pair.0, &pair.1, vm) {
            Ok(Some(next)) => {
                let old = std::mem::replace(&mut pair, next);
                old.0.drop_with(vm);
                old.1.drop_with(vm);
            }
            Ok(None) => break,
            Err(err) => {
                pair.0.drop_with(vm);
                pair.1.drop_with(vm);
                return err;
            }
        }
    }
    let left_type = pair.0.py_type_name(vm);
    let right_type = pair.1.py_type_name(vm);
    pair.0.drop_with(vm);
    pair.1.drop_with(vm);
    ExcType::type_error_ordering(op, &left_type, &right_type)
}

/// The first pair of `!=` items of two sequences CPython orders item by item
/// (lists, tuples and namedtuples, deques), or `None` for any other pair.
fn first_unequal_items(lhs: &Value, rhs: &Value, vm: &mut VM<'_>) -> RunResult<Option<(Value, Value)>> {
    let (Some(left), Some(right)) = (
        ordered_sequence_items(lhs, rhs, vm),
        ordered_sequence_items(rhs, lhs, vm),
    ) else {
        return Ok(None);
    };
    let mut found = None;
    let mut error = None;
    for (a, b) in left.iter().zip(right.iter()) {
        match a.py_eq(b, vm) {
            Ok(true) => {}
            Ok(false) => {
                found = Some((a.clone_with_heap(vm.heap), b.clone_with_heap(vm.heap)));
                break;
            }
            Err(err) => {
                error = Some(err);
                break;
            }
        }
    }
    left.drop_with(vm);
    right.drop_with(vm);
    match error {
        Some(err) => Err(err),
        None => Ok(found),
    }
}

/// Clones the items of `value` when it and `other` are sequences that order
/// item by item with each other: two lists, two deques, or tuples (a
/// namedtuple counts as a tuple).
fn ordered_sequence_items(value: &Value, other: &Value, vm: &VM<'_>) -> Option<Vec<Value>> {
    let (Value::Ref(id), Value::Ref(other_id)) = (value, other) else {
        return None;
    };
    let heap = &*vm.heap;
    let kind = |data: &HeapData| match data {
        HeapData::List(_) => Some(0),
        HeapData::Tuple(_) | HeapData::NamedTuple(_) => Some(1),
        HeapData::Deque(_) => Some(2),
        _ => None,
    };
    let (this, that) = (heap.get(*id), heap.get(*other_id));
    if kind(this)? != kind(that)? {
        return None;
    }
    let items: Vec<Value> = match this {
        HeapData::List(list) => list.as_slice().iter().map(|v| v.clone_with_heap(heap)).collect(),
        HeapData::Tuple(tuple) => tuple.as_slice().iter().map(|v| v.clone_with_heap(heap)).collect(),
        HeapData::NamedTuple(tuple) => tuple.as_vec().iter().map(|v| v.clone_with_heap(heap)).collect(),
        HeapData::Deque(deque) => deque.iter().map(|v| v.clone_with_heap(heap)).collect(),
        _ => return None,
    };
    Some(items)
}

impl VM<'_> {
    /// Evaluates a comparison as a boolean without consuming its operands.
    ///
    /// Shared by fused asserts and comparison helpers that need truth rather
    /// than the arbitrary value a direct `==` expression may produce.
    #[inline]
    pub(crate) fn cmp_values(&mut self, op: CmpOperator, lhs: &Value, rhs: &Value) -> RunResult<bool> {
        match op {
            CmpOperator::Eq | CmpOperator::NotEq => {
                let result = lhs.py_rich_eq(rhs, self)?;
                let is_equal = result.py_bool(self);
                result.drop_with(self);
                let is_equal = is_equal?;
                Ok(if op == CmpOperator::NotEq { !is_equal } else { is_equal })
            }
            CmpOperator::Is => Ok(lhs.is(rhs)),
            CmpOperator::IsNot => Ok(!lhs.is(rhs)),
            // `in` tests membership of the *left* operand in the right one.
            CmpOperator::In => rhs.py_contains(lhs, self),
            CmpOperator::NotIn => Ok(!rhs.py_contains(lhs, self)?),
            CmpOperator::Lt | CmpOperator::LtE | CmpOperator::Gt | CmpOperator::GtE => self.cmp_ordering(op, lhs, rhs),
        }
    }

    /// Executes direct `==`, preserving an arbitrary value returned by `__eq__`.
    pub(super) fn compare_eq(&mut self) -> Result<(), RunError> {
        let this = self;
        let rhs = this.pop();
        defer_drop!(rhs, this);
        let lhs = this.pop();
        defer_drop!(lhs, this);

        let result = lhs.py_rich_eq(rhs, this)?;
        this.push(result);
        Ok(())
    }

    /// Executes direct `!=`; user `__ne__` dispatch is not yet supported.
    pub(super) fn compare_ne(&mut self) -> Result<(), RunError> {
        let this = self;
        let rhs = this.pop();
        defer_drop!(rhs, this);
        let lhs = this.pop();
        defer_drop!(lhs, this);

        let result = lhs.py_rich_eq(rhs, this)?;
        defer_drop!(result, this);
        let is_not_equal = !result.py_bool(this)?;
        this.push(Value::Bool(is_not_equal));
        Ok(())
    }

    /// Evaluates an ordering comparison, preserving CPython's behavior for
    /// unordered values such as `NaN` and incomparable operand types.
    #[inline]
    fn cmp_ordering(&mut self, op: CmpOperator, lhs: &Value, rhs: &Value) -> RunResult<bool> {
        // A type whose ordering no `CmpOrder` describes (a `Counter` compares as
        // a multiset) answers the operator itself. Hooked in here rather than at
        // the opcode so the fused-assert path, which calls `cmp_values` directly,
        // gets the same semantics.
        if let Some(result) = lhs.py_cmp_op(rhs, op, self)? {
            return Ok(result);
        }

        // The right operand may handle a comparison the left declines:
        // dict_keys <= set is answered by set >= dict_keys.
        let reflected_op = match op {
            CmpOperator::Lt => CmpOperator::Gt,
            CmpOperator::LtE => CmpOperator::GtE,
            CmpOperator::Gt => CmpOperator::Lt,
            CmpOperator::GtE => CmpOperator::LtE,
            _ => unreachable!("cmp_ordering reached with a non-ordering operator"),
        };
        if let Some(result) = rhs.py_cmp_op(lhs, reflected_op, self)? {
            return Ok(result);
        }

        match lhs.py_cmp(rhs, self)? {
            CmpOrder::Ordered(ordering) => Ok(match op {
                CmpOperator::Lt => ordering.is_lt(),
                CmpOperator::LtE => ordering.is_le(),
                CmpOperator::Gt => ordering.is_gt(),
                CmpOperator::GtE => ordering.is_ge(),
                // `cmp_values` calls this only for ordering operators.
                _ => unreachable!("cmp_ordering reached with a non-ordering operator"),
            }),
            CmpOrder::Unordered => Ok(false),
            CmpOrder::Incomparable => Err(ordering_type_error(op.as_str(), lhs, rhs, self)),
        }
    }

    /// Pops both operands and pushes a boolean comparison result.
    /// The const operator lets dispatch specialize the implementation per opcode.
    fn compare_op<const OP: u8>(&mut self) -> Result<(), RunError> {
        // Rejects a bad `OP` at compile time, which makes the `else` dead.
        const { assert!(CmpOperator::from_repr(OP).is_some(), "invalid CmpOperator operand") };
        let op = CmpOperator::from_repr(OP).expect("invalid CmpOperator operand");
        let this = self;

        let rhs = this.pop();
        defer_drop!(rhs, this);
        let lhs = this.pop();
        defer_drop!(lhs, this);

        let result = this.cmp_values(op, lhs, rhs)?;
        this.push(Value::Bool(result));
        Ok(())
    }
}

/// Defines a specialized entry point for each boolean comparison opcode.
macro_rules! compare_opcodes {
    ($($name:ident => $op:ident,)*) => {
        impl VM<'_> {
            $(
                pub(super) fn $name(&mut self) -> Result<(), RunError> {
                    self.compare_op::<{ CmpOperator::$op.as_operand() }>()
                }
            )*
        }
    };
}

compare_opcodes! {
    compare_lt => Lt,
    compare_le => LtE,
    compare_gt => Gt,
    compare_ge => GtE,
    compare_is => Is,
    compare_is_not => IsNot,
    compare_in => In,
    compare_not_in => NotIn,
}
