//! Skills: a prompt package next to the tools (the seed's `Skill`). A skill
//! is not code: it is a named set of instructions put above the stubs the
//! model is shown, optionally narrowing which tools a chain may call.
//!
//! A skill lives in `skills/<name>/SKILL.md`: front matter between `---`
//! lines, then the instructions.
//!
//! ```text
//! ---
//! name: research
//! description: Look things up and cite them.
//! version: 2
//! allowed_tools: [search, read_file]
//! ---
//! Search first, then read the two best sources; quote them.
//! ```
//!
//! The front matter is the small YAML subset these fields need, parsed here
//! rather than by a YAML crate: one `key: value` per line, values plain or
//! quoted, `allowed_tools` as a flow list (`[a, b]`) or a block list (`- a`
//! lines), `#` comments. `allowed-tools` (the spelling of other SKILL.md
//! files) is accepted for `allowed_tools`. Anything else (an unknown key, a
//! nested mapping, a missing `name`) is an error naming the line.
//!
//! Invariant: a skill's `allowed_tools` are checked against the registry
//! ([`Skill::check_tools`]) before a chain runs with it, and a chain run with
//! a skill can call no other tool: the invoker denies the call
//! ([`ChainPolicy::restricted_to`]).

use std::path::{Path, PathBuf};

use crate::policy::ChainPolicy;
use crate::stubs::python_stubs;
use crate::tools::ToolRegistry;

/// The file a skill folder holds.
pub const SKILL_FILE: &str = "SKILL.md";

/// A skill: instructions for the model and the tools it may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (the folder's name when loaded from `skills/<name>/`).
    pub name: String,
    /// The instructions: the body of `SKILL.md`, put above the stubs.
    pub instructions: String,
    /// One line saying what it is for.
    pub description: String,
    /// The tools a chain using it may call; empty means no narrowing.
    pub allowed_tools: Vec<String>,
    /// The `SKILL.md` it was loaded from, if any.
    pub path: Option<PathBuf>,
    /// Its version; `"1"` unless the front matter says otherwise.
    pub version: String,
}

/// Why a skill could not be loaded or used.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// The file could not be read.
    #[error("cannot read skill {}: {source}", path.display())]
    Read {
        /// The `SKILL.md`.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The front matter is missing or malformed.
    #[error("skill {}: {message}", where_.display())]
    FrontMatter {
        /// The file, or `<inline>`.
        where_: PathBuf,
        /// What is wrong, naming the line or the field.
        message: String,
    },
    /// The front matter's `name` is not the folder's.
    #[error("skill {}: name {name:?} does not match its folder {folder:?}", path.display())]
    NameMismatch {
        /// The `SKILL.md`.
        path: PathBuf,
        /// The `name` in the front matter.
        name: String,
        /// The folder's name.
        folder: String,
    },
    /// A tool in `allowed_tools` is not in the registry.
    #[error("skill {skill:?} allows tool {tool:?}, which is not in the tool registry")]
    UnknownTool {
        /// The skill.
        skill: String,
        /// The tool it names.
        tool: String,
    },
}

impl Skill {
    /// Parses `SKILL.md` text. `path` is only for error messages and
    /// [`Skill::path`].
    pub fn parse(text: &str, path: Option<&Path>) -> Result<Skill, SkillError> {
        let where_ = path.map_or_else(|| PathBuf::from("<inline>"), Path::to_owned);
        let error = |message: String| SkillError::FrontMatter {
            where_: where_.clone(),
            message,
        };
        let (front, body) = split_front_matter(text).map_err(error)?;
        let mut fields = FrontMatter::default();
        parse_front_matter(front, &mut fields).map_err(error)?;
        let name = fields.name.ok_or_else(|| error("front matter has no `name`".into()))?;
        if name.trim().is_empty() {
            return Err(error("`name` is empty".into()));
        }
        Ok(Skill {
            name,
            instructions: body.trim().to_owned(),
            description: fields.description.unwrap_or_default(),
            allowed_tools: fields.allowed_tools.unwrap_or_default(),
            path: path.map(Path::to_owned),
            version: fields.version.unwrap_or_else(|| "1".to_owned()),
        })
    }

    /// Loads `<dir>/SKILL.md`; its `name` must be the folder's name.
    pub fn load(dir: impl AsRef<Path>) -> Result<Skill, SkillError> {
        let dir = dir.as_ref();
        let path = dir.join(SKILL_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| SkillError::Read {
            path: path.clone(),
            source,
        })?;
        let skill = Skill::parse(&text, Some(&path))?;
        let folder = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default();
        if skill.name != folder {
            return Err(SkillError::NameMismatch {
                path,
                name: skill.name,
                folder,
            });
        }
        Ok(skill)
    }

