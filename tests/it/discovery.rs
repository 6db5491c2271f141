//! Progressive discovery: a registry too big to show in full is listed by
//! name and summary, and the script looks tools up with `search_tools` and
//! `describe_tool` (recorded calls, no side effects).

use std::sync::Arc;

use chainbox::discovery::{
    FULL_STUBS_MAX_TOOLS, INDEX_BUDGET_BYTES, for_chains, model_stubs, tool_index, with_discovery,
};
use chainbox::{Approval, CallStatus, ChainPolicy, Tool, ToolRegistry, ToolRisk};
use serde_json::{Value, json};

use crate::fixtures::{assert_ok, assert_trace, engine, fn_tool};

/// 200 tools named like several MCP servers' tools, with real-length descriptions.
fn big_registry() -> ToolRegistry {
    let servers = ["github", "memory", "filesystem", "postgres", "slack"];
    let verbs = [
        "create", "list", "get", "update", "delete", "search", "archive", "export",
    ];
    let nouns = ["issue", "entity", "file", "row", "message"];
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for server in servers {
        for verb in verbs {
            for noun in nouns {
                let name: &'static str = Box::leak(format!("{server}__{verb}_{noun}_records").into_boxed_str());
                let description = format!(
                    "{verb} a {noun} in {server}. Returns the {noun} as an object with its id, \
                     timestamps and fields; fails if the {noun} does not exist or access is denied."
                );
                let mut tool = crate::fixtures::tool(name, &["id", "fields"], |a| Ok(json!({"echo": a})));
                tool.info.description = description;
                tools.push(Arc::new(tool));
            }
        }
    }
    assert_eq!(tools.len(), 200);
    ToolRegistry::from_local(tools).expect("registry")
}

#[test]
fn the_index_of_two_hundred_tools_stays_under_the_documented_size() {
    let registry = with_discovery(&big_registry()).expect("discovery");
    let index = tool_index(&registry);
    assert!(
        index.len() < INDEX_BUDGET_BYTES,
        "index is {} bytes, budget {INDEX_BUDGET_BYTES}",
        index.len()
    );
    assert!(index.contains("#   github__create_issue_records — create a issue in github."));
    assert!(index.contains("async def search_tools("));
    assert!(index.contains("async def describe_tool("));
}

#[tokio::test]
async fn search_tools_finds_the_best_matches_with_their_stubs() {
    let registry = with_discovery(&big_registry()).expect("discovery");
    let script = r#"
found = await search_tools(query="delete slack message", limit=3)
[f["name"] for f in found] + [found[0]["stub"].startswith("async def slack__delete_message_records(")]
"#;
    let r = engine()
        .run(
            script,
            &registry,
            &ChainPolicy::default(),
            &Approval::auto(ToolRisk::Safe),
        )
        .await;
    assert_ok(&r);
    let names = &r.output;
    assert_eq!(names[0], json!("slack__delete_message_records"));
    assert_eq!(names[3], json!(true));
    assert_trace(&r, &[("search_tools", CallStatus::Ok)]);
}

#[tokio::test]
async fn describe_tool_returns_the_schema_and_unknown_names_are_runtime_errors() {
    let registry = with_discovery(
        &ToolRegistry::from_local([fn_tool("add", &["a", "b"], |_| Ok(Value::Null))]).expect("registry"),
    )
    .expect("discovery");
    let script = r#"
info = await describe_tool(name="add")
try:
    await describe_tool(name="nope")
    missing = None
except RuntimeError as e:
    missing = str(e)
[sorted(info["input_schema"]["properties"]), info["risk"], missing]
"#;
    let r = engine()
        .run(
            script,
            &registry,
            &ChainPolicy::default(),
            &Approval::auto(ToolRisk::Safe),
        )
        .await;
    assert_ok(&r);
    let out = &r.output;
    assert_eq!(out[0], json!(["a", "b"]));
    assert_eq!(out[1], json!("safe"));
    assert!(out[2].as_str().expect("message").contains("no tool named \"nope\""));
    assert_trace(
        &r,
        &[("describe_tool", CallStatus::Ok), ("describe_tool", CallStatus::Error)],
    );
}

#[test]
fn discovery_refuses_a_registry_that_already_has_those_names() {
    let registry = ToolRegistry::from_local([fn_tool("search_tools", &[], |_| Ok(Value::Null))]).expect("registry");
    assert!(with_discovery(&registry).is_err());
}

#[test]
fn a_registry_above_the_threshold_gets_discovery_and_is_shown_as_an_index() {
    let registry = for_chains(big_registry()).expect("for_chains");
    assert!(registry.get("search_tools").is_some() && registry.get("describe_tool").is_some());
    let shown = model_stubs(&registry);
    assert!(shown.contains("#   memory__list_entity_records — "));
    assert!(!shown.contains("async def memory__list_entity_records("));
    assert!(shown.len() < INDEX_BUDGET_BYTES + chainbox::stubs::STUBS_PREAMBLE.len());
}

#[test]
fn a_registry_at_the_threshold_is_shown_in_full_without_discovery() {
    let tools: Vec<Arc<dyn Tool>> = (0..FULL_STUBS_MAX_TOOLS)
        .map(|i| fn_tool(Box::leak(format!("t{i}").into_boxed_str()), &[], |_| Ok(Value::Null)))
        .collect();
    let registry = for_chains(ToolRegistry::from_local(tools).expect("registry")).expect("for_chains");
    assert!(registry.get("search_tools").is_none());
    assert!(model_stubs(&registry).contains("async def t0("));
}

#[test]
fn the_run_chain_description_of_two_hundred_tools_stays_under_40_kib() {
    let registry = for_chains(big_registry()).expect("for_chains");
    let tool = chainbox::run_chain::run_chain_tool(&registry, &ChainPolicy::default());
    eprintln!("run_chain description for 200 tools: {} bytes", tool.description.len());
    assert!(tool.description.len() < 40 * 1024, "{} bytes", tool.description.len());
    assert!(tool.description.contains("search_tools"));
}
