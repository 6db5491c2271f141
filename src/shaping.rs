//! Result shaping, the invoker's last gate: what a tool's answer becomes
//! before the script sees it, and how artifact handles in arguments are
//! resolved on the way in.
//!
//! - A result whose JSON is larger than `max_inline_result_bytes` is stored
//!   in the artifact store; the script receives a handle
//!   `{"artifact_ref": "sha256:<hex>", "media_type", "size", "preview"}`.
//! - Media blocks (images, audio, PDFs) are stored as artifacts and written
//!   to `/workspace/media/<tool>_<n>.<ext>`; the script receives
//!   `{"text": ..., "files": [{"path", "media_type", "artifact_ref"}]}`.
//! - A handle (or `{"$artifact": ref}`) inside tool arguments is replaced on
//!   the host by the stored value, so large data flows tool to tool without
//!   entering the sandbox. Only artifacts this chain produced resolve.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::artifacts::{ArtifactError, ArtifactRefError};
use crate::artifacts::{ArtifactRef, ArtifactStore, extension_for_media_type};
use crate::result::{ArtifactInfo, ChainFile};
use crate::tools::{ContentBlock, ToolExecutionResult};
use crate::util::truncate_chars;
use crate::workspace::{Workspace, WorkspaceError};

/// Longest `preview` of a handle, in characters (the last an ellipsis when cut).
pub const PREVIEW_CHARS: usize = 200;

const JSON: &str = "application/json";

/// Why a result could not be shaped or a handle not loaded. The messages
/// reach the script (as a tool error or a `load_artifact` error), so they
/// name the artifact or tool, never a host path.
#[derive(Debug, thiserror::Error)]
pub enum ShapingError {
    /// The artifact store refused to store a result.
    #[error("could not store the result: {0}")]
    Store(ArtifactError),
    /// The artifact store failed to read one back.
    #[error("could not read {0}: {1}")]
    Read(ArtifactRef, ArtifactError),
    /// A media block whose data is not base64.
    #[error("tool {tool:?} returned {media_type} data that is not base64: {source}")]
    NotBase64 {
        /// The tool.
        tool: String,
        /// The block's media type.
        media_type: String,
        /// The decoder's complaint.
        source: base64::DecodeError,
    },
    /// A media file could not be written into the workspace.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// `load_artifact` got something that is neither a handle nor a ref.
    #[error("load_artifact expects an artifact handle or an artifact_ref string")]
    NotAHandle,
    /// A string that is not an artifact ref.
    #[error(transparent)]
    BadRef(#[from] ArtifactRefError),
    /// A ref another chain (or nobody) produced.
    #[error("{0} is not an artifact of this chain")]
    Foreign(ArtifactRef),
    /// The store no longer has it.
    #[error("{0} is no longer in the artifact store")]
    Gone(ArtifactRef),
    /// Larger than the caller may load.
    #[error("{artifact} is {size} bytes, over max_result_bytes = {max}")]
    TooLarge {
        /// The artifact.
        artifact: ArtifactRef,
        /// Its size.
        size: usize,
        /// The bound.
        max: usize,
    },
    /// A media artifact: it is a file, not a value.
    #[error("{artifact} is {media_type}, not JSON: open its file in /workspace/media instead")]
    NotJson {
        /// The artifact.
        artifact: ArtifactRef,
        /// Its media type.
        media_type: String,
    },
    /// A JSON artifact whose bytes do not parse.
    #[error("{0} does not hold JSON: {1}")]
    Corrupt(ArtifactRef, serde_json::Error),
}

/// The artifacts and files one chain produced, and where they go.
pub struct Shaper {
    chain_id: String,
    store: Arc<dyn ArtifactStore>,
    workspace: Arc<Mutex<Workspace>>,
    inline_limit: usize,
    produced: Mutex<Produced>,
    /// The chain suspended: its pins outlive this run (see [`Shaper::keep_pins`]).
    keep_pins: AtomicBool,
}

#[derive(Default)]
struct Produced {
    refs: HashSet<ArtifactRef>,
    artifacts: Vec<ArtifactInfo>,
    files: Vec<ChainFile>,
    media_count: u32,
}

impl Shaper {
    /// A shaper for one chain.
    pub fn new(
        chain_id: String,
        store: Arc<dyn ArtifactStore>,
        workspace: Arc<Mutex<Workspace>>,
        inline_limit: u64,
    ) -> Self {
        Shaper {
            chain_id,
            store,
            workspace,
            inline_limit: usize::try_from(inline_limit).unwrap_or(usize::MAX),
            produced: Mutex::new(Produced::default()),
            keep_pins: AtomicBool::new(false),
        }
    }

