//! Compiled regex pattern type for the `re` module.
//!
//! `RePattern` wraps a compiled `fancy_regex::Regex` with the original Python pattern
//! string and flags. The `fancy_regex` crate supports backreferences, lookahead/lookbehind,
//! and other advanced features, but uses backtracking which means patterns are susceptible
//! to ReDoS. Monty's resource limits (time and allocation budgets) are the primary defense
//! against catastrophic backtracking in untrusted patterns.
//!
//! Custom serde serializes only the pattern string and flags, recompiling the regex
//! on deserialization. This supports Monty's snapshot/restore feature.

// chainbox patch: imports for this file's patches (CHAINBOX.md)
use std::{cell::OnceCell, cmp::Ordering, fmt::Write, mem, str};

use fancy_regex::{CompileError, Error as RegexError, Regex, RegexBuilder};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

use crate::{
    args::{ArgValues, FromArgs},
    bytecode::{CallResult, VM},
    defer_drop, defer_drop_mut,
    exception_private::{ExcType, ExcTypeExt, RunError, RunResult},
    heap::{Heap, HeapData, HeapId, HeapItem, HeapObjectRead, HeapRead, HeapReadOutput},
    intern::StaticStrings,
    modules::re::{ASCII, DOTALL, IGNORECASE, LOCALE, MULTILINE, UNICODE, VERBOSE},
    resource_checks::check_estimated_size,
    types::{
        LazyHeapSet, List, PyTrait, ReMatch, Type, allocate_tuple,
        re_syntax,
        re_template::Template,
        str::{allocate_string, string_repr_fmt},
        tuple::TupleVec,
    },
    value::{EitherStr, VALUE_SIZE, Value},
};

/// A compiled regular expression pattern.
///
/// Wraps a `fancy_regex::Regex` with the original Python pattern string and flags.
/// The `fancy_regex` crate supports backtracking features like backreferences and
/// lookaround, but this means patterns are susceptible to ReDoS — Monty's resource
/// limits are the defense against catastrophic backtracking.
///
/// Custom serde serializes only the pattern string and flags, recompiling the
/// regex on deserialization. This supports Monty's snapshot/restore feature.
#[derive(Debug, Clone)]
pub(crate) struct RePattern {
    /// The original Python regex pattern string.
    pattern: String,
    /// Python regex flags bitmask (IGNORECASE=2, MULTILINE=8, DOTALL=16, ASCII=256).
    flags: u16,
    /// chainbox patch: the pattern in `fancy_regex`'s syntax (see `re_syntax`),
    /// from which the anchored variants below are compiled.
    source: String,
    /// chainbox patch: the flags for the whole pattern, the caller's and the
    /// pattern's leading inline flags.
    source_flags: u16,
    /// chainbox patch: the named groups and their numbers (the regex's own
    /// groups are unnamed, see `re_syntax::Translation::names`).
    names: Vec<(String, usize)>,
    /// chainbox patch: see `re_syntax::Translation::close_rank`.
    close_rank: Vec<usize>,
    /// The compiled Rust regex, unanchored.
    compiled: Regex,
    /// The regex anchored with `\A(?:...)` for `match()`, compiled lazily on first
    /// use (most patterns are only ever `search`/`split`/`sub`ed).
    ///
    /// Uses `\A` (absolute start anchor) instead of `^` so the MULTILINE flag
    /// doesn't cause it to match at line boundaries. This correctly handles
    /// alternations — e.g. `match('b|ab', 'ab')` must match `ab`, not fail
    /// because the engine found only `b` starting at position 1.
    compiled_match: OnceCell<Regex>,
    /// The regex anchored with `\A(?:...)\z` for `fullmatch()`, compiled lazily on
    /// first use (see `compiled_match`).
    ///
    /// Uses `\A`/`\z` (absolute anchors) instead of `^`/`$` so the MULTILINE flag
    /// doesn't cause them to match at line boundaries. This correctly handles
    /// alternations — e.g. `fullmatch('a|ab', 'ab')` must match `ab`, not fail
    /// because the engine found `a` first.
    compiled_fullmatch: OnceCell<Regex>,
    /// chainbox patch: `\G(?:...)(?!\G)`, a non-empty match starting exactly
    /// where a search starts, for the scan after an empty match (see
    /// [`scan`]); compiled lazily on first use.
    compiled_advance: OnceCell<Regex>,
    /// The `delegate_size_limit` the plain regex was compiled with, forwarded to
    /// the anchored variants above so a *cached* entry's total retained compiled
    /// size stays bounded (the anchors add only O(1) bytes, so a pattern that fit
    /// unanchored still fits anchored). `None` = the engine's default limit. Not
    /// serialized — restored patterns recompile at the default limit.
    delegate_size_limit: Option<usize>,
}

impl PartialEq for RePattern {
    /// chainbox patch: the flags as CPython's `pattern_richcompare` sees
    /// them, with the ones implied made explicit (`re.compile('a') ==
    /// re.compile('a', re.U)`; upstream compared the caller's flags).
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern && self.python_flags() == other.python_flags()
    }
}

/// Failure of [`RePattern::compile_bounded`], separating "valid pattern whose
/// compiled form exceeds the size cap" (the caller retries uncached at default
/// limits) from a genuine pattern error (reported to the user).
pub(crate) enum BoundedCompileError {
    /// The compiled regex exceeded the requested `delegate_size_limit`.
    TooBig,
    /// The pattern itself is invalid, already converted to `re.PatternError`.
    Invalid(RunError),
}

impl RePattern {
    /// Creates a compiled pattern from a Python regex string and flags.
    ///
    /// Translates Python flag constants into inline regex flag prefixes and compiles
    /// the unanchored pattern. The anchored variants used by `match`/`fullmatch` are
    /// compiled lazily on first use (see [`RePattern::match_regex`]).
    ///
    /// # Errors
    ///
    /// Returns `re.PatternError` if the pattern is invalid.
    pub fn compile(pattern: String, flags: u16) -> RunResult<Self> {
        // chainbox patch (CHAINBOX.md)
        Self::compile_inner(pattern, flags, None).map_err(|failure| match failure {
            CompileFailure::Syntax(err) => err,
            CompileFailure::Regex(err) => ExcType::re_pattern_error(err),
        })
    }

