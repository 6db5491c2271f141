//! chainbox patch: which `strptime` inputs a format reads, decided as
//! CPython decides it.
//!
//! CPython's `_strptime` turns the format into one regular expression
//! (`TimeRE.pattern`: each directive an ordered alternation such as `%M`'s
//! `[0-5]\d|\d`, each run of whitespace `\s+`, everything compiled with
//! `IGNORECASE`) and matches it at the start of the input: no match is
//! `time data ... does not match format ...`, a match short of the end
//! `unconverted data remains: ...`. monty's parser is chrono's, which skips
//! whitespace before a number and lets a format's space match none, so
//! `' 2024'` read as `'%Y'` and `'10: 5'` as `'%H:%M'` where CPython refuses
//! them, and `'10:61'` gave the wrong error. The same expression, built here
//! for the C locale and the sandbox's UTC zone, gates chrono's parse.

use fancy_regex::Regex;
use monty_types::StringRepr;

use crate::exception_private::{ExcType, RunError, SimpleException};

/// CPython 3.14's `TimeRE` for `directive` (`_strptime._TimeRE_cache`), `None`
/// for one not modelled here, whose formats skip the gate.
fn directive_pattern(directive: char) -> Option<&'static str> {
    Some(match directive {
        'd' | 'e' => r"(?P<d>3[0-1]|[1-2]\d|0[1-9]|[1-9]| [1-9])",
        'f' => r"(?P<f>[0-9]{1,6})",
        'H' | 'k' => r"(?P<H>2[0-3]|[0-1]\d|\d| \d)",
        'I' | 'l' => r"(?P<I>1[0-2]|0[1-9]|[1-9]| [1-9])",
        'G' => r"(?P<G>\d\d\d\d)",
        'j' => r"(?P<j>36[0-6]|3[0-5]\d|[1-2]\d\d|0[1-9]\d|00[1-9]|[1-9]\d|0[1-9]|[1-9])",
        'm' => r"(?P<m>1[0-2]|0[1-9]|[1-9])",
        'M' => r"(?P<M>[0-5]\d|\d)",
        'S' => r"(?P<S>6[0-1]|[0-5]\d|\d)",
        'U' => r"(?P<U>5[0-3]|[0-4]\d|\d)",
        'W' => r"(?P<W>5[0-3]|[0-4]\d|\d)",
        'w' => r"(?P<w>[0-6])",
        'u' => r"(?P<u>[1-7])",
        'V' => r"(?P<V>5[0-3]|0[1-9]|[1-4]\d|\d)",
        'y' => r"(?P<y>\d\d)",
        'Y' => r"(?P<Y>\d\d\d\d)",
        'z' => r"(?P<z>[+-]\d\d:?[0-5]\d(:?[0-5]\d(\.\d{1,6})?)?|(?-i:Z))",
        // The C locale's names, longest first (`__seqToRE`).
        'A' => "(?P<A>wednesday|thursday|saturday|tuesday|monday|friday|sunday)",
        'a' => "(?P<a>mon|tue|wed|thu|fri|sat|sun)",
        'B' => "(?P<B>september|february|november|december|january|october|august|april|march|july|june|may)",
        'b' => "(?P<b>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)",
        'p' | 'P' => "(?P<p>am|pm)",
        // The C locale's `%c`, `%x`, `%X`, and the 3.14 shorthands.
        'R' => r"(?P<H>2[0-3]|[0-1]\d|\d| \d):(?P<M>[0-5]\d|\d)",
        'T' | 'X' => r"(?P<H>2[0-3]|[0-1]\d|\d| \d):(?P<M>[0-5]\d|\d):(?P<S>6[0-1]|[0-5]\d|\d)",
        'r' => r"(?P<I>1[0-2]|0[1-9]|[1-9]| [1-9]):(?P<M>[0-5]\d|\d):(?P<S>6[0-1]|[0-5]\d|\d)\s+(?P<p>am|pm)",
        'x' => r"(?P<m>1[0-2]|0[1-9]|[1-9])/(?P<d>3[0-1]|[1-2]\d|0[1-9]|[1-9]| [1-9])/(?P<y>\d\d)",
        'c' => concat!(
            r"(?P<a>mon|tue|wed|thu|fri|sat|sun)\s+(?P<b>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\s+",
            r"(?P<d>3[0-1]|[1-2]\d|0[1-9]|[1-9]| [1-9])\s+(?P<H>2[0-3]|[0-1]\d|\d| \d):(?P<M>[0-5]\d|\d):",
            r"(?P<S>6[0-1]|[0-5]\d|\d)\s+(?P<Y>\d\d\d\d)"
        ),
        // `utc`, `gmt` and the local zone's name, UTC in the sandbox.
        'Z' => "(?P<Z>utc|gmt)",
        '%' => "%",
        _ => return None,
    })
}

