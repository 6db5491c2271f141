//! The module graph stays a house of floors: every `crate::` path in
//! `src/` names a module on a lower floor than its own (ARCHITECTURE.md,
//! "Layers", lists the same floors), and the files of one folder
//! (`sandbox/`, `python_choice/`, …) import each other without a circle.
//! Test modules (`#[cfg(test)]` to the end of a file, and files named
//! `tests.rs`) are left out: tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, bottom first. A module may use only modules of the floors
/// below its own; two modules of one floor know nothing of each other.
const FLOORS: &[&[&str]] = &[
    // Shared helpers, and who a chain runs for: depend on nothing of ours.
    &["digest", "util", "telemetry", "principal", "deep_stack"],
    // Content-addressed artifacts, and who is calling (access tokens
    // checked); then the result contract that names artifacts.
    &["artifacts", "auth"],
    &["result"],
    // What a chain may call, the chain's files, its journal, and what
    // it shows as it runs.
    &["tools", "workspace", "journal", "live"],
    // The rules a chain runs under.
    &["policy", "approval"],
    // The gates of one tool call, where durable chains live, and the
    // data-flow policy's vocabulary.
    &["shaping", "store", "flow"],
    &["invoker"],
    // Which Python, and what the model is shown of the tools; then the
    // check before a chain runs, and the store's host side of the sandbox.
    &["python_choice", "stubs"],
    &["check", "sandbox"],
    // Compiled guests, their instances and spares.
    &["snapshot", "prefault", "housekeeper"],
    &["guests"],
    // One chain's life, and the engine that runs chains.
    &["chain"],
    &["engine"],
    // What the model is shown, and durable chains.
    &["demo", "specs", "durable"],
    &["discovery", "skills"],
    &["run_chain"],
    // MCP both ways, and the manifest that starts upstream servers.
    &["mcp"],
    &["manifest"],
    &["cli"],
];

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's module path below `src/` (`sandbox/mod.rs` is `["sandbox"]`).
fn module_of(path: &Path) -> Vec<String> {
    let relative = path.strip_prefix(src()).expect("a file under src/");
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The code of a file without comments and without its test module.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => &text[..],
    };
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names `prefix` is followed by in `code`: `crate::x` gives `x`, and
/// `crate::{x, y::z}` gives `x` and `y`.
fn paths_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        // `foo_crate::x` is not ours.
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        match rest.strip_prefix('{') {
            Some(group) => found.extend(group_items(group)),
            None => found.extend(first_name(rest)),
        }
    }
    found
}

/// The first name of each top-level item of a `{…}` use group.
fn group_items(group: &str) -> BTreeSet<String> {
    let mut items = BTreeSet::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.extend(first_name(&current));
                current.clear();
            }
            c if depth == 0 => current.push(c),
            _ => {}
        }
    }
    items.extend(first_name(&current));
    items
}

fn first_name(item: &str) -> Option<String> {
    let name: String = item
        .trim()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The floor of a top-level module, if the table lists it.
fn floor_of(module: &str) -> Option<usize> {
    FLOORS.iter().position(|floor| floor.contains(&module))
}

/// Top-level module → the top-level modules its files name, and, per
/// folder, file → the sibling files it names (`super::x`, `crate::dir::x`).
struct Graph {
    top: BTreeMap<String, BTreeSet<String>>,
    siblings: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
}

fn graph() -> Graph {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut siblings: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in files {
        let module = module_of(&file);
        let Some(own) = module.first().cloned() else { continue };
        if own == "lib" || own == "main" || module.last().is_some_and(|m| m == "tests") {
            continue;
        }
        let code = code_of(&file);
        let named = paths_after(&code, "crate::");
        top.entry(own.clone())
            .or_default()
            .extend(named.iter().filter(|n| **n != own && floor_of(n).is_some()).cloned());
        if module.len() >= 2 {
            let folder = module[..module.len() - 1].join("/");
            let me = module[module.len() - 1].clone();
            let mut used: BTreeSet<String> = paths_after(&code, "super::");
            used.extend(paths_after(
                &code,
                &format!("crate::{}::", module[..module.len() - 1].join("::")),
            ));
            used.remove(&me);
            siblings.entry(folder).or_default().entry(me).or_default().extend(used);
        }
    }
    Graph { top, siblings }
}

#[test]
fn every_top_level_module_is_on_a_floor() {
    let graph = graph();
    let unlisted: Vec<&String> = graph.top.keys().filter(|m| floor_of(m).is_none()).collect();
    assert!(
        unlisted.is_empty(),
        "modules missing from tests/it/layers.rs's FLOORS (and ARCHITECTURE.md's layers): {unlisted:?}"
    );
}

#[test]
fn no_module_uses_one_on_its_own_floor_or_above() {
    let graph = graph();
    let mut wrong = Vec::new();
    for (module, used) in &graph.top {
        let Some(floor) = floor_of(module) else { continue };
        for other in used {
            if floor_of(other).is_some_and(|f| f >= floor) {
                wrong.push(format!("{module} -> {other}"));
            }
        }
    }
    assert!(wrong.is_empty(), "imports that do not run down the floors: {wrong:#?}");
}

#[test]
fn the_files_of_one_folder_use_each_other_without_a_circle() {
    let graph = graph();
    for (folder, files) in &graph.siblings {
        // Depth-first search for a back edge among the folder's files.
        fn visit<'a>(
            file: &'a str,
            files: &'a BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<&'a str>,
            done: &mut BTreeSet<&'a str>,
        ) -> Option<Vec<String>> {
            if let Some(at) = path.iter().position(|f| *f == file) {
                let mut circle: Vec<String> = path[at..].iter().map(|f| f.to_string()).collect();
                circle.push(file.to_owned());
                return Some(circle);
            }
            if !done.insert(file) {
                return None;
            }
            path.push(file);
            for next in files.get(file).into_iter().flatten() {
                if files.contains_key(next.as_str())
                    && let Some(circle) = visit(next, files, path, done)
                {
                    return Some(circle);
                }
            }
            path.pop();
            None
        }
        let mut done = BTreeSet::new();
        for file in files.keys() {
            let circle = visit(file, files, &mut Vec::new(), &mut done);
            assert!(circle.is_none(), "a circle in src/{folder}/: {circle:?}");
        }
    }
}
