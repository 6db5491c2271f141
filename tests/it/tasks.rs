//! MCP tasks (the `io.modelcontextprotocol/tasks` extension of protocol
//! 2026-07-28) on two `chainbox serve --state` nodes on one throwaway
//! PostgreSQL, through raw stateless HTTP JSON-RPC (no client speaks the
//! extension yet): a client that declares it gets a task for its
//! `run_chain`, polls it on the other node, answers its input request
//! there, cancels it there, and a task whose node is killed is finished by
//! the other one from its journal; a session's cells run as tasks the same
//! way, and a cancelled one is dropped while its session lives on.

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::durable_serve::{Fixture, postgres};
use crate::mcp_serve::{jsonrpc_of, post, read_response};

/// The request `_meta` of a client that declared form elicitation and the
/// tasks extension.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        },
    })
}

/// One stateless JSON-RPC request to `addr`: its response message.
fn rpc(addr: SocketAddr, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    post(&mut stream, addr, body.as_bytes());
    let (_, body) = read_response(&mut stream);
    jsonrpc_of(&body)
}

/// [`rpc`] on a blocking thread.
async fn rpc_async(addr: SocketAddr, method: &'static str, params: Value) -> Value {
    tokio::task::spawn_blocking(move || rpc(addr, method, params))
        .await
        .expect("the request's thread")
}

/// Starts `code` as a task on `addr`: its id, after checking the task's
/// fields.
async fn start(addr: SocketAddr, code: &str) -> String {
    start_with(addr, json!({"code": code})).await
}

/// [`start`] with these `run_chain` arguments.
async fn start_with(addr: SocketAddr, arguments: Value) -> String {
    let created = rpc_async(addr, "tools/call", json!({"name": "run_chain", "arguments": arguments})).await;
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created:#}");
    assert_eq!(task["status"], "working", "{created:#}");
    for field in ["ttlMs", "pollIntervalMs"] {
        assert!(task[field].as_u64().is_some_and(|ms| ms > 0), "{field}: {created:#}");
    }
    for field in ["createdAt", "lastUpdatedAt"] {
        assert!(task[field].is_string(), "{field}: {created:#}");
    }
    task["taskId"].as_str().expect("a taskId").to_owned()
}

