//! What a chain run returns: [`ChainRunResult`] with its [`ChainCallRecord`]
//! trace, exactly the JSON contract of DESIGN.md (`chainbox run --json`
//! prints one of these).
//!
//! Invariant: every outcome (success, script error, tool failure, denial,
//! limit hit, timeout, crash, cancellation) produces a `ChainRunResult`
//! carrying a record for every tool call that was made.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::artifacts::ArtifactRef;
use crate::util::truncate_chars;

/// How a chain ended, at the top level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChainStatus {
    /// The script completed; `output` holds its final value.
    Ok,
    /// The script failed or was stopped by a limit; see `error`.
    Error,
    /// The chain's total time limit expired.
    Timeout,
    /// A durable chain stopped at a call that needs a human's decision; see
    /// `pending` and `chain_id`. Nothing of it is running: a decision and a
    /// resume continue it, in this process or another.
    Suspended,
}

/// How dangerous a tool call is. Ordered by rank, `Safe < High < Critical`;
/// never compare the names as strings (alphabetically "critical" < "high" <
/// "safe", a bug the seed framework once shipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolRisk {
    /// Reads or computes; no side effects worth asking about.
    #[default]
    Safe,
    /// Side effects a human may want to approve.
    High,
    /// Irreversible or costly side effects.
    Critical,
}

impl ToolRisk {
    /// The lowercase name used in manifests, policies and stubs.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolRisk::Safe => "safe",
            ToolRisk::High => "high",
            ToolRisk::Critical => "critical",
        }
    }
}

impl fmt::Display for ToolRisk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ToolRisk {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "safe" => Ok(ToolRisk::Safe),
            "high" => Ok(ToolRisk::High),
            "critical" => Ok(ToolRisk::Critical),
            other => Err(format!("unknown risk {other:?} (expected safe, high or critical)")),
        }
    }
}

/// Why a chain did not complete, in one word a program can branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The script does not parse.
    Compile,
    /// The script raised an uncaught exception.
    Script,
    /// The script made more tool calls than `max_tool_calls`.
    ToolBudget,
    /// The script used more memory than `max_memory_bytes`.
    Memory,
    /// The script used more CPU time than `max_cpu_s`.
    Cpu,
    /// The chain's output was larger than the policy allows.
    OutputLimit,
    /// The chain ran past `total_timeout_s`.
    Timeout,
    /// The chain was cancelled by its caller.
    Cancelled,
    /// The sandbox itself failed (a guest trap or an engine error).
    Crash,
    /// The [`ChainPolicy`](crate::ChainPolicy) given to the run is invalid
    /// (the message names the field); nothing ran.
    Policy,
    /// A resumed chain asked for another tool call than its journal holds
    /// at that point (the message names the call); no tool ran for it.
    ReplayDiverged,
    /// A session's cell could not run: the session is unknown (or
    /// another principal's), ended, expired, full or busy (the message
    /// says which); nothing ran.
    Session,
    /// The check before the run ([`crate::check`]) found tool calls that
    /// cannot succeed (the result's `diagnostics` list them); nothing ran.
    TypeError,
    /// A sweep finished a durable chain no process would finish: its run
    /// died (or was cancelled) before it suspended, and nothing resumed it
    /// (`chainbox gc`, `serve --state`; see `crate::store::sweep`).
    Abandoned,
    /// A sweep finished a durable chain (or ended a session) that waited
    /// past its limits: a decision past `approval_expires_s`, a session
    /// past `session_expires_s` (see `crate::store::sweep`).
    Expired,
}

/// `as_str` (the name the JSON contract uses) and `Display` for a
/// unit-variant enum, without a JSON round trip.
macro_rules! contract_names {
    ($ty:ty { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The name the JSON contract uses for this value.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)+
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    };
}

contract_names!(ChainStatus { Ok => "ok", Error => "error", Timeout => "timeout", Suspended => "suspended" });

contract_names!(ErrorKind {
    Compile => "compile",
    Script => "script",
    ToolBudget => "tool_budget",
    Memory => "memory",
    Cpu => "cpu",
    OutputLimit => "output_limit",
    Timeout => "timeout",
    Cancelled => "cancelled",
    Crash => "crash",
    Policy => "policy",
    ReplayDiverged => "replay_diverged",
    Session => "session",
    TypeError => "type_error",
    Abandoned => "abandoned",
    Expired => "expired",
});

/// The error part of a [`ChainRunResult`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainError {
    /// Which kind of failure.
    pub kind: ErrorKind,
    /// The Python exception type for script errors (`ZeroDivisionError`),
    /// otherwise a descriptive name (`CpuLimitExceeded`).
    #[serde(rename = "type")]
    pub error_type: String,
    /// What happened, naming the limit or the cause.
    pub message: String,
    /// 1-based script line, when known.
    pub line: Option<u32>,
    /// The Python traceback, for script errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
}

