//! chainbox patch: a Python regular expression, parsed as CPython's
//! `re._parser` parses it and written out in `fancy_regex`'s syntax.
//!
//! Upstream handed the Python pattern to `fancy_regex` as it was. The two
//! syntaxes mostly agree, and where they do not, a script got a different
//! answer, not an error: `$` matched only at the very end (Python: also
//! before a final newline, so `re.match(r'\d+$', '12\n')` matched only in
//! CPython), `\Z` also matched before trailing newlines, `[[:alpha:]]` was a
//! POSIX class and `[a&&b]` an intersection (Python: literal characters),
//! `\p{L}`, `\h` and `\<` were accepted (Python: `bad escape`), `\s`
//! missed `\x1c`-`\x1f`, `\w` took combining marks and missed `²`, `re.ASCII`
//! was ignored, and `(?x)` dropped spaces inside classes. Invalid patterns
//! raised `fancy_regex`'s messages. Here the pattern is parsed with
//! CPython's grammar and errors (`missing ), unterminated subpattern at
//! position 0`, `nothing to repeat`, `bad character range z-a`,
//! `look-behind requires fixed-width pattern`, ...), and every construct is
//! written in the form that means the same to `fancy_regex`. Verbose mode,
//! inline global flags and `re.ASCII` are resolved here, so the output needs
//! only `fancy_regex`'s `i`, `m` and `s` flags.

use std::fmt::{self, Write};

use monty_types::StringRepr;

use crate::{
    exception_private::{ExcType, ExcTypeExt, RunError, RunResult, SimpleException},
    modules::re::{ASCII, DOTALL, IGNORECASE, LOCALE, MULTILINE, UNICODE, VERBOSE},
    types::str::str_isidentifier,
};

/// CPython's `MAXREPEAT`: a repeat count must stay below it.
const MAX_REPEAT: u64 = u32::MAX as u64;
/// CPython's `MAXGROUPS` on a 64-bit build (`MAXREPEAT // 2`, capped by the
/// size of a C int).
const MAX_GROUPS: usize = (u32::MAX / 2) as usize;

/// Python's `\w` for str patterns: `str.isalnum()` or `_` (letters and
/// numbers, without the combining marks and connector punctuation that
/// `fancy_regex`'s `\w` also takes).
const WORD: &str = r"\p{L}\p{N}_";
/// Python's `\s` for str patterns: `str.isspace()`, which adds the four
/// information separators `\x1c`-`\x1f` to Unicode's White_Space.
const SPACE: &str = r"\s\x{1C}-\x{1F}";
const ASCII_WORD: &str = "a-zA-Z0-9_";
const ASCII_SPACE: &str = r"\t\n\x{0B}\x{0C}\r ";
const ASCII_DIGIT: &str = "0-9";

/// A pattern written for `fancy_regex`.
#[derive(Debug)]
pub(crate) struct Translation {
    /// The pattern in `fancy_regex`'s syntax, without its global flags.
    pub source: String,
    /// The named groups and their numbers. Groups are written unnamed, so a
    /// backreference is always `\N`: `fancy_regex` refuses numbered
    /// backreferences in a pattern that names a group.
    pub names: Vec<(String, usize)>,
    /// Per group, when its `)` comes among the groups' closing parentheses
    /// (group 0 first): of groups that end at the same place in a match, the
    /// one closing last is `Match.lastindex`.
    pub close_rank: Vec<usize>,
    /// The flags for the whole pattern: the caller's and the pattern's own
    /// leading `(?aimsux)`.
    pub flags: u16,
}

/// Parses a Python pattern (with the caller's `flags`) and writes it for
/// `fancy_regex`, or raises the error CPython raises for it.
pub(crate) fn translate(pattern: &str, flags: u16) -> RunResult<Translation> {
    if flags & LOCALE != 0 {
        return Err(ExcType::value_error("cannot use LOCALE flag with a str pattern"));
    }
    if flags & ASCII != 0 && flags & UNICODE != 0 {
        return Err(ExcType::value_error("ASCII and UNICODE flags are incompatible"));
    }
    let chars: Vec<char> = pattern.chars().collect();
    let mut parser = Parser {
        tokens: Tokens::new(&chars)?,
        flags,
        groups: 1,
        closed: vec![true],
        close_rank: vec![0],
        closes: 1,
        widths: vec![(0, 0)],
        names: Vec::new(),
        lookbehind_groups: None,
        conditional_refs: Vec::new(),
        variable_lookbehind: false,
    };
    let mut out = String::with_capacity(pattern.len() + 8);
    let verbose = flags & VERBOSE != 0;
    parser.parse_sub(&mut out, verbose, flags & ASCII != 0, flags & MULTILINE != 0, 0)?;
    if parser.tokens.next.is_some() {
        return Err(parser.tokens.error("unbalanced parenthesis", 0));
    }
    if parser.flags & ASCII != 0 && parser.flags & UNICODE != 0 {
        return Err(ExcType::value_error("ASCII and UNICODE flags are incompatible"));
    }
    for &(group, position) in &parser.conditional_refs {
        if group >= parser.groups {
            return Err(pattern_error(format_args!("invalid group reference {group}"), &chars, position));
        }
    }
    if parser.variable_lookbehind {
        return Err(ExcType::re_pattern_error("look-behind requires fixed-width pattern"));
    }
    Ok(Translation {
        source: out,
        flags: parser.flags,
        names: parser.names,
        close_rank: parser.close_rank,
    })
}

