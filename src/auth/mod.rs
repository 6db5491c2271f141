//! Who is calling: `chainbox serve --http` as an OAuth 2.1 resource server
//! (the MCP authorization specification). Every request to the MCP
//! endpoint carries an access token (`Authorization: Bearer`), a JWT the
//! configured issuer signed; [`Authenticator::authenticate`] checks it and
//! names the caller, a [`Principal`] (the token's `iss` and `sub`, and its
//! scopes), to which every chain, `requestState` and session is then bound.
//!
//! - [`AuthConfig`]: the issuer, the resource (the public URL clients
//!   connect to: configured, never read off a request), extra audiences,
//!   where the keys are.
//! - [`jwks`]: the issuer's signing keys, fetched (from `--auth-jwks` or
//!   the issuer's metadata), cached per node, and fetched again, at most
//!   once per [`AuthConfig::refetch_interval`], when a token names a key
//!   the cache lacks: a key rotated in at the issuer works without a
//!   restart.
//! - [`http`]: the axum layer in front of the MCP endpoint (401 and 403
//!   challenges, the principal handed to the handler, the `Authorization`
//!   header stripped, sessions bound to their principal) and the Protected
//!   Resource Metadata document (RFC 9728).
//!
//! Invariants:
//! - Only asymmetric signatures are accepted (RS*, PS*, ES256/ES384,
//!   EdDSA): `none` and HMAC are refused before any key is looked at, so a
//!   token HMAC-signed with a public key never verifies; a key is used only
//!   for the algorithm family it is (and, when it names one, for its
//!   `alg`).
//! - `iss` is exactly the issuer, `aud` holds the resource (or an extra
//!   audience), `exp` and `sub` are present, `exp` and `nbf` hold within
//!   [`LEEWAY_S`].
//! - A token is verified once: its principal is kept, under the token's
//!   SHA-256, until the token expires (or for [`VERIFIED_TTL`] at most),
//!   so a client's next request costs a hash and a lookup, not a signature
//!   check.
//! - The token itself is never logged, stored or passed on.

pub mod http;
pub mod jwks;

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::principal::Principal;
pub use jwks::{JwksError, KeySource};

/// The scope a token needs to run chains (and to list the tool).
pub const RUN_SCOPE: &str = "chainbox:run";

/// Clock skew allowed on `exp` and `nbf`, in seconds (the specification
/// allows at most 60).
pub const LEEWAY_S: u64 = 30;

/// How long a verified token's principal is kept at most, even if the
/// token lives longer: a key the issuer withdrew stops working within it.
pub const VERIFIED_TTL: Duration = Duration::from_secs(300);

/// How many verified tokens a node keeps; past it the cache is emptied
/// of expired entries, and then entirely if that was not enough.
const VERIFIED_CAPACITY: usize = 10_000;

/// The signature algorithms accepted: asymmetric only.
const ACCEPTED_ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// How `serve` authenticates its callers.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// The authorization server's issuer URL: tokens' `iss` must be exactly
    /// this, and its metadata says where its keys are.
    pub issuer: String,
    /// The canonical URL clients connect to (`https://chains.example.com/mcp`),
    /// parsed: where the metadata's URL comes from.
    pub resource: url::Url,
    /// The same URL exactly as configured: the metadata's `resource`, which
    /// a client sends back as its RFC 8707 resource indicator, and so the
    /// audience tokens must carry (`Url` would print `https://host` as
    /// `https://host/`, another audience).
    resource_id: String,
    /// Other audiences accepted besides `resource` (an identity provider
    /// that puts an API identifier in `aud`).
    pub extra_audiences: Vec<String>,
    /// Where the issuer's keys are, if not found through its metadata.
    pub jwks_uri: Option<url::Url>,
    /// The shortest time between two fetches of the keys that a token
    /// naming an unknown key causes.
    pub refetch_interval: Duration,
    /// How long fetched keys are used before they are fetched again.
    pub keys_max_age: Duration,
    /// The scopes offered in the metadata's `scopes_supported` besides
    /// [`RUN_SCOPE`] (the policy's `required_scopes`).
    pub extra_scopes: BTreeSet<String>,
}

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A URL that does not parse, or is not an absolute `http(s)` URL.
    #[error("{flag} {url:?}: {why}")]
    Url {
        /// The flag that gave it.
        flag: &'static str,
        /// What was given.
        url: String,
        /// Why it is refused.
        why: String,
    },
}

