//! The line transport between rmcp's client and an upstream server's stdio.
//!
//! MCP over stdio is one JSON-RPC message per line. rmcp's own transport
//! logs and drops a line it cannot take (too long, not JSON, not UTF-8, not
//! JSON-RPC, an answer to an id it never sent), so the call waiting for
//! that answer waited out its whole timeout. This one implements rmcp's
//! [`Transport`] with the same framing, and turns every such line into a
//! JSON-RPC error for the request(s) it concerns, delivered to rmcp at
//! once, with a message that says what came:
//!
//! - a line that is a response to a request in flight, but not one rmcp can
//!   read (no `result` or `error`, not UTF-8, a `tools/call` answered with
//!   something that is no tool result), fails that request only;
//! - a line whose request cannot be told (over [`MAX_MESSAGE_BYTES`], not
//!   JSON, nested deeper than serde_json reads, an answer to an id never
//!   sent) fails every request in flight: the answer one of them waits for
//!   is lost, and which one cannot be known. With nothing in flight it is
//!   logged and ignored.
//!
//! Either way the connection stays up: the server may answer its next call
//! well (a server that no longer answers at all is the invoker's timeout,
//! then [`super::PING_TIMEOUT`]). A late answer to a request already failed
//! or cancelled is dropped silently, as rmcp would.
//!
//! Invariants:
//! - At most [`MAX_MESSAGE_BYTES`] of one line are held; the rest of a longer
//!   line is read and discarded.
//! - `receive` is cancel-safe (rmcp polls it in a `select!`): a partly read
//!   line stays in `line`, and everything after a whole line is read runs
//!   without awaiting.
//! - Parsing is bounded: serde_json stops at 128 levels of nesting, so a line
//!   nested 100,000 deep is an error, not a stack overflow.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, ClientJsonRpcMessage, ClientNotification, ErrorCode, ErrorData, JsonRpcError, JsonRpcMessage,
    JsonRpcVersion2_0, NumberOrString, RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::Transport;
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest line (one message) taken from a server: rmcp's own cap,
/// 16 MiB. A longer one fails the calls in flight and is skipped.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// How many ids of failed or cancelled requests are remembered, so that
/// their late answers are dropped quietly instead of taken for answers to
/// ids never sent.
const FORGOTTEN_IDS: usize = 4096;

/// How much of a bad line an error message quotes.
const EXCERPT_CHARS: usize = 120;

/// The key in an error's `data` that marks it as made by this transport
/// (the server sent no such error; see [`is_transport_fault`]).
const FAULT_MARKER: &str = "chainbox_upstream_fault";

/// Whether `error` was made by this transport for a line the server sent,
/// rather than sent by the server: its message then says what the server
/// did (`sent a line that is not JSON: …`), without the server's name.
pub(super) fn is_transport_fault(error: &ErrorData) -> bool {
    error.data.as_ref().is_some_and(|data| data.get(FAULT_MARKER).is_some())
}

/// rmcp's client over one server's stdout and stdin (see the module docs).
pub(super) struct LineTransport<R, W> {
    stdout: BufReader<R>,
    stdin: Arc<tokio::sync::Mutex<Option<W>>>,
    /// The line being read; whole once `read_line` says so.
    line: Vec<u8>,
    /// Skipping the rest of a line over the cap.
    discarding: bool,
    /// The requests sent and not yet answered, with their methods.
    pending: HashMap<RequestId, String>,
    /// Requests cancelled or failed here: their late answers are dropped.
    forgotten: HashSet<RequestId>,
    forgotten_order: VecDeque<RequestId>,
    /// Messages made here, delivered before the next line is read.
    ready: VecDeque<ServerJsonRpcMessage>,
}

enum LineRead {
    Line,
    Oversized,
    Eof,
    Io(std::io::Error),
}

/// What a response's id stands for.
enum Settled {
    /// A request in flight, now answered: its method.
    Pending(String),
    /// A request cancelled or failed before: a late answer.
    Forgotten,
    /// No request ever sent.
    Unknown,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub(super) fn new(stdout: R, stdin: W) -> Self {
        LineTransport {
            stdout: BufReader::new(stdout),
            stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            line: Vec::new(),
            discarding: false,
            pending: HashMap::new(),
            forgotten: HashSet::new(),
            forgotten_order: VecDeque::new(),
            ready: VecDeque::new(),
        }
    }

