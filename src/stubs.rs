//! What the model is shown: Python stubs for the tools a chain may call.
//!
//! [`python_stubs`] renders a registry as a short preamble (how a chain
//! script works, which exceptions it can catch, which Python features the
//! sandbox lacks) followed by one `async def` per local tool, with its
//! parameters typed from the tool's JSON Schema and its description as the
//! docstring.
//!
//! Invariants:
//! - The output is valid Python (a test parses it with `python3`).
//! - A stub's positional parameters are the schema's properties in written
//!   order, as the bridge maps positional arguments; when a required
//!   property follows an optional one, it and the rest become keyword-only,
//!   so the stub never suggests a positional call the bridge would misread.

use std::fmt::Write;

use serde_json::Value;

use crate::tools::{AnyTool, Tool, ToolRegistry, ToolRisk, is_identifier};

/// The comment block that opens the stubs: what a chain script is, its
/// errors, and which Python runs it.
pub const STUBS_PREAMBLE: &str = r#"# Tools you can call from a chain script.
#
# A chain script is Python run in a sandbox (the monty interpreter, a Python
# subset). Each tool below is an `async` function: call it with `await`.
#     w = await get_weather(city="Paris")
# Run independent calls concurrently with asyncio.gather:
#     import asyncio
#     a, b = await asyncio.gather(get_weather(city="Paris"), get_weather(city="Oslo"))
# Pass arguments by keyword (positional arguments follow the order shown).
# The value of the script's last expression is its result; print() output is
# captured and returned too.
#
# Errors a tool call can raise (catch them with try/except):
#   RuntimeError     the tool failed; the message says why
#   PermissionError  the call was denied by policy or by a human
#   TimeoutError     the call took too long
#   ValueError       the arguments do not match the tool's parameters
# Exceeding the call budget, memory or time ends the script; that cannot be caught.
#
# Large results arrive as a handle instead of the value:
#     {"artifact_ref": "sha256:...", "media_type": ..., "size": ..., "preview": ...}
# Pass the handle straight to another tool (it is resolved outside the sandbox),
# or call load_artifact(handle) (a plain function, no await) for the full value.
# Images and other media arrive as {"text": ..., "files": [{"path", "media_type",
# "artifact_ref"}]}; the files are under /workspace/media and open() reads them.
#
# The script runs on a fast Python subset (monty) when it can, and on full
# CPython 3.14 when it needs more (class inheritance and custom exceptions,
# generators, `statistics`, `dataclasses.asdict`, gather(return_exceptions=True),
# create_task...), chosen before it starts (unless the policy's `python` pins one).
# Standard library: json, re, math, statistics, datetime, itertools, collections,
# functools, asyncio, dataclasses, decimal, csv, io, textwrap, random, base64,
# hashlib and more. No network, no subprocesses; files only under /workspace.

from typing import Any, Literal
"#;

/// Python's reserved words: names a script cannot use as a function or
/// keyword-argument name.
const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
];

/// Whether `name` is a Python reserved word (`from`, `class`, `lambda`…),
/// which a script cannot use as an identifier.
pub fn is_python_keyword(name: &str) -> bool {
    PYTHON_KEYWORDS.contains(&name)
}

/// The Python stubs a model is shown for `registry`: [`STUBS_PREAMBLE`],
/// then an `async def` with a docstring for each local tool, in
/// registration order; hosted and provider-defined tools are listed in a
/// closing comment as not callable from chains.
pub fn python_stubs(registry: &ToolRegistry) -> String {
    let mut out = String::from(STUBS_PREAMBLE);
    let mut not_callable: Vec<&str> = Vec::new();
    for tool in registry.iter() {
        match tool {
            AnyTool::Local(tool) => {
                out.push_str("\n\n");
                out.push_str(&tool_stub(tool.as_ref()));
            }
            AnyTool::Hosted(_) | AnyTool::ProviderDefined(_) => not_callable.push(tool.name()),
        }
    }
    if !not_callable.is_empty() {
        out.push_str("\n\n# Not callable from chains (run by the model provider or outside chains):\n");
        for name in not_callable {
            let _ = writeln!(out, "#   {}", one_line(name));
        }
    }
    out
}

/// One parameter of a stub.
struct Param<'a> {
    name: &'a str,
    annotation: String,
    required: bool,
    description: Option<&'a str>,
}

