//! The token stream: [`Tokenizer`], a small Python tokenizer that never
//! fails (comments and every string form skipped, f-string replacement fields
//! scanned as code), the [`Token`]s it makes, and the byte helpers it uses.
//! It knows nothing of monty or of the rules, and is kept apart so that the
//! lexing can be read and trusted on its own.

// --- the token stream ----------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// An identifier or keyword.
    Name,
    /// A number literal.
    Number,
    /// A string literal (its text is the whole literal).
    Str,
    /// An operator or delimiter.
    Op,
    /// The `{` opening an f-string replacement field: keeps the tokens of
    /// neighbouring fields apart (its text is the `{`, but it is no bracket).
    FieldStart,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Token<'a> {
    pub(super) kind: Kind,
    pub(super) text: &'a str,
    /// 1-based line of the token's start.
    pub(super) line: usize,
    /// Whether the token begins a logical line.
    pub(super) starts_line: bool,
    /// The indentation (columns) of the token's logical line.
    pub(super) indent: usize,
    /// Bracket depth at the token (an opening bracket has the outer depth).
    pub(super) depth: usize,
    /// For strings, the length of the prefix letters (`rb`, `f`) the text starts with.
    prefix_len: u8,
}

impl Token<'_> {
    /// A string's prefix letters (`rb`, `f`); empty for other tokens.
    pub(super) fn prefix(&self) -> &str {
        self.text.get(..usize::from(self.prefix_len)).unwrap_or_default()
    }

    fn is_fstring(&self) -> bool {
        self.kind == Kind::Str && self.prefix().contains(['f', 'F'])
    }

    /// The text between the quotes of a str or bytes literal, escapes as
    /// written; `None` for an f-string (its value is not in the source) and
    /// any other token.
    pub(super) fn literal_text(&self) -> Option<&str> {
        if self.kind != Kind::Str || self.is_fstring() {
            return None;
        }
        Some(self.text.get(usize::from(self.prefix_len)..)?.trim_matches(['\'', '"']))
    }

    /// Whether this str literal writes a surrogate code point (`'\ud800'`,
    /// `'\U0000dc80'`, or half of a pair). monty's strings are UTF-8, which
    /// has no surrogates: it holds U+FFFD there and answers differently.
    pub(super) fn writes_surrogate(&self) -> bool {
        // Most strings hold no backslash: one memchr turns them away (the
        // scan asks this of every string token).
        if self.kind != Kind::Str || !self.text.contains('\\') || self.prefix().contains(['r', 'R', 'b', 'B']) {
            return false;
        }
        let body = self.text.as_bytes();
        let mut i = usize::from(self.prefix_len);
        while i + 1 < body.len() {
            if body[i] != b'\\' {
                i += 1;
                continue;
            }
            let digits = match body[i + 1] {
                b'u' => 4,
                b'U' => 8,
                _ => 0,
            };
            let code = body
                .get(i + 2..i + 2 + digits)
                .filter(|_| digits > 0)
                .and_then(|hex| std::str::from_utf8(hex).ok())
                .and_then(|hex| u32::from_str_radix(hex, 16).ok());
            if code.is_some_and(|c| (0xD800..=0xDFFF).contains(&c)) {
                return true;
            }
            // Past the escaped character, so `\\u` is a backslash and a `u`.
            i += 2;
        }
        false
    }
}

/// Splits Python source into tokens. Never fails: what it does not know
/// becomes a one-character operator, an unterminated string runs to its end.
pub(super) struct Tokenizer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    /// Where tokenizing starts and ends (an f-string field's bounds for a
    /// nested tokenizer).
    from: usize,
    end: usize,
    line: usize,
    depth: usize,
    indent: usize,
    /// Inside an f-string field: no logical lines, no indentation.
    nested: bool,
    tokens: Vec<Token<'a>>,
}

impl<'a> Tokenizer<'a> {
    pub(super) fn new(src: &'a str) -> Self {
        Self {
            src,
            bytes: src.as_bytes(),
            from: 0,
            end: src.len(),
            line: 1,
            depth: 0,
            indent: 0,
            nested: false,
            // About one token per four bytes of a typical script.
            tokens: Vec::with_capacity(src.len() / 4 + 8),
        }
    }

