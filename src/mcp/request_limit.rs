//! The request-size limit of `chainbox serve` (the policy's
//! `max_request_bytes`, `--max-request-bytes`), on both transports, and the
//! JSON-RPC errors for requests it cannot read.
//!
//! rmcp's own limits fail silently or in a shape clients do not expect:
//! over stdio it drops a line over 16 MiB without an answer (the client
//! waits forever); over HTTP it answers a body over 4 MiB with `413` and
//! text, and malformed JSON with `415` and text, which MCP clients take for
//! a transport failure. So:
//! - **stdio** ([`bounded_lines`]): lines pass through a filter before rmcp
//!   reads them. A line over the limit is never buffered: its bytes are
//!   counted and scanned for the request's top-level `id` as they stream
//!   by, and it reaches rmcp as a small [`TOO_LARGE_METHOD`] request with
//!   that id, which the server answers ([`too_large_error`]) with a
//!   JSON-RPC error naming the limit. A line without an `id` is a
//!   notification (or not JSON-RPC at all): nothing may answer it, and it
//!   is dropped with a warning.
//! - **HTTP** ([`check_http_request`], an axum middleware in front of rmcp's
//!   service): a POST body over the limit gets the same JSON-RPC error
//!   (status 200 with the request's id, so a client sees an error for its
//!   call; 413 when no id could be read), and a body rmcp could not parse
//!   gets `400` with a JSON-RPC parse error (`-32700`, not JSON) or
//!   invalid request (`-32600`, JSON but no JSON-RPC message).
//!
//! Invariant: an oversized request is never held in memory whole; reading it
//! costs the limit plus a bounded id capture.

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;
use rmcp::model::{ErrorCode, ErrorData, RequestId};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader, DuplexStream};

/// The method of the request that stands in for an oversized stdio line;
/// the server answers it with [`too_large_error`].
pub const TOO_LARGE_METHOD: &str = "chainbox/request_too_large";

/// Longest top-level `id` value kept while scanning an oversized request:
/// ids are short numbers or strings; a longer one is not read.
const MAX_ID_BYTES: usize = 1024;

/// Room between the filter and rmcp's reader; a full pipe holds the filter
/// back, not memory.
const PIPE_BYTES: usize = 64 * 1024;

/// The JSON-RPC error for a request of `bytes` bytes over `limit`.
pub fn too_large_error(bytes: u64, limit: u64) -> ErrorData {
    ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "the request is {bytes} bytes, over chainbox serve's limit of {limit} bytes \
             (max_request_bytes in the policy, or --max-request-bytes)"
        ),
        Some(json!({"bytes": bytes, "max_request_bytes": limit})),
    )
}

/// The size a [`TOO_LARGE_METHOD`] request reports, read back by the
/// server; zero when it has none (a client sending the method itself).
pub fn too_large_bytes(params: Option<&Value>) -> u64 {
    params.and_then(|p| p.get("bytes")).and_then(Value::as_u64).unwrap_or(0)
}

