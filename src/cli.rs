//! The `chainbox` command line: `demo`, `run`, `stubs` (the last two with
//! `--skill`), `serve`. The only code that knows about argv, stdout
//! formatting and exit codes.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use tokio_util::sync::CancellationToken;

use crate::approval::{Approval, ApprovalDecision};
use crate::chain::RunOptions;
use crate::flow::{FlowTools, FlowVerdict};
use crate::live::{ChainEvent, Observer};
use crate::manifest::Manifest;
use crate::mcp::sealed_state::StateKey;
use crate::mcp::serve::{self, ChainServer};
use crate::policy::{ChainPolicy, PythonChoice};
use crate::result::ChainRunResult;
use crate::skills::Skill;
use crate::store::sweep::{self, SweepOptions};
use crate::tools::ToolRisk;
use crate::workspace::WORKSPACE;
use crate::{Engine, ToolRegistry, demo, discovery, specs};

/// Code mode for agents: run a model-written Python chain in a wasm sandbox.
#[derive(Debug, Parser)]
#[command(name = "chainbox", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the built-in demo chain against the built-in demo tools.
    Demo {
        /// Print the ChainRunResult JSON instead of the readable report.
        #[arg(long)]
        json: bool,
        /// Copy the files the chain made (its workspace: media, written
        /// files) into this directory after the run.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run a chain script against the tools of a manifest.
    Run {
        /// The Python script, or `-` to read it from stdin.
        script: String,
        /// The tools manifest (TOML).
        #[arg(long)]
        tools: Option<PathBuf>,
        /// A policy file (TOML); defaults to the seed defaults.
        #[arg(long)]
        policy: Option<PathBuf>,
        /// How calls above `max_risk_unapproved` are approved.
        #[arg(long, value_enum, default_value_t = ApproveMode::Ask)]
        approve: ApproveMode,
        /// Print exactly one ChainRunResult JSON on stdout.
        #[arg(long)]
        json: bool,
        /// Copy the files the chain made (its workspace: media, written
        /// files) into this directory after the run.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run under a skill: only its `allowed_tools` may be called (any
        /// other call is denied). A name is looked up as
        /// `skills/NAME/SKILL.md` beside the tools manifest (or in the
        /// current folder); a path names the skill's folder.
        #[arg(long, value_name = "NAME")]
        skill: Option<String>,
        /// Which Python runs the script (overrides the policy's `python`):
        /// `auto` runs monty unless the script needs CPython.
        #[arg(long, value_enum)]
        python: Option<PythonChoice>,
        /// Run the chain durably, kept in this store (`sqlite:PATH`,
        /// `postgres://...`): with `--approve defer` it suspends at a call
        /// that needs approval (exit code 3) until `chainbox decide` and
        /// `chainbox resume` continue it, from any process.
        #[arg(long, value_name = "URL")]
        state: Option<String>,
        /// Where offloaded results and media go (`file:DIR`, `memory:`,
        /// `s3://BUCKET/PREFIX` with the standard `AWS_*` variables): give
        /// durable chains a store every process that resumes them reaches.
        /// Default: in memory, this process only.
        #[arg(long, value_name = "URL")]
        artifacts: Option<String>,
        /// Run the script as a cell of a session kept in `--state`: `new`
        /// starts one (the result names it: `session_id`), an id continues
        /// it. The names earlier cells bound are defined, their tool calls
        /// are not made again.
        #[arg(long, value_name = "new|ID", requires = "state")]
        session: Option<String>,
    },
    /// List the sessions of a store (`sessions --state URL`), or end one
    /// (`sessions rm ID --state URL`).
    Sessions {
        /// `rm ID` ends session ID: no cell runs in it again.
        #[command(subcommand)]
        action: Option<SessionsAction>,
        /// The store (`sqlite:PATH`, `postgres://...`).
        #[arg(long, value_name = "URL", global = true)]
        state: Option<String>,
        /// Print JSON (one array) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List the durable chains' calls that wait on a decision, with the
    /// owner of each chain (`SUBJECT (ISSUER)`, or `local` for a chain the
    /// local user started).
    Approvals {
        /// The store (`sqlite:PATH`, `postgres://...`).
        #[arg(long, value_name = "URL")]
        state: String,
        /// Only the chains whose owner's subject is SUB; `--owner local`
        /// for the chains the local user started (no owner).
        #[arg(long, value_name = "SUB")]
        owner: Option<String>,
        /// Print JSON (one array) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Record a decision on a suspended chain's pending call.
    Decide {
        /// The chain (its `chain_id`).
        chain_id: String,
        /// Approve or deny the call.
        #[arg(value_enum)]
        decision: DecisionArg,
        /// Approve with these arguments instead (a JSON object).
        #[arg(long, value_name = "JSON")]
        arguments: Option<String>,
        /// Why (shown to the script with a denial).
        #[arg(long)]
        reason: Option<String>,
        /// Who decides (recorded with the decision).
        #[arg(long, default_value = "cli")]
        by: String,
        /// The store (`sqlite:PATH`, `postgres://...`).
        #[arg(long, value_name = "URL")]
        state: String,
    },
    /// Continue a durable chain from the start, answered from its journal:
    /// to its end or its next suspension.
    Resume {
        /// The chain (its `chain_id`).
        chain_id: String,
        /// The tools manifest (TOML) its tools come from.
        #[arg(long)]
        tools: Option<PathBuf>,
        /// How calls needing approval that have no decision are approved.
        #[arg(long, value_enum, default_value_t = ApproveMode::Defer)]
        approve: ApproveMode,
        /// The store (`sqlite:PATH`, `postgres://...`).
        #[arg(long, value_name = "URL")]
        state: String,
        /// Where offloaded results and media go (`file:DIR`, `memory:`,
        /// `s3://BUCKET/PREFIX` with the standard `AWS_*` variables): the
        /// chain's earlier results are read from it, so give the one it ran with.
        /// Default: in memory, this process only.
        #[arg(long, value_name = "URL")]
        artifacts: Option<String>,
        /// Print exactly one ChainRunResult JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Check a chain script against the tools' stubs without running it:
    /// tool calls that cannot succeed (an unknown tool or argument, a
    /// missing one, a value that cannot fit, a call used before it is
    /// awaited). Exit code 1 if the policy's `type_check` would refuse it
    /// (`enforce` unless `--policy` says otherwise), 0 otherwise.
    Check {
        /// The Python script, or `-` to read it from stdin.
        script: String,
        /// The tools manifest (TOML); the demo tools if omitted.
        #[arg(long)]
        tools: Option<PathBuf>,
        /// A policy file (TOML): its `type_check` applies.
        #[arg(long)]
        policy: Option<PathBuf>,
        /// Print the verdict as JSON (`refused`, `diagnostics`, `warnings`).
        #[arg(long)]
        json: bool,
    },
    /// Print the Python stubs (signatures and docstrings) a model should be shown.
    Stubs {
        /// The tools manifest (TOML); the demo tools if omitted.
        #[arg(long)]
        tools: Option<PathBuf>,
        /// Put this skill's instructions above the stubs and show only its
        /// tools (found as for `run --skill`).
        #[arg(long, value_name = "NAME")]
        skill: Option<String>,
    },
    /// Print the tool declarations a model provider expects (a JSON array):
    /// `run_chain` first, then every tool of the manifest that has a spec.
    Specs {
        /// The provider whose shape to write.
        #[arg(long, value_enum)]
        provider: SpecProvider,
        /// The tools manifest (TOML); the demo tools if omitted.
        #[arg(long)]
        tools: Option<PathBuf>,
        /// The policy whose limits `run_chain`'s description states.
        #[arg(long)]
        policy: Option<PathBuf>,
        /// Print only this tool's declaration (`run_chain` for code mode alone).
        #[arg(long, value_name = "NAME")]
        only: Option<String>,
    },
    /// Serve one `run_chain` tool over MCP: on stdio, or streamable HTTP with `--http`.
    Serve {
        /// The tools manifest (TOML) whose tools chains may call.
        #[arg(long)]
        tools: Option<PathBuf>,
        /// A policy file (TOML); defaults to the seed defaults.
        #[arg(long)]
        policy: Option<PathBuf>,
        /// How calls above `max_risk_unapproved` are approved when the MCP
        /// client cannot be asked (it did not declare elicitation).
        #[arg(long, value_enum, default_value_t = ServeApproveMode::Deny)]
        approve: ServeApproveMode,
        /// Serve streamable HTTP on this address (e.g. `127.0.0.1:8931`; port
        /// 0 picks a free one) at `/mcp`, instead of stdio. The bound address
        /// is printed on stderr.
        #[arg(long, value_name = "ADDR")]
        http: Option<SocketAddr>,
        /// Authenticate every HTTP request as an OAuth 2.1 resource server:
        /// a bearer access token (a JWT) from this issuer, with `aud` the
        /// `--auth-resource`, granting `chainbox:run`. Chains, approvals and
        /// request states belong to the token's principal (`iss`, `sub`).
        #[arg(
            long,
            value_name = "ISSUER_URL",
            env = "CHAINBOX_AUTH_ISSUER",
            requires_all = ["http", "auth_resource"]
        )]
        auth_issuer: Option<String>,
        /// The canonical URL clients connect to (e.g.
        /// `https://chains.example.com/mcp`): the audience tokens must name
        /// and the metadata's `resource`. Configured, never taken from a
        /// request's `Host`.
        #[arg(
            long,
            value_name = "PUBLIC_URL",
            env = "CHAINBOX_AUTH_RESOURCE",
            requires = "auth_issuer"
        )]
        auth_resource: Option<String>,
        /// Where the issuer's signing keys are (a JWK Set URL); by default
        /// the `jwks_uri` of the issuer's metadata.
        #[arg(long, value_name = "URL", env = "CHAINBOX_AUTH_JWKS", requires = "auth_issuer")]
        auth_jwks: Option<String>,
        /// Another audience accepted besides `--auth-resource` (an identity
        /// provider's API identifier); repeatable (comma-separated in the
        /// environment variable).
        #[arg(
            long = "auth-audience",
            value_name = "AUDIENCE",
            env = "CHAINBOX_AUTH_AUDIENCE",
            value_delimiter = ',',
            requires = "auth_issuer"
        )]
        auth_audiences: Vec<String>,
        /// Serve `--http` on any address to anyone who reaches it, without
        /// authentication: only behind a proxy that authenticates callers.
        #[arg(long, requires = "http", conflicts_with = "auth_issuer")]
        insecure_no_auth: bool,
        /// Gone: it served remote callers unauthenticated. Use
        /// `--auth-issuer` or `--insecure-no-auth`.
        #[arg(long, hide = true)]
        allow_remote: bool,
        /// Largest request read, in bytes (overrides the policy's
        /// `max_request_bytes`, 16 MiB by default): a larger one gets a
        /// JSON-RPC error naming the limit.
        #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
        max_request_bytes: Option<u64>,
        /// Keep chains in this store (`sqlite:PATH` or `postgres://...`):
        /// a call needing the client's approval suspends its chain there,
        /// and the client's retry resumes it on any server on the store.
        /// The `requestState` is sealed with `CHAINBOX_STATE_KEY` (hex or
        /// base64, at least 32 bytes) if set, else with a key kept in the store.
        #[arg(long, value_name = "URL")]
        state: Option<String>,
        /// Where offloaded results and media go (`file:DIR`, `memory:`,
        /// `s3://BUCKET/PREFIX` with the standard `AWS_*` variables): shared
        /// by the nodes that serve the same chains.
        /// Default: in memory, this process only.
        #[arg(long, value_name = "URL")]
        artifacts: Option<String>,
        /// With `--state`: sweep the stores every SECONDS (0: never), one
        /// node of those sharing the store at a time: abandoned and
        /// expired chains finished, finished ones deleted after their
        /// `retention_s`, old unpinned artifacts deleted (see `chainbox gc`).
        #[arg(long, value_name = "SECONDS", default_value_t = 300, requires = "state")]
        sweep_every: u64,
        /// How old an artifact no chain pins (and no unfinished chain's
        /// journal names) must be before a sweep deletes it; keep it above
        /// the policies' `total_timeout_s`.
        #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
        artifact_grace: u64,
    },
    /// Sweep a chain store once (what `serve --state` does every few
    /// minutes): finish the durable chains no process will finish (kind
    /// `abandoned`: their run died before any suspension; `expired`: they
    /// waited past `approval_expires_s`; sessions past their life), delete
    /// finished chains past their `retention_s`, and delete the artifacts
    /// no chain pins or needs that are older than `--artifact-grace`.
    Gc {
        /// The store (`sqlite:PATH`, `postgres://...`).
        #[arg(long, value_name = "URL")]
        state: String,
        /// The artifact store its chains use (`file:DIR`, `s3://BUCKET/PREFIX`;
        /// with `sqlite:PATH`, `file:PATH.artifacts` by default, as `run`'s).
        /// Without one, no artifact is deleted and no pin released.
        #[arg(long, value_name = "URL")]
        artifacts: Option<String>,
        /// How old an artifact no chain pins (and no unfinished chain's
        /// journal names) must be before it is deleted; keep it above the
        /// policies' `total_timeout_s` (a running chain's artifacts).
        #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
        artifact_grace: u64,
        /// Print the counts as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

/// Approval modes of `chainbox serve`: there is no terminal to ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ServeApproveMode {
    /// Approve every call.
    Auto,
    /// Deny every call that needs approval.
    Deny,
}

