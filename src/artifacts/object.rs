//! [`ObjectArtifactStore`]: artifacts in an object store (S3 or any
//! S3-compatible service, through the `object_store` crate), shared by every
//! process that reaches it, so a chain suspended on one node finds its
//! offloaded results and media on whichever node resumes it.
//!
//! Layout under the store's prefix:
//! - `sha256/<hex>`: an artifact's bytes, its media type in the object's
//!   `Content-Type` (bytes outside printable ASCII and `%` percent-encoded,
//!   which no ordinary media type has);
//! - `pins/c<chain>/<hex>`: an empty marker per pin (`<chain>` the chain id
//!   with every byte but `[A-Za-z0-9_-]` written `.XX`, so any id is one
//!   path segment and two ids never share one).
//!
//! Pins live in the store, so they are shared too: a `gc` anywhere keeps
//! what any process pins. `put_pinned` writes the pin before the bytes and
//! `gc` lists the artifacts before the pins, so an artifact `gc` sees has
//! its pin visible to it: a concurrent `put_pinned` is never collected.
//!
//! Everything read back is checked: `get` hashes the bytes against the ref
//! (the store may be shared with others, or tampered with).

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{Attribute, Attributes, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::{Artifact, ArtifactError, ArtifactRef, ArtifactStore, PREFIX};

/// How long an S3 request is retried: a few times, for at most 30 s (the
/// crate's default is 10 times over 3 minutes). A store call blocks the
/// chain's call that offloads or loads, so an unreachable store should be
/// an error the script sees soon, not a call that hangs.
const RETRY: object_store::RetryConfig = object_store::RetryConfig {
    backoff: object_store::BackoffConfig {
        init_backoff: std::time::Duration::from_millis(100),
        max_backoff: std::time::Duration::from_secs(5),
        base: 2.0,
    },
    max_retries: 3,
    retry_timeout: std::time::Duration::from_secs(30),
};

/// Artifacts in an [`ObjectStore`] under a prefix (see the module docs for
/// the layout).
///
/// The [`ArtifactStore`] trait is synchronous (its callers are many, some
/// on plain threads) and `object_store` is async, so each store owns a
/// runtime on a thread of its own that runs the requests, and a call waits
/// for its answer on a std channel. Why not `Handle::block_on` on the
/// caller's runtime: it panics on a runtime thread, and a current-thread
/// runtime blocked in the call could never drive the request anyway; the
/// store's own thread drives it whatever the caller's runtime is (a worker
/// of a multi-thread one, a current-thread one, or none).
pub struct ObjectArtifactStore {
    /// The object store.
    store: Arc<dyn ObjectStore>,
    /// Where the artifacts and pins live in it.
    prefix: ObjectPath,
    /// How errors name the store: its URL, without credentials.
    name: String,
    /// Runs the requests.
    bridge: Bridge,
}

impl fmt::Debug for ObjectArtifactStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectArtifactStore")
            .field("name", &self.name)
            .field("prefix", &self.prefix.as_ref())
            .finish_non_exhaustive()
    }
}

impl ObjectArtifactStore {
    /// A store in `store` under `prefix` (`""` for its root), named `name`
    /// in errors (a URL without credentials, e.g. `s3://bucket/prefix`).
    pub fn new(store: Arc<dyn ObjectStore>, prefix: &str, name: impl Into<String>) -> Result<Self, ArtifactError> {
        Ok(ObjectArtifactStore {
            store,
            prefix: ObjectPath::from(prefix),
            name: name.into(),
            bridge: Bridge::start().map_err(ArtifactError::Runtime)?,
        })
    }

