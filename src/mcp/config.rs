//! The configuration of an upstream MCP server: one `[[mcp]]` entry of the
//! tools manifest ([`crate::manifest`] reads and validates it), as
//! [`crate::mcp::upstream`] starts and talks to it. Plain data, below both.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::tools::{OutputTrust, Permission, ToolRisk};

/// How long a server may take to start (spawn, `initialize` and listing
/// its tools) unless its entry says otherwise (`start_timeout_s`). Generous,
/// for servers fetched by `npx` on first use; a call that restarts a server
/// is bounded by its own timeout as well.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// One `[[mcp]]` entry: an MCP server whose tools join the registry as
/// `{name}__{tool}` (see [`crate::mcp::upstream`]).
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    /// The server's name: letters, digits and single underscores, so that
    /// `{name}__{tool}` is a Python identifier and the `__` is unambiguous.
    pub name: String,
    /// Program and arguments, the program resolved against the manifest's folder.
    pub command: Vec<String>,
    /// Its environment besides `PATH`: nothing else of the host's is passed.
    pub env: BTreeMap<String, String>,
    /// Where it runs: `cwd` resolved against the manifest's folder, by
    /// default the folder itself (empty: chainbox's own working directory).
    pub working_dir: PathBuf,
    /// The risk tier of its tools, unless [`McpServer::tools`] says otherwise.
    pub risk: ToolRisk,
    /// What its tools touch, unless [`McpServer::tools`] says otherwise.
    pub permissions: Vec<Permission>,
    /// Whether its tools' results are untrusted (`output`), unless
    /// [`McpServer::tools`] says otherwise; `None`: each tool's own
    /// annotation decides (`openWorldHint: true` is untrusted).
    pub output: Option<OutputTrust>,
    /// Settings of single tools, keyed by the server's own tool name.
    pub tools: BTreeMap<String, McpToolSettings>,
    /// How long it may take to start and list its tools (`start_timeout_s`;
    /// default [`START_TIMEOUT`]), at registry build and at each restart.
    pub start_timeout: Duration,
}

impl Default for McpServer {
    /// No program, no settings, the default start timeout.
    fn default() -> Self {
        McpServer {
            name: String::new(),
            command: Vec::new(),
            env: BTreeMap::new(),
            working_dir: PathBuf::new(),
            risk: ToolRisk::default(),
            permissions: Vec::new(),
            output: None,
            tools: BTreeMap::new(),
            start_timeout: START_TIMEOUT,
        }
    }
}

/// The settings of one tool of an MCP server (`[mcp.tools.<name>]`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpToolSettings {
    /// Its risk tier, instead of the server's.
    #[serde(default)]
    pub risk: Option<ToolRisk>,
    /// What it touches, instead of the server's permissions.
    #[serde(default)]
    pub permissions: Option<Vec<Permission>>,
    /// Leave it out of the registry: never shown to the model, never callable.
    #[serde(default)]
    pub deny: bool,
    /// Whether its results are untrusted, instead of the server's `output`
    /// and the tool's `openWorldHint`.
    #[serde(default)]
    pub output: Option<OutputTrust>,
    /// Its guarded arguments ([`crate::tools::ToolInfo::guarded_args`]):
    /// each must be a property of the input schema the server lists.
    #[serde(default)]
    pub guarded_args: Option<Vec<String>>,
}