/// `TimeRE.pattern(format)`, or `None` when the format has a directive not
/// modelled (or a stray `%`, reported elsewhere).
fn format_pattern(format: &str) -> Option<String> {
    let mut pattern = String::from(r"(?i)\A(?:");
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '%' => pattern.push_str(directive_pattern(chars.next()?)?),
            c if c.is_whitespace() => {
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                pattern.push_str(r"\s+");
            }
            '\\' | '.' | '^' | '$' | '*' | '+' | '?' | '(' | ')' | '{' | '}' | '[' | ']' | '|' => {
                pattern.push('\\');
                pattern.push(c);
            }
            c => pattern.push(c),
        }
    }
    pattern.push(')');
    // A group named twice (`'%H %T'`) is a regex error in CPython; leave
    // that to the parser.
    let mut names: Vec<&str> = pattern
        .split("(?P<")
        .skip(1)
        .filter_map(|rest| rest.split_once('>'))
        .map(|(name, _)| name)
        .collect();
    let count = names.len();
    names.sort_unstable();
    names.dedup();
    (names.len() == count).then_some(pattern)
}

/// What CPython's expression makes of `date_string`: `None` when it reads
/// it whole (or the format is not modelled), else CPython's `ValueError`.
pub(crate) fn strptime_refusal(date_string: &str, format: &str) -> Option<RunError> {
    let regex = Regex::new(&format_pattern(format)?).ok()?;
    let message = match regex.find(date_string) {
        Ok(Some(found)) if found.end() == date_string.len() => return None,
        Ok(Some(found)) => format!("unconverted data remains: {}", &date_string[found.end()..]),
        Ok(None) => format!(
            "time data {} does not match format {}",
            StringRepr(date_string),
            StringRepr(format)
        ),
        // Backtracking past fancy-regex's limit: leave it to the parser.
        Err(_) => return None,
    };
    Some(SimpleException::new_msg(ExcType::ValueError, message).into())
}

/// What `_strptime._strptime` makes of an input its expression reads whole:
/// the `datetime` fields, the `%z` offset (seconds, microseconds) and the
/// `%Z` name.
pub(crate) struct StrptimeFields {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub microsecond: u32,
    pub offset: Option<(i32, i32)>,
    pub zone_name: Option<String>,
}

/// The C locale's names, as `LocaleTime` lists them (lowercase).
const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];
const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

fn value_error(message: impl Into<String>) -> RunError {
    SimpleException::new_msg(ExcType::ValueError, message.into()).into()
}