    fn produced(&self) -> std::sync::MutexGuard<'_, Produced> {
        self.produced.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores `bytes` for this chain and remembers it.
    fn store(&self, bytes: &[u8], media_type: &str) -> Result<ArtifactRef, ShapingError> {
        let r = self
            .store
            .put_pinned(&self.chain_id, bytes, media_type)
            .map_err(ShapingError::Store)?;
        let mut produced = self.produced();
        if produced.refs.insert(r) {
            produced.artifacts.push(ArtifactInfo {
                artifact_ref: r,
                media_type: media_type.to_owned(),
                size: bytes.len() as u64,
            });
        }
        Ok(r)
    }

    /// The value as the script will receive it: inline when small, else a
    /// handle. Returns the artifact ref when it was offloaded.
    pub fn inline_or_offload(&self, value: Value) -> Result<(Value, Option<ArtifactRef>), ShapingError> {
        // A `Value` always serialises (its keys are strings).
        let text = serde_json::to_string(&value).unwrap_or_default();
        if text.len() <= self.inline_limit {
            return Ok((value, None));
        }
        let r = self.store(text.as_bytes(), JSON)?;
        Ok((handle(&r, JSON, text.len(), &text), Some(r)))
    }

    /// Turns a content-block result into `{"text", "files"}` (plus `json`,
    /// `structured`, and the provenance fields `source`, `observed_at`,
    /// `policy` when present), writing media blocks into the workspace.
    /// Also returns the files it wrote (a journal keeps them, so a replay
    /// can write them again: [`Shaper::replayed`]).
    pub fn media_result(
        &self,
        tool: &str,
        result: ToolExecutionResult,
    ) -> Result<(Value, Vec<ChainFile>), ShapingError> {
        let mut files = Vec::new();
        let mut written = Vec::new();
        for block in &result.content {
            let (media_type, data) = match block {
                ContentBlock::Image { media_type, data } | ContentBlock::Media { media_type, data } => {
                    (media_type, data)
                }
                _ => continue,
            };
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|source| ShapingError::NotBase64 {
                    tool: tool.to_owned(),
                    media_type: media_type.clone(),
                    source,
                })?;
            let r = self.store(&bytes, media_type)?;
            let file = self.write_media(tool, None, r, media_type, &bytes)?;
            files.push(json!({"path": file.path, "media_type": file.media_type, "artifact_ref": file.artifact_ref.to_string()}));
            written.push(file);
        }
        let mut out = Map::new();
        out.insert("text".into(), Value::String(result.text()));
        out.insert("files".into(), Value::Array(files));
        let json_blocks: Vec<Value> = result
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Json { json } => Some(json.clone()),
                _ => None,
            })
            .collect();
        if !json_blocks.is_empty() {
            out.insert("json".into(), Value::Array(json_blocks));
        }
        if !result.structured_content.is_empty() {
            out.insert("structured".into(), Value::Object(result.structured_content));
        }
        // Provenance, when the tool gave it: the script can tell where a
        // result came from and how fresh it is.
        for (key, value) in [
            ("source", result.source),
            ("observed_at", result.observed_at),
            ("policy", result.policy),
        ] {
            if let Some(value) = value {
                out.insert(key.into(), Value::String(value));
            }
        }
        Ok((Value::Object(out), written))
    }

    /// Writes a media artifact into the workspace as `media/<tool>_<n>.<ext>`,
    /// and lists it: `n` the chain's next media number, or `number` (a
    /// replayed file's), after which later files are numbered.
    fn write_media(
        &self,
        tool: &str,
        number: Option<u32>,
        r: ArtifactRef,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<ChainFile, ShapingError> {
        let n = {
            let mut produced = self.produced();
            let n = number.unwrap_or(produced.media_count + 1);
            produced.media_count = produced.media_count.max(n);
            n
        };
        let name = format!("media/{tool}_{n}.{}", extension_for_media_type(media_type));
        let path = self
            .workspace
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .write_file(&name, bytes)?;
        let file = ChainFile {
            path,
            media_type: media_type.to_owned(),
            artifact_ref: r,
        };
        self.produced().files.push(file.clone());
        Ok(file)
    }

    /// A call of `tool` answered from the journal: what it produced when it
    /// ran is this chain's again. Its offloaded result (`artifact_ref`) and
    /// media are pinned for the chain and resolve (`load_artifact`, handles
    /// in arguments), and its media `files` are written into the workspace
    /// again, under the names they had, from the artifact store: a resume,
    /// perhaps on another machine, starts from an empty workspace. (The
    /// number in a name is taken from the journal, not recounted: media
    /// calls made at once were numbered in the order they answered.)
    ///
    /// Best effort: the call's journaled outcome stands either way; an
    /// artifact the store lost is reported when the script loads it.
    pub fn replayed(&self, tool: &str, artifact_ref: Option<ArtifactRef>, files: &[ChainFile]) {
        for file in files {
            let restored = self.adopt(file.artifact_ref).and_then(|stored| {
                let number = media_number(&file.path, tool, &stored.media_type);
                self.write_media(tool, number, file.artifact_ref, &stored.media_type, &stored.bytes)
                    .map(drop)
            });
            if let Err(e) = restored {
                tracing::warn!(chain_id = %self.chain_id, path = %file.path, error = %e, "a replayed media file could not be restored");
            }
        }
        if let Some(r) = artifact_ref
            && let Err(e) = self.adopt(r)
        {
            tracing::warn!(chain_id = %self.chain_id, artifact = %r, error = %e, "a replayed result's artifact could not be restored");
        }
    }

    /// Makes a stored artifact this chain's (pinned, listed, loadable) and
    /// returns it. Listed even when the store has lost it, so that loading
    /// it says so (`Gone`) rather than calling it foreign.
    fn adopt(&self, r: ArtifactRef) -> Result<crate::artifacts::Artifact, ShapingError> {
        let stored = self.store.get(&r).map_err(|e| ShapingError::Read(r, e));
        let mut produced = self.produced();
        if produced.refs.insert(r)
            && let Ok(Some(stored)) = &stored
        {
            produced.artifacts.push(ArtifactInfo {
                artifact_ref: r,
                media_type: stored.media_type.clone(),
                size: stored.bytes.len() as u64,
            });
        }
        drop(produced);
        let stored = stored?.ok_or(ShapingError::Gone(r))?;
        self.store
            .pin(&self.chain_id, &r)
            .map_err(|e| ShapingError::Read(r, e))?;
        Ok(stored)
    }

    /// Replaces artifact handles in `value` by the stored values.
    pub fn resolve_handles(&self, value: &mut Value) -> Result<(), ShapingError> {
        if let Some(r) = handle_ref(value) {
            *value = self.load(r, usize::MAX)?;
            return Ok(());
        }
        match value {
            Value::Array(items) => items.iter_mut().try_for_each(|v| self.resolve_handles(v)),
            Value::Object(map) => map.values_mut().try_for_each(|v| self.resolve_handles(v)),
            _ => Ok(()),
        }
    }

    /// The stored JSON value behind `handle` (a handle object, `{"$artifact": ref}`
    /// or a bare ref string), if this chain produced it and it is at most `max` bytes.
    pub fn load_handle(&self, handle: &Value, max: usize) -> Result<Value, ShapingError> {
        let r = handle_ref(handle)
            .or_else(|| handle.as_str())
            .ok_or(ShapingError::NotAHandle)?;
        self.load(r, max)
    }

    fn load(&self, r: &str, max: usize) -> Result<Value, ShapingError> {
        let artifact = ArtifactRef::parse(r)?;
        if !self.produced().refs.contains(&artifact) {
            return Err(ShapingError::Foreign(artifact));
        }
        let stored = (self.store.get(&artifact))
            .map_err(|e| ShapingError::Read(artifact, e))?
            .ok_or(ShapingError::Gone(artifact))?;
        if stored.bytes.len() > max {
            return Err(ShapingError::TooLarge {
                artifact,
                size: stored.bytes.len(),
                max,
            });
        }
        if stored.media_type != JSON {
            return Err(ShapingError::NotJson {
                artifact,
                media_type: stored.media_type,
            });
        }
        serde_json::from_slice(&stored.bytes).map_err(|e| ShapingError::Corrupt(artifact, e))
    }

    /// Artifacts and files produced so far.
    pub fn produced_lists(&self) -> (Vec<ArtifactInfo>, Vec<ChainFile>) {
        let produced = self.produced();
        (produced.artifacts.clone(), produced.files.clone())
    }

    /// Releases this chain's pins (the caller still holds the refs; the
    /// store's `gc` may now reclaim them), unless it suspended.
    pub fn release(&self) {
        if !self.keep_pins.load(Ordering::Relaxed) {
            let _ = self.store.unpin_chain(&self.chain_id);
        }
    }

    /// The chain suspended: [`release`](Self::release) leaves its pins, so
    /// a `gc` while it waits (on a store shared with other nodes) keeps the
    /// artifacts its resume reads; the run that ends it, under the same
    /// chain id, releases them.
    pub fn keep_pins(&self) {
        self.keep_pins.store(true, Ordering::Relaxed);
    }
}

