//! chainbox patch: the grammar of `date.fromisoformat`,
//! `datetime.fromisoformat` and `time.fromisoformat`, ported from CPython's
//! `_datetimemodule.c` (3.11+ forms: `20240307`, `2024-W10-4`,
//! `T10:30`, `1030`, `+01`, any one-character separator, extra fraction
//! digits cut, `24:00`).
//!
//! Upstream parsed with speedate's RFC 3339 grammar, which refused most of
//! those forms ("Invalid isoformat string" where CPython answers) and turned
//! an out-of-range field into the same message where CPython names the
//! field. The parsers here only read the text; the callers build the value
//! with the constructors' own checks, as CPython does.
//!
//! CPython reads the UTF-8 bytes of the string through a C pointer, so a
//! byte past the end reads as the terminating NUL: [`at`] does the same,
//! which keeps the port's control flow (and its quirks) the original's.

use chrono::{Datelike, NaiveDate, Weekday};

use crate::{
    exception_private::{ExcType, ExcTypeExt, RunError, RunResult, SimpleException},
    types::{date, str::StringRepr, timezone},
};

/// CPython's error for a string the grammar refuses.
pub(crate) fn invalid(s: &str) -> RunError {
    SimpleException::new_msg(
        ExcType::ValueError,
        format!("Invalid isoformat string: {}", StringRepr(s)),
    )
    .into()
}

/// CPython's error for `24:00` with more than zeros after it.
pub(crate) fn midnight_error() -> RunError {
    SimpleException::new_msg(
        ExcType::ValueError,
        "minute, second, and microsecond must be 0 when hour is 24",
    )
    .into()
}

/// The whole seconds of an ISO offset, checked as `timezone` checks one. monty's `timezone` holds whole
/// seconds, so a sub-second offset is refused rather than rounded (CPython
/// keeps it; an offset of 0 seconds is UTC there whatever its fraction).
pub(crate) fn offset_seconds((seconds, micros): (i32, i32)) -> RunResult<i32> {
    if seconds != 0 && micros != 0 {
        return Err(ExcType::not_implemented("a UTC offset with a fraction of a second is not supported").into());
    }
    timezone::check_offset_seconds(seconds)?;
    Ok(seconds)
}

/// The fields of an ISO time: hour, minute, second, microsecond, and the
/// UTC offset (seconds, microseconds) when the string gives one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct IsoTime {
    pub hour: i32,
    pub minute: i32,
    pub second: i32,
    pub microsecond: i32,
    pub offset: Option<(i32, i32)>,
}

/// The byte at `i`, NUL past the end (C's terminator).
fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

/// `parse_digits`: exactly `n` ASCII digits from `*p`, advancing it.
fn digits(s: &[u8], p: &mut usize, n: usize) -> Option<i32> {
    let mut value = 0i32;
    for _ in 0..n {
        let digit = at(s, *p).wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value * 10 + i32::from(digit);
        *p += 1;
    }
    Some(value)
}

/// Days in `month` (1..=12) of `year`; 0 for any other month, as CPython's
/// table reads at index 0.
pub(crate) fn days_in_month(year: i32, month: i32) -> i32 {
    if (1..=12).contains(&month) {
        i32::try_from(date::max_day_for_month(year, month)).unwrap_or(31)
    } else {
        0
    }
}

/// `iso_to_ymd`: the date of day `day` (1 is Monday) of ISO week `week` of
/// `year`, by chrono's ISO calendar (which refuses a week 53 the year lacks).
fn iso_to_ymd(year: i32, week: i32, day: i32) -> Option<(i32, i32, i32)> {
    if !(1..=9999).contains(&year) {
        return None;
    }
    let weekday = Weekday::try_from(u8::try_from(day.checked_sub(1)?).ok()?).ok()?;
    let date = NaiveDate::from_isoywd_opt(year, u32::try_from(week).ok()?, weekday)?;
    Some((
        date.year(),
        i32::try_from(date.month()).ok()?,
        i32::try_from(date.day()).ok()?,
    ))
}

/// `parse_isoformat_date`: the date at the start of `s`, within `len` bytes
/// (only the week form looks at `len`, to see whether a weekday follows).
fn parse_date_part(s: &[u8], len: usize) -> Option<(i32, i32, i32)> {
    let mut p = 0;
    let year = digits(s, &mut p, 4)?;
    let uses_separator = at(s, p) == b'-';
    if uses_separator {
        p += 1;
    }
    if at(s, p) == b'W' {
        p += 1;
        let week = digits(s, &mut p, 2)?;
        let day = if p < len {
            if uses_separator {
                if at(s, p) != b'-' {
                    return None;
                }
                p += 1;
            }
            digits(s, &mut p, 1)?
        } else {
            1
        };
        return iso_to_ymd(year, week, day);
    }
    let month = digits(s, &mut p, 2)?;
    if uses_separator {
        if at(s, p) != b'-' {
            return None;
        }
        p += 1;
    }
    let day = digits(s, &mut p, 2)?;
    Some((year, month, day))
}

/// `date.fromisoformat`'s grammar: the year, month and day, unchecked.
pub(crate) fn parse_date(s: &str) -> Option<(i32, i32, i32)> {
    let bytes = s.as_bytes();
    if ![7, 8, 10].contains(&bytes.len()) {
        return None;
    }
    parse_date_part(bytes, bytes.len())
}

