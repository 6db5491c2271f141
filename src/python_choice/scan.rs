//! The scan's view of the script: [`Scan`] tokenizes it once and records what
//! several rules ask about (the names its imports bind and what they stand
//! for, the names it binds itself, its `def`s and `async def`s, its class
//! bodies, the callee of each call, the names bound to open files, the
//! bracket around each token), with [`NameMap`], the name sets that keep
//! those look-ups cheap. It is the one place that understands a script's
//! structure; it is separate from the rules so that they read this view
//! instead of each walking the tokens.

// The scan's sets hold short names of one script: FxHash (rustc's, already
// built for Cranelift), not SipHash, which was an eighth of the scan.
use rustc_hash::{FxHashMap, FxHashSet};

use super::LOOKAHEAD;
use super::tables::{
    ATTRIBUTES_NOT_VALUES, COROUTINE_TAKERS, KEYWORDS, MISSING_BUILTINS, MONTY_MODULES, OS_ERRORS, RE_PATTERN_TAKERS,
    REJECTED_KEYWORDS, RENAMED_EXCEPTION_SOURCES, TYPE_ATTRIBUTES,
};
use super::tokens::{Kind, Token, Tokenizer};

// --- the scan's view of the script ---------------------------------------------

/// ATTRIBUTES_NOT_VALUES (which holds MISSING_METHODS) as a set: asked
/// about every attribute a script reads.
pub(super) fn attributes_not_values() -> &'static NameSet<'static> {
    static SET: std::sync::LazyLock<NameSet<'static>> =
        std::sync::LazyLock::new(|| ATTRIBUTES_NOT_VALUES.iter().copied().collect());
    &SET
}

/// MISSING_BUILTINS as a set: the rule asks about every name of a script.
pub(super) fn missing_builtins() -> &'static NameSet<'static> {
    static SET: std::sync::LazyLock<NameSet<'static>> =
        std::sync::LazyLock::new(|| MISSING_BUILTINS.iter().copied().collect());
    &SET
}

/// Names (with a value each, or none) that the scan asks about at most names
/// of a script. Most of a script's names are its own variables, in none of
/// these: a mask of the first bytes of the names held, one per name length,
/// turns them away with a load and a test instead of hashing each one.
pub(super) struct NameMap<'a, V = ()> {
    /// Bit `b & 63` of `shapes[len]` is set if a name of length `len`
    /// (`SHAPE_LENGTHS - 1` for longer ones) starting with byte `b` is held.
    shapes: [u64; SHAPE_LENGTHS],
    names: FxHashMap<&'a str, V>,
}

/// A [`NameMap`] of names alone.
pub(super) type NameSet<'a> = NameMap<'a, ()>;

const SHAPE_LENGTHS: usize = 16;

impl<'a, V> NameMap<'a, V> {
    fn shape(name: &str) -> (usize, u64) {
        let first = name.as_bytes().first().copied().unwrap_or_default();
        (name.len().min(SHAPE_LENGTHS - 1), 1 << (first & 63))
    }

    pub(super) fn insert(&mut self, name: &'a str, value: V) {
        let (len, bit) = Self::shape(name);
        self.shapes[len] |= bit;
        self.names.insert(name, value);
    }

    pub(super) fn get(&self, name: &str) -> Option<&V> {
        let (len, bit) = Self::shape(name);
        if self.shapes[len] & bit == 0 {
            return None;
        }
        self.names.get(name)
    }

    pub(super) fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

impl<V> Default for NameMap<'_, V> {
    fn default() -> Self {
        Self {
            shapes: [0; SHAPE_LENGTHS],
            names: FxHashMap::default(),
        }
    }
}

impl<'a> FromIterator<&'a str> for NameSet<'a> {
    fn from_iter<I: IntoIterator<Item = &'a str>>(names: I) -> Self {
        let mut set = Self::default();
        for name in names {
            set.insert(name, ());
        }
        set
    }
}

/// What a name bound by an import stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Binding {
    /// A module (`import json`, `import os.path as p`, `from os import path`).
    Module(String),
    /// A name from a module (`from datetime import datetime`).
    Member(String, String),
}

