//! Upstream MCP servers as chainbox tools.
//!
//! An `[[mcp]]` entry of the tools manifest ([`McpServer`]) names a program
//! speaking MCP over stdio. [`McpUpstream::connect`] starts it, lists all
//! its tools (every page) and wraps each one as a local [`Tool`], so a chain
//! calls it like any other tool and the invoker polices every call (schema,
//! deny, risk and approval, timeout, result shaping). The client side of the
//! protocol is the official Rust SDK (`rmcp`); nothing here speaks JSON-RPC
//! by hand.
//!
//! **Names.** A server's tool `t` is registered as `{server}__{t}`, every
//! character of `t` that is not an ASCII letter, digit or `_` replaced by
//! `_` (`get-tiny-image` of server `everything` is `everything__get_tiny_image`).
//! Server names are identifiers without `__` (checked by the manifest), so
//! the prefix is unambiguous; two tools of one server that map to the same
//! name are an error naming both.
//!
//! **Results** ([`to_output`]):
//! - `isError: true` → a tool error (the script's `RuntimeError`), its text
//!   as the message;
//! - image and audio blocks, and embedded blob resources, → media blocks,
//!   which result shaping writes to `/workspace/media/<tool>_<n>.<ext>`; the
//!   script then gets `{"text", "files", ["structured"]}`; resource links
//!   arrive in its `json` list;
//! - else `structuredContent` → that value;
//! - else text blocks (and embedded text resources): a single block that
//!   parses as JSON → that value, otherwise the texts joined by `"\n"`; no
//!   content at all → `None`.
//!
//! **Lifecycle.** Servers start when the registry is built, not at their
//! first call: listing the tools needs the server anyway, and a server that
//! cannot start is reported at once, with the tail of its stderr, instead
//! of surfacing as a tool error inside some chain. One connection per
//! server is shared by all chains and calls (requests are multiplexed).
//! If the server dies, the call in flight gets a tool error; the next call
//! finds the connection closed and restarts the server, once per call (a
//! restart that fails is that call's tool error, and the call after it
//! tries again). Tools listed by a restarted server are not re-read: the
//! registry is fixed when built.
//!
//! Invariants:
//! - A server process never outlives its [`McpUpstream`] (or the last tool
//!   of it): it is spawned with `kill_on_drop` and leads its own process
//!   group, killed when its connection is dropped, so whatever it started
//!   dies too. Were chainbox killed outright, the server still sees its
//!   stdin close, which ends an MCP stdio server.
//! - Its environment is only `PATH` plus the entry's `env`: tool arguments
//!   come from model-written scripts, so, as for command tools, no host
//!   secret is passed along by accident.
//! - Its stderr is kept in a bounded buffer ([`MAX_STDERR_TAIL_BYTES`], the
//!   newest bytes); it only feeds error messages.
//! - Dropping a call's future (the invoker's per-call timeout, a cancelled
//!   chain) is safe: rmcp sends `notifications/cancelled` for the abandoned
//!   request, and the connection stays usable for the next call.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock as McpContent,
    Implementation, ResourceContents,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{Peer, ServiceError, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::chain::{MAX_ERROR_MESSAGE_CHARS, truncate_chars};
#[cfg(unix)]
use crate::tools::command::{ProcessGroup, confined_command};
use crate::tools::manifest::McpServer;
use crate::tools::{ContentBlock, Permission, Tool, ToolContext, ToolError, ToolExecutionResult, ToolOutput, ToolRisk};

/// How long a server may take to start: spawn, `initialize` and listing
/// its tools. Generous, for servers fetched by `npx` on first use; a call
/// that restarts a server is bounded by its own timeout as well.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How much of a server's stderr is kept for error messages: the newest
/// 4 KiB (messages are cut to [`MAX_ERROR_MESSAGE_CHARS`] anyway).
pub const MAX_STDERR_TAIL_BYTES: usize = 4 * 1024;

/// How long to wait, once a server has stopped, for the rest of its stderr
/// to be read, so the message quotes its last words.
const STDERR_SETTLE: Duration = Duration::from_millis(500);

/// The media type of an embedded blob resource that does not say.
const OCTET_STREAM: &str = "application/octet-stream";

/// Why an MCP server's tools could not be registered.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The entry has no program to run.
    #[error("mcp server `{server}`: `command` names no program")]
    NoCommand {
        /// The server.
        server: String,
    },
    /// The program could not be spawned (not found, not executable…).
    #[error("mcp server `{server}`: cannot start `{program}`: {source}")]
    Spawn {
        /// The server.
        server: String,
        /// The program.
        program: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// It started but did not complete the MCP handshake (it exited, or
    /// spoke something else than MCP on stdout).
    #[error("mcp server `{server}` failed to start: {reason}{}", stderr_suffix(.stderr))]
    Handshake {
        /// The server.
        server: String,
        /// What the client saw.
        reason: String,
        /// The tail of its stderr.
        stderr: String,
    },
    /// It did not finish starting within [`START_TIMEOUT`].
    #[error("mcp server `{server}` did not start within {}s{}", START_TIMEOUT.as_secs(), stderr_suffix(.stderr))]
    StartTimeout {
        /// The server.
        server: String,
        /// The tail of its stderr.
        stderr: String,
    },
    /// `tools/list` failed.
    #[error("mcp server `{server}`: listing its tools failed: {reason}{}", stderr_suffix(.stderr))]
    ListTools {
        /// The server.
        server: String,
        /// What the client saw.
        reason: String,
        /// The tail of its stderr.
        stderr: String,
    },
    /// Two of its tools map to the same chainbox name.
    #[error("mcp server `{server}`: tools `{first}` and `{second}` would both be named `{name}`")]
    Collision {
        /// The server.
        server: String,
        /// The chainbox name.
        name: String,
        /// One of its tools.
        first: String,
        /// The other.
        second: String,
    },
    /// `[mcp.tools.<name>]` names a tool the server does not have (a typo
    /// there would silently leave a tool allowed or mis-rated).
    #[error("mcp server `{server}`: `tools.{tool}` names no tool of the server (it has: {available})")]
    UnknownTool {
        /// The server.
        server: String,
        /// The name in the manifest.
        tool: String,
        /// The server's tools, comma-separated.
        available: String,
    },
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends with: {stderr}")
    }
}

