//! The tools manifest: a TOML file declaring command tools and MCP servers for `chainbox run --tools FILE` and `chainbox stubs --tools FILE`.
//!
//! ```toml
//! [[tool]]
//! name = "get_weather"
//! description = "Current weather for a city."
//! risk = "safe"                      # safe | high | critical; default safe
//! permissions = ["net"]              # what it touches: fs.read, fs.write, net,
//!                                    # shell, db.read, db.write; default none
//! output = "untrusted"               # its results carry others' text (a web
//!                                    # page, an email); default "trusted"
//! command = ["python3", "weather.py"] # run in the manifest's folder
//!
//! [tool.input_schema]                # a JSON Schema, written as TOML
//! type = "object"
//! required = ["city"]
//!
//! [tool.input_schema.properties.city]
//! type = "string"
//! description = "City name, e.g. Paris"
//!
//! [[tool]]
//! name = "send_email"
//! description = "Sends an email."
//! risk = "high"
//! guarded_args = ["to"]              # what untrusted results must not reach
//!                                    # unapproved; default: every argument of
//!                                    # a high or critical tool, none below
//! command = ["./send_email.sh"]
//! # its [tool.input_schema] must have a property `to`
//!
//! [[mcp]]                            # an MCP server over stdio
//! name = "files"                     # its tools become `files__<tool>`
//! command = ["node", "servers/files/index.js"]
//! env = { ROOT = "/data" }           # its whole environment, with PATH
//! cwd = "data"                       # default: the manifest's folder
//! risk = "safe"                      # of all its tools; default safe
//! permissions = ["fs.read"]          # of all its tools; default none
//! output = "trusted"                 # of all its tools; default: untrusted
//!                                    # for a tool annotated openWorldHint
//! start_timeout_s = 20               # to start and list its tools; default 60
//!
//! [mcp.tools.delete_file]            # by the server's own tool name
//! risk = "critical"
//! permissions = ["fs.read", "fs.write"]  # instead of the server's
//! guarded_args = ["path"]            # properties of its listed input schema
//!
//! [mcp.tools.read_file]
//! output = "untrusted"               # instead of the server's
//!
//! [mcp.tools.get-env]
//! deny = true                        # never registered, never shown
//! ```
//!
//! The MCP servers are started when the registry is built
//! ([`Manifest::registry`]), all at once; a server that fails or is not up
//! within its `start_timeout_s` (seconds above zero) fails the registry with
//! the tail of its stderr: the registry never holds a server that is not
//! running. See [`crate::mcp::upstream`] for their tools' names, results,
//! restarts and how a hung server is found.
//!
//! `output` and `guarded_args` feed the data-flow policy ([`crate::flow`],
//! docs/flow.md): a call whose guarded arguments may derive from an
//! untrusted tool's result waits for approval. `guarded_args = []` guards
//! nothing, even of a high-risk tool.
//!
//! Invariants:
//! - The order in which `input_schema.properties` are written is kept: a
//!   script's positional arguments map onto the properties in that order.
//! - A relative program path in `command[0]` (one containing `/` or starting
//!   with `.`) resolves against the manifest's folder, and every tool runs
//!   with the manifest's folder as its working directory, so a manifest and
//!   its scripts can be moved together.
//! - Errors name the entry (1-based index and name) and the field.
//! - Every tool in the registry has one source: a name used twice (by two
//!   `[[tool]]` entries, or a `[[tool]]` and an MCP tool) is an error naming both.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::mcp::config::{McpServer, McpToolSettings, START_TIMEOUT};
use crate::mcp::upstream::{McpError, McpUpstream};
use crate::stubs::is_python_keyword;
use crate::tools::command::CommandTool;
use crate::tools::{OutputTrust, Permission, RegistryError, Tool, ToolRegistry, ToolRisk, is_identifier};

