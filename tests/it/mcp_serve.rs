//! `chainbox serve` end to end: the real binary as an MCP server, driven by
//! the official Rust SDK's client over stdio (a child process) and over
//! streamable HTTP, with the real command tools of
//! `examples/tools/manifest.toml`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ErrorData, Implementation, ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::io::AsyncBufReadExt;

/// Longest a test waits for the server (a cold module cache compiles the guest).
const START_TIMEOUT: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `chainbox serve --tools examples/tools/manifest.toml` plus `extra`.
fn serve_command(extra: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_chainbox"));
    cmd.current_dir(repo())
        .args(["serve", "--tools", "examples/tools/manifest.toml"])
        .args(extra)
        .kill_on_drop(true);
    cmd
}

/// Spawns `cmd` (stdout discarded) and returns the child and its stderr's lines.
fn spawn_reading_stderr(
    cmd: &mut tokio::process::Command,
) -> (
    tokio::process::Child,
    tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>,
) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning chainbox serve");
    let stderr = child.stderr.take().expect("piped stderr");
    (child, tokio::io::BufReader::new(stderr).lines())
}

/// An MCP client over stdio of a fresh `chainbox serve`, with `handler`'s
/// capabilities.
async fn stdio_client<H: ClientHandler>(handler: H, extra: &[&str]) -> RunningService<RoleClient, H> {
    let (transport, _stderr) = TokioChildProcess::builder(serve_command(extra))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawning chainbox serve");
    tokio::time::timeout(START_TIMEOUT, handler.serve(transport))
        .await
        .expect("chainbox serve answers in time")
        .expect("the MCP session starts")
}

/// `run_chain` with `code`.
fn run_chain(code: &str) -> CallToolRequestParams {
    let mut arguments = Map::new();
    arguments.insert("code".into(), Value::String(code.into()));
    CallToolRequestParams::new("run_chain").with_arguments(arguments)
}

/// The structured content of a `run_chain` result: a `ChainRunResult`.
fn structured(result: &CallToolResult) -> &Value {
    result
        .structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("no structuredContent: {result:#?}"))
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------- stdio

