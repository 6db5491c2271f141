//! `ChainPolicy`: the per-chain rulebook the invoker and the sandbox enforce,
//! outside the model. Defaults are the seed's (`max_tool_calls` 50,
//! `call_timeout_s` 60, `approval_timeout_s` 55, `total_timeout_s` 300,
//! `max_inline_result_bytes` 4096, `max_risk_unapproved` safe) plus the
//! sandbox's own limits.
//!
//! Policies are plain data, usually loaded from TOML (`policies/*.toml`) with
//! [`ChainPolicy::load`] or [`ChainPolicy::from_toml_str`]. A field left out
//! keeps its default; an unknown field, a value of the wrong type, an unknown
//! risk or a meaningless limit is rejected with a [`PolicyError`] that names
//! the field, e.g. ``policy field `tools.send_email.call_timeout_s` (-1) must
//! be a finite number of seconds above zero``.
//!
//! Invariant: a policy returned by `load` or `from_toml_str` has passed
//! [`ChainPolicy::validate`], so every duration it yields is representable.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tools::{Permission, ToolRisk};

/// The per-chain rulebook. Plain data; see `policies/default.toml` for every
/// field documented in place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChainPolicy {
    /// Tool calls a chain may make; the call past it ends the chain
    /// (`tool_budget`). `0` means no tool calls at all.
    pub max_tool_calls: u32,
    /// Seconds one tool call may run before it is cut off (`TimeoutError`).
    pub call_timeout_s: f64,
    /// Seconds a human has to approve a call; silence means `denied`.
    /// Kept below `call_timeout_s` so a slow human never blocks the sandbox.
    pub approval_timeout_s: f64,
    /// Seconds a durable chain's pending call waits for a human's decision
    /// (`chainbox decide`): a decision recorded later counts as a denial.
    /// A chain that is not durable waits `approval_timeout_s` instead.
    pub approval_expires_s: f64,
    /// Seconds the whole chain may take, tool calls included.
    pub total_timeout_s: f64,
    /// Seconds a session (`Durable::run_cell`) lives on after its
    /// last cell: a cell sent later finds it expired (an error of kind
    /// `session`, never an empty session).
    pub session_expires_s: f64,
    /// Cells one session may run; the cell past it is refused (kind
    /// `session`).
    pub max_session_cells: u32,
    /// Seconds an MCP task (`chainbox serve --state`, a client that
    /// declared the tasks extension) is kept from its creation: its
    /// `ttlMs`. Past it, `tasks/get` finds no such task.
    pub task_ttl_s: f64,
    /// Seconds a finished durable chain is kept after it ended (its
    /// result for a late claimant, its journal, decisions, session cells
    /// and tasks): a sweep (`chainbox gc`, `serve --state`) deletes it
    /// after, so a store does not grow for ever. Keep it at least
    /// `task_ttl_s`: a task's chain deleted is a task gone.
    pub retention_s: f64,
    /// Results whose JSON is larger than this are offloaded to the artifact store.
    pub max_inline_result_bytes: u64,
    /// Calls above this risk need approval.
    pub max_risk_unapproved: ToolRisk,
    /// Memory the sandbox may use, in bytes (the wasm linear memory cap).
    pub max_memory_bytes: u64,
    /// CPU seconds the script itself may use (time inside tools not counted).
    pub max_cpu_s: f64,
    /// `print` output kept; the rest is dropped and the result says so.
    pub max_stdout_bytes: u64,
    /// Largest JSON arguments of one tool call, in bytes.
    pub max_arg_bytes: u64,
    /// Largest value brought into the sandbox (a tool result or `load_artifact`), in bytes.
    pub max_result_bytes: u64,
    /// Largest request `chainbox serve` reads, in bytes: one JSON-RPC
    /// message (a line over stdio, a POST body over HTTP), so a `run_chain`
    /// script plus its framing. A larger one is answered with a JSON-RPC
    /// error naming this limit (`--max-request-bytes` overrides it).
    pub max_request_bytes: u64,
    /// What tools may touch: a call to a tool declaring a permission not
    /// listed here (`fs.read`, `fs.write`, `net`, `shell`, `db.read`,
    /// `db.write`) is denied. None by default.
    pub granted_permissions: BTreeSet<Permission>,
    /// When set, the only tools a chain may call (a call to any other is
    /// denied); unset, every tool in the registry. A skill sets it
    /// ([`ChainPolicy::restricted_to`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<BTreeSet<String>>,
    /// Who set `allowed_tools`, for denial messages (`skill "research"`);
    /// not part of the TOML.
    #[serde(skip)]
    pub allowed_by: Option<String>,
    /// Per-tool overrides, by exact tool name.
    pub tools: BTreeMap<String, ToolOverride>,
    /// Which Python runs the script: `auto` (monty unless the script needs
    /// what only CPython has, see [`crate::python_choice`]), `monty` or
    /// `cpython`.
    pub python: PythonChoice,
    /// The check before the run ([`crate::check`]): `enforce` refuses a
    /// script whose tool calls cannot succeed (kind `type_error`, nothing
    /// runs), `warn` runs it and lists what it found in `warnings`, `off`
    /// skips it.
    pub type_check: TypeCheck,
    /// The data-flow policy ([`crate::flow`]): `on` (the default; it
    /// changes nothing while no tool's output is untrusted) makes a call
    /// whose guarded arguments may derive from an untrusted tool's result,
    /// or that is made only because of one, wait for approval as a
    /// critical call does; `off` does not look.
    pub flow: Flow,
}

