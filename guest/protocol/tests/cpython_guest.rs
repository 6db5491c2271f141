//! The CPython guest's copy of this crate's constants. The guest is Python
//! and cannot link this crate, so its `protocol.py` is generated from the
//! constants here and committed (its native tests then need no build);
//! these tests fail when the file differs from what the constants give, or
//! when another module of the guest defines one of them by hand.
//! `CHAINBOX_BLESS=1 cargo test -p chainbox-protocol` rewrites the file.

use std::path::{Path, PathBuf};

use chainbox_protocol::{LOAD_ARTIFACT_FN, MAX_VALUE_DEPTH, PROTOCOL_VERSION, WORKSPACE, imports};

/// The guest package, `guest/cpython/src/chainbox_guest`.
fn guest_package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../cpython/src/chainbox_guest")
}

/// A Python value in the generated module.
enum Value {
    Int(u64),
    Str(&'static str),
    Strs(&'static [&'static str]),
}

/// Every constant the CPython guest shares with this crate, by its path
/// here (its Python name is the last segment), and its value.
fn shared_constants() -> [(&'static str, Value); 5] {
    [
        ("PROTOCOL_VERSION", Value::Int(u64::from(PROTOCOL_VERSION))),
        ("WORKSPACE", Value::Str(WORKSPACE)),
        ("MAX_VALUE_DEPTH", Value::Int(MAX_VALUE_DEPTH as u64)),
        ("LOAD_ARTIFACT_FN", Value::Str(LOAD_ARTIFACT_FN)),
        ("imports::C_MATH_FUNCTIONS", Value::Strs(&imports::C_MATH_FUNCTIONS)),
    ]
}

/// The Python name of the constant at `path`.
fn python_name(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

/// A Python string literal (these are ASCII: JSON's quoting is Python's).
fn python_str(text: &str) -> String {
    serde_json::to_string(text).expect("a str encodes as JSON")
}

/// A tuple of strings, wrapped under 100 columns.
fn python_tuple(items: &[&str]) -> String {
    let mut out = String::from("(\n");
    let mut line = String::from("   ");
    for item in items {
        let next = format!(" {},", python_str(item));
        if line.len() + next.len() > 99 {
            out.push_str(&line);
            out.push('\n');
            line = String::from("   ");
        }
        line.push_str(&next);
    }
    out.push_str(&line);
    out.push_str("\n)");
    out
}

/// The text of the guest's `protocol.py`.
fn python_module() -> String {
    let mut out = String::from(
        "\"\"\"The guest/host contract's constants the CPython guest shares with the\n\
         monty guest and the host, generated from `guest/protocol/src/lib.rs`.\n\
         \n\
         Do not edit: `guest/protocol/tests/cpython_guest.rs` checks this file\n\
         against the constants, and rewrites it when run with CHAINBOX_BLESS=1:\n\
         \n\
         \x20   CHAINBOX_BLESS=1 cargo test -p chainbox-protocol\n\
         \"\"\"\n",
    );
    for (rust, value) in shared_constants() {
        let name = python_name(rust);
        let value = match value {
            Value::Int(n) => n.to_string(),
            Value::Str(s) => python_str(s),
            Value::Strs(items) => python_tuple(items),
        };
        out.push_str(&format!("\n# guest/protocol `{rust}`\n{name} = {value}\n"));
    }
    out
}

#[test]
fn the_cpython_guest_protocol_module_is_generated_from_the_constants() {
    let path = guest_package().join("protocol.py");
    let expected = python_module();
    if std::env::var_os("CHAINBOX_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &expected).expect("write the guest's protocol.py");
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "{} differs from guest/protocol's constants; regenerate it with \
         `CHAINBOX_BLESS=1 cargo test -p chainbox-protocol`.\nExpected:\n{expected}",
        path.display()
    );
}

#[test]
fn no_other_module_of_the_cpython_guest_defines_a_protocol_constant() {
    let mut copies = Vec::new();
    let entries = std::fs::read_dir(guest_package()).expect("the guest package is a directory");
    for path in entries.flatten().map(|e| e.path()) {
        let is_module = path.extension().is_some_and(|ext| ext == "py");
        if !is_module || path.file_name().is_some_and(|name| name == "protocol.py") {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("a guest module is UTF-8");
        for (number, line) in source.lines().enumerate() {
            for (rust, _) in shared_constants() {
                let name = python_name(rust);
                let defines = line
                    .trim_start()
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.trim_start().starts_with('=') && !rest.trim_start().starts_with("=="));
                if defines {
                    copies.push(format!("{}:{}: {line}", path.display(), number + 1));
                }
            }
        }
    }
    assert!(
        copies.is_empty(),
        "the guest defines protocol constants by hand (import them from `.protocol`):\n{}",
        copies.join("\n")
    );
}
