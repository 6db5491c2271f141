//! A session: three scripts run as cells of one Python REPL kept in a
//! chain store. Each cell sees the names the earlier ones bound; the tool
//! calls of earlier cells are answered from the session's journal, never
//! made again. Any process that reaches the store could run the next cell.
//!
//! Run with `cargo run --release --example session`. The store is a SQLite
//! file in a temporary directory; `postgres://…` works the same for many
//! machines.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use chainbox::durable::NEW_SESSION;
use chainbox::{Approval, ChainPolicy, Engine, Tool, ToolContext, ToolError, ToolInfo, ToolOutput, ToolRegistry};
use serde_json::{Map, Value, json};

/// `lookup(city)`: a temperature, counting its runs.
struct Lookup {
    info: ToolInfo,
    runs: Arc<AtomicUsize>,
}

#[async_trait]
impl Tool for Lookup {
    fn info(&self) -> &ToolInfo {
        &self.info
    }
    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::Relaxed);
        let city = args.get("city").and_then(Value::as_str).unwrap_or_default();
        Ok(json!({"city": city, "celsius": 10 + city.len()}).into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = chainbox::store::connect(&format!("sqlite:{}", dir.path().join("chains.db").display())).await?;
    let engine = Engine::new()?;
    let runs = Arc::new(AtomicUsize::new(0));
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let lookup = Lookup {
        info: ToolInfo::new("lookup", "The temperature in a city.", schema),
        runs: runs.clone(),
    };
    let registry = ToolRegistry::from_local([Arc::new(lookup) as Arc<dyn Tool>])?;
    let (policy, approval) = (ChainPolicy::default(), Approval::deny_all());

    let mut session = NEW_SESSION.to_owned();
    for cell in [
        "paris = await lookup(city='Paris')\nparis['celsius']",
        "def warmer(a, b):\n    return a if a['celsius'] >= b['celsius'] else b\nlima = await lookup(city='Lima')\nwarmer(paris, lima)['city']",
        "[paris['celsius'], lima['celsius']]",
    ] {
        let result = engine
            .run_cell(&store, &session, cell, &registry, &policy, &approval)
            .await?;
        let at = result.session.as_ref().ok_or("not a session's result")?;
        println!("cell {} of {}: {}", at.cell, at.session_id, result.output_text);
        session.clone_from(&at.session_id);
    }
    println!(
        "lookup ran {} times for 2 calls in 3 cells",
        runs.load(Ordering::Relaxed)
    );
    Ok(())
}