/// Polls `tasks/get` on `addr` until the task's status is `want` (or the
/// deadline passes): the task.
async fn poll(addr: SocketAddr, task_id: &str, want: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let got = rpc_async(addr, "tasks/get", json!({"taskId": task_id})).await;
        let status = got["result"]["status"].as_str().unwrap_or_default().to_owned();
        if status == want {
            return got["result"].clone();
        }
        assert!(
            !["completed", "failed", "cancelled"].contains(&status.as_str()) && got.get("error").is_none(),
            "the task ended as {status}, not {want}: {got:#}"
        );
        assert!(Instant::now() < deadline, "still {status} after {within:?}: {got:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_started_on_node_a_is_polled_to_its_result_on_node_b() {
    let Some((_pg, url)) = postgres("tasks_poll").await else {
        return;
    };
    let fx = Fixture::new();
    let (a, b) = (fx.node("a", &url, &[]), fx.node("b", &url, &[]));
    let task_id = start(a.addr, "x = await bump(n=1)\ny = await bump(n=2)\n[x, y]").await;
    let done = poll(b.addr, &task_id, "completed", Duration::from_secs(60)).await;
    assert_eq!(done["taskId"], task_id.as_str());
    assert_eq!(
        done["result"]["structuredContent"]["output"],
        json!([10, 20]),
        "{done:#}"
    );
    assert_ne!(done["result"]["isError"], true);
    assert_eq!(fx.runs("bump"), 2);

    // A failed chain is still a completed task, its result an error.
    let task_id = start(b.addr, "1 / 0").await;
    let done = poll(a.addr, &task_id, "completed", Duration::from_secs(60)).await;
    assert_eq!(done["result"]["isError"], true, "{done:#}");
    assert_eq!(
        done["result"]["structuredContent"]["error"]["type"],
        "ZeroDivisionError"
    );

    let unknown = rpc_async(a.addr, "tasks/get", json!({"taskId": "chain_nope"})).await;
    assert!(
        unknown["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no such task")),
        "{unknown:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_waiting_for_approval_is_answered_with_tasks_update_on_the_other_node() {
    let Some((_pg, url)) = postgres("tasks_update").await else {
        return;
    };
    let fx = Fixture::new();
    let (a, b) = (fx.node("a", &url, &[]), fx.node("b", &url, &[]));
    let code = "a = await bump(n=1)\nr = await wire(amount=5)\nb = await bump(n=2)\n[a, r, b]";
    let task_id = start(a.addr, code).await;
    let waiting = poll(b.addr, &task_id, "input_required", Duration::from_secs(60)).await;
    let form = &waiting["inputRequests"]["approval"];
    assert!(
        form["params"]["message"].as_str().is_some_and(|m| m.contains("`wire`")),
        "{waiting:#}"
    );
    assert_eq!((fx.runs("bump"), fx.runs("wire")), (1, 0));

    let answer = json!({"approval": {"action": "accept", "content": {"approve": true}}});
    let ack = rpc_async(
        b.addr,
        "tasks/update",
        json!({"taskId": task_id, "inputResponses": answer}),
    )
    .await;
    assert!(ack.get("error").is_none(), "{ack:#}");
    let done = poll(a.addr, &task_id, "completed", Duration::from_secs(60)).await;
    assert_eq!(
        done["result"]["structuredContent"]["output"],
        json!([10, "sent 5", 20]),
        "{done:#}"
    );
    assert_eq!((fx.runs("bump"), fx.runs("wire")), (2, 1), "each call ran once");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_cancelled_on_node_b_stops_its_chain_on_node_a() {
    let Some((_pg, url)) = postgres("tasks_cancel").await else {
        return;
    };
    let fx = Fixture::new();
    let (a, b) = (fx.node("a", &url, &[]), fx.node("b", &url, &[]));
    let task_id = start(a.addr, "await nap(s=30)\nawait bump(n=1)").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while fx.runs("nap") == 0 {
        assert!(Instant::now() < deadline, "nap never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let asked = Instant::now();
    let ack = rpc_async(b.addr, "tasks/cancel", json!({"taskId": task_id})).await;
    assert!(ack.get("error").is_none(), "{ack:#}");
    poll(b.addr, &task_id, "cancelled", Duration::from_secs(20)).await;
    assert!(asked.elapsed() < Duration::from_secs(25), "the nap was cut short");
    assert_eq!(fx.runs("bump"), 0, "nothing after the cancellation ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_whose_node_is_killed_is_finished_by_the_other_node() {
    let Some((_pg, url)) = postgres("tasks_killed").await else {
        return;
    };
    let fx = Fixture::new();
    let mut a = fx.node("a", &url, &[]);
    let b = fx.node("b", &url, &[]);
    let task_id = start(a.addr, "x = await bump(n=1)\nawait nap(s=3)\nx + await bump(n=2)").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while fx.runs("nap") == 0 {
        assert!(Instant::now() < deadline, "nap never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    a.child.kill().expect("SIGKILL node A");
    a.child.wait().expect("node A ends");
    // Within the claim's lease (30 s) and a run, B takes it over.
    let done = poll(b.addr, &task_id, "completed", Duration::from_secs(90)).await;
    assert_eq!(done["result"]["structuredContent"]["output"], 30, "{done:#}");
    assert_eq!(
        fx.runs("bump"),
        2,
        "the call journaled before the kill did not run again"
    );
}

/// Runs `code` as a task of `session` started on `on` and polled to its
/// end on `polled`: the completed task's tool result.
async fn cell_task(on: SocketAddr, polled: SocketAddr, session: &str, code: &str) -> Value {
    let task_id = start_with(on, json!({"code": code, "session": session})).await;
    assert!(task_id.starts_with("task_"), "{task_id}");
    let done = poll(polled, &task_id, "completed", Duration::from_secs(60)).await;
    done["result"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sessions_cells_run_as_tasks_on_either_node_and_keep_their_names() {
    let Some((_pg, url)) = postgres("tasks_session").await else {
        return;
    };
    let fx = Fixture::new();
    let (a, b) = (fx.node("a", &url, &[]), fx.node("b", &url, &[]));
    let first = cell_task(
        a.addr,
        b.addr,
        "new",
        "x = await bump(n=1)
x",
    )
    .await;
    assert_eq!(first["structuredContent"]["output"], 10, "{first:#}");
    assert_eq!(first["structuredContent"]["cell"], 1);
    let session = first["structuredContent"]["session_id"]
        .as_str()
        .expect("a session")
        .to_owned();

    // A cell that waits for approval, answered on the other node.
    let task_id = start_with(
        b.addr,
        json!({"code": "r = await wire(amount=x)
[x, r]", "session": session}),
    )
    .await;
    poll(a.addr, &task_id, "input_required", Duration::from_secs(60)).await;
    let answer = json!({"approval": {"action": "accept", "content": {"approve": true}}});
    let ack = rpc_async(
        a.addr,
        "tasks/update",
        json!({"taskId": task_id, "inputResponses": answer}),
    )
    .await;
    assert!(ack.get("error").is_none(), "{ack:#}");
    let done = poll(b.addr, &task_id, "completed", Duration::from_secs(60)).await;
    assert_eq!(
        done["result"]["structuredContent"]["output"],
        json!([10, "sent 10"]),
        "{done:#}"
    );
    assert_eq!(done["result"]["structuredContent"]["cell"], 2);

    let third = cell_task(b.addr, a.addr, &session, "[x, r, await bump(n=3)]").await;
    assert_eq!(
        third["structuredContent"]["output"],
        json!([10, "sent 10", 30]),
        "{third:#}"
    );
    assert_eq!((fx.runs("bump"), fx.runs("wire")), (2, 1), "each call ran once");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_cell_task_is_dropped_and_its_session_lives_on() {
    let Some((_pg, url)) = postgres("tasks_session_cancel").await else {
        return;
    };
    let fx = Fixture::new();
    let (a, b) = (fx.node("a", &url, &[]), fx.node("b", &url, &[]));
    let first = cell_task(a.addr, a.addr, "new", "x = 1").await;
    let session = first["structuredContent"]["session_id"]
        .as_str()
        .expect("a session")
        .to_owned();

    // Cancelled while it waits for approval: no node runs it.
    let task_id = start_with(
        a.addr,
        json!({"code": "x = 2
await wire(amount=1)", "session": session}),
    )
    .await;
    poll(b.addr, &task_id, "input_required", Duration::from_secs(60)).await;
    let ack = rpc_async(b.addr, "tasks/cancel", json!({"taskId": task_id})).await;
    assert!(ack.get("error").is_none(), "{ack:#}");
    poll(a.addr, &task_id, "cancelled", Duration::from_secs(20)).await;

    // Cancelled while it runs, on the other node.
    let task_id = start_with(
        a.addr,
        json!({"code": "x = 3
await nap(s=30)", "session": session}),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while fx.runs("nap") == 0 {
        assert!(Instant::now() < deadline, "nap never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ack = rpc_async(b.addr, "tasks/cancel", json!({"taskId": task_id})).await;
    assert!(ack.get("error").is_none(), "{ack:#}");
    poll(b.addr, &task_id, "cancelled", Duration::from_secs(20)).await;

    // Neither cell is kept; the session runs its next cell, and a call
    // numbered past the denial of the cancelled one waits for its own
    // approval (it does not take that denial).
    let next = cell_task(b.addr, a.addr, &session, "x").await;
    assert_eq!(next["structuredContent"]["output"], 1, "{next:#}");
    assert_eq!(next["structuredContent"]["cell"], 4);
    let task_id = start_with(a.addr, json!({"code": "await wire(amount=2)", "session": session})).await;
    poll(b.addr, &task_id, "input_required", Duration::from_secs(60)).await;
    assert_eq!(fx.runs("wire"), 0);
}

/// rmcp's own client, which speaks the extension: it declares it at
/// initialisation (a stateful HTTP session), gets a task for its
/// `tools/call` and polls it with `tasks/get` to its result.
#[tokio::test(flavor = "multi_thread")]
async fn rmcps_client_gets_a_task_and_polls_it_to_its_result() {
    use rmcp::ServiceExt;
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, GetTaskParams, Implementation,
        TaskPayload,
    };
    use rmcp::transport::StreamableHttpClientTransport;
    let fx = Fixture::new();
    let state = format!("sqlite:{}", fx.dir.path().join("chains.db").display());
    let node = fx.node("a", &state, &[]);
    let transport = StreamableHttpClientTransport::from_uri(format!("http://{}/mcp", node.addr));
    let client = ClientConfig::new(
        ClientCapabilities::builder().enable_tasks().build(),
        Implementation::new("chainbox-tests", "0"),
    )
    .serve(transport)
    .await
    .expect("the MCP session starts");
    let mut arguments = serde_json::Map::new();
    arguments.insert("code".into(), "x = await bump(n=4)\nx + 2".into());
    let answered = client
        .call_tool_once(CallToolRequestParams::new("run_chain").with_arguments(arguments))
        .await
        .expect("tools/call");
    let CallToolResponse::Task(created) = answered else {
        panic!("not a task: {answered:?}");
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let result = loop {
        let got = client
            .get_task(GetTaskParams::new(created.task.task_id.clone()))
            .await
            .expect("tasks/get");
        match got.task.payload {
            TaskPayload::Completed { result } => break result,
            TaskPayload::Working => {}
            other => panic!("the task is {other:?}"),
        }
        assert!(Instant::now() < deadline, "still working");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(result["structuredContent"]["output"], 42, "{result:#?}");
    assert_eq!(fx.runs("bump"), 1);
    client.cancel().await.expect("close");
}
