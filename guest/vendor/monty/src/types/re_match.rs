//! Regex match result type for the `re` module.
//!
//! `ReMatch` represents the result of a successful regex match operation.
//! It stores the matched text, capture groups, and their positions, providing
//! Python-compatible access via `.group()`, `.groups()`, `.start()`, `.end()`,
//! and `.span()` methods.
//!
//! The matched substrings are owned copies, but the subject string (`.string`)
//! is held as a single refcounted heap reference shared across every match from
//! one `finditer`/`findall` call, so `py_dec_ref_ids` releases that reference.

use std::{cell::OnceCell, cmp::Ordering, fmt::Write};

use smallvec::smallvec;

use crate::{
    args::{ArgValues, FromArgs},
    bytecode::{CallResult, VM},
    // chainbox patch: imports for this file's patches (CHAINBOX.md)
    defer_drop, defer_drop_mut,
    exception_private::{ExcType, ExcTypeExt, RunResult},
    heap::{DropGuard, Heap, HeapData, HeapId, HeapItem, HeapObjectRead, HeapRead},
    intern::StaticStrings,
    types::{
        Dict, LazyHeapSet, PyTrait, Type, allocate_tuple,
        re_pattern::truncated,
        re_template::Template,
        str::{allocate_string, string_repr_fmt},
    },
    value::{EitherStr, Value},
};

/// A regex match result, storing captured groups and positions.
///
/// Created by `re.match()`, `re.search()`, `re.fullmatch()`, and their
/// `Pattern` method equivalents. The captured substrings are owned copies, but
/// the subject (`.string`) is a refcounted heap reference (`subject`) shared
/// across every match from one call rather than copied per match — so
/// `py_dec_ref_ids` must release it, and its memory is tracked once.
///
/// The `.re` attribute (reference back to the pattern) is intentionally omitted
/// to avoid circular references between Match and Pattern objects.
///
/// # Position semantics
///
/// Offsets are stored as byte offsets (what the `regex` crate produces) and
/// converted to the character offsets CPython reports lazily, only when
/// `.start()`/`.end()`/`.span()`/`repr` read them; the full match's conversion
/// is memoized (`char_span`). ASCII input needs no conversion.
///
/// # Group Indexing
///
/// Group 0 is the full match, groups 1..N are capture groups.
/// Both integer and named group access are supported — named groups are looked
/// up via the `named_groups` mapping.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct ReMatch {
    /// The full matched text (equivalent to `group(0)`).
    full_match: String,
    /// Start byte position of the full match in the input string.
    start: usize,
    /// End byte position of the full match in the input string.
    end: usize,
    /// Captured group strings (index 0 = group 1). `None` for unmatched optional groups.
    groups: Vec<Option<String>>,
    /// Span byte positions per captured group (index 0 = group 1). `None` for unmatched optional groups.
    group_spans: Vec<Option<(usize, usize)>>,
    /// Named groups: maps group name → 1-based group index.
    named_groups: Vec<(String, usize)>,
    /// chainbox patch: `Match.lastindex`, the group that closed last.
    lastindex: Option<usize>,
    /// The searched subject (the `.string` attribute), held as a refcounted heap
    /// reference so every match from one `finditer` shares one copy — tracked
    /// once, not per match. Always a `str` `Value` (heap `Str` or interned).
    subject: Value,
    /// Whether the subject is pure ASCII, so byte offset == character offset.
    all_ascii: bool,
    /// chainbox patch: `Match.pos` and `Match.endpos` when the search was
    /// given them; `None` for the whole subject.
    #[serde(default)]
    window: Option<(i64, i64)>,
    /// Char-offset `(start, end)` of the full match, computed lazily by
    /// [`ReMatch::char_span`]. A pure cache — skipped by serde, rebuilt on demand.
    #[serde(skip)]
    char_span: OnceCell<(i64, i64)>,
}