/// A schema's parameters that are Python names, and the properties that
/// are not (passed as `**{...}`) with their descriptions.
type Parameters<'a> = (Vec<Param<'a>>, Vec<(&'a str, Option<&'a str>)>);

fn parameters(schema: &Value) -> Parameters<'_> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut params: Vec<Param<'_>> = Vec::new();
    let mut unnamed: Vec<(&str, Option<&str>)> = Vec::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let description = property.get("description").and_then(Value::as_str);
            if !is_identifier(name) || is_python_keyword(name) {
                unnamed.push((name, description));
                continue;
            }
            params.push(Param {
                name,
                annotation: python_type(property),
                required: required.contains(&name.as_str()),
                description,
            });
        }
    }
    (params, unnamed)
}

/// The parameter list of a stub: `**kwargs: Any` closes it when some
/// properties are not Python names or the schema admits properties it
/// does not list (`additionalProperties`; with `open_unless_closed`, also
/// when the schema does not say, as JSON Schema reads it).
fn signature(
    schema: &Value,
    params: &[Param<'_>],
    unnamed: &[(&str, Option<&str>)],
    open_unless_closed: bool,
) -> String {
    let mut signature: Vec<String> = Vec::new();
    let mut seen_optional = false;
    let mut keyword_only = false;
    for param in params {
        if param.required && seen_optional && !keyword_only {
            signature.push("*".into());
            keyword_only = true;
        }
        if param.required {
            signature.push(format!("{}: {}", param.name, param.annotation));
        } else {
            seen_optional = true;
            signature.push(format!("{}: {} = None", param.name, optional(&param.annotation)));
        }
    }
    let open = match schema.get("additionalProperties") {
        Some(Value::Bool(open)) => *open,
        Some(Value::Object(_)) => true,
        Some(_) => false,
        None => open_unless_closed,
    };
    if !unnamed.is_empty() || open {
        signature.push("**kwargs: Any".into());
    }
    signature.join(", ")
}

/// A tool's call signature as its stub declares it,
/// `search(query: str, limit: int | None = None)`.
pub fn tool_signature(tool: &dyn Tool) -> String {
    let schema = tool.input_schema();
    let (params, unnamed) = parameters(schema);
    format!("{}({})", tool.name(), signature(schema, &params, &unnamed, false))
}

/// What the check before the run ([`crate::check`]) reads with a script:
/// each local tool's signature, and the functions the sandbox defines. A
/// schema that does not close its properties takes unknown arguments, as
/// the invoker's validation does; a hosted or provider-defined tool takes
/// anything (the run denies the call, catchably).
pub fn checker_stubs(registry: &ToolRegistry) -> String {
    let mut out = String::from("from typing import Any, Literal\n\ndef load_artifact(handle: Any) -> Any: ...\n");
    for tool in registry.iter() {
        let name = tool.name();
        if !is_identifier(name) || is_python_keyword(name) {
            continue;
        }
        let signature = match tool {
            AnyTool::Local(tool) => {
                let schema = tool.input_schema();
                let (params, unnamed) = parameters(schema);
                signature(schema, &params, &unnamed, true)
            }
            AnyTool::Hosted(_) | AnyTool::ProviderDefined(_) => "*args: Any, **kwargs: Any".to_owned(),
        };
        let _ = writeln!(out, "async def {name}({signature}) -> Any: ...");
    }
    out
}

/// The `async def` of one tool, with its docstring (what
/// [`python_stubs`] shows for each local tool).
pub fn tool_stub(tool: &dyn Tool) -> String {
    let schema = tool.input_schema();
    let (params, unnamed) = parameters(schema);
    let signature = signature(schema, &params, &unnamed, false);

    let mut doc: Vec<String> = Vec::new();
    let description = tool.description().trim();
    if !description.is_empty() {
        doc.extend(description.lines().map(str::to_owned));
    }
    if tool.risk() > ToolRisk::Safe {
        push_paragraph(&mut doc);
        doc.push(format!("Risk: {} (needs approval)", tool.risk()));
    }
    // A parameter is listed under `Args:` when it has a description or a
    // shape (the keys of the objects it holds, which its annotation,
    // `dict` or `list[dict]`, does not show).
    let described: Vec<(&str, Option<&str>, Option<String>)> = params
        .iter()
        .filter_map(|p| {
            let shape = properties_of(schema, p.name).and_then(shape);
            (p.description.is_some() || shape.is_some()).then_some((p.name, p.description, shape))
        })
        .collect();
    if !described.is_empty() || !unnamed.is_empty() {
        push_paragraph(&mut doc);
        doc.push("Args:".into());
        for (name, description, shape) in described {
            let line = match (shape, description) {
                (Some(shape), Some(d)) => format!("    {name} ({shape}): {}", one_line(d)),
                (Some(shape), None) => format!("    {name} ({shape})"),
                (None, Some(d)) => format!("    {name}: {}", one_line(d)),
                (None, None) => continue,
            };
            doc.push(line);
        }
        for (name, description) in &unnamed {
            let note = format!("not a Python name; pass it as **{{{}: ...}}", json_string(name));
            match description {
                Some(d) => doc.push(format!("    {}: {} ({note})", one_line(name), one_line(d))),
                None => doc.push(format!("    {}: ({note})", one_line(name))),
            }
        }
    }

    let mut out = format!("async def {}({signature}) -> Any:\n", tool.name());
    if doc.is_empty() {
        out.push_str("    ...\n");
        return out;
    }
    let mut body = String::new();
    for (i, line) in doc.iter().enumerate() {
        if i > 0 {
            body.push('\n');
            if !line.trim().is_empty() {
                body.push_str("    ");
            }
        }
        body.push_str(&docstring_escape(line.trim_end()));
    }
    if doc.len() > 1 {
        body.push_str("\n    ");
    } else if body.ends_with('"') {
        // `"""Says "hi""""` would end the string one quote early.
        body.pop();
        body.push_str("\\\"");
    }
    let _ = writeln!(out, "    \"\"\"{body}\"\"\"");
    out
}

fn push_paragraph(doc: &mut Vec<String>) {
    if !doc.is_empty() {
        doc.push(String::new());
    }
}

/// `annotation | None`, unless it already admits `None`.
fn optional(annotation: &str) -> String {
    if annotation == "Any" || annotation == "None" || annotation.ends_with("| None") {
        annotation.to_owned()
    } else {
        format!("{annotation} | None")
    }
}

/// The Python annotation for a property's JSON Schema.
fn python_type(schema: &Value) -> String {
    if let Some(choices) = schema.get("enum").and_then(Value::as_array) {
        return literal(choices).unwrap_or_else(|| "Any".into());
    }
    if let Some(value) = schema.get("const") {
        return literal(std::slice::from_ref(value)).unwrap_or_else(|| "Any".into());
    }
    match schema.get("type") {
        Some(Value::String(name)) => simple_type(name, schema),
        Some(Value::Array(names)) => {
            let mut parts: Vec<String> = Vec::new();
            for name in names {
                match name.as_str().map(|n| simple_type(n, schema)) {
                    Some(part) if part != "Any" => {
                        if !parts.contains(&part) {
                            parts.push(part);
                        }
                    }
                    _ => return "Any".into(),
                }
            }
            if parts.is_empty() {
                "Any".into()
            } else {
                parts.join(" | ")
            }
        }
        _ => "Any".into(),
    }
}

fn simple_type(name: &str, schema: &Value) -> String {
    match name {
        "string" => "str".into(),
        "integer" => "int".into(),
        "number" => "float".into(),
        "boolean" => "bool".into(),
        "null" => "None".into(),
        "object" => "dict".into(),
        "array" => match schema.get("items").map(python_type) {
            Some(item) if item != "Any" => format!("list[{item}]"),
            _ => "list".into(),
        },
        _ => "Any".into(),
    }
}

/// The schema of property `name` of an object schema.
fn properties_of<'a>(schema: &'a Value, name: &str) -> Option<&'a Value> {
    schema.get("properties")?.get(name)
}