    /// Loads the skill `name` from `skills_dir/<name>/SKILL.md`.
    pub fn load_named(skills_dir: impl AsRef<Path>, name: &str) -> Result<Skill, SkillError> {
        Skill::load(skills_dir.as_ref().join(name))
    }

    /// Checks every `allowed_tools` name against `registry`.
    pub fn check_tools(&self, registry: &ToolRegistry) -> Result<(), SkillError> {
        match self.allowed_tools.iter().find(|t| registry.get(t).is_none()) {
            Some(tool) => Err(SkillError::UnknownTool {
                skill: self.name.clone(),
                tool: tool.clone(),
            }),
            None => Ok(()),
        }
    }

    /// `policy` narrowed to this skill's tools (unchanged when the skill
    /// names none), so the invoker denies any other.
    pub fn restrict(&self, policy: ChainPolicy) -> ChainPolicy {
        if self.allowed_tools.is_empty() {
            return policy;
        }
        policy.restricted_to(
            self.allowed_tools.iter().map(String::as_str),
            format!("skill {:?}", self.name),
        )
    }

    /// The registry a model sees with this skill: only its tools, in
    /// registration order (all of them when it names none).
    pub fn registry(&self, registry: &ToolRegistry) -> ToolRegistry {
        if self.allowed_tools.is_empty() {
            return registry.clone();
        }
        let tools = registry
            .iter()
            .filter(|t| self.allowed_tools.iter().any(|a| a == t.name()))
            .cloned();
        // A subset of a valid registry is valid.
        ToolRegistry::from_tools(tools).unwrap_or_default()
    }

    /// What the model is shown: the skill's instructions as a comment block,
    /// then the stubs of its tools.
    pub fn stubs(&self, registry: &ToolRegistry) -> String {
        let mut out = format!(
            "# Skill: {} (version {})\n",
            one_line(&self.name),
            one_line(&self.version)
        );
        if !self.description.is_empty() {
            out.push_str(&format!("# {}\n", one_line(&self.description)));
        }
        out.push_str("#\n");
        for line in self.instructions.lines() {
            let line = line.trim_end();
            if line.is_empty() {
                out.push_str("#\n");
            } else {
                out.push_str(&format!("# {line}\n"));
            }
        }
        out.push('\n');
        out.push_str(&python_stubs(&self.registry(registry)));
        out
    }
}

/// One line: newlines and carriage returns become spaces (a comment line
/// must not end early).
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

#[derive(Default)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    version: Option<String>,
    allowed_tools: Option<Vec<String>>,
}

/// The front matter (without its `---` lines) and the body.
fn split_front_matter(text: &str) -> Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---")
        .and_then(|r| r.strip_prefix('\n').or(r.strip_prefix("\r\n")))
    else {
        return Err("must start with a `---` line opening the front matter".into());
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err("the front matter has no closing `---` line".into())
}

fn parse_front_matter(front: &str, fields: &mut FrontMatter) -> Result<(), String> {
    let lines: Vec<&str> = front.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let number = i + 2; // line 1 is the opening `---`
        let line = strip_comment(lines[i]);
        i += 1;
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err(format!("line {number}: unexpected indentation"));
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("line {number}: expected `key: value`"));
        };
        let (key, value) = (key.trim(), value.trim());
        let field = |what: &str| format!("line {number}: `{key}` {what}");
        match key {
            "name" | "description" | "version" => {
                if value.is_empty() {
                    return Err(field("needs a value on the same line"));
                }
                let value = scalar(value).map_err(|e| field(&e))?;
                let slot = match key {
                    "name" => &mut fields.name,
                    "description" => &mut fields.description,
                    _ => &mut fields.version,
                };
                if slot.replace(value).is_some() {
                    return Err(field("is given twice"));
                }
            }
            "allowed_tools" | "allowed-tools" => {
                let tools = if value.is_empty() {
                    // A block list: the following `- item` lines.
                    let mut items = Vec::new();
                    while i < lines.len() {
                        let item = strip_comment(lines[i]);
                        let Some(item) = item.trim_start().strip_prefix('-') else {
                            if item.trim().is_empty() {
                                i += 1;
                                continue;
                            }
                            break;
                        };
                        if !lines[i].starts_with([' ', '\t', '-']) {
                            break;
                        }
                        items.push(scalar(item.trim()).map_err(|e| format!("line {}: {e}", i + 2))?);
                        i += 1;
                    }
                    items
                } else if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                    inner
                        .split(',')
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(scalar)
                        .collect::<Result<_, _>>()
                        .map_err(|e| field(&e))?
                } else {
                    // `allowed-tools: a b` (space separated), as other SKILL.md files write it.
                    value
                        .split([' ', ','])
                        .filter(|t| !t.is_empty())
                        .map(scalar)
                        .collect::<Result<_, _>>()
                        .map_err(|e| field(&e))?
                };
                if fields.allowed_tools.replace(tools).is_some() {
                    return Err(field("is given twice"));
                }
            }
            other => {
                return Err(format!(
                    "line {number}: unknown field `{other}` (expected name, description, version, allowed_tools)"
                ));
            }
        }
    }
    Ok(())
}

