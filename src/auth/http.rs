//! The HTTP side of authentication: the axum middleware in front of the
//! MCP endpoint ([`require_token`]) and the Protected Resource Metadata
//! document (RFC 9728, [`metadata_routes`]).
//!
//! A request to the MCP endpoint passes only with a valid bearer token in
//! its `Authorization` header (never a query parameter) granting
//! [`RUN_SCOPE`]:
//! - no token, or one refused: HTTP 401 with `WWW-Authenticate: Bearer
//!   resource_metadata="…", scope="chainbox:run"` (and `error="invalid_token"`
//!   when a token was sent): the answer from which real MCP clients start
//!   their OAuth flow;
//! - a valid token without the scope: HTTP 403, `error="insufficient_scope"`;
//! - the issuer's keys unreachable: HTTP 503 (not the client's fault).
//!
//! A request that passes goes on with its [`Principal`] in its extensions
//! (rmcp hands the request's `http::request::Parts` to the handler) and
//! without its `Authorization` header, so the token reaches nothing
//! downstream. An MCP session (`Mcp-Session-Id`) belongs to the principal
//! that opened it: the same id under another principal's token is
//! answered as an unknown session (404), never served.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{AuthError, Authenticator, RUN_SCOPE, TokenError};
use crate::principal::Owner;

/// The header naming a streamable-HTTP MCP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// The well-known path of the Protected Resource Metadata (RFC 9728).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// How long a session's binding outlives its last request (a session the
/// client never `DELETE`s).
const SESSION_IDLE: Duration = Duration::from_secs(24 * 3600);

/// How many bindings are kept before the idle ones are dropped.
const SESSION_PRUNE_AT: usize = 10_000;

/// What the middleware needs: the authenticator, the challenge it sends,
/// and which principal opened each MCP session.
pub struct HttpAuth {
    auth: Arc<Authenticator>,
    /// `https://host/.well-known/oauth-protected-resource/mcp`, from the
    /// configured resource (never from a request's `Host`).
    metadata_url: String,
    sessions: Mutex<HashMap<String, Binding>>,
}

/// The principal an MCP session belongs to.
struct Binding {
    owner: Owner,
    last_used: Instant,
}

impl HttpAuth {
    /// The middleware's state for `auth`.
    pub fn new(auth: Arc<Authenticator>) -> Self {
        let metadata_url = metadata_url(&auth.config().resource);
        Self {
            auth,
            metadata_url,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// The Protected Resource Metadata document.
    pub fn metadata(&self) -> serde_json::Value {
        let config = self.auth.config();
        let mut scopes = vec![RUN_SCOPE.to_owned()];
        scopes.extend(config.extra_scopes.iter().filter(|s| *s != RUN_SCOPE).cloned());
        json!({
            "resource": config.resource_id(),
            "authorization_servers": [config.issuer],
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "chainbox",
        })
    }

    /// A 401 or 403 answer with its `WWW-Authenticate` challenge.
    fn challenge(&self, status: StatusCode, error: Option<(&str, String)>) -> Response {
        let mut value = String::from("Bearer ");
        let mut body = json!({});
        if let Some((code, description)) = &error {
            // RFC 6750's error_description allows no `"` or `\`.
            let description: String = description.chars().filter(|c| *c != '"' && *c != '\\').collect();
            value.push_str(&format!("error=\"{code}\", error_description=\"{description}\", "));
            body = json!({"error": code, "error_description": description});
        } else {
            body["error"] = json!("unauthorized");
            body["error_description"] = json!(TokenError::Missing.to_string());
        }
        value.push_str(&format!(
            "resource_metadata=\"{}\", scope=\"{RUN_SCOPE}\"",
            self.metadata_url
        ));
        let mut response = (status, axum::Json(body)).into_response();
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }

    /// Whether `owner` may use the MCP session `id` (a session nobody
    /// opened through this node is rmcp's to refuse).
    fn may_use_session(&self, id: &str, owner: &Owner) -> bool {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        match sessions.get_mut(id) {
            Some(binding) if &binding.owner == owner => {
                binding.last_used = Instant::now();
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    /// Binds the new session `id` to `owner`.
    fn bind_session(&self, id: String, owner: Owner) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if sessions.len() >= SESSION_PRUNE_AT {
            sessions.retain(|_, b| b.last_used.elapsed() < SESSION_IDLE);
        }
        sessions.insert(
            id,
            Binding {
                owner,
                last_used: Instant::now(),
            },
        );
    }

    fn unbind_session(&self, id: &str) {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
    }
}

/// The metadata document's URL for `resource`: its origin, the well-known
/// path, then the resource's own path (RFC 9728 section 3.1).
fn metadata_url(resource: &url::Url) -> String {
    let origin = resource.origin().ascii_serialization();
    let path = resource.path().trim_end_matches('/');
    format!("{origin}{METADATA_PATH}{path}")
}

/// The paths the metadata is served at: the root form, the form for
/// `endpoint` (where the MCP service is mounted), and the form for the configured
/// resource's path when a proxy mounts the endpoint elsewhere.
fn metadata_paths(auth: &HttpAuth, endpoint: &str) -> Vec<String> {
    let mut paths = vec![METADATA_PATH.to_owned(), format!("{METADATA_PATH}{endpoint}")];
    let own = format!(
        "{METADATA_PATH}{}",
        auth.auth.config().resource.path().trim_end_matches('/')
    );
    if !paths.contains(&own) {
        paths.push(own);
    }
    paths
}

/// The metadata routes (unauthenticated, readable from any origin), for
/// `endpoint` (where the MCP service is mounted).
pub fn metadata_routes(auth: Arc<HttpAuth>, endpoint: &str) -> axum::Router {
    let mut router = axum::Router::new();
    for path in metadata_paths(&auth, endpoint) {
        router = router.route(
            &path,
            axum::routing::get(metadata_document)
                .options(preflight)
                .with_state(Arc::clone(&auth)),
        );
    }
    router
}

async fn metadata_document(State(auth): State<Arc<HttpAuth>>) -> Response {
    let mut response = axum::Json(auth.metadata()).into_response();
    allow_any_origin(response.headers_mut());
    response
}

async fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    allow_any_origin(response.headers_mut());
    response
}

fn allow_any_origin(headers: &mut HeaderMap) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, OPTIONS"),
    );
    headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("*"));
}

