//! Which interpreter runs a chain: monty when the script uses only what
//! monty is known to answer as CPython does, else CPython.
//!
//! chainbox runs chain scripts with monty (a fast Python subset, vendored at
//! `guest/vendor/monty`) and with a CPython guest for everything else. The
//! choice is made before the chain starts, by [`needs_cpython`]: it parses
//! the script with ruff's parser (the one monty itself uses, same version),
//! walks the tree ([`walk`]) and looks every key of what the script uses up
//! in one allowlist ([`allowlist`], the file `allowlist.txt`): every statement and expression
//! kind, builtin, import, module member, attribute, keyword argument and
//! special method. The router is an allowlist: whatever is not on it, and
//! whatever fails to parse, runs on CPython. A new monty gap costs speed
//! (CPython answers, slower), never a wrong answer.
//!
//! Each entry is backed by a differential corpus case that runs on monty
//! and gives CPython's answer (`allow`'s doc says how that is checked). A
//! few constructs monty has answer differently in some contexts (a
//! generator expression not consumed whole, a coroutine never awaited, an
//! encoding monty lacks, ...): the walk refuses those contexts by name.

mod allow;
#[cfg(test)]
mod tests;
mod walk;

use std::fmt;

pub use crate::result::Interpreter;

pub use allow::{MONTY_ENCODINGS, allowlist};
use walk::Use;
pub(crate) use walk::{bound_names, is_builtin};

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
    /// The script is longer than the scan reads ([`MAX_SCANNED_BYTES`]).
    TooLong,
    /// The script does not parse: CPython reports its syntax error.
    Unparsed {
        /// The line of the error.
        line: usize,
    },
    /// The script uses something not on monty's allowlist.
    NotAllowed {
        /// The allowlist key (`import statistics`, `.removeprefix()`,
        /// `json.loads(object_hook=)`, `expr:Yield`).
        key: String,
        /// The line of the use.
        line: usize,
    },
    /// A construct monty has, in a context where it answers differently.
    Context {
        /// What the script does, and why monty differs.
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
            Self::TooLong => 1,
            Self::Unparsed { line } | Self::NotAllowed { line, .. } | Self::Context { line, .. } => *line,
        }
    }
}

impl fmt::Display for Needs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLong => f.write_str("is longer than the scan reads (MAX_SCANNED_BYTES)"),
            Self::Unparsed { .. } => f.write_str("does not parse"),
            Self::NotAllowed { key, .. } => {
                let what = match key.split_once(':') {
                    Some(("stmt" | "expr", kind)) => format!("a `{kind}` node"),
                    _ => format!("`{key}`"),
                };
                write!(f, "uses {what}, which is not on monty's allowlist")
            }
            Self::Context { what, .. } => f.write_str(what),
        }?;
        write!(f, " (line {})", self.line())
    }
}

/// Largest script the scan reads: the scan runs on the host, before the
/// chain and outside its limits. A larger script goes to CPython unread:
/// CPython runs any script, and a script this large has start-up to spare.
/// Model-written chains are a few KiB. The parse and the walk are linear in
/// the script's size.
pub const MAX_SCANNED_BYTES: usize = 32 * 1024;

/// The scan: `None` if every use of the script is on monty's allowlist and
/// none is in a context monty answers differently, else the first one that
/// is not (in source order).
#[must_use]
pub fn needs_cpython(script: &str) -> Option<Needs> {
    if script.len() > MAX_SCANNED_BYTES {
        return Some(Needs::TooLong);
    }
    // The parser, the walk and the tree's drop recurse once per level of
    // nesting, and a hostile script nests as deep as its length allows
    // (`((((...`, `-----x`, `a+a+a+...`): a script that might not fit the
    // stack left is scanned on a stack of its own (`stacker`, the crate
    // rustc grows its stack with), reserved for the deepest script the
    // size bound allows. The tiny scripts of most chains fit and pay nothing.
    on_scan_stack(script, || scan(script))
}

/// Runs `read`, a reader of `script`'s syntax tree (its parse, a walk and
/// the tree's drop), on a stack deep enough for the deepest nesting a
/// script of its size can have (see [`needs_cpython`]).
pub(crate) fn on_scan_stack<R>(script: &str, read: impl FnOnce() -> R) -> R {
    let needed = script.len().saturating_mul(STACK_PER_BYTE).saturating_add(STACK_MARGIN);
    stacker::maybe_grow(needed, SCAN_STACK_BYTES, read)
}

/// The most stack one byte of a script can cost the scan (a level of
/// nesting per byte, `-----x`; a debug build's frames, with room to spare).
const STACK_PER_BYTE: usize = 8 * 1024;

/// Stack the scan needs beyond the nesting.
const STACK_MARGIN: usize = 256 * 1024;

/// The stack a larger script is scanned on: the deepest nesting
/// [`MAX_SCANNED_BYTES`] allows. Reserved, not committed: only the pages a
/// scan touches are paid for.
const SCAN_STACK_BYTES: usize = MAX_SCANNED_BYTES * STACK_PER_BYTE + STACK_MARGIN;

fn scan(script: &str) -> Option<Needs> {
    let line = |offset: u32| {
        let offset = (offset as usize).min(script.len());
        1 + script.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count()
    };
    let parsed = match ruff_python_parser::parse_module(script) {
        Ok(parsed) => parsed,
        Err(error) => {
            return Some(Needs::Unparsed {
                line: line(error.location.start().to_u32()),
            });
        }
    };
    walk::uses(parsed.syntax(), script)
        .into_iter()
        .find_map(|(found, at)| match found {
            Use::Key(key) if allowed(&key) => None,
            Use::Key(key) => Some(Needs::NotAllowed {
                key: key.into_owned(),
                line: line(at),
            }),
            Use::Refused(what) => Some(Needs::Context { what, line: line(at) }),
        })
}

/// Whether the allowlist holds `key`: a hash set, built once (a script
/// asks about a few hundred keys).
fn allowed(key: &str) -> bool {
    static SET: std::sync::LazyLock<rustc_hash::FxHashSet<&'static str>> =
        std::sync::LazyLock::new(|| allowlist().iter().copied().collect());
    SET.contains(key)
}

/// Every allowlist key a script uses (for the allowlist's own checks), or
/// `None` if it does not parse.
#[cfg(test)]
fn keys(script: &str) -> Option<std::collections::BTreeSet<String>> {
    let parsed = ruff_python_parser::parse_module(script).ok()?;
    Some(
        walk::uses(parsed.syntax(), script)
            .into_iter()
            .filter_map(|(found, _)| match found {
                Use::Key(key) => Some(key.into_owned()),
                Use::Refused(_) => None,
            })
            .collect(),
    )
}
