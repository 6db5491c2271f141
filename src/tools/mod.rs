//! Tools: what a chain can call.
//!
//! A [`Tool`] is a LOCAL tool in the seed's taxonomy: a name, a description,
//! a JSON input schema, a risk tier and an async `execute`. Hosted and
//! provider-defined tools ([`AnyTool`]) may sit in the same [`ToolRegistry`]
//! so one registry can feed both a model's tool list and a chain, but only
//! local tools can be called from a chain; the invoker refuses the others.
//!
//! Invariant: a registry is immutable once built and cheap to clone (an
//! `Arc`), so many concurrent chains share one without locking.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub mod command;
pub mod read_file;

pub use crate::result::ToolRisk;

/// Something a tool touches outside itself, declared by the tool and granted
/// (or not) by the chain's policy (the second seed: "file, shell and network
/// tools need separate read/write permissions"). A call to a tool needing a
/// permission the policy does not grant is `denied` before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Permission {
    /// Reads files.
    #[serde(rename = "fs.read")]
    FsRead,
    /// Creates, changes or deletes files.
    #[serde(rename = "fs.write")]
    FsWrite,
    /// Talks to the network.
    #[serde(rename = "net")]
    Net,
    /// Runs shell commands or other programs.
    #[serde(rename = "shell")]
    Shell,
    /// Reads a database.
    #[serde(rename = "db.read")]
    DbRead,
    /// Writes a database.
    #[serde(rename = "db.write")]
    DbWrite,
}

impl Permission {
    /// Every permission, in rank order.
    pub const ALL: &'static [Permission] = &[
        Permission::FsRead,
        Permission::FsWrite,
        Permission::Net,
        Permission::Shell,
        Permission::DbRead,
        Permission::DbWrite,
    ];

    /// The name used in manifests, policies and messages (`fs.read`).
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::FsRead => "fs.read",
            Permission::FsWrite => "fs.write",
            Permission::Net => "net",
            Permission::Shell => "shell",
            Permission::DbRead => "db.read",
            Permission::DbWrite => "db.write",
        }
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// What a tool's `execute` receives besides its arguments: who is calling
/// and by when it must be done.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The chain's run id, for logs and correlation.
    pub run_id: String,
    /// The tool call's own id within the chain (1-based, in call order).
    pub call_id: u64,
    /// When the call will be cut off by its timeout.
    pub deadline: Instant,
}

impl ToolContext {
    /// Time left before the call's deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// A failed tool call, as the tool reports it. The script sees it as a
/// `RuntimeError` with this message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// What went wrong, in words the model can act on.
    pub message: String,
}

impl ToolError {
    /// A tool error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
        }
    }
}

/// One content block of a [`ToolExecutionResult`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A JSON value.
    Json {
        /// The value.
        json: Value,
    },
    /// An image; `data` is base64 on the wire.
    Image {
        /// e.g. `image/png`.
        media_type: String,
        /// Base64-encoded bytes.
        data: String,
    },
    /// Any other media (audio, PDF…); `data` is base64 on the wire.
    Media {
        /// e.g. `application/pdf`.
        media_type: String,
        /// Base64-encoded bytes.
        data: String,
    },
}

/// The one shape every tool returns (the seed's `ToolExecutionResult`).
/// Most tools return a plain JSON value; [`ToolOutput::Value`] covers that.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolExecutionResult {
    /// The content blocks.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// The tool reports failure through the result rather than an error.
    #[serde(default)]
    pub is_error: bool,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// A structured form of the result, when the tool has one.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub structured_content: Map<String, Value>,
    /// Provenance: where the content came from (a file path, a URL, a
    /// table), so downstream stages can tell one source from another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Freshness: when the tool observed the content, UTC RFC 3339
    /// (see [`ToolExecutionResult::observed_now`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
    /// The rule the tool applied in producing it (e.g. `sandbox-read`: read
    /// inside its sandbox root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
}

impl ToolExecutionResult {
    /// This result with its provenance: `source`, `observed_at` now (UTC,
    /// RFC 3339) and the `policy` it was produced under.
    pub fn observed_now(mut self, source: impl Into<String>, policy: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self.observed_at = Some(crate::util::utc_now_rfc3339());
        self.policy = Some(policy.into());
        self
    }

