//! `chainbox._chainbox`: the native half of the `chainbox` Python package
//! (python/chainbox/__init__.py is the public half and the only caller).
//!
//! One chainbox [`Engine`] per process, shared by every Python `Engine`
//! (compiling the guests is the expensive part; chains on one engine run
//! concurrently), on a tokio runtime owned by this module. The GIL is never
//! held while a chain runs: `run` blocks in `py.detach`, waking every
//! 100 ms only to let Python handle a signal (Ctrl-C cancels the chain).
//!
//! A Python tool or approval callback crosses as a *bridge*: a Python
//! callable `bridge(payload_json, done)` made by the package. It is called
//! on tokio's blocking pool with the GIL (a sync tool runs to its end
//! there, so a blocking tool holds one blocking thread, never a runtime
//! worker or another chain); an `async def` tool is scheduled by the
//! bridge on an asyncio loop (the caller's under `run_async`, the
//! package's background loop under `run`) and answers later. Either way
//! the answer comes through `done(ok, payload)`; the bridge returns a
//! cancel callable for work still running, called if the call is dropped
//! (its timeout, the chain's end).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use chainbox::approval::{ApprovalDecision, ApprovalError, ApprovalHandler, ApprovalRequest};
use chainbox::live::{ChainEvent, Observer};
use chainbox::store::ChainStore;
use chainbox::tools::Permission;
use chainbox::{
    Approval, ChainPolicy, ChainRunResult, Engine, EngineConfig, PythonChoice, RunOptions, Tool, ToolContext,
    ToolError, ToolInfo, ToolOutput, ToolRegistry, ToolRisk,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// The module's runtime: chains, their tool calls and approvals run here.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("chainbox")
            .enable_all()
            .build()
            .expect("chainbox: cannot start the tokio runtime")
    })
}

/// The process's engine and, until it is built, the settings it will be
/// built with (`configure`).
enum Shared {
    Unbuilt(EngineConfig),
    Built(Engine),
}

fn shared() -> &'static Mutex<Shared> {
    static SHARED: OnceLock<Mutex<Shared>> = OnceLock::new();
    SHARED.get_or_init(|| Mutex::new(Shared::Unbuilt(EngineConfig::default())))
}

/// The process's engine, built by the first Python `Engine` (a failure is
/// not kept: the next `Engine()` tries again).
fn shared_engine() -> Result<Engine, String> {
    let mut slot = shared().lock().unwrap_or_else(|e| e.into_inner());
    let config = match &*slot {
        Shared::Built(engine) => return Ok(engine.clone()),
        Shared::Unbuilt(config) => config.clone(),
    };
    let _entered = runtime().enter();
    let engine = Engine::with_config(config).map_err(|e| e.to_string())?;
    *slot = Shared::Built(engine.clone());
    Ok(engine)
}

/// Settings of the process's engine, before the first `Engine()` builds
/// it: where the compiled guests are cached, how many chains may run at
/// once. `RuntimeError` once it is built.
#[pyfunction]
#[pyo3(signature = (cache_dir=None, max_concurrent_chains=None))]
fn configure(cache_dir: Option<std::path::PathBuf>, max_concurrent_chains: Option<u32>) -> PyResult<()> {
    let mut slot = shared().lock().unwrap_or_else(|e| e.into_inner());
    match &mut *slot {
        Shared::Built(_) => Err(PyRuntimeError::new_err(
            "chainbox.configure: the engine is already built (configure before the first Engine())",
        )),
        Shared::Unbuilt(config) => {
            if cache_dir.is_some() {
                config.cache_dir = cache_dir;
            }
            if let Some(n) = max_concurrent_chains {
                if n == 0 {
                    return Err(PyValueError::new_err("max_concurrent_chains must be above zero"));
                }
                config.max_concurrent_chains = n;
            }
            Ok(())
        }
    }
}

/// A policy from the package: JSON (a dict dumped) or TOML text, with the
/// field at fault named as the CLI names it.
fn parse_policy(json: Option<&str>, toml: Option<&str>) -> Result<ChainPolicy, String> {
    let policy = match (json, toml) {
        (Some(json), _) => {
            let mut de = serde_json::Deserializer::from_str(json);
            let policy: ChainPolicy = serde_path_to_error::deserialize(&mut de).map_err(|e| {
                let path = e.path().to_string();
                if path == "." {
                    format!("policy: {}", e.inner())
                } else {
                    format!("policy field `{path}`: {}", e.inner())
                }
            })?;
            policy.validate().map_err(|e| e.to_string())?;
            policy
        }
        (None, Some(toml)) => ChainPolicy::from_toml_str(toml).map_err(|e| e.to_string())?,
        (None, None) => ChainPolicy::default(),
    };
    Ok(policy)
}

