//! The README stays what a user reads in ten minutes: at most 250 lines
//! (the rest belongs in docs/), and every file it links to exists.

use std::path::Path;

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).expect("README.md")
}

#[test]
fn the_readme_is_at_most_250_lines() {
    let lines = readme().lines().count();
    assert!(lines <= 250, "README.md has {lines} lines: move details to docs/");
}

#[test]
fn every_file_the_readme_links_to_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = readme();
    let missing: Vec<&str> = text
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .filter(|target| !target.starts_with("http"))
        .map(|target| target.split('#').next().unwrap_or(target))
        .filter(|path| !root.join(path).exists())
        .collect();
    assert!(missing.is_empty(), "README.md links to missing files: {missing:?}");
}