impl ReMatch {
    /// Creates a `ReMatch` from a `fancy_regex::Captures` result.
    ///
    /// Stores byte offsets (converted to char offsets lazily — see the type docs).
    /// `subject` is the already-refcounted subject `Value` this match keeps alive
    /// (the caller clones it per match); `names` maps group names to numbers
    /// (chainbox patch: the pattern's own table, see `re_syntax::Translation`).
    pub fn from_captures(
        caps: &fancy_regex::Captures<'_>,
        subject: Value,
        all_ascii: bool,
        names: &[(String, usize)],
        close_rank: &[usize],
    ) -> Self {
        let full = caps.get(0).expect("group 0 always exists on a successful match");
        let full_match = full.as_str().to_owned();
        let start = full.start();
        let end = full.end();

        let group_count = caps.len().saturating_sub(1);
        let mut groups = Vec::with_capacity(group_count);
        let mut group_spans = Vec::with_capacity(group_count);

        for cap in caps.iter().skip(1) {
            if let Some(m) = cap {
                groups.push(Some(m.as_str().to_owned()));
                group_spans.push(Some((m.start(), m.end())));
            } else {
                groups.push(None);
                group_spans.push(None);
            }
        }

        let named_groups = names.to_vec();
        // The group that closed last ends furthest; of those ending at the
        // same place, the one whose `)` comes last in the pattern (an outer
        // group after its inner ones, `(a)()`'s empty group after `(a)`).
        let lastindex = caps
            .iter()
            .enumerate()
            .skip(1)
            .filter_map(|(group, m)| Some((m?.end(), close_rank.get(group).copied().unwrap_or(0), group)))
            .max()
            .map(|(_, _, group)| group);

        Self {
            full_match,
            start,
            end,
            groups,
            group_spans,
            named_groups,
            lastindex,
            subject,
            all_ascii,
            window: None,
            char_span: OnceCell::new(),
        }
    }

    /// chainbox patch: the `(pos, endpos)` the search was given.
    pub(crate) fn set_window(&mut self, window: Option<(i64, i64)>) {
        self.window = window;
    }

    /// chainbox patch: `Match.pos` and `Match.endpos`, the subject's bounds
    /// unless the search was given its own.
    fn window(&self, vm: &VM<'_>) -> (i64, i64) {
        self.window.unwrap_or_else(|| {
            let text = self.subject.to_str(vm).expect("subject is always a str");
            let chars = if self.all_ascii {
                text.len()
            } else {
                text.chars().count()
            };
            (0, position_i64(chars))
        })
    }

    /// The subject `Value` this match keeps alive (its `.string`). Lets the heap
    /// walkers in `heap.rs` follow and release the shared subject reference.
    pub(crate) fn subject_ref(&self) -> &Value {
        &self.subject
    }

    /// The `(start, end)` char offsets of the full match — what `.start()`,
    /// `.end()`, `.span()`, and `repr` report. Memoized: a non-ASCII subject is
    /// scanned once (only up to the match end) on first access, O(1) after.
    fn char_span(&self, vm: &VM<'_>) -> (i64, i64) {
        *self.char_span.get_or_init(|| {
            let (start, end) = if self.all_ascii {
                (self.start, self.end)
            } else {
                let text = self.subject.to_str(vm).expect("subject is always a str");
                let start = byte_to_char_offset(text, self.start);
                // Count only the matched slice for `end` instead of rescanning from zero.
                (start, start + text[self.start..self.end].chars().count())
            };
            (position_i64(start), position_i64(end))
        })
    }

    /// Converts a stored byte offset into the subject to the Unicode character
    /// offset CPython reports — used for capture-group positions (the full
    /// match's span goes through the memoized [`ReMatch::char_span`] instead).
    /// ASCII subjects need no conversion; otherwise the subject text is read
    /// back from the heap for a forward scan.
    fn char_offset(&self, byte_offset: usize, vm: &VM<'_>) -> i64 {
        let char_offset = if self.all_ascii {
            byte_offset
        } else {
            let text = self.subject.to_str(vm).expect("subject is always a str");
            byte_to_char_offset(text, byte_offset)
        };
        position_i64(char_offset)
    }

    /// Returns the match for a given group number.
    ///
    /// Group 0 is the full match, groups 1..N are capture groups.
    /// Returns `Value::None` for unmatched optional groups.
    /// Raises `IndexError` for invalid group numbers.
    fn get_group(&self, n: i64, heap: &Heap) -> RunResult<Value> {
        match n.cmp(&0) {
            Ordering::Equal => Ok(allocate_string(self.full_match.as_str(), heap)),
            Ordering::Less => Err(ExcType::re_match_group_index_error()),
            Ordering::Greater => {
                let idx = group_index(n);
                if idx >= self.groups.len() {
                    return Err(ExcType::re_match_group_index_error());
                }
                match &self.groups[idx] {
                    Some(s) => Ok(allocate_string(s.as_str(), heap)),
                    None => Ok(Value::None),
                }
            }
        }
    }