impl AuthConfig {
    /// A configuration for tokens from `issuer`, for the resource at
    /// `resource`, with the default intervals; `jwks` overrides discovery.
    ///
    /// # Errors
    /// [`ConfigError::Url`] naming the flag when a URL is not an absolute
    /// `https` URL (`http` only on a loopback host), or carries a fragment.
    pub fn new(issuer: &str, resource: &str, jwks: Option<&str>) -> Result<Self, ConfigError> {
        // Both are kept as given: `iss` must be exactly the issuer, `aud`
        // exactly the resource.
        let (issuer, resource_id) = (issuer.trim(), resource.trim());
        checked_url("--auth-issuer", issuer)?;
        let resource = checked_url("--auth-resource", resource_id)?;
        if resource.query().is_some() {
            return Err(ConfigError::Url {
                flag: "--auth-resource",
                url: resource_id.to_owned(),
                why: "a resource identifier has no query (RFC 8707)".into(),
            });
        }
        let jwks_uri = jwks.map(|j| checked_url("--auth-jwks", j)).transpose()?;
        Ok(Self {
            issuer: issuer.to_owned(),
            resource,
            resource_id: resource_id.to_owned(),
            extra_audiences: Vec::new(),
            jwks_uri,
            refetch_interval: Duration::from_secs(10),
            keys_max_age: Duration::from_secs(3600),
            extra_scopes: BTreeSet::new(),
        })
    }

    /// The resource as configured: as clients see it and tokens name it.
    pub fn resource_id(&self) -> &str {
        &self.resource_id
    }
}

/// `text` as an absolute URL fit for `flag`: `https`, or `http` on a
/// loopback host (local development and tests), without a fragment.
fn checked_url(flag: &'static str, text: &str) -> Result<url::Url, ConfigError> {
    let fail = |why: String| ConfigError::Url {
        flag,
        url: text.to_owned(),
        why,
    };
    let url = url::Url::parse(text).map_err(|e| fail(e.to_string()))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err(fail("it has no host".into())),
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => return Err(fail("use https (http only on a loopback host)".into())),
        other => return Err(fail(format!("scheme {other:?} is not http(s)"))),
    }
    if url.fragment().is_some() {
        return Err(fail("a URL here has no fragment".into()));
    }
    Ok(url)
}

/// Why a request's token was refused: the `error_description` of the 401.
/// Never holds the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// No `Authorization: Bearer` header.
    #[error("no bearer token: send `Authorization: Bearer <access token>`")]
    Missing,
    /// Not three base64url parts, or a header or claims that do not read.
    #[error("the token is not a well-formed JWT")]
    Malformed,
    /// `none`, HMAC or another algorithm not accepted.
    #[error("the token's algorithm {0} is not accepted (asymmetric signatures only)")]
    Algorithm(String),
    /// No key of the issuer's has the token's `kid` (after a refetch).
    #[error("the token is signed with a key the issuer does not publish")]
    UnknownKey,
    /// The signature does not verify with the issuer's key.
    #[error("the token's signature does not verify")]
    Signature,
    /// `exp` passed.
    #[error("the token has expired")]
    Expired,
    /// `nbf` not reached.
    #[error("the token is not valid yet (nbf)")]
    NotYetValid,
    /// `iss` is not the issuer.
    #[error("the token's issuer is not this server's issuer")]
    Issuer,
    /// `aud` does not name this resource.
    #[error("the token's audience does not include this resource")]
    Audience,
    /// A required claim is missing (`exp`, `sub`, `iss`, `aud`).
    #[error("the token lacks the `{0}` claim")]
    MissingClaim(String),
}