/// The chainbox name of tool `tool` of server `server` (see the module docs).
pub fn tool_name(server: &str, tool: &str) -> String {
    let tool: String = tool
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
        .collect();
    format!("{server}__{tool}")
}

/// A started MCP server and the tools it offers. Dropping it (and every
/// tool taken from it) stops the server.
pub struct McpUpstream {
    link: Arc<ServerLink>,
    tools: Vec<Arc<dyn Tool>>,
    remote_names: Vec<String>,
}

impl McpUpstream {
    /// Starts `server`, lists all its tools and wraps the ones the entry
    /// does not deny. Call it inside the tokio runtime that will run the
    /// chains: the connection's task lives there.
    pub async fn connect(server: &McpServer) -> Result<McpUpstream, McpError> {
        let started = tokio::time::timeout(START_TIMEOUT, async {
            let connection = Connection::start(server).await?;
            let listed = connection.service.peer().list_all_tools().await;
            match listed {
                Ok(tools) => Ok((connection, tools)),
                Err(e) => Err(McpError::ListTools {
                    server: server.name.clone(),
                    reason: e.to_string(),
                    stderr: connection.stderr.after_exit().await,
                }),
            }
        })
        .await;
        let (connection, listed) = match started {
            Ok(started) => started?,
            Err(_) => {
                return Err(McpError::StartTimeout {
                    server: server.name.clone(),
                    stderr: String::new(),
                });
            }
        };
        for name in server.tools.keys() {
            if !listed.iter().any(|t| t.name == name.as_str()) {
                let available: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
                return Err(McpError::UnknownTool {
                    server: server.name.clone(),
                    tool: name.clone(),
                    available: available.join(", "),
                });
            }
        }
        let link = Arc::new(ServerLink {
            server: server.clone(),
            pid: AtomicU32::new(connection.pid.unwrap_or(0)),
            connection: tokio::sync::Mutex::new(Some(connection)),
            restarts: AtomicU32::new(0),
        });
        let mut taken: HashMap<String, String> = HashMap::new();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut remote_names = Vec::new();
        for listed in listed {
            let settings = server.tools.get(listed.name.as_ref()).cloned().unwrap_or_default();
            if settings.deny {
                continue;
            }
            let name = tool_name(&server.name, &listed.name);
            if let Some(first) = taken.insert(name.clone(), listed.name.to_string()) {
                return Err(McpError::Collision {
                    server: server.name.clone(),
                    name,
                    first,
                    second: listed.name.to_string(),
                });
            }
            let description = listed
                .description
                .as_deref()
                .or(listed.title.as_deref())
                .unwrap_or_default()
                .to_owned();
            remote_names.push(listed.name.to_string());
            tools.push(Arc::new(McpTool {
                link: Arc::clone(&link),
                name,
                remote: listed.name.to_string(),
                description,
                input_schema: Value::Object(listed.input_schema.as_ref().clone()),
                risk: settings.risk.unwrap_or(server.risk),
                permissions: settings.permissions.unwrap_or_else(|| server.permissions.clone()),
            }));
        }
        Ok(McpUpstream {
            link,
            tools,
            remote_names,
        })
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.link.server.name
    }