/// The bearer token of `headers`: the one `Authorization: Bearer` header.
/// `Err(())` when the header is there but is not one bearer token.
fn bearer(headers: &HeaderMap) -> Result<Option<&str>, ()> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(());
    }
    let text = value.to_str().map_err(|_| ())?;
    let (scheme, token) = text.split_once(' ').ok_or(())?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(());
    }
    Ok(Some(token))
}

/// The middleware in front of the MCP endpoint (see the module docs).
pub async fn require_token(State(auth): State<Arc<HttpAuth>>, mut request: Request, next: Next) -> Response {
    // A CORS preflight carries no credentials by design; rmcp answers it
    // (or refuses its origin) without running anything.
    if request.method() == Method::OPTIONS {
        return next.run(request).await;
    }
    let token = match bearer(request.headers()) {
        Ok(Some(token)) => token,
        Ok(None) => return auth.challenge(StatusCode::UNAUTHORIZED, None),
        Err(()) => {
            return auth.challenge(
                StatusCode::UNAUTHORIZED,
                Some(("invalid_request", "one `Authorization: Bearer <token>` header".into())),
            );
        }
    };
    let principal = match auth.auth.authenticate(token).await {
        Ok(principal) => principal,
        Err(AuthError::Token(why)) => {
            tracing::info!(reason = %why, "refused a request's bearer token");
            return auth.challenge(StatusCode::UNAUTHORIZED, Some(("invalid_token", why.to_string())));
        }
        Err(AuthError::Keys(why)) => {
            tracing::warn!("cannot check bearer tokens: {why}");
            let body = json!({"error": "temporarily_unavailable",
                "error_description": "the authorization server's keys cannot be fetched now; retry later"});
            return (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
        }
    };
    if !principal.has_scope(RUN_SCOPE) {
        return auth.challenge(
            StatusCode::FORBIDDEN,
            Some((
                "insufficient_scope",
                format!("the token does not grant the `{RUN_SCOPE}` scope"),
            )),
        );
    }
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session
        && !auth.may_use_session(id, &principal.owner)
    {
        tracing::warn!(subject = %principal.owner.subject, "refused another principal's MCP session");
        let body = json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32600, "message": "Session not found"}});
        return (StatusCode::NOT_FOUND, axum::Json(body)).into_response();
    }
    let owner = principal.owner.clone();
    let deleting = request.method() == Method::DELETE;
    // No token passthrough: nothing past this point sees it.
    request.headers_mut().remove(header::AUTHORIZATION);
    request.extensions_mut().insert(principal);
    let response = next.run(request).await;
    match (&session, response.headers().get(SESSION_HEADER)) {
        (None, Some(new)) => {
            if let Ok(id) = new.to_str() {
                auth.bind_session(id.to_owned(), owner);
            }
        }
        (Some(id), _) if deleting && response.status().is_success() => auth.unbind_session(id),
        _ => {}
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_puts_the_resources_path_after_the_well_known_part() {
        let resource = url::Url::parse("https://chains.example.com/mcp").unwrap();
        assert_eq!(
            metadata_url(&resource),
            "https://chains.example.com/.well-known/oauth-protected-resource/mcp"
        );
        let bare = url::Url::parse("https://chains.example.com").unwrap();
        assert_eq!(
            metadata_url(&bare),
            "https://chains.example.com/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn the_metadata_is_also_served_at_the_path_a_proxy_mounts_the_resource_on() {
        let config = super::super::AuthConfig::new("https://id.example", "https://chains.example.com/team/mcp", None)
            .expect("config");
        let auth = HttpAuth::new(Arc::new(Authenticator::new(config)));
        assert_eq!(
            metadata_paths(&auth, "/mcp"),
            [
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource/team/mcp"
            ]
        );
        assert_eq!(
            auth.metadata_url,
            "https://chains.example.com/.well-known/oauth-protected-resource/team/mcp"
        );
    }

    #[test]
    fn only_one_bearer_header_is_a_token() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), Ok(None));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic YWxpY2U6eA=="));
        assert_eq!(bearer(&headers), Err(()));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer abc.def.ghi"));
        assert_eq!(bearer(&headers), Ok(Some("abc.def.ghi")));
        headers.append(header::AUTHORIZATION, HeaderValue::from_static("Bearer other"));
        assert_eq!(bearer(&headers), Err(()));
    }
}
