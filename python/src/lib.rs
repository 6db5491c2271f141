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
//!
//! Durable chains (a run kept in a chain store, suspended at a call that
//! waits on a decision, decided and resumed by any process on the store)
//! and sessions' cells run on the same engine, each with the artifact
//! store its chain store implies ([`durable_artifacts`]). A failure that is
//! not a chain's outcome (a store that cannot be opened, a chain that is
//! not pending) is raised as `RuntimeError(message, kind)`, or handed to
//! `on_done(false, {"message", "kind"} as JSON)`; the package maps `kind`
//! to its exceptions.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chainbox::approval::{ApprovalDecision, ApprovalError, ApprovalHandler, ApprovalRequest};
use chainbox::artifacts::{ArtifactRef, ArtifactStore};
use chainbox::durable::{Durable, DurableError};
use chainbox::live::{ChainEvent, Observer};
use chainbox::store::{ChainStore, StoreError};
use chainbox::tools::Permission;
use chainbox::{
    Approval, ChainPolicy, ChainRunResult, Engine, EngineConfig, PythonChoice, RunOptions, Tool, ToolContext,
    ToolError, ToolInfo, ToolOutput, ToolRegistry, ToolRisk,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// Set once Python starts to exit (an `atexit` hook, [`at_exit`]): no
/// thread of ours enters Python after it.
static EXITING: AtomicBool = AtomicBool::new(false);

/// Threads of ours inside [`with_python`] (entering Python or in it).
static IN_PYTHON: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` attached to Python from a thread of ours (tokio's), unless
/// Python is exiting: `None` then. A thread entering Python while the
/// interpreter finalizes may crash it (`PyGILState_Release: thread state
/// must be current`, seen at the end of test runs); [`at_exit`] waits for
/// the threads already in here before finalization starts.
fn with_python<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            IN_PYTHON.fetch_sub(1, Ordering::SeqCst);
        }
    }
    IN_PYTHON.fetch_add(1, Ordering::SeqCst);
    let _leave = Leave;
    if EXITING.load(Ordering::SeqCst) {
        return None;
    }
    Python::try_attach(f)
}