/// Most characters of one parameter's shape: a wide or deep schema is cut
/// (ending in `…`), so no tool's schema can flood the model's context.
const MAX_SHAPE_CHARS: usize = 400;

/// Deepest nesting of objects a shape spells out; deeper ones read `dict`.
const MAX_SHAPE_DEPTH: usize = 3;

/// The keys a parameter's objects must and may have, TypedDict-style
/// (`list[{"name": str, "tags": NotRequired[list[str]]}]`), for a schema
/// that is, or holds in arrays, an object with `properties`; `None` for
/// any other (its annotation says all there is). Without it a model learns
/// the required keys of `memory__create_entities` only from an error.
fn shape(schema: &Value) -> Option<String> {
    let shape = render_shape(schema, 0);
    if !shape.contains('{') {
        return None;
    }
    if shape.chars().count() <= MAX_SHAPE_CHARS {
        return Some(shape);
    }
    let mut cut: String = shape.chars().take(MAX_SHAPE_CHARS - 1).collect();
    cut.push('…');
    Some(cut)
}

/// [`shape`] of `schema`, `depth` objects down.
fn render_shape(schema: &Value, depth: usize) -> String {
    let properties = schema.get("properties").and_then(Value::as_object);
    match properties {
        Some(properties) if !properties.is_empty() && depth < MAX_SHAPE_DEPTH => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let keys: Vec<String> = properties
                .iter()
                .map(|(key, property)| {
                    let value = render_shape(property, depth + 1);
                    if required.contains(&key.as_str()) {
                        format!("{}: {value}", json_string(key))
                    } else {
                        format!("{}: NotRequired[{value}]", json_string(key))
                    }
                })
                .collect();
            format!("{{{}}}", keys.join(", "))
        }
        _ if schema.get("type").and_then(Value::as_str) == Some("array") => {
            match schema.get("items").map(|items| render_shape(items, depth)) {
                Some(item) if item != "Any" => format!("list[{item}]"),
                _ => "list".into(),
            }
        }
        _ => python_type(schema),
    }
}

