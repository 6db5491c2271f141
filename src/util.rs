//! Small helpers every layer shares: text cut to a length for messages,
//! the UTC timestamp records carry, durations as the results' milliseconds.
//! Depends on nothing of ours.

/// `text` cut to at most `max` characters, the last one an ellipsis when cut.
pub(crate) fn truncate_chars(text: &str, max: usize) -> String {
    if text.chars().nth(max).is_none() {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Now, in UTC, as RFC 3339: the `observed_at` of records and results.
pub fn utc_now_rfc3339() -> String {
    jiff::Timestamp::now().to_string()
}

/// Milliseconds with microsecond precision, for durations in results.
pub(crate) fn millis(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1_000_000.0).round() / 1000.0
}
