//! `chainbox serve --auth-issuer` against a real authorization server:
//! `tests/mcp-servers/auth_server.mjs` (npm `oidc-provider` 9.13.3, client
//! credentials, RFC 8707 resource indicators, RS256 JWT access tokens; the
//! clients alice, bob and carol), and real clients: rmcp's streamable-HTTP
//! client with a bearer token, and the MCP Python SDK's own OAuth client
//! (`tests/mcp-servers/oauth_client.py`), which starts from serve's 401.
//! `serve` finds the issuer's keys through its metadata (no `--auth-jwks`).
//!
//! The servers are looked up in `$CHAINBOX_MCP_SERVERS` (else
//! `target/mcp-servers`) and the Python SDK in `$CHAINBOX_PYCLIENTS` (else
//! `target/pyclients`), installed there by `tests/mcp-servers/install.sh`
//! and `install_pyclients.sh` when missing. Without `node` (or `python3`)
//! the tests fail under CI and are skipped, loudly, elsewhere; the durable
//! ones need PostgreSQL likewise ([`PgServer`]). The tests with minted
//! tokens (every refusal, key rotation, no token passthrough) are in
//! `auth.rs`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};

use super::auth::{Answer, Serving, Site, bearer, free_port, post, run_chain};
use super::durable_serve::{answered, asks_for, completed};
use super::store::PgServer;

/// Longest the Python client may take (it starts an interpreter, imports
/// the SDK, and makes a handful of requests).
const PYTHON_TIMEOUT: Duration = Duration::from_secs(120);

/// A safe call.
const NOTE: &str = "await note(text='hi')";

/// A critical call: needs the user's approval.
const PAY: &str = "await pay(amount=5)";

/// The repository's root.
fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Skips the test (`None`), loudly, outside CI; fails it under CI.
fn missing<T>(why: &str) -> Option<T> {
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must run the real authorization server tests: {why}"
    );
    eprintln!("\n!!! SKIPPED: the real authorization server tests (tests/it/auth_provider.rs): {why} !!!\n");
    None
}

/// The `node_modules` holding oidc-provider, installed on first use;
/// `None` (skipped) when `node` is not installed.
fn node_modules() -> Option<&'static Path> {
    static MODULES: OnceLock<Option<PathBuf>> = OnceLock::new();
    MODULES
        .get_or_init(|| {
            if Command::new("node").arg("--version").output().is_err() {
                return missing("`node` is not installed");
            }
            let dir = std::env::var_os("CHAINBOX_MCP_SERVERS")
                .map_or_else(|| repo().join("target/mcp-servers"), PathBuf::from);
            let install = repo().join("tests/mcp-servers/install.sh");
            let status = Command::new(&install)
                .env("CHAINBOX_MCP_SERVERS", &dir)
                .status()
                .unwrap_or_else(|e| panic!("running {}: {e}", install.display()));
            assert!(status.success(), "{} failed: {status}", install.display());
            Some(dir.join("node_modules"))
        })
        .as_deref()
}

/// The Python of the virtualenv holding the MCP Python SDK, installed on
/// first use; `None` (skipped) when `python3` is not installed.
fn python() -> Option<&'static Path> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            if Command::new("python3").arg("--version").output().is_err() {
                return missing("`python3` is not installed");
            }
            let venv =
                std::env::var_os("CHAINBOX_PYCLIENTS").map_or_else(|| repo().join("target/pyclients"), PathBuf::from);
            let install = repo().join("tests/mcp-servers/install_pyclients.sh");
            let status = Command::new(&install)
                .env("CHAINBOX_PYCLIENTS", &venv)
                .status()
                .unwrap_or_else(|e| panic!("running {}: {e}", install.display()));
            assert!(status.success(), "{} failed: {status}", install.display());
            Some(venv.join("bin/python"))
        })
        .as_deref()
}

/// A running `auth_server.mjs`: killed when dropped (and gone by itself
/// when the test process dies, which closes its stdin).
struct AuthServer {
    child: Child,
    issuer: String,
    token_endpoint: String,
    jwks_uri: String,
    /// Its stderr (oidc-provider's notices), for failure messages.
    log: tempfile::NamedTempFile,
}