    /// A store on S3 at `s3://BUCKET[/PREFIX]`: credentials, region and
    /// endpoint from the standard `AWS_*` variables (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`, and
    /// `AWS_ALLOW_HTTP=true` for a local server without TLS).
    pub fn s3(url: &str) -> Result<Self, ArtifactError> {
        let bad = |reason: &str| ArtifactError::BadUrl {
            url: super::redact(url),
            reason: reason.to_owned(),
        };
        let rest = url.strip_prefix("s3://").ok_or_else(|| bad("not an s3:// URL"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.contains('@') {
            return Err(bad(
                "credentials do not go in the URL: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
            ));
        }
        if bucket.is_empty() {
            return Err(bad("it names no bucket (s3://BUCKET/PREFIX)"));
        }
        let name = format!("s3://{bucket}/{}", prefix.trim_matches('/'));
        let s3 = object_store::aws::AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_retry(RETRY)
            .build()
            .map_err(|source| ArtifactError::ObjectStore {
                store: name.clone(),
                key: "(its configuration)".to_owned(),
                source: Box::new(source),
            })?;
        Self::new(Arc::new(s3), prefix, name)
    }

    /// The object holding the bytes of `r`.
    fn blob(&self, r: &ArtifactRef) -> ObjectPath {
        self.prefix.clone().join("sha256").join(r.hex())
    }

    /// Where `chain_id`'s pins live.
    fn pins_of(&self, chain_id: &str) -> ObjectPath {
        self.prefix.clone().join("pins").join(chain_segment(chain_id))
    }

    /// An error of the object store on `key`.
    fn failed(&self, key: &ObjectPath) -> impl Fn(object_store::Error) -> ArtifactError + '_ {
        let key = key.to_string();
        move |source| ArtifactError::ObjectStore {
            store: self.name.clone(),
            key: key.clone(),
            source: Box::new(source),
        }
    }

    /// Runs `future` on the store's thread and waits for it.
    fn run<T: Send + 'static>(
        &self,
        key: &ObjectPath,
        future: impl Future<Output = object_store::Result<T>> + Send + 'static,
    ) -> Result<T, ArtifactError> {
        self.bridge
            .run(future)
            .unwrap_or_else(|| {
                Err(object_store::Error::Generic {
                    store: "chainbox",
                    source: "the artifact store's I/O thread has stopped".into(),
                })
            })
            .map_err(self.failed(key))
    }

    /// Whether the bytes of `r` are in the store.
    fn has(&self, r: &ArtifactRef) -> Result<bool, ArtifactError> {
        let blob = self.blob(r);
        let store = self.store.clone();
        let path = blob.clone();
        self.run(&blob, async move {
            match store.head(&path).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::NotFound { .. }) => Ok(false),
                Err(e) => Err(e),
            }
        })
    }

    /// Writes an empty pin marker.
    fn write_pin(&self, chain_id: &str, r: &ArtifactRef) -> Result<(), ArtifactError> {
        let marker = self.pins_of(chain_id).join(r.hex());
        let store = self.store.clone();
        let path = marker.clone();
        self.run(
            &marker,
            async move { store.put(&path, PutPayload::new()).await.map(drop) },
        )
    }

    /// Lists the objects under `prefix`.
    fn list(&self, prefix: ObjectPath) -> Result<Vec<ObjectPath>, ArtifactError> {
        let store = self.store.clone();
        let path = prefix.clone();
        self.run(&prefix, async move {
            store
                .list(Some(&path))
                .map_ok(|meta| meta.location)
                .try_collect::<Vec<_>>()
                .await
        })
    }

    /// Lists the objects under `prefix` with when each was last written
    /// (ms since the Unix epoch, the store's clock).
    fn list_modified(&self, prefix: ObjectPath) -> Result<Vec<(ObjectPath, i64)>, ArtifactError> {
        let store = self.store.clone();
        let path = prefix.clone();
        self.run(&prefix, async move {
            store
                .list(Some(&path))
                .map_ok(|meta| (meta.location, meta.last_modified.timestamp_millis()))
                .try_collect::<Vec<_>>()
                .await
        })
    }

    /// Deletes one object (one already gone is fine).
    fn delete(&self, key: &ObjectPath) -> Result<(), ArtifactError> {
        let store = self.store.clone();
        let path = key.clone();
        self.run(key, async move {
            match store.delete(&path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        })
    }
}