/// One import statement.
#[derive(Debug, Default)]
pub(super) struct Import<'a> {
    /// The module, dotted (for `import a, b`, the first module monty lacks, else the last).
    pub(super) module: String,
    /// The names of a `from` import.
    pub(super) names: Vec<String>,
    /// `from . import x`.
    pub(super) relative: bool,
    /// `from x import *`.
    pub(super) wildcard: bool,
    /// The names it binds and what they stand for.
    bindings: Vec<(&'a str, Binding)>,
}

/// The function a call calls, as far as the rules need it.
enum Callee {
    /// A call of a name no rule asks about (most of a script's calls): its
    /// path is not built.
    Other,
    /// The path through imports: `asyncio.gather`, `builtins.round`, `?.sub`.
    Path(String),
}

/// The function names rules ask about at a call: of [`REJECTED_KEYWORDS`]
/// and [`COROUTINE_TAKERS`], `round`, and what may take an encoding.
fn called_names() -> &'static NameSet<'static> {
    static SET: std::sync::LazyLock<NameSet<'static>> = std::sync::LazyLock::new(|| {
        REJECTED_KEYWORDS
            .iter()
            .map(|(path, _)| path.rsplit('.').next().unwrap_or(path))
            .chain(COROUTINE_TAKERS.iter().copied())
            .chain(["round", "encode", "decode", "bytes", "str"])
            .chain(RE_PATTERN_TAKERS.iter().copied())
            .chain(["float", "print", "open"])
            .chain(OS_ERRORS.iter().copied())
            .chain([
                "SyntaxError",
                "UnicodeDecodeError",
                "UnicodeEncodeError",
                "JSONDecodeError",
                "TOMLDecodeError",
                "AttributeError",
                "NameError",
                "ImportError",
                "ModuleNotFoundError",
            ])
            .collect()
    });
    &SET
}

pub(super) struct Scan<'a> {
    pub(super) tokens: Vec<Token<'a>>,
    /// The innermost open bracket around each token.
    pub(super) enclosing_open: Vec<Option<usize>>,
    /// Names bound by imports, asked about at every name.
    pub(super) imports: NameMap<'a, Binding>,
    /// Names the script binds itself (assignments, `def`, `class`, parameters,
    /// loop and `as` targets), so a builtin rule does not fire on them.
    pub(super) bound: FxHashSet<&'a str>,
    /// Names of the script's `async def` functions.
    pub(super) async_defs: NameSet<'a>,
    /// Names of all the script's `def`s (methods included), asked about at
    /// every `name.attr =` and `x.__dunder__`.
    defs: NameSet<'a>,
    /// Line-starting tokens directly inside a class body.
    pub(super) in_class_body: FxHashSet<usize>,
    /// The callee of each `(` that is a call (see [`Scan::resolve_callee`]),
    /// by the `(`'s index, in order: resolved once, as several rules ask
    /// about every call.
    callees: Vec<(usize, Callee)>,
    /// Names bound to an opened file: `with open(...) as f`, `f = open(...)`
    /// (`Path.open` too).
    pub(super) files: NameSet<'a>,
    /// The uses of a caught exception's name inside its handler (`e` in the
    /// body of `except ValueError as e:`), by token index: every exception
    /// monty has is a builtin one (a class with a base goes to CPython), so
    /// these are the names that hold a standard exception.
    pub(super) caught_uses: FxHashSet<usize>,
    /// Whether the script may meet an exception monty names unlike CPython
    /// (`json.JSONDecodeError` for `JSONDecodeError`): it uses a member of a
    /// module that raises one ([`RENAMED_EXCEPTION_SOURCES`]).
    pub(super) may_meet_renamed_exception: bool,
    /// Whether the script says `frozen` (a frozen dataclass, whose
    /// FrozenInstanceError's class prints without its module on monty).
    pub(super) says_frozen: bool,
    /// The script, for what the tokens leave out (an f-string field's
    /// conversion and format spec).
    source: &'a str,
}

impl<'a> Scan<'a> {
    /// Whether the script has a `def name` anywhere (a method included).
    pub(super) fn defines_function(&self, name: &str) -> bool {
        self.defs.contains(name)
    }

