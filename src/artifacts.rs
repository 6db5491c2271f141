//! The artifact store: where results too large to inline go (DESIGN,
//! "Result shaping"). Artifacts are content-addressed by the SHA-256 of
//! their bytes and named by an [`ArtifactRef`], `sha256:<64 lowercase hex>`;
//! the script holds the ref, the host holds the bytes.
//!
//! Lifecycle: a chain [`pin`](ArtifactStore::pin)s what it stores (or uses
//! [`put_pinned`](ArtifactStore::put_pinned)); when the chain is done its
//! pins go with [`unpin_chain`](ArtifactStore::unpin_chain), and
//! [`gc`](ArtifactStore::gc) removes every artifact no chain pins.
//!
//! Invariants: the same bytes always get the same ref, and a stored
//! artifact never changes (the first media type stored for some bytes is
//! kept). [`FsArtifactStore`] writes each file atomically (temp file in the
//! same directory, then rename), so a reader never sees half an artifact.
//!
//! Stores: [`MemoryArtifactStore`] (one process), [`FsArtifactStore`] (one
//! machine), [`ObjectArtifactStore`] (S3 and S3-compatible services, shared
//! by many nodes); [`open`] picks one by URL.

#[cfg(feature = "s3")]
mod object;

#[cfg(feature = "s3")]
pub use object::ObjectArtifactStore;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::util::truncate_chars;

/// The prefix of every artifact ref.
const PREFIX: &str = "sha256:";

/// How much of a rejected ref string an error repeats, in characters (the
/// last an ellipsis when cut): refs may come from the untrusted guest, and
/// an error message must stay small.
const MAX_ECHOED_CHARS: usize = 80;

/// The name of an artifact: the SHA-256 of its bytes, shown as
/// `sha256:<64 lowercase hex digits>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArtifactRef([u8; 32]);

impl ArtifactRef {
    /// The ref of these bytes.
    pub fn of(bytes: &[u8]) -> Self {
        ArtifactRef(Sha256::digest(bytes).into())
    }

    /// Parses `sha256:<64 lowercase hex>`; anything else is an error.
    pub fn parse(text: &str) -> Result<Self, ArtifactRefError> {
        let echo = || truncate_chars(text, MAX_ECHOED_CHARS);
        let hex = text
            .strip_prefix(PREFIX)
            .ok_or_else(|| ArtifactRefError::MissingPrefix(echo()))?;
        if hex.len() != 64 {
            return Err(ArtifactRefError::WrongLength {
                input: echo(),
                len: hex.len(),
            });
        }
        let mut digest = [0u8; 32];
        let (pairs, _) = hex.as_bytes().as_chunks::<2>();
        for (byte, &[hi, lo]) in digest.iter_mut().zip(pairs) {
            match (nibble(hi), nibble(lo)) {
                (Some(hi), Some(lo)) => *byte = hi << 4 | lo,
                _ => return Err(ArtifactRefError::NotLowercaseHex(echo())),
            }
        }
        Ok(ArtifactRef(digest))
    }

    /// The SHA-256 digest.
    pub fn digest(&self) -> &[u8; 32] {
        &self.0
    }

    /// The digest as 64 lowercase hex digits, without the prefix.
    pub fn hex(&self) -> String {
        crate::digest::hex(&self.0)
    }
}

/// A lowercase hex digit's value.
fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

impl fmt::Display for ArtifactRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}{}", self.hex())
    }
}

impl fmt::Debug for ArtifactRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ArtifactRef({self})")
    }
}

impl FromStr for ArtifactRef {
    type Err = ArtifactRefError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ArtifactRef::parse(s)
    }
}

impl Serialize for ArtifactRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ArtifactRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        ArtifactRef::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A string that is not an artifact ref. The offending text is repeated,
/// cut to 80 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactRefError {
    /// It does not start with `sha256:`.
    #[error("artifact ref {0:?} does not start with `sha256:`")]
    MissingPrefix(String),
    /// The digest is not 64 characters long.
    #[error("artifact ref {input:?} has {len} characters after `sha256:`; a SHA-256 has 64 hex digits")]
    WrongLength {
        /// The text given.
        input: String,
        /// Bytes after the prefix.
        len: usize,
    },
    /// The digest has a character other than `0-9a-f`.
    #[error("artifact ref {0:?} is not lowercase hex after `sha256:`")]
    NotLowercaseHex(String),
}

