//! chainbox patch: which expressions CPython 3.14's optimizer folds into a
//! constant, for the one decision that depends on it.
//!
//! CPython compiles a set display of three or more constants as a frozenset
//! constant merged into an empty set, and that merge lays the set out
//! differently from adding the items one by one, so the display's iteration
//! order depends on whether every item is a constant (see the `Expr::Set` arm
//! of `compile_expr`). Its optimizer folds an operation on constants first
//! (`2**31`, `24 * 3600`, `-2**63`, `1 << 20`, `'a' * 3`) unless the operation
//! raises or its result would be too large (`const_folding_safe_*` in
//! Python/flowgraph.c: 128-bit ints, 4,096-character strings, 256-item
//! tuples). [`folds_to_constant`] follows those rules; monty still evaluates
//! the items itself at run time, only the display's layout depends on this.

use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};

use crate::{
    expressions::{Expr, Literal, Operator, SequenceItem},
    intern::CompileInterns,
};

/// `MAX_INT_SIZE`, `MAX_STR_SIZE` and `MAX_COLLECTION_SIZE` of flowgraph.c.
const MAX_INT_BITS: u64 = 128;
const MAX_STR_SIZE: usize = 4096;
const MAX_COLLECTION_SIZE: usize = 256;

/// A folded constant, as far as the folding rules need to know it.
#[derive(Debug, Clone)]
enum Folded {
    Int(BigInt),
    Bool(bool),
    Float(f64),
    Complex(f64, f64),
    /// A string or bytes of this length (operations on them only depend on it).
    Str(usize),
    Bytes(usize),
    Tuple(Vec<Folded>),
    /// `None`, `...`, a marker: constants no operation folds with.
    Atom,
}

/// Whether CPython 3.14 makes `item` of a display a constant.
pub(super) fn folds_to_constant(item: &SequenceItem, interns: &CompileInterns<'_>) -> bool {
    matches!(item, SequenceItem::Value(e) if fold(&e.expr, interns).is_some())
}

fn fold(expr: &Expr, interns: &CompileInterns<'_>) -> Option<Folded> {
    Some(match expr {
        Expr::Literal(literal) => match literal {
            Literal::Int(n) => Folded::Int(BigInt::from(*n)),
            Literal::LongInt(id) => Folded::Int(interns.get_long_int(*id).clone()),
            Literal::Bool(b) => Folded::Bool(*b),
            Literal::Float(f) => Folded::Float(*f),
            Literal::Complex(imag) => Folded::Complex(0.0, *imag),
            Literal::Str(id) => Folded::Str(interns.get_str(*id).chars().count()),
            Literal::Bytes(id) => Folded::Bytes(interns.get_bytes(*id).len()),
            Literal::None | Literal::Ellipsis | Literal::Marker(_) => Folded::Atom,
        },
        Expr::Tuple(items) => Folded::Tuple(
            items
                .iter()
                .map(|item| match item {
                    SequenceItem::Value(e) => fold(&e.expr, interns),
                    SequenceItem::Unpack(_) => None,
                })
                .collect::<Option<_>>()?,
        ),
        Expr::UnaryMinus(operand) => match fold(&operand.expr, interns)? {
            Folded::Int(n) => Folded::Int(-n),
            Folded::Bool(b) => Folded::Int(-BigInt::from(u8::from(b))),
            Folded::Float(f) => Folded::Float(-f),
            Folded::Complex(re, im) => Folded::Complex(-re, -im),
            _ => return None,
        },
        Expr::UnaryPlus(operand) => match fold(&operand.expr, interns)? {
            Folded::Bool(b) => Folded::Int(BigInt::from(u8::from(b))),
            number @ (Folded::Int(_) | Folded::Float(_) | Folded::Complex(..)) => number,
            _ => return None,
        },
        // `~True` is deprecated: CPython leaves it to run time.
        Expr::UnaryInvert(operand) => match fold(&operand.expr, interns)? {
            Folded::Int(n) => Folded::Int(-n - 1),
            _ => return None,
        },
        Expr::Op { left, op, right } => binary(fold(&left.expr, interns)?, op, fold(&right.expr, interns)?)?,
        _ => return None,
    })
}

/// An int operand: an int or a bool (bools fold as ints; only exact ints
/// are checked against the size limits).
fn int_of(value: &Folded) -> Option<(BigInt, bool)> {
    match value {
        Folded::Int(n) => Some((n.clone(), true)),
        Folded::Bool(b) => Some((BigInt::from(u8::from(*b)), false)),
        _ => None,
    }
}

/// A float operand (an int too large for a float raises: not folded).
fn float_of(value: &Folded) -> Option<f64> {
    match value {
        Folded::Float(f) => Some(*f),
        _ => int_of(value)?.0.to_f64().filter(|f| f.is_finite()),
    }
}

fn is_real(value: &Folded) -> bool {
    matches!(value, Folded::Int(_) | Folded::Bool(_) | Folded::Float(_))
}

