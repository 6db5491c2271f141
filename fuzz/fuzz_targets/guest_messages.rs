//! Fuzzes the host's handling of bytes that come from the guest.
//!
//! The first input byte picks the host import whose payload the rest plays
//! (`call`/`start`, `wait`, `os`, `load_artifact`, `finish`, plus the guest-side
//! messages for completeness); the payload is decoded with the same
//! `chainbox_protocol::decode` the sandbox uses and, when it decodes, handed
//! to the same host code the import would run: the invoker's gates for a tool
//! call, `monty-fs` on a real workspace for an OS call, the shaper for an
//! artifact handle or the chain's output. The host must never panic, must
//! stage answers the guest can decode, and file operations must stay inside
//! the workspace.
#![no_main]

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use chainbox::invoker::InvokerSession;
use chainbox::shaping::{Shaper, preview};
use chainbox::workspace::Workspace;
use chainbox::{
    Approval, ArtifactStore, ChainPolicy, MemoryArtifactStore, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry,
    ToolRisk,
};
use chainbox_protocol::{
    CallOutcome, Completions, Finish, FsOutcome, LoadArtifact, RunRequest, ScriptResult, ToolCall, Wait, decode,
    encode, sleep_of,
};
use libfuzzer_sys::fuzz_target;
use monty_fs::MountCallOutcome;
use monty_types::OsFunctionCall;
use serde_json::{Map, Value, json};

/// Echoes its arguments back; with `risk` above safe it needs approval.
struct Echo {
    name: &'static str,
    schema: Value,
    risk: ToolRisk,
}

#[async_trait]
impl Tool for Echo {
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
        if args.contains_key("fail") {
            return Err(ToolError::new("asked to fail"));
        }
        Ok(ToolOutput::Value(Value::Object(args)))
    }
}

struct Fixture {
    runtime: tokio::runtime::Runtime,
    registry: ToolRegistry,
    policy: Arc<ChainPolicy>,
    store: Arc<dyn ArtifactStore>,
    /// Per-input workspaces are made below this directory, which must be
    /// empty again once an input's workspace is removed.
    root: PathBuf,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let echo = Echo {
            name: "echo",
            schema: json!({"type": "object", "properties": {"text": {}, "fail": {}}}),
            risk: ToolRisk::Safe,
        };
        let strict = Echo {
            name: "add",
            schema: json!({
                "type": "object",
                "required": ["a", "b"],
                "additionalProperties": false,
                "properties": {"a": {"type": "number"}, "b": {"type": "number", "maximum": 100}}
            }),
            risk: ToolRisk::Safe,
        };
        let risky = Echo {
            name: "delete",
            schema: json!({"type": "object"}),
            risk: ToolRisk::High,
        };
        let registry = ToolRegistry::from_local([Arc::new(echo) as Arc<dyn Tool>, Arc::new(strict), Arc::new(risky)])
            .expect("registry");
        let policy = ChainPolicy {
            max_tool_calls: 4,
            call_timeout_s: 1.0,
            approval_timeout_s: 0.5,
            max_inline_result_bytes: 64,
            max_arg_bytes: 4096,
            max_result_bytes: 8192,
            ..ChainPolicy::default()
        };
        let root = std::env::temp_dir().join(format!("chainbox-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&root).expect("fuzz workspace root");
        Fixture {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("runtime"),
            registry,
            policy: Arc::new(policy),
            store: Arc::new(MemoryArtifactStore::new()),
            root,
        }
    })
}

/// The value every session offloads at start, so a fuzzed handle can name a
/// real artifact of the chain (its ref is in `fuzz/seeds/guest_messages`).
fn known_artifact() -> Value {
    json!({"known": "artifact", "padding": "x".repeat(80)})
}

fn session(f: &Fixture, workspace: Arc<Mutex<Workspace>>) -> InvokerSession {
    let shaper = Shaper::new(
        "fuzz".into(),
        f.store.clone(),
        workspace,
        f.policy.max_inline_result_bytes,
    );
    let session = InvokerSession::with_shaper(
        "fuzz".into(),
        f.registry.clone(),
        f.policy.clone(),
        Approval::auto(ToolRisk::Safe),
        shaper,
    );
    session.shaper().inline_or_offload(known_artifact()).expect("offload");
    session
}

