//! chainbox patch: replacement templates (`re.sub`'s string `repl`,
//! `Match.expand`) parsed as CPython's `re._parser.parse_template` does.
//!
//! Upstream translated `\1`/`\g<name>` to `fancy_regex`'s `$1`/`${name}`
//! syntax and left everything else alone, so a reference to a group the
//! pattern lacks gave `''` where CPython raises (`invalid group reference 1
//! at position 1`, `unknown group name 'y'`), `\n` in a template stayed a
//! backslash and an `n`, `\10` was group 1 and a `0`, and `\q` was kept
//! where CPython refuses it. Here the template becomes literal text and
//! group numbers, checked against the pattern's groups, with CPython's
//! messages and positions (code points into the template).

use std::fmt;

use crate::{
    exception_private::{ExcType, ExcTypeExt, RunError, RunResult},
    types::{re_syntax::pattern_error, str::str_isidentifier},
};
use monty_types::StringRepr;

/// A parsed replacement template: literal text and group references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Group(usize),
}

impl Template {
    /// Parses `repl` for a pattern with `groups` capture groups, whose named
    /// groups `group_index` looks up.
    pub(crate) fn parse(repl: &str, groups: usize, group_index: impl Fn(&str) -> Option<usize>) -> RunResult<Self> {
        if !repl.contains('\\') {
            return Ok(Self {
                pieces: vec![Piece::Literal(repl.to_owned())],
            });
        }
        let chars: Vec<char> = repl.chars().collect();
        let mut s = Tokens::new(&chars)?;
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut add_group = |index: usize, offset: usize, s: &Tokens<'_>, literal: &mut String| {
            if index > groups {
                return Err(s.error(format_args!("invalid group reference {index}"), offset));
            }
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(literal)));
            }
            pieces.push(Piece::Group(index));
            Ok(())
        };
        while let Some(this) = s.get()? {
            let Some(c) = this.escaped else {
                literal.push(this.first);
                continue;
            };
            match c {
                'g' => {
                    if !s.take_if('<')? {
                        return Err(s.error("missing <", 0));
                    }
                    let name = s.get_until('>', "group name")?;
                    let offset = name.chars().count() + 1;
                    let index = if name.bytes().all(|b| b.is_ascii_digit()) {
                        let digits = name.trim_start_matches('0');
                        match digits.parse::<usize>() {
                            Ok(index) => index,
                            Err(_) if digits.is_empty() => 0,
                            // Too many digits for any pattern.
                            Err(_) => return Err(s.error(format_args!("invalid group reference {digits}"), offset)),
                        }
                    } else {
                        if !str_isidentifier(&name) {
                            return Err(s.error(
                                format_args!("bad character in group name {}", StringRepr(&name)),
                                offset,
                            ));
                        }
                        group_index(&name).ok_or_else(|| {
                            ExcType::index_error(format_args!("unknown group name {}", StringRepr(&name)))
                        })?
                    };
                    add_group(index, offset, &s, &mut literal)?;
                }
                '0' => {
                    let mut value = 0;
                    for _ in 0..2 {
                        match s.next_digit() {
                            Some(d) if d < 8 => {
                                s.get()?;
                                value = value * 8 + d;
                            }
                            _ => break,
                        }
                    }
                    literal.push(char::from_u32(value & 0xff).expect("a byte is a char"));
                }
                '1'..='9' => {
                    let first = c.to_digit(10).expect("a digit");
                    let mut text = String::from(c);
                    let mut octal = false;
                    if let Some(second) = s.next_digit() {
                        s.get()?;
                        text.push(char::from_digit(second, 10).expect("a digit"));
                        if first < 8 && second < 8 && s.next_digit().is_some_and(|d| d < 8) {
                            let third = s.next_digit().expect("checked");
                            s.get()?;
                            text.push(char::from_digit(third, 10).expect("a digit"));
                            octal = true;
                            let value = first * 64 + second * 8 + third;
                            if value > 0o377 {
                                return Err(s.error(
                                    format_args!("octal escape value \\{text} outside of range 0-0o377"),
                                    text.len() + 1,
                                ));
                            }
                            literal.push(char::from_u32(value).expect("a byte is a char"));
                        }
                    }
                    if !octal {
                        let index = text.parse::<usize>().expect("one or two digits");
                        add_group(index, text.len(), &s, &mut literal)?;
                    }
                }
                'a' => literal.push('\x07'),
                'b' => literal.push('\x08'),
                'f' => literal.push('\x0c'),
                'n' => literal.push('\n'),
                'r' => literal.push('\r'),
                't' => literal.push('\t'),
                'v' => literal.push('\x0b'),
                '\\' => literal.push('\\'),
                c if c.is_ascii_alphabetic() => return Err(s.error(format_args!("bad escape \\{c}"), 2)),
                c => {
                    literal.push('\\');
                    literal.push(c);
                }
            }
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        Ok(Self { pieces })
    }

    /// Appends the template to `out`, each group reference replaced by what
    /// `group` says it matched (an unmatched group is empty, as in CPython).
    pub(crate) fn expand_into<'t>(&self, group: impl Fn(usize) -> Option<&'t str>, out: &mut String) {
        for piece in &self.pieces {
            match piece {
                Piece::Literal(text) => out.push_str(text),
                Piece::Group(index) => out.push_str(group(*index).unwrap_or("")),
            }
        }
    }
}