    /// Reads until a whole line is in `self.line`, keeping at most
    /// [`MAX_MESSAGE_BYTES`]. Cancel-safe: `fill_buf` is, and what was read
    /// is consumed only once stored.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let available = match self.stdout.fill_buf().await {
                Ok(available) => available,
                Err(e) => return LineRead::Io(e),
            };
            if available.is_empty() {
                return LineRead::Eof;
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let outcome = if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
                None
            } else if self.line.len().saturating_add(take) > MAX_MESSAGE_BYTES {
                self.line.clear();
                self.discarding = newline.is_none();
                Some(LineRead::Oversized)
            } else {
                self.line.extend_from_slice(&available[..take]);
                newline.map(|_| LineRead::Line)
            };
            self.stdout.consume(take);
            if let Some(outcome) = outcome {
                return outcome;
            }
        }
    }

    /// Takes one whole line: queues what rmcp gets for it, if anything.
    fn take_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
        if !body.iter().all(u8::is_ascii_whitespace) {
            match std::str::from_utf8(body) {
                Ok(text) => match serde_json::from_str::<ServerJsonRpcMessage>(text) {
                    Ok(message) => self.accept(message),
                    Err(e) => self.reject(text, &e),
                },
                Err(e) => self.not_utf8(body, e.valid_up_to()),
            }
        }
        self.line = line;
        self.line.clear();
    }

    /// A message rmcp can read.
    fn accept(&mut self, message: ServerJsonRpcMessage) {
        match message {
            JsonRpcMessage::Response(response) => match self.settle(&response.id) {
                Settled::Pending(method) => match check_result(&method, &response.result) {
                    Ok(()) => self.ready.push_back(JsonRpcMessage::Response(response)),
                    Err(why) => self.fail(response.id, why),
                },
                Settled::Forgotten => {}
                Settled::Unknown => self.fault(format!(
                    "answered request id {}, which it was never sent{}",
                    response.id,
                    self.waiting()
                )),
            },
            JsonRpcMessage::Error(error) => match &error.id {
                Some(id) => match self.settle(id) {
                    Settled::Pending(_) => self.ready.push_back(JsonRpcMessage::Error(error)),
                    Settled::Forgotten => {}
                    Settled::Unknown => self.fault(format!(
                        "sent an error for request id {id}, which it was never sent ({}){}",
                        error.error.message,
                        self.waiting()
                    )),
                },
                // The server could not read one of the requests, so it
                // will never answer it; which one, it does not say.
                None => self.fault(format!("could not read a request: {}", error.error.message)),
            },
            other => self.ready.push_back(other),
        }
    }

    /// A line serde_json or rmcp's message types would not take.
    fn reject(&mut self, text: &str, error: &serde_json::Error) {
        if error.to_string().starts_with("recursion limit exceeded") {
            return self.fault(format!(
                "sent a message nested more than 128 levels deep, which is not read: `{}`",
                excerpt(text)
            ));
        }
        if !error.is_data() {
            return self.fault(format!("sent a line that is not JSON ({error}): `{}`", excerpt(text)));
        }
        // Well-formed JSON, not a message rmcp reads: a response to a
        // request in flight fails that request.
        let Ok(Value::Object(object)) = serde_json::from_str::<Value>(text) else {
            return self.fault(format!(
                "sent a message that is not JSON-RPC ({error}): `{}`",
                excerpt(text)
            ));
        };
        if object.contains_key("method") {
            // A request or notification of the server's that rmcp cannot
            // read; rmcp ignores those too.
            tracing::debug!(%error, "mcp server sent a request or notification that is not read");
            return;
        }
        let Some(id) = response_id(&object) else {
            return self.fault(format!(
                "sent a message that is not JSON-RPC ({error}): `{}`",
                excerpt(text)
            ));
        };
        match self.settle(&id) {
            Settled::Pending(method) => {
                let why = match (object.get("result"), object.get("error")) {
                    (None, None) => format!("answered {method} with neither a `result` nor an `error`"),
                    (Some(_), Some(_)) => format!("answered {method} with both a `result` and an `error`"),
                    (None, Some(_)) => format!(
                        "answered {method} with an `error` that is not a JSON-RPC error ({error}): `{}`",
                        excerpt(text)
                    ),
                    (Some(_), None) => format!(
                        "answered {method} with a result that cannot be read ({error}): `{}`",
                        excerpt(text)
                    ),
                };
                self.fail(id, why);
            }
            Settled::Forgotten => {}
            Settled::Unknown => self.fault(format!(
                "answered request id {id}, which it was never sent{}",
                self.waiting()
            )),
        }
    }

    /// A line that is not UTF-8: the request it answers fails, if its id
    /// can be read, else every request in flight.
    fn not_utf8(&mut self, body: &[u8], valid_up_to: usize) {
        let what = format!("a message that is not UTF-8 (byte {} of the line)", valid_up_to + 1);
        let lossy = String::from_utf8_lossy(body);
        let object = match serde_json::from_str::<Value>(&lossy) {
            Ok(Value::Object(object)) if !object.contains_key("method") => object,
            _ => return self.fault(format!("sent {what}")),
        };
        let Some(id) = response_id(&object) else {
            return self.fault(format!("sent {what}"));
        };
        match self.settle(&id) {
            Settled::Pending(method) => self.fail(id, format!("answered {method} with {what}")),
            Settled::Forgotten => {}
            Settled::Unknown => self.fault(format!("sent {what}, for request id {id}, which it was never sent")),
        }
    }

    /// Takes `id` out of the requests in flight.
    fn settle(&mut self, id: &RequestId) -> Settled {
        let id = normalized(id);
        if let Some(method) = self.pending.remove(&id) {
            Settled::Pending(method)
        } else if self.forgotten.remove(&id) {
            Settled::Forgotten
        } else {
            Settled::Unknown
        }
    }

    /// Remembers that an answer to `id` is no longer awaited.
    fn forget(&mut self, id: RequestId) {
        if self.forgotten.insert(id.clone()) {
            self.forgotten_order.push_back(id);
        }
        while self.forgotten_order.len() > FORGOTTEN_IDS {
            if let Some(old) = self.forgotten_order.pop_front() {
                self.forgotten.remove(&old);
            }
        }
    }

    /// Fails request `id` (already settled) with `why`; a real answer
    /// that still comes for it is then a late one.
    fn fail(&mut self, id: RequestId, why: String) {
        self.forget(normalized(&id));
        self.ready.push_back(fault_error(id, why));
    }

    /// Fails every request in flight with `why`: the line cannot be tied
    /// to one of them (see the module docs).
    fn fault(&mut self, why: String) {
        if self.pending.is_empty() {
            tracing::warn!("mcp server {why}; no call was waiting for an answer, so it is ignored");
            return;
        }
        let ids: Vec<RequestId> = self.pending.drain().map(|(id, _)| id).collect();
        for id in ids {
            self.fail(id, why.clone());
        }
    }

    /// `" (waiting for tools/call #3)"`: what was in flight, for messages.
    fn waiting(&self) -> String {
        if self.pending.is_empty() {
            return String::new();
        }
        let mut waiting: Vec<String> = self
            .pending
            .iter()
            .map(|(id, method)| format!("{method} #{id}"))
            .collect();
        waiting.sort();
        format!(" (waiting for {})", waiting.join(", "))
    }
}