/// Whether the data-flow policy applies (`flow`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Flow {
    /// Untrusted data reaching a guarded argument needs approval.
    #[default]
    On,
    /// No data-flow rule.
    Off,
}

/// What the check before the run does with what it finds (`type_check`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum TypeCheck {
    /// Refuse a script with a tool call that cannot succeed; warn of the
    /// rest.
    #[default]
    Enforce,
    /// Run it; warn of everything found.
    Warn,
    /// Do not check.
    Off,
}

/// The policy's choice of interpreter (`--python` on the command line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PythonChoice {
    /// monty first; CPython when a static scan of the script finds what
    /// monty lacks, or monty's parser refuses it.
    #[default]
    Auto,
    /// Always monty (fast start; a Python subset).
    Monty,
    /// Always CPython (full Python; slower start).
    Cpython,
}

/// Policy for one named tool, overriding the chain-wide rules.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolOverride {
    /// Refuse every call to this tool (`PermissionError`).
    pub deny: bool,
    /// Treat the tool as this risk, whatever it says of itself.
    pub risk: Option<ToolRisk>,
    /// Its own call timeout, in seconds. Unlike the chain-wide
    /// `call_timeout_s` it may be below `approval_timeout_s`: a fast tool
    /// keeps a short leash without shortening the human's time to answer.
    pub call_timeout_s: Option<f64>,
    /// OAuth scopes the chain's principal (the authenticated caller it runs
    /// for, [`crate::principal::Principal`]) must hold for a call to this
    /// tool (`["payments:write"]`): a principal lacking one is denied
    /// (`PermissionError`, policy `denied_scope`) before any approval is
    /// asked. A chain without a principal (the local user: the CLI,
    /// `serve` over stdio or without `--auth-issuer`) is not restricted by
    /// it. Each scope is a non-empty string without whitespace.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub required_scopes: BTreeSet<String>,
}

impl Default for ChainPolicy {
    fn default() -> Self {
        ChainPolicy {
            max_tool_calls: 50,
            call_timeout_s: 60.0,
            approval_timeout_s: 55.0,
            approval_expires_s: 86_400.0,
            session_expires_s: 86_400.0,
            max_session_cells: 200,
            task_ttl_s: 86_400.0,
            retention_s: 604_800.0,
            total_timeout_s: 300.0,
            max_inline_result_bytes: 4096,
            max_risk_unapproved: ToolRisk::Safe,
            max_memory_bytes: 256 * 1024 * 1024,
            max_cpu_s: 30.0,
            max_stdout_bytes: 64 * 1024,
            max_arg_bytes: 1024 * 1024,
            max_result_bytes: 16 * 1024 * 1024,
            max_request_bytes: 16 * 1024 * 1024,
            granted_permissions: BTreeSet::new(),
            allowed_tools: None,
            allowed_by: None,
            tools: BTreeMap::new(),
            python: PythonChoice::Auto,
            type_check: TypeCheck::Enforce,
            flow: Flow::On,
        }
    }
}