/// Why [`parse_hh_mm_ss_ff`] stopped: at the end of its part, or before more.
enum Stop {
    End,
    More,
}

/// `parse_hh_mm_ss_ff`: `HH[:MM[:SS[.ffffff]]]` (or without the colons)
/// from `start`, up to `end`. `None` is a malformed time.
fn parse_hh_mm_ss_ff(s: &[u8], start: usize, end: usize) -> Option<([i32; 4], Stop)> {
    let mut values = [0i32; 4];
    let mut p = start;
    let mut has_separator = true;
    for (i, value) in values.iter_mut().take(3).enumerate() {
        *value = digits(s, &mut p, 2)?;
        let c = at(s, p);
        p += 1;
        if i == 0 {
            has_separator = c == b':';
        }
        if p >= end {
            return Some((values, if c == 0 { Stop::End } else { Stop::More }));
        } else if has_separator && c == b':' {
            if i == 2 {
                return None;
            }
        } else if c == b'.' || c == b',' {
            if i < 2 {
                return None;
            }
            break;
        } else if !has_separator {
            p -= 1;
        } else {
            return None;
        }
    }
    // Also reached after `HHMMSS` and another digit: CPython reads the
    // fraction from there all the same.
    let to_parse = end.saturating_sub(p).min(6);
    let mut microsecond = digits(s, &mut p, to_parse)?;
    if to_parse < 6 {
        microsecond *= 10i32.pow(u32::try_from(6 - to_parse).unwrap_or(0));
    }
    values[3] = microsecond;
    while at(s, p).is_ascii_digit() {
        p += 1;
    }
    Some((values, if at(s, p) == 0 { Stop::End } else { Stop::More }))
}

/// `parse_isoformat_time`: a time with an optional `Z` or `±HH[:MM[:SS[.f]]]`
/// offset, from `start` to the end of `s`.
fn parse_time_part(s: &[u8], start: usize) -> Option<IsoTime> {
    let end = s.len();
    let mut tz = start;
    loop {
        if matches!(at(s, tz), b'Z' | b'+' | b'-') {
            break;
        }
        tz += 1;
        if tz >= end {
            break;
        }
    }
    let ([hour, minute, second, microsecond], stop) = parse_hh_mm_ss_ff(s, start, tz)?;
    let mut time = IsoTime {
        hour,
        minute,
        second,
        microsecond,
        offset: None,
    };
    if tz == end {
        return match stop {
            Stop::End => Some(time),
            Stop::More => None,
        };
    }
    if at(s, tz) == b'Z' {
        time.offset = Some((0, 0));
        return (at(s, tz + 1) == 0).then_some(time);
    }
    let sign = if at(s, tz) == b'-' { -1 } else { 1 };
    let ([hours, minutes, seconds, micros], stop) = parse_hh_mm_ss_ff(s, tz + 1, end)?;
    if matches!(stop, Stop::More) {
        return None;
    }
    time.offset = Some((sign * (hours * 3600 + minutes * 60 + seconds), sign * micros));
    Some(time)
}

/// `time.fromisoformat`'s grammar (a leading `T` allowed), unchecked.
pub(crate) fn parse_time(s: &str) -> Option<IsoTime> {
    let bytes = s.as_bytes();
    let start = usize::from(at(bytes, 0) == b'T');
    parse_time_part(bytes, start)
}

/// `_find_isoformat_datetime_separator`: where the date ends.
fn separator_at(s: &[u8]) -> usize {
    let len = s.len();
    if len == 7 {
        return 7;
    }
    if at(s, 4) == b'-' {
        if at(s, 5) != b'W' {
            return 10;
        }
        if len < 8 {
            return usize::MAX;
        }
        if len > 8 && at(s, 8) == b'-' {
            if len == 9 {
                return usize::MAX;
            }
            if len > 10 && at(s, 10).is_ascii_digit() {
                return 8;
            }
            return 10;
        }
        return 8;
    }
    if at(s, 4) != b'W' {
        return 8;
    }
    let mut idx = 7;
    while idx < len && at(s, idx).is_ascii_digit() {
        idx += 1;
    }
    if idx < 9 {
        idx
    } else if idx % 2 == 0 {
        7
    } else {
        8
    }
}

/// `datetime.fromisoformat`'s grammar: the date, and the time after any one
/// separator character (midnight when there is none), unchecked.
pub(crate) fn parse_datetime(s: &str) -> Option<((i32, i32, i32), IsoTime)> {
    let bytes = s.as_bytes();
    if s.chars().count() < 7 {
        return None;
    }
    let separator = separator_at(bytes);
    let date = parse_date_part(bytes, separator)?;
    if bytes.len() <= separator {
        return Some((date, IsoTime::default()));
    }
    // The separator is one character, however many bytes its UTF-8 takes
    // (read from its first byte, as CPython does).
    let width = match at(bytes, separator) {
        lead if lead & 0x80 == 0 => 1,
        lead if lead & 0xf0 == 0xe0 => 3,
        lead if lead & 0xf0 == 0xf0 => 4,
        _ => 2,
    };
    Some((date, parse_time_part(bytes, separator + width)?))
}