impl<R, W> Transport<RoleClient> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Noted before the write starts, so the answer always finds it.
        match &item {
            JsonRpcMessage::Request(request) => {
                self.pending
                    .insert(normalized(&request.id), request.request.method().to_owned());
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    let id = normalized(id);
                    if self.pending.remove(&id).is_some() {
                        self.forget(id);
                    }
                }
            }
            _ => {}
        }
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        let stdin = Arc::clone(&self.stdin);
        async move {
            let line = line.map_err(std::io::Error::other)?;
            let mut stdin = stdin.lock().await;
            let Some(stdin) = stdin.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the server's stdin is closed",
                ));
            };
            stdin.write_all(&line).await?;
            stdin.flush().await
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            if let Some(message) = self.ready.pop_front() {
                return Some(message);
            }
            match self.read_line().await {
                LineRead::Line => self.take_line(),
                LineRead::Oversized => self.fault(format!(
                    "sent a message over the {} MiB cap (no line end in its first {MAX_MESSAGE_BYTES} bytes); \
                     the rest of it is skipped",
                    MAX_MESSAGE_BYTES / (1024 * 1024)
                )),
                LineRead::Eof => return None,
                LineRead::Io(e) => {
                    tracing::warn!(error = %e, "reading an mcp server's stdout failed");
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Closing stdin is how an MCP stdio server is told to exit.
        drop(self.stdin.lock().await.take());
        Ok(())
    }
}