    /// The plain-text view of all text blocks, joined by newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A request to call a tool (the seed's `ToolCallRequest`): its name, its
/// arguments and an id generated on creation, so callers never track ids
/// themselves. The invoker gives every call a chain makes one, and its
/// `call_id` is the one in the call's [`ChainCallRecord`](crate::ChainCallRecord).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// Unique id: `call_` and 32 hex digits (a random UUID). Generated when
    /// missing from JSON too.
    #[serde(default = "new_call_id")]
    pub call_id: String,
    /// The tool to call, by exact name.
    pub name: String,
    /// Its arguments by name.
    #[serde(default)]
    pub arguments: Map<String, Value>,
}

impl ToolCallRequest {
    /// A request with a fresh `call_id`.
    pub fn new(name: impl Into<String>, arguments: Map<String, Value>) -> Self {
        ToolCallRequest {
            call_id: new_call_id(),
            name: name.into(),
            arguments,
        }
    }
}

/// A fresh call id: `call_` and a random (v4) UUID in 32 hex digits, unique
/// across chains, processes and machines.
pub fn new_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

/// What a tool's `execute` returns on success.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// A plain JSON value: the script receives it as is.
    Value(Value),
    /// Content blocks, possibly with media.
    Result(ToolExecutionResult),
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        ToolOutput::Value(value)
    }
}

impl ToolOutput {
    /// Reads a tool's JSON answer: an object with a `content` array of typed
    /// blocks is a [`ToolExecutionResult`]; anything else is a plain value.
    pub fn from_json(value: Value) -> Self {
        let looks_like_result = value
            .as_object()
            .and_then(|o| o.get("content"))
            .and_then(Value::as_array)
            .is_some_and(|blocks| blocks.iter().all(|b| b.get("type").is_some_and(Value::is_string)));
        if looks_like_result && let Ok(result) = serde_json::from_value::<ToolExecutionResult>(value.clone()) {
            return ToolOutput::Result(result);
        }
        ToolOutput::Value(value)
    }
}

/// Whether a tool's results may carry text someone else wrote: a tools
/// manifest's `output = "trusted" | "untrusted"` (see
/// [`ToolInfo::untrusted`] and [`crate::flow`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputTrust {
    /// Its results are the tool's own (computed, or read from a source the
    /// deployment controls).
    #[default]
    Trusted,
    /// Its results may carry instructions from others (a web page, an
    /// email, a search result).
    Untrusted,
}

/// What a [`Tool`] declares about itself, as plain data: the implementor
/// builds it once (at construction, computing whatever it must) and returns
/// it from [`Tool::info`], instead of writing one getter per field.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The exact name the script calls it by.
    pub name: String,
    /// What it does, shown to the model as the function's docstring.
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
    /// Its risk tier when the arguments don't matter; `Safe` unless set.
    pub risk: ToolRisk,
    /// What it touches (files, network, shell, databases); the policy must
    /// grant each one or the call is denied. None unless set.
    pub permissions: Vec<Permission>,
    /// Its results may carry text someone else wrote (a web page, an
    /// email, a search result): the data-flow policy ([`crate::flow`])
    /// keeps them out of guarded arguments. Trusted unless set.
    pub untrusted: bool,
    /// The arguments untrusted data must not reach unapproved; `None`:
    /// every argument when the tool's risk is `high` or above, none below.
    pub guarded_args: Option<Vec<String>>,
}

impl ToolInfo {
    /// A `Safe` tool that needs no permissions.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        ToolInfo {
            name: name.into(),
            description: description.into(),
            input_schema,
            risk: ToolRisk::Safe,
            permissions: Vec::new(),
            untrusted: false,
            guarded_args: None,
        }
    }

    /// The same, its results untrusted (see [`ToolInfo::untrusted`]).
    #[must_use]
    pub fn with_untrusted_output(mut self) -> Self {
        self.untrusted = true;
        self
    }

    /// The same, guarding exactly `args` (see [`ToolInfo::guarded_args`]).
    #[must_use]
    pub fn with_guarded_args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.guarded_args = Some(args.into_iter().map(Into::into).collect());
        self
    }

    /// The same, with risk tier `risk`.
    #[must_use]
    pub fn with_risk(mut self, risk: ToolRisk) -> Self {
        self.risk = risk;
        self
    }

    /// The same, needing `permissions`.
    #[must_use]
    pub fn with_permissions(mut self, permissions: impl IntoIterator<Item = Permission>) -> Self {
        self.permissions = permissions.into_iter().collect();
        self
    }
}

