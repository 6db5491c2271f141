//! OpenTelemetry export end to end: the real `chainbox run` and `chainbox
//! serve --http` with the standard `OTEL_*` environment pointed at an
//! OTLP/HTTP receiver inside the test (axum, decoding protobuf and JSON),
//! real command tools (a Python script that writes the `TRACEPARENT` it was
//! given) and a real upstream MCP server (tests/mcp-servers/recording_server.py,
//! which logs every message it receives, `_meta` included).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{Map, Value};

/// Far above what any step here takes, far below a hung test's patience.
const WITHIN: Duration = Duration::from_secs(30);

/// The trace a caller hands in (W3C `traceparent`): its trace and span ids.
const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

fn caller_traceparent() -> String {
    format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01")
}

/// An argument value the chain passes that must never reach an exporter.
const SECRET_ARG: &str = "s3cret-argument-value";

// ------------------------------------------------------------ the receiver

/// One OTLP/HTTP request the receiver got.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    content_type: String,
    body: Vec<u8>,
}

impl Received {
    fn is_json(&self) -> bool {
        self.content_type.starts_with("application/json")
    }
}

/// An OTLP/HTTP receiver on a loopback port, keeping every request.
struct Collector {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Collector {
    fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding the receiver");
        listener.set_nonblocking(true).expect("a non-blocking listener");
        let addr = listener.local_addr().expect("the receiver's address");
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = received.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the receiver's runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
                let app = axum::Router::new().fallback(
                    move |uri: axum::http::Uri, headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                        let kept = kept.clone();
                        async move {
                            let content_type = headers
                                .get(axum::http::header::CONTENT_TYPE)
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default()
                                .to_owned();
                            kept.lock().unwrap().push(Received {
                                path: uri.path().to_owned(),
                                content_type,
                                body: body.to_vec(),
                            });
                            // An empty export response: `{}` or an empty message.
                            "{}"
                        }
                    },
                );
                let _ = axum::serve(listener, app).await;
            });
        });
        Collector { addr, received }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Every span exported so far, decoded from protobuf or JSON.
    fn spans(&self) -> Vec<Span> {
        self.received()
            .iter()
            .filter(|r| r.path == "/v1/traces")
            .flat_map(|r| match r.is_json() {
                true => spans_of_json(&r.body),
                false => ExportTraceServiceRequest::decode(r.body.as_slice())
                    .expect("an OTLP protobuf trace export")
                    .resource_spans
                    .into_iter()
                    .flat_map(|r| r.scope_spans)
                    .flat_map(|s| s.spans)
                    .collect(),
            })
            .collect()
    }

    /// Every metric export so far (protobuf), decoded.
    fn metrics(&self) -> Vec<ExportMetricsServiceRequest> {
        self.received()
            .iter()
            .filter(|r| r.path == "/v1/metrics")
            .map(|r| ExportMetricsServiceRequest::decode(r.body.as_slice()).expect("an OTLP protobuf metric export"))
            .collect()
    }

    /// Waits until `ready` holds for the spans received (or fails).
    fn wait_for_spans(&self, ready: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let deadline = Instant::now() + WITHIN;
        loop {
            let spans = self.spans();
            if ready(&spans) {
                return spans;
            }
            assert!(Instant::now() < deadline, "the spans never arrived; got {spans:#?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The spans of an OTLP/JSON trace export, read by hand: the test's
/// serde_json (with `arbitrary_precision`, as this crate builds it) cannot
/// take doubles through opentelemetry-proto's own deserializers.
fn spans_of_json(body: &[u8]) -> Vec<Span> {
    let request: Value = serde_json::from_slice(body).expect("an OTLP/JSON trace export");
    let id = |v: &Value| -> Vec<u8> {
        let text = v.as_str().unwrap_or_default();
        (0..text.len() / 2)
            .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).expect("a hex id"))
            .collect()
    };
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let mut spans = Vec::new();
    for resource in list(&request["resourceSpans"]) {
        for scope in list(&resource["scopeSpans"]) {
            for json in list(&scope["spans"]) {
                let attributes = list(&json["attributes"])
                    .iter()
                    .map(|kv| {
                        let value = &kv["value"];
                        let value = if let Some(s) = value["stringValue"].as_str() {
                            any_value::Value::StringValue(s.to_owned())
                        } else if let Some(b) = value["boolValue"].as_bool() {
                            any_value::Value::BoolValue(b)
                        } else if !value["intValue"].is_null() {
                            let text = value["intValue"].to_string();
                            any_value::Value::IntValue(text.trim_matches('"').parse().expect("an int"))
                        } else {
                            any_value::Value::DoubleValue(value["doubleValue"].to_string().parse().unwrap_or(f64::NAN))
                        };
                        KeyValue {
                            key: kv["key"].as_str().unwrap_or_default().to_owned(),
                            value: Some(AnyValue { value: Some(value) }),
                            ..KeyValue::default()
                        }
                    })
                    .collect();
                spans.push(Span {
                    name: json["name"].as_str().unwrap_or_default().to_owned(),
                    trace_id: id(&json["traceId"]),
                    span_id: id(&json["spanId"]),
                    parent_span_id: id(&json["parentSpanId"]),
                    attributes,
                    ..Span::default()
                });
            }
        }
    }
    spans
}

// ------------------------------------------------------------ span helpers

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A span's attributes as strings.
fn attributes(span: &Span) -> HashMap<String, String> {
    span.attributes
        .iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => s.clone(),
                Some(any_value::Value::IntValue(i)) => i.to_string(),
                Some(any_value::Value::DoubleValue(d)) => d.to_string(),
                Some(any_value::Value::BoolValue(b)) => b.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn the_chain_span(spans: &[Span]) -> &Span {
    let chains = named(spans, "chainbox.chain");
    assert_eq!(chains.len(), 1, "one chain span: {spans:#?}");
    chains[0]
}

fn call_spans(spans: &[Span]) -> Vec<&Span> {
    spans.iter().filter(|s| s.name.starts_with("execute_tool ")).collect()
}

// ------------------------------------------------------------ the fixture

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A folder with a manifest of `tp` (a command tool writing the
/// `TRACEPARENT` it sees to `tp-N.txt`, N its `n` argument) and the MCP
/// server `rec` (logging what it receives to `rec.log`).
struct Fixture {
    dir: tempfile::TempDir,
}

/// Two calls gathered, then one to the MCP server with an argument that
/// must not be exported.
const SCRIPT: &str = r#"
import asyncio
a, b = await asyncio.gather(tp(n=1), tp(n=2))
c = await rec__quick(tag="s3cret-argument-value")
[a, b, c]
"#;

impl Fixture {
    fn new() -> Self {
        Self::with_tp_risk("safe")
    }

    /// The fixture with `tp` of `risk` (above `safe` it needs approval).
    fn with_tp_risk(risk: &str) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let tool = dir.path().join("tp.py");
        std::fs::write(
            &tool,
            "import json, os, sys\n\
             request = json.load(sys.stdin)\n\
             n = request['arguments']['n']\n\
             with open(os.path.join(sys.argv[1], 'tp-%d.txt' % n), 'w') as f:\n\
             \x20   f.write(os.environ.get('TRACEPARENT', ''))\n\
             print(json.dumps(n))\n",
        )
        .expect("writing tp.py");
        let servers = repo().join("tests/mcp-servers");
        let path = |name: &str| dir.path().join(name).display().to_string();
        let tp = ["python3".to_owned(), tool.display().to_string(), path("")];
        let rec = [
            "python3".to_owned(),
            servers.join("recording_server.py").display().to_string(),
            path("rec.log"),
            path("rec.pid"),
        ];
        let manifest = format!(
            r#"
[[tool]]
name = "tp"
description = "Writes its TRACEPARENT."
risk = "{risk}"
command = {tp:?}
[tool.input_schema]
type = "object"
required = ["n"]
properties.n = {{ type = "integer" }}

[[mcp]]
name = "rec"
command = {rec:?}
"#
        );
        std::fs::write(dir.path().join("manifest.toml"), manifest).expect("writing the manifest");
        std::fs::write(dir.path().join("chain.py"), SCRIPT).expect("writing the script");
        Fixture { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `chainbox run chain.py --json` on the manifest, with no `OTEL_*`
    /// variable of the test's own environment, then `env`; the chain
    /// completes.
    fn run(&self, env: &[(&str, String)]) {
        let (result, out) = self.run_with(&[], env);
        assert_eq!(
            result["status"],
            "ok",
            "{result:#}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// [`Fixture::run`] with `args` added, however the chain ends: its
    /// result and the process's output.
    fn run_with(&self, args: &[&str], env: &[(&str, String)]) -> (Value, Output) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_chainbox"));
        cmd.current_dir(repo())
            .arg("run")
            .arg(self.path("chain.py"))
            .arg("--tools")
            .arg(self.path("manifest.toml"))
            .arg("--json")
            .args(args)
            .stdin(Stdio::null());
        for name in inherited_otel_env() {
            cmd.env_remove(name);
        }
        for (name, value) in env {
            cmd.env(name, value);
        }
        let out = cmd.output().expect("running chainbox");
        let result: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON result ({e}): {out:#?}"));
        (result, out)
    }

    /// The `TRACEPARENT` call `n` of `tp` saw.
    fn seen_traceparent(&self, n: u32) -> String {
        std::fs::read_to_string(self.path(&format!("tp-{n}.txt"))).expect("tp wrote its file")
    }

    /// The `_meta` of every `tools/call` the MCP server received.
    fn rec_call_metas(&self) -> Vec<Value> {
        let log = std::fs::read_to_string(self.path("rec.log")).unwrap_or_default();
        log.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|m| m["method"] == "tools/call")
            .map(|m| m["params"]["_meta"].clone())
            .collect()
    }
}

/// The test process's own OpenTelemetry and log settings, which a child
/// must not inherit.
fn inherited_otel_env() -> Vec<String> {
    std::env::vars()
        .map(|(name, _)| name)
        .filter(|name| {
            name.starts_with("OTEL_") || ["TRACEPARENT", "TRACESTATE", "CHAINBOX_LOG"].contains(&name.as_str())
        })
        .collect()
}

fn otel_env(collector: &Collector) -> Vec<(&'static str, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()),
        ("TRACEPARENT", caller_traceparent()),
    ]
}

// ------------------------------------------------------------ chainbox run

#[test]
fn run_exports_one_trace_the_chain_span_parent_of_every_call_span() {
    let collector = Collector::start();
    let fixture = Fixture::new();
    fixture.run(&otel_env(&collector));

    let spans = collector.wait_for_spans(|spans| !spans.is_empty());
    let chain = the_chain_span(&spans);
    let calls = call_spans(&spans);
    assert_eq!(calls.len(), 3, "{spans:#?}");
    let chain_id = hex(&chain.span_id);
    for call in &calls {
        assert_eq!(hex(&call.trace_id), hex(&chain.trace_id), "one trace: {call:#?}");
        assert_eq!(hex(&call.parent_span_id), chain_id, "a child of the chain: {call:#?}");
    }
    let mut names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["execute_tool rec__quick", "execute_tool tp", "execute_tool tp"]);
}

#[test]
fn run_exports_protobuf_by_default() {
    let collector = Collector::start();
    let fixture = Fixture::new();
    fixture.run(&otel_env(&collector));

    collector.wait_for_spans(|spans| !spans.is_empty());
    let exports = collector.received();
    assert!(!exports.is_empty());
    for export in &exports {
        assert_eq!(export.content_type, "application/x-protobuf", "{export:?}");
    }
}

#[test]
fn a_cpython_chain_exports_the_same_tree() {
    let collector = Collector::start();
    let fixture = Fixture::new();
    let (result, _) = fixture.run_with(&["--python", "cpython"], &otel_env(&collector));
    assert_eq!(result["status"], "ok", "{result:#}");
    assert_eq!(result["interpreter"], "cpython", "{result:#}");

    let spans = collector.wait_for_spans(|spans| !spans.is_empty());
    let chain = the_chain_span(&spans);
    assert_eq!(attributes(chain)["chainbox.interpreter"], "cpython");
    let calls = call_spans(&spans);
    assert_eq!(calls.len(), 3, "{spans:#?}");
    assert!(calls.iter().all(|c| c.parent_span_id == chain.span_id), "{spans:#?}");
}

#[test]
fn a_grpc_protocol_is_refused_by_name_and_the_chain_still_runs() {
    let collector = Collector::start();
    let fixture = Fixture::new();
    let mut env = otel_env(&collector);
    env.push(("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".to_owned()));
    let (result, out) = fixture.run_with(&[], &env);
    assert_eq!(result["status"], "ok", "{result:#}");

    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL=\"grpc\"") && stderr.contains("OTLP over HTTP only"),
        "{stderr}"
    );
    assert!(collector.received().is_empty(), "{:#?}", collector.received());
}

#[test]
fn run_continues_the_trace_of_the_traceparent_variable() {
    let collector = Collector::start();
    let fixture = Fixture::new();
    fixture.run(&otel_env(&collector));

    let spans = collector.wait_for_spans(|spans| !spans.is_empty());
    let chain = the_chain_span(&spans);
    assert_eq!(hex(&chain.trace_id), CALLER_TRACE);
    assert_eq!(hex(&chain.parent_span_id), CALLER_SPAN);
}

#[test]
fn chain_and_call_spans_carry_their_attributes_and_never_raw_arguments() {
    let collector = Collector::start();
    let fixture = Fixture::new();
    fixture.run(&otel_env(&collector));

    let spans = collector.wait_for_spans(|spans| !spans.is_empty());
    let chain = attributes(the_chain_span(&spans));
    assert_eq!(chain["chainbox.status"], "ok", "{chain:#?}");
    assert_eq!(chain["chainbox.interpreter"], "monty", "{chain:#?}");
    assert_eq!(chain["chainbox.tool_calls"], "3", "{chain:#?}");
    assert!(chain.contains_key("chainbox.cpu_ms"), "{chain:#?}");
    assert!(chain.contains_key("chainbox.peak_memory_bytes"), "{chain:#?}");
    assert!(chain["chainbox.chain.id"].starts_with("chain-"), "{chain:#?}");

    for call in call_spans(&spans) {
        let a = attributes(call);
        assert_eq!(a["gen_ai.operation.name"], "execute_tool", "{a:#?}");
        assert_eq!(format!("execute_tool {}", a["gen_ai.tool.name"]), call.name, "{a:#?}");
        assert!(a["gen_ai.tool.call.id"].starts_with("call_"), "{a:#?}");
        assert_eq!(a["chainbox.args_digest"].len(), 64, "a sha256 digest: {a:#?}");
        assert_eq!(a["chainbox.status"], "ok", "{a:#?}");
        assert_eq!(a["chainbox.policy"], "within_risk", "{a:#?}");
        assert_eq!(a["chainbox.risk"], "safe", "{a:#?}");
    }
    let everything = format!("{spans:?}");
    assert!(
        !everything.contains(SECRET_ARG),
        "a raw argument was exported: {spans:#?}"
    );
}

#[test]
fn a_command_tool_gets_its_call_spans_traceparent() {
    let collector = Collector::start();
    let fixture = Fixture::new();
    fixture.run(&otel_env(&collector));

    let spans = collector.wait_for_spans(|spans| !spans.is_empty());
    let tp_spans: Vec<String> = named(&spans, "execute_tool tp")
        .iter()
        .map(|s| hex(&s.span_id))
        .collect();
    for n in [1, 2] {
        let seen = fixture.seen_traceparent(n);
        let parts: Vec<&str> = seen.split('-').collect();
        assert_eq!(parts.len(), 4, "a traceparent: {seen:?}");
        assert_eq!(parts[1], CALLER_TRACE, "{seen:?}");
        assert!(
            tp_spans.contains(&parts[2].to_owned()),
            "{seen:?} names a tp call span: {tp_spans:?}"
        );
    }
    assert_ne!(
        fixture.seen_traceparent(1),
        fixture.seen_traceparent(2),
        "each call its own span"
    );
}

#[test]
fn an_upstream_mcp_server_gets_its_call_spans_traceparent_in_meta() {
    let collector = Collector::start();
    let fixture = Fixture::new();
    fixture.run(&otel_env(&collector));

    let spans = collector.wait_for_spans(|spans| !spans.is_empty());
    let rec = named(&spans, "execute_tool rec__quick");
    assert_eq!(rec.len(), 1, "{spans:#?}");
    let metas = fixture.rec_call_metas();
    assert_eq!(metas.len(), 1, "{metas:#?}");
    let expected = format!("00-{CALLER_TRACE}-{}-01", hex(&rec[0].span_id));
    assert_eq!(metas[0]["traceparent"], expected.as_str(), "{metas:#?}");
}

#[test]
fn an_approval_wait_is_a_span_under_its_call() {
    let collector = Collector::start();
    let fixture = Fixture::with_tp_risk("high");
    let (result, _) = fixture.run_with(&["--approve", "auto"], &otel_env(&collector));
    assert_eq!(result["status"], "ok", "{result:#}");

    let spans = collector.wait_for_spans(|spans| !spans.is_empty());
    let tp: Vec<&Span> = named(&spans, "execute_tool tp");
    let approvals = named(&spans, "chainbox.approval");
    assert_eq!(approvals.len(), 2, "one per tp call: {spans:#?}");
    for approval in approvals {
        assert!(
            tp.iter().any(|t| t.span_id == approval.parent_span_id),
            "under a tp call: {spans:#?}"
        );
        let a = attributes(approval);
        assert_eq!(a["chainbox.risk"], "high", "{a:#?}");
        assert_eq!(a["chainbox.approval.decision"], "approved", "{a:#?}");
    }
    for call in tp {
        let a = attributes(call);
        assert_eq!(a["chainbox.policy"], "approved", "{a:#?}");
        assert_eq!(a["chainbox.risk"], "high", "{a:#?}");
    }
}

#[test]
fn a_suspended_chain_ends_its_span_as_suspended_with_the_event_on_the_call() {
    let collector = Collector::start();
    let fixture = Fixture::with_tp_risk("high");
    let state = format!("sqlite:{}", fixture.path("chains.db").display());
    let (result, out) = fixture.run_with(&["--approve", "defer", "--state", &state], &otel_env(&collector));
    assert_eq!(result["status"], "suspended", "{result:#}");
    assert_eq!(out.status.code(), Some(3));

    let spans = collector.wait_for_spans(|spans| !spans.is_empty());
    let chain = the_chain_span(&spans);
    assert_eq!(attributes(chain)["chainbox.status"], "suspended");
    let status = chain.status.clone().unwrap_or_default();
    assert_ne!(status.code, 2, "a suspension is no error: {chain:#?}");
    let suspended: Vec<&Span> = named(&spans, "execute_tool tp")
        .into_iter()
        .filter(|s| s.events.iter().any(|e| e.name == "chainbox.suspended"))
        .collect();
    assert!(!suspended.is_empty(), "a tp call carries the suspension: {spans:#?}");
}

#[test]
fn run_exports_over_http_json_when_the_protocol_says_so() {
    let collector = Collector::start();
    let fixture = Fixture::new();
    let mut env = otel_env(&collector);
    env.push(("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json".to_owned()));
    fixture.run(&env);

    let spans = collector.wait_for_spans(|spans| !spans.is_empty());
    let traces: Vec<Received> = collector
        .received()
        .into_iter()
        .filter(|r| r.path == "/v1/traces")
        .collect();
    assert!(traces.iter().all(Received::is_json), "{traces:#?}");
    assert_eq!(hex(&the_chain_span(&spans).trace_id), CALLER_TRACE);
    assert_eq!(call_spans(&spans).len(), 3, "{spans:#?}");
}

#[test]
fn without_otel_variables_nothing_is_sent_and_tools_get_no_traceparent() {
    let collector = Collector::start();
    let fixture = Fixture::new();
    // A caller's trace alone exports nothing: no endpoint, no exporter.
    fixture.run(&[("TRACEPARENT", caller_traceparent())]);

    std::thread::sleep(Duration::from_millis(300));
    assert!(collector.received().is_empty(), "{:#?}", collector.received());
    assert_eq!(fixture.seen_traceparent(1), "");
    let metas = fixture.rec_call_metas();
    assert_eq!(metas.len(), 1, "{metas:#?}");
    assert!(metas[0].get("traceparent").is_none(), "{metas:#?}");
}

#[test]
fn otel_sdk_disabled_turns_the_export_off() {
    let collector = Collector::start();
    let fixture = Fixture::new();
    let mut env = otel_env(&collector);
    env.push(("OTEL_SDK_DISABLED", "true".to_owned()));
    fixture.run(&env);

    std::thread::sleep(Duration::from_millis(300));
    assert!(collector.received().is_empty(), "{:#?}", collector.received());
}

#[test]
fn run_exports_chain_and_tool_call_metrics() {
    let collector = Collector::start();
    let fixture = Fixture::new();
    fixture.run(&otel_env(&collector));

    let exports = collector.metrics();
    // Each data point of metric `name`: its attributes, and its count (a
    // sum's value or a histogram's count).
    let points = |name: &str| -> Vec<(HashMap<String, String>, u64)> {
        let attrs = |kvs: &[KeyValue]| -> HashMap<String, String> {
            kvs.iter()
                .map(|kv| {
                    let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                        Some(any_value::Value::StringValue(s)) => s.clone(),
                        other => format!("{other:?}"),
                    };
                    (kv.key.clone(), value)
                })
                .collect()
        };
        exports
            .iter()
            .flat_map(|e| &e.resource_metrics)
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| &s.metrics)
            .filter(|m| m.name == name)
            .flat_map(|m| match &m.data {
                Some(Data::Sum(sum)) => sum
                    .data_points
                    .iter()
                    .map(|p| {
                        let count = match p.value {
                            Some(number_data_point::Value::AsInt(i)) => i as u64,
                            Some(number_data_point::Value::AsDouble(d)) => d as u64,
                            None => 0,
                        };
                        (attrs(&p.attributes), count)
                    })
                    .collect::<Vec<_>>(),
                Some(Data::Histogram(h)) => h.data_points.iter().map(|p| (attrs(&p.attributes), p.count)).collect(),
                _ => Vec::new(),
            })
            .collect()
    };
    let chains = points("chainbox.chains");
    assert_eq!(chains.len(), 1, "{exports:#?}");
    assert_eq!(chains[0].0["chainbox.status"], "ok");
    assert_eq!(chains[0].0["chainbox.interpreter"], "monty");
    assert_eq!(chains[0].1, 1);
    let calls = points("chainbox.tool_calls");
    let tp = calls
        .iter()
        .find(|(a, _)| a.get("gen_ai.tool.name").map(String::as_str) == Some("tp"))
        .unwrap_or_else(|| panic!("{calls:#?}"));
    assert_eq!(tp.0["chainbox.status"], "ok");
    assert_eq!(tp.1, 2, "{calls:#?}");
    let durations = points("chainbox.chain.duration");
    assert_eq!(durations.len(), 1, "{exports:#?}");
    assert_eq!(durations[0].1, 1, "{durations:#?}");
    let call_durations = points("chainbox.tool_call.duration");
    assert_eq!(
        call_durations.iter().map(|(_, n)| n).sum::<u64>(),
        3,
        "{call_durations:#?}"
    );
}