/// A request id as rmcp matches it: a numeric string is that number.
fn normalized(id: &RequestId) -> RequestId {
    match id {
        NumberOrString::String(text) => text.parse::<i64>().map_or_else(|_| id.clone(), NumberOrString::Number),
        NumberOrString::Number(_) => id.clone(),
    }
}

/// The id of a JSON object that is meant as a response.
fn response_id(object: &Map<String, Value>) -> Option<RequestId> {
    match object.get("id")? {
        Value::Number(n) => n.as_i64().map(NumberOrString::Number),
        Value::String(s) => Some(NumberOrString::String(s.as_str().into())),
        _ => None,
    }
}

/// A JSON-RPC error for request `id`, marked as this transport's.
fn fault_error(id: RequestId, why: String) -> ServerJsonRpcMessage {
    JsonRpcMessage::Error(JsonRpcError {
        jsonrpc: JsonRpcVersion2_0,
        id: Some(id),
        error: ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            why,
            Some(Value::Object(Map::from_iter([(
                FAULT_MARKER.to_owned(),
                Value::Bool(true),
            )]))),
        ),
    })
}

/// Whether `result` is an answer rmcp's `call_tool` takes for `method`;
/// else what came instead. rmcp would say only "Unexpected response type".
fn check_result(method: &str, result: &ServerResult) -> Result<(), String> {
    if method != "tools/call" {
        return Ok(());
    }
    match result {
        ServerResult::CallToolResult(_) | ServerResult::EmptyResult(_) => Ok(()),
        // Only `_meta`: rmcp takes it as a tool result without content.
        ServerResult::CustomResult(custom) if custom.0.as_object().is_some_and(|o| o.keys().all(|k| k == "_meta")) => {
            Ok(())
        }
        other => {
            let came = serde_json::to_value(other).unwrap_or(Value::Null);
            let why = match serde_json::from_value::<CallToolResult>(came.clone()) {
                Err(e) => e.to_string(),
                Ok(_) => "it is another kind of result".to_owned(),
            };
            Err(format!(
                "answered tools/call with a result that is not a tool result ({why}): `{}`",
                excerpt(&came.to_string())
            ))
        }
    }
}