/// A stored artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// Its content.
    pub bytes: Vec<u8>,
    /// Its media type, e.g. `application/json` or `image/png`.
    pub media_type: String,
}

/// An artifact store failure.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// Reading or writing the store's files failed.
    #[error("artifact store I/O on `{}`: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The artifact is not in the store (e.g. pinning one that was removed).
    #[error("artifact {0} is not in the store")]
    NotFound(ArtifactRef),
    /// The stored artifact does not match its ref or its metadata.
    #[error("artifact {artifact} is corrupt: {reason}")]
    Corrupt {
        /// The artifact.
        artifact: ArtifactRef,
        /// What does not match.
        reason: String,
    },
    /// A request to the object store failed.
    #[cfg(feature = "s3")]
    #[error("artifact store {store}: `{key}`: {source}")]
    ObjectStore {
        /// The store's URL, without credentials.
        store: String,
        /// The object (or prefix) the request was about.
        key: String,
        /// The object store's error (boxed: it is large, and every
        /// `ArtifactError` would carry its size).
        source: Box<object_store::Error>,
    },
    /// The thread that runs an object store's requests could not start.
    #[error("artifact store: starting its I/O thread: {0}")]
    Runtime(io::Error),
    /// [`open`] was given something that is not an artifact store URL.
    #[error("artifact store URL {url:?}: {reason}")]
    BadUrl {
        /// The URL, without credentials.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The artifact store a URL names:
/// - `memory:`: a [`MemoryArtifactStore`] (this process only);
/// - `file:DIR` (or `file:///abs/dir`): a [`FsArtifactStore`] in `DIR`;
/// - `s3://BUCKET[/PREFIX]`: an [`ObjectArtifactStore`] on S3 or an
///   S3-compatible service, configured by the standard `AWS_*` variables
///   (see [`ObjectArtifactStore::s3`]).
///
/// Any other scheme is [`ArtifactError::BadUrl`].
pub fn open(url: &str) -> Result<std::sync::Arc<dyn ArtifactStore>, ArtifactError> {
    let bad = |reason: &str| ArtifactError::BadUrl {
        url: redact(url),
        reason: reason.to_owned(),
    };
    if url == "memory:" {
        return Ok(std::sync::Arc::new(MemoryArtifactStore::new()));
    }
    if let Some(path) = url.strip_prefix("file:") {
        let path = match path.strip_prefix("//") {
            Some(absolute) if absolute.starts_with('/') => absolute,
            Some(_) => {
                return Err(bad(
                    "a file:// URL takes an absolute path (file:///dir), or write file:DIR",
                ));
            }
            None => path,
        };
        if path.is_empty() {
            return Err(bad("it names no directory (file:DIR)"));
        }
        return Ok(std::sync::Arc::new(FsArtifactStore::new(path)?));
    }
    if url.starts_with("s3://") {
        #[cfg(feature = "s3")]
        return Ok(std::sync::Arc::new(ObjectArtifactStore::s3(url)?));
        #[cfg(not(feature = "s3"))]
        return Err(bad("s3:// needs chainbox built with the `s3` feature"));
    }
    Err(bad("unknown scheme: expected memory:, file:DIR or s3://BUCKET/PREFIX"))
}

/// `url` with any `user:password@` taken out, for error messages.
pub(super) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// Where large results live. Shared by every chain of an engine, so
/// `Send + Sync`; operations are quick and blocking (call from
/// `spawn_blocking` for very large artifacts).
pub trait ArtifactStore: Send + Sync {
    /// Stores `bytes` and returns their ref. Idempotent: storing the same
    /// bytes again returns the same ref and keeps the first media type.
    fn put(&self, bytes: &[u8], media_type: &str) -> Result<ArtifactRef, ArtifactError>;

    /// The artifact, or `None` if the store does not have it.
    fn get(&self, r: &ArtifactRef) -> Result<Option<Artifact>, ArtifactError>;

    /// Keeps `r` alive for `chain_id` until [`unpin_chain`](Self::unpin_chain).
    /// [`ArtifactError::NotFound`] if the store does not have it.
    fn pin(&self, chain_id: &str, r: &ArtifactRef) -> Result<(), ArtifactError>;

    /// Drops every pin `chain_id` holds.
    fn unpin_chain(&self, chain_id: &str) -> Result<(), ArtifactError>;

    /// Removes every artifact no chain pins; returns how many it removed.
    fn gc(&self) -> Result<usize, ArtifactError> {
        self.gc_unused(Duration::ZERO, &HashSet::new())
    }

    /// Removes every artifact no chain pins, that is not in `keep`, and
    /// that was stored at least `older_than` ago; returns how many it
    /// removed. What a sweep runs ([`crate::store::sweep`]): `keep` holds
    /// what the journals of unfinished chains name (their resumes read it
    /// back, whoever pins it), and the grace spares what a chain running
    /// now has stored but not pinned yet, or pinned in another process's
    /// memory ([`FsArtifactStore`]'s pins are per process).
    fn gc_unused(&self, older_than: Duration, keep: &HashSet<ArtifactRef>) -> Result<usize, ArtifactError>;

    /// [`put`](Self::put) then [`pin`](Self::pin). The stores here do both
    /// atomically, so a concurrent [`gc`](Self::gc) cannot remove the
    /// artifact in between; prefer it over the two calls.
    fn put_pinned(&self, chain_id: &str, bytes: &[u8], media_type: &str) -> Result<ArtifactRef, ArtifactError> {
        let r = self.put(bytes, media_type)?;
        self.pin(chain_id, &r)?;
        Ok(r)
    }
}

/// Pins by chain id.
type Pins = HashMap<String, HashSet<ArtifactRef>>;

/// Whether any chain pins `r`.
fn is_pinned(pins: &Pins, r: &ArtifactRef) -> bool {
    pins.values().any(|set| set.contains(r))
}

/// Locks a mutex, recovering from poisoning: every critical section here
/// leaves the data consistent at each step.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// An in-memory store, for tests and short-lived embedders.
#[derive(Debug, Default)]
pub struct MemoryArtifactStore {
    /// Everything, under one lock.
    inner: Mutex<MemoryInner>,
}

/// The artifacts and their pins.
#[derive(Debug, Default)]
struct MemoryInner {
    /// Artifacts by ref.
    artifacts: HashMap<ArtifactRef, Artifact>,
    /// Pins by chain.
    pins: Pins,
    /// When each artifact was first stored.
    stored_at: HashMap<ArtifactRef, Instant>,
}

impl MemoryArtifactStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryArtifactStore::default()
    }

    /// How many artifacts it holds.
    pub fn len(&self) -> usize {
        lock(&self.inner).artifacts.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl MemoryInner {
    /// Stores an artifact, keeping an existing one.
    fn put(&mut self, bytes: &[u8], media_type: &str) -> ArtifactRef {
        let r = ArtifactRef::of(bytes);
        self.artifacts.entry(r).or_insert_with(|| Artifact {
            bytes: bytes.to_vec(),
            media_type: media_type.to_owned(),
        });
        self.stored_at.entry(r).or_insert_with(Instant::now);
        r
    }

    /// Pins an artifact it holds.
    fn pin(&mut self, chain_id: &str, r: &ArtifactRef) -> Result<(), ArtifactError> {
        if !self.artifacts.contains_key(r) {
            return Err(ArtifactError::NotFound(*r));
        }
        self.pins.entry(chain_id.to_owned()).or_default().insert(*r);
        Ok(())
    }
}

impl ArtifactStore for MemoryArtifactStore {
    fn put(&self, bytes: &[u8], media_type: &str) -> Result<ArtifactRef, ArtifactError> {
        Ok(lock(&self.inner).put(bytes, media_type))
    }

    fn get(&self, r: &ArtifactRef) -> Result<Option<Artifact>, ArtifactError> {
        Ok(lock(&self.inner).artifacts.get(r).cloned())
    }

    fn pin(&self, chain_id: &str, r: &ArtifactRef) -> Result<(), ArtifactError> {
        lock(&self.inner).pin(chain_id, r)
    }

    fn unpin_chain(&self, chain_id: &str) -> Result<(), ArtifactError> {
        lock(&self.inner).pins.remove(chain_id);
        Ok(())
    }

    fn gc_unused(&self, older_than: Duration, keep: &HashSet<ArtifactRef>) -> Result<usize, ArtifactError> {
        let inner = &mut *lock(&self.inner);
        let before = inner.artifacts.len();
        let (pins, stored_at) = (&inner.pins, &inner.stored_at);
        inner.artifacts.retain(|r, _| {
            let young = stored_at.get(r).is_some_and(|at| at.elapsed() < older_than);
            young || keep.contains(r) || is_pinned(pins, r)
        });
        let artifacts = &inner.artifacts;
        inner.stored_at.retain(|r, _| artifacts.contains_key(r));
        Ok(before - inner.artifacts.len())
    }

    fn put_pinned(&self, chain_id: &str, bytes: &[u8], media_type: &str) -> Result<ArtifactRef, ArtifactError> {
        let inner = &mut *lock(&self.inner);
        let r = inner.put(bytes, media_type);
        inner.pin(chain_id, &r)?;
        Ok(r)
    }
}

/// The sidecar of a stored artifact: `<hex>.meta`, JSON.
#[derive(Debug, Serialize, Deserialize)]
struct Meta {
    /// The artifact's media type.
    media_type: String,
    /// Its length in bytes.
    size: u64,
}

/// A store in a directory: the bytes of an artifact in `<dir>/<aa>/<hex>`
/// (`aa` the first two hex digits, so no directory grows too large), its
/// media type and size in the sidecar `<dir>/<aa>/<hex>.meta` (JSON).
/// Artifacts survive the process; `get` checks the bytes against the ref.
///
/// Pins live in memory, per store instance: they belong to chains running
/// in this process. A `gc` removes whatever this instance does not pin, so
/// run it where no other process is using the directory; a sweep's
/// `gc_unused` spares what was written within its grace (files' times),
/// what other processes' running chains may hold.
#[derive(Debug)]
pub struct FsArtifactStore {
    /// The root directory.
    dir: PathBuf,
    /// Pins by chain. Also serializes the moments files appear or vanish
    /// (the renames of `put`, the removals of `gc`), so `gc` never sees
    /// half a put.
    pins: Mutex<Pins>,
}

impl FsArtifactStore {
    /// A store in `dir`, created if missing; artifacts already there are kept.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, ArtifactError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(io_at(&dir))?;
        Ok(FsArtifactStore {
            dir,
            pins: Mutex::new(Pins::new()),
        })
    }

    /// The root directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The shard directory, blob path and sidecar path of `r`.
    fn paths(&self, r: &ArtifactRef) -> (PathBuf, PathBuf, PathBuf) {
        let hex = r.hex();
        let shard = self.dir.join(&hex[..2]);
        let blob = shard.join(&hex);
        let meta = shard.join(format!("{hex}.meta"));
        (shard, blob, meta)
    }

    /// Whether the blob of `r` exists.
    fn has(&self, r: &ArtifactRef) -> Result<bool, ArtifactError> {
        let (_, blob, _) = self.paths(r);
        blob.try_exists().map_err(io_at(&blob))
    }

    /// Stores `bytes`, pinning them for `pin` if given. The writing happens
    /// in temp files outside the lock; only the existence checks and the
    /// renames hold it.
    fn put_inner(&self, bytes: &[u8], media_type: &str, pin: Option<&str>) -> Result<ArtifactRef, ArtifactError> {
        let r = ArtifactRef::of(bytes);
        let pin_in = |pins: &mut Pins| {
            if let Some(chain_id) = pin {
                pins.entry(chain_id.to_owned()).or_default().insert(r);
            }
        };
        {
            let mut pins = lock(&self.pins);
            if self.has(&r)? {
                pin_in(&mut pins);
                return Ok(r);
            }
        }
        let (shard, blob, meta) = self.paths(&r);
        std::fs::create_dir_all(&shard).map_err(io_at(&shard))?;
        let sidecar = serde_json::to_vec(&Meta {
            media_type: media_type.to_owned(),
            size: bytes.len() as u64,
        })
        .map_err(|e| io_at(&meta)(io::Error::other(e)))?;
        let meta_tmp = temp_with(&shard, &sidecar)?;
        let blob_tmp = temp_with(&shard, bytes)?;
        let mut pins = lock(&self.pins);
        // The sidecar first: a blob on disk always has its sidecar. The blob
        // never replaces an existing one (same bytes, by address); the
        // sidecar does only while there is no blob, so concurrent first puts
        // from other processes still leave one consistent pair.
        if !self.has(&r)? {
            meta_tmp.persist(&meta).map_err(|e| io_at(&meta)(e.error))?;
            if let Err(e) = blob_tmp.persist_noclobber(&blob)
                && e.error.kind() != io::ErrorKind::AlreadyExists
            {
                return Err(io_at(&blob)(e.error));
            }
        }
        pin_in(&mut pins);
        Ok(r)
    }
}

