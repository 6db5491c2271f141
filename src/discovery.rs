//! Progressive discovery: when a registry has too many tools for their stubs
//! to fit a prompt (a manifest wrapping several MCP servers easily has
//! 200), the model is shown each tool's name and a one-line summary, and the
//! script looks up the rest itself with two built-in tools:
//!
//! - `search_tools(query, limit=10)` — the tools whose name or description
//!   match the query's words, best first, each with its full Python stub;
//! - `describe_tool(name)` — one tool's stub, description, risk and input
//!   schema.
//!
//! Both are ordinary safe, local tools over a snapshot of the registry,
//! with no side effects. They go through the invoker like any call, so they
//! are **recorded in the trace and count against the call budget**: the
//! trace stays a complete account of what crossed the sandbox boundary, and
//! a script cannot make unbounded host work out of lookups.
//!
//! [`with_discovery`] adds them to a registry; [`tool_index`] renders the
//! short listing the model sees instead of the full stubs.

use std::fmt::Write;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::stubs::{one_line, tool_stub};
use crate::tools::{AnyTool, RegistryError, Tool, ToolContext, ToolError, ToolInfo, ToolOutput, ToolRegistry};

/// The built-in tool that searches the registry.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The built-in tool that describes one tool.
pub const DESCRIBE_TOOL: &str = "describe_tool";

/// Longest one-line summary in [`tool_index`], in characters: long enough
/// for a description's first sentence, short enough that 200 tools stay
/// under [`INDEX_BUDGET_BYTES`].
pub const SUMMARY_CHARS: usize = 80;

/// The documented size bound of [`tool_index`] for a registry of 200 tools
/// with names up to 40 characters: 32 KiB (about 8,000 tokens).
pub const INDEX_BUDGET_BYTES: usize = 32 * 1024;

/// Most results `search_tools` returns, whatever `limit` asks for.
const MAX_SEARCH_RESULTS: usize = 50;

/// Up to this many local tools, the model is shown every tool's full stub;
/// above it, [`tool_index`] and the discovery tools. 40 stubs are about
/// 40 KiB of prompt, already more than most agent runtimes budget for tools.
pub const FULL_STUBS_MAX_TOOLS: usize = 40;

/// `registry` as chains should see it: unchanged up to
/// [`FULL_STUBS_MAX_TOOLS`] local tools, with the discovery tools added
/// above that. The CLI and `chainbox serve` load every manifest through it,
/// so the tools a model is told about are the tools its chain can call.
pub fn for_chains(registry: ToolRegistry) -> Result<ToolRegistry, RegistryError> {
    let local = registry.iter().filter(|t| t.as_local().is_some()).count();
    if local > FULL_STUBS_MAX_TOOLS && !has_discovery(&registry) {
        with_discovery(&registry)
    } else {
        Ok(registry)
    }
}

/// Whether `registry` carries this module's `search_tools` (and so is shown
/// to the model as an index).
fn has_discovery(registry: &ToolRegistry) -> bool {
    registry
        .get(SEARCH_TOOLS)
        .and_then(AnyTool::as_local)
        .is_some_and(|t| t.source() == SOURCE)
}

/// What the model is shown about `registry`'s tools: the full Python stubs,
/// or, for a registry [`for_chains`] gave discovery tools, the stubs
/// preamble and [`tool_index`].
pub fn model_stubs(registry: &ToolRegistry) -> String {
    if has_discovery(registry) {
        format!(
            "{}
{}",
            crate::stubs::STUBS_PREAMBLE,
            tool_index(registry)
        )
    } else {
        crate::stubs::python_stubs(registry)
    }
}

/// The `source` of both discovery tools in call records.
const SOURCE: &str = "builtin:discovery";

/// `registry` plus `search_tools` and `describe_tool` over its local tools.
/// Fails if the registry already has tools of those names.
pub fn with_discovery(registry: &ToolRegistry) -> Result<ToolRegistry, RegistryError> {
    let tools: Arc<Vec<Arc<dyn Tool>>> = Arc::new(registry.iter().filter_map(AnyTool::as_local).cloned().collect());
    let search: Arc<dyn Tool> = Arc::new(SearchTools { tools: tools.clone() });
    let describe: Arc<dyn Tool> = Arc::new(DescribeTool { tools });
    ToolRegistry::from_tools(
        registry
            .iter()
            .cloned()
            .chain([AnyTool::Local(search), AnyTool::Local(describe)]),
    )
}

/// The short listing shown instead of full stubs: how to discover tools,
/// the two discovery stubs, then one comment line per other local tool
/// (`name — summary`).
pub fn tool_index(registry: &ToolRegistry) -> String {
    let mut out = String::from(
        "# There are too many tools to show in full. Below is each tool's name and what it\n\
         # does; before calling one, look up its parameters from the script:\n\
         #     found = await search_tools(\"create issue\")     # best matches, with full stubs\n\
         #     info = await describe_tool(\"github__create_issue\")\n\
         # Each lookup is recorded in the trace and counts against the call budget.\n",
    );
    let mut listed = Vec::new();
    for tool in registry.iter().filter_map(AnyTool::as_local) {
        match tool.name() {
            SEARCH_TOOLS | DESCRIBE_TOOL => {
                out.push('\n');
                out.push_str(&tool_stub(tool.as_ref()));
            }
            _ => listed.push(tool),
        }
    }
    out.push_str("\n# Tools:\n");
    for tool in listed {
        let _ = writeln!(out, "#   {} — {}", tool.name(), summary(tool.description()));
    }
    out
}

