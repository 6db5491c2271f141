//! A durable chain: it suspends at a call that needs a human's approval,
//! holding nothing while it waits, and is resumed later (by this process
//! here, by any process that reaches the store in real life), its earlier
//! calls answered from its journal.
//!
//! Run with `cargo run --release --example durable`. The store is a SQLite
//! file in a temporary directory; `postgres://…` works the same for many
//! machines.

use std::sync::Arc;

use async_trait::async_trait;
use chainbox::approval::ApprovalDecision;
use chainbox::{
    Approval, ChainPolicy, ChainStatus, Engine, Tool, ToolContext, ToolError, ToolInfo, ToolOutput, ToolRegistry,
    ToolRisk,
};
use serde_json::{Map, Value, json};

/// A tool that returns its arguments, at a risk.
struct Echo {
    info: ToolInfo,
}

#[async_trait]
impl Tool for Echo {
    fn info(&self) -> &ToolInfo {
        &self.info
    }
    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        Ok(Value::Object(args).into())
    }
}

fn tool(name: &str, risk: ToolRisk) -> Arc<dyn Tool> {
    let schema = json!({"type": "object", "additionalProperties": true});
    Arc::new(Echo {
        info: ToolInfo::new(name, "Returns its arguments.", schema).with_risk(risk),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = chainbox::store::connect(&format!("sqlite:{}", dir.path().join("chains.db").display())).await?;
    let engine = Engine::new()?;
    let registry = ToolRegistry::from_local([tool("quote", ToolRisk::Safe), tool("transfer", ToolRisk::Critical)])?;
    let script = r#"
q = await quote(amount=120, currency="EUR")
receipt = await transfer(to="ACME", amount=q["amount"])
f"sent {receipt['amount']} to {receipt['to']}"
"#;
    // Defer: a call needing approval suspends the chain instead of waiting.
    let first = engine
        .run_durable(&store, script, &registry, &ChainPolicy::default(), &Approval::defer())
        .await?;
    if first.status != ChainStatus::Suspended {
        return Err(format!("the chain did not suspend: {}", serde_json::to_string_pretty(&first)?).into());
    }
    let chain_id = first.chain_id.clone().unwrap_or_default();
    let pending = first.pending.as_ref().ok_or("no pending call")?;
    println!(
        "suspended: {chain_id} waits on {}({})",
        pending.tool,
        serde_json::to_string(&pending.arguments)?
    );

    // Later, anywhere the store is reachable: a human decides, and the
    // chain resumes. `quote` does not run again.
    engine
        .durable(store.clone())
        .decide(&chain_id, ApprovalDecision::Approved, "alice")
        .await?;
    let done = engine.resume(&store, &chain_id, &registry, &Approval::defer()).await?;
    println!("{}: {}", done.status, done.output_text);
    for record in &done.call_trace {
        println!("  {} {} replayed={}", record.tool, record.status, record.replayed);
    }
    Ok(())
}