impl ArtifactStore for ObjectArtifactStore {
    fn put(&self, bytes: &[u8], media_type: &str) -> Result<ArtifactRef, ArtifactError> {
        let r = ArtifactRef::of(bytes);
        let blob = self.blob(&r);
        let store = self.store.clone();
        let path = blob.clone();
        let payload = PutPayload::from(bytes.to_vec());
        let content_type = encode_media_type(media_type);
        self.run(&blob, async move {
            // Present already: same bytes by address, and the first media
            // type stays. The check also spares re-uploading large bytes.
            match store.head(&path).await {
                Ok(_) => return Ok(()),
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
            let mut attributes = Attributes::new();
            attributes.insert(Attribute::ContentType, content_type.into());
            // A conditional write (`If-None-Match: *`) so that of two
            // first puts racing, the first media type stays; a store that
            // cannot write conditionally gets a plain write (same bytes,
            // the media type of whichever lands last).
            let create = PutOptions {
                mode: PutMode::Create,
                attributes: attributes.clone(),
                ..PutOptions::default()
            };
            match store.put_opts(&path, payload.clone(), create).await {
                Ok(_) | Err(object_store::Error::AlreadyExists { .. }) => Ok(()),
                Err(object_store::Error::NotImplemented { .. } | object_store::Error::NotSupported { .. }) => {
                    let plain = PutOptions {
                        attributes,
                        ..PutOptions::default()
                    };
                    store.put_opts(&path, payload, plain).await.map(drop)
                }
                Err(e) => Err(e),
            }
        })?;
        Ok(r)
    }

    fn get(&self, r: &ArtifactRef) -> Result<Option<Artifact>, ArtifactError> {
        let blob = self.blob(r);
        let store = self.store.clone();
        let path = blob.clone();
        let got = self.run(&blob, async move {
            let result = match store.get(&path).await {
                Ok(result) => result,
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(e),
            };
            let content_type = result.attributes.get(&Attribute::ContentType).map(|v| v.to_string());
            let bytes = result.bytes().await?;
            Ok(Some((bytes, content_type)))
        })?;
        let Some((bytes, content_type)) = got else {
            return Ok(None);
        };
        let corrupt = |reason: &str| ArtifactError::Corrupt {
            artifact: *r,
            reason: reason.to_owned(),
        };
        if ArtifactRef::of(&bytes) != *r {
            return Err(corrupt("its bytes do not hash to its name"));
        }
        let media_type = content_type
            .as_deref()
            .and_then(decode_media_type)
            .ok_or_else(|| corrupt("its object has no readable Content-Type (its media type)"))?;
        Ok(Some(Artifact {
            bytes: bytes.to_vec(),
            media_type,
        }))
    }

    fn pin(&self, chain_id: &str, r: &ArtifactRef) -> Result<(), ArtifactError> {
        if !self.has(r)? {
            return Err(ArtifactError::NotFound(*r));
        }
        self.write_pin(chain_id, r)
    }

    fn unpin_chain(&self, chain_id: &str) -> Result<(), ArtifactError> {
        for marker in self.list(self.pins_of(chain_id))? {
            self.delete(&marker)?;
        }
        Ok(())
    }

    fn gc_unused(&self, older_than: Duration, keep: &HashSet<ArtifactRef>) -> Result<usize, ArtifactError> {
        // The artifacts first, then the pins (see the module docs).
        let blobs = self.list_modified(self.prefix.clone().join("sha256"))?;
        let pinned: HashSet<String> = self
            .list(self.prefix.clone().join("pins"))?
            .iter()
            .filter_map(|marker| marker.filename().map(str::to_owned))
            .collect();
        let mut removed = 0;
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let grace_ms = i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
        for (blob, modified_ms) in blobs {
            let Some(hex) = blob.filename() else { continue };
            let Ok(r) = ArtifactRef::parse(&format!("{PREFIX}{hex}")) else {
                continue; // strangers are left alone
            };
            if pinned.contains(hex) || keep.contains(&r) || now_ms.saturating_sub(modified_ms) < grace_ms {
                continue;
            }
            self.delete(&blob)?;
            removed += 1;
        }
        Ok(removed)
    }

    fn put_pinned(&self, chain_id: &str, bytes: &[u8], media_type: &str) -> Result<ArtifactRef, ArtifactError> {
        // The pin first: a `gc` that sees the bytes sees the pin.
        self.write_pin(chain_id, &ArtifactRef::of(bytes))?;
        self.put(bytes, media_type)
    }
}

/// A chain id as one path segment: `c`, then `[A-Za-z0-9_-]` as they are
/// and every other byte as `.XX` (so the segment is never `.` or `..`, and
/// two ids never map to one segment).
fn chain_segment(chain_id: &str) -> String {
    let mut segment = String::with_capacity(chain_id.len() + 1);
    segment.push('c');
    for &b in chain_id.as_bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            segment.push(char::from(b));
        } else {
            segment.push_str(&format!(".{b:02X}"));
        }
    }
    segment
}