/// Providers of `chainbox specs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SpecProvider {
    /// OpenAI Responses API `function` tools.
    Openai,
    /// OpenAI Chat Completions API `function` tools.
    OpenaiChat,
    /// Anthropic Messages API tools.
    Anthropic,
}

impl From<SpecProvider> for specs::Provider {
    fn from(p: SpecProvider) -> Self {
        match p {
            SpecProvider::Openai => specs::Provider::Openai,
            SpecProvider::OpenaiChat => specs::Provider::OpenaiChat,
            SpecProvider::Anthropic => specs::Provider::Anthropic,
        }
    }
}

/// Approval modes of `chainbox run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ApproveMode {
    /// Approve every call.
    Auto,
    /// Deny every call that needs approval.
    Deny,
    /// Ask on the terminal; without a terminal, deny.
    Ask,
    /// Decide later: a durable chain (`--state`) suspends at the call;
    /// any other chain's call is denied.
    Defer,
}

/// What `chainbox sessions` does besides listing.
#[derive(Debug, Subcommand)]
enum SessionsAction {
    /// End a session for good: no cell runs in it again.
    Rm {
        /// The session (its `session_id`).
        session_id: String,
    },
}

/// The decisions of `chainbox decide`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DecisionArg {
    /// Run the call (with `--arguments`, with those instead).
    Approve,
    /// Refuse the call: `PermissionError` in the script.
    Deny,
}

