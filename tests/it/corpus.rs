//! The differential corpus: realistic chain scripts run through chainbox and
//! compared with what CPython gives for the same script and the same tools.
//! The data lives in `tests/corpus/`:
//!
//! - `cases/<name>.py` — one chain script per case (top-level `await`; the
//!   last statement, when an expression, is the answer).
//! - `tools.py` + `tools.toml` — the deterministic fake tools, as command
//!   tools (`python3 tools.py`).
//! - `expected/<name>.json` — what CPython gives, written by the reference
//!   runner: `python3 tests/corpus/reference.py` re-blesses every case
//!   (`--check` only compares).
//! - `known_differences.toml` — cases that differ from CPython for a known
//!   reason (a documented boundary rule, a difference between CPython
//!   versions), each with that reason. A listed case must still differ, so
//!   the list stays true.
//!
//! Every case runs under the default policy, so `python = "auto"` chooses
//! its interpreter: monty, or the CPython guest for what monty lacks (the
//! `cpython_*` cases exercise those features). Which one ran is checked
//! too: a `cpython_*` case must run on CPython, and any other on monty
//! unless `known_differences.toml`'s `[routed]` says why the scan sends it
//! to CPython (a case meant to test monty that the scan routes away tests
//! nothing of monty's).
//!
//! Compared, for every case: `status`, `output` (JSON, key order included,
//! integers by their digits), `output_text`, `stdout`, the uncaught
//! exception's type, the trace's `(tool, status)` sequence and the "never
//! awaited" warnings' messages. Every failing case is reported, with its
//! differences, before the test fails.
//!
//! `CHAINBOX_CORPUS=<substring>` runs only the cases whose name contains it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chainbox::manifest::Manifest;
use chainbox::{Approval, ChainPolicy, ChainRunResult, Interpreter, ToolRegistry, ToolRisk};
use futures::StreamExt;
use serde_json::Value;

/// Chains in flight at once (each tool call is a `python3` process).
const CONCURRENCY: usize = 6;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("corpus")
}

struct Case {
    name: String,
    script: String,
    expected: Value,
}

fn load_cases(dir: &Path, filter: Option<&str>) -> Vec<Case> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir.join("cases"))
        .expect("tests/corpus/cases")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| {
            let name = path.file_stem()?.to_str()?.to_owned();
            if filter.is_some_and(|f| !name.contains(f)) {
                return None;
            }
            let script = std::fs::read_to_string(&path).expect("case script");
            let expected_path = dir.join("expected").join(format!("{name}.json"));
            let text = std::fs::read_to_string(&expected_path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e}; run `python3 tests/corpus/reference.py` to write it",
                    expected_path.display()
                )
            });
            let expected = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: invalid JSON: {e}", expected_path.display()));
            Some(Case { name, script, expected })
        })
        .collect()
}

/// `known_differences.toml`: `[differs]` maps a case name to its reason.
/// One table of `known_differences.toml` (`[differs]`, `[routed]`): case
/// name to reason.
fn load_known(dir: &Path, section: &str) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(dir.join("known_differences.toml")).expect("known_differences.toml");
    let table: toml::Table = toml::from_str(&text).expect("known_differences.toml is valid TOML");
    let Some(entries) = table.get(section) else {
        return BTreeMap::new();
    };
    let entries = entries.as_table().unwrap_or_else(|| panic!("[{section}] is a table"));
    entries
        .iter()
        .map(|(name, reason)| {
            let reason = reason.as_str().expect("each reason is a string");
            assert!(!reason.trim().is_empty(), "[{section}] {name} needs a reason");
            (name.clone(), reason.to_owned())
        })
        .collect()
}

/// The interpreter `auto` must choose for a case: CPython for a `cpython_*`
/// case or one `[routed]` lists, else monty.
fn expected_interpreter(name: &str, routed: &BTreeMap<String, String>) -> Interpreter {
    if name.starts_with("cpython_") || routed.contains_key(name) {
        Interpreter::Cpython
    } else {
        Interpreter::Monty
    }
}