    /// As [`RePattern::compile`], but caps the compiled size of the delegated regex
    /// (`RegexBuilder::delegate_size_limit`) so the `re` module's pattern cache can
    /// retain entries with a hard per-entry memory ceiling. The limit is retained
    /// and applied to the lazily-compiled anchored `match`/`fullmatch` variants
    /// too, so a cached entry cannot pin large regexes via `.match()`/`.fullmatch()`.
    pub(crate) fn compile_bounded(
        pattern: String,
        flags: u16,
        delegate_size_limit: usize,
    ) -> Result<Self, BoundedCompileError> {
        // chainbox patch (CHAINBOX.md)
        Self::compile_inner(pattern, flags, Some(delegate_size_limit)).map_err(|failure| match failure {
            CompileFailure::Syntax(err) => BoundedCompileError::Invalid(err),
            CompileFailure::Regex(err) if is_size_limit_error(&err) => BoundedCompileError::TooBig,
            CompileFailure::Regex(err) => BoundedCompileError::Invalid(ExcType::re_pattern_error(err)),
        })
    }

    /// True when this was compiled from exactly `(pattern, flags)`.
    ///
    /// Lets the `re` module's pattern cache confirm a slot on a hash hit without
    /// storing its own copy of the key — the compiled pattern already owns both,
    /// and duplicating the source text is what makes a cached entry expensive.
    pub(crate) fn is_compiled_from(&self, pattern: &str, flags: u16) -> bool {
        self.flags == flags && self.pattern == pattern
    }

    /// Shared constructor for [`RePattern::compile`] / [`RePattern::compile_bounded`].
    // chainbox patch (CHAINBOX.md)
    fn compile_inner(pattern: String, flags: u16, delegate_size_limit: Option<usize>) -> Result<Self, CompileFailure> {
        let translation = re_syntax::translate(&pattern, flags).map_err(CompileFailure::Syntax)?;
        let compiled = compile_regex_limited(&translation.source, translation.flags, delegate_size_limit)
            .map_err(CompileFailure::Regex)?;
        Ok(Self {
            pattern,
            flags,
            source: translation.source,
            source_flags: translation.flags,
            names: translation.names,
            close_rank: translation.close_rank,
            compiled,
            compiled_match: OnceCell::new(),
            compiled_fullmatch: OnceCell::new(),
            compiled_advance: OnceCell::new(),
            delegate_size_limit,
        })
    }

    /// Returns the `\A(?:pattern)` regex for `match()`, compiling it on first use.
    ///
    /// Wrapping a pattern that already compiled essentially never fails, so any
    /// error surfaces (as `re.PatternError`) at `match()` rather than `re.compile()`.
    fn match_regex(&self) -> RunResult<&Regex> {
        if let Some(regex) = self.compiled_match.get() {
            return Ok(regex);
        }
        let compiled = compile_regex_limited(
            // chainbox patch (CHAINBOX.md)
            &anchored_source(&self.source, ""),
            self.source_flags,
            self.delegate_size_limit,
        )
        .map_err(ExcType::re_pattern_error)?;
        // `set` only fails on a concurrent init, impossible on the single-threaded VM.
        let _ = self.compiled_match.set(compiled);
        Ok(self.compiled_match.get().expect("cell was just initialised"))
    }

    /// Returns the `\A(?:pattern)\z` regex for `fullmatch()`, compiling on first use.
    fn fullmatch_regex(&self) -> RunResult<&Regex> {
        if let Some(regex) = self.compiled_fullmatch.get() {
            return Ok(regex);
        }
        let compiled = compile_regex_limited(
            &anchored_source(&self.source, "\\z"),
            self.source_flags,
            self.delegate_size_limit,
        )
        .map_err(ExcType::re_pattern_error)?;
        let _ = self.compiled_fullmatch.set(compiled);
        Ok(self.compiled_fullmatch.get().expect("cell was just initialised"))
    }

    /// chainbox patch: the regex for a non-empty match at the search's start
    /// (`\G` is that position; `(?!\G)` refuses to end there), compiled on
    /// first use.
    fn advance_regex(&self) -> RunResult<&Regex> {
        if let Some(regex) = self.compiled_advance.get() {
            return Ok(regex);
        }
        let compiled = compile_regex_limited(
            &format!("\\G(?:{})(?!\\G)", self.source),
            self.source_flags,
            self.delegate_size_limit,
        )
        .map_err(ExcType::re_pattern_error)?;
        let _ = self.compiled_advance.set(compiled);
        Ok(self.compiled_advance.get().expect("cell was just initialised"))
    }

    /// chainbox patch: `\G(?:pattern)` and `suffix`, for `match` and
    /// `fullmatch` from a `pos` past the start. Compiled per call: a `pos`
    /// is rare, and the plain anchored forms stay on the engine's fast path.
    fn at_regex(&self, suffix: &str) -> RunResult<Regex> {
        compile_regex_limited(
            &format!("\\G(?:{}){suffix}", self.source),
            self.source_flags,
            self.delegate_size_limit,
        )
        .map_err(ExcType::re_pattern_error)
    }

    /// Builds a single `ReMatch` heap value from a capture result, keeping the
    /// subject alive by refcount (`subject.clone_with_heap`) rather than copying
    /// its text. `all_ascii` is precomputed by the caller (once per `finditer`).
    fn build_match(
        &self,
        caps: &fancy_regex::Captures<'_>,
        subject: &Value,
        all_ascii: bool,
        window: Window,
        heap: &Heap,
    ) -> Value {
        let mut m = ReMatch::from_captures(
            caps,
            subject.clone_with_heap(heap),
            all_ascii,
            &self.names,
            &self.close_rank,
        );
        m.set_window(window.given);
        Value::Ref(heap.allocate(HeapData::ReMatch(Box::new(m))))
    }

    /// `pattern.search(string)` — find first match anywhere in the string.
    ///
    /// `subject` is the subject `Value` (stored by the match); `text` is its
    /// borrowed contents. Returns a `ReMatch` heap object, or `Value::None`.
    /// chainbox patch: within `window` (`pos`, `endpos`).
    pub fn search(&self, subject: &Value, text: &str, window: Window, heap: &Heap) -> RunResult<Value> {
        let text = window.cut(text);
        match self.compiled.captures_from_pos(text, window.start) {
            Ok(Some(caps)) => Ok(self.build_match(&caps, subject, text.is_ascii(), window, heap)),
            Ok(None) => Ok(Value::None),
            Err(err) => Err(ExcType::re_pattern_error(err)),
        }
    }