/// A temp file in `dir` holding `bytes`, ready to be renamed into place.
fn temp_with(dir: &Path, bytes: &[u8]) -> Result<tempfile::NamedTempFile, ArtifactError> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
        .map_err(io_at(dir))?;
    tmp.write_all(bytes).map_err(io_at(tmp.path()))?;
    Ok(tmp)
}

/// Wraps an I/O error with its path.
fn io_at(path: &Path) -> impl Fn(io::Error) -> ArtifactError + '_ {
    move |source| ArtifactError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Reads a file, `None` if it does not exist.
fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>, ArtifactError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_at(path)(e)),
    }
}

/// Removes a file; one already gone is fine.
fn remove_if_exists(path: &Path) -> Result<(), ArtifactError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_at(path)(e)),
        _ => Ok(()),
    }
}

/// Whether the file at `path` was written less than `age` ago (its
/// modification time; a time in the future counts as now).
fn younger_than(path: &Path, age: Duration) -> Result<bool, ArtifactError> {
    if age.is_zero() {
        return Ok(false);
    }
    let modified = std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .map_err(io_at(path))?;
    let elapsed = SystemTime::now().duration_since(modified).unwrap_or_default();
    Ok(elapsed < age)
}

/// The entries of a directory.
fn entries(dir: &Path) -> Result<Vec<std::fs::DirEntry>, ArtifactError> {
    std::fs::read_dir(dir)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(io_at(dir))
}

