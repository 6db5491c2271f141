//! The issuer's signing keys (a JWK Set), as one node of `serve` keeps
//! them: fetched on first use from `--auth-jwks` or from the `jwks_uri` of
//! the issuer's metadata (RFC 8414's `/.well-known/oauth-authorization-server`
//! first, then OpenID Connect's `/.well-known/openid-configuration`), used
//! for [`AuthConfig::keys_max_age`], and fetched again early when a token
//! names a key they lack, at most once per
//! [`AuthConfig::refetch_interval`] (so a flood of tokens with made-up
//! `kid`s costs the issuer one request per interval, not one each).
//!
//! Only asymmetric public keys are kept: a symmetric (`oct`) key, a key for
//! encryption (`use: enc`), or one this crate cannot read is left out.

use std::str::FromStr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde_json::Value;

use super::{AuthConfig, AuthError, TokenError};

/// How long one fetch (metadata or keys) may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest metadata or key document read.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// Why the issuer's keys could not be had.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JwksError {
    /// A request failed (unreachable, timed out, too large).
    #[error("fetching {url}: {why}")]
    Fetch {
        /// What was fetched.
        url: String,
        /// Why it failed.
        why: String,
    },
    /// A document did not read as what it should be.
    #[error("{url} is not a valid {what}: {why}")]
    Document {
        /// What was fetched.
        url: String,
        /// What it should have been.
        what: &'static str,
        /// Why it did not read.
        why: String,
    },
    /// Neither metadata document of the issuer could be had.
    #[error("the issuer {issuer}'s metadata (oauth-authorization-server, openid-configuration): {why}")]
    Discovery {
        /// The issuer.
        issuer: String,
        /// What the last attempt said.
        why: String,
    },
    /// The key set holds no key chainbox can verify with.
    #[error("{url} holds no asymmetric signing key")]
    NoKeys {
        /// Where the keys were fetched.
        url: String,
    },
}

/// One usable public key.
struct Key {
    kid: Option<String>,
    /// The key's `alg`, when it names one: then only that algorithm.
    alg: Option<Algorithm>,
    key: Arc<DecodingKey>,
}

/// The keys of one fetch.
struct KeySet {
    keys: Vec<Key>,
    fetched: Instant,
}

impl KeySet {
    /// The keys of a JWK Set document; `url` names it in errors.
    fn parse(document: &Value, url: &str) -> Result<Self, JwksError> {
        let entries = document
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| JwksError::Document {
                url: url.to_owned(),
                what: "JWK Set",
                why: "no `keys` array".into(),
            })?;
        // One key of a type this crate does not read must not hide the rest.
        let keys: Vec<Key> = entries
            .iter()
            .filter_map(|entry| serde_json::from_value::<Jwk>(entry.clone()).ok())
            .filter_map(|jwk| usable(&jwk))
            .collect();
        if keys.is_empty() {
            return Err(JwksError::NoKeys { url: url.to_owned() });
        }
        Ok(Self {
            keys,
            fetched: Instant::now(),
        })
    }

    /// The key verifying a token signed with `alg` under `kid`: the key of
    /// that id, or, for a token naming none, the only key of `alg`'s family.
    fn find(&self, kid: Option<&str>, alg: Algorithm) -> Option<Arc<DecodingKey>> {
        let fits = |k: &&Key| k.key.family() == alg.family() && k.alg.is_none_or(|a| a == alg);
        match kid {
            Some(kid) => self.keys.iter().filter(fits).find(|k| k.kid.as_deref() == Some(kid)),
            None => {
                let mut fitting = self.keys.iter().filter(fits);
                match (fitting.next(), fitting.next()) {
                    (Some(only), None) => Some(only),
                    _ => None,
                }
            }
        }
        .map(|k| Arc::clone(&k.key))
    }
}

/// A key of the set chainbox can verify with, if `jwk` is one.
fn usable(jwk: &Jwk) -> Option<Key> {
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
        return None;
    }
    let key = DecodingKey::from_jwk(jwk).ok()?;
    if key.family() == AlgorithmFamily::Hmac {
        return None;
    }
    let alg = match jwk.common.key_algorithm {
        // A key meant for an algorithm chainbox does not accept (or for
        // encryption) verifies nothing.
        Some(named) => Some(Algorithm::from_str(&named.to_string()).ok()?),
        None => None,
    };
    if alg.is_some_and(|a| a.family() != key.family()) {
        return None;
    }
    Some(Key {
        kid: jwk.common.key_id.clone(),
        alg,
        key: Arc::new(key),
    })
}

/// Where the keys come from.
enum Origin {
    /// A key set given once (tests, benches): never fetched.
    Fixed,
    /// Fetched over HTTP.
    Remote(Box<Remote>),
}

