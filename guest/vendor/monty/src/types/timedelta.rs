//! Python `datetime.timedelta` implementation.
//!
//! Monty stores timedeltas using `chrono::TimeDelta`, while preserving CPython's
//! normalized `(days, seconds, microseconds)` semantics for constructors, arithmetic,
//! and formatting.

// chainbox patch: imports for this file's patches (CHAINBOX.md)
use std::{cmp::Ordering, fmt::Write, hash::Hash};

use chrono::TimeDelta as ChronoTimeDelta;
use smallvec::smallvec;

use crate::{
    args::{ArgValues, FromArgs, FromValue, FromValueFail, is_long_int},
    bytecode::{CallResult, VM},
    exception_private::{ExcType, ExcTypeExt, RunError, RunResult, SimpleException},
    hash::{HashValue, hash_i64, hash_tuple_of},
    heap::{Heap, HeapData, HeapId, HeapItem, HeapObjectRead, HeapReadOutput},
    intern::StaticStrings,
    types::{
        CmpOrder, LazyHeapSet, PyTrait, Type, date, datetime, long_int, number_methods, str::allocate_string,
        tuple::allocate_tuple,
    },
    value::{EitherStr, Value},
};

/// Minimum allowed day magnitude for `timedelta`.
pub(crate) const MIN_TIMEDELTA_DAYS: i32 = -999_999_999;
/// Maximum allowed day magnitude for `timedelta`.
pub(crate) const MAX_TIMEDELTA_DAYS: i32 = 999_999_999;

const DAY_SECONDS: i32 = 86_400;
pub(crate) const SECONDS_PER_HOUR: i32 = 3_600;
pub(crate) const SECONDS_PER_MINUTE: i32 = 60;
pub(crate) const MICROSECONDS_PER_SECOND: i128 = 1_000_000;
const MILLISECONDS_PER_SECOND: i128 = 1_000;
pub(crate) const DAY_MICROSECONDS: i128 = (DAY_SECONDS as i128) * MICROSECONDS_PER_SECOND;
const HOUR_MICROSECONDS: i128 = (SECONDS_PER_HOUR as i128) * MICROSECONDS_PER_SECOND;
const MINUTE_MICROSECONDS: i128 = (SECONDS_PER_MINUTE as i128) * MICROSECONDS_PER_SECOND;

/// `datetime.timedelta` storage backed by `chrono::TimeDelta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub(crate) struct TimeDelta(pub(crate) ChronoTimeDelta);

/// Creates a normalized timedelta value from CPython components.
pub(crate) fn new(days: i32, seconds: i32, microseconds: i32) -> RunResult<TimeDelta> {
    if !(MIN_TIMEDELTA_DAYS..=MAX_TIMEDELTA_DAYS).contains(&days) {
        return Err(SimpleException::new_msg(
            ExcType::OverflowError,
            format!("days={days}; must have magnitude <= 999999999"),
        )
        .into());
    }
    if !(0..DAY_SECONDS).contains(&seconds)
        || !(0..i32::try_from(MICROSECONDS_PER_SECOND).unwrap()).contains(&microseconds)
    {
        return Err(SimpleException::new_msg(ExcType::ValueError, "timedelta normalized fields out of range").into());
    }
    let total_microseconds =
        i128::from(days) * DAY_MICROSECONDS + i128::from(seconds) * MICROSECONDS_PER_SECOND + i128::from(microseconds);
    from_total_microseconds(total_microseconds)
}

/// Returns CPython normalized `(days, seconds, microseconds)` components.
#[must_use]
pub(crate) fn components(delta: &TimeDelta) -> (i32, i32, i32) {
    let total_microseconds = total_microseconds(delta);
    let days = total_microseconds.div_euclid(DAY_MICROSECONDS);
    let rem = total_microseconds.rem_euclid(DAY_MICROSECONDS);
    let seconds = rem / MICROSECONDS_PER_SECOND;
    let micros = rem % MICROSECONDS_PER_SECOND;
    (
        i32::try_from(days).expect("chrono day range fits CPython i32 day bounds"),
        i32::try_from(seconds).expect("seconds are bounded by one day"),
        i32::try_from(micros).expect("microseconds are bounded by one second"),
    )
}