/// `input` with every line over `limit` bytes replaced by a
/// [`TOO_LARGE_METHOD`] request carrying its id (or dropped when it has
/// none), read from the returned stream. A task copies the lines; it ends at
/// the end of `input`, or when the reader is dropped.
pub fn bounded_lines(input: impl AsyncRead + Unpin + Send + 'static, limit: usize) -> DuplexStream {
    let (mut output, reader) = tokio::io::duplex(PIPE_BYTES);
    tokio::spawn(async move {
        let mut input = BufReader::with_capacity(PIPE_BYTES, input);
        let mut line: Vec<u8> = Vec::new();
        // Set once the line is over the limit: its length so far and its id.
        let mut oversized: Option<(u64, IdScanner)> = None;
        loop {
            let available = match input.fill_buf().await {
                Ok(available) => available,
                Err(e) => {
                    tracing::warn!("reading stdin: {e}");
                    break;
                }
            };
            if available.is_empty() {
                // The end: a last line without its newline passes as it is.
                if oversized.is_none() && !line.is_empty() {
                    let _ = output.write_all(&line).await;
                }
                break;
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk = &available[..take];
            let content = line.len() + take - usize::from(newline.is_some());
            match &mut oversized {
                Some((bytes, scanner)) => {
                    *bytes += chunk.len() as u64;
                    scanner.feed(chunk);
                }
                None if content > limit => {
                    let mut scanner = IdScanner::default();
                    scanner.feed(&line);
                    scanner.feed(chunk);
                    oversized = Some(((line.len() + take) as u64, scanner));
                    line = Vec::new();
                }
                None => line.extend_from_slice(chunk),
            }
            input.consume(take);
            if newline.is_none() {
                continue;
            }
            let written = match oversized.take() {
                None => {
                    let written = output.write_all(&line).await;
                    line.clear();
                    written
                }
                Some((bytes, scanner)) => {
                    // The length of the message, without its newline.
                    let bytes = bytes.saturating_sub(1);
                    match scanner.id() {
                        Some(id) => output.write_all(&stand_in(&id, bytes)).await,
                        None => {
                            tracing::warn!(
                                "dropped a {bytes}-byte message without an id (a notification?), over \
                                 max_request_bytes = {limit}"
                            );
                            Ok(())
                        }
                    }
                }
            };
            if written.is_err() {
                // rmcp stopped reading: the session is over.
                break;
            }
        }
    });
    reader
}

/// The line standing in for an oversized request with `id`: a
/// [`TOO_LARGE_METHOD`] request the server answers with the error. Its
/// `_meta` carries what protocol 2026-07-28 requires of every request, so
/// rmcp reaches the handler on any session.
fn stand_in(id: &RequestId, bytes: u64) -> Vec<u8> {
    let request = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": TOO_LARGE_METHOD,
        "params": {
            "bytes": bytes,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    });
    let mut line = request.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// Finds the top-level `"id"` member of a JSON object fed to it in pieces,
/// without keeping the text: a byte-level walk tracking strings, escapes and
/// nesting depth, which captures the raw value of the first `id` key at
/// depth 1 (at most [`MAX_ID_BYTES`]) and parses it once it ends.
#[derive(Debug, Default)]
struct IdScanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
    member: Member,
    /// The raw `id` value while it is read.
    value: Option<Vec<u8>>,
    /// The first top-level `id`, once read (or given up on).
    done: Option<Option<RequestId>>,
}

/// Where the walk is inside a member of the top-level object.
#[derive(Debug, Default, PartialEq)]
enum Member {
    /// Before a key (after `{` or `,`).
    #[default]
    BeforeKey,
    /// Inside a key string: its first bytes (enough to tell `id`).
    Key(Vec<u8>),
    /// After a key, before its `:`; whether the key was `id`.
    AfterKey(bool),
    /// Inside a value.
    Value,
}

impl IdScanner {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.done.is_some() {
                return;
            }
            self.step(b);
        }
    }

    fn step(&mut self, b: u8) {
        let top = self.depth == 1;
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if let (true, Member::Key(key)) = (top, &self.member) {
                    self.member = Member::AfterKey(key == b"id");
                    return;
                }
            } else if let (true, Member::Key(key)) = (top, &mut self.member) {
                if key.len() < 3 {
                    key.push(b);
                }
                return;
            }
            self.capture(b);
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if top && self.member == Member::BeforeKey {
                    self.member = Member::Key(Vec::new());
                    return;
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.member = Member::BeforeKey;
                    return;
                }
            }
            b'}' | b']' if top => {
                self.end_value();
                self.depth = 0;
                self.done.get_or_insert(None);
                return;
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' if top => {
                self.end_value();
                self.member = Member::BeforeKey;
                return;
            }
            b':' if top => {
                if let Member::AfterKey(is_id) = self.member {
                    self.member = Member::Value;
                    if is_id {
                        self.value = Some(Vec::new());
                    }
                }
                return;
            }
            _ => {}
        }
        self.capture(b);
    }

    /// Keeps `b` as part of the `id` value being read, if one is.
    fn capture(&mut self, b: u8) {
        if let Some(value) = &mut self.value {
            if value.len() < MAX_ID_BYTES {
                value.push(b);
            } else {
                self.value = None;
                self.done = Some(None);
            }
        }
    }

    /// The `id` value being read, if any, has ended.
    fn end_value(&mut self) {
        if let Some(raw) = self.value.take() {
            self.done = Some(serde_json::from_slice::<RequestId>(raw.trim_ascii()).ok());
        }
    }

    /// The request's id, if the text had a readable top-level one.
    fn id(&self) -> Option<RequestId> {
        self.done.clone().flatten()
    }
}

/// The id of a whole request body, read the same way.
fn id_of(body: &[u8]) -> Option<RequestId> {
    let mut scanner = IdScanner::default();
    scanner.feed(body);
    scanner.id()
}

