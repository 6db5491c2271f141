//! What the integration tests share: one engine for the whole test binary,
//! test tools implemented in Rust, the two standard registries (plain and
//! adversarial), the policies and run helpers built on them, an invoker
//! session without a sandbox, an approval handler that never answers, and
//! the checks the adversarial cases end with (typed ending, complete trace,
//! the engine still serving the next chain).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use chainbox::artifacts::{ArtifactStore, MemoryArtifactStore};
use chainbox::invoker::InvokerSession;
use chainbox::tools::command::CommandTool;
use chainbox::{
    Approval, ApprovalDecision, ApprovalHandler, ApprovalRequest, CallStatus, ChainPolicy, ChainRunResult, ChainStatus,
    ContentBlock, Engine, ErrorKind, RunOptions, Tool, ToolContext, ToolError, ToolExecutionResult, ToolInfo,
    ToolOutput, ToolRegistry, ToolRisk, TypeCheck,
};
use chainbox_protocol::ToolCall;
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------- engine

/// One engine for the whole binary: every case runs on it, so a case that
/// damaged it would make the next one fail. The guest is compiled (or
/// loaded) once.
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let engine = Engine::new().expect("engine");
        // Build the CPython guest now, while every other test waits here:
        // compiled on a first CPython chain (~15-45 s on a cold cache, on
        // every core) it would load the machine under timing-sensitive
        // tests. On its own thread and runtime: the caller may be inside one.
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("runtime");
                    runtime.block_on(engine.prepare_cpython())
                })
                .join()
                .expect("the CPython guest's build thread")
                .expect("the CPython guest")
        });
        engine
    })
}

// ---------------------------------------------------------------- policies

pub const MIB: u64 = 1024 * 1024;

/// Tight limits so every attack ends fast: 64 MiB, 1 s CPU, 2 s in total,
/// 1 s per call, 20 calls. No check before the run: the attacks are on
/// what the run enforces (a script that builds its calls at run time gets
/// past the check; `tests/it/check.rs` tests the check itself).
pub fn tight() -> ChainPolicy {
    ChainPolicy {
        type_check: TypeCheck::Off,
        max_tool_calls: 20,
        call_timeout_s: 1.0,
        approval_timeout_s: 0.5,
        total_timeout_s: 2.0,
        max_memory_bytes: 64 * MIB,
        max_cpu_s: 1.0,
        max_stdout_bytes: 4096,
        ..ChainPolicy::default()
    }
}

/// The default policy without the check before the run: for a test of
/// what the run does with a call the check would refuse (an unknown name,
/// a bad argument), as it does for calls built at run time.
pub fn unchecked() -> ChainPolicy {
    ChainPolicy {
        type_check: TypeCheck::Off,
        ..ChainPolicy::default()
    }
}

/// [`tight`] with a smaller CPU limit, for scripts that are meant to hit it:
/// an endless loop proves nothing more by burning a whole second.
pub fn cpu_capped() -> ChainPolicy {
    ChainPolicy {
        max_cpu_s: 0.3,
        // `max_cpu_s` counts the chain's own CPU time: on a loaded machine
        // (tests run in parallel) 0.3 s of it can take several seconds of
        // wall time, and the CPU limit must be what ends these chains.
        total_timeout_s: 10.0,
        ..tight()
    }
}

// ---------------------------------------------------------------- runs

/// Runs `script` against [`registry`] under the default policy,
/// auto-approving safe calls.
pub async fn run(script: &str) -> ChainRunResult {
    run_with(script, &ChainPolicy::default()).await
}

/// Runs `script` against [`registry`] under `policy`, auto-approving safe calls.
pub async fn run_with(script: &str, policy: &ChainPolicy) -> ChainRunResult {
    run_full(script, &registry(), policy, &Approval::auto(ToolRisk::Safe)).await
}