/// `re.PatternError(msg, pattern, pos)`: "at position N", and the line and
/// column when the pattern has more than one line.
pub(crate) fn pattern_error(msg: impl fmt::Display, chars: &[char], pos: usize) -> RunError {
    let mut text = format!("{msg} at position {pos}");
    if chars.contains(&'\n') {
        let before = &chars[..pos.min(chars.len())];
        let line = before.iter().filter(|&&c| c == '\n').count() + 1;
        let column = pos - before.iter().rposition(|&c| c == '\n').map_or(0, |p| p + 1) + 1;
        text = format!("{text} (line {line}, column {column})");
    }
    ExcType::re_pattern_error(text)
}

/// One token of a pattern, as CPython's tokenizer reads it: a character, or
/// a backslash and the character after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Char(char),
    Escape(char),
}

impl Token {
    fn len(self) -> usize {
        match self {
            Self::Char(_) => 1,
            Self::Escape(_) => 2,
        }
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Char(c) => write!(f, "{c}"),
            Self::Escape(c) => write!(f, "\\{c}"),
        }
    }
}

/// CPython's `re._parser.Tokenizer` over a str pattern (positions count code
/// points).
struct Tokens<'c> {
    chars: &'c [char],
    index: usize,
    next: Option<Token>,
}

impl<'c> Tokens<'c> {
    fn new(chars: &'c [char]) -> RunResult<Self> {
        let mut tokens = Self {
            chars,
            index: 0,
            next: None,
        };
        tokens.advance()?;
        Ok(tokens)
    }

    fn advance(&mut self) -> RunResult<()> {
        let Some(&c) = self.chars.get(self.index) else {
            self.next = None;
            return Ok(());
        };
        if c == '\\' {
            let Some(&escaped) = self.chars.get(self.index + 1) else {
                return Err(pattern_error(
                    "bad escape (end of pattern)",
                    self.chars,
                    self.chars.len() - 1,
                ));
            };
            self.next = Some(Token::Escape(escaped));
            self.index += 2;
        } else {
            self.next = Some(Token::Char(c));
            self.index += 1;
        }
        Ok(())
    }

    fn get(&mut self) -> RunResult<Option<Token>> {
        let this = self.next;
        self.advance()?;
        Ok(this)
    }

    fn take(&mut self, c: char) -> RunResult<bool> {
        if self.next == Some(Token::Char(c)) {
            self.advance()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn next_char(&self) -> Option<char> {
        match self.next {
            Some(Token::Char(c)) => Some(c),
            _ => None,
        }
    }

    /// Up to `n` plain characters that satisfy `accept`.
    fn get_while(&mut self, n: usize, accept: impl Fn(char) -> bool) -> RunResult<String> {
        let mut taken = String::new();
        for _ in 0..n {
            match self.next_char() {
                Some(c) if accept(c) => {
                    taken.push(c);
                    self.advance()?;
                }
                _ => break,
            }
        }
        Ok(taken)
    }

    /// The text up to `terminator` (consumed), e.g. a group name.
    fn get_until(&mut self, terminator: char, name: &str) -> RunResult<String> {
        let mut taken = String::new();
        let mut length = 0;
        loop {
            let token = self.get()?;
            match token {
                None if taken.is_empty() => return Err(self.error(format_args!("missing {name}"), 0)),
                None => return Err(self.error(format_args!("missing {terminator}, unterminated name"), length)),
                Some(Token::Char(c)) if c == terminator => {
                    if taken.is_empty() {
                        return Err(self.error(format_args!("missing {name}"), 1));
                    }
                    return Ok(taken);
                }
                Some(token) => {
                    write!(taken, "{token}").expect("writing to a String");
                    length += token.len();
                }
            }
        }
    }

    fn tell(&self) -> usize {
        self.index - self.next.map_or(0, Token::len)
    }

    fn seek(&mut self, index: usize) -> RunResult<()> {
        self.index = index;
        self.advance()
    }

    fn error(&self, msg: impl fmt::Display, offset: usize) -> RunError {
        pattern_error(msg, self.chars, self.tell().saturating_sub(offset))
    }
}

/// What the last item of a sequence was, for the repeat checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `^`, `$`, `\A`, `\Z`, `\b`, `\B`: nothing to repeat.
    At,
    /// Already repeated: a second repeat is "multiple repeat".
    Repeat,
    Other,
}

/// The width (fewest, most characters) a subpattern matches, for the
/// look-behind check, saturating at `u64::MAX` for "unbounded".
type Width = (u64, u64);

fn add(a: Width, b: Width) -> Width {
    (a.0.saturating_add(b.0), a.1.saturating_add(b.1))
}

/// CPython's `re._parser.State`, and the tokens.
struct Parser<'c> {
    tokens: Tokens<'c>,
    /// Global flags, the caller's and any leading `(?...)`.
    flags: u16,
    /// The next group's number (CPython's `state.groups`).
    groups: usize,
    /// Per group: closed yet (a reference to an open group is an error).
    closed: Vec<bool>,
    /// See [`Translation::close_rank`].
    close_rank: Vec<usize>,
    /// The groups closed so far.
    closes: usize,
    /// Per group: its width once closed (a backreference matches as much).
    widths: Vec<Width>,
    /// Named groups and their numbers.
    names: Vec<(String, usize)>,
    /// While in a look-behind, the first group number it opened.
    lookbehind_groups: Option<usize>,
    /// `(?(n)...)` references, checked once every group is known.
    conditional_refs: Vec<(usize, usize)>,
    /// A look-behind matches more than one width.
    variable_lookbehind: bool,
}