/// The `n` of a media file's path `/workspace/media/<tool>_<n>.<ext>` as
/// [`Shaper::write_media`] names it; `None` for any other path (a journal
/// is data: its paths are not trusted as paths).
fn media_number(path: &str, tool: &str, media_type: &str) -> Option<u32> {
    let ext = extension_for_media_type(media_type);
    let digits = path
        .strip_prefix(crate::workspace::WORKSPACE)?
        .strip_prefix("/media/")?
        .strip_prefix(tool)?
        .strip_prefix('_')?
        .strip_suffix(ext)?
        .strip_suffix('.')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|&n| n > 0)
}

/// Released on drop too: a chain whose future the caller dropped never
/// reaches `Engine::run`'s own `release`, and its pins kept every artifact
/// it had offloaded out of the store's `gc` forever. Releasing twice is harmless.
impl Drop for Shaper {
    fn drop(&mut self) {
        self.release();
    }
}

/// The handle a script receives for an offloaded value.
pub fn handle(r: &ArtifactRef, media_type: &str, size: usize, text: &str) -> Value {
    json!({
        "artifact_ref": r.to_string(),
        "media_type": media_type,
        "size": size,
        "preview": preview(text),
    })
}

/// `text` cut to [`PREVIEW_CHARS`] characters.
pub fn preview(text: &str) -> String {
    truncate_chars(text, PREVIEW_CHARS)
}

