//! chainbox patch: the methods and data attributes of `int` (and `bool`,
//! which answers as an `int`) and `float`, as CPython 3.14 has them.
//!
//! Upstream gave numbers no attribute dispatch at all: `(5).bit_length()`
//! was `AttributeError: 'int' object has no attribute 'bit_length'`. The
//! methods here are `int.bit_length`, `bit_count`, `to_bytes`, `from_bytes`
//! (also on the type), `as_integer_ratio`, `conjugate`, `is_integer` and
//! `float.is_integer`, `as_integer_ratio`, `hex`, `fromhex` (also on the
//! type), `conjugate`; the data attributes `real`, `imag`, `numerator`,
//! `denominator` (int) and `real`, `imag` (float). Read as values without a
//! call, the methods are still `AttributeError`s: monty has no bound methods
//! of builtin values.

use num_bigint::{BigInt, Sign};
use num_traits::{Signed, Zero};
use smallvec::smallvec;

use crate::{
    args::{ArgValues, FromArgs},
    bytecode::{CallResult, VM},
    defer_drop,
    exception_private::{ExcType, ExcTypeExt, RunError, RunResult, SimpleException},
    heap::HeapData,
    intern::StaticStrings,
    py_value::PyValue,
    resource_checks::check_repeat_size,
    types::{
        LongInt, PyTrait, Type,
        bytes::{PyBytes, allocate_bytes, bytes_from_iterable},
        long_int::PyInt,
        str::allocate_string,
        tuple::allocate_tuple,
    },
    value::{EitherStr, Value},
};

/// The names an `int` answers to as a data attribute, and whether each is a
/// method; `None` for a name `int` does not have. Used by attribute writes
/// and deletes, whose error tells the two apart.
pub(crate) fn int_attribute_kind(name: StaticStrings) -> Option<bool> {
    match name {
        StaticStrings::Real | StaticStrings::Imag | StaticStrings::Numerator | StaticStrings::Denominator => {
            Some(false)
        }
        StaticStrings::BitLength
        | StaticStrings::BitCount
        | StaticStrings::ToBytes
        | StaticStrings::FromBytes
        | StaticStrings::AsIntegerRatio
        | StaticStrings::Conjugate
        | StaticStrings::IsInteger => Some(true),
        _ => None,
    }
}

/// As [`int_attribute_kind`], for `float`.
pub(crate) fn float_attribute_kind(name: StaticStrings) -> Option<bool> {
    match name {
        StaticStrings::Real | StaticStrings::Imag => Some(false),
        StaticStrings::IsInteger
        | StaticStrings::AsIntegerRatio
        | StaticStrings::Hex
        | StaticStrings::Fromhex
        | StaticStrings::Conjugate => Some(true),
        _ => None,
    }
}

/// The number type a value is (`int`, `bool` or `float`), if it is one.
pub(crate) fn number_type(value: &Value, vm: &VM<'_>) -> Option<Type> {
    match value {
        Value::Int(_) | Value::InternLongInt(_) => Some(Type::Int),
        Value::Bool(_) => Some(Type::Bool),
        Value::Float(_) => Some(Type::Float),
        Value::Ref(id) if matches!(vm.heap.get(*id), HeapData::LongInt(_)) => Some(Type::Int),
        _ => None,
    }
}

/// The `AttributeError` for writing or deleting an attribute of an `int`,
/// `bool` or `float` (`receiver`): a data attribute is "not writable", named
/// after the type that defines it (`int` for a `bool`), a method
/// "read-only", anything else missing with no `__dict__`.
pub(crate) fn number_attribute_write_error(receiver: Type, name: &EitherStr, vm: &VM<'_>) -> RunError {
    let (owner, kind): (&str, fn(StaticStrings) -> Option<bool>) = if receiver == Type::Float {
        ("float", float_attribute_kind)
    } else {
        ("int", int_attribute_kind)
    };
    let type_name = if receiver == Type::Bool { "bool" } else { owner };
    let attr = name.as_str(vm.interns);
    match name.static_string(vm.interns).and_then(kind) {
        Some(false) => ExcType::attribute_error_not_writable(attr, owner),
        Some(true) => SimpleException::new_msg(
            ExcType::AttributeError,
            format!("'{type_name}' object attribute '{attr}' is read-only"),
        )
        .into(),
        None => ExcType::attribute_error_no_setattr(type_name, attr),
    }
}

