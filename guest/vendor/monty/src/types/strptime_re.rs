//! chainbox patch: `strptime` as CPython's `_strptime` reads an input.
//!
//! CPython turns the format into one regular expression (`_strptime.TimeRE`:
//! each directive an ordered alternation such as `%M`'s `[0-5]\d|\d`, each
//! run of whitespace `\s+`, everything `IGNORECASE`), matches it at the
//! input's start (no match is `time data ... does not match format ...`, a
//! match short of the end `unconverted data remains: ...`) and computes the
//! fields from its groups. monty's parser was chrono's, which skips
//! whitespace before a number and lets a format's space match none (`' 2024'`
//! read as `'%Y'`, `'10: 5'` as `'%H:%M'`), and refused what the expression
//! reads (`'1958922'` as `'%Y%m%d'`, a lowercase `t` for `T`).
//!
//! The expression is matched here as CPython's backtracking engine matches
//! it: each directive's alternatives in order (3.14's `_TimeRE_cache`, C
//! locale, UTC), the first way through the whole format wins, and a failed
//! (piece, position) is remembered so no input backtracks exponentially.
//! A regex library would do the same, but compiling CPython's expression
//! with Unicode classes cost ~0.3 ms in the guest, a monty chain's start.

use std::collections::HashSet;

use monty_types::StringRepr;

use crate::exception_private::{ExcType, RunError, SimpleException};

/// One piece of a format, after `%c`, `%x`, `%X`, `%T`, `%R` and `%r` are
/// expanded into theirs as `TimeRE` builds them.
#[derive(Clone, Copy)]
enum Piece {
    /// A character matched as `IGNORECASE` does.
    Literal(char),
    /// A run of whitespace in the format: `\s+`.
    Space,
    /// A directive, by the name of the group it fills (`%e` fills `d`).
    Directive(char),
}

/// The pieces of `format`, or `None` when it has a directive not modelled
/// here (the caller's older parser answers those), a stray `%`, or a group
/// twice (a regex error in CPython, left to the older parser too).
fn pieces(format: &str) -> Option<Vec<Piece>> {
    let mut out = Vec::new();
    push_pieces(format, &mut out)?;
    let mut seen = HashSet::new();
    out.iter()
        .all(|piece| !matches!(piece, Piece::Directive(name) if !seen.insert(*name)))
        .then_some(out)
}

fn push_pieces(format: &str, out: &mut Vec<Piece>) -> Option<()> {
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '%' {
            let directive = chars.next()?;
            let expansion = match directive {
                'c' => "%a %b %d %H:%M:%S %Y",
                'x' => "%m/%d/%y",
                'X' | 'T' => "%H:%M:%S",
                'R' => "%H:%M",
                'r' => "%I:%M:%S %p",
                _ => "",
            };
            if !expansion.is_empty() {
                push_pieces(expansion, out)?;
                continue;
            }
            out.push(match directive {
                '%' => Piece::Literal('%'),
                'e' => Piece::Directive('d'),
                'k' => Piece::Directive('H'),
                'l' => Piece::Directive('I'),
                'P' => Piece::Directive('p'),
                'd' | 'f' | 'H' | 'I' | 'G' | 'j' | 'm' | 'M' | 'S' | 'U' | 'W' | 'w' | 'u' | 'V' | 'y' | 'Y' | 'z'
                | 'A' | 'a' | 'B' | 'b' | 'p' | 'Z' => Piece::Directive(directive),
                _ => return None,
            });
        } else if is_space(c) {
            while chars.peek().is_some_and(|c| is_space(*c)) {
                chars.next();
            }
            out.push(Piece::Space);
        } else {
            out.push(Piece::Literal(c));
        }
    }
    Some(())
}