async fn registry(dir: &Path) -> ToolRegistry {
    let manifest = Manifest::load(dir.join("tools.toml")).expect("tests/corpus/tools.toml");
    manifest.registry().await.expect("registry of tests/corpus/tools.toml")
}

// --- ordered, exact JSON comparison ------------------------------------------

/// `serde_json::Value`'s `==` ignores object key order (its map is an
/// IndexMap), and with plain f64 numbers a big integer equals its float:
/// exactly the differences this corpus hunts. This walks objects as ordered
/// `(key, value)` lists and compares numbers by kind and value.
fn json_diff(path: &str, expected: &Value, actual: &Value, out: &mut Vec<String>) {
    const MAX: usize = 8;
    if out.len() >= MAX {
        return;
    }
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let ek: Vec<&String> = e.keys().collect();
            let ak: Vec<&String> = a.keys().collect();
            if ek != ak {
                let mut sorted_e = ek.clone();
                let mut sorted_a = ak.clone();
                sorted_e.sort();
                sorted_a.sort();
                let what = if sorted_e == sorted_a {
                    "key order differs"
                } else {
                    "keys differ"
                };
                out.push(format!("{}: {what}: expected {ek:?}, got {ak:?}", show_path(path)));
                if sorted_e != sorted_a {
                    return;
                }
            }
            for (key, ev) in e {
                if let Some(av) = a.get(key) {
                    json_diff(&format!("{path}.{key}"), ev, av, out);
                }
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                out.push(format!(
                    "{}: expected {} items, got {}: expected {}, got {}",
                    show_path(path),
                    e.len(),
                    a.len(),
                    brief(expected),
                    brief(actual)
                ));
                return;
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                json_diff(&format!("{path}[{i}]"), ev, av, out);
            }
        }
        (Value::Number(e), Value::Number(a)) => {
            if let Some(why) = number_difference(&e.to_string(), &a.to_string()) {
                out.push(format!("{}: {why}", show_path(path)));
            }
        }
        (e, a) if same_kind(e, a) && e == a => {}
        _ => out.push(format!(
            "{}: expected {}, got {}",
            show_path(path),
            brief(expected),
            brief(actual)
        )),
    }
}

fn same_kind(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

fn show_path(path: &str) -> &str {
    if path.is_empty() { "(top)" } else { path }
}

/// An integer literal has no '.', 'e' or 'E' (Python's `json` and serde_json
/// agree on that); integers compare by their digits, floats as f64.
fn number_difference(expected: &str, actual: &str) -> Option<String> {
    let is_int = |s: &str| !s.contains(['.', 'e', 'E']);
    match (is_int(expected), is_int(actual)) {
        (true, true) if expected == actual => None,
        (false, false) => {
            let (e, a) = (expected.parse::<f64>(), actual.parse::<f64>());
            match (e, a) {
                (Ok(e), Ok(a)) if e == a && e.is_sign_negative() == a.is_sign_negative() => None,
                _ => Some(format!("expected float {expected}, got {actual}")),
            }
        }
        (true, false) => Some(format!("expected int {expected}, got float {actual}")),
        (false, true) => Some(format!("expected float {expected}, got int {actual}")),
        (true, true) => Some(format!("expected {expected}, got {actual}")),
    }
}

/// A value as compact JSON (key order kept), cut for the report.
fn brief(value: &Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    cut(&text, 300)
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}…")
}

/// A line-by-line view of two texts' first difference.
fn text_diff(field: &str, expected: &str, actual: &str, out: &mut Vec<String>) {
    if expected == actual {
        return;
    }
    let (el, al): (Vec<&str>, Vec<&str>) = (expected.split('\n').collect(), actual.split('\n').collect());
    let line = el
        .iter()
        .zip(&al)
        .position(|(e, a)| e != a)
        .unwrap_or(el.len().min(al.len()));
    out.push(format!(
        "{field}: first difference at line {}:\n      expected {:?}\n      got      {:?}\n      (expected {} lines, got {})",
        line + 1,
        cut(el.get(line).copied().unwrap_or("<end>"), 300),
        cut(al.get(line).copied().unwrap_or("<end>"), 300),
        el.len(),
        al.len()
    ));
}