/// Why a policy was refused. Every variant about a value names its field,
/// dotted for per-tool overrides (`tools.send_email.call_timeout_s`).
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The policy file could not be read.
    #[error("cannot read policy file `{}`: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The text is not TOML at all.
    #[error("policy is not valid TOML: {message}")]
    Syntax {
        /// The parser's message, with line and column.
        message: String,
    },
    /// A field is unknown, of the wrong type, or has an unknown value
    /// (e.g. a risk other than `safe`, `high`, `critical`).
    #[error("policy field `{field}`: {message}")]
    Field {
        /// The field's dotted path.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A duration that is zero, negative, NaN, infinite or too large to be a
    /// duration.
    #[error("policy field `{field}` ({value}) must be a finite number of seconds above zero")]
    Seconds {
        /// The field's dotted path.
        field: String,
        /// The value given.
        value: f64,
    },
    /// A byte limit of zero.
    #[error("policy field `{field}` must be above zero")]
    ZeroBytes {
        /// The field's name.
        field: String,
    },
    /// `approval_timeout_s` is not below `call_timeout_s`.
    #[error("policy field `approval_timeout_s` ({approval}) must be below `call_timeout_s` ({call})")]
    ApprovalNotBelowCall {
        /// `approval_timeout_s`.
        approval: f64,
        /// `call_timeout_s`.
        call: f64,
    },
    /// `max_inline_result_bytes` is above `max_result_bytes`: a result could
    /// be small enough to inline yet too large to enter the sandbox.
    #[error("policy field `max_inline_result_bytes` ({inline}) must not exceed `max_result_bytes` ({result})")]
    InlineAboveResult {
        /// `max_inline_result_bytes`.
        inline: u64,
        /// `max_result_bytes`.
        result: u64,
    },
}

impl ChainPolicy {
    /// Parses and validates a policy from TOML text. Fields left out keep
    /// their defaults.
    pub fn from_toml_str(text: &str) -> Result<ChainPolicy, PolicyError> {
        let toml = toml::de::Deserializer::parse(text).map_err(|e| PolicyError::Syntax {
            message: e.to_string().trim_end().to_owned(),
        })?;
        let policy: ChainPolicy = serde_path_to_error::deserialize(toml).map_err(|e| {
            let message = e.inner().message().trim_end().to_owned();
            match e.path().iter().next() {
                // `tools.send_email.call_timeout_s`, `tools.send_email` when the entry is not a table.
                Some(_) => PolicyError::Field {
                    field: e.path().to_string(),
                    message,
                },
                None => PolicyError::Syntax { message },
            }
        })?;
        policy.validate()?;
        Ok(policy)
    }