    /// Its tools, in the server's listing order (denied ones left out).
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// The server's own names of [`McpUpstream::tools`], in the same order.
    pub fn remote_names(&self) -> &[String] {
        &self.remote_names
    }

    /// Its tools, to put in a registry; the server lives as long as they do.
    pub fn into_tools(self) -> Vec<Arc<dyn Tool>> {
        self.tools
    }

    /// The process id of the server's current process, if it has one.
    pub fn pid(&self) -> Option<u32> {
        self.link.pid()
    }

    /// How many times the server has been restarted after dying.
    pub fn restarts(&self) -> u32 {
        self.link.restarts.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for McpUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpUpstream")
            .field("server", &self.link.server.name)
            .field("tools", &self.remote_names)
            .finish()
    }
}

/// One server's connection, shared by its tools.
struct ServerLink {
    server: McpServer,
    /// `None` only between a failed restart and the next attempt.
    connection: tokio::sync::Mutex<Option<Connection>>,
    /// The current process id, 0 when none (readable without the lock).
    pid: AtomicU32,
    restarts: AtomicU32,
}

impl ServerLink {
    fn pid(&self) -> Option<u32> {
        Some(self.pid.load(Ordering::Relaxed)).filter(|&pid| pid != 0)
    }

    /// A live connection's peer and stderr, restarting the server when its
    /// connection has closed.
    async fn peer(&self) -> Result<(Peer<RoleClient>, StderrTail), ToolError> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref()
            && !connection.service.peer().is_transport_closed()
        {
            return Ok((connection.service.peer().clone(), connection.stderr.clone()));
        }
        // Dead (or never restarted): drop what is left, killing its group.
        *slot = None;
        self.pid.store(0, Ordering::Relaxed);
        let name = &self.server.name;
        tracing::warn!(server = %name, "mcp server stopped; restarting it");
        let started = tokio::time::timeout(START_TIMEOUT, Connection::start(&self.server)).await;
        let connection = match started {
            Ok(Ok(connection)) => connection,
            Ok(Err(e)) => {
                return Err(ToolError::new(format!(
                    "mcp server `{name}` stopped and could not be restarted: {e}"
                )));
            }
            Err(_) => {
                return Err(ToolError::new(format!(
                    "mcp server `{name}` stopped and did not restart within {}s",
                    START_TIMEOUT.as_secs()
                )));
            }
        };
        self.restarts.fetch_add(1, Ordering::Relaxed);
        self.pid.store(connection.pid.unwrap_or(0), Ordering::Relaxed);
        let out = (connection.service.peer().clone(), connection.stderr.clone());
        *slot = Some(connection);
        Ok(out)
    }

    async fn call(&self, tool: &str, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let (peer, stderr) = self.peer().await?;
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        // `call_tool` sends `notifications/cancelled` if this future is dropped.
        match peer.call_tool(params).await {
            Ok(result) => to_output(result),
            Err(ServiceError::McpError(e)) => Err(ToolError::new(e.message.to_string())),
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                let tail = stderr_suffix(&stderr.after_exit().await);
                Err(ToolError::new(format!(
                    "mcp server `{}` stopped during the call{tail} (the next call restarts it)",
                    self.server.name
                )))
            }
            Err(e) => Err(ToolError::new(format!("mcp server `{}`: {e}", self.server.name))),
        }
    }
}

/// A running server: the rmcp client service over its stdio, the tail of
/// its stderr, and its process group. Dropping it stops the server.
struct Connection {
    // Field order is drop order: the service (closing stdin) first, the
    // process group (SIGKILL to all of it) last.
    service: RunningService<RoleClient, ClientConfig>,
    stderr: StderrTail,
    pid: Option<u32>,
    #[cfg(unix)]
    _group: Option<ProcessGroup>,
}

impl Connection {
    /// Spawns the server and completes the MCP handshake.
    async fn start(server: &McpServer) -> Result<Connection, McpError> {
        let Some((program, args)) = server.command.split_first() else {
            return Err(McpError::NoCommand {
                server: server.name.clone(),
            });
        };
        let working_dir = Some(server.working_dir.as_path()).filter(|dir| !dir.as_os_str().is_empty());
        let mut cmd = confined_command(program, args, working_dir);
        cmd.envs(&server.env);
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| McpError::Spawn {
                server: server.name.clone(),
                program: program.clone(),
                source,
            })?;
        let pid = transport.id();
        #[cfg(unix)]
        let group = pid.map(ProcessGroup);
        let stderr = StderrTail::capture(stderr);
        let config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("chainbox", env!("CARGO_PKG_VERSION")),
        );
        match config.serve(transport).await {
            Ok(service) => Ok(Connection {
                service,
                stderr,
                pid,
                #[cfg(unix)]
                _group: group,
            }),
            Err(e) => Err(McpError::Handshake {
                server: server.name.clone(),
                reason: e.to_string(),
                stderr: stderr.after_exit().await,
            }),
        }
    }
}