/// The start of `text`, for an error message.
fn excerpt(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(EXCERPT_CHARS).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CancelledNotification, CancelledNotificationParam, ClientRequest, PingRequest};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, DuplexStream};

    use super::*;

    /// A transport whose server side is the returned streams: what it
    /// writes to the transport's stdout, and the transport's stdin lines.
    fn transport() -> (
        LineTransport<DuplexStream, DuplexStream>,
        DuplexStream,
        tokio::io::Lines<BufReader<DuplexStream>>,
    ) {
        let (stdout, server_out) = tokio::io::duplex(1 << 16);
        let (stdin, server_in) = tokio::io::duplex(1 << 16);
        (
            LineTransport::new(stdout, stdin),
            server_out,
            BufReader::new(server_in).lines(),
        )
    }

    fn ping(id: i64) -> ClientJsonRpcMessage {
        JsonRpcMessage::request(
            ClientRequest::PingRequest(PingRequest {
                method: Default::default(),
                extensions: Default::default(),
            }),
            NumberOrString::Number(id),
        )
    }

    fn cancel(id: i64) -> ClientJsonRpcMessage {
        JsonRpcMessage::notification(ClientNotification::CancelledNotification(CancelledNotification::new(
            CancelledNotificationParam::new(Some(NumberOrString::Number(id)), None),
        )))
    }

    async fn write(server: &mut DuplexStream, line: &str) {
        server.write_all(format!("{line}\n").as_bytes()).await.expect("write");
    }

    /// The next message, as JSON.
    async fn next(transport: &mut LineTransport<DuplexStream, DuplexStream>) -> Value {
        let message = transport.receive().await.expect("a message");
        serde_json::to_value(message).expect("serializes")
    }

    #[tokio::test]
    async fn requests_are_written_one_per_line() {
        let (mut transport, _server, mut lines) = transport();
        transport.send(ping(7)).await.expect("send");
        let line = lines.next_line().await.expect("read").expect("a line");
        let sent: Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(sent["id"], 7);
        assert_eq!(sent["method"], "ping");
    }

    #[tokio::test]
    async fn a_late_answer_to_a_cancelled_request_is_dropped_quietly() {
        let (mut transport, mut server, _lines) = transport();
        transport.send(ping(1)).await.expect("send");
        transport.send(cancel(1)).await.expect("send");
        transport.send(ping(2)).await.expect("send");
        write(&mut server, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).await;
        write(&mut server, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#).await;
        let got = next(&mut transport).await;
        assert_eq!(got["id"], 2, "{got}");
        assert!(got.get("result").is_some(), "request 2 is answered, not failed: {got}");
    }

    #[tokio::test]
    async fn a_bad_line_with_nothing_in_flight_is_ignored() {
        let (mut transport, mut server, _lines) = transport();
        write(&mut server, "starting up").await;
        write(
            &mut server,
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        )
        .await;
        let got = next(&mut transport).await;
        assert_eq!(got["method"], "notifications/tools/list_changed", "{got}");
    }

    #[tokio::test]
    async fn a_line_that_cannot_be_tied_to_a_request_fails_every_request_in_flight() {
        let (mut transport, mut server, _lines) = transport();
        transport.send(ping(1)).await.expect("send");
        transport.send(ping(2)).await.expect("send");
        write(&mut server, "{oops").await;
        let mut failed = Vec::new();
        for _ in 0..2 {
            let got = next(&mut transport).await;
            assert!(
                got["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("sent a line that is not JSON")),
                "{got}"
            );
            failed.push(got["id"].as_i64());
        }
        failed.sort();
        assert_eq!(failed, vec![Some(1), Some(2)]);
        // Their real answers, should they still come, are late ones.
        write(&mut server, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).await;
        write(
            &mut server,
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        )
        .await;
        let got = next(&mut transport).await;
        assert_eq!(got["method"], "notifications/tools/list_changed", "{got}");
    }

    #[tokio::test]
    async fn a_response_without_a_result_fails_its_request_only_and_a_second_answer_is_late() {
        let (mut transport, mut server, _lines) = transport();
        transport.send(ping(1)).await.expect("send");
        transport.send(ping(2)).await.expect("send");
        write(&mut server, r#"{"jsonrpc":"2.0","id":1}"#).await;
        let got = next(&mut transport).await;
        assert_eq!(got["id"], 1, "{got}");
        assert_eq!(
            got["error"]["message"],
            "answered ping with neither a `result` nor an `error`"
        );
        write(&mut server, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).await;
        write(&mut server, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#).await;
        let got = next(&mut transport).await;
        assert_eq!(got["id"], 2, "{got}");
        assert!(got.get("result").is_some(), "request 2 is still answered: {got}");
    }

    #[tokio::test]
    async fn a_numeric_string_id_answers_its_number() {
        let (mut transport, mut server, _lines) = transport();
        transport.send(ping(3)).await.expect("send");
        write(&mut server, r#"{"jsonrpc":"2.0","id":"3","result":{}}"#).await;
        let got = next(&mut transport).await;
        assert_eq!(got["id"], "3", "{got}");
        assert!(got.get("result").is_some(), "{got}");
    }

    #[test]
    fn faults_are_marked_as_the_transports() {
        let JsonRpcMessage::Error(error) = fault_error(NumberOrString::Number(1), "sent junk".into()) else {
            panic!("an error");
        };
        assert!(is_transport_fault(&error.error));
        assert!(!is_transport_fault(&ErrorData::internal_error("from the server", None)));
    }
}
