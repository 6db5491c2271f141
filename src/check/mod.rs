//! Check before run: a chain's script read against its tools' stubs
//! before anything runs, so that a tool call that cannot succeed is refused
//! before the calls ahead of it have had their side effects.
//!
//! Two readers. The syntax tree ([`calls`]) finds every call of a tool and
//! decides what needs no types: a call to a name that is neither the
//! script's own, a builtin nor a tool is an unknown tool; a tool call
//! subscripted or read an attribute of before it is awaited is a coroutine
//! used as its result. The type checker ([`types`]: Astral's ty, warm)
//! then reads the script with the tools' stubs ([`crate::stubs`]) in
//! scope, and its argument diagnostics *at tool calls* (an unknown or
//! missing argument, too many positional ones, a value whose type cannot
//! fit) are refusals too.
//!
//! The policy's `type_check` says what a finding does: `enforce` (the
//! default) refuses the chain on a refusal (kind `type_error`, nothing
//! runs, the result's `diagnostics` list them), `warn` lists every finding
//! in `warnings` and runs, `off` skips the check. Only what is surely
//! wrong is refused: a call whose arguments are unpacked (`**kwargs`),
//! values ty cannot follow (tool results, which the stubs type `Any`), a
//! value that may fit (a union, `str` for an enum) run; every other
//! diagnostic is a warning, and those that come from the checker's own
//! gaps (monty's trimmed typeshed, names the sandbox defines) are dropped.
//!
//! Verdicts are cached by script and stubs: an agent's retries and a
//! benchmark's loops are checked once.

mod calls;
pub mod flow;
#[cfg(test)]
mod tests;
#[cfg(feature = "type-check")]
mod types;
#[cfg(feature = "type-check")]
mod typeshed;

use std::sync::{Arc, Mutex};

use ruff_text_size::{TextRange, TextSize};
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};

use crate::deep_stack;
use crate::policy::TypeCheck;
use crate::python_choice::{MAX_SCANNED_BYTES, is_builtin, on_scan_stack};
use crate::result::{ChainWarning, Diagnostic};
use crate::stubs::{checker_stubs, tool_signature};
use crate::tools::{AnyTool, ToolRegistry};
use calls::Finding;

/// ty's rules about a call's arguments: at a tool call, each is a call
/// that cannot succeed.
const ARGUMENT_RULES: &[&str] = &[
    "unknown-argument",
    "missing-argument",
    "too-many-positional-arguments",
    "parameter-already-assigned",
    "invalid-argument-type",
];

/// Deepest nesting ty reads: deeper scripts (hostile or generated; a
/// model's are a few levels deep) run with the tree's findings only, so
/// that ty's recursion stays within [`TY_STACK`].
const MAX_TYPED_DEPTH: usize = 100;

/// Stack ty runs on: grown to this when less than [`TY_RED_ZONE`] is left.
#[cfg(feature = "type-check")]
const TY_STACK: usize = 64 * 1024 * 1024;
#[cfg(feature = "type-check")]
const TY_RED_ZONE: usize = 8 * 1024 * 1024;

/// How long ty may read one script: past it the check is cancelled and
/// the chain runs with the tree's findings (a warning says so). ty 0.0.14
/// runs for ever on some plain Python (nested `functools.partial`s); a
/// model's script takes well under a millisecond warm.
#[cfg(feature = "type-check")]
const TY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// Verdicts kept; the cache is emptied when it is full.
const CACHED_VERDICTS: usize = 1024;

/// What the check found: the refusals (under `enforce`, the chain does
/// not run) and the warnings (added to the chain's result).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// Tool calls that cannot succeed, in source order.
    pub refusals: Vec<Diagnostic>,
    /// Everything else worth saying.
    pub warnings: Vec<ChainWarning>,
}

impl Verdict {
    /// Whether the chain must not run.
    pub fn refused(&self) -> bool {
        !self.refusals.is_empty()
    }

    /// The message of a refused chain's error: how many calls, the first
    /// in full.
    pub fn summary(&self) -> String {
        let Some(first) = self.refusals.first() else {
            return String::new();
        };
        let more = match self.refusals.len() {
            1 => String::new(),
            n => format!(" (and {} more: see `diagnostics`)", n - 1),
        };
        format!(
            "the script was not run: a tool call cannot succeed: line {}: {}{more}",
            first.line, first.message
        )
    }
}

/// The check, shared by an engine's chains: its warm type checkers and
/// its verdicts. It runs on a kept thread of [`crate::deep_stack`]: ty
/// recurses deeply.
#[derive(Default)]
pub struct Checker {
    judge: Arc<Judge>,
    verdicts: Mutex<FxHashMap<[u8; 32], Verdict>>,
}

/// What reads a script: the warm type checkers.
#[derive(Default)]
struct Judge {
    #[cfg(feature = "type-check")]
    types: types::Pool,
}

