//! Human-in-the-loop approval: the seed's `ApprovalRequest` /
//! `ApprovalDecision` / `ApprovalHandler` contract and the handlers chainbox
//! ships: [`AutoApprove`] (up to a risk), [`DenyAll`], [`TerminalApproval`]
//! (`--approve ask`) and [`ChannelApproval`] (for embedders and web UIs).
//!
//! Invariant: approval fails closed. [`decide`] bounds every request by a
//! timeout (the policy's `approval_timeout_s`) and runs the handler in its
//! own task; a timeout, a handler error or a handler panic is `denied`.

use std::fmt;
use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio_util::task::AbortOnDropHandle;

use crate::result::FlowSource;
use crate::tools::ToolRisk;

/// A tool call waiting for a decision. Serializable, so it can be stored,
/// forwarded to a web UI and resumed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The chain's run id.
    pub run_id: String,
    /// The call's id within the chain.
    pub call_id: u64,
    /// The tool.
    pub tool: String,
    /// The arguments as the script passed them.
    pub arguments: Map<String, Value>,
    /// Why approval is needed.
    pub risk: ToolRisk,
    /// When it was asked, RFC 3339 UTC.
    pub requested_at: String,
    /// When the data-flow policy ([`crate::flow`]) asks: the untrusted
    /// results the call's guarded arguments may derive from (its risk is
    /// then `critical`). Left out of the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provenance: Vec<FlowSource>,
}

impl ApprovalRequest {
    /// A request asked now (`requested_at` is the current time).
    pub fn new(
        run_id: impl Into<String>,
        call_id: u64,
        tool: impl Into<String>,
        arguments: Map<String, Value>,
        risk: ToolRisk,
    ) -> Self {
        ApprovalRequest {
            run_id: run_id.into(),
            call_id,
            tool: tool.into(),
            arguments,
            risk,
            requested_at: rfc3339_utc(SystemTime::now()),
            provenance: Vec::new(),
        }
    }

    /// The same, asked by the data-flow policy for these untrusted results
    /// (see [`ApprovalRequest::provenance`]).
    #[must_use]
    pub fn with_provenance(mut self, provenance: Vec<FlowSource>) -> Self {
        self.provenance = provenance;
        self
    }

    /// Why the data-flow policy asks, in words for the human deciding
    /// (`its guarded arguments may derive from untrusted results of
    /// fetch_page (call 2)`); `None` when it does not.
    pub fn provenance_note(&self) -> Option<String> {
        provenance_note(&self.provenance)
    }
}

/// [`ApprovalRequest::provenance_note`] for any list of sources (a
/// suspended chain's pending call has one too).
pub fn provenance_note(sources: &[FlowSource]) -> Option<String> {
    if sources.is_empty() {
        return None;
    }
    let calls: Vec<String> = sources.iter().map(|s| format!("{} (call {})", s.tool, s.seq)).collect();
    Some(format!(
        "its guarded arguments may derive from untrusted results of {}",
        calls.join(", ")
    ))
}

/// The answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run the call as asked.
    Approved,
    /// Run the call with these arguments instead (they are validated again).
    Modified {
        /// The replacement arguments.
        arguments: Map<String, Value>,
    },
    /// Refuse it: `PermissionError` in the script.
    Denied {
        /// Why, if the human said.
        #[serde(default)]
        reason: Option<String>,
    },
    /// Don't run it, and say so: also a `PermissionError`, with status `denied`.
    Skipped,
    /// No decision yet, and the chain is durable: suspend it at this call
    /// (status `suspended`), to be resumed once a decision is recorded. A
    /// chain that is not durable cannot suspend: this denies its call.
    Suspend,
}

/// An approval handler that could not reach a decision (its terminal,
/// channel or backend failed). Counts as `denied`, with this as the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ApprovalError {
    /// What went wrong.
    pub message: String,
}

impl From<String> for ApprovalError {
    fn from(message: String) -> Self {
        ApprovalError { message }
    }
}