/// Python's `\s` (`str.isspace`, which counts `\x1c`-`\x1f`).
fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// A numeric directive's alternatives, in `TimeRE`'s order: `#` is a digit,
/// `[xy]` a digit from x to y, anything else itself.
fn numeric_alternatives(name: char) -> Option<&'static [&'static str]> {
    Some(match name {
        'd' => &["3[01]", "[12]#", "0[19]", "[19]", " [19]"],
        'H' => &["2[03]", "[01]#", "#", " #"],
        'I' => &["1[02]", "0[19]", "[19]", " [19]"],
        'G' | 'Y' => &["####"],
        'j' => &[
            "36[06]", "3[05]#", "[12]##", "0[19]#", "00[19]", "[19]#", "0[19]", "[19]",
        ],
        'm' => &["1[02]", "0[19]", "[19]"],
        'M' => &["[05]#", "#"],
        'S' => &["6[01]", "[05]#", "#"],
        'U' | 'W' => &["5[03]", "[04]#", "#"],
        'V' => &["5[03]", "0[19]", "[14]#", "#"],
        'w' => &["[06]"],
        'u' => &["[17]"],
        'y' => &["##"],
        _ => return None,
    })
}

/// The C locale's names, as `LocaleTime` lists them (lowercase), longest
/// first where `__seqToRE` sorts them so.
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

/// Where `alternative` (see [`numeric_alternatives`]) ends if it matches at `at`.
fn match_numeric(input: &[char], at: usize, alternative: &str) -> Option<usize> {
    let spec: Vec<char> = alternative.chars().collect();
    let (mut i, mut pos) = (0, at);
    while i < spec.len() {
        let c = *input.get(pos)?;
        let ok = match spec[i] {
            '#' => c.is_ascii_digit(),
            '[' => {
                let (low, high) = (spec[i + 1], spec[i + 2]);
                i += 3;
                (low..=high).contains(&c)
            }
            literal => c == literal,
        };
        if !ok {
            return None;
        }
        i += 1;
        pos += 1;
    }
    Some(pos)
}

/// Whether `input[at..]` starts with `word` (lowercase ASCII), ignoring case.
fn match_word(input: &[char], at: usize, word: &str) -> Option<usize> {
    let mut pos = at;
    for w in word.chars() {
        let c = *input.get(pos)?;
        if c != w && !c.to_lowercase().eq(std::iter::once(w)) {
            return None;
        }
        pos += 1;
    }
    Some(pos)
}

/// The ends a directive's expression can reach from `at`, in the order a
/// backtracking engine tries them.
fn directive_ends(name: char, input: &[char], at: usize) -> Vec<usize> {
    let digit = |pos: usize| input.get(pos).is_some_and(char::is_ascii_digit);
    let in_range = |pos: usize, low: char, high: char| input.get(pos).is_some_and(|c| (low..=high).contains(c));
    if let Some(alternatives) = numeric_alternatives(name) {
        return alternatives
            .iter()
            .filter_map(|a| match_numeric(input, at, a))
            .collect();
    }
    let words = |list: &[&str]| -> Vec<usize> { list.iter().filter_map(|w| match_word(input, at, w)).collect() };
    match name {
        // `[0-9]{1,6}`, greedy.
        'f' => {
            let run = (0..6).take_while(|i| digit(at + i)).count();
            (1..=run).rev().map(|n| at + n).collect()
        }
        'A' => words(&[
            "wednesday",
            "thursday",
            "saturday",
            "tuesday",
            "monday",
            "friday",
            "sunday",
        ]),
        'a' => words(&["mon", "tue", "wed", "thu", "fri", "sat", "sun"]),
        'B' => words(&[
            "september",
            "february",
            "november",
            "december",
            "january",
            "october",
            "august",
            "march",
            "april",
            "june",
            "july",
            "may",
        ]),
        'b' => words(&[
            "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
        ]),
        'p' => words(&["am", "pm"]),
        // `utc`, `gmt` and the local zone's name, UTC in the sandbox.
        'Z' => words(&["gmt", "utc"]),
        // `[+-]\d\d:?[0-5]\d(:?[0-5]\d(\.\d{1,6})?)?|(?-i:Z)`
        'z' => {
            let mut ends = Vec::new();
            if input.get(at).is_some_and(|c| matches!(c, '+' | '-')) && digit(at + 1) && digit(at + 2) {
                let colon = |pos: usize| usize::from(input.get(pos) == Some(&':'));
                // Each `:?` takes its colon first, then tries without.
                for minutes in [at + 3 + colon(at + 3), at + 3].into_iter().collect::<Vec<_>>() {
                    if !(in_range(minutes, '0', '5') && digit(minutes + 1)) {
                        continue;
                    }
                    let after_minutes = minutes + 2;
                    for seconds in [after_minutes + colon(after_minutes), after_minutes] {
                        if in_range(seconds, '0', '5') && digit(seconds + 1) {
                            let after_seconds = seconds + 2;
                            if input.get(after_seconds) == Some(&'.') {
                                let run = (0..6).take_while(|i| digit(after_seconds + 1 + i)).count();
                                ends.extend((1..=run).rev().map(|n| after_seconds + 1 + n));
                            }
                            ends.push(after_seconds);
                        }
                        if colon(after_minutes) == 0 {
                            break;
                        }
                    }
                    ends.push(after_minutes);
                    if colon(at + 3) == 0 {
                        break;
                    }
                }
            }
            if input.get(at) == Some(&'Z') {
                ends.push(at + 1);
            }
            ends
        }
        _ => Vec::new(),
    }
}