    /// Returns the match for a named group.
    ///
    /// Looks up the group name in `named_groups` and delegates to `get_group`.
    /// Raises `IndexError` if the name is not found.
    fn get_group_by_name(&self, name: &str, heap: &Heap) -> RunResult<Value> {
        for (group_name, idx) in &self.named_groups {
            if group_name == name {
                #[expect(clippy::cast_possible_wrap, reason = "group indices are always small")]
                return self.get_group(*idx as i64, heap);
            }
        }
        Err(ExcType::re_match_group_index_error())
    }
}

impl<'h> HeapRead<'h, ReMatch> {
    /// Returns a dict mapping named group names to their matched strings.
    ///
    /// Groups that didn't participate in the match have the `default` value
    /// (typically `None`).
    fn get_groupdict(&self, default: &Value, vm: &mut VM<'h>) -> RunResult<Value> {
        let this = self.get(vm.heap);
        let mut pairs = Vec::with_capacity(this.named_groups.len());
        for (name, idx) in &this.named_groups {
            let key = allocate_string(name.as_str(), vm.heap);
            // idx is 1-based, groups vec is 0-based (index 0 = group 1)
            let value = if *idx > 0 && (*idx - 1) < this.groups.len() {
                match &this.groups[*idx - 1] {
                    Some(s) => allocate_string(s.as_str(), vm.heap),
                    None => default.clone_with_heap(vm),
                }
            } else {
                default.clone_with_heap(vm)
            };
            pairs.push((key, value));
        }
        let dict = Dict::from_pairs(pairs, vm)?;
        Ok(Value::Ref(vm.heap.allocate(HeapData::Dict(dict))))
    }
}

impl ReMatch {
    /// Returns a tuple of all capture group strings.
    ///
    /// Unmatched optional groups appear as `None`.
    /// chainbox patch: `default` (CPython's `groups(default=None)`) stands for
    /// a group that did not match.
    fn get_groups(&self, default: &Value, heap: &Heap) -> Value {
        let mut elements = smallvec![];
        for group in &self.groups {
            match group {
                Some(s) => elements.push(allocate_string(s.as_str(), heap)),
                None => elements.push(default.clone_with_heap(heap)),
            }
        }
        allocate_tuple(elements, heap)
    }

    /// Returns the start character position for a given group.
    ///
    /// Group 0 is the full match. Returns -1 for unmatched optional groups
    fn get_start(&self, n: i64, vm: &VM<'_>) -> RunResult<Value> {
        match n.cmp(&0) {
            Ordering::Equal => Ok(Value::Int(self.char_span(vm).0)),
            Ordering::Less => Err(ExcType::re_match_group_index_error()),
            Ordering::Greater => {
                let idx = group_index(n);
                if idx >= self.group_spans.len() {
                    return Err(ExcType::re_match_group_index_error());
                }
                match &self.group_spans[idx] {
                    Some((s, _)) => Ok(Value::Int(self.char_offset(*s, vm))),
                    None => Ok(Value::Int(-1)),
                }
            }
        }
    }

    /// Returns the end character position for a given group.
    ///
    /// Group 0 is the full match. Returns -1 for unmatched optional groups
    fn get_end(&self, n: i64, vm: &VM<'_>) -> RunResult<Value> {
        match n.cmp(&0) {
            Ordering::Equal => Ok(Value::Int(self.char_span(vm).1)),
            Ordering::Less => Err(ExcType::re_match_group_index_error()),
            Ordering::Greater => {
                let idx = group_index(n);
                if idx >= self.group_spans.len() {
                    return Err(ExcType::re_match_group_index_error());
                }
                match &self.group_spans[idx] {
                    Some((_, e)) => Ok(Value::Int(self.char_offset(*e, vm))),
                    None => Ok(Value::Int(-1)),
                }
            }
        }
    }

