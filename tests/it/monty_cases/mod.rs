//! Monty's own test cases through the chainbox guest and through native
//! monty, in the same run.
//!
//! The cases are the `test_cases/` directory of the `monty` package this
//! crate depends on, found with `cargo metadata` (never copied here). Each
//! case states its expectation the way monty's own harness reads it:
//! - a `# /// monty` … `# ///` TOML front matter with harness settings;
//! - a `"""\nTRACEBACK:\n…\n"""` block at the end: the script raises, and
//!   the block's last line is `Type: message`;
//! - else a last line `# Raise=Type('message')`, `# Return=repr`,
//!   `# Return.str=text` or `# Return.type=name`;
//! - else the script runs clean.
//!
//! Every case runs through `Engine::run` on the shared test engine (empty
//! tool registry, default policy with short time limits) and through
//! `MontyRun::run`. What may not pass is listed, with its reason, in
//! `expectations.toml` beside this file: `[skip]` (not run: needs the monty
//! harness's host functions or settings),
//! `[differs]` (the guest fails where native monty passes) and
//! `[native]` (native monty fails here too, and the guest must end exactly as
//! it does). The test fails on any failure not listed there, and on any
//! listed case that now passes, so the file stays true. It prints one summary
//! line: run / passed / skipped for the guest and for native monty.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chainbox::{Approval, ChainPolicy, ChainRunResult, ChainStatus, ToolRegistry, ToolRisk};
use futures::StreamExt;
use monty::MontyRun;
use monty_types::{CompileOptions, ExcType, MontyException, MontyObject, PrintWriter, ResourceLimits, ResourceTracker};
use serde_json::Value;

/// Front-matter keys whose cases cannot run outside monty's own harness.
/// `xfail` is only a skip when it names `monty` (a known monty failure);
/// `xfail = ['cpython']` cases state monty's behaviour and run.
const HARNESS_KEYS: &[&str] = &["call-external", "mount-fs", "timezone"];

/// Guest chains in flight at once.
const GUEST_CONCURRENCY: usize = 6;
/// Native monty worker threads.
const NATIVE_THREADS: usize = 4;
/// Wall and CPU limit of one case, guest and native: a bound for a case
/// that hangs, with room for a loaded machine (no case runs near it).
const CASE_TIMEOUT: Duration = Duration::from_secs(30);
/// Stack of a native worker: monty recurses in Rust as Python does.
const NATIVE_STACK: usize = 256 << 20;

/// What a case says should happen.
#[derive(Debug, Clone)]
enum Expect {
    /// Runs to completion without an exception.
    Clean,
    /// Completes with this `repr` (`# Return=`).
    Return(String),
    /// Completes with this `str` (`# Return.str=`).
    ReturnStr(String),
    /// Completes with a value of this type name (`# Return.type=`).
    ReturnType(String),
    /// Raises: `# Raise=Type('message')`, compared as `repr(exception)`.
    Raise { exc_type: String, repr: String },
    /// Raises, ending in this traceback line (`Type: message` or `Type`).
    Traceback { exc_type: String, last_line: String },
}

struct Case {
    name: String,
    file: String,
    code: String,
    expect: Expect,
    front: toml::Table,
}

/// How one run ended, reduced to what the expectations compare.
#[derive(Debug)]
// `line` and `Other`'s text are read through `Debug`, in failure reports.
#[allow(dead_code)]
enum Outcome {
    Value {
        /// `repr` of the value; two candidates when the run cannot tell
        /// (the guest's `output` is a JSON string both for a `str` and for a
        /// value JSON cannot carry, like a cycle, which it sends as its repr).
        reprs: Vec<String>,
        /// `str` of the value.
        text: String,
    },
    Raised {
        exc_type: String,
        message: Option<String>,
        /// Script line it was raised at, for the failure report.
        line: Option<u32>,
    },
    /// Not a Python exception: a limit, a timeout, a crash.
    Other(String),
}

