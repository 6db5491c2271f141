//! Upstream MCP servers as chainbox tools.
//!
//! An `[[mcp]]` entry of the tools manifest ([`McpServer`]) names a program
//! speaking MCP over stdio. [`McpUpstream::connect`] starts it, lists all
//! its tools (every page) and wraps each one as a local [`Tool`], so a chain
//! calls it like any other tool and the invoker polices every call (schema,
//! deny, risk and approval, timeout, result shaping). The client side of the
//! protocol is the official Rust SDK (`rmcp`); only the line framing of
//! stdio is ours (`upstream/transport.rs`), to fail a call at once on a
//! message rmcp would drop.
//!
//! **Names.** A server's tool `t` is registered as `{server}__{t}`, every
//! character of `t` that is not an ASCII letter, digit or `_` replaced by
//! `_` (`get-tiny-image` of server `everything` is `everything__get_tiny_image`).
//! Server names are identifiers without `__` (checked by the manifest), so
//! the prefix is unambiguous; two tools of one server that map to the same
//! name are an error naming both.
//!
//! **Trust.** A tool's results are untrusted ([`crate::flow`]) when its
//! `[mcp.tools.NAME]` says `output = "untrusted"`, else when the entry's
//! `output` does, else when the server annotates the tool
//! `openWorldHint: true` (it reaches the open world: the web, mail). Its
//! guarded arguments are its settings' `guarded_args`, each a property of
//! the input schema the server lists (else the registry fails, naming it).
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
//! of surfacing as a tool error inside some chain. All servers start at
//! once; each has its entry's `start_timeout_s` (default [`START_TIMEOUT`](super::config::START_TIMEOUT))
//! to spawn, answer `initialize` and list its tools, and the first that
//! fails or runs out of time fails the registry, quoting its stderr (fail
//! fast: a registry never holds a server that is not up). One connection
//! per server is shared by all chains and calls (requests are multiplexed).
//! If the server dies, the call in flight gets a tool error; the next call
//! finds the connection closed and restarts the server, once per call (a
//! restart that fails is that call's tool error, and the call after it
//! tries again). Tools listed by a restarted server are not re-read: the
//! registry is fixed when built.
//!
//! **Hung servers.** A call abandoned before its answer (the invoker's
//! per-call timeout, a cancelled chain) may mean the server no longer
//! reads its input. The link then sends it a `ping` with [`PING_TIMEOUT`]
//! before any further call is sent; a server that does not answer is
//! stopped and restarted like a dead one (calls still in flight on it fail
//! at once, saying why), so a stuck server costs one call timeout, not one
//! per call forever. A server that answers the ping keeps running.
//!
//! **Bad messages.** The server's stdout goes through our own line
//! transport (`upstream/transport.rs`), which turns a message rmcp would
//! drop (over [`MAX_MESSAGE_BYTES`], not JSON or UTF-8, nested too deep, a
//! wrong id, a response without a result, a `tools/call` answered with
//! something that is no tool result) into an immediate error of the call
//! concerned, naming what came, instead of a call timeout; the connection
//! stays up.
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
//!   request, and the connection stays usable for the next call once the
//!   server has answered the ping above.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest, ContentBlock as McpContent,
    Implementation, PingRequest, RequestMetaObject, ResourceContents, ToolAnnotations,
};
use rmcp::service::{ClientInitializeError, RoleClient, RunningService};
use rmcp::{Peer, ServiceError, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;

use super::config::{McpServer, McpToolSettings};
use crate::result::MAX_ERROR_MESSAGE_CHARS;
#[cfg(unix)]
use crate::tools::command::{ProcessGroup, confined_command};
use crate::tools::{
    ContentBlock, OutputTrust, Tool, ToolContext, ToolError, ToolExecutionResult, ToolInfo, ToolOutput,
};
use crate::util::truncate_chars;

mod transport;

pub use transport::MAX_MESSAGE_BYTES;
use transport::{LineTransport, is_transport_fault};

/// How long a server has to answer the `ping` sent after a call to it was
/// abandoned, before it is taken for hung and restarted. A server that
/// still reads its input answers a ping in milliseconds; the margin is for
/// a loaded machine, and every call waits for the verdict.
pub const PING_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// It did not finish starting within its start timeout (`start_timeout_s`).
    #[error(
        "mcp server `{server}` did not start within {}s (its `start_timeout_s`){}",
        timeout.as_secs_f64(),
        stderr_suffix(.stderr)
    )]
    StartTimeout {
        /// The server.
        server: String,
        /// The time it had.
        timeout: Duration,
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
    /// `[mcp.tools.<name>]`'s `guarded_args` names an argument the tool's
    /// input schema does not have.
    #[error(
        "mcp server `{server}`: `tools.{tool}.guarded_args[{index}]`: `{arg}` is not a property of the tool's input schema (it has: {available})"
    )]
    GuardedArg {
        /// The server.
        server: String,
        /// The server's name of the tool.
        tool: String,
        /// The entry's position in `guarded_args`, from 0.
        index: usize,
        /// The name given.
        arg: String,
        /// The schema's properties, comma-separated.
        available: String,
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

/// Whether a listed tool's results are untrusted: its own setting's
/// `output`, else the server's, else its `openWorldHint` annotation.
fn untrusted(settings: &McpToolSettings, server: &McpServer, annotations: Option<&ToolAnnotations>) -> bool {
    match settings.output.or(server.output) {
        Some(output) => output == OutputTrust::Untrusted,
        None => annotations.and_then(|a| a.open_world_hint) == Some(true),
    }
}

/// Checks that every name in `guarded` is a property of `schema`; else the
/// index of the first that is not, and the properties there are.
fn check_guarded_args(guarded: &[String], schema: &Value) -> Result<(), (usize, String)> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let has = |arg: &str| properties.is_some_and(|p| p.contains_key(arg));
    match guarded.iter().position(|arg| !has(arg)) {
        None => Ok(()),
        Some(index) => {
            let available: Vec<&str> = properties
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            Err((index, available.join(", ")))
        }
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
        let deadline = deadline_after(server.start_timeout);
        let connection = Connection::start(server, deadline).await?;
        let listed = tokio::time::timeout_at(deadline, connection.service.peer().list_all_tools()).await;
        let listed = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => {
                let stderr = connection.vitals.stderr.clone();
                drop(connection);
                let reason = match e {
                    ServiceError::McpError(data) if is_transport_fault(&data) => format!("it {}", data.message),
                    e => e.to_string(),
                };
                return Err(McpError::ListTools {
                    server: server.name.clone(),
                    reason,
                    stderr: stderr.after_exit().await,
                });
            }
            Err(_) => {
                let stderr = connection.vitals.stderr.clone();
                drop(connection);
                return Err(McpError::StartTimeout {
                    server: server.name.clone(),
                    timeout: server.start_timeout,
                    stderr: stderr.after_exit().await,
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
            suspect: AtomicBool::new(false),
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
            let schema = Value::Object(listed.input_schema.as_ref().clone());
            if let Some(guarded) = &settings.guarded_args {
                check_guarded_args(guarded, &schema).map_err(|(index, available)| McpError::GuardedArg {
                    server: server.name.clone(),
                    tool: listed.name.to_string(),
                    index,
                    arg: guarded.get(index).cloned().unwrap_or_default(),
                    available,
                })?;
            }
            let mut info = ToolInfo::new(name, description, schema)
                .with_risk(settings.risk.unwrap_or(server.risk))
                .with_permissions(
                    settings
                        .permissions
                        .clone()
                        .unwrap_or_else(|| server.permissions.clone()),
                );
            if untrusted(&settings, server, listed.annotations.as_ref()) {
                info = info.with_untrusted_output();
            }
            if let Some(guarded) = settings.guarded_args {
                info = info.with_guarded_args(guarded);
            }
            remote_names.push(listed.name.to_string());
            tools.push(Arc::new(McpTool {
                link: Arc::clone(&link),
                info,
                remote: listed.name.to_string(),
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
    /// `None` only between a stop (a failed restart, a failed ping) and the
    /// next attempt.
    connection: tokio::sync::Mutex<Option<Connection>>,
    /// The current process id, 0 when none (readable without the lock).
    pid: AtomicU32,
    restarts: AtomicU32,
    /// A call was abandoned since the last check: ping the server before
    /// the next call is sent (see "Hung servers" in the module docs).
    suspect: AtomicBool,
}

impl ServerLink {
    fn pid(&self) -> Option<u32> {
        Some(self.pid.load(Ordering::Relaxed)).filter(|&pid| pid != 0)
    }

    /// A live connection's peer and what a call's error messages need,
    /// checking a suspect server first and restarting one that has stopped.
    async fn peer(&self) -> Result<(Peer<RoleClient>, Vitals), ToolError> {
        let mut slot = self.connection.lock().await;
        self.check(&mut slot).await;
        if let Some(connection) = slot.as_ref()
            && !connection.service.peer().is_transport_closed()
        {
            return Ok((connection.service.peer().clone(), connection.vitals.clone()));
        }
        // Dead (or never restarted): drop what is left, killing its group.
        *slot = None;
        self.pid.store(0, Ordering::Relaxed);
        let name = &self.server.name;
        tracing::warn!(server = %name, "mcp server stopped; restarting it");
        let deadline = deadline_after(self.server.start_timeout);
        let connection = Connection::start(&self.server, deadline)
            .await
            .map_err(|e| ToolError::new(format!("mcp server `{name}` stopped and could not be restarted: {e}")))?;
        self.restarts.fetch_add(1, Ordering::Relaxed);
        self.pid.store(connection.pid.unwrap_or(0), Ordering::Relaxed);
        let out = (connection.service.peer().clone(), connection.vitals.clone());
        *slot = Some(connection);
        Ok(out)
    }

    /// If a call was abandoned since the last check, pings the server and
    /// stops it when no answer comes within [`PING_TIMEOUT`]. Runs under
    /// the connection's lock, so no call is sent to a suspect server.
    async fn check(&self, slot: &mut Option<Connection>) {
        if !self.suspect.load(Ordering::SeqCst) {
            return;
        }
        let Some(connection) = slot.as_ref() else {
            self.suspect.store(false, Ordering::SeqCst);
            return;
        };
        let ping = connection
            .service
            .peer()
            .send_request(ClientRequest::PingRequest(PingRequest {
                method: Default::default(),
                extensions: Default::default(),
            }));
        let verdict = tokio::time::timeout(PING_TIMEOUT, ping).await;
        // Cleared only now: a check dropped halfway (its caller timed out)
        // leaves the server suspect for the next one.
        self.suspect.store(false, Ordering::SeqCst);
        let why = match verdict {
            // Any answer, even an error, shows it reads its input.
            Ok(Ok(_) | Err(ServiceError::McpError(_))) => return,
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => return,
            Ok(Err(e)) => format!("its answer to a ping after an abandoned call failed ({e})"),
            Err(_) => format!(
                "it did not answer a ping within {}s after a call to it was abandoned, so it was taken for hung",
                PING_TIMEOUT.as_secs_f64()
            ),
        };
        tracing::warn!(server = %self.server.name, "mcp server stopped: {why}");
        let _ = connection.vitals.stopped.set(why);
        *slot = None;
        self.pid.store(0, Ordering::Relaxed);
    }

    async fn call(self: &Arc<Self>, tool: &str, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let (peer, vitals) = self.peer().await?;
        let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        // The call's trace context, MCP's `_meta.traceparent` convention.
        if let Some(traceparent) = crate::telemetry::current_traceparent() {
            let mut meta = RequestMetaObject::new();
            meta.set_traceparent(traceparent);
            params.meta = Some(meta);
        }
        // `call_tool` sends `notifications/cancelled` if this future is
        // dropped; the watch has the server checked then.
        let watch = AbandonWatch(Some(Arc::downgrade(self)));
        let outcome = peer.call_tool(params).await;
        watch.disarm();
        let name = &self.server.name;
        match outcome {
            Ok(result) => to_output(result),
            Err(ServiceError::McpError(e)) if is_transport_fault(&e) => {
                Err(ToolError::new(format!("mcp server `{name}` {}", e.message)))
            }
            Err(ServiceError::McpError(e)) => Err(ToolError::new(e.message.to_string())),
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                if let Some(why) = vitals.stopped.get() {
                    return Err(ToolError::new(format!(
                        "mcp server `{name}` was stopped during the call: {why} (the next call restarts it)"
                    )));
                }
                let tail = stderr_suffix(&vitals.stderr.after_exit().await);
                Err(ToolError::new(format!(
                    "mcp server `{name}` stopped during the call{tail} (the next call restarts it)"
                )))
            }
            Err(ServiceError::UnexpectedResponse) => Err(ToolError::new(format!(
                "mcp server `{name}` answered tools/call with a result of another kind than a tool result"
            ))),
            Err(e) => Err(ToolError::new(format!("mcp server `{name}`: {e}"))),
        }
    }
}

/// Armed around a call's wait for its answer: dropped armed (the call was
/// abandoned), it marks the server suspect and has it checked at once, so
/// a hung server is found even if no call follows soon.
struct AbandonWatch(Option<Weak<ServerLink>>);

impl AbandonWatch {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for AbandonWatch {
    fn drop(&mut self) {
        let Some(link) = self.0.take().and_then(|link| link.upgrade()) else {
            return;
        };
        link.suspect.store(true, Ordering::SeqCst);
        let link = Arc::downgrade(&link);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Some(link) = link.upgrade() {
                    let mut slot = link.connection.lock().await;
                    link.check(&mut slot).await;
                }
            });
        }
    }
}

/// What a call keeps of its connection for its error messages.
#[derive(Clone)]
struct Vitals {
    stderr: StderrTail,
    /// Why chainbox stopped the server, if it did.
    stopped: Arc<OnceLock<String>>,
}

/// A running server: the rmcp client service over its stdio, the tail of
/// its stderr, its process and its process group. Dropping it stops the
/// server.
struct Connection {
    // Field order is drop order: the service (closing stdin) first, the
    // process (SIGKILL) and then its group (SIGKILL to all of it) last.
    service: RunningService<RoleClient, ClientConfig>,
    vitals: Vitals,
    pid: Option<u32>,
    _child: tokio::process::Child,
    #[cfg(unix)]
    _group: Option<ProcessGroup>,
}

impl Connection {
    /// Spawns the server and completes the MCP handshake by `deadline`.
    async fn start(server: &McpServer, deadline: Instant) -> Result<Connection, McpError> {
        let Some((program, args)) = server.command.split_first() else {
            return Err(McpError::NoCommand {
                server: server.name.clone(),
            });
        };
        let spawn_error = |source| McpError::Spawn {
            server: server.name.clone(),
            program: program.clone(),
            source,
        };
        let working_dir = Some(server.working_dir.as_path()).filter(|dir| !dir.as_os_str().is_empty());
        let mut cmd = confined_command(program, args, working_dir);
        cmd.envs(&server.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(spawn_error)?;
        let pid = child.id();
        #[cfg(unix)]
        let group = pid.map(ProcessGroup);
        let stderr = StderrTail::capture(child.stderr.take());
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(spawn_error(std::io::Error::other("its stdin or stdout is not a pipe")));
        };
        let config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("chainbox", env!("CARGO_PKG_VERSION")),
        );
        let served = tokio::time::timeout_at(deadline, config.serve(LineTransport::new(stdout, stdin))).await;
        let failure = match served {
            Ok(Ok(service)) => {
                return Ok(Connection {
                    service,
                    vitals: Vitals {
                        stderr,
                        stopped: Arc::default(),
                    },
                    pid,
                    _child: child,
                    #[cfg(unix)]
                    _group: group,
                });
            }
            Ok(Err(e)) => Err(handshake_reason(e)),
            Err(_) => Ok(()),
        };
        // Stop it before reading the rest of its stderr.
        drop(child);
        #[cfg(unix)]
        drop(group);
        let stderr = stderr.after_exit().await;
        Err(match failure {
            Err(reason) => McpError::Handshake {
                server: server.name.clone(),
                reason,
                stderr,
            },
            Ok(()) => McpError::StartTimeout {
                server: server.name.clone(),
                timeout: server.start_timeout,
                stderr,
            },
        })
    }
}

/// `timeout` from now. Not `now + timeout`: a valid `start_timeout_s` may
/// be `1e19` ("never"), which overflows an `Instant` and panicked; a
/// century is "never" enough.
fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// What went wrong in the handshake, in words: a fault the transport found
/// in the server's messages is said as such.
fn handshake_reason(error: ClientInitializeError) -> String {
    match error {
        ClientInitializeError::JsonRpcError(data) if is_transport_fault(&data) => format!("it {}", data.message),
        other => other.to_string(),
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
    info: ToolInfo,
    remote: String,
}

#[async_trait]
impl Tool for McpTool {
    fn info(&self) -> &ToolInfo {
        &self.info
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

    fn open_world(hint: Option<bool>) -> ToolAnnotations {
        ToolAnnotations::from_raw(None, None, None, None, hint)
    }

    #[test]
    fn an_open_world_tool_is_untrusted_unless_the_manifest_says() {
        let server = McpServer::default();
        let plain = McpToolSettings::default();
        assert!(untrusted(&plain, &server, Some(&open_world(Some(true)))));
        assert!(!untrusted(&plain, &server, Some(&open_world(Some(false)))));
        assert!(!untrusted(&plain, &server, Some(&open_world(None))));
        assert!(!untrusted(&plain, &server, None));
        let trusted = McpToolSettings {
            output: Some(OutputTrust::Trusted),
            ..McpToolSettings::default()
        };
        assert!(!untrusted(&trusted, &server, Some(&open_world(Some(true)))));
        let trusting_server = McpServer {
            output: Some(OutputTrust::Trusted),
            ..McpServer::default()
        };
        assert!(!untrusted(&plain, &trusting_server, Some(&open_world(Some(true)))));
    }

    #[test]
    fn the_tools_setting_overrides_the_servers_output() {
        let untrusting = McpServer {
            output: Some(OutputTrust::Untrusted),
            ..McpServer::default()
        };
        assert!(untrusted(&McpToolSettings::default(), &untrusting, None));
        let trusted = McpToolSettings {
            output: Some(OutputTrust::Trusted),
            ..McpToolSettings::default()
        };
        assert!(!untrusted(&trusted, &untrusting, None));
        let untrusted_tool = McpToolSettings {
            output: Some(OutputTrust::Untrusted),
            ..McpToolSettings::default()
        };
        assert!(untrusted(&untrusted_tool, &McpServer::default(), None));
    }

    #[test]
    fn guarded_args_must_be_properties_of_the_listed_schema() {
        let schema = json!({"type": "object", "properties": {"to": {}, "body": {}}});
        assert_eq!(check_guarded_args(&["to".into(), "body".into()], &schema), Ok(()));
        assert_eq!(
            check_guarded_args(&["to".into(), "cc".into()], &schema),
            Err((1, "to, body".into()))
        );
        assert_eq!(
            check_guarded_args(&["to".into()], &json!({"type": "object"})),
            Err((0, String::new()))
        );
        let error = McpError::GuardedArg {
            server: "mail".into(),
            tool: "send".into(),
            index: 1,
            arg: "cc".into(),
            available: "to, body".into(),
        };
        assert_eq!(
            error.to_string(),
            "mcp server `mail`: `tools.send.guarded_args[1]`: `cc` is not a property of the tool's input schema (it has: to, body)"
        );
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