    /// Returns a `(start, end)` tuple for a given group.
    ///
    /// Group 0 is the full match. Returns `(-1, -1)` for unmatched optional groups
    fn get_span(&self, n: i64, vm: &VM<'_>) -> RunResult<Value> {
        match n.cmp(&0) {
            Ordering::Equal => {
                let (start, end) = self.char_span(vm);
                Ok(allocate_tuple(smallvec![Value::Int(start), Value::Int(end)], vm.heap))
            }
            Ordering::Less => Err(ExcType::re_match_group_index_error()),
            Ordering::Greater => {
                let idx = group_index(n);
                if idx >= self.group_spans.len() {
                    return Err(ExcType::re_match_group_index_error());
                }
                let (s, e) = match &self.group_spans[idx] {
                    Some((s, e)) => (self.char_offset(*s, vm), self.char_offset(*e, vm)),
                    None => (-1, -1),
                };
                Ok(allocate_tuple(smallvec![Value::Int(s), Value::Int(e)], vm.heap))
            }
        }
    }
}

impl<'h> PyTrait<'h> for HeapObjectRead<'h, ReMatch> {
    fn py_type(&self, _vm: &VM<'h>) -> Type {
        Type::ReMatch
    }

    fn py_len(&self, _vm: &VM<'h>) -> Option<usize> {
        None
    }

    fn py_eq_impl(&self, _other: &Value, _vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        // Match objects use identity equality (handled before the heap read).
        Ok(None)
    }

    fn py_bool(&self, _vm: &mut VM<'h>) -> RunResult<bool> {
        // Match objects are always truthy
        Ok(true)
    }

    fn py_repr_fmt(&self, f: &mut impl Write, vm: &mut VM<'h>, _heap_ids: &mut LazyHeapSet) -> RunResult<()> {
        let m = self.get(vm.heap);
        let (start, end) = m.char_span(vm);
        write!(f, "<re.Match object; span=({start}, {end}), match=")?;
        // chainbox patch: CPython's `%.50R`, the repr cut to 50 characters.
        let mut repr = String::new();
        string_repr_fmt(&m.full_match, &mut repr)?;
        f.write_str(truncated(&repr, 50))?;
        Ok(f.write_char('>')?)
    }

    fn py_getattr(&self, attr: &EitherStr, vm: &mut VM<'h>) -> RunResult<Option<CallResult>> {
        match attr.static_string(vm.interns) {
            Some(StaticStrings::StringAttr) => {
                // Hand back the same subject object (CPython's `m.string is s`),
                // bumping its refcount rather than allocating a fresh copy.
                let v = self.get(vm.heap).subject.clone_with_heap(vm);
                Ok(Some(CallResult::Value(v)))
            }
            // chainbox patch: `pos` and `endpos`.
            Some(StaticStrings::Pos) => Ok(Some(CallResult::Value(Value::Int(self.get(vm.heap).window(vm).0)))),
            Some(StaticStrings::Endpos) => Ok(Some(CallResult::Value(Value::Int(self.get(vm.heap).window(vm).1)))),
            // chainbox patch: `lastindex` and `lastgroup` (its name, if any).
            _ if attr.as_str(vm.interns) == "lastindex" => {
                let lastindex = self.get(vm.heap).lastindex;
                let value = lastindex.map_or(Value::None, |group| {
                    Value::Int(i64::try_from(group).unwrap_or(i64::MAX))
                });
                Ok(Some(CallResult::Value(value)))
            }
            _ if attr.as_str(vm.interns) == "lastgroup" => {
                let this = self.get(vm.heap);
                let name = this
                    .lastindex
                    .and_then(|group| this.named_groups.iter().find(|&&(_, g)| g == group))
                    .map(|(name, _)| name.clone());
                Ok(Some(CallResult::Value(
                    name.map_or(Value::None, |name| allocate_string(name, vm.heap)),
                )))
            }
            _ => Err(ExcType::attribute_error(Type::ReMatch, attr.as_str(vm.interns))),
        }
    }

    fn py_call_attr(&mut self, vm: &mut VM<'h>, attr: &EitherStr, args: ArgValues) -> RunResult<CallResult> {
        let result = match attr.static_string(vm.interns) {
            Some(StaticStrings::Group) => call_group(self, args, vm)?,
            Some(StaticStrings::Groups) => {
                let GroupsArgs { default } = GroupsArgs::from_args(args, vm)?;
                let default = default.unwrap_or(Value::None);
                let result = self.get(vm.heap).get_groups(&default, vm.heap);
                default.drop_with(vm);
                result
            }
            Some(StaticStrings::Groupdict) => {
                let GroupdictArgs { default } = GroupdictArgs::from_args(args, vm)?;
                let default = default.unwrap_or(Value::None);
                let result = self.get_groupdict(&default, vm)?;
                default.drop_with(vm);
                result
            }
            Some(StaticStrings::Start) => {
                let n = extract_optional_group_arg(args, "re.Match.start", self, vm)?;
                self.get(vm.heap).get_start(n, vm)?
            }
            Some(StaticStrings::End) => {
                let n = extract_optional_group_arg(args, "re.Match.end", self, vm)?;
                self.get(vm.heap).get_end(n, vm)?
            }
            Some(StaticStrings::Span) => {
                let n = extract_optional_group_arg(args, "re.Match.span", self, vm)?;
                self.get(vm.heap).get_span(n, vm)?
            }
            // chainbox patch: `Match.expand(template)`, with `re.sub`'s template rules.
            _ if attr.as_str(vm.interns) == "expand" => {
                let arg = args.get_one_arg("re.Match.expand", vm.heap)?;
                defer_drop!(arg, vm);
                let repl = arg.to_str(vm)?;
                let this = self.get(vm.heap);
                let template = Template::parse(repl, this.groups.len(), |name| {
                    this.named_groups.iter().find(|(n, _)| n == name).map(|(_, i)| *i)
                })?;
                let mut out = String::new();
                template.expand_into(
                    |i| match i {
                        0 => Some(this.full_match.as_str()),
                        i => this.groups.get(i - 1).and_then(|g| g.as_deref()),
                    },
                    &mut out,
                );
                allocate_string(out, vm.heap)
            }
            _ => return Err(ExcType::attribute_error_method(Type::ReMatch, attr, args, vm)),
        };
        Ok(CallResult::Value(result))
    }

    fn py_getitem(&self, key: &Value, vm: &mut VM<'h>) -> RunResult<Value> {
        match key {
            Value::Int(n) => self.get(vm.heap).get_group(*n, vm.heap),
            Value::Bool(b) => self.get(vm.heap).get_group(i64::from(*b), vm.heap),
            Value::InternString(id) => {
                let name = vm.interns.get_str(*id);
                self.get(vm.heap).get_group_by_name(name, vm.heap)
            }
            Value::Ref(heap_id) => match vm.heap.get(*heap_id) {
                HeapData::Str(s) => {
                    let name = s.as_str().to_owned();
                    self.get(vm.heap).get_group_by_name(&name, vm.heap)
                }
                _ => Err(ExcType::re_match_group_index_error()),
            },
            _ => Err(ExcType::re_match_group_index_error()),
        }
    }
}