/// Why a request could not be authenticated.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The token is refused: HTTP 401.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The issuer's keys cannot be had: HTTP 503, not the client's fault.
    #[error(transparent)]
    Keys(#[from] JwksError),
}

/// The claims chainbox reads from an access token.
#[derive(Debug, Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    /// RFC 8693 / RFC 9068: space-separated.
    #[serde(default)]
    scope: Option<String>,
    /// Entra ID and others: an array, or a space-separated string.
    #[serde(default)]
    scp: Option<ScopeList>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    azp: Option<String>,
    exp: u64,
}

/// `scp` in either shape seen in the wild.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ScopeList {
    List(Vec<String>),
    Text(String),
}

impl Claims {
    fn scopes(&self) -> BTreeSet<String> {
        let mut scopes: BTreeSet<String> = BTreeSet::new();
        if let Some(text) = &self.scope {
            scopes.extend(text.split_whitespace().map(str::to_owned));
        }
        match &self.scp {
            Some(ScopeList::List(list)) => scopes.extend(list.iter().cloned()),
            Some(ScopeList::Text(text)) => scopes.extend(text.split_whitespace().map(str::to_owned)),
            None => {}
        }
        scopes
    }
}

/// A verified token's principal, kept until `until`.
struct Verified {
    principal: Principal,
    until: Instant,
}

/// Checks access tokens for one resource: the keys of one issuer, and the
/// tokens it verified lately. Shared by every request of a node.
pub struct Authenticator {
    config: AuthConfig,
    keys: KeySource,
    /// One validation per accepted algorithm (jsonwebtoken checks a key
    /// against every algorithm a validation lists, so each lists one).
    validations: Vec<(Algorithm, Validation)>,
    verified: Mutex<HashMap<[u8; 32], Verified>>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("issuer", &self.config.issuer)
            .field("resource", &self.config.resource_id())
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// An authenticator for `config`, fetching keys as it needs them.
    pub fn new(config: AuthConfig) -> Self {
        let keys = KeySource::new(&config);
        Self::with_keys(config, keys)
    }

    /// An authenticator for `config` with these keys (tests, benches).
    pub fn with_keys(config: AuthConfig, keys: KeySource) -> Self {
        let mut audiences = vec![config.resource_id().to_owned()];
        audiences.extend(config.extra_audiences.iter().cloned());
        let validations = ACCEPTED_ALGORITHMS
            .iter()
            .map(|&alg| {
                let mut validation = Validation::new(alg);
                validation.leeway = LEEWAY_S;
                validation.validate_exp = true;
                validation.validate_nbf = true;
                validation.validate_aud = true;
                validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
                validation.set_issuer(&[&config.issuer]);
                validation.set_audience(&audiences);
                (alg, validation)
            })
            .collect();
        Self {
            config,
            keys,
            validations,
            verified: Mutex::new(HashMap::new()),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// The issuer's keys.
    pub fn keys(&self) -> &KeySource {
        &self.keys
    }

    /// The principal `token` names, if it is valid.
    ///
    /// # Errors
    /// [`AuthError::Token`] when the token is refused (why, never the
    /// token); [`AuthError::Keys`] when the issuer's keys cannot be had.
    pub async fn authenticate(&self, token: &str) -> Result<Principal, AuthError> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(principal) = self.cached(&digest) {
            return Ok(principal);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidAlgorithmName => TokenError::Algorithm("(unknown)".into()),
            _ => TokenError::Malformed,
        })?;
        let Some((_, validation)) = self.validations.iter().find(|(alg, _)| *alg == header.alg) else {
            return Err(TokenError::Algorithm(format!("{:?}", header.alg)).into());
        };
        let key = self.keys.key_for(header.kid.as_deref(), header.alg).await?;
        let data = jsonwebtoken::decode::<Claims>(token, &key, validation).map_err(|e| token_error(&e))?;
        let claims = data.claims;
        if claims.sub.is_empty() {
            return Err(TokenError::MissingClaim("sub".into()).into());
        }
        let (scopes, exp) = (claims.scopes(), claims.exp);
        let mut principal = Principal::new(claims.iss, claims.sub, scopes);
        principal.client_id = claims.client_id.or(claims.azp);
        self.remember(digest, &principal, exp);
        Ok(principal)
    }