/// The newest [`MAX_STDERR_TAIL_BYTES`] of a server's stderr, read by a
/// task until the pipe closes. Cheap to clone.
#[derive(Clone)]
struct StderrTail {
    bytes: Arc<Mutex<VecDeque<u8>>>,
    closed: tokio::sync::watch::Receiver<bool>,
}

impl StderrTail {
    fn capture(stderr: Option<impl AsyncRead + Unpin + Send + 'static>) -> StderrTail {
        let bytes = Arc::new(Mutex::new(VecDeque::new()));
        let (done, closed) = tokio::sync::watch::channel(false);
        let Some(mut stderr) = stderr else {
            let _ = done.send(true);
            return StderrTail { bytes, closed };
        };
        let sink = Arc::clone(&bytes);
        // Ends when the pipe closes, that is when the server (and anything
        // it started that kept the pipe) is gone.
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut kept = sink.lock().unwrap_or_else(|p| p.into_inner());
                kept.extend(&buf[..n]);
                let excess = kept.len().saturating_sub(MAX_STDERR_TAIL_BYTES);
                kept.drain(..excess);
            }
            let _ = done.send(true);
        });
        StderrTail { bytes, closed }
    }

    /// The tail, once the pipe has closed (or after [`STDERR_SETTLE`]),
    /// trimmed and cut to fit an error message.
    async fn after_exit(&self) -> String {
        let mut closed = self.closed.clone();
        let _ = tokio::time::timeout(STDERR_SETTLE, closed.wait_for(|closed| *closed)).await;
        let bytes: Vec<u8> = self
            .bytes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .copied()
            .collect();
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim();
        let chars = text.chars().count();
        let max = MAX_ERROR_MESSAGE_CHARS / 2;
        if chars <= max {
            return text.to_owned();
        }
        let tail: String = text.chars().skip(chars - max).collect();
        format!("…{}", truncate_chars(&tail, max))
    }
}

/// One tool of an upstream server, as a local chainbox tool.
struct McpTool {
    link: Arc<ServerLink>,
    name: String,
    remote: String,
    description: String,
    input_schema: Value,
    risk: ToolRisk,
    permissions: Vec<Permission>,
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    fn risk(&self) -> ToolRisk {
        self.risk
    }

    fn permissions(&self) -> &[Permission] {
        &self.permissions
    }

    /// `mcp:SERVER/TOOL`, with the server's own tool name.
    fn source(&self) -> String {
        format!("mcp:{}/{}", self.link.server.name, self.remote)
    }

    async fn execute(&self, ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        tracing::debug!(server = %self.link.server.name, tool = %self.remote, run_id = %ctx.run_id, call_id = ctx.call_id, "mcp call");
        self.link.call(&self.remote, args).await
    }
}