#[test]
fn monty_test_cases_run_in_the_guest_as_natively() {
    let dir = monty_test_cases_dir();
    let cases = load_cases(&dir);
    let listed = Listed::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/monty_cases/expectations.toml"));
    let mut problems = listed.check_names(&cases);

    let (skipped, runnable): (Vec<&Case>, Vec<&Case>) = cases.iter().partition(|c| listed.skip.contains_key(&c.name));
    for case in &runnable {
        if let Some(reason) = harness_only(case) {
            problems.push(format!("{}: {reason}; list it under [skip]", case.name));
        }
    }

    let started = Instant::now();
    let native = run_native(&runnable);
    let native_time = started.elapsed();
    let started = Instant::now();
    let guest = run_guest(&runnable);
    let guest_time = started.elapsed();

    let (mut native_passed, mut guest_passed) = (0, 0);
    for (case, (native, guest)) in runnable.iter().zip(native.iter().zip(&guest)) {
        let native_verdict = verdict(&case.expect, native);
        let guest_verdict = verdict(&case.expect, guest);
        native_passed += usize::from(native_verdict.is_ok());
        guest_passed += usize::from(guest_verdict.is_ok());
        match (&native_verdict, listed.native.contains_key(&case.name)) {
            (Err(why), false) => problems.push(format!("{} fails in native monty: {why}", case.name)),
            (Ok(()), true) => problems.push(format!(
                "{} is listed under [native] but passes in native monty now: remove it",
                case.name
            )),
            _ => {}
        }
        // A case native monty fails too is listed once, under [native], and
        // the guest must then end exactly as native monty does.
        if listed.native.contains_key(&case.name) {
            if !same_outcome(native, guest) {
                problems.push(format!(
                    "{} (listed under [native]) ends differently in the guest: native {native:?}, guest {guest:?}",
                    case.name
                ));
            }
        } else {
            match (&guest_verdict, listed.differs.contains_key(&case.name)) {
                (Err(why), false) => problems.push(format!("{} fails in the guest: {why}", case.name)),
                (Ok(()), true) => problems.push(format!(
                    "{} is listed under [differs] but passes in the guest now: remove it",
                    case.name
                )),
                _ => {}
            }
        }
        if std::env::var_os("MONTY_CASES_VERBOSE").is_some() {
            eprintln!(
                "{}: native {native_verdict:?}, guest {guest_verdict:?} / {guest:?}",
                case.name
            );
        }
    }

    // Straight to stderr: the test harness captures `println!`, and this line
    // is the run's summary (run / passed / skipped, guest and native).
    let _ = writeln!(
        std::io::stderr(),
        "monty test cases ({} files in {}): guest run {} / passed {} / skipped {} ({:.1} s); \
         native monty run {} / passed {} / skipped {} ({:.1} s)",
        cases.len(),
        dir.display(),
        runnable.len(),
        guest_passed,
        skipped.len(),
        guest_time.as_secs_f64(),
        runnable.len(),
        native_passed,
        skipped.len(),
        native_time.as_secs_f64(),
    );
    assert!(
        problems.is_empty(),
        "{} problem(s) (expectations: tests/it/monty_cases/expectations.toml):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The `test_cases/` directory of the `monty` package in the dependency graph.
pub(crate) fn monty_test_cases_dir() -> PathBuf {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
    let monty = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == "monty")
        .expect("the monty package in cargo metadata");
    let manifest = Path::new(monty["manifest_path"].as_str().expect("manifest_path"));
    let dir = manifest.parent().expect("package directory").join("test_cases");
    assert!(dir.is_dir(), "{} is not a directory", dir.display());
    dir
}

fn load_cases(dir: &Path) -> Vec<Case> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read test_cases")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no cases in {}", dir.display());
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let (code, expect) = parse_expectation(&text);
            Case {
                name: file.trim_end_matches(".py").to_owned(),
                front: front_matter(&text).unwrap_or_else(|e| panic!("{file}: front matter: {e}")),
                file,
                code,
                expect,
            }
        })
        .collect()
}