/// `left op right` when CPython folds it, else `None` (an operation that
/// raises, or whose result is over the limits, stays code).
fn binary(left: Folded, op: &Operator, right: Folded) -> Option<Folded> {
    use Folded::{Bool, Bytes, Complex, Float, Int, Str, Tuple};
    if let (Some((a, a_exact)), Some((b, b_exact))) = (int_of(&left), int_of(&right)) {
        let exact = a_exact && b_exact;
        return match op {
            Operator::Add => Some(Int(a + b)),
            Operator::Sub => Some(Int(a - b)),
            Operator::Mult => {
                if exact && !a.is_zero() && !b.is_zero() && a.bits() + b.bits() > MAX_INT_BITS {
                    return None;
                }
                Some(Int(a * b))
            }
            Operator::Div => {
                let (a, b) = (a.to_f64()?, b.to_f64()?);
                (b != 0.0 && (a / b).is_finite()).then_some(Float(a / b))
            }
            Operator::FloorDiv | Operator::Mod if b.is_zero() => None,
            Operator::FloorDiv => Some(Int(num_integer::Integer::div_floor(&a, &b))),
            Operator::Mod => Some(Int(num_integer::Integer::mod_floor(&a, &b))),
            Operator::Pow if b.is_negative() => {
                let (a, b) = (a.to_f64()?, b.to_f64()?);
                (a != 0.0).then_some(Float(a.powf(b)))
            }
            Operator::Pow => {
                let exponent = b.to_u64()?;
                if exact && !a.is_zero() && exponent > 0 && a.bits() > MAX_INT_BITS / exponent {
                    return None;
                }
                Some(Int(num_traits::pow::Pow::pow(a, exponent)))
            }
            Operator::LShift => {
                let shift = b.to_u64()?;
                if exact && !a.is_zero() && shift > 0 && (shift > MAX_INT_BITS || a.bits() > MAX_INT_BITS - shift) {
                    return None;
                }
                Some(Int(a << usize::try_from(shift).ok()?))
            }
            Operator::RShift => {
                let shift = b.to_u64()?;
                Some(Int(if shift >= a.bits() {
                    if a.is_negative() {
                        BigInt::from(-1)
                    } else {
                        BigInt::zero()
                    }
                } else {
                    a >> usize::try_from(shift).ok()?
                }))
            }
            Operator::BitAnd | Operator::BitOr | Operator::BitXor => {
                if let (Bool(x), Bool(y)) = (&left, &right) {
                    return Some(Bool(match op {
                        Operator::BitAnd => x & y,
                        Operator::BitOr => x | y,
                        _ => x ^ y,
                    }));
                }
                Some(Int(match op {
                    Operator::BitAnd => a & b,
                    Operator::BitOr => a | b,
                    _ => a ^ b,
                }))
            }
            _ => None,
        };
    }
    if is_real(&left) && is_real(&right) {
        let (a, b) = (float_of(&left)?, float_of(&right)?);
        let result = match op {
            Operator::Add => a + b,
            Operator::Sub => a - b,
            Operator::Mult => a * b,
            Operator::Div | Operator::FloorDiv | Operator::Mod if b == 0.0 => return None,
            Operator::Div => a / b,
            Operator::FloorDiv => (a / b).floor(),
            Operator::Mod => {
                let r = a % b;
                if r != 0.0 && (r < 0.0) != (b < 0.0) { r + b } else { r }
            }
            // A negative base to a fraction is complex: still a constant.
            Operator::Pow if a < 0.0 && b.fract() != 0.0 => return Some(Complex(0.0, 0.0)),
            Operator::Pow if a == 0.0 && b < 0.0 => return None,
            Operator::Pow => a.powf(b),
            _ => return None,
        };
        // An overflow raises OverflowError (`1e308 * 10` is inf, but
        // `10.0 ** 400` raises); only a finite result is sure to fold.
        return result.is_finite().then_some(Float(result));
    }
    let complex = |value: &Folded| match value {
        Complex(re, im) => Some((*re, *im)),
        other => Some((float_of(other)?, 0.0)),
    };
    if matches!(left, Complex(..)) || matches!(right, Complex(..)) {
        let ((a, b), (c, d)) = (complex(&left)?, complex(&right)?);
        return match op {
            Operator::Add => Some(Complex(a + c, b + d)),
            Operator::Sub => Some(Complex(a - c, b - d)),
            Operator::Mult => Some(Complex(a * c - b * d, a * d + b * c)),
            _ => None,
        };
    }
    let count = |value: &Folded| match value {
        Int(n) => n.to_i64(),
        Bool(b) => Some(i64::from(*b)),
        _ => None,
    };
    match (op, &left, &right) {
        (Operator::Add, Str(x), Str(y)) => Some(Str(x + y)),
        (Operator::Add, Bytes(x), Bytes(y)) => Some(Bytes(x + y)),
        (Operator::Add, Tuple(x), Tuple(y)) => Some(Tuple(x.iter().chain(y).cloned().collect())),
        (Operator::Mult, Str(_) | Bytes(_) | Tuple(_), _) => binary(right, op, left),
        (Operator::Mult, _, Str(len) | Bytes(len)) => {
            let n = count(&left)?;
            let exact = matches!(left, Int(_));
            let n = if exact && *len > 0 {
                usize::try_from(n).ok().filter(|n| *n <= MAX_STR_SIZE / len)?
            } else {
                usize::try_from(n).unwrap_or(0)
            };
            Some(if matches!(right, Str(_)) {
                Str(len * n)
            } else {
                Bytes(len * n)
            })
        }
        (Operator::Mult, _, Tuple(items)) => {
            let n = count(&left)?;
            let exact = matches!(left, Int(_));
            let n = if exact && !items.is_empty() {
                // Nested tuples count toward CPython's total-items limit:
                // left to run time here.
                if items.iter().any(|item| matches!(item, Tuple(_))) {
                    return None;
                }
                usize::try_from(n)
                    .ok()
                    .filter(|n| *n <= MAX_COLLECTION_SIZE / items.len())?
            } else {
                usize::try_from(n).unwrap_or(0)
            };
            Some(Tuple(items.iter().cycle().take(items.len() * n).cloned().collect()))
        }
        _ => None,
    }
}