// --- one case ----------------------------------------------------------------

fn str_field<'a>(expected: &'a Value, key: &str) -> &'a str {
    expected.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Everything the user sees that differs from CPython's answer.
fn compare(expected: &Value, result: &ChainRunResult) -> Vec<String> {
    let mut out = Vec::new();
    let status = result.status.as_str();
    let want_status = str_field(expected, "status");
    if status != want_status {
        let error = result
            .error
            .as_ref()
            .map(|e| format!(" ({:?} {}: {})", e.kind, e.error_type, cut(&e.message, 300)))
            .unwrap_or_default();
        out.push(format!("status: expected {want_status}, got {status}{error}"));
    }

    let want_type = expected.get("error_type").and_then(Value::as_str);
    let got_type = result.error.as_ref().map(|e| e.error_type.as_str());
    if want_type != got_type {
        let message = result
            .error
            .as_ref()
            .map(|e| format!(" ({})", cut(&e.message, 300)))
            .unwrap_or_default();
        out.push(format!("error type: expected {want_type:?}, got {got_type:?}{message}"));
    }

    let mut output = Vec::new();
    json_diff("", &expected["output"], &result.output, &mut output);
    out.extend(output.into_iter().map(|d| format!("output {d}")));

    text_diff(
        "output_text",
        str_field(expected, "output_text"),
        &result.output_text,
        &mut out,
    );
    text_diff("stdout", str_field(expected, "stdout"), &result.stdout, &mut out);

    let want_trace: Vec<(String, String)> = expected["trace"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|r| (str_field(r, "tool").to_owned(), str_field(r, "status").to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let got_trace: Vec<(String, String)> = result
        .call_trace
        .iter()
        .map(|r| (r.tool.clone(), r.status.as_str().to_owned()))
        .collect();
    if want_trace != got_trace {
        let show = |t: &[(String, String)]| {
            let calls: Vec<String> = t.iter().map(|(tool, status)| format!("{tool}:{status}")).collect();
            format!("[{}]", calls.join(", "))
        };
        let errors: Vec<&str> = result.call_trace.iter().filter_map(|r| r.error.as_deref()).collect();
        out.push(format!(
            "trace: expected {}, got {}{}",
            show(&want_trace),
            show(&got_trace),
            if errors.is_empty() {
                String::new()
            } else {
                format!(" (call errors: {errors:?})")
            }
        ));
    }

    compare_warnings(expected, result, &mut out);
    out
}

/// The "never awaited" warnings (`ChainRunResult.warnings`), by message,
/// in order. The reference records CPython's RuntimeWarning text only, so
/// the warnings' `line` is not compared.
fn compare_warnings(expected: &Value, result: &ChainRunResult, out: &mut Vec<String>) {
    let want: Vec<&str> = expected["warnings"]
        .as_array()
        .map(|w| w.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // The check before the run's warnings are chainbox's, not CPython's.
    let got: Vec<&str> = result
        .warnings
        .iter()
        .map(|w| w.message.as_str())
        .filter(|m| !m.starts_with("type check"))
        .collect();
    if want != got {
        out.push(format!("warnings: expected {want:?}, got {got:?}"));
    }
}

// --- the test ----------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_matches_cpython() {
    // Integers are compared by their digits: that needs serde_json's
    // `arbitrary_precision`, else 2**70 parses as a float on both sides.
    let probe: Value = serde_json::from_str("1180591620717411303424").expect("JSON");
    assert_eq!(
        probe.to_string(),
        "1180591620717411303424",
        "serde_json must be built with `arbitrary_precision` for the corpus to compare big integers"
    );

    let dir = corpus_dir();
    let filter = std::env::var("CHAINBOX_CORPUS").ok().filter(|f| !f.is_empty());
    let cases = load_cases(&dir, filter.as_deref());
    assert!(!cases.is_empty(), "no corpus cases found (filter: {filter:?})");
    let known = load_known(&dir, "differs");
    let routed = load_known(&dir, "routed");
    if filter.is_none() {
        for name in known.keys().chain(routed.keys()) {
            assert!(
                cases.iter().any(|c| &c.name == name),
                "known_differences.toml lists `{name}`, which is not a case"
            );
        }
    }

    let engine = crate::fixtures::engine();
    let registry = registry(&dir).await;
    // The run against CPython's: the cases that fail on purpose run to
    // their failure. What the check before the run makes of every case is
    // `the_check_before_the_run_refuses_only_what_cpython_fails_on`.
    let policy = ChainPolicy {
        type_check: chainbox::TypeCheck::Off,
        ..ChainPolicy::default()
    };
    let approval = Approval::auto(ToolRisk::Critical);

    let mut results: Vec<(String, Vec<String>)> = futures::stream::iter(cases.iter())
        .map(|case| {
            let (engine, registry, policy, approval, routed) = (&engine, &registry, &policy, &approval, &routed);
            async move {
                let result = engine.run(&case.script, registry, policy, approval).await;
                let mut diffs = compare(&case.expected, &result);
                let expected = expected_interpreter(&case.name, routed);
                if result.interpreter != expected {
                    let scan = chainbox::python_choice::needs_cpython(&case.script)
                        .map_or_else(|| "nothing".to_owned(), |needs| needs.to_string());
                    diffs.push(format!(
                        "interpreter: ran on {:?}, expected {expected:?} (the scan found: {scan}); \
                         a case for the CPython guest is named cpython_*, one the scan routes there is listed in [routed]",
                        result.interpreter
                    ));
                }
                (case.name.clone(), diffs)
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    results.sort_by(|a, b| a.0.cmp(&b.0));

    let mut failures = String::new();
    let mut stale = Vec::new();
    let (mut passed, mut known_failing) = (0, 0);
    for (name, diffs) in &results {
        match (known.get(name), diffs.is_empty()) {
            (None, true) => passed += 1,
            (Some(_), false) => known_failing += 1,
            (Some(_), true) => stale.push(name.clone()),
            (None, false) => {
                let _ = writeln!(failures, "\n--- {name} (tests/corpus/cases/{name}.py)");
                for d in diffs {
                    let _ = writeln!(failures, "    {d}");
                }
            }
        }
    }
    let failing = results.len() - passed - known_failing - stale.len();
    eprintln!(
        "corpus: {} cases, {passed} match CPython, {known_failing} known differences, {failing} failing, {} listed but now matching",
        results.len(),
        stale.len()
    );
    let mut report = String::new();
    if !failures.is_empty() {
        let _ = write!(
            report,
            "{failing} corpus case(s) differ from CPython (expected/ is CPython's answer; \
             re-bless with `python3 tests/corpus/reference.py` only if the reference is what changed):{failures}"
        );
    }
    if !stale.is_empty() {
        let _ = write!(
            report,
            "\nthese cases are listed in tests/corpus/known_differences.toml but now match CPython; \
             remove them from the list: {stale:?}"
        );
    }
    assert!(report.is_empty(), "{report}");
}

/// No false refusals: the check before the run (`enforce`) lets every
/// case run that CPython runs to its end (those that make a bad call on
/// purpose catch what it raises), and refuses a case only where CPython
/// itself fails with what the refused call raises (an unknown name's
/// `NameError`, a bad argument's `ValueError` or `TypeError`).
#[tokio::test(flavor = "multi_thread")]
async fn the_check_before_the_run_refuses_only_what_cpython_fails_on() {
    let dir = corpus_dir();
    let registry = registry(&dir).await;
    let checker = chainbox::check::Checker::default();
    let mut refused_as_cpython_fails = 0;
    let mut wrong: Vec<String> = Vec::new();
    for case in load_cases(&dir, None) {
        let verdict = checker.check(&case.script, &registry, chainbox::TypeCheck::Enforce, false);
        let Some(first) = verdict.refusals.first() else {
            continue;
        };
        let raises: &[&str] = match first.rule.as_str() {
            "unknown-tool" => &["NameError"],
            "not-awaited" => &["TypeError", "AttributeError"],
            _ => &["ValueError", "TypeError"],
        };
        let cpython_fails = case.expected["status"] == "error"
            && raises.contains(&case.expected["error_type"].as_str().unwrap_or_default());
        if cpython_fails {
            refused_as_cpython_fails += 1;
        } else {
            wrong.push(format!("{}: {:?}", case.name, verdict.refusals));
        }
    }
    assert!(
        wrong.is_empty(),
        "refused, but CPython runs them:\n{}",
        wrong.join("\n")
    );
    println!("check: {refused_as_cpython_fails} cases refused, each where CPython fails");
}

/// The corpus's tools as a deployment would mark them: what reads text
/// others wrote (docs, pages, files, messages, a fetched URL) untrusted,
/// `send_email` guarding its recipient, the other high and critical tools
/// every argument.
const REALISTIC_FLOW: &[(&str, &str)] = &[
    ("search_docs", "output = \"untrusted\""),
    ("flaky_fetch", "output = \"untrusted\""),
    ("get_page", "output = \"untrusted\""),
    ("get_message", "output = \"untrusted\""),
    ("read_file", "output = \"untrusted\""),
    ("send_email", "guarded_args = [\"to\"]"),
];

#[tokio::test]
async fn the_flow_analysis_asks_only_for_chains_that_read_untrusted_data_and_call_a_guarded_tool() {
    let dir = corpus_dir();
    let mut text = std::fs::read_to_string(dir.join("tools.toml")).expect("tests/corpus/tools.toml");
    for (tool, setting) in REALISTIC_FLOW {
        let line = format!("name = \"{tool}\"\n");
        assert!(text.contains(&line), "tools.toml has no {tool}");
        text = text.replace(&line, &format!("{line}{setting}\n"));
    }
    let manifest = Manifest::from_str(&text, &dir).expect("the realistic manifest");
    let registry = manifest.registry().await.expect("its registry");
    let tools = chainbox::flow::FlowTools::new(&registry, &ChainPolicy::default());
    let calls = |script: &str, tool: &str| script.contains(&format!("{tool}("));
    let (mut cases, mut reading, mut guarded, mut asking) = (0, 0, 0, Vec::new());
    for case in load_cases(&dir, None) {
        cases += 1;
        let verdict = chainbox::check::flow::analyze(&case.script, &tools, false);
        let untrusted: Vec<&str> = REALISTIC_FLOW
            .iter()
            .map(|(tool, _)| *tool)
            .filter(|tool| tools.is_untrusted(tool) && calls(&case.script, tool))
            .collect();
        let sinks: Vec<&str> = verdict
            .sinks()
            .filter(|(tool, _)| calls(&case.script, tool))
            .filter(|(_, taint)| untrusted.iter().any(|source| taint.reaches_from(source)))
            .map(|(tool, _)| tool)
            .collect();
        reading += usize::from(!untrusted.is_empty());
        guarded += usize::from(
            ["send_email", "create_ticket", "run_query"]
                .iter()
                .any(|t| calls(&case.script, t)),
        );
        if !sinks.is_empty() {
            asking.push(format!("{} ({})", case.name, sinks.join(", ")));
        }
        // A chain that reads nothing untrusted never asks.
        assert!(
            !untrusted.is_empty() || sinks.is_empty(),
            "{} asks without reading untrusted data",
            case.name
        );
    }
    println!(
        "flow: of {cases} corpus chains, {reading} read untrusted data and {guarded} call a guarded tool; \
         {} would ask for approval: {}",
        asking.len(),
        asking.join("; ")
    );
}
