//! Provider specs: the wire declarations an agent runtime sends a model
//! provider for each tool (the seed's `FunctionSpec`, `ProviderSpec`,
//! `ToolSpec` and `spec_of`).
//!
//! chainbox is the one place that produces these shapes, for the tools of a
//! registry and for the `run_chain` tool itself, so a runtime never writes
//! them by hand:
//!
//! - a LOCAL tool becomes a [`FunctionSpec`], written out as an OpenAI
//!   Responses `function` tool, an OpenAI Chat Completions `function` tool or
//!   an Anthropic tool (`name`, `description`, `input_schema`);
//! - a hosted or provider-defined tool becomes a [`ProviderSpec`] when it
//!   declares a spec for that provider, written out as that opaque spec;
//! - anything else is `None`: the caller drops the tool and logs a warning
//!   ([`specs_of`] does both), never sending a malformed declaration.
//!
//! OpenAI's strict mode demands more of a schema than JSON Schema does:
//! every object closed (`additionalProperties: false`), every property listed
//! in `required`, optional ones made nullable instead. [`strict_schema`]
//! makes that rewrite; a schema it cannot make strict (an open object, a
//! keyword strict mode rejects) is sent with `strict: false` as it was
//! written, because a loose declaration the model can follow beats one the
//! provider refuses.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tools::{AnyTool, ToolRegistry};

/// The providers chainbox writes declarations for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// OpenAI's Responses API: `{"type": "function", "name", "description", "parameters", "strict"}`.
    Openai,
    /// OpenAI's Chat Completions API: `{"type": "function", "function": {...}}`.
    OpenaiChat,
    /// Anthropic's Messages API: `{"name", "description", "input_schema"}`.
    Anthropic,
}

impl Provider {
    /// The name used on the command line and as the key of a hosted tool's
    /// `provider_specs` (both OpenAI APIs share the `"openai"` key).
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::OpenaiChat => "openai-chat",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The key a hosted or provider-defined tool's `provider_specs` uses.
    pub fn spec_key(self) -> &'static str {
        match self {
            Provider::Openai | Provider::OpenaiChat => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Provider {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai" => Ok(Provider::Openai),
            "openai-chat" => Ok(Provider::OpenaiChat),
            "anthropic" => Ok(Provider::Anthropic),
            other => Err(format!(
                "unknown provider {other:?} (expected openai, openai-chat or anthropic)"
            )),
        }
    }
}

/// The wire form of a LOCAL tool, before it is written in one provider's shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionSpec {
    /// The tool's exact name.
    pub name: String,
    /// What it does (the model's only guide to when to call it).
    pub description: String,
    /// The JSON Schema of its arguments, as declared.
    pub parameters: Value,
    /// Whether the full schema is left out of the prompt and fetched on
    /// demand (`describe_tool` in a chain); the declaration then carries the
    /// schema all the same, since providers need it to validate calls.
    #[serde(default)]
    pub lazy_schema: bool,
    /// Whether OpenAI's strict mode is asked for (only when the schema can
    /// be made strict, see [`strict_schema`]).
    pub strict: bool,
}

/// The wire form of a hosted or provider-defined tool: the provider's own
/// declaration, opaque to chainbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderSpec {
    /// The provider key it was declared under (`"openai"`, `"anthropic"`).
    pub provider: String,
    /// The declaration, sent as is.
    pub spec: Value,
}

/// A tool's wire declaration, keyed on `kind` like the seed's union.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolSpec {
    /// A local tool, declared as a function.
    Function(FunctionSpec),
    /// A hosted or provider-defined tool, declared by the provider's spec.
    Provider(ProviderSpec),
}

/// Longest tool name both providers accept (`^[a-zA-Z0-9_-]{1,64}$`).
pub const MAX_NAME_CHARS: usize = 64;

