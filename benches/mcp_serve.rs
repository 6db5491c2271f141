//! What `run_chain` over MCP adds to a chain: the trivial chain (`1 + 1`)
//! run directly with `Engine::run`, and the same chain as a `tools/call` of
//! `run_chain` from the official Rust SDK's client to `ChainServer` over an
//! in-process pipe (JSON-RPC framing, serde both ways, the SDK's tasks; no
//! process or socket). The difference is the protocol's overhead per call.

use std::time::Duration;

use chainbox::mcp::serve::ChainServer;
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
    group.finish();
    runtime.block_on(async {
        let _ = client.cancel().await;
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
