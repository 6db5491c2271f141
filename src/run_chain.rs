//! The `run_chain` tool: the one tool an agent sees, as every carrier shows
//! it (the MCP server of `chainbox serve`, `chainbox tool-spec`, a
//! provider's tool list): its name, its description (the rules of a chain,
//! the policy's limits, then the stubs of the tools, or their index when
//! there are many, from [`crate::discovery`]), the schema of its one
//! argument and the schema of the [`ChainRunResult`](crate::ChainRunResult)
//! it returns. Above the stubs and discovery, which only render tools.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::policy::ChainPolicy;
use crate::tools::ToolRegistry;

/// The name of the one tool an agent sees: it runs a chain (defined with
/// the invoker, which refuses it inside chains).
pub use crate::invoker::RUN_CHAIN;

/// The `run_chain` tool as an agent is shown it, whatever carries it (the
/// MCP server of `chainbox serve`, a provider's tool list): its name, its
/// description (the rules of a chain, the policy's limits and the Python
/// stubs of every tool), the schema of its arguments (`{"code": string}`)
/// and the schema of what it returns (a [`ChainRunResult`](crate::ChainRunResult)).
#[derive(Debug, Clone, PartialEq)]
pub struct RunChainTool {
    /// Always [`RUN_CHAIN`].
    pub name: &'static str,
    /// What the model reads: how to write a chain, the limits it runs
    /// under, then the stubs of the tools it may call.
    pub description: String,
    /// JSON Schema of the arguments: one required string, `code`.
    pub input_schema: Value,
    /// JSON Schema of the result, a `ChainRunResult` object.
    pub output_schema: Value,
}

/// The `run_chain` tool over `registry` under `policy`: the one public place
/// its description is written, so every carrier shows the model the same
/// rules and limits.
pub fn run_chain_tool(registry: &ToolRegistry, policy: &ChainPolicy) -> RunChainTool {
    let mut description = String::from(
        "Runs a Python chain script in a sandbox and returns its answer. Write one short \
         script that calls the tools below as `async` functions (`await` each call, \
         `asyncio.gather` for independent ones) and combines their results: only the \
         answer comes back, not every intermediate result.\n\
         \n\
         What comes back: the value of the script's last expression as text (and as JSON \
         in `output`), its print() output in `stdout`, and one `call_trace` record per tool \
         call. A tool failure is a Python exception the script can catch (see the comments \
         below); an uncaught one fails the chain, reported in `error` with its type, \
         message and line.\n",
    );
    let _ = write!(
        description,
        "\nLimits of this server (a limit hit ends the chain; it cannot be caught):\n\
         - at most {calls} tool calls per chain\n\
         - {call_timeout} s per tool call, {total_timeout} s for the whole chain, {cpu} s of \
         CPU for the script itself\n\
         - {memory} MiB of memory; print() output kept up to {stdout} bytes\n\
         - tool results larger than {inline} bytes arrive as an artifact handle (see below)\n\
         - tools above `{risk}` risk need approval; a refusal is a PermissionError\n",
        calls = policy.max_tool_calls,
        call_timeout = seconds(policy.call_timeout_s),
        total_timeout = seconds(policy.total_timeout_s),
        cpu = seconds(policy.max_cpu_s),
        memory = policy.max_memory_bytes / (1024 * 1024),
        stdout = policy.max_stdout_bytes,
        inline = policy.max_inline_result_bytes,
        risk = policy.max_risk_unapproved,
    );
    description.push_str("\nThe tools, as Python stubs:\n\n");
    description.push_str(&crate::discovery::model_stubs(registry));
    RunChainTool {
        name: RUN_CHAIN,
        description,
        input_schema: json!({
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The Python chain script; its last expression is the answer."
                }
            },
            "required": ["code"],
            "additionalProperties": false
        }),
        output_schema: chain_result_schema(),
    }
}