/// The first way through `pieces[index..]` from `at`, as the backtracking
/// engine finds it: where it ends, each directive's span left in `spans`.
fn search(
    pieces: &[Piece],
    index: usize,
    at: usize,
    input: &[char],
    spans: &mut [(usize, usize)],
    failed: &mut HashSet<(usize, usize)>,
) -> Option<usize> {
    let Some(piece) = pieces.get(index) else {
        return Some(at);
    };
    if failed.contains(&(index, at)) {
        return None;
    }
    let ends = match *piece {
        Piece::Literal(expected) => {
            let c = input.get(at);
            let same = c.is_some_and(|c| *c == expected || c.to_lowercase().eq(expected.to_lowercase()));
            if same { vec![at + 1] } else { Vec::new() }
        }
        // `\s+`, greedy. Giving back more than one character never helps:
        // what follows a run is a directive, and the only ones that may start
        // with whitespace (`%d`, `%H`, `%I`) start with one space.
        Piece::Space => {
            let run = input[at.min(input.len())..]
                .iter()
                .take_while(|c| is_space(**c))
                .count();
            (run.saturating_sub(1).max(1)..=run).rev().map(|n| at + n).collect()
        }
        Piece::Directive(name) => directive_ends(name, input, at),
    };
    for end in ends {
        spans[index] = (at, end);
        if let Some(found) = search(pieces, index + 1, end, input, spans, failed) {
            return Some(found);
        }
    }
    failed.insert((index, at));
    None
}

/// What `format`'s expression reads of `date_string`: each directive's
/// group name and text, in the format's order, when it reads the input
/// whole; CPython's `ValueError` when it matches nothing (`time data ...
/// does not match format ...`) or stops short (`unconverted data remains:
/// ...`); `None` when the format is not modelled.
fn read(date_string: &str, format: &str) -> Option<Result<Vec<(char, String)>, RunError>> {
    let pieces = pieces(format)?;
    let input: Vec<char> = date_string.chars().collect();
    let mut spans = vec![(0, 0); pieces.len()];
    let message = match search(&pieces, 0, 0, &input, &mut spans, &mut HashSet::new()) {
        None => format!(
            "time data {} does not match format {}",
            StringRepr(date_string),
            StringRepr(format)
        ),
        Some(end) if end < input.len() => {
            let rest: String = input[end..].iter().collect();
            format!("unconverted data remains: {rest}")
        }
        Some(_) => {
            let groups = pieces
                .iter()
                .zip(&spans)
                .filter_map(|(piece, &(from, to))| match piece {
                    Piece::Directive(name) => Some((*name, input[from..to].iter().collect())),
                    _ => None,
                })
                .collect();
            return Some(Ok(groups));
        }
    };
    Some(Err(value_error(message)))
}

