//! The vendored monty (`guest/vendor/monty`) is crates.io monty 1.4.0 plus
//! the patches its `CHAINBOX.md` describes, and nothing else. Its `src/` is
//! diffed file by file against the published package in cargo's registry
//! (the host's dev-dependency on `monty = "=1.4.0"`, so a `cargo test` has
//! fetched it), and the check fails, naming file and line, when:
//!
//! - a changed hunk has no `chainbox patch` marker within it or within
//!   [`NEAR`] lines around it;
//! - a changed or added file is not named in CHAINBOX.md (as `src/…`, or
//!   its path under `src/`);
//! - a file of upstream is missing and CHAINBOX.md does not name it.
//!
//! It prints the patch set's size (files, hunks, lines added and removed):
//! run it with `--nocapture` to cite the figures.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What marks a patch in the vendored source.
const MARKER: &str = "chainbox patch";

/// How far from a hunk (in lines of the vendored file) its marker may be.
const NEAR: usize = 5;

/// Changed lines with at most this many unchanged lines between them are
/// one hunk: a unified diff with [`NEAR`] lines of context joins them.
const JOIN: usize = 2 * NEAR;

/// The vendored package's root.
fn vendored() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("guest/vendor/monty")
}

/// The root of the published monty 1.4.0 that cargo unpacked: where
/// `cargo metadata` says its manifest is, else under `$CARGO_HOME` (or
/// `~/.cargo`) `registry/src/*/monty-1.4.0`.
fn upstream() -> PathBuf {
    if let Some(root) = upstream_from_metadata() {
        return root;
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")));
    let registries = cargo_home.map(|home| home.join("registry/src"));
    let found = registries.as_deref().and_then(|dir| {
        let entries = std::fs::read_dir(dir).ok()?;
        entries
            .flatten()
            .map(|registry| registry.path().join("monty-1.4.0"))
            .find(|root| root.join("src/lib.rs").is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "the published monty 1.4.0 is neither where `cargo metadata` says nor under {}: run `cargo fetch`",
            registries.map_or_else(|| "$CARGO_HOME/registry/src".into(), |d| d.display().to_string())
        )
    })
}

fn upstream_from_metadata() -> Option<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    let monty = metadata["packages"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == "monty" && p["version"] == "1.4.0" && p["source"].is_string())?;
    let root = Path::new(monty["manifest_path"].as_str()?).parent()?.to_path_buf();
    root.join("src/lib.rs").is_file().then_some(root)
}

/// Every file under `dir`, relative to it, with `/` separators.
fn files(dir: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if let Ok(rel) = path.strip_prefix(root) {
                let parts: Vec<_> = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect();
                out.insert(parts.join("/"));
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

fn read(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    String::from_utf8_lossy(&bytes).into_owned()
}

/// One step of a line diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edit {
    /// The next line of both.
    Same,
    /// The next line of the old file is gone.
    Delete,
    /// The next line of the new file is new.
    Insert,
}

/// The shortest edit script from `old` to `new` (Myers' O((N+M)D)
/// algorithm), after their common head and tail.
fn diff(old: &[&str], new: &[&str]) -> Vec<Edit> {
    let head = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let (old_rest, new_rest) = (&old[head..], &new[head..]);
    let tail = old_rest
        .iter()
        .rev()
        .zip(new_rest.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (a, b) = (&old_rest[..old_rest.len() - tail], &new_rest[..new_rest.len() - tail]);
    let mut edits = vec![Edit::Same; head];
    edits.extend(myers(a, b));
    edits.extend(std::iter::repeat_n(Edit::Same, tail));
    edits
}

fn myers(a: &[&str], b: &[&str]) -> Vec<Edit> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = n + m;
    let offset = max + 1;
    // The furthest reaching x on each diagonal k (at `k + offset`).
    let mut v = vec![0isize; 2 * max as usize + 3];
    // Before each round d, the diagonals -d-1 ..= d+1 of `v`: where round
    // d's paths came from.
    let mut trace: Vec<Vec<isize>> = Vec::new();
    'search: for d in 0..=max {
        trace.push(v[(offset - d - 1) as usize..=(offset + d + 1) as usize].to_vec());
        for k in (-d..=d).step_by(2) {
            let i = (k + offset) as usize;
            let mut x = if k == -d || (k != d && v[i - 1] < v[i + 1]) {
                v[i + 1]
            } else {
                v[i - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[i] = x;
            if x >= n && y >= m {
                break 'search;
            }
        }
    }
    // Back from the end: round d's step came from diagonal k+1 (an
    // insertion) or k-1 (a deletion), then ran down its diagonal.
    let mut edits = Vec::new();
    let (mut x, mut y) = (n, m);
    for (d, before) in trace.iter().enumerate().skip(1).rev() {
        let d = d as isize;
        let at = |k: isize| before[(k + d + 1) as usize];
        let k = x - y;
        let down = k == -d || (k != d && at(k - 1) < at(k + 1));
        let prev_k = if down { k + 1 } else { k - 1 };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            edits.push(Edit::Same);
            x -= 1;
            y -= 1;
        }
        edits.push(if down { Edit::Insert } else { Edit::Delete });
        (x, y) = (prev_x, prev_y);
    }
    edits.extend(std::iter::repeat_n(Edit::Same, x as usize));
    edits.reverse();
    edits
}

/// `old` with `edits` applied, taking inserted lines from `new`; `None`
/// if an unchanged line differs or the edits do not use both up.
fn patched<'a>(old: &[&'a str], new: &[&'a str], edits: &[Edit]) -> Option<Vec<&'a str>> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    for edit in edits {
        match edit {
            Edit::Same => {
                (old.get(i)? == new.get(j)?).then_some(())?;
                out.push(old[i]);
                (i, j) = (i + 1, j + 1);
            }
            Edit::Delete => i += 1,
            Edit::Insert => {
                out.push(*new.get(j)?);
                j += 1;
            }
        }
    }
    (i == old.len() && j == new.len()).then_some(out)
}