    pub(super) fn new(script: &'a str) -> Self {
        let tokens = Tokenizer::new(script).run();
        let mut scan = Self {
            enclosing_open: Vec::with_capacity(tokens.len()),
            tokens,
            imports: NameMap::default(),
            // A typical chain binds a few dozen names: no rehashing on the way.
            bound: FxHashSet::with_capacity_and_hasher(64, rustc_hash::FxBuildHasher),
            async_defs: NameSet::default(),
            defs: NameSet::default(),
            in_class_body: FxHashSet::default(),
            callees: Vec::new(),
            files: NameSet::default(),
            caught_uses: FxHashSet::default(),
            may_meet_renamed_exception: false,
            says_frozen: false,
            source: script,
        };
        let parens = scan.index();
        scan.callees = parens
            .into_iter()
            .filter_map(|paren| Some((paren, scan.resolve_callee(paren)?)))
            .collect();
        scan.files = scan.file_names();
        scan.may_meet_renamed_exception = scan.uses_renamed_exception_source();
        scan
    }

    /// Whether a name bound by an import reaches a member of
    /// [`RENAMED_EXCEPTION_SOURCES`] (`json.loads`, `loads` from json,
    /// `re.search`).
    fn uses_renamed_exception_source(&self) -> bool {
        let raises = |module: &str, member: Option<&str>| {
            RENAMED_EXCEPTION_SOURCES.iter().any(|(source, members)| {
                *source == module && members.is_none_or(|members| member.is_some_and(|m| members.contains(&m)))
            })
        };
        (0..self.tokens.len()).any(|i| {
            let token = &self.tokens[i];
            token.kind == Kind::Name
                && !self.follows_dot(i)
                && self.imports.get(token.text).is_some_and(|binding| match binding {
                    Binding::Module(module) => raises(module, self.attribute_after(i + 1)),
                    Binding::Member(module, member) => raises(module, Some(member)),
                })
        })
    }