/// CPython's `_strptime._strptime` over the expression's match, as far as a
/// `datetime` needs it. `Ok(None)` when the format is not modelled or the
/// input is past what is handled here (years out of range, a fractional
/// offset): the caller's older parser decides those.
pub(crate) fn parse(date_string: &str, format: &str) -> Result<Option<StrptimeFields>, RunError> {
    use chrono::{Datelike, NaiveDate, Weekday};

    let Some(pattern) = format_pattern(format) else {
        return Ok(None);
    };
    let Ok(regex) = Regex::new(&pattern) else {
        return Ok(None);
    };
    let Ok(Some(captures)) = regex.captures(date_string) else {
        return Ok(None);
    };
    if captures.get(0).is_none_or(|found| found.end() != date_string.len()) {
        return Ok(None);
    }
    let text = |name: &str| captures.name(name).map(|m| m.as_str());
    // Every group is digits or one of the names, by its expression.
    let number = |name: &str| text(name).and_then(|t| t.trim_start().parse::<i32>().ok());

    let (mut year, mut month, mut day) = (None, 1, 1);
    let (mut hour, mut minute, mut second, mut microsecond) = (0, 0, 0, 0);
    let (mut iso_year, mut iso_week, mut week_of_year, mut weekday, mut julian) = (None, None, None, None, None);
    let mut week_starts_monday = false;
    let mut offset = None;
    for name in regex.capture_names().flatten() {
        let Some(value) = text(name) else { continue };
        let lower = value.to_lowercase();
        match name {
            "y" => year = number("y").map(|y| if y <= 68 { y + 2000 } else { y + 1900 }),
            "Y" => year = number("Y"),
            "G" => iso_year = number("G"),
            "m" => month = number("m").unwrap_or(1),
            "B" => month = MONTHS.iter().position(|m| *m == lower).map_or(1, |i| i as i32 + 1),
            "b" => month = MONTHS.iter().position(|m| m[..3] == lower).map_or(1, |i| i as i32 + 1),
            "d" => day = number("d").unwrap_or(1),
            "H" => hour = number("H").unwrap_or(0),
            "I" => {
                let twelve = number("I").unwrap_or(0);
                hour = match text("p").map(str::to_lowercase).as_deref() {
                    Some("pm") if twelve != 12 => twelve + 12,
                    Some("pm") => twelve,
                    _ if twelve == 12 => 0,
                    _ => twelve,
                };
            }
            "M" => minute = number("M").unwrap_or(0),
            "S" => second = number("S").unwrap_or(0),
            "f" => microsecond = format!("{value:0<6}").parse().unwrap_or(0),
            "A" => weekday = WEEKDAYS.iter().position(|d| *d == lower),
            "a" => weekday = WEEKDAYS.iter().position(|d| d[..3] == lower),
            "w" => weekday = number("w").map(|w| if w == 0 { 6 } else { (w - 1) as usize }),
            "u" => weekday = number("u").map(|u| (u - 1) as usize),
            "j" => julian = number("j"),
            "U" | "W" => {
                week_of_year = number(name);
                week_starts_monday = name == "W";
            }
            "V" => iso_week = number("V"),
            "z" => offset = Some(parse_offset(value)?),
            _ => {}
        }
    }
    // `_strptime`'s checks of the ISO directives, in its order.
    if iso_year.is_some() {
        if julian.is_some() {
            return Err(value_error(
                "Day of the year directive '%j' is not compatible with ISO year directive '%G'. Use '%Y' instead.",
            ));
        }
        if iso_week.is_none() || weekday.is_none() {
            return Err(value_error(
                "ISO year directive '%G' must be used with the ISO week directive '%V' and a weekday directive ('%A', '%a', '%w', or '%u').",
            ));
        }
    } else if iso_week.is_some() {
        return Err(value_error(if year.is_none() || weekday.is_none() {
            "ISO week directive '%V' must be used with the ISO year directive '%G' and a weekday directive ('%A', '%a', '%w', or '%u')."
        } else {
            "ISO week directive '%V' is incompatible with the year directive '%Y'. Use the ISO year '%G' instead."
        }));
    }
    let leap_year_fix = year.is_none() && month == 2 && day == 29;
    let mut year = year.unwrap_or(if leap_year_fix { 1904 } else { 1900 });
    // `datetime.date`'s first check, wherever `_strptime` makes one.
    let year_error = |year: i32| value_error(format!("year must be in 1..9999, not {year}"));
    let in_range = |year: i32| (1..=9999).contains(&year);
    if julian.is_none()
        && let Some(weekday) = weekday
    {
        if let Some(week) = week_of_year {
            if !in_range(year) {
                return Err(year_error(year));
            }
            julian = Some(julian_from_week(year, week, weekday, week_starts_monday));
        } else if let (Some(iso_year), Some(iso_week)) = (iso_year, iso_week) {
            // `date.fromisocalendar(iso_year, iso_week, weekday + 1)`.
            if !in_range(iso_year) {
                return Err(year_error(iso_year));
            }
            let weekday = Weekday::try_from(u8::try_from(weekday).unwrap_or(0)).unwrap_or(Weekday::Mon);
            let date = u32::try_from(iso_week)
                .ok()
                .and_then(|week| NaiveDate::from_isoywd_opt(iso_year, week, weekday))
                .ok_or_else(|| value_error(format!("Invalid week: {iso_week}")))?;
            (year, month, day) = (date.year(), date.month() as i32, date.day() as i32);
        }
        if let Some(days) = julian
            && days <= 0
        {
            year -= 1;
            julian = Some(
                days + if NaiveDate::from_ymd_opt(year, 2, 29).is_some() {
                    366
                } else {
                    365
                },
            );
        }
    }
    if !in_range(year) {
        return Err(year_error(year));
    }
    let (month, day) = match julian {
        None => {
            // `datetime_date(year, month, day)`, whose error is the constructor's.
            if NaiveDate::from_ymd_opt(year, month.unsigned_abs(), day.unsigned_abs()).is_none() {
                return Err(super::date::day_out_of_range_error(day, month, year));
            }
            (month.unsigned_abs(), day.unsigned_abs())
        }
        Some(days) => {
            // `date.fromordinal`; past 9999 the older parser answers.
            let Some(date) = NaiveDate::from_ymd_opt(year, 1, 1)
                .and_then(|first| first.checked_add_days(chrono::Days::new(u64::try_from(days - 1).ok()?)))
                .filter(|date| in_range(date.year()))
            else {
                return Ok(None);
            };
            year = date.year();
            (date.month(), date.day())
        }
    };
    if leap_year_fix {
        year = 1900;
    }
    if offset.is_some_and(|(_, fraction)| fraction != 0) {
        return Ok(None);
    }
    Ok(Some(StrptimeFields {
        year,
        month,
        day,
        hour: hour.unsigned_abs(),
        minute: minute.unsigned_abs(),
        second: second.unsigned_abs(),
        microsecond,
        offset,
        zone_name: text("Z").map(str::to_owned),
    }))
}

