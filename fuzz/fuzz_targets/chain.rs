//! Fuzzes whole chains: arbitrary bytes (lossily made UTF-8) run as a script
//! through the real engine, sandbox and invoker, under tight limits (32 MiB,
//! 0.5 s CPU, 1 s total). The host must never panic and every outcome must
//! be a well-formed `ChainRunResult` (see `check_result`).
//!
//! Set `CHAINBOX_FUZZ_CRASH_IS_BUG=1` to also fail on results of kind
//! `crash` (a guest trap), which the contract allows but which usually
//! points at a bug in the interpreter or the host imports.
#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chainbox::{
    Approval, CallStatus, ChainPolicy, ChainRunResult, ChainStatus, Engine, EngineConfig, ErrorKind, Tool, ToolContext,
    ToolError, ToolOutput, ToolRegistry, ToolRisk,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

/// A tool whose behaviour is a plain function of its arguments.
struct FnTool {
    name: &'static str,
    schema: Value,
    risk: ToolRisk,
    f: fn(Map<String, Value>) -> Result<Value, String>,
}

#[async_trait]
impl Tool for FnTool {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "fuzz tool"
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    fn risk(&self) -> ToolRisk {
        self.risk
    }
    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        if self.name == "sleep" {
            // Capped so one input cannot hold the fuzzer for long.
            let s = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
            let s = if s.is_finite() { s.clamp(0.0, 0.05) } else { 0.0 };
            tokio::time::sleep(Duration::from_secs_f64(s)).await;
        }
        (self.f)(args).map(ToolOutput::Value).map_err(ToolError::new)
    }
}

fn tool(name: &'static str, params: &[&str], f: fn(Map<String, Value>) -> Result<Value, String>) -> Arc<dyn Tool> {
    let props: Map<String, Value> = params.iter().map(|p| (p.to_string(), json!({}))).collect();
    Arc::new(FnTool {
        name,
        schema: json!({"type": "object", "properties": props}),
        risk: if name == "delete" {
            ToolRisk::High
        } else {
            ToolRisk::Safe
        },
        f,
    })
}

struct Fixture {
    runtime: tokio::runtime::Runtime,
    engine: Engine,
    registry: ToolRegistry,
    policy: ChainPolicy,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        // Few slots: each reserves address space for a 4 GiB memory.
        let engine = Engine::with_config(EngineConfig {
            max_concurrent_chains: 4,
            ..EngineConfig::default()
        })
        .expect("engine");
        let registry = ToolRegistry::from_local([
            tool("add", &["a", "b"], |a| {
                let x = a.get("a").and_then(Value::as_f64).ok_or("a must be a number")?;
                let y = a.get("b").and_then(Value::as_f64).ok_or("b must be a number")?;
                Ok(json!(x + y))
            }),
            tool("echo", &["text"], |a| Ok(a.get("text").cloned().unwrap_or(Value::Null))),
            tool("fail", &["message"], |a| {
                Err(a.get("message").and_then(Value::as_str).unwrap_or("failed").to_owned())
            }),
            tool("big", &["n"], |a| {
                let n = a.get("n").and_then(Value::as_u64).unwrap_or(1000).min(100_000) as usize;
                Ok(json!("x".repeat(n)))
            }),
            tool("sleep", &["seconds"], |a| {
                Ok(a.get("seconds").cloned().unwrap_or(Value::Null))
            }),
            tool("delete", &["path"], |_| Ok(json!("deleted"))),
        ])
        .expect("registry");
        let policy = ChainPolicy {
            max_tool_calls: 8,
            call_timeout_s: 0.5,
            approval_timeout_s: 0.2,
            total_timeout_s: 1.0,
            max_inline_result_bytes: 1024,
            max_memory_bytes: 32 * 1024 * 1024,
            max_cpu_s: 0.5,
            max_stdout_bytes: 4096,
            max_arg_bytes: 16 * 1024,
            max_result_bytes: 64 * 1024,
            ..ChainPolicy::default()
        };
        policy.validate().expect("fuzz policy is valid");
        Fixture {
            runtime,
            engine,
            registry,
            policy,
        }
    })
}

/// The result contract every chain must meet, whatever the script did.
fn check_result(r: &ChainRunResult, policy: &ChainPolicy, elapsed: Duration) {
    // It serialises and reads back unchanged: the JSON contract holds.
    let json = serde_json::to_string(r).expect("result serialises");
    let back: ChainRunResult = serde_json::from_str(&json).expect("result parses back");
    assert_eq!(&back, r, "result does not round-trip through JSON");

    match (r.status, &r.error) {
        (ChainStatus::Ok, None) => {}
        (ChainStatus::Ok, Some(e)) => panic!("ok result with an error: {e:?}"),
        // No chain the fuzzer runs is durable.
        (ChainStatus::Suspended, _) => panic!("a chain without a journal suspended: {r:?}"),
        (_, None) => panic!("{:?} result without an error", r.status),
        (ChainStatus::Timeout, Some(e)) => assert_eq!(e.kind, ErrorKind::Timeout, "{e:?}"),
        (ChainStatus::Error, Some(e)) => assert_ne!(e.kind, ErrorKind::Timeout, "{e:?}"),
    }
    if let Some(e) = &r.error
        && e.kind == ErrorKind::Crash
        && std::env::var_os("CHAINBOX_FUZZ_CRASH_IS_BUG").is_some()
    {
        panic!("chain crashed the sandbox: {e:?}");
    }
    assert_eq!(r.tool_calls as usize, r.call_trace.len(), "tool_calls counts the trace");
    assert!(r.tool_calls <= policy.max_tool_calls, "more calls ran than the budget");
    for c in &r.call_trace {
        assert_eq!(c.args_digest.len(), 64, "{c:?}");
        assert!(
            c.args_digest
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert!(c.duration_ms.is_finite() && c.duration_ms >= 0.0, "{c:?}");
        assert_eq!(c.status == CallStatus::Ok, c.error.is_none(), "{c:?}");
        if let Some(a) = &c.artifact_ref {
            assert!(a.to_string().starts_with("sha256:"), "{c:?}");
        }
    }
    assert!(r.stdout.len() as u64 <= policy.max_stdout_bytes, "stdout over its cap");
    assert!(r.usage.stdout_bytes >= r.stdout.len() as u64);
    assert!(
        r.usage.peak_memory_bytes <= policy.max_memory_bytes,
        "memory over its cap"
    );
    assert!(r.duration_ms.is_finite() && r.duration_ms >= 0.0);
    assert!(r.usage.cpu_ms.is_finite() && r.usage.cpu_ms >= 0.0);
    // Generous slack: the fuzzer is instrumented and shares its CPUs.
    let bound = Duration::from_secs_f64(policy.total_timeout_s) + Duration::from_secs(10);
    assert!(
        elapsed < bound,
        "chain took {elapsed:?}, total_timeout_s is {}",
        policy.total_timeout_s
    );
}

fuzz_target!(
    // The engine is built before fuzzing starts: the first build compiles
    // the guest with the instrumented Cranelift (minutes), which must not
    // count against the per-input timeout.
    init: {
        fixture();
    },
    |data: &[u8]| {
        let f = fixture();
        let script = String::from_utf8_lossy(data);
        let started = Instant::now();
        let result = f.runtime.block_on(
            f.engine
                .run(&script, &f.registry, &f.policy, &Approval::auto(ToolRisk::Safe)),
        );
        check_result(&result, &f.policy, started.elapsed());
    }
);
