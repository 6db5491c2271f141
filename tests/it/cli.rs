//! End-to-end tests of the `chainbox` binary: the real CLI, the real sandbox,
//! and the real command tools of `examples/tools/manifest.toml` (python3
//! scripts run as subprocesses).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use chainbox::digest::args_digest;
use serde_json::{Map, Value, json};

/// Longest any one process may run before the test kills it and fails. Generous:
/// on a cold module cache every test process compiles the guest at once.
const PROCESS_TIMEOUT: Duration = Duration::from_secs(300);

/// What a finished process left behind.
#[derive(Debug)]
struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Finished {
    /// Stdout parsed as the single JSON document it must be (serde_json
    /// rejects anything but whitespace after the document).
    fn json(&self) -> Value {
        let value: Value = serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not exactly one JSON document ({e}): {self:#?}"));
        assert!(value.is_object(), "the result is not a JSON object: {self:#?}");
        value
    }
}

/// Runs `cmd`, feeding it `stdin` (or nothing), and waits for it, killing it
/// after [`PROCESS_TIMEOUT`].
fn run(mut cmd: Command, stdin: Option<&str>) -> Finished {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));

    let input = stdin.unwrap_or_default().to_owned();
    let mut child_stdin = child.stdin.take().expect("piped stdin");
    let writer = thread::spawn(move || {
        // A process that exits without reading its stdin closes the pipe:
        // ignore the broken-pipe error that causes.
        let _ = child_stdin.write_all(input.as_bytes());
    });
    let read_all = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut text = String::new();
            pipe.read_to_string(&mut text).expect("reading a child's output");
            text
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = read_all(Box::new(child.stderr.take().expect("piped stderr")));

    let deadline = Instant::now() + PROCESS_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for a child") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {PROCESS_TIMEOUT:?}");
        }
        thread::sleep(Duration::from_millis(20));
    };
    writer.join().expect("stdin writer");
    Finished {
        code: status.code(),
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// A file of this crate, by its path from the crate root.
fn crate_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The example tools manifest, as an argument.
fn manifest() -> String {
    crate_path("examples/tools/manifest.toml").display().to_string()
}

/// Runs `chainbox ARGS...` from the crate root.
fn chainbox(args: &[&str], stdin: Option<&str>) -> Finished {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_chainbox"));
    cmd.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    run(cmd, stdin)
}

/// `chainbox run SCRIPT --tools examples/tools/manifest.toml --json EXTRA...`.
fn run_json(script: &str, extra: &[&str], stdin: Option<&str>) -> Finished {
    let manifest = manifest();
    let mut args = vec!["run", script, "--tools", manifest.as_str(), "--json"];
    args.extend_from_slice(extra);
    chainbox(&args, stdin)
}

/// The `call_trace` records of a result.
fn trace(result: &Value) -> &Vec<Value> {
    result["call_trace"]
        .as_array()
        .unwrap_or_else(|| panic!("no call_trace array: {result:#}"))
}

/// The `status` of every record of the trace, in order.
fn trace_statuses(result: &Value) -> Vec<&str> {
    trace(result)
        .iter()
        .map(|r| r["status"].as_str().expect("record status"))
        .collect()
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn run_json_prints_one_result_with_a_digested_record_per_call() {
    let script = crate_path("examples/chains/add.py").display().to_string();
    let out = run_json(&script, &[], None);
    let result = out.json();

    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(result["status"], "ok", "{result:#}");
    assert_eq!(result["output"], json!({"x": 3, "y": 13, "z": 13.5}), "{result:#}");
    assert_eq!(result["tool_calls"], 3, "{result:#}");
    assert_eq!(trace_statuses(&result), ["ok", "ok", "ok"], "{result:#}");

    // The arguments add.py passes, positional ones mapped onto the schema's
    // properties in order (a, b).
    let passed = [
        json!({"a": 1, "b": 2}),
        json!({"a": 3, "b": 10}),
        json!({"a": 13, "b": 0.5}),
    ];
    for (record, args) in trace(&result).iter().zip(passed) {
        assert_eq!(record["tool"], "add", "{record:#}");
        assert_eq!(
            record["args_digest"].as_str(),
            Some(args_digest(&object(args.clone())).as_str()),
            "digest of {args} in {record:#}"
        );
    }
}

#[test]
fn run_dash_reads_the_script_from_stdin() {
    let out = run_json(
        "-",
        &[],
        Some("reply = await echo(text=\"from stdin\")\nreply[\"text\"]\n"),
    );
    let result = out.json();

    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(result["status"], "ok", "{result:#}");
    assert_eq!(result["output"], "from stdin", "{result:#}");
    assert_eq!(trace_statuses(&result), ["ok"], "{result:#}");
    assert_eq!(
        trace(&result)[0]["args_digest"].as_str(),
        Some(args_digest(&object(json!({"text": "from stdin"}))).as_str())
    );
}

#[test]
fn run_json_on_a_failing_script_exits_1_with_an_error_result_and_its_trace() {
    let script = "total = await add(a=2, b=2)\nraise ValueError(f\"bad total {total}\")\n";
    let out = run_json("-", &[], Some(script));
    let result = out.json();

    assert_eq!(out.code, Some(1), "{out:#?}");
    assert_eq!(result["status"], "error", "{result:#}");
    assert_eq!(result["error"]["kind"], "script", "{result:#}");
    assert_eq!(result["error"]["type"], "ValueError", "{result:#}");
    assert_eq!(result["error"]["message"], "bad total 4", "{result:#}");
    assert_eq!(result["error"]["line"], 2, "{result:#}");
    assert_eq!(result["tool_calls"], 1, "{result:#}");
    assert_eq!(trace_statuses(&result), ["ok"], "{result:#}");
}

#[test]
fn approve_deny_denies_a_high_risk_call_and_the_script_catches_permission_error() {
    let script = crate_path("examples/chains/send_email.py").display().to_string();
    let out = run_json(&script, &["--approve", "deny"], None);
    let result = out.json();

    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(result["status"], "ok", "{result:#}");
    assert_eq!(result["output"], "caught", "{result:#}");
    assert_eq!(trace_statuses(&result), ["denied"], "{result:#}");
    assert_eq!(trace(&result)[0]["tool"], "send_email", "{result:#}");
}

#[test]
fn approve_auto_runs_a_high_risk_call() {
    let script = crate_path("examples/chains/send_email.py").display().to_string();
    let out = run_json(&script, &["--approve", "auto"], None);
    let result = out.json();

    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(result["status"], "ok", "{result:#}");
    assert_eq!(result["output"], "sent", "{result:#}");
    assert_eq!(trace_statuses(&result), ["ok"], "{result:#}");
    assert_eq!(
        trace(&result)[0]["args_digest"].as_str(),
        Some(args_digest(&object(json!({"to": "ops@example.com", "subject": "Nightly report"}))).as_str())
    );
}

/// Runs a trivial chain under a policy file holding `policy`.
fn run_with_policy(policy: &str) -> Finished {
    let mut file = tempfile::Builder::new()
        .suffix(".toml")
        .tempfile()
        .expect("temp policy");
    file.write_all(policy.as_bytes()).expect("writing the policy");
    let path = file.path().display().to_string();
    run_json("-", &["--policy", &path], Some("1 + 1\n"))
}

#[test]
fn policy_with_approval_timeout_not_below_call_timeout_exits_2_naming_the_field() {
    let out = run_with_policy("approval_timeout_s = 70\ncall_timeout_s = 60\n");

    assert_eq!(out.code, Some(2), "{out:#?}");
    assert!(out.stderr.contains("approval_timeout_s"), "{out:#?}");
}

#[test]
fn a_script_file_that_cannot_be_read_exits_2_naming_it_and_why() {
    let out = chainbox(&["run", "no/such/script.py"], None);

    assert_eq!(out.code, Some(2), "{out:#?}");
    assert!(
        out.stderr
            .starts_with("chainbox: reading the script no/such/script.py: "),
        "{out:#?}"
    );
}

#[test]
fn specs_only_a_tool_without_a_spec_exits_2_naming_the_flag_and_the_provider() {
    let out = chainbox(&["specs", "--provider", "anthropic", "--only", "no_such_tool"], None);

    assert_eq!(out.code, Some(2), "{out:#?}");
    assert!(
        out.stderr
            .contains("--only no_such_tool: no tool of that name has a spec for"),
        "{out:#?}"
    );
}

#[test]
fn policy_with_an_unknown_field_exits_2_naming_the_field() {
    let out = run_with_policy("max_tool_calls = 5\nmax_coffee_breaks = 3\n");

    assert_eq!(out.code, Some(2), "{out:#?}");
    assert!(out.stderr.contains("max_coffee_breaks"), "{out:#?}");
}

#[test]
fn stubs_print_async_defs_that_parse_as_python() {
    let manifest = manifest();
    let out = chainbox(&["stubs", "--tools", &manifest], None);

    assert_eq!(out.code, Some(0), "{out:#?}");
    for tool in ["add", "echo", "slow_echo", "fail", "chart", "send_email"] {
        assert!(
            out.stdout.contains(&format!("async def {tool}(")),
            "{tool} missing: {}",
            out.stdout
        );
    }
    let mut python = Command::new("python3");
    python.args(["-c", "import ast, sys; ast.parse(sys.stdin.read())"]);
    let parsed = run(python, Some(&out.stdout));
    assert_eq!(
        parsed.code,
        Some(0),
        "stubs do not parse as Python: {parsed:#?}\n{}",
        out.stdout
    );
}

#[test]
fn demo_prints_its_output_and_trace() {
    let out = chainbox(&["demo"], None);

    assert_eq!(out.code, Some(0), "{out:#?}");
    assert!(out.stdout.contains("trace"), "{out:#?}");
    assert!(out.stdout.contains("get_weather"), "{out:#?}");
}

#[test]
fn the_readable_report_names_the_interpreter_that_ran() {
    for (python, name) in [("monty", "(monty)"), ("cpython", "(cpython)")] {
        let out = chainbox(&["run", "-", "--python", python], Some("1 + 1"));
        assert_eq!(out.code, Some(0), "{out:#?}");
        assert!(out.stdout.contains("tool calls in"), "{out:#?}");
        assert!(out.stdout.contains(name), "{python}: {out:#?}");
    }
}

#[test]
fn failing_tool_gives_an_error_record_and_a_catchable_runtime_error() {
    let script = "\
try:
    await fail(message=\"disk on fire\")
    outcome = \"no error\"
except RuntimeError as e:
    outcome = \"RuntimeError: \" + str(e)
outcome
";
    let out = run_json("-", &[], Some(script));
    let result = out.json();

    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(result["status"], "ok", "{result:#}");
    let output = result["output"].as_str().unwrap_or_default();
    assert!(output.starts_with("RuntimeError: "), "{result:#}");
    assert!(output.contains("disk on fire"), "{result:#}");
    assert_eq!(trace_statuses(&result), ["error"], "{result:#}");
    assert_eq!(trace(&result)[0]["tool"], "fail", "{result:#}");
}

#[test]
fn gather_example_runs_its_calls_concurrently() {
    let script = crate_path("examples/chains/gather.py").display().to_string();
    let out = run_json(&script, &[], None);
    let result = out.json();

    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(result["status"], "ok", "{result:#}");
    assert_eq!(result["output"], json!(["alpha", "beta", "gamma"]), "{result:#}");
    assert_eq!(trace_statuses(&result), ["ok", "ok", "ok"], "{result:#}");

    // Each call sleeps 0.5 s; run one after another the chain would take at
    // least the sum of the calls' durations, overlapping it takes less.
    let calls_ms: f64 = trace(&result)
        .iter()
        .map(|r| r["duration_ms"].as_f64().expect("duration_ms"))
        .sum();
    let chain_ms = result["duration_ms"].as_f64().expect("duration_ms");
    assert!(calls_ms >= 1500.0, "{result:#}");
    assert!(
        chain_ms < calls_ms * 0.8,
        "chain took {chain_ms} ms for {calls_ms} ms of calls: {result:#}"
    );
}

#[test]
fn out_copies_the_files_a_chain_wrote_and_json_lists_their_host_paths() {
    let out = tempfile::tempdir().expect("tempdir");
    let out_dir = out.path().join("made");
    let script = "with open('/workspace/notes/report.txt', 'w') as f:\n    f.write('hello')\n'done'";
    // The directory must exist for `open` to create the file in it.
    let script = format!("import os\nos.makedirs('/workspace/notes', exist_ok=True)\n{script}");
    let done = chainbox(
        &["run", "-", "--json", "--out", out_dir.to_str().expect("utf-8")],
        Some(&script),
    );
    assert_eq!(done.code, Some(0), "{done:#?}");
    let result = done.json();
    let host_path = out_dir.join("notes/report.txt");
    assert_eq!(
        result["saved_files"],
        json!([{"path": "/workspace/notes/report.txt", "host_path": host_path}]),
        "{done:#?}"
    );
    assert_eq!(std::fs::read_to_string(host_path).expect("copied"), "hello");
}

#[test]
fn demo_out_saves_its_chart_and_prints_where() {
    let out = tempfile::tempdir().expect("tempdir");
    let done = chainbox(&["demo", "--out", out.path().to_str().expect("utf-8")], None);
    assert_eq!(done.code, Some(0), "{done:#?}");
    let chart = out.path().join("media/render_chart_1.svg");
    let svg = std::fs::read_to_string(&chart).expect("the chart was saved");
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(done.stdout.contains(&format!("-> {}", chart.display())), "{done:#?}");
}

/// `chainbox run - --json` of `script` on stdin, with `CHAINBOX_LOG` set
/// to `log` (or unset).
fn run_logged(script: &str, log: Option<&str>) -> Finished {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_chainbox"));
    cmd.args(["run", "-", "--json"]).current_dir(env!("CARGO_MANIFEST_DIR"));
    match log {
        Some(filter) => cmd.env("CHAINBOX_LOG", filter),
        None => cmd.env_remove("CHAINBOX_LOG"),
    };
    run(cmd, Some(script))
}

/// A script only CPython runs (monty has no `statistics`).
const NEEDS_CPYTHON: &str = "import statistics\nstatistics.mean([1, 2, 4])\n";

/// `CHAINBOX_LOG` turns on the log on stderr: under `auto`, why a chain
/// ran on CPython; stdout stays the one JSON result.
#[test]
fn chainbox_log_shows_on_stderr_why_a_chain_ran_on_cpython() {
    let out = run_logged(NEEDS_CPYTHON, Some("debug"));
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(out.json()["interpreter"], "cpython", "{out:#?}");
    assert!(
        out.stderr.contains("the chain runs on CPython") && out.stderr.contains("statistics"),
        "{}",
        out.stderr
    );
}

/// Without `CHAINBOX_LOG`, stderr stays quiet on success.
#[test]
fn without_chainbox_log_a_successful_run_writes_nothing_to_stderr() {
    let out = run_logged(NEEDS_CPYTHON, None);
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(out.stderr, "", "{out:#?}");
}

/// A `CHAINBOX_LOG` that is no filter is named on stderr, logging stays
/// off, and the run goes on.
#[test]
fn a_chainbox_log_that_is_no_filter_is_named_and_the_run_goes_on() {
    let out = run_logged(NEEDS_CPYTHON, Some("[[not a filter"));
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(out.json()["output"], 2.3333333333333335, "{out:#?}");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("CHAINBOX_LOG=\"[[not a filter\" is no log filter"),
        "{}",
        out.stderr
    );
}

#[test]
fn check_refuses_a_bad_tool_call_with_exit_code_1_and_runs_nothing() {
    let manifest = manifest();
    let bad = chainbox(
        &["check", "-", "--tools", &manifest, "--json"],
        Some("await add(a=1, c=2)"),
    );
    assert_eq!(bad.code, Some(1), "{}\n{}", bad.stdout, bad.stderr);
    let verdict: serde_json::Value = serde_json::from_str(&bad.stdout).expect("json");
    assert_eq!(verdict["refused"], true);
    let rules: Vec<&str> = verdict["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["rule"].as_str())
        .collect();
    assert_eq!(rules, ["missing-argument", "unknown-argument"], "{verdict:#}");
    let good = chainbox(&["check", "-", "--tools", &manifest], Some("await add(a=1, b=2)"));
    assert_eq!(good.code, Some(0), "{}\n{}", good.stdout, good.stderr);
    assert!(good.stdout.contains("ok:"), "{}", good.stdout);
}

#[test]
fn check_names_the_guarded_tools_that_will_ask_for_approval_and_from_which_untrusted_tools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = dir.path().join("tools.toml");
    std::fs::write(
        &manifest,
        "[[tool]]\nname = \"fetch_page\"\ndescription = \"A page.\"\noutput = \"untrusted\"\ncommand = [\"true\"]\n\
         [tool.input_schema]\ntype = \"object\"\nproperties = { url = { type = \"string\" } }\n\n\
         [[tool]]\nname = \"send_email\"\ndescription = \"Sends.\"\nrisk = \"high\"\nguarded_args = [\"to\"]\n\
         command = [\"true\"]\n[tool.input_schema]\ntype = \"object\"\n\
         properties = { to = { type = \"string\" }, body = { type = \"string\" } }\n",
    )
    .expect("manifest");
    let manifest = manifest.display().to_string();
    let script = "page = await fetch_page(url='x')\nawait send_email(to=page, body='b')";
    let json = chainbox(&["check", "-", "--tools", &manifest, "--json"], Some(script));
    assert_eq!(json.code, Some(0), "{}\n{}", json.stdout, json.stderr);
    let verdict: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(
        verdict["flow"],
        serde_json::json!({"send_email": {"any": false, "tools": ["fetch_page"]}})
    );
    let text = chainbox(&["check", "-", "--tools", &manifest], Some(script));
    assert!(
        text.stdout
            .contains("flow: calls of `send_email` need approval once a result of fetch_page has arrived"),
        "{}",
        text.stdout
    );
    let clean = "page = await fetch_page(url='x')\nawait send_email(to='boss@corp.example', body=page)";
    let json = chainbox(&["check", "-", "--tools", &manifest, "--json"], Some(clean));
    let verdict: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(verdict["flow"], serde_json::json!({}));
}