/// Returns the duration as total microseconds.
#[must_use]
pub(crate) fn total_microseconds(delta: &TimeDelta) -> i128 {
    // `subsec_nanos` can be negative for negative durations; summing both parts
    // yields an exact signed duration as long as we keep microsecond precision.
    let seconds = i128::from(delta.0.num_seconds());
    let microseconds =
        i128::from(delta.0.subsec_nanos() / i32::try_from(MILLISECONDS_PER_SECOND).expect("1000 fits in i32"));
    seconds * MICROSECONDS_PER_SECOND + microseconds
}

/// Returns the duration as total whole seconds plus fractional microseconds.
///
/// chainbox patch: rounded once, as CPython's `delta / timedelta(seconds=1)`:
/// past 2**53 microseconds the float of the count is already rounded, and
/// `timedelta.min.total_seconds()` came out as `-86399999913599.98`.
pub(crate) fn total_seconds(delta: &TimeDelta, heap: &Heap) -> RunResult<f64> {
    microseconds_ratio(total_microseconds(delta), MICROSECONDS_PER_SECOND, heap)
}

/// `a / b` of two microsecond counts (`b` non-zero), rounded once as CPython's
/// int true division: past 2**53 the float of either count is already rounded.
fn microseconds_ratio(a: i128, b: i128, heap: &Heap) -> RunResult<f64> {
    let exact = 1 << f64::MANTISSA_DIGITS;
    if a.unsigned_abs() < exact && b.unsigned_abs() < exact {
        return Ok(a as f64 / b as f64);
    }
    long_int::bigint_true_divide(
        &num_bigint::BigInt::from(a),
        &num_bigint::BigInt::from(b),
        &heap.tracker,
    )
}

/// Returns total seconds only when exact (no microseconds), otherwise `None`.
#[must_use]
pub(crate) fn exact_total_seconds(delta: &TimeDelta) -> Option<i128> {
    let (days, seconds, microseconds) = components(delta);
    if microseconds == 0 {
        Some(i128::from(days) * i128::from(DAY_SECONDS) + i128::from(seconds))
    } else {
        None
    }
}

/// Exposes the underlying chrono duration for datetime/date arithmetic.
#[must_use]
pub(crate) fn chrono_delta(delta: &TimeDelta) -> ChronoTimeDelta {
    delta.0
}

/// Divides a timedelta by an integer divisor using CPython's rounding rule.
///
/// CPython rounds to the nearest microsecond with ties going to the even result,
/// rather than truncating toward zero.
#[must_use]
pub(crate) fn div_microseconds_round_ties_even(total_microseconds: i128, divisor: i128) -> i128 {
    debug_assert_ne!(divisor, 0);

    let negative = total_microseconds.is_negative() ^ divisor.is_negative();
    let numerator = total_microseconds.abs();
    let denominator = divisor.abs();
    let quotient = numerator / denominator;
    let remainder = numerator % denominator;

    let rounded = match (remainder * 2).cmp(&denominator) {
        Ordering::Less => quotient,
        Ordering::Greater => quotient + 1,
        Ordering::Equal => {
            if quotient % 2 == 0 {
                quotient
            } else {
                quotient + 1
            }
        }
    };

    if negative { -rounded } else { rounded }
}

/// Converts a chrono duration to Monty's bounded timedelta.
pub(crate) fn from_chrono(delta: ChronoTimeDelta) -> RunResult<TimeDelta> {
    from_total_microseconds(
        i128::from(delta.num_seconds()) * MICROSECONDS_PER_SECOND
            + i128::from(delta.subsec_nanos() / i32::try_from(MILLISECONDS_PER_SECOND).expect("1000 fits in i32")),
    )
}

