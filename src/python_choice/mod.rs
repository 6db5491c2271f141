//! Which interpreter runs a chain: monty unless the script needs CPython.
//!
//! chainbox runs chain scripts with monty (a fast Python subset, vendored at
//! `guest/vendor/monty`) and falls back to a CPython guest for what monty
//! cannot run. The choice is made before the chain starts, by
//! [`needs_cpython`]: a static look at the script that names the first thing
//! it found that monty lacks or does differently from CPython.
//!
//! The look is *lexical*: a small Python tokenizer (comments and every string
//! form skipped, f-string replacement fields scanned as code) and a table of
//! rules ([`RULES`]) over the token stream. A full parse would buy little: the
//! rules look for names, keywords and short token patterns, a tokenizer never
//! fails on a script monty or CPython would reject (the interpreter reports
//! that), and it costs microseconds for a script of a few kilobytes.
//!
//! Every rule leans toward CPython. A false positive only costs speed (CPython
//! gives the same answer, slower); a false negative runs the script in monty,
//! which then fails where CPython would not, or answers differently. Each
//! rule's comment names the monty source that shows the gap, so a rule can be
//! dropped when monty closes it.
//!
//! The code is split by concept: `tables` holds what monty has and lacks, as
//! data; `tokens` the tokenizer; `scan` the view of a script the rules read
//! (its imports, bindings and calls); `rules` the rules themselves; `tests`
//! their unit tests.

mod rules;
mod scan;
mod tables;
#[cfg(test)]
mod tests;
mod tokens;

use std::fmt;

pub use crate::result::Interpreter;

use rules::{RULES, is_dunder};
use scan::{Scan, attributes_not_values, missing_builtins};
use tables::EAGER_ITERATORS;
pub use tables::{ATTRIBUTES_NOT_VALUES, MISSING_METHODS, MONTY_ENCODINGS};
use tokens::Kind;

impl Interpreter {
    /// The interpreter [`needs_cpython`] chooses for `script`.
    #[must_use]
    pub fn for_script(script: &str) -> Self {
        if needs_cpython(script).is_some() {
            Self::Cpython
        } else {
            Self::Monty
        }
    }
}

/// Why a script needs CPython: what the scan found, and on which line (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Needs {
    /// An import of a module monty does not have.
    Module {
        /// The module as written (`statistics`, `collections.abc`).
        module: String,
        /// The line of the import.
        line: usize,
    },
    /// A name a monty module lacks, imported from it or read as an attribute.
    ModuleMember {
        /// The module (`dataclasses`).
        module: String,
        /// The missing name (`asdict`).
        member: String,
        /// The line of the use.
        line: usize,
    },
    /// A keyword argument monty's version of a function does not accept.
    KeywordArgument {
        /// The function (`asyncio.gather`).
        function: String,
        /// The keyword (`return_exceptions`).
        keyword: String,
        /// The line of the call.
        line: usize,
    },
    /// A builtin name CPython has and monty does not.
    Builtin {
        /// The name (`super`, `ConnectionError`).
        name: String,
        /// The line of the use.
        line: usize,
    },
    /// An attribute of a builtin or library type that monty's type lacks,
    /// such as an unbound method (`str.upper`) or a class method.
    TypeAttribute {
        /// The type as written (`str`, `datetime`).
        type_name: String,
        /// The attribute (`upper`).
        attribute: String,
        /// The line of the use.
        line: usize,
    },
    /// A special method a class defines that monty never calls (`__lt__`).
    DefinesSpecialMethod {
        /// The method name.
        name: String,
        /// The line of the `def`.
        line: usize,
    },
    /// A special attribute monty's objects do not have (`__dict__`).
    UsesSpecialAttribute {
        /// The attribute name.
        name: String,
        /// The line of the use.
        line: usize,
    },
    /// A syntax form or behaviour monty lacks, described in words.
    Feature {
        /// What the script does, e.g. "uses `yield` (generators)".
        what: &'static str,
        /// The line of the use.
        line: usize,
    },
}

impl Needs {
    /// The line (1-based) where the scan found it.
    #[must_use]
    pub fn line(&self) -> usize {
        match self {
            Self::Module { line, .. }
            | Self::ModuleMember { line, .. }
            | Self::KeywordArgument { line, .. }
            | Self::Builtin { line, .. }
            | Self::TypeAttribute { line, .. }
            | Self::DefinesSpecialMethod { line, .. }
            | Self::UsesSpecialAttribute { line, .. }
            | Self::Feature { line, .. } => *line,
        }
    }
}