    /// The names `open(...)` results are bound to: the `as` target after the
    /// call's `)`, or the name assigned at the start of its line.
    fn file_names(&self) -> NameSet<'a> {
        let mut files = NameSet::default();
        for (paren, callee) in &self.callees {
            let Callee::Path(path) = callee else { continue };
            if path != "builtins.open" && !path.ends_with(".open") {
                continue;
            }
            let after = self
                .closing(*paren)
                .map(|close| (self.tokens.get(close + 1), self.tokens.get(close + 2)));
            if let Some((Some(r#as), Some(name))) = after
                && r#as.text == "as"
                && name.kind == Kind::Name
            {
                files.insert(name.text, ());
                continue;
            }
            let mut first = paren - 1;
            while first >= 2 && self.tokens[first - 1].text == "." && self.tokens[first - 2].kind == Kind::Name {
                first -= 2;
            }
            if let [.., name, eq] = &self.tokens[..first]
                && eq.text == "="
                && name.kind == Kind::Name
                && name.starts_line
            {
                files.insert(name.text, ());
            }
        }
        files
    }

    /// Indexes the tokens (brackets, imports, bindings, class bodies), and
    /// returns the indices of the `(` tokens.
    fn index(&mut self) -> Vec<usize> {
        let mut parens = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        // (indentation, is a `class` line) of the enclosing lines.
        let mut blocks: Vec<(usize, bool)> = Vec::new();
        // The open exception handlers: (indentation of `except`, the caught
        // name, the index of the header's `:`).
        let mut handlers: Vec<(usize, &'a str, usize)> = Vec::new();
        for i in 0..self.tokens.len() {
            let token = self.tokens[i];
            // Brackets are one-byte operators.
            let bracket = if token.kind == Kind::Op {
                token.text.as_bytes()
            } else {
                &[]
            };
            if matches!(bracket, [b')' | b']' | b'}']) {
                open.pop();
            }
            self.enclosing_open.push(open.last().copied());
            if matches!(bracket, [b'(' | b'[' | b'{']) {
                open.push(i);
                if bracket == b"(" {
                    parens.push(i);
                }
            }
            if token.starts_line {
                while blocks.last().is_some_and(|(indent, _)| *indent >= token.indent) {
                    blocks.pop();
                }
                if blocks.last().is_some_and(|(_, is_class)| *is_class) {
                    self.in_class_body.insert(i);
                }
                blocks.push((token.indent, token.text == "class"));
                while handlers.last().is_some_and(|(indent, ..)| *indent >= token.indent) {
                    handlers.pop();
                }
                if token.text == "except"
                    && let Some(handler) = self.handler_at(i)
                {
                    handlers.push(handler);
                }
            }
            if token.kind != Kind::Name {
                continue;
            }
            if !handlers.is_empty()
                && !self.follows_dot(i)
                && handlers
                    .iter()
                    .any(|(_, name, colon)| *name == token.text && i > *colon)
            {
                self.caught_uses.insert(i);
            }
            if token.text == "frozen" {
                self.says_frozen = true;
            }
            let prev = i.checked_sub(1).map(|p| self.tokens[p].text);
            let next = self.tokens.get(i + 1).map(|t| t.text);
            match token.text {
                "import" | "from" => {
                    if let Some(import) = self.import_at(i) {
                        for (name, binding) in import.bindings {
                            self.imports.insert(name, binding);
                        }
                    }
                }
                "def" | "class" => {
                    if let Some(name) = self.tokens.get(i + 1).filter(|t| t.kind == Kind::Name) {
                        self.bound.insert(name.text);
                        if token.text == "def" && prev == Some("async") {
                            self.async_defs.insert(name.text, ());
                        }
                    }
                    if token.text == "def" {
                        if let Some(name) = self.tokens.get(i + 1).filter(|t| t.kind == Kind::Name) {
                            self.defs.insert(name.text, ());
                        }
                        self.bind_parameters(i + 2);
                    }
                }
                "lambda" => self.bind_lambda_parameters(i + 1),
                "for" | "as" | "global" | "nonlocal" => {
                    // The targets up to `in` / the end of the clause.
                    for t in self.tokens.iter().skip(i + 1).take(LOOKAHEAD) {
                        match (t.kind, t.text) {
                            (Kind::Name, "in") => break,
                            (Kind::Name, _) => {
                                self.bound.insert(t.text);
                            }
                            (Kind::Op, "," | "(" | ")" | "[" | "]" | "*") => {}
                            _ => break,
                        }
                    }
                }
                _ if matches!(next, Some("=" | ":=")) && !self.is_keyword_argument(i) => {
                    self.bound.insert(token.text);
                }
                _ if next == Some(",") && token.depth == 0 && self.statement_assigns(i) => {
                    self.bound.insert(token.text);
                }
                _ => {}
            }
        }
        parens
    }

    /// The handler whose `except` is at `at`, if it names what it catches
    /// (`except (KeyError, ValueError) as e:`): the `except`'s indentation,
    /// the name, and the index of the header's `:`.
    fn handler_at(&self, at: usize) -> Option<(usize, &'a str, usize)> {
        let except = self.tokens.get(at)?;
        let mut name = None;
        for i in at + 1..(at + LOOKAHEAD).min(self.tokens.len()) {
            let token = &self.tokens[i];
            if token.starts_line {
                return None;
            }
            if token.depth != except.depth {
                continue;
            }
            match token.text {
                "as" => name = self.tokens.get(i + 1).filter(|t| t.kind == Kind::Name).map(|t| t.text),
                ":" => return name.map(|name| (except.indent, name, i)),
                _ => {}
            }
        }
        None
    }

    /// The source text right after the token at `at` (an f-string field's
    /// `!r`, `:>8` or `}` after its expression, which the tokens leave out).
    pub(super) fn text_after(&self, at: usize) -> &'a str {
        let token = &self.tokens[at];
        let end = (token.text.as_ptr() as usize).saturating_sub(self.source.as_ptr() as usize) + token.text.len();
        self.source.get(end..).unwrap_or_default()
    }

    /// Whether the statement holding `at` assigns with a top-level `=` after it (`a, b = …`).
    fn statement_assigns(&self, at: usize) -> bool {
        self.tokens
            .iter()
            .skip(at + 1)
            .take_while(|t| !t.starts_line && t.text != ";")
            .any(|t| t.depth == 0 && t.text == "=")
    }

    fn bind_parameters(&mut self, paren: usize) {
        if self.tokens.get(paren).is_none_or(|t| t.text != "(") {
            return;
        }
        let depth = self.tokens[paren].depth + 1;
        let mut expect_name = true;
        for t in self.tokens.iter().skip(paren + 1).take(LOOKAHEAD) {
            if t.depth < depth {
                break;
            }
            if t.depth == depth {
                match (t.kind, t.text) {
                    (Kind::Name, _) if expect_name => {
                        self.bound.insert(t.text);
                        expect_name = false;
                    }
                    (Kind::Op, ",") => expect_name = true,
                    (Kind::Op, "*" | "**" | "/") => {}
                    _ => expect_name = false,
                }
            }
        }
    }

    fn bind_lambda_parameters(&mut self, from: usize) {
        let mut expect_name = true;
        for t in self.tokens.iter().skip(from).take(LOOKAHEAD) {
            match (t.kind, t.text) {
                (Kind::Op, ":") => break,
                (Kind::Name, _) if expect_name => {
                    self.bound.insert(t.text);
                    expect_name = false;
                }
                (Kind::Op, ",") => expect_name = true,
                (Kind::Op, "*" | "**" | "/") => {}
                _ => expect_name = false,
            }
        }
    }

    /// Parses the import statement whose `import` / `from` keyword is at `at`.
    pub(super) fn import_at(&self, at: usize) -> Option<Import<'a>> {
        let keyword = self.tokens.get(at)?;
        // `yield from x` / `raise E from e` are not imports.
        if at > 0 && matches!(self.tokens[at - 1].text, "yield") {
            return None;
        }
        let mut i = at + 1;
        let mut import = Import::default();
        if keyword.text == "from" {
            while self.tokens.get(i).is_some_and(|t| t.text == "." || t.text == "...") {
                import.relative = true;
                i += 1;
            }
            let (module, after) = self.dotted_name(i);
            if self.tokens.get(after).is_none_or(|t| t.text != "import") {
                return None;
            }
            import.module = module.unwrap_or_default();
            i = after + 1;
            if self.tokens.get(i).is_some_and(|t| t.text == "(") {
                i += 1;
            }
            while let Some(t) = self.tokens.get(i).filter(|_| i < at + LOOKAHEAD) {
                if t.starts_line {
                    break;
                }
                match (t.kind, t.text) {
                    (Kind::Op, "*") => import.wildcard = true,
                    (Kind::Name, "as") => {
                        if let (Some(alias), Some(name)) = (self.tokens.get(i + 1), import.names.last()) {
                            import.bindings.pop();
                            import.bindings.push((alias.text, member_binding(&import.module, name)));
                            i += 1;
                        }
                    }
                    (Kind::Name, name) => {
                        import.names.push(name.to_owned());
                        import.bindings.push((t.text, member_binding(&import.module, name)));
                    }
                    (Kind::Op, "," | "(") => {}
                    _ => break,
                }
                i += 1;
            }
            return Some(import);
        }
        // `import a.b as c, d`, not the `import` of a `from` import.
        let statement_start = keyword.starts_line
            || at
                .checked_sub(1)
                .is_some_and(|p| matches!(self.tokens[p].text, ";" | ":"));
        if !statement_start {
            return None;
        }
        let mut first_missing: Option<String> = None;
        while let (Some(module), after) = self.dotted_name(i) {
            let top_token = self.tokens.get(i)?;
            i = after;
            if self.tokens.get(i).is_some_and(|t| t.text == "as") {
                if let Some(alias) = self.tokens.get(i + 1) {
                    import.bindings.push((alias.text, Binding::Module(module.clone())));
                }
                i += 2;
            } else {
                import
                    .bindings
                    .push((top_token.text, Binding::Module(top_token.text.to_owned())));
            }
            if first_missing.is_none() && !MONTY_MODULES.contains(&module.as_str()) {
                first_missing = Some(module.clone());
            }
            import.module = module;
            if self.tokens.get(i).is_some_and(|t| t.text == ",") {
                i += 1;
            } else {
                break;
            }
        }
        if let Some(missing) = first_missing {
            import.module = missing;
        }
        (!import.module.is_empty()).then_some(import)
    }

    /// A dotted name starting at `at`, and the index after it.
    fn dotted_name(&self, at: usize) -> (Option<String>, usize) {
        let mut name = String::new();
        let mut i = at;
        while let Some(t) = self
            .tokens
            .get(i)
            .filter(|t| t.kind == Kind::Name && i < at + LOOKAHEAD)
        {
            if matches!(t.text, "import" | "as") {
                break;
            }
            name.push_str(t.text);
            i += 1;
            if self.tokens.get(i).is_some_and(|t| t.text == ".") {
                name.push('.');
                i += 1;
            } else {
                break;
            }
        }
        ((!name.is_empty()).then_some(name), i)
    }

    /// If the token at `at` is a name bound by an import (not an attribute),
    /// what it stands for and the index after it.
    pub(super) fn bound_reference(&self, at: usize) -> Option<(&Binding, usize)> {
        let token = self.tokens.get(at)?;
        if token.kind != Kind::Name || self.follows_dot(at) {
            return None;
        }
        Some((self.imports.get(token.text)?, at + 1))
    }

    /// Whether the token at `at` calls one of the script's own `async def`s
    /// (`fetch_all(...)`, not `obj.fetch_all(...)`).
    pub(super) fn calls_own_coroutine(&self, at: usize) -> bool {
        self.tokens
            .get(at)
            .is_some_and(|t| t.kind == Kind::Name && self.async_defs.contains(t.text))
            && self.tokens.get(at + 1).is_some_and(|t| t.text == "(")
            && !self.follows_dot(at)
    }

    /// The bracket closing the one opened at `open`.
    pub(super) fn closing(&self, open: usize) -> Option<usize> {
        let depth = self.tokens.get(open)?.depth;
        (open + 1..self.tokens.len())
            .take(LOOKAHEAD * 16)
            .find(|&i| self.tokens[i].depth == depth && matches!(self.tokens[i].text, ")" | "]" | "}"))
    }

    /// Whether the `in` at `at` is a `for` loop's or comprehension's (walking
    /// back over its targets), not a membership test.
    pub(super) fn is_for_target_in(&self, at: usize) -> bool {
        for t in self.tokens[..at].iter().rev().take(LOOKAHEAD) {
            match (t.kind, t.text) {
                (Kind::Name, "for") => return true,
                (Kind::Name, name) if !KEYWORDS.contains(&name) => {}
                (Kind::Op, "," | "(" | ")" | "[" | "]" | "*" | ".") => {}
                _ => return false,
            }
            if t.starts_line {
                return false;
            }
        }
        false
    }

    /// Whether the script gives its own objects an attribute `name`: a
    /// `def name`, an assignment to `….name` or `name`, or an annotated
    /// class-body field `name: T`.
    pub(super) fn defines_attribute(&self, name: &str) -> bool {
        self.bound.contains(name)
            || self.tokens.iter().enumerate().any(|(i, t)| {
                t.text == name
                    && t.starts_line
                    && self.in_class_body.contains(&i)
                    && self.tokens.get(i + 1).is_some_and(|n| n.text == ":")
            })
    }

    /// Whether `.name` at `at` is read from an imported module (`math.pi`)
    /// or a builtin type (`bytes.fromhex`), which [`rule_module_attribute`]
    /// and [`rule_type_attribute`] judge.
    ///
    /// [`rule_module_attribute`]: super::rules::rule_module_attribute
    /// [`rule_type_attribute`]: super::rules::rule_type_attribute
    pub(super) fn receiver_is_module_or_type(&self, at: usize) -> bool {
        let Some(receiver) = at.checked_sub(2) else {
            return false;
        };
        let token = &self.tokens[receiver];
        let is_type = token.kind == Kind::Name
            && !self.follows_dot(receiver)
            && !self.bound.contains(token.text)
            && TYPE_ATTRIBUTES.iter().any(|(name, _)| *name == token.text);
        let is_module_type = |module: &str, name: &str| TYPE_ATTRIBUTES.iter().any(|(t, _)| is_dotted(t, module, name));
        // `datetime.timezone.utc` after `import datetime`.
        let is_dotted_type = token.kind == Kind::Name
            && self.follows_dot(receiver)
            && receiver
                .checked_sub(2)
                .and_then(|m| self.bound_reference(m))
                .is_some_and(
                    |(binding, _)| matches!(binding, Binding::Module(module) if is_module_type(module, token.text)),
                );
        is_type
            || is_dotted_type
            || self
                .bound_reference(receiver)
                .is_some_and(|(binding, _)| match binding {
                    Binding::Module(_) => true,
                    // `timezone.utc` after `from datetime import timezone`.
                    Binding::Member(module, member) => is_module_type(module, member),
                })
    }

    /// The attribute name of `.name` at `at`.
    pub(super) fn attribute_after(&self, at: usize) -> Option<&'a str> {
        let dot = self.tokens.get(at)?;
        let name = self.tokens.get(at + 1)?;
        (dot.text == "." && name.kind == Kind::Name).then_some(name.text)
    }