    pub(super) fn run(mut self) -> Vec<Token<'a>> {
        self.tokenize();
        self.tokens
    }

    fn tokenize(&mut self) {
        let bytes = &self.bytes[..self.end.min(self.bytes.len())];
        let end = bytes.len();
        let mut pos = self.from;
        // Logical lines (and their indentation) exist outside f-string fields only.
        let mut at_line_start = !self.nested;
        let mut starts_line = !self.nested;
        while pos < end {
            if at_line_start {
                // Measure the indentation; blank and comment-only lines do not count.
                let mut width = 0;
                while let Some(&b @ (b' ' | b'\t' | b'\x0c')) = bytes.get(pos) {
                    width += if b == b'\t' { 8 - width % 8 } else { 1 };
                    pos += 1;
                }
                at_line_start = false;
                if !matches!(bytes.get(pos), Some(b'\n' | b'\r' | b'#') | None) {
                    self.indent = width;
                    starts_line = true;
                }
                continue;
            }
            let start = pos;
            let c = bytes[start];
            pos += 1;
            match c {
                b' ' | b'\t' | b'\x0c' | b'\r' => {
                    while bytes
                        .get(pos)
                        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\x0c' | b'\r'))
                    {
                        pos += 1;
                    }
                }
                b'\n' => {
                    self.line += 1;
                    at_line_start = self.depth == 0 && !self.nested;
                }
                b'\\' => {
                    // A line continuation (or a stray backslash).
                    if bytes.get(pos) == Some(&b'\r') {
                        pos += 1;
                    }
                    if bytes.get(pos) == Some(&b'\n') {
                        pos += 1;
                        self.line += 1;
                    }
                }
                b'#' => pos = memchr_newline(bytes, start),
                b'"' | b'\'' => {
                    pos = self.string(start, start, starts_line);
                    starts_line = false;
                }
                c if NAME_START_BYTES[usize::from(c)] => {
                    while bytes.get(pos).is_some_and(|&b| is_name_byte(b)) {
                        pos += 1;
                    }
                    if matches!(bytes.get(pos), Some(b'"' | b'\'')) && is_string_prefix(&self.src[start..pos]) {
                        pos = self.string(start, pos, starts_line);
                    } else {
                        self.push(Kind::Name, start, pos, starts_line, 0);
                    }
                    starts_line = false;
                }
                c if c.is_ascii_digit() || (c == b'.' && bytes.get(pos).is_some_and(u8::is_ascii_digit)) => {
                    while let Some(&b) = bytes.get(pos) {
                        let exponent_sign = matches!(b, b'+' | b'-')
                            && matches!(bytes[pos - 1], b'e' | b'E')
                            && !matches!(&bytes[start..pos], [b'0', b'x' | b'X', ..]);
                        if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || exponent_sign {
                            pos += 1;
                        } else {
                            break;
                        }
                    }
                    self.push(Kind::Number, start, pos, starts_line, 0);
                    starts_line = false;
                }
                _ => {
                    pos = start + self.operator_len(start);
                    match c {
                        b'(' | b'[' | b'{' => {
                            self.push(Kind::Op, start, pos, starts_line, 0);
                            self.depth += 1;
                        }
                        b')' | b']' | b'}' => {
                            self.depth = self.depth.saturating_sub(1);
                            self.push(Kind::Op, start, pos, starts_line, 0);
                        }
                        _ => self.push(Kind::Op, start, pos, starts_line, 0),
                    }
                    starts_line = false;
                }
            }
        }
    }

    /// The length of the operator at `start`: Python's longest operator
    /// there (`**=`, `//=`, `>>=`, `<<=`, `...`, or one of the two-character
    /// ones), else one character.
    fn operator_len(&self, start: usize) -> usize {
        let rest = &self.bytes[start..self.end];
        match rest {
            [b'*', b'*', b'=', ..] | [b'/', b'/', b'=', ..] | [b'>', b'>', b'=', ..] | [b'<', b'<', b'=', ..] => 3,
            [b'.', b'.', b'.', ..] => 3,
            [b'*', b'*' | b'=', ..]
            | [b'/', b'/' | b'=', ..]
            | [b'<', b'<' | b'=', ..]
            | [b'>', b'>' | b'=', ..]
            | [b'-', b'>' | b'=', ..]
            | [b'=' | b'!' | b':' | b'+' | b'%' | b'&' | b'|' | b'^' | b'@', b'=', ..] => 2,
            [b, ..] if b.is_ascii() => 1,
            _ => self.src[start..self.end].chars().next().map_or(1, char::len_utf8),
        }
    }

    /// Pushes the token `start..end`; `starts_line` is never set inside an
    /// f-string field (the tokenizer starts those with it unset).
    #[inline]
    fn push(&mut self, kind: Kind, start: usize, end: usize, starts_line: bool, prefix_len: u8) {
        self.tokens.push(Token {
            kind,
            text: &self.src[start..end],
            line: self.line,
            starts_line,
            indent: self.indent,
            depth: self.depth,
            prefix_len,
        });
    }

    /// A string literal whose prefix starts at `start` and whose quote is at
    /// `quote_at`; returns where it ends.
    fn string(&mut self, start: usize, quote_at: usize, starts_line: bool) -> usize {
        let bytes = &self.bytes[..self.end.min(self.bytes.len())];
        let end = bytes.len();
        let line = self.line;
        let quote = bytes[quote_at];
        let closes = |at: usize| bytes.get(at) == Some(&quote) && bytes.get(at + 1) == Some(&quote);
        let triple = closes(quote_at + 1);
        let open = if triple { 3 } else { 1 };
        let body_start = quote_at + open;
        let mut pos = body_start;
        let mut body_end = end;
        while let Some(&b) = bytes.get(pos) {
            if b == quote && (!triple || closes(pos + 1)) {
                body_end = pos;
                pos += open;
                break;
            } else if b == b'\\' {
                if bytes.get(pos + 1) == Some(&b'\n') {
                    self.line += 1;
                }
                pos += 2;
            } else if b == b'\n' {
                self.line += 1;
                pos += 1;
                if !triple {
                    // Unterminated: the line ends the literal.
                    body_end = pos - 1;
                    break;
                }
            } else {
                pos += 1;
            }
        }
        let pos = pos.min(end);
        let prefix = &bytes[start..quote_at];
        self.tokens.push(Token {
            kind: Kind::Str,
            text: &self.src[start..pos],
            line,
            starts_line,
            indent: self.indent,
            depth: self.depth,
            // A prefix is at most two letters (`is_string_prefix`).
            prefix_len: u8::try_from(prefix.len()).unwrap_or(u8::MAX),
        });
        if prefix.iter().any(|b| matches!(b, b'f' | b'F' | b't' | b'T')) {
            self.fstring_fields(body_start, body_end, line);
        }
        pos
    }

    /// Tokenizes the replacement fields `{expr!r:spec}` of an f-string body as code.
    fn fstring_fields(&mut self, start: usize, end: usize, line: usize) {
        let mut i = start;
        while i < end {
            match self.bytes.get(i) {
                Some(b'{') if self.bytes.get(i + 1) == Some(&b'{') => i += 2,
                Some(b'{') => {
                    let (expr_end, field_end) = field_bounds(self.bytes, i + 1, end);
                    let field_line = line + self.src[start..i].matches('\n').count();
                    self.tokens.push(Token {
                        kind: Kind::FieldStart,
                        text: &self.src[i..=i],
                        line: field_line,
                        starts_line: false,
                        indent: self.indent,
                        depth: self.depth + 1,
                        prefix_len: 0,
                    });
                    let mut inner = Tokenizer {
                        src: self.src,
                        bytes: self.bytes,
                        from: i + 1,
                        end: expr_end,
                        line: field_line,
                        depth: self.depth + 1,
                        indent: self.indent,
                        nested: true,
                        tokens: std::mem::take(&mut self.tokens),
                    };
                    inner.tokenize();
                    self.tokens = inner.tokens;
                    // A format spec may hold nested fields: `{x:{width}}`.
                    if expr_end < field_end {
                        self.fstring_fields(expr_end, field_end, field_line);
                    }
                    i = field_end + 1;
                }
                Some(_) => i += 1,
                None => break,
            }
        }
    }
}