    /// Reads, parses and validates a policy file.
    pub fn load(path: impl AsRef<Path>) -> Result<ChainPolicy, PolicyError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: path.to_owned(),
            source,
        })?;
        ChainPolicy::from_toml_str(&text)
    }

    /// Checks the values serde cannot: timeouts are finite, above zero and
    /// representable as a [`Duration`]; byte limits are above zero
    /// (`max_tool_calls` may be 0: no calls allowed); `approval_timeout_s` is
    /// below `call_timeout_s`; `max_inline_result_bytes` does not exceed
    /// `max_result_bytes`; per-tool timeouts follow the same rule.
    pub fn validate(&self) -> Result<(), PolicyError> {
        for (field, value) in [
            ("call_timeout_s", self.call_timeout_s),
            ("approval_timeout_s", self.approval_timeout_s),
            ("approval_expires_s", self.approval_expires_s),
            ("session_expires_s", self.session_expires_s),
            ("task_ttl_s", self.task_ttl_s),
            ("retention_s", self.retention_s),
            ("total_timeout_s", self.total_timeout_s),
            ("max_cpu_s", self.max_cpu_s),
        ] {
            check_seconds(field, value)?;
        }
        for (field, value) in [
            ("max_inline_result_bytes", self.max_inline_result_bytes),
            ("max_memory_bytes", self.max_memory_bytes),
            ("max_stdout_bytes", self.max_stdout_bytes),
            ("max_arg_bytes", self.max_arg_bytes),
            ("max_result_bytes", self.max_result_bytes),
            ("max_request_bytes", self.max_request_bytes),
        ] {
            if value == 0 {
                return Err(PolicyError::ZeroBytes { field: field.into() });
            }
        }
        if self.approval_timeout_s >= self.call_timeout_s {
            return Err(PolicyError::ApprovalNotBelowCall {
                approval: self.approval_timeout_s,
                call: self.call_timeout_s,
            });
        }
        if self.max_inline_result_bytes > self.max_result_bytes {
            return Err(PolicyError::InlineAboveResult {
                inline: self.max_inline_result_bytes,
                result: self.max_result_bytes,
            });
        }
        for (name, tool) in &self.tools {
            if let Some(secs) = tool.call_timeout_s {
                check_seconds(&format!("tools.{name}.call_timeout_s"), secs)?;
            }
            if let Some(scope) = tool.required_scopes.iter().find(|s| !is_scope_token(s)) {
                return Err(PolicyError::Field {
                    field: format!("tools.{name}.required_scopes"),
                    message: format!("scope {scope:?} must be a non-empty string without whitespace"),
                });
            }
        }
        Ok(())
    }

    /// The chain's total time limit.
    pub fn total_timeout(&self) -> Duration {
        seconds(self.total_timeout_s)
    }

    /// The script's CPU limit.
    pub fn max_cpu(&self) -> Duration {
        seconds(self.max_cpu_s)
    }

    /// The call timeout for this tool, its override if it has one.
    pub fn call_timeout(&self, tool: &str) -> Duration {
        let secs = self
            .tools
            .get(tool)
            .and_then(|o| o.call_timeout_s)
            .unwrap_or(self.call_timeout_s);
        seconds(secs)
    }

    /// The approval timeout.
    pub fn approval_timeout(&self) -> Duration {
        seconds(self.approval_timeout_s)
    }

    /// The risk a call to `tool` counts as: the policy's override if it sets
    /// one, otherwise what the tool declared (or classified for this call).
    pub fn effective_risk(&self, tool: &str, declared: ToolRisk) -> ToolRisk {
        self.tools.get(tool).and_then(|o| o.risk).unwrap_or(declared)
    }

    /// The scopes a principal must hold to call `tool`
    /// (`tools.NAME.required_scopes`; empty when the policy sets none).
    pub fn required_scopes(&self, tool: &str) -> &BTreeSet<String> {
        static NONE: BTreeSet<String> = BTreeSet::new();
        self.tools.get(tool).map_or(&NONE, |o| &o.required_scopes)
    }

    /// Whether the policy refuses every call to `tool`.
    pub fn is_denied(&self, tool: &str) -> bool {
        self.tools.get(tool).is_some_and(|o| o.deny)
    }

    /// The permissions among `needed` this policy does not grant, in order.
    pub fn missing_permissions(&self, needed: &[Permission]) -> Vec<Permission> {
        needed
            .iter()
            .copied()
            .filter(|p| !self.granted_permissions.contains(p))
            .collect()
    }

    /// Whether `allowed_tools`, if set, lets a chain call `tool`.
    pub fn allows_tool(&self, tool: &str) -> bool {
        self.allowed_tools.as_ref().is_none_or(|allowed| allowed.contains(tool))
    }

    /// This policy narrowed to `tools` (intersected with any allowlist it
    /// already has), `by` named in denials (e.g. `skill "research"`).
    pub fn restricted_to<'a>(mut self, tools: impl IntoIterator<Item = &'a str>, by: impl Into<String>) -> Self {
        let wanted: BTreeSet<String> = tools.into_iter().map(str::to_owned).collect();
        self.allowed_tools = Some(match self.allowed_tools.take() {
            Some(current) => current.intersection(&wanted).cloned().collect(),
            None => wanted,
        });
        self.allowed_by = Some(by.into());
        self
    }

    /// Whether a call of this (effective) risk needs approval: it is above
    /// `max_risk_unapproved`, compared by rank.
    pub fn needs_approval(&self, risk: ToolRisk) -> bool {
        risk > self.max_risk_unapproved
    }
}

/// Rejects durations that are not finite, not above zero, or too large for
/// a [`Duration`].
fn check_seconds(field: &str, value: f64) -> Result<(), PolicyError> {
    if value > 0.0 && Duration::try_from_secs_f64(value).is_ok() {
        Ok(())
    } else {
        Err(PolicyError::Seconds {
            field: field.into(),
            value,
        })
    }
}