/// Runs the command line and returns the process exit code: 0 iff the
/// chain's status is ok (or the command succeeded), 1 for a failed chain,
/// 2 for bad input.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let telemetry = init_log();
    // A chain `run` starts continues the caller's trace (`TRACEPARENT`):
    // its span is made on this thread, under this context.
    let parent = crate::telemetry::context_from_env().map(opentelemetry::Context::attach);
    let code = match execute(cli) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("chainbox: {message}");
            ExitCode::from(2)
        }
    };
    drop(parent);
    // The process exits next: what is still buffered is sent now.
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    code
}

/// The environment variable holding the log filter (`info`, `debug`,
/// `chainbox=debug`, …): the log goes to stderr, and without it nowhere
/// (stdout is a chain's report, or `serve`'s MCP stream).
const LOG_ENV: &str = "CHAINBOX_LOG";

/// The log on stderr (`CHAINBOX_LOG`) and the OpenTelemetry export (the
/// `OTEL_*` environment, [`crate::telemetry`]), each only when asked for:
/// with neither, no subscriber is installed at all. The exporters, to be
/// shut down at the end.
fn init_log() -> Option<crate::telemetry::Telemetry> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = std::env::var(LOG_ENV)
        .ok()
        .and_then(|filter| match tracing_subscriber::EnvFilter::try_new(&filter) {
            Ok(filter) => Some(filter),
            Err(e) => {
                eprintln!("chainbox: {LOG_ENV}={filter:?} is no log filter ({e}); logging off");
                None
            }
        });
    let telemetry = crate::telemetry::Telemetry::from_env().unwrap_or_else(|e| {
        eprintln!("chainbox: {e}; OpenTelemetry export off");
        None
    });
    let otel = telemetry.as_ref().and_then(|t| t.layer());
    if filter.is_none() && otel.is_none() {
        return telemetry;
    }
    let log = filter.map(|filter| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .with_filter(filter)
    });
    let _ = tracing_subscriber::registry().with(log).with(otel).try_init();
    telemetry
}