impl HeapItem for ReMatch {
    fn py_dec_ref_ids(&mut self, stack: &mut Vec<HeapId>) {
        // Release the shared subject reference (no-op for an interned subject).
        // `dec_ref_forget` neutralises the `Ref` so the struct's own `Drop`
        // does not trip the `memory-model-checks` leak assertion.
        if let Value::Ref(id) = &mut self.subject {
            stack.push(*id);
            #[cfg(feature = "memory-model-checks")]
            self.subject.dec_ref_forget();
        }
    }
}

/// Handles `m.group(...)` calls, supporting zero, one, or multiple arguments.
///
/// - `m.group()` → equivalent to `m.group(0)`, returns full match string
/// - `m.group(n)` → returns the nth group (integer or named string)
/// - `m.group(n1, n2, ...)` → returns a tuple of groups
fn call_group<'h>(m: &HeapRead<'h, ReMatch>, args: ArgValues, vm: &mut VM<'h>) -> RunResult<Value> {
    match args {
        ArgValues::Empty => m.get(vm.heap).get_group(0, vm.heap),
        ArgValues::One(v) => {
            let result = resolve_group_arg(m.get(vm.heap), &v, vm);
            v.drop_with(vm);
            result
        }
        other => {
            let pos = other.into_pos_only("re.Match.group", vm.heap)?;
            defer_drop_mut!(pos, vm);
            let mut elements_guard = DropGuard::new(smallvec::smallvec![], vm);
            let (elements, vm) = elements_guard.as_parts_mut();
            for val in pos.as_slice() {
                elements.push(resolve_group_arg(m.get(vm.heap), val, vm)?);
            }
            let (elements, vm) = elements_guard.into_parts();
            Ok(allocate_tuple(elements, vm.heap))
        }
    }
}