/// Runs `script` against [`adversarial_registry`] under [`tight`] limits,
/// auto-approving safe calls.
pub async fn run_tight(script: &str) -> ChainRunResult {
    run_adversarial(script, &tight()).await
}

/// [`run_tight`] on one guest: for a test of a guest's own handling of a
/// limit (under `auto`, a script whose uses the allowlist does not all hold
/// runs on CPython, so `auto` is not a way to pick monty).
pub async fn run_tight_on(python: chainbox::PythonChoice, script: &str) -> ChainRunResult {
    let policy = ChainPolicy { python, ..tight() };
    run_adversarial(script, &policy).await
}

/// Runs `script` against [`adversarial_registry`] under `policy`,
/// auto-approving safe calls.
pub async fn run_adversarial(script: &str, policy: &ChainPolicy) -> ChainRunResult {
    run_full(script, &adversarial_registry(), policy, &Approval::auto(ToolRisk::Safe)).await
}

/// Runs `script` against `registry` under `policy` with `approval`.
pub async fn run_full(
    script: &str,
    registry: &ToolRegistry,
    policy: &ChainPolicy,
    approval: &Approval,
) -> ChainRunResult {
    engine().run(script, registry, policy, approval).await
}

/// [`run_tight`] with `dir` as the chain's `/workspace`.
pub async fn run_tight_in_workspace(script: &str, dir: &Path) -> ChainRunResult {
    let options = RunOptions {
        workspace: Some(dir.to_path_buf()),
        ..RunOptions::default()
    };
    engine()
        .run_with(
            script,
            &adversarial_registry(),
            &tight(),
            &Approval::auto(ToolRisk::Safe),
            options,
        )
        .await
}

// ---------------------------------------------------------------- checks

/// The engine survived: a fresh chain with a tool call, a gathered pair and
/// a little computation succeeds on it, with a clean trace.
pub async fn assert_next_chain_ok() {
    assert_next_chain_ok_on(engine()).await;
}

/// [`assert_next_chain_ok`] on `engine`.
pub async fn assert_next_chain_ok_on(engine: &Engine) {
    let r = engine
        .run(
            "import asyncio\na = await add(a=1, b=2)\nb = await asyncio.gather(add(a=a, b=1), echo(text='ok'))\n[a, b, sum(range(100))]",
            &adversarial_registry(),
            &tight(),
            &Approval::auto(ToolRisk::Safe),
        )
        .await;
    assert_eq!(r.status, ChainStatus::Ok, "the next chain failed: {r:?}");
    assert_eq!(r.error, None);
    assert_eq!(r.output, json!([3.0, [4.0, "ok"], 4950]), "{r:?}");
    assert_eq!(r.tool_calls, 3);
    assert!(r.call_trace.iter().all(|c| c.status == CallStatus::Ok), "{r:?}");
}

/// The chain ended with this status and error kind.
#[track_caller]
pub fn assert_ended(r: &ChainRunResult, status: ChainStatus, kind: ErrorKind) {
    assert_eq!(r.status, status, "{r:#?}");
    assert_eq!(r.error_kind(), Some(kind), "{r:#?}");
}

/// The chain completed; its error is null.
#[track_caller]
pub fn assert_ok(r: &ChainRunResult) {
    assert_eq!(r.status, ChainStatus::Ok, "{r:#?}");
    assert_eq!(r.error, None, "{r:#?}");
}

/// The trace holds exactly these calls, in order, and agrees with `tool_calls`.
#[track_caller]
pub fn assert_trace(r: &ChainRunResult, expected: &[(&str, CallStatus)]) {
    let got: Vec<(&str, CallStatus)> = r.call_trace.iter().map(|c| (c.tool.as_str(), c.status)).collect();
    assert_eq!(got, expected, "{r:#?}");
    assert_eq!(r.tool_calls as usize, r.call_trace.len());
    for c in &r.call_trace {
        assert_eq!(c.args_digest.len(), 64, "{c:?}");
    }
}