/// Keys fetched over HTTP: from `jwks_uri`, or from the issuer's metadata.
struct Remote {
    issuer: String,
    jwks_uri: Option<url::Url>,
    /// The `jwks_uri` the metadata gave, once found.
    discovered: Mutex<Option<url::Url>>,
    client: reqwest::Client,
}

/// The issuer's signing keys, as one node keeps them (see the module docs).
pub struct KeySource {
    origin: Origin,
    current: RwLock<Option<Arc<KeySet>>>,
    /// Held while fetching, so that requests arriving meanwhile wait for
    /// that fetch instead of making their own.
    fetching: tokio::sync::Mutex<()>,
    /// When the last fetch started, and how it ended for the requests
    /// waiting on it (`Ok`: keys are held, new or old; `Err`: none are).
    last_fetch: Mutex<Option<(Instant, Result<(), JwksError>)>>,
    refetch_interval: Duration,
    max_age: Duration,
}

impl KeySource {
    /// Keys fetched as `config` says.
    pub fn new(config: &AuthConfig) -> Self {
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Self::with_origin(
            Origin::Remote(Box::new(Remote {
                issuer: config.issuer.clone(),
                jwks_uri: config.jwks_uri.clone(),
                discovered: Mutex::new(None),
                client,
            })),
            None,
            config,
        )
    }

    /// These keys (a JWK Set document), never fetched.
    ///
    /// # Errors
    /// [`JwksError`] when `document` holds no usable key.
    pub fn fixed(document: &Value, config: &AuthConfig) -> Result<Self, JwksError> {
        let set = KeySet::parse(document, "the given key set")?;
        Ok(Self::with_origin(Origin::Fixed, Some(Arc::new(set)), config))
    }

    fn with_origin(origin: Origin, current: Option<Arc<KeySet>>, config: &AuthConfig) -> Self {
        Self {
            origin,
            current: RwLock::new(current),
            fetching: tokio::sync::Mutex::new(()),
            last_fetch: Mutex::new(None),
            refetch_interval: config.refetch_interval,
            max_age: config.keys_max_age,
        }
    }

    /// The keys now held, if any.
    fn held(&self) -> Option<Arc<KeySet>> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The key for a token signed with `alg` under `kid`: from the keys
    /// held, else from a fresh fetch when they are old or lack it (and the
    /// last fetch is older than the refetch interval).
    ///
    /// # Errors
    /// [`AuthError::Token`] ([`TokenError::UnknownKey`]) when no key fits;
    /// [`AuthError::Keys`] when the keys cannot be fetched and none are held.
    pub async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<Arc<DecodingKey>, AuthError> {
        let held = self.held();
        let Origin::Remote(remote) = &self.origin else {
            return held
                .and_then(|set| set.find(kid, alg))
                .ok_or_else(|| TokenError::UnknownKey.into());
        };
        if let Some(key) = held
            .filter(|set| set.fetched.elapsed() < self.max_age)
            .and_then(|set| set.find(kid, alg))
        {
            return Ok(key);
        }
        self.refresh(remote).await?;
        self.held()
            .and_then(|set| set.find(kid, alg))
            .ok_or_else(|| TokenError::UnknownKey.into())
    }

    /// Fetches the keys now (at start, so that a wrong issuer shows at
    /// once); later requests fetch them if this failed.
    ///
    /// # Errors
    /// [`JwksError`] when they cannot be fetched.
    pub async fn prefetch(&self) -> Result<(), JwksError> {
        match &self.origin {
            Origin::Fixed => Ok(()),
            Origin::Remote(remote) => self.refresh(remote).await,
        }
    }

    /// Fetches the keys again, unless a fetch started less than the refetch
    /// interval ago or while this request waited for the one before: then
    /// that fetch's outcome stands. So neither tokens naming made-up keys
    /// nor an unreachable issuer make more than one fetch per interval
    /// (requests meanwhile get the held keys, or the last failure at once).
    /// A failed fetch keeps the keys held before.
    async fn refresh(&self, remote: &Remote) -> Result<(), JwksError> {
        let started_waiting = Instant::now();
        let _fetching = self.fetching.lock().await;
        let started = Instant::now();
        {
            let last = self.last_fetch.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, outcome)) = &*last
                && (*at >= started_waiting || at.elapsed() < self.refetch_interval)
            {
                return outcome.clone();
            }
        }
        let outcome = match remote.fetch().await {
            Ok(set) => {
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(set));
                Ok(())
            }
            // Old keys keep working while the issuer is unreachable.
            Err(e) if self.held().is_some() => {
                tracing::warn!("refreshing the issuer's keys: {e}");
                Ok(())
            }
            Err(e) => Err(e),
        };
        *self.last_fetch.lock().unwrap_or_else(|p| p.into_inner()) = Some((started, outcome.clone()));
        outcome
    }
}