/// chainbox patch: `timedelta * float` (and, with `divide`, `timedelta /
/// float`), as CPython computes them: the microseconds times (or divided by)
/// the float's exact ratio (`as_integer_ratio`), rounded half to even.
/// Upstream refused a float with a TypeError.
fn scale_by_float(microseconds: i128, factor: f64, divide: bool) -> RunResult<TimeDelta> {
    use num_bigint::BigInt;
    use num_integer::Integer;
    use num_traits::Zero;

    number_methods::check_ratio_finite(factor)?;
    let (numerator, shift) = number_methods::float_as_ratio(factor);
    let power = BigInt::from(1) << shift;
    let (mut dividend, divisor) = if divide {
        if numerator.is_zero() {
            return Err(ExcType::zero_division().into());
        }
        (BigInt::from(microseconds) * power, numerator)
    } else {
        (BigInt::from(microseconds) * numerator, power)
    };
    if factor.is_sign_negative() {
        dividend = -dividend;
    }
    let (quotient, remainder) = dividend.div_mod_floor(&divisor);
    let twice = remainder * 2;
    let total = if twice > divisor || (twice == divisor && quotient.is_odd()) {
        quotient + 1
    } else {
        quotient
    };
    i128::try_from(&total).map_or_else(|_| Err(c_int_overflow()), from_total_microseconds)
}

/// CPython's error for a day count beyond a C int.
fn c_int_overflow() -> RunError {
    SimpleException::new_msg(ExcType::OverflowError, "Python int too large to convert to C int").into()
}

/// Builds a normalized timedelta from an arbitrary microsecond count.
pub(crate) fn from_total_microseconds(total_microseconds: i128) -> RunResult<TimeDelta> {
    let days = total_microseconds.div_euclid(DAY_MICROSECONDS);
    if i32::try_from(days).is_err() {
        // chainbox patch: CPython converts the day count to a C int first
        // (`PyLong_AsInt` in `microseconds_to_delta_ex`), on 64-bit too.
        return Err(c_int_overflow());
    }
    if !(i128::from(MIN_TIMEDELTA_DAYS)..=i128::from(MAX_TIMEDELTA_DAYS)).contains(&days) {
        return Err(SimpleException::new_msg(
            ExcType::OverflowError,
            format!("days={days}; must have magnitude <= 999999999"),
        )
        .into());
    }

    let seconds = total_microseconds.div_euclid(MICROSECONDS_PER_SECOND);
    let micros = total_microseconds.rem_euclid(MICROSECONDS_PER_SECOND);

    let seconds = i64::try_from(seconds)
        .map_err(|_| SimpleException::new_msg(ExcType::OverflowError, "timedelta value out of range"))?;
    let nanos = u32::try_from(micros * MILLISECONDS_PER_SECOND)
        .expect("microsecond remainder is in 0..1_000_000 and fits u32 nanoseconds");

    let delta = ChronoTimeDelta::new(seconds, nanos)
        .ok_or_else(|| SimpleException::new_msg(ExcType::OverflowError, "timedelta value out of range"))?;
    Ok(TimeDelta(delta))
}

/// Total microseconds of a `timedelta` divisor, or `None` if `other` is not one.
///
/// The zero check lives here so `/`, `//`, `%` and `divmod` all raise the same
/// `ZeroDivisionError` rather than each repeating it.
pub(crate) fn rhs_microseconds(other: &Value, vm: &VM<'_>) -> RunResult<Option<i128>> {
    let Value::Ref(id) = other else {
        return Ok(None);
    };
    let HeapData::TimeDelta(rhs) = vm.heap.get(*id) else {
        return Ok(None);
    };
    let total = total_microseconds(rhs);
    if total == 0 {
        return Err(ExcType::zero_division().into());
    }
    Ok(Some(total))
}

/// Wraps a `td // td` quotient as a Python int.
///
/// Dividing by `timedelta.resolution` counts every microsecond in the range, so
/// the quotient reaches ~8.6e19 and overflows `i64` — hence the `LongInt` arm.
pub(crate) fn int_from_microseconds(quotient: i128, heap: &Heap) -> Value {
    match i64::try_from(quotient) {
        Ok(quotient) => Value::Int(quotient),
        Err(_) => long_int::wide_i128_into_value(quotient, heap),
    }
}