    pub(super) fn follows_dot(&self, at: usize) -> bool {
        at.checked_sub(1).is_some_and(|p| self.tokens[p].text == ".")
    }

    /// Whether the name at `at` is a keyword argument's name (`f(name=…)`).
    pub(super) fn is_keyword_argument(&self, at: usize) -> bool {
        let next_is_eq = self.tokens.get(at + 1).is_some_and(|t| t.text == "=");
        let open = self.enclosing_open.get(at).copied().flatten();
        next_is_eq
            && open.is_some_and(|o| self.tokens[o].text == "(")
            && at
                .checked_sub(1)
                .is_some_and(|p| matches!(self.tokens[p].text, "(" | ","))
    }

    /// The called function of the `(` at `paren`, resolved through imports:
    /// `asyncio.gather`, `builtins.round`, `obj.sub` (unresolved receivers
    /// keep their written name). `None` for a call no rule asks about (see
    /// [`called_names`]) and for a `(` that is no call.
    pub(super) fn callee_path(&self, paren: usize) -> Option<&str> {
        match self.callee(paren)? {
            Callee::Path(path) => Some(path),
            Callee::Other => None,
        }
    }

    /// Whether the statement at `at` sits in a `def` or `class` body: some
    /// enclosing block, found by walking back to each less indented line,
    /// opens with `def`, `async def` or `class`.
    pub(super) fn in_def_or_class(&self, at: usize) -> bool {
        let mut indent = self.tokens[at].indent;
        for token in self.tokens[..at].iter().rev() {
            if indent == 0 {
                break;
            }
            if token.starts_line && token.indent < indent {
                if matches!(token.text, "def" | "async" | "class") {
                    return true;
                }
                indent = token.indent;
            }
        }
        false
    }

