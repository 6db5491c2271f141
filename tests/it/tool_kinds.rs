//! The seed's three kinds of tool (local, hosted, provider-defined): the two
//! type guards and their order, `handle_call` for provider-defined tools,
//! and the invoker refusing the non-local kinds inside a chain.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use chainbox::result::PolicyDecision;
use chainbox::tools::{
    AnyTool, HostedTool, ProviderDefinedTool, ToolContext, ToolError, ToolKind, is_hosted_tool,
    is_provider_defined_tool,
};
use chainbox::{Approval, CallStatus, ChainPolicy, ChainRunResult, ToolRegistry, ToolRisk};
use serde_json::{Map, Value, json};

use crate::fixtures::{add_tool, engine};

/// A provider-defined local shell in the shape of OpenAI's `local_shell`:
/// the model emits `{"type": "shell_call", "action": {"command": [...]}}`,
/// and `handle_call` runs the command for real and answers with a
/// `shell_call_output` item.
struct LocalShell {
    specs: HashMap<String, Value>,
    call_types: Vec<String>,
    handled: Arc<AtomicUsize>,
}

impl LocalShell {
    fn new() -> Self {
        LocalShell {
            specs: HashMap::from([("openai".to_owned(), json!({"type": "local_shell"}))]),
            call_types: vec!["shell_call".to_owned()],
            handled: Arc::new(AtomicUsize::new(0)),
        }
    }
}