impl From<&str> for ApprovalError {
    fn from(message: &str) -> Self {
        ApprovalError {
            message: message.to_owned(),
        }
    }
}

/// Decides whether a risky call may run.
#[async_trait]
pub trait ApprovalHandler: Send + Sync + 'static {
    /// Blocks until a decision is made. An `Err` counts as `denied`.
    async fn request(&self, req: &ApprovalRequest) -> Result<ApprovalDecision, ApprovalError>;
}

/// A shareable approval handler, cheap to clone into many chains.
#[derive(Clone)]
pub struct Approval(pub Arc<dyn ApprovalHandler>);

impl Approval {
    /// Wraps a handler.
    pub fn new(handler: impl ApprovalHandler) -> Self {
        Approval(Arc::new(handler))
    }

    /// Approves calls up to `max` risk and denies the rest.
    pub fn auto(max: ToolRisk) -> Self {
        Approval::new(AutoApprove { max })
    }

    /// Denies every call that needs approval.
    pub fn deny_all() -> Self {
        Approval::new(DenyAll)
    }

    /// Decides nothing now (`--approve defer`): a durable chain suspends at
    /// every call that needs approval until a decision is recorded; any
    /// other chain's call is denied.
    pub fn defer() -> Self {
        Approval::new(Defer)
    }

    /// Asks at the terminal (`--approve ask`); see [`TerminalApproval`].
    pub fn terminal() -> Self {
        Approval::new(TerminalApproval::new())
    }

    /// Sends each request down a channel for the embedder to answer; see
    /// [`ChannelApproval`].
    pub fn channel(buffer: usize) -> (Self, mpsc::Receiver<PendingApproval>) {
        let (handler, rx) = ChannelApproval::new(buffer);
        (Approval::new(handler), rx)
    }
}

impl fmt::Debug for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Approval(..)")
    }
}

/// Approves calls up to a risk; denies the rest. For tests and trusted setups.
#[derive(Debug, Clone, Copy)]
pub struct AutoApprove {
    /// The highest risk approved.
    pub max: ToolRisk,
}

#[async_trait]
impl ApprovalHandler for AutoApprove {
    async fn request(&self, req: &ApprovalRequest) -> Result<ApprovalDecision, ApprovalError> {
        Ok(if req.risk <= self.max {
            ApprovalDecision::Approved
        } else {
            ApprovalDecision::Denied {
                reason: Some(format!("auto-approval stops at {} risk", self.max)),
            }
        })
    }
}

/// Denies everything.
#[derive(Debug, Clone, Copy)]
pub struct DenyAll;

#[async_trait]
impl ApprovalHandler for DenyAll {
    async fn request(&self, _req: &ApprovalRequest) -> Result<ApprovalDecision, ApprovalError> {
        Ok(ApprovalDecision::Denied {
            reason: Some("approvals are denied".into()),
        })
    }
}

/// Suspends: see [`Approval::defer`].
#[derive(Debug, Clone, Copy)]
pub struct Defer;

#[async_trait]
impl ApprovalHandler for Defer {
    async fn request(&self, _req: &ApprovalRequest) -> Result<ApprovalDecision, ApprovalError> {
        Ok(ApprovalDecision::Suspend)
    }
}

/// Asks a human at the terminal (`--approve ask`): prints the tool, its risk
/// and its arguments on stderr and reads `y`/`n` from stdin. Anything but
/// `y` or `yes` denies, and so does a stdin that is not a terminal (a piped
/// script must not approve itself).
///
/// One prompt at a time: concurrent chains queue for the terminal. The read
/// blocks a `spawn_blocking` thread, which cannot be interrupted; if the
/// approval times out meanwhile, the prompt keeps the terminal until the
/// human answers, and that answer is discarded.
pub struct TerminalApproval {
    /// Held from the prompt until its answer is read.
    terminal: Arc<Mutex<()>>,
    /// Whether stdin is a terminal; a seam for tests.
    stdin_is_terminal: fn() -> bool,
}