impl RunChainTool {
    /// The tool of a server that keeps sessions (one with a chain store):
    /// an optional `session` argument (`"new"`, or the `session_id` a
    /// result named), and the description says what it keeps and for how
    /// long (`policy`'s `session_expires_s`, `max_session_cells`).
    #[must_use]
    pub fn with_sessions(mut self, policy: &ChainPolicy) -> Self {
        let _ = write!(
            self.description,
            "
Sessions: pass `session: \"new\"` and the result names a `session_id`; pass that              id with the next script and it runs as the next cell of a Python REPL: the              variables, functions, classes and imports earlier cells defined are there, and              their tool calls are not made again. A session expires {expires} s after its last              cell and holds at most {cells} cells; an expired or unknown session is an error              (kind `session`), never an empty session.\n",
            expires = seconds(policy.session_expires_s),
            cells = policy.max_session_cells,
        );
        if let Some(properties) = self.input_schema["properties"].as_object_mut() {
            properties.insert(
                "session".to_owned(),
                json!({
                    "type": "string",
                    "description": "\"new\" to start a session, or the session_id of an earlier result to run this script as its next cell."
                }),
            );
        }
        self
    }
}

/// A number of seconds as a person writes it: `60`, `0.5`.
fn seconds(s: f64) -> String {
    if s.fract() == 0.0 && s.abs() < 1e15 {
        format!("{}", s as i64)
    } else {
        format!("{s}")
    }
}

/// JSON Schema of a serialized [`ChainRunResult`](crate::ChainRunResult)
/// (the contract in DESIGN.md); a test checks real results against it.
pub fn chain_result_schema() -> Value {
    let artifact_ref = json!({"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"});
    let nullable_line = json!({"type": ["integer", "null"], "minimum": 1});
    json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["ok", "error", "timeout"]},
            "output": {"description": "The script's final value as JSON (null unless ok)."},
            "output_text": {"type": "string", "description": "The final value as text: a string as is, anything else as its repr."},
            "stdout": {"type": "string"},
            "error": {
                "type": ["object", "null"],
                "properties": {
                    "kind": {"type": "string", "enum": crate::result::ErrorKind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>()},
                    "type": {"type": "string"},
                    "message": {"type": "string"},
                    "line": nullable_line,
                    "traceback": {"type": "string"}
                },
                "required": ["kind", "type", "message", "line"]
            },
            "tool_calls": {"type": "integer", "minimum": 0},
            "duration_ms": {"type": "number", "minimum": 0},
            "call_trace": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "tool": {"type": "string"},
                        "args_digest": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                        "status": {"type": "string", "enum": ["ok", "error", "denied", "timeout"]},
                        "duration_ms": {"type": "number", "minimum": 0},
                        "artifact_ref": {"anyOf": [artifact_ref, {"type": "null"}]},
                        "error": {"type": "string"}
                    },
                    "required": ["tool", "args_digest", "status", "duration_ms", "artifact_ref"]
                }
            },
            "warnings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"message": {"type": "string"}, "line": nullable_line},
                    "required": ["message", "line"]
                }
            },
            "artifacts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "artifact_ref": artifact_ref,
                        "media_type": {"type": "string"},
                        "size": {"type": "integer", "minimum": 0}
                    },
                    "required": ["artifact_ref", "media_type", "size"]
                }
            },
            "files": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "media_type": {"type": "string"},
                        "artifact_ref": artifact_ref
                    },
                    "required": ["path", "media_type", "artifact_ref"]
                }
            },
            "usage": {
                "type": "object",
                "properties": {
                    "peak_memory_bytes": {"type": "integer", "minimum": 0},
                    "cpu_ms": {"type": "number", "minimum": 0},
                    "stdout_bytes": {"type": "integer", "minimum": 0},
                    "stdout_truncated": {"type": "boolean"}
                },
                "required": ["peak_memory_bytes", "cpu_ms", "stdout_bytes", "stdout_truncated"]
            }
        },
        "required": [
            "status", "output", "output_text", "stdout", "error", "tool_calls", "duration_ms",
            "call_trace", "warnings", "artifacts", "files", "usage"
        ]
    })
}