impl ArtifactStore for FsArtifactStore {
    fn put(&self, bytes: &[u8], media_type: &str) -> Result<ArtifactRef, ArtifactError> {
        self.put_inner(bytes, media_type, None)
    }

    fn get(&self, r: &ArtifactRef) -> Result<Option<Artifact>, ArtifactError> {
        let (_, blob, meta) = self.paths(r);
        let Some(bytes) = read_if_exists(&blob)? else {
            return Ok(None);
        };
        let corrupt = |reason: String| ArtifactError::Corrupt { artifact: *r, reason };
        if ArtifactRef::of(&bytes) != *r {
            return Err(corrupt("its bytes do not hash to its name".into()));
        }
        let sidecar = read_if_exists(&meta)?.ok_or_else(|| corrupt("its `.meta` sidecar is missing".into()))?;
        let meta: Meta =
            serde_json::from_slice(&sidecar).map_err(|e| corrupt(format!("its `.meta` sidecar is unreadable: {e}")))?;
        if meta.size != bytes.len() as u64 {
            return Err(corrupt(format!(
                "its `.meta` sidecar says {} bytes, the file has {}",
                meta.size,
                bytes.len()
            )));
        }
        Ok(Some(Artifact {
            bytes,
            media_type: meta.media_type,
        }))
    }