impl TerminalApproval {
    /// A handler for the process's own terminal.
    pub fn new() -> Self {
        TerminalApproval {
            terminal: Arc::new(Mutex::new(())),
            stdin_is_terminal: || std::io::stdin().is_terminal(),
        }
    }
}

impl Default for TerminalApproval {
    fn default() -> Self {
        TerminalApproval::new()
    }
}

impl fmt::Debug for TerminalApproval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TerminalApproval").finish_non_exhaustive()
    }
}

#[async_trait]
impl ApprovalHandler for TerminalApproval {
    async fn request(&self, req: &ApprovalRequest) -> Result<ApprovalDecision, ApprovalError> {
        if !(self.stdin_is_terminal)() {
            return Ok(ApprovalDecision::Denied {
                reason: Some("no terminal to ask for approval (stdin is not a terminal)".into()),
            });
        }
        // The guard moves into the blocking read, so the terminal stays ours
        // until the answer is in, even if this future is dropped on timeout.
        let guard = Arc::clone(&self.terminal).lock_owned().await;
        let req = req.clone();
        tokio::task::spawn_blocking(move || {
            let _guard = guard;
            prompt(&req, &mut std::io::stdin().lock(), &mut std::io::stderr().lock())
        })
        .await
        .map_err(|e| format!("terminal prompt failed: {e}"))?
        .map_err(|e| ApprovalError::from(format!("terminal prompt failed: {e}")))
    }
}

/// Shows `req` on `output` and reads one answer line from `input`: `y` or
/// `yes` (any case) approves, anything else (end of input included) denies.
fn prompt(
    req: &ApprovalRequest,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> std::io::Result<ApprovalDecision> {
    let args = serde_json::to_string_pretty(&req.arguments).unwrap_or_else(|_| format!("{:?}", req.arguments));
    let flow = req
        .provenance_note()
        .map(|note| format!("  data flow: {note}\n"))
        .unwrap_or_default();
    write!(
        output,
        "\nchainbox: approve call #{} of run {}?\n  tool: {}\n  risk: {}\n{flow}  arguments: {}\n[y/N] ",
        req.call_id,
        req.run_id,
        req.tool,
        req.risk,
        args.replace('\n', "\n  ")
    )?;
    output.flush()?;
    let mut line = String::new();
    input.read_line(&mut line)?;
    let answer = line.trim();
    Ok(
        if answer.eq_ignore_ascii_case("y") || answer.eq_ignore_ascii_case("yes") {
            ApprovalDecision::Approved
        } else {
            ApprovalDecision::Denied {
                reason: Some("denied at the terminal".into()),
            }
        },
    )
}

/// Hands each request to the embedder over a channel (a web UI, a chat bot):
/// the embedder receives [`PendingApproval`]s and answers each with
/// [`PendingApproval::respond`]. A pending approval dropped without an
/// answer, or a closed receiver, is an error, so the call is denied.
#[derive(Debug, Clone)]
pub struct ChannelApproval {
    /// Where requests go.
    tx: mpsc::Sender<PendingApproval>,
}

impl ChannelApproval {
    /// A handler and the receiver its requests arrive on; `buffer` requests
    /// may wait unread before the next one waits for room (within the same
    /// approval timeout). `buffer` must be above zero.
    pub fn new(buffer: usize) -> (Self, mpsc::Receiver<PendingApproval>) {
        let (tx, rx) = mpsc::channel(buffer);
        (ChannelApproval { tx }, rx)
    }
}

#[async_trait]
impl ApprovalHandler for ChannelApproval {
    async fn request(&self, req: &ApprovalRequest) -> Result<ApprovalDecision, ApprovalError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(PendingApproval {
                request: req.clone(),
                reply,
            })
            .await
            .map_err(|_| ApprovalError::from("approval channel is closed"))?;
        answer
            .await
            .map_err(|_| ApprovalError::from("approval request was dropped without an answer"))
    }
}