/// Every call in the trace is `tool` with `status`, and there are `n` of them.
#[track_caller]
pub fn assert_trace_all(r: &ChainRunResult, tool: &str, status: CallStatus, n: usize) {
    assert_eq!(r.call_trace.len(), n, "{r:#?}");
    assert_eq!(r.tool_calls as usize, n);
    for c in &r.call_trace {
        assert_eq!((c.tool.as_str(), c.status), (tool, status), "{r:#?}");
    }
}

/// The result, as the JSON a caller would see, mentions none of `needles`.
#[track_caller]
pub fn assert_json_lacks(r: &ChainRunResult, needles: &[&str]) {
    let text = serde_json::to_string(r).expect("result serializes");
    for needle in needles.iter().filter(|n| !n.is_empty()) {
        assert!(!text.contains(needle), "the result leaks {needle:?}: {text}");
    }
}

/// The script's output as a string (caught error messages, mostly).
pub fn output_str(r: &ChainRunResult) -> &str {
    r.output.as_str().unwrap_or_default()
}

// ---------------------------------------------------------------- tools

/// The body of an [`FnTool`].
pub type ToolFn = Box<dyn Fn(Map<String, Value>) -> Result<Value, String> + Send + Sync>;

/// A tool defined by a closure over its arguments, optionally sleeping
/// (asynchronously) before it answers.
pub struct FnTool {
    pub info: ToolInfo,
    pub f: ToolFn,
    pub delay: Duration,
}

#[async_trait]
impl Tool for FnTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }
    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        (self.f)(args).map(ToolOutput::Value).map_err(ToolError::new)
    }
}

impl FnTool {
    /// The same tool rated `risk`.
    pub fn with_risk(mut self, risk: ToolRisk) -> Self {
        self.info.risk = risk;
        self
    }

    /// The same tool with argument schema `schema`.
    pub fn with_schema(mut self, schema: Value) -> Self {
        self.info.input_schema = schema;
        self
    }
}

/// A safe [`FnTool`] with an open schema over `params` and no delay; change
/// it with `tool(…).with_risk(ToolRisk::High)` or
/// `FnTool { delay, ..tool(…) }`.
pub fn tool(
    name: &'static str,
    params: &[&str],
    f: impl Fn(Map<String, Value>) -> Result<Value, String> + Send + Sync + 'static,
) -> FnTool {
    FnTool {
        info: ToolInfo::new(name, "test tool", schema(params)),
        f: Box::new(f),
        delay: Duration::ZERO,
    }
}

/// [`tool`], ready for a registry.
pub fn fn_tool(
    name: &'static str,
    params: &[&str],
    f: impl Fn(Map<String, Value>) -> Result<Value, String> + Send + Sync + 'static,
) -> Arc<dyn Tool> {
    Arc::new(tool(name, params, f))
}

/// A parameterless [`tool`] rated `risk`, ready for a registry.
pub fn risky_tool(
    name: &'static str,
    risk: ToolRisk,
    f: impl Fn(Map<String, Value>) -> Result<Value, String> + Send + Sync + 'static,
) -> Arc<dyn Tool> {
    Arc::new(tool(name, &[], f).with_risk(risk))
}

/// An object schema with each of `params` as an unconstrained property.
fn schema(params: &[&str]) -> Value {
    let props: Map<String, Value> = params.iter().map(|p| (p.to_string(), json!({}))).collect();
    json!({"type": "object", "properties": props})
}

/// `add(a, b)`: the sum of two numbers, as a float.
pub fn add_tool() -> Arc<dyn Tool> {
    fn_tool("add", &["a", "b"], |a| {
        let x = a.get("a").and_then(Value::as_f64).ok_or("a must be a number")?;
        let y = a.get("b").and_then(Value::as_f64).ok_or("b must be a number")?;
        Ok(json!(x + y))
    })
}