/// Errors loading a tools manifest.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read.
    #[error("cannot read tools manifest {}: {source}", path.display())]
    Read {
        /// The manifest's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not TOML, or its top level is not `[[tool]]` / `[[mcp]]` entries.
    #[error("invalid tools manifest: {0}")]
    Syntax(#[source] toml::de::Error),
    /// A `[[tool]]` entry is invalid.
    #[error("tool #{index}{}: {message}", name_suffix(.name))]
    Tool {
        /// The entry's position among the `[[tool]]` entries, from 1.
        index: usize,
        /// Its name, when it has a readable one.
        name: Option<String>,
        /// What is wrong, naming the field.
        message: String,
    },
    /// An `[[mcp]]` entry is invalid.
    #[error("mcp server #{index}{}: {message}", name_suffix(.name))]
    Mcp {
        /// The entry's position among the `[[mcp]]` entries, from 1.
        index: usize,
        /// Its name, when it has a readable one.
        name: Option<String>,
        /// What is wrong, naming the field.
        message: String,
    },
    /// The tools could not form a registry.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// An MCP server could not be started or its tools not registered.
    #[error(transparent)]
    Upstream(#[from] McpError),
    /// Two sources offer a tool under the same name.
    #[error("tool name `{name}` is used by {first} and by {second}")]
    NameCollision {
        /// The name scripts would call.
        name: String,
        /// The first source (`[[tool]] #1`, ``mcp server `m` tool `t` ``).
        first: String,
        /// The second one.
        second: String,
    },
}

fn name_suffix(name: &Option<String>) -> String {
    name.as_ref().map(|n| format!(" (`{n}`)")).unwrap_or_default()
}

/// A parsed, validated tools manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The `[[tool]]` entries, in file order.
    pub tools: Vec<ManifestTool>,
    /// The `[[mcp]]` entries, in file order.
    pub mcp: Vec<McpServer>,
    /// The folder relative paths resolved against.
    pub base_dir: PathBuf,
}

/// One `[[tool]]` entry: a command tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestTool {
    /// The name scripts call it by (a Python identifier).
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its risk tier.
    pub risk: ToolRisk,
    /// What it touches; the chain's policy must grant each one.
    pub permissions: Vec<Permission>,
    /// Its arguments' JSON Schema (an object schema), properties in written order.
    pub input_schema: Value,
    /// Program and arguments, the program resolved against the manifest's folder.
    pub command: Vec<String>,
    /// Where it runs: the manifest's folder.
    pub working_dir: PathBuf,
    /// Whether its results are untrusted (`output`; trusted by default).
    pub output: OutputTrust,
    /// Its guarded arguments (`guarded_args`), each a property of
    /// `input_schema`; `None`: all of them when its risk is high or above.
    pub guarded_args: Option<Vec<String>>,
}

impl ManifestTool {
    /// The runnable tool.
    pub fn to_command_tool(&self) -> CommandTool {
        let tool = CommandTool::new(
            self.name.clone(),
            self.description.clone(),
            self.input_schema.clone(),
            self.command.clone(),
        )
        .with_risk(self.risk)
        .with_permissions(self.permissions.iter().copied())
        .with_working_dir(self.working_dir.clone());
        let tool = match self.output {
            OutputTrust::Untrusted => tool.with_untrusted_output(),
            OutputTrust::Trusted => tool,
        };
        match &self.guarded_args {
            Some(args) => tool.with_guarded_args(args.iter().cloned()),
            None => tool,
        }
    }
}

/// The file's top level. Entries stay raw tables until validated one by one,
/// so that errors can name the entry they are in.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    #[serde(default)]
    tool: Vec<toml::Table>,
    #[serde(default)]
    mcp: Vec<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: String,
    description: String,
    #[serde(default)]
    risk: ToolRisk,
    #[serde(default)]
    permissions: Vec<Permission>,
    input_schema: Option<toml::Table>,
    command: Vec<String>,
    #[serde(default)]
    output: OutputTrust,
    guarded_args: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMcp {
    name: String,
    command: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    #[serde(default)]
    risk: ToolRisk,
    #[serde(default)]
    permissions: Vec<Permission>,
    #[serde(default)]
    tools: BTreeMap<String, McpToolSettings>,
    start_timeout_s: Option<f64>,
    output: Option<OutputTrust>,
}

impl Manifest {
    /// Reads and validates the manifest at `path`; relative paths in it
    /// resolve against its folder.
    pub fn load(path: impl AsRef<Path>) -> Result<Manifest, ManifestError> {
        let path = path.as_ref();
        let read_error = |source| ManifestError::Read {
            path: path.to_owned(),
            source,
        };
        let text = std::fs::read_to_string(path).map_err(read_error)?;
        let absolute = std::fs::canonicalize(path).map_err(read_error)?;
        let base_dir = absolute.parent().map(Path::to_owned).unwrap_or_default();
        Manifest::from_str(&text, &base_dir)
    }