/// CPython's `ValueError` for an input `format`'s expression does not read
/// whole; `None` when it does (or the format is not modelled).
pub(crate) fn strptime_refusal(date_string: &str, format: &str) -> Option<RunError> {
    read(date_string, format)?.err()
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
    /// `tm_wday` as `_strptime` returns it: a parsed `%a`/`%A`/`%w`/`%u`
    /// kept as read, else the date's (Monday 0).
    pub weekday: u32,
    /// `tm_yday`: a parsed or week-computed `%j` as it stands, else the date's.
    pub julian: u32,
}

fn value_error(message: impl Into<String>) -> RunError {
    SimpleException::new_msg(ExcType::ValueError, message.into()).into()
}

/// CPython's `_strptime._strptime` over the expression's match, as far as a
/// `datetime` needs it, its refusal (see [`read`]) included. `Ok(None)` when
/// the format is not modelled or the input is past what is handled here
/// (`%j`/week dates past 9999, a fractional offset): the caller's older
/// parser decides those.
pub(crate) fn parse(date_string: &str, format: &str) -> Result<Option<StrptimeFields>, RunError> {
    use chrono::{Datelike, NaiveDate, Weekday};

    let Some(groups) = read(date_string, format).transpose()? else {
        return Ok(None);
    };
    let text = |name: char| groups.iter().find(|(n, _)| *n == name).map(|(_, text)| text.as_str());

    let (mut year, mut month, mut day) = (None, 1, 1);
    let (mut hour, mut minute, mut second, mut microsecond) = (0, 0, 0, 0);
    let (mut iso_year, mut iso_week, mut week_of_year, mut weekday, mut julian) = (None, None, None, None, None);
    let mut week_starts_monday = false;
    let mut offset = None;
    for (name, value) in &groups {
        let (name, value) = (*name, value.as_str());
        let lower = value.to_lowercase();
        // Every numeric group is digits (`%d` and `%H` may lead with a space).
        let number = value.trim_start().parse::<i32>().ok();
        match name {
            'y' => year = number.map(|y| if y <= 68 { y + 2000 } else { y + 1900 }),
            'Y' => year = number,
            'G' => iso_year = number,
            'm' => month = number.unwrap_or(1),
            'B' => month = MONTHS.iter().position(|m| *m == lower).map_or(1, |i| i as i32 + 1),
            'b' => month = MONTHS.iter().position(|m| m[..3] == lower).map_or(1, |i| i as i32 + 1),
            'd' => day = number.unwrap_or(1),
            'H' => hour = number.unwrap_or(0),
            'I' => {
                let twelve = number.unwrap_or(0);
                hour = match text('p').map(str::to_lowercase).as_deref() {
                    Some("pm") if twelve != 12 => twelve + 12,
                    Some("pm") => twelve,
                    _ if twelve == 12 => 0,
                    _ => twelve,
                };
            }
            'M' => minute = number.unwrap_or(0),
            'S' => second = number.unwrap_or(0),
            'f' => microsecond = format!("{value:0<6}").parse().unwrap_or(0),
            'A' => weekday = WEEKDAYS.iter().position(|d| *d == lower),
            'a' => weekday = WEEKDAYS.iter().position(|d| d[..3] == lower),
            'w' => weekday = number.map(|w| if w == 0 { 6 } else { (w - 1) as usize }),
            'u' => weekday = number.map(|u| (u - 1) as usize),
            'j' => julian = number,
            'U' | 'W' => {
                week_of_year = number;
                week_starts_monday = name == 'W';
            }
            'V' => iso_week = number,
            'z' => offset = Some(parse_offset(value)?),
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
    let given_julian = julian;
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
    // `_strptime`'s julian and weekday, from the date before the leap-year fix.
    let date = NaiveDate::from_ymd_opt(year, month, day);
    let julian = given_julian
        .and_then(|j| u32::try_from(j).ok())
        .or_else(|| date.map(|d| d.ordinal()))
        .unwrap_or(1);
    let weekday = weekday
        .and_then(|w| u32::try_from(w).ok())
        .or_else(|| date.map(|d| d.weekday().num_days_from_monday()))
        .unwrap_or(0);
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
        zone_name: text('Z').map(str::to_owned),
        weekday,
        julian,
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