/// One request waiting for the embedder's answer.
#[derive(Debug)]
pub struct PendingApproval {
    /// What is asked.
    pub request: ApprovalRequest,
    /// Where the answer goes.
    reply: oneshot::Sender<ApprovalDecision>,
}

impl PendingApproval {
    /// Answers the request. If the chain stopped waiting (its approval timed
    /// out, or it ended), the answer is discarded: the call was already denied.
    pub fn respond(self, decision: ApprovalDecision) {
        // An Err only means nobody waits any more; see above.
        let _ = self.reply.send(decision);
    }

    /// Whether the chain stopped waiting for this answer; a UI can drop
    /// such requests unasked.
    pub fn is_abandoned(&self) -> bool {
        self.reply.is_closed()
    }
}

/// Why [`decide`] denied a call without an answer from the handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalFailure {
    /// No answer within the approval timeout.
    TimedOut(Duration),
    /// The handler returned an error.
    HandlerFailed(String),
    /// The handler panicked (the panic message, if it had one).
    HandlerPanicked(Option<String>),
}

impl fmt::Display for ApprovalFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApprovalFailure::TimedOut(d) => {
                write!(f, "approval timed out after {}s", d.as_secs_f64())
            }
            ApprovalFailure::HandlerFailed(e) => write!(f, "approval handler failed: {e}"),
            ApprovalFailure::HandlerPanicked(None) => f.write_str("approval handler panicked"),
            ApprovalFailure::HandlerPanicked(Some(m)) => {
                write!(f, "approval handler panicked: {m}")
            }
        }
    }
}

/// What [`decide`] concluded: the decision to act on, and, when the handler
/// gave no usable answer, why it failed closed.
///
/// Act on `decision` alone: on a failure it is already
/// [`ApprovalDecision::Denied`] with the failure as its reason. `failure`
/// is there for logs and audit (a human's "no" and a timeout differ there).
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalOutcome {
    /// The decision to act on.
    pub decision: ApprovalDecision,
    /// Set when the handler timed out, failed or panicked.
    pub failure: Option<ApprovalFailure>,
}

impl ApprovalOutcome {
    /// The handler's own answer.
    pub fn decided(decision: ApprovalDecision) -> Self {
        ApprovalOutcome {
            decision,
            failure: None,
        }
    }

    /// A fail-closed denial.
    pub fn failed(failure: ApprovalFailure) -> Self {
        ApprovalOutcome {
            decision: ApprovalDecision::Denied {
                reason: Some(failure.to_string()),
            },
            failure: Some(failure),
        }
    }

    /// Whether the call may run (approved, or approved with new arguments).
    pub fn allows_call(&self) -> bool {
        matches!(
            self.decision,
            ApprovalDecision::Approved | ApprovalDecision::Modified { .. }
        )
    }
}

/// Asks `handler` about `req`, failing closed: the handler runs in its own
/// task (so a panic is caught) and is given `timeout` to answer. A timeout
/// (the task is then aborted), an `Err` or a panic is a denial whose reason
/// says which ("approval timed out after 55s", "approval handler failed:
/// ...", "approval handler panicked: ..."). Must run inside a tokio runtime.
pub async fn decide(handler: &Approval, req: &ApprovalRequest, timeout: Duration) -> ApprovalOutcome {
    let h = Arc::clone(&handler.0);
    let req = req.clone();
    // Aborted when this future is dropped (the chain ended) or times out.
    let task = AbortOnDropHandle::new(tokio::spawn(async move { h.request(&req).await }));
    match tokio::time::timeout(timeout, task).await {
        Err(_elapsed) => ApprovalOutcome::failed(ApprovalFailure::TimedOut(timeout)),
        Ok(Ok(Ok(decision))) => ApprovalOutcome::decided(decision),
        Ok(Ok(Err(e))) => ApprovalOutcome::failed(ApprovalFailure::HandlerFailed(e.message)),
        Ok(Err(join)) if join.is_panic() => {
            let payload = join.into_panic();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned());
            ApprovalOutcome::failed(ApprovalFailure::HandlerPanicked(message))
        }
        Ok(Err(join)) => ApprovalOutcome::failed(ApprovalFailure::HandlerFailed(join.to_string())),
    }
}