/// A line without its `#` comment (a `#` inside quotes is kept).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (c, quote) {
            ('"' | '\'', None) => quote = Some(c),
            (c, Some(q)) if c == q => quote = None,
            ('#', None) if i == 0 || line[..i].ends_with([' ', '\t']) => return &line[..i],
            _ => {}
        }
    }
    line
}

/// A plain or quoted scalar.
fn scalar(value: &str) -> Result<String, String> {
    let value = value.trim();
    for q in ['"', '\''] {
        if let Some(rest) = value.strip_prefix(q) {
            return rest
                .strip_suffix(q)
                .map(str::to_owned)
                .ok_or_else(|| format!("has an unclosed {q} quote"));
        }
    }
    if value.starts_with(['[', '{', '|', '>', '&', '*', '!']) {
        return Err(format!("has a value ({value}) this front matter does not support"));
    }
    Ok(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Skill, String> {
        Skill::parse(text, None).map_err(|e| e.to_string())
    }

    #[test]
    fn front_matter_fields_and_body_are_read() {
        let skill = parse(
            "---\nname: research\ndescription: \"Look things up: cite them\"\nversion: 2\n\
             allowed_tools: [search, 'read_file']\n---\n\nSearch first.\nThen read.\n",
        )
        .unwrap();
        assert_eq!(skill.name, "research");
        assert_eq!(skill.description, "Look things up: cite them");
        assert_eq!(skill.version, "2");
        assert_eq!(skill.allowed_tools, vec!["search", "read_file"]);
        assert_eq!(skill.instructions, "Search first.\nThen read.");
    }

    #[test]
    fn omitted_fields_take_the_seed_defaults() {
        let skill = parse("---\nname: plain\n---\nbody").unwrap();
        assert_eq!(skill.description, "");
        assert_eq!(skill.version, "1");
        assert!(skill.allowed_tools.is_empty());
    }

    #[test]
    fn allowed_tools_may_be_a_block_list_with_comments() {
        let skill =
            parse("---\nname: s # the name\nallowed_tools:\n  - a\n  - b  # second\nversion: '3'\n---\n").unwrap();
        assert_eq!(skill.name, "s");
        assert_eq!(skill.allowed_tools, vec!["a", "b"]);
        assert_eq!(skill.version, "3");
    }

    #[test]
    fn allowed_tools_with_a_dash_is_accepted() {
        let skill = parse("---\nname: s\nallowed-tools: a, b\n---\n").unwrap();
        assert_eq!(skill.allowed_tools, vec!["a", "b"]);
    }

    #[test]
    fn missing_front_matter_is_an_error() {
        assert!(
            parse("# Just markdown")
                .unwrap_err()
                .contains("must start with a `---` line")
        );
    }

    #[test]
    fn unclosed_front_matter_is_an_error() {
        assert!(parse("---\nname: s\n").unwrap_err().contains("no closing `---`"));
    }

    #[test]
    fn missing_name_is_an_error() {
        assert!(parse("---\ndescription: d\n---\n").unwrap_err().contains("no `name`"));
    }

    #[test]
    fn unknown_field_is_an_error_naming_it_and_its_line() {
        let e = parse("---\nname: s\ncolour: red\n---\n").unwrap_err();
        assert!(e.contains("line 3: unknown field `colour`"), "{e}");
    }

    #[test]
    fn nested_values_are_an_error() {
        let e = parse("---\nname: s\ndescription:\n  nested: x\n---\n").unwrap_err();
        assert!(e.contains("`description` needs a value"), "{e}");
    }

    #[test]
    fn a_field_given_twice_is_an_error() {
        let e = parse("---\nname: a\nname: b\n---\n").unwrap_err();
        assert!(e.contains("`name` is given twice"), "{e}");
    }

    #[test]
    fn restrict_without_allowed_tools_keeps_the_policy() {
        let skill = parse("---\nname: s\n---\n").unwrap();
        assert_eq!(skill.restrict(ChainPolicy::default()), ChainPolicy::default());
    }

    #[test]
    fn restrict_names_the_skill() {
        let skill = parse("---\nname: s\nallowed_tools: [a]\n---\n").unwrap();
        let policy = skill.restrict(ChainPolicy::default());
        assert!(policy.allows_tool("a") && !policy.allows_tool("b"));
        assert_eq!(policy.allowed_by.as_deref(), Some("skill \"s\""));
    }
}
