//! `chainbox serve --http --auth-issuer`: an OAuth 2.1 resource server.
//! These tests mint their own access tokens (ES256 and EdDSA keys made per
//! test run, published by a JWKS server the test runs) and drive the real
//! `chainbox serve` binary over HTTP: every refusal is a 401 or 403 with
//! its challenge and runs nothing; a valid token runs chains for its
//! principal; the token reaches no tool, upstream server or log line. The
//! tests against a real authorization server (oidc-provider) are in
//! `auth_provider.rs`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chainbox::auth::{AuthConfig, AuthError, Authenticator, TokenError};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use super::mcp_serve::{jsonrpc_of, serve_refuses, served_address};

/// The issuer the minted tokens name.
const ISSUER: &str = "https://id.chainbox.test";

/// Seconds since the epoch.
fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

/// A signing key of the test issuer: its private half and its JWK.
#[derive(Clone)]
pub(crate) struct SigningKey {
    alg: Algorithm,
    kid: String,
    private: Arc<EncodingKey>,
    jwk: Value,
}

impl SigningKey {
    /// A fresh ES256 (P-256) key named `kid`.
    pub(crate) fn es256(kid: &str) -> Self {
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("a P-256 key");
        Self::new(Algorithm::ES256, kid, EncodingKey::from_ec_der(pkcs8.as_ref()))
    }

    /// A fresh EdDSA (Ed25519) key named `kid`.
    pub(crate) fn ed25519(kid: &str) -> Self {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8v1(&aws_lc_rs::rand::SystemRandom::new()).expect("an Ed25519 key");
        Self::new(Algorithm::EdDSA, kid, EncodingKey::from_ed_der(pkcs8.as_ref()))
    }

    fn new(alg: Algorithm, kid: &str, private: EncodingKey) -> Self {
        let mut jwk = Jwk::from_encoding_key(&private, alg).expect("the public JWK");
        jwk.common.key_id = Some(kid.to_owned());
        Self {
            alg,
            kid: kid.to_owned(),
            private: Arc::new(private),
            jwk: serde_json::to_value(jwk).expect("JWK as JSON"),
        }
    }

    /// `claims` signed with this key.
    pub(crate) fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.private).expect("signing")
    }
}

/// Claims of a valid token for `sub` with `scope`, for `resource`.
pub(crate) fn claims(sub: &str, scope: &str, resource: &str) -> Value {
    json!({
        "iss": ISSUER,
        "sub": sub,
        "aud": resource,
        "scope": scope,
        "iat": now(),
        "exp": now() + 600,
        "client_id": format!("{sub}-client"),
    })
}

/// A JWKS server on loopback: the keys it publishes can change, and it
/// counts the fetches.
pub(crate) struct JwksServer {
    addr: SocketAddr,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    _task: tokio::task::JoinHandle<()>,
}

