//! Provider specs: what `spec_of` and `chainbox specs` produce is checked
//! against the shapes OpenAI and Anthropic document for tool lists, written
//! here as JSON Schemas, and against OpenAI's strict-mode rules.

use std::collections::HashMap;

use chainbox::specs::{Provider, ToolSpec, spec_of, specs_of};
use chainbox::tools::{AnyTool, HostedTool, ProviderDefinedTool, ToolRegistry};
use serde_json::{Value, json};

/// OpenAI Responses API, `tools[]` item of type `function` (FunctionTool).
fn openai_responses_function_tool() -> Value {
    json!({
        "type": "object",
        "required": ["type", "name", "parameters", "strict"],
        "additionalProperties": false,
        "properties": {
            "type": {"const": "function"},
            "name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"},
            "description": {"type": ["string", "null"]},
            "parameters": {"type": ["object", "null"]},
            "strict": {"type": ["boolean", "null"]}
        }
    })
}

/// OpenAI Chat Completions API, `tools[]` item (ChatCompletionTool).
fn openai_chat_function_tool() -> Value {
    json!({
        "type": "object",
        "required": ["type", "function"],
        "additionalProperties": false,
        "properties": {
            "type": {"const": "function"},
            "function": {
                "type": "object",
                "required": ["name"],
                "additionalProperties": false,
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"},
                    "description": {"type": "string"},
                    "parameters": {"type": "object"},
                    "strict": {"type": ["boolean", "null"]}
                }
            }
        }
    })
}

/// Anthropic Messages API, `tools[]` item (custom client tool).
fn anthropic_tool() -> Value {
    json!({
        "type": "object",
        "required": ["name", "input_schema"],
        "additionalProperties": false,
        "properties": {
            "name": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"},
            "description": {"type": "string"},
            "input_schema": {
                "type": "object",
                "required": ["type"],
                "properties": {
                    "type": {"const": "object"},
                    "properties": {"type": ["object", "null"]},
                    "required": {"type": ["array", "null"], "items": {"type": "string"}}
                }
            },
            "cache_control": {"type": ["object", "null"]},
            "type": {"enum": ["custom", null]}
        }
    })
}

fn shape_of(provider: Provider) -> Value {
    match provider {
        Provider::Openai => openai_responses_function_tool(),
        Provider::OpenaiChat => openai_chat_function_tool(),
        Provider::Anthropic => anthropic_tool(),
    }
}

fn assert_shape(provider: Provider, wire: &Value) {
    let validator = jsonschema::validator_for(&shape_of(provider)).expect("shape schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(wire)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{provider} declaration {wire} does not fit: {errors:?}"
    );
}

/// OpenAI strict mode: every object closed and every property required.
fn assert_strict(schema: &Value) {
    if let Some(map) = schema.as_object() {
        if let Some(Value::Object(props)) = map.get("properties") {
            assert_eq!(
                map.get("additionalProperties"),
                Some(&json!(false)),
                "open object in {schema}"
            );
            let required: Vec<&str> = map["required"]
                .as_array()
                .expect("required")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            for key in props.keys() {
                assert!(required.contains(&key.as_str()), "{key} not required in {schema}");
            }
        }
        for value in map.values() {
            assert_strict(value);
        }
    } else if let Some(items) = schema.as_array() {
        items.iter().for_each(assert_strict);
    }
}

const PROVIDERS: [Provider; 3] = [Provider::Openai, Provider::OpenaiChat, Provider::Anthropic];

#[test]
fn every_demo_tool_fits_every_providers_documented_shape() {
    let registry = chainbox::demo::demo_registry();
    for provider in PROVIDERS {
        let specs = specs_of(&registry, provider);
        assert_eq!(specs.len(), registry.len(), "no demo tool is dropped for {provider}");
        for spec in specs {
            assert_shape(provider, &spec.to_wire(provider));
        }
    }
}

#[test]
fn strict_openai_declarations_close_every_object_and_require_every_field() {
    let registry = chainbox::demo::demo_registry();
    for spec in specs_of(&registry, Provider::Openai) {
        let wire = spec.to_wire(Provider::Openai);
        if wire["strict"] == json!(true) {
            assert_strict(&wire["parameters"]);
        }
    }
}

#[test]
fn anthropic_declarations_keep_the_schema_as_written() {
    let registry = chainbox::demo::demo_registry();
    let tool = registry.iter().next().expect("a demo tool");
    let local = tool.as_local().expect("local");
    let wire = spec_of(tool, Provider::Anthropic)
        .expect("spec")
        .to_wire(Provider::Anthropic);
    assert_eq!(&wire["input_schema"], local.input_schema());
    assert_eq!(wire["name"], json!(local.name()));
}