/// Whether `scope` can be an OAuth scope a token grants: non-empty, and
/// no whitespace (a token's `scope` claim is space-separated, so a scope
/// with a space in it could never be granted).
fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty() && !scope.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Seconds as a [`Duration`], never panicking on an unvalidated policy:
/// negative or NaN becomes zero (fail closed: the limit is hit at once),
/// too large becomes [`Duration::MAX`].
fn seconds(value: f64) -> Duration {
    if value.is_nan() || value <= 0.0 {
        Duration::ZERO
    } else {
        Duration::try_from_secs_f64(value).unwrap_or(Duration::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> PolicyError {
        match ChainPolicy::from_toml_str(text) {
            Ok(p) => panic!("accepted {text:?} as {p:?}"),
            Err(e) => e,
        }
    }

    fn policies_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("policies")
    }

    fn load_named(name: &str) -> ChainPolicy {
        let path = policies_dir().join(name);
        ChainPolicy::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn empty_text_is_the_default_policy() {
        assert_eq!(ChainPolicy::from_toml_str("").unwrap(), ChainPolicy::default());
    }

    #[test]
    fn omitted_fields_keep_their_defaults() {
        let p = ChainPolicy::from_toml_str("max_tool_calls = 7").unwrap();
        assert_eq!(p.max_tool_calls, 7);
        assert_eq!(
            p,
            ChainPolicy {
                max_tool_calls: 7,
                ..ChainPolicy::default()
            }
        );
    }

    #[test]
    fn integer_seconds_are_accepted() {
        let p = ChainPolicy::from_toml_str("call_timeout_s = 90\ntotal_timeout_s = 600").unwrap();
        assert_eq!(p.call_timeout_s, 90.0);
        assert_eq!(p.total_timeout(), Duration::from_secs(600));
    }

    #[test]
    fn default_policy_is_valid() {
        ChainPolicy::default().validate().unwrap();
    }

    #[test]
    fn zero_max_tool_calls_is_allowed() {
        assert_eq!(
            ChainPolicy::from_toml_str("max_tool_calls = 0").unwrap().max_tool_calls,
            0
        );
    }

    #[test]
    fn negative_max_tool_calls_is_rejected_naming_the_field() {
        let e = err("max_tool_calls = -1");
        assert!(
            matches!(&e, PolicyError::Field { field, .. } if field == "max_tool_calls"),
            "{e}"
        );
    }

    #[test]
    fn zero_timeout_is_rejected_naming_the_field() {
        let e = err("total_timeout_s = 0");
        assert!(e.to_string().contains("`total_timeout_s` (0)"), "{e}");
    }

    #[test]
    fn a_retention_that_is_no_positive_number_of_seconds_is_rejected_naming_the_field() {
        let e = err("retention_s = 0");
        assert!(e.to_string().contains("`retention_s` (0)"), "{e}");
        assert_eq!(
            ChainPolicy::from_toml_str("retention_s = 60").unwrap().retention_s,
            60.0
        );
    }

    #[test]
    fn negative_timeout_is_rejected() {
        let e = err("max_cpu_s = -2.5");
        assert!(matches!(&e, PolicyError::Seconds { field, value } if field == "max_cpu_s" && *value == -2.5));
    }

    #[test]
    fn nan_timeout_is_rejected() {
        assert!(matches!(err("total_timeout_s = nan"), PolicyError::Seconds { .. }));
    }

    #[test]
    fn infinite_timeout_is_rejected() {
        assert!(matches!(err("total_timeout_s = inf"), PolicyError::Seconds { .. }));
    }

    #[test]
    fn timeout_too_large_for_a_duration_is_rejected() {
        assert!(matches!(err("total_timeout_s = 1e300"), PolicyError::Seconds { .. }));
    }

    #[test]
    fn zero_byte_limit_is_rejected_naming_the_field() {
        let e = err("max_stdout_bytes = 0");
        assert_eq!(e.to_string(), "policy field `max_stdout_bytes` must be above zero");
    }

    #[test]
    fn approval_timeout_equal_to_call_timeout_is_rejected() {
        let e = err("approval_timeout_s = 60");
        assert_eq!(
            e.to_string(),
            "policy field `approval_timeout_s` (60) must be below `call_timeout_s` (60)"
        );
    }

    #[test]
    fn inline_limit_above_result_limit_is_rejected() {
        let e = err("max_inline_result_bytes = 2048\nmax_result_bytes = 1024");
        assert!(matches!(
            e,
            PolicyError::InlineAboveResult {
                inline: 2048,
                result: 1024
            }
        ));
    }

    #[test]
    fn unknown_field_is_rejected_naming_it() {
        let e = err("max_tool_call = 3");
        assert!(
            matches!(&e, PolicyError::Field { field, .. } if field == "max_tool_call"),
            "{e}"
        );
        assert!(e.to_string().contains("unknown field `max_tool_call`"), "{e}");
    }

    #[test]
    fn wrong_type_is_rejected_naming_the_field() {
        let e = err("max_tool_calls = 3\ncall_timeout_s = \"soon\"");
        assert!(
            matches!(&e, PolicyError::Field { field, .. } if field == "call_timeout_s"),
            "{e}"
        );
    }

    #[test]
    fn unknown_risk_is_rejected_naming_the_field() {
        let e = err("max_risk_unapproved = \"medium\"");
        assert!(
            matches!(&e, PolicyError::Field { field, .. } if field == "max_risk_unapproved"),
            "{e}"
        );
        assert!(e.to_string().contains("medium"), "{e}");
    }

    #[test]
    fn flow_is_on_by_default_and_read_by_name() {
        assert_eq!(ChainPolicy::default().flow, Flow::On);
        assert_eq!(ChainPolicy::from_toml_str("flow = \"off\"").unwrap().flow, Flow::Off);
        assert_eq!(ChainPolicy::from_toml_str("flow = \"on\"").unwrap().flow, Flow::On);
    }

    #[test]
    fn unknown_flow_is_rejected_naming_the_field() {
        let e = err("flow = \"strict\"");
        assert!(matches!(&e, PolicyError::Field { field, .. } if field == "flow"), "{e}");
        assert!(e.to_string().contains("strict"), "{e}");
    }

    #[test]
    fn invalid_toml_is_a_syntax_error() {
        assert!(matches!(err("max_tool_calls = = 3"), PolicyError::Syntax { .. }));
    }

    #[test]
    fn tool_override_is_parsed() {
        let p = ChainPolicy::from_toml_str(
            "[tools.send_email]\ndeny = true\n[tools.search]\nrisk = \"high\"\ncall_timeout_s = 5",
        )
        .unwrap();
        assert!(p.tools["send_email"].deny);
        assert_eq!(p.tools["search"].risk, Some(ToolRisk::High));
        assert_eq!(p.call_timeout("search"), Duration::from_secs(5));
        assert_eq!(p.call_timeout("other"), Duration::from_secs(60));
    }

    #[test]
    fn tool_override_negative_timeout_names_the_tool_field() {
        let e = err("tools.send_email.call_timeout_s = -1");
        assert_eq!(
            e.to_string(),
            "policy field `tools.send_email.call_timeout_s` (-1) must be a finite number of seconds above zero"
        );
    }

    #[test]
    fn tool_override_unknown_field_names_the_tool_field() {
        let e = err("[tools.send_email]\ndeny = true\ncolour = \"red\"");
        assert!(
            matches!(&e, PolicyError::Field { field, .. } if field == "tools.send_email.colour"),
            "{e}"
        );
    }

    #[test]
    fn tool_override_unknown_risk_names_the_tool_field() {
        let e = err("tools.send_email.risk = \"extreme\"");
        assert!(
            matches!(&e, PolicyError::Field { field, .. } if field == "tools.send_email.risk"),
            "{e}"
        );
    }

    #[test]
    fn tool_override_that_is_not_a_table_names_the_tool() {
        let e = err("tools.send_email = true");
        assert!(
            matches!(&e, PolicyError::Field { field, .. } if field == "tools.send_email"),
            "{e}"
        );
    }

    #[test]
    fn required_scopes_are_parsed() {
        let p = ChainPolicy::from_toml_str("[tools.pay]\nrequired_scopes = [\"payments:write\", \"payments:read\"]")
            .unwrap();
        let scopes: Vec<&str> = p.required_scopes("pay").iter().map(String::as_str).collect();
        assert_eq!(scopes, ["payments:read", "payments:write"]);
        assert!(p.required_scopes("other").is_empty());
    }

    #[test]
    fn required_scope_with_a_space_is_rejected_naming_the_field() {
        let e = err("tools.pay.required_scopes = [\"payments write\"]");
        assert!(
            matches!(&e, PolicyError::Field { field, .. } if field == "tools.pay.required_scopes"),
            "{e}"
        );
        assert!(e.to_string().contains("\"payments write\""), "{e}");
    }

    #[test]
    fn empty_required_scope_is_rejected_naming_the_field() {
        let e = err("tools.pay.required_scopes = [\"\"]");
        assert!(
            matches!(&e, PolicyError::Field { field, .. } if field == "tools.pay.required_scopes"),
            "{e}"
        );
    }

    #[test]
    fn required_scopes_that_are_not_strings_are_rejected_naming_the_field() {
        let e = err("tools.pay.required_scopes = [1]");
        assert!(
            matches!(&e, PolicyError::Field { field, .. } if field.starts_with("tools.pay.required_scopes")),
            "{e}"
        );
    }

    #[test]
    fn required_scopes_round_trip_through_toml() {
        let p = ChainPolicy::from_toml_str("tools.pay.required_scopes = [\"payments:write\"]").unwrap();
        let text = toml::to_string(&p).unwrap();
        assert_eq!(ChainPolicy::from_toml_str(&text).unwrap(), p);
    }

    #[test]
    fn effective_risk_prefers_the_override() {
        let p = ChainPolicy::from_toml_str("tools.rm.risk = \"critical\"").unwrap();
        assert_eq!(p.effective_risk("rm", ToolRisk::Safe), ToolRisk::Critical);
        assert_eq!(p.effective_risk("ls", ToolRisk::High), ToolRisk::High);
    }

    #[test]
    fn is_denied_only_for_denied_tools() {
        let p = ChainPolicy::from_toml_str("tools.rm.deny = true\ntools.ls.risk = \"safe\"").unwrap();
        assert!(p.is_denied("rm"));
        assert!(!p.is_denied("ls"));
        assert!(!p.is_denied("cat"));
    }

    #[test]
    fn needs_approval_compares_by_rank() {
        let p = ChainPolicy {
            max_risk_unapproved: ToolRisk::High,
            ..ChainPolicy::default()
        };
        assert!(!p.needs_approval(ToolRisk::Safe));
        assert!(!p.needs_approval(ToolRisk::High));
        assert!(p.needs_approval(ToolRisk::Critical));
    }

    #[test]
    fn granted_permissions_are_parsed() {
        let p = ChainPolicy::from_toml_str("granted_permissions = [\"fs.read\", \"net\"]").unwrap();
        assert_eq!(
            p.missing_permissions(&[Permission::FsRead, Permission::FsWrite, Permission::Net]),
            vec![Permission::FsWrite]
        );
    }

    #[test]
    fn default_policy_grants_no_permission() {
        assert_eq!(
            ChainPolicy::default().missing_permissions(Permission::ALL),
            Permission::ALL.to_vec()
        );
    }

    #[test]
    fn unknown_permission_is_rejected_naming_the_field() {
        let e = err("granted_permissions = [\"fs.read\", \"fs.exec\"]");
        assert!(
            matches!(&e, PolicyError::Field { field, .. } if field == "granted_permissions[1]"),
            "{e}"
        );
        assert!(e.to_string().contains("fs.exec"), "{e}");
    }

    #[test]
    fn granted_permissions_that_are_not_a_list_are_rejected_naming_the_field() {
        let e = err("granted_permissions = \"fs.read\"");
        assert!(
            matches!(&e, PolicyError::Field { field, .. } if field == "granted_permissions"),
            "{e}"
        );
    }

    #[test]
    fn allowed_tools_unset_allows_every_tool() {
        assert!(ChainPolicy::default().allows_tool("anything"));
    }

    #[test]
    fn allowed_tools_from_toml_allow_only_those() {
        let p = ChainPolicy::from_toml_str("allowed_tools = [\"search\"]").unwrap();
        assert!(p.allows_tool("search"));
        assert!(!p.allows_tool("send_email"));
    }

    #[test]
    fn restricting_twice_keeps_the_intersection() {
        let p = ChainPolicy::default()
            .restricted_to(["a", "b"], "first")
            .restricted_to(["b", "c"], "skill \"x\"");
        assert!(p.allows_tool("b"));
        assert!(!p.allows_tool("a") && !p.allows_tool("c"));
        assert_eq!(p.allowed_by.as_deref(), Some("skill \"x\""));
    }

    #[test]
    fn durations_of_an_unvalidated_policy_never_panic() {
        let p = ChainPolicy {
            call_timeout_s: -1.0,
            approval_timeout_s: f64::NAN,
            total_timeout_s: f64::INFINITY,
            ..ChainPolicy::default()
        };
        assert_eq!(p.call_timeout("x"), Duration::ZERO);
        assert_eq!(p.approval_timeout(), Duration::ZERO);
        assert_eq!(p.total_timeout(), Duration::MAX);
    }

    #[test]
    fn default_policy_round_trips_through_toml() {
        let text = toml::to_string(&ChainPolicy::default()).unwrap();
        assert_eq!(ChainPolicy::from_toml_str(&text).unwrap(), ChainPolicy::default());
    }

    #[test]
    fn every_policy_file_loads() {
        let mut loaded = 0;
        for entry in std::fs::read_dir(policies_dir()).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                ChainPolicy::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                loaded += 1;
            }
        }
        assert!(loaded >= 3, "only {loaded} policy files");
    }

    #[test]
    fn every_policy_file_sets_every_field() {
        let toml::Value::Table(fields) = toml::Value::try_from(ChainPolicy::default()).unwrap() else {
            panic!("a policy serializes to a table");
        };
        for name in ["default.toml", "strict.toml", "dev.toml"] {
            let text = std::fs::read_to_string(policies_dir().join(name)).unwrap();
            let table: toml::Table = text.parse().unwrap();
            for field in fields.keys() {
                assert!(table.contains_key(field), "{name} does not set `{field}`");
            }
        }
    }

    #[test]
    fn default_file_is_the_default_policy() {
        assert_eq!(load_named("default.toml"), ChainPolicy::default());
    }

    #[test]
    fn strict_file_is_no_looser_than_default() {
        let (s, d) = (load_named("strict.toml"), ChainPolicy::default());
        assert!(s.max_tool_calls < d.max_tool_calls);
        assert!(s.call_timeout_s < d.call_timeout_s);
        assert!(s.approval_timeout_s < d.approval_timeout_s);
        assert!(s.total_timeout_s < d.total_timeout_s);
        assert!(s.max_inline_result_bytes <= d.max_inline_result_bytes);
        assert!(s.max_risk_unapproved <= d.max_risk_unapproved);
        assert!(s.max_memory_bytes < d.max_memory_bytes);
        assert!(s.max_cpu_s < d.max_cpu_s);
        assert!(s.max_stdout_bytes < d.max_stdout_bytes);
        assert!(s.max_arg_bytes <= d.max_arg_bytes);
        assert!(s.max_result_bytes <= d.max_result_bytes);
        assert!(s.max_request_bytes <= d.max_request_bytes);
        assert!(s.granted_permissions.is_subset(&d.granted_permissions));
        assert_eq!(s.flow, Flow::On);
    }

    #[test]
    fn dev_file_is_no_tighter_than_default() {
        let (v, d) = (load_named("dev.toml"), ChainPolicy::default());
        assert!(v.max_tool_calls > d.max_tool_calls);
        assert!(v.call_timeout_s >= d.call_timeout_s);
        assert!(v.total_timeout_s > d.total_timeout_s);
        assert!(v.max_inline_result_bytes >= d.max_inline_result_bytes);
        assert_eq!(v.max_risk_unapproved, ToolRisk::High);
        assert!(v.max_memory_bytes >= d.max_memory_bytes);
        assert!(v.max_cpu_s > d.max_cpu_s);
        assert!(v.max_stdout_bytes >= d.max_stdout_bytes);
        assert!(v.max_arg_bytes >= d.max_arg_bytes);
        assert!(v.max_result_bytes >= d.max_result_bytes);
        assert!(v.max_request_bytes >= d.max_request_bytes);
        assert!(v.granted_permissions.is_superset(&d.granted_permissions));
    }
}