// ------------------------------------------------------------ chainbox serve

#[tokio::test(flavor = "multi_thread")]
async fn serve_continues_the_clients_trace_from_meta_traceparent_and_flushes_on_shutdown() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, RequestMetaObject};
    use rmcp::transport::StreamableHttpClientTransport;
    use tokio::io::AsyncBufReadExt;

    let collector = Collector::start();
    let fixture = Fixture::new();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_chainbox"));
    cmd.current_dir(repo())
        .arg("serve")
        .arg("--tools")
        .arg(fixture.path("manifest.toml"))
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for name in inherited_otel_env() {
        cmd.env_remove(name);
    }
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint());
    let mut child = cmd.spawn().expect("spawning chainbox serve");
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().expect("piped stderr")).lines();
    let url = tokio::time::timeout(Duration::from_secs(300), async {
        while let Some(line) = stderr.next_line().await.expect("reading stderr") {
            if let Some(url) = line.strip_prefix("chainbox: serving MCP at ") {
                return url.to_owned();
            }
        }
        panic!("serve ended without serving");
    })
    .await
    .expect("serve starts in time");

    let client = ().serve(StreamableHttpClientTransport::from_uri(url)).await.expect("the MCP session starts");
    let mut arguments = Map::new();
    arguments.insert("code".into(), Value::String(SCRIPT.into()));
    let mut params = CallToolRequestParams::new("run_chain").with_arguments(arguments);
    let mut meta = RequestMetaObject::new();
    meta.set_traceparent(caller_traceparent());
    params.meta = Some(meta);
    let result = client.call_tool(params).await.expect("run_chain answers");
    assert_eq!(result.is_error, Some(false), "{result:#?}");
    let _ = client.cancel().await;

    // SIGTERM: serve stops in order and sends what it has buffered.
    let pid = child.id().expect("a running child") as i32;
    // SAFETY: only sends a signal to our own child.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let _ = tokio::time::timeout(WITHIN, child.wait())
        .await
        .expect("serve stops in time");

    let spans = collector.spans();
    let chain = the_chain_span(&spans);
    assert_eq!(hex(&chain.trace_id), CALLER_TRACE, "{spans:#?}");
    assert_eq!(hex(&chain.parent_span_id), CALLER_SPAN, "{spans:#?}");
    let calls = call_spans(&spans);
    assert_eq!(calls.len(), 3, "{spans:#?}");
    assert!(calls.iter().all(|c| c.parent_span_id == chain.span_id), "{spans:#?}");
    let rec = named(&spans, "execute_tool rec__quick");
    let expected = format!("00-{CALLER_TRACE}-{}-01", hex(&rec[0].span_id));
    assert_eq!(fixture.rec_call_metas()[0]["traceparent"], expected.as_str());
}

