//! Upstream MCP servers as chainbox tools (`[[mcp]]` manifest entries),
//! against the real npm servers `@modelcontextprotocol/server-memory` and
//! `@modelcontextprotocol/server-everything`, pinned in `tests/mcp-servers/`,
//! and a misbehaving one, `tests/mcp-servers/faulty_server.py` (Python, no
//! node needed: it hangs, answers garbage, never starts, ...).
//!
//! The servers are looked up in `$CHAINBOX_MCP_SERVERS`, else in
//! `target/mcp-servers`, and installed there by `tests/mcp-servers/install.sh`
//! when missing (`.ci/run` installs them before `cargo test`). Without
//! `node` the tests are skipped, loudly.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use chainbox::manifest::Manifest;
use chainbox::mcp::upstream::{McpUpstream, PING_TIMEOUT};
use chainbox::policy::ToolOverride;
use chainbox::{Approval, CallStatus, ChainPolicy, Tool, ToolRegistry, ToolRisk};
use serde_json::{Value, json};

use crate::fixtures::{assert_ok, assert_trace, run_full};

// ---------------------------------------------------------------- servers

/// The folder holding the servers' `node_modules`, installing them on first
/// use; `None` (after a loud message) when `node` is not installed.
fn servers() -> Option<&'static Path> {
    static SERVERS: OnceLock<Option<PathBuf>> = OnceLock::new();
    SERVERS
        .get_or_init(|| {
            if Command::new("node").arg("--version").output().is_err() {
                eprintln!(
                    "\n!!! SKIPPED: `node` is not installed, so the MCP upstream tests \
                     (tests/it/mcp_upstream.rs) cannot run their real servers !!!\n"
                );
                return None;
            }
            let dir = std::env::var_os("CHAINBOX_MCP_SERVERS")
                .map(PathBuf::from)
                .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mcp-servers"));
            let install = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/install.sh");
            let status = Command::new(&install)
                .env("CHAINBOX_MCP_SERVERS", &dir)
                .status()
                .unwrap_or_else(|e| panic!("running {}: {e}", install.display()));
            assert!(status.success(), "{} failed: {status}", install.display());
            Some(dir)
        })
        .as_deref()
}

/// The entry point of an installed server package.
fn server_script(servers: &Path, package: &str) -> String {
    let script = servers
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(script.exists(), "{} is missing", script.display());
    script.display().to_string()
}

/// A TOML string literal.
fn quoted(text: &str) -> String {
    toml::Value::from(text).to_string()
}

/// An `[[mcp]]` entry for server-memory keeping its graph in `file`.
fn memory_entry(servers: &Path, file: &Path) -> String {
    format!(
        "[[mcp]]\nname = \"memory\"\ncommand = [\"node\", {}]\nenv = {{ MEMORY_FILE_PATH = {} }}\n",
        quoted(&server_script(servers, "server-memory")),
        quoted(&file.display().to_string()),
    )
}

/// An `[[mcp]]` entry for server-everything over stdio, then `extra` lines.
fn everything_entry(servers: &Path, extra: &str) -> String {
    format!(
        "[[mcp]]\nname = \"everything\"\ncommand = [\"node\", {}, \"stdio\"]\n{extra}",
        quoted(&server_script(servers, "server-everything")),
    )
}

/// The manifest `text`, its relative paths resolved against `dir`.
fn manifest(text: &str, dir: &Path) -> Manifest {
    Manifest::from_str(text, dir).unwrap_or_else(|e| panic!("invalid manifest: {e}\n{text}"))
}

async fn registry(text: &str, dir: &Path) -> ToolRegistry {
    manifest(text, dir)
        .registry()
        .await
        .unwrap_or_else(|e| panic!("registry: {e}"))
}

async fn run(script: &str, registry: &ToolRegistry, policy: &ChainPolicy) -> chainbox::ChainRunResult {
    run_full(script, registry, policy, &Approval::auto(ToolRisk::Safe)).await
}

