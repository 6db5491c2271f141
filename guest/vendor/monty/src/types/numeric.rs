//! Rounding helpers shared by immediate and heap-allocated numbers.

use num_bigint::BigInt;
use num_integer::Integer;
use num_traits::Pow;

// chainbox patch: imports for this file's patches (CHAINBOX.md)
use crate::{
    bytecode::VM,
    exception_private::{ExcType, ExcTypeExt, RunResult},
    heap::Heap,
    types::LongInt,
    value::Value,
};

/// Resolves numeric rounding precision through `__index__`, clamping huge integers.
/// User `__round__` methods receive the original argument instead of using this helper.
pub(crate) fn round_digits(ndigits: Option<&Value>, vm: &mut VM<'_>) -> RunResult<Option<i64>> {
    match ndigits {
        None | Some(Value::None) => Ok(None),
        Some(value) => value.saturating_index(vm).map(Some),
    }
}

/// Rounds a small integer without losing precision, promoting an overflowing result.
pub(crate) fn round_int(n: i64, digits: Option<i64>, heap: &Heap) -> Value {
    if let Some(d) = digits.filter(|d| *d < 0) {
        // Any divisor >= 10**20 rounds an i64 to zero; smaller intermediates fit i128.
        let result = match u32::try_from(d.unsigned_abs()) {
            Ok(exp @ ..=19) => {
                let factor = 10_i128.pow(exp);
                let n = i128::from(n);
                let mut q = n / factor;
                let r2 = (n % factor).abs() * 2;
                if r2 > factor || (r2 == factor && q % 2 != 0) {
                    q += if n < 0 { -1 } else { 1 };
                }
                q * factor
            }
            _ => 0,
        };
        match i64::try_from(result) {
            Ok(i) => Value::Int(i),
            Err(_) => LongInt::new(BigInt::from(result)).into_value(heap),
        }
    } else {
        Value::Int(n)
    }
}

/// Rounds a wide integer to a multiple of `10**k`, with ties to even.
pub(crate) fn round_bigint(n: &BigInt, k: u64, heap: &Heap) -> Value {
    let digit_bound = n.bits().saturating_mul(30_103) / 100_000 + 1;
    if k > digit_bound {
        return Value::Int(0);
    }
    let factor = Pow::pow(BigInt::from(10u8), k);
    let (quotient, remainder) = n.div_mod_floor(&factor);
    let twice_remainder = remainder << 1u32;
    let quotient = if twice_remainder > factor || (twice_remainder == factor && quotient.is_odd()) {
        quotient + 1
    } else {
        quotient
    };
    LongInt::new(quotient * factor).into_value(heap)
}

/// Rounds a float, returning an integer only when precision is omitted or `None`.
pub(crate) fn round_float(value: f64, digits: Option<i64>, heap: &Heap) -> RunResult<Value> {
    if let Some(digits) = digits {
        // chainbox patch (CHAINBOX.md)
        Ok(Value::Float(round_float_to_digits(value, digits)?))
    } else {
        LongInt::value_from_f64(bankers_round(value), heap)
    }
}

/// Rounds to the nearest integer, breaking ties toward an even integer.
fn bankers_round(value: f64) -> f64 {
    let floor = value.floor();
    let frac = value - floor;
    if frac < 0.5 {
        floor
    } else if frac > 0.5 {
        floor + 1.0
    } else if floor % 2.0 == 0.0 {
        floor
    } else {
        floor + 1.0
    }
}

/// Rounds decimal places, saturating extreme precisions and preserving signed zero.
fn round_float_to_digits(value: f64, digits: i64) -> RunResult<f64> {
    if !value.is_finite() {
        return Ok(value);
    }
    let rounded = if digits >= 0 {
        // chainbox patch: CPython rounds the exact binary value to a decimal
        // string (`_Py_dg_dtoa` mode 3, ties to even) and reads it back;
        // Rust's fixed-precision formatting does the same. Upstream scaled by
        // 10**digits first, and the product's own rounding could cross a
        // half (`round(0.285, 2)` is 0.28 in CPython). Beyond 323 digits
        // every double rounds to itself (CPython's NDIGITS_MAX).
        let Ok(digits) = usize::try_from(digits) else {
            return Ok(value);
        };
        if digits > 323 {
            return Ok(value);
        }
        format!("{value:.digits$}").parse().unwrap_or(value)
    } else if digits < -308 {
        // CPython's NDIGITS_MIN: every double rounds to zero.
        0.0
    } else {
        // chainbox patch: the same for tens, hundreds, ...: the exact value
        // rounded to a multiple of 10**-digits, ties to even, read back
        // (upstream multiplied by 10**digits, an inexact power:
        // `round(201454.5, -5)` was 199999.99999999997).
        round_to_tens(value.abs(), digits.unsigned_abs())?
    };
    Ok(if rounded == 0.0 {
        0.0_f64.copysign(value)
    } else {
        rounded.copysign(value)
    })
}

/// `magnitude` (finite, non-negative) rounded to the nearest multiple of
/// `10**tens` (ties to even), as CPython's `double_round` for a negative
/// `ndigits`: the quotient is exact, the result its decimal string read
/// back (correctly rounded); `OverflowError` past the float range.
fn round_to_tens(magnitude: f64, tens: u64) -> RunResult<f64> {
    use num_bigint::BigUint;
    use num_traits::Zero;

    let bits = magnitude.to_bits();
    let exponent = i64::try_from((bits >> 52) & 0x7ff).unwrap_or(0);
    let fraction = bits & ((1 << 52) - 1);
    // magnitude = mantissa * 2**power exactly.
    let (mantissa, power) = if exponent == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), exponent - 1075)
    };
    if mantissa == 0 {
        return Ok(0.0);
    }
    let scale = BigUint::from(10u32).pow(u32::try_from(tens).unwrap_or(u32::MAX));
    let shift = usize::try_from(power.unsigned_abs()).unwrap_or(usize::MAX);
    let (numerator, denominator) = if power >= 0 {
        (BigUint::from(mantissa) << shift, scale)
    } else {
        (BigUint::from(mantissa), scale << shift)
    };
    let (mut quotient, remainder) = numerator.div_rem(&denominator);
    let twice = remainder << 1u32;
    if twice > denominator || (twice == denominator && quotient.is_odd()) {
        quotient += 1u32;
    }
    if quotient.is_zero() {
        return Ok(0.0);
    }
    let rounded: f64 = format!("{quotient}e{tens}").parse().unwrap_or(f64::INFINITY);
    if rounded.is_infinite() {
        Err(ExcType::overflow_error("rounded value too large to represent"))
    } else {
        Ok(rounded)
    }
}