    /// Whether the `(` at `paren` calls something (not `def f(`, `(a + b)`).
    pub(super) fn is_call(&self, paren: usize) -> bool {
        self.callee(paren).is_some()
    }

    /// The callee of the `(` at `paren`, if it is a call.
    fn callee(&self, paren: usize) -> Option<&Callee> {
        let found = self.callees.binary_search_by_key(&paren, |(at, _)| *at).ok()?;
        Some(&self.callees[found].1)
    }

    fn resolve_callee(&self, paren: usize) -> Option<Callee> {
        // The name chain `a.b.c` before the `(`, walked back to its first name.
        let last = paren.checked_sub(1)?;
        if self.tokens.get(last)?.kind != Kind::Name {
            return None;
        }
        let mut first = last;
        while first >= 2 && self.tokens[first - 1].text == "." && self.tokens[first - 2].kind == Kind::Name {
            first -= 2;
        }
        let before = if self.tokens[first].starts_line {
            None
        } else {
            first.checked_sub(1).map(|p| self.tokens[p].text)
        };
        // A call's name, not `def f(` / `class C(`.
        if matches!(before, Some("def" | "class")) {
            return None;
        }
        let written = self.tokens[last].text;
        // Only a name chain can be resolved; `x[0].sub(` keeps its method.
        if matches!(before, Some(")" | "]" | "}" | ".")) {
            if !called_names().contains(written) {
                return Some(Callee::Other);
            }
            return Some(Callee::Path(format!("?.{written}")));
        }
        // The function's own name, after imports (`g` of `from asyncio import
        // gather as g` is `gather`): a call of a name no rule asks about
        // needs no path.
        let head = self.tokens[first].text;
        let binding = self.imports.get(head);
        let name = match (first == last, binding) {
            (true, Some(Binding::Member(_, member))) => member.as_str(),
            (true, Some(Binding::Module(module))) => module.rsplit('.').next().unwrap_or_default(),
            _ => written,
        };
        if !called_names().contains(name) {
            return Some(Callee::Other);
        }
        let mut path = match binding {
            Some(Binding::Module(module)) => module.clone(),
            Some(Binding::Member(module, member)) => format!("{module}.{member}"),
            None if first == last && !self.bound.contains(head) => format!("builtins.{head}"),
            None => head.to_owned(),
        };
        for part in (first + 2..=last).step_by(2) {
            path.push('.');
            path.push_str(self.tokens[part].text);
        }
        Some(Callee::Path(path))
    }