    fn pin(&self, chain_id: &str, r: &ArtifactRef) -> Result<(), ArtifactError> {
        let mut pins = lock(&self.pins);
        if !self.has(r)? {
            return Err(ArtifactError::NotFound(*r));
        }
        pins.entry(chain_id.to_owned()).or_default().insert(*r);
        Ok(())
    }

    fn unpin_chain(&self, chain_id: &str) -> Result<(), ArtifactError> {
        lock(&self.pins).remove(chain_id);
        Ok(())
    }

    fn gc_unused(&self, older_than: Duration, keep: &HashSet<ArtifactRef>) -> Result<usize, ArtifactError> {
        let pins = lock(&self.pins);
        let mut removed = 0;
        for shard in entries(&self.dir)? {
            let shard_name = shard.file_name();
            let Some(prefix) = shard_name.to_str().filter(|n| n.len() == 2) else {
                continue;
            };
            if !shard.path().is_dir() {
                continue;
            }
            for entry in entries(&shard.path())? {
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                let hex = name.strip_suffix(".meta").unwrap_or(name);
                let Ok(r) = ArtifactRef::parse(&format!("{PREFIX}{hex}")) else {
                    continue; // temp files and strangers are left alone
                };
                if !hex.starts_with(prefix) || is_pinned(&pins, &r) || keep.contains(&r) {
                    continue;
                }
                let (_, blob, meta) = self.paths(&r);
                if name == hex {
                    if younger_than(&blob, older_than)? {
                        continue;
                    }
                    // The blob before its sidecar: a blob never lacks one.
                    remove_if_exists(&blob)?;
                    remove_if_exists(&meta)?;
                    removed += 1;
                } else if !blob.try_exists().map_err(io_at(&blob))? && !younger_than(&meta, older_than)? {
                    remove_if_exists(&meta)?; // an orphan sidecar
                }
            }
        }
        Ok(removed)
    }