/// `_calc_julian_from_U_or_W`: the day of the year of `weekday` (Monday 0)
/// in week `week` (`%W` weeks start on Monday, `%U` on Sunday).
fn julian_from_week(year: i32, week: i32, weekday: usize, week_starts_monday: bool) -> i32 {
    use chrono::{Datelike, NaiveDate};
    let first = NaiveDate::from_ymd_opt(year, 1, 1).map_or(0, |d| d.weekday().num_days_from_monday() as i32);
    let mut day_of_week = weekday as i32;
    let mut first_weekday = first;
    if !week_starts_monday {
        first_weekday = (first_weekday + 1) % 7;
        day_of_week = (day_of_week + 1) % 7;
    }
    let week_0_length = (7 - first_weekday) % 7;
    if week == 0 {
        1 + day_of_week - first_weekday
    } else {
        1 + week_0_length + 7 * (week - 1) + day_of_week
    }
}

/// A `%z` token as `_strptime` reads it: `Z`, or `±HH[:]MM[[:]SS[.ffffff]]`
/// with one separator used throughout, as (seconds, microseconds).
fn parse_offset(token: &str) -> Result<(i32, i32), RunError> {
    if token == "Z" {
        return Ok((0, 0));
    }
    let mut z: Vec<char> = token.chars().collect();
    // A colon after the hours asks for one after the minutes too.
    if z.get(3) == Some(&':') {
        z.remove(3);
        if z.len() > 5 {
            if z.get(5) != Some(&':') {
                return Err(value_error(format!("Inconsistent use of : in {token}")));
            }
            z.remove(5);
        }
    }
    let field = |from: usize, to: usize| -> i32 {
        z.get(from..to.min(z.len()))
            .map(|digits| digits.iter().collect::<String>())
            .and_then(|digits| digits.parse().ok())
            .unwrap_or(0)
    };
    let seconds = field(1, 3) * 3600 + field(3, 5) * 60 + field(5, 7);
    let remainder: String = z.get(8..).map(|r| r.iter().collect()).unwrap_or_default();
    let fraction: i32 = if remainder.is_empty() {
        0
    } else {
        format!("{remainder:0<6}").parse().unwrap_or(0)
    };
    Ok(if token.starts_with('-') {
        (-seconds, -fraction)
    } else {
        (seconds, fraction)
    })
}
