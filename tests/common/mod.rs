//! Shared fixtures for the integration tests: one engine per test binary and
//! a few real tools implemented in Rust.
#![allow(dead_code)]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use chainbox::{
    Approval, ChainPolicy, ChainRunResult, Engine, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolRisk,
};
use serde_json::{Map, Value, json};

/// One engine per test binary: compiling (or loading) the guest once.
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| Engine::new().expect("engine"))
}

/// The body of an [`FnTool`].
pub type ToolFn = Box<dyn Fn(Map<String, Value>) -> Result<Value, String> + Send + Sync>;

/// A tool defined by a closure over its arguments.
pub struct FnTool {
    pub name: &'static str,
    pub schema: Value,
    pub risk: ToolRisk,
    pub f: ToolFn,
    pub delay: Duration,
}

#[async_trait]
impl Tool for FnTool {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    fn risk(&self) -> ToolRisk {
        self.risk
    }
    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        (self.f)(args).map(ToolOutput::Value).map_err(ToolError::new)
    }
}

pub fn tool(
    name: &'static str,
    params: &[&str],
    f: impl Fn(Map<String, Value>) -> Result<Value, String> + Send + Sync + 'static,
) -> FnTool {
    let props: Map<String, Value> = params.iter().map(|p| (p.to_string(), json!({}))).collect();
    FnTool {
        name,
        schema: json!({"type": "object", "properties": props}),
        risk: ToolRisk::Safe,
        f: Box::new(f),
        delay: Duration::ZERO,
    }
}

/// `add(a, b)`, `echo(text)`, `fail(message)`, `sleep(seconds)`, `noop()`.
pub fn registry() -> ToolRegistry {
    let add = tool("add", &["a", "b"], |a| {
        let x = a.get("a").and_then(Value::as_f64).ok_or("a must be a number")?;
        let y = a.get("b").and_then(Value::as_f64).ok_or("b must be a number")?;
        Ok(json!(x + y))
    });
    let echo = tool("echo", &["text"], |a| Ok(a.get("text").cloned().unwrap_or(Value::Null)));
    let fail = tool("fail", &["message"], |a| {
        Err(a.get("message").and_then(Value::as_str).unwrap_or("failed").to_owned())
    });
    let noop = tool("noop", &[], |_| Ok(Value::Null));
    ToolRegistry::from_local([
        Arc::new(add) as Arc<dyn Tool>,
        Arc::new(echo),
        Arc::new(fail),
        Arc::new(noop),
        Arc::new(SleepTool),
    ])
    .expect("registry")
}

/// `sleep(seconds)`: waits, then returns the seconds slept.
pub struct SleepTool;

#[async_trait]
impl Tool for SleepTool {
    fn name(&self) -> &str {
        "sleep"
    }
    fn description(&self) -> &str {
        "Sleeps on the host."
    }
    fn input_schema(&self) -> &Value {
        static SCHEMA: OnceLock<Value> = OnceLock::new();
        SCHEMA.get_or_init(|| json!({"type": "object", "properties": {"seconds": {"type": "number"}}}))
    }
    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let s = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
        tokio::time::sleep(Duration::from_secs_f64(s)).await;
        Ok(ToolOutput::Value(json!(s)))
    }
}

/// Runs `script` with the test registry and `policy`.
pub async fn run_with(script: &str, policy: &ChainPolicy) -> ChainRunResult {
    engine()
        .run(script, &registry(), policy, &Approval::auto(ToolRisk::Safe))
        .await
}

/// Runs `script` with the test registry and the default policy.
pub async fn run(script: &str) -> ChainRunResult {
    run_with(script, &ChainPolicy::default()).await
}
