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
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(300);

/// The address a `chainbox serve --http` process whose stderr goes to
/// `log` says it serves at (`chainbox: serving MCP at http://ADDR/mcp`),
/// waited for up to [`START_TIMEOUT`]; `name` names it in the panic.
pub(crate) fn served_address(log: &std::path::Path, name: &str) -> SocketAddr {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let found = text
            .lines()
            .find_map(|l| l.strip_prefix("chainbox: serving MCP at http://"))
            .and_then(|url| url.trim().trim_end_matches("/mcp").parse().ok());
        if let Some(addr) = found {
            return addr;
        }
        assert!(
            started.elapsed() < START_TIMEOUT,
            "{name} never said where it serves:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

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

/// The stderr of `chainbox serve ARGS`, which must refuse to start
/// (exit 2: bad input).
pub(crate) fn serve_refuses(args: &[&str]) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_chainbox"))
        .current_dir(repo())
        .arg("serve")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running chainbox serve");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    stderr
}

#[test]
fn http_refuses_a_non_loopback_bind_without_authentication() {
    let stderr = serve_refuses(&["--http", "0.0.0.0:0"]);
    assert!(
        stderr.contains("not a loopback address") && stderr.contains("--auth-issuer"),
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

// ------------------------------------------- cancellation, shutdown, limits
//
// These run `chainbox serve` on a manifest written into a temporary folder:
// the command tool `sleeper` (tests/mcp-servers/sleeper.py, which writes its
// pid to `sleeper.pid`) and the MCP server `rec`
// (tests/mcp-servers/recording_server.py, which writes its pid to `rec.pid`
// and every message it receives to `rec.log`). serve's stderr, with the
// audit log on, goes to `serve.log`.

/// A folder holding a manifest of `sleeper` and `rec`, and what they and
/// the server write.
struct Fixture {
    dir: tempfile::TempDir,
}

/// How long a test waits for a process to die or a message to arrive:
/// far above what it takes, far below the 60 s the tools would run.
const WITHIN: Duration = Duration::from_secs(15);

impl Fixture {
    /// The manifest: `sleeper` with `sleeper_risk`, and `rec` (`--stubborn`
    /// if `stubborn`: it ignores SIGTERM and its stdin's end).
    fn new(sleeper_risk: &str, stubborn: bool) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let servers = repo().join("tests/mcp-servers");
        let path = |name: &str| dir.path().join(name).display().to_string();
        let mut rec = vec![
            "python3".to_owned(),
            servers.join("recording_server.py").display().to_string(),
            path("rec.log"),
            path("rec.pid"),
        ];
        if stubborn {
            rec.push("--stubborn".into());
        }
        let sleeper = [
            "python3".to_owned(),
            servers.join("sleeper.py").display().to_string(),
            path("sleeper.pid"),
        ];
        let manifest = format!(
            r#"
[[tool]]
name = "sleeper"
description = "Sleeps `seconds`."
risk = "{sleeper_risk}"
command = {sleeper:?}
[tool.input_schema]
type = "object"
required = ["seconds"]
properties.seconds = {{ type = "number" }}

[[mcp]]
name = "rec"
command = {rec:?}
"#
        );
        std::fs::write(dir.path().join("manifest.toml"), manifest).expect("writing the manifest");
        Fixture { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `serve.log`, opened to append.
    fn log_file(&self) -> std::fs::File {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path("serve.log"))
            .expect("serve.log")
    }

    /// `chainbox serve` on the manifest, its stderr (audit log on) in `serve.log`.
    fn command(&self, extra: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_chainbox"));
        cmd.current_dir(repo())
            .arg("serve")
            .arg("--tools")
            .arg(self.path("manifest.toml"))
            .args(extra)
            .env("CHAINBOX_LOG", "chainbox::audit=info,warn")
            .stdout(Stdio::null())
            .stderr(Stdio::from(self.log_file()))
            .kill_on_drop(true);
        cmd
    }

    /// A client over stdio of a fresh server on the manifest.
    async fn stdio_client<H: ClientHandler>(&self, handler: H, extra: &[&str]) -> RunningService<RoleClient, H> {
        let (transport, _stderr) = TokioChildProcess::builder(self.command(extra))
            .stderr(Stdio::from(self.log_file()))
            .spawn()
            .expect("spawning chainbox serve");
        tokio::time::timeout(START_TIMEOUT, handler.serve(transport))
            .await
            .expect("chainbox serve answers in time")
            .expect("the MCP session starts")
    }

    /// The pid written to `file`, once it is there.
    async fn pid(&self, file: &str) -> i32 {
        let path = self.path(file);
        let read = eventually(Duration::from_secs(120), || {
            std::fs::read_to_string(&path)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
        });
        read.await
            .unwrap_or_else(|| panic!("{file} was never written; serve's log:\n{}", self.serve_log()))
    }

    /// The messages `rec` received so far.
    fn rec_log(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.path("rec.log")).unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    /// The `tools/call` requests `rec` received for its tool `name`.
    fn rec_calls(&self, name: &str) -> Vec<Value> {
        self.rec_log()
            .into_iter()
            .filter(|m| m["method"] == "tools/call" && m["params"]["name"] == name)
            .collect()
    }

    fn serve_log(&self) -> String {
        std::fs::read_to_string(self.path("serve.log")).unwrap_or_default()
    }
}

/// Polls `probe` every 50 ms until it yields something, for at most `limit`.
async fn eventually<T>(limit: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(found) = probe() {
            return Some(found);
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether process `pid` is running (a zombie is not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().to_owned()))
        .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
}

/// Asserts that process `pid` (named `what`) ends within [`WITHIN`].
async fn assert_ends(pid: i32, what: &str) {
    let ended = eventually(WITHIN, || (!alive(pid)).then_some(())).await;
    assert!(ended.is_some(), "{what} (pid {pid}) still runs {WITHIN:?} later");
}

/// The chain every cancellation test cancels: the slow `sleeper`, then a
/// call that must never run.
const SLEEP_THEN_QUICK: &str = "await sleeper(seconds=60)\nawait rec__quick(tag='after')";

/// After a chain running [`SLEEP_THEN_QUICK`] was cancelled: its tool is
/// killed, the call after it never reaches `rec`, and the audit log says
/// the chain was cancelled with its `sleeper` call cut off.
async fn assert_sleeper_chain_cancelled(fx: &Fixture, sleeper: i32) {
    assert_ends(sleeper, "the cancelled chain's command tool").await;
    let logged = eventually(WITHIN, || fx.serve_log().contains("chain cancelled").then_some(())).await;
    let log = fx.serve_log();
    assert!(logged.is_some(), "no `chain cancelled` in the audit log:\n{log}");
    assert!(
        log.lines()
            .any(|l| l.contains("tool call") && l.contains("tool=sleeper") && l.contains("cancelled")),
        "the cut-off call is not logged as cancelled:\n{log}"
    );
    assert!(
        !log.lines()
            .any(|l| l.contains("tool call") && l.contains("tool=sleeper") && l.contains("status=Ok")),
        "the cut-off call was logged as ok:\n{log}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(fx.rec_calls("quick").is_empty(), "a call after the cancelled one ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_cancelled_over_stdio_kills_its_command_tool_and_runs_no_later_call() {
    let fx = Fixture::new("safe", false);
    let client = fx.stdio_client((), &[]).await;
    let peer = client.peer().clone();
    // Dropping `call_tool`'s future sends `notifications/cancelled`.
    let call = tokio::spawn(async move { peer.call_tool(run_chain(SLEEP_THEN_QUICK)).await });
    let sleeper = fx.pid("sleeper.pid").await;
    call.abort();
    assert_sleeper_chain_cancelled(&fx, sleeper).await;
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_cancelled_over_stdio_cancels_its_upstream_mcp_call() {
    let fx = Fixture::new("safe", false);
    let client = fx.stdio_client((), &[]).await;
    let peer = client.peer().clone();
    let code = "await rec__slow(seconds=60)\nawait rec__quick(tag='after')";
    let call = tokio::spawn(async move { peer.call_tool(run_chain(code)).await });
    let slow = eventually(START_TIMEOUT, || fx.rec_calls("slow").pop())
        .await
        .expect("rec got the slow call");
    call.abort();
    let cancelled = eventually(WITHIN, || {
        fx.rec_log()
            .into_iter()
            .find(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == slow["id"])
    })
    .await;
    assert!(
        cancelled.is_some(),
        "rec never got notifications/cancelled: {:#?}",
        fx.rec_log()
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(fx.rec_calls("quick").is_empty(), "a call after the cancelled one ran");
    assert!(fx.serve_log().contains("chain cancelled"), "{}", fx.serve_log());
    client.cancel().await.expect("close");
}

/// A client that approves every risky call (by input-required rounds on
/// protocol 2026-07-28).
struct ApproveAll;

impl ClientHandler for ApproveAll {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("approve-all", "0"),
        )
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true})))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_cancelled_in_an_input_required_round_stops_its_chain() {
    // `sleeper` needs approval: the chain parks, the client approves in a
    // second round, and that round is cancelled while the tool runs.
    let fx = Fixture::new("high", false);
    // The service, not its peer, fulfils input-required rounds.
    let client = std::sync::Arc::new(fx.stdio_client(ApproveAll, &[]).await);
    let caller = client.clone();
    let call = tokio::spawn(async move { caller.call_tool(run_chain(SLEEP_THEN_QUICK)).await });
    let sleeper = fx.pid("sleeper.pid").await;
    call.abort();
    assert_sleeper_chain_cancelled(&fx, sleeper).await;
}

/// A `chainbox serve --http 127.0.0.1:0` child on the fixture's manifest,
/// and its address (read from `serve.log`).
async fn http_server(fx: &Fixture, extra: &[&str]) -> (tokio::process::Child, SocketAddr) {
    let mut args = vec!["--http", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let child = fx
        .command(&args)
        .stdin(Stdio::null())
        .spawn()
        .expect("spawning chainbox serve");
    let addr = eventually(START_TIMEOUT, || {
        fx.serve_log()
            .lines()
            .find_map(|l| l.strip_prefix("chainbox: serving MCP at http://"))
            .and_then(|url| url.trim().trim_end_matches("/mcp").parse().ok())
    })
    .await
    .unwrap_or_else(|| panic!("the server never said where it serves:\n{}", fx.serve_log()));
    (child, addr)
}

/// A client of protocol 2025-11-25: over HTTP, a session (`Mcp-Session-Id`).
fn session_client() -> ClientConfig {
    ClientConfig::new(ClientCapabilities::default(), Implementation::new("session", "0"))
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_cancelled_in_an_http_session_kills_its_command_tool() {
    let fx = Fixture::new("safe", false);
    let (_server, addr) = http_server(&fx, &[]).await;
    let transport = StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
    let client = session_client().serve(transport).await.expect("the MCP session starts");
    let peer = client.peer().clone();
    // In a session, dropping the call POSTs `notifications/cancelled`.
    let call = tokio::spawn(async move { peer.call_tool(run_chain(SLEEP_THEN_QUICK)).await });
    let sleeper = fx.pid("sleeper.pid").await;
    call.abort();
    assert_sleeper_chain_cancelled(&fx, sleeper).await;
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_the_http_session_stops_its_chains() {
    let fx = Fixture::new("safe", false);
    let (_server, addr) = http_server(&fx, &[]).await;
    let transport = StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
    let client = session_client().serve(transport).await.expect("the MCP session starts");
    let peer = client.peer().clone();
    let _call = tokio::spawn(async move { peer.call_tool(run_chain(SLEEP_THEN_QUICK)).await });
    let sleeper = fx.pid("sleeper.pid").await;
    // Closing the client DELETEs its session.
    client.cancel().await.expect("close");
    assert_sleeper_chain_cancelled(&fx, sleeper).await;
}

/// A stateless (protocol 2026-07-28) JSON-RPC request body: `params` with
/// the per-request `_meta` that protocol requires.
fn stateless_body(id: u64, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A raw HTTP/1.1 POST of `body` to `/mcp` on `stream`, keeping the
/// connection open; with the `Mcp-Method` (and for a tool call `Mcp-Name`)
/// header protocol 2026-07-28 requires, when `body` is JSON-RPC.
pub(crate) fn post(stream: &mut TcpStream, addr: SocketAddr, body: &[u8]) {
    let message: Value = serde_json::from_slice(body).unwrap_or_default();
    let mut standard = String::new();
    if let Some(method) = message["method"].as_str() {
        standard.push_str(&format!("Mcp-Method: {method}\r\n"));
    }
    // `params.name` (tools/call) or `params.taskId` (tasks/*), as rmcp
    // reads it.
    if let Some(name) = message["params"]["name"]
        .as_str()
        .or_else(|| message["params"]["taskId"].as_str())
    {
        standard.push_str(&format!("Mcp-Name: {name}\r\n"));
    }
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n{standard}Content-Length: {}\r\n\r\n",
        body.len()
    );
    // One write: a second small one would wait for the server's delayed ACK
    // (Nagle's algorithm on this side), which is the client's stall to avoid.
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    stream.write_all(&request).expect("sending the request");
}

/// Reads one HTTP/1.1 response from `stream`: its status and body (a
/// chunked body reassembled).
pub(crate) fn read_response(stream: &mut TcpStream) -> (u16, String) {
    let (status, _, body) = read_response_with_headers(stream);
    (status, body)
}

/// [`read_response`], with the headers (names lower-cased).
fn read_response_with_headers(stream: &mut TcpStream) -> (u16, Vec<(String, String)>, String) {
    let mut reader = std::io::BufReader::new(stream);
    let mut line = String::new();
    std::io::BufRead::read_line(&mut reader, &mut line).expect("a status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let (mut length, mut chunked) = (None, false);
    let mut headers = Vec::new();
    loop {
        line.clear();
        std::io::BufRead::read_line(&mut reader, &mut line).expect("a header line");
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let lower = header.to_ascii_lowercase();
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        if let Some(n) = lower.strip_prefix("content-length:") {
            length = n.trim().parse::<usize>().ok();
        }
        chunked |= lower.starts_with("transfer-encoding:") && lower.contains("chunked");
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            std::io::BufRead::read_line(&mut reader, &mut line).expect("a chunk size");
            let size = usize::from_str_radix(line.trim(), 16).expect("a hex chunk size");
            let mut chunk = vec![0u8; size + 2];
            reader.read_exact(&mut chunk).expect("a chunk");
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        reader.read_exact(&mut body).expect("the body");
    }
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

/// The JSON-RPC message of a response body: the body itself, or the data
/// of its SSE event that carries one.
pub(crate) fn jsonrpc_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|_| {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC message in {body:?}"))
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_http_connection_stops_its_chain() {
    let fx = Fixture::new("safe", false);
    let (_server, addr) = http_server(&fx, &[]).await;
    let mut stream = TcpStream::connect(addr).expect("connect");
    let body = stateless_body(
        1,
        "tools/call",
        json!({"name": "run_chain", "arguments": {"code": SLEEP_THEN_QUICK}}),
    );
    post(&mut stream, addr, body.as_bytes());
    let sleeper = fx.pid("sleeper.pid").await;
    drop(stream);
    assert_sleeper_chain_cancelled(&fx, sleeper).await;
}

/// Sends SIGTERM to `child` and asserts it exits within [`WITHIN`].
async fn terminate(child: &mut tokio::process::Child) {
    let pid = child.id().expect("a running server") as i32;
    // SAFETY: only sends a signal to our own child.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let exited = tokio::time::timeout(WITHIN, child.wait()).await;
    assert!(exited.is_ok(), "chainbox serve still runs {WITHIN:?} after SIGTERM");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_ends_serve_on_stdio_and_its_stubborn_upstream() {
    let fx = Fixture::new("safe", true);
    // Its stdin stays open: only the signal ends it.
    let mut child = fx
        .command(&[])
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawning chainbox serve");
    let rec = fx.pid("rec.pid").await;
    // The server has started once the registry (and so `rec`) is up.
    eventually(START_TIMEOUT, || {
        fx.rec_log().iter().any(|m| m["method"] == "tools/list").then_some(())
    })
    .await
    .expect("rec listed its tools");
    terminate(&mut child).await;
    assert_ends(rec, "the upstream MCP server").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_ends_serve_over_http_with_its_upstream_and_the_command_tool_in_flight() {
    let fx = Fixture::new("safe", true);
    let (mut child, addr) = http_server(&fx, &[]).await;
    let rec = fx.pid("rec.pid").await;
    let mut stream = TcpStream::connect(addr).expect("connect");
    let body = stateless_body(
        1,
        "tools/call",
        json!({"name": "run_chain", "arguments": {"code": SLEEP_THEN_QUICK}}),
    );
    post(&mut stream, addr, body.as_bytes());
    let sleeper = fx.pid("sleeper.pid").await;
    terminate(&mut child).await;
    assert_ends(rec, "the upstream MCP server").await;
    assert_ends(sleeper, "the command tool in flight").await;
}

/// A raw HTTP/1.1 POST of `body` with `headers` in one write; returns the
/// response's status, headers (lower-cased names) and body.
fn exchange(
    stream: &mut TcpStream,
    addr: SocketAddr,
    headers: &str,
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("sending the request");
    read_response_with_headers(stream)
}

#[tokio::test(flavor = "multi_thread")]
async fn http_calls_on_a_kept_open_connection_do_not_stall() {
    let fx = Fixture::new("safe", false);
    let (_server, addr) = http_server(&fx, &[]).await;
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    // A session (protocol 2025-11-25), as most clients open: each response
    // is an SSE stream written in two pieces, its priming event at once and
    // the result when the chain ends.
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let (status, headers, body) = exchange(&mut stream, addr, "", initialize);
    assert_eq!(status, 200, "{body}");
    let session = headers
        .iter()
        .find(|(name, _)| name == "mcp-session-id")
        .map(|(_, value)| value.clone())
        .expect("a session id");
    let session = format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, _, body) = exchange(&mut stream, addr, &session, initialized);
    assert_eq!(status, 202, "{body}");
    let call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "run_chain", "arguments": {"code": "1"}}})
            .to_string()
    };
    // The first call warms the server up.
    let (status, _, body) = exchange(&mut stream, addr, &session, &call(1));
    assert_eq!(status, 200, "{body}");
    assert_eq!(jsonrpc_of(&body)["result"]["structuredContent"]["output"], 1, "{body}");
    let mut took = Vec::new();
    for id in 2..=31 {
        let started = Instant::now();
        let (status, _, body) = exchange(&mut stream, addr, &session, &call(id));
        took.push(started.elapsed());
        assert_eq!(status, 200, "{body}");
    }
    took.sort();
    // Without TCP_NODELAY the result waits for the client's delayed ACK of
    // the priming event, at least 40 ms (Linux's minimum) whatever the
    // machine's speed; a trivial chain takes a few milliseconds.
    let median = took[took.len() / 2];
    assert!(
        median < Duration::from_millis(40),
        "median call on a kept-open connection took {median:?}: {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_request_over_stdio_gets_an_error_naming_the_limit() {
    let fx = Fixture::new("safe", false);
    let client = fx.stdio_client((), &[]).await;
    // 17 MiB, over the default limit of 16 MiB.
    let code = format!("'{}'", "x".repeat(17 << 20));
    let answer = tokio::time::timeout(WITHIN * 4, client.call_tool(run_chain(&code))).await;
    let error = answer
        .expect("an answer to an oversized request")
        .expect_err("an oversized request is an error");
    let message = error.to_string();
    assert!(
        message.contains("max_request_bytes") && message.contains(&(16u64 << 20).to_string()),
        "{message}"
    );
    // The session goes on.
    let result = client.call_tool(run_chain("1 + 1")).await.expect("the next call");
    assert_eq!(structured(&result)["output"], 2);
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread")]
async fn max_request_bytes_sets_the_stdio_limit() {
    let fx = Fixture::new("safe", false);
    let client = fx.stdio_client((), &["--max-request-bytes", "100000"]).await;
    let code = format!("'{}'", "x".repeat(200_000));
    let error = client.call_tool(run_chain(&code)).await.expect_err("over the limit");
    assert!(error.to_string().contains("100000"), "{error}");
    let fits = format!("len('{}')", "x".repeat(20_000));
    let result = client.call_tool(run_chain(&fits)).await.expect("under the limit");
    assert_eq!(structured(&result)["output"], 20_000);
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_request_over_http_gets_a_jsonrpc_error_with_its_id() {
    let fx = Fixture::new("safe", false);
    let (_server, addr) = http_server(&fx, &["--max-request-bytes", "1000000"]).await;
    let code = format!("'{}'", "x".repeat(2_000_000));
    let body = stateless_body(
        7,
        "tools/call",
        json!({"name": "run_chain", "arguments": {"code": code}}),
    );
    let mut stream = TcpStream::connect(addr).expect("connect");
    post(&mut stream, addr, body.as_bytes());
    let (status, body) = read_response(&mut stream);
    assert_eq!(status, 200, "{body}");
    let message = jsonrpc_of(&body);
    assert_eq!(message["id"], 7, "{body}");
    assert_eq!(message["error"]["code"], -32600, "{body}");
    let text = message["error"]["message"].as_str().unwrap_or_default();
    assert!(text.contains("max_request_bytes") && text.contains("1000000"), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_json_over_http_gets_400_and_a_jsonrpc_parse_error() {
    let fx = Fixture::new("safe", false);
    let (_server, addr) = http_server(&fx, &[]).await;
    let mut stream = TcpStream::connect(addr).expect("connect");
    post(&mut stream, addr, br#"{"jsonrpc": "2.0", "id": 1, "method": "#);
    let (status, body) = read_response(&mut stream);
    assert_eq!(status, 400, "{body}");
    let message = jsonrpc_of(&body);
    assert_eq!(message["error"]["code"], -32700, "{body}");
    assert!(message["id"].is_null(), "{body}");
}