impl JwksServer {
    /// Serves `keys` at `/jwks.json` (on the current tokio runtime).
    pub(crate) async fn start(keys: &[&SigningKey]) -> Self {
        let published = Arc::new(Mutex::new(keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (p, f) = (Arc::clone(&published), Arc::clone(&fetches));
        let router = axum::Router::new().route(
            "/jwks.json",
            axum::routing::get(move || {
                let (p, f) = (Arc::clone(&p), Arc::clone(&f));
                async move {
                    f.fetch_add(1, Ordering::SeqCst);
                    let keys = p.lock().expect("keys").clone();
                    axum::Json(json!({ "keys": keys }))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Self {
            addr,
            keys: published,
            fetches,
            _task: task,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/jwks.json", self.addr)
    }

    /// Publishes `keys` instead.
    pub(crate) fn publish(&self, keys: &[&SigningKey]) {
        *self.keys.lock().expect("keys") = keys.iter().map(|k| k.jwk.clone()).collect();
    }

    pub(crate) fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

/// A folder with the manifest (`note(text)`: safe, appends to
/// `note.runs`; `pay(amount)`: critical, appends to `pay.runs`; both
/// command tools that also write their environment and arguments to
/// `<tool>.env`; the MCP server `rec`, tests/mcp-servers/recording_server.py,
/// which writes every message it receives to `rec.log`), a policy, and the
/// server's log.
pub(crate) struct Site {
    pub(crate) dir: tempfile::TempDir,
    manifest: PathBuf,
}

impl Site {
    pub(crate) fn new(policy: &str) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        let tool = dir.path().join("tool.py");
        std::fs::write(
            &tool,
            "import json, os, sys\nreq = json.load(sys.stdin)\nd = sys.argv[1]\nwith open(os.path.join(d, req['name'] + '.runs'), 'a') as f:\n    f.write('x\\n')\nwith open(os.path.join(d, req['name'] + '.env'), 'a') as f:\n    f.write(json.dumps({'env': dict(os.environ), 'argv': sys.argv, 'request': req}) + '\\n')\nprint(json.dumps('done %s' % req['arguments']))\n",
        )
        .expect("the tool");
        let (py, d) = (tool.display().to_string(), dir.path().display().to_string());
        let recording = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/recording_server.py");
        let rec = [
            "python3".to_owned(),
            recording.display().to_string(),
            dir.path().join("rec.log").display().to_string(),
            dir.path().join("rec.pid").display().to_string(),
        ];
        let manifest = dir.path().join("tools.toml");
        std::fs::write(
            &manifest,
            format!(
                "[[tool]]\nname = \"note\"\ndescription = \"notes\"\ncommand = [\"python3\", {py:?}, {d:?}]\n[tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties]\ntext = {{ type = \"string\" }}\n\n[[tool]]\nname = \"pay\"\ndescription = \"pays\"\nrisk = \"critical\"\ncommand = [\"python3\", {py:?}, {d:?}]\n[tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties]\namount = {{ type = \"integer\" }}\n\n[[mcp]]\nname = \"rec\"\ncommand = {rec:?}\n"
            ),
        )
        .expect("the manifest");
        std::fs::write(dir.path().join("policy.toml"), policy).expect("the policy");
        Self { dir, manifest }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// How many times `tool` ran.
    pub(crate) fn runs(&self, tool: &str) -> usize {
        std::fs::read_to_string(self.path(&format!("{tool}.runs"))).map_or(0, |t| t.lines().count())
    }

    pub(crate) fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    /// Starts `chainbox serve --http 127.0.0.1:PORT` with `args` (its
    /// stderr in `<name>.log`); `port` 0 picks one.
    pub(crate) fn serve(&self, name: &str, port: u16, args: &[&str], env: &[(&str, &str)]) -> Serving {
        let log_path = self.path(&format!("{name}.log"));
        let log = std::fs::File::create(&log_path).expect("the log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_chainbox"));
        command
            .arg("serve")
            .arg("--tools")
            .arg(&self.manifest)
            .arg("--policy")
            .arg(self.path("policy.toml"))
            .args(["--http", &format!("127.0.0.1:{port}")])
            .args(args)
            .env_remove("CHAINBOX_STATE_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        for key in [
            "CHAINBOX_AUTH_ISSUER",
            "CHAINBOX_AUTH_RESOURCE",
            "CHAINBOX_AUTH_JWKS",
            "CHAINBOX_AUTH_AUDIENCE",
        ] {
            command.env_remove(key);
        }
        for (key, value) in env {
            command.env(key, value);
        }
        let child = command.spawn().expect("spawning chainbox serve");
        let addr = served_address(&log_path, name);
        Serving {
            child,
            addr,
            log: log_path,
        }
    }
}

/// A `chainbox serve` process, killed when dropped.
pub(crate) struct Serving {
    child: Child,
    pub(crate) addr: SocketAddr,
    log: PathBuf,
}

impl Serving {
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free now (bound and let go): for a server whose public URL must
/// be known before it starts.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// What an HTTP answer was: status, headers, body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) body: String,
}

impl Answer {
    pub(crate) fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }

    /// The JSON-RPC message of a 200 (plain JSON or one SSE event).
    pub(crate) fn message(&self) -> Value {
        assert_eq!(self.status, 200, "{}", self.body);
        jsonrpc_of(&self.body)
    }
}

/// POSTs one JSON-RPC `message` to `url` with these extra headers
/// (protocol 2026-07-28, stateless: a session-free `tools/call`).
pub(crate) async fn post(url: &str, message: &Value, headers: &[(&str, String)]) -> Answer {
    let client = reqwest::Client::new();
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28");
    if let Some(method) = message["method"].as_str() {
        request = request.header("mcp-method", method);
    }
    if let Some(name) = message["params"]["name"]
        .as_str()
        .or_else(|| message["params"]["taskId"].as_str())
    {
        request = request.header("mcp-name", name);
    }
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let response = request.body(message.to_string()).send().await.expect("the request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.text().await.expect("the body");
    Answer { status, headers, body }
}

/// A `tools/call` of `run_chain` with `code` (a client that declared form
/// elicitation on protocol 2026-07-28), with `extra` params.
pub(crate) fn run_chain(code: &str, extra: Value) -> Value {
    let mut params = json!({
        "name": "run_chain",
        "arguments": {"code": code},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        },
    });
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
}

pub(crate) fn bearer(token: &str) -> Vec<(&'static str, String)> {
    vec![("authorization", format!("Bearer {token}"))]
}

/// A server with a JWKS of one ES256 key, for `resource`.
struct Setup {
    site: Site,
    key: SigningKey,
    /// Serves the keys for as long as the server runs.
    _jwks: JwksServer,
    server: Serving,
    resource: String,
}

/// How a [`Setup`] gives `serve` its auth settings.
enum Settings {
    Flags,
    /// The `CHAINBOX_AUTH_*` variables, with the extra audiences
    /// `api://chainbox` and `https://other.example`.
    Environment,
}

impl Setup {
    /// A server with auth settings as flags and an ES256 key.
    async fn start(policy: &str) -> Self {
        Self::launch(policy, SigningKey::es256("k1"), Settings::Flags).await
    }

    async fn launch(policy: &str, key: SigningKey, settings: Settings) -> Self {
        Self::launch_with(policy, key, settings, false).await
    }

    /// A server with auth settings as flags, an ES256 key and a chain
    /// store (a SQLite file of the site's): sessions and tasks.
    async fn start_durable(policy: &str) -> Self {
        Self::launch_with(policy, SigningKey::es256("k1"), Settings::Flags, true).await
    }

    async fn launch_with(policy: &str, key: SigningKey, settings: Settings, durable: bool) -> Self {
        let site = Site::new(policy);
        let state = format!("sqlite:{}", site.path("chains.db").display());
        let jwks = JwksServer::start(&[&key]).await;
        let port = free_port();
        let resource = format!("http://127.0.0.1:{port}/mcp");
        let jwks_url = jwks.url();
        let auth = [
            ("--auth-issuer", "CHAINBOX_AUTH_ISSUER", ISSUER),
            ("--auth-resource", "CHAINBOX_AUTH_RESOURCE", &resource),
            ("--auth-jwks", "CHAINBOX_AUTH_JWKS", &jwks_url),
        ];
        let mut args = vec!["--approve", "auto"];
        if durable {
            args.extend(["--state", state.as_str()]);
        }
        let mut env = vec![("CHAINBOX_LOG", "debug")];
        match settings {
            Settings::Flags => args.extend(auth.iter().flat_map(|(flag, _, value)| [*flag, *value])),
            Settings::Environment => {
                env.extend(auth.iter().map(|(_, var, value)| (*var, *value)));
                env.push(("CHAINBOX_AUTH_AUDIENCE", "api://chainbox,https://other.example"));
            }
        }
        let server = site.serve("serve", port, &args, &env);
        Self {
            site,
            key,
            _jwks: jwks,
            server,
            resource,
        }
    }

    fn token(&self, sub: &str, scope: &str) -> String {
        self.key.sign(&claims(sub, scope, &self.resource))
    }

    async fn call(&self, code: &str, token: Option<&str>) -> Answer {
        let headers = token.map(bearer).unwrap_or_default();
        post(&self.server.url("/mcp"), &run_chain(code, json!({})), &headers).await
    }
}

/// The `WWW-Authenticate` of a refusal names the metadata and the scope.
fn assert_challenge(answer: &Answer, status: u16, error: Option<&str>, setup: &Setup) {
    assert_eq!(answer.status, status, "{}", answer.body);
    let challenge = answer.header("www-authenticate");
    let metadata = format!(
        "resource_metadata=\"http://{}/.well-known/oauth-protected-resource/mcp\"",
        setup.resource.trim_start_matches("http://").trim_end_matches("/mcp")
    );
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains(&metadata), "{challenge} lacks {metadata}");
    assert!(challenge.contains("scope=\"chainbox:run\""), "{challenge}");
    match error {
        Some(error) => assert!(challenge.contains(&format!("error=\"{error}\"")), "{challenge}"),
        None => assert!(!challenge.contains("error="), "{challenge}"),
    }
}

const NOTE: &str = "await note(text='hi')";

#[tokio::test(flavor = "multi_thread")]
async fn a_request_without_a_token_gets_401_with_the_metadata_challenge() {
    let setup = Setup::start("").await;
    let answer = setup.call(NOTE, None).await;
    assert_challenge(&answer, 401, None, &setup);
    assert_eq!(setup.site.runs("note"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn every_refused_token_gets_401_invalid_token_and_runs_nothing() {
    let setup = Setup::start("").await;
    let resource = setup.resource.clone();
    let valid = claims("alice", "chainbox:run", &resource);
    let with = |field: &str, value: Value| {
        let mut c = valid.clone();
        c[field] = value;
        c
    };
    let without = |field: &str| {
        let mut c = valid.clone();
        c.as_object_mut().expect("claims").remove(field);
        c
    };
    let foreign = SigningKey::es256("k1");
    let public_key_text = setup.key.jwk.to_string();
    let hs256_with_public_key = jsonwebtoken::encode(
        &Header {
            kid: Some("k1".into()),
            ..Header::new(Algorithm::HS256)
        },
        &valid,
        &EncodingKey::from_secret(public_key_text.as_bytes()).expect("an HMAC key"),
    )
    .expect("HS256");
    let unsigned = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(valid.to_string())
    );
    let cases: Vec<(&str, String)> = vec![
        ("expired", setup.key.sign(&with("exp", json!(now() - 3600)))),
        (
            "wrong audience",
            setup.key.sign(&with("aud", json!("https://other.example/mcp"))),
        ),
        (
            "wrong issuer",
            setup.key.sign(&with("iss", json!("https://evil.example"))),
        ),
        ("signed by a foreign key under the same kid", foreign.sign(&valid)),
        ("alg none", unsigned),
        ("HS256 keyed with the public key", hs256_with_public_key),
        ("no exp", setup.key.sign(&without("exp"))),
        ("no sub", setup.key.sign(&without("sub"))),
        ("an empty sub", setup.key.sign(&with("sub", json!("")))),
        (
            "not valid before an hour from now",
            setup.key.sign(&with("nbf", json!(now() + 3600))),
        ),
        ("garbage", "not-a-jwt".into()),
        ("an unknown kid", SigningKey::es256("k9").sign(&valid)),
    ];
    for (case, token) in &cases {
        let answer = setup.call(NOTE, Some(token)).await;
        assert_eq!(answer.status, 401, "{case}: {}", answer.body);
        assert_challenge(&answer, 401, Some("invalid_token"), &setup);
    }
    assert_eq!(setup.site.runs("note"), 0, "a refused request ran a tool");
    // A token in the query string is no token (header only).
    let url = format!(
        "{}?access_token={}",
        setup.server.url("/mcp"),
        setup.token("alice", "chainbox:run")
    );
    let answer = post(&url, &run_chain(NOTE, json!({})), &[]).await;
    assert_challenge(&answer, 401, None, &setup);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_cannot_have_the_issuers_keys_answers_503_and_runs_nothing() {
    let site = Site::new("");
    let keyless = JwksServer::start(&[]).await;
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let server = site.serve(
        "serve",
        port,
        &[
            "--auth-issuer",
            ISSUER,
            "--auth-resource",
            &resource,
            "--auth-jwks",
            &keyless.url(),
        ],
        &[],
    );
    let token = SigningKey::es256("k1").sign(&claims("alice", "chainbox:run", &resource));
    let answer = post(&server.url("/mcp"), &run_chain(NOTE, json!({})), &bearer(&token)).await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert!(
        answer.header("www-authenticate").is_empty(),
        "not the client's fault: no challenge"
    );
    assert_eq!(site.runs("note"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_without_chainbox_run_gets_403_insufficient_scope() {
    let setup = Setup::start("").await;
    let answer = setup.call(NOTE, Some(&setup.token("carol", "profile:read"))).await;
    assert_challenge(&answer, 403, Some("insufficient_scope"), &setup);
    assert_eq!(setup.site.runs("note"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_auth_settings_also_come_from_the_environment() {
    let setup = Setup::launch("", SigningKey::ed25519("env"), Settings::Environment).await;
    assert_challenge(&setup.call(NOTE, None).await, 401, None, &setup);
    // An extra audience from the comma-separated variable is accepted.
    let token = setup
        .key
        .sign(&claims("alice", "chainbox:run", "https://other.example"));
    let answer = setup.call(NOTE, Some(&token)).await;
    assert_eq!(answer.message()["result"]["structuredContent"]["status"], "ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_valid_token_runs_the_chain() {
    let setup = Setup::start("").await;
    let answer = setup.call(NOTE, Some(&setup.token("alice", "chainbox:run"))).await;
    let message = answer.message();
    assert_eq!(message["result"]["structuredContent"]["status"], "ok", "{message:#}");
    assert_eq!(setup.site.runs("note"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_metadata_document_is_served_unauthenticated_to_any_origin() {
    let setup = Setup::start("[tools.pay]\nrequired_scopes = [\"payments:write\"]\n").await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = reqwest::get(setup.server.url(path)).await.expect("the metadata");
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["access-control-allow-origin"], "*", "{path}");
        let document: Value = response.json().await.expect("JSON");
        assert_eq!(document["resource"], setup.resource.as_str(), "{path}");
        assert_eq!(document["authorization_servers"], json!([ISSUER]));
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
        assert_eq!(document["scopes_supported"], json!(["chainbox:run", "payments:write"]));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_needing_a_scope_the_principal_lacks_is_denied_without_asking_anyone() {
    let setup = Setup::start("[tools.pay]\nrequired_scopes = [\"payments:write\"]\n").await;
    let code = "try:\n    await pay(amount=5)\nexcept PermissionError as e:\n    r = str(e)\nr";
    let answer = setup.call(code, Some(&setup.token("bob", "chainbox:run"))).await;
    let result = &answer.message()["result"]["structuredContent"];
    assert_eq!(result["status"], "ok", "{result:#}");
    assert!(
        result["output"].as_str().unwrap_or_default().contains("payments:write"),
        "{result:#}"
    );
    assert_eq!(result["call_trace"][0]["status"], "denied", "{result:#}");
    assert_eq!(result["call_trace"][0]["policy"], "denied_scope", "{result:#}");
    assert_eq!(setup.site.runs("pay"), 0);
    // A principal holding the scope gets to the approval: its client's
    // user is asked (input-required), as without a required scope.
    let answer = setup
        .call(
            "await pay(amount=5)",
            Some(&setup.token("alice", "chainbox:run payments:write")),
        )
        .await;
    let message = answer.message();
    assert_eq!(message["result"]["resultType"], "input_required", "{message:#}");
    let state = message["result"]["requestState"].as_str().expect("a requestState");
    let retry = run_chain(
        "await pay(amount=5)",
        json!({"requestState": state,
               "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}}),
    );
    let token = setup.token("alice", "chainbox:run payments:write");
    let answer = post(&setup.server.url("/mcp"), &retry, &bearer(&token)).await;
    assert_eq!(answer.message()["result"]["structuredContent"]["status"], "ok");
    assert_eq!(setup.site.runs("pay"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn another_principal_cannot_answer_a_parked_approval_and_its_owner_still_can() {
    let setup = Setup::start("").await;
    let (alice, bob) = (setup.token("alice", "chainbox:run"), setup.token("bob", "chainbox:run"));
    let url = setup.server.url("/mcp");
    let asked = post(&url, &run_chain("await pay(amount=5)", json!({})), &bearer(&alice)).await;
    let message = asked.message();
    assert_eq!(message["result"]["resultType"], "input_required", "{message:#}");
    let state = message["result"]["requestState"].as_str().expect("a requestState");
    let approve = json!({"requestState": state,
        "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}});
    let bobs = post(&url, &run_chain("await pay(amount=5)", approve.clone()), &bearer(&bob)).await;
    assert_eq!(bobs.message()["error"]["code"], -32602, "{}", bobs.body);
    assert_eq!(setup.site.runs("pay"), 0, "bob's answer ran alice's call");
    let alices = post(&url, &run_chain("await pay(amount=5)", approve), &bearer(&alice)).await;
    let result = &alices.message()["result"]["structuredContent"];
    assert_eq!(result["status"], "ok", "{result:#}");
    assert_eq!(setup.site.runs("pay"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn another_principals_session_and_task_are_no_such_session_and_no_such_task() {
    let setup = Setup::start_durable("").await;
    let (alice, bob) = (setup.token("alice", "chainbox:run"), setup.token("bob", "chainbox:run"));
    let url = setup.server.url("/mcp");
    let cell = |code: &str, session: &str| run_chain(code, json!({"arguments": {"code": code, "session": session}}));

    let first = post(&url, &cell("secret = 42", "new"), &bearer(&alice)).await;
    let id = first.message()["result"]["structuredContent"]["session_id"]
        .as_str()
        .expect("a session id")
        .to_owned();
    let bobs = post(&url, &cell("secret", &id), &bearer(&bob)).await;
    let refused = &bobs.message()["result"]["structuredContent"]["error"];
    assert_eq!(refused["kind"], "session", "{}", bobs.body);
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("no such session")),
        "{}",
        bobs.body
    );
    let alices = post(&url, &cell("secret", &id), &bearer(&alice)).await;
    assert_eq!(
        alices.message()["result"]["structuredContent"]["output"],
        42,
        "{}",
        alices.body
    );

    // A task: its id is no task of bob's, for any method.
    let mut task_call = run_chain("1 + 1", json!({}));
    task_call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
        json!({"io.modelcontextprotocol/tasks": {}});
    let created = post(&url, &task_call, &bearer(&alice)).await.message();
    assert_eq!(created["result"]["resultType"], "task", "{created:#}");
    let task_id = created["result"]["taskId"].as_str().expect("a task id").to_owned();
    let meta = task_call["params"]["_meta"].clone();
    for method in ["tasks/get", "tasks/cancel"] {
        let request = json!({"jsonrpc": "2.0", "id": 2, "method": method,
            "params": {"taskId": task_id, "_meta": meta}});
        let answer = post(&url, &request, &bearer(&bob)).await.message();
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("no such task")),
            "{method}: {answer:#}"
        );
    }
    let get = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"taskId": task_id, "_meta": meta}});
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let answer = post(&url, &get, &bearer(&alice)).await.message();
        if answer["result"]["status"] == "completed" {
            assert_eq!(
                answer["result"]["result"]["structuredContent"]["output"], 2,
                "{answer:#}"
            );
            break;
        }
        assert_eq!(answer["result"]["status"], "working", "{answer:#}");
        assert!(std::time::Instant::now() < deadline, "{answer:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_reaches_no_tool_and_no_log_line() {
    let setup = Setup::start("").await;
    let token = setup.token("alice", "chainbox:run");
    let answer = setup
        .call("await note(text='hi')\nawait rec__quick(tag='t')", Some(&token))
        .await;
    let result = &answer.message()["result"]["structuredContent"];
    assert_eq!(result["status"], "ok", "{result:#}");
    let seen = setup.site.read("note.env");
    assert!(seen.contains("\"text\": \"hi\""), "the tool recorded nothing: {seen}");
    let upstream = setup.site.read("rec.log");
    assert!(
        upstream.contains("quick"),
        "the upstream server saw no call: {upstream}"
    );
    // Neither the token nor its signature (its last part) anywhere.
    let signature = token.rsplit('.').next().expect("a signature");
    for (what, text) in [
        ("the tool's environment and arguments", seen),
        ("the upstream MCP server", upstream),
        ("serve's log", setup.server.log()),
    ] {
        assert!(!text.contains(signature), "the token reached {what}");
    }
    assert!(
        setup.server.log().contains("alice"),
        "the audit log names the principal:\n{}",
        setup.server.log()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn another_principals_mcp_session_is_not_served() {
    let setup = Setup::start("").await;
    let (alice, bob) = (setup.token("alice", "chainbox:run"), setup.token("bob", "chainbox:run"));
    let url = setup.server.url("/mcp");
    let client = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    let response = client
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(&alice)
        .body(initialize.to_string())
        .send()
        .await
        .expect("initialize");
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .expect("a session id")
        .to_owned();
    let list = |token: &str| {
        client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .header("mcp-session-id", &session)
            .bearer_auth(token)
            .body(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
            .send()
    };
    let bobs = list(&bob).await.expect("bob's request");
    assert_eq!(bobs.status(), 404, "bob was served alice's session");
    let alices = list(&alice).await.expect("alice's request");
    assert!(alices.status().is_success(), "alice's own session: {}", alices.status());
}

/// An authenticator for `jwks`, fetching again after `interval`.
fn authenticator(jwks: &JwksServer, interval: Duration) -> Authenticator {
    let mut config = AuthConfig::new(ISSUER, "https://chains.example.com/mcp", Some(&jwks.url())).expect("config");
    config.refetch_interval = interval;
    Authenticator::new(config)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_rotated_in_at_the_issuer_is_used_without_a_restart() {
    let (old, new) = (SigningKey::es256("2026-old"), SigningKey::ed25519("2026-new"));
    let jwks = JwksServer::start(&[&old]).await;
    let auth = authenticator(&jwks, Duration::from_millis(100));
    let resource = "https://chains.example.com/mcp";
    let alice = auth
        .authenticate(&old.sign(&claims("alice", "chainbox:run", resource)))
        .await;
    assert_eq!(alice.expect("the old key's token").owner.subject, "alice");
    jwks.publish(&[&old, &new]);
    tokio::time::sleep(Duration::from_millis(150)).await;
    let bob = auth
        .authenticate(&new.sign(&claims("bob", "chainbox:run", resource)))
        .await;
    assert_eq!(bob.expect("the new key's token").owner.subject, "bob");
    assert_eq!(jwks.fetches(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_naming_unknown_keys_fetch_the_keys_at_most_once_per_interval() {
    let key = SigningKey::es256("k1");
    let jwks = JwksServer::start(&[&key]).await;
    let auth = authenticator(&jwks, Duration::from_secs(3600));
    let resource = "https://chains.example.com/mcp";
    auth.authenticate(&key.sign(&claims("alice", "chainbox:run", resource)))
        .await
        .expect("a valid token");
    for i in 0..20 {
        let stranger = SigningKey::es256(&format!("made-up-{i}"));
        let refused = auth
            .authenticate(&stranger.sign(&claims("eve", "chainbox:run", resource)))
            .await;
        assert!(
            matches!(refused, Err(AuthError::Token(TokenError::UnknownKey))),
            "{refused:?}"
        );
    }
    assert_eq!(jwks.fetches(), 1, "each made-up kid fetched the keys again");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_issuer_without_usable_keys_is_asked_once_per_interval_and_requests_fail_at_once() {
    let jwks = JwksServer::start(&[]).await;
    let auth = authenticator(&jwks, Duration::from_secs(3600));
    let token = SigningKey::es256("k1").sign(&claims("alice", "chainbox:run", "https://chains.example.com/mcp"));
    for _ in 0..5 {
        let refused = auth.authenticate(&token).await;
        assert!(matches!(refused, Err(AuthError::Keys(_))), "{refused:?}");
    }
    assert_eq!(jwks.fetches(), 1, "every request asked the issuer again");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_verified_once_is_not_verified_again() {
    let key = SigningKey::es256("k1");
    let jwks = JwksServer::start(&[&key]).await;
    let auth = authenticator(&jwks, Duration::from_secs(3600));
    let token = key.sign(&claims(
        "alice",
        "chainbox:run payments:write",
        "https://chains.example.com/mcp",
    ));
    let first = auth.authenticate(&token).await.expect("valid");
    let again = auth.authenticate(&token).await.expect("still valid");
    assert_eq!(first, again);
    assert!(again.has_scope("payments:write"));
    assert_eq!(again.client_id.as_deref(), Some("alice-client"));
}

#[test]
fn allow_remote_alone_no_longer_serves_remote_callers() {
    let stderr = serve_refuses(&["--http", "0.0.0.0:0", "--allow-remote"]);
    assert!(stderr.contains("--auth-issuer"), "{stderr}");
}

#[test]
fn an_http_resource_url_off_loopback_is_refused_naming_the_flag() {
    let stderr = serve_refuses(&[
        "--http",
        "127.0.0.1:0",
        "--auth-issuer",
        ISSUER,
        "--auth-resource",
        "http://chains.example.com/mcp",
    ]);
    assert!(
        stderr.contains("--auth-resource") && stderr.contains("https"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn insecure_no_auth_serves_a_non_loopback_address() {
    let site = Site::new("");
    let log_path = site.path("insecure.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_chainbox"))
        .args(["serve", "--http", "0.0.0.0:0", "--insecure-no-auth"])
        .stdin(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log_path).expect("log")))
        .spawn()
        .expect("chainbox serve");
    let addr = served_address(&log_path, "serve --insecure-no-auth");
    assert!(addr.ip().is_unspecified(), "{addr}");
    let _ = child.kill();
    let _ = child.wait();
}