    /// `pattern.match(string)` — match anchored at the start of the string.
    ///
    /// Uses a pre-compiled `\A(?:pattern)` regex to correctly handle alternations.
    /// For example, `match('b|ab', 'ab')` correctly matches `ab` because the
    /// anchor forces the engine to try all alternatives at position 0.
    ///
    /// Returns a `ReMatch` heap object on success, or `Value::None` if no match.
    ///
    /// chainbox patch: within `window`; from a `pos` past the start, anchored
    /// there with `\G` (`\A` only matches at the subject's real start).
    pub fn match_start(&self, subject: &Value, text: &str, window: Window, heap: &Heap) -> RunResult<Value> {
        let text = window.cut(text);
        let found = if window.start == 0 {
            self.match_regex()?.captures(text)
        } else {
            self.at_regex("")?.captures_from_pos(text, window.start)
        };
        match found {
            Ok(Some(caps)) => Ok(self.build_match(&caps, subject, text.is_ascii(), window, heap)),
            Ok(None) => Ok(Value::None),
            Err(err) => Err(ExcType::re_pattern_error(err)),
        }
    }

    /// `pattern.fullmatch(string)` — match the entire string.
    ///
    /// Uses a pre-compiled `\A(?:pattern)\z` regex to correctly handle alternations.
    /// For example, `fullmatch('a|ab', 'ab')` correctly matches `ab` because the
    /// anchors force the engine to try all alternatives for a full-string match.
    ///
    /// Returns a `ReMatch` heap object on success, or `Value::None` if no match.
    ///
    /// chainbox patch: within `window`, as [`RePattern::match_start`].
    pub fn fullmatch(&self, subject: &Value, text: &str, window: Window, heap: &Heap) -> RunResult<Value> {
        let text = window.cut(text);
        let found = if window.start == 0 {
            self.fullmatch_regex()?.captures(text)
        } else {
            self.at_regex("\\z")?.captures_from_pos(text, window.start)
        };
        match found {
            Ok(Some(caps)) => Ok(self.build_match(&caps, subject, text.is_ascii(), window, heap)),
            Ok(None) => Ok(Value::None),
            Err(err) => Err(ExcType::re_pattern_error(err)),
        }
    }

    /// `pattern.findall(string)` — return all non-overlapping matches.
    ///
    /// Follows CPython's semantics:
    /// - No capture groups: returns a list of matched strings
    /// - One capture group: returns a list of the group's matched strings
    /// - Multiple capture groups: returns a list of tuples of matched strings
    ///
    /// The scan collects borrowed `&str` slices and a second pass allocates them,
    /// so only the scan can fail: a scan abandoned half way through a list of heap
    /// values could not release them, since `dec_ref` needs `&mut Heap` while the
    /// match iterator borrows the compiled pattern out of it.
    pub fn findall(&self, text: &str, window: Window, heap: &Heap) -> RunResult<Value> {
        let cap_count = self.compiled.captures_len();
        let (text, start) = (window.cut(text), window.start);

        match cap_count {
            // No capture groups — return list of full match strings
            0 | 1 => {
                let mut matches = Vec::new();
                let search = |pos, advance| {
                    let regex = if advance { self.advance_regex()? } else { &self.compiled };
                    regex.find_from_pos(text, pos).map_err(ExcType::re_pattern_error)
                };
                for m in scan(text, start, search, |m| (m.start(), m.end())) {
                    check_slice_growth(&matches, heap)?;
                    matches.push(m?.as_str());
                }
                allocate_str_list(&matches, heap)
            }
            // One capture group — return list of the group's strings
            2 => {
                let mut matches = Vec::new();
                for caps in self.captures(text, start) {
                    check_slice_growth(&matches, heap)?;
                    let caps = caps?;
                    matches.push(caps.get(1).map_or("", |m| m.as_str()));
                }
                allocate_str_list(&matches, heap)
            }
            // Multiple capture groups — return list of tuples, collected flat
            // and cut back into rows of `groups` once the scan has succeeded.
            _ => {
                let groups = cap_count - 1;
                let mut flat = Vec::new();
                for caps in self.captures(text, start) {
                    let caps = caps?;
                    for cap in caps.iter().skip(1) {
                        check_slice_growth(&flat, heap)?;
                        flat.push(cap.map_or("", |m| m.as_str()));
                    }
                }
                allocate_tuple_list(&flat, groups, heap)
            }
        }
    }

    /// chainbox patch: `repl` parsed as CPython parses a replacement
    /// template, checked against this pattern's groups (see `re_template`).
    pub(crate) fn template(&self, repl: &str) -> RunResult<Template> {
        Template::parse(repl, self.compiled.captures_len() - 1, |name| {
            self.names.iter().find(|(n, _)| n == name).map(|&(_, group)| group)
        })
    }

    /// chainbox patch: `Pattern.flags` as CPython has it: the caller's flags,
    /// the pattern's global inline flags (`(?s)`), and `re.UNICODE` unless
    /// the pattern is ASCII-only (upstream: the caller's flags alone).
    pub(crate) fn python_flags(&self) -> u16 {
        if self.source_flags & ASCII == 0 {
            self.source_flags | UNICODE
        } else {
            self.source_flags
        }
    }

    /// The number of capture groups (`Pattern.groups`).
    pub(crate) fn group_count(&self) -> usize {
        self.compiled.captures_len() - 1
    }

    /// `pattern.sub(repl, string, count=0)` — substitute matches with a replacement.
    ///
    /// When `count` is 0, all matches are replaced. Otherwise, at most `count`
    /// replacements are made. The replacement string supports `$1`, `$2`, etc.
    /// for backreferences to captured groups.
    ///
    /// Builds the result string in a single pass by iterating matches and appending
    /// replacements directly. Checks the running output size against resource limits
    /// after each match, bailing out immediately if the budget is exceeded. This
    /// avoids both false rejections from conservative pre-estimates and untracked
    /// Rust heap allocations from delegating to `fancy_regex::replace_all()`.
    ///
    /// chainbox patch: returns the number of substitutions too, for `subn`.
    pub fn sub(&self, repl: &str, text: &str, count: usize, heap: &Heap) -> RunResult<(Value, usize)> {
        let template = self.template(repl)?;
        let effective_count = if count == 0 { usize::MAX } else { count };

        let mut result = String::new();
        let mut last_end = 0;
        let mut made = 0;

        for caps in self.captures(text, 0).take(effective_count) {
            let caps = caps?;
            let m = caps.get(0).expect("capture group 0 always exists");
            result.push_str(&text[last_end..m.start()]);
            template.expand_into(|i| caps.get(i).map(|g| g.as_str()), &mut result);
            last_end = m.end();
            made += 1;
            // Check running size: current result + remaining unprocessed text.
            check_estimated_size(result.len() + (text.len() - last_end), &heap.tracker)?;
        }

        result.push_str(&text[last_end..]);
        Ok((allocate_string(result, heap), made))
    }

