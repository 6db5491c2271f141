//! `chainbox serve --state`: durable chains over MCP protocol 2026-07-28,
//! across two server processes (node A, node B) on one throwaway
//! PostgreSQL. A client gets input-required from one node and retries on
//! the other, which resumes the chain from the store; its `requestState`
//! is sealed, so a forged or altered one is refused with nothing run. The
//! tools are command tools that count their runs in files; the client is
//! raw stateless HTTP, so each round can go to either node.

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::auth::run_chain;
use super::mcp_serve::{START_TIMEOUT, jsonrpc_of, post, read_response, served_address};
use super::s3::S3Server;
use super::store::PgServer;

/// `bump(n)` (safe) then `wire(amount)` (critical: needs approval) then
/// `bump` again.
const SCRIPT: &str = "a = await bump(n=1)\nr = await wire(amount=5)\nb = await bump(n=2)\n[a, r, b]";

/// Longest a test waits for one round (a chain here takes well under a
/// second once the server is up).
const ROUND_TIMEOUT: Duration = Duration::from_secs(120);

/// A temporary folder: the manifest of `bump`, `wire`, `rows` and `nap`
/// (command tools appending a line to `<tool>.runs` per run; `wire` then
/// takes a second, so that two resumes at once overlap; `rows(n)` lists
/// `n` rows, a result to offload when large; `nap(s)` sleeps `s` seconds),
/// and the servers' logs.
pub(crate) struct Fixture {
    pub(crate) dir: tempfile::TempDir,
    manifest: PathBuf,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let tool = dir.path().join("count.py");
        std::fs::write(
            &tool,
            "import json, sys, os, time\nreq = json.load(sys.stdin)\nwith open(os.path.join(sys.argv[1], req['name'] + '.runs'), 'a') as f:\n    f.write('x\\n')\nif req['name'] == 'wire':\n    time.sleep(1)\nargs = req['arguments']\nif req['name'] == 'nap':\n    time.sleep(args['s'])\n    print('null')\n    sys.exit(0)\nif req['name'] == 'rows':\n    print(json.dumps(['row %d' % i for i in range(args['n'])]))\nelse:\n    print(json.dumps(10 * args['n'] if req['name'] == 'bump' else 'sent %d' % args['amount']))\n",
        )
        .expect("the tool");
        let manifest = dir.path().join("tools.toml");
        let (py, d) = (tool.display().to_string(), dir.path().display().to_string());
        std::fs::write(
            &manifest,
            format!(
                "[[tool]]\nname = \"bump\"\ndescription = \"counts\"\ncommand = [\"python3\", {py:?}, {d:?}]\n[tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties]\nn = {{ type = \"integer\" }}\n\n[[tool]]\nname = \"wire\"\ndescription = \"sends\"\nrisk = \"critical\"\ncommand = [\"python3\", {py:?}, {d:?}]\n[tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties]\namount = {{ type = \"integer\" }}\n\n[[tool]]\nname = \"rows\"\ndescription = \"lists rows\"\ncommand = [\"python3\", {py:?}, {d:?}]\n[tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties]\nn = {{ type = \"integer\" }}\n\n[[tool]]\nname = \"nap\"\ndescription = \"sleeps\"\ncommand = [\"python3\", {py:?}, {d:?}]\n[tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties]\ns = {{ type = \"number\" }}\n"
            ),
        )
        .expect("the manifest");
        Fixture { dir, manifest }
    }

    /// How many times `tool` ran.
    pub(crate) fn runs(&self, tool: &str) -> usize {
        std::fs::read_to_string(self.dir.path().join(format!("{tool}.runs"))).map_or(0, |text| text.lines().count())
    }

    /// The answer of an uninterrupted run (`chainbox run --approve auto`),
    /// its tools' runs then forgotten.
    fn uninterrupted(&self, code: &str) -> Value {
        let script = self.dir.path().join("chain.py");
        std::fs::write(&script, code).expect("the script");
        let out = Command::new(env!("CARGO_BIN_EXE_chainbox"))
            .arg("run")
            .arg(&script)
            .arg("--tools")
            .arg(&self.manifest)
            .args(["--approve", "auto", "--json"])
            .output()
            .expect("chainbox run");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        for tool in ["bump", "wire", "rows"] {
            let _ = std::fs::remove_file(self.dir.path().join(format!("{tool}.runs")));
        }
        let result: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        result["output"].clone()
    }

    /// Starts `chainbox serve --http 127.0.0.1:0 --state URL` as `name`
    /// (its stderr in `<name>.log`), with `env` set.
    pub(crate) fn node(&self, name: &str, state: &str, env: &[(&str, &str)]) -> Node {
        self.node_with(name, state, env, &[])
    }

    /// [`Self::node`] with `extra` arguments.
    fn node_with(&self, name: &str, state: &str, env: &[(&str, &str)], extra: &[&str]) -> Node {
        let log = std::fs::File::create(self.dir.path().join(format!("{name}.log"))).expect("the log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_chainbox"));
        command
            .arg("serve")
            .arg("--tools")
            .arg(&self.manifest)
            .args(["--http", "127.0.0.1:0", "--state", state])
            .args(extra)
            .env_remove("CHAINBOX_STATE_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        for (key, value) in env {
            command.env(key, value);
        }
        let child = command.spawn().expect("spawning chainbox serve");
        let addr = served_address(&self.dir.path().join(format!("{name}.log")), name);
        Node { child, addr }
    }
}

