//! End-to-end chains through the sandbox for each invoker gate and for result
//! shaping (artifacts and media files).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use chainbox::{Approval, CallStatus, ChainPolicy, ChainRunResult, ErrorKind, Tool, ToolRegistry, ToolRisk};
use serde_json::{Value, json};

use crate::fixtures::{ChartTool, FnTool, PNG_1X1, Silent, engine, tool, unchecked};

fn registry() -> ToolRegistry {
    let strict = tool("forecast", &[], |a| Ok(json!({"city": a["city"], "ok": true}))).with_schema(json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
        "additionalProperties": false
    }));
    let send = tool("send_email", &["to"], |a| Ok(json!({"sent_to": a["to"]}))).with_risk(ToolRisk::High);
    let slow = FnTool {
        delay: Duration::from_secs(30),
        ..tool("slow", &[], |_| Ok(Value::Null))
    };
    let rows = tool("rows", &["n"], |a| {
        let n = a["n"].as_u64().unwrap_or(0);
        Ok(json!(
            (0..n)
                .map(|i| json!({"id": i, "name": format!("row {i}")}))
                .collect::<Vec<_>>()
        ))
    });
    let count = tool("count", &["data"], |a| {
        Ok(json!(a["data"].as_array().map_or(0, Vec::len)))
    });
    let panics = tool("explode", &[], |_| panic!("tool bug"));
    ToolRegistry::from_local([
        Arc::new(strict) as Arc<dyn Tool>,
        Arc::new(send),
        Arc::new(slow),
        Arc::new(rows),
        Arc::new(count),
        Arc::new(panics),
        Arc::new(ChartTool),
    ])
    .expect("registry")
}

async fn run(script: &str, policy: &ChainPolicy, approval: &Approval) -> ChainRunResult {
    engine().run(script, &registry(), policy, approval).await
}