    /// Parses and validates manifest text; relative paths resolve against
    /// `base_dir` (pass an absolute one: tools run with it as working dir).
    pub fn from_str(text: &str, base_dir: &Path) -> Result<Manifest, ManifestError> {
        let raw: RawManifest = toml::from_str(text).map_err(ManifestError::Syntax)?;
        let mut tools: Vec<ManifestTool> = Vec::with_capacity(raw.tool.len());
        for (i, table) in raw.tool.into_iter().enumerate() {
            let index = i + 1;
            let name = table.get("name").and_then(toml::Value::as_str).map(str::to_owned);
            let error = |message: String| ManifestError::Tool {
                index,
                name: name.clone(),
                message,
            };
            let tool = parse_tool(table, base_dir).map_err(error)?;
            if let Some(first) = tools.iter().position(|t| t.name == tool.name) {
                return Err(error(format!("name already used by tool #{}", first + 1)));
            }
            tools.push(tool);
        }
        let mut mcp: Vec<McpServer> = Vec::with_capacity(raw.mcp.len());
        for (i, table) in raw.mcp.into_iter().enumerate() {
            let index = i + 1;
            let name = table.get("name").and_then(toml::Value::as_str).map(str::to_owned);
            let error = |message: String| ManifestError::Mcp {
                index,
                name: name.clone(),
                message,
            };
            let server = parse_mcp(table, base_dir).map_err(error)?;
            if let Some(first) = mcp.iter().position(|m| m.name == server.name) {
                return Err(error(format!("name already used by mcp server #{}", first + 1)));
            }
            mcp.push(server);
        }
        Ok(Manifest {
            tools,
            mcp,
            base_dir: base_dir.to_owned(),
        })
    }

    /// A registry of the manifest's tools: the command tools in file
    /// order, then the tools of each MCP server (servers in file order, each
    /// server's tools in its listing order). The MCP servers are started
    /// here, all at once, and live as long as the registry (and its clones):
    /// call this inside the tokio runtime that will run the chains.
    pub async fn registry(&self) -> Result<ToolRegistry, ManifestError> {
        let upstreams = futures::future::try_join_all(self.mcp.iter().map(McpUpstream::connect)).await?;
        let mut sources: HashMap<String, String> = HashMap::new();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for (i, tool) in self.tools.iter().enumerate() {
            sources.insert(tool.name.clone(), format!("[[tool]] #{}", i + 1));
            tools.push(Arc::new(tool.to_command_tool()));
        }
        for upstream in upstreams {
            for (tool, remote) in upstream.tools().iter().zip(upstream.remote_names()) {
                let source = format!("mcp server `{}` tool `{remote}`", upstream.name());
                if let Some(first) = sources.insert(tool.name().to_owned(), source.clone()) {
                    return Err(ManifestError::NameCollision {
                        name: tool.name().to_owned(),
                        first,
                        second: source,
                    });
                }
            }
            tools.extend(upstream.into_tools());
        }
        Ok(ToolRegistry::from_local(tools)?)
    }
}

/// Deserializes an entry, rewording serde's error to lead with the field
/// (an unknown or missing field is named by serde's message itself).
fn entry<T: DeserializeOwned>(table: toml::Table) -> Result<T, String> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let message = e.inner().message().trim();
        match e.path().iter().next() {
            Some(_) if !message.starts_with("unknown field") => format!("`{}`: {message}", e.path()),
            _ => message.to_owned(),
        }
    })
}

fn parse_tool(table: toml::Table, base_dir: &Path) -> Result<ManifestTool, String> {
    let raw: RawTool = entry(table)?;
    if !is_identifier(&raw.name) || is_python_keyword(&raw.name) {
        return Err(format!(
            "`name`: {:?} is not a Python identifier, so a script could not call it",
            raw.name
        ));
    }
    let input_schema = match raw.input_schema {
        Some(table) => table_to_json(table).map_err(|e| format!("`input_schema`: {e}"))?,
        None => serde_json::json!({"type": "object", "properties": {}}),
    };
    check_object_schema(&input_schema).map_err(|e| format!("`input_schema`: {e}"))?;
    for (i, arg) in raw.guarded_args.iter().flatten().enumerate() {
        if input_schema.get("properties").and_then(|p| p.get(arg)).is_none() {
            return Err(format!(
                "`guarded_args[{i}]`: `{arg}` is not a property of `input_schema`"
            ));
        }
    }
    Ok(ManifestTool {
        name: raw.name,
        description: raw.description,
        risk: raw.risk,
        permissions: raw.permissions,
        input_schema,
        command: resolve_command(raw.command, base_dir)?,
        working_dir: base_dir.to_owned(),
        output: raw.output,
        guarded_args: raw.guarded_args,
    })
}