impl ChainError {
    /// An error with no line or traceback.
    pub fn new(kind: ErrorKind, error_type: impl Into<String>, message: impl Into<String>) -> Self {
        ChainError {
            kind,
            error_type: error_type.into(),
            message: message.into(),
            line: None,
            traceback: None,
        }
    }
}

/// Longest error message a script, a tool or a tool's stderr may put into
/// a result, in characters: it reaches the model's context.
pub const MAX_ERROR_MESSAGE_CHARS: usize = 2000;

/// Longest `traceback` of a script error, in characters (its head and its
/// tail are kept).
pub const MAX_TRACEBACK_CHARS: usize = 16_000;

impl ChainError {
    /// This error with its message and traceback cut to
    /// [`MAX_ERROR_MESSAGE_CHARS`] and [`MAX_TRACEBACK_CHARS`]: both come from
    /// the script, which could otherwise put megabytes into the result (and
    /// the model's context) with `raise ValueError('x' * 10**6)`.
    pub fn bounded(mut self) -> Self {
        self.message = truncate_chars(&self.message, MAX_ERROR_MESSAGE_CHARS);
        if let Some(tb) = &mut self.traceback {
            let chars = tb.chars().count();
            if chars > MAX_TRACEBACK_CHARS {
                let half = MAX_TRACEBACK_CHARS / 2;
                let head: String = tb.chars().take(half).collect();
                let tail: String = tb.chars().skip(chars - half).collect();
                *tb = format!("{head}\n… ({} characters cut) …\n{tail}", chars - 2 * half);
            }
        }
        self
    }
}

/// How one tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// The tool returned a result.
    Ok,
    /// The call failed: the tool errored, panicked, was refused before running
    /// (unknown tool, bad arguments), or was cut off when the chain ended.
    Error,
    /// Policy or a human refused it; the tool did not run.
    Denied,
    /// It ran past its call timeout, or the chain's deadline hit while it ran.
    Timeout,
}

contract_names!(CallStatus { Ok => "ok", Error => "error", Denied => "denied", Timeout => "timeout" });

/// The policy decision behind a call record: what let the call through to
/// its tool, or what stopped it. A record has none when the call ended
/// before any policy decision (an unknown tool, arguments the schema
/// refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyDecision {
    /// Its risk was at or below `max_risk_unapproved`: it ran without asking.
    WithinRisk,
    /// Its risk needed approval, and the approval handler approved it.
    Approved,
    /// Approved with replacement arguments, which the tool ran with.
    ApprovedModified,
    /// The data-flow policy ([`crate::flow`]) held it (its guarded
    /// arguments may derive from untrusted results that had arrived), and
    /// the approval handler approved it, as asked or with replacement
    /// arguments; `provenance` lists those results.
    ApprovedFlow,
    /// Refused for its kind: hosted, provider-defined, or `run_chain`.
    DeniedKind,
    /// Refused because the policy's `tools.NAME.deny` is set.
    DeniedTool,
    /// Refused because the tool needs a permission the policy does not grant.
    DeniedPermission,
    /// Refused because the policy's `allowed_tools` (set by a skill, say)
    /// does not list the tool.
    DeniedNotAllowed,
    /// Refused because the chain's principal (the authenticated caller it
    /// runs for) lacks a scope the policy's `tools.NAME.required_scopes`
    /// asks for.
    DeniedScope,
    /// The approval handler denied or skipped it, failed, or did not answer
    /// within `approval_timeout_s`.
    DeniedApproval,
    /// The data-flow policy ([`crate::flow`]) held it, and the approval
    /// handler denied or skipped it, failed, or did not answer in time;
    /// `provenance` lists the untrusted results it was held for.
    DeniedFlow,
}

contract_names!(PolicyDecision {
    WithinRisk => "within_risk",
    Approved => "approved",
    ApprovedModified => "approved_modified",
    ApprovedFlow => "approved_flow",
    DeniedKind => "denied_kind",
    DeniedTool => "denied_tool",
    DeniedPermission => "denied_permission",
    DeniedNotAllowed => "denied_not_allowed",
    DeniedScope => "denied_scope",
    DeniedApproval => "denied_approval",
    DeniedFlow => "denied_flow",
});

/// Something Python would have warned about while the script ran. Today:
/// a tool call whose coroutine was never awaited. Like CPython, chainbox
/// runs a tool call only once the script awaits it, so such a call never
/// ran (it has no record in the trace); the warning says where it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainWarning {
    /// e.g. `coroutine 'send_email' was never awaited`, as CPython words it.
    pub message: String,
    /// 1-based line of the script that caused it, when known.
    pub line: Option<u32>,
}