    /// chainbox patch: the first `count` matches (0: all) as match objects,
    /// with their bounds in `text`, for `sub` with a function
    /// ([`sub_calling`]): found before the function runs, as the function
    /// needs the interpreter this pattern is borrowed from.
    pub(crate) fn sub_matches(
        &self,
        subject: &Value,
        text: &str,
        count: usize,
        heap: &Heap,
    ) -> RunResult<Vec<(Value, usize, usize)>> {
        let all_ascii = text.is_ascii();
        let effective_count = if count == 0 { usize::MAX } else { count };
        let mut found: Vec<(Value, usize, usize)> = Vec::new();
        for caps in self.captures(text, 0).take(effective_count) {
            // As `finditer`: an error mid-scan leaves the matches found to
            // the heap's end-of-run cleanup.
            let caps = caps?;
            heap.tracker
                .check_growth(found.len(), found.capacity(), mem::size_of::<(Value, usize, usize)>())?;
            let m = caps.get(0).expect("capture group 0 always exists");
            found.push((
                self.build_match(&caps, subject, all_ascii, Window::WHOLE, heap),
                m.start(),
                m.end(),
            ));
        }
        Ok(found)
    }

    /// `pattern.split(string, maxsplit=0)` — split string by pattern occurrences.
    ///
    /// Returns a list of strings, with each capture group's text (or `None`) after
    /// the piece before its match. If `maxsplit` is positive, at most `maxsplit`
    /// splits occur and the remainder of the string is returned as the final
    /// element; if it is negative, no splits occur at all (CPython's split loop
    /// runs zero times), returning the whole subject as a single element.
    /// An empty match splits too (Python 3.7+).
    pub fn split(&self, text: &str, maxsplit: i64, heap: &Heap) -> RunResult<Value> {
        let limit = match maxsplit.cmp(&0) {
            Ordering::Less => 0,
            Ordering::Equal => usize::MAX,
            Ordering::Greater => usize::try_from(maxsplit).unwrap_or(usize::MAX),
        };
        let mut pieces: Vec<Option<&str>> = Vec::new();
        let mut last_end = 0;
        for caps in self.captures(text, 0).take(limit) {
            let caps = caps?;
            let m = caps.get(0).expect("capture group 0 always exists");
            check_slice_growth(&pieces, heap)?;
            pieces.push(Some(&text[last_end..m.start()]));
            for group in caps.iter().skip(1) {
                check_slice_growth(&pieces, heap)?;
                pieces.push(group.map(|g| g.as_str()));
            }
            last_end = m.end();
        }
        check_slice_growth(&pieces, heap)?;
        pieces.push(Some(&text[last_end..]));
        allocate_optional_str_list(&pieces, heap)
    }

    /// chainbox patch: the matches in `text` as CPython's scanner finds them,
    /// for `findall`, `finditer`, `sub` and `split` (upstream used the
    /// engine's iterators, whose rule for empty matches differs).
    fn captures<'t>(&self, text: &'t str, start: usize) -> impl Iterator<Item = RunResult<fancy_regex::Captures<'t>>> {
        scan(
            text,
            start,
            move |pos, advance| {
                let regex = if advance { self.advance_regex()? } else { &self.compiled };
                regex.captures_from_pos(text, pos).map_err(ExcType::re_pattern_error)
            },
            |caps| {
                let m = caps.get(0).expect("capture group 0 always exists");
                (m.start(), m.end())
            },
        )
    }

    /// `pattern.finditer(string)` — return all matches as a list.
    ///
    /// Eagerly collects all match objects into a list. This differs from CPython's
    /// lazy iterator but produces the same results when iterated. The VM's `GetIter`
    /// opcode handles iteration over the returned list.
    pub fn finditer(&self, subject: &Value, text: &str, window: Window, heap: &Heap) -> RunResult<Value> {
        let text = window.cut(text);
        // Every match shares one refcounted subject reference, not a copy each.
        let all_ascii = text.is_ascii();

        let mut results = Vec::new();
        for caps in self.captures(text, window.start) {
            check_results_growth(&results, heap)?;
            let caps = caps?;
            results.push(self.build_match(&caps, subject, all_ascii, window, heap));
        }

        let list = List::new(results);
        Ok(Value::Ref(heap.allocate(HeapData::List(list))))
    }
}

/// chainbox patch: where a search looks in its subject, CPython's `pos` and
/// `endpos`. It starts at `start` (a byte offset) yet sees the text before
/// it (`\b`, lookbehind; `^` and `\A` still match only at the real start),
/// and the subject ends at `end`, as if cut there (`$` matches there,
/// lookahead sees nothing past it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    start: usize,
    end: usize,
    /// `(pos, endpos)` in characters, clamped as CPython clamps them, for
    /// `Match.pos` and `Match.endpos`; `None` for the whole subject.
    given: Option<(i64, i64)>,
}

impl Window {
    /// The whole subject: no `pos` or `endpos` given.
    pub(crate) const WHOLE: Self = Self {
        start: 0,
        end: usize::MAX,
        given: None,
    };

    /// The window `pos` and `endpos` give in `text`, clamped into it, or
    /// `None` when `pos` is past `endpos` (nothing can match there).
    pub(crate) fn new(text: &str, pos: Option<i64>, endpos: Option<i64>) -> Option<Self> {
        if pos.is_none() && endpos.is_none() {
            return Some(Self::WHOLE);
        }
        let (pos, endpos) = (pos.unwrap_or(0), endpos.unwrap_or(i64::MAX));
        let ascii = text.is_ascii();
        let chars = if ascii { text.len() } else { text.chars().count() };
        let clamp = |i: i64| usize::try_from(i.max(0)).unwrap_or(usize::MAX).min(chars);
        let (pos, endpos) = (clamp(pos), clamp(endpos));
        if pos > endpos {
            return None;
        }
        let byte = |i: usize| {
            if ascii {
                i
            } else {
                text.char_indices().nth(i).map_or(text.len(), |(b, _)| b)
            }
        };
        let count = |i: usize| i64::try_from(i).unwrap_or(i64::MAX);
        Some(Self {
            start: byte(pos),
            end: byte(endpos),
            given: Some((count(pos), count(endpos))),
        })
    }

