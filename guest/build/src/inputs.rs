//! What the CPython guest component is built from, as one key: `build.rs`
//! keeps it beside the component and rebuilds the component (~20-40 s) only
//! when the key differs, since the dev, test and clippy builds each run the
//! build script.

use std::path::{Path, PathBuf};

/// The key of a build from `roots`: `tool` (the pinned componentize-py),
/// then every file at or below each root (the guest is a Python package, so
/// its modules sit a directory down), by path and content, sorted so the
/// order is stable. Python's bytecode caches are left out: a native test run
/// writes them, and they are no source.
pub fn build_key(tool: &str, roots: &[PathBuf]) -> Vec<u8> {
    let mut files = Vec::new();
    for root in roots {
        collect_files(root, &mut files);
    }
    files.sort();
    let mut key = tool.as_bytes().to_vec();
    for file in files {
        key.extend_from_slice(file.to_string_lossy().as_bytes());
        key.push(0);
        key.extend(std::fs::read(&file).unwrap_or_default());
        key.push(0);
    }
    key
}

/// `path` if it is a file, else every file below it.
fn collect_files(path: &Path, files: &mut Vec<PathBuf>) {
    if path.is_file() {
        files.push(path.to_path_buf());
    } else if path.file_name().is_some_and(|name| name != "__pycache__")
        && let Ok(entries) = std::fs::read_dir(path)
    {
        for entry in entries.flatten() {
            collect_files(&entry.path(), files);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory for one test, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("chainbox-inputs-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("src/chainbox_guest")).expect("create the scratch package");
            std::fs::write(dir.join("src/chainbox_guest/__init__.py"), "from . import loop\n").expect("write");
            std::fs::write(dir.join("src/chainbox_guest/loop.py"), "TIMEOUT = 1\n").expect("write");
            Scratch(dir)
        }

        fn key(&self) -> Vec<u8> {
            build_key("componentize-py==0.25.1", &[self.0.join("src"), self.0.join("wit")])
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_change_to_a_module_of_the_package_changes_the_key() {
        let scratch = Scratch::new("module");
        let before = scratch.key();
        std::fs::write(scratch.0.join("src/chainbox_guest/loop.py"), "TIMEOUT = 2\n").expect("write");
        assert_ne!(scratch.key(), before);
    }

    #[test]
    fn the_same_sources_give_the_same_key() {
        let scratch = Scratch::new("same");
        assert_eq!(scratch.key(), scratch.key());
    }

    #[test]
    fn bytecode_caches_are_not_part_of_the_key() {
        let scratch = Scratch::new("pycache");
        let before = scratch.key();
        let cache = scratch.0.join("src/chainbox_guest/__pycache__");
        std::fs::create_dir_all(&cache).expect("create the cache");
        std::fs::write(cache.join("loop.cpython-311.pyc"), b"\x00bytecode").expect("write");
        assert_eq!(scratch.key(), before);
    }
}