#[tokio::test]
async fn lists_exactly_run_chain_with_the_stubs_of_every_tool() {
    let client = stdio_client((), &[]).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["run_chain"]);
    let tool = &tools[0];
    let description = tool.description.as_deref().unwrap_or_default();
    for expected in [
        "async def add(a: float, b: float) -> Any:",
        "async def send_email(",
        "asyncio.gather",
        "PermissionError",
        "at most 50 tool calls",
    ] {
        assert!(
            description.contains(expected),
            "missing {expected:?} in:\n{description}"
        );
    }
    assert_eq!(tool.input_schema.get("required"), Some(&json!(["code"])));
    let output = tool.output_schema.as_ref().expect("an output schema");
    assert_eq!(output.get("type"), Some(&json!("object")));
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn run_chain_answers_with_text_and_the_whole_result_as_structured_content() {
    let client = stdio_client((), &[]).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let result = client
        .call_tool(run_chain("s = await add(a=2, b=3)\nprint('summed')\nf'sum={s}'"))
        .await
        .expect("tools/call");
    assert_ne!(result.is_error, Some(true), "{result:#?}");
    assert_eq!(text(&result), "sum=5");
    let chain = structured(&result);
    assert_eq!(chain["status"], "ok");
    assert_eq!(chain["output"], "sum=5");
    assert_eq!(chain["stdout"], "summed\n");
    assert_eq!(chain["call_trace"][0]["tool"], "add");
    assert_eq!(chain["call_trace"][0]["status"], "ok");

    let schema = Value::Object((*tools[0].output_schema.clone().expect("output schema")).clone());
    let validator = jsonschema::validator_for(&schema).expect("the output schema compiles");
    let errors: Vec<String> = validator.iter_errors(chain).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "structuredContent breaks the output schema: {errors:?}"
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_failing_chain_is_a_tool_error_that_still_carries_its_result() {
    let client = stdio_client((), &[]).await;
    let result = client
        .call_tool(run_chain("x = await add(a=1, b=1)\n1 / 0"))
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(true), "{result:#?}");
    assert!(text(&result).contains("ZeroDivisionError"), "{}", text(&result));
    let chain = structured(&result);
    assert_eq!(chain["status"], "error");
    assert_eq!(chain["error"]["kind"], "script");
    assert_eq!(chain["error"]["line"], 2);
    assert_eq!(chain["tool_calls"], 1, "the trace keeps the call made before the error");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_call_without_code_is_a_protocol_error() {
    let client = stdio_client((), &[]).await;
    let error = client
        .call_tool(CallToolRequestParams::new("run_chain").with_arguments(Map::new()))
        .await
        .expect_err("no code");
    assert!(error.to_string().contains("code"), "{error}");
    let error = client
        .call_tool(CallToolRequestParams::new("add"))
        .await
        .expect_err("not a tool of the server");
    assert!(error.to_string().contains("run_chain"), "{error}");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn concurrent_calls_run_at_once() {
    let client = stdio_client((), &[]).await;
    // Warm the server (the first chain starts the tool's interpreter cold).
    client.call_tool(run_chain("1")).await.expect("warm-up");
    let slow = |text: &str| run_chain(&format!("(await slow_echo(text='{text}', seconds=2))['text']"));
    let started = Instant::now();
    let (a, b) = tokio::join!(client.call_tool(slow("a")), client.call_tool(slow("b")));
    let elapsed = started.elapsed();
    assert_eq!(text(&a.expect("first call")), "a");
    assert_eq!(text(&b.expect("second call")), "b");
    assert!(
        elapsed < Duration::from_millis(3800),
        "two 2 s chains took {elapsed:?}: they ran one after the other"
    );
    client.cancel().await.expect("close");
}

/// A chain calling `send_email` (risk high, needs approval) that reports
/// what happened instead of failing.
const SEND_EMAIL: &str = "try:\n    await send_email(to='a@example.com', subject='hi')\n    answer = 'sent'\nexcept PermissionError as e:\n    answer = 'denied: ' + str(e)\nanswer";

#[tokio::test]
async fn risky_calls_are_denied_by_default_when_the_client_cannot_be_asked() {
    let client = stdio_client((), &[]).await;
    let result = client.call_tool(run_chain(SEND_EMAIL)).await.expect("tools/call");
    assert!(text(&result).starts_with("denied"), "{}", text(&result));
    assert_eq!(structured(&result)["call_trace"][0]["status"], "denied");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn approve_auto_approves_risky_calls() {
    let client = stdio_client((), &["--approve", "auto"]).await;
    let result = client.call_tool(run_chain(SEND_EMAIL)).await.expect("tools/call");
    assert_eq!(text(&result), "sent");
    client.cancel().await.expect("close");
}

/// A client whose user answers every approval form with `approve`. Before
/// protocol 2026-07-28 the server asks with an elicitation request; from it
/// on, with an input-required result the client fulfils and retries.
struct Approver {
    approve: bool,
    protocol: ProtocolVersion,
}

impl ClientHandler for Approver {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("approver", "0"),
        )
        .with_protocol_version(self.protocol.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        assert!(message.contains("send_email"), "{message}");
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": self.approve})))
    }
}

#[tokio::test]
async fn a_client_with_elicitation_approves_risky_calls_itself() {
    let approver = Approver {
        approve: true,
        protocol: ProtocolVersion::V_2025_11_25,
    };
    let client = stdio_client(approver, &[]).await;
    let result = client.call_tool(run_chain(SEND_EMAIL)).await.expect("tools/call");
    assert_eq!(text(&result), "sent", "{result:#?}");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_client_with_elicitation_can_refuse_risky_calls_even_with_approve_auto() {
    let approver = Approver {
        approve: false,
        protocol: ProtocolVersion::V_2025_11_25,
    };
    let client = stdio_client(approver, &["--approve", "auto"]).await;
    let result = client.call_tool(run_chain(SEND_EMAIL)).await.expect("tools/call");
    assert!(text(&result).starts_with("denied"), "{}", text(&result));
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn on_protocol_2026_07_28_approval_goes_through_input_required_rounds() {
    let approver = Approver {
        approve: true,
        protocol: ProtocolVersion::V_2026_07_28,
    };
    let client = stdio_client(approver, &[]).await;
    // Two risky calls at once: each is one more round.
    let code = format!(
        "import asyncio\n{SEND_EMAIL}\nr = await asyncio.gather(send_email(to='a@example.com', subject='1'), send_email(to='b@example.com', subject='2'))\n[x['sent'] for x in r]"
    );
    let result = client.call_tool(run_chain(&code)).await.expect("tools/call");
    assert_eq!(structured(&result)["output"], json!([true, true]), "{result:#?}");
    let refused = Approver {
        approve: false,
        protocol: ProtocolVersion::V_2026_07_28,
    };
    let client = stdio_client(refused, &["--approve", "auto"]).await;
    let result = client.call_tool(run_chain(SEND_EMAIL)).await.expect("tools/call");
    assert!(text(&result).starts_with("denied"), "{}", text(&result));
    client.cancel().await.expect("close");
}

// ---------------------------------------------------------------- HTTP

/// A `chainbox serve --http` child and the address it bound.
struct HttpServer {
    _child: tokio::process::Child,
    addr: SocketAddr,
}

impl HttpServer {
    /// Starts `chainbox serve --http 127.0.0.1:0` and reads the bound
    /// address from its first line on stderr.
    async fn start() -> Self {
        let mut cmd = serve_command(&["--http", "127.0.0.1:0"]);
        let (child, mut lines) = spawn_reading_stderr(cmd.stdin(Stdio::null()));
        // The first line names the address; the rest is drained (a closed
        // pipe would fail the server's next write to stderr).
        let (first, first_line) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let mut first = Some(first);
            while let Ok(Some(line)) = lines.next_line().await {
                match first.take() {
                    Some(tx) => {
                        let _ = tx.send(line);
                    }
                    None => eprintln!("{line}"),
                }
            }
        });
        let line = tokio::time::timeout(START_TIMEOUT, first_line)
            .await
            .expect("the server starts in time")
            .expect("the server printed its address");
        let url = line
            .trim()
            .strip_prefix("chainbox: serving MCP at http://")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"));
        let addr = url.trim_end_matches("/mcp").parse().expect("a socket address");
        HttpServer { _child: child, addr }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The status code of a raw `initialize` POST with these extra headers.
    fn raw_initialize_status(&self, headers: &str) -> u16 {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
        let request = format!(
            "POST /mcp HTTP/1.1\r\n{headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut stream = TcpStream::connect(self.addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        stream.write_all(request.as_bytes()).expect("send");
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).expect("a status line");
        let status = String::from_utf8_lossy(&head[9..12]).to_string();
        status.parse().unwrap_or_else(|_| panic!("status line {head:?}"))
    }
}

#[tokio::test]
async fn http_serves_run_chain_to_the_streamable_http_client() {
    let server = HttpServer::start().await;
    let client = ().serve(StreamableHttpClientTransport::from_uri(server.url())).await.expect("the MCP session starts");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "run_chain");
    let (a, b) = tokio::join!(
        client.call_tool(run_chain("(await echo(text='one'))['text']")),
        client.call_tool(run_chain("(await add(a=40, b=2))")),
    );
    let (a, b) = (a.expect("first call"), b.expect("second call"));
    assert_eq!(text(&a), "one");
    assert_eq!(structured(&b)["output"], 42);
    let failed = client
        .call_tool(run_chain("raise ValueError('no')"))
        .await
        .expect("call");
    assert_eq!(failed.is_error, Some(true));
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn http_accepts_loopback_host_and_origin() {
    let server = HttpServer::start().await;
    let status = server.raw_initialize_status(&format!("Host: {}\r\nOrigin: http://localhost:3000\r\n", server.addr));
    assert_eq!(status, 200);
}

#[tokio::test]
async fn http_refuses_a_foreign_host_header() {
    let server = HttpServer::start().await;
    let status = server.raw_initialize_status("Host: attacker.example\r\n");
    assert_eq!(status, 403, "a rebinding page's Host must be refused");
}

#[tokio::test]
async fn http_refuses_a_foreign_origin() {
    let server = HttpServer::start().await;
    let status = server.raw_initialize_status(&format!("Host: {}\r\nOrigin: http://attacker.example\r\n", server.addr));
    assert_eq!(status, 403, "a foreign page's Origin must be refused");
}

#[test]
fn http_refuses_a_non_loopback_bind_without_allow_remote() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_chainbox"))
        .current_dir(repo())
        .args(["serve", "--http", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .expect("running chainbox serve");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not a loopback address") && stderr.contains("--allow-remote"),
        "{stderr}"
    );
}

/// A server prepares the CPython guest (loaded or compiled, and its first
/// spare) in the background as it starts, so the first chain that needs it
/// does not wait, and its log says when that is done.
#[tokio::test(flavor = "multi_thread")]
async fn serve_prepares_the_cpython_guest_as_it_starts_and_logs_it() {
    let mut cmd = serve_command(&[]);
    // Its stdin stays open (an MCP session over stdio ends at its end).
    let (_child, mut lines) = spawn_reading_stderr(cmd.env("CHAINBOX_LOG", "info").stdin(Stdio::piped()));
    let mut seen = Vec::new();
    let ready = tokio::time::timeout(START_TIMEOUT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("the CPython guest is ready") {
                return true;
            }
            seen.push(line);
        }
        false
    })
    .await;
    assert_eq!(ready, Ok(true), "no readiness line; stderr so far: {seen:#?}");
}