/// The `# /// monty` … `# ///` block at the top of a case, as TOML.
fn front_matter(text: &str) -> Result<toml::Table, toml::de::Error> {
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
    if lines.next().map(str::trim) != Some("# /// monty") {
        return Ok(toml::Table::new());
    }
    let body: Vec<&str> = lines
        .take_while(|l| l.trim() != "# ///")
        .map(|l| l.strip_prefix('#').unwrap_or(l))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    body.join("\n").parse()
}

/// The code to run and what it should do, as monty's harness reads them.
fn parse_expectation(text: &str) -> (String, Expect) {
    const MARKER: &str = "\"\"\"\nTRACEBACK:\n";
    if let Some(at) = text.find(MARKER) {
        let rest = &text[at + MARKER.len()..];
        let block = &rest[..rest.find("\n\"\"\"").expect("closing quotes of a TRACEBACK block")];
        let last_line = block
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_owned();
        let exc_type = last_line.split(':').next().unwrap_or("").trim().to_owned();
        return (
            text[..at].trim_end().to_owned(),
            Expect::Traceback { exc_type, last_line },
        );
    }
    let lines: Vec<&str> = text.lines().collect();
    let last = lines.last().copied().unwrap_or("");
    let code = lines[..lines.len().saturating_sub(1)].join("\n");
    let expect = if let Some(v) = last.strip_prefix("# Return.str=") {
        Expect::ReturnStr(v.to_owned())
    } else if let Some(v) = last.strip_prefix("# Return.type=") {
        Expect::ReturnType(v.to_owned())
    } else if let Some(v) = last.strip_prefix("# Return=") {
        Expect::Return(v.to_owned())
    } else if let Some(v) = last.strip_prefix("# Raise=") {
        let exc_type = v.split('(').next().unwrap_or(v).to_owned();
        Expect::Raise {
            exc_type,
            repr: v.to_owned(),
        }
    } else {
        return (text.to_owned(), Expect::Clean);
    };
    (code, expect)
}

/// Why a case can only run under monty's own harness, if it can.
fn harness_only(case: &Case) -> Option<String> {
    for key in HARNESS_KEYS {
        if case.front.contains_key(*key) {
            return Some(format!("front matter `{key}`"));
        }
    }
    let xfail_monty = case
        .front
        .get("xfail")
        .and_then(toml::Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v.as_str() == Some("monty")));
    xfail_monty.then(|| "front matter `xfail = ['monty']`".to_owned())
}

/// `expectations.toml`: every case that is skipped or may fail, with why.
struct Listed {
    skip: BTreeMap<String, String>,
    differs: BTreeMap<String, String>,
    native: BTreeMap<String, String>,
}

impl Listed {
    fn load(path: &Path) -> Listed {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let table: toml::Table = text.parse().unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let section = |name: &str| -> BTreeMap<String, String> {
            let Some(v) = table.get(name) else {
                return BTreeMap::new();
            };
            let t = v.as_table().unwrap_or_else(|| panic!("[{name}] must be a table"));
            t.iter()
                .map(|(k, v)| {
                    let reason = v
                        .as_str()
                        .unwrap_or_else(|| panic!("[{name}] {k}: the reason must be a string"));
                    assert!(!reason.trim().is_empty(), "[{name}] {k}: empty reason");
                    (k.clone(), reason.to_owned())
                })
                .collect()
        };
        for key in table.keys() {
            assert!(
                ["skip", "differs", "native"].contains(&key.as_str()),
                "{}: unknown section [{key}]",
                path.display()
            );
        }
        Listed {
            skip: section("skip"),
            differs: section("differs"),
            native: section("native"),
        }
    }

