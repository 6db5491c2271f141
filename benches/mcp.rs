//! One MCP tool call inside a chain next to the same call made directly
//! with the rmcp client, against the real `@modelcontextprotocol/server-everything`
//! (its `get-sum` tool) over stdio:
//! - `direct_rmcp`: `peer.call_tool` on an rmcp client connection, nothing else;
//! - `chain_mcp`: a chain `await everything__get_sum(a=1, b=2)` whose tool is
//!   the server's, through chainbox's upstream connection and every invoker gate;
//! - `chain_noop`: the same chain shape calling a no-op Rust tool, so
//!   `chain_mcp - chain_noop` is what the MCP round trip adds to a chain.
//!
//! The servers are found like the tests find them (`$CHAINBOX_MCP_SERVERS`,
//! else `target/mcp-servers`, installed by `tests/mcp-servers/install.sh`
//! when missing). Without `node` the bench prints why and measures nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use async_trait::async_trait;
use chainbox::mcp::config::McpServer;
use chainbox::mcp::upstream::McpUpstream;
use chainbox::{
    Approval, ChainPolicy, Engine, Tool, ToolContext, ToolError, ToolInfo, ToolOutput, ToolRegistry, ToolRisk,
};
use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value, json};

struct Noop(ToolInfo);

#[async_trait]
impl Tool for Noop {
    fn info(&self) -> &ToolInfo {
        &self.0
    }
    async fn execute(&self, _ctx: ToolContext, _args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Value(Value::Null))
    }
}

/// server-everything's entry point, installing the servers if needed.
fn everything_script() -> Option<String> {
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("benches/mcp.rs: `node` is not installed; nothing to measure");
        return None;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("CHAINBOX_MCP_SERVERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/mcp-servers"));
    let status = Command::new(root.join("tests/mcp-servers/install.sh"))
        .env("CHAINBOX_MCP_SERVERS", &dir)
        .status()
        .expect("running tests/mcp-servers/install.sh");
    assert!(status.success(), "installing the MCP servers failed");
    Some(
        dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
            .display()
            .to_string(),
    )
}

fn benches(c: &mut Criterion) {
    let Some(script) = everything_script() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = Engine::new().expect("engine");
    let policy = ChainPolicy::default();
    let approval = Approval::auto(ToolRisk::Safe);

    let server = McpServer {
        name: "everything".into(),
        command: vec!["node".into(), script.clone(), "stdio".into()],
        ..McpServer::default()
    };
    let upstream = runtime.block_on(McpUpstream::connect(&server)).expect("connect");
    let mut tools = upstream.into_tools();
    tools.push(Arc::new(Noop(ToolInfo::new(
        "noop",
        "Does nothing.",
        json!({"type": "object", "properties": {}}),
    ))));
    let registry = ToolRegistry::from_local(tools).expect("registry");

    let direct = runtime.block_on(async {
        let mut cmd = tokio::process::Command::new("node");
        cmd.args([script.as_str(), "stdio"]).kill_on_drop(true);
        let transport = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn")
            .0;
        ().serve(transport).await.expect("rmcp client")
    });
    let args = json!({"a": 1, "b": 2}).as_object().cloned().unwrap_or_default();
    let call = || CallToolRequestParams::new("get-sum").with_arguments(args.clone());

    let chain_mcp = "await everything__get_sum(a=1, b=2)";
    let r = runtime.block_on(engine.run(chain_mcp, &registry, &policy, &approval));
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(r.output, json!("The sum of 1 and 2 is 3."));

    let mut group = c.benchmark_group("mcp_call");
    group.bench_function("direct_rmcp", |b| {
        b.to_async(&runtime)
            .iter(|| async { direct.peer().call_tool(call()).await.expect("call") })
    });
    group.bench_function("chain_mcp", |b| {
        b.to_async(&runtime)
            .iter(|| engine.run(chain_mcp, &registry, &policy, &approval))
    });
    group.bench_function("chain_noop", |b| {
        b.to_async(&runtime)
            .iter(|| engine.run("await noop()", &registry, &policy, &approval))
    });
    group.finish();
    drop(direct);
}

criterion_group!(mcp, benches);
criterion_main!(mcp);