/// The HTTP side: a POST body over `limit` bytes is answered with
/// [`too_large_error`] before rmcp sees it; a body rmcp refused as not JSON
/// (its `415`) gets `400` with a JSON-RPC parse error or invalid request.
/// Everything else passes through untouched.
pub async fn check_http_request(State(limit): State<u64>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let mut stream = body.into_data_stream();
    let mut kept: Vec<u8> = Vec::new();
    let mut total: u64 = 0;
    let mut oversized: Option<IdScanner> = None;
    while let Some(chunk) = stream.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => {
                let error = ErrorData::invalid_request(format!("reading the request body: {e}"), None);
                return jsonrpc_error(StatusCode::BAD_REQUEST, None, error);
            }
        };
        total += chunk.len() as u64;
        match &mut oversized {
            Some(scanner) => scanner.feed(&chunk),
            None if total > limit => {
                let mut scanner = IdScanner::default();
                scanner.feed(&kept);
                scanner.feed(&chunk);
                oversized = Some(scanner);
                kept = Vec::new();
            }
            None => kept.extend_from_slice(&chunk),
        }
    }
    if let Some(scanner) = oversized {
        let id = scanner.id();
        // With its id the error answers the call (200, as any JSON-RPC
        // error of a request); without one it answers the POST.
        let status = match id {
            Some(_) => StatusCode::OK,
            None => StatusCode::PAYLOAD_TOO_LARGE,
        };
        return jsonrpc_error(status, id, too_large_error(total, limit));
    }
    let body = Bytes::from(kept);
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .eq_ignore_ascii_case("application/json")
        });
    let response = next.run(Request::from_parts(parts, Body::from(body.clone()))).await;
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE || !is_json {
        return response;
    }
    // rmcp's 415 for a JSON content type: the body is no JSON-RPC message.
    match serde_json::from_slice::<serde::de::IgnoredAny>(&body) {
        Err(e) => jsonrpc_error(
            StatusCode::BAD_REQUEST,
            None,
            ErrorData::new(ErrorCode::PARSE_ERROR, format!("the request is not JSON: {e}"), None),
        ),
        Ok(_) => jsonrpc_error(
            StatusCode::BAD_REQUEST,
            id_of(&body),
            ErrorData::invalid_request("the request is JSON but not a JSON-RPC message", None),
        ),
    }
}

/// A JSON-RPC error response with `status`.
fn jsonrpc_error(status: StatusCode, id: Option<RequestId>, error: ErrorData) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(pieces: &[&str]) -> Option<RequestId> {
        let mut scanner = IdScanner::default();
        for piece in pieces {
            scanner.feed(piece.as_bytes());
        }
        scanner.id()
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is() {
        assert_eq!(
            scan(&[r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#]),
            Some(RequestId::Number(7))
        );
        assert_eq!(
            scan(&[r#"{"method":"x","params":{"id":1,"s":"\"id\":2"},"id":"abc"}"#]),
            Some(RequestId::String("abc".into()))
        );
        assert_eq!(scan(&[r#"{ "id" : 42 }"#]), Some(RequestId::Number(42)));
    }

    #[test]
    fn an_id_split_across_pieces_is_found() {
        assert_eq!(
            scan(&[r#"{"i"#, r#"d":1"#, r#"23,"x":1}"#]),
            Some(RequestId::Number(123))
        );
    }

    #[test]
    fn nested_ids_and_ids_in_strings_are_not_the_request_id() {
        assert_eq!(scan(&[r#"{"params":{"id":1},"method":"notifications/x"}"#]), None);
        assert_eq!(scan(&[r#"{"method":"\"id\":5"}"#]), None);
        assert_eq!(scan(&[r#"{"idx":5}"#]), None);
    }

    #[test]
    fn no_id_is_read_from_a_value_that_is_no_id() {
        assert_eq!(scan(&[r#"{"id":{"a":1}}"#]), None);
        assert_eq!(scan(&[r#"{"id":null}"#]), None);
        assert_eq!(scan(&["not json"]), None);
    }

    #[test]
    fn the_stand_in_names_the_method_and_the_sizes() {
        let line = stand_in(&RequestId::Number(3), 20);
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["method"], TOO_LARGE_METHOD);
        assert_eq!(v["id"], 3);
        assert_eq!(too_large_bytes(Some(&v["params"])), 20);
    }
}
