//! The chain's `/workspace`: the one directory a script can see. Created on
//! first use (a temporary directory removed with the chain, unless the
//! caller supplied one) and mounted through `monty-fs`, whose confinement is
//! structural: every operation runs relative to the opened directory, so
//! `..` and symlinks cannot leave it. Shared by the sandbox (the script's
//! file calls) and the invoker (media results written as files).

use std::path::PathBuf;

use monty_fs::{MountMode, MountTable};

/// The virtual path of the workspace inside the sandbox (the guest's
/// working directory too: one constant, in the guest/host contract).
pub use chainbox_protocol::WORKSPACE;

/// Most bytes a chain's script may write into its workspace, in total
/// (rewrites count again); past it writes raise `OSError`. Without a cap a
/// script wrote ~300 MB of host disk per CPU-second (file I/O does not count
/// as script CPU), i.e. tens of GB within the default limits. Media files the
/// host writes for tool results are not counted.
pub const MAX_WORKSPACE_WRITE_BYTES: u64 = 256 * 1024 * 1024;

/// Why the workspace could not be made or written. Messages never name the
/// host path: they reach the script.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The directory could not be created.
    #[error("workspace unavailable: {0}")]
    Unavailable(std::io::ErrorKind),
    /// `monty-fs` refused to mount it.
    #[error("workspace could not be mounted")]
    Mount,
    /// A relative path that is empty, absolute or has `.`/`..` parts.
    #[error("invalid workspace path {0:?}")]
    InvalidPath(String),
    /// A symlink sits where the file or one of its folders would go.
    #[error("writing {0}: a symlink is in the way")]
    Symlink(String),
    /// Creating the folders or writing the file failed.
    #[error("writing {path}: {kind}")]
    Write {
        /// The relative path.
        path: String,
        /// What the OS said.
        kind: std::io::ErrorKind,
    },
}

/// The chain's `/workspace`: a directory created on first use (a temp dir
/// removed with the chain, unless the caller supplied one) and mounted
/// through `monty-fs`.
pub struct Workspace {
    supplied: Option<PathBuf>,
    temp: Option<tempfile::TempDir>,
    mounts: Option<MountTable>,
}

impl Workspace {
    /// A workspace at `supplied`, or a temporary directory made on first use.
    pub fn new(supplied: Option<PathBuf>) -> Self {
        Workspace {
            supplied,
            temp: None,
            mounts: None,
        }
    }

    /// The host directory, creating it if needed.
    pub fn dir(&mut self) -> Result<PathBuf, WorkspaceError> {
        if let Some(dir) = &self.supplied {
            std::fs::create_dir_all(dir).map_err(|e| WorkspaceError::Unavailable(e.kind()))?;
            return Ok(dir.clone());
        }
        if self.temp.is_none() {
            let dir = tempfile::Builder::new()
                .prefix("chainbox-ws-")
                .tempdir()
                .map_err(|e| WorkspaceError::Unavailable(e.kind()))?;
            self.temp = Some(dir);
        }
        Ok(self.temp.as_ref().map(|t| t.path().to_path_buf()).unwrap_or_default())
    }

    /// Whether [`Workspace::adopt`] would take a directory: none was
    /// supplied and none made yet.
    pub(crate) fn can_adopt(&self) -> bool {
        self.supplied.is_none() && self.temp.is_none()
    }

    /// Takes `dir`, a fresh empty temporary directory made ahead of time, as
    /// this workspace's own, if it has none yet and none was supplied
    /// (creating one on the chain's path cost ~0.25 ms on ext4 here).
    pub(crate) fn adopt(&mut self, dir: tempfile::TempDir) {
        if self.can_adopt() {
            self.temp = Some(dir);
        }
    }

    /// Gives up the temporary directory this workspace made or adopted,
    /// with what is in it (a session's instance parked for its next cell
    /// keeps it; see `guests/parked.rs`); `None` if it has none.
    pub(crate) fn take_temp(&mut self) -> Option<tempfile::TempDir> {
        self.mounts = None;
        self.temp.take()
    }

    /// The mount table serving the script's file calls.
    pub fn mounts(&mut self) -> Result<&mut MountTable, WorkspaceError> {
        if self.mounts.is_none() {
            let dir = self.dir()?;
            let mut table = MountTable::new();
            table
                .mount(WORKSPACE, &dir, MountMode::ReadWrite, Some(MAX_WORKSPACE_WRITE_BYTES))
                // The host path must not leak into the sandbox.
                .map_err(|_| WorkspaceError::Mount)?;
            self.mounts = Some(table);
        }
        Ok(self.mounts.as_mut().expect("set above"))
    }

    /// Writes `bytes` to `relative` (below the workspace root) on the host
    /// side and returns the path the script sees.
    pub fn write_file(&mut self, relative: &str, bytes: &[u8]) -> Result<String, WorkspaceError> {
        if relative
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..")
        {
            return Err(WorkspaceError::InvalidPath(relative.to_owned()));
        }
        // Written on the host, so not confined by monty-fs: a symlink planted
        // in a supplied workspace (`media -> ~/.ssh`, or a file link) made
        // this write, or overwrite, a file outside it. Refuse to pass one.
        let mut path = self.dir()?;
        for part in relative.split('/') {
            path.push(part);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(WorkspaceError::Symlink(relative.to_owned()));
            }
        }
        let failed = |e: std::io::Error| WorkspaceError::Write {
            path: relative.to_owned(),
            kind: e.kind(),
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(failed)?;
        }
        std::fs::write(&path, bytes).map_err(failed)?;
        Ok(format!("{WORKSPACE}/{relative}"))
    }
}