    /// The token ranges of the top-level arguments of the call at `paren`
    /// (empty ones, as in `f(a,)`, left out), found as they are asked for:
    /// the scan asks about every call, and most need one or none.
    pub(super) fn arguments(&self, paren: usize) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        let inner = self.tokens.get(paren).map(|open| open.depth + 1);
        let mut start = paren + 1;
        let mut i = paren + 1;
        let mut ended = false;
        std::iter::from_fn(move || {
            let inner = inner?;
            while !ended {
                let token = self.tokens.get(i).filter(|t| i < paren + LOOKAHEAD && t.depth >= inner);
                let range = match token {
                    Some(t) if t.depth == inner && t.text == "," => start..i,
                    Some(_) => {
                        i += 1;
                        continue;
                    }
                    None => {
                        ended = true;
                        start..i
                    }
                };
                i += 1;
                start = i;
                if !range.is_empty() {
                    return Some(range);
                }
            }
            None
        })
    }

    /// The keyword names of the call at `paren`.
    /// The `(` at `at` and the path of what it calls (`builtins.print`,
    /// `re.findall`): where every rule about a call starts. `None` for any
    /// other token, and for a call the scan cannot name.
    pub(super) fn call_at(&self, at: usize) -> Option<(&Token<'a>, &str)> {
        let token = self.tokens.get(at).filter(|t| t.text == "(" && t.kind == Kind::Op)?;
        Some((token, self.callee_path(at)?))
    }

    /// The tokens of each top-level argument of the call at `paren`.
    pub(super) fn argument_tokens(&self, paren: usize) -> impl Iterator<Item = &[Token<'a>]> + '_ {
        self.arguments(paren)
            .map(|range| &self.tokens[range.start..range.end.min(self.tokens.len())])
    }

    pub(super) fn keyword_arguments(&self, paren: usize) -> impl Iterator<Item = &'a str> + '_ {
        self.arguments(paren).filter_map(|range| {
            let name = self.tokens.get(range.start)?;
            let eq = self.tokens.get(range.start + 1)?;
            (name.kind == Kind::Name && eq.text == "=").then_some(name.text)
        })
    }

    /// How many `**mapping` arguments the call at `paren` has.
    pub(super) fn double_star_unpackings(&self, paren: usize) -> usize {
        self.arguments(paren)
            .filter(|range| self.tokens.get(range.start).is_some_and(|t| t.text == "**"))
            .count()
    }
}

fn member_binding(module: &str, name: &str) -> Binding {
    let dotted = format!("{module}.{name}");
    if MONTY_MODULES.contains(&dotted.as_str()) {
        Binding::Module(dotted)
    } else {
        Binding::Member(module.to_owned(), name.to_owned())
    }
}

/// Whether `path` is `head.tail` (without building that string: the scan
/// asks for every dotted name).
pub(super) fn is_dotted(path: &str, head: &str, tail: &str) -> bool {
    path.len() == head.len() + 1 + tail.len()
        && path.starts_with(head)
        && path.ends_with(tail)
        && path.as_bytes()[head.len()] == b'.'
}