    /// The subject as this window cuts it.
    fn cut<'t>(&self, text: &'t str) -> &'t str {
        &text[..self.end.min(text.len())]
    }
}

/// chainbox patch: the arguments of the searches that take a window,
/// `string, pos=0, endpos=sys.maxsize`, named for their errors.
macro_rules! window_args {
    ($($args:ident $name:tt),*) => {$(
        #[derive(FromArgs)]
        #[from_args(name = $name, style = c_named, at_most_total)]
        struct $args {
            #[from_args(static_string = "StringAttr")]
            string: Value,
            #[from_args(default)]
            pos: Option<Value>,
            #[from_args(default)]
            endpos: Option<Value>,
        }
    )*};
}

window_args!(
    SearchArgs "search",
    MatchArgs "match",
    FullmatchArgs "fullmatch",
    FindallArgs "findall",
    FinditerArgs "finditer"
);

/// chainbox patch: the first `chars` characters of `text`, as C's `%.NR`
/// cuts a repr in CPython's `re` reprs (a cut repr loses its closing quote).
pub(crate) fn truncated(text: &str, chars: usize) -> &str {
    text.char_indices().nth(chars).map_or(text, |(end, _)| &text[..end])
}

/// chainbox patch: the flags a pattern's repr names, in CPython's order.
const FLAG_NAMES: [(u16, &str); 8] = [
    (IGNORECASE, "re.IGNORECASE"),
    (LOCALE, "re.LOCALE"),
    (MULTILINE, "re.MULTILINE"),
    (DOTALL, "re.DOTALL"),
    (UNICODE, "re.UNICODE"),
    (VERBOSE, "re.VERBOSE"),
    (128, "re.DEBUG"),
    (ASCII, "re.ASCII"),
];

/// Preflights the growth one more match result would cause.
///
/// A match list grows as long as the subject allows with no instruction
/// checkpoint in between, so without this the buffer's doubling can clear the
/// allocator's hard-limit headroom and kill the worker.
fn check_results_growth(results: &Vec<Value>, heap: &Heap) -> RunResult<()> {
    Ok(heap
        .tracker
        .check_growth(results.len(), results.capacity(), VALUE_SIZE)?)
}

/// [`check_results_growth`] for a buffer of borrowed match slices (`&str`, or
/// `Option<&str>` where a split's group may be missing).
///
/// Also polls the time limit, amortized with `check_time_every`: no instruction
/// checkpoint can stop the scan that fills the buffer either.
fn check_slice_growth<T>(slices: &Vec<T>, heap: &Heap) -> RunResult<()> {
    heap.tracker.check_time_every(slices.len())?;
    Ok(heap
        .tracker
        .check_growth(slices.len(), slices.capacity(), mem::size_of::<T>())?)
}

/// chainbox patch: CPython's scan over `text`. `search(pos, false)` is
/// the first match at or after `pos`, `search(pos, true)` a non-empty match
/// starting at `pos`; `span` gives a match's bounds. Each search starts
/// where the last match ended, so an empty match right after a non-empty one
/// counts (Python 3.7+: `re.sub('x*', '-', 'abxd')` is `'-a-b--d-'`; the
/// engine's iterators gave `'-a-b-d-'`). After an empty match, the next
/// must not be empty at the same place: CPython takes the pattern's first
/// non-empty way to match there (`re.findall('a*|b', 'b')` is
/// `['', 'b', '']`), else searches on from the next character.
fn scan<'t, T>(
    text: &'t str,
    start: usize,
    mut search: impl FnMut(usize, bool) -> RunResult<Option<T>>,
    span: impl Fn(&T) -> (usize, usize),
) -> impl Iterator<Item = RunResult<T>> {
    let mut pos = start;
    let mut must_advance = false;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut step = || -> RunResult<Option<T>> {
            if must_advance {
                must_advance = false;
                if let Some(found) = search(pos, true)? {
                    pos = span(&found).1;
                    return Ok(Some(found));
                }
                let Some(c) = text[pos..].chars().next() else {
                    return Ok(None);
                };
                pos += c.len_utf8();
            }
            let Some(found) = search(pos, false)? else {
                return Ok(None);
            };
            let (start, end) = span(&found);
            must_advance = start == end;
            pos = end;
            Ok(Some(found))
        };
        let next = step().transpose();
        if !matches!(next, Some(Ok(_))) {
            done = true;
        }
        next
    })
}

/// Allocates one heap string per slice and returns them as a list.
///
/// Fallible only before the first allocation, so no half-built list of heap
/// values can be stranded by a refused one.
fn allocate_str_list(slices: &[&str], heap: &Heap) -> RunResult<Value> {
    heap.tracker.check_allocation(slices.len().saturating_mul(VALUE_SIZE))?;
    let results = slices.iter().map(|s| allocate_string(*s, heap)).collect();
    Ok(Value::Ref(heap.allocate(HeapData::List(List::new(results)))))
}

/// [`allocate_str_list`] for a split with capture groups, where a missing group becomes `None`.
fn allocate_optional_str_list(pieces: &[Option<&str>], heap: &Heap) -> RunResult<Value> {
    heap.tracker.check_allocation(pieces.len().saturating_mul(VALUE_SIZE))?;
    let results = pieces
        .iter()
        .map(|piece| piece.map_or(Value::None, |s| allocate_string(s, heap)))
        .collect();
    Ok(Value::Ref(heap.allocate(HeapData::List(List::new(results)))))
}

/// [`allocate_str_list`] for rows of `groups` slices, one tuple per row.
fn allocate_tuple_list(flat: &[&str], groups: usize, heap: &Heap) -> RunResult<Value> {
    let rows = flat.len() / groups;
    heap.tracker.check_allocation(rows.saturating_mul(VALUE_SIZE))?;
    let results = flat
        .chunks_exact(groups)
        .map(|row| {
            let elements: TupleVec = row.iter().map(|s| allocate_string(*s, heap)).collect();
            allocate_tuple(elements, heap)
        })
        .collect();
    Ok(Value::Ref(heap.allocate(HeapData::List(List::new(results)))))
}