/// A description's first line, cut to [`SUMMARY_CHARS`].
fn summary(description: &str) -> String {
    let first = description.trim().lines().next().unwrap_or("");
    let line = one_line(first);
    if line.chars().count() <= SUMMARY_CHARS {
        return line;
    }
    let cut: String = line.chars().take(SUMMARY_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// What a lookup returns for one tool.
fn entry(tool: &dyn Tool, full: bool) -> Value {
    let mut out = json!({
        "name": tool.name(),
        "summary": summary(tool.description()),
        "stub": tool_stub(tool),
    });
    if full {
        out["description"] = json!(tool.description());
        out["risk"] = json!(tool.risk().as_str());
        out["input_schema"] = tool.input_schema().clone();
    }
    out
}

/// Lower-case words of `text`, split at anything not alphanumeric (so
/// `create_issue` and `createIssue`'s parts are found by "create").
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_lowercase();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// How well `tool` matches the query words: a word in the name counts
/// three, in the description one; a query word matches a tool word it
/// starts (so "entit" finds "entities").
fn score(tool: &dyn Tool, query: &[String]) -> usize {
    let name = words(tool.name());
    let description = words(tool.description());
    query
        .iter()
        .map(|q| {
            let in_name = name.iter().any(|w| w.starts_with(q.as_str()));
            let in_description = description.iter().any(|w| w.starts_with(q.as_str()));
            3 * usize::from(in_name) + usize::from(in_description)
        })
        .sum()
}

fn string_arg<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a str, ToolError> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::new(format!("`{name}` must be a string")))
}

/// `search_tools(query, limit=10)`.
struct SearchTools {
    tools: Arc<Vec<Arc<dyn Tool>>>,
}

static SEARCH_INFO: std::sync::LazyLock<ToolInfo> = std::sync::LazyLock::new(|| {
    let schema = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words to look for in tool names and descriptions."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS, "description": "Most results to return (default 10)."}
        },
        "required": ["query"],
        "additionalProperties": false
    });
    ToolInfo::new(
        SEARCH_TOOLS,
        "Find tools by what they do. Returns a list of {name, summary, stub}, best match first; \
         the stub is the tool's Python signature and docstring. No side effects.",
        schema,
    )
});

static DESCRIBE_INFO: std::sync::LazyLock<ToolInfo> = std::sync::LazyLock::new(|| {
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The tool's exact name."}},
        "required": ["name"],
        "additionalProperties": false
    });
    ToolInfo::new(
        DESCRIBE_TOOL,
        "Describe one tool: {name, summary, stub, description, risk, input_schema}. No side effects.",
        schema,
    )
});

#[async_trait]
impl Tool for SearchTools {
    fn info(&self) -> &ToolInfo {
        &SEARCH_INFO
    }
    fn source(&self) -> String {
        SOURCE.to_owned()
    }
    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let query = words(string_arg(&args, "query")?);
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(10, |n| usize::try_from(n).unwrap_or(MAX_SEARCH_RESULTS))
            .min(MAX_SEARCH_RESULTS);
        let mut ranked: Vec<(usize, usize, &Arc<dyn Tool>)> = self
            .tools
            .iter()
            .enumerate()
            .map(|(i, tool)| (score(tool.as_ref(), &query), i, tool))
            .filter(|(score, _, _)| query.is_empty() || *score > 0)
            .collect();
        // Best score first; registry order among equals, so results are stable.
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let found: Vec<Value> = ranked
            .into_iter()
            .take(limit)
            .map(|(_, _, tool)| entry(tool.as_ref(), false))
            .collect();
        Ok(ToolOutput::Value(Value::Array(found)))
    }
}

/// `describe_tool(name)`.
struct DescribeTool {
    tools: Arc<Vec<Arc<dyn Tool>>>,
}

#[async_trait]
impl Tool for DescribeTool {
    fn info(&self) -> &ToolInfo {
        &DESCRIBE_INFO
    }
    fn source(&self) -> String {
        SOURCE.to_owned()
    }
    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let name = string_arg(&args, "name")?;
        match self.tools.iter().find(|t| t.name() == name) {
            Some(tool) => Ok(ToolOutput::Value(entry(tool.as_ref(), true))),
            None => Err(ToolError::new(format!(
                "no tool named {name:?}; search_tools(query) finds tools by what they do"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_snake_and_camel_case() {
        assert_eq!(words("memory__create_entities"), ["memory", "create", "entities"]);
        assert_eq!(words("getTinyImage"), ["get", "tiny", "image"]);
        assert_eq!(words("Create an issue."), ["create", "an", "issue"]);
    }

    #[test]
    fn summaries_are_one_line_and_cut() {
        assert_eq!(summary("Adds numbers.\nMore detail."), "Adds numbers.");
        let long = "x".repeat(200);
        let cut = summary(&long);
        assert_eq!(cut.chars().count(), SUMMARY_CHARS);
        assert!(cut.ends_with('…'));
    }
}
