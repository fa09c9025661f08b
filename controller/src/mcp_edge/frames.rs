//! The edge's reader of standard input: every newline-delimited message a
//! client sends is read here before the SDK's server sees it, so a message
//! the SDK would drop without a word is answered with a JSON-RPC error
//! instead (the client learns at once, rather than waiting out its own
//! timeout). What passes is forwarded unchanged, one whole line at a time;
//! what is refused never reaches the kernel or an upstream.
//!
//! - a line longer than the bound is discarded unread, up to its newline,
//!   and answered `-32600` (its id is never read, so the answer's id is
//!   `null`);
//! - a line that is not JSON (invalid UTF-8, a syntax error, a key given
//!   twice in one object, nesting past the JSON reader's 128 levels, a
//!   number past the double range) is
//!   answered `-32700`, id `null`; so are bytes left without a newline when
//!   the client closes its side;
//! - a request whose `params` are not an object, or a `tools/call` whose
//!   `name` is not a string or whose `arguments` or `_meta` is not an
//!   object (`null` included; `arguments` may be absent, which is no
//!   arguments), is answered `-32602` under its own id; so is a message holding
//!   a number whose fraction rounds away when it is read
//!   (`100.000000000000001` reads as `100`).
//!
//! Answers and the server's own messages are written whole lines at a time
//! by one writer, so the two never interleave inside a line.
//!
//! The same reader stands between an upstream MCP server's standard output
//! and the SDK's client ([`upstream_gate`]), for the edge and for `chio
//! arena record`: an answer the SDK would drop (not JSON, or longer than
//! [`UPSTREAM_LINE_BYTES`]), or one whose meaning depends on the reader (a
//! key given twice in one object: a tool's description or schema read one
//! way and enforced another) has no id anyone can trust, so every request
//! still waiting for its answer is answered at once with the error
//! [`UNREADABLE_ANSWER`], rather than waiting out its timeout.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// The JSON-RPC error (in the range JSON-RPC leaves to implementations)
/// a request waiting on an upstream is answered with when the upstream
/// wrote a line that cannot be read.
pub(crate) const UNREADABLE_ANSWER: i32 = -32098;

/// The longest line read from an upstream, the SDK's own bound.
pub(crate) const UPSTREAM_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The size of the in-process pipes between the gate and the SDK.
const PIPE_BYTES: usize = 64 * 1024;

/// The JSON-RPC error codes the gate answers with.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// Puts the gate between `input` / `output` (the client's side) and the
/// SDK's server, which reads and writes the two returned pipe ends, and
/// answers the task writing to the client. The gate's tasks end when the
/// client closes its input and the server its output; the writer's end
/// means every answer, the gate's own included, was written.
pub(super) fn gate<R, W>(
    input: R,
    output: W,
    max_message_bytes: usize,
) -> (DuplexStream, DuplexStream, tokio::task::JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_server, server_reads) = tokio::io::duplex(PIPE_BYTES);
    let (server_writes, from_server) = tokio::io::duplex(PIPE_BYTES);
    let (answers, answered) = mpsc::unbounded_channel();
    tokio::spawn(read_client(input, to_server, answers, max_message_bytes));
    let writer = tokio::spawn(write_client(from_server, answered, output));
    (server_reads, server_writes, writer)
}

/// What the gate makes of one complete line.
#[derive(Debug, PartialEq)]
pub(super) enum Verdict {
    /// Forward the line to the server.
    Pass,
    /// Blank: neither forwarded nor answered.
    Skip,
    /// Answer with this JSON-RPC error message (one line, no newline).
    Answer(String),
}

/// Judges one complete line (without its newline).
pub(super) fn judge(line: &[u8]) -> Verdict {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    let Ok(message) = chio_kernel::canonical::from_slice_unique(line) else {
        return Verdict::Answer(error(
            &Value::Null,
            PARSE_ERROR,
            "Parse error: the message is not JSON (invalid UTF-8, a syntax error, a key given twice in one object, nesting past 128 levels or a number out of range)",
        ));
    };
    if let Some((id, what)) = params_problem(&message) {
        return Verdict::Answer(error(
            id,
            INVALID_PARAMS,
            &format!("Invalid params: {what}"),
        ));
    }
    // `100.000000000000001` reads as `100`, which the kernel would judge.
    if chio_kernel::canonical::first_rounded_whole(&String::from_utf8_lossy(line)).is_some() {
        let id = message.get("id").unwrap_or(&Value::Null);
        return Verdict::Answer(error(
            id,
            INVALID_PARAMS,
            "Invalid params: a number's fraction rounds away when it is read; send the exact value, or the amount as a string",
        ));
    }
    Verdict::Pass
}