fn local<'a>(registry: &'a ToolRegistry, name: &str) -> &'a Arc<dyn Tool> {
    registry
        .get(name)
        .and_then(|t| t.as_local())
        .unwrap_or_else(|| panic!("no local tool {name}"))
}

/// Whether the process is gone (or a zombie waiting to be reaped).
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

// ---------------------------------------------------------------- chains

#[tokio::test(flavor = "multi_thread")]
async fn memory_chain_creates_entities_and_relations_and_reads_them_back() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = registry(&memory_entry(servers, &dir.path().join("memory.jsonl")), dir.path()).await;
    let r = run(
        r#"
await memory__create_entities(entities=[
    {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]},
    {"name": "Engine", "entityType": "machine", "observations": []},
])
await memory__create_relations(relations=[{"from": "Ada", "to": "Engine", "relationType": "programmed"}])
g = await memory__read_graph()
[sorted(e["name"] for e in g["entities"]), [[r["from"], r["relationType"], r["to"]] for r in g["relations"]]]
"#,
        &registry,
        &ChainPolicy::default(),
    )
    .await;
    assert_ok(&r);
    assert_eq!(
        r.output,
        json!([["Ada", "Engine"], [["Ada", "programmed", "Engine"]]]),
        "{r:#?}"
    );
    assert_trace(
        &r,
        &[
            ("memory__create_entities", CallStatus::Ok),
            ("memory__create_relations", CallStatus::Ok),
            ("memory__read_graph", CallStatus::Ok),
        ],
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_calls_share_one_server() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = registry(&everything_entry(servers, ""), dir.path()).await;
    let r = run(
        "import asyncio\nawait asyncio.gather(*[everything__get_sum(a=i, b=1) for i in range(5)])",
        &registry,
        &ChainPolicy::default(),
    )
    .await;
    assert_ok(&r);
    let sums: Vec<String> = (0..5).map(|i| format!("The sum of {i} and 1 is {}.", i + 1)).collect();
    assert_eq!(r.output, json!(sums), "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_reporting_is_error_raises_runtime_error_with_its_text() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = registry(&memory_entry(servers, &dir.path().join("memory.jsonl")), dir.path()).await;
    let r = run(
        r#"
try:
    await memory__add_observations(observations=[{"entityName": "Nobody", "contents": ["x"]}])
    out = "no error"
except RuntimeError as e:
    out = str(e)
out
"#,
        &registry,
        &ChainPolicy::default(),
    )
    .await;
    assert_ok(&r);
    assert!(
        r.output
            .as_str()
            .is_some_and(|m| m.contains("Entity with name Nobody not found")),
        "{r:#?}"
    );
    assert_trace(&r, &[("memory__add_observations", CallStatus::Error)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn image_result_becomes_a_workspace_file_the_script_reads() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = registry(&everything_entry(servers, ""), dir.path()).await;
    let r = run(
        "r = await everything__get_tiny_image()\nf = r['files'][0]\ndata = open(f['path'], 'rb').read()\n\
         [r['text'], f['path'], f['media_type'], len(data) > 100, data[:4] == b'\\x89PNG']",
        &registry,
        &ChainPolicy::default(),
    )
    .await;
    assert_ok(&r);
    assert_eq!(
        r.output,
        json!([
            "Here's the image you requested:\nThe image above is the MCP logo.",
            "/workspace/media/everything__get_tiny_image_1.png",
            "image/png",
            true,
            true
        ]),
        "{r:#?}"
    );
    assert_eq!(r.files.len(), 1, "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn embedded_blob_resource_becomes_a_workspace_file_with_its_media_type() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = registry(&everything_entry(servers, ""), dir.path()).await;
    let r = run(
        "r = await everything__gzip_file_as_resource(name='hello.txt.gz', \
         data='data:text/plain;base64,aGVsbG8=', outputType='resource')\n\
         f = r['files'][0]\n[f['media_type'], open(f['path'], 'rb').read()[:2] == b'\\x1f\\x8b']",
        &registry,
        &ChainPolicy::default(),
    )
    .await;
    assert_ok(&r);
    assert_eq!(r.output, json!(["application/gzip", true]), "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_link_arrives_in_the_json_list() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = registry(&everything_entry(servers, ""), dir.path()).await;
    let r = run(
        "r = await everything__gzip_file_as_resource(name='hello.txt.gz', \
         data='data:text/plain;base64,aGVsbG8=')\n\
         [r['files'], [[l['type'], l['name'], l['mimeType']] for l in r['json']]]",
        &registry,
        &ChainPolicy::default(),
    )
    .await;
    assert_ok(&r);
    assert_eq!(
        r.output,
        json!([[], [["resource_link", "hello.txt.gz", "application/gzip"]]]),
        "{r:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn call_over_its_timeout_is_a_timeout_record_and_the_chain_goes_on() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = registry(&everything_entry(servers, ""), dir.path()).await;
    let policy = ChainPolicy {
        tools: BTreeMap::from([(
            "everything__trigger_long_running_operation".to_owned(),
            ToolOverride {
                call_timeout_s: Some(0.5),
                ..ToolOverride::default()
            },
        )]),
        ..ChainPolicy::default()
    };
    let r = run(
        r#"
try:
    await everything__trigger_long_running_operation(duration=30, steps=30)
    out = "finished"
except TimeoutError:
    out = "timed out"
[out, await everything__get_sum(a=2, b=3)]
"#,
        &registry,
        &policy,
    )
    .await;
    assert_ok(&r);
    assert_eq!(r.output, json!(["timed out", "The sum of 2 and 3 is 5."]), "{r:#?}");
    assert_trace(
        &r,
        &[
            ("everything__trigger_long_running_operation", CallStatus::Timeout),
            ("everything__get_sum", CallStatus::Ok),
        ],
    );
    // Cut at its 0.5 s, not left to run its 30 s (generous for a loaded machine).
    assert!(r.call_trace[0].duration_ms < 10_000.0, "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn server_killed_mid_call_is_a_tool_error_and_the_next_call_restarts_it() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = manifest(&everything_entry(servers, ""), dir.path());
    let upstream = McpUpstream::connect(&manifest.mcp[0]).await.expect("connect");
    let first_pid = upstream.pid().expect("a running server");
    let registry = ToolRegistry::from_local(upstream.tools().to_vec()).expect("registry");
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let status = Command::new("kill").args(["-KILL", &first_pid.to_string()]).status();
        assert!(status.is_ok_and(|s| s.success()), "kill -KILL {first_pid}");
    });
    let script = r#"
try:
    await everything__trigger_long_running_operation(duration=10, steps=10)
    out = "finished"
except RuntimeError as e:
    out = str(e)
[out, await everything__get_sum(a=1, b=2)]
"#;
    let r = run(script, &registry, &ChainPolicy::default()).await;
    killer.await.expect("killer");
    assert_ok(&r);
    let message = r.output[0].as_str().unwrap_or_default();
    assert!(
        message.contains("mcp server `everything` stopped during the call"),
        "{r:#?}"
    );
    assert_eq!(r.output[1], json!("The sum of 1 and 2 is 3."), "{r:#?}");
    assert_trace(
        &r,
        &[
            ("everything__trigger_long_running_operation", CallStatus::Error),
            ("everything__get_sum", CallStatus::Ok),
        ],
    );
    assert_eq!(upstream.restarts(), 1);
    assert_ne!(upstream.pid(), Some(first_pid));

    let next = run(
        "await everything__get_sum(a=2, b=2)",
        &registry,
        &ChainPolicy::default(),
    )
    .await;
    assert_ok(&next);
    assert_eq!(next.output, json!("The sum of 2 and 2 is 4."));
    assert_eq!(upstream.restarts(), 1, "a live server is not restarted");
}

// ---------------------------------------------------------------- lifecycle

#[tokio::test(flavor = "multi_thread")]
async fn server_exiting_at_start_is_an_error_naming_it_with_its_stderr() {
    if servers().is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let text =
        "[[mcp]]\nname = \"broken\"\ncommand = [\"sh\", \"-c\", \"echo 'cannot open the database' >&2; exit 3\"]";
    let err = manifest(text, dir.path()).registry().await.err().expect("an error");
    let message = err.to_string();
    assert!(
        message.starts_with("mcp server `broken` failed to start: "),
        "{message}"
    );
    assert!(
        message.ends_with("its stderr ends with: cannot open the database"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_server_program_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = "[[mcp]]\nname = \"ghost\"\ncommand = [\"./no-such-server\"]";
    let err = manifest(text, dir.path()).registry().await.err().expect("an error");
    let message = err.to_string();
    let program = dir.path().join("no-such-server");
    assert!(
        message.starts_with(&format!("mcp server `ghost`: cannot start `{}`", program.display())),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_the_tools_stops_the_server() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = manifest(&everything_entry(servers, ""), dir.path());
    let upstream = McpUpstream::connect(&manifest.mcp[0]).await.expect("connect");
    let pid = upstream.pid().expect("a running server");
    let tools = upstream.into_tools();
    assert!(!is_gone(pid));
    drop(tools);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !is_gone(pid) {
        assert!(
            Instant::now() < deadline,
            "server {pid} still runs after its tools were dropped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn server_environment_is_only_path_and_its_env() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = registry(
        &everything_entry(servers, "env = { GREETING = \"hello\" }\n"),
        dir.path(),
    )
    .await;
    let r = run(
        "sorted((await everything__get_env()).keys())",
        &registry,
        &ChainPolicy::default(),
    )
    .await;
    assert_ok(&r);
    assert_eq!(r.output, json!(["GREETING", "PATH"]), "{r:#?}");
}

// ---------------------------------------------------------------- manifest

#[tokio::test(flavor = "multi_thread")]
async fn tool_names_are_prefixed_and_mapped_to_identifiers() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = registry(&everything_entry(servers, ""), dir.path()).await;
    let names: Vec<&str> = registry.iter().map(|t| t.name()).collect();
    for name in [
        "everything__echo",
        "everything__get_tiny_image",
        "everything__trigger_long_running_operation",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let image = local(&registry, "everything__get_tiny_image");
    assert_eq!(image.description(), "Returns a tiny MCP logo image.");
    assert_eq!(image.input_schema()["type"], "object");
}

#[tokio::test(flavor = "multi_thread")]
async fn denied_tools_are_left_out_and_risks_are_set_per_server_and_tool() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = "risk = \"high\"\n[mcp.tools.get-env]\ndeny = true\n[mcp.tools.get-sum]\nrisk = \"safe\"\n";
    let registry = registry(&everything_entry(servers, extra), dir.path()).await;
    assert!(registry.get("everything__get_env").is_none());
    assert_eq!(local(&registry, "everything__get_sum").risk(), ToolRisk::Safe);
    assert_eq!(local(&registry, "everything__echo").risk(), ToolRisk::High);
}

#[tokio::test(flavor = "multi_thread")]
async fn server_and_tool_permissions_are_enforced_and_records_name_the_server() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = "permissions = [\"net\"]\n[mcp.tools.get-sum]\npermissions = []\n";
    let registry = registry(&everything_entry(servers, extra), dir.path()).await;
    let r = run(
        "try:\n    await everything__echo(message='hi')\n    out = 'ran'\nexcept PermissionError:\n    out = 'denied'\n\
         [out, await everything__get_sum(a=1, b=1)]",
        &registry,
        &ChainPolicy::default(),
    )
    .await;
    assert_ok(&r);
    assert_eq!(r.output, json!(["denied", "The sum of 1 and 1 is 2."]), "{r:#?}");
    assert_trace(
        &r,
        &[
            ("everything__echo", CallStatus::Denied),
            ("everything__get_sum", CallStatus::Ok),
        ],
    );
    assert_eq!(
        r.call_trace[1].source.as_deref(),
        Some("mcp:everything/get-sum"),
        "{r:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn settings_for_a_tool_the_server_lacks_are_an_error() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let text = everything_entry(servers, "[mcp.tools.get_env]\ndeny = true\n");
    let message = manifest(&text, dir.path())
        .registry()
        .await
        .err()
        .expect("an error")
        .to_string();
    assert!(
        message.starts_with("mcp server `everything`: `tools.get_env` names no tool of the server (it has: echo, "),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn command_tool_and_mcp_tool_of_the_same_name_are_an_error() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[[tool]]\nname = \"everything__echo\"\ndescription = \"\"\ncommand = [\"cat\"]\n{}",
        everything_entry(servers, "")
    );
    let message = manifest(&text, dir.path())
        .registry()
        .await
        .err()
        .expect("an error")
        .to_string();
    assert_eq!(
        message,
        "tool name `everything__echo` is used by [[tool]] #1 and by mcp server `everything` tool `echo`"
    );
}

// ---------------------------------------------------------------- faulty servers

/// An `[[mcp]]` entry named `faulty` for `tests/mcp-servers/faulty_server.py`
/// with `args`, then `extra` lines.
fn faulty_entry(args: &[&str], extra: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/faulty_server.py");
    let mut command = vec![quoted("python3"), quoted(&script.display().to_string())];
    command.extend(args.iter().map(|arg| quoted(arg)));
    format!(
        "[[mcp]]\nname = \"faulty\"\ncommand = [{}]\n{extra}",
        command.join(", ")
    )
}

/// The faulty server, started, and a registry of its tools.
async fn faulty(dir: &Path) -> (McpUpstream, ToolRegistry) {
    let manifest = manifest(&faulty_entry(&[], ""), dir);
    let upstream = McpUpstream::connect(&manifest.mcp[0]).await.expect("connect");
    let registry = ToolRegistry::from_local(upstream.tools().to_vec()).expect("registry");
    (upstream, registry)
}

/// Calls time out after 20 s: far above what an answer at once takes, and
/// what a lost answer costs (it used to be the whole call timeout); the
/// named tools after the given seconds.
fn policy_with_timeouts(tools: &[(&str, f64)]) -> ChainPolicy {
    ChainPolicy {
        call_timeout_s: 20.0,
        approval_timeout_s: 19.0,
        tools: tools
            .iter()
            .map(|&(name, secs)| {
                let timeout = ToolOverride {
                    call_timeout_s: Some(secs),
                    ..ToolOverride::default()
                };
                (name.to_owned(), timeout)
            })
            .collect(),
        ..ChainPolicy::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn hung_server_is_restarted_after_a_call_times_out_and_the_next_call_succeeds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (upstream, registry) = faulty(dir.path()).await;
    let first_pid = upstream.pid().expect("a running server");
    let script = r#"
first = await faulty__echo(text="before")
try:
    await faulty__block()
    out = "answered"
except TimeoutError:
    out = "timed out"
[first, out, await faulty__echo(text="after")]
"#;
    let r = run(script, &registry, &policy_with_timeouts(&[("faulty__block", 1.0)])).await;
    assert_ok(&r);
    assert_eq!(r.output, json!(["before", "timed out", "after"]), "{r:#?}");
    assert_trace(
        &r,
        &[
            ("faulty__echo", CallStatus::Ok),
            ("faulty__block", CallStatus::Timeout),
            ("faulty__echo", CallStatus::Ok),
        ],
    );
    // The ping's deadline and a restart, not the 20 s call timeout.
    let waited = r.call_trace[2].duration_ms;
    assert!(
        waited < (PING_TIMEOUT + Duration::from_secs(8)).as_secs_f64() * 1000.0,
        "{r:#?}"
    );
    assert_eq!(upstream.restarts(), 1);
    assert_ne!(upstream.pid(), Some(first_pid));
    let deadline = Instant::now() + Duration::from_secs(5);
    while !is_gone(first_pid) {
        assert!(Instant::now() < deadline, "the hung server {first_pid} still runs");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn server_that_answers_pings_is_kept_after_a_call_times_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (upstream, registry) = faulty(dir.path()).await;
    let pid = upstream.pid();
    let script = r#"
try:
    await faulty__slow(seconds=30)
    out = "answered"
except TimeoutError:
    out = "timed out"
[out, await faulty__echo(text="after")]
"#;
    let r = run(script, &registry, &policy_with_timeouts(&[("faulty__slow", 1.0)])).await;
    assert_ok(&r);
    assert_eq!(r.output, json!(["timed out", "after"]), "{r:#?}");
    assert_eq!(
        upstream.restarts(),
        0,
        "a server that answers its ping is not restarted"
    );
    assert_eq!(upstream.pid(), pid);
}

/// Calls `faulty__{tool}({args})`, which makes the server send a bad
/// message, then `faulty__echo`: the first must fail at once, the second
/// succeed on the same server. Returns the first one's error message.
async fn fault_message(tool: &str, args: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let (upstream, registry) = faulty(dir.path()).await;
    let script = format!(
        "try:\n    await faulty__{tool}({args})\n    out = 'answered'\nexcept RuntimeError as e:\n    out = str(e)\n\
         [out, await faulty__echo(text='still up')]"
    );
    let r = run(&script, &registry, &policy_with_timeouts(&[])).await;
    assert_ok(&r);
    assert_eq!(r.output[1], json!("still up"), "{r:#?}");
    let name = format!("faulty__{tool}");
    assert_trace(
        &r,
        &[(name.as_str(), CallStatus::Error), ("faulty__echo", CallStatus::Ok)],
    );
    // At once: well under the 20 s call timeout a dropped message waited for.
    assert!(r.call_trace[0].duration_ms < 10_000.0, "{r:#?}");
    assert_eq!(upstream.restarts(), 0, "the connection stays up");
    r.output[0].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn message_over_the_cap_fails_the_call_at_once() {
    let message = fault_message("huge", "mb=20").await;
    assert_eq!(
        message,
        "mcp server `faulty` sent a message over the 16 MiB cap (no line end in its first 16777216 bytes); \
         the rest of it is skipped"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn line_that_is_not_json_fails_the_call_at_once() {
    let message = fault_message("garbage", "").await;
    assert!(
        message.starts_with("mcp server `faulty` sent a line that is not JSON (expected ")
            && message.ends_with(" at line 1 column 2): `this is not json`"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn line_that_is_not_utf8_fails_the_call_at_once() {
    let message = fault_message("bad_utf8", "").await;
    assert!(
        message.starts_with("mcp server `faulty` answered tools/call with a message that is not UTF-8 (byte "),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn answer_to_an_id_never_sent_fails_the_call_at_once() {
    let message = fault_message("wrong_id", "").await;
    assert!(
        message.starts_with("mcp server `faulty` answered request id 10")
            && message.contains(", which it was never sent (waiting for tools/call #"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn response_without_a_result_fails_the_call_at_once() {
    let message = fault_message("no_result", "").await;
    assert_eq!(
        message,
        "mcp server `faulty` answered tools/call with neither a `result` nor an `error`"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn message_nested_100000_deep_fails_the_call_at_once() {
    let message = fault_message("deep", "depth=100000").await;
    assert!(
        message.starts_with(
            "mcp server `faulty` sent a message nested more than 128 levels deep, which is not read: \
             `{\"jsonrpc\": \"2.0\", \"id\": "
        ),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn result_that_is_no_tool_result_says_what_was_expected_and_what_came() {
    let message = fault_message("not_a_result", "").await;
    assert!(
        message.starts_with("mcp server `faulty` answered tools/call with a result that is not a tool result (")
            && message.ends_with("): `{\"content\":\"not a list of blocks\"}`"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn line_that_is_not_json_at_start_fails_the_start_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = manifest(&faulty_entry(&["--banner"], ""), dir.path())
        .registry()
        .await
        .err()
        .expect("an error");
    let message = err.to_string();
    assert!(
        message.starts_with("mcp server `faulty` failed to start: it sent a line that is not JSON (")
            && message.ends_with("): `faulty server ready`"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn start_timeout_of_1e19_seconds_means_no_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = registry(&faulty_entry(&[], "start_timeout_s = 1e19\n"), dir.path()).await;
    let r = run("await faulty__echo(text='up')", &registry, &ChainPolicy::default()).await;
    assert_ok(&r);
    assert_eq!(r.output, json!("up"), "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn server_that_never_finishes_starting_fails_the_registry_at_its_start_timeout_quoting_its_stderr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let err = manifest(&faulty_entry(&["--never-start"], "start_timeout_s = 1\n"), dir.path())
        .registry()
        .await
        .err()
        .expect("an error");
    assert_eq!(
        err.to_string(),
        "mcp server `faulty` did not start within 1s (its `start_timeout_s`); \
         its stderr ends with: faulty: loading a model that never finishes loading"
    );
    // Its 1 s, not the 60 s default.
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}

// ---------------------------------------------------------------- cli

/// Runs the `chainbox` binary with `args` and `stdin`, from the crate root.
fn chainbox(args: &[&str], stdin: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_chainbox"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn chainbox");
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).expect("write stdin");
    }
    child.wait_with_output().expect("chainbox output")
}

#[test]
fn stubs_over_an_mcp_manifest_list_its_tools() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tools.toml");
    std::fs::write(&path, memory_entry(servers, &dir.path().join("memory.jsonl"))).expect("write manifest");
    let out = chainbox(&["stubs", "--tools", &path.display().to_string()], "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains("async def memory__create_entities("), "{stdout}");
    assert!(stdout.contains("async def memory__read_graph("), "{stdout}");
    // The keys each entity needs are shown, not only `list[dict]`.
    assert!(stdout.contains("\"entityType\": str"), "{stdout}");
}

#[test]
fn run_over_an_mcp_manifest_calls_its_tools() {
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tools.toml");
    std::fs::write(&path, memory_entry(servers, &dir.path().join("memory.jsonl"))).expect("write manifest");
    let script = "await memory__create_entities(entities=[{'name': 'x', 'entityType': 't', 'observations': []}])\n\
                  (await memory__read_graph())['entities'][0]['name']";
    let out = chainbox(&["run", "-", "--tools", &path.display().to_string(), "--json"], script);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(result["status"], "ok", "{result:#}");
    assert_eq!(result["output"], "x", "{result:#}");
}

#[test]
fn run_with_a_server_that_never_starts_exits_quoting_its_stderr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tools.toml");
    std::fs::write(&path, faulty_entry(&["--never-start"], "start_timeout_s = 1\n")).expect("write manifest");
    let started = Instant::now();
    let out = chainbox(&["run", "-", "--tools", &path.display().to_string()], "1 + 1");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        stderr.contains("mcp server `faulty` did not start within 1s")
            && stderr.contains("its stderr ends with: faulty: loading a model that never finishes loading"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
}

#[test]
fn run_over_a_server_answering_garbage_reports_it_in_the_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tools.toml");
    std::fs::write(&path, faulty_entry(&[], "")).expect("write manifest");
    let script = "try:\n    await faulty__garbage()\nexcept RuntimeError as e:\n    out = str(e)\nout";
    let out = chainbox(&["run", "-", "--tools", &path.display().to_string(), "--json"], script);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(result["status"], "ok", "{result:#}");
    let message = result["output"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("mcp server `faulty` sent a line that is not JSON (")
            && message.ends_with("`this is not json`"),
        "{result:#}"
    );
}