// ------------------------------------------------------------ the library

#[tokio::test(flavor = "current_thread")]
async fn library_spans_nest_under_the_embedders_current_span() {
    use tracing::Instrument as _;

    let collector = Collector::start();
    // The embedder's own subscriber and OpenTelemetry layer, on this
    // thread (the runtime's only one).
    let (_default, provider) = embedder_tracing(&collector);

    let request = tracing::info_span!("embedder.request");
    let result = crate::fixtures::engine()
        .run(
            "import asyncio\nawait asyncio.gather(add(a=1, b=2), add(a=3, b=4))",
            &crate::fixtures::registry(),
            &chainbox::ChainPolicy::default(),
            &chainbox::Approval::auto(chainbox::ToolRisk::Critical),
        )
        .instrument(request.clone())
        .await;
    crate::fixtures::assert_ok(&result);
    drop(request);
    provider.shutdown().expect("the spans are sent");

    let spans = collector.spans();
    let embedder = named(&spans, "embedder.request");
    assert_eq!(embedder.len(), 1, "{spans:#?}");
    let chain = the_chain_span(&spans);
    assert_eq!(chain.parent_span_id, embedder[0].span_id, "{spans:#?}");
    let calls = named(&spans, "execute_tool add");
    assert_eq!(calls.len(), 2, "{spans:#?}");
    assert!(
        calls.iter().all(|c| c.parent_span_id == chain.span_id),
        "siblings under the chain: {spans:#?}"
    );
}