/// What a `tools/call` result becomes for the script (see the module docs).
pub fn to_output(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut texts: Vec<String> = Vec::new();
    let mut blocks: Vec<ContentBlock> = Vec::new();
    let mut plain = true;
    for block in result.content {
        match block {
            McpContent::Text(text) => {
                texts.push(text.text.clone());
                blocks.push(ContentBlock::Text { text: text.text });
            }
            McpContent::Image(image) => {
                plain = false;
                blocks.push(ContentBlock::Image {
                    media_type: image.mime_type,
                    data: image.data,
                });
            }
            McpContent::Audio(audio) => {
                plain = false;
                blocks.push(ContentBlock::Media {
                    media_type: audio.mime_type,
                    data: audio.data,
                });
            }
            McpContent::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents { text, .. } => {
                    texts.push(text.clone());
                    blocks.push(ContentBlock::Text { text });
                }
                ResourceContents::BlobResourceContents { mime_type, blob, .. } => {
                    plain = false;
                    blocks.push(ContentBlock::Media {
                        media_type: mime_type.unwrap_or_else(|| OCTET_STREAM.to_owned()),
                        data: blob,
                    });
                }
                other => {
                    plain = false;
                    blocks.push(ContentBlock::Json {
                        json: serde_json::to_value(other).unwrap_or(Value::Null),
                    });
                }
            },
            other => {
                // Resource links, and block types newer than this code.
                plain = false;
                blocks.push(ContentBlock::Json {
                    json: serde_json::to_value(other).unwrap_or(Value::Null),
                });
            }
        }
    }
    if result.is_error == Some(true) {
        let message = match (texts.is_empty(), result.structured_content) {
            (false, _) => texts.join("\n"),
            (true, Some(structured)) => structured.to_string(),
            (true, None) => "the tool reported an error without a message".to_owned(),
        };
        return Err(ToolError::new(message));
    }
    if !plain {
        let mut structured_content = Map::new();
        match result.structured_content {
            Some(Value::Object(map)) => structured_content = map,
            Some(other) => blocks.push(ContentBlock::Json { json: other }),
            None => {}
        }
        return Ok(ToolOutput::Result(ToolExecutionResult {
            content: blocks,
            structured_content,
            ..ToolExecutionResult::default()
        }));
    }
    if let Some(structured) = result.structured_content {
        return Ok(ToolOutput::Value(structured));
    }
    Ok(ToolOutput::Value(match texts.len() {
        0 => Value::Null,
        1 => {
            let text = texts.swap_remove(0);
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        }
        _ => Value::String(texts.join("\n")),
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn output(result: Value) -> Result<ToolOutput, ToolError> {
        to_output(serde_json::from_value(result).expect("a CallToolResult"))
    }

    #[test]
    fn tool_names_map_non_identifier_characters_to_underscores() {
        assert_eq!(tool_name("everything", "get-tiny-image"), "everything__get_tiny_image");
        assert_eq!(tool_name("m", "read_graph"), "m__read_graph");
        assert_eq!(tool_name("m", "a.b c/é"), "m__a_b_c__");
    }

    #[test]
    fn structured_content_is_the_value() {
        let out = output(json!({"content": [{"type": "text", "text": "ignored"}], "structuredContent": {"a": 1}}));
        assert_eq!(out, Ok(ToolOutput::Value(json!({"a": 1}))));
    }

    #[test]
    fn a_single_json_text_block_is_its_value() {
        let out = output(json!({"content": [{"type": "text", "text": "[1, 2]"}]}));
        assert_eq!(out, Ok(ToolOutput::Value(json!([1, 2]))));
    }

    #[test]
    fn plain_text_blocks_are_joined_by_newlines() {
        let out = output(json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "{}"}]}));
        assert_eq!(out, Ok(ToolOutput::Value(json!("a\n{}"))));
        let out = output(json!({"content": [{"type": "text", "text": "hello"}]}));
        assert_eq!(out, Ok(ToolOutput::Value(json!("hello"))));
    }

    #[test]
    fn no_content_is_none() {
        assert_eq!(output(json!({"content": []})), Ok(ToolOutput::Value(Value::Null)));
    }

    #[test]
    fn is_error_is_a_tool_error_with_the_text() {
        let out = output(json!({"content": [{"type": "text", "text": "no such entity"}], "isError": true}));
        assert_eq!(out, Err(ToolError::new("no such entity")));
    }

    #[test]
    fn images_audio_and_blobs_become_media_blocks() {
        let out = output(json!({"content": [
            {"type": "text", "text": "here"},
            {"type": "image", "data": "iVBO", "mimeType": "image/png"},
            {"type": "audio", "data": "UklG", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "x:/a", "blob": "JVBE", "mimeType": "application/pdf"}},
            {"type": "resource", "resource": {"uri": "x:/b", "text": "inline"}},
        ]}));
        let Ok(ToolOutput::Result(result)) = out else {
            panic!("expected content blocks: {out:?}");
        };
        assert_eq!(
            result.content,
            vec![
                ContentBlock::Text { text: "here".into() },
                ContentBlock::Image {
                    media_type: "image/png".into(),
                    data: "iVBO".into()
                },
                ContentBlock::Media {
                    media_type: "audio/wav".into(),
                    data: "UklG".into()
                },
                ContentBlock::Media {
                    media_type: "application/pdf".into(),
                    data: "JVBE".into()
                },
                ContentBlock::Text { text: "inline".into() },
            ]
        );
        assert_eq!(result.text(), "here\ninline");
    }

    #[test]
    fn resource_links_arrive_as_json_blocks() {
        let out = output(json!({"content": [{"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"}]}));
        let Ok(ToolOutput::Result(result)) = out else {
            panic!("expected content blocks: {out:?}");
        };
        let [ContentBlock::Json { json }] = result.content.as_slice() else {
            panic!("expected one json block: {result:?}");
        };
        assert_eq!(json["uri"], "file:///a.txt");
    }
}