/// Why a command could not run (exit code 2): each names the flag or input
/// at fault, and keeps the error that refused it.
#[derive(Debug, thiserror::Error)]
enum CliError {
    /// The script file (or stdin) could not be read.
    #[error("reading the script {arg}: {source}")]
    Script { arg: String, source: std::io::Error },
    /// Stdin could not be read for `-`.
    #[error("reading the script from stdin: {0}")]
    Stdin(std::io::Error),
    /// The async runtime could not start.
    #[error("starting the async runtime: {0}")]
    Runtime(std::io::Error),
    /// `--policy` could not be loaded.
    #[error("--policy {}: {source}", path.display())]
    Policy {
        path: PathBuf,
        source: crate::policy::PolicyError,
    },
    /// `--skill` could not be loaded, or names tools the registry lacks.
    #[error("--skill {arg}: {source}")]
    Skill {
        arg: String,
        source: crate::skills::SkillError,
    },
    /// The tools manifest could not be loaded or its tools started.
    #[error(transparent)]
    Manifest(#[from] crate::manifest::ManifestError),
    /// The registry could not be arranged for chains.
    #[error(transparent)]
    Registry(#[from] crate::tools::RegistryError),
    /// The engine could not be built.
    #[error(transparent)]
    Engine(#[from] crate::EngineError),
    /// `serve` could not bind, start or keep serving.
    #[error(transparent)]
    Serve(#[from] serve::ServeError),
    /// The address `serve --http` bound could not be read back.
    #[error("reading the bound address: {0}")]
    BoundAddress(std::io::Error),
    /// `--out`'s workspace could not be made.
    #[error("creating a workspace for --out: {0}")]
    Workspace(std::io::Error),
    /// The workspace's files could not be copied into `--out`.
    #[error("--out {}: {source}", path.display())]
    Out { path: PathBuf, source: std::io::Error },
    /// `specs --only` names no tool with a spec for the provider.
    #[error("--only {name}: no tool of that name has a spec for {provider}")]
    NoSpec { name: String, provider: specs::Provider },
    /// The specs could not be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// `--state`'s store could not be reached or refused.
    #[error("--state: {0}")]
    Store(crate::store::StoreError),
    /// A durable chain could not be run, decided or resumed.
    #[error(transparent)]
    Durable(crate::durable::DurableError),
    /// `serve --state`'s key for sealing request states is unusable.
    #[error(transparent)]
    StateKey(crate::mcp::sealed_state::StateKeyError),
    /// `--artifacts` names no store this chainbox can open.
    #[error("--artifacts: {0}")]
    Artifacts(crate::artifacts::ArtifactError),
    /// `gc` could not sweep the stores.
    #[error("gc: {0}")]
    Sweep(crate::store::sweep::SweepError),
    /// `serve --auth-*` names an unusable URL.
    #[cfg(feature = "oauth")]
    #[error(transparent)]
    Auth(crate::auth::ConfigError),
    /// A flag needs a cargo feature this build lacks (the flag, the feature).
    #[cfg(not(feature = "oauth"))]
    #[error("{0} needs chainbox built with the `{1}` feature (on by default)")]
    NotBuiltIn(&'static str, &'static str),
    /// `serve --allow-remote`, whose meaning is gone.
    #[error(
        "--allow-remote is gone: a remote `serve` authenticates its callers with --auth-issuer ISSUER_URL \
         --auth-resource PUBLIC_URL, or runs behind an authenticating proxy with --insecure-no-auth"
    )]
    AllowRemoteGone,
    /// `sessions` without `--state`.
    #[error("sessions: --state URL names the store the sessions are in")]
    NoState,
    /// `decide --arguments` is not a JSON object.
    #[error("--arguments {0}: not a JSON object")]
    Arguments(String),
}

fn approval_for(mode: ApproveMode) -> Approval {
    match mode {
        ApproveMode::Auto => Approval::auto(ToolRisk::Critical),
        ApproveMode::Deny => Approval::deny_all(),
        ApproveMode::Ask => Approval::terminal(),
        ApproveMode::Defer => Approval::defer(),
    }
}

/// Durable chains on a new engine (its artifacts where `--artifacts` says)
/// and the store `--state` names.
fn durable(
    runtime: &tokio::runtime::Runtime,
    state: &str,
    artifacts: Option<&str>,
) -> Result<crate::durable::Durable, CliError> {
    let store = runtime
        .block_on(crate::store::connect(state))
        .map_err(CliError::Store)?;
    let artifacts = durable_artifacts(state, artifacts);
    Ok(crate::durable::Durable::new(engine(artifacts.as_deref())?, store))
}

/// The artifact store of a durable chain's engine: `--artifacts`, else, for
/// a SQLite state (one machine), the directory `PATH.artifacts` beside its
/// database, so that a resume in another process loads what the chain
/// offloaded before it suspended. A PostgreSQL state without `--artifacts`
/// is warned about: its offloaded results live in one process's memory.
fn durable_artifacts(state: &str, artifacts: Option<&str>) -> Option<String> {
    if let Some(url) = artifacts {
        return Some(url.to_owned());
    }
    match state.split_once(':') {
        Some(("sqlite", rest)) => {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            let path = path.split('?').next().unwrap_or_default();
            (!path.is_empty() && path != ":memory:").then(|| format!("file:{path}.artifacts"))
        }
        Some(("memory", _)) => None,
        _ => {
            eprintln!(
                "chainbox: --state without --artifacts: results a chain offloads stay in this process, \
                 and a resume elsewhere cannot load them; pass --artifacts s3://BUCKET/PREFIX (or file:DIR)"
            );
            None
        }
    }
}

/// An engine whose artifact store is the one `--artifacts` names (the
/// default, in memory, without it).
fn engine(artifacts: Option<&str>) -> Result<Engine, CliError> {
    let artifacts = match artifacts {
        Some(url) => Some(crate::artifacts::open(url).map_err(CliError::Artifacts)?),
        None => None,
    };
    Ok(Engine::with_config(crate::EngineConfig {
        artifacts,
        ..crate::EngineConfig::default()
    })?)
}

fn execute(cli: Cli) -> Result<ExitCode, CliError> {
    match cli.command {
        Command::Demo { json, out } => {
            let runtime = runtime()?;
            let registry = demo::demo_registry();
            let live = LiveStdout::start(!json);
            let (result, saved) = run_chain(
                &runtime,
                demo::DEMO_SCRIPT,
                &registry,
                &ChainPolicy::default(),
                &Approval::auto(ToolRisk::Critical),
                Output {
                    dir: out.as_deref(),
                    observer: live.observer(),
                },
                None,
            )?;
            Ok(live.report(&result, &saved, json))
        }
        Command::Run {
            script,
            tools,
            policy,
            approve,
            json,
            out,
            skill,
            python,
            state,
            artifacts,
            session,
        } => {
            let source = read_script(&script)?;
            let runtime = runtime()?;
            let registry = match &tools {
                Some(path) => load_registry(&runtime, path)?,
                None => ToolRegistry::new(),
            };
            let mut policy = load_policy(policy.as_deref())?;
            if let Some(skill) = skill {
                let skill = load_skill(&skill, tools.as_deref(), &registry)?;
                policy = skill.restrict(policy);
            }
            if let Some(python) = python {
                policy.python = python;
            }
            let approval = approval_for(approve);
            let live = LiveStdout::start(!json);
            if let Some(state) = state {
                let durable = durable(&runtime, &state, artifacts.as_deref())?.with_observer(live.observer());
                let result = match &session {
                    Some(session) => {
                        runtime.block_on(durable.run_cell(session, &source, &registry, &policy, &approval))
                    }
                    None => runtime.block_on(durable.run(&source, &registry, &policy, &approval)),
                }
                .map_err(CliError::Durable)?;
                return Ok(live.report(&result, &[], json));
            }
            let (result, saved) = run_chain(
                &runtime,
                &source,
                &registry,
                &policy,
                &approval,
                Output {
                    dir: out.as_deref(),
                    observer: live.observer(),
                },
                artifacts.as_deref(),
            )?;
            Ok(live.report(&result, &saved, json))
        }
        Command::Sessions { action, state, json } => {
            let state = state.ok_or(CliError::NoState)?;
            let runtime = runtime()?;
            let durable = durable(&runtime, &state, None)?;
            if let Some(SessionsAction::Rm { session_id }) = action {
                runtime
                    .block_on(durable.end_session(&session_id))
                    .map_err(CliError::Durable)?;
                println!("session {session_id} ended");
                return Ok(ExitCode::SUCCESS);
            }
            let sessions = runtime.block_on(durable.sessions()).map_err(CliError::Durable)?;
            if json {
                println!("{}", serde_json::to_string(&sessions)?);
                return Ok(ExitCode::SUCCESS);
            }
            let mut rows = vec![
                [
                    "session_id",
                    "owner",
                    "cells",
                    "interpreter",
                    "state",
                    "last_used_at",
                    "expires_at",
                ]
                .map(str::to_owned),
            ];
            for session in &sessions {
                rows.push([
                    session.session_id.clone(),
                    session
                        .owner
                        .as_ref()
                        .map_or_else(|| "local".to_owned(), ToString::to_string),
                    session.cells.to_string(),
                    session.interpreter.as_str().to_owned(),
                    session.state.clone(),
                    session.last_used_at.clone(),
                    session.expires_at.clone(),
                ]);
            }
            print_table(&rows);
            Ok(ExitCode::SUCCESS)
        }
        Command::Approvals { state, owner, json } => {
            /// How the table names a chain's owner.
            const LOCAL: &str = "local";
            let runtime = runtime()?;
            let store = runtime
                .block_on(crate::store::connect(&state))
                .map_err(CliError::Store)?;
            let mut pending = runtime.block_on(store.pending()).map_err(CliError::Store)?;
            if let Some(wanted) = &owner {
                pending.retain(|chain| match &chain.owner {
                    Some(owner) => owner.subject == *wanted,
                    None => wanted == LOCAL,
                });
            }
            if json {
                let rows: Vec<serde_json::Value> = pending
                    .iter()
                    .map(|chain| {
                        let call = &chain.call;
                        let mut row = serde_json::json!({
                            "chain_id": chain.chain_id, "owner": chain.owner, "seq": call.seq, "tool": call.tool,
                            "arguments": call.arguments, "risk": call.risk, "requested_at": call.requested_at,
                        });
                        if !call.provenance.is_empty() {
                            row["provenance"] = serde_json::to_value(&call.provenance)?;
                        }
                        Ok(row)
                    })
                    .collect::<Result<_, serde_json::Error>>()?;
                println!("{}", serde_json::to_string(&rows)?);
            } else {
                let mut rows = vec![[
                    "chain_id".to_owned(),
                    "owner".to_owned(),
                    "call".to_owned(),
                    "tool".to_owned(),
                    "risk".to_owned(),
                    "requested_at".to_owned(),
                    "arguments".to_owned(),
                ]];
                for chain in &pending {
                    let call = &chain.call;
                    rows.push([
                        chain.chain_id.clone(),
                        chain
                            .owner
                            .as_ref()
                            .map_or_else(|| LOCAL.to_owned(), ToString::to_string),
                        format!("#{}", call.seq),
                        call.tool.clone(),
                        match crate::approval::provenance_note(&call.provenance) {
                            Some(note) => format!("{} ({note})", call.risk),
                            None => call.risk.to_string(),
                        },
                        call.requested_at.clone(),
                        serde_json::to_string(&call.arguments)?,
                    ]);
                }
                print_table(&rows);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Decide {
            chain_id,
            decision,
            arguments,
            reason,
            by,
            state,
        } => {
            let decision = match (decision, arguments) {
                (DecisionArg::Approve, None) => ApprovalDecision::Approved,
                (DecisionArg::Approve, Some(text)) => match serde_json::from_str(&text) {
                    Ok(serde_json::Value::Object(arguments)) => ApprovalDecision::Modified { arguments },
                    _ => return Err(CliError::Arguments(text)),
                },
                (DecisionArg::Deny, _) => ApprovalDecision::Denied { reason },
            };
            let runtime = runtime()?;
            let durable = durable(&runtime, &state, None)?;
            let recorded = runtime
                .block_on(durable.decide(&chain_id, decision, &by))
                .map_err(CliError::Durable)?;
            println!("{}", serde_json::to_string(&recorded)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Resume {
            chain_id,
            tools,
            approve,
            state,
            artifacts,
            json,
        } => {
            let runtime = runtime()?;
            let registry = match &tools {
                Some(path) => load_registry(&runtime, path)?,
                None => ToolRegistry::new(),
            };
            let live = LiveStdout::start(!json);
            let durable = durable(&runtime, &state, artifacts.as_deref())?.with_observer(live.observer());
            let result = runtime
                .block_on(durable.resume(&chain_id, &registry, &approval_for(approve)))
                .map_err(CliError::Durable)?;
            Ok(live.report(&result, &[], json))
        }
        Command::Check {
            script,
            tools,
            policy,
            json,
        } => {
            let runtime = runtime()?;
            let registry = match &tools {
                Some(path) => load_registry(&runtime, path)?,
                None => demo::demo_registry(),
            };
            // The check's own command enforces unless a policy says otherwise.
            let loaded = load_policy(policy.as_deref())?;
            let mode = match &policy {
                Some(_) => loaded.type_check,
                None => crate::TypeCheck::Enforce,
            };
            let script = read_script(&script)?;
            let verdict = crate::check::Checker::default().check(&script, &registry, mode, false);
            let flow = crate::check::flow::analyze(&script, &FlowTools::new(&registry, &loaded), false);
            print!("{}", check_report(&verdict, &flow, json));
            Ok(if verdict.refused() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Stubs { tools, skill } => {
            let runtime = runtime()?;
            let registry = match &tools {
                Some(path) => load_registry(&runtime, path)?,
                None => demo::demo_registry(),
            };
            match skill {
                Some(skill) => print!("{}", load_skill(&skill, tools.as_deref(), &registry)?.stubs(&registry)),
                None => print!("{}", discovery::model_stubs(&registry)),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Specs {
            provider,
            tools,
            policy,
            only,
        } => {
            let runtime = runtime()?;
            let registry = match &tools {
                Some(path) => load_registry(&runtime, path)?,
                None => demo::demo_registry(),
            };
            let policy = load_policy(policy.as_deref())?;
            let provider = provider.into();
            let run_chain = crate::run_chain::run_chain_tool(&registry, &policy);
            let mut all = vec![specs::ToolSpec::Function(specs::FunctionSpec::new(
                run_chain.name,
                run_chain.description,
                run_chain.input_schema,
            ))];
            all.extend(specs::specs_of(&registry, provider));
            let wire: Vec<serde_json::Value> = all
                .iter()
                .filter(|spec| only.as_deref().is_none_or(|name| spec.name() == Some(name)))
                .map(|spec| spec.to_wire(provider))
                .collect();
            if let Some(name) = &only
                && wire.is_empty()
            {
                return Err(CliError::NoSpec {
                    name: name.clone(),
                    provider,
                });
            }
            let text = serde_json::to_string_pretty(&wire)?;
            println!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Gc {
            state,
            artifacts,
            artifact_grace,
            json,
        } => {
            let runtime = runtime()?;
            let store = runtime
                .block_on(crate::store::connect(&state))
                .map_err(CliError::Store)?;
            let artifacts = match artifacts {
                Some(url) => Some(url),
                None if state.starts_with("sqlite:") => durable_artifacts(&state, None),
                None => None,
            };
            let artifacts = match artifacts {
                Some(url) => Some(crate::artifacts::open(&url).map_err(CliError::Artifacts)?),
                None => None,
            };
            let options = SweepOptions {
                artifact_grace: Duration::from_secs(artifact_grace),
                ..SweepOptions::default()
            };
            let report = runtime
                .block_on(sweep::sweep(&store, artifacts.as_ref(), &options))
                .map_err(CliError::Sweep)?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                let left = &report.remaining;
                println!(
                    "finished {} abandoned and {} expired chains, ended {} sessions; deleted {} finished chains and {} artifacts",
                    report.abandoned, report.expired, report.sessions_ended, report.deleted, report.artifacts_deleted
                );
                println!(
                    "left: {} chains ({} finished), {} journal entries, {} decisions, {} sessions, {} tasks",
                    left.chains, left.finished, left.journal, left.decisions, left.sessions, left.tasks
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve {
            tools,
            policy,
            approve,
            http,
            auth_issuer,
            auth_resource,
            auth_jwks,
            auth_audiences,
            insecure_no_auth,
            allow_remote,
            max_request_bytes,
            state,
            artifacts,
            sweep_every,
            artifact_grace,
        } => {
            if allow_remote {
                return Err(CliError::AllowRemoteGone);
            }
            let mut policy = load_policy(policy.as_deref())?;
            let access = match (auth_issuer, auth_resource) {
                #[cfg(not(feature = "oauth"))]
                (Some(_), Some(_)) => {
                    let _ = (auth_jwks, auth_audiences);
                    return Err(CliError::NotBuiltIn("--auth-issuer", "oauth"));
                }
                #[cfg(feature = "oauth")]
                (Some(issuer), Some(resource)) => {
                    let mut config = crate::auth::AuthConfig::new(&issuer, &resource, auth_jwks.as_deref())
                        .map_err(CliError::Auth)?;
                    config.extra_audiences = auth_audiences;
                    // The metadata offers every scope the policy asks for.
                    config.extra_scopes = policy
                        .tools
                        .values()
                        .flat_map(|t| t.required_scopes.iter().cloned())
                        .collect();
                    serve::HttpAccess::OAuth(Arc::new(crate::auth::Authenticator::new(config)))
                }
                _ if insecure_no_auth => serve::HttpAccess::InsecureNoAuth,
                _ => serve::HttpAccess::Loopback,
            };
            // Refuse a bad address before anything slow starts.
            let listener = match http {
                Some(addr) => Some(serve::bind_http(addr, &access)?),
                None => None,
            };
            let runtime = runtime()?;
            // From here on SIGTERM and SIGINT stop the server in order (its
            // MCP servers are started next), also while it starts.
            let shutdown = CancellationToken::new();
            stop_on_signals(&runtime, shutdown.clone());
            #[cfg(feature = "oauth")]
            if let serve::HttpAccess::OAuth(auth) = &access {
                // The keys now, so that a wrong issuer shows at start; the
                // server starts anyway and fetches them when asked (an
                // identity provider may come up after it).
                if let Err(e) = runtime.block_on(auth.keys().prefetch()) {
                    eprintln!("chainbox: warning: {e}; requests get 503 until the issuer's keys can be fetched");
                }
            }
            let registry = match &tools {
                Some(path) => load_registry(&runtime, path)?,
                None => ToolRegistry::new(),
            };
            if let Some(bytes) = max_request_bytes {
                policy.max_request_bytes = bytes;
            }
            let fallback = match approve {
                ServeApproveMode::Auto => Approval::auto(ToolRisk::Critical),
                ServeApproveMode::Deny => Approval::deny_all(),
            };
            let artifacts = match &state {
                Some(state) => durable_artifacts(state, artifacts.as_deref()),
                None => artifacts,
            };
            let engine = engine(artifacts.as_deref())?;
            if policy.python != PythonChoice::Monty {
                // A server lives for many chains: load (or compile) the CPython
                // guest and its first spare now, in the background, so the
                // first chain that needs it does not wait for that. A failure
                // is that chain's error to report.
                let engine = engine.clone();
                runtime.spawn(async move {
                    let started = std::time::Instant::now();
                    match engine.prepare_cpython().await {
                        Ok(()) => tracing::info!(
                            "the CPython guest is ready, prepared in the background in {} ms",
                            started.elapsed().as_millis()
                        ),
                        Err(e) => tracing::warn!("the CPython guest could not be prepared: {e}"),
                    }
                });
            }
            let server = match state {
                None => ChainServer::new(engine, registry, policy, fallback),
                Some(state) => {
                    let store = runtime
                        .block_on(crate::store::connect(&state))
                        .map_err(CliError::Store)?;
                    let key = runtime
                        .block_on(StateKey::from_env_or_store(store.as_ref()))
                        .map_err(CliError::StateKey)?;
                    let durable = crate::durable::Durable::new(engine.clone(), store);
                    ChainServer::with_store(engine, registry, policy, fallback, durable, key)
                }
            };
            if sweep_every > 0 {
                let options = SweepOptions {
                    artifact_grace: Duration::from_secs(artifact_grace),
                    ..SweepOptions::default()
                };
                let _guard = runtime.enter();
                server.sweep_every(Duration::from_secs(sweep_every), options);
            }
            let served = runtime.block_on(serve(server, listener, access, shutdown));
            // Dropping the runtime's tasks drops what is left of the chains
            // and the registry: command tools and MCP servers are killed
            // with them. A read of stdin in flight cannot be cancelled, so
            // the runtime is waited for only so long; whatever is left of
            // the children after that is ended by force.
            runtime.shutdown_timeout(SHUTDOWN_GRACE);
            end_children();
            served?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// What `chainbox check` prints: the verdict as JSON, or one line per
/// finding and a closing line.
/// `chainbox check`'s report: the check's verdict, then the data-flow
/// policy's (which guarded tools will ask for approval, once which
/// untrusted results have arrived).
fn check_report(verdict: &crate::check::Verdict, flow: &FlowVerdict, json: bool) -> String {
    let mut sinks: Vec<(&str, &crate::flow::Taint)> = flow.sinks().collect();
    sinks.sort_by_key(|(tool, _)| *tool);
    if json {
        let flow: serde_json::Map<String, serde_json::Value> = sinks
            .iter()
            .map(|(tool, taint)| {
                let from = serde_json::json!({"any": taint.any, "tools": taint.tools});
                ((*tool).to_owned(), from)
            })
            .collect();
        let report = serde_json::json!({
            "refused": verdict.refused(),
            "diagnostics": verdict.refusals,
            "warnings": verdict.warnings,
            "flow": flow,
        });
        return format!("{report:#}\n");
    }
    let mut out = String::new();
    for d in &verdict.refusals {
        out.push_str(&format!(
            "line {}:{}: error [{}]: {}\n",
            d.line, d.col, d.rule, d.message
        ));
    }
    for w in &verdict.warnings {
        match w.line {
            Some(line) => out.push_str(&format!("line {line}: warning: {}\n", w.message)),
            None => out.push_str(&format!("warning: {}\n", w.message)),
        }
    }
    for (tool, taint) in sinks {
        let from = match taint.any {
            true => "any untrusted tool".to_owned(),
            false => taint.tools.iter().cloned().collect::<Vec<_>>().join(", "),
        };
        out.push_str(&format!(
            "flow: calls of `{tool}` need approval once a result of {from} has arrived\n"
        ));
    }
    out.push_str(match verdict.refused() {
        true => "refused: the script would not be run\n",
        false => "ok: no tool call is known to fail\n",
    });
    out
}

fn load_policy(path: Option<&Path>) -> Result<ChainPolicy, CliError> {
    match path {
        Some(path) => ChainPolicy::load(path).map_err(|source| CliError::Policy {
            path: path.to_path_buf(),
            source,
        }),
        None => Ok(ChainPolicy::default()),
    }
}

/// How long `serve` waits for its tasks to let go once it stops.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// `chainbox serve`: on stdio until the client closes it, or on `listener`;
/// either until `shutdown` (SIGTERM or SIGINT), which cancels every chain
/// first.
async fn serve(
    server: ChainServer,
    listener: Option<std::net::TcpListener>,
    access: serve::HttpAccess,
    shutdown: CancellationToken,
) -> Result<(), CliError> {
    if shutdown.is_cancelled() {
        // Stopped while it started.
        return Ok(());
    }
    let on_shutdown = server.clone();
    let stopping = shutdown.clone();
    tokio::spawn(async move {
        stopping.cancelled().await;
        tracing::info!("stopping: cancelling every chain");
        on_shutdown.cancel_all();
    });
    let Some(listener) = listener else {
        return Ok(serve::serve_stdio(server, shutdown).await?);
    };
    let bound = listener.local_addr().map_err(CliError::BoundAddress)?;
    eprintln!("chainbox: serving MCP at http://{bound}{}", serve::HTTP_PATH);
    #[cfg(feature = "oauth")]
    if let serve::HttpAccess::OAuth(auth) = &access {
        eprintln!(
            "chainbox: callers authenticate with {} for {}",
            auth.config().issuer,
            auth.config().resource_id()
        );
    }
    Ok(serve::serve_http(server, listener, access, shutdown).await?)
}

/// Listens for SIGTERM and SIGINT from now on (the listeners are made
/// before this returns, so no signal falls to the default action, which
/// would leave the children running). The first cancels `shutdown`: `serve`
/// cancels every chain and returns, and its children are ended. A second
/// ends the children and exits at once.
fn stop_on_signals(runtime: &tokio::runtime::Runtime, shutdown: CancellationToken) {
    let _entered = runtime.enter();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut interrupt)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
        else {
            tracing::warn!("cannot listen for SIGTERM and SIGINT: they will not stop the server in order");
            return;
        };
        runtime.spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = interrupt.recv() => {}
            }
            shutdown.cancel();
            tokio::select! {
                _ = term.recv() => {}
                _ = interrupt.recv() => {}
            }
            end_children();
            std::process::exit(1);
        });
    }
    #[cfg(not(unix))]
    runtime.spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            shutdown.cancel();
        }
    });
}

/// Kills whatever is left of this process's children, with their process
/// groups (command tools and MCP servers lead their own): the last step of
/// `serve`, after the orderly one (their owners dropped), so nothing it
/// started outlives it, even a child that ignores SIGTERM and its closed
/// stdin, or one whose owner a stuck thread still holds. Linux only (it
/// reads `/proc`); elsewhere the orderly step is all.
fn end_children() {
    #[cfg(target_os = "linux")]
    {
        let me = std::process::id();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // `pid (comm) state ppid pgrp …`: `comm` may hold spaces and
            // parentheses, so the fields are read after its last `)`.
            let Some((_, fields)) = stat.rsplit_once(')') else {
                continue;
            };
            let mut fields = fields.split_whitespace().skip(1).map(|f| f.parse::<i64>().ok());
            let (ppid, pgrp) = (fields.next().flatten(), fields.next().flatten());
            if ppid != Some(i64::from(me)) {
                continue;
            }
            tracing::warn!("ending child process {pid}, still running as serve stops");
            // SAFETY: only sends a signal; a process gone meanwhile is ESRCH.
            unsafe {
                if pgrp == Some(i64::from(pid)) {
                    libc::killpg(pid, libc::SIGKILL);
                } else {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

fn read_script(arg: &str) -> Result<String, CliError> {
    if arg == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(CliError::Stdin)?;
        Ok(s)
    } else {
        std::fs::read_to_string(arg).map_err(|source| CliError::Script {
            arg: arg.to_owned(),
            source,
        })
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)
}

/// The skill `--skill` names, its tools checked against `registry`: a path
/// (containing `/`) is the skill's folder; a name is looked up under
/// `skills/` beside the tools manifest, or in the current folder without one.
fn load_skill(arg: &str, manifest: Option<&Path>, registry: &ToolRegistry) -> Result<Skill, CliError> {
    let dir = if arg.contains('/') {
        PathBuf::from(arg)
    } else {
        let base = manifest
            .and_then(Path::parent)
            .map(Path::to_owned)
            .unwrap_or_else(|| PathBuf::from("."));
        base.join("skills").join(arg)
    };
    let failed = |source| CliError::Skill {
        arg: arg.to_owned(),
        source,
    };
    let skill = Skill::load(&dir).map_err(failed)?;
    skill.check_tools(registry).map_err(failed)?;
    Ok(skill)
}

fn load_registry(runtime: &tokio::runtime::Runtime, path: &Path) -> Result<ToolRegistry, CliError> {
    let manifest = Manifest::load(path)?;
    let registry = runtime.block_on(manifest.registry())?;
    // Above a few dozen tools the model sees an index and looks tools up.
    Ok(discovery::for_chains(registry)?)
}

/// A workspace file copied out by `--out`: where the script saw it, and
/// where it is now on the host.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SavedFile {
    /// Its path inside the sandbox, under `/workspace`.
    pub path: String,
    /// The copy on the host.
    pub host_path: PathBuf,
}

/// Runs the chain; with `out`, in a workspace whose files are copied into
/// `out` after the run (the workspace itself is removed either way).
/// Where a chain's results go besides the report: the files its
/// workspace made (`--out`), and its stdout as it comes.
struct Output<'a> {
    dir: Option<&'a Path>,
    observer: Option<Observer>,
}

fn run_chain(
    runtime: &tokio::runtime::Runtime,
    script: &str,
    registry: &ToolRegistry,
    policy: &ChainPolicy,
    approval: &Approval,
    Output { dir: out, observer }: Output<'_>,
    artifacts: Option<&str>,
) -> Result<(ChainRunResult, Vec<SavedFile>), CliError> {
    let engine = engine(artifacts)?;
    let workspace = match out {
        Some(_) => Some(tempfile::tempdir().map_err(CliError::Workspace)?),
        None => None,
    };
    let options = RunOptions {
        workspace: workspace.as_ref().map(|w| w.path().to_path_buf()),
        observer,
        ..RunOptions::default()
    };
    let result = runtime.block_on(engine.run_with(script, registry, policy, approval, options));
    let saved = match (out, &workspace) {
        (Some(out), Some(workspace)) => copy_out(workspace.path(), out).map_err(|source| CliError::Out {
            path: out.to_path_buf(),
            source,
        })?,
        _ => Vec::new(),
    };
    Ok((result, saved))
}

/// Copies the regular files under `workspace` into `out`, keeping their
/// relative paths. Symlinks a script made are not followed.
fn copy_out(workspace: &Path, out: &Path) -> std::io::Result<Vec<SavedFile>> {
    let mut saved = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        for entry in std::fs::read_dir(workspace.join(&rel))?.flatten() {
            let rel = rel.join(entry.file_name());
            let kind = entry.file_type()?;
            if kind.is_dir() {
                dirs.push(rel);
            } else if kind.is_file() {
                let host_path = out.join(&rel);
                if let Some(parent) = host_path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::copy(entry.path(), &host_path)?;
                let path = format!("{WORKSPACE}/{}", rel.to_string_lossy());
                saved.push(SavedFile { path, host_path });
            }
        }
    }
    saved.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(saved)
}

/// The script's stdout printed as it comes, for the human-readable report
/// (`run` and `resume` without `--json`, whose stdout must stay one JSON
/// document): a thread prints each chunk the chain's observer hands over,
/// and the report at the end prints only the rest of it.
struct LiveStdout {
    /// The observer to run the chain with; `None` when not live.
    observer: Option<Observer>,
    printed: Arc<Mutex<Printed>>,
}

/// How much of the stdout the printing thread has printed, and whether it
/// must stop (the report takes over).
#[derive(Default)]
struct Printed {
    bytes: usize,
    done: bool,
}

impl LiveStdout {
    fn start(live: bool) -> Self {
        let printed = Arc::new(Mutex::new(Printed::default()));
        if !live {
            return LiveStdout {
                observer: None,
                printed,
            };
        }
        let (observer, mut events) = Observer::channel();
        let shared = printed.clone();
        // Detached: it ends when the report marks it done, or with the process.
        std::thread::spawn(move || {
            while let Some(event) = events.blocking_recv() {
                let ChainEvent::Stdout(text) = event else { continue };
                let mut printed = shared.lock().unwrap_or_else(PoisonError::into_inner);
                if printed.done {
                    break;
                }
                let mut out = std::io::stdout().lock();
                if printed.bytes == 0 {
                    let _ = writeln!(out, "{STDOUT_HEADER}");
                }
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
                printed.bytes += text.len();
            }
        });
        LiveStdout {
            observer: Some(observer),
            printed,
        }
    }

    fn observer(&self) -> Option<Observer> {
        self.observer.clone()
    }

    /// [`report`], after the stdout printed live and the rest of it.
    fn report(self, result: &ChainRunResult, saved: &[SavedFile], json: bool) -> ExitCode {
        if self.observer.is_none() {
            return report(result, saved, json);
        }
        let mut printed = self.printed.lock().unwrap_or_else(PoisonError::into_inner);
        printed.done = true;
        let rest = result.stdout.get(printed.bytes..).unwrap_or_default();
        let mut out = std::io::stdout().lock();
        if printed.bytes == 0 && !rest.is_empty() {
            let _ = writeln!(out, "{STDOUT_HEADER}");
        }
        let _ = out.write_all(rest.as_bytes());
        if !result.stdout.is_empty() && !result.stdout.ends_with('\n') {
            let _ = writeln!(out);
        }
        let _ = write!(out, "{}", readable_after_stdout(result));
        for file in saved {
            let _ = writeln!(out, "saved: {} -> {}", file.path, file.host_path.display());
        }
        drop(out);
        exit_code(result)
    }
}

/// Prints `rows` (the first the header) as columns, each padded to its
/// widest cell but the last.
fn print_table<const N: usize>(rows: &[[String; N]]) {
    let mut widths = [0; N];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in rows {
        let mut cells: Vec<String> = row.iter().zip(widths).map(|(c, w)| format!("{c:w$}")).collect();
        if let (Some(cell), Some(last)) = (cells.last_mut(), row.last()) {
            cell.clone_from(last);
        }
        println!("{}", cells.join("  "));
    }
}

/// Prints the result and picks the exit code. With `--json`, stdout is one
/// `ChainRunResult`, plus `saved_files` when `--out` copied any.
fn report(result: &ChainRunResult, saved: &[SavedFile], json: bool) -> ExitCode {
    if json {
        let encoded = serde_json::to_value(result).and_then(|mut value| {
            if let (false, Some(object)) = (saved.is_empty(), value.as_object_mut()) {
                object.insert("saved_files".into(), serde_json::to_value(saved)?);
            }
            serde_json::to_string(&value)
        });
        match encoded {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("chainbox: could not encode the result: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        print!("{}", readable(result));
        for file in saved {
            println!("saved: {} -> {}", file.path, file.host_path.display());
        }
    }
    exit_code(result)
}

/// 0 for a chain that completed, 3 for a suspended one, 1 otherwise.
fn exit_code(result: &ChainRunResult) -> ExitCode {
    match result.status {
        _ if result.is_ok() => ExitCode::SUCCESS,
        // Suspended: waits on `chainbox decide` and `chainbox resume`.
        crate::ChainStatus::Suspended => ExitCode::from(3),
        _ => ExitCode::from(1),
    }
}

/// The human-readable report: stdout, output or error, and the trace table.
pub fn readable(result: &ChainRunResult) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if !result.stdout.is_empty() {
        let _ = writeln!(out, "{STDOUT_HEADER}\n{}", result.stdout.trim_end());
    }
    out + &readable_after_stdout(result)
}

/// The header of the stdout section of the human-readable report.
const STDOUT_HEADER: &str = "── stdout ──";

/// [`readable`] but its stdout: the truncation note, output or error, and
/// the trace table.
fn readable_after_stdout(result: &ChainRunResult) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if result.usage.stdout_truncated {
        let _ = writeln!(out, "[stdout truncated: {} bytes produced]", result.usage.stdout_bytes);
    }
    if let (Some(chain_id), Some(pending)) = (&result.chain_id, &result.pending) {
        let arguments = serde_json::to_string(&pending.arguments).unwrap_or_default();
        let _ = writeln!(
            out,
            "── suspended ──\nchain {chain_id} waits on a decision for call #{} {}({arguments}) (risk {}):\n  chainbox decide {chain_id} approve|deny --state URL, then chainbox resume {chain_id} --state URL",
            pending.seq, pending.tool, pending.risk
        );
        if let Some(note) = crate::approval::provenance_note(&pending.provenance) {
            let _ = writeln!(out, "  the data-flow policy holds it: {note}");
        }
    }
    match &result.error {
        None if result.pending.is_some() => {}
        None => {
            let _ = writeln!(out, "── output ──\n{}", result.output_text);
        }
        Some(e) => {
            let line = e.line.map(|l| format!(" (line {l})")).unwrap_or_default();
            let _ = writeln!(
                out,
                "── {} [{}] ──\n{}: {}{line}",
                result.status, e.kind, e.error_type, e.message
            );
        }
    }
    let _ = writeln!(
        out,
        "── trace: {} tool calls in {:.1} ms ({}) ──",
        result.tool_calls,
        result.duration_ms,
        result.interpreter.as_str()
    );
    if !result.call_trace.is_empty() {
        let _ = writeln!(
            out,
            "{:>3}  {:<20} {:<8} {:>10}  args_digest",
            "#", "tool", "status", "ms"
        );
        for (i, r) in result.call_trace.iter().enumerate() {
            let _ = writeln!(
                out,
                "{:>3}  {:<20} {:<8} {:>10.3}  {}…",
                i + 1,
                r.tool,
                r.status,
                r.duration_ms,
                &r.args_digest[..r.args_digest.len().min(16)]
            );
        }
    }
    for f in &result.files {
        let _ = writeln!(out, "file: {} ({})", f.path, f.media_type);
    }
    for w in &result.warnings {
        let line = w.line.map(|l| format!(" (line {l})")).unwrap_or_default();
        let _ = writeln!(out, "warning: {}{line}", w.message);
    }
    if let Some(session) = &result.session {
        let _ = writeln!(
            out,
            "── session {} · cell {} · expires {} ──\n  next cell: chainbox run CELL --state URL --session {}",
            session.session_id, session.cell, session.session_expires_at, session.session_id
        );
    }
    out
}