/// An embedder's subscriber exporting to `collector` on this thread, and
/// its provider (shut it down to send the spans).
fn embedder_tracing(
    collector: &Collector,
) -> (
    tracing::subscriber::DefaultGuard,
    opentelemetry_sdk::trace::SdkTracerProvider,
) {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::WithExportConfig as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(format!("{}/v1/traces", collector.endpoint()))
        .build()
        .expect("an OTLP exporter");
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build();
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(provider.tracer("embedder")));
    (tracing::subscriber::set_default(subscriber), provider)
}

/// A chain run for alice (of `https://id.example`), through the library.
async fn run_for_alice() -> chainbox::ChainRunResult {
    let options = chainbox::RunOptions {
        principal: Some(chainbox::Principal::new(
            "https://id.example",
            "alice",
            ["chainbox:run".to_owned()],
        )),
        ..chainbox::RunOptions::default()
    };
    crate::fixtures::engine()
        .run_with(
            "await add(a=1, b=2)",
            &crate::fixtures::registry(),
            &chainbox::ChainPolicy::default(),
            &chainbox::Approval::auto(chainbox::ToolRisk::Critical),
            options,
        )
        .await
}

#[tokio::test(flavor = "current_thread")]
async fn a_chain_run_for_a_principal_names_its_subject_and_issuer_on_its_span() {
    let collector = Collector::start();
    let (default, provider) = embedder_tracing(&collector);
    let result = run_for_alice().await;
    crate::fixtures::assert_ok(&result);
    drop(default);
    provider.shutdown().expect("the spans are sent");

    let spans = collector.spans();
    let chain = attributes(the_chain_span(&spans));
    assert_eq!(chain.get("enduser.id").map(String::as_str), Some("alice"), "{chain:#?}");
    assert_eq!(
        chain.get("chainbox.principal.issuer").map(String::as_str),
        Some("https://id.example"),
        "{chain:#?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_chain_without_a_principal_has_no_enduser_on_its_span() {
    let collector = Collector::start();
    let (default, provider) = embedder_tracing(&collector);
    let result = crate::fixtures::run("await add(a=1, b=2)").await;
    crate::fixtures::assert_ok(&result);
    drop(default);
    provider.shutdown().expect("the spans are sent");

    let chain = attributes(the_chain_span(&collector.spans()));
    assert!(!chain.contains_key("enduser.id"), "{chain:#?}");
    assert!(!chain.contains_key("chainbox.principal.issuer"), "{chain:#?}");
}

/// What a `tracing_subscriber::fmt` layer writes, kept for the test.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("the buffer").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("the buffer")).into_owned()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_audit_line_of_a_call_names_the_principal_the_chain_runs_for() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("chainbox::audit=info")
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let default = tracing::subscriber::set_default(subscriber);
    let result = run_for_alice().await;
    crate::fixtures::assert_ok(&result);
    drop(default);

    let text = captured.text();
    let line = text
        .lines()
        .find(|l| l.contains("tool call") && l.contains("tool=add"))
        .unwrap_or_else(|| panic!("no audit line for the call:\n{text}"));
    assert!(line.contains("principal_subject=\"alice\""), "{line}");
    assert!(line.contains("principal_issuer=\"https://id.example\""), "{line}");
}