impl Parser<'_> {
    fn group_named(&self, name: &str) -> Option<usize> {
        self.names.iter().find(|(n, _)| n == name).map(|&(_, g)| g)
    }

    fn check_group_name(&self, name: &str, offset: usize) -> RunResult<()> {
        if str_isidentifier(name) {
            Ok(())
        } else {
            Err(self.tokens.error(
                format_args!("bad character in group name {}", StringRepr(name)),
                name.chars().count() + offset,
            ))
        }
    }

    fn check_lookbehind_group(&self, group: usize) -> RunResult<()> {
        if let Some(first) = self.lookbehind_groups {
            if !self.closed.get(group).copied().unwrap_or(false) {
                return Err(self.tokens.error("cannot refer to an open group", 0));
            }
            if group >= first {
                return Err(self
                    .tokens
                    .error("cannot refer to group defined in the same lookbehind subpattern", 0));
            }
        }
        Ok(())
    }

    /// An alternation `a|b|c` (CPython's `_parse_sub`).
    fn parse_sub(&mut self, out: &mut String, verbose: bool, ascii: bool, multiline: bool, nested: usize) -> RunResult<Width> {
        let mut verbose = verbose;
        let mut width: Option<Width> = None;
        let mut first = true;
        loop {
            let item = self.parse(out, verbose, ascii, multiline, nested + 1, nested == 0 && first)?;
            width = Some(width.map_or(item, |w| (w.0.min(item.0), w.1.max(item.1))));
            first = false;
            if !self.tokens.take('|')? {
                break;
            }
            out.push('|');
            if nested == 0 {
                verbose = self.flags & VERBOSE != 0;
            }
        }
        Ok(width.unwrap_or((0, 0)))
    }

    /// A sequence of items, up to `|`, `)` or the end (CPython's `_parse`).
    #[expect(clippy::too_many_lines, reason = "one arm per construct, as CPython's parser")]
    fn parse(
        &mut self,
        out: &mut String,
        mut verbose: bool,
        mut ascii: bool,
        mut multiline: bool,
        nested: usize,
        first: bool,
    ) -> RunResult<Width> {
        let mut width: Width = (0, 0);
        // The last item: its kind and its width.
        let mut last: Option<(Kind, Width)> = None;
        loop {
            let Some(this) = self.tokens.next else { break };
            if this == Token::Char('|') || this == Token::Char(')') {
                break;
            }
            self.tokens.advance()?;
            if verbose {
                if let Token::Char(c) = this {
                    if matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c') {
                        continue;
                    }
                    if c == '#' {
                        while !matches!(self.tokens.get()?, None | Some(Token::Char('\n'))) {}
                        continue;
                    }
                }
            }
            let c = match this {
                Token::Escape(escaped) => {
                    let (kind, item) = self.escape(out, escaped, ascii)?;
                    last = Some((kind, item));
                    width = add(width, item);
                    continue;
                }
                Token::Char(c) => c,
            };
            match c {
                '[' => {
                    self.class(out, ascii)?;
                    last = Some((Kind::Other, (1, 1)));
                    width = add(width, (1, 1));
                }
                '*' | '+' | '?' | '{' => {
                    let here = self.tokens.tell();
                    let (min, max) = match c {
                        '?' => (0, Some(1)),
                        '*' => (0, None),
                        '+' => (1, None),
                        _ => {
                            if self.tokens.next == Some(Token::Char('}')) {
                                out.push_str(r"\{");
                                last = Some((Kind::Other, (1, 1)));
                                width = add(width, (1, 1));
                                continue;
                            }
                            let lo = self.tokens.get_while(usize::MAX, |d| d.is_ascii_digit())?;
                            let hi = if self.tokens.take(',')? {
                                Some(self.tokens.get_while(usize::MAX, |d| d.is_ascii_digit())?)
                            } else {
                                None
                            };
                            if !self.tokens.take('}')? {
                                out.push_str(r"\{");
                                last = Some((Kind::Other, (1, 1)));
                                width = add(width, (1, 1));
                                self.tokens.seek(here)?;
                                continue;
                            }
                            let min = if lo.is_empty() { 0 } else { repeat_count(&lo)? };
                            let max = match &hi {
                                None => Some(min),
                                Some(hi) if hi.is_empty() => None,
                                Some(hi) => Some(repeat_count(hi)?),
                            };
                            if let Some(max) = max
                                && max < min
                            {
                                return Err(self
                                    .tokens
                                    .error("min repeat greater than max repeat", self.tokens.tell() - here));
                            }
                            (min, max)
                        }
                    };
                    let offset = self.tokens.tell() - here + 1;
                    let Some((kind, item_width)) = last else {
                        return Err(self.tokens.error("nothing to repeat", offset));
                    };
                    match kind {
                        Kind::At => return Err(self.tokens.error("nothing to repeat", offset)),
                        Kind::Repeat => return Err(self.tokens.error("multiple repeat", offset)),
                        Kind::Other => {}
                    }
                    match (min, max) {
                        (0, Some(1)) => out.push('?'),
                        (0, None) => out.push('*'),
                        (1, None) => out.push('+'),
                        (min, None) => write!(out, "{{{min},}}").expect("writing to a String"),
                        (min, Some(max)) if min == max => write!(out, "{{{min}}}").expect("writing to a String"),
                        (min, Some(max)) => write!(out, "{{{min},{max}}}").expect("writing to a String"),
                    }
                    if self.tokens.take('?')? {
                        out.push('?');
                    } else if self.tokens.take('+')? {
                        out.push('+');
                    }
                    // The repeat replaces the item it repeats.
                    let repeated = (
                        item_width.0.saturating_mul(min),
                        match max {
                            Some(max) => item_width.1.saturating_mul(max),
                            None if item_width.1 == 0 => 0,
                            None => u64::MAX,
                        },
                    );
                    width = add(
                        (width.0.saturating_sub(item_width.0), width.1.saturating_sub(item_width.1)),
                        repeated,
                    );
                    last = Some((Kind::Repeat, repeated));
                }
                '.' => {
                    out.push('.');
                    last = Some((Kind::Other, (1, 1)));
                    width = add(width, (1, 1));
                }
                '^' => {
                    out.push('^');
                    last = Some((Kind::At, (0, 0)));
                }
                '$' => {
                    // Python's `$` also matches before a newline that ends
                    // the string; `fancy_regex`'s only at the very end.
                    out.push_str(if multiline { "$" } else { r"(?=\n?\z)" });
                    last = Some((Kind::At, (0, 0)));
                }
                '(' => {
                    let group_start = self.tokens.tell() - 1;
                    match self.group(out, group_start, verbose, ascii, multiline, nested, first && last.is_none())? {
                        Group::Item(item) => {
                            last = Some((Kind::Other, item));
                            width = add(width, item);
                        }
                        Group::Nothing => {}
                        Group::GlobalFlags => {
                            verbose = self.flags & VERBOSE != 0;
                            ascii = self.flags & ASCII != 0;
                            multiline = self.flags & MULTILINE != 0;
                        }
                    }
                }
                c => {
                    push_literal(out, c);
                    last = Some((Kind::Other, (1, 1)));
                    width = add(width, (1, 1));
                }
            }
        }
        Ok(width)
    }

    /// What follows a `(` (its position `start`).
    #[expect(clippy::too_many_arguments, reason = "the scoped flags travel down the parse")]
    fn group(
        &mut self,
        out: &mut String,
        start: usize,
        verbose: bool,
        mut ascii: bool,
        mut multiline: bool,
        nested: usize,
        may_set_global: bool,
    ) -> RunResult<Group> {
        let mut name = None;
        let mut capture = true;
        let mut open = String::from("(");
        let mut sub_verbose = verbose;
        if self.tokens.take('?')? {
            let Some(char) = self.tokens.get()? else {
                return Err(self.tokens.error("unexpected end of pattern", 0));
            };
            match char {
                Token::Char('P') => {
                    if self.tokens.take('<')? {
                        let group_name = self.tokens.get_until('>', "group name")?;
                        self.check_group_name(&group_name, 1)?;
                        name = Some(group_name);
                    } else if self.tokens.take('=')? {
                        let group_name = self.tokens.get_until(')', "group name")?;
                        self.check_group_name(&group_name, 1)?;
                        let offset = group_name.chars().count() + 1;
                        let Some(group) = self.group_named(&group_name) else {
                            return Err(self.tokens.error(
                                format_args!("unknown group name {}", StringRepr(&group_name)),
                                offset,
                            ));
                        };
                        if !self.closed[group] {
                            return Err(self.tokens.error("cannot refer to an open group", offset));
                        }
                        self.check_lookbehind_group(group)?;
                        write!(out, r"(?:\{group})").expect("writing to a String");
                        return Ok(Group::Item(self.group_width(group)));
                    } else {
                        let Some(char) = self.tokens.get()? else {
                            return Err(self.tokens.error("unexpected end of pattern", 0));
                        };
                        return Err(self
                            .tokens
                            .error(format_args!("unknown extension ?P{char}"), char.len() + 2));
                    }
                }
                Token::Char(':') => {
                    capture = false;
                    open = String::from("(?:");
                }
                Token::Char('#') => loop {
                    if self.tokens.next.is_none() {
                        return Err(self
                            .tokens
                            .error("missing ), unterminated comment", self.tokens.tell() - start));
                    }
                    if self.tokens.get()? == Some(Token::Char(')')) {
                        return Ok(Group::Nothing);
                    }
                },
                Token::Char(c @ ('=' | '!' | '<')) => {
                    let mut kind = c;
                    let mut behind = false;
                    if c == '<' {
                        let Some(char) = self.tokens.get()? else {
                            return Err(self.tokens.error("unexpected end of pattern", 0));
                        };
                        match char {
                            Token::Char(k @ ('=' | '!')) => kind = k,
                            char => {
                                return Err(self
                                    .tokens
                                    .error(format_args!("unknown extension ?<{char}"), char.len() + 2));
                            }
                        }
                        behind = true;
                    }
                    let outer_lookbehind = self.lookbehind_groups;
                    if behind && outer_lookbehind.is_none() {
                        self.lookbehind_groups = Some(self.groups);
                    }
                    write!(out, "(?{}{kind}", if behind { "<" } else { "" }).expect("writing to a String");
                    let inner = self.parse_sub(out, verbose, ascii, multiline, nested + 1)?;
                    if behind {
                        self.lookbehind_groups = outer_lookbehind;
                    }
                    if !self.tokens.take(')')? {
                        return Err(self
                            .tokens
                            .error("missing ), unterminated subpattern", self.tokens.tell() - start));
                    }
                    out.push(')');
                    if behind && inner.0 != inner.1 {
                        // CPython's compiler finds this once the whole
                        // pattern has parsed.
                        self.variable_lookbehind = true;
                    }
                    return Ok(Group::Item((0, 0)));
                }
                Token::Char('(') => return self.conditional(out, start, verbose, ascii, multiline, nested),
                Token::Char('>') => {
                    capture = false;
                    open = String::from("(?>");
                }
                Token::Char(c) if c == '-' || flag_bit(c).is_some() => {
                    match self.inline_flags(c)? {
                        None => {
                            if !may_set_global {
                                return Err(self.tokens.error(
                                    "global flags not at the start of the expression",
                                    self.tokens.tell() - start,
                                ));
                            }
                            return Ok(Group::GlobalFlags);
                        }
                        Some((add_flags, del_flags)) => {
                            capture = false;
                            open = String::from("(?");
                            for (bit, letter) in [(IGNORECASE, 'i'), (MULTILINE, 'm'), (DOTALL, 's')] {
                                if add_flags & bit != 0 {
                                    open.push(letter);
                                }
                            }
                            if del_flags & (IGNORECASE | MULTILINE | DOTALL) != 0 {
                                open.push('-');
                                for (bit, letter) in [(IGNORECASE, 'i'), (MULTILINE, 'm'), (DOTALL, 's')] {
                                    if del_flags & bit != 0 {
                                        open.push(letter);
                                    }
                                }
                            }
                            open.push(':');
                            if add_flags & ASCII != 0 {
                                ascii = true;
                            }
                            if add_flags & UNICODE != 0 {
                                ascii = false;
                            }
                            if add_flags & MULTILINE != 0 {
                                multiline = true;
                            }
                            if del_flags & MULTILINE != 0 {
                                multiline = false;
                            }
                            sub_verbose = (verbose || add_flags & VERBOSE != 0) && del_flags & VERBOSE == 0;
                        }
                    }
                }
                char => {
                    return Err(self
                        .tokens
                        .error(format_args!("unknown extension ?{char}"), char.len() + 1));
                }
            }
        }
        let group = if capture {
            let group = self.groups;
            if group >= MAX_GROUPS {
                return Err(self.tokens.error("too many groups", 0));
            }
            if let Some(name) = &name {
                if let Some(previous) = self.group_named(name) {
                    return Err(self.tokens.error(
                        format_args!(
                            "redefinition of group name {} as group {group}; was group {previous}",
                            StringRepr(name)
                        ),
                        name.chars().count() + 1,
                    ));
                }
                self.names.push((name.clone(), group));
            }
            out.push_str(&open);
            self.groups += 1;
            self.closed.push(false);
            self.close_rank.push(0);
            self.widths.push((0, 0));
            Some(group)
        } else {
            out.push_str(&open);
            None
        };
        let inner = self.parse_sub(out, sub_verbose, ascii, multiline, nested + 1)?;
        if !self.tokens.take(')')? {
            return Err(self
                .tokens
                .error("missing ), unterminated subpattern", self.tokens.tell() - start));
        }
        out.push(')');
        if let Some(group) = group {
            self.closed[group] = true;
            self.close_rank[group] = self.closes;
            self.closes += 1;
            self.widths[group] = inner;
        }
        Ok(Group::Item(inner))
    }

    fn group_width(&self, group: usize) -> Width {
        self.widths.get(group).copied().unwrap_or((0, 0))
    }

    /// `(?(group)yes|no)`, after its `(?(`.
    fn conditional(
        &mut self,
        out: &mut String,
        start: usize,
        verbose: bool,
        ascii: bool,
        multiline: bool,
        nested: usize,
    ) -> RunResult<Group> {
        let name = self.tokens.get_until(')', "group name")?;
        let offset = name.chars().count() + 1;
        let group = if str_isidentifier(&name) {
            let Some(group) = self.group_named(&name) else {
                return Err(self
                    .tokens
                    .error(format_args!("unknown group name {}", StringRepr(&name)), offset));
            };
            group
        } else {
            let Ok(group) = name.parse::<usize>() else {
                return Err(self
                    .tokens
                    .error(format_args!("bad character in group name {}", StringRepr(&name)), offset));
            };
            if group == 0 {
                return Err(self.tokens.error("bad group number", offset));
            }
            if group >= MAX_GROUPS {
                return Err(self
                    .tokens
                    .error(format_args!("invalid group reference {group}"), offset));
            }
            self.conditional_refs.push((group, self.tokens.tell() - offset));
            group
        };
        self.check_lookbehind_group(group)?;
        write!(out, "(?({group})").expect("writing to a String");
        let yes = self.parse(out, verbose, ascii, multiline, nested + 1, false)?;
        let width = if self.tokens.take('|')? {
            out.push('|');
            let no = self.parse(out, verbose, ascii, multiline, nested + 1, false)?;
            if self.tokens.next == Some(Token::Char('|')) {
                return Err(self
                    .tokens
                    .error("conditional backref with more than two branches", 0));
            }
            (yes.0.min(no.0), yes.1.max(no.1))
        } else {
            (0, yes.1)
        };
        if !self.tokens.take(')')? {
            return Err(self
                .tokens
                .error("missing ), unterminated subpattern", self.tokens.tell() - start));
        }
        out.push(')');
        Ok(Group::Item(width))
    }

    /// The flags of `(?flags)` or `(?flags-flags:`, after the first letter
    /// (`first`): `None` for global flags (added to `self.flags`), else the
    /// flags the group turns on and off.
    fn inline_flags(&mut self, first: char) -> RunResult<Option<(u16, u16)>> {
        let mut add_flags = 0;
        let mut del_flags = 0;
        let mut char = Some(Token::Char(first));
        if first != '-' {
            loop {
                let Some(Token::Char(c)) = char else { break };
                let Some(flag) = flag_bit(c) else { break };
                if c == 'L' {
                    return Err(self
                        .tokens
                        .error("bad inline flags: cannot use 'L' flag with a str pattern", 0));
                }
                add_flags |= flag;
                if flag & TYPE_FLAGS != 0 && add_flags & TYPE_FLAGS != flag {
                    return Err(self
                        .tokens
                        .error("bad inline flags: flags 'a', 'u' and 'L' are incompatible", 0));
                }
                char = self.tokens.get()?;
                match char {
                    None => return Err(self.tokens.error("missing -, : or )", 0)),
                    Some(Token::Char(')' | '-' | ':')) => break,
                    Some(Token::Char(c)) if flag_bit(c).is_some() => {}
                    Some(token) => {
                        let msg = if matches!(token, Token::Char(c) if c.is_alphabetic()) {
                            "unknown flag"
                        } else {
                            "missing -, : or )"
                        };
                        return Err(self.tokens.error(msg, token.len()));
                    }
                }
            }
        }
        if char == Some(Token::Char(')')) {
            self.flags |= add_flags;
            return Ok(None);
        }
        if char == Some(Token::Char('-')) {
            char = self.tokens.get()?;
            loop {
                let flag = match char {
                    None if del_flags == 0 => return Err(self.tokens.error("missing flag", 0)),
                    None => return Err(self.tokens.error("missing :", 0)),
                    Some(Token::Char(':')) if del_flags != 0 => break,
                    Some(Token::Char(c)) if flag_bit(c).is_some() => flag_bit(c).unwrap_or(0),
                    Some(token) => {
                        let msg = if matches!(token, Token::Char(c) if c.is_alphabetic()) {
                            "unknown flag"
                        } else if del_flags == 0 {
                            "missing flag"
                        } else {
                            "missing :"
                        };
                        return Err(self.tokens.error(msg, token.len()));
                    }
                };
                if flag & TYPE_FLAGS != 0 {
                    return Err(self
                        .tokens
                        .error("bad inline flags: cannot turn off flags 'a', 'u' and 'L'", 0));
                }
                del_flags |= flag;
                char = self.tokens.get()?;
            }
        }
        if add_flags & del_flags != 0 {
            return Err(self.tokens.error("bad inline flags: flag turned on and off", 1));
        }
        Ok(Some((add_flags, del_flags)))
    }

    /// The character of `\x..`, `\u....`, `\U........` or `\N{name}`, with
    /// CPython's errors.
    fn numeric_escape(&mut self, c: char) -> RunResult<char> {
        let digits = match c {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => {
                if !self.tokens.take('{')? {
                    return Err(self.tokens.error("missing {", 0));
                }
                let name = self.tokens.get_until('}', "character name")?;
                return unicode_names2::character(&name).ok_or_else(|| {
                    self.tokens.error(
                        format_args!("undefined character name {}", StringRepr(&name)),
                        name.chars().count() + 4,
                    )
                });
            }
        };
        let hex = self.tokens.get_while(digits, |d| d.is_ascii_hexdigit())?;
        let escape = format!("\\{c}{hex}");
        if hex.len() != digits {
            return Err(self
                .tokens
                .error(format_args!("incomplete escape {escape}"), escape.len()));
        }
        u32::from_str_radix(&hex, 16)
            .ok()
            .and_then(char::from_u32)
            .ok_or_else(|| self.tokens.error(format_args!("bad escape {escape}"), escape.len()))
    }

    /// An escape outside a class (CPython's `_escape`), written to `out`.
    fn escape(&mut self, out: &mut String, c: char, ascii: bool) -> RunResult<(Kind, Width)> {
        let literal = match c {
            'A' => {
                out.push_str(r"\A");
                return Ok((Kind::At, (0, 0)));
            }
            // `\z` is 3.14's spelling of `\Z`.
            'Z' | 'z' => {
                out.push_str(r"\z");
                return Ok((Kind::At, (0, 0)));
            }
            'b' | 'B' => {
                out.push_str(match (c, ascii) {
                    ('b', false) => r"\b",
                    ('b', true) => "(?:(?<=[a-zA-Z0-9_])(?![a-zA-Z0-9_])|(?<![a-zA-Z0-9_])(?=[a-zA-Z0-9_]))",
                    (_, false) => r"\B",
                    (_, true) => "(?:(?<=[a-zA-Z0-9_])(?=[a-zA-Z0-9_])|(?<![a-zA-Z0-9_])(?![a-zA-Z0-9_]))",
                });
                return Ok((Kind::At, (0, 0)));
            }
            'd' | 'D' | 's' | 'S' | 'w' | 'W' => {
                let (set, negated) = category(c, ascii);
                write!(out, "[{}{set}]", if negated { "^" } else { "" }).expect("writing to a String");
                return Ok((Kind::Other, (1, 1)));
            }
            'x' | 'u' | 'U' | 'N' => self.numeric_escape(c)?,
            '0' => {
                let digits = self.tokens.get_while(2, |d| ('0'..='7').contains(&d))?;
                octal(&digits)
            }
            '1'..='9' => {
                let mut digits = String::from(c);
                if let Some(d) = self.tokens.next_char().filter(char::is_ascii_digit) {
                    self.tokens.advance()?;
                    digits.push(d);
                    let octal_digit = |d: char| ('0'..='7').contains(&d);
                    if octal_digit(c)
                        && octal_digit(d)
                        && let Some(e) = self.tokens.next_char().filter(|&e| octal_digit(e))
                    {
                        self.tokens.advance()?;
                        digits.push(e);
                        let value = u32::from_str_radix(&digits, 8).unwrap_or(u32::MAX);
                        if value > 0o377 {
                            return Err(self.tokens.error(
                                format_args!("octal escape value \\{digits} outside of range 0-0o377"),
                                digits.len() + 1,
                            ));
                        }
                        push_literal(out, octal(&digits));
                        return Ok((Kind::Other, (1, 1)));
                    }
                }
                let group: usize = digits.parse().unwrap_or(usize::MAX);
                if group < self.groups {
                    if !self.closed[group] {
                        return Err(self.tokens.error("cannot refer to an open group", digits.len() + 1));
                    }
                    self.check_lookbehind_group(group)?;
                    write!(out, r"(?:\{group})").expect("writing to a String");
                    return Ok((Kind::Other, self.group_width(group)));
                }
                return Err(self
                    .tokens
                    .error(format_args!("invalid group reference {group}"), digits.len()));
            }
            c => simple_escape(c).ok_or_else(|| self.tokens.error(format_args!("bad escape \\{c}"), 2))?,
        };
        push_literal(out, literal);
        Ok((Kind::Other, (1, 1)))
    }

    /// An escape inside a class (CPython's `_class_escape`).
    fn class_escape(&mut self, c: char) -> RunResult<ClassItem> {
        Ok(ClassItem::Literal(match c {
            'b' => '\x08',
            'd' | 'D' | 's' | 'S' | 'w' | 'W' => return Ok(ClassItem::Category(c)),
            'x' | 'u' | 'U' | 'N' => self.numeric_escape(c)?,
            '0'..='7' => {
                let digits = format!("{c}{}", self.tokens.get_while(2, |d| ('0'..='7').contains(&d))?);
                if u32::from_str_radix(&digits, 8).unwrap_or(u32::MAX) > 0o377 {
                    return Err(self.tokens.error(
                        format_args!("octal escape value \\{digits} outside of range 0-0o377"),
                        digits.len() + 1,
                    ));
                }
                octal(&digits)
            }
            c => simple_escape(c)
                .filter(|_| !c.is_ascii_digit())
                .ok_or_else(|| self.tokens.error(format_args!("bad escape \\{c}"), 2))?,
        }))
    }

    /// A character class, after its `[`.
    fn class(&mut self, out: &mut String, ascii: bool) -> RunResult<()> {
        let here = self.tokens.tell() - 1;
        let negate = self.tokens.take('^')?;
        let mut items = Vec::new();
        loop {
            let Some(this) = self.tokens.get()? else {
                return Err(self
                    .tokens
                    .error("unterminated character set", self.tokens.tell() - here));
            };
            if this == Token::Char(']') && !items.is_empty() {
                break;
            }
            let first = match this {
                Token::Escape(e) => self.class_escape(e)?,
                Token::Char(c) => ClassItem::Literal(c),
            };
            if !self.tokens.take('-')? {
                items.push(first);
                continue;
            }
            let Some(that) = self.tokens.get()? else {
                return Err(self
                    .tokens
                    .error("unterminated character set", self.tokens.tell() - here));
            };
            if that == Token::Char(']') {
                items.push(first);
                items.push(ClassItem::Literal('-'));
                break;
            }
            let second = match that {
                Token::Escape(e) => self.class_escape(e)?,
                Token::Char(c) => ClassItem::Literal(c),
            };
            match (first, second) {
                (ClassItem::Literal(lo), ClassItem::Literal(hi)) if lo <= hi => items.push(ClassItem::Range(lo, hi)),
                _ => {
                    return Err(self.tokens.error(
                        format_args!("bad character range {this}-{that}"),
                        this.len() + 1 + that.len(),
                    ));
                }
            }
        }
        out.push('[');
        if negate {
            out.push('^');
        }
        for item in items {
            match item {
                ClassItem::Literal(c) => push_literal(out, c),
                ClassItem::Range(lo, hi) => {
                    push_literal(out, lo);
                    out.push('-');
                    push_literal(out, hi);
                }
                ClassItem::Category(c) => match category(c, ascii) {
                    (set, false) => out.push_str(set),
                    (set, true) => write!(out, "[^{set}]").expect("writing to a String"),
                },
            }
        }
        out.push(']');
        Ok(())
    }
}

