//! Durable chains ([`chainbox::durable`]) on the in-memory store: a chain
//! suspends at a call that waits on a decision, holding nothing; a decision
//! and a resume finish it without running any tool twice; an expired
//! decision denies; two resumes at once run the call once. On both guests.
//! A chain run for a principal is owned by it: another principal may not
//! decide or resume it, the local user may.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use chainbox::approval::ApprovalDecision;
use chainbox::durable::{Durable, DurableError};
use chainbox::policy::ToolOverride;
use chainbox::result::PolicyDecision;
use chainbox::store::{ChainStore, Claim, MemoryStore};
use chainbox::{
    Approval, ChainPolicy, ChainRunResult, ChainStatus, ErrorKind, Principal, PythonChoice, ToolRegistry, ToolRisk,
};
use serde_json::{Value, json};

use crate::fixtures::{assert_ok, engine, tool};

/// `bump(n)` (safe) and `wire(amount)` (critical), each counting its runs.
fn registry(bumps: &Arc<AtomicU32>, wires: &Arc<AtomicU32>) -> ToolRegistry {
    let (bumps, wires) = (bumps.clone(), wires.clone());
    ToolRegistry::from_local([
        Arc::new(tool("bump", &["n"], move |args| {
            bumps.fetch_add(1, Ordering::SeqCst);
            Ok(json!(
                args.get("n").and_then(Value::as_i64).unwrap_or(0).saturating_mul(10)
            ))
        })) as Arc<dyn chainbox::tools::Tool>,
        Arc::new(
            tool("wire", &["amount"], move |args| {
                wires.fetch_add(1, Ordering::SeqCst);
                Ok(json!(format!(
                    "sent {}",
                    args.get("amount").and_then(Value::as_i64).unwrap_or(0)
                )))
            })
            .with_risk(ToolRisk::Critical),
        ),
    ])
    .expect("registry")
}

const SCRIPT: &str = "a = await bump(n=1)\nr = await wire(amount=5)\nb = await bump(n=2)\n[a, r, b]";

struct Setup {
    durable: Durable,
    store: Arc<MemoryStore>,
    registry: ToolRegistry,
    bumps: Arc<AtomicU32>,
    wires: Arc<AtomicU32>,
    policy: ChainPolicy,
}

fn setup(python: PythonChoice) -> Setup {
    let (bumps, wires) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let store = Arc::new(MemoryStore::new());
    Setup {
        durable: Durable::new(engine().clone(), store.clone() as Arc<dyn ChainStore>),
        store,
        registry: registry(&bumps, &wires),
        bumps,
        wires,
        policy: ChainPolicy {
            python,
            ..ChainPolicy::default()
        },
    }
}

/// Runs `script` durably to its suspension at `wire`, and approves the call;
/// the chain's id.
async fn suspended_and_approved(s: &Setup, script: &str) -> String {
    let r = s
        .durable
        .run(script, &s.registry, &s.policy, &Approval::defer())
        .await
        .expect("runs");
    assert_eq!(r.status, ChainStatus::Suspended, "{r:#?}");
    let chain_id = r.chain_id.expect("a chain id");
    s.durable
        .decide(&chain_id, ApprovalDecision::Approved, "test")
        .await
        .expect("decided");
    chain_id
}