    /// Every listed name is a case, listed once.
    fn check_names(&self, cases: &[Case]) -> Vec<String> {
        let names: BTreeSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();
        let mut problems = Vec::new();
        for (section, map) in [
            ("skip", &self.skip),
            ("differs", &self.differs),
            ("native", &self.native),
        ] {
            for name in map.keys() {
                if !names.contains(name.as_str()) {
                    problems.push(format!("[{section}] {name}: no such case"));
                }
            }
        }
        for name in self.skip.keys() {
            if self.differs.contains_key(name) || self.native.contains_key(name) {
                problems.push(format!("{name}: listed as skipped and as run"));
            }
        }
        for name in self.differs.keys() {
            if self.native.contains_key(name) {
                problems.push(format!("{name}: listed under both [differs] and [native]"));
            }
        }
        problems
    }
}

/// Whether an outcome meets the case's expectation.
fn verdict(expect: &Expect, outcome: &Outcome) -> Result<(), String> {
    let got = || format!("{outcome:?}");
    match (expect, outcome) {
        (Expect::Clean, Outcome::Value { .. }) => Ok(()),
        (Expect::Return(want), Outcome::Value { reprs, .. }) if reprs.contains(want) => Ok(()),
        (Expect::ReturnStr(want), Outcome::Value { text, .. }) if text == want => Ok(()),
        // No case in monty 1.4.0 uses it: say so rather than pass blindly.
        (Expect::ReturnType(want), Outcome::Value { .. }) => {
            Err(format!("`# Return.type={want}` is not checked by this harness"))
        }
        (Expect::Raise { exc_type: want, repr }, Outcome::Raised { exc_type, message, .. }) => {
            if exc_type != want {
                return Err(format!("expected {repr}, got {}", got()));
            }
            // The message, where the type is one monty knows (it always is
            // for a monty-raised exception).
            match ExcType::from_str(exc_type) {
                // The guest reports a KeyError's message as CPython's `str(e)`,
                // already its key's repr.
                Ok(ExcType::KeyError) if message.as_ref().is_some_and(|m| m.starts_with(['\'', '"'])) => {
                    let got_repr = format!("KeyError({})", message.as_deref().unwrap_or_default());
                    if got_repr == *repr {
                        Ok(())
                    } else {
                        Err(format!("expected {repr}, got {}", got()))
                    }
                }
                Ok(t) if MontyException::new(t, message.clone()).py_repr() != *repr => {
                    Err(format!("expected {repr}, got {}", got()))
                }
                _ => Ok(()),
            }
        }
        (
            Expect::Traceback {
                exc_type: want,
                last_line,
            },
            Outcome::Raised { exc_type, message, .. },
        ) => {
            if exc_type != want {
                return Err(format!("expected traceback ending `{last_line}`, got {}", got()));
            }
            // The message too, when it is one line.
            let summary = match message {
                Some(m) => format!("{exc_type}: {m}"),
                None => exc_type.clone(),
            };
            if !summary.contains('\n') && summary.trim_end() != last_line.trim_end() {
                return Err(format!("expected traceback ending `{last_line}`, got {}", got()));
            }
            Ok(())
        }
        (expect, _) => Err(format!("expected {expect:?}, got {}", got())),
    }
}

/// Whether two runs ended the same way: the same exception type and
/// message, or values with a `repr` in common.
fn same_outcome(a: &Outcome, b: &Outcome) -> bool {
    match (a, b) {
        (
            Outcome::Raised {
                exc_type: ta,
                message: ma,
                ..
            },
            Outcome::Raised {
                exc_type: tb,
                message: mb,
                ..
            },
        ) => ta == tb && ma == mb,
        (Outcome::Value { reprs: ra, .. }, Outcome::Value { reprs: rb, .. }) => ra.iter().any(|r| rb.contains(r)),
        _ => false,
    }
}