/// A LOCAL tool: schema plus async `execute(ctx, args)`, run on the host.
/// An implementor writes [`info`](Tool::info) and [`execute`](Tool::execute);
/// the getters read the info.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// Its name, description, schema, risk and permissions, built once.
    fn info(&self) -> &ToolInfo;
    /// The exact name the script calls it by.
    fn name(&self) -> &str {
        &self.info().name
    }
    /// What it does, shown to the model as the function's docstring.
    fn description(&self) -> &str {
        &self.info().description
    }
    /// JSON Schema of its arguments (an object schema).
    fn input_schema(&self) -> &Value {
        &self.info().input_schema
    }
    /// Its risk tier when the arguments don't matter.
    fn risk(&self) -> ToolRisk {
        self.info().risk
    }
    /// Its risk for one call; a tool may rate a call by its arguments
    /// (a `DELETE` query is riskier than a `SELECT`).
    fn classify(&self, _args: &Map<String, Value>) -> ToolRisk {
        self.risk()
    }
    /// What it touches (files, network, shell, databases); the policy must
    /// grant each one or the call is denied. None by default.
    fn permissions(&self) -> &[Permission] {
        &self.info().permissions
    }
    /// Whether its results are untrusted ([`ToolInfo::untrusted`]).
    fn untrusted(&self) -> bool {
        self.info().untrusted
    }
    /// The arguments it guards, if it says ([`ToolInfo::guarded_args`]).
    fn guarded_args(&self) -> Option<&[String]> {
        self.info().guarded_args.as_deref()
    }
    /// Where its results come from, for call records: `KIND:NAME`, e.g.
    /// `command:get_weather` for a command tool or `builtin:read_file`.
    /// Defaults to `local:NAME`.
    fn source(&self) -> String {
        format!("local:{}", self.name())
    }
    /// Runs the tool.
    async fn execute(&self, ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError>;
}

/// A tool the LLM provider runs itself (e.g. a hosted web search): it has
/// per-provider wire specs and no `execute`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostedTool {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Wire declarations keyed by provider (`"openai"`, `"anthropic"`).
    pub provider_specs: HashMap<String, Value>,
}

/// A tool whose call shape the provider defines but whose body runs here
/// (the seed's `ProviderDefinedTool`: a provider's local shell, apply_patch,
/// computer use). The model emits a typed call item (`shell_call`) instead of
/// a function call, and the agent loop answers it with
/// [`handle_call`](ProviderDefinedTool::handle_call). Not callable from a
/// chain: a chain calls functions by name, and this tool's calls only exist
/// as provider call items.
#[async_trait]
pub trait ProviderDefinedTool: Send + Sync + 'static {
    /// Its name.
    fn name(&self) -> &str;
    /// What it does.
    fn description(&self) -> &str;
    /// Wire declarations keyed by provider (`"openai"`, `"anthropic"`).
    fn provider_specs(&self) -> &HashMap<String, Value>;
    /// The call item types it handles, e.g. `shell_call`.
    fn call_types(&self) -> &[String];
    /// Runs one call item the model emitted (the provider's JSON shape) and
    /// returns the output item to send back.
    async fn handle_call(
        &self,
        call: Map<String, Value>,
        ctx: Option<ToolContext>,
    ) -> Result<Map<String, Value>, ToolError>;
}

/// Who executes a tool's calls: the seed's three-way taxonomy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// This host, through [`Tool::execute`].
    Local,
    /// The model provider; there is nothing to call here.
    Hosted,
    /// This host, through [`ProviderDefinedTool::handle_call`], for call
    /// items in the provider's shape.
    ProviderDefined,
}