impl FunctionSpec {
    /// A function spec for this name, description and argument schema;
    /// `strict` is set when the schema can be made strict.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        let strict = strict_schema(&parameters).is_some();
        FunctionSpec {
            name: name.into(),
            description: description.into(),
            parameters,
            lazy_schema: false,
            strict,
        }
    }

    /// The declaration in `provider`'s shape.
    pub fn to_wire(&self, provider: Provider) -> Value {
        let parameters = match (provider, self.strict) {
            (Provider::Openai | Provider::OpenaiChat, true) => {
                strict_schema(&self.parameters).unwrap_or_else(|| self.parameters.clone())
            }
            _ => self.parameters.clone(),
        };
        match provider {
            Provider::Openai => json!({
                "type": "function",
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
                "strict": self.strict,
            }),
            Provider::OpenaiChat => json!({
                "type": "function",
                "function": {
                    "name": self.name,
                    "description": self.description,
                    "parameters": parameters,
                    "strict": self.strict,
                },
            }),
            Provider::Anthropic => json!({
                "name": self.name,
                "description": self.description,
                "input_schema": parameters,
            }),
        }
    }
}

impl ToolSpec {
    /// The tool's name: the function's, or the `name` field of a provider's
    /// own spec when it has one.
    pub fn name(&self) -> Option<&str> {
        match self {
            ToolSpec::Function(f) => Some(&f.name),
            ToolSpec::Provider(p) => p.spec.get("name").and_then(Value::as_str),
        }
    }

    /// The declaration in `provider`'s shape.
    pub fn to_wire(&self, provider: Provider) -> Value {
        match self {
            ToolSpec::Function(f) => f.to_wire(provider),
            ToolSpec::Provider(p) => p.spec.clone(),
        }
    }
}

/// The seed's `spec_of`: a [`FunctionSpec`] for a local tool whose name the
/// provider accepts, a [`ProviderSpec`] when a hosted or provider-defined
/// tool declares one for this provider, `None` otherwise.
pub fn spec_of(tool: &AnyTool, provider: Provider) -> Option<ToolSpec> {
    match tool {
        AnyTool::Local(local) => {
            if !is_provider_name(local.name()) {
                return None;
            }
            Some(ToolSpec::Function(FunctionSpec::new(
                local.name(),
                local.description(),
                local.input_schema().clone(),
            )))
        }
        AnyTool::Hosted(hosted) => provider_spec(&hosted.provider_specs, provider),
        AnyTool::ProviderDefined(defined) => provider_spec(defined.provider_specs(), provider),
    }
}

fn provider_spec(specs: &std::collections::HashMap<String, Value>, provider: Provider) -> Option<ToolSpec> {
    specs.get(provider.spec_key()).map(|spec| {
        ToolSpec::Provider(ProviderSpec {
            provider: provider.spec_key().to_owned(),
            spec: spec.clone(),
        })
    })
}

/// Every tool of `registry` that has a spec for `provider`, in registry
/// order; each tool without one is dropped with a warning naming it.
pub fn specs_of(registry: &ToolRegistry, provider: Provider) -> Vec<ToolSpec> {
    registry
        .iter()
        .filter_map(|tool| {
            let spec = spec_of(tool, provider);
            if spec.is_none() {
                tracing::warn!(tool = tool.name(), %provider, "dropping tool: no spec for this provider");
            }
            spec
        })
        .collect()
}

/// Whether both providers accept `name` as a function name.
fn is_provider_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Keywords OpenAI's strict mode refuses; a schema using one is sent loose.
const NOT_STRICT_KEYWORDS: &[&str] = &[
    "patternProperties",
    "propertyNames",
    "if",
    "then",
    "else",
    "not",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
];

/// `schema` rewritten for OpenAI's strict mode, or `None` when it cannot be:
/// every object gets `additionalProperties: false` and lists all its
/// properties in `required`; a property that was optional becomes nullable
/// (`"type": ["string", "null"]`, or `anyOf [..., {"type": "null"}]` when it
/// has no single `type`), so the model passes `null` where it would have
/// left the field out. An object without `properties` (free-form) or one
/// that allows extra properties cannot be strict.
pub fn strict_schema(schema: &Value) -> Option<Value> {
    let mut out = schema.clone();
    make_strict(&mut out)?;
    Some(out)
}