/// Python's floor division and remainder for `i128`.
///
/// Rust's `/` truncates toward zero and `div_euclid` forces a positive
/// remainder; Python floors and gives the remainder the *divisor's* sign, so
/// `3 // -2` is `-2` remainder `-1`. Callers must reject a zero divisor first;
/// both operands are microsecond counts, far inside `i128`, so neither step
/// can overflow.
pub(crate) fn floor_div_rem(total: i128, divisor: i128) -> (i128, i128) {
    let quotient = total / divisor;
    let remainder = total % divisor;
    if remainder != 0 && (remainder < 0) != (divisor < 0) {
        (quotient - 1, remainder + divisor)
    } else {
        (quotient, remainder)
    }
}

/// Allocates a `timedelta` from a microsecond count known to be in range.
///
/// Used for the class constants (`resolution`, `min`, `max`) and by
/// `utcoffset()`; anything derived from user input must go through [`new`] or
/// [`from_total_microseconds`] so the overflow is reported rather than panicked.
pub(crate) fn allocate_micros(total_microseconds: i128, heap: &Heap) -> Value {
    let delta = from_total_microseconds(total_microseconds).expect("caller guarantees an in-range timedelta");
    Value::Ref(heap.allocate(HeapData::TimeDelta(delta)))
}

/// Creates a `timedelta` from constructor arguments.
///
// chainbox patch (CHAINBOX.md)
/// Takes `days`, `seconds`, `microseconds`, `milliseconds`, `minutes`,
/// `hours`, `weeks`, by position or by name.
pub(crate) fn init(vm: &mut VM<'_>, args: ArgValues) -> RunResult<Value> {
    let TimedeltaArgs {
        days,
        seconds,
        microseconds,
        milliseconds,
        minutes,
        hours,
        weeks,
    } = TimedeltaArgs::from_args(args, vm)?;

    // CPython's `delta_new`: each component in this order, int parts exact,
    // the fractions of float components summed as a float and rounded half
    // to even at the end.
    let mut leftover = 0.0;
    let mut total_microseconds = 0;
    for (tag, component, unit) in [
        ("microseconds", microseconds, 1),
        ("milliseconds", milliseconds, MILLISECONDS_PER_SECOND),
        ("seconds", seconds, MICROSECONDS_PER_SECOND),
        ("minutes", minutes, MINUTE_MICROSECONDS),
        ("hours", hours, HOUR_MICROSECONDS),
        ("days", days, DAY_MICROSECONDS),
        ("weeks", weeks, 7 * DAY_MICROSECONDS),
    ] {
        total_microseconds = accumulate(total_microseconds, tag, component, unit, &mut leftover)?;
    }
    if leftover != 0.0 {
        let mut whole = leftover.round();
        if (whole - leftover).abs() == 0.5 {
            let odd = if total_microseconds & 1 == 1 { 1.0 } else { 0.0 };
            whole = 2.0 * ((leftover + odd) * 0.5).round() - odd;
        }
        total_microseconds = total_microseconds
            .checked_add(float_to_i128(whole)?)
            .ok_or_else(c_int_overflow)?;
    }

    let delta = from_total_microseconds(total_microseconds)?;
    Ok(Value::Ref(vm.heap.allocate(HeapData::TimeDelta(delta))))
}

/// Argument shape for `timedelta(days=0, seconds=0, microseconds=0, milliseconds=0, minutes=0, hours=0, weeks=0)`.
///
/// chainbox patch: all seven are positional-or-keyword, as CPython's
/// `delta_new` (`PyArg_ParseTupleAndKeywords` with `"|OOOOOOO:__new__"`), whose
/// errors name `__new__()`; upstream took only three positionally, so
/// `timedelta(1, 2, 3, 4)` raised `TypeError`. All default to 0 so an empty
/// `timedelta()` is legal.
#[derive(FromArgs)]
#[from_args(name = "__new__", style = c_named, at_most_total)]
struct TimedeltaArgs {
    #[from_args(default)]
    days: DeltaComponent,
    #[from_args(default)]
    seconds: DeltaComponent,
    #[from_args(default)]
    microseconds: DeltaComponent,
    #[from_args(default)]
    milliseconds: DeltaComponent,
    #[from_args(default)]
    minutes: DeltaComponent,
    #[from_args(default)]
    hours: DeltaComponent,
    #[from_args(default)]
    weeks: DeltaComponent,
}