impl ToolKind {
    /// The snake_case name used in records and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Local => "local",
            ToolKind::Hosted => "hosted",
            ToolKind::ProviderDefined => "provider_defined",
        }
    }
}

impl fmt::Display for ToolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Any kind of tool a registry can hold (the seed's `AnyTool = Tool |
/// HostedTool | ProviderDefinedTool`).
#[derive(Clone)]
pub enum AnyTool {
    /// Runs on the host; callable from a chain.
    Local(Arc<dyn Tool>),
    /// Runs at the provider.
    Hosted(HostedTool),
    /// Provider-shaped, handled locally outside chains.
    ProviderDefined(Arc<dyn ProviderDefinedTool>),
}

impl AnyTool {
    /// The tool's name, whatever its kind.
    pub fn name(&self) -> &str {
        match self {
            AnyTool::Local(t) => t.name(),
            AnyTool::Hosted(t) => &t.name,
            AnyTool::ProviderDefined(t) => t.name(),
        }
    }

    /// What it does, whatever its kind.
    pub fn description(&self) -> &str {
        match self {
            AnyTool::Local(t) => t.description(),
            AnyTool::Hosted(t) => &t.description,
            AnyTool::ProviderDefined(t) => t.description(),
        }
    }

    /// Who executes its calls.
    pub fn kind(&self) -> ToolKind {
        match self {
            AnyTool::Local(_) => ToolKind::Local,
            AnyTool::Hosted(_) => ToolKind::Hosted,
            AnyTool::ProviderDefined(_) => ToolKind::ProviderDefined,
        }
    }

    /// Where its results come from, for call records: the local tool's own
    /// [`Tool::source`], otherwise `hosted:NAME` or `provider_defined:NAME`.
    pub fn source(&self) -> String {
        match self {
            AnyTool::Local(t) => t.source(),
            other => format!("{}:{}", other.kind(), other.name()),
        }
    }

    /// Its per-provider wire declarations: present for hosted **and**
    /// provider-defined tools, so this alone cannot tell them apart (see
    /// [`is_provider_defined_tool`]).
    pub fn provider_specs(&self) -> Option<&HashMap<String, Value>> {
        match self {
            AnyTool::Local(_) => None,
            AnyTool::Hosted(t) => Some(&t.provider_specs),
            AnyTool::ProviderDefined(t) => Some(t.provider_specs()),
        }
    }

    /// The local tool, if this is one.
    pub fn as_local(&self) -> Option<&Arc<dyn Tool>> {
        match self {
            AnyTool::Local(t) => Some(t),
            _ => None,
        }
    }
}

/// The seed's first type guard: the tool has provider specs **and**
/// `handle_call`, so its call items are run here. Check it before
/// [`is_hosted_tool`]: in the seed's structural typing both kinds have
/// `provider_specs`, and only `handle_call` tells them apart, so a
/// provider-defined tool tested for "hosted" by its specs alone would be
/// taken for hosted and its call never run. Here the guards are exact (a
/// provider-defined tool is never hosted), so the order cannot go wrong,
/// but dispatch code is written in the seed's order:
///
/// ```
/// # use chainbox::tools::{AnyTool, is_hosted_tool, is_provider_defined_tool};
/// fn who_runs(tool: &AnyTool) -> &'static str {
///     if is_provider_defined_tool(tool).is_some() {
///         "this host, via handle_call"
///     } else if is_hosted_tool(tool).is_some() {
///         "the provider"
///     } else {
///         "this host, via execute"
///     }
/// }
/// ```
pub fn is_provider_defined_tool(tool: &AnyTool) -> Option<&Arc<dyn ProviderDefinedTool>> {
    match tool {
        AnyTool::ProviderDefined(t) => Some(t),
        _ => None,
    }
}

/// The seed's second type guard: provider specs and **no** `handle_call`;
/// the provider runs it and there is nothing to call here. Never true of a
/// provider-defined tool, whichever guard runs first.
pub fn is_hosted_tool(tool: &AnyTool) -> Option<&HostedTool> {
    match tool {
        AnyTool::Hosted(t) => Some(t),
        _ => None,
    }
}

impl fmt::Debug for AnyTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} tool {:?}", self.kind(), self.name())
    }
}

