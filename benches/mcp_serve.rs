//! What `run_chain` over MCP adds to a chain: the trivial chain (`1 + 1`)
//! run directly with `Engine::run`, and the same chain as a `tools/call` of
//! `run_chain` from the official Rust SDK's client to `ChainServer` over an
//! in-process pipe (JSON-RPC framing, serde both ways, the SDK's tasks; no
//! process or socket). The difference is the protocol's overhead per call.
//!
//! Then the same call over streamable HTTP (`serve_http` on loopback, in a
//! session of protocol 2025-11-25 as most clients open, each POST written
//! and read by hand over a `TcpStream`): on one kept-open connection, and on
//! a new connection per call. The two differ by the connection's set-up,
//! and by nothing else unless a response stalls on the open connection: a
//! session's response goes out in two writes (its SSE priming event, then
//! the result), and before `TCP_NODELAY` Nagle's algorithm held the second
//! for the client's delayed ACK of the first, ~40 ms.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use chainbox::mcp::serve::{self, ChainServer};
use chainbox::{Approval, ChainPolicy, Engine, ToolRegistry, ToolRisk};
use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value};

const TRIVIAL: &str = "1 + 1";

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = Engine::new().expect("engine");
    let registry = ToolRegistry::new();
    let policy = ChainPolicy::default();
    let approval = Approval::auto(ToolRisk::Safe);

    let mut group = c.benchmark_group("mcp");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("direct_engine_run", |b| {
        b.to_async(&runtime)
            .iter(|| async { engine.run(TRIVIAL, &registry, &policy, &approval).await })
    });

    let server = ChainServer::new(engine.clone(), registry.clone(), policy.clone(), approval.clone());
    let client = runtime.block_on(async {
        let (server_io, client_io) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        ().serve(client_io).await.expect("MCP session")
    });
    let mut arguments = Map::new();
    arguments.insert("code".into(), Value::String(TRIVIAL.into()));
    let request = CallToolRequestParams::new("run_chain").with_arguments(arguments);
    group.bench_function("run_chain_over_mcp", |b| {
        b.to_async(&runtime)
            .iter(|| async { client.call_tool(request.clone()).await.expect("tools/call") })
    });

    let server = ChainServer::new(engine.clone(), registry.clone(), policy.clone(), approval.clone());
    let listener = serve::bind_http(([127, 0, 0, 1], 0).into(), &serve::HttpAccess::Loopback).expect("bind");
    let addr = listener.local_addr().expect("bound address");
    let shutdown = tokio_util::sync::CancellationToken::new();
    let stop = shutdown.clone();
    let _guard = runtime.enter();
    runtime.spawn(async move { serve::serve_http(server, listener, serve::HttpAccess::Loopback, stop).await });
    let mut kept = TcpStream::connect(addr).expect("connect");
    let session = open_session(&mut kept, addr);
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"run_chain","arguments":{{"code":"{TRIVIAL}"}}}}}}"#
    );
    group.bench_function("run_chain_over_http_kept_open_connection", |b| {
        b.iter(|| exchange(&mut kept, addr, &session, &call))
    });
    group.bench_function("run_chain_over_http_new_connection", |b| {
        b.iter(|| {
            let mut stream = TcpStream::connect(addr).expect("connect");
            exchange(&mut stream, addr, &session, &call)
        })
    });
    group.finish();
    shutdown.cancel();
    runtime.block_on(async {
        let _ = client.cancel().await;
    });
}

/// Opens a session on `stream` (`initialize`, `notifications/initialized`)
/// and returns the headers its requests carry.
fn open_session(stream: &mut TcpStream, addr: SocketAddr) -> String {
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
    let (_, session) = exchange(stream, addr, "", initialize);
    let headers = format!(
        "Mcp-Session-Id: {}\r\nMCP-Protocol-Version: 2025-11-25\r\n",
        session.expect("a session id")
    );
    exchange(
        stream,
        addr,
        &headers,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    headers
}

/// One POST of `body` with `headers` on `stream`, in one write, and its
/// response read to the end (a chunked SSE body): the body's length, and
/// the session id the response named, if any.
fn exchange(stream: &mut TcpStream, addr: SocketAddr, headers: &str, body: &str) -> (usize, Option<String>) {
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    let (mut length, mut chunked, mut session) = (None, false, None);
    reader.read_line(&mut line).expect("status line");
    assert!(line.contains(" 200 ") || line.contains(" 202 "), "{line}");
    loop {
        line.clear();
        reader.read_line(&mut line).expect("header");
        let header = line.trim_end().to_ascii_lowercase();
        if header.is_empty() {
            break;
        }
        if let Some(n) = header.strip_prefix("content-length:") {
            length = n.trim().parse::<usize>().ok();
        }
        if header.starts_with("mcp-session-id:") {
            session = line.split_once(':').map(|(_, id)| id.trim().to_owned());
        }
        chunked |= header.starts_with("transfer-encoding:") && header.contains("chunked");
    }
    let mut total = 0;
    if chunked {
        loop {
            line.clear();
            reader.read_line(&mut line).expect("chunk size");
            let size = usize::from_str_radix(line.trim(), 16).expect("hex size");
            let mut chunk = vec![0u8; size + 2];
            reader.read_exact(&mut chunk).expect("chunk");
            total += size;
            if size == 0 {
                break;
            }
        }
    } else if let Some(n) = length {
        let mut body = vec![0u8; n];
        reader.read_exact(&mut body).expect("body");
        total = n;
    }
    (total, session)
}

criterion_group!(benches, bench);
criterion_main!(benches);