impl Remote {
    /// One fetch of the key set (after finding its URL, the first time).
    async fn fetch(&self) -> Result<KeySet, JwksError> {
        let known = self
            .jwks_uri
            .clone()
            .or_else(|| self.discovered.lock().unwrap_or_else(|p| p.into_inner()).clone());
        let url = match known {
            Some(url) => url,
            None => {
                let url = discover(&self.client, &self.issuer).await?;
                *self.discovered.lock().unwrap_or_else(|p| p.into_inner()) = Some(url.clone());
                url
            }
        };
        let document = get_json(&self.client, &url, "JWK Set").await?;
        let set = KeySet::parse(&document, url.as_str())?;
        tracing::info!(jwks = %url, keys = set.keys.len(), "fetched the issuer's signing keys");
        Ok(set)
    }
}

/// The `jwks_uri` of `issuer`'s metadata: RFC 8414's well-known document
/// first, then OpenID Connect's. The metadata's `issuer` must be `issuer`
/// (RFC 8414 section 3.3: else another server's keys could be taken).
async fn discover(client: &reqwest::Client, issuer: &str) -> Result<url::Url, JwksError> {
    let mut last = String::from("no metadata URL");
    for url in metadata_urls(issuer) {
        let document = match get_json(client, &url, "authorization server metadata").await {
            Ok(document) => document,
            Err(e) => {
                last = e.to_string();
                continue;
            }
        };
        if document.get("issuer").and_then(Value::as_str) != Some(issuer) {
            last = format!("{url} names another issuer");
            continue;
        }
        let Some(jwks) = document.get("jwks_uri").and_then(Value::as_str) else {
            last = format!("{url} has no jwks_uri");
            continue;
        };
        return url::Url::parse(jwks).map_err(|e| JwksError::Document {
            url: url.to_string(),
            what: "authorization server metadata",
            why: format!("jwks_uri {jwks:?}: {e}"),
        });
    }
    Err(JwksError::Discovery {
        issuer: issuer.to_owned(),
        why: last,
    })
}

/// Where `issuer`'s metadata may be: RFC 8414 puts the well-known part
/// before the issuer's path, OpenID Connect after it.
fn metadata_urls(issuer: &str) -> Vec<url::Url> {
    let Ok(base) = url::Url::parse(issuer) else {
        return Vec::new();
    };
    let path = base.path().trim_end_matches('/').to_owned();
    let at = |p: String| {
        let mut url = base.clone();
        url.set_path(&p);
        url.set_query(None);
        url
    };
    vec![
        at(format!("/.well-known/oauth-authorization-server{path}")),
        at(format!("{path}/.well-known/openid-configuration")),
    ]
}

/// `url`'s body as JSON (`what` names it in errors), bounded.
async fn get_json(client: &reqwest::Client, url: &url::Url, what: &'static str) -> Result<Value, JwksError> {
    let fetch = |why: String| JwksError::Fetch {
        url: url.to_string(),
        why,
    };
    let response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| fetch(e.to_string()))?;
    if !response.status().is_success() {
        return Err(fetch(format!("HTTP {}", response.status())));
    }
    if response.content_length().is_some_and(|n| n > MAX_DOCUMENT_BYTES as u64) {
        return Err(fetch(format!("larger than {MAX_DOCUMENT_BYTES} bytes")));
    }
    let body = response.bytes().await.map_err(|e| fetch(e.to_string()))?;
    if body.len() > MAX_DOCUMENT_BYTES {
        return Err(fetch(format!("larger than {MAX_DOCUMENT_BYTES} bytes")));
    }
    serde_json::from_slice(&body).map_err(|e| JwksError::Document {
        url: url.to_string(),
        what,
        why: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_before_and_after_the_issuers_path() {
        let urls: Vec<String> = metadata_urls("https://id.example/tenant/1")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            urls,
            [
                "https://id.example/.well-known/oauth-authorization-server/tenant/1",
                "https://id.example/tenant/1/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn a_bare_issuer_has_both_documents_at_its_root() {
        let urls: Vec<String> = metadata_urls("http://127.0.0.1:4000")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:4000/.well-known/oauth-authorization-server",
                "http://127.0.0.1:4000/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn symmetric_and_encryption_keys_are_left_out() {
        let document = serde_json::json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {"kty": "EC", "crv": "P-256", "use": "enc", "kid": "enc",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
             "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "made-up", "kid": "odd"}
        ]});
        assert!(matches!(
            KeySet::parse(&document, "test"),
            Err(JwksError::NoKeys { .. })
        ));
    }
}