/// The data attribute of a number (`n.real`, `x.imag`, `n.denominator`), or
/// `None` for a value that is not a number or a name it has not.
pub(crate) fn number_attribute<'h>(value: &Value, attr: &EitherStr, vm: &mut VM<'h>) -> Option<Value> {
    match value.py_value(vm) {
        PyValue::Int(int) => int_attribute(&int, attr, vm),
        PyValue::Bool(b) => int_attribute(&PyInt::Small(i64::from(b)), attr, vm),
        PyValue::Float(x) => float_attribute(x, attr, vm),
        _ => None,
    }
}

// =============================================================================
// int
// =============================================================================

/// Calls a method of an `int`; `is_bool` when the receiver is a `bool`, which
/// only changes the type named by an `AttributeError` and what `from_bytes`
/// builds.
pub(crate) fn call_int_method<'h>(
    int: &PyInt<'h>,
    is_bool: bool,
    attr: &EitherStr,
    args: ArgValues,
    vm: &mut VM<'h>,
) -> RunResult<CallResult> {
    let type_name = if is_bool { Type::Bool } else { Type::Int };
    let Some(method) = attr
        .static_string(vm.interns)
        .filter(|m| int_attribute_kind(*m) == Some(true))
    else {
        return Err(ExcType::attribute_error_method(type_name, attr, args, vm));
    };
    let value = match method {
        StaticStrings::BitLength => {
            args.check_zero_args("int.bit_length", vm.heap)?;
            int.with_value(
                vm,
                |v| Value::Int(i64::from(64 - v.unsigned_abs().leading_zeros())),
                |v| u64_value(v.bits()),
            )
        }
        StaticStrings::BitCount => {
            args.check_zero_args("int.bit_count", vm.heap)?;
            int.with_value(
                vm,
                |v| Value::Int(i64::from(v.unsigned_abs().count_ones())),
                |v| u64_value(v.magnitude().count_ones()),
            )
        }
        StaticStrings::AsIntegerRatio => {
            args.check_zero_args("int.as_integer_ratio", vm.heap)?;
            let numerator = plain_int(int, vm);
            allocate_tuple(smallvec![numerator, Value::Int(1)], vm.heap)
        }
        StaticStrings::Conjugate => {
            args.check_zero_args("int.conjugate", vm.heap)?;
            plain_int(int, vm)
        }
        StaticStrings::IsInteger => {
            args.check_zero_args("int.is_integer", vm.heap)?;
            Value::Bool(true)
        }
        StaticStrings::ToBytes => int_to_bytes(int, args, vm)?,
        StaticStrings::FromBytes => int_from_bytes(args, is_bool, vm)?,
        _ => unreachable!("int_attribute_kind lists the methods"),
    };
    Ok(CallResult::Value(value))
}

/// Reads a data attribute of an `int` (`real`, `imag`, `numerator`,
/// `denominator`), always a plain `int` (`True.real` is `1`).
pub(crate) fn int_attribute<'h>(int: &PyInt<'h>, attr: &EitherStr, vm: &mut VM<'h>) -> Option<Value> {
    match attr.static_string(vm.interns)? {
        StaticStrings::Real | StaticStrings::Numerator => Some(plain_int(int, vm)),
        StaticStrings::Imag => Some(Value::Int(0)),
        StaticStrings::Denominator => Some(Value::Int(1)),
        _ => None,
    }
}

/// The receiver as an owned plain `int` value (a `bool` becomes `0`/`1`).
fn plain_int<'h>(int: &PyInt<'h>, vm: &mut VM<'h>) -> Value {
    int.py_pos_impl(vm)
        .expect("an int's unary plus cannot fail")
        .expect("an int has unary plus")
}