#[async_trait]
impl ProviderDefinedTool for LocalShell {
    fn name(&self) -> &str {
        "shell"
    }
    fn description(&self) -> &str {
        "runs a shell command on this host"
    }
    fn provider_specs(&self) -> &HashMap<String, Value> {
        &self.specs
    }
    fn call_types(&self) -> &[String] {
        &self.call_types
    }
    async fn handle_call(
        &self,
        call: Map<String, Value>,
        _ctx: Option<ToolContext>,
    ) -> Result<Map<String, Value>, ToolError> {
        self.handled.fetch_add(1, Ordering::SeqCst);
        let command: Vec<String> = call
            .get("action")
            .and_then(|a| a.get("command"))
            .and_then(Value::as_array)
            .map(|parts| parts.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        let Some((program, rest)) = command.split_first() else {
            return Err(ToolError::new("shell_call without a command"));
        };
        let out = tokio::process::Command::new(program)
            .args(rest)
            .output()
            .await
            .map_err(|e| ToolError::new(format!("cannot run {program}: {e}")))?;
        let mut item = Map::new();
        item.insert("type".into(), json!("shell_call_output"));
        item.insert("call_id".into(), call.get("call_id").cloned().unwrap_or(Value::Null));
        item.insert("output".into(), json!(String::from_utf8_lossy(&out.stdout)));
        Ok(item)
    }
}

fn hosted() -> AnyTool {
    AnyTool::Hosted(HostedTool {
        name: "web_search".into(),
        description: "searches the web at the provider".into(),
        provider_specs: HashMap::from([("openai".to_owned(), json!({"type": "web_search_preview"}))]),
    })
}

/// Who runs a call, decided in the seed's order: provider-defined first.
fn seed_order(tool: &AnyTool) -> ToolKind {
    if is_provider_defined_tool(tool).is_some() {
        ToolKind::ProviderDefined
    } else if is_hosted_tool(tool).is_some() {
        ToolKind::Hosted
    } else {
        ToolKind::Local
    }
}

/// The order the seed warns against: hosted first.
fn hosted_first(tool: &AnyTool) -> ToolKind {
    if is_hosted_tool(tool).is_some() {
        ToolKind::Hosted
    } else if is_provider_defined_tool(tool).is_some() {
        ToolKind::ProviderDefined
    } else {
        ToolKind::Local
    }
}

#[test]
fn provider_defined_tool_has_provider_specs_like_a_hosted_one() {
    let shell = AnyTool::ProviderDefined(Arc::new(LocalShell::new()));
    assert!(shell.provider_specs().is_some_and(|s| s.contains_key("openai")));
    assert!(hosted().provider_specs().is_some_and(|s| s.contains_key("openai")));
    assert!(AnyTool::Local(add_tool()).provider_specs().is_none());
}

#[test]
fn provider_defined_tool_is_never_taken_for_hosted_whichever_guard_runs_first() {
    let shell = AnyTool::ProviderDefined(Arc::new(LocalShell::new()));
    assert!(is_hosted_tool(&shell).is_none());
    assert_eq!(seed_order(&shell), ToolKind::ProviderDefined);
    assert_eq!(hosted_first(&shell), ToolKind::ProviderDefined);
}

#[test]
fn type_guards_sort_each_kind_as_its_kind() {
    for tool in [
        AnyTool::Local(add_tool()),
        hosted(),
        AnyTool::ProviderDefined(Arc::new(LocalShell::new())),
    ] {
        assert_eq!(seed_order(&tool), tool.kind(), "{tool:?}");
        assert_eq!(hosted_first(&tool), tool.kind(), "{tool:?}");
    }
}

#[tokio::test]
async fn provider_defined_tool_answers_its_call_item_with_handle_call() {
    let shell = AnyTool::ProviderDefined(Arc::new(LocalShell::new()));
    let Some(tool) = is_provider_defined_tool(&shell) else {
        panic!("a provider-defined tool");
    };
    assert_eq!(tool.call_types(), ["shell_call"]);
    let call = json!({"type": "shell_call", "call_id": "c1", "action": {"command": ["echo", "hi"]}});
    let Value::Object(call) = call else { unreachable!() };
    let out = tool.handle_call(call, None).await.expect("handled");
    assert_eq!(out["type"], "shell_call_output");
    assert_eq!(out["call_id"], "c1");
    assert_eq!(out["output"], "hi\n");
}

#[test]
fn source_names_the_kind_and_the_tool() {
    assert_eq!(hosted().source(), "hosted:web_search");
    assert_eq!(
        AnyTool::ProviderDefined(Arc::new(LocalShell::new())).source(),
        "provider_defined:shell"
    );
    assert_eq!(AnyTool::Local(add_tool()).source(), "local:add");
}

async fn run_refused(tool: AnyTool, script: &str) -> ChainRunResult {
    let registry = ToolRegistry::from_tools([AnyTool::Local(add_tool()), tool]).expect("registry");
    engine()
        .run(
            script,
            &registry,
            &ChainPolicy::default(),
            &Approval::auto(ToolRisk::Critical),
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn hosted_tool_in_a_chain_is_denied_saying_the_provider_runs_it() {
    let r = run_refused(
        hosted(),
        "try:\n    await web_search(query='x')\n    m = 'ran'\nexcept PermissionError as e:\n    m = str(e)\nm",
    )
    .await;
    let message = r.output.as_str().unwrap_or_default();
    assert!(
        message.contains("hosted tool") && message.contains("provider runs it"),
        "{r:#?}"
    );
    let record = &r.call_trace[0];
    assert_eq!(record.status, CallStatus::Denied);
    assert_eq!(record.policy, Some(PolicyDecision::DeniedKind));
    assert_eq!(record.source.as_deref(), Some("hosted:web_search"));
}

#[tokio::test(flavor = "multi_thread")]
async fn provider_defined_tool_in_a_chain_is_denied_and_handle_call_never_runs() {
    let shell = LocalShell::new();
    let handled = Arc::clone(&shell.handled);
    let r = run_refused(
        AnyTool::ProviderDefined(Arc::new(shell)),
        "try:\n    await shell(command=['echo', 'hi'])\n    m = 'ran'\nexcept PermissionError as e:\n    m = str(e)\nm",
    )
    .await;
    let message = r.output.as_str().unwrap_or_default();
    assert!(
        message.contains("provider-defined tool") && message.contains("shell_call") && message.contains("handle_call"),
        "{r:#?}"
    );
    let record = &r.call_trace[0];
    assert_eq!(record.status, CallStatus::Denied);
    assert_eq!(record.policy, Some(PolicyDecision::DeniedKind));
    assert_eq!(record.source.as_deref(), Some("provider_defined:shell"));
    assert_eq!(handled.load(Ordering::SeqCst), 0);
}