/// Errors building a registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Two tools share a name.
    #[error("tool {0:?} is registered twice")]
    Duplicate(String),
    /// The name is not a valid Python identifier, so a script could not call it.
    #[error("tool name {0:?} is not a Python identifier")]
    BadName(String),
    /// The tool's input schema is not a valid JSON Schema.
    #[error("tool {tool:?} has an invalid input_schema: {message}")]
    BadSchema {
        /// The tool.
        tool: String,
        /// What the schema compiler said.
        message: String,
    },
}

/// Arguments a tool's input schema refuses (or a call of no tool at all).
/// The script sees the message as a `ValueError`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArgumentError {
    /// No tool has this exact name.
    #[error("no tool named {0:?}")]
    UnknownTool(String),
    /// The schema refuses the arguments.
    #[error("invalid {} for {tool}: {reason}", if field.is_empty() { "arguments".to_owned() } else { format!("argument `{field}`") })]
    Schema {
        /// The tool.
        tool: String,
        /// The offending field as a dotted path (`user.address.zip`), empty
        /// when the arguments object as a whole is wrong.
        field: String,
        /// What the schema says is wrong.
        reason: String,
    },
}

/// The tools one or many chains may call, by exact name. Cheap to clone.
/// Each local tool's input schema is compiled once, when the registry is built.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Arc<Vec<AnyTool>>,
    validators: Arc<Vec<Option<jsonschema::Validator>>>,
    /// Some local tool's results are untrusted ([`ToolInfo::untrusted`]).
    has_untrusted: bool,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a registry, refusing duplicate or non-identifier names.
    pub fn from_tools(tools: impl IntoIterator<Item = AnyTool>) -> Result<Self, RegistryError> {
        let mut out: Vec<AnyTool> = Vec::new();
        let mut validators = Vec::new();
        for tool in tools {
            let name = tool.name();
            if !is_identifier(name) {
                return Err(RegistryError::BadName(name.to_owned()));
            }
            if out.iter().any(|t| t.name() == name) {
                return Err(RegistryError::Duplicate(name.to_owned()));
            }
            let validator = match tool.as_local() {
                Some(local) => {
                    Some(
                        jsonschema::validator_for(local.input_schema()).map_err(|e| RegistryError::BadSchema {
                            tool: name.to_owned(),
                            message: e.to_string(),
                        })?,
                    )
                }
                None => None,
            };
            validators.push(validator);
            out.push(tool);
        }
        let has_untrusted = out.iter().any(|t| t.as_local().is_some_and(|l| l.untrusted()));
        Ok(ToolRegistry {
            tools: Arc::new(out),
            validators: Arc::new(validators),
            has_untrusted,
        })
    }

    /// Builds a registry of local tools.
    pub fn from_local(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Result<Self, RegistryError> {
        Self::from_tools(tools.into_iter().map(AnyTool::Local))
    }

    /// The tool with exactly this name: no case folding, trimming or
    /// look-alike matching.
    pub fn get(&self, name: &str) -> Option<&AnyTool> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// Checks `args` against the named tool's input schema. The error names
    /// the offending field and what is wrong with it.
    pub fn validate(&self, name: &str, args: &Map<String, Value>) -> Result<(), ArgumentError> {
        let Some(index) = self.tools.iter().position(|t| t.name() == name) else {
            return Err(ArgumentError::UnknownTool(name.to_owned()));
        };
        let Some(Some(validator)) = self.validators.get(index) else {
            return Ok(());
        };
        let instance = Value::Object(args.clone());
        match validator.iter_errors(&instance).next() {
            None => Ok(()),
            Some(err) => Err(ArgumentError::Schema {
                tool: name.to_owned(),
                field: err.instance_path().as_str().trim_start_matches('/').replace('/', "."),
                reason: err.to_string(),
            }),
        }
    }

    /// All tools, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &AnyTool> {
        self.tools.iter()
    }

    /// Whether some local tool's results are untrusted: without one the
    /// data-flow policy ([`crate::flow`]) has nothing to do (known at
    /// build, so a chain learns it without walking the tools).
    pub fn has_untrusted(&self) -> bool {
        self.has_untrusted
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// Whether `name` is an ASCII Python identifier (and so callable from a script).
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parameter names of an object schema, in the order its `properties` are
/// written (positional arguments map onto them in this order).
pub fn schema_params(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| props.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A tool that writes only `info` and `execute`.
    pub(crate) struct Declared(pub(crate) ToolInfo);

    #[async_trait]
    impl Tool for Declared {
        fn info(&self) -> &ToolInfo {
            &self.0
        }
        async fn execute(&self, _: ToolContext, _: Map<String, Value>) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::Value(Value::Null))
        }
    }

    #[test]
    fn a_tools_getters_read_its_one_tool_info() {
        let schema = serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}});
        let tool = Declared(
            ToolInfo::new("wipe", "Wipes a file.", schema.clone())
                .with_risk(ToolRisk::Critical)
                .with_permissions([Permission::FsWrite]),
        );
        assert_eq!(tool.name(), "wipe");
        assert_eq!(tool.description(), "Wipes a file.");
        assert_eq!(tool.input_schema(), &schema);
        assert_eq!(tool.risk(), ToolRisk::Critical);
        assert_eq!(tool.classify(&Map::new()), ToolRisk::Critical);
        assert_eq!(tool.permissions(), [Permission::FsWrite]);
        assert_eq!(tool.source(), "local:wipe");
    }

    #[test]
    fn a_new_tool_info_is_safe_and_needs_no_permissions() {
        let info = ToolInfo::new("now", "", serde_json::json!({"type": "object"}));
        assert_eq!(info.risk, ToolRisk::Safe);
        assert!(info.permissions.is_empty());
    }

    #[test]
    fn risk_orders_by_rank_not_by_name() {
        assert!(ToolRisk::Safe < ToolRisk::High);
        assert!(ToolRisk::High < ToolRisk::Critical);
        // Parsed from their names, the most severe is still the largest
        // (alphabetically "critical" < "high" < "safe").
        let parsed: Vec<ToolRisk> = ["high", "critical", "safe"]
            .into_iter()
            .map(|name| serde_json::from_value(serde_json::json!(name)).expect("a risk name"))
            .collect();
        assert_eq!(parsed.iter().max(), Some(&ToolRisk::Critical));
        assert_eq!(parsed.iter().min(), Some(&ToolRisk::Safe));
    }

    #[test]
    fn tool_output_reads_content_blocks_as_a_result() {
        let v = serde_json::json!({"content": [{"type": "text", "text": "hi"}]});
        assert!(matches!(ToolOutput::from_json(v), ToolOutput::Result(r) if r.text() == "hi"));
        let plain = serde_json::json!({"content": "not blocks"});
        assert!(matches!(ToolOutput::from_json(plain), ToolOutput::Value(_)));
    }

    #[test]
    fn permission_names_are_the_ones_serde_reads() {
        for permission in Permission::ALL {
            assert_eq!(serde_json::to_value(permission).unwrap(), permission.as_str());
        }
        assert!(serde_json::from_value::<Permission>(serde_json::json!("fs.exec")).is_err());
    }

    #[test]
    fn tool_kind_names_are_the_ones_serde_writes() {
        for kind in [ToolKind::Local, ToolKind::Hosted, ToolKind::ProviderDefined] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }

    #[test]
    fn observed_now_sets_provenance_in_utc() {
        let r = ToolExecutionResult::default().observed_now("db:orders", "read-only");
        assert_eq!(r.source.as_deref(), Some("db:orders"));
        assert_eq!(r.policy.as_deref(), Some("read-only"));
        let at = r.observed_at.expect("observed_at");
        assert!(at.ends_with('Z') && at.parse::<jiff::Timestamp>().is_ok(), "{at}");
    }

    #[test]
    fn result_without_provenance_serializes_without_it() {
        let v = serde_json::to_value(ToolExecutionResult::default()).unwrap();
        for key in ["source", "observed_at", "policy"] {
            assert!(v.get(key).is_none(), "{v}");
        }
    }

    #[test]
    fn schema_params_keep_written_order() {
        let schema = serde_json::json!({"properties": {"zeta": {}, "alpha": {}}});
        assert_eq!(schema_params(&schema), vec!["zeta", "alpha"]);
    }
}