    fn put_pinned(&self, chain_id: &str, bytes: &[u8], media_type: &str) -> Result<ArtifactRef, ArtifactError> {
        self.put_inner(bytes, media_type, Some(chain_id))
    }
}

/// The file extension for a media type, without the dot: `image/png` →
/// `png`. Parameters (`; charset=...`) and case are ignored; an unknown
/// type is `bin`.
pub fn extension_for_media_type(media_type: &str) -> &'static str {
    let essence = media_type.split(';').next().unwrap_or_default().trim();
    const TABLE: [(&str, &str); 10] = [
        ("image/png", "png"),
        ("image/jpeg", "jpg"),
        ("image/gif", "gif"),
        ("image/webp", "webp"),
        ("image/svg+xml", "svg"),
        ("application/pdf", "pdf"),
        ("audio/wav", "wav"),
        ("audio/mpeg", "mp3"),
        ("text/plain", "txt"),
        ("application/json", "json"),
    ];
    TABLE
        .iter()
        .find(|(mt, _)| mt.eq_ignore_ascii_case(essence))
        .map_or("bin", |(_, ext)| ext)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const HELLO: &str = "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

    fn stores(dir: &Path) -> Vec<(&'static str, Box<dyn ArtifactStore>)> {
        vec![
            ("memory", Box::new(MemoryArtifactStore::new())),
            ("fs", Box::new(FsArtifactStore::new(dir).unwrap())),
        ]
    }

    #[test]
    fn ref_displays_as_sha256_hex() {
        assert_eq!(ArtifactRef::of(b"hello").to_string(), HELLO);
    }

    #[test]
    fn ref_parse_round_trips() {
        let r = ArtifactRef::parse(HELLO).unwrap();
        assert_eq!(r, ArtifactRef::of(b"hello"));
        assert_eq!(r.to_string(), HELLO);
        assert_eq!(HELLO.parse::<ArtifactRef>(), Ok(r));
    }

    #[test]
    fn ref_without_prefix_is_rejected() {
        let e = ArtifactRef::parse(&HELLO[7..]).unwrap_err();
        assert!(matches!(e, ArtifactRefError::MissingPrefix(_)));
        assert!(matches!(
            ArtifactRef::parse(&HELLO.replace("sha256", "SHA256")),
            Err(ArtifactRefError::MissingPrefix(_))
        ));
    }

    #[test]
    fn ref_of_wrong_length_is_rejected() {
        assert_eq!(
            ArtifactRef::parse(&HELLO[..70]),
            Err(ArtifactRefError::WrongLength {
                input: HELLO[..70].to_owned(),
                len: 63
            })
        );
        assert!(matches!(
            ArtifactRef::parse(&format!("{HELLO}0")),
            Err(ArtifactRefError::WrongLength { len: 65, .. })
        ));
        assert!(matches!(
            ArtifactRef::parse("sha256:"),
            Err(ArtifactRefError::WrongLength { len: 0, .. })
        ));
    }

    #[test]
    fn ref_with_uppercase_or_non_hex_is_rejected() {
        let hex = &HELLO[7..];
        for bad in [
            format!("sha256:{}", hex.to_uppercase()),
            format!("sha256:{}", hex.replace('a', "g")),
        ] {
            assert!(
                matches!(ArtifactRef::parse(&bad), Err(ArtifactRefError::NotLowercaseHex(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn ref_with_multibyte_characters_is_rejected_without_panicking() {
        let bad = format!("sha256:{}é", "a".repeat(62)); // 64 bytes, not 64 hex digits
        assert!(matches!(
            ArtifactRef::parse(&bad),
            Err(ArtifactRefError::NotLowercaseHex(_))
        ));
    }

    #[test]
    fn ref_error_echo_is_capped() {
        let e = ArtifactRef::parse(&"x".repeat(10_000)).unwrap_err();
        assert!(e.to_string().len() < 200, "{e}");
    }

    #[test]
    fn ref_serializes_as_its_string() {
        let r = ArtifactRef::of(b"hello");
        assert_eq!(serde_json::to_value(r).unwrap(), serde_json::json!(HELLO));
        let back: ArtifactRef = serde_json::from_value(serde_json::json!(HELLO)).unwrap();
        assert_eq!(back, r);
        assert!(serde_json::from_value::<ArtifactRef>(serde_json::json!("sha256:zz")).is_err());
    }

    #[test]
    fn same_bytes_get_the_same_ref() {
        let dir = tempfile::tempdir().unwrap();
        for (name, store) in stores(dir.path()) {
            let a = store.put(b"payload", "text/plain").unwrap();
            let b = store.put(b"payload", "application/json").unwrap();
            assert_eq!(a, b, "{name}");
            assert_ne!(a, store.put(b"other", "text/plain").unwrap(), "{name}");
            // The first media type stays.
            assert_eq!(store.get(&a).unwrap().unwrap().media_type, "text/plain", "{name}");
        }
    }

    #[test]
    fn get_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        for (name, store) in stores(dir.path()) {
            let bytes: Vec<u8> = (0..=255).cycle().take(100_000).collect();
            let r = store.put(&bytes, "image/png").unwrap();
            let art = store.get(&r).unwrap().unwrap();
            assert_eq!(art.bytes, bytes, "{name}");
            assert_eq!(art.media_type, "image/png", "{name}");
        }
    }

    #[test]
    fn get_of_an_unknown_ref_is_none() {
        let dir = tempfile::tempdir().unwrap();
        for (name, store) in stores(dir.path()) {
            assert_eq!(store.get(&ArtifactRef::of(b"absent")).unwrap(), None, "{name}");
        }
    }

    #[test]
    fn empty_artifact_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        for (name, store) in stores(dir.path()) {
            let r = store.put(b"", "application/octet-stream").unwrap();
            assert_eq!(store.get(&r).unwrap().unwrap().bytes, b"", "{name}");
        }
    }

    #[test]
    fn pinning_an_absent_artifact_fails() {
        let dir = tempfile::tempdir().unwrap();
        for (name, store) in stores(dir.path()) {
            let r = ArtifactRef::of(b"absent");
            assert!(
                matches!(store.pin("c", &r), Err(ArtifactError::NotFound(x)) if x == r),
                "{name}"
            );
        }
    }

    #[test]
    fn gc_removes_unpinned_only() {
        let dir = tempfile::tempdir().unwrap();
        for (name, store) in stores(dir.path()) {
            let kept = store.put(b"kept", "text/plain").unwrap();
            let also_kept = store.put_pinned("c2", b"also kept", "text/plain").unwrap();
            let dropped = store.put(b"dropped", "text/plain").unwrap();
            store.pin("c1", &kept).unwrap();
            assert_eq!(store.gc().unwrap(), 1, "{name}");
            assert!(store.get(&kept).unwrap().is_some(), "{name}");
            assert!(store.get(&also_kept).unwrap().is_some(), "{name}");
            assert!(store.get(&dropped).unwrap().is_none(), "{name}");
        }
    }

    #[test]
    fn unpin_chain_lets_gc_remove_its_artifacts() {
        let dir = tempfile::tempdir().unwrap();
        for (name, store) in stores(dir.path()) {
            let shared = store.put_pinned("a", b"shared", "text/plain").unwrap();
            store.pin("b", &shared).unwrap();
            let only_a = store.put_pinned("a", b"only a", "text/plain").unwrap();
            store.unpin_chain("a").unwrap();
            assert_eq!(store.gc().unwrap(), 1, "{name}");
            assert!(store.get(&shared).unwrap().is_some(), "{name}");
            assert!(store.get(&only_a).unwrap().is_none(), "{name}");
            store.unpin_chain("b").unwrap();
            assert_eq!(store.gc().unwrap(), 1, "{name}");
            assert_eq!(store.gc().unwrap(), 0, "{name}");
        }
    }

    #[test]
    fn fs_gc_leaves_no_files_behind() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsArtifactStore::new(dir.path()).unwrap();
        store.put(b"a", "text/plain").unwrap();
        store.gc().unwrap();
        for shard in std::fs::read_dir(dir.path()).unwrap() {
            let files: Vec<_> = std::fs::read_dir(shard.unwrap().path()).unwrap().collect();
            assert!(files.is_empty(), "{files:?}");
        }
    }

    #[test]
    fn fs_artifacts_survive_a_new_store_on_the_same_dir() {
        let dir = tempfile::tempdir().unwrap();
        let r = FsArtifactStore::new(dir.path())
            .unwrap()
            .put(b"durable", "application/json")
            .unwrap();
        let again = FsArtifactStore::new(dir.path()).unwrap();
        assert_eq!(
            again.get(&r).unwrap(),
            Some(Artifact {
                bytes: b"durable".to_vec(),
                media_type: "application/json".into()
            })
        );
    }

    #[test]
    fn fs_files_are_named_by_hex_digest() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsArtifactStore::new(dir.path()).unwrap();
        let r = store.put(b"hello", "text/plain").unwrap();
        let hex = r.hex();
        assert_eq!(std::fs::read(dir.path().join(&hex[..2]).join(&hex)).unwrap(), b"hello");
        assert!(dir.path().join(&hex[..2]).join(format!("{hex}.meta")).is_file());
    }

    #[test]
    fn fs_tampered_artifact_is_reported_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsArtifactStore::new(dir.path()).unwrap();
        let r = store.put(b"hello", "text/plain").unwrap();
        let hex = r.hex();
        std::fs::write(dir.path().join(&hex[..2]).join(&hex), b"HELLO").unwrap();
        assert!(matches!(store.get(&r), Err(ArtifactError::Corrupt { .. })));
    }

    #[test]
    fn concurrent_puts_of_the_same_content_do_not_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Arc<Vec<u8>> = Arc::new((0..2_000_000u32).map(|i| (i % 251) as u8).collect());
        let shared = Arc::new(FsArtifactStore::new(dir.path()).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let bytes = Arc::clone(&bytes);
                let shared = Arc::clone(&shared);
                let dir = dir.path().to_owned();
                std::thread::spawn(move || {
                    // Half share one store (one process), half have their
                    // own (other processes on the same directory).
                    if i % 2 == 0 {
                        shared.put(&bytes, "application/octet-stream").unwrap()
                    } else {
                        FsArtifactStore::new(dir)
                            .unwrap()
                            .put(&bytes, "application/octet-stream")
                            .unwrap()
                    }
                })
            })
            .collect();
        let refs: Vec<ArtifactRef> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(refs.iter().all(|r| *r == ArtifactRef::of(&bytes)));
        let art = shared.get(&refs[0]).unwrap().unwrap();
        assert_eq!(art.bytes, *bytes);
        // No temp files left over.
        let hex = refs[0].hex();
        let mut names: Vec<_> = std::fs::read_dir(dir.path().join(&hex[..2]))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, [hex.clone(), format!("{hex}.meta")]);
    }

    #[test]
    fn memory_store_counts_its_artifacts() {
        let store = MemoryArtifactStore::new();
        assert!(store.is_empty());
        store.put(b"x", "text/plain").unwrap();
        store.put(b"x", "text/plain").unwrap();
        assert_eq!(store.len(), 1);
    }

    #[test]
    fn extension_for_known_media_types() {
        for (mt, ext) in [
            ("image/png", "png"),
            ("image/jpeg", "jpg"),
            ("image/gif", "gif"),
            ("image/webp", "webp"),
            ("image/svg+xml", "svg"),
            ("application/pdf", "pdf"),
            ("audio/wav", "wav"),
            ("audio/mpeg", "mp3"),
            ("text/plain", "txt"),
            ("application/json", "json"),
        ] {
            assert_eq!(extension_for_media_type(mt), ext, "{mt}");
        }
    }

    #[test]
    fn extension_ignores_parameters_and_case() {
        assert_eq!(extension_for_media_type("Text/Plain; charset=utf-8"), "txt");
    }

    #[test]
    fn extension_for_unknown_media_type_is_bin() {
        for mt in ["", "application/octet-stream", "image/png-ish", "video/mp4"] {
            assert_eq!(extension_for_media_type(mt), "bin", "{mt}");
        }
    }
}