impl Checker {
    /// The verdict on `script` with `registry`'s tools, under `mode`. With
    /// `names_from_before` (a session's cell after others) names the
    /// script does not bind may be the earlier cells': no call is then an
    /// unknown tool.
    pub fn check(&self, script: &str, registry: &ToolRegistry, mode: TypeCheck, names_from_before: bool) -> Verdict {
        if mode == TypeCheck::Off {
            return Verdict::default();
        }
        if script.len() > MAX_SCANNED_BYTES {
            return Verdict {
                refusals: Vec::new(),
                warnings: vec![warning(
                    format!("type check skipped: the script is longer than {MAX_SCANNED_BYTES} bytes"),
                    None,
                )],
            };
        }
        let stubs = checker_stubs(registry);
        let stubs_digest: [u8; 32] = Sha256::digest(stubs.as_bytes()).into();
        let key: [u8; 32] = Sha256::new()
            .chain_update(stubs_digest)
            .chain_update([u8::from(mode == TypeCheck::Warn), u8::from(names_from_before)])
            .chain_update(script.as_bytes())
            .finalize()
            .into();
        let cached = self.lock().get(&key).cloned();
        if let Some(verdict) = cached {
            return verdict;
        }
        let judge = Arc::clone(&self.judge);
        let (script_owned, registry) = (script.to_owned(), registry.clone());
        let mut verdict = deep_stack::run(move || {
            let script = script_owned.as_str();
            on_scan_stack(script, || {
                judge.judge(script, &registry, &stubs, stubs_digest, names_from_before)
            })
        });
        if mode == TypeCheck::Warn {
            let refusals = std::mem::take(&mut verdict.refusals);
            let warned = refusals.into_iter().map(|d| warning(d.message, Some(d.line)));
            verdict.warnings.splice(0..0, warned);
        }
        let mut verdicts = self.lock();
        if verdicts.len() >= CACHED_VERDICTS {
            verdicts.clear();
        }
        verdicts.insert(key, verdict.clone());
        verdict
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FxHashMap<[u8; 32], Verdict>> {
        self.verdicts.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Judge {
    /// The verdict under `enforce`.
    fn judge(
        &self,
        script: &str,
        registry: &ToolRegistry,
        stubs: &str,
        stubs_digest: [u8; 32],
        names_from_before: bool,
    ) -> Verdict {
        // A script that does not parse is the interpreter's to report.
        let Ok(parsed) = ruff_python_parser::parse_module(script) else {
            return Verdict::default();
        };
        // Hosted and provider-defined tools are known names: the run denies
        // their calls with a catchable `PermissionError` saying who runs them.
        let is_tool = |name: &str| registry.get(name).is_some();
        let scan = calls::scan(parsed.syntax(), &is_tool, names_from_before);
        let lines = Lines::new(script);
        let mut verdict = Verdict::default();
        for (finding, range, caught) in &scan.findings {
            let (line, col) = lines.position(range.start());
            let (rule, message, raises) = match finding {
                Finding::UnknownTool { name } => ("unknown-tool", unknown_tool(name, registry), &["NameError"][..]),
                Finding::NotAwaited { name, how } => (
                    "not-awaited",
                    format!("`{name}(...)` is {how} before it is awaited: write `(await {name}(...))`"),
                    &["TypeError", "AttributeError"][..],
                ),
            };
            if caught.any_of(raises) {
                // The script expects it to fail, and handles it.
                verdict
                    .warnings
                    .push(warning(format!("type check: {message} [{rule}]"), Some(line)));
                continue;
            }
            verdict.refusals.push(Diagnostic {
                rule: rule.to_owned(),
                message,
                line,
                col,
            });
        }
        if scan.depth > MAX_TYPED_DEPTH {
            verdict.warnings.push(warning(
                format!("type check skipped: the script nests deeper than {MAX_TYPED_DEPTH} levels"),
                None,
            ));
            return verdict;
        }
        #[cfg(feature = "type-check")]
        self.judge_types(script, registry, stubs, stubs_digest, &scan, &lines, &mut verdict);
        #[cfg(not(feature = "type-check"))]
        let _ = (stubs, stubs_digest);
        verdict.refusals.sort_by_key(|d| (d.line, d.col));
        verdict
    }

    /// ty's diagnostics: refusals at tool calls, warnings elsewhere.
    #[cfg(feature = "type-check")]
    #[allow(clippy::too_many_arguments)]
    fn judge_types(
        &self,
        script: &str,
        registry: &ToolRegistry,
        stubs: &str,
        stubs_digest: [u8; 32],
        scan: &calls::Scan,
        lines: &Lines<'_>,
        verdict: &mut Verdict,
    ) {
        let found = stacker::maybe_grow(TY_RED_ZONE, TY_STACK, || {
            self.types.check(stubs, stubs_digest, script, TY_DEADLINE)
        });

        let found = match found {
            Ok(found) => found,
            Err(e) => {
                verdict.warnings.push(warning(format!("type check skipped: {e}"), None));
                return;
            }
        };
        let already: Vec<(u32, u32)> = verdict.refusals.iter().map(|d| (d.line, d.col)).collect();
        for diagnostic in found {
            if already.contains(&diagnostic.start) || is_checker_gap(&diagnostic) {
                continue;
            }
            let (line, col) = diagnostic.start;
            let at_call = scan.calls.iter().find(|call| {
                !call.unpacked
                    && lines.contains(call.range, diagnostic.start)
                    && diagnostic.message.contains(&format!("function `{}`", call.name))
            });
            match at_call {
                Some(call)
                    if ARGUMENT_RULES.contains(&diagnostic.rule.as_str())
                        && surely_wrong(&diagnostic)
                        && !call.caught.any_of(&["ValueError", "TypeError"]) =>
                {
                    let signature = registry
                        .get(&call.name)
                        .and_then(|tool| match tool {
                            AnyTool::Local(tool) => Some(tool_signature(tool.as_ref())),
                            _ => None,
                        })
                        .unwrap_or_default();
                    verdict.refusals.push(Diagnostic {
                        rule: diagnostic.rule,
                        message: format!("{} (the tool: `{signature}`)", diagnostic.message),
                        line,
                        col,
                    });
                }
                _ => verdict.warnings.push(warning(
                    format!("type check: {} [{}]", diagnostic.message, diagnostic.rule),
                    Some(line),
                )),
            }
        }
    }
}

/// Whether an argument diagnostic is surely a failure at run time. An
/// `invalid-argument-type` is, unless the value may still fit: a union
/// (one of its members may), a `str` for an enum (`Literal`), a `float`
/// for an integer (`4.0` is one to JSON Schema), or a type ty does not
/// know.
#[cfg(feature = "type-check")]
fn surely_wrong(diagnostic: &types::TyDiagnostic) -> bool {
    if diagnostic.rule != "invalid-argument-type" {
        return true;
    }
    let quoted = |after: &str| {
        let rest = diagnostic.message.split_once(after)?.1;
        let rest = rest.strip_prefix('`')?;
        rest.split_once('`').map(|(t, _)| t.to_owned())
    };
    let (Some(expected), Some(found)) = (quoted("Expected "), quoted("found ")) else {
        return false;
    };
    let uncertain = ["Unknown", "Any", "@Todo", " | "];
    if uncertain.iter().any(|u| found.contains(u)) {
        return false;
    }
    if expected.contains("Literal[") && !found.starts_with("Literal[") {
        return false;
    }
    // A tuple goes to a tool as a JSON array, as a list does.
    if found.starts_with("tuple[") && expected.contains("list") {
        return false;
    }
    let integer = |t: &str| t == "int" || t.starts_with("int |") || t.starts_with("list[int");
    !(integer(&expected) && found.contains("float"))
}

/// Whether a diagnostic comes from the checker's own gaps, not the
/// script: monty's typeshed lacks modules and builtins CPython has, and
/// the sandbox defines names ty does not see.
#[cfg(feature = "type-check")]
fn is_checker_gap(diagnostic: &types::TyDiagnostic) -> bool {
    let quoted = diagnostic.message.split('`').nth(1).unwrap_or_default();
    match diagnostic.rule.as_str() {
        "unresolved-import" | "possibly-missing-import" => true,
        "unresolved-reference" => is_builtin(quoted) || calls::GUEST_FUNCTIONS.contains(&quoted),
        "unresolved-attribute" | "possibly-missing-attribute" => {
            diagnostic.message.contains("module `") || diagnostic.message.starts_with("Module `")
        }
        // A chain's top level is async: `await`, `async for` and `async
        // with` are allowed there.
        "invalid-syntax" => diagnostic.message.contains("outside of an asynchronous function"),
        _ => false,
    }
}

/// What a call of an unknown name is told: which names are tools.
fn unknown_tool(name: &str, registry: &ToolRegistry) -> String {
    let tools: Vec<&str> = registry
        .iter()
        .filter(|tool| matches!(tool, AnyTool::Local(_)))
        .map(AnyTool::name)
        .take(30)
        .collect();
    if tools.is_empty() {
        format!("`{name}` is not defined, and no tool is registered")
    } else {
        format!(
            "`{name}` is not defined and is not a tool (tools: {})",
            tools.join(", ")
        )
    }
}

fn warning(message: String, line: Option<u32>) -> ChainWarning {
    ChainWarning { message, line }
}

/// Line starts of a script, for 1-based (line, column) positions in
/// characters, as ty reports them.
struct Lines<'a> {
    script: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(script: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(script.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        Lines { script, starts }
    }

    fn position(&self, offset: TextSize) -> (u32, u32) {
        let offset = usize::from(offset).min(self.script.len());
        let line = self.starts.partition_point(|&start| start <= offset).max(1);
        let start = self.starts[line - 1];
        let col = self.script.get(start..offset).map_or(0, |text| text.chars().count());
        (clamp(line), clamp(col + 1))
    }

    /// Whether the position lies within `range`.
    fn contains(&self, range: TextRange, position: (u32, u32)) -> bool {
        self.position(range.start()) <= position && position < self.position(range.end())
    }
}

fn clamp(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
