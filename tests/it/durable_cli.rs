//! Durable chains through the command line, on SQLite, across processes:
//! `run --approve defer --state sqlite:...` suspends (exit 3) and the
//! process is gone; `decide` and `resume` in new processes finish the chain
//! without running any tool twice, with the answer an uninterrupted run
//! gives. The tools are command tools that count their runs in files.
//! `approvals` names whom each waiting chain runs for.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// A manifest of `bump(n)` (safe; `bump(n, rows=R)` answers R rows
/// instead) and `wire(amount)` (critical), command tools appending a line
/// to `DIR/<tool>.runs` per run.
pub(crate) fn counting_manifest(dir: &Path) -> std::path::PathBuf {
    let tool = dir.join("count.py");
    std::fs::write(
        &tool,
        "import json, sys, os\nreq = json.load(sys.stdin)\nwith open(os.path.join(sys.argv[1], req['name'] + '.runs'), 'a') as f:\n    f.write('x\\n')\nargs = req['arguments']\nif 'rows' in args:\n    print(json.dumps({'rows': ['row %05d' % i for i in range(args['rows'])]}))\nelse:\n    print(json.dumps(10 * args['n'] if req['name'] == 'bump' else 'sent %d' % args['amount']))\n",
    )
    .expect("the tool");
    let manifest = dir.join("tools.toml");
    let (py, d) = (tool.display().to_string(), dir.display().to_string());
    std::fs::write(
        &manifest,
        format!(
            "[[tool]]\nname = \"bump\"\ndescription = \"counts\"\ncommand = [\"python3\", {py:?}, {d:?}]\n[tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties]\nn = {{ type = \"integer\" }}\n\n[[tool]]\nname = \"wire\"\ndescription = \"sends\"\nrisk = \"critical\"\ncommand = [\"python3\", {py:?}, {d:?}]\n[tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties]\namount = {{ type = \"integer\" }}\n"
        ),
    )
    .expect("the manifest");
    manifest
}

pub(crate) fn runs(dir: &Path, tool: &str) -> usize {
    std::fs::read_to_string(dir.join(format!("{tool}.runs"))).map_or(0, |text| text.lines().count())
}