/// Resolves a single group argument — integer, bool, or string (named group).
fn resolve_group_arg(m: &ReMatch, val: &Value, vm: &VM<'_>) -> RunResult<Value> {
    match val {
        Value::Int(n) => m.get_group(*n, vm.heap),
        Value::Bool(b) => m.get_group(i64::from(*b), vm.heap),
        Value::InternString(id) => {
            let name = vm.interns.get_str(*id);
            m.get_group_by_name(name, vm.heap)
        }
        Value::Ref(heap_id) => match vm.heap.get(*heap_id) {
            HeapData::Str(s) => {
                let name = s.as_str().to_owned();
                m.get_group_by_name(&name, vm.heap)
            }
            _ => Err(ExcType::re_match_group_index_error()),
        },
        _ => Err(ExcType::re_match_group_index_error()),
    }
}

/// Extracts the optional group argument of `start`/`end`/`span`: a group
/// number (default 0), or (chainbox patch) a group's name, as CPython takes
/// it (`m.start('year')`); an unknown name is "no such group".
fn extract_optional_group_arg<'h>(
    args: ArgValues,
    name: &str,
    m: &HeapRead<'h, ReMatch>,
    vm: &mut VM<'h>,
) -> RunResult<i64> {
    let Some(arg) = args.get_zero_one_arg(name, vm.heap)? else {
        return Ok(0);
    };
    let index = match &arg {
        Value::Int(n) => Some(*n),
        // CPython treats bool as int subclass: True=1, False=0.
        Value::Bool(b) => Some(i64::from(*b)),
        other => {
            let group_name = match other {
                Value::InternString(id) => Some(vm.interns.get_str(*id)),
                Value::Ref(id) => match vm.heap.get(*id) {
                    HeapData::Str(s) => Some(s.as_str()),
                    _ => None,
                },
                _ => None,
            };
            group_name.and_then(|group_name| {
                let named = &m.get(vm.heap).named_groups;
                let (_, index) = named.iter().find(|(n, _)| n == group_name)?;
                i64::try_from(*index).ok()
            })
        }
    };
    arg.drop_with(vm.heap);
    index.ok_or_else(ExcType::re_match_group_index_error)
}

/// Converts a byte offset in a UTF-8 string to a character (code point) offset.
///
/// The Rust `regex` crate operates on byte offsets, but Python's `re` module
/// returns character positions. For ASCII-only strings, these are identical.
/// For multi-byte UTF-8 characters, this counts actual code points up to the
/// byte position.
fn byte_to_char_offset(s: &str, byte_offset: usize) -> usize {
    s[..byte_offset].chars().count()
}

/// Converts a position to the `i64` Python-facing APIs report, saturating on
/// the (practically impossible) overflow rather than wrapping negative.
fn position_i64(offset: usize) -> i64 {
    i64::try_from(offset).unwrap_or(i64::MAX)
}

/// Converts a positive group number (1-based) to a 0-based index.
///
/// The caller must ensure `n > 0`.
#[expect(
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation,
    reason = "n is always positive (checked by caller via match on Ordering::Greater)"
)]
fn group_index(n: i64) -> usize {
    (n - 1) as usize
}

/// Argument shape for `re.Match.groupdict(default=None)` — one optional
/// pos-or-keyword `default` value used to fill groups that didn't match.
#[derive(FromArgs)]
#[from_args(name = "groupdict", at_most_total)]
struct GroupdictArgs {
    #[from_args(default)]
    default: Option<Value>,
}

/// chainbox patch: `Match.groups([default])`, as [`GroupdictArgs`].
#[derive(FromArgs)]
#[from_args(name = "groups", at_most_total)]
struct GroupsArgs {
    #[from_args(default)]
    default: Option<Value>,
}