/// A run of changes, with at most [`JOIN`] unchanged lines inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hunk {
    /// Its first line in the new file (0-based; for a pure deletion, the
    /// line after it).
    new_start: usize,
    /// One past its last line in the new file.
    new_end: usize,
    added: usize,
    removed: usize,
}

fn hunks(edits: &[Edit]) -> Vec<Hunk> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut new_line = 0;
    // Unchanged lines since the last change.
    let mut gap = usize::MAX;
    for &edit in edits {
        if edit == Edit::Same {
            new_line += 1;
            gap = gap.saturating_add(1);
            continue;
        }
        let last = hunks.last_mut().filter(|_| gap <= JOIN);
        let hunk = match last {
            Some(hunk) => hunk,
            None => {
                hunks.push(Hunk {
                    new_start: new_line,
                    new_end: new_line,
                    added: 0,
                    removed: 0,
                });
                hunks.last_mut().expect("just pushed")
            }
        };
        if edit == Edit::Insert {
            new_line += 1;
            hunk.added += 1;
        } else {
            hunk.removed += 1;
        }
        hunk.new_end = new_line;
        gap = 0;
    }
    hunks
}

/// Whether a `chainbox patch` marker stands in `hunk` or within [`NEAR`]
/// lines of it.
fn marked(lines: &[&str], hunk: &Hunk) -> bool {
    let from = hunk.new_start.saturating_sub(NEAR);
    let to = (hunk.new_end + NEAR).min(lines.len());
    lines[from..to].iter().any(|line| line.contains(MARKER))
}

/// Whether `notes` name the file at `rel` (under `src/`): as `src/{rel}`,
/// or as `rel` itself not inside a longer path (`run.rs` names `src/run.rs`,
/// not `src/bytecode/vm/run.rs`).
fn named_in(notes: &str, rel: &str) -> bool {
    notes.match_indices(rel).any(|(at, _)| {
        let before = &notes[..at];
        before.ends_with("src/")
            || !before
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '/' | '.' | '-'))
    })
}

/// The patch set's size.
#[derive(Debug, Default)]
struct Size {
    changed_files: usize,
    added_files: usize,
    hunks: usize,
    added_lines: usize,
    removed_lines: usize,
}