/// A bit count as an `int`.
fn u64_value(n: u64) -> Value {
    Value::Int(i64::try_from(n).expect("a bit count fits in i64"))
}

/// Argument shape for `int.to_bytes(length=1, byteorder='big', *, signed=False)`,
/// an Argument Clinic method. The values are converted in the body, in
/// CPython's order (`length`, then `byteorder`'s type, then `signed`).
#[derive(FromArgs)]
#[from_args(name = "to_bytes", style = c_named)]
struct ToBytesArgs {
    #[from_args(default)]
    length: Option<Value>,
    #[from_args(default)]
    byteorder: Option<Value>,
    #[from_args(kw_only, default)]
    signed: Option<Value>,
}

/// Argument shape for `int.from_bytes(bytes, byteorder='big', *, signed=False)`.
#[derive(FromArgs)]
#[from_args(name = "from_bytes", style = c_named)]
struct FromBytesArgs {
    bytes: Value,
    #[from_args(default)]
    byteorder: Option<Value>,
    #[from_args(kw_only, default)]
    signed: Option<Value>,
}

/// Checks `byteorder`'s type as the clinic's `unicode` converter does;
/// returns it to be judged later, after the other arguments are converted.
fn byteorder_type(byteorder: Option<&Value>, function: &str, vm: &VM<'_>) -> RunResult<()> {
    match byteorder {
        Some(v) if !v.is_str(vm.heap) => Err(ExcType::type_error_bad_arg_named(
            function,
            "byteorder",
            "str",
            v.py_type_name(vm),
        )),
        _ => Ok(()),
    }
}

/// Whether `byteorder` (already known to be a str, or absent: `'big'`) is
/// `'little'`, or CPython's `ValueError` for any other text.
fn byteorder_is_little(byteorder: Option<&Value>, vm: &VM<'_>) -> RunResult<bool> {
    match byteorder.map(|v| v.to_str(vm)).transpose()? {
        None | Some("big") => Ok(false),
        Some("little") => Ok(true),
        Some(_) => {
            Err(SimpleException::new_msg(ExcType::ValueError, "byteorder must be either 'little' or 'big'").into())
        }
    }
}

/// The clinic's `bool` converter: any object's truth value.
fn truth(value: Option<&Value>, vm: &mut VM<'_>) -> RunResult<bool> {
    value.map_or(Ok(false), |v| v.py_bool(vm))
}

/// `int.to_bytes(length=1, byteorder='big', *, signed=False)`.
fn int_to_bytes<'h>(int: &PyInt<'h>, args: ArgValues, vm: &mut VM<'h>) -> RunResult<Value> {
    let ToBytesArgs {
        length,
        byteorder,
        signed,
    } = ToBytesArgs::from_args(args, vm)?;
    defer_drop!(length, vm);
    defer_drop!(byteorder, vm);
    defer_drop!(signed, vm);
    // `Py_ssize_t`: `__index__`, and an OverflowError past the platform's
    // size (32 bits on wasm32, as the CPython guest).
    let length = match length {
        Some(length) => {
            let n = length.as_int(vm)?;
            isize::try_from(n).map_err(|_| ExcType::overflow_c_ssize_t())?;
            n
        }
        None => 1,
    };
    byteorder_type(byteorder.as_ref(), "to_bytes", vm)?;
    let signed = truth(signed.as_ref(), vm)?;
    let little = byteorder_is_little(byteorder.as_ref(), vm)?;
    let Ok(length) = usize::try_from(length) else {
        return Err(SimpleException::new_msg(ExcType::ValueError, "length argument must be non-negative").into());
    };
    let value = int.with_value(vm, BigInt::from, Clone::clone);
    if !signed && value.is_negative() {
        return Err(SimpleException::new_msg(ExcType::OverflowError, "can't convert negative int to unsigned").into());
    }
    // The shortest little-endian form: two's complement when signed.
    let mut bytes = if value.is_zero() {
        Vec::new()
    } else if signed {
        value.to_signed_bytes_le()
    } else {
        value.magnitude().to_bytes_le()
    };
    if bytes.len() > length {
        return Err(SimpleException::new_msg(ExcType::OverflowError, "int too big to convert").into());
    }
    check_repeat_size(length, 1, &vm.heap.tracker)?;
    bytes.resize(length, if value.is_negative() { 0xff } else { 0 });
    if !little {
        bytes.reverse();
    }
    Ok(allocate_bytes(bytes, vm.heap))
}