impl From<chainbox_protocol::Warning> for ChainWarning {
    fn from(w: chainbox_protocol::Warning) -> Self {
        ChainWarning {
            message: w.message,
            line: w.line,
        }
    }
}

/// A tool call the check before the run found cannot succeed
/// ([`crate::check`]): a chain refused for it carries one per call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// What is wrong, as a rule name: ty's (`unknown-argument`,
    /// `missing-argument`, `invalid-argument-type`...) or the check's own
    /// (`unknown-tool`, `not-awaited`).
    pub rule: String,
    /// What it says, with the tool's signature where it helps.
    pub message: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub col: u32,
}

/// One audit entry per tool call the script made, returned on every outcome
/// so the caller knows which side effects already happened, with the
/// provenance of what the script received: which tool kind answered
/// (`source`), when (`observed_at`) and under which policy decision
/// (`policy`). JSON field names are the Rust names, snake_case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainCallRecord {
    /// The call's unique id (`call_` and 32 hex digits), as in the seed's
    /// `ToolCallRequest.call_id`.
    pub call_id: String,
    /// The tool name as the script called it.
    pub tool: String,
    /// Lowercase hex SHA-256 of the arguments' RFC 8785 canonical JSON.
    pub args_digest: String,
    /// How it ended.
    pub status: CallStatus,
    /// Wall time from the call leaving the sandbox to its answer.
    pub duration_ms: f64,
    /// Set when the result was offloaded to the artifact store.
    pub artifact_ref: Option<ArtifactRef>,
    /// Why it did not succeed, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The tool's kind and name (`command:get_weather`, `builtin:read_file`,
    /// `hosted:web_search`); null when no tool has the name called.
    pub source: Option<String>,
    /// When the call's outcome was observed: UTC, RFC 3339
    /// (`2026-12-01T20:28:12.123456Z`).
    pub observed_at: String,
    /// The policy decision that let the call through or stopped it; null
    /// when the call ended before any (unknown tool, bad arguments, or the
    /// chain ended while it waited for approval).
    pub policy: Option<PolicyDecision>,
    /// The call was answered from the chain's journal (a resumed chain):
    /// its tool ran when the chain first made it, not again. Left out of
    /// the JSON when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
    /// The untrusted results the data-flow policy ([`crate::flow`]) found
    /// its guarded arguments may derive from (calls that had answered
    /// before it), when it held the call for them (`approved_flow`,
    /// `denied_flow`, or no policy when the chain ended while the call
    /// waited for that approval). Left out of the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provenance: Vec<FlowSource>,
}

/// An untrusted tool's call whose result a call's guarded arguments may
/// derive from, or that decided the call was made (the data-flow policy,
/// [`crate::flow`]): a call's `provenance` and its approval request list them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowSource {
    /// The source call's number in the chain (from 1, as `seq` in the
    /// journal and in `pending`).
    pub seq: u32,
    /// Its `call_id`, when this run made or replayed it (a session's
    /// earlier cell on a warm node is neither).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The untrusted tool.
    pub tool: String,
}

/// A file the chain produced in its workspace (a media result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainFile {
    /// Its path inside the sandbox, under `/workspace`.
    pub path: String,
    /// Its media type.
    pub media_type: String,
    /// The artifact holding its bytes.
    pub artifact_ref: ArtifactRef,
}

/// An artifact the chain stored (an offloaded result or output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactInfo {
    /// `sha256:<hex>`.
    pub artifact_ref: ArtifactRef,
    /// Its media type.
    pub media_type: String,
    /// Its size in bytes.
    pub size: u64,
}

/// Resources the chain used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Largest linear memory the sandbox reached.
    pub peak_memory_bytes: u64,
    /// CPU time spent in the script itself (not in tools), in milliseconds.
    pub cpu_ms: f64,
    /// Bytes of `print` output produced (kept or not).
    pub stdout_bytes: u64,
    /// Whether `stdout` was cut at `max_stdout_bytes`.
    pub stdout_truncated: bool,
}