fn parse_mcp(table: toml::Table, base_dir: &Path) -> Result<McpServer, String> {
    let raw: RawMcp = entry(table)?;
    if !is_server_name(&raw.name) {
        return Err(format!(
            "`name`: {:?} must be letters, digits and single underscores, starting with a letter \
             (its tools are named `<name>__<tool>`)",
            raw.name
        ));
    }
    let start_timeout = match raw.start_timeout_s {
        None => START_TIMEOUT,
        Some(secs) => Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("`start_timeout_s` ({secs}) must be a finite number of seconds above zero"))?,
    };
    Ok(McpServer {
        name: raw.name,
        command: resolve_command(raw.command, base_dir)?,
        env: raw.env,
        working_dir: raw.cwd.map_or_else(|| base_dir.to_owned(), |cwd| base_dir.join(cwd)),
        risk: raw.risk,
        permissions: raw.permissions,
        output: raw.output,
        tools: raw.tools,
        start_timeout,
    })
}

/// An MCP server name: an identifier starting with a letter, without `__`
/// and not ending in `_`, so that `{server}__{tool}` names one server only.
fn is_server_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic())
        && is_identifier(name)
        && !name.contains("__")
        && !name.ends_with('_')
}

/// Resolves a relative program path (`./tool`, `bin/tool`) against the
/// manifest's folder; a bare program name (`python3`) is left for `PATH`.
fn resolve_command(mut command: Vec<String>, base_dir: &Path) -> Result<Vec<String>, String> {
    let Some(program) = command.first_mut() else {
        return Err("`command`: must name a program".into());
    };
    if program.is_empty() {
        return Err("`command`: the program must not be empty".into());
    }
    let looks_like_path = program.contains('/') || program.starts_with('.');
    if looks_like_path && Path::new(program.as_str()).is_relative() {
        let relative = program.strip_prefix("./").unwrap_or(program);
        *program = base_dir.join(relative).display().to_string();
    }
    Ok(command)
}

/// An input schema must describe an object whose properties can be Python
/// keyword arguments.
fn check_object_schema(schema: &Value) -> Result<(), String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("must be an object schema (`type = \"object\"`)".into());
    }
    let empty = Map::new();
    let properties = match schema.get("properties") {
        None => &empty,
        Some(Value::Object(props)) => props,
        Some(_) => return Err("`properties` must be a table".into()),
    };
    for (name, property) in properties {
        if !is_identifier(name) || is_python_keyword(name) {
            return Err(format!(
                "property {name:?} is not a Python identifier, so a script could not pass it by name"
            ));
        }
        if !property.is_object() {
            return Err(format!("property `{name}` must be a table (a JSON Schema)"));
        }
    }
    if let Some(required) = schema.get("required") {
        let Some(required) = required.as_array() else {
            return Err("`required` must be a list of property names".into());
        };
        for name in required {
            let Some(name) = name.as_str() else {
                return Err("`required` must be a list of property names".into());
            };
            if !properties.contains_key(name) {
                return Err(format!("`required` names `{name}`, which is not in `properties`"));
            }
        }
    }
    Ok(())
}

/// TOML to JSON, keeping table order (datetimes become RFC 3339 strings).
fn table_to_json(table: toml::Table) -> Result<Value, String> {
    let mut map = Map::with_capacity(table.len());
    for (key, value) in table {
        map.insert(key, toml_to_json(value)?);
    }
    Ok(Value::Object(map))
}

