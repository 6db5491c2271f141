//! CPython's "Did you mean" for a misspelled name: the same edit distance
//! and cut-offs as `traceback._compute_suggestion_error` (CPython 3.12), so a
//! chain's `NameError` reads as Python's would.

/// Cost of inserting, deleting or substituting a character.
const MOVE_COST: usize = 2;
/// Cost of substituting a character by the same letter in the other case.
const CASE_COST: usize = 1;
/// Names longer than this are never compared.
const MAX_STRING_SIZE: usize = 40;

/// Above this many candidates CPython suggests nothing.
const MAX_CANDIDATE_ITEMS: usize = 750;

/// The candidate CPython would suggest for `name`, if any is close enough:
/// at most a third of the characters involved need changing.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let name: Vec<char> = name.chars().collect();
    if name.len() > MAX_STRING_SIZE {
        return None;
    }
    let mut best_distance = name.len();
    let mut best = None;
    for (i, candidate) in candidates.into_iter().enumerate() {
        if i >= MAX_CANDIDATE_ITEMS {
            return None;
        }
        let chars: Vec<char> = candidate.chars().collect();
        if chars == name {
            continue;
        }
        // Don't take matches already beaten.
        let max = ((chars.len() + name.len() + 3) * MOVE_COST / 6).min(best_distance.saturating_sub(1));
        let distance = levenshtein(&name, &chars, max);
        if distance <= max && (best.is_none() || distance < best_distance) {
            best = Some(candidate);
            best_distance = distance;
        }
    }
    best
}

fn substitution_cost(a: char, b: char) -> usize {
    if a == b {
        0
    } else if a.to_lowercase().eq(b.to_lowercase()) {
        CASE_COST
    } else {
        MOVE_COST
    }
}

/// Weighted edit distance, or `max + 1` as soon as it must exceed `max`.
fn levenshtein<'a>(mut a: &'a [char], mut b: &'a [char], max: usize) -> usize {
    // Common prefixes and suffixes cost nothing.
    while let (Some(x), Some(y)) = (a.first(), b.first()) {
        if x != y {
            break;
        }
        (a, b) = (&a[1..], &b[1..]);
    }
    while let (Some(x), Some(y)) = (a.last(), b.last()) {
        if x != y {
            break;
        }
        (a, b) = (&a[..a.len() - 1], &b[..b.len() - 1]);
    }
    if a.is_empty() || b.is_empty() {
        return (a.len() + b.len()) * MOVE_COST;
    }
    if a.len() > MAX_STRING_SIZE || b.len() > MAX_STRING_SIZE {
        return max + 1;
    }
    if b.len() < a.len() {
        std::mem::swap(&mut a, &mut b);
    }
    if (b.len() - a.len()) * MOVE_COST > max {
        return max + 1;
    }
    // One row of the matrix, updated in place.
    let mut row: Vec<usize> = (1..=a.len()).map(|i| i * MOVE_COST).collect();
    let mut result = 0;
    for (bi, &code) in b.iter().enumerate() {
        let mut distance = bi * MOVE_COST;
        result = distance;
        let mut minimum = usize::MAX;
        for (ai, &ac) in a.iter().enumerate() {
            let substitute = distance + substitution_cost(code, ac);
            distance = row[ai];
            let insert_delete = result.min(distance) + MOVE_COST;
            result = insert_delete.min(substitute);
            row[ai] = result;
            minimum = minimum.min(result);
        }
        if minimum > max {
            return max + 1;
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::closest;

    // Expectations from CPython 3.11/3.12: `echo = 1` then the misspelled name.
    #[test]
    fn suggests_what_cpython_suggests() {
        let tools = ["echo", "get_weather", "list_orders", "load_artifact"];
        assert_eq!(closest("ech", tools), Some("echo"));
        assert_eq!(closest("get_wether", tools), Some("get_weather"));
        assert_eq!(closest("Echo", tools), Some("echo"));
        assert_eq!(closest("list_order", tools), Some("list_orders"));
    }

    #[test]
    fn suggests_nothing_when_nothing_is_close() {
        let tools = ["echo", "get_weather"];
        assert_eq!(closest("ehco", tools), None);
        assert_eq!(closest("ECHO", tools), None);
        assert_eq!(closest("delete_everything", tools), None);
        assert_eq!(closest("echo", ["echo"]), None);
    }
}