/// `int.from_bytes(bytes, byteorder='big', *, signed=False)`, on the type or
/// an instance; `bool.from_bytes` answers `bool(result)`.
pub(crate) fn int_from_bytes(args: ArgValues, is_bool: bool, vm: &mut VM<'_>) -> RunResult<Value> {
    let FromBytesArgs {
        bytes,
        byteorder,
        signed,
    } = FromBytesArgs::from_args(args, vm)?;
    defer_drop!(bytes, vm);
    defer_drop!(byteorder, vm);
    defer_drop!(signed, vm);
    byteorder_type(byteorder.as_ref(), "from_bytes", vm)?;
    let signed = truth(signed.as_ref(), vm)?;
    let little = byteorder_is_little(byteorder.as_ref(), vm)?;
    // `PyObject_Bytes`: a bytes object as it is, any iterable but a str
    // item by item (`__index__`, each in range(0, 256)).
    let owned;
    let view = PyBytes::from_value(bytes, vm);
    let data: &[u8] = if let Some(view) = &view {
        view.as_slice(vm)
    } else if !bytes.is_str(vm.heap) && bytes.py_is_iterable(vm) {
        owned = bytes_from_iterable(bytes, vm)?;
        &owned
    } else {
        return Err(ExcType::type_error(format!(
            "cannot convert '{}' object to bytes",
            bytes.py_type_name(vm)
        )));
    };
    let value = match (signed, little) {
        (true, true) => BigInt::from_signed_bytes_le(data),
        (true, false) => BigInt::from_signed_bytes_be(data),
        (false, true) => BigInt::from_bytes_le(Sign::Plus, data),
        (false, false) => BigInt::from_bytes_be(Sign::Plus, data),
    };
    Ok(if is_bool {
        Value::Bool(!value.is_zero())
    } else {
        LongInt::new(value).into_value(vm.heap)
    })
}

// =============================================================================
// float
// =============================================================================

/// Calls a method of a `float`.
pub(crate) fn call_float_method(
    value: f64,
    attr: &EitherStr,
    args: ArgValues,
    vm: &mut VM<'_>,
) -> RunResult<CallResult> {
    let Some(method) = attr
        .static_string(vm.interns)
        .filter(|m| float_attribute_kind(*m) == Some(true))
    else {
        return Err(ExcType::attribute_error_method(Type::Float, attr, args, vm));
    };
    let result = match method {
        StaticStrings::IsInteger => {
            args.check_zero_args("float.is_integer", vm.heap)?;
            Value::Bool(value.is_finite() && value.fract() == 0.0)
        }
        StaticStrings::Conjugate => {
            args.check_zero_args("float.conjugate", vm.heap)?;
            Value::Float(value)
        }
        StaticStrings::Hex => {
            args.check_zero_args("float.hex", vm.heap)?;
            allocate_string(float_hex(value), vm.heap)
        }
        StaticStrings::AsIntegerRatio => {
            args.check_zero_args("float.as_integer_ratio", vm.heap)?;
            float_as_integer_ratio(value, vm)?
        }
        StaticStrings::Fromhex => float_fromhex(args, vm)?,
        _ => unreachable!("float_attribute_kind lists the methods"),
    };
    Ok(CallResult::Value(result))
}

/// Reads a data attribute of a `float` (`real`, `imag`).
pub(crate) fn float_attribute(value: f64, attr: &EitherStr, vm: &VM<'_>) -> Option<Value> {
    match attr.static_string(vm.interns)? {
        StaticStrings::Real => Some(Value::Float(value)),
        StaticStrings::Imag => Some(Value::Float(0.0)),
        _ => None,
    }
}