/// Where a bridge answers: `done(ok, payload)`, at most once.
#[pyclass(frozen)]
struct Done {
    tx: Mutex<Option<oneshot::Sender<(bool, String)>>>,
}

#[pymethods]
impl Done {
    fn __call__(&self, ok: bool, payload: String) {
        if let Some(tx) = self.tx.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = tx.send((ok, payload));
        }
    }
}

/// Calls a cancel callable when dropped unanswered: the tool call was cut
/// off (timeout, cancelled chain) while its coroutine still ran.
struct CancelOnDrop(Option<Py<PyAny>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            let call = move || {
                Python::attach(|py| {
                    let _ = cancel.call0(py);
                })
            };
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => drop(handle.spawn_blocking(call)),
                Err(_) => drop(std::thread::spawn(call)),
            }
        }
    }
}

/// Calls `bridge(payload, done)` with the GIL on tokio's blocking pool and
/// waits for its answer without holding a thread (an async tool's).
async fn call_bridge(bridge: Arc<Py<PyAny>>, payload: String) -> Result<String, String> {
    let (tx, rx) = oneshot::channel();
    let started = tokio::task::spawn_blocking(move || {
        Python::attach(|py| {
            let done = Done {
                tx: Mutex::new(Some(tx)),
            };
            match bridge.call1(py, (payload, done)) {
                Ok(cancel) if !cancel.is_none(py) => Ok(Some(cancel)),
                Ok(_) => Ok(None),
                Err(e) => Err(e.to_string()),
            }
        })
    })
    .await;
    let mut guard = match started {
        Ok(Ok(cancel)) => CancelOnDrop(cancel),
        Ok(Err(message)) => return Err(message),
        Err(e) => return Err(format!("the Python callback panicked: {e}")),
    };
    let answer = rx.await;
    guard.0 = None;
    match answer {
        Ok((true, payload)) => Ok(payload),
        Ok((false, message)) => Err(message),
        Err(_) => Err("the Python callback ended without an answer".to_owned()),
    }
}

/// A Python function as a chainbox [`Tool`].
struct PyTool {
    info: ToolInfo,
    bridge: Arc<Py<PyAny>>,
}

#[async_trait]
impl Tool for PyTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn source(&self) -> String {
        format!("python:{}", self.info.name)
    }

    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let payload = serde_json::to_string(&args).map_err(|e| ToolError::new(e.to_string()))?;
        let answer = call_bridge(Arc::clone(&self.bridge), payload)
            .await
            .map_err(ToolError::new)?;
        let value: Value =
            serde_json::from_str(&answer).map_err(|e| ToolError::new(format!("the tool's result is not JSON: {e}")))?;
        Ok(ToolOutput::Value(value))
    }
}

/// A Python approval callback as an [`ApprovalHandler`]: the bridge answers
/// an [`ApprovalDecision`] as JSON.
struct PyApproval {
    bridge: Arc<Py<PyAny>>,
}

#[async_trait]
impl ApprovalHandler for PyApproval {
    async fn request(&self, req: &ApprovalRequest) -> Result<ApprovalDecision, ApprovalError> {
        let payload = serde_json::to_string(req).map_err(|e| ApprovalError::from(e.to_string()))?;
        let answer = call_bridge(Arc::clone(&self.bridge), payload).await?;
        serde_json::from_str(&answer).map_err(|e| ApprovalError::from(format!("bad approval decision: {e}")))
    }
}

/// One tool as the package describes it: `(name, description,
/// schema_json, risk, permissions, untrusted, bridge)`.
#[derive(FromPyObject)]
struct ToolSpec(String, String, String, String, Vec<String>, bool, Py<PyAny>);