async fn run_default(script: &str) -> ChainRunResult {
    run(script, &ChainPolicy::default(), &Approval::deny_all()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn schema_rejection_is_a_value_error_naming_the_field_and_the_tool_never_runs() {
    let r =
        run_default("try:\n    await forecast(city='Paris', days=0)\nexcept ValueError as e:\n    m = str(e)\nm").await;
    let message = r.output.as_str().unwrap_or_default().to_owned();
    assert!(message.contains("days"), "{r:?}");
    assert_eq!(r.call_trace[0].status, CallStatus::Error);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_argument_is_rejected_by_a_strict_schema() {
    // What the run does; the check before it refuses the script
    // (tests/it/check.rs).
    let r = run(
        "try:\n    await forecast(city='Paris', cty='x')\nexcept ValueError as e:\n    m = str(e)\nm",
        &unchecked(),
        &Approval::deny_all(),
    )
    .await;
    assert!(r.output.as_str().unwrap_or_default().contains("cty"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn high_risk_call_denied_is_a_catchable_permission_error() {
    let r = run_default(
        "try:\n    await send_email(to='a@b.c')\n    r = 'sent'\nexcept PermissionError:\n    r = 'denied'\nr",
    )
    .await;
    assert_eq!(r.output, json!("denied"), "{r:?}");
    assert_eq!(r.call_trace[0].status, CallStatus::Denied);
}

#[tokio::test(flavor = "multi_thread")]
async fn high_risk_call_approved_runs() {
    let r = run(
        "await send_email(to='a@b.c')",
        &ChainPolicy::default(),
        &Approval::auto(ToolRisk::High),
    )
    .await;
    assert_eq!(r.output, json!({"sent_to": "a@b.c"}), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn approval_timeout_means_denied() {
    let policy = ChainPolicy {
        approval_timeout_s: 0.2,
        call_timeout_s: 1.0,
        ..ChainPolicy::default()
    };
    let r = run(
        "try:\n    await send_email(to='x')\nexcept PermissionError as e:\n    m = str(e)\nm",
        &policy,
        &Approval::new(Silent::default()),
    )
    .await;
    assert_eq!(r.call_trace[0].status, CallStatus::Denied, "{r:?}");
    assert!(r.output.as_str().unwrap_or_default().contains("timed out"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn per_call_timeout_is_a_timeout_error_and_a_timeout_record() {
    let policy = ChainPolicy {
        call_timeout_s: 0.2,
        approval_timeout_s: 0.1,
        ..ChainPolicy::default()
    };
    let r = run(
        "try:\n    await slow()\nexcept TimeoutError:\n    r = 'timed out'\nr",
        &policy,
        &Approval::deny_all(),
    )
    .await;
    assert_eq!(r.output, json!("timed out"), "{r:?}");
    assert_eq!(r.call_trace[0].status, CallStatus::Timeout);
}

#[tokio::test(flavor = "multi_thread")]
async fn panicking_tool_is_an_error_not_a_crash() {
    let r = run_default("try:\n    await explode()\nexcept RuntimeError:\n    r = 'contained'\nr").await;
    assert_eq!(r.output, json!("contained"), "{r:?}");
    assert_eq!(r.call_trace[0].status, CallStatus::Error);
}

#[tokio::test(flavor = "multi_thread")]
async fn large_result_is_offloaded_and_load_artifact_brings_it_back() {
    let r = run_default("h = await rows(n=500)\nfull = load_artifact(h)\n[h['media_type'], h['size'] > 4096, len(full), full[499]['name']]").await;
    assert_eq!(r.output, json!(["application/json", true, 500, "row 499"]), "{r:?}");
    let artifact_ref = r.call_trace[0].artifact_ref.expect("offloaded");
    assert!(r.artifacts.iter().any(|a| a.artifact_ref == artifact_ref));
}

#[tokio::test(flavor = "multi_thread")]
async fn artifact_handle_in_arguments_is_resolved_on_the_host() {
    let r =
        run_default("h = await rows(n=500)\n[await count(data=h), await count(data={'$artifact': h['artifact_ref']})]")
            .await;
    assert_eq!(r.output, json!([500, 500]), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn load_artifact_is_bounded_by_max_result_bytes() {
    let policy = ChainPolicy {
        max_result_bytes: 8000,
        ..ChainPolicy::default()
    };
    let r = run(
        "h = await rows(n=500)\ntry:\n    load_artifact(h)\n    r = 'loaded'\nexcept ValueError as e:\n    r = str(e)\nr",
        &policy,
        &Approval::deny_all(),
    )
    .await;
    assert!(
        r.output.as_str().unwrap_or_default().contains("max_result_bytes"),
        "{r:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn large_chain_output_is_offloaded_with_a_preview() {
    let r = run_default("['x' * 100 for i in range(100)]").await;
    assert!(r.is_ok(), "{r:?}");
    assert!(
        r.output["artifact_ref"]
            .as_str()
            .is_some_and(|s| s.starts_with("sha256:")),
        "{r:?}"
    );
    assert!(r.output_text.len() < 1000);
    assert_eq!(r.artifacts.len(), 1);
    let stored = engine().artifacts().get(&r.artifacts[0].artifact_ref).unwrap().unwrap();
    let value: Value = serde_json::from_slice(&stored.bytes).unwrap();
    assert_eq!(value.as_array().map(Vec::len), Some(100));
}

#[tokio::test(flavor = "multi_thread")]
async fn chain_output_above_max_result_bytes_is_an_output_limit_error() {
    let policy = ChainPolicy {
        max_result_bytes: 5000,
        ..ChainPolicy::default()
    };
    let r = run("'x' * 10000", &policy, &Approval::deny_all()).await;
    assert_eq!(r.error_kind(), Some(ErrorKind::OutputLimit), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn media_result_becomes_a_workspace_file_the_script_can_read() {
    let r = run_default("c = await chart()\nf = c['files'][0]\ndata = open(f['path'], 'rb').read()\n[c['text'], f['path'], f['media_type'], len(data), data[:4] == b'\\x89PNG']").await;
    let png = base64::engine::general_purpose::STANDARD.decode(PNG_1X1).unwrap();
    assert_eq!(
        r.output,
        json!(["a chart", "/workspace/media/chart_1.png", "image/png", png.len(), true]),
        "{r:?}"
    );
    assert_eq!(r.files.len(), 1);
    assert_eq!(r.files[0].path, "/workspace/media/chart_1.png");
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_tools_spend_the_budget() {
    let policy = ChainPolicy {
        max_tool_calls: 2,
        ..unchecked()
    };
    // `call_tool`-style probing is impossible (unknown names are NameErrors in
    // the script), so spend the budget with real calls that fail later gates.
    let r = run(
        "for i in range(5):\n    try:\n        await forecast(city=1)\n    except ValueError:\n        pass",
        &policy,
        &Approval::deny_all(),
    )
    .await;
    assert_eq!(r.error_kind(), Some(ErrorKind::ToolBudget), "{r:?}");
    assert_eq!(r.tool_calls, 2);
}