/// One token of the template: a character, or a backslash and the
/// character it escapes.
#[derive(Debug, Clone, Copy)]
struct Token {
    first: char,
    escaped: Option<char>,
}

/// CPython's `re._parser.Tokenizer` over a template.
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
        let i = self.index;
        self.next = match self.chars.get(i) {
            None => None,
            Some('\\') => match self.chars.get(i + 1) {
                None => return Err(template_error("bad escape (end of pattern)", self.chars, self.chars.len() - 1)),
                Some(&c) => {
                    self.index = i + 2;
                    Some(Token {
                        first: '\\',
                        escaped: Some(c),
                    })
                }
            },
            Some(&c) => {
                self.index = i + 1;
                Some(Token { first: c, escaped: None })
            }
        };
        Ok(())
    }

    fn get(&mut self) -> RunResult<Option<Token>> {
        let this = self.next;
        self.advance()?;
        Ok(this)
    }

    fn take_if(&mut self, c: char) -> RunResult<bool> {
        if self.next.is_some_and(|t| t.escaped.is_none() && t.first == c) {
            self.advance()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// The next token's value when it is a plain ASCII digit.
    fn next_digit(&self) -> Option<u32> {
        self.next
            .filter(|t| t.escaped.is_none() && t.first.is_ascii_digit())
            .and_then(|t| t.first.to_digit(10))
    }

    fn get_until(&mut self, terminator: char, name: &str) -> RunResult<String> {
        let mut result = String::new();
        let mut len = 0;
        loop {
            let token = self.next;
            self.advance()?;
            match token {
                None if len == 0 => return Err(self.error(format_args!("missing {name}"), 0)),
                None => return Err(self.error(format_args!("missing {terminator}, unterminated name"), len)),
                Some(t) if t.escaped.is_none() && t.first == terminator => {
                    if len == 0 {
                        return Err(self.error(format_args!("missing {name}"), 1));
                    }
                    return Ok(result);
                }
                Some(t) => {
                    result.push(t.first);
                    len += 1;
                    if let Some(c) = t.escaped {
                        result.push(c);
                        len += 1;
                    }
                }
            }
        }
    }

    fn tell(&self) -> usize {
        self.index - self.next.map_or(0, |t| if t.escaped.is_some() { 2 } else { 1 })
    }

    fn error(&self, msg: impl fmt::Display, offset: usize) -> RunError {
        template_error(msg, self.chars, self.tell().saturating_sub(offset))
    }
}

/// `re.PatternError(msg, template, pos)`, as for a pattern.
fn template_error(msg: impl fmt::Display, chars: &[char], pos: usize) -> RunError {
    pattern_error(msg, chars, pos)
}