fn toml_to_json(value: toml::Value) -> Result<Value, String> {
    Ok(match value {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| format!("{f} cannot be represented in JSON"))?,
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.into_iter().map(toml_to_json).collect::<Result<_, _>>()?),
        toml::Value::Table(table) => table_to_json(table)?,
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::*;
    use crate::tools::{ToolContext, ToolOutput, schema_params};

    const WEATHER: &str = r#"
[[tool]]
name = "get_weather"
description = "Current weather for a city."
command = ["./weather.sh"]

[tool.input_schema]
type = "object"
required = ["city"]

[tool.input_schema.properties.zeta_city]
type = "string"

[tool.input_schema.properties.city]
type = "string"

[tool.input_schema.properties.alpha_units]
type = "string"
enum = ["c", "f"]
"#;

    fn parse(text: &str) -> Result<Manifest, ManifestError> {
        Manifest::from_str(text, Path::new("/opt/tools"))
    }

    fn error(text: &str) -> String {
        match parse(text) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn schema_properties_keep_their_written_order() {
        let manifest = parse(WEATHER).expect("valid");
        assert_eq!(
            schema_params(&manifest.tools[0].input_schema),
            vec!["zeta_city", "city", "alpha_units"]
        );
    }

    #[test]
    fn risk_defaults_to_safe() {
        let manifest = parse(WEATHER).expect("valid");
        assert_eq!(manifest.tools[0].risk, ToolRisk::Safe);
    }

    #[test]
    fn risk_is_read_by_name() {
        let text = "[[tool]]\nname = \"send\"\ndescription = \"\"\nrisk = \"critical\"\ncommand = [\"x\"]";
        assert_eq!(parse(text).expect("valid").tools[0].risk, ToolRisk::Critical);
    }

    #[test]
    fn permissions_default_to_none() {
        let manifest = parse(WEATHER).expect("valid");
        assert!(manifest.tools[0].permissions.is_empty());
        assert!(manifest.tools[0].to_command_tool().permissions().is_empty());
    }

    #[test]
    fn permissions_are_read_by_name_and_reach_the_tool() {
        let text =
            "[[tool]]\nname = \"fetch\"\ndescription = \"\"\npermissions = [\"net\", \"fs.write\"]\ncommand = [\"x\"]";
        let manifest = parse(text).expect("valid");
        assert_eq!(
            manifest.tools[0].permissions,
            vec![Permission::Net, Permission::FsWrite]
        );
        assert_eq!(
            manifest.tools[0].to_command_tool().permissions(),
            [Permission::Net, Permission::FsWrite]
        );
    }

    #[test]
    fn unknown_permission_names_the_tool_and_the_field() {
        let text =
            "[[tool]]\nname = \"fetch\"\ndescription = \"\"\npermissions = [\"net\", \"internet\"]\ncommand = [\"x\"]";
        let message = error(text);
        assert!(
            message.starts_with("tool #1 (`fetch`): `permissions[1]`: unknown variant `internet`"),
            "{message}"
        );
    }

    const SEND: &str = "[[tool]]\nname = \"send\"\ndescription = \"\"\nrisk = \"high\"\ncommand = [\"x\"]\n";
    const SEND_SCHEMA: &str = "[tool.input_schema]\ntype = \"object\"\n\
                               [tool.input_schema.properties.to]\ntype = \"string\"\n\
                               [tool.input_schema.properties.body]\ntype = \"string\"\n";

    #[test]
    fn output_defaults_to_trusted() {
        let manifest = parse(WEATHER).expect("valid");
        assert_eq!(manifest.tools[0].output, OutputTrust::Trusted);
        assert!(!manifest.tools[0].to_command_tool().untrusted());
        assert_eq!(manifest.tools[0].to_command_tool().guarded_args(), None);
    }

    #[test]
    fn untrusted_output_reaches_the_tool() {
        let text = "[[tool]]\nname = \"fetch\"\ndescription = \"\"\noutput = \"untrusted\"\ncommand = [\"x\"]";
        let manifest = parse(text).expect("valid");
        assert_eq!(manifest.tools[0].output, OutputTrust::Untrusted);
        assert!(manifest.tools[0].to_command_tool().untrusted());
    }

    #[test]
    fn unknown_output_names_the_tool_and_the_field() {
        let text = "[[tool]]\nname = \"fetch\"\ndescription = \"\"\noutput = \"tainted\"\ncommand = [\"x\"]";
        let message = error(text);
        assert!(
            message.starts_with("tool #1 (`fetch`): `output`: unknown variant `tainted`"),
            "{message}"
        );
    }

    #[test]
    fn guarded_args_reach_the_tool() {
        let manifest = parse(&format!("{SEND}guarded_args = [\"to\"]\n{SEND_SCHEMA}")).expect("valid");
        assert_eq!(manifest.tools[0].guarded_args, Some(vec!["to".to_owned()]));
        assert_eq!(
            manifest.tools[0].to_command_tool().guarded_args(),
            Some(&["to".to_owned()][..])
        );
        let none = parse(&format!("{SEND}guarded_args = []\n{SEND_SCHEMA}")).expect("valid");
        assert_eq!(none.tools[0].to_command_tool().guarded_args(), Some(&[][..]));
    }

    #[test]
    fn guarded_arg_outside_the_schema_names_the_tool_and_the_field() {
        let message = error(&format!("{SEND}guarded_args = [\"to\", \"cc\"]\n{SEND_SCHEMA}"));
        assert_eq!(
            message,
            "tool #1 (`send`): `guarded_args[1]`: `cc` is not a property of `input_schema`"
        );
        let message = error(&format!("{SEND}guarded_args = [\"to\"]"));
        assert!(
            message.contains("`guarded_args[0]`: `to` is not a property"),
            "{message}"
        );
    }

    #[test]
    fn relative_program_path_resolves_against_the_manifest_folder() {
        let manifest = parse(WEATHER).expect("valid");
        assert_eq!(manifest.tools[0].command, vec!["/opt/tools/weather.sh"]);
        assert_eq!(manifest.tools[0].working_dir, Path::new("/opt/tools"));
    }

    #[test]
    fn bare_program_name_and_arguments_are_left_alone() {
        let text = "[[tool]]\nname = \"add\"\ndescription = \"\"\ncommand = [\"python3\", \"add.py\"]";
        assert_eq!(parse(text).expect("valid").tools[0].command, vec!["python3", "add.py"]);
    }

    #[test]
    fn missing_input_schema_means_no_arguments() {
        let text = "[[tool]]\nname = \"now\"\ndescription = \"\"\ncommand = [\"date\"]";
        let schema = &parse(text).expect("valid").tools[0].input_schema;
        assert_eq!(schema, &json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn missing_field_names_the_tool_and_the_field() {
        let text = "[[tool]]\nname = \"add\"\ndescription = \"\"\ncommand = [\"x\"]\n\n\
                    [[tool]]\nname = \"get_weather\"\ndescription = \"\"";
        assert_eq!(error(text), "tool #2 (`get_weather`): missing field `command`");
    }

    #[test]
    fn unknown_field_is_rejected() {
        let text = "[[tool]]\nname = \"add\"\ndescription = \"\"\ncommand = [\"x\"]\ntimeout = 5";
        let message = error(text);
        assert!(
            message.starts_with("tool #1 (`add`): unknown field `timeout`"),
            "{message}"
        );
    }

    #[test]
    fn unknown_top_level_section_is_rejected() {
        let message = error("[[tools]]\nname = \"add\"");
        assert!(message.contains("unknown field `tools`"), "{message}");
    }

    #[test]
    fn wrong_type_names_the_field() {
        let text = "[[tool]]\nname = \"add\"\ndescription = \"\"\ncommand = \"python3 add.py\"";
        let message = error(text);
        assert!(
            message.starts_with("tool #1 (`add`): `command`: invalid type"),
            "{message}"
        );
    }

    #[test]
    fn unknown_risk_is_rejected() {
        let text = "[[tool]]\nname = \"add\"\ndescription = \"\"\nrisk = \"medium\"\ncommand = [\"x\"]";
        let message = error(text);
        assert!(
            message.starts_with("tool #1 (`add`): `risk`: unknown variant `medium`"),
            "{message}"
        );
    }

    #[test]
    fn name_must_be_a_python_identifier() {
        let text = "[[tool]]\nname = \"get-weather\"\ndescription = \"\"\ncommand = [\"x\"]";
        let message = error(text);
        assert!(message.starts_with("tool #1 (`get-weather`): `name`:"), "{message}");
    }

    #[test]
    fn name_must_not_be_a_python_keyword() {
        let text = "[[tool]]\nname = \"import\"\ndescription = \"\"\ncommand = [\"x\"]";
        assert!(error(text).contains("not a Python identifier"));
    }

    #[test]
    fn duplicate_names_are_rejected() {
        let one = "[[tool]]\nname = \"add\"\ndescription = \"\"\ncommand = [\"x\"]\n";
        let message = error(&format!("{one}{one}"));
        assert_eq!(message, "tool #2 (`add`): name already used by tool #1");
    }

    #[test]
    fn empty_command_is_rejected() {
        let text = "[[tool]]\nname = \"add\"\ndescription = \"\"\ncommand = []";
        assert_eq!(error(text), "tool #1 (`add`): `command`: must name a program");
    }

    #[test]
    fn input_schema_must_be_an_object_schema() {
        let text = "[[tool]]\nname = \"add\"\ndescription = \"\"\ncommand = [\"x\"]\n\
                    [tool.input_schema]\ntype = \"array\"";
        let message = error(text);
        assert!(
            message.starts_with("tool #1 (`add`): `input_schema`: must be an object schema"),
            "{message}"
        );
    }

    #[test]
    fn property_names_must_be_usable_as_keyword_arguments() {
        let text = "[[tool]]\nname = \"convert\"\ndescription = \"\"\ncommand = [\"x\"]\n\
                    [tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties.from]\ntype = \"string\"";
        let message = error(text);
        assert!(
            message.contains("property \"from\" is not a Python identifier"),
            "{message}"
        );
    }

    #[test]
    fn required_must_name_declared_properties() {
        let text = "[[tool]]\nname = \"add\"\ndescription = \"\"\ncommand = [\"x\"]\n\
                    [tool.input_schema]\ntype = \"object\"\nrequired = [\"a\"]";
        let message = error(text);
        assert!(message.contains("`required` names `a`"), "{message}");
    }

    #[test]
    fn toml_syntax_error_is_reported_with_its_position() {
        let message = error("[[tool]\nname = ");
        assert!(
            message.starts_with("invalid tools manifest: TOML parse error at line 1"),
            "{message}"
        );
    }

    #[test]
    fn mcp_entries_are_kept_as_data() {
        let text = "[[mcp]]\nname = \"files\"\ncommand = [\"bin/files-server\", \"--root\", \"data\"]\n\
                    env = { ROOT = \"/data\" }";
        let manifest = parse(text).expect("valid");
        assert_eq!(
            manifest.mcp,
            vec![McpServer {
                name: "files".into(),
                command: vec!["/opt/tools/bin/files-server".into(), "--root".into(), "data".into()],
                env: BTreeMap::from([("ROOT".into(), "/data".into())]),
                working_dir: "/opt/tools".into(),
                risk: ToolRisk::Safe,
                permissions: Vec::new(),
                output: None,
                tools: BTreeMap::new(),
                start_timeout: START_TIMEOUT,
            }]
        );
    }

    #[test]
    fn mcp_start_timeout_is_read_in_seconds() {
        let text = "[[mcp]]\nname = \"m\"\ncommand = [\"x\"]\nstart_timeout_s = 1.5";
        assert_eq!(
            parse(text).expect("valid").mcp[0].start_timeout,
            Duration::from_millis(1500)
        );
        let text = "[[mcp]]\nname = \"m\"\ncommand = [\"x\"]\nstart_timeout_s = 2";
        assert_eq!(parse(text).expect("valid").mcp[0].start_timeout, Duration::from_secs(2));
    }

    #[test]
    fn mcp_start_timeout_must_be_seconds_above_zero() {
        for value in ["0", "-1", "nan", "inf", "1e300"] {
            let message = error(&format!(
                "[[mcp]]\nname = \"m\"\ncommand = [\"x\"]\nstart_timeout_s = {value}"
            ));
            assert!(
                message.starts_with("mcp server #1 (`m`): `start_timeout_s` (")
                    && message.ends_with(") must be a finite number of seconds above zero"),
                "{value}: {message}"
            );
        }
    }

    #[test]
    fn mcp_cwd_resolves_against_the_manifest_folder() {
        let text = "[[mcp]]\nname = \"files\"\ncommand = [\"x\"]\ncwd = \"data\"";
        assert_eq!(
            parse(text).expect("valid").mcp[0].working_dir,
            Path::new("/opt/tools/data")
        );
    }

    #[test]
    fn mcp_risk_and_tool_settings_are_read() {
        let text = "[[mcp]]\nname = \"memory\"\ncommand = [\"x\"]\nrisk = \"high\"\n\
                    [mcp.tools.delete_entities]\nrisk = \"critical\"\n\
                    [mcp.tools.get-env]\ndeny = true";
        let server = &parse(text).expect("valid").mcp[0];
        assert_eq!(server.risk, ToolRisk::High);
        assert_eq!(
            server.tools,
            BTreeMap::from([
                (
                    "delete_entities".into(),
                    McpToolSettings {
                        risk: Some(ToolRisk::Critical),
                        ..McpToolSettings::default()
                    }
                ),
                (
                    "get-env".into(),
                    McpToolSettings {
                        deny: true,
                        ..McpToolSettings::default()
                    }
                ),
            ])
        );
    }

    #[test]
    fn mcp_output_and_guarded_args_are_read() {
        let text = "[[mcp]]\nname = \"web\"\ncommand = [\"x\"]\noutput = \"untrusted\"\n\
                    [mcp.tools.post]\noutput = \"trusted\"\nguarded_args = [\"url\"]";
        let server = &parse(text).expect("valid").mcp[0];
        assert_eq!(server.output, Some(OutputTrust::Untrusted));
        assert_eq!(
            server.tools.get("post"),
            Some(&McpToolSettings {
                output: Some(OutputTrust::Trusted),
                guarded_args: Some(vec!["url".into()]),
                ..McpToolSettings::default()
            })
        );
        let plain = &parse("[[mcp]]\nname = \"m\"\ncommand = [\"x\"]").expect("valid").mcp[0];
        assert_eq!(plain.output, None, "unset: each tool's annotation decides");
    }

    #[test]
    fn mcp_unknown_output_names_the_field() {
        let message = error("[[mcp]]\nname = \"m\"\ncommand = [\"x\"]\n[mcp.tools.t]\noutput = \"maybe\"");
        assert!(
            message.starts_with("mcp server #1 (`m`): `tools.t.output`: unknown variant `maybe`"),
            "{message}"
        );
    }

    #[test]
    fn mcp_tool_settings_reject_unknown_fields() {
        let message = error("[[mcp]]\nname = \"m\"\ncommand = [\"x\"]\n[mcp.tools.t]\nhide = true");
        assert!(message.contains("unknown field `hide`"), "{message}");
    }

    #[test]
    fn mcp_server_name_must_make_unambiguous_tool_names() {
        for name in ["my-server", "a__b", "trailing_", "_private", "9lives", ""] {
            let message = error(&format!("[[mcp]]\nname = {name:?}\ncommand = [\"x\"]"));
            assert!(message.contains("`name`:"), "{name}: {message}");
        }
        assert!(parse("[[mcp]]\nname = \"my_server2\"\ncommand = [\"x\"]").is_ok());
    }

    #[test]
    fn mcp_entry_errors_name_the_server() {
        let message = error("[[mcp]]\nname = \"files\"\ncommand = [\"x\"]\nargs = []");
        assert!(
            message.starts_with("mcp server #1 (`files`): unknown field `args`"),
            "{message}"
        );
    }

    #[test]
    fn nested_field_errors_name_the_whole_path() {
        let message = error("[[mcp]]\nname = \"files\"\ncommand = [\"x\"]\nenv = { ROOT = 1 }");
        assert!(
            message.starts_with("mcp server #1 (`files`): `env.ROOT`: invalid type: integer `1`"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn registry_holds_the_command_tools_in_file_order() {
        let text = "[[tool]]\nname = \"b\"\ndescription = \"\"\ncommand = [\"x\"]\n\
                    [[tool]]\nname = \"a\"\ndescription = \"\"\ncommand = [\"x\"]";
        let registry = parse(text).expect("valid").registry().await.expect("registry");
        let names: Vec<&str> = registry.iter().map(|t| t.name()).collect();
        assert_eq!(names, vec!["b", "a"]);
    }

    #[test]
    fn load_reports_a_missing_file_with_its_path() {
        let err = Manifest::load("/no/such/manifest.toml").unwrap_err();
        assert!(err.to_string().contains("/no/such/manifest.toml"), "{err}");
    }

    fn examples_manifest() -> Manifest {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tools/manifest.toml");
        Manifest::load(path).expect("examples/tools/manifest.toml is valid")
    }

    #[test]
    fn examples_manifest_declares_the_example_tools() {
        let manifest = examples_manifest();
        let names: Vec<&str> = manifest.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, vec!["add", "echo", "slow_echo", "fail", "chart", "send_email"]);
        let send = manifest
            .tools
            .iter()
            .find(|t| t.name == "send_email")
            .expect("send_email");
        assert_eq!(send.risk, ToolRisk::High);
    }

    #[tokio::test]
    async fn examples_manifest_add_runs_as_a_command_tool() {
        let manifest = examples_manifest();
        let registry = manifest.registry().await.expect("registry");
        let add = registry.get("add").and_then(|t| t.as_local()).expect("add is local");
        let ctx = ToolContext {
            run_id: "test".into(),
            call_id: 1,
            deadline: Instant::now() + Duration::from_secs(30),
        };
        let args = json!({"a": 2, "b": 40}).as_object().cloned().unwrap_or_default();
        let out = add.execute(ctx, args).await;
        assert_eq!(out, Ok(ToolOutput::Value(json!(42))));
    }
}