/// A media type as a header value: printable ASCII as it is, `%` and
/// every other byte as `%XX`.
fn encode_media_type(media_type: &str) -> String {
    let mut out = String::with_capacity(media_type.len());
    for &b in media_type.as_bytes() {
        if (b' '..=b'~').contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The media type behind a header value [`encode_media_type`] wrote;
/// `None` if it is not one.
fn decode_media_type(value: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(value.len());
    let mut rest = value.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'%' {
            let hex = tail.get(..2)?;
            let text = std::str::from_utf8(hex).ok()?;
            bytes.push(u8::from_str_radix(text, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

/// A boxed job for the store's thread.
type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A current-thread runtime on a thread of its own, running the futures
/// it is sent (each as a task, so concurrent calls overlap). The thread
/// ends when the bridge is dropped: its runtime is dropped there, on its
/// own thread, where dropping a runtime is allowed (it is not from inside
/// another runtime's task).
struct Bridge {
    jobs: tokio::sync::mpsc::UnboundedSender<Job>,
}

impl Bridge {
    /// Starts the thread.
    fn start() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (jobs, mut incoming) = tokio::sync::mpsc::unbounded_channel::<Job>();
        std::thread::Builder::new()
            .name("chainbox-artifacts".into())
            .spawn(move || {
                runtime.block_on(async move {
                    while let Some(job) = incoming.recv().await {
                        tokio::spawn(job);
                    }
                });
            })?;
        Ok(Bridge { jobs })
    }

    /// Runs `future` on the thread and blocks until it is done; `None` if
    /// the thread is gone.
    fn run<T: Send + 'static>(&self, future: impl Future<Output = T> + Send + 'static) -> Option<T> {
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        let job: Job = Box::pin(async move {
            let _ = answer.send(future.await);
        });
        self.jobs.send(job).ok()?;
        answered.recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_segments_are_one_safe_segment_and_distinct() {
        assert_eq!(chain_segment("run-1_a"), "crun-1_a");
        assert_eq!(chain_segment(""), "c");
        assert_eq!(chain_segment("a/b"), "ca.2Fb");
        assert_eq!(chain_segment(".."), "c.2E.2E");
        assert_ne!(chain_segment("a.2F"), chain_segment("a/"));
    }

    #[test]
    fn media_types_round_trip_through_the_header_encoding() {
        for mt in ["image/png", "text/plain; charset=utf-8", "a%b", "bild/ä", "x\ny", ""] {
            let encoded = encode_media_type(mt);
            assert!(encoded.bytes().all(|b| (b' '..=b'~').contains(&b)), "{encoded}");
            assert_eq!(decode_media_type(&encoded).as_deref(), Some(mt));
        }
        assert_eq!(encode_media_type("image/png"), "image/png");
        assert_eq!(decode_media_type("%G0"), None);
        assert_eq!(decode_media_type("%4"), None);
    }

    #[test]
    fn urls_lose_their_credentials_in_messages() {
        assert_eq!(super::super::redact("s3://key:secret@bucket/p"), "s3://***@bucket/p");
        assert_eq!(super::super::redact("s3://bucket/a@b"), "s3://bucket/a@b");
        assert_eq!(super::super::redact("memory:"), "memory:");
    }
}
