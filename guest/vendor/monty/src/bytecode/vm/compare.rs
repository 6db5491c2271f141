//! Comparison operation helpers for the VM.

use super::VM;
use crate::{
    defer_drop,
    exception_private::{ExcType, ExcTypeExt, RunError, RunResult},
    expressions::CmpOperator,
    // chainbox patch (CHAINBOX.md)
    heap::HeapData,
    types::{CmpOrder, PyTrait},
    value::Value,
};

/// Which sequences CPython orders item by item against each other: two
/// lists, or two tuples (a namedtuple is one). A deque does too, but keeps
/// its own walk (`Deque::py_cmp`), which notices a deque mutated by an
/// item's `__eq__` as CPython's iterators do.
fn sequence_kind(value: &Value, vm: &VM<'_>) -> Option<u8> {
    let Value::Ref(id) = value else { return None };
    match vm.heap.get(*id) {
        HeapData::List(_) => Some(0),
        HeapData::Tuple(_) | HeapData::NamedTuple(_) => Some(1),
        _ => None,
    }
}

fn is_deque(value: &Value, vm: &VM<'_>) -> bool {
    matches!(value, Value::Ref(id) if matches!(vm.heap.get(*id), HeapData::Deque(_)))
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

        // chainbox patch (CHAINBOX.md)
        if let Some(kind) = sequence_kind(lhs, self)
            && sequence_kind(rhs, self) == Some(kind)
        {
            return self.cmp_sequences(op, lhs, rhs);
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
            CmpOrder::Incomparable => {
                // chainbox patch: two deques are incomparable through their
                // first items that are not `==`; CPython's error names those
                // items' types (`'int' and 'str'`), not `collections.deque`.
                if is_deque(lhs, self) && is_deque(rhs, self) {
                    return self.deque_items_ordering_error(op, lhs, rhs);
                }
                let left_type = lhs.py_type_name(self);
                let right_type = rhs.py_type_name(self);
                Err(ExcType::type_error_ordering(op.as_str(), &left_type, &right_type))
            }
        }
    }

    /// The error of the first pair of items of two deques that are not `==`,
    /// which `Deque::py_cmp` found incomparable.
    fn deque_items_ordering_error(&mut self, op: CmpOperator, lhs: &Value, rhs: &Value) -> RunResult<bool> {
        let vm = self;
        let shared = lhs.py_len(vm).unwrap_or(0).min(rhs.py_len(vm).unwrap_or(0));
        for index in 0..shared {
            let position = Value::Int(i64::try_from(index).unwrap_or(i64::MAX));
            let left = lhs.py_getitem(&position, vm)?;
            defer_drop!(left, vm);
            let right = rhs.py_getitem(&position, vm)?;
            defer_drop!(right, vm);
            if !left.py_eq(right, vm)? {
                return vm.cmp_ordering(op, left, right);
            }
        }
        let left_type = lhs.py_type_name(vm);
        let right_type = rhs.py_type_name(vm);
        Err(ExcType::type_error_ordering(op.as_str(), &left_type, &right_type))
    }

    /// Orders two lists or tuples as CPython's `list_richcompare` (and the
    /// tuple's) does: the first items that are not `==` (identity first: a
    /// NaN shared by both sides, as every NaN `json.loads` makes and
    /// `math.nan` are, is equal to itself) decide, by the operator itself; with none, the lengths do. So
    /// `[1, 'a'] < ['a', 1]` fails naming `'int' and 'str'` (also in
    /// `sorted` and `max`), where a three-way comparison of the items named
    /// `'list' and 'list'`. Lengths are re-read each step, as a user
    /// `__eq__` may resize.
    fn cmp_sequences(&mut self, op: CmpOperator, lhs: &Value, rhs: &Value) -> RunResult<bool> {
        let mut guard = self.recursion_guard()?;
        let vm = &mut *guard;
        let mut index = 0;
        loop {
            let (Some(lhs_len), Some(rhs_len)) = (lhs.py_len(vm), rhs.py_len(vm)) else {
                return Err(RunError::internal("cmp_sequences: a sequence without a length"));
            };
            if index >= lhs_len.min(rhs_len) {
                return Ok(match op {
                    CmpOperator::Lt => lhs_len < rhs_len,
                    CmpOperator::LtE => lhs_len <= rhs_len,
                    CmpOperator::Gt => lhs_len > rhs_len,
                    _ => lhs_len >= rhs_len,
                });
            }
            vm.heap.tracker.check_time_every(index)?;
            let position = Value::Int(i64::try_from(index).unwrap_or(i64::MAX));
            let left = lhs.py_getitem(&position, vm)?;
            defer_drop!(left, vm);
            let right = rhs.py_getitem(&position, vm)?;
            defer_drop!(right, vm);
            if !left.py_eq(right, vm)? {
                return vm.cmp_ordering(op, left, right);
            }
            index += 1;
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