    /// A verified token's principal, if it is still within its time.
    fn cached(&self, digest: &[u8; 32]) -> Option<Principal> {
        let verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        verified
            .get(digest)
            .filter(|v| v.until > Instant::now())
            .map(|v| v.principal.clone())
    }

    /// Keeps a verified token's principal until its `exp` (plus the
    /// leeway its validation allowed), [`VERIFIED_TTL`] at most.
    fn remember(&self, digest: [u8; 32], principal: &Principal, exp: u64) {
        let now_s = jsonwebtoken::get_current_timestamp();
        let left = Duration::from_secs(exp.saturating_add(LEEWAY_S).saturating_sub(now_s)).min(VERIFIED_TTL);
        let now = Instant::now();
        let mut verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        if verified.len() >= VERIFIED_CAPACITY {
            verified.retain(|_, v| v.until > now);
            if verified.len() >= VERIFIED_CAPACITY {
                verified.clear();
            }
        }
        verified.insert(
            digest,
            Verified {
                principal: principal.clone(),
                until: now + left,
            },
        );
    }
}

/// The refusal a failed `decode` stands for.
fn token_error(e: &jsonwebtoken::errors::Error) -> TokenError {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::InvalidSignature => TokenError::Signature,
        K::ExpiredSignature => TokenError::Expired,
        K::ImmatureSignature => TokenError::NotYetValid,
        K::InvalidIssuer => TokenError::Issuer,
        K::InvalidAudience => TokenError::Audience,
        K::InvalidAlgorithm | K::InvalidAlgorithmName => TokenError::Algorithm("(not the key's)".into()),
        K::MissingRequiredClaim(claim) => TokenError::MissingClaim(claim.clone()),
        _ => TokenError::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_is_kept_exactly_as_configured() {
        for resource in [
            "https://chains.example.com",
            "https://chains.example.com/mcp/",
            "http://127.0.0.1:8931/mcp",
        ] {
            let config = AuthConfig::new("https://id.example/", resource, None).expect("a valid config");
            assert_eq!(config.resource_id(), resource);
            assert_eq!(config.issuer, "https://id.example/", "the issuer as given");
        }
    }

    #[test]
    fn plain_http_is_refused_off_loopback_naming_the_flag() {
        let e = AuthConfig::new("https://id.example", "http://chains.example.com/mcp", None).unwrap_err();
        assert!(e.to_string().starts_with("--auth-resource"), "{e}");
        let e = AuthConfig::new("http://id.example", "https://chains.example.com/mcp", None).unwrap_err();
        assert!(e.to_string().starts_with("--auth-issuer"), "{e}");
    }

    #[test]
    fn a_resource_with_a_query_or_fragment_is_refused() {
        for resource in [
            "https://chains.example.com/mcp?x=1",
            "https://chains.example.com/mcp#top",
        ] {
            assert!(
                AuthConfig::new("https://id.example", resource, None).is_err(),
                "{resource}"
            );
        }
    }

    #[test]
    fn scopes_are_read_from_scope_and_from_scp_in_either_shape() {
        let claims: Claims = serde_json::from_value(serde_json::json!({
            "iss": "i", "sub": "s", "exp": 1, "scope": "a b", "scp": ["c"]
        }))
        .expect("claims");
        assert_eq!(claims.scopes(), ["a", "b", "c"].map(String::from).into());
        let entra: Claims = serde_json::from_value(serde_json::json!({
            "iss": "i", "sub": "s", "exp": 1, "scp": "d e"
        }))
        .expect("claims");
        assert_eq!(entra.scopes(), ["d", "e"].map(String::from).into());
    }
}