/// What a `(` turned out to be.
enum Group {
    /// A group (of any kind) that matches this many characters.
    Item(Width),
    /// A comment: nothing.
    Nothing,
    /// Global flags, now in `Parser::flags`.
    GlobalFlags,
}

/// One member of a character class.
#[derive(Debug, Clone, Copy)]
enum ClassItem {
    Literal(char),
    Range(char, char),
    /// `\d`, `\s`, `\w` or their negations.
    Category(char),
}

/// Flags that say how `\w` and friends read: ASCII, LOCALE or UNICODE.
const TYPE_FLAGS: u16 = ASCII | LOCALE | UNICODE;

/// The flag an inline letter stands for.
fn flag_bit(c: char) -> Option<u16> {
    Some(match c {
        'i' => IGNORECASE,
        'L' => LOCALE,
        'm' => MULTILINE,
        's' => DOTALL,
        'x' => VERBOSE,
        'a' => ASCII,
        'u' => UNICODE,
        _ => return None,
    })
}

/// The members of `\d`, `\s` or `\w` (class syntax, without brackets), and
/// whether the escape was the negated one.
fn category(c: char, ascii: bool) -> (&'static str, bool) {
    let set = match (c.to_ascii_lowercase(), ascii) {
        ('d', false) => r"\d",
        ('d', true) => ASCII_DIGIT,
        ('s', false) => SPACE,
        ('s', true) => ASCII_SPACE,
        (_, false) => WORD,
        (_, true) => ASCII_WORD,
    };
    (set, c.is_ascii_uppercase())
}