/// `echo(text)`: returns `text`.
pub fn echo_tool() -> Arc<dyn Tool> {
    fn_tool("echo", &["text"], |a| Ok(a.get("text").cloned().unwrap_or(Value::Null)))
}

/// `fail(message)`: a tool error with `message`.
pub fn fail_tool() -> Arc<dyn Tool> {
    fn_tool("fail", &["message"], |a| {
        Err(a.get("message").and_then(Value::as_str).unwrap_or("failed").to_owned())
    })
}

/// `noop()`: returns `None`.
pub fn noop_tool() -> Arc<dyn Tool> {
    fn_tool("noop", &[], |_| Ok(Value::Null))
}

/// `delete(path)`: high risk, so denied unless approved.
pub fn delete_tool() -> Arc<dyn Tool> {
    Arc::new(tool("delete", &["path"], |_| Ok(json!("deleted"))).with_risk(ToolRisk::High))
}

/// `sleep(seconds)`: sleeps on the host (`tokio::time::sleep`, at most an
/// hour), then returns the seconds asked for. A well-behaved slow tool.
pub struct SleepTool;

#[async_trait]
impl Tool for SleepTool {
    fn info(&self) -> &chainbox::ToolInfo {
        static INFO: std::sync::OnceLock<chainbox::ToolInfo> = std::sync::OnceLock::new();
        INFO.get_or_init(|| {
            chainbox::ToolInfo::new(
                "sleep",
                "Sleeps on the host.",
                json!({"type": "object", "properties": {"seconds": {"type": "number"}}}),
            )
        })
    }
    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let s = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
        tokio::time::sleep(Duration::from_secs_f64(s.clamp(0.0, 3600.0))).await;
        Ok(ToolOutput::Value(json!(s)))
    }
}

/// A 1×1 PNG, base64.
pub const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/// `chart()`: a text block and a media result ([`PNG_1X1`]), which the
/// engine writes into the chain's workspace.
pub struct ChartTool;

#[async_trait]
impl Tool for ChartTool {
    fn info(&self) -> &chainbox::ToolInfo {
        static INFO: std::sync::OnceLock<chainbox::ToolInfo> = std::sync::OnceLock::new();
        INFO.get_or_init(|| {
            chainbox::ToolInfo::new("chart", "Renders a chart.", json!({"type": "object", "properties": {}}))
        })
    }
    async fn execute(&self, _ctx: ToolContext, _args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Result(ToolExecutionResult {
            content: vec![
                ContentBlock::Text { text: "a chart".into() },
                ContentBlock::Image {
                    media_type: "image/png".into(),
                    data: PNG_1X1.into(),
                },
            ],
            ..Default::default()
        }))
    }
}

/// A tool with a visible side effect while it runs: it bumps a counter
/// every 5 ms until `seconds` have passed, so a test can see whether it was
/// stopped.
pub struct Ticker {
    pub ticks: Arc<AtomicUsize>,
}

#[async_trait]
impl Tool for Ticker {
    fn info(&self) -> &chainbox::ToolInfo {
        static INFO: std::sync::OnceLock<chainbox::ToolInfo> = std::sync::OnceLock::new();
        INFO.get_or_init(|| chainbox::ToolInfo::new("ticker", "ticks while it runs", schema(&["seconds"])))
    }
    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let s = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
        let until = tokio::time::Instant::now() + Duration::from_secs_f64(s.clamp(0.0, 3600.0));
        while tokio::time::Instant::now() < until {
            self.ticks.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(ToolOutput::Value(json!("done")))
    }
}

/// `block(seconds)`: blocks its thread (`std::thread::sleep` inside
/// `execute`), a badly written tool the engine cannot preempt.
pub fn blocking_tool() -> Arc<dyn Tool> {
    fn_tool("block", &["seconds"], |a| {
        let s = a.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
        std::thread::sleep(Duration::from_secs_f64(s.clamp(0.0, 10.0)));
        Ok(json!(s))
    })
}