/// The id and the problem of a request whose parameters have the wrong
/// shape; `None` for anything else (the server judges the rest).
fn params_problem(message: &Value) -> Option<(&Value, &'static str)> {
    let object = message.as_object()?;
    let id = object
        .get("id")
        .filter(|id| id.is_string() || id.is_number())?;
    let method = object.get("method")?.as_str()?;
    let params = match object.get("params") {
        None => {
            return (method == "tools/call").then_some((id, "tools/call needs params with a name"))
        }
        Some(Value::Object(params)) => params,
        Some(_) => return Some((id, "params must be an object")),
    };
    if let Some(meta) = params.get("_meta") {
        if !meta.is_object() {
            return Some((id, "_meta must be an object"));
        }
    }
    if method != "tools/call" {
        return None;
    }
    if !params.get("name").is_some_and(Value::is_string) {
        return Some((id, "tools/call needs a string name"));
    }
    match params.get("arguments") {
        // `arguments` is optional (absent, the call has none); given, it is
        // an object, and `null` is not one.
        None | Some(Value::Object(_)) => None,
        Some(_) => Some((id, "tools/call arguments must be an object")),
    }
}

/// One JSON-RPC error message, as one line without its newline.
fn error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// What [`BoundedLines`] reads next.
enum Next {
    /// A whole line, without its line ending (`\n` or `\r\n`).
    Line(Vec<u8>),
    /// A line longer than the bound, when the bound is passed; the rest of
    /// it, up to its newline, is discarded unread.
    TooLong,
    /// Bytes left without a newline when the input ended.
    Unterminated,
    /// The end of the input.
    End,
}

/// Newline-delimited lines of at most `max` bytes (the line ending not
/// counted), read without ever holding more.
struct BoundedLines<R> {
    input: BufReader<R>,
    line: Vec<u8>,
    discarding: bool,
    max: usize,
}

impl<R: AsyncRead + Unpin> BoundedLines<R> {
    fn new(input: R, max: usize) -> Self {
        BoundedLines {
            input: BufReader::new(input),
            line: Vec::new(),
            discarding: false,
            max,
        }
    }

    async fn next(&mut self) -> std::io::Result<Next> {
        loop {
            let chunk = self.input.fill_buf().await?;
            if chunk.is_empty() {
                let left = !self.discarding && !self.line.is_empty();
                self.line.clear();
                return Ok(if left { Next::Unterminated } else { Next::End });
            }
            let (part, ends_line) = match chunk.iter().position(|b| *b == b'\n') {
                Some(at) => (&chunk[..at], true),
                None => (chunk, false),
            };
            let used = part.len() + usize::from(ends_line);
            let mut passed = false;
            if !self.discarding {
                self.line.extend_from_slice(part);
                // A `\r` may still turn out to end the line.
                let ending = usize::from(ends_line && self.line.last() == Some(&b'\r'));
                if self.line.len() - ending > self.max + usize::from(!ends_line) {
                    self.line = Vec::new();
                    self.discarding = true;
                    passed = true;
                }
            }
            self.input.consume(used);
            if passed {
                // The over-long line may end in this very chunk.
                self.discarding = !ends_line;
                return Ok(Next::TooLong);
            }
            if !ends_line {
                continue;
            }
            if std::mem::take(&mut self.discarding) {
                continue;
            }
            let mut whole = std::mem::take(&mut self.line);
            if whole.last() == Some(&b'\r') {
                whole.pop();
            }
            return Ok(Next::Line(whole));
        }
    }
}

/// Reads the client's lines within the bound, forwarding those that pass
/// and handing the writer an answer for each refused one.
async fn read_client<R: AsyncRead + Unpin>(
    input: R,
    mut to_server: DuplexStream,
    answers: mpsc::UnboundedSender<String>,
    max_message_bytes: usize,
) {
    let mut lines = BoundedLines::new(input, max_message_bytes);
    loop {
        let answer = match lines.next().await {
            Err(e) => {
                tracing::warn!(problem = %e, "standard input failed; the session ends");
                break;
            }
            Ok(Next::End) => break,
            Ok(Next::Unterminated) => error(
                &Value::Null,
                PARSE_ERROR,
                "Parse error: the input ended inside a message with no newline",
            ),
            Ok(Next::TooLong) => error(
                &Value::Null,
                INVALID_REQUEST,
                &format!("Invalid Request: a message is longer than {max_message_bytes} bytes; it was discarded unread"),
            ),
            Ok(Next::Line(whole)) => match judge(&whole) {
                Verdict::Pass => {
                    if write_line(&mut to_server, &whole).await.is_err() {
                        break;
                    }
                    continue;
                }
                Verdict::Skip => continue,
                Verdict::Answer(answer) => answer,
            },
        };
        let _ = answers.send(answer);
    }
    let _ = to_server.shutdown().await;
}

/// Writes the server's lines and the gate's answers to the client, each
/// whole, until both are done.
async fn write_client<W: AsyncWrite + Unpin>(
    from_server: DuplexStream,
    mut answered: mpsc::UnboundedReceiver<String>,
    mut output: W,
) {
    let mut from_server = BufReader::new(from_server);
    let mut line = Vec::new();
    let mut server_open = true;
    let mut answers_open = true;
    while server_open || answers_open {
        // An answer the gate queued went in before any later line reached
        // the server: written first, so answers keep the order of requests.
        let next = tokio::select! {
            biased;
            answer = answered.recv(), if answers_open => match answer {
                Some(answer) => Some(format!("{answer}\n").into_bytes()),
                None => {
                    answers_open = false;
                    None
                }
            },
            read = from_server.read_until(b'\n', &mut line), if server_open => match read {
                Ok(0) | Err(_) => {
                    server_open = false;
                    None
                }
                Ok(_) => Some(std::mem::take(&mut line)),
            },
        };
        let Some(bytes) = next else { continue };
        if output.write_all(&bytes).await.is_err() || output.flush().await.is_err() {
            tracing::warn!("standard output failed; the session's answers stop");
            return;
        }
    }
}