pub(crate) fn chainbox(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chainbox"))
        .args(args)
        .output()
        .expect("chainbox runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const SCRIPT: &str = "a = await bump(n=1)\nr = await wire(amount=5)\nb = await bump(n=2)\n[a, r, b]";

#[test]
fn a_chain_suspended_by_one_process_is_decided_and_resumed_by_others_on_sqlite() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let manifest = counting_manifest(dir.path());
    let manifest = manifest.display().to_string();
    let script = dir.path().join("chain.py");
    std::fs::write(&script, SCRIPT).expect("the script");
    let script = script.display().to_string();
    let state = format!("sqlite:{}", dir.path().join("chains.db").display());

    // The uninterrupted answer.
    let (code, out, err) = chainbox(&["run", &script, "--tools", &manifest, "--approve", "auto", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let uninterrupted: Value = serde_json::from_str(&out).expect("JSON");
    std::fs::remove_file(dir.path().join("bump.runs")).expect("reset");
    std::fs::remove_file(dir.path().join("wire.runs")).expect("reset");

    // Suspends: exit 3, the process ends holding nothing.
    let (code, out, err) = chainbox(&[
        "run",
        &script,
        "--tools",
        &manifest,
        "--approve",
        "defer",
        "--state",
        &state,
        "--json",
    ]);
    assert_eq!(code, Some(3), "{out}\n{err}");
    let suspended: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(suspended["status"], "suspended");
    let chain_id = suspended["chain_id"].as_str().expect("a chain id").to_owned();
    assert_eq!(suspended["pending"]["tool"], "wire");
    assert_eq!((runs(dir.path(), "bump"), runs(dir.path(), "wire")), (1, 0));

    let (code, out, err) = chainbox(&["approvals", "--state", &state, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let listed: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(listed[0]["chain_id"], chain_id.as_str());
    assert_eq!(listed[0]["tool"], "wire");

    let (code, _, err) = chainbox(&["decide", &chain_id, "approve", "--state", &state]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = chainbox(&["resume", &chain_id, "--tools", &manifest, "--state", &state, "--json"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let resumed: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(resumed["output"], uninterrupted["output"]);
    assert_eq!(
        (runs(dir.path(), "bump"), runs(dir.path(), "wire")),
        (2, 1),
        "no tool ran twice"
    );
    let trace = resumed["call_trace"].as_array().expect("a trace");
    let tools: Vec<&str> = trace.iter().filter_map(|c| c["tool"].as_str()).collect();
    assert_eq!(tools, ["bump", "wire", "bump"], "the trace is whole");
    assert_eq!(trace[0]["replayed"], true);
}

/// Without `--artifacts`, a SQLite state keeps the chain's offloaded results
/// beside its database: a resume in another process, from another
/// directory, loads what the chain offloaded before it suspended.
#[test]
fn a_sqlite_state_keeps_offloaded_results_for_a_resume_in_another_process() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let manifest = counting_manifest(dir.path()).display().to_string();
    let script = dir.path().join("chain.py");
    std::fs::write(
        &script,
        "big = await bump(n=1, rows=500)\nr = await wire(amount=5)\n[r, len(load_artifact(big)['rows']), load_artifact(big)['rows'][499]]",
    )
    .expect("the script");
    let script = script.display().to_string();
    let state = format!("sqlite:{}", dir.path().join("chains.db").display());
    let (code, out, err) = chainbox(&[
        "run",
        &script,
        "--tools",
        &manifest,
        "--approve",
        "defer",
        "--state",
        &state,
        "--json",
    ]);
    assert_eq!(code, Some(3), "{out}\n{err}");
    let suspended: Value = serde_json::from_str(&out).expect("JSON");
    assert!(
        suspended["call_trace"][0]["artifact_ref"].is_string(),
        "the rows were offloaded: {suspended:#}"
    );
    let chain_id = suspended["chain_id"].as_str().expect("a chain id").to_owned();
    let (code, _, err) = chainbox(&["decide", &chain_id, "approve", "--state", &state]);
    assert_eq!(code, Some(0), "{err}");
    let elsewhere = tempfile::tempdir().expect("another directory");
    let out = Command::new(env!("CARGO_BIN_EXE_chainbox"))
        .current_dir(elsewhere.path())
        .args(["resume", &chain_id, "--tools", &manifest, "--state", &state, "--json"])
        .output()
        .expect("chainbox runs");
    let resumed: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(out.status.code(), Some(0), "{resumed:#}");
    assert_eq!(resumed["output"], serde_json::json!(["sent 5", 500, "row 00499"]));
    assert_eq!((runs(dir.path(), "bump"), runs(dir.path(), "wire")), (1, 1));
}

/// `approvals` shows whom each waiting chain runs for, and `--owner`
/// keeps one owner's chains (`local`: the local user's).
#[test]
fn approvals_shows_each_chains_owner_and_owner_keeps_one_owners_chains() {
    use chainbox::Owner;
    use chainbox::result::PendingCall;
    use chainbox::store::StoredChain;

    let dir = tempfile::tempdir().expect("a temp dir");
    let state = format!("sqlite:{}", dir.path().join("chains.db").display());
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let store = chainbox::store::connect(&state).await.expect("the store");
        for (chain_id, owner, requested_at) in [
            ("chain_alice", Some("alice"), "2026-12-06T10:00:01Z"),
            ("chain_local", None, "2026-12-06T10:00:02Z"),
        ] {
            let chain = StoredChain {
                chain_id: chain_id.to_owned(),
                script: SCRIPT.to_owned(),
                policy: serde_json::json!({}),
                seed: 1,
                created_at: "2026-12-06T10:00:00Z".to_owned(),
                owner: owner.map(|subject| Owner {
                    issuer: "https://id.example".to_owned(),
                    subject: subject.to_owned(),
                }),
            };
            store.create(&chain).await.expect("create");
            let call = PendingCall {
                seq: 2,
                tool: "wire".to_owned(),
                arguments: serde_json::Map::new(),
                risk: chainbox::ToolRisk::Critical,
                requested_at: requested_at.to_owned(),
                provenance: Vec::new(),
            };
            store.suspend(chain_id, &call).await.expect("suspend");
        }
    });

    let (code, out, err) = chainbox(&["approvals", "--state", &state]);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "a header and two chains:\n{out}");
    assert!(lines[0].starts_with("chain_id") && lines[0].contains("owner"), "{out}");
    assert!(
        lines[1].starts_with("chain_alice") && lines[1].contains("alice (https://id.example)"),
        "{out}"
    );
    assert!(
        lines[2].starts_with("chain_local") && lines[2].contains(" local "),
        "{out}"
    );

    let owners = |args: &[&str]| -> Vec<(String, Value)> {
        let mut all = vec!["approvals", "--state", state.as_str(), "--json"];
        all.extend_from_slice(args);
        let (code, out, err) = chainbox(&all);
        assert_eq!(code, Some(0), "{err}");
        let listed: Value = serde_json::from_str(&out).expect("JSON");
        listed
            .as_array()
            .expect("an array")
            .iter()
            .map(|c| {
                (
                    c["chain_id"].as_str().unwrap_or_default().to_owned(),
                    c["owner"].clone(),
                )
            })
            .collect()
    };
    let alice = serde_json::json!({"issuer": "https://id.example", "subject": "alice"});
    assert_eq!(
        owners(&[]),
        [
            ("chain_alice".to_owned(), alice.clone()),
            ("chain_local".to_owned(), Value::Null)
        ]
    );
    assert_eq!(owners(&["--owner", "alice"]), [("chain_alice".to_owned(), alice)]);
    assert_eq!(owners(&["--owner", "local"]), [("chain_local".to_owned(), Value::Null)]);
    assert_eq!(owners(&["--owner", "bob"]), []);
}