#[tokio::test(flavor = "multi_thread")]
async fn a_durable_chain_suspends_at_a_call_that_waits_on_a_decision_and_a_resume_finishes_it() {
    for python in [PythonChoice::Monty, PythonChoice::Cpython] {
        let s = setup(python);
        let r = s
            .durable
            .run(SCRIPT, &s.registry, &s.policy, &Approval::defer())
            .await
            .expect("runs");
        assert_eq!(r.status, ChainStatus::Suspended, "{python:?}: {r:#?}");
        assert_eq!(r.error, None);
        let chain_id = r.chain_id.clone().expect("a chain id");
        let pending = r.pending.clone().expect("a pending call");
        assert_eq!(
            (pending.seq, pending.tool.as_str(), pending.risk),
            (2, "wire", ToolRisk::Critical)
        );
        assert_eq!(pending.arguments.get("amount"), Some(&json!(5)));
        assert_eq!(
            r.call_trace.len(),
            1,
            "{python:?}: only the finished call is in the trace"
        );
        assert_eq!((s.bumps.load(Ordering::SeqCst), s.wires.load(Ordering::SeqCst)), (1, 0));
        let listed = s.store.pending().await.expect("pending");
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].chain_id, chain_id);

        s.durable
            .decide(&chain_id, ApprovalDecision::Approved, "test")
            .await
            .expect("decided");
        let r = s
            .durable
            .resume(&chain_id, &s.registry, &Approval::defer())
            .await
            .expect("resumes");
        assert_ok(&r);
        assert_eq!(r.output, json!([10, "sent 5", 20]), "{python:?}");
        assert_eq!(
            (s.bumps.load(Ordering::SeqCst), s.wires.load(Ordering::SeqCst)),
            (2, 1),
            "{python:?}"
        );
        let replayed: Vec<bool> = r.call_trace.iter().map(|c| c.replayed).collect();
        assert_eq!(
            replayed,
            [true, false, false],
            "{python:?}: the trace covers the whole chain"
        );
        assert!(s.store.pending().await.expect("pending").is_empty());

        // A finished chain resumed again gives its result, running nothing.
        let again = s
            .durable
            .resume(&chain_id, &s.registry, &Approval::defer())
            .await
            .expect("the result");
        assert_eq!(again.output, r.output);
        assert_eq!((s.bumps.load(Ordering::SeqCst), s.wires.load(Ordering::SeqCst)), (2, 1));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_decision_is_the_scripts_permission_error_and_modified_arguments_are_used() {
    for python in [PythonChoice::Monty, PythonChoice::Cpython] {
        let s = setup(python);
        let script = "try:\n    r = await wire(amount=5)\nexcept PermissionError as e:\n    r = 'refused'\nr";
        let r = s
            .durable
            .run(script, &s.registry, &s.policy, &Approval::defer())
            .await
            .expect("runs");
        let chain_id = r.chain_id.expect("a chain id");
        let deny = ApprovalDecision::Denied {
            reason: Some("not today".into()),
        };
        s.durable.decide(&chain_id, deny, "test").await.expect("decided");
        let r = s
            .durable
            .resume(&chain_id, &s.registry, &Approval::defer())
            .await
            .expect("resumes");
        assert_eq!(r.output, json!("refused"), "{python:?}: {r:#?}");
        assert_eq!(s.wires.load(Ordering::SeqCst), 0);

        let r = s
            .durable
            .run(script, &s.registry, &s.policy, &Approval::defer())
            .await
            .expect("runs");
        let chain_id = r.chain_id.expect("a chain id");
        let arguments = json!({"amount": 7}).as_object().cloned().expect("an object");
        s.durable
            .decide(&chain_id, ApprovalDecision::Modified { arguments }, "test")
            .await
            .expect("decided");
        let r = s
            .durable
            .resume(&chain_id, &s.registry, &Approval::defer())
            .await
            .expect("resumes");
        assert_eq!(r.output, json!("sent 7"), "{python:?}: {r:#?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decision_after_approval_expires_s_denies() {
    let mut s = setup(PythonChoice::Monty);
    s.policy.approval_expires_s = 0.05;
    let r = s
        .durable
        .run(SCRIPT, &s.registry, &s.policy, &Approval::defer())
        .await
        .expect("runs");
    let chain_id = r.chain_id.expect("a chain id");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let decision = s
        .durable
        .decide(&chain_id, ApprovalDecision::Approved, "late")
        .await
        .expect("recorded");
    assert!(
        matches!(decision.decision, ApprovalDecision::Denied { .. }),
        "{decision:?}"
    );
    let r = s
        .durable
        .resume(&chain_id, &s.registry, &Approval::defer())
        .await
        .expect("resumes");
    assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Script), "{r:#?}");
    assert_eq!(r.error.as_ref().map(|e| e.error_type.as_str()), Some("PermissionError"));
    assert_eq!(s.wires.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_resumes_at_once_run_the_approved_call_once() {
    let s = setup(PythonChoice::Monty);
    let chain_id = suspended_and_approved(&s, SCRIPT).await;
    let defer = Approval::defer();
    let (a, b) = tokio::join!(
        s.durable.resume(&chain_id, &s.registry, &defer),
        s.durable.resume(&chain_id, &s.registry, &defer),
    );
    let finished = [&a, &b]
        .iter()
        .filter(|r| matches!(r, Ok(r) if r.status == ChainStatus::Ok))
        .count();
    let refused = [&a, &b]
        .iter()
        .filter(|r| matches!(r, Err(DurableError::BeingResumed { .. })))
        .count();
    assert!(finished >= 1 && finished + refused == 2, "{a:?}\n{b:?}");
    assert_eq!(s.wires.load(Ordering::SeqCst), 1, "the approved call ran once");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_whose_resumer_died_mid_run_is_resumed_once_its_claim_is_stale() {
    let s = setup(PythonChoice::Monty);
    let chain_id = suspended_and_approved(&s, SCRIPT).await;
    // A process claimed the chain to resume it and was killed: its claim
    // stays in the store, with the lease it took.
    let held = s
        .store
        .claim(&chain_id, "pid 1 (killed)", Duration::from_secs(3600))
        .await;
    assert_eq!(held.expect("claim"), Claim::Won);
    let refused = s.durable.resume(&chain_id, &s.registry, &Approval::defer()).await;
    assert!(matches!(refused, Err(DurableError::BeingResumed { .. })), "{refused:?}");
    // Once its lease has run out, the next resume takes the chain over.
    let stale = s.store.claim(&chain_id, "pid 1 (killed)", Duration::ZERO).await;
    assert_eq!(stale.expect("claim"), Claim::Won);
    tokio::time::sleep(Duration::from_millis(5)).await;
    let done = s
        .durable
        .resume(&chain_id, &s.registry, &Approval::defer())
        .await
        .expect("resumed");
    assert_ok(&done);
    assert_eq!(s.wires.load(Ordering::SeqCst), 1);
    assert_eq!(s.bumps.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_gathered_beside_the_one_that_suspended_is_replayed_not_run_again() {
    // `wire` (call 1) waits on the decision while `bump` (call 2) finishes:
    // the journal holds call 2 but not call 1.
    let script =
        "import asyncio\nr, a = await asyncio.gather(wire(amount=5), bump(n=1))\nb = await bump(n=2)\n[a, r, b]";
    for python in [PythonChoice::Monty, PythonChoice::Cpython] {
        let s = setup(python);
        let r = s
            .durable
            .run(script, &s.registry, &s.policy, &Approval::defer())
            .await
            .expect("runs");
        assert_eq!(r.status, ChainStatus::Suspended, "{python:?}: {r:#?}");
        let chain_id = r.chain_id.expect("a chain id");
        s.durable
            .decide(&chain_id, ApprovalDecision::Approved, "test")
            .await
            .expect("decided");
        let done = s
            .durable
            .resume(&chain_id, &s.registry, &Approval::defer())
            .await
            .expect("resumed");
        assert_ok(&done);
        assert_eq!(done.output, json!([10, "sent 5", 20]), "{python:?}");
        assert_eq!(s.bumps.load(Ordering::SeqCst), 2, "{python:?}: bump(n=1) ran once");
        assert_eq!(s.wires.load(Ordering::SeqCst), 1, "{python:?}");
        let replayed: Vec<_> = done.call_trace.iter().map(|c| (c.tool.as_str(), c.replayed)).collect();
        assert_eq!(
            replayed,
            [("wire", false), ("bump", true), ("bump", false)],
            "{python:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_resume_leaves_the_chain_for_a_later_one() {
    let s = setup(PythonChoice::Monty);
    let chain_id = suspended_and_approved(&s, SCRIPT).await;
    // Its server shuts down (or its caller goes away) as it resumes.
    let cancel = tokio_util::sync::CancellationToken::new();
    cancel.cancel();
    let cancelled = Durable::new(engine().clone(), s.store.clone() as Arc<dyn ChainStore>)
        .cancelled_by(cancel)
        .resume(&chain_id, &s.registry, &Approval::defer())
        .await
        .expect("resumed");
    assert_eq!(cancelled.error_kind(), Some(ErrorKind::Cancelled), "{cancelled:#?}");
    assert_eq!(s.wires.load(Ordering::SeqCst), 0);
    let done = s
        .durable
        .resume(&chain_id, &s.registry, &Approval::defer())
        .await
        .expect("resumed again");
    assert_ok(&done);
    assert_eq!(done.output, json!([10, "sent 5", 20]));
    assert_eq!((s.bumps.load(Ordering::SeqCst), s.wires.load(Ordering::SeqCst)), (2, 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_that_is_not_durable_is_denied_where_a_durable_one_would_suspend() {
    let s = setup(PythonChoice::Monty);
    let r = engine()
        .run("await wire(amount=5)", &s.registry, &s.policy, &Approval::defer())
        .await;
    assert_eq!(r.status, ChainStatus::Error, "{r:#?}");
    assert_eq!(r.error.as_ref().map(|e| e.error_type.as_str()), Some("PermissionError"));
    assert_eq!(s.wires.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_chain_draws_the_same_random_values_so_its_calls_replay() {
    for python in [PythonChoice::Monty, PythonChoice::Cpython] {
        let s = setup(python);
        let script = "import random\nx = random.randint(1, 10**9)\na = await bump(n=x)\nr = await wire(amount=1)\n[a == 10 * x, r]";
        let r = s
            .durable
            .run(script, &s.registry, &s.policy, &Approval::defer())
            .await
            .expect("runs");
        let chain_id = r.chain_id.expect("a chain id");
        s.durable
            .decide(&chain_id, ApprovalDecision::Approved, "test")
            .await
            .expect("decided");
        let r = s
            .durable
            .resume(&chain_id, &s.registry, &Approval::defer())
            .await
            .expect("resumes");
        assert_ok(&r);
        assert_eq!(r.output, json!([true, "sent 1"]), "{python:?}: {r:#?}");
        assert_eq!(s.bumps.load(Ordering::SeqCst), 1, "{python:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_whose_arguments_follow_the_clock_diverges_on_resume_and_runs_nothing() {
    let s = setup(PythonChoice::Monty);
    let script = "import time\na = await bump(n=time.time_ns())\nr = await wire(amount=1)\n[a, r]";
    let chain_id = suspended_and_approved(&s, script).await;
    let r = s
        .durable
        .resume(&chain_id, &s.registry, &Approval::defer())
        .await
        .expect("resumes");
    assert_eq!(
        r.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::ReplayDiverged),
        "{r:#?}"
    );
    assert!(
        r.error.as_ref().is_some_and(|e| e.message.contains("call #1")),
        "{r:#?}"
    );
    assert_eq!((s.bumps.load(Ordering::SeqCst), s.wires.load(Ordering::SeqCst)), (1, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_durable_chain_that_times_out_is_named_and_finished_in_the_store() {
    let mut s = setup(PythonChoice::Monty);
    s.policy.total_timeout_s = 0.5;
    let r = s
        .durable
        .run("while True:\n    pass", &s.registry, &s.policy, &Approval::defer())
        .await
        .expect("runs");
    assert_eq!(r.status, ChainStatus::Timeout, "{r:#?}");
    let chain_id = r.chain_id.clone().expect("a timed-out durable chain keeps its id");
    let again = s
        .durable
        .resume(&chain_id, &s.registry, &Approval::defer())
        .await
        .expect("the result");
    assert_eq!(again.status, ChainStatus::Timeout);
}

// ------------------------------------------------------------ owners

fn alice() -> Principal {
    Principal::new("https://id.example", "alice", ["payments:write".to_owned()])
}

fn bob() -> Principal {
    Principal::new("https://id.example", "bob", ["payments:write".to_owned()])
}

/// `SCRIPT` run by `principal` to its suspension at `wire`: the chain's id.
async fn suspended_for(s: &Setup, principal: Option<Principal>) -> String {
    let r = s
        .durable
        .clone()
        .with_principal(principal)
        .run(SCRIPT, &s.registry, &s.policy, &Approval::defer())
        .await
        .expect("runs");
    assert_eq!(r.status, ChainStatus::Suspended, "{r:#?}");
    r.chain_id.expect("a chain id")
}

/// Approves the pending call of `chain_id` through `handle` and resumes
/// the chain there to its end.
async fn approve_and_finish(handle: &Durable, s: &Setup, chain_id: &str) -> ChainRunResult {
    handle
        .decide(chain_id, ApprovalDecision::Approved, "approver")
        .await
        .expect("decided");
    handle
        .resume(chain_id, &s.registry, &Approval::defer())
        .await
        .expect("resumed")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_run_for_a_principal_records_it_as_its_owner() {
    let s = setup(PythonChoice::Monty);
    let chain_id = suspended_for(&s, Some(alice())).await;
    let stored = s.store.chain(&chain_id).await.expect("chain").expect("stored");
    assert_eq!(stored.owner, Some(alice().owner));
    let listed = s.store.pending().await.expect("pending");
    assert_eq!(listed[0].owner, Some(alice().owner));
    let local = suspended_for(&s, None).await;
    let stored = s.store.chain(&local).await.expect("chain").expect("stored");
    assert_eq!(stored.owner, None, "the local user's chain has no owner");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_principals_decision_is_refused_and_records_nothing() {
    let s = setup(PythonChoice::Monty);
    let chain_id = suspended_for(&s, Some(alice())).await;
    let refused = s
        .durable
        .clone()
        .with_principal(Some(bob()))
        .decide(&chain_id, ApprovalDecision::Approved, "bob")
        .await;
    assert!(
        matches!(refused, Err(DurableError::NotOwner { chain_id: ref id }) if *id == chain_id),
        "{refused:?}"
    );
    assert_eq!(
        refused.map(drop).map_err(|e| e.to_string()),
        Err(format!("chain {chain_id:?} belongs to another principal"))
    );
    assert!(s.store.decisions(&chain_id).await.expect("decisions").is_empty());
    assert!(
        s.store.pending_of(&chain_id).await.expect("pending_of").is_some(),
        "still waits"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn another_principals_resume_is_refused_and_runs_nothing() {
    let s = setup(PythonChoice::Monty);
    let chain_id = suspended_for(&s, Some(alice())).await;
    s.durable
        .clone()
        .with_principal(Some(alice()))
        .decide(&chain_id, ApprovalDecision::Approved, "alice")
        .await
        .expect("alice decides her own chain");
    let bobs = s.durable.clone().with_principal(Some(bob()));
    let refused = bobs.resume(&chain_id, &s.registry, &Approval::defer()).await;
    assert!(matches!(refused, Err(DurableError::NotOwner { .. })), "{refused:?}");
    assert_eq!((s.bumps.load(Ordering::SeqCst), s.wires.load(Ordering::SeqCst)), (1, 0));
    assert_eq!(
        s.store
            .claim(&chain_id, "a check", Duration::ZERO)
            .await
            .expect("claim"),
        Claim::Won,
        "bob's resume claimed nothing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_principal_may_not_decide_or_resume_a_local_users_chain() {
    let s = setup(PythonChoice::Monty);
    let chain_id = suspended_for(&s, None).await;
    let alices = s.durable.clone().with_principal(Some(alice()));
    let decided = alices.decide(&chain_id, ApprovalDecision::Approved, "alice").await;
    assert!(matches!(decided, Err(DurableError::NotOwner { .. })), "{decided:?}");
    let resumed = alices.resume(&chain_id, &s.registry, &Approval::defer()).await;
    assert!(matches!(resumed, Err(DurableError::NotOwner { .. })), "{resumed:?}");
    assert_eq!(s.wires.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_owner_decides_and_resumes_its_own_chain() {
    let s = setup(PythonChoice::Monty);
    let chain_id = suspended_for(&s, Some(alice())).await;
    let alices = s.durable.clone().with_principal(Some(alice()));
    let done = approve_and_finish(&alices, &s, &chain_id).await;
    assert_ok(&done);
    assert_eq!(done.output, json!([10, "sent 5", 20]));
    assert_eq!((s.bumps.load(Ordering::SeqCst), s.wires.load(Ordering::SeqCst)), (2, 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_local_user_decides_and_resumes_a_principals_chain() {
    let s = setup(PythonChoice::Monty);
    let chain_id = suspended_for(&s, Some(alice())).await;
    let done = approve_and_finish(&s.durable, &s, &chain_id).await;
    assert_ok(&done);
    assert_eq!(done.output, json!([10, "sent 5", 20]));
    assert_eq!((s.bumps.load(Ordering::SeqCst), s.wires.load(Ordering::SeqCst)), (2, 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resume_runs_for_the_resuming_principal_with_the_scopes_it_holds_now() {
    let mut s = setup(PythonChoice::Monty);
    s.policy.tools.insert(
        "wire".to_owned(),
        ToolOverride {
            required_scopes: ["payments:write".to_owned()].into(),
            ..ToolOverride::default()
        },
    );
    let chain_id = suspended_for(&s, Some(alice())).await;
    s.durable
        .decide(&chain_id, ApprovalDecision::Approved, "operator")
        .await
        .expect("decided");
    // Alice again, her token no longer granting the scope.
    let unscoped = Principal::new("https://id.example", "alice", []);
    let r = s
        .durable
        .clone()
        .with_principal(Some(unscoped))
        .resume(&chain_id, &s.registry, &Approval::defer())
        .await
        .expect("resumed");
    assert_eq!(
        r.error.as_ref().map(|e| e.error_type.as_str()),
        Some("PermissionError"),
        "{r:#?}"
    );
    assert_eq!(r.call_trace[1].policy, Some(PolicyDecision::DeniedScope), "{r:#?}");
    assert_eq!(s.wires.load(Ordering::SeqCst), 0);
}

/// The data-flow policy holds a durable chain's call like a risky one: it
/// suspends with the untrusted results in its pending call (kept by the
/// store), and a decision and a resume finish it as `approved_flow`.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_the_data_flow_policy_holds_suspends_with_its_provenance_and_resumes() {
    for python in [PythonChoice::Monty, PythonChoice::Cpython] {
        let mut s = setup(python);
        let mut fetch = tool("fetch_page", &["url"], |_| Ok(json!("wire 12345 now")));
        fetch.info.untrusted = true;
        let mut tools: Vec<chainbox::tools::AnyTool> = s.registry.iter().cloned().collect();
        tools.push(chainbox::tools::AnyTool::Local(Arc::new(fetch)));
        s.registry = ToolRegistry::from_tools(tools).expect("registry");
        // `wire` alone would run unasked: only the data-flow policy holds it.
        s.policy.max_risk_unapproved = ToolRisk::Critical;
        let script = "page = await fetch_page(url='https://evil.example')\nr = await wire(amount=len(page))\nr";
        let r = s
            .durable
            .run(script, &s.registry, &s.policy, &Approval::defer())
            .await
            .expect("runs");
        assert_eq!(r.status, ChainStatus::Suspended, "{python:?}: {r:#?}");
        let pending = r.pending.clone().expect("a pending call");
        let fetched = chainbox::result::FlowSource {
            seq: 1,
            call_id: Some(r.call_trace[0].call_id.clone()),
            tool: "fetch_page".to_owned(),
        };
        assert_eq!((pending.seq, pending.risk), (2, ToolRisk::Critical), "{python:?}");
        assert_eq!(pending.provenance, vec![fetched]);
        let listed = s.store.pending().await.expect("pending");
        assert_eq!(listed[0].call.provenance, pending.provenance, "the store keeps it");
        let chain_id = r.chain_id.expect("a chain id");
        let r = approve_and_finish(&s.durable, &s, &chain_id).await;
        assert_ok(&r);
        assert_eq!(r.output, json!("sent 14"), "{python:?}");
        assert_eq!(s.wires.load(Ordering::SeqCst), 1);
        let wire = &r.call_trace[1];
        assert_eq!(wire.policy, Some(PolicyDecision::ApprovedFlow), "{python:?}: {r:#?}");
        let seqs: Vec<(u32, &str)> = wire.provenance.iter().map(|p| (p.seq, p.tool.as_str())).collect();
        assert_eq!(seqs, [(1, "fetch_page")]);
        assert_eq!(
            wire.provenance[0].call_id.as_deref(),
            Some(r.call_trace[0].call_id.as_str())
        );
    }
}
