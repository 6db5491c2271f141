//! chainbox patch: CPython's "Did you mean" — the name it suggests for a
//! misspelled one.
//!
//! A port of `_Py_CalculateSuggestions` (`Python/suggestions.c`, CPython
//! 3.13/3.14), which the interpreter calls for an unexpected keyword argument
//! (`f() got an unexpected keyword argument 'prce'. Did you mean 'price'?`)
//! and `traceback` (through `_suggestions._generate_suggestions`) for a
//! `NameError`, `AttributeError` or `ImportError`. It works on the UTF-8
//! bytes of the names, as the C code does: a non-ASCII character costs one
//! edit per byte, and only ASCII letters differ by case alone.
//!
//! Exported as `monty::closest_name` for the guest's own hints (a tool's
//! name); its tests are the guest's (`guest/runtime`), as this vendored
//! crate's unit tests cannot be built without upstream's test files.

/// With this many candidates or more, nothing is suggested.
const MAX_CANDIDATE_ITEMS: usize = 750;
/// What is left of either name, once their common ends are trimmed, is never
/// compared past this many bytes.
const MAX_STRING_SIZE: usize = 40;
/// Cost of inserting, deleting or substituting a byte.
const MOVE_COST: usize = 2;
/// Cost of substituting an ASCII letter by itself in the other case.
const CASE_COST: usize = 1;

/// The candidate CPython suggests for `name`: the closest one (the first of
/// equally close ones) that needs at most about a third of the characters
/// involved changed, never `name` itself; `None` when none is that close or
/// there are 750 candidates or more.
pub fn closest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    if candidates.len() >= MAX_CANDIDATE_ITEMS {
        return None;
    }
    let mut best: Option<(&'a str, usize)> = None;
    for &item in candidates {
        if item == name {
            continue;
        }
        // No more than 1/3 of the involved characters should need changing,
        // and a match already beaten is not taken.
        let mut max_distance = (name.len() + item.len() + 3) * MOVE_COST / 6;
        if let Some((_, best_distance)) = best {
            max_distance = max_distance.min(best_distance - 1);
        }
        let distance = levenshtein_distance(name.as_bytes(), item.as_bytes(), max_distance);
        if distance <= max_distance {
            best = Some((item, distance));
        }
    }
    best.map(|(item, _)| item)
}

/// `substitution_cost`: 0 for the same byte, `CASE_COST` for an ASCII letter
/// and itself in the other case, else `MOVE_COST`.
fn substitution_cost(a: u8, b: u8) -> usize {
    if a == b {
        0
    } else if a.to_ascii_lowercase() == b.to_ascii_lowercase() {
        CASE_COST
    } else {
        MOVE_COST
    }
}

/// `levenshtein_distance`: the weighted edit distance between `a` and `b`,
/// or `max_cost + 1` once it is known to exceed `max_cost`.
fn levenshtein_distance<'a>(mut a: &'a [u8], mut b: &'a [u8], max_cost: usize) -> usize {
    // Common prefixes and suffixes cost nothing.
    while let ([x, a_rest @ ..], [y, b_rest @ ..]) = (a, b)
        && x == y
    {
        (a, b) = (a_rest, b_rest);
    }
    while let ([a_rest @ .., x], [b_rest @ .., y]) = (a, b)
        && x == y
    {
        (a, b) = (a_rest, b_rest);
    }
    if a.is_empty() || b.is_empty() {
        return (a.len() + b.len()) * MOVE_COST;
    }
    if a.len() > MAX_STRING_SIZE || b.len() > MAX_STRING_SIZE {
        return max_cost + 1;
    }
    // The shorter one is the row.
    if b.len() < a.len() {
        (a, b) = (b, a);
    }
    // Quick fail when a match is impossible.
    if (b.len() - a.len()) * MOVE_COST > max_cost {
        return max_cost + 1;
    }
    // One row of the matrix, updated in place: `row[i]` is the cost from
    // `b[..b_index]` to `a[..=i]`.
    let mut buffer = [0usize; MAX_STRING_SIZE];
    let row = &mut buffer[..a.len()];
    for (i, cell) in row.iter_mut().enumerate() {
        *cell = (i + 1) * MOVE_COST;
    }
    let mut result = 0;
    for (b_index, &code) in b.iter().enumerate() {
        let mut distance = b_index * MOVE_COST;
        result = distance;
        let mut minimum = usize::MAX;
        for (cell, &a_code) in row.iter_mut().zip(a) {
            let substitute = distance + substitution_cost(code, a_code);
            distance = *cell;
            let insert_delete = result.min(distance) + MOVE_COST;
            result = insert_delete.min(substitute);
            *cell = result;
            minimum = minimum.min(result);
        }
        if minimum > max_cost {
            // Everything in this row is too big: bail early.
            return max_cost + 1;
        }
    }
    result
}