fn make_strict(schema: &mut Value) -> Option<()> {
    let Value::Object(map) = schema else {
        // `true`/`false` schemas cannot be expressed in strict mode.
        return None;
    };
    if NOT_STRICT_KEYWORDS.iter().any(|k| map.contains_key(*k)) {
        return None;
    }
    for key in ["anyOf", "allOf", "oneOf", "prefixItems"] {
        if let Some(Value::Array(subs)) = map.get_mut(key) {
            for sub in subs {
                make_strict(sub)?;
            }
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = map.get_mut(key) {
            for sub in defs.values_mut() {
                make_strict(sub)?;
            }
        }
    }
    if let Some(items) = map.get_mut("items") {
        make_strict(items)?;
    }
    let is_object = map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties");
    if !is_object {
        return Some(());
    }
    match map.get("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        Some(_) => return None,
    }
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let Some(Value::Object(properties)) = map.get_mut("properties") else {
        return None;
    };
    let mut all = Vec::with_capacity(properties.len());
    for (name, property) in properties.iter_mut() {
        make_strict(property)?;
        if !required.contains(name) {
            make_nullable(property);
        }
        all.push(Value::String(name.clone()));
    }
    map.insert("required".to_owned(), Value::Array(all));
    map.insert("additionalProperties".to_owned(), Value::Bool(false));
    Some(())
}

/// Lets `schema` also accept `null`.
fn make_nullable(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    match map.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = std::mem::take(t);
            map.insert("type".to_owned(), json!([t, "null"]));
            if let Some(Value::Array(options)) = map.get_mut("enum")
                && !options.contains(&Value::Null)
            {
                options.push(Value::Null);
            }
        }
        Some(Value::Array(types)) => {
            if !types.contains(&json!("null")) {
                types.push(json!("null"));
            }
        }
        Some(_) => {}
        None => {
            let inner = Value::Object(std::mem::take(map));
            map.insert("anyOf".to_owned(), json!([inner, {"type": "null"}]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_fields_become_nullable_and_required() {
        let schema = json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        });
        let strict = strict_schema(&schema).expect("strict");
        assert_eq!(strict["required"], json!(["city", "days"]));
        assert_eq!(strict["additionalProperties"], json!(false));
        assert_eq!(strict["properties"]["city"]["type"], json!("string"));
        assert_eq!(strict["properties"]["days"]["type"], json!(["integer", "null"]));
    }

    #[test]
    fn nested_objects_and_array_items_are_made_strict_too() {
        let schema = json!({
            "type": "object",
            "properties": {"rows": {"type": "array", "items": {
                "type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]
            }}},
            "required": ["rows"],
        });
        let strict = strict_schema(&schema).expect("strict");
        assert_eq!(
            strict["properties"]["rows"]["items"]["additionalProperties"],
            json!(false)
        );
    }

    #[test]
    fn an_optional_property_without_a_single_type_becomes_any_of_null() {
        let schema = json!({
            "type": "object",
            "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
        });
        let strict = strict_schema(&schema).expect("strict");
        assert_eq!(strict["properties"]["v"]["anyOf"][1], json!({"type": "null"}));
    }

    #[test]
    fn an_optional_enum_admits_null() {
        let schema = json!({"type": "object", "properties": {"unit": {"type": "string", "enum": ["c", "f"]}}});
        let strict = strict_schema(&schema).expect("strict");
        assert_eq!(strict["properties"]["unit"]["enum"], json!(["c", "f", null]));
    }

    #[test]
    fn a_free_form_object_cannot_be_strict() {
        assert!(strict_schema(&json!({"type": "object"})).is_none());
        let open = json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true});
        assert!(strict_schema(&open).is_none());
        let nested = json!({"type": "object", "properties": {"meta": {"type": "object"}}});
        assert!(strict_schema(&nested).is_none());
    }

    #[test]
    fn a_loose_schema_is_sent_as_written_without_strict() {
        let spec = FunctionSpec::new("echo", "Echo.", json!({"type": "object"}));
        assert!(!spec.strict);
        let wire = spec.to_wire(Provider::Openai);
        assert_eq!(wire["strict"], json!(false));
        assert_eq!(wire["parameters"], json!({"type": "object"}));
    }

    #[test]
    fn provider_names_are_checked() {
        assert!(is_provider_name("memory__create_entities"));
        assert!(!is_provider_name(&"a".repeat(65)));
        assert!(!is_provider_name(""));
    }

    #[test]
    fn provider_parses_its_own_names() {
        for p in [Provider::Openai, Provider::OpenaiChat, Provider::Anthropic] {
            assert_eq!(p.as_str().parse::<Provider>(), Ok(p));
        }
        assert!("gemini".parse::<Provider>().unwrap_err().contains("gemini"));
    }
}
