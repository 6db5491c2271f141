//! Results and calls (seed item 4): every call has a unique `call_id`, and
//! every record says where the answer came from (`source`), when
//! (`observed_at`, UTC RFC 3339) and which policy decision let it through
//! (`policy`); a tool's own provenance reaches the script.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use chainbox::policy::ToolOverride;
use chainbox::result::PolicyDecision;
use chainbox::tools::command::CommandTool;
use chainbox::{
    Approval, CallStatus, ChainPolicy, ContentBlock, Tool, ToolCallRequest, ToolContext, ToolError,
    ToolExecutionResult, ToolOutput, ToolRegistry, ToolRisk,
};
use chainbox_protocol::CallOutcome;
use serde_json::{Map, Value, json};

use crate::fixtures::{add_tool, delete_tool, engine, invoker_session, registry, run, run_full, unchecked};

#[test]
fn tool_call_request_ids_are_generated_and_unique() {
    let ids: HashSet<String> = (0..1000)
        .map(|_| ToolCallRequest::new("add", Map::new()).call_id)
        .collect();
    assert_eq!(ids.len(), 1000);
    assert!(
        ids.iter().all(|id| id.starts_with("call_") && id.len() == 37),
        "{ids:?}"
    );
}

#[test]
fn tool_call_request_read_from_json_without_an_id_gets_one() {
    let request: ToolCallRequest =
        serde_json::from_value(json!({"name": "add", "arguments": {"a": 1}})).expect("a request");
    assert!(request.call_id.starts_with("call_"), "{request:?}");
    assert_eq!(request.arguments["a"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn every_record_of_a_chain_has_its_own_call_id() {
    let r = run("import asyncio\nawait asyncio.gather(add(a=1, b=2), add(a=3, b=4))\nawait noop()").await;
    assert_eq!(r.call_trace.len(), 3, "{r:#?}");
    let ids: HashSet<&str> = r.call_trace.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids.len(), 3, "{r:#?}");
}

#[tokio::test]
async fn invoker_call_records_the_request_call_id() {
    let s = invoker_session("run-prov", registry(), ChainPolicy::default(), Approval::deny_all());
    let mut args = Map::new();
    args.insert("a".into(), json!(1));
    args.insert("b".into(), json!(2));
    let request = ToolCallRequest::new("add", args);
    let id = request.call_id.clone();
    let outcome = s.call(request).await.expect("within budget");
    assert_eq!(outcome, CallOutcome::Ok { value: json!(3.0) });
    assert_eq!(s.trace(CallStatus::Error, "interrupted")[0].call_id, id);
}

#[tokio::test(flavor = "multi_thread")]
async fn record_source_names_the_tool_kind_and_name() {
    let echo = CommandTool::new(
        "say",
        "echoes",
        json!({"type": "object"}),
        vec!["sh".into(), "-c".into(), "echo '\"hi\"'".into()],
    );
    let registry = ToolRegistry::from_local([Arc::new(echo) as Arc<dyn Tool>, add_tool()]).expect("registry");
    let r = run_full(
        "await say()\nawait add(a=1, b=1)\ntry:\n    await nothing()\nexcept NameError:\n    pass",
        &registry,
        &unchecked(),
        &Approval::deny_all(),
    )
    .await;
    let sources: Vec<Option<&str>> = r.call_trace.iter().map(|c| c.source.as_deref()).collect();
    assert_eq!(sources, [Some("command:say"), Some("local:add")], "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn record_observed_at_is_utc_rfc3339_within_the_run() {
    let before = jiff::Timestamp::now();
    let r = run("await add(a=1, b=2)").await;
    let after = jiff::Timestamp::now();
    let observed = &r.call_trace[0].observed_at;
    assert!(observed.ends_with('Z'), "{observed}");
    let at: jiff::Timestamp = observed.parse().expect("RFC 3339");
    assert!(before <= at && at <= after, "{before} <= {at} <= {after}");
}

#[tokio::test(flavor = "multi_thread")]
async fn record_policy_is_within_risk_for_a_safe_call() {
    let r = run("await add(a=1, b=2)").await;
    assert_eq!(r.call_trace[0].policy, Some(PolicyDecision::WithinRisk), "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn record_policy_is_approved_for_an_approved_risky_call() {
    let registry = ToolRegistry::from_local([delete_tool()]).expect("registry");
    let r = run_full(
        "await delete(path='x')",
        &registry,
        &ChainPolicy::default(),
        &Approval::auto(ToolRisk::High),
    )
    .await;
    assert_eq!(r.call_trace[0].status, CallStatus::Ok, "{r:#?}");
    assert_eq!(r.call_trace[0].policy, Some(PolicyDecision::Approved));
}

#[tokio::test(flavor = "multi_thread")]
async fn record_policy_is_denied_approval_when_the_handler_refuses() {
    let registry = ToolRegistry::from_local([delete_tool()]).expect("registry");
    let r = run_full(
        "try:\n    await delete(path='x')\nexcept PermissionError:\n    pass",
        &registry,
        &ChainPolicy::default(),
        &Approval::deny_all(),
    )
    .await;
    assert_eq!(r.call_trace[0].status, CallStatus::Denied, "{r:#?}");
    assert_eq!(r.call_trace[0].policy, Some(PolicyDecision::DeniedApproval));
}

#[tokio::test(flavor = "multi_thread")]
async fn record_policy_is_denied_tool_for_a_policy_deny() {
    let mut policy = ChainPolicy::default();
    policy.tools.insert(
        "add".into(),
        ToolOverride {
            deny: true,
            ..ToolOverride::default()
        },
    );
    let r = run_full(
        "try:\n    await add(a=1, b=2)\nexcept PermissionError:\n    pass",
        &registry(),
        &policy,
        &Approval::deny_all(),
    )
    .await;
    assert_eq!(r.call_trace[0].policy, Some(PolicyDecision::DeniedTool), "{r:#?}");
}

#[tokio::test]
async fn record_has_no_source_or_policy_for_an_unknown_tool() {
    let s = invoker_session("run-prov", registry(), ChainPolicy::default(), Approval::deny_all());
    let _ = s.call(ToolCallRequest::new("nope", Map::new())).await;
    let record = &s.trace(CallStatus::Error, "interrupted")[0];
    assert_eq!(record.source, None);
    assert_eq!(record.policy, None);
}

#[tokio::test(flavor = "multi_thread")]
async fn record_json_has_snake_case_provenance_fields() {
    let r = run("await add(a=1, b=2)").await;
    let v = serde_json::to_value(&r.call_trace[0]).expect("json");
    for key in [
        "call_id",
        "tool",
        "args_digest",
        "status",
        "duration_ms",
        "artifact_ref",
        "source",
        "observed_at",
        "policy",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["policy"], "within_risk");
    assert_eq!(v["source"], "local:add");
}

/// A tool reporting its own provenance, as the seed's `read_file` does.
struct Quote;

#[async_trait]
impl Tool for Quote {
    fn info(&self) -> &chainbox::ToolInfo {
        static INFO: std::sync::OnceLock<chainbox::ToolInfo> = std::sync::OnceLock::new();
        INFO.get_or_init(|| chainbox::ToolInfo::new("quote", "a quote with provenance", json!({"type": "object"})))
    }
    async fn execute(&self, _ctx: ToolContext, _args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Result(
            ToolExecutionResult {
                content: vec![ContentBlock::Text { text: "42".into() }],
                ..ToolExecutionResult::default()
            }
            .observed_now("https://example.org/quotes/42", "cached"),
        ))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_result_provenance_reaches_the_script() {
    let registry = ToolRegistry::from_local([Arc::new(Quote) as Arc<dyn Tool>]).expect("registry");
    let r = engine()
        .run(
            "q = await quote()\n[q['text'], q['source'], q['policy'], q['observed_at'][-1]]",
            &registry,
            &ChainPolicy::default(),
            &Approval::deny_all(),
        )
        .await;
    assert_eq!(
        r.output,
        json!(["42", "https://example.org/quotes/42", "cached", "Z"]),
        "{r:#?}"
    );
}

/// Approves every call with `{"path": "safe.txt"}` instead of its arguments.
struct Rewrite;

#[async_trait]
impl chainbox::ApprovalHandler for Rewrite {
    async fn request(
        &self,
        _: &chainbox::ApprovalRequest,
    ) -> Result<chainbox::ApprovalDecision, chainbox::ApprovalError> {
        let mut arguments = Map::new();
        arguments.insert("path".into(), json!("safe.txt"));
        Ok(chainbox::ApprovalDecision::Modified { arguments })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn record_policy_is_approved_modified_when_the_handler_rewrites_the_arguments() {
    let registry = ToolRegistry::from_local([delete_tool()]).expect("registry");
    let r = run_full(
        "await delete(path='/')",
        &registry,
        &ChainPolicy::default(),
        &Approval::new(Rewrite),
    )
    .await;
    assert_eq!(r.call_trace[0].status, CallStatus::Ok, "{r:#?}");
    assert_eq!(r.call_trace[0].policy, Some(PolicyDecision::ApprovedModified));
}

#[tokio::test(flavor = "multi_thread")]
async fn record_of_a_call_cut_off_by_the_chain_keeps_its_provenance() {
    let policy = ChainPolicy {
        total_timeout_s: 0.5,
        ..ChainPolicy::default()
    };
    let r = run_full("await sleep(seconds=30)", &registry(), &policy, &Approval::deny_all()).await;
    let record = &r.call_trace[0];
    assert_eq!(record.status, CallStatus::Timeout, "{r:#?}");
    assert!(record.call_id.starts_with("call_"), "{record:?}");
    assert_eq!(record.source.as_deref(), Some("local:sleep"));
    assert_eq!(record.policy, Some(PolicyDecision::WithinRisk));
}