/// One `timedelta(...)` constructor component: an int, held as `i128` so
/// the microsecond arithmetic in [`init`] cannot wrap, or a float.
///
/// Carries its own `FromValue` impl (rather than a generic `i128` one)
/// because the overflow semantics are timedelta-specific: CPython's
/// accumulator converts each component through C int, so ints wider than
/// i64 raise `OverflowError: Python int too large to convert to C int`
/// even though they would fit in i128.
#[derive(Clone)]
enum DeltaComponent {
    Int(i128),
    /// chainbox patch: `timedelta(hours=1.5)`; upstream raised `TypeError`.
    Float(f64),
    /// Any other type, named in [`accumulate`]'s `TypeError`, which (as in
    /// CPython) names the component.
    Other(String),
}

impl Default for DeltaComponent {
    fn default() -> Self {
        Self::Int(0)
    }
}

impl FromValue for DeltaComponent {
    const EXPECTED_TYPE_NAME: Option<&'static str> = Some("int");

    fn from_value(value: Value, vm: &mut VM<'_>) -> Result<Self, FromValueFail> {
        let result = match value {
            Value::Bool(b) => Ok(Self::Int(i128::from(b))),
            Value::Int(i) => Ok(Self::Int(i128::from(i))),
            Value::Float(f) => Ok(Self::Float(f)),
            _ if is_long_int(&value, vm) => Err(FromValueFail::Raise(ExcType::overflow_c_int())),
            _ => Ok(Self::Other(value.py_type_name(vm).to_string())),
        };
        value.drop_with(vm);
        result
    }

    fn type_error(got: &str) -> RunError {
        ExcType::type_error_not_integer(got)
    }
}

/// CPython's `accum`: adds `component * unit` microseconds to `sofar`. A
/// float's integer part is exact; `fraction * unit` is split again, its
/// integer part added and its fraction left in `leftover` for [`init`] to
/// round once.
fn accumulate(sofar: i128, tag: &str, component: DeltaComponent, unit: i128, leftover: &mut f64) -> RunResult<i128> {
    let overflow = || -> RunError {
        SimpleException::new_msg(ExcType::OverflowError, "timedelta argument overflow while normalizing").into()
    };
    match component {
        DeltaComponent::Int(n) => n
            .checked_mul(unit)
            .and_then(|product| sofar.checked_add(product))
            .ok_or_else(overflow),
        DeltaComponent::Float(number) => {
            let whole = number.trunc();
            let sum = float_to_i128(whole)?
                .checked_mul(unit)
                .and_then(|product| sofar.checked_add(product))
                .ok_or_else(c_int_overflow)?;
            let fraction = number - whole;
            if fraction == 0.0 {
                return Ok(sum);
            }
            #[expect(
                clippy::cast_precision_loss,
                reason = "CPython's PyLong_AsDouble(factor); units are exact in f64"
            )]
            let scaled = unit as f64 * fraction;
            let scaled_whole = scaled.trunc();
            *leftover += scaled - scaled_whole;
            sum.checked_add(float_to_i128(scaled_whole)?).ok_or_else(c_int_overflow)
        }
        DeltaComponent::Other(type_name) => Err(SimpleException::new_msg(
            ExcType::TypeError,
            format!("unsupported type for timedelta {tag} component: {type_name}"),
        )
        .into()),
    }
}