/// What the host stages must decode on the guest side.
fn assert_guest_can_decode_outcome(outcome: &CallOutcome) {
    let bytes = encode(outcome);
    if let Err(e) = decode::<CallOutcome>("call outcome", &bytes) {
        panic!(
            "host staged an outcome the guest cannot decode: {e}: {}",
            String::from_utf8_lossy(&bytes)
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, payload)) = data.split_first() else {
        return;
    };
    let f = fixture();
    let dir = f.root.join("ws");
    let workspace = Arc::new(Mutex::new(Workspace::new(Some(dir.clone()))));
    match selector % 6 {
        // `call` and `start`: a tool call through every gate of the invoker.
        0 => {
            let Ok(call) = decode::<ToolCall>("tool call", payload) else {
                return;
            };
            let session = session(f, workspace.clone());
            let outcome = f.runtime.block_on(async {
                let admitted = session.admit(call).expect("first call is within budget");
                session.run(admitted).await
            });
            assert_guest_can_decode_outcome(&outcome);
            let trace = session.trace(chainbox::CallStatus::Error, "fuzz");
            assert_eq!(trace.len(), 1, "one record per admitted call");
            session.shaper().release();
        }
        // `wait`: the list of started ids.
        1 => {
            let _ = decode::<Wait>("wait", payload);
        }
        // `os`: a file operation served by monty-fs on the chain's workspace
        // (sleeps are skipped: they only park the chain).
        2 => {
            let Ok(call) = decode::<OsFunctionCall>("os call", payload) else {
                return;
            };
            if sleep_of(&call).is_some() || call.fs_primary_path().is_none() {
                return;
            }
            let outcome: FsOutcome = {
                let mut ws = workspace.lock().unwrap();
                let mounts = ws.mounts().expect("workspace mounts");
                match mounts.handle_os_call(call) {
                    MountCallOutcome::Handled(Ok(value)) => Ok(value),
                    MountCallOutcome::Handled(Err(err)) => Err(err.into_exception()),
                    MountCallOutcome::NotHandled(call) => Err(call.on_no_handler()),
                }
            };
            let _ = decode::<FsOutcome>("fs outcome", &encode(&outcome));
        }
        // `load_artifact`: a handle, resolved against this chain's artifacts.
        3 => {
            let Ok(LoadArtifact { handle }) = decode::<LoadArtifact>("load_artifact", payload) else {
                return;
            };
            let session = session(f, workspace.clone());
            let outcome = session.load_artifact(&handle);
            assert_guest_can_decode_outcome(&outcome);
            session.shaper().release();
        }
        // `finish`: the chain's output, shaped like `engine::shape_output`.
        4 => {
            let Ok(finish) = decode::<Finish>("finish", payload) else {
                return;
            };
            if let ScriptResult::Ok { output, output_text } = finish.result {
                let session = session(f, workspace.clone());
                let _ = serde_json::to_string(&output).expect("a decoded value serialises");
                let _ = session.shaper().inline_or_offload(output);
                let p = preview(&output_text);
                assert!(
                    p.len() <= output_text.len() + '…'.len_utf8(),
                    "a preview is not longer than its text"
                );
                session.shaper().release();
            }
        }
        // The guest's side of the contract, decoded from the same bytes.
        _ => {
            let _ = decode::<RunRequest>("run request", payload);
            let _ = decode::<CallOutcome>("call outcome", payload);
            let _ = decode::<Completions>("completions", payload);
            let _ = decode::<FsOutcome>("fs outcome", payload);
        }
    }
    drop(workspace);
    let _ = std::fs::remove_dir_all(&dir);
    // Anything else under the root was written outside the workspace.
    let escaped: Vec<_> = std::fs::read_dir(&f.root)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(escaped.is_empty(), "files escaped the workspace: {escaped:?}");
});