fn hosted(specs: &[(&str, Value)]) -> AnyTool {
    AnyTool::Hosted(HostedTool {
        name: "web_search".into(),
        description: "Search the web (run by the provider).".into(),
        provider_specs: specs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect(),
    })
}

#[test]
fn a_hosted_tool_is_sent_as_its_providers_own_spec() {
    let spec = json!({"type": "web_search_preview"});
    let tool = hosted(&[("openai", spec.clone())]);
    let out = spec_of(&tool, Provider::Openai).expect("openai spec");
    assert!(matches!(out, ToolSpec::Provider(ref p) if p.provider == "openai"));
    assert_eq!(out.to_wire(Provider::Openai), spec);
}

#[test]
fn a_tool_without_a_spec_for_the_provider_is_none_and_dropped() {
    let tool = hosted(&[("openai", json!({"type": "web_search_preview"}))]);
    assert!(spec_of(&tool, Provider::Anthropic).is_none());
    let defined = AnyTool::ProviderDefined(std::sync::Arc::new(Shell {
        provider_specs: HashMap::from([("openai".to_owned(), json!({"type": "local_shell"}))]),
        call_types: vec!["local_shell_call".into()],
    }));
    let registry = ToolRegistry::from_tools([tool, defined]).expect("registry");
    assert!(specs_of(&registry, Provider::Anthropic).is_empty());
    assert_eq!(specs_of(&registry, Provider::Openai).len(), 2);
}

#[test]
fn a_local_tool_whose_name_is_too_long_for_providers_has_no_spec() {
    let name: &'static str = Box::leak(format!("server__{}", "x".repeat(60)).into_boxed_str());
    let tool = crate::fixtures::fn_tool(name, &[], |_| Ok(Value::Null));
    let registry = ToolRegistry::from_local([tool]).expect("registry");
    for provider in PROVIDERS {
        assert!(specs_of(&registry, provider).is_empty());
    }
}

/// A provider-defined shell: only its declaration matters here.
struct Shell {
    provider_specs: HashMap<String, Value>,
    call_types: Vec<String>,
}

#[async_trait::async_trait]
impl ProviderDefinedTool for Shell {
    fn name(&self) -> &str {
        "shell"
    }
    fn description(&self) -> &str {
        "A provider-shaped shell."
    }
    fn provider_specs(&self) -> &HashMap<String, Value> {
        &self.provider_specs
    }
    fn call_types(&self) -> &[String] {
        &self.call_types
    }
    async fn handle_call(
        &self,
        _call: serde_json::Map<String, Value>,
        _ctx: Option<chainbox::ToolContext>,
    ) -> Result<serde_json::Map<String, Value>, chainbox::ToolError> {
        Err(chainbox::ToolError::new("not run in these tests"))
    }
}

fn chainbox_specs(args: &[&str]) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chainbox"))
        .arg("specs")
        .args(args)
        .output()
        .expect("chainbox runs");
    assert!(
        out.status.success(),
        "chainbox specs {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("specs prints JSON")
}

#[test]
fn chainbox_specs_prints_run_chain_then_every_tool_in_each_providers_shape() {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tools/manifest.toml");
    for (flag, provider) in [
        ("openai", Provider::Openai),
        ("openai-chat", Provider::OpenaiChat),
        ("anthropic", Provider::Anthropic),
    ] {
        let specs = chainbox_specs(&["--provider", flag, "--tools", manifest]);
        let items = specs.as_array().expect("an array");
        assert!(items.len() >= 2, "run_chain and the manifest's tools: {specs}");
        for item in items {
            assert_shape(provider, item);
        }
        let first = if provider == Provider::OpenaiChat {
            &items[0]["function"]
        } else {
            &items[0]
        };
        assert_eq!(first["name"], json!("run_chain"));
        let description = first["description"].as_str().expect("description");
        assert!(
            description.contains("asyncio.gather") && description.contains("async def "),
            "{description}"
        );
    }
}

#[test]
fn chainbox_specs_only_run_chain_is_the_code_mode_tool_alone_and_strict() {
    let specs = chainbox_specs(&["--provider", "openai", "--only", "run_chain"]);
    let items = specs.as_array().expect("an array");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["name"], json!("run_chain"));
    assert_eq!(items[0]["strict"], json!(true));
    assert_strict(&items[0]["parameters"]);
}