/// `PyLong_FromDouble` of an integral float, as far as a timedelta can use
/// it: NaN and infinity raise CPython's errors; past `i128` the day count
/// cannot fit a C int either.
#[expect(clippy::cast_possible_truncation, reason = "range-checked just above")]
fn float_to_i128(whole: f64) -> RunResult<i128> {
    if whole.is_nan() {
        return Err(SimpleException::new_msg(ExcType::ValueError, "cannot convert float NaN to integer").into());
    }
    if whole.is_infinite() {
        return Err(
            SimpleException::new_msg(ExcType::OverflowError, "cannot convert float infinity to integer").into(),
        );
    }
    if whole.abs() >= 1.7e38 {
        return Err(c_int_overflow());
    }
    Ok(whole as i128)
}

/// Formats a `TimeDelta` as its Python `repr()` string, e.g. `"datetime.timedelta(days=1, seconds=3600)"`.
///
/// Shared by `TimeDelta::py_repr_fmt` and `timezone.rs` for formatting offsets.
#[must_use]
pub(crate) fn format_repr(delta: &TimeDelta) -> String {
    let (days, seconds, microseconds) = components(delta);
    if days == 0 && seconds == 0 && microseconds == 0 {
        return "datetime.timedelta(0)".to_owned();
    }

    let mut repr = String::from("datetime.timedelta(");
    let mut first = true;
    if days != 0 {
        write!(repr, "days={days}").expect("writing to String cannot fail");
        first = false;
    }
    if seconds != 0 {
        if !first {
            repr.push_str(", ");
        }
        write!(repr, "seconds={seconds}").expect("writing to String cannot fail");
        first = false;
    }
    if microseconds != 0 {
        if !first {
            repr.push_str(", ");
        }
        write!(repr, "microseconds={microseconds}").expect("writing to String cannot fail");
    }
    repr.push(')');
    repr
}

impl HeapItem for TimeDelta {
    fn py_dec_ref_ids(&mut self, _stack: &mut Vec<HeapId>) {}
}