impl AuthServer {
    /// Starts one on a free port; `None` (skipped) without `node`.
    fn start() -> Option<Self> {
        let modules = node_modules()?;
        let log = tempfile::NamedTempFile::new().expect("a log file");
        let mut child = Command::new("node")
            .arg(repo().join("tests/mcp-servers/auth_server.mjs"))
            .arg("--modules")
            .arg(modules)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log.reopen().expect("the log")))
            .spawn()
            .expect("spawning node auth_server.mjs");
        let stdout = child.stdout.take().expect("its stdout");
        let mut line = String::new();
        // One line once listening; EOF (an empty line) if it died.
        let _ = BufReader::new(stdout).read_line(&mut line);
        let said: Value = serde_json::from_str(&line).unwrap_or_else(|_| {
            let log = std::fs::read_to_string(log.path()).unwrap_or_default();
            panic!("auth_server.mjs said {line:?}, not its issuer:\n{log}")
        });
        let text = |key: &str| {
            said[key]
                .as_str()
                .unwrap_or_else(|| panic!("no {key} in {said}"))
                .to_owned()
        };
        Some(Self {
            issuer: text("issuer"),
            token_endpoint: text("token_endpoint"),
            jwks_uri: text("jwks_uri"),
            child,
            log,
        })
    }

    /// The token endpoint's answer to a client-credentials request of
    /// `client` (secret `<client>-secret`, client_secret_basic) for
    /// `resource` with `scope`: status and JSON body.
    async fn token_response(&self, client: &str, resource: &str, scope: &str) -> (u16, Value) {
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "client_credentials")
            .append_pair("resource", resource)
            .append_pair("scope", scope)
            .finish();
        let response = reqwest::Client::new()
            .post(&self.token_endpoint)
            .basic_auth(client, Some(format!("{client}-secret")))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .expect("the token request");
        let status = response.status().as_u16();
        let body = response.text().await.expect("the token response");
        let json = serde_json::from_str(&body).unwrap_or_else(|_| panic!("a token response not JSON: {body}"));
        (status, json)
    }

    /// An access token for `client`, for `resource`, with `scope` (what
    /// of it the client may get).
    async fn token(&self, client: &str, resource: &str, scope: &str) -> String {
        let (status, body) = self.token_response(client, resource, scope).await;
        assert_eq!(
            status,
            200,
            "{client}'s token request: {body:#}\n{}",
            std::fs::read_to_string(self.log.path()).unwrap_or_default()
        );
        body["access_token"].as_str().expect("an access_token").to_owned()
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `serve --http 127.0.0.1:PORT --auth-issuer ISSUER --auth-resource
/// http://127.0.0.1:PORT/mcp` (no `--auth-jwks`: the keys are found
/// through the issuer's metadata; its log at `info`, which says where
/// they were fetched), before a real authorization server.
struct Setup {
    auth: AuthServer,
    site: Site,
    server: Serving,
    /// The public URL: the resource, and where clients connect.
    resource: String,
}

impl Setup {
    /// `None` (skipped) without `node`.
    fn start() -> Option<Self> {
        let auth = AuthServer::start()?;
        let site = Site::new("");
        let port = free_port();
        let resource = format!("http://127.0.0.1:{port}/mcp");
        let server = site.serve(
            "serve",
            port,
            &["--auth-issuer", &auth.issuer, "--auth-resource", &resource],
            &[("CHAINBOX_LOG", "info")],
        );
        Some(Self {
            auth,
            site,
            server,
            resource,
        })
    }
}

/// `run_chain` with `code`, for rmcp's client.
fn run_chain_params(code: &str) -> CallToolRequestParams {
    let mut arguments = Map::new();
    arguments.insert("code".into(), Value::String(code.into()));
    CallToolRequestParams::new("run_chain").with_arguments(arguments)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_from_a_real_authorization_server_runs_a_chain_through_rmcps_client() {
    let Some(setup) = Setup::start() else { return };
    let token = setup
        .auth
        .token("alice", &setup.resource, "chainbox:run payments:write")
        .await;
    let header = jsonwebtoken::decode_header(&token).expect("a JWT");
    assert_eq!(
        header.alg,
        jsonwebtoken::Algorithm::RS256,
        "oidc-provider signs with RS256"
    );
    let config = StreamableHttpClientTransportConfig::with_uri(setup.resource.as_str()).auth_header(token);
    let client = ()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap_or_else(|e| panic!("the MCP session starts: {e}\n{}", setup.server.log()));
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["run_chain"]);
    let result = client.call_tool(run_chain_params(NOTE)).await.expect("tools/call");
    let structured = result.structured_content.as_ref().expect("structuredContent");
    assert_eq!(structured["status"], "ok", "{structured:#}\n{}", setup.server.log());
    assert_ne!(result.is_error, Some(true));
    assert_eq!(setup.site.runs("note"), 1);
    client.cancel().await.expect("close");
    let log = setup.server.log();
    let fetched = log
        .lines()
        .any(|l| l.contains("fetched the issuer's signing keys") && l.contains(&setup.auth.jwks_uri));
    assert!(fetched, "the keys were not found through the issuer's metadata:\n{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_mcp_sdk_finds_the_authorization_server_from_the_401_and_runs_a_chain() {
    let Some(python) = python() else { return };
    let Some(setup) = Setup::start() else { return };
    let run = tokio::process::Command::new(python)
        .arg(repo().join("tests/mcp-servers/oauth_client.py"))
        .args(["--server", &setup.resource])
        .args(["--client-id", "alice", "--client-secret", "alice-secret"])
        .args(["--issuer", &setup.auth.issuer])
        .args(["--code", NOTE])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(PYTHON_TIMEOUT, run)
        .await
        .expect("oauth_client.py answers in time")
        .expect("running oauth_client.py");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let context = format!(
        "stdout:\n{stdout}\nstderr:\n{stderr}\nserve's log:\n{}",
        setup.server.log()
    );
    let said: Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("oauth_client.py printed no JSON line\n{context}"));
    assert!(out.status.success(), "{said}\n{context}");
    assert_eq!(said["is_error"], false, "{said:#}\n{context}");
    assert_eq!(said["structured"]["status"], "ok", "{said:#}\n{context}");
    assert_eq!(setup.site.runs("note"), 1, "{context}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_without_chainbox_run_from_the_real_server_gets_403() {
    let Some(setup) = Setup::start() else { return };
    let (status, body) = setup
        .auth
        .token_response("carol", &setup.resource, "chainbox:run profile:read")
        .await;
    assert_eq!(status, 200, "{body:#}");
    assert_eq!(
        body["scope"], "profile:read",
        "carol may get profile:read only: {body:#}"
    );
    let token = body["access_token"].as_str().expect("an access_token");
    let answer = post(&setup.server.url("/mcp"), &run_chain(NOTE, json!({})), &bearer(token)).await;
    assert_eq!(answer.status, 403, "{}", answer.body);
    let challenge = answer.header("www-authenticate");
    assert!(challenge.contains("error=\"insufficient_scope\""), "{challenge}");
    assert!(challenge.contains("scope=\"chainbox:run\""), "{challenge}");
    let metadata = format!(
        "resource_metadata=\"{}\"",
        setup
            .resource
            .replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    );
    assert!(challenge.contains(&metadata), "{challenge} lacks {metadata}");
    assert_eq!(setup.site.runs("note"), 0);
}

// ---- Durable chains: two nodes on one PostgreSQL ----

/// An authorization server, and two `serve` nodes (a, b) of one
/// PostgreSQL store accepting its tokens for one resource (whose port is
/// neither node's: tokens are fetched by the test, not by a client
/// following the challenge).
struct Nodes {
    auth: AuthServer,
    site: Site,
    state: String,
    resource: String,
    a: Serving,
    b: Serving,
    _pg: PgServer,
}

impl Nodes {
    /// `None` (skipped) without `node` or PostgreSQL.
    async fn start(database: &str) -> Option<Self> {
        let auth = AuthServer::start()?;
        let pg = PgServer::start()?;
        let state = pg.create_database(database).await;
        let site = Site::new("");
        let resource = format!("http://127.0.0.1:{}/mcp", free_port());
        let args = [
            "--state",
            &state,
            "--auth-issuer",
            &auth.issuer,
            "--auth-resource",
            &resource,
        ];
        let a = site.serve("a", 0, &args, &[]);
        let b = site.serve("b", 0, &args, &[]);
        Some(Self {
            auth,
            site,
            state,
            resource,
            a,
            b,
            _pg: pg,
        })
    }

    /// `client`'s token for the nodes' resource.
    async fn token(&self, client: &str) -> String {
        self.auth
            .token(client, &self.resource, "chainbox:run payments:write")
            .await
    }

    /// `run_chain(PAY)` (with `extra` params) on `node` as `token`'s
    /// principal: the JSON-RPC message.
    async fn call(&self, node: &Serving, token: &str, extra: Value) -> Value {
        let answer: Answer = post(&node.url("/mcp"), &run_chain(PAY, extra), &bearer(token)).await;
        assert_eq!(
            answer.status,
            200,
            "{}\nnode a:\n{}\nnode b:\n{}",
            answer.body,
            self.a.log(),
            self.b.log()
        );
        answer.message()
    }

    /// `chainbox approvals --state URL --json` with `args`: the listed chains.
    fn approvals(&self, args: &[&str]) -> Vec<Value> {
        let out = Command::new(env!("CARGO_BIN_EXE_chainbox"))
            .args(["approvals", "--state", &self.state, "--json"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("chainbox approvals");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bob_cannot_resume_alices_suspended_chain_on_another_node_and_alice_can_once() {
    let Some(nodes) = Nodes::start("auth_provider_resume").await else {
        return;
    };
    let (alice, bob) = (nodes.token("alice").await, nodes.token("bob").await);
    let first = nodes.call(&nodes.a, &alice, json!({})).await;
    let state = asks_for(&first, "pay");
    assert_eq!(nodes.site.runs("pay"), 0);

    // Bob, authenticated, with alice's state and an approval: refused,
    // nothing recorded, nothing run.
    let refused = nodes.call(&nodes.b, &bob, answered(&state, true)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused:#}");
    assert!(refused.get("result").is_none(), "{refused:#}");
    assert_eq!(nodes.site.runs("pay"), 0, "bob's retry ran alice's call");

    // Still pending for alice, undecided: without an answer she is asked
    // again (a decision recorded by bob would have resumed the chain).
    let again = nodes.call(&nodes.b, &alice, json!({"requestState": state})).await;
    asks_for(&again, "pay");
    assert_eq!(nodes.site.runs("pay"), 0);

    let done = nodes.call(&nodes.b, &alice, answered(&state, true)).await;
    let result = completed(&done);
    assert_eq!(result["status"], "ok", "{done:#}");
    assert_eq!(nodes.site.runs("pay"), 1);

    // The same retry again: the chain's result, not another payment.
    let replayed = nodes.call(&nodes.a, &alice, answered(&state, true)).await;
    assert_eq!(completed(&replayed)["status"], "ok", "{replayed:#}");
    assert_eq!(nodes.site.runs("pay"), 1, "a second retry paid again");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_started_by_alice_records_her_as_its_owner() {
    let Some(nodes) = Nodes::start("auth_provider_owner").await else {
        return;
    };
    let alice = nodes.token("alice").await;
    let first = nodes.call(&nodes.a, &alice, json!({})).await;
    asks_for(&first, "pay");

    let all = nodes.approvals(&[]);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(
        all[0]["owner"],
        json!({"issuer": nodes.auth.issuer, "subject": "alice"}),
        "{all:#?}"
    );
    assert_eq!(all[0]["tool"], "pay", "{all:#?}");
    assert_eq!(nodes.approvals(&["--owner", "alice"]).len(), 1);
    assert_eq!(nodes.approvals(&["--owner", "bob"]), Vec::<Value>::new());
    assert_eq!(nodes.approvals(&["--owner", "local"]), Vec::<Value>::new());
}