/// The character of `\a`, `\f`, `\n`, `\r`, `\t`, `\v` and of an escaped
/// non-letter; `None` for an escaped ASCII letter (a bad escape).
fn simple_escape(c: char) -> Option<char> {
    Some(match c {
        'a' => '\x07',
        'f' => '\x0c',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'v' => '\x0b',
        c if c.is_ascii_alphabetic() => return None,
        c => c,
    })
}

/// The character of up to three octal digits (at most `0o377`).
fn octal(digits: &str) -> char {
    u32::from_str_radix(digits, 8)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\0')
}

/// A repeat count, which must stay below CPython's `MAXREPEAT`.
fn repeat_count(digits: &str) -> RunResult<u64> {
    match digits.parse::<u64>() {
        Ok(count) if count < MAX_REPEAT => Ok(count),
        _ => Err(SimpleException::new_msg(ExcType::OverflowError, "the repetition number is too large").into()),
    }
}

/// Writes `c` to match itself, in or out of a class: letters, digits and
/// non-ASCII characters as they are, everything else as `\x{..}`, which no
/// syntax reads as anything but the character.
fn push_literal(out: &mut String, c: char) {
    if c.is_alphanumeric() || c == '_' || (!c.is_ascii() && !c.is_whitespace() && !c.is_control()) {
        out.push(c);
    } else {
        write!(out, "\\x{{{:X}}}", u32::from(c)).expect("writing to a String");
    }
}