impl<'h> PyTrait<'h> for HeapObjectRead<'h, RePattern> {
    fn py_type(&self, _vm: &VM<'h>) -> Type {
        Type::RePattern
    }

    fn py_len(&self, _vm: &VM<'h>) -> Option<usize> {
        None
    }

    fn py_eq_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        let Some(HeapReadOutput::RePattern(other)) = other.read_heap(vm) else {
            return Ok(None);
        };
        Ok(Some(self.get(vm.heap) == other.get(vm.heap)))
    }

    fn py_bool(&self, _vm: &mut VM<'h>) -> RunResult<bool> {
        // Pattern objects are always truthy (matching CPython).
        Ok(true)
    }

    fn py_repr_fmt(&self, f: &mut impl Write, vm: &mut VM<'h>, _heap_ids: &mut LazyHeapSet) -> RunResult<()> {
        let this = self.get(vm.heap);
        write!(f, "re.compile(")?;
        // chainbox patch: CPython's `%.200R`, the repr cut to 200 characters.
        let mut repr = String::new();
        string_repr_fmt(&this.pattern, &mut repr)?;
        f.write_str(truncated(&repr, 200))?;
        // chainbox patch: CPython's `pattern_repr`: every flag the pattern
        // has (inline ones too), `re.UNICODE` left out when it is implied.
        let mut flags = this.python_flags();
        if flags & (LOCALE | UNICODE | ASCII) == UNICODE {
            flags &= !UNICODE;
        }
        let mut separator = ", ";
        for (bit, name) in FLAG_NAMES {
            if flags & bit != 0 {
                write!(f, "{separator}{name}")?;
                separator = "|";
                flags &= !bit;
            }
        }
        if flags != 0 {
            write!(f, "{separator}{flags:#x}")?;
        }
        Ok(write!(f, ")")?)
    }

    fn py_getattr(&self, attr: &EitherStr, vm: &mut VM<'h>) -> RunResult<Option<CallResult>> {
        match attr.static_string(vm.interns) {
            Some(StaticStrings::PatternAttr) => {
                let v = allocate_string(self.get(vm.heap).pattern.as_str(), vm.heap);
                Ok(Some(CallResult::Value(v)))
            }
            Some(StaticStrings::Flags) => Ok(Some(CallResult::Value(Value::Int(i64::from(
                self.get(vm.heap).python_flags(),
            ))))),
            // chainbox patch: `Pattern.groups`. (`groupindex` is a mappingproxy
            // in CPython, which monty lacks: the scan sends it to CPython.)
            Some(StaticStrings::Groups) => {
                let count = self.get(vm.heap).group_count();
                Ok(Some(CallResult::Value(Value::Int(i64::try_from(count).unwrap_or(i64::MAX)))))
            }
            _ => Err(ExcType::attribute_error(Type::RePattern, attr.as_str(vm.interns))),
        }
    }

    fn py_call_attr(&mut self, vm: &mut VM<'h>, attr: &EitherStr, args: ArgValues) -> RunResult<CallResult> {
        let result = match attr.static_string(vm.interns) {
            Some(StaticStrings::Search) => {
                let SearchArgs { string, pos, endpos } = SearchArgs::from_args(args, vm)?;
                windowed(self, string, pos, endpos, |_| Ok(Value::None), vm, RePattern::search)
            }
            Some(StaticStrings::Match) => {
                let MatchArgs { string, pos, endpos } = MatchArgs::from_args(args, vm)?;
                windowed(
                    self,
                    string,
                    pos,
                    endpos,
                    |_| Ok(Value::None),
                    vm,
                    RePattern::match_start,
                )
            }
            Some(StaticStrings::Fullmatch) => {
                let FullmatchArgs { string, pos, endpos } = FullmatchArgs::from_args(args, vm)?;
                windowed(self, string, pos, endpos, |_| Ok(Value::None), vm, RePattern::fullmatch)
            }
            Some(StaticStrings::Findall) => {
                let FindallArgs { string, pos, endpos } = FindallArgs::from_args(args, vm)?;
                let empty = |heap: &Heap| allocate_str_list(&[], heap);
                windowed(
                    self,
                    string,
                    pos,
                    endpos,
                    empty,
                    vm,
                    |pattern, _, text, window, heap| pattern.findall(text, window, heap),
                )
            }
            Some(StaticStrings::Sub) => call_pattern_sub(self, args, false, vm),
            Some(StaticStrings::Subn) => call_pattern_sub(self, args, true, vm),
            Some(StaticStrings::Split) => call_pattern_split(self, args, vm),
            Some(StaticStrings::Finditer) => {
                let FinditerArgs { string, pos, endpos } = FinditerArgs::from_args(args, vm)?;
                let empty = |heap: &Heap| allocate_str_list(&[], heap);
                windowed(self, string, pos, endpos, empty, vm, RePattern::finditer)
            }
            _ => return Err(ExcType::attribute_error_method(Type::RePattern, attr, args, vm)),
        }?;
        Ok(CallResult::Value(result))
    }
}

/// chainbox patch: runs `search` on `string` within the window `pos` and
/// `endpos` give, or answers `empty` when that window is empty.
fn windowed<'h>(
    pattern: &HeapRead<'h, RePattern>,
    string: Value,
    pos: Option<Value>,
    endpos: Option<Value>,
    empty: fn(&Heap) -> RunResult<Value>,
    vm: &mut VM<'h>,
    search: impl FnOnce(&RePattern, &Value, &str, Window, &Heap) -> RunResult<Value>,
) -> RunResult<Value> {
    defer_drop!(string, vm);
    defer_drop!(pos, vm);
    defer_drop!(endpos, vm);
    // Converted before the subject is looked at, as CPython's argument
    // parser does: `p.search(1, 'x')` complains about `pos`.
    let pos = pos.as_ref().map(|v| v.as_int(vm)).transpose()?;
    let endpos = endpos.as_ref().map(|v| v.as_int(vm)).transpose()?;
    let text = string.to_str(vm)?;
    match Window::new(text, pos, endpos) {
        Some(window) => search(pattern.get(vm.heap), string, text, window, vm.heap),
        None => empty(vm.heap),
    }
}

impl HeapItem for RePattern {
    fn py_dec_ref_ids(&mut self, _stack: &mut Vec<HeapId>) {
        // No heap references — all data is owned.
    }
}