#[test]
fn the_vendored_monty_is_monty_1_4_0_plus_the_patches_chainbox_md_lists() {
    let (upstream, vendored) = (upstream(), vendored());
    let notes = read(&vendored.join("CHAINBOX.md"));
    let named = |rel: &str| named_in(&notes, rel);
    let (theirs, ours) = (files(&upstream.join("src")), files(&vendored.join("src")));
    let mut problems = Vec::new();
    let mut size = Size::default();
    for rel in theirs.difference(&ours) {
        if !named(rel) {
            problems.push(format!(
                "src/{rel}: removed from upstream, but CHAINBOX.md does not name it"
            ));
        }
    }
    for rel in &ours {
        let new_text = read(&vendored.join("src").join(rel));
        let old_text = match theirs.contains(rel) {
            true => read(&upstream.join("src").join(rel)),
            false => String::new(),
        };
        if old_text == new_text {
            continue;
        }
        if theirs.contains(rel) {
            size.changed_files += 1;
        } else {
            size.added_files += 1;
        }
        if !named(rel) {
            let what = if theirs.contains(rel) { "changed" } else { "added" };
            problems.push(format!("src/{rel}: {what}, but CHAINBOX.md does not name it"));
        }
        let (old, new): (Vec<&str>, Vec<&str>) = (old_text.lines().collect(), new_text.lines().collect());
        let edits = diff(&old, &new);
        assert_eq!(
            patched(&old, &new, &edits).as_deref(),
            Some(new.as_slice()),
            "src/{rel}: the diff does not rebuild the vendored file"
        );
        for hunk in hunks(&edits) {
            size.hunks += 1;
            size.added_lines += hunk.added;
            size.removed_lines += hunk.removed;
            if !marked(&new, &hunk) {
                problems.push(format!(
                    "src/{rel}:{}: a hunk (+{} -{}) with no `{MARKER}` marker within {NEAR} lines",
                    hunk.new_start + 1,
                    hunk.added,
                    hunk.removed
                ));
            }
        }
    }
    println!(
        "vendored monty against monty 1.4.0 ({}): {} files changed, {} added; {} hunks, +{} -{} lines",
        upstream.display(),
        size.changed_files,
        size.added_files,
        size.hunks,
        size.added_lines,
        size.removed_lines
    );
    assert!(
        problems.is_empty(),
        "the vendored monty has changes CHAINBOX.md and its markers do not account for ({}):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_line_diff_finds_the_shortest_edit_and_groups_nearby_changes_into_one_hunk() {
    let old = ["a", "b", "c", "d"];
    let new = ["a", "x", "c", "d", "e"];
    let edits = diff(&old, &new);
    assert_eq!(patched(&old, &new, &edits).as_deref(), Some(new.as_slice()));
    assert_eq!(edits.iter().filter(|e| **e != Edit::Same).count(), 3, "{edits:?}");
    assert_eq!(
        hunks(&edits),
        [Hunk {
            new_start: 1,
            new_end: 5,
            added: 2,
            removed: 1
        }]
    );
}

#[test]
fn changes_further_apart_than_the_join_are_separate_hunks() {
    let old: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    let mut new = old.clone();
    new[2] = "changed".into();
    new[30] = "changed too".into();
    let (old, new): (Vec<&str>, Vec<&str>) = (
        old.iter().map(String::as_str).collect(),
        new.iter().map(String::as_str).collect(),
    );
    let found = hunks(&diff(&old, &new));
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!((found[0].new_start, found[1].new_start), (2, 30));
}

#[test]
fn a_hunk_is_marked_by_a_marker_a_few_lines_away_but_not_further() {
    let mut lines = vec!["x"; 30];
    let hunk = Hunk {
        new_start: 15,
        new_end: 16,
        added: 1,
        removed: 0,
    };
    lines[15 - NEAR] = "// chainbox patch: why";
    assert!(marked(&lines, &hunk));
    lines[15 - NEAR] = "x";
    lines[15 - NEAR - 1] = "// chainbox patch: why";
    assert!(!marked(&lines, &hunk));
}

#[test]
fn a_file_is_named_by_its_path_under_src_but_not_inside_a_longer_path() {
    let notes = "`run.rs` and src/types/time.rs; see also bytecode/vm/call.rs";
    assert!(named_in(notes, "run.rs"));
    assert!(named_in(notes, "types/time.rs"));
    assert!(!named_in(notes, "time.rs"));
    assert!(!named_in(notes, "vm/call.rs"));
    assert!(named_in(notes, "bytecode/vm/call.rs"));
}