/// `HeapRead`-based dispatch for `TimeDelta`, enabling the `HeapReadOutput` enum to
/// delegate `PyTrait` calls to heap-resident timedeltas.
impl<'h> PyTrait<'h> for HeapObjectRead<'h, TimeDelta> {
    fn py_type(&self, _vm: &VM<'h>) -> Type {
        Type::TimeDelta
    }

    fn py_len(&self, _vm: &VM<'h>) -> Option<usize> {
        None
    }

    fn py_eq_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        let Some(HeapReadOutput::TimeDelta(other)) = other.read_heap(vm) else {
            return Ok(None);
        };
        Ok(Some(
            total_microseconds(self.get(vm.heap)) == total_microseconds(other.get(vm.heap)),
        ))
    }

    fn py_hash(&self, vm: &mut VM<'h>) -> RunResult<Option<HashValue>> {
        // chainbox patch: CPython hashes the tuple `(days, seconds, microseconds)`.
        let (days, seconds, microseconds) = components(self.get(vm.heap));
        Ok(Some(hash_tuple_of(
            [days, seconds, microseconds].map(|part| hash_i64(part.into())),
        )))
    }

    fn py_cmp(&self, other: &Self, vm: &mut VM<'h>) -> RunResult<CmpOrder> {
        Ok(CmpOrder::Ordered(
            total_microseconds(self.get(vm.heap)).cmp(&total_microseconds(other.get(vm.heap))),
        ))
    }

    fn py_bool(&self, vm: &mut VM<'h>) -> RunResult<bool> {
        Ok(total_microseconds(self.get(vm.heap)) != 0)
    }

    fn py_repr_fmt(&self, f: &mut impl Write, vm: &mut VM<'h>, _heap_ids: &mut LazyHeapSet) -> RunResult<()> {
        f.write_str(&format_repr(self.get(vm.heap)))?;
        Ok(())
    }

    fn py_str(&self, vm: &mut VM<'h>) -> RunResult<Value> {
        let (days, seconds, microseconds) = components(self.get(vm.heap));
        let hours = seconds / SECONDS_PER_HOUR;
        let minutes = (seconds % SECONDS_PER_HOUR) / SECONDS_PER_MINUTE;
        let second = seconds % SECONDS_PER_MINUTE;
        let time = if microseconds == 0 {
            format!("{hours}:{minutes:02}:{second:02}")
        } else {
            format!("{hours}:{minutes:02}:{second:02}.{microseconds:06}")
        };

        let s = if days == 0 {
            time
        } else {
            let day_word = if days.abs() == 1 { "day" } else { "days" };
            format!("{days} {day_word}, {time}")
        };
        Ok(allocate_string(s, vm.heap))
    }

    fn py_abs_impl(&self, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        let delta = from_total_microseconds(total_microseconds(self.get(vm.heap)).abs())?;
        Ok(Some(Value::Ref(vm.heap.allocate(HeapData::TimeDelta(delta)))))
    }

    /// Negation can overflow because the upper bound includes a partial day
    /// beyond `999999999` days, while the lower bound is exactly `-999999999` days.
    fn py_neg_impl(&self, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        let negated = from_total_microseconds(-total_microseconds(self.get(vm.heap)))?;
        Ok(Some(Value::Ref(vm.heap.allocate(HeapData::TimeDelta(negated)))))
    }

    /// `+delta` is the identity, so hand back this same immutable value. The
    /// caller owns the result, hence the extra reference.
    fn py_pos_impl(&self, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        Ok(Some(self.clone_value(vm.heap)))
    }

    fn py_add_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        match other.read_heap(vm) {
            Some(HeapReadOutput::Date(other)) => {
                datetime::in_range(date::py_add(*other.get(vm.heap), *self.get(vm.heap), vm.heap))
            }
            Some(HeapReadOutput::DateTime(other)) => {
                let other = other.get(vm.heap).clone();
                let value = *self.get(vm.heap);
                datetime::in_range(datetime::py_add(&other, &value, vm.heap))
            }
            Some(HeapReadOutput::TimeDelta(other)) => {
                // chainbox patch: past the range, CPython's OverflowError (was
                // `None`, read as an unsupported operand).
                let total = total_microseconds(self.get(vm.heap)) + total_microseconds(other.get(vm.heap));
                let result = from_total_microseconds(total)?;
                Ok(Some(Value::Ref(vm.heap.allocate(HeapData::TimeDelta(result)))))
            }
            _ => Ok(None),
        }
    }

    fn py_sub_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        let Some(HeapReadOutput::TimeDelta(other)) = other.read_heap(vm) else {
            return Ok(None);
        };
        let total = total_microseconds(self.get(vm.heap)) - total_microseconds(other.get(vm.heap));
        let result = from_total_microseconds(total)?;
        Ok(Some(Value::Ref(vm.heap.allocate(HeapData::TimeDelta(result)))))
    }

    fn py_mul_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        let multiplier = match other {
            Value::Int(value) => i128::from(*value),
            Value::Bool(value) => i128::from(*value),
            Value::Float(factor) => {
                let result = scale_by_float(total_microseconds(self.get(vm.heap)), *factor, false)?;
                return Ok(Some(Value::Ref(vm.heap.allocate(HeapData::TimeDelta(result)))));
            }
            _ => return Ok(None),
        };
        let total = total_microseconds(self.get(vm.heap))
            .checked_mul(multiplier)
            .ok_or_else(|| SimpleException::new_msg(ExcType::OverflowError, "timedelta multiplication overflow"))?;
        let result = from_total_microseconds(total)?;
        Ok(Some(Value::Ref(vm.heap.allocate(HeapData::TimeDelta(result)))))
    }

    fn py_rmul_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        self.py_mul_impl(other, vm)
    }

    fn py_truediv_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        // `td / td` is a plain ratio, so it yields a float rather than a duration.
        if let Some(rhs) = rhs_microseconds(other, vm)? {
            // chainbox patch (CHAINBOX.md)
            let ratio = microseconds_ratio(total_microseconds(self.get(vm.heap)), rhs, vm.heap)?;
            return Ok(Some(Value::Float(ratio)));
        }
        let divisor = match other {
            Value::Int(0) | Value::Bool(false) => return Err(ExcType::zero_division().into()),
            Value::Int(value) => i128::from(*value),
            Value::Bool(true) => 1,
            Value::Float(divisor) => {
                let result = scale_by_float(total_microseconds(self.get(vm.heap)), *divisor, true)?;
                return Ok(Some(Value::Ref(vm.heap.allocate(HeapData::TimeDelta(result)))));
            }
            _ => return Ok(None),
        };
        let total = total_microseconds(self.get(vm.heap));
        let result = div_microseconds_round_ties_even(total, divisor);
        let result = from_total_microseconds(result)?;
        Ok(Some(Value::Ref(vm.heap.allocate(HeapData::TimeDelta(result)))))
    }

    fn py_floordiv_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        // `td // td` counts whole divisors, so it yields an int.
        if let Some(rhs) = rhs_microseconds(other, vm)? {
            let (quotient, _) = floor_div_rem(total_microseconds(self.get(vm.heap)), rhs);
            return Ok(Some(int_from_microseconds(quotient, vm.heap)));
        }
        let divisor = match other {
            Value::Int(0) | Value::Bool(false) => return Err(ExcType::zero_division().into()),
            Value::Int(value) => i128::from(*value),
            Value::Bool(true) => 1,
            _ => return Ok(None),
        };
        let total = total_microseconds(self.get(vm.heap));
        let (quotient, _) = floor_div_rem(total, divisor);
        let result = from_total_microseconds(quotient)?;
        Ok(Some(Value::Ref(vm.heap.allocate(HeapData::TimeDelta(result)))))
    }

    fn py_mod_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        // Only defined against another timedelta; `td % int` is a TypeError in
        // CPython, so anything else falls through to the caller's error.
        let Some(rhs) = rhs_microseconds(other, vm)? else {
            return Ok(None);
        };
        let (_, remainder) = floor_div_rem(total_microseconds(self.get(vm.heap)), rhs);
        let result = from_total_microseconds(remainder)?;
        Ok(Some(Value::Ref(vm.heap.allocate(HeapData::TimeDelta(result)))))
    }

    fn py_divmod_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        // Like `%`, only defined against another timedelta. It pairs the whole
        // count `//` yields with the duration `%` leaves over.
        let Some(rhs) = rhs_microseconds(other, vm)? else {
            return Ok(None);
        };
        let (quotient, remainder) = floor_div_rem(total_microseconds(self.get(vm.heap)), rhs);
        let quotient = int_from_microseconds(quotient, vm.heap);
        let remainder = allocate_micros(remainder, vm.heap);
        Ok(Some(allocate_tuple(smallvec![quotient, remainder], vm.heap)))
    }

    fn py_call_attr(&mut self, vm: &mut VM<'h>, attr: &EitherStr, args: ArgValues) -> RunResult<CallResult> {
        if attr.static_string(vm.interns) == Some(StaticStrings::TotalSeconds) {
            // Copy the TimeDelta to release the HeapRead borrow before checking args
            let td = *self.get(vm.heap);
            args.check_zero_args("timedelta.total_seconds", vm.heap)?;
            // chainbox patch (CHAINBOX.md)
            return Ok(CallResult::Value(Value::Float(total_seconds(&td, vm.heap)?)));
        }
        Err(ExcType::attribute_error_method(Type::TimeDelta, attr, args, vm))
    }

    fn py_getattr(&self, attr: &EitherStr, vm: &mut VM<'h>) -> RunResult<Option<CallResult>> {
        let (days, seconds, microseconds) = components(self.get(vm.heap));
        match attr.static_string(vm.interns) {
            Some(StaticStrings::Days) => Ok(Some(CallResult::Value(Value::Int(i64::from(days))))),
            Some(StaticStrings::Seconds) => Ok(Some(CallResult::Value(Value::Int(i64::from(seconds))))),
            Some(StaticStrings::Microseconds) => Ok(Some(CallResult::Value(Value::Int(i64::from(microseconds))))),
            _ => Ok(None),
        }
    }
}