/// Handles `pattern.sub(repl, string, count=0)` argument extraction and dispatch.
///
/// Separated from the main `py_call_attr` match to keep the borrow checker happy —
/// extracting multiple string arguments requires careful ordering of borrows.
/// Supports `count` as either positional or keyword argument.
///
/// chainbox patch: with `counted`, `pattern.subn`: the new string and the
/// number of substitutions.
fn call_pattern_sub<'h>(
    pattern: &HeapRead<'h, RePattern>,
    args: ArgValues,
    counted: bool,
    vm: &mut VM<'h>,
) -> RunResult<Value> {
    let PatternSubArgs {
        repl: repl_val,
        string: string_val,
        count: count_val,
    } = if counted {
        let PatternSubnArgs { repl, string, count } = PatternSubnArgs::from_args(args, vm)?;
        PatternSubArgs { repl, string, count }
    } else {
        PatternSubArgs::from_args(args, vm)?
    };
    defer_drop!(repl_val, vm);
    defer_drop!(string_val, vm);

    let count = extract_count(count_val, vm)?;

    // chainbox patch: a callable replacement is called on each match.
    if repl_val.is_callable(vm) {
        let Some(count) = count else {
            let _ = string_val.to_str(vm)?;
            return Ok(sub_result(string_val.clone_with_heap(vm.heap), 0, counted, vm.heap));
        };
        let matches = pattern
            .get(vm.heap)
            .sub_matches(string_val, string_val.to_str(vm)?, count, vm.heap)?;
        let (result, made) = sub_calling(matches, repl_val, string_val, vm)?;
        return Ok(sub_result(result, made, counted, vm.heap));
    }
    // CPython processes the replacement template *before* its match loop, so
    // this check must precede the negative-count early return below: a bad
    // repl raises even when zero substitutions will run.
    let repl = replacement_str(repl_val, vm)?;
    let Some(count) = count else {
        // The template is checked even when the negative count skips matching.
        pattern.get(vm.heap).template(repl)?;
        // Negative count — Pattern.sub returns the input string unchanged.
        // The subject is still type-checked (`to_str` raises this method's
        // `expected string, not {t}` wording) before the refcount bump; no
        // need to re-allocate.
        let _ = string_val.to_str(vm)?;
        return Ok(sub_result(string_val.clone_with_heap(vm.heap), 0, counted, vm.heap));
    };

    let text = string_val.to_str(vm)?;
    let (result, made) = pattern.get(vm.heap).sub(repl, text, count, vm.heap)?;
    Ok(sub_result(result, made, counted, vm.heap))
}

/// chainbox patch: `sub` with a function for its replacement (upstream:
/// "callable replacement is not yet supported"). As CPython's
/// `pattern_subx`, `function` is called on every match first, in order,
/// then the pieces are joined: a `None` result adds nothing, anything else
/// but a str is the join's `TypeError` ("sequence item 1: expected str
/// instance, int found", counting the non-empty stretches between matches).
pub(crate) fn sub_calling(
    matches: Vec<(Value, usize, usize)>,
    function: &Value,
    subject: &Value,
    vm: &mut VM<'_>,
) -> RunResult<(Value, usize)> {
    let bounds: Vec<(usize, usize)> = matches.iter().map(|&(_, start, end)| (start, end)).collect();
    let pending: Vec<Value> = matches.into_iter().map(|(m, ..)| m).collect();
    defer_drop_mut!(pending, vm);
    let results: Vec<Value> = Vec::with_capacity(pending.len());
    defer_drop_mut!(results, vm);
    for i in 0..pending.len() {
        let m = mem::replace(&mut pending[i], Value::None);
        let value = vm.evaluate_function(function, ArgValues::One(m))?;
        results.push(value);
    }

    let text = subject.to_str(vm)?;
    let mut out = String::new();
    let (mut last_end, mut item) = (0, 0);
    for (value, &(start, end)) in results.iter().zip(&bounds) {
        if start > last_end {
            out.push_str(&text[last_end..start]);
            item += 1;
        }
        last_end = end;
        if matches!(value, Value::None) {
            continue;
        }
        if !value.is_str(vm.heap) {
            return Err(ExcType::type_error(format!(
                "sequence item {item}: expected str instance, {} found",
                value.py_type_name(vm)
            )));
        }
        out.push_str(value.to_str(vm)?);
        item += 1;
        check_estimated_size(out.len() + (text.len() - last_end), &vm.heap.tracker)?;
    }
    out.push_str(&text[last_end..]);
    Ok((allocate_string(out, vm.heap), bounds.len()))
}

/// chainbox patch: a replacement that is neither callable nor a str is
/// CPython's error for it (upstream: "callable replacement is not yet
/// supported").
pub(crate) fn replacement_str<'a>(repl: &'a Value, vm: &'a VM<'_>) -> RunResult<&'a str> {
    if repl.is_str(vm.heap) {
        return repl.to_str(vm);
    }
    let found = repl.py_type_name(vm);
    Err(ExcType::type_error(if found == "bytes" {
        "expected str instance, bytes found".to_owned()
    } else {
        format!("decoding to str: need a bytes-like object, {found} found")
    }))
}

/// chainbox patch: what `sub` returns, the new string, or for `subn` the
/// tuple `(string, number of substitutions)`.
pub(crate) fn sub_result(result: Value, made: usize, counted: bool, heap: &Heap) -> Value {
    if counted {
        let made = Value::Int(i64::try_from(made).unwrap_or(i64::MAX));
        allocate_tuple(smallvec::smallvec![result, made], heap)
    } else {
        result
    }
}

/// Handles `pattern.split(string, maxsplit=0)` argument extraction and dispatch.
///
/// Supports `maxsplit` as either positional or keyword argument.
fn call_pattern_split<'h>(pattern: &HeapRead<'h, RePattern>, args: ArgValues, vm: &mut VM<'h>) -> RunResult<Value> {
    let PatternSplitArgs {
        string: string_val,
        maxsplit: maxsplit_val,
    } = PatternSplitArgs::from_args(args, vm)?;
    defer_drop!(string_val, vm);

    let maxsplit = extract_maxsplit(maxsplit_val, vm)?;
    let text = string_val.to_str(vm)?.to_owned();
    pattern.get(vm.heap).split(&text, maxsplit, vm.heap)
}