/// Everything a chain run returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainRunResult {
    /// ok, error or timeout.
    pub status: ChainStatus,
    /// The script's final value as JSON (`null` unless ok).
    pub output: Value,
    /// The final value as text: a string as is, anything else as its `repr`.
    pub output_text: String,
    /// Captured `print` output, bounded by `max_stdout_bytes`.
    pub stdout: String,
    /// Why it failed, or null.
    pub error: Option<ChainError>,
    /// Number of tool calls made (records in `call_trace`).
    pub tool_calls: u32,
    /// Wall time of the whole run.
    pub duration_ms: f64,
    /// One record per tool call, in call order.
    pub call_trace: Vec<ChainCallRecord>,
    /// What Python would have warned about (a never-awaited tool call), in
    /// order, after what the check before the run warned about.
    pub warnings: Vec<ChainWarning>,
    /// Why the check before the run refused the chain (kind
    /// `type_error`); left out of the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
    /// Artifacts stored during the chain.
    pub artifacts: Vec<ArtifactInfo>,
    /// Files written to the workspace for the caller.
    pub files: Vec<ChainFile>,
    /// Resources used.
    pub usage: Usage,
    /// Which interpreter ran the script (`monty` or `cpython`), chosen
    /// before anything ran (see [`crate::python_choice`]).
    #[serde(default)]
    pub interpreter: Interpreter,
    /// A durable chain's id: what `decide` and `resume` name it by. Left
    /// out of the JSON for a chain that is not durable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_id: Option<String>,
    /// The call a suspended chain waits on a decision for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingCall>,
    /// A session's cell: which session and cell it was (its fields are
    /// the result's own in the JSON). Left out for a chain.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionCell>,
}

/// Which session a cell's result belongs to ([`ChainRunResult::session`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionCell {
    /// The session's id: what the next cell names it by.
    pub session_id: String,
    /// The cell's number in the session, from 1.
    pub cell: u32,
    /// When the session ends unless another cell runs before (UTC, RFC
    /// 3339): its last use plus the policy's `session_expires_s`.
    pub session_expires_at: String,
}

/// A tool call a suspended chain waits on a human's decision for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The call's number in the chain (1 for its first call).
    pub seq: u32,
    /// The tool.
    pub tool: String,
    /// The arguments as the script passed them.
    pub arguments: serde_json::Map<String, Value>,
    /// Why it needs a decision.
    pub risk: ToolRisk,
    /// When the chain asked (UTC, RFC 3339).
    pub requested_at: String,
    /// The untrusted results its guarded arguments may derive from, when
    /// the data-flow policy ([`crate::flow`]) is why it waits. Left out of
    /// the JSON when empty (and empty in a pending call stored before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provenance: Vec<FlowSource>,
}

impl ChainRunResult {
    /// A result with `status` and nothing else: no output, no calls, no
    /// error yet.
    pub(crate) fn empty(status: ChainStatus) -> Self {
        ChainRunResult {
            status,
            output: Value::Null,
            output_text: String::new(),
            stdout: String::new(),
            error: None,
            tool_calls: 0,
            duration_ms: 0.0,
            call_trace: Vec::new(),
            warnings: Vec::new(),
            diagnostics: Vec::new(),
            artifacts: Vec::new(),
            files: Vec::new(),
            usage: Usage::default(),
            interpreter: Interpreter::Monty,
            chain_id: None,
            session: None,
            pending: None,
        }
    }

    /// Whether the chain completed successfully.
    pub fn is_ok(&self) -> bool {
        self.status == ChainStatus::Ok
    }

    /// The error kind, if any.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        self.error.as_ref().map(|e| e.kind)
    }
}

/// Which interpreter runs a chain.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Interpreter {
    /// The monty interpreter: a Python subset, fast to start.
    #[default]
    Monty,
    /// The CPython guest: all of Python, slower to start.
    Cpython,
}

impl Interpreter {
    /// The interpreter's name as configuration and reports spell it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Monty => "monty",
            Self::Cpython => "cpython",
        }
    }
}

impl fmt::Display for Interpreter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of a call record still in flight when its chain was cancelled.
pub const CANCELLED_CALL: &str = "cancelled: the chain was cancelled by its caller";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_str_is_the_name_serde_writes() {
        for kind in ErrorKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
        for status in ChainStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), status.to_string());
        }
        for status in CallStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        for decision in PolicyDecision::ALL {
            assert_eq!(serde_json::to_value(decision).unwrap(), decision.as_str());
        }
    }

    #[test]
    fn result_serializes_with_contract_field_names() {
        let r = ChainRunResult {
            status: ChainStatus::Error,
            output: Value::Null,
            output_text: String::new(),
            stdout: String::new(),
            error: Some(ChainError::new(ErrorKind::ToolBudget, "ToolBudgetExceeded", "too many")),
            tool_calls: 0,
            duration_ms: 1.0,
            call_trace: vec![],
            warnings: vec![],
            diagnostics: vec![],
            artifacts: vec![],
            files: vec![],
            usage: Usage::default(),
            interpreter: Interpreter::Cpython,
            chain_id: None,
            session: None,
            pending: None,
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["interpreter"], "cpython");
        assert_eq!(v["status"], "error");
        assert_eq!(v["error"]["kind"], "tool_budget");
        assert_eq!(v["error"]["type"], "ToolBudgetExceeded");
        assert!(v["error"]["line"].is_null());
        for key in [
            "output",
            "output_text",
            "stdout",
            "tool_calls",
            "duration_ms",
            "call_trace",
            "warnings",
            "artifacts",
            "files",
            "usage",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
    }
}