/// Runs every case natively, on a few big-stack threads.
fn run_native(cases: &[&Case]) -> Vec<Outcome> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..cases.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..NATIVE_THREADS {
            std::thread::Builder::new()
                .stack_size(NATIVE_STACK)
                .spawn_scoped(s, || {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(case) = cases.get(i) else { break };
                        let outcome = run_native_case(case);
                        results.lock().unwrap()[i] = Some(outcome);
                    }
                })
                .expect("spawn native worker");
        }
    });
    results.into_inner().unwrap().into_iter().map(Option::unwrap).collect()
}

fn run_native_case(case: &Case) -> Outcome {
    let mut runner = match MontyRun::new(case.code.clone(), &case.file, vec![], CompileOptions::default()) {
        Ok(runner) => runner,
        Err(exc) => return raised(&exc),
    };
    let gc_interval = case
        .front
        .get("gc-interval")
        .and_then(toml::Value::as_integer)
        .map(|n| n as usize);
    let limits = ResourceLimits {
        max_feed_duration: Some(CASE_TIMEOUT),
        gc_interval,
        ..ResourceLimits::default()
    };
    match runner.run(vec![], ResourceTracker::new(limits), PrintWriter::Disabled) {
        Ok(value) => Outcome::Value {
            reprs: vec![value.py_repr()],
            text: value_text(&value),
        },
        Err(exc) => raised(&exc),
    }
}

fn value_text(value: &MontyObject) -> String {
    match value.as_ref().as_str() {
        Some(s) => s.to_owned(),
        None => value.py_repr(),
    }
}

fn raised(exc: &MontyException) -> Outcome {
    Outcome::Raised {
        exc_type: exc.exc_type().to_string(),
        message: exc.message().map(str::to_owned),
        line: exc.traceback().last().map(|frame| frame.start.line),
    }
}

/// Runs every case through the guest, a few chains at a time.
fn run_guest(cases: &[&Case]) -> Vec<Outcome> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(GUEST_CONCURRENCY)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let engine = crate::fixtures::engine();
        let registry = ToolRegistry::new();
        // The monty guest against native monty: never the CPython guest.
        let policy = ChainPolicy {
            total_timeout_s: CASE_TIMEOUT.as_secs_f64(),
            max_cpu_s: CASE_TIMEOUT.as_secs_f64(),
            python: chainbox::PythonChoice::Monty,
            // Monty's cases test the interpreter: some call names nothing
            // defines on purpose (the check before the run would refuse them).
            type_check: chainbox::TypeCheck::Off,
            ..ChainPolicy::default()
        };
        let approval = Approval::auto(ToolRisk::Safe);
        let (registry, policy, approval) = (&registry, &policy, &approval);
        futures::stream::iter(cases.iter().enumerate())
            .map(|(i, case)| async move {
                (
                    i,
                    guest_outcome(engine.run(&case.code, registry, policy, approval).await),
                )
            })
            .buffer_unordered(GUEST_CONCURRENCY)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .fold((0..cases.len()).map(|_| None).collect::<Vec<_>>(), |mut acc, (i, o)| {
                acc[i] = Some(o);
                acc
            })
            .into_iter()
            .map(Option::unwrap)
            .collect()
    })
}

fn guest_outcome(r: ChainRunResult) -> Outcome {
    match (&r.status, &r.error) {
        (ChainStatus::Ok, _) => Outcome::Value {
            // `output_text` is `str` for a string and `repr` for the rest.
            reprs: match &r.output {
                Value::String(s) => vec![MontyObject::string(s.clone()).py_repr(), s.clone()],
                _ => vec![r.output_text.clone()],
            },
            text: r.output_text,
        },
        (_, Some(e)) if matches!(e.kind, chainbox::ErrorKind::Script | chainbox::ErrorKind::Compile) => {
            Outcome::Raised {
                exc_type: e.error_type.clone(),
                message: (!e.message.is_empty()).then(|| e.message.clone()),
                line: e.line,
            }
        }
        (_, Some(e)) => Outcome::Other(format!("{:?} {}: {}", e.kind, e.error_type, e.message)),
        (status, None) => Outcome::Other(format!("{status:?} without an error")),
    }
}
