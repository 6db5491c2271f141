//! The typeshed the checker reads: monty's, with a few definitions made
//! simpler where ty spends its time on a chain and their types give the
//! check nothing.
//!
//! A chain's tool calls return `Any` (their stubs say so), so what
//! `asyncio.gather` returns is a list of `Any` whatever its overloads infer,
//! and so is what `max`, `min`, `sum` and `sorted` make of tool results.
//! ty's inference of those generic overloads (`gather`'s fourteen, with a
//! typevar each argument; `max`'s and `sum`'s bounded typevars and
//! protocols) was half of a warm check of the demo script: 1.7 ms of CPU
//! time, 0.9 ms with these patches. Each patch only loosens a type: a value
//! typed `Any` where it was precise can lose a diagnostic (a warning, or a
//! refusal of `max` of ints given for a `str`), never gain one.
//!
//! The patched files are rendered once per process into a zip of their
//! own (ty reads typeshed from a zip), which every checker shares.

use std::sync::LazyLock;

use ruff_db::vendored::{VendoredFileSystem, VendoredFileSystemBuilder, VendoredPath, VendoredPathBuf};

/// One patch: in `file`, the text from `from` to the end of `to` (both
/// included, `to` searched after `from`) becomes `with`.
struct Patch {
    file: &'static str,
    from: &'static str,
    to: &'static str,
    with: &'static str,
}

/// The patches. Each must apply (a test sees to it): monty's typeshed is
/// pinned, and a patch that no longer finds its text is a build to fix.
const PATCHES: &[Patch] = &[
    // Fourteen generic overloads (`_FutureLike[_T1]`, ...): one signature,
    // awaited as `list[Any]`.
    Patch {
        file: "stdlib/asyncio.pyi",
        from: "@overload\ndef gather(",
        to: "def gather(*coros_or_futures: _FutureLike[_T], return_exceptions: bool) -> _Future[list[_T | BaseException]]: ...\n",
        with: "def gather(*coros_or_futures: Any, return_exceptions: bool = False) -> _Future[list[Any]]: ...\n",
    },
    // Six overloads each, on `SupportsRichComparisonT`.
    Patch {
        file: "stdlib/builtins.pyi",
        from: "@overload\ndef max(",
        to: "def min(iterable: Iterable[_T1], /, *, key: Callable[[_T1], SupportsRichComparison], default: _T2) -> _T1 | _T2: ...\n",
        with: "def max(*args: Any, key: Any = None, default: Any = None) -> Any: ...\ndef min(*args: Any, key: Any = None, default: Any = None) -> Any: ...\n",
    },
    // Overloads on bounded typevars and the protocols of addition; from
    // `sorted` to the end of `sum`, with the typevars only `sum` used.
    Patch {
        file: "stdlib/builtins.pyi",
        from: "@overload\ndef sorted(",
        to: "def sum(iterable: Iterable[_AddableT1], /, start: _AddableT2) -> _AddableT1 | _AddableT2: ...\n",
        with: "def sorted(iterable: Iterable[Any], /, *, key: Any = None, reverse: bool = False) -> list[Any]: ...\ndef sum(iterable: Iterable[Any], /, start: Any = 0) -> Any: ...\n",
    },
];

/// The patched typeshed, shared by every checker of the process.
pub(super) fn file_system() -> &'static VendoredFileSystem {
    static PATCHED: LazyLock<VendoredFileSystem> = LazyLock::new(|| {
        // Not script-derived: monty's zip and our patches, fixed at build
        // time (a test builds it).
        patched(monty_typeshed::file_system()).expect("the checker's typeshed is rendered from monty's")
    });
    &PATCHED
}

/// `original` with [`PATCHES`] applied.
fn patched(original: &VendoredFileSystem) -> Result<VendoredFileSystem, String> {
    let mut builder = VendoredFileSystemBuilder::new(zip::CompressionMethod::Stored);
    let mut pending = vec![VendoredPathBuf::from("stdlib")];
    let mut applied = 0;
    while let Some(dir) = pending.pop() {
        builder.add_directory(&dir).map_err(|e| e.to_string())?;
        for entry in original.read_directory(&dir) {
            let path = entry.into_path();
            if original.is_directory(&path) {
                pending.push(path);
                continue;
            }
            let mut text = original.read_to_string(&path).map_err(|e| e.to_string())?;
            for patch in PATCHES.iter().filter(|p| VendoredPath::new(p.file) == path.as_path()) {
                text = apply(&text, patch).ok_or_else(|| format!("patch of {} does not apply", patch.file))?;
                applied += 1;
            }
            builder.add_file(&path, &text).map_err(|e| e.to_string())?;
        }
    }
    if applied != PATCHES.len() {
        return Err(format!(
            "{applied} of {} typeshed patches found their file",
            PATCHES.len()
        ));
    }
    builder.finish().map_err(|e| e.to_string())
}

/// `text` with `patch` applied, if its text is there.
fn apply(text: &str, patch: &Patch) -> Option<String> {
    let start = text.find(patch.from)?;
    let end = start + text[start..].find(patch.to)? + patch.to.len();
    Some(format!("{}{}{}", &text[..start], patch.with, &text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_patch_applies_and_the_rest_is_monty_s() {
        let original = monty_typeshed::file_system();
        let ours = patched(original).expect("patched");
        let asyncio = ours.read_to_string("stdlib/asyncio.pyi").expect("asyncio");
        assert_eq!(asyncio.matches("def gather(").count(), 1, "{asyncio}");
        assert!(asyncio.contains("def sleep("));
        let builtins = ours.read_to_string("stdlib/builtins.pyi").expect("builtins");
        for name in ["max", "min", "sorted", "sum"] {
            assert_eq!(builtins.matches(&format!("\ndef {name}(")).count(), 1, "{name}");
        }
        for file in ["stdlib/asyncio.pyi", "stdlib/builtins.pyi"] {
            let text = ours.read_to_string(file).expect("patched file");
            let parsed = ruff_python_parser::parse_module(&text);
            assert!(parsed.is_ok(), "{file}: {:?}", parsed.err());
        }
        assert!(ours.is_file("stdlib/VERSIONS"));
        assert!(ours.is_file("stdlib/collections/__init__.pyi"));
    }
}
