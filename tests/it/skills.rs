//! Skills (seed item 5): `skills/<name>/SKILL.md` loaded and checked against
//! the registry, a chain under a skill limited to its tools by the invoker,
//! and its instructions above the stubs; through the library and the
//! `chainbox` binary (`run --skill`, `stubs --skill`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use chainbox::result::PolicyDecision;
use chainbox::skills::{Skill, SkillError};
use chainbox::{Approval, CallStatus, ChainPolicy, ToolRisk};
use serde_json::{Value, json};

use crate::fixtures::{engine, registry};

const MATH: &str = "---\nname: math\ndescription: Sums numbers.\nversion: 2\nallowed_tools: [add]\n---\n\
                    Add the numbers pairwise.\nNever echo anything.\n";

/// `dir/skills/<name>/SKILL.md` with `text`.
fn write_skill(dir: &Path, name: &str, text: &str) {
    let folder = dir.join("skills").join(name);
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::write(folder.join("SKILL.md"), text).expect("write");
}

#[test]
fn skill_loads_from_its_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_skill(dir.path(), "math", MATH);
    let skill = Skill::load_named(dir.path().join("skills"), "math").expect("skill");
    assert_eq!(skill.name, "math");
    assert_eq!(skill.version, "2");
    assert_eq!(skill.allowed_tools, ["add"]);
    assert_eq!(skill.instructions, "Add the numbers pairwise.\nNever echo anything.");
    assert!(skill.path.is_some_and(|p| p.ends_with("skills/math/SKILL.md")));
}

#[test]
fn skill_whose_name_is_not_its_folder_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_skill(dir.path(), "sums", MATH);
    let e = Skill::load_named(dir.path().join("skills"), "sums").expect_err("mismatch");
    assert!(
        matches!(&e, SkillError::NameMismatch { name, folder, .. } if name == "math" && folder == "sums"),
        "{e}"
    );
}

#[test]
fn skill_allowing_a_tool_missing_from_the_registry_is_refused_naming_both() {
    let skill = Skill::parse("---\nname: web\nallowed_tools: [add, search]\n---\n", None).expect("skill");
    let e = skill.check_tools(&registry()).expect_err("search is unknown");
    assert_eq!(
        e.to_string(),
        "skill \"web\" allows tool \"search\", which is not in the tool registry"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn chain_under_a_skill_calls_its_tools_and_is_denied_the_others() {
    let skill = Skill::parse(MATH, None).expect("skill");
    skill.check_tools(&registry()).expect("known tools");
    let policy = skill.restrict(ChainPolicy::default());
    let script = "s = await add(a=1, b=2)\ntry:\n    await echo(text='hi')\n    e = 'ran'\nexcept PermissionError as x:\n    e = str(x)\n[s, e]";
    let r = engine()
        .run(script, &registry(), &policy, &Approval::auto(ToolRisk::Critical))
        .await;
    assert_eq!(r.output[0], json!(3.0), "{r:#?}");
    let message = r.output[1].as_str().unwrap_or_default();
    assert!(
        message.contains("\"echo\"") && message.contains("skill \"math\""),
        "{r:#?}"
    );
    assert_eq!(r.call_trace[1].status, CallStatus::Denied);
    assert_eq!(r.call_trace[1].policy, Some(PolicyDecision::DeniedNotAllowed));
}

#[test]
fn skill_stubs_put_its_instructions_above_only_its_tools() {
    let skill = Skill::parse(MATH, None).expect("skill");
    let stubs = skill.stubs(&registry());
    assert!(
        stubs.starts_with("# Skill: math (version 2)\n# Sums numbers.\n#\n# Add the numbers pairwise.\n"),
        "{stubs}"
    );
    assert!(stubs.contains("async def add("), "{stubs}");
    assert!(!stubs.contains("async def echo("), "{stubs}");
    assert!(stubs.find("Never echo") < stubs.find("async def add("));
    assert_python_parses(&stubs);
}

fn assert_python_parses(source: &str) {
    let mut child = Command::new("python3")
        .args(["-c", "import ast, sys; ast.parse(sys.stdin.read())"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(source.as_bytes())
        .expect("write");
    assert!(child.wait().expect("wait").success(), "not valid Python:\n{source}");
}

// ---------------------------------------------------------------- the binary

/// A folder with `tools.toml` (`add`, `echo` as shell tools) and `skills/math`.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = r#"
[[tool]]
name = "add"
description = "Adds a and b."
command = ["python3", "-c", "import json,sys; a=json.load(sys.stdin)['arguments']; print(a['a']+a['b'])"]
[tool.input_schema]
type = "object"
[tool.input_schema.properties.a]
type = "integer"
[tool.input_schema.properties.b]
type = "integer"

[[tool]]
name = "echo"
description = "Echoes text."
command = ["python3", "-c", "import json,sys; print(json.dumps(json.load(sys.stdin)['arguments']['text']))"]
[tool.input_schema]
type = "object"
[tool.input_schema.properties.text]
type = "string"
"#;
    std::fs::write(dir.path().join("tools.toml"), manifest).expect("write");
    write_skill(dir.path(), "math", MATH);
    write_skill(
        dir.path(),
        "web",
        "---\nname: web\nallowed_tools: [search]\n---\nSearch.\n",
    );
    dir
}

fn chainbox(dir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chainbox"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chainbox");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write");
    child.wait_with_output().expect("output")
}

#[test]
fn run_with_skill_denies_tools_outside_it() {
    let dir = project();
    let script = "s = await add(a=1, b=2)\ntry:\n    await echo(text='hi')\nexcept PermissionError:\n    s = -s\ns";
    let out = chainbox(
        dir.path(),
        &["run", "-", "--tools", "tools.toml", "--skill", "math", "--json"],
        script,
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(result["output"], -3, "{result:#}");
    assert_eq!(result["call_trace"][1]["status"], "denied", "{result:#}");
    assert_eq!(result["call_trace"][1]["policy"], "denied_not_allowed", "{result:#}");
}

#[test]
fn run_with_skill_naming_an_unknown_tool_exits_2_naming_tool_and_skill() {
    let dir = project();
    let out = chainbox(
        dir.path(),
        &["run", "-", "--tools", "tools.toml", "--skill", "web"],
        "1",
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("skill \"web\" allows tool \"search\""), "{stderr}");
}

#[test]
fn stubs_with_skill_show_its_instructions_then_its_tools() {
    let dir = project();
    let out = chainbox(dir.path(), &["stubs", "--tools", "tools.toml", "--skill", "math"], "");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stubs = String::from_utf8_lossy(&out.stdout);
    assert!(stubs.starts_with("# Skill: math (version 2)\n"), "{stubs}");
    assert!(
        stubs.contains("async def add(") && !stubs.contains("async def echo("),
        "{stubs}"
    );
}

#[test]
fn stubs_with_a_skill_path_load_that_folder() {
    let dir = project();
    let folder = dir.path().join("skills/math").display().to_string();
    let out = chainbox(dir.path(), &["stubs", "--tools", "tools.toml", "--skill", &folder], "");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("# Skill: math"));
}

#[tokio::test]
async fn example_skill_loads_against_the_example_manifest() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tools");
    let manifest = chainbox::manifest::Manifest::load(root.join("manifest.toml")).expect("manifest");
    let skill = Skill::load_named(root.join("skills"), "arithmetic").expect("skill");
    skill
        .check_tools(&manifest.registry().await.expect("registry"))
        .expect("its tools exist");
    assert_eq!(skill.allowed_tools, ["add"]);
}
