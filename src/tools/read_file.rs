//! `read_file`: the second seed's sandboxed file reader, a built-in tool.
//!
//! It reads a UTF-8 text file under one root folder and nothing else. The
//! root is opened once, as a directory handle, and every path is resolved
//! from that handle by `cap-std`, component by component, the way `openat2`
//! with `RESOLVE_BENEATH` does: a `..` that climbs above the root, an
//! absolute path and a symlink pointing out (anywhere along the path) are
//! refused by the resolver itself rather than by comparing strings after the
//! fact, so there is no window between a check and the open. An absolute
//! path is accepted only when it names something under the root; it is read
//! through the handle too.
//!
//! It needs the `fs.read` permission, and its results carry provenance: the
//! file as `source`, when it was read as `observed_at`, and `sandbox-read`
//! as `policy`.
//!
//! Invariant: nothing outside the root is ever opened.

use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::{ContentBlock, Permission, Tool, ToolContext, ToolError, ToolExecutionResult, ToolInfo, ToolOutput};

/// Largest file `read_file` returns by default, in bytes (1 MiB): a whole
/// file goes into the chain, and a larger one should be offloaded by a tool
/// that knows what part of it matters.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The name the script calls it by.
pub const READ_FILE: &str = "read_file";

/// Reads UTF-8 text files under one root folder (see the module docs).
#[derive(Clone)]
pub struct ReadFileTool {
    root: Arc<cap_std::fs::Dir>,
    root_path: PathBuf,
    info: ToolInfo,
    max_bytes: u64,
}

impl std::fmt::Debug for ReadFileTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadFileTool").field("root", &self.root_path).finish()
    }
}

/// Why a `read_file` root cannot be opened.
#[derive(Debug, thiserror::Error)]
#[error("read_file cannot open its root folder {}: {source}", path.display())]
pub struct ReadFileRootError {
    /// The root asked for.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

impl ReadFileTool {
    /// A reader confined to `root`, which must be an existing folder. The
    /// folder is opened now: renaming or replacing it later does not move
    /// the tool elsewhere.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, ReadFileRootError> {
        let root = root.as_ref();
        let error = |source| ReadFileRootError {
            path: root.to_owned(),
            source,
        };
        let root_path = std::fs::canonicalize(root).map_err(error)?;
        let dir = cap_std::fs::Dir::open_ambient_dir(&root_path, cap_std::ambient_authority()).map_err(error)?;
        Ok(ReadFileTool {
            root: Arc::new(dir),
            root_path,
            info: ToolInfo::new(
                READ_FILE,
                "Read a UTF-8 text file inside the sandbox root. Returns {text, source, observed_at, policy}.",
                json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The file, relative to the sandbox root (e.g. notes/todo.txt)."
                    }
                },
                "required": ["path"],
                "additionalProperties": false
                }),
            )
            .with_permissions([Permission::FsRead]),
            max_bytes: DEFAULT_MAX_FILE_BYTES,
        })
    }

    /// Sets the largest file it returns, in bytes.
    pub fn with_max_bytes(mut self, max: u64) -> Self {
        self.max_bytes = max;
        self
    }

    /// The root folder, canonical.
    pub fn root(&self) -> &Path {
        &self.root_path
    }

    /// `path` relative to the root: as given when relative, with the root
    /// stripped when absolute and under the root, refused otherwise.
    fn relative<'a>(&self, path: &'a str) -> Result<&'a Path, ToolError> {
        let p = Path::new(path);
        if path.is_empty() {
            return Err(ToolError::new("read_file: `path` is empty"));
        }
        if !p.is_absolute() {
            return Ok(p);
        }
        // Lexically under the root, with no `..` that could climb back out;
        // symlinks are still resolved through the root handle below.
        match p.strip_prefix(&self.root_path) {
            Ok(rest) if !rest.components().any(|c| c == Component::ParentDir) => Ok(rest),
            _ => Err(outside(path)),
        }
    }

    /// Reads `path` through the root handle, refusing escapes and files over
    /// the size cap. Blocking: run it off the async threads.
    fn read(&self, path: &str) -> Result<String, ToolError> {
        let rel = self.relative(path)?;
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        let file = self.root.open(rel).map_err(|e| io_error(path, e))?;
        let metadata = file.metadata().map_err(|e| io_error(path, e))?;
        if metadata.is_dir() {
            return Err(ToolError::new(format!("read_file: {path:?} is a folder, not a file")));
        }
        let mut bytes = Vec::new();
        file.into_std()
            .take(self.max_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io_error(path, e))?;
        if bytes.len() as u64 > self.max_bytes {
            return Err(ToolError::new(format!(
                "read_file: {path:?} is larger than {} bytes",
                self.max_bytes
            )));
        }
        String::from_utf8(bytes).map_err(|_| ToolError::new(format!("read_file: {path:?} is not UTF-8 text")))
    }
}

fn outside(path: &str) -> ToolError {
    ToolError::new(format!(
        "read_file: {path:?} is outside the sandbox root (paths are relative to it; `..`, absolute paths and \
         symlinks may not leave it)"
    ))
}

fn io_error(path: &str, e: std::io::Error) -> ToolError {
    // cap-std reports an escape (`..` above the root, a symlink pointing
    // out, an absolute symlink target) as PermissionDenied.
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        return outside(path);
    }
    ToolError::new(format!("read_file: cannot read {path:?}: {e}"))
}

#[async_trait]
impl Tool for ReadFileTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn source(&self) -> String {
        format!("builtin:{READ_FILE}")
    }

    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let Some(path) = args.get("path").and_then(Value::as_str).map(str::to_owned) else {
            return Err(ToolError::new("read_file: `path` must be a string"));
        };
        let tool = self.clone();
        let read = path.clone();
        let text = tokio::task::spawn_blocking(move || tool.read(&read))
            .await
            .map_err(|e| ToolError::new(format!("read_file: the read failed: {e}")))??;
        let source = match self.relative(&path) {
            Ok(rel) => self.root_path.join(rel).display().to_string(),
            Err(_) => path,
        };
        Ok(ToolOutput::Result(
            ToolExecutionResult {
                content: vec![ContentBlock::Text { text }],
                ..ToolExecutionResult::default()
            }
            .observed_now(source, "sandbox-read"),
        ))
    }
}