/// A command tool running `sh -c script`, open schema.
pub fn sh_tool(name: &str, script: &str) -> Arc<dyn Tool> {
    let command = vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()];
    Arc::new(CommandTool::new(
        name,
        "adversarial command tool",
        json!({"type": "object"}),
        command,
    ))
}

// ---------------------------------------------------------------- registries

/// The standard registry: `add(a, b)`, `echo(text)`, `fail(message)`,
/// `noop()`, `sleep(seconds)`.
pub fn registry() -> ToolRegistry {
    ToolRegistry::from_local([add_tool(), echo_tool(), fail_tool(), noop_tool(), Arc::new(SleepTool)])
        .expect("registry")
}

/// The adversarial suite's registry: `add(a, b)`, `echo(text)`, `noop()`,
/// `sleep(seconds)`, `explode()` (panics), `block(seconds)` (blocks its
/// thread), `big(n)` (returns an `n`-byte string), `deep(n)` (returns an
/// `n`-deep list). No `fail`.
pub fn adversarial_registry() -> ToolRegistry {
    ToolRegistry::from_local([
        add_tool(),
        echo_tool(),
        noop_tool(),
        Arc::new(SleepTool),
        fn_tool("explode", &[], |_| panic!("tool bug: index out of bounds")),
        blocking_tool(),
        fn_tool("big", &["n"], |a| {
            let n = a.get("n").and_then(Value::as_u64).unwrap_or(0) as usize;
            Ok(Value::String("x".repeat(n)))
        }),
        fn_tool("deep", &["n"], |a| {
            let n = a.get("n").and_then(Value::as_u64).unwrap_or(0);
            let mut v = json!(0);
            for _ in 0..n {
                v = Value::Array(vec![v]);
            }
            Ok(v)
        }),
    ])
    .expect("registry")
}

/// [`adversarial_registry`] plus `extra`.
pub fn adversarial_registry_with(extra: impl IntoIterator<Item = Arc<dyn Tool>>) -> ToolRegistry {
    let mut tools: Vec<Arc<dyn Tool>> = adversarial_registry()
        .iter()
        .filter_map(|t| t.as_local().cloned())
        .collect();
    tools.extend(extra);
    ToolRegistry::from_local(tools).expect("registry")
}

// ---------------------------------------------------------------- the invoker alone

/// An invoker session as the engine makes one for a chain (in-memory
/// artifacts, a fresh workspace), to drive without a sandbox.
pub fn invoker_session(
    run_id: &str,
    registry: ToolRegistry,
    policy: ChainPolicy,
    approval: Approval,
) -> InvokerSession {
    let store: Arc<dyn ArtifactStore> = Arc::new(MemoryArtifactStore::new());
    InvokerSession::new(run_id.to_owned(), registry, Arc::new(policy), approval, store)
}

/// `v` as call arguments; panics unless it is an object.
pub fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// A call of `tool` with the object `a` as its arguments.
pub fn call(tool: &str, a: Value) -> ToolCall {
    ToolCall {
        tool: tool.to_owned(),
        args: args(a),
    }
}

// ---------------------------------------------------------------- approval

/// An approval handler that never answers. Clones share the counters: how
/// many requests it got, and how many of its pending answers were dropped
/// (abandoned by their call or chain).
#[derive(Clone, Default)]
pub struct Silent {
    asked: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
}

impl Silent {
    pub fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
    pub fn dropped(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }
}

/// Bumps its counter when dropped.
struct DropFlag(Arc<AtomicUsize>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl ApprovalHandler for Silent {
    async fn request(&self, _: &ApprovalRequest) -> Result<ApprovalDecision, chainbox::ApprovalError> {
        let _flag = DropFlag(Arc::clone(&self.dropped));
        self.asked.fetch_add(1, Ordering::SeqCst);
        std::future::pending().await
    }
}