/// `Literal[...]` of JSON scalars, or `None` if a choice is not a scalar.
fn literal(choices: &[Value]) -> Option<String> {
    let mut parts: Vec<String> = Vec::with_capacity(choices.len());
    for choice in choices {
        parts.push(match choice {
            Value::String(s) => json_string(s),
            Value::Number(n) => n.to_string(),
            Value::Bool(true) => "True".into(),
            Value::Bool(false) => "False".into(),
            Value::Null => "None".into(),
            Value::Array(_) | Value::Object(_) => return None,
        });
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!("Literal[{}]", parts.join(", ")))
}

/// A JSON string literal, which is also a valid Python string literal.
fn json_string(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// Text safe inside a `"""` docstring: no backslash escapes, no closing quotes.
fn docstring_escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"")
}

/// Text on one line (descriptions inside an `Args:` list or a comment).
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use serde_json::{Map, json};

    use super::*;
    use crate::tools::{HostedTool, ToolContext, ToolError, ToolInfo, ToolOutput};

    struct Fake(ToolInfo);

    #[async_trait]
    impl Tool for Fake {
        fn info(&self) -> &ToolInfo {
            &self.0
        }
        async fn execute(&self, _: ToolContext, _: Map<String, Value>) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::Value(Value::Null))
        }
    }

    fn fake(name: &'static str, schema: Value) -> Arc<dyn Tool> {
        Arc::new(Fake(ToolInfo::new(name, "Does a thing.", schema)))
    }

    fn stub_of(tool: Arc<dyn Tool>) -> String {
        tool_stub(tool.as_ref())
    }

    fn weather() -> Arc<dyn Tool> {
        Arc::new(Fake(ToolInfo::new(
            "get_weather",
            "Current weather for a city.",
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Paris"},
                    "units": {"type": "string", "enum": ["c", "f"], "description": "Temperature units"}
                },
                "required": ["city"]
            }),
        )))
    }

    #[test]
    fn a_schema_open_to_more_properties_ends_its_stub_in_kwargs() {
        let open = fake(
            "tag",
            json!({"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": true}),
        );
        assert!(stub_of(open).starts_with("async def tag(id: int | None = None, **kwargs: Any) -> Any:"));
        let unsaid = fake(
            "tag",
            json!({"type": "object", "properties": {"id": {"type": "integer"}}}),
        );
        assert!(stub_of(unsaid).starts_with("async def tag(id: int | None = None) -> Any:"));
    }

    #[test]
    fn stub_has_typed_signature_and_docstring() {
        let expected = "async def get_weather(city: str, units: Literal[\"c\", \"f\"] | None = None) -> Any:\n    \
                        \"\"\"Current weather for a city.\n\n    \
                        Args:\n        \
                        city: City name, e.g. Paris\n        \
                        units: Temperature units\n    \
                        \"\"\"\n";
        assert_eq!(stub_of(weather()), expected);
    }

    #[test]
    fn json_schema_types_map_to_python_types() {
        let cases = [
            (json!({"type": "string"}), "str"),
            (json!({"type": "integer"}), "int"),
            (json!({"type": "number"}), "float"),
            (json!({"type": "boolean"}), "bool"),
            (json!({"type": "object"}), "dict"),
            (json!({"type": "array"}), "list"),
            (json!({"type": "array", "items": {"type": "string"}}), "list[str]"),
            (
                json!({"type": "array", "items": {"type": "array", "items": {"type": "number"}}}),
                "list[list[float]]",
            ),
            (
                json!({"enum": ["a", "b", 3, true, null]}),
                "Literal[\"a\", \"b\", 3, True, None]",
            ),
            (json!({"const": "x"}), "Literal[\"x\"]"),
            (json!({"type": ["string", "null"]}), "str | None"),
            (json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}), "Any"),
            (json!({}), "Any"),
            (json!({"enum": [{"a": 1}]}), "Any"),
        ];
        for (schema, expected) in cases {
            assert_eq!(python_type(&schema), expected, "{schema}");
        }
    }

    #[test]
    fn required_parameters_come_before_optional_ones_when_schema_allows() {
        let tool = fake(
            "list_orders",
            json!({"type": "object", "properties": {"customer_id": {"type": "string"}, "status": {"type": "string"}}, "required": ["customer_id"]}),
        );
        assert!(
            stub_of(tool).starts_with("async def list_orders(customer_id: str, status: str | None = None) -> Any:")
        );
    }

    #[test]
    fn required_after_optional_becomes_keyword_only() {
        let tool = fake(
            "search",
            json!({"type": "object", "properties": {"limit": {"type": "integer"}, "query": {"type": "string"}}, "required": ["query"]}),
        );
        assert!(stub_of(tool).starts_with("async def search(limit: int | None = None, *, query: str) -> Any:"));
    }

    #[test]
    fn risky_tool_docstring_says_it_needs_approval() {
        let tool: Arc<dyn Tool> = Arc::new(Fake(
            ToolInfo::new("send_email", "Sends an email.", json!({"type": "object"})).with_risk(ToolRisk::High),
        ));
        assert!(stub_of(tool).contains("Sends an email.\n\n    Risk: high (needs approval)\n"));
    }

    #[test]
    fn tool_without_parameters_or_description_is_a_bare_stub() {
        let tool: Arc<dyn Tool> = Arc::new(Fake(ToolInfo::new("now", "", json!({"type": "object"}))));
        assert_eq!(stub_of(tool), "async def now() -> Any:\n    ...\n");
    }

    /// `create_entities` of the MCP memory server, as it lists it.
    fn create_entities() -> Arc<dyn Tool> {
        fake(
            "memory__create_entities",
            json!({"type": "object", "properties": {"entities": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The name of the entity"},
                    "entityType": {"type": "string"},
                    "observations": {"type": "array", "items": {"type": "string"}},
                    "note": {"type": "string"}
                },
                "required": ["name", "entityType", "observations"]
            }, "description": "Entities to create"}}, "required": ["entities"]}),
        )
    }

    #[test]
    fn nested_object_parameters_show_their_keys_in_the_docstring() {
        let stub = stub_of(create_entities());
        assert!(
            stub.starts_with("async def memory__create_entities(entities: list[dict]) -> Any:"),
            "{stub}"
        );
        assert!(
            stub.contains(
                "entities (list[{\"name\": str, \"entityType\": str, \"observations\": list[str], \
                 \"note\": NotRequired[str]}]): Entities to create"
            ),
            "{stub}"
        );
    }

    #[test]
    fn an_object_parameter_without_a_description_still_shows_its_keys() {
        let tool = fake(
            "search",
            json!({"type": "object", "properties": {"filter": {"type": "object", "properties": {"tag": {"type": "string"}}}}}),
        );
        let stub = stub_of(tool);
        assert!(stub.contains("    filter ({\"tag\": NotRequired[str]})\n"), "{stub}");
    }

    #[test]
    fn shapes_are_bounded_in_depth_and_size() {
        let mut deep = json!({"type": "string"});
        for i in 0..10 {
            deep = json!({"type": "object", "properties": {format!("k{i}"): deep}, "required": [format!("k{i}")]});
        }
        assert_eq!(shape(&deep).as_deref(), Some("{\"k9\": {\"k8\": {\"k7\": dict}}}"));
        let wide: serde_json::Map<String, Value> = (0..1000)
            .map(|i| (format!("key{i}"), json!({"type": "integer"})))
            .collect();
        let wide = shape(&json!({"type": "object", "properties": wide})).expect("a shape");
        assert_eq!(wide.chars().count(), MAX_SHAPE_CHARS);
        assert!(wide.ends_with('…'), "{wide}");
    }

    #[test]
    fn flat_parameters_have_no_shape() {
        assert_eq!(shape(&json!({"type": "array", "items": {"type": "string"}})), None);
        assert_eq!(shape(&json!({"type": "object"})), None);
        assert_eq!(shape(&json!({"type": "string"})), None);
    }

    #[test]
    fn non_identifier_properties_go_to_kwargs() {
        let tool = fake(
            "convert",
            json!({"type": "object", "properties": {"from": {"type": "string"}}}),
        );
        let stub = stub_of(tool);
        assert!(stub.starts_with("async def convert(**kwargs: Any) -> Any:"), "{stub}");
        assert!(
            stub.contains("from: (not a Python name; pass it as **{\"from\": ...})"),
            "{stub}"
        );
    }

    #[test]
    fn non_local_tools_are_listed_as_not_callable() {
        let hosted = AnyTool::Hosted(HostedTool {
            name: "web_search".into(),
            description: "Searches the web.".into(),
            provider_specs: Default::default(),
        });
        let registry = ToolRegistry::from_tools([AnyTool::Local(weather()), hosted]).expect("registry");
        let stubs = python_stubs(&registry);
        assert!(stubs.contains("# Not callable from chains"), "{stubs}");
        assert!(stubs.contains("#   web_search\n"), "{stubs}");
        assert!(!stubs.contains("def web_search"), "{stubs}");
    }

    #[test]
    fn preamble_names_the_errors_a_script_can_catch() {
        for name in [
            "RuntimeError",
            "PermissionError",
            "TimeoutError",
            "ValueError",
            "asyncio.gather",
            "CPython 3.14",
        ] {
            assert!(STUBS_PREAMBLE.contains(name), "{name}");
        }
    }

    #[test]
    fn python_keywords_are_recognised() {
        assert!(is_python_keyword("from"));
        assert!(is_python_keyword("lambda"));
        assert!(!is_python_keyword("match"), "soft keywords are valid names");
        assert!(!is_python_keyword("city"));
    }

    #[test]
    fn stubs_are_valid_python() {
        let awkward: Arc<dyn Tool> = Arc::new(Fake(
            ToolInfo::new(
                "awkward",
                "Quotes \"\"\" and a backslash \\ and\n  a second line.",
                json!({
                    "type": "object",
                    "properties": {
                        "opt": {"type": "integer", "description": "line one\nline two"},
                        "req": {"type": ["array", "null"], "items": {"enum": ["x\"y", "\\"]}},
                        "class": {"type": "string"},
                        "nested": {"type": "object", "properties": {"k\"\"\"\\": {"type": "string"}}}
                    },
                    "required": ["req"]
                }),
            )
            .with_risk(ToolRisk::Critical),
        ));
        let quoted: Arc<dyn Tool> = Arc::new(Fake(ToolInfo::new("quoted", "Says \"hi\"", json!({"type": "object"}))));
        let mut tools = vec![awkward, quoted];
        tools.extend(
            crate::demo::demo_registry()
                .iter()
                .filter_map(|t| t.as_local().cloned()),
        );
        let registry = ToolRegistry::from_local(tools).expect("registry");
        let stubs = python_stubs(&registry);
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("stubs.py");
        std::fs::write(&path, &stubs).expect("write stubs");
        let output = std::process::Command::new("python3")
            .args(["-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())"])
            .arg(&path)
            .output()
            .expect("python3 runs");
        assert!(
            output.status.success(),
            "{}\n{stubs}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