/// How long exiting waits for our threads to leave Python: a tool or a
/// callback still running then is Python's to stop.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// `atexit`'s hook: from now on no thread of ours enters Python, and those
/// in it (or waiting for the GIL) finish first, the GIL released for them.
#[pyfunction]
fn at_exit(py: Python<'_>) {
    EXITING.store(true, Ordering::SeqCst);
    py.detach(|| {
        let deadline = Instant::now() + EXIT_GRACE;
        while IN_PYTHON.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

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
                with_python(|py| {
                    let _ = cancel.call0(py);
                });
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
        with_python(|py| {
            let done = Done {
                tx: Mutex::new(Some(tx)),
            };
            match bridge.call1(py, (payload, done)) {
                Ok(cancel) if !cancel.is_none(py) => Ok(Some(cancel)),
                Ok(_) => Ok(None),
                Err(e) => Err(e.to_string()),
            }
        })
        .unwrap_or_else(|| Err("Python is exiting".to_owned()))
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
/// approval), `"defer"` (a durable chain suspends at such a call; any other
/// chain's is denied) or a bridge.
fn approval(approve: &Bound<'_, PyAny>) -> PyResult<Approval> {
    if let Ok(mode) = approve.extract::<String>() {
        return match mode.as_str() {
            "auto" => Ok(Approval::auto(ToolRisk::Critical)),
            "deny" => Ok(Approval::deny_all()),
            "defer" => Ok(Approval::defer()),
            other => Err(PyValueError::new_err(format!(
                "approve must be \"auto\", \"deny\", \"defer\" or a callable, not {other:?}"
            ))),
        };
    }
    Ok(Approval::new(PyApproval {
        bridge: Arc::new(approve.clone().unbind()),
    }))
}

/// Why something other than a chain's outcome failed: a `kind` the package
/// maps to an exception (`store`, `no_chain`, `not_pending`,
/// `being_resumed`, `not_owner`, `cell_ended`, `corrupt`, `artifacts`,
/// `internal`) and its message.
#[derive(Debug)]
struct Failure {
    kind: &'static str,
    message: String,
}

impl Failure {
    fn new(kind: &'static str, message: impl Into<String>) -> Self {
        Failure {
            kind,
            message: message.into(),
        }
    }

    /// `RuntimeError(message, kind)`.
    fn into_py(self) -> PyErr {
        PyRuntimeError::new_err((self.message, self.kind))
    }

    /// What `on_done(false, payload)` is given: `{"message", "kind"}`.
    fn to_json(&self) -> String {
        serde_json::json!({ "message": self.message, "kind": self.kind }).to_string()
    }
}

impl From<DurableError> for Failure {
    fn from(e: DurableError) -> Self {
        let kind = match &e {
            DurableError::Store(StoreError::NoChain(_)) => "no_chain",
            DurableError::Store(StoreError::NotPending { .. }) => "not_pending",
            DurableError::Store(_) => "store",
            DurableError::BeingResumed { .. } => "being_resumed",
            DurableError::NotOwner { .. } => "not_owner",
            DurableError::CellEnded { .. } => "cell_ended",
            DurableError::Corrupt { .. } => "corrupt",
        };
        Failure::new(kind, e.to_string())
    }
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
    /// them before this returns. `artifacts_url`: where it offloads
    /// (`None`: the engine's store, in memory).
    #[pyo3(signature = (script, tools, approve, on_event=None, artifacts_url=None))]
    fn run(
        &self,
        py: Python<'_>,
        script: String,
        tools: Vec<ToolSpec>,
        approve: &Bound<'_, PyAny>,
        on_event: Option<Py<PyAny>>,
        artifacts_url: Option<&str>,
    ) -> PyResult<String> {
        let registry = registry(tools)?;
        let approval = approval(approve)?;
        let artifacts = py.detach(|| artifact_store(artifacts_url)).map_err(Failure::into_py)?;
        let cancel = CancellationToken::new();
        let job = Job::Chain { script, artifacts };
        let handle = self.spawn(job, registry, approval, cancel.clone(), on_event);
        wait(py, handle, cancel)
    }

    /// Runs `cell` in the session `session` (an id, or `"new"`) of the
    /// chain store `state_url` (`memory:`, `sqlite:PATH`, `postgres://…`;
    /// one connection per URL and process), as `run` runs a chain, its
    /// artifacts in `artifacts_url` (`None`: the engine's store). A store
    /// failure is `RuntimeError(message, kind)`.
    #[pyo3(signature = (state_url, session, cell, tools, approve, on_event=None, artifacts_url=None))]
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
        artifacts_url: Option<&str>,
    ) -> PyResult<String> {
        let registry = registry(tools)?;
        let approval = approval(approve)?;
        let (store, artifacts) = py
            .detach(|| stores(state_url, artifacts_url))
            .map_err(Failure::into_py)?;
        let cancel = CancellationToken::new();
        let job = Job::Cell {
            store,
            artifacts,
            session,
            cell,
        };
        let handle = self.spawn(job, registry, approval, cancel.clone(), on_event);
        wait(py, handle, cancel)
    }

    /// Creates a durable chain in the store `state_url` and runs it, as
    /// `run` runs a chain: to its end, or to its first call that waits on
    /// a decision (with `approve="defer"`: status `suspended`, its
    /// `chain_id` and `pending` call). Its artifacts go to `artifacts_url`
    /// (`None`: the engine's store; see `durable_artifacts_url`).
    #[pyo3(signature = (state_url, script, tools, approve, on_event=None, artifacts_url=None))]
    #[allow(clippy::too_many_arguments)]
    fn run_durable(
        &self,
        py: Python<'_>,
        state_url: &str,
        script: String,
        tools: Vec<ToolSpec>,
        approve: &Bound<'_, PyAny>,
        on_event: Option<Py<PyAny>>,
        artifacts_url: Option<&str>,
    ) -> PyResult<String> {
        let registry = registry(tools)?;
        let approval = approval(approve)?;
        let (store, artifacts) = py
            .detach(|| stores(state_url, artifacts_url))
            .map_err(Failure::into_py)?;
        let cancel = CancellationToken::new();
        let job = Job::Durable {
            store,
            artifacts,
            script,
        };
        let handle = self.spawn(job, registry, approval, cancel.clone(), on_event);
        wait(py, handle, cancel)
    }

    /// Continues the durable chain `chain_id` of `state_url` from the
    /// start, answered from its journal, to its end or its next
    /// suspension, as `run` runs a chain (a finished chain gives its
    /// result again).
    #[pyo3(signature = (state_url, chain_id, tools, approve, on_event=None, artifacts_url=None))]
    #[allow(clippy::too_many_arguments)]
    fn resume(
        &self,
        py: Python<'_>,
        state_url: &str,
        chain_id: String,
        tools: Vec<ToolSpec>,
        approve: &Bound<'_, PyAny>,
        on_event: Option<Py<PyAny>>,
        artifacts_url: Option<&str>,
    ) -> PyResult<String> {
        let registry = registry(tools)?;
        let approval = approval(approve)?;
        let (store, artifacts) = py
            .detach(|| stores(state_url, artifacts_url))
            .map_err(Failure::into_py)?;
        let cancel = CancellationToken::new();
        let job = Job::Resume {
            store,
            artifacts,
            chain_id,
        };
        let handle = self.spawn(job, registry, approval, cancel.clone(), on_event);
        wait(py, handle, cancel)
    }

    /// Records a decision (an `ApprovalDecision` as JSON: `{"decision":
    /// "approved"}`, `{"decision": "modified", "arguments": {...}}`,
    /// `{"decision": "denied", "reason": ...}`) on the pending call of
    /// chain `chain_id` (call `seq` only, when given), as the local user.
    /// Returns the recorded `Decision` as JSON (a late one is recorded as a
    /// denial).
    #[pyo3(signature = (state_url, chain_id, decision_json, decided_by, seq=None))]
    fn decide(
        &self,
        py: Python<'_>,
        state_url: &str,
        chain_id: &str,
        decision_json: &str,
        decided_by: &str,
        seq: Option<u32>,
    ) -> PyResult<String> {
        let decision: ApprovalDecision =
            serde_json::from_str(decision_json).map_err(|e| PyValueError::new_err(format!("bad decision: {e}")))?;
        let engine = self.engine.clone();
        py.detach(|| {
            let store = store(state_url)?;
            let durable = engine.durable(store);
            let recorded = runtime()
                .block_on(durable.decide_call(chain_id, seq, decision, decided_by))
                .map_err(Failure::from)?;
            serde_json::to_string(&recorded).map_err(|e| Failure::new("internal", e.to_string()))
        })
        .map_err(Failure::into_py)
    }

    /// Starts a chain and returns at once; `on_done(ok, result_json)` is
    /// called with the GIL from another thread when it ends (after every
    /// `on_event`). The handle cancels it.
    #[pyo3(signature = (script, tools, approve, on_done, on_event=None, artifacts_url=None))]
    #[allow(clippy::too_many_arguments)]
    fn start(
        &self,
        py: Python<'_>,
        script: String,
        tools: Vec<ToolSpec>,
        approve: &Bound<'_, PyAny>,
        on_done: Py<PyAny>,
        on_event: Option<Py<PyAny>>,
        artifacts_url: Option<&str>,
    ) -> PyResult<RunHandle> {
        let registry = registry(tools)?;
        let approval = approval(approve)?;
        let artifacts = py.detach(|| artifact_store(artifacts_url)).map_err(Failure::into_py)?;
        let job = Job::Chain { script, artifacts };
        Ok(self.start_job(job, registry, approval, on_done, on_event))
    }

    /// `run_cell` as `start` starts a chain (`on_done(false, failure)` for
    /// a store that fails while it runs).
    #[pyo3(signature = (state_url, session, cell, tools, approve, on_done, on_event=None, artifacts_url=None))]
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
        artifacts_url: Option<&str>,
    ) -> PyResult<RunHandle> {
        let registry = registry(tools)?;
        let approval = approval(approve)?;
        let (store, artifacts) = py
            .detach(|| stores(state_url, artifacts_url))
            .map_err(Failure::into_py)?;
        let job = Job::Cell {
            store,
            artifacts,
            session,
            cell,
        };
        Ok(self.start_job(job, registry, approval, on_done, on_event))
    }

    /// `run_durable` as `start` starts a chain.
    #[pyo3(signature = (state_url, script, tools, approve, on_done, on_event=None, artifacts_url=None))]
    #[allow(clippy::too_many_arguments)]
    fn start_durable(
        &self,
        py: Python<'_>,
        state_url: &str,
        script: String,
        tools: Vec<ToolSpec>,
        approve: &Bound<'_, PyAny>,
        on_done: Py<PyAny>,
        on_event: Option<Py<PyAny>>,
        artifacts_url: Option<&str>,
    ) -> PyResult<RunHandle> {
        let registry = registry(tools)?;
        let approval = approval(approve)?;
        let (store, artifacts) = py
            .detach(|| stores(state_url, artifacts_url))
            .map_err(Failure::into_py)?;
        let job = Job::Durable {
            store,
            artifacts,
            script,
        };
        Ok(self.start_job(job, registry, approval, on_done, on_event))
    }

    /// `resume` as `start` starts a chain.
    #[pyo3(signature = (state_url, chain_id, tools, approve, on_done, on_event=None, artifacts_url=None))]
    #[allow(clippy::too_many_arguments)]
    fn start_resume(
        &self,
        py: Python<'_>,
        state_url: &str,
        chain_id: String,
        tools: Vec<ToolSpec>,
        approve: &Bound<'_, PyAny>,
        on_done: Py<PyAny>,
        on_event: Option<Py<PyAny>>,
        artifacts_url: Option<&str>,
    ) -> PyResult<RunHandle> {
        let registry = registry(tools)?;
        let approval = approval(approve)?;
        let (store, artifacts) = py
            .detach(|| stores(state_url, artifacts_url))
            .map_err(Failure::into_py)?;
        let job = Job::Resume {
            store,
            artifacts,
            chain_id,
        };
        Ok(self.start_job(job, registry, approval, on_done, on_event))
    }
}

/// What a spawned run runs: a chain, a session's cell, a new durable chain
/// or a durable chain's resume; each with its artifact store (`None`: the
/// engine's).
enum Job {
    Chain {
        script: String,
        artifacts: Option<Arc<dyn ArtifactStore>>,
    },
    Cell {
        store: Arc<dyn ChainStore>,
        artifacts: Option<Arc<dyn ArtifactStore>>,
        session: String,
        cell: String,
    },
    Durable {
        store: Arc<dyn ChainStore>,
        artifacts: Option<Arc<dyn ArtifactStore>>,
        script: String,
    },
    Resume {
        store: Arc<dyn ChainStore>,
        artifacts: Option<Arc<dyn ArtifactStore>>,
        chain_id: String,
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
            let (ok, payload) = match handle.await {
                Ok(Ok(result)) => match serde_json::to_string(&result) {
                    Ok(json) => (true, json),
                    Err(e) => (false, Failure::new("internal", e.to_string()).to_json()),
                },
                Ok(Err(failure)) => (false, failure.to_json()),
                Err(e) => (
                    false,
                    Failure::new("internal", format!("the chain's task failed: {e}")).to_json(),
                ),
            };
            let _ = tokio::task::spawn_blocking(move || {
                with_python(|py| {
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
    ) -> tokio::task::JoinHandle<Result<ChainRunResult, Failure>> {
        let engine = self.engine.clone();
        let policy = self.policy.clone();
        let events = on_event.map(events);
        runtime().spawn(async move {
            let observer = events.as_ref().map(|(observer, _, _)| observer.clone());
            let durable = |store: Arc<dyn ChainStore>, artifacts: Option<Arc<dyn ArtifactStore>>| {
                Durable::new(engine.clone(), store)
                    .with_artifacts(artifacts)
                    .with_observer(observer.clone())
                    .cancelled_by(cancel.clone())
            };
            let result = match job {
                Job::Chain { script, artifacts } => {
                    let options = RunOptions {
                        cancel: Some(cancel.clone()),
                        observer: observer.clone(),
                        artifacts,
                        ..RunOptions::default()
                    };
                    Ok(engine.run_with(&script, &registry, &policy, &approval, options).await)
                }
                Job::Cell {
                    store,
                    artifacts,
                    session,
                    cell,
                } => durable(store, artifacts)
                    .run_cell(&session, &cell, &registry, &policy, &approval)
                    .await
                    .map_err(Failure::from),
                Job::Durable {
                    store,
                    artifacts,
                    script,
                } => durable(store, artifacts)
                    .run(&script, &registry, &policy, &approval)
                    .await
                    .map_err(Failure::from),
                Job::Resume {
                    store,
                    artifacts,
                    chain_id,
                } => durable(store, artifacts)
                    .resume(&chain_id, &registry, &approval)
                    .await
                    .map_err(Failure::from),
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
    mut handle: tokio::task::JoinHandle<Result<ChainRunResult, Failure>>,
    cancel: CancellationToken,
) -> PyResult<String> {
    loop {
        let joined = py.detach(|| {
            runtime().block_on(async { tokio::time::timeout(Duration::from_millis(100), &mut handle).await })
        });
        match joined {
            Ok(Ok(Ok(result))) => return result_json(&result),
            Ok(Ok(Err(failure))) => return Err(failure.into_py()),
            Ok(Err(e)) => return Err(Failure::new("internal", format!("the chain's task failed: {e}")).into_py()),
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
fn store(url: &str) -> Result<Arc<dyn ChainStore>, Failure> {
    static STORES: Mutex<Vec<(String, Arc<dyn ChainStore>)>> = Mutex::new(Vec::new());
    let mut stores = STORES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, store)) = stores.iter().find(|(u, _)| u == url) {
        return Ok(Arc::clone(store));
    }
    let store = runtime()
        .block_on(chainbox::store::connect(url))
        .map_err(|e| Failure::new("store", format!("chain store {url:?}: {e}")))?;
    stores.push((url.to_owned(), Arc::clone(&store)));
    Ok(store)
}

/// The artifact store a URL names (`memory:`, `file:DIR`, `s3://…`), opened
/// once per process (so a directory's pins are one set, and a `memory:`
/// store is one store); `None` for `None`: the engine's.
fn artifact_store(url: Option<&str>) -> Result<Option<Arc<dyn ArtifactStore>>, Failure> {
    static ARTIFACTS: Mutex<Vec<(String, Arc<dyn ArtifactStore>)>> = Mutex::new(Vec::new());
    let Some(url) = url else {
        return Ok(None);
    };
    let mut opened = ARTIFACTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, artifacts)) = opened.iter().find(|(u, _)| u == url) {
        return Ok(Some(Arc::clone(artifacts)));
    }
    let artifacts = chainbox::artifacts::open(url).map_err(|e| Failure::new("artifacts", e.to_string()))?;
    opened.push((url.to_owned(), Arc::clone(&artifacts)));
    Ok(Some(artifacts))
}

/// A durable run's chain store and artifact store (`None`: the engine's).
type Stores = (Arc<dyn ChainStore>, Option<Arc<dyn ArtifactStore>>);

/// The chain store `state_url` names and the artifact store
/// `artifacts_url` names.
fn stores(state_url: &str, artifacts_url: Option<&str>) -> Result<Stores, Failure> {
    Ok((store(state_url)?, artifact_store(artifacts_url)?))
}

/// The artifact store a durable chain in `state_url` uses, as the command
/// line chooses it: `artifacts_url` when given, else for a SQLite state
/// (one machine) the directory `PATH.artifacts` beside its database, so
/// that a resume in another process loads what the chain offloaded before
/// it suspended; else `None` (the engine's store, in this process's
/// memory).
#[pyfunction]
#[pyo3(signature = (state_url, artifacts_url=None))]
fn durable_artifacts(state_url: &str, artifacts_url: Option<String>) -> Option<String> {
    if artifacts_url.is_some() {
        return artifacts_url;
    }
    let rest = state_url.strip_prefix("sqlite:")?;
    let path = rest.strip_prefix("//").unwrap_or(rest);
    let path = path.split('?').next().unwrap_or_default();
    (!path.is_empty() && path != ":memory:").then(|| format!("file:{path}.artifacts"))
}

/// Every chain of the store `state_url` waiting on a decision, oldest
/// request first, as JSON: `[{chain_id, owner, call: {seq, tool,
/// arguments, risk, requested_at, provenance?}}]`.
#[pyfunction]
fn approvals(py: Python<'_>, state_url: &str) -> PyResult<String> {
    py.detach(|| {
        let store = store(state_url)?;
        let pending = runtime()
            .block_on(store.pending())
            .map_err(|e| Failure::new("store", e.to_string()))?;
        serde_json::to_string(&pending).map_err(|e| Failure::new("internal", e.to_string()))
    })
    .map_err(Failure::into_py)
}

/// An artifact's bytes and media type, from the store `artifacts_url`
/// (`None`: the engine's), or `None` if the store does not have it.
/// `ValueError` for a malformed ref.
#[pyfunction]
#[pyo3(signature = (artifact_ref, artifacts_url=None))]
fn read_artifact<'py>(
    py: Python<'py>,
    artifact_ref: &str,
    artifacts_url: Option<&str>,
) -> PyResult<Option<(Bound<'py, PyBytes>, String)>> {
    let r = ArtifactRef::parse(artifact_ref).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let found = py
        .detach(|| {
            let artifacts = match artifact_store(artifacts_url)? {
                Some(artifacts) => artifacts,
                None => Arc::clone(shared_engine().map_err(|e| Failure::new("internal", e))?.artifacts()),
            };
            artifacts.get(&r).map_err(|e| Failure::new("artifacts", e.to_string()))
        })
        .map_err(Failure::into_py)?;
    Ok(found.map(|artifact| (PyBytes::new(py, &artifact.bytes), artifact.media_type)))
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
            with_python(|py| {
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
    m.add_function(wrap_pyfunction!(durable_artifacts, m)?)?;
    m.add_function(wrap_pyfunction!(approvals, m)?)?;
    m.add_function(wrap_pyfunction!(read_artifact, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    let at_exit = wrap_pyfunction!(at_exit, m)?;
    m.py().import("atexit")?.call_method1("register", (at_exit,))?;
    Ok(())
}