/// `time` as RFC 3339 in UTC with milliseconds, e.g.
/// `2024-02-29T13:05:09.042Z`. Times before 1970 work too; times beyond
/// the years -9999 and 9999 are clamped to them.
pub fn rfc3339_utc(time: SystemTime) -> String {
    let timestamp = jiff::Timestamp::try_from(time).unwrap_or(if time < UNIX_EPOCH {
        jiff::Timestamp::MIN
    } else {
        jiff::Timestamp::MAX
    });
    format!("{timestamp:.3}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(risk: ToolRisk) -> ApprovalRequest {
        let arguments = json!({"to": "a@example.com"}).as_object().cloned().unwrap_or_default();
        ApprovalRequest::new("run-1", 3, "send_email", arguments, risk)
    }

    struct Never;
    #[async_trait]
    impl ApprovalHandler for Never {
        async fn request(&self, _req: &ApprovalRequest) -> Result<ApprovalDecision, ApprovalError> {
            std::future::pending().await
        }
    }

    struct Fails;
    #[async_trait]
    impl ApprovalHandler for Fails {
        async fn request(&self, _req: &ApprovalRequest) -> Result<ApprovalDecision, ApprovalError> {
            Err("backend down".into())
        }
    }

    struct Panics;
    #[async_trait]
    impl ApprovalHandler for Panics {
        async fn request(&self, _req: &ApprovalRequest) -> Result<ApprovalDecision, ApprovalError> {
            panic!("boom")
        }
    }

    struct Rewrites;
    #[async_trait]
    impl ApprovalHandler for Rewrites {
        async fn request(&self, _req: &ApprovalRequest) -> Result<ApprovalDecision, ApprovalError> {
            let arguments = json!({"to": "b@example.com"}).as_object().cloned().unwrap_or_default();
            Ok(ApprovalDecision::Modified { arguments })
        }
    }

    fn denied_reason(outcome: &ApprovalOutcome) -> String {
        match &outcome.decision {
            ApprovalDecision::Denied { reason: Some(r) } => r.clone(),
            other => panic!("not denied with a reason: {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn timeout_is_denied() {
        let out = decide(&Approval::new(Never), &req(ToolRisk::High), Duration::from_secs(55)).await;
        assert_eq!(denied_reason(&out), "approval timed out after 55s");
        assert_eq!(out.failure, Some(ApprovalFailure::TimedOut(Duration::from_secs(55))));
        assert!(!out.allows_call());
    }

    #[tokio::test]
    async fn handler_error_is_denied() {
        let out = decide(&Approval::new(Fails), &req(ToolRisk::High), Duration::from_secs(5)).await;
        assert_eq!(denied_reason(&out), "approval handler failed: backend down");
    }

    #[tokio::test]
    async fn handler_panic_is_denied() {
        let out = decide(&Approval::new(Panics), &req(ToolRisk::High), Duration::from_secs(5)).await;
        assert_eq!(denied_reason(&out), "approval handler panicked: boom");
        assert!(matches!(out.failure, Some(ApprovalFailure::HandlerPanicked(_))));
    }

    #[tokio::test]
    async fn modified_arguments_pass_through() {
        let out = decide(&Approval::new(Rewrites), &req(ToolRisk::High), Duration::from_secs(5)).await;
        assert!(out.allows_call());
        assert_eq!(out.failure, None);
        match out.decision {
            ApprovalDecision::Modified { arguments } => {
                assert_eq!(arguments["to"], "b@example.com")
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn handler_denial_is_not_a_failure() {
        let out = decide(&Approval::deny_all(), &req(ToolRisk::High), Duration::from_secs(5)).await;
        assert!(!out.allows_call());
        assert_eq!(out.failure, None);
    }

    #[tokio::test]
    async fn auto_approve_compares_by_rank() {
        let auto = AutoApprove { max: ToolRisk::High };
        // Alphabetically "critical" < "high": a string comparison would approve it.
        assert_eq!(auto.request(&req(ToolRisk::Safe)).await, Ok(ApprovalDecision::Approved));
        assert_eq!(auto.request(&req(ToolRisk::High)).await, Ok(ApprovalDecision::Approved));
        assert!(matches!(
            auto.request(&req(ToolRisk::Critical)).await,
            Ok(ApprovalDecision::Denied { .. })
        ));
    }

    #[tokio::test]
    async fn channel_round_trip() {
        let (approval, mut rx) = Approval::channel(4);
        let embedder = tokio::spawn(async move {
            let pending = rx.recv().await.expect("a request");
            assert_eq!(pending.request.tool, "send_email");
            assert!(!pending.is_abandoned());
            pending.respond(ApprovalDecision::Skipped);
        });
        let out = decide(&approval, &req(ToolRisk::High), Duration::from_secs(5)).await;
        assert_eq!(out.decision, ApprovalDecision::Skipped);
        embedder.await.expect("embedder task");
    }

    #[tokio::test]
    async fn channel_request_dropped_unanswered_is_denied() {
        let (approval, mut rx) = Approval::channel(1);
        tokio::spawn(async move { drop(rx.recv().await) });
        let out = decide(&approval, &req(ToolRisk::High), Duration::from_secs(5)).await;
        assert_eq!(
            denied_reason(&out),
            "approval handler failed: approval request was dropped without an answer"
        );
    }

    #[tokio::test]
    async fn closed_channel_is_denied() {
        let (approval, rx) = Approval::channel(1);
        drop(rx);
        let out = decide(&approval, &req(ToolRisk::High), Duration::from_secs(5)).await;
        assert_eq!(
            denied_reason(&out),
            "approval handler failed: approval channel is closed"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn channel_request_is_abandoned_after_timeout() {
        let (approval, mut rx) = Approval::channel(1);
        let out = decide(&approval, &req(ToolRisk::High), Duration::from_secs(1)).await;
        assert!(out.failure.is_some());
        let mut pending = rx.recv().await.expect("the request was sent");
        // The aborted task drops its receiver when the runtime next runs it.
        tokio::time::timeout(Duration::from_secs(1), pending.reply.closed())
            .await
            .expect("the request is abandoned");
        assert!(pending.is_abandoned());
        pending.respond(ApprovalDecision::Approved); // discarded, no panic
    }

    #[tokio::test]
    async fn terminal_without_a_tty_denies() {
        let handler = TerminalApproval {
            stdin_is_terminal: || false,
            ..TerminalApproval::new()
        };
        assert!(matches!(
            handler.request(&req(ToolRisk::High)).await,
            Ok(ApprovalDecision::Denied { .. })
        ));
    }

    #[test]
    fn prompt_shows_tool_risk_and_arguments() {
        let mut shown = Vec::new();
        prompt(&req(ToolRisk::Critical), &mut &b"n\n"[..], &mut shown).unwrap();
        let shown = String::from_utf8(shown).unwrap();
        assert!(shown.contains("send_email"), "{shown}");
        assert!(shown.contains("critical"), "{shown}");
        assert!(shown.contains("a@example.com"), "{shown}");
    }

    #[test]
    fn prompt_shows_the_data_flow_sources() {
        let request = req(ToolRisk::Critical).with_provenance(vec![
            FlowSource {
                seq: 2,
                call_id: Some("call_2".into()),
                tool: "fetch_page".into(),
            },
            FlowSource {
                seq: 4,
                call_id: None,
                tool: "read_mail".into(),
            },
        ]);
        let mut shown = Vec::new();
        prompt(&request, &mut &b"n\n"[..], &mut shown).unwrap();
        let shown = String::from_utf8(shown).unwrap();
        assert!(
            shown.contains(
                "data flow: its guarded arguments may derive from untrusted results of fetch_page (call 2), read_mail (call 4)"
            ),
            "{shown}"
        );
        let mut plain = Vec::new();
        prompt(&req(ToolRisk::Critical), &mut &b"n\n"[..], &mut plain).unwrap();
        assert!(!String::from_utf8(plain).unwrap().contains("data flow"));
    }

    #[test]
    fn provenance_is_left_out_of_the_json_when_empty() {
        let plain = serde_json::to_value(req(ToolRisk::High)).unwrap();
        assert!(plain.get("provenance").is_none(), "{plain}");
        let old: ApprovalRequest = serde_json::from_value(plain).unwrap();
        assert!(old.provenance.is_empty());
        let source = FlowSource {
            seq: 1,
            call_id: None,
            tool: "fetch_page".into(),
        };
        let flow = serde_json::to_value(req(ToolRisk::Critical).with_provenance(vec![source])).unwrap();
        assert_eq!(flow["provenance"], json!([{"seq": 1, "tool": "fetch_page"}]));
    }

    #[test]
    fn prompt_yes_approves() {
        for answer in ["y\n", "Y\n", " yes \n", "YES"] {
            let d = prompt(&req(ToolRisk::High), &mut answer.as_bytes(), &mut Vec::new()).unwrap();
            assert_eq!(d, ApprovalDecision::Approved, "{answer:?}");
        }
    }

    #[test]
    fn prompt_anything_else_denies() {
        for answer in ["n\n", "\n", "", "yep\n", "sure\n"] {
            let d = prompt(&req(ToolRisk::High), &mut answer.as_bytes(), &mut Vec::new()).unwrap();
            assert!(matches!(d, ApprovalDecision::Denied { .. }), "{answer:?}");
        }
    }

    #[test]
    fn decision_serializes_tagged() {
        let d = ApprovalDecision::Denied { reason: None };
        assert_eq!(
            serde_json::to_value(&d).unwrap(),
            json!({"decision": "denied", "reason": null})
        );
        let back: ApprovalDecision = serde_json::from_value(json!({"decision": "denied"})).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn rfc3339_of_the_epoch() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn rfc3339_of_a_leap_day() {
        // 2024-02-29T13:05:09.042Z
        let t = UNIX_EPOCH + Duration::from_millis(1_709_211_909_042);
        assert_eq!(rfc3339_utc(t), "2024-02-29T13:05:09.042Z");
    }

    #[test]
    fn rfc3339_of_the_end_of_a_year() {
        let t = UNIX_EPOCH + Duration::from_secs(1_704_067_199); // 2023-12-31T23:59:59Z
        assert_eq!(rfc3339_utc(t), "2023-12-31T23:59:59.000Z");
    }

    #[test]
    fn rfc3339_before_the_epoch() {
        let t = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(rfc3339_utc(t), "1969-12-31T23:59:59.000Z");
    }

    #[test]
    fn rfc3339_keeps_milliseconds_only() {
        let t = UNIX_EPOCH + Duration::from_nanos(1_709_211_909_042_999_999);
        assert_eq!(rfc3339_utc(t), "2024-02-29T13:05:09.042Z");
    }

    #[test]
    fn rfc3339_far_from_now_is_clamped_to_the_years_9999() {
        let late = UNIX_EPOCH + Duration::from_secs(253_402_128_000); // 9999-12-30T00:00:00Z
        assert_eq!(rfc3339_utc(late), "9999-12-30T00:00:00.000Z");
        let too_late = UNIX_EPOCH + Duration::from_secs(1 << 40);
        assert!(rfc3339_utc(too_late).starts_with("9999-12-30T"));
        let too_early = UNIX_EPOCH - Duration::from_secs(1 << 40);
        assert!(rfc3339_utc(too_early).starts_with("-009999-01-0"));
    }

    #[test]
    fn new_request_is_stamped_now() {
        let r = req(ToolRisk::High);
        assert_eq!(r.requested_at.len(), "1970-01-01T00:00:00.000Z".len());
        assert!(r.requested_at.ends_with('Z'));
        assert!(r.requested_at.as_str() > "2024-01-01");
    }
}
