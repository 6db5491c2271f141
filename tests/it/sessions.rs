//! Sessions through the command line, on SQLite, each cell in a process of
//! its own (`run CELL --state URL --session new|ID`): names live on from
//! cell to cell as in Python's REPL, tool calls of earlier cells never run
//! again and their output is not repeated, on both guests; a cell that
//! needs CPython moves a monty session there; a session that cannot run a
//! cell (unknown, expired, full, ended, busy with a suspended cell) says
//! so with kind `session` and runs nothing; a suspended cell holds the
//! session until it is decided and resumed; cells sent at once all run,
//! one at a time.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::durable_cli::{chainbox, counting_manifest, runs};

/// A session in a SQLite store of a temporary directory, with the counting
/// tools (`bump`, safe; `wire`, critical) of `durable_cli`.
struct Session {
    dir: tempfile::TempDir,
    manifest: String,
    state: String,
    id: Option<String>,
}

impl Session {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let manifest = counting_manifest(dir.path()).display().to_string();
        let state = format!("sqlite:{}", dir.path().join("chains.db").display());
        Session {
            dir,
            manifest,
            state,
            id: None,
        }
    }

    /// A policy file with these lines.
    fn policy(&self, toml: &str) -> PathBuf {
        let path = self.dir.path().join("policy.toml");
        std::fs::write(&path, toml).expect("the policy");
        path
    }

    /// Runs `cell` in the session (starting it on the first cell) with
    /// `extra` flags: the exit code and the result.
    fn cell(&mut self, cell: &str, extra: &[&str]) -> (Option<i32>, Value) {
        let session = self.id.clone().unwrap_or_else(|| "new".to_owned());
        let (code, out, err) = self.cell_in(&session, cell, extra);
        let result: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
        if let Some(id) = result["session_id"].as_str() {
            self.id = Some(id.to_owned());
        }
        (code, result)
    }

    fn cell_in(&self, session: &str, cell: &str, extra: &[&str]) -> (Option<i32>, String, String) {
        let script = self
            .dir
            .path()
            .join(format!("cell-{}.py", uuid::Uuid::new_v4().simple()));
        std::fs::write(&script, cell).expect("the cell");
        let script = script.display().to_string();
        let mut args = vec![
            "run",
            &script,
            "--tools",
            &self.manifest,
            "--state",
            &self.state,
            "--session",
            session,
            "--json",
        ];
        args.extend_from_slice(extra);
        chainbox(&args)
    }

    fn runs(&self, tool: &str) -> usize {
        runs(self.dir.path(), tool)
    }

    fn id(&self) -> &str {
        self.id.as_deref().expect("a session")
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The result of a cell that ran to its end: its output.
fn ok(code: Option<i32>, result: &Value) -> &Value {
    assert_eq!(code, Some(0), "{result:#}");
    assert_eq!(result["status"], "ok", "{result:#}");
    &result["output"]
}

/// The message of a cell refused with kind `session`, after checking that
/// nothing ran.
fn refused(code: Option<i32>, result: &Value) -> String {
    assert_eq!(code, Some(1), "{result:#}");
    assert_eq!(result["error"]["kind"], "session", "{result:#}");
    assert_eq!(result["tool_calls"], 0, "{result:#}");
    result["error"]["message"].as_str().expect("a message").to_owned()
}

fn names_live_on_across_cells_in_separate_processes(python: &str) {
    let mut s = Session::new();
    let flags = ["--python", python];
    let (code, first) = s.cell(
        "import json\nx = await bump(n=1)\ndef twice(v):\n    return v * 2\nclass K:\n    pass\nprint('first')\nx",
        &flags,
    );
    assert_eq!(ok(code, &first), 10);
    assert_eq!(first["cell"], 1);
    assert_eq!(first["stdout"], "first\n");
    assert!(first["session_id"].as_str().is_some_and(|id| id.starts_with("sess_")));
    assert!(first["session_expires_at"].is_string(), "{first:#}");

    let (code, second) = s.cell(
        "print('second')\n[x, twice(3), json.dumps({'a': 1}), K.__name__]",
        &flags,
    );
    assert_eq!(*ok(code, &second), serde_json::json!([10, 6, "{\"a\": 1}", "K"]));
    assert_eq!(second["cell"], 2);
    assert_eq!(second["session_id"], first["session_id"]);
    assert_eq!(second["stdout"], "second\n", "earlier cells' output is not repeated");
    assert_eq!(second["tool_calls"], 0, "the trace is this cell's: {second:#}");
    assert_eq!(second["interpreter"], python);

    let (code, third) = s.cell("y = await bump(n=2)\nx + y", &flags);
    assert_eq!(ok(code, &third), 30);
    assert_eq!(third["call_trace"].as_array().map(Vec::len), Some(1));
    assert_eq!(s.runs("bump"), 2, "no tool of an earlier cell ran again");
}

#[test]
fn names_live_on_across_cells_in_separate_processes_on_monty() {
    names_live_on_across_cells_in_separate_processes("monty");
}

#[test]
fn names_live_on_across_cells_in_separate_processes_on_cpython() {
    names_live_on_across_cells_in_separate_processes("cpython");
}

fn a_raising_cell_keeps_the_names_it_bound_before_the_error(python: &str) {
    let mut s = Session::new();
    let flags = ["--python", python];
    let (code, first) = s.cell("a = await bump(n=1)\nraise ValueError('no')\nb = 2", &flags);
    assert_eq!(code, Some(1), "{first:#}");
    assert_eq!(first["error"]["kind"], "script");
    let (code, second) = s.cell("a", &flags);
    assert_eq!(ok(code, &second), 10);
    let (code, third) = s.cell("b", &flags);
    assert_eq!(code, Some(1), "{third:#}");
    assert_eq!(third["error"]["type"], "NameError", "{third:#}");
    assert_eq!(s.runs("bump"), 1);
}

#[test]
fn a_raising_cell_keeps_the_names_it_bound_before_the_error_on_monty() {
    a_raising_cell_keeps_the_names_it_bound_before_the_error("monty");
}

#[test]
fn a_raising_cell_keeps_the_names_it_bound_before_the_error_on_cpython() {
    a_raising_cell_keeps_the_names_it_bound_before_the_error("cpython");
}

fn randomness_drawn_in_a_cell_keeps_its_value(python: &str) {
    let mut s = Session::new();
    let flags = ["--python", python];
    let (code, first) = s.cell("import random\nr = random.random()\nr", &flags);
    let drawn = ok(code, &first).clone();
    assert!(drawn.is_f64());
    let (code, second) = s.cell("r", &flags);
    assert_eq!(*ok(code, &second), drawn);
}

#[test]
fn randomness_drawn_in_a_cell_keeps_its_value_on_monty() {
    randomness_drawn_in_a_cell_keeps_its_value("monty");
}

#[test]
fn randomness_drawn_in_a_cell_keeps_its_value_on_cpython() {
    randomness_drawn_in_a_cell_keeps_its_value("cpython");
}

#[test]
fn a_cell_that_needs_cpython_moves_the_session_and_keeps_every_name() {
    let mut s = Session::new();
    let (code, first) = s.cell("x = await bump(n=1)\ndef f(v):\n    return v + 1\nx", &[]);
    assert_eq!(ok(code, &first), 10);
    assert_eq!(first["interpreter"], "monty");
    let (code, second) = s.cell("import fractions\n[f(x), str(fractions.Fraction(1, 3))]", &[]);
    assert_eq!(*ok(code, &second), serde_json::json!([11, "1/3"]));
    assert_eq!(second["interpreter"], "cpython");
    let (code, third) = s.cell("f(x) + 1", &[]);
    assert_eq!(ok(code, &third), 12);
    assert_eq!(third["interpreter"], "cpython", "the move is for good");
    assert_eq!(s.runs("bump"), 1);

    let (code, out, err) = chainbox(&["sessions", "--state", &s.state, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let listed: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(listed[0]["session_id"], s.id());
    assert_eq!(listed[0]["interpreter"], "cpython");
    assert_eq!(listed[0]["cells"], 3);
    assert_eq!(listed[0]["state"], "live");
}

#[test]
fn an_unknown_session_is_an_error_of_kind_session_and_nothing_runs() {
    let s = Session::new();
    // The store exists (one session in it), the id does not.
    let mut other = Session::new();
    let _ = other.cell("1", &[]);
    let (code, out, err) = s.cell_in("sess_00000000000000000000000000000000", "await bump(n=1)", &[]);
    let result: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let message = refused(code, &result);
    assert!(message.contains("no such session"), "{message}");
    assert_eq!(s.runs("bump"), 0);
}

#[test]
fn an_expired_session_is_an_error_and_never_an_empty_session() {
    let mut s = Session::new();
    let policy = s.policy("session_expires_s = 1.0\n").display().to_string();
    let (code, first) = s.cell("x = 1", &["--policy", &policy]);
    ok(code, &first);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let (code, second) = s.cell("x", &["--policy", &policy]);
    let message = refused(code, &second);
    assert!(message.contains("expired"), "{message}");
    // And it stays ended, whatever the policy says now.
    let (code, third) = s.cell("x", &[]);
    let message = refused(code, &third);
    assert!(message.contains("ended") && message.contains("expired"), "{message}");
}

#[test]
fn a_full_session_refuses_the_cell_past_max_session_cells() {
    let mut s = Session::new();
    let policy = s.policy("max_session_cells = 2\n").display().to_string();
    for cell in ["x = 1", "x += 1"] {
        let (code, result) = s.cell(cell, &["--policy", &policy]);
        ok(code, &result);
    }
    let (code, third) = s.cell("x", &["--policy", &policy]);
    let message = refused(code, &third);
    assert!(
        message.contains("full") && message.contains("max_session_cells = 2"),
        "{message}"
    );
}

#[test]
fn a_removed_session_runs_no_more_cells() {
    let mut s = Session::new();
    let (code, first) = s.cell("x = 1", &[]);
    ok(code, &first);
    let (code, _, err) = chainbox(&["sessions", "rm", s.id(), "--state", &s.state]);
    assert_eq!(code, Some(0), "{err}");
    let (code, second) = s.cell("x", &[]);
    let message = refused(code, &second);
    assert!(message.contains("ended (removed)"), "{message}");
}

#[test]
fn a_suspended_cell_holds_the_session_until_it_is_decided_and_resumed() {
    let mut s = Session::new();
    let (code, first) = s.cell("x = await bump(n=1)\ny = await wire(amount=5)", &["--approve", "defer"]);
    assert_eq!(code, Some(3), "{first:#}");
    assert_eq!(first["status"], "suspended");
    assert_eq!(first["chain_id"], s.id());
    // A cell sent meanwhile is refused: the session waits on a decision.
    let (code, second) = s.cell("x", &[]);
    let message = refused(code, &second);
    assert!(message.contains("waits for a decision on call #2 (wire)"), "{message}");

    let (code, _, err) = chainbox(&["decide", s.id(), "approve", "--state", &s.state]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = chainbox(&["resume", s.id(), "--tools", &s.manifest, "--state", &s.state, "--json"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let resumed: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(resumed["cell"], 1);

    let (code, third) = s.cell("[x, y]", &[]);
    assert_eq!(*ok(code, &third), serde_json::json!([10, "sent 5"]));
    assert_eq!(third["cell"], 2, "the refused cell is no cell of the session");
    assert_eq!((s.runs("bump"), s.runs("wire")), (1, 1));
}

#[test]
fn cells_sent_at_once_all_run_one_at_a_time() {
    let mut s = Session::new();
    let (code, first) = s.cell("hits = []", &[]);
    ok(code, &first);
    let cells: Vec<_> = (0..3)
        .map(|i| {
            let script = s.path().join(format!("concurrent-{i}.py"));
            std::fs::write(&script, "hits.append(await bump(n=1))\nlen(hits)").expect("the cell");
            std::process::Command::new(env!("CARGO_BIN_EXE_chainbox"))
                .args(["run", &script.display().to_string(), "--tools", &s.manifest])
                .args(["--state", &s.state, "--session", s.id(), "--json"])
                .output_async()
        })
        .collect();
    let mut counts: Vec<u64> = cells
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().expect("the cell's process");
            let text = String::from_utf8_lossy(&out.stdout);
            let result: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert_eq!(result["status"], "ok", "{result:#}");
            result["output"].as_u64().expect("a count")
        })
        .collect();
    counts.sort_unstable();
    assert_eq!(counts, [1, 2, 3], "each cell saw the ones before it");
    let (code, last) = s.cell("len(hits)", &[]);
    assert_eq!(ok(code, &last), 3);
    assert_eq!(s.runs("bump"), 3);
}

/// Spawning a command with its output captured, to wait for later.
trait OutputAsync {
    fn output_async(&mut self) -> std::process::Child;
}

impl OutputAsync for std::process::Command {
    fn output_async(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("chainbox starts")
    }
}

/// A `run_chain` call's arguments: `code` as a cell of `session`.
fn cell_args(code: &str, session: &str) -> Value {
    serde_json::json!({"arguments": {"code": code, "session": session}})
}

#[tokio::test(flavor = "multi_thread")]
async fn two_serve_nodes_on_postgres_continue_one_session_and_its_suspended_cell() {
    use crate::durable_serve::{Fixture, answered, asks_for, call_with, completed, postgres};
    let Some((_pg, url)) = postgres("serve_sessions").await else {
        return;
    };
    let fx = Fixture::new();
    let (a, b) = (fx.node("a", &url, &[]), fx.node("b", &url, &[]));
    let call = |addr, code: &'static str, session: String| {
        tokio::task::spawn_blocking(move || call_with(addr, code, cell_args(code, &session)))
    };

    let first = call(a.addr, "x = await bump(n=1)\nx", "new".to_owned())
        .await
        .expect("a round");
    let first = completed(&first).clone();
    assert_eq!(first["output"], 10, "{first:#}");
    assert_eq!(first["cell"], 1);
    let id = first["session_id"].as_str().expect("a session id").to_owned();

    let second = call(b.addr, "y = x * 2\ny", id.clone()).await.expect("a round");
    let second = completed(&second).clone();
    assert_eq!(second["output"], 20, "{second:#}");
    assert_eq!(
        (second["cell"].clone(), second["session_id"].clone()),
        (2.into(), id.clone().into())
    );

    // A cell that needs approval asks for it on A; the retry on B completes it.
    let third = call(a.addr, "r = await wire(amount=5)\n[x, y, r]", id.clone())
        .await
        .expect("a round");
    let state = asks_for(&third, "wire");
    let done = tokio::task::spawn_blocking(move || call_with(b.addr, "", answered(&state, true)))
        .await
        .expect("a round");
    let done = completed(&done).clone();
    assert_eq!(done["output"], serde_json::json!([10, 20, "sent 5"]), "{done:#}");
    assert_eq!(done["cell"], 3);

    let fourth = call(a.addr, "[x, y, r]", id.clone()).await.expect("a round");
    assert_eq!(completed(&fourth)["output"], serde_json::json!([10, 20, "sent 5"]));
    assert_eq!((fx.runs("bump"), fx.runs("wire")), (1, 1), "no call ran twice");

    // An unknown session is a tool error of kind `session`, on either node.
    let unknown = call(b.addr, "x", "sess_0123".to_owned()).await.expect("a round");
    assert_eq!(unknown["result"]["isError"], true, "{unknown:#}");
    assert_eq!(unknown["result"]["structuredContent"]["error"]["kind"], "session");
}

/// The library: `Durable::run_cell` for one principal, and another
/// principal's id is no session of its own.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_its_principals_and_another_principal_is_told_no_such_session() {
    use chainbox::durable::NEW_SESSION;
    use chainbox::store::MemoryStore;
    use chainbox::{Approval, ChainPolicy, Principal};
    let store: std::sync::Arc<dyn chainbox::store::ChainStore> = std::sync::Arc::new(MemoryStore::new());
    let durable = crate::fixtures::engine().durable(store);
    let alice = durable
        .clone()
        .with_principal(Some(Principal::new("https://id.example", "alice", [])));
    let bob = durable
        .clone()
        .with_principal(Some(Principal::new("https://id.example", "bob", [])));
    let registry = crate::fixtures::registry();
    let (policy, approval) = (ChainPolicy::default(), Approval::deny_all());

    let first = alice
        .run_cell(NEW_SESSION, "secret = 42", &registry, &policy, &approval)
        .await
        .expect("a cell");
    let id = first.session.expect("a session").session_id;
    let theirs = bob
        .run_cell(&id, "secret", &registry, &policy, &approval)
        .await
        .expect("a refusal");
    let error = theirs.error.expect("an error");
    assert_eq!(error.kind, chainbox::ErrorKind::Session);
    assert!(error.message.contains("no such session"), "{}", error.message);
    assert!(bob.sessions().await.expect("a list").is_empty());
    assert!(bob.end_session(&id).await.is_err(), "bob cannot end it either");

    let again = alice
        .run_cell(&id, "secret", &registry, &policy, &approval)
        .await
        .expect("a cell");
    assert_eq!(again.output, 42);
    // The local user acts on every session.
    assert_eq!(durable.sessions().await.expect("a list").len(), 1);
}