/// The ref of a handle object: `{"artifact_ref": ..., [media_type, size, preview]}`
/// or `{"$artifact": ...}`.
pub(crate) fn handle_ref(value: &Value) -> Option<&str> {
    let map = value.as_object()?;
    if map.len() == 1
        && let Some(r) = map.get("$artifact")
    {
        return r.as_str();
    }
    let r = map.get("artifact_ref")?.as_str()?;
    let handle_keys = ["artifact_ref", "media_type", "size", "preview"];
    map.keys().all(|k| handle_keys.contains(&k.as_str())).then_some(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifacts::MemoryArtifactStore;

    fn shaper(limit: u64) -> Shaper {
        Shaper::new(
            "c1".into(),
            Arc::new(MemoryArtifactStore::new()),
            Arc::new(Mutex::new(Workspace::new(None))),
            limit,
        )
    }

    /// A chart result (text and a PNG).
    fn chart() -> ToolExecutionResult {
        ToolExecutionResult {
            content: vec![crate::tools::ContentBlock::Image {
                media_type: "image/png".into(),
                data: base64::engine::general_purpose::STANDARD.encode(b"png bytes"),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn replayed_media_files_keep_their_journaled_names_and_later_ones_follow() {
        let first = shaper(100);
        let (_, one) = first.media_result("chart", chart()).unwrap();
        let (_, two) = first.media_result("chart", chart()).unwrap();
        let again = Shaper::new(
            "c1".into(),
            first.store.clone(),
            Arc::new(Mutex::new(Workspace::new(None))),
            100,
        );
        // Replayed in another order than they were numbered.
        again.replayed("chart", None, &two);
        again.replayed("chart", None, &one);
        let (_, three) = again.media_result("chart", chart()).unwrap();
        let paths: Vec<String> = again.produced_lists().1.into_iter().map(|f| f.path).collect();
        assert_eq!(
            paths,
            [
                "/workspace/media/chart_2.png",
                "/workspace/media/chart_1.png",
                "/workspace/media/chart_3.png"
            ]
        );
        assert_eq!(three[0].path, "/workspace/media/chart_3.png");
    }

    #[test]
    fn media_numbers_come_only_from_paths_as_the_shaper_writes_them() {
        assert_eq!(
            media_number("/workspace/media/chart_12.png", "chart", "image/png"),
            Some(12)
        );
        for path in [
            "/workspace/media/chart_0.png",
            "/workspace/media/chart_.png",
            "/workspace/media/chart_1.jpg",
            "/workspace/media/other_1.png",
            "/workspace/media/chart_+1.png",
            "/workspace/media/../chart_1.png",
            "/etc/media/chart_1.png",
        ] {
            assert_eq!(media_number(path, "chart", "image/png"), None, "{path}");
        }
    }

    #[test]
    fn small_values_stay_inline() {
        let (v, r) = shaper(100).inline_or_offload(json!({"a": 1})).unwrap();
        assert_eq!(v, json!({"a": 1}));
        assert!(r.is_none());
    }

    #[test]
    fn large_values_become_handles_that_resolve_back() {
        let s = shaper(10);
        let big = json!({"rows": (0..100).collect::<Vec<_>>()});
        let (h, r) = s.inline_or_offload(big.clone()).unwrap();
        let r = r.expect("offloaded").to_string();
        assert_eq!(h["artifact_ref"].as_str(), Some(r.as_str()));
        assert_eq!(h["media_type"], "application/json");
        let mut args = json!({"data": h, "other": {"$artifact": r}});
        s.resolve_handles(&mut args).unwrap();
        assert_eq!(args["data"], big);
        assert_eq!(args["other"], big);
    }

    #[test]
    fn foreign_refs_do_not_resolve() {
        let s = shaper(10);
        let r = ArtifactRef::of(b"{}");
        let err = s.load_handle(&json!(r.to_string()), usize::MAX).unwrap_err();
        assert!(matches!(err, ShapingError::Foreign(f) if f == r), "{err}");
    }

    #[test]
    fn load_is_bounded_by_max_bytes() {
        let s = shaper(10);
        let (h, _) = s.inline_or_offload(json!("x".repeat(100))).unwrap();
        let err = s.load_handle(&h, 50).unwrap_err();
        assert!(matches!(err, ShapingError::TooLarge { max: 50, .. }), "{err}");
        assert!(err.to_string().contains("max_result_bytes"), "{err}");
    }

    #[test]
    fn objects_with_other_keys_are_not_handles() {
        assert!(handle_ref(&json!({"artifact_ref": "sha256:00", "user": 1})).is_none());
    }
}