/// Argument shape for `Pattern.sub(repl, string, count=0)`.
///
/// `string` uses `static_string = "StringAttr"` because `StringAttr` is the
/// `StaticStrings` entry that interns `"string"` (the bare `String` variant
/// is taken by the `re.Pattern.string` attribute name in CPython's class
/// hierarchy).
#[derive(FromArgs)]
#[from_args(name = "sub", style = c_named, at_most_total)]
struct PatternSubArgs {
    repl: Value,
    #[from_args(static_string = "StringAttr")]
    string: Value,
    #[from_args(default)]
    count: Option<Value>,
}

// chainbox patch (CHAINBOX.md)
/// `Pattern.subn`'s arguments: `Pattern.sub`'s, named `subn` in errors.
#[derive(FromArgs)]
#[from_args(name = "subn", style = c_named, at_most_total)]
struct PatternSubnArgs {
    repl: Value,
    #[from_args(static_string = "StringAttr")]
    string: Value,
    #[from_args(default)]
    count: Option<Value>,
}

/// Argument shape for `Pattern.split(string, maxsplit=0)`.
///
/// See `PatternSubArgs` for why `string` uses `static_string`.
#[derive(FromArgs)]
#[from_args(name = "split", style = c_named, at_most_total)]
struct PatternSplitArgs {
    #[from_args(static_string = "StringAttr")]
    string: Value,
    #[from_args(default)]
    maxsplit: Option<Value>,
}

/// Extracts a `maxsplit` value from an optional `Value` for [`RePattern::split`].
///
/// Returns 0 (split all) if not provided; negatives pass through — the split
/// loop then runs zero times, matching CPython. Non-ints get CPython's
/// argument-clinic message. Shared by `Pattern.split` and module-level
/// `re.split`.
pub(crate) fn extract_maxsplit(val: Option<Value>, vm: &mut VM<'_>) -> RunResult<i64> {
    match val {
        None => Ok(0),
        Some(Value::Int(n)) => Ok(n),
        Some(Value::Bool(b)) => Ok(i64::from(b)),
        Some(other) => {
            let t = other.py_type_name(vm);
            other.drop_with(vm);

            Err(ExcType::type_error(format!(
                "'{t}' object cannot be interpreted as an integer"
            )))
        }
    }
}

/// Extracts a `count` value from an optional `Value` for [`RePattern::sub`].
///
/// Returns `Ok(None)` for a negative count, which callers turn into "return
/// the subject unchanged" (CPython's match loop runs zero times there).
/// Non-ints get CPython's argument-clinic message. Shared by `Pattern.sub`
/// and module-level `re.sub`.
pub(crate) fn extract_count(val: Option<Value>, vm: &mut VM<'_>) -> RunResult<Option<usize>> {
    match val {
        None => Ok(Some(0)),
        // Saturate rather than `as`-cast: on 32-bit targets (wasm) a count
        // above usize::MAX would otherwise truncate — e.g. 2**32 to 0, which
        // means "replace all" instead of an unreachably large cap.
        Some(Value::Int(n)) if n >= 0 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        Some(Value::Bool(b)) => Ok(Some(usize::from(b))),
        Some(Value::Int(_)) => Ok(None),
        Some(other) => {
            let t = other.py_type_name(vm);
            other.drop_with(vm);

            Err(ExcType::type_error(format!(
                "'{t}' object cannot be interpreted as an integer"
            )))
        }
    }
}

// chainbox patch (CHAINBOX.md)
/// Returns `\A(?:source)` followed by `suffix`: the anchored source for `match()` and `fullmatch()`.
///
/// `source` is already in `fancy_regex`'s syntax, without comments or verbose mode (`re_syntax` resolves both).
fn anchored_source(source: &str, suffix: &str) -> String {
    format!("\\A(?:{source}){suffix}")
}

/// Why a pattern did not compile: Python's grammar refused it (CPython's
/// error, raised as is), or `fancy_regex` did (perhaps only its size limit).
enum CompileFailure {
    Syntax(RunError),
    Regex(RegexError),
}

/// Compiles a Python regex pattern string with flags into a Rust `Regex`.
///
/// Translates Python flag constants into inline regex flag prefixes:
/// - `re.IGNORECASE` (2) → `(?i)` prefix
/// - `re.MULTILINE` (8) → `(?m)` prefix
/// - `re.DOTALL` (16) → `(?s)` prefix
///
/// `delegate_size_limit` optionally caps the compiled size of the delegated
/// regex (`RegexBuilder::delegate_size_limit`) — used to bound cached patterns;
/// `None` uses the engine's default limit.
///
/// # Errors
///
/// Returns the raw `fancy_regex` error so callers can distinguish a size-limit
/// overflow from an invalid pattern (see [`is_size_limit_error`]) before
/// converting to `re.PatternError`.
fn compile_regex_limited(pattern: &str, flags: u16, delegate_size_limit: Option<usize>) -> Result<Regex, RegexError> {
    let mut prefix = String::new();
    if flags & IGNORECASE != 0 {
        prefix.push('i');
    }
    if flags & MULTILINE != 0 {
        prefix.push('m');
    }
    if flags & DOTALL != 0 {
        prefix.push('s');
    }
    // chainbox patch (CHAINBOX.md)
    // re.ASCII (256) and VERBOSE (64) are already resolved in the source (`re_syntax`).

    let full_pattern = if prefix.is_empty() {
        pattern.to_owned()
    } else {
        format!("(?{prefix}){pattern}")
    };

    let mut builder = RegexBuilder::new(&full_pattern);
    if let Some(limit) = delegate_size_limit {
        builder.delegate_size_limit(limit);
    }
    builder.build()
}

/// True when `err` is the delegated engine's exceeded-size-limit error: the
/// pattern is valid, its compiled form just doesn't fit the requested cap.
fn is_size_limit_error(err: &RegexError) -> bool {
    match err {
        RegexError::CompileError(compile_error) => match &**compile_error {
            CompileError::InnerError(inner) => inner.size_limit().is_some(),
            _ => false,
        },
        _ => false,
    }
// chainbox patch (CHAINBOX.md)
}

impl Serialize for RePattern {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Serialize only pattern string and flags; regex is recompiled on deserialize.
        (&self.pattern, self.flags).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RePattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (pattern, flags): (String, u16) = Deserialize::deserialize(deserializer)?;
        Self::compile(pattern, flags).map_err(|e| de::Error::custom(format!("{e:?}")))
    }
}