impl fmt::Display for Needs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Module { module, .. } => write!(f, "imports `{module}`, which monty does not have"),
            Self::ModuleMember { module, member, .. } => {
                write!(f, "uses `{module}.{member}`, which monty's `{module}` does not have")
            }
            Self::KeywordArgument { function, keyword, .. } => {
                write!(
                    f,
                    "passes `{keyword}=` to `{function}`, which monty's `{function}` does not accept"
                )
            }
            Self::Builtin { name, .. } => write!(f, "uses the builtin `{name}`, which monty does not have"),
            Self::TypeAttribute {
                type_name, attribute, ..
            } => write!(
                f,
                "uses `{type_name}.{attribute}`, which monty's `{type_name}` type does not have"
            ),
            Self::DefinesSpecialMethod { name, .. } => {
                write!(f, "defines the special method `{name}`, which monty does not call")
            }
            Self::UsesSpecialAttribute { name, .. } => {
                write!(
                    f,
                    "uses the special attribute `{name}`, which monty's objects do not have"
                )
            }
            Self::Feature { what, .. } => f.write_str(what),
        }?;
        write!(f, " (line {})", self.line())
    }
}

/// Largest script the scan reads. The scan runs on the host, before the
/// chain and outside its limits, and some of its rules look ahead from a
/// token to the end of its clause, so a hostile script of repeated keywords
/// made it quadratic (80 KB of `for` took ~60 s in a debug build). A larger
/// script goes to CPython unread: CPython runs any script, and a script
/// this large has start-up to spare. Model-written chains are a few KiB.
pub const MAX_SCANNED_BYTES: usize = 32 * 1024;

/// Most tokens a rule looks ahead (to the end of a clause, a call's
/// arguments) or out (through enclosing brackets) from one token: with the
/// size bound, it keeps a hostile script's scan linear. A clause longer than
/// this is read in part, which can only make a rule fire less often on it.
const LOOKAHEAD: usize = 256;

/// The scan: `None` if monty runs the script as far as a static look can
/// tell, else the first thing found (the earliest token any rule fires on).
#[must_use]
pub fn needs_cpython(script: &str) -> Option<Needs> {
    if script.len() > MAX_SCANNED_BYTES {
        return Some(Needs::Feature {
            what: "is longer than the scan reads (MAX_SCANNED_BYTES)",
            line: 1,
        });
    }
    first_finding(script).map(|(_, needs)| needs)
}

/// The first finding and the name of the rule that made it.
fn first_finding(script: &str) -> Option<(&'static str, Needs)> {
    let scan = Scan::new(script);
    (0..scan.tokens.len()).filter(|&at| may_fire(&scan, at)).find_map(|at| {
        RULES
            .iter()
            .find_map(|rule| (rule.check)(&scan, at).map(|needs| (rule.name, needs)))
    })
}

/// Whether any rule can fire at the token at `at`: the tokens each rule of
/// [`RULES`] starts from, tested cheaply so that the rules run on a few
/// tokens of a script, not on all of them. Most of a script's tokens are
/// operators, numbers and names of its own variables, and no rule fires on
/// those. A rule that starts from another token must be added here (the test
/// `may_fire_lets_every_finding_through` runs every rule on every token of
/// the corpus and the example chains).
fn may_fire(scan: &Scan<'_>, at: usize) -> bool {
    let token = &scan.tokens[at];
    if token.starts_line {
        // class_body
        return true;
    }
    match token.kind {
        Kind::Name => {
            // import, syntax, eval_exec, special_method, generator_expression
            matches!(
                token.text,
                "import" | "from" | "yield" | "del" | "class" | "async" | "except" | "type" | "eval" | "exec" | "def" | "for"
            )
                // type_attribute (`str.upper`), special_attribute (`x.__dict__`)
                || scan.tokens.get(at + 1).is_some_and(|t| t.text == ".")
                || (scan.follows_dot(at) && is_dunder(token.text))
                // module_attribute, unawaited_own_coroutine, missing_builtin
                || scan.imports.contains(token.text)
                || scan.async_defs.contains(token.text)
                || missing_builtins().contains(token.text)
                // builtin_attribute_lookup
                || matches!(token.text, "hasattr" | "getattr")
                // eager_iterator
                || EAGER_ITERATORS.contains(&token.text)
                // missing_method, method_value
                || (scan.follows_dot(at) && attributes_not_values().contains(token.text))
                // file_consumed_whole
                || scan.files.contains(token.text)
                // caught_exception_attribute, renamed_exception_shown
                || (!scan.caught_uses.is_empty() && scan.caught_uses.contains(&at))
                // class_rule_not_enforced
                || token.text.starts_with("__")
                // path_text_arguments
                || (scan.follows_dot(at) && matches!(token.text, "read_text" | "write_text"))
        }
        // syntax: t-strings, surrogates
        Kind::Str => token.prefix().contains(['t', 'T']) || token.writes_surrogate(),
        // Calls (keyword_argument, exception_arguments, syntax,
        // encoding, bytes_pattern, nan_identity, print_to_file), and `@=`.
        Kind::Op => matches!(token.text, "(" | "@="),
        Kind::Number | Kind::FieldStart => false,
    }
}