/// `float.as_integer_ratio()`'s errors for infinity and NaN, which
/// `timedelta * float` raises too.
pub(crate) fn check_ratio_finite(value: f64) -> RunResult<()> {
    if value.is_infinite() {
        return Err(
            SimpleException::new_msg(ExcType::OverflowError, "cannot convert Infinity to integer ratio").into(),
        );
    }
    if value.is_nan() {
        return Err(SimpleException::new_msg(ExcType::ValueError, "cannot convert NaN to integer ratio").into());
    }
    Ok(())
}

/// A finite float's magnitude, exactly, as `(n, k)` with `|value| == n / 2**k`
/// in lowest terms: the shared core of `as_integer_ratio`, `timedelta *
/// float` and `Decimal(float)`.
pub(crate) fn float_as_ratio(value: f64) -> (BigInt, u32) {
    let bits = value.to_bits();
    let biased = i32::try_from((bits >> 52) & 0x7ff).expect("11-bit field");
    let fraction = bits & ((1 << 52) - 1);
    let (mut mantissa, mut exponent) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), biased - 1075)
    };
    if mantissa == 0 {
        return (BigInt::from(0u8), 0);
    }
    if exponent < 0 {
        // Strip the factors of two the denominator shares.
        let zeros = mantissa.trailing_zeros().min(exponent.unsigned_abs());
        mantissa >>= zeros;
        exponent += i32::try_from(zeros).expect("at most 63");
    }
    if exponent >= 0 {
        (BigInt::from(mantissa) << exponent.unsigned_abs(), 0)
    } else {
        (BigInt::from(mantissa), exponent.unsigned_abs())
    }
}

/// `float.as_integer_ratio()`: the exact value as a fraction in lowest terms
/// with a positive (power of two) denominator.
fn float_as_integer_ratio(value: f64, vm: &mut VM<'_>) -> RunResult<Value> {
    check_ratio_finite(value)?;
    let (mut numerator, shift) = float_as_ratio(value);
    if value.is_sign_negative() {
        numerator = -numerator;
    }
    let numerator = LongInt::new(numerator).into_value(vm.heap);
    let denominator = LongInt::new(BigInt::from(1u8) << shift).into_value(vm.heap);
    Ok(allocate_tuple(smallvec![numerator, denominator], vm.heap))
}

/// `float.hex()`: `[-]0x<1 or 0>.<13 hex digits>p<exponent>`, `0x0.0p+0`
/// for zero, and `inf`/`-inf`/`nan` as `repr` writes them.
pub(crate) fn float_hex(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value < 0.0 { "-inf" } else { "inf" }.to_owned();
    }
    let sign = if value.is_sign_negative() { "-" } else { "" };
    if value == 0.0 {
        return format!("{sign}0x0.0p+0");
    }
    let bits = value.to_bits();
    let biased = i64::try_from((bits >> 52) & 0x7ff).expect("11 bits");
    let fraction = bits & ((1 << 52) - 1);
    let (lead, exponent) = if biased == 0 { (0, -1022) } else { (1, biased - 1023) };
    let exponent_sign = if exponent < 0 { '-' } else { '+' };
    format!(
        "{sign}0x{lead}.{fraction:013x}p{exponent_sign}{}",
        exponent.unsigned_abs()
    )
}

/// `float.fromhex(string)`, on the type or an instance: one positional str.
pub(crate) fn float_fromhex(args: ArgValues, vm: &mut VM<'_>) -> RunResult<Value> {
    let string = args.get_one_arg("float.fromhex", vm.heap)?;
    defer_drop!(string, vm);
    if !string.is_str(vm.heap) {
        return Err(ExcType::type_error("bad argument type for built-in operation"));
    }
    parse_hex_float(string.to_str(vm)?.as_bytes()).map(Value::Float)
}

/// The parse error of `float.fromhex`.
fn hex_parse_error() -> RunError {
    SimpleException::new_msg(ExcType::ValueError, "invalid hexadecimal floating-point string").into()
}