/// The ids of the requests sent to an upstream and not yet answered, by
/// their JSON text.
type Waiting = Arc<Mutex<BTreeMap<String, Value>>>;

/// Puts the reader between an upstream's pipes and the SDK's client, which
/// reads and writes the two returned pipe ends; see the module doc.
pub(crate) fn upstream_gate<R, W>(from_upstream: R, to_upstream: W) -> (DuplexStream, DuplexStream)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (client_side_in, client_reads) = tokio::io::duplex(PIPE_BYTES);
    let (client_writes, client_side_out) = tokio::io::duplex(PIPE_BYTES);
    let waiting = Waiting::default();
    tokio::spawn(note_requests(
        client_side_out,
        to_upstream,
        Arc::clone(&waiting),
    ));
    tokio::spawn(read_upstream(from_upstream, client_side_in, waiting));
    (client_reads, client_writes)
}

/// Forwards the client's lines to the upstream, noting each request's id
/// before the upstream can answer it.
async fn note_requests<W: AsyncWrite + Unpin>(
    from_client: DuplexStream,
    mut to_upstream: W,
    waiting: Waiting,
) {
    let mut from_client = BufReader::new(from_client);
    let mut line = Vec::new();
    loop {
        line.clear();
        match from_client.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Ok(message) = serde_json::from_slice::<Value>(&line) {
            if let (Some(id), true) = (message.get("id"), message.get("method").is_some()) {
                if let Ok(mut waiting) = waiting.lock() {
                    waiting.insert(id.to_string(), id.clone());
                }
            }
        }
        if to_upstream.write_all(&line).await.is_err() || to_upstream.flush().await.is_err() {
            break;
        }
    }
    let _ = to_upstream.shutdown().await;
}

/// Forwards the upstream's readable lines to the client; an unreadable one
/// answers every waiting request with [`UNREADABLE_ANSWER`].
async fn read_upstream<R: AsyncRead + Unpin>(
    from_upstream: R,
    mut to_client: DuplexStream,
    waiting: Waiting,
) {
    let mut lines = BoundedLines::new(from_upstream, UPSTREAM_LINE_BYTES);
    loop {
        let (whole, readable) = match lines.next().await {
            Ok(Next::Line(whole)) if whole.iter().all(u8::is_ascii_whitespace) => continue,
            Ok(Next::Line(whole)) => {
                let readable = readable_answer(&whole)
                    .inspect(|message| answered(message, &waiting))
                    .is_some();
                (whole, readable)
            }
            Ok(Next::TooLong | Next::Unterminated) => (Vec::new(), false),
            Ok(Next::End) | Err(_) => break,
        };
        let written = if readable {
            write_line(&mut to_client, &whole).await
        } else {
            fail_waiting(&mut to_client, &waiting).await
        };
        if written.is_err() {
            break;
        }
    }
    let _ = to_client.shutdown().await;
}

/// An upstream's line as the message it is, or `None` when it cannot be
/// read as one meaning: not JSON, a key given twice, or a number that
/// rounds when read (it would be judged, signed and released as another
/// number than the upstream wrote).
fn readable_answer(line: &[u8]) -> Option<Value> {
    if chio_kernel::canonical::first_rounded_whole(&String::from_utf8_lossy(line)).is_some() {
        return None;
    }
    chio_kernel::canonical::from_slice_unique(line).ok()
}

/// Takes a response's id off the waiting list.
fn answered(message: &Value, waiting: &Waiting) {
    let is_response = message.get("method").is_none();
    if let (Some(id), true) = (message.get("id"), is_response) {
        if let Ok(mut waiting) = waiting.lock() {
            waiting.remove(&id.to_string());
        }
    }
}

/// Answers every waiting request with [`UNREADABLE_ANSWER`].
async fn fail_waiting(to_client: &mut DuplexStream, waiting: &Waiting) -> std::io::Result<()> {
    let ids: Vec<Value> = match waiting.lock() {
        Ok(mut waiting) => std::mem::take(&mut *waiting).into_values().collect(),
        Err(_) => Vec::new(),
    };
    tracing::warn!(
        waiting = ids.len(),
        "an upstream wrote a line that cannot be read; its waiting requests are failed"
    );
    for id in ids {
        let answer = json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": UNREADABLE_ANSWER,
            "message": "the upstream's answer could not be read",
        }});
        write_line(to_client, answer.to_string().as_bytes()).await?;
    }
    Ok(())
}

async fn write_line(to: &mut DuplexStream, line: &[u8]) -> std::io::Result<()> {
    to.write_all(line).await?;
    to.write_all(b"\n").await?;
    to.flush().await
}

#[cfg(test)]
#[path = "frames_tests.rs"]
mod tests;