fn registry(specs: Vec<ToolSpec>) -> PyResult<ToolRegistry> {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(specs.len());
    for ToolSpec(name, description, schema_json, risk, permissions, untrusted, bridge) in specs {
        let schema: Value = serde_json::from_str(&schema_json)
            .map_err(|e| PyValueError::new_err(format!("tool {name:?}: schema is not JSON: {e}")))?;
        let risk: ToolRisk = risk
            .parse()
            .map_err(|e| PyValueError::new_err(format!("tool {name:?}: {e}")))?;
        let permissions = permissions
            .iter()
            .map(|p| {
                serde_json::from_value::<Permission>(Value::String(p.clone())).map_err(|_| {
                    PyValueError::new_err(format!(
                        "tool {name:?}: unknown permission {p:?} (fs.read, fs.write, net, shell, db.read, db.write)"
                    ))
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let mut info = ToolInfo::new(name, description, schema)
            .with_risk(risk)
            .with_permissions(permissions);
        info.untrusted = untrusted;
        tools.push(Arc::new(PyTool {
            info,
            bridge: Arc::new(bridge),
        }));
    }
    ToolRegistry::from_local(tools).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `"auto"` (approve every call), `"deny"` (deny every call that needs
/// approval) or a bridge.
fn approval(approve: &Bound<'_, PyAny>) -> PyResult<Approval> {
    if let Ok(mode) = approve.extract::<String>() {
        return match mode.as_str() {
            "auto" => Ok(Approval::auto(ToolRisk::Critical)),
            "deny" => Ok(Approval::deny_all()),
            other => Err(PyValueError::new_err(format!(
                "approve must be \"auto\", \"deny\" or a callable, not {other:?}"
            ))),
        };
    }
    Ok(Approval::new(PyApproval {
        bridge: Arc::new(approve.clone().unbind()),
    }))
}

fn result_json(result: &ChainRunResult) -> PyResult<String> {
    serde_json::to_string(result).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// The native engine: the shared chainbox engine and one policy.
#[pyclass(frozen)]
struct NativeEngine {
    engine: Engine,
    policy: ChainPolicy,
}

#[pymethods]
impl NativeEngine {
    /// Builds (once per process) the engine; `policy_json` or
    /// `policy_toml` (else the default policy), `python` overriding its
    /// `python`. `ValueError` for a bad policy, `RuntimeError` when the
    /// engine cannot be built.
    #[new]
    #[pyo3(signature = (policy_json=None, policy_toml=None, python=None))]
    fn new(
        py: Python<'_>,
        policy_json: Option<&str>,
        policy_toml: Option<&str>,
        python: Option<&str>,
    ) -> PyResult<Self> {
        let mut policy = parse_policy(policy_json, policy_toml).map_err(PyValueError::new_err)?;
        if let Some(python) = python {
            policy.python = serde_json::from_value::<PythonChoice>(Value::String(python.to_owned())).map_err(|_| {
                PyValueError::new_err(format!(
                    "python must be \"auto\", \"monty\" or \"cpython\", not {python:?}"
                ))
            })?;
        }
        let engine = py.detach(shared_engine).map_err(PyRuntimeError::new_err)?;
        Ok(NativeEngine { engine, policy })
    }

    /// The effective policy as JSON.
    fn policy_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.policy).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// Runs a chain to its end without the GIL and returns its result as
    /// JSON. A signal (Ctrl-C) cancels the chain and is raised.
    /// `on_event(kind, payload)` sees its events as they happen, all of
    /// them before this returns.
    #[pyo3(signature = (script, tools, approve, on_event=None))]
    fn run(
        &self,
        py: Python<'_>,
        script: String,
        tools: Vec<ToolSpec>,
        approve: &Bound<'_, PyAny>,
        on_event: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let registry = registry(tools)?;
        let approval = approval(approve)?;
        let cancel = CancellationToken::new();
        let handle = self.spawn(Job::Chain(script), registry, approval, cancel.clone(), on_event);
        wait(py, handle, cancel)
    }

    /// Runs `cell` in the session `session` (an id, or `"new"`) of the
    /// chain store `state_url` (`memory:`, `sqlite:PATH`, `postgres://…`;
    /// one connection per URL and process), as `run` runs a chain. A store
    /// failure is `RuntimeError`.
    #[pyo3(signature = (state_url, session, cell, tools, approve, on_event=None))]
    #[allow(clippy::too_many_arguments)]
    fn run_cell(
        &self,
        py: Python<'_>,
        state_url: &str,
        session: String,
        cell: String,
        tools: Vec<ToolSpec>,
        approve: &Bound<'_, PyAny>,
        on_event: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let registry = registry(tools)?;
        let approval = approval(approve)?;
        let store = py.detach(|| store(state_url)).map_err(PyRuntimeError::new_err)?;
        let cancel = CancellationToken::new();
        let job = Job::Cell { store, session, cell };
        let handle = self.spawn(job, registry, approval, cancel.clone(), on_event);
        wait(py, handle, cancel)
    }

    /// Starts a chain and returns at once; `on_done(ok, result_json)` is
    /// called with the GIL from another thread when it ends (after every
    /// `on_event`). The handle cancels it.
    #[pyo3(signature = (script, tools, approve, on_done, on_event=None))]
    fn start(
        &self,
        script: String,
        tools: Vec<ToolSpec>,
        approve: &Bound<'_, PyAny>,
        on_done: Py<PyAny>,
        on_event: Option<Py<PyAny>>,
    ) -> PyResult<RunHandle> {
        let registry = registry(tools)?;
        let approval = approval(approve)?;
        Ok(self.start_job(Job::Chain(script), registry, approval, on_done, on_event))
    }

    /// `run_cell` as `start` starts a chain (`on_done(false, message)` for
    /// a store that fails while it runs).
    #[pyo3(signature = (state_url, session, cell, tools, approve, on_done, on_event=None))]
    #[allow(clippy::too_many_arguments)]
    fn start_cell(
        &self,
        py: Python<'_>,
        state_url: &str,
        session: String,
        cell: String,
        tools: Vec<ToolSpec>,
        approve: &Bound<'_, PyAny>,
        on_done: Py<PyAny>,
        on_event: Option<Py<PyAny>>,
    ) -> PyResult<RunHandle> {
        let registry = registry(tools)?;
        let approval = approval(approve)?;
        let store = py.detach(|| store(state_url)).map_err(PyRuntimeError::new_err)?;
        let job = Job::Cell { store, session, cell };
        Ok(self.start_job(job, registry, approval, on_done, on_event))
    }
}

/// What a spawned run runs: a chain, or a session's cell.
enum Job {
    Chain(String),
    Cell {
        store: Arc<dyn ChainStore>,
        session: String,
        cell: String,
    },
}

impl NativeEngine {
    fn start_job(
        &self,
        job: Job,
        registry: ToolRegistry,
        approval: Approval,
        on_done: Py<PyAny>,
        on_event: Option<Py<PyAny>>,
    ) -> RunHandle {
        let cancel = CancellationToken::new();
        let handle = self.spawn(job, registry, approval, cancel.clone(), on_event);
        runtime().spawn(async move {
            let json = match handle.await {
                Ok(Ok(result)) => serde_json::to_string(&result).map_err(|e| e.to_string()),
                Ok(Err(message)) => Err(message),
                Err(e) => Err(format!("the chain's task failed: {e}")),
            };
            let _ = tokio::task::spawn_blocking(move || {
                Python::attach(|py| {
                    let (ok, payload) = match json {
                        Ok(json) => (true, json),
                        Err(message) => (false, message),
                    };
                    if let Err(e) = on_done.call1(py, (ok, payload)) {
                        e.write_unraisable(py, None);
                    }
                })
            })
            .await;
        });
        RunHandle { cancel }
    }

    fn spawn(
        &self,
        job: Job,
        registry: ToolRegistry,
        approval: Approval,
        cancel: CancellationToken,
        on_event: Option<Py<PyAny>>,
    ) -> tokio::task::JoinHandle<Result<ChainRunResult, String>> {
        let engine = self.engine.clone();
        let policy = self.policy.clone();
        let events = on_event.map(events);
        runtime().spawn(async move {
            let observer = events.as_ref().map(|(observer, _, _)| observer.clone());
            let result = match job {
                Job::Chain(script) => {
                    let options = RunOptions {
                        cancel: Some(cancel),
                        observer,
                        ..RunOptions::default()
                    };
                    Ok(engine.run_with(&script, &registry, &policy, &approval, options).await)
                }
                Job::Cell { store, session, cell } => engine
                    .durable(store)
                    .with_observer(observer)
                    .cancelled_by(cancel)
                    .run_cell(&session, &cell, &registry, &policy, &approval)
                    .await
                    .map_err(|e| e.to_string()),
            };
            if let Some((_, sender, drain)) = events {
                // The run is over: close the channel (whoever else still
                // holds the observer) and wait until every event was handed.
                sender.lock().unwrap_or_else(|e| e.into_inner()).take();
                let _ = drain.await;
            }
            result
        })
    }
}

/// Waits for a spawned run without the GIL, waking every 100 ms to let
/// Python handle a signal (which cancels the run and is raised).
fn wait(
    py: Python<'_>,
    mut handle: tokio::task::JoinHandle<Result<ChainRunResult, String>>,
    cancel: CancellationToken,
) -> PyResult<String> {
    loop {
        let joined = py.detach(|| {
            runtime().block_on(async { tokio::time::timeout(Duration::from_millis(100), &mut handle).await })
        });
        match joined {
            Ok(Ok(Ok(result))) => return result_json(&result),
            Ok(Ok(Err(message))) => return Err(PyRuntimeError::new_err(message)),
            Ok(Err(e)) => return Err(PyRuntimeError::new_err(format!("the chain's task failed: {e}"))),
            Err(_) => {
                if let Err(interrupt) = py.check_signals() {
                    cancel.cancel();
                    let _ = py.detach(|| runtime().block_on(&mut handle));
                    return Err(interrupt);
                }
            }
        }
    }
}

/// The chain store a URL names, connected once per process (a `memory:`
/// store lives as long as the process).
fn store(url: &str) -> Result<Arc<dyn ChainStore>, String> {
    static STORES: Mutex<Vec<(String, Arc<dyn ChainStore>)>> = Mutex::new(Vec::new());
    let mut stores = STORES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, store)) = stores.iter().find(|(u, _)| u == url) {
        return Ok(Arc::clone(store));
    }
    let store = runtime()
        .block_on(chainbox::store::connect(url))
        .map_err(|e| format!("chain store {url:?}: {e}"))?;
    stores.push((url.to_owned(), Arc::clone(&store)));
    Ok(store)
}

type EventSender = Arc<Mutex<Option<tokio::sync::mpsc::UnboundedSender<ChainEvent>>>>;

/// An observer handing a chain's events to `on_event(kind, payload)` in
/// order, from one blocking thread: `("stdout", text)`,
/// `("call_started", {"call_id", "tool"} as JSON)`, `("call_finished",
/// the call's record as JSON)`. Its sender, to close the channel when the
/// chain ends, and the thread.
fn events(on_event: Py<PyAny>) -> (Observer, EventSender, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ChainEvent>();
    let sender: EventSender = Arc::new(Mutex::new(Some(tx)));
    let slot = Arc::clone(&sender);
    let observer = Observer::new(move |event| {
        if let Some(tx) = &*slot.lock().unwrap_or_else(|e| e.into_inner()) {
            let _ = tx.send(event);
        }
    });
    let drain = runtime().spawn_blocking(move || {
        while let Some(event) = rx.blocking_recv() {
            let (kind, payload) = match event {
                ChainEvent::Stdout(text) => ("stdout", text),
                ChainEvent::CallStarted { call_id, tool } => (
                    "call_started",
                    serde_json::json!({ "call_id": call_id, "tool": tool }).to_string(),
                ),
                ChainEvent::CallFinished(record) => (
                    "call_finished",
                    serde_json::to_string(&record).unwrap_or_else(|_| "{}".to_owned()),
                ),
            };
            Python::attach(|py| {
                if let Err(e) = on_event.call1(py, (kind, payload)) {
                    e.write_unraisable(py, None);
                }
            });
        }
    });
    (observer, sender, drain)
}

/// A chain started by [`NativeEngine::start`].
#[pyclass(frozen)]
struct RunHandle {
    cancel: CancellationToken,
}

#[pymethods]
impl RunHandle {
    /// Ends the chain as its total timeout would (kind `cancelled`).
    fn cancel(&self) {
        self.cancel.cancel();
    }
}

/// The `async def` stubs a model is shown for these tools.
#[pyfunction]
fn stubs(tools: Vec<ToolSpec>) -> PyResult<String> {
    Ok(chainbox::stubs::python_stubs(&registry(tools)?))
}

#[pymodule]
fn _chainbox(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeEngine>()?;
    m.add_class::<RunHandle>()?;
    m.add_class::<Done>()?;
    m.add_function(wrap_pyfunction!(stubs, m)?)?;
    m.add_function(wrap_pyfunction!(configure, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