/// The overflow error of `float.fromhex`.
fn hex_overflow_error() -> RunError {
    SimpleException::new_msg(
        ExcType::OverflowError,
        "hexadecimal value too large to represent as a float",
    )
    .into()
}

/// The value of a hex digit.
fn hex_digit(c: u8) -> Option<u32> {
    char::from(c).to_digit(16)
}

/// CPython's `Py_ISSPACE`: ASCII whitespace.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// `[sign](inf|infinity|nan)`, any case, as `_Py_parse_inf_or_nan`: the
/// value and the bytes it took, or `None`.
fn parse_inf_or_nan(s: &[u8]) -> Option<(f64, usize)> {
    let (negative, start) = match s.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let rest = &s[start..];
    let starts = |word: &str| rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word.as_bytes());
    let (value, len) = if starts("infinity") {
        (f64::INFINITY, 8)
    } else if starts("inf") {
        (f64::INFINITY, 3)
    } else if starts("nan") {
        (f64::NAN, 3)
    } else {
        return None;
    };
    Some((if negative { -value } else { value }, start + len))
}

/// CPython's `float_fromhex` parse and correctly rounded (half to even)
/// conversion, step for step.
fn parse_hex_float(text: &[u8]) -> RunResult<f64> {
    const DBL_MIN_EXP: i64 = -1021;
    const DBL_MAX_EXP: i64 = 1024;
    const DBL_MANT_DIG: i64 = 53;
    // CPython's bound on the digit count, with a 64-bit C `long`.
    const MAX_DIGITS: i64 = {
        let a = DBL_MIN_EXP - DBL_MANT_DIG - i64::MIN / 2;
        let b = i64::MAX / 2 + 1 - DBL_MAX_EXP;
        (if a < b { a } else { b }) / 4
    };

    let at = |i: usize| text.get(i).copied().unwrap_or(0);
    let mut s = 0;
    while is_space(at(s)) {
        s += 1;
    }
    let finish = |x: f64, mut s: usize| -> RunResult<f64> {
        while is_space(at(s)) {
            s += 1;
        }
        if s == text.len() { Ok(x) } else { Err(hex_parse_error()) }
    };
    if let Some((x, len)) = parse_inf_or_nan(&text[s..]) {
        return finish(x, s + len);
    }
    let mut negate = false;
    match at(s) {
        b'-' => {
            negate = true;
            s += 1;
        }
        b'+' => s += 1,
        _ => {}
    }
    let sign = |x: f64| if negate { -x } else { x };
    // [0x]
    if at(s) == b'0' && matches!(at(s + 1), b'x' | b'X') {
        s += 2;
    }
    // coefficient: <integer> [. <fraction>]
    let coeff_start = s;
    while hex_digit(at(s)).is_some() {
        s += 1;
    }
    let int_end = s;
    let coeff_digits: Vec<u32>;
    let fdigits;
    if at(s) == b'.' {
        s += 1;
        let frac_start = s;
        while hex_digit(at(s)).is_some() {
            s += 1;
        }
        fdigits = s - frac_start;
        coeff_digits = text[coeff_start..int_end]
            .iter()
            .chain(&text[frac_start..s])
            .filter_map(|c| hex_digit(*c))
            .collect();
    } else {
        fdigits = 0;
        coeff_digits = text[coeff_start..int_end]
            .iter()
            .filter_map(|c| hex_digit(*c))
            .collect();
    }
    let mut ndigits = coeff_digits.len();
    if ndigits == 0 {
        return Err(hex_parse_error());
    }
    if i64::try_from(ndigits).map_or(true, |n| n > MAX_DIGITS) {
        return Err(SimpleException::new_msg(ExcType::ValueError, "hexadecimal string too long to convert").into());
    }
    // [p <exponent>]
    let mut exp: i64 = 0;
    if matches!(at(s), b'p' | b'P') {
        s += 1;
        let exp_start = s;
        if matches!(at(s), b'-' | b'+') {
            s += 1;
        }
        if !at(s).is_ascii_digit() {
            return Err(hex_parse_error());
        }
        while at(s).is_ascii_digit() {
            s += 1;
        }
        // `strtol` saturates.
        let digits = std::str::from_utf8(&text[exp_start..s]).expect("ASCII");
        exp = digits
            .parse::<i64>()
            .unwrap_or(if digits.starts_with('-') { i64::MIN } else { i64::MAX });
    }
    // digit(j): the j-th least significant hex digit.
    let digit = |j: usize| coeff_digits[coeff_digits.len() - 1 - j];

    // Discard leading zeros, and catch extreme overflow and underflow.
    while ndigits > 0 && digit(ndigits - 1) == 0 {
        ndigits -= 1;
    }
    if ndigits == 0 || exp < i64::MIN / 2 {
        return finish(sign(0.0), s);
    }
    if exp > i64::MAX / 2 {
        return Err(hex_overflow_error());
    }
    let ndigits_i = i64::try_from(ndigits).expect("checked against MAX_DIGITS");
    // Adjust the exponent for the fractional part.
    exp -= 4 * i64::try_from(fdigits).expect("fewer digits than MAX_DIGITS");
    // top_exp = 1 more than the exponent of the most significant bit.
    let mut top_exp = exp + 4 * (ndigits_i - 1);
    let mut d = digit(ndigits - 1);
    while d != 0 {
        top_exp += 1;
        d /= 2;
    }
    if top_exp < DBL_MIN_EXP - DBL_MANT_DIG {
        return finish(sign(0.0), s);
    }
    if top_exp > DBL_MAX_EXP {
        return Err(hex_overflow_error());
    }
    // lsb = exponent of the least significant bit of the rounded value.
    let lsb = top_exp.max(DBL_MIN_EXP) - DBL_MANT_DIG;
    let mut x = 0.0_f64;
    if exp >= lsb {
        // No rounding required.
        for i in (0..ndigits).rev() {
            x = 16.0 * x + f64::from(digit(i));
        }
        x = ldexp(x, exp);
        return finish(sign(x), s);
    }
    // Rounding required: key_digit holds the first bit rounded away.
    let half_eps: u32 = 1 << ((lsb - exp - 1) % 4);
    let key_digit = usize::try_from((lsb - exp - 1) / 4).expect("nonnegative");
    for i in (key_digit + 1..ndigits).rev() {
        x = 16.0 * x + f64::from(digit(i));
    }
    let key = digit(key_digit);
    x = 16.0 * x + f64::from(key & (16 - 2 * half_eps));
    // Round half to even: up if bit lsb-1 is set and any of bits lsb, lsb-2, lsb-3, ... is.
    if key & half_eps != 0 {
        let round_up = key & (3 * half_eps - 1) != 0
            || (half_eps == 8 && key_digit + 1 < ndigits && digit(key_digit + 1) & 1 != 0)
            || (0..key_digit).any(|i| digit(i) != 0);
        if round_up {
            x += f64::from(2 * half_eps);
            if top_exp == DBL_MAX_EXP && x == ldexp(f64::from(2 * half_eps), DBL_MANT_DIG) {
                // The pre-rounded value was below 2**DBL_MAX_EXP, the rounded one is not.
                return Err(hex_overflow_error());
            }
        }
    }
    x = ldexp(
        x,
        exp + 4 * i64::try_from(key_digit).expect("fewer digits than MAX_DIGITS"),
    );
    finish(sign(x), s)
}

/// `x * 2**exp` for a positive integral `x` below `2**55` whose result
/// CPython's algorithm has made exactly representable: a scaling with no
/// rounding, done in steps so no intermediate leaves the normal range.
fn ldexp(mut x: f64, mut exp: i64) -> f64 {
    while exp > 1023 {
        x *= pow2(1023);
        exp -= 1023;
    }
    while exp < -1022 {
        x *= pow2(-1022);
        exp += 1022;
    }
    x * pow2(exp)
}

/// `2**exp` for a normal exponent, built from its bits.
fn pow2(exp: i64) -> f64 {
    debug_assert!((-1022..=1023).contains(&exp));
    f64::from_bits(u64::try_from(exp + 1023).expect("a normal exponent") << 52)
}