/// A `chainbox serve` process, killed when dropped.
pub(crate) struct Node {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One stateless `tools/call` of `run_chain` (protocol 2026-07-28, a client
/// that declared form elicitation) to `addr`, with `extra` params (a
/// `requestState`, `inputResponses`); the JSON-RPC response message.
fn call(addr: SocketAddr, extra: Value) -> Value {
    call_with(addr, SCRIPT, extra)
}

/// [`call`] of another script.
pub(crate) fn call_with(addr: SocketAddr, code: &str, extra: Value) -> Value {
    let body = run_chain(code, extra).to_string();
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(ROUND_TIMEOUT)).expect("timeout");
    post(&mut stream, addr, body.as_bytes());
    let (_, body) = read_response(&mut stream);
    jsonrpc_of(&body)
}

/// `call` on a blocking thread, for an async test.
async fn call_async(addr: SocketAddr, extra: Value) -> Value {
    tokio::task::spawn_blocking(move || call(addr, extra))
        .await
        .expect("the call's thread")
}

/// The `requestState` of an input-required answer asking to approve
/// `tool`; panics on anything else.
pub(crate) fn asks_for(message: &Value, tool: &str) -> String {
    let result = &message["result"];
    assert_eq!(result["resultType"], "input_required", "{message:#}");
    let form = &result["inputRequests"]["approval"];
    let text = form["params"]["message"].as_str().unwrap_or_default();
    assert!(text.contains(&format!("`{tool}`")), "{message:#}");
    result["requestState"].as_str().expect("a requestState").to_owned()
}

/// The retry params: `state`, and the user's approval (or refusal).
pub(crate) fn answered(state: &str, approve: bool) -> Value {
    json!({
        "requestState": state,
        "inputResponses": {"approval": {"action": "accept", "content": {"approve": approve}}},
    })
}

/// The chain result of a completed answer; panics on anything else.
pub(crate) fn completed(message: &Value) -> &Value {
    let result = &message["result"];
    assert_ne!(result["resultType"], "input_required", "{message:#}");
    assert_ne!(result["isError"], true, "{message:#}");
    &result["structuredContent"]
}

/// A fresh PostgreSQL database's URL, or `None` where PostgreSQL is
/// missing outside CI (`PgServer::start` says so loudly).
pub(crate) async fn postgres(name: &str) -> Option<(PgServer, String)> {
    let server = PgServer::start()?;
    let url = server.create_database(name).await;
    Some((server, url))
}

#[tokio::test(flavor = "multi_thread")]
async fn input_required_on_node_a_is_resumed_by_a_retry_on_node_b() {
    let Some((_pg, url)) = postgres("serve_two_nodes").await else {
        return;
    };
    let fx = Fixture::new();
    let uninterrupted = fx.uninterrupted(SCRIPT);
    let (a, b) = (fx.node("a", &url, &[]), fx.node("b", &url, &[]));

    let started = Instant::now();
    let first = call_async(a.addr, json!({})).await;
    let asked_in = started.elapsed();
    let state = asks_for(&first, "wire");
    assert_eq!((fx.runs("bump"), fx.runs("wire")), (1, 0));

    // Without the answer, B asks again for the same call; nothing runs.
    let again = call_async(b.addr, json!({"requestState": state})).await;
    asks_for(&again, "wire");
    assert_eq!((fx.runs("bump"), fx.runs("wire")), (1, 0));

    let started = Instant::now();
    let done = call_async(b.addr, answered(&state, true)).await;
    let resumed_in = started.elapsed();
    eprintln!("input-required from A in {asked_in:?}; resumed to the end on B in {resumed_in:?} (wire sleeps 1 s)");
    let result = completed(&done);
    assert_eq!(result["output"], uninterrupted, "{done:#}");
    assert_eq!(
        (fx.runs("bump"), fx.runs("wire")),
        (2, 1),
        "the safe call before the approval ran once in total"
    );
    let trace = result["call_trace"].as_array().expect("a trace");
    let tools: Vec<&str> = trace.iter().filter_map(|c| c["tool"].as_str()).collect();
    assert_eq!(tools, ["bump", "wire", "bump"], "the trace is whole");
    assert_eq!(trace[0]["replayed"], true, "{trace:#?}");
    assert_ne!(trace[2]["replayed"], true, "{trace:#?}");

    // The same state again, on A, after the chain finished: its result,
    // nothing run again (the first decision stands, even against a refusal).
    let repeated = call_async(a.addr, answered(&state, false)).await;
    assert_eq!(completed(&repeated)["output"], uninterrupted, "{repeated:#}");
    assert_eq!((fx.runs("bump"), fx.runs("wire")), (2, 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_result_offloaded_to_s3_on_node_a_is_loaded_on_node_b_after_the_approval() {
    let Some((_pg, url)) = postgres("serve_s3").await else {
        return;
    };
    let Some(s3) = S3Server::start() else { return };
    let fx = Fixture::new();
    // `rows(n=500)` is ~5 KB of JSON, over max_inline_result_bytes (4096):
    // offloaded on A, its handle replayed on B and loaded there.
    let code =
        "big = await rows(n=500)\nr = await wire(amount=5)\n[r, len(load_artifact(big)), load_artifact(big)[499]]";
    let uninterrupted = fx.uninterrupted(code);
    let env = s3.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let artifacts = s3.url("serve-two-nodes");
    let a = fx.node_with("a", &url, &env, &["--artifacts", &artifacts]);
    let b = fx.node_with("b", &url, &env, &["--artifacts", &artifacts]);

    let first = tokio::task::spawn_blocking(move || call_with(a.addr, code, json!({})))
        .await
        .expect("call");
    let state = asks_for(&first, "wire");
    assert_eq!(fx.runs("rows"), 1);
    let b_addr = b.addr;
    let done = tokio::task::spawn_blocking(move || call_with(b_addr, code, answered(&state, true)))
        .await
        .expect("call");
    let result = completed(&done);
    assert_eq!(result["output"], uninterrupted, "{done:#}");
    assert_eq!(result["output"], json!(["sent 5", 500, "row 499"]));
    assert_eq!((fx.runs("rows"), fx.runs("wire")), (1, 1), "nothing ran twice");
    let offloaded = &result["call_trace"][0];
    assert_eq!(offloaded["replayed"], true, "{offloaded:#}");
    assert!(
        offloaded["artifact_ref"]
            .as_str()
            .is_some_and(|r| r.starts_with("sha256:")),
        "offloaded on A: {offloaded:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stale_retry_after_the_chain_went_on_asks_for_its_current_call() {
    let Some((_pg, url)) = postgres("serve_stale").await else {
        return;
    };
    let fx = Fixture::new();
    let (a, b) = (fx.node("a", &url, &[]), fx.node("b", &url, &[]));
    let code = "r1 = await wire(amount=1)\nr2 = await wire(amount=2)\n[r1, r2]";
    let asked = |message: &Value| {
        let state = asks_for(message, "wire");
        let text = message["result"]["inputRequests"]["approval"]["params"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        (state, text)
    };
    let (first, text) = asked(
        &tokio::task::spawn_blocking(move || call_with(a.addr, code, json!({})))
            .await
            .expect("call"),
    );
    assert!(text.contains("\"amount\": 1"), "{text}");
    let b_addr = b.addr;
    let retry = answered(&first, true);
    let (second, text) = asked(
        &tokio::task::spawn_blocking(move || call_with(b_addr, code, retry))
            .await
            .expect("call"),
    );
    assert!(text.contains("\"amount\": 2"), "{text}");
    assert_ne!(first, second);
    assert_eq!(fx.runs("wire"), 1);

    // The first state again, refused this time: the chain went on, so the
    // answer is the question of its current call, and nothing runs.
    let stale = answered(&first, false);
    let (_, text) = asked(
        &tokio::task::spawn_blocking(move || call_with(a.addr, code, stale))
            .await
            .expect("call"),
    );
    assert!(text.contains("\"amount\": 2"), "{text}");
    assert_eq!(fx.runs("wire"), 1);

    let done = call_with(b.addr, code, answered(&second, true));
    assert_eq!(completed(&done)["output"], json!(["sent 1", "sent 2"]), "{done:#}");
    assert_eq!(fx.runs("wire"), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_concurrent_retries_on_two_nodes_run_the_approved_call_once() {
    let Some((_pg, url)) = postgres("serve_concurrent").await else {
        return;
    };
    let fx = Fixture::new();
    let (a, b) = (fx.node("a", &url, &[]), fx.node("b", &url, &[]));
    let state = asks_for(&call_async(a.addr, json!({})).await, "wire");

    let (on_a, on_b) = tokio::join!(
        call_async(a.addr, answered(&state, true)),
        call_async(b.addr, answered(&state, true)),
    );
    assert_eq!(fx.runs("wire"), 1, "the approved call ran once");
    assert_eq!(fx.runs("bump"), 2);
    // The loser waited for the winner's result.
    assert_eq!(completed(&on_a)["output"], json!([10, "sent 5", 20]), "{on_a:#}");
    assert_eq!(completed(&on_b)["output"], completed(&on_a)["output"], "{on_b:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_altered_or_foreign_request_state_is_refused_with_nothing_run() {
    let Some((_pg, url)) = postgres("serve_sealed").await else {
        return;
    };
    let fx = Fixture::new();
    let a = fx.node("a", &url, &[]);
    // C shares the store but seals with a key of its own.
    let c = fx.node("c", &url, &[("CHAINBOX_STATE_KEY", &"ab".repeat(32))]);
    let state = asks_for(&call_async(a.addr, json!({})).await, "wire");

    let refused = |message: &Value, what: &str| {
        assert_eq!(message["error"]["code"], -32602, "{what}: {message:#}");
        let text = message["error"]["message"].as_str().unwrap_or_default();
        assert!(text.contains("requestState refused"), "{what}: {message:#}");
    };
    // `cb1.<payload>.<tag>`: the genuine payload under a made-up tag.
    let (signed, _) = state.rsplit_once('.').expect("a sealed state");
    let forged = format!("{signed}.{}", URL_SAFE_NO_PAD.encode([0u8; 32]));
    refused(&call_async(a.addr, answered(&forged, true)).await, "forged");
    refused(
        &call_async(a.addr, answered("not a state at all", true)).await,
        "garbage",
    );
    // One byte of the payload flipped: the call number 2 becomes 3.
    let payload = signed.strip_prefix("cb1.").expect("the version");
    let mut json = URL_SAFE_NO_PAD.decode(payload).expect("base64url");
    let at = json.windows(7).position(|w| w == b"\"seq\":2").expect("the seq") + 6;
    json[at] = b'3';
    let altered = format!(
        "cb1.{}.{}",
        URL_SAFE_NO_PAD.encode(&json),
        state.rsplit_once('.').expect("tag").1
    );
    refused(&call_async(a.addr, answered(&altered, true)).await, "altered");
    refused(&call_async(c.addr, answered(&state, true)).await, "another key");
    assert_eq!(fx.runs("wire"), 0, "nothing ran");

    // The genuine state still works.
    let done = call_async(a.addr, answered(&state, true)).await;
    assert_eq!(completed(&done)["output"], json!([10, "sent 5", 20]), "{done:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_on_node_b_finishes_the_chain_after_node_a_is_killed() {
    let Some((_pg, url)) = postgres("serve_killed").await else {
        return;
    };
    let fx = Fixture::new();
    let mut a = fx.node("a", &url, &[]);
    let b = fx.node("b", &url, &[]);
    let state = asks_for(&call_async(a.addr, json!({})).await, "wire");
    a.child.kill().expect("SIGKILL node A");
    a.child.wait().expect("node A ends");

    let done = call_async(b.addr, answered(&state, true)).await;
    assert_eq!(completed(&done)["output"], json!([10, "sent 5", 20]), "{done:#}");
    assert_eq!((fx.runs("bump"), fx.runs("wire")), (2, 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_denies_the_call_and_the_chain_goes_on() {
    let Some((_pg, url)) = postgres("serve_refused").await else {
        return;
    };
    let fx = Fixture::new();
    let (a, b) = (fx.node("a", &url, &[]), fx.node("b", &url, &[]));
    let state = asks_for(&call_async(a.addr, json!({})).await, "wire");
    let done = call_async(b.addr, answered(&state, false)).await;
    let result = &done["result"]["structuredContent"];
    assert_eq!(result["call_trace"][1]["status"], "denied", "{done:#}");
    assert_eq!(fx.runs("wire"), 0);
}

/// A client of protocol 2025-11-25 whose user approves every form it is
/// sent by elicitation.
struct Elicited;

impl rmcp::ClientHandler for Elicited {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder().enable_elicitation().build(),
            rmcp::model::Implementation::new("elicited", "0"),
        )
        .with_protocol_version(rmcp::model::ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::service::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::model::ErrorData> {
        Ok(rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
            .with_content(json!({"approve": true})))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_elicitation_client_approves_in_process_and_its_chain_is_journaled() {
    use rmcp::ServiceExt;
    let fx = Fixture::new();
    let state = format!("sqlite:{}", fx.dir.path().join("chains.db").display());
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_chainbox"));
    command
        .arg("serve")
        .arg("--tools")
        .arg(&fx.manifest)
        .args(["--state", &state])
        .kill_on_drop(true);
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawning chainbox serve");
    let client = tokio::time::timeout(START_TIMEOUT, Elicited.serve(transport))
        .await
        .expect("chainbox serve answers in time")
        .expect("the MCP session starts");
    let mut arguments = serde_json::Map::new();
    arguments.insert("code".into(), SCRIPT.into());
    let result = client
        .call_tool(rmcp::model::CallToolRequestParams::new("run_chain").with_arguments(arguments))
        .await
        .expect("tools/call");
    let chain = result.structured_content.expect("structured content");
    assert_eq!(chain["output"], json!([10, "sent 5", 20]), "{chain:#}");
    let chain_id = chain["chain_id"].as_str().expect("a durable chain's id");
    client.cancel().await.expect("close");

    let store = chainbox::store::connect(&state).await.expect("the store");
    let journal = store.journal(chain_id).await.expect("its journal");
    let tools: Vec<&str> = journal.iter().map(|e| e.tool.as_str()).collect();
    assert_eq!(tools, ["bump", "wire", "bump"]);
    assert!(
        matches!(
            store.claim(chain_id, "test", std::time::Duration::from_secs(60)).await,
            Ok(chainbox::store::Claim::Finished(_))
        ),
        "the chain is stored finished"
    );
    assert_eq!((fx.runs("bump"), fx.runs("wire")), (2, 1));
}

#[test]
fn serve_refuses_a_malformed_state_key_naming_the_variable() {
    let fx = Fixture::new();
    let state = format!("sqlite:{}", fx.dir.path().join("chains.db").display());
    let out = Command::new(env!("CARGO_BIN_EXE_chainbox"))
        .arg("serve")
        .arg("--tools")
        .arg(&fx.manifest)
        .args(["--http", "127.0.0.1:0", "--state", &state])
        .env("CHAINBOX_STATE_KEY", "too short")
        .stdin(Stdio::null())
        .output()
        .expect("chainbox serve");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("CHAINBOX_STATE_KEY"), "{err}");
    assert!(!err.contains("too short"), "the key's text is never shown: {err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decision_meant_for_one_call_is_never_recorded_for_a_later_one() {
    use std::sync::Arc;

    use chainbox::durable::{Durable, DurableError};
    use chainbox::store::{ChainStore, MemoryStore, StoreError};
    use chainbox::{Approval, ApprovalDecision, ChainPolicy, ChainStatus, ToolRegistry, ToolRisk};

    // A retry of an old state (call #1) reaching a chain that went on to
    // call #2: serve decides with the state's call number.
    let wire = crate::fixtures::tool("wire", &["amount"], |_| Ok(json!("sent"))).with_risk(ToolRisk::Critical);
    let registry = ToolRegistry::from_local([Arc::new(wire) as Arc<dyn chainbox::tools::Tool>]).expect("registry");
    let store: Arc<dyn ChainStore> = Arc::new(MemoryStore::new());
    let durable = Durable::new(crate::fixtures::engine().clone(), store.clone());
    let script = "await wire(amount=1)\nawait wire(amount=2)\n'done'";
    let policy = ChainPolicy::default();
    let first = durable
        .run(script, &registry, &policy, &Approval::defer())
        .await
        .expect("runs");
    let chain_id = first.chain_id.expect("a chain id");
    assert_eq!(first.pending.expect("pending").seq, 1);
    durable
        .decide_call(&chain_id, Some(1), ApprovalDecision::Approved, "test")
        .await
        .expect("decides #1");
    let second = durable
        .resume(&chain_id, &registry, &Approval::defer())
        .await
        .expect("resumes");
    assert_eq!(second.status, ChainStatus::Suspended);
    assert_eq!(second.pending.expect("pending").seq, 2);

    let late = durable
        .decide_call(&chain_id, Some(1), ApprovalDecision::Denied { reason: None }, "test")
        .await;
    assert!(
        matches!(
            late,
            Err(DurableError::Store(StoreError::NotPending { seq: Some(1), .. }))
        ),
        "{late:?}"
    );
    let pending = store.pending().await.expect("pending");
    assert_eq!(pending.len(), 1, "call #2 still waits: {pending:?}");
    assert_eq!(pending[0].call.seq, 2);
    assert_eq!(store.decisions(&chain_id).await.expect("decisions").len(), 1);
}