/// Where a replacement field's expression ends (at a top-level `!`, `:` or
/// `}`) and where the field ends (its closing `}`), from just after its `{`.
fn field_bounds(bytes: &[u8], from: usize, end: usize) -> (usize, usize) {
    let mut depth = 0usize;
    let mut expr_end = None;
    let mut i = from;
    let mut quote: Option<u8> = None;
    while i < end {
        let Some(&b) = bytes.get(i) else { break };
        if let Some(q) = quote {
            if b == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match b {
            b'\'' | b'"' => quote = Some(b),
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b'}' if depth == 0 => return (expr_end.unwrap_or(i), i),
            b'}' => depth -= 1,
            b'!' if depth == 0 && expr_end.is_none() && bytes.get(i + 1) != Some(&b'=') => expr_end = Some(i),
            b':' if depth == 0 && expr_end.is_none() => expr_end = Some(i),
            _ => {}
        }
        i += 1;
    }
    (expr_end.unwrap_or(end), end)
}

/// Whether `b` can be part of a name: ASCII letters, digits and `_`, and every
/// byte of a non-ASCII character (Python's identifiers allow most of them).
fn is_name_byte(b: u8) -> bool {
    NAME_BYTES[usize::from(b)]
}

/// [`is_name_byte`] as a table: the tokenizer asks about every byte of every name.
static NAME_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
        b += 1;
    }
    table
};

/// Whether `b` can start a name: [`is_name_byte`] but not a digit.
static NAME_START_BYTES: [bool; 256] = {
    let mut table = NAME_BYTES;
    let mut b = b'0';
    while b <= b'9' {
        table[b as usize] = false;
        b += 1;
    }
    table
};

/// The index of the first `\n` at or after `from`, or the end.
fn memchr_newline(bytes: &[u8], from: usize) -> usize {
    bytes[from..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |i| from + i)
}

fn is_string_prefix(word: &str) -> bool {
    word.len() <= 2
        && word
            .chars()
            .all(|c| matches!(c.to_ascii_lowercase(), 'r' | 'u' | 'b' | 'f' | 't'))
        && matches!(
            word.to_ascii_lowercase().as_str(),
            "r" | "u" | "b" | "f" | "t" | "br" | "rb" | "fr" | "rf" | "tr" | "rt"
        )
}
