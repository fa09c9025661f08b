//! `json-payload-smuggle`: objects shaped like a tool call or a chat message,
//! found in text and in JSON values, and the scan budget.
//!
//! Text is read by a tolerant, single-pass scanner rather than a JSON
//! parser, so what a model would still read as a tool call is caught even
//! when a parser would refuse it: single-quoted strings and Python dicts
//! (`{'tool': 'delete', 'arguments': {...}}`), bare keys, `True`/`None`,
//! trailing commas, objects left unclosed at the end of the text, and prose
//! around or between them. The scanner keeps its own stack, so nesting has
//! no depth limit; it visits every object of the text, not a window of the
//! first few.
//!
//! A quote opens a string only where a JSON string may start (after `{`,
//! `[`, `,` or `:` inside a container), so apostrophes in prose do not. A
//! string token that holds `{`, `[` or a backslash escape is scanned again
//! on its own, unescaped, by every detector: that is how a payload escaped
//! inside a JSON string (`"{\"tool\": ...}"`, or `\u0069gnore ...`) is
//! caught, and how a string the scanner opened by mistake is still read.
//!
//! Shapes:
//! - `tool-call-object`: a tool key (`tool`, `tool_name`, `function`,
//!   `function_name`, or `name`/`server`) holding a string, and an
//!   arguments key (`arguments`, `args`, `parameters`, `params`, `input`)
//!   holding an object or JSON text of one; with `tool`, `tool_name`,
//!   `function` or `function_name`, an array of arguments counts too;
//! - `chat-message-object`: `role` of `system`, `developer` or `assistant`
//!   with a `content`, `text` or `message` key.
//!
//! Keys are compared after normalisation (look-alikes, case) with `_`, `-`
//! and spaces removed.
//!
//! # Budget
//!
//! The walk is complete but bounded; going past a limit is a finding of its
//! own ([`ScanLimit`]) and the guard denies, so nothing beyond the budget is
//! ever silently skipped. The limits apply to one check (one call's
//! arguments, or one tool output), across every string and re-scan:
//! [`MAX_JSON_NODES`] containers, keys and values; [`MAX_EMBEDDING`] levels
//! of JSON text inside JSON strings; [`MAX_SCAN_BYTES`] bytes of readings.

use std::fmt;

mod shape;

pub use shape::{ObjectShape, ValueKind};

/// Containers, keys and values one check may visit.
pub const MAX_JSON_NODES: usize = 1_000_000;
/// Levels of JSON text escaped inside a JSON string one check may open.
pub const MAX_EMBEDDING: usize = 16;
/// Bytes of normalised readings one check may scan.
pub const MAX_SCAN_BYTES: usize = 32 * 1024 * 1024;

/// A scan budget limit that was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScanLimit {
    /// More than [`MAX_JSON_NODES`] JSON nodes.
    JsonNodes,
    /// JSON text embedded in strings more than [`MAX_EMBEDDING`] levels deep.
    Embedding,
    /// More than [`MAX_SCAN_BYTES`] bytes of text.
    Bytes,
}

impl fmt::Display for ScanLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScanLimit::JsonNodes => write!(f, "more than {MAX_JSON_NODES} JSON nodes"),
            ScanLimit::Embedding => write!(
                f,
                "JSON text embedded in strings more than {MAX_EMBEDDING} levels deep"
            ),
            ScanLimit::Bytes => write!(f, "more than {MAX_SCAN_BYTES} bytes of text"),
        }
    }
}

/// What one check has spent of the budget.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// JSON nodes visited so far.
    nodes: usize,
    /// Bytes of readings scanned so far.
    bytes: usize,
}

impl Budget {
    /// Counts one JSON node.
    pub fn node(&mut self) -> Result<(), ScanLimit> {
        self.nodes += 1;
        if self.nodes > MAX_JSON_NODES {
            Err(ScanLimit::JsonNodes)
        } else {
            Ok(())
        }
    }

    /// Fails now when `n` more nodes cannot fit, so a huge container is
    /// refused before its children are queued.
    pub fn reserve(&self, n: usize) -> Result<(), ScanLimit> {
        if self.nodes.saturating_add(n) > MAX_JSON_NODES {
            Err(ScanLimit::JsonNodes)
        } else {
            Ok(())
        }
    }

    /// Counts `n` bytes of scanned text.
    pub fn bytes(&mut self, n: usize) -> Result<(), ScanLimit> {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > MAX_SCAN_BYTES {
            Err(ScanLimit::Bytes)
        } else {
            Ok(())
        }
    }
}

/// What scanning the structure of one text found.
#[derive(Debug, Default)]
pub struct TextStructure {
    /// The shape rule of the first suspicious object, if the scan stopped at one.
    pub smuggled: Option<&'static str>,
    /// Unescaped string tokens to scan again on their own.
    pub embedded: Vec<String>,
    /// The shape rule a harmless object came closest to, and how close.
    pub near: Option<(&'static str, u16)>,
}

/// What an open container expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// An object key (after `{` or `,`).
    Key,
    /// The `:` after a key.
    Colon,
    /// A value (after `:`, or an array element after `[` or `,`).
    Value,
    /// A `,` or the closing bracket.
    After,
    /// Prose inside the container; nothing counts until the next `,`.
    Junk,
}

/// One open object or array of the text scanner.
#[derive(Debug)]
struct Frame {
    /// An object (`{`) rather than an array (`[`).
    object: bool,
    /// What the scanner expects next in it.
    expect: Expect,
    /// The key whose value comes next.
    key: Option<String>,
    /// What the object's entries amount to so far.
    shape: ObjectShape,
}

impl Frame {
    fn new(object: bool) -> Frame {
        Frame {
            object,
            expect: if object { Expect::Key } else { Expect::Value },
            key: None,
            shape: ObjectShape::default(),
        }
    }

    fn at_token_start(&self) -> bool {
        matches!(self.expect, Expect::Key | Expect::Value)
    }
}

/// Reads a quoted string starting at `b[start]` (the quote); returns the
/// unescaped content, whether it held an escape, and the index after it
/// (the end of the text when it never closes).
fn read_string(text: &str, start: usize) -> (String, bool, usize) {
    let b = text.as_bytes();
    let quote = b[start];
    let mut out = String::new();
    let mut escaped = false;
    let mut i = start + 1;
    let mut run_start = i;
    while i < b.len() {
        let c = b[i];
        if c == quote {
            out.push_str(&text[run_start..i]);
            return (out, escaped, i + 1);
        }
        if c != b'\\' {
            i += 1;
            continue;
        }
        out.push_str(&text[run_start..i]);
        escaped = true;
        let (ch, next) = crate::decode::json_escape(text, i);
        if let Some(ch) = ch {
            out.push(ch);
        }
        i = next;
        run_start = i;
    }
    out.push_str(&text[run_start.min(b.len())..]);
    (out, escaped, b.len())
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$' | b'+' | b'-')
}

/// Records a token (string or bare word) in the top frame.
fn token(stack: &mut [Frame], value: &str) -> Option<&'static str> {
    let top = stack.last_mut()?;
    if !top.object {
        top.expect = Expect::After;
        return None;
    }
    match top.expect {
        Expect::Key => {
            top.key = Some(value.to_string());
            top.expect = Expect::Colon;
        }
        Expect::Value => {
            if let Some(key) = top.key.take() {
                top.shape.add(&key, ValueKind::Str(value));
            }
            top.expect = Expect::After;
            return top.shape.suspicious();
        }
        _ => top.expect = Expect::Junk,
    }
    None
}

/// Scans one reading for JSON-shaped objects. With `stop` set the scan ends
/// at the first suspicious object.
pub fn scan_text(text: &str, stop: bool, budget: &mut Budget) -> Result<TextStructure, ScanLimit> {
    let b = text.as_bytes();
    let mut found = TextStructure::default();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    let note = |shape: &ObjectShape, found: &mut TextStructure| note_shape(shape, found, stop);
    while i < b.len() {
        let c = b[i];
        match c {
            b'{' | b'[' => {
                budget.node()?;
                if nest_in_top(&mut stack, c == b'{', &mut found, stop) {
                    return Ok(found);
                }
                stack.push(Frame::new(c == b'{'));
                i += 1;
            }
            b'}' | b']' => {
                if close_frames(&mut stack, c == b'}', &mut found, stop) {
                    return Ok(found);
                }
                i += 1;
            }
            b'"' | b'\'' if stack.last().is_some_and(Frame::at_token_start) => {
                let (content, escaped, next) = read_string(text, i);
                budget.node()?;
                if escaped || content.contains(['{', '[']) {
                    found.embedded.push(content.clone());
                }
                if token(&mut stack, &content).is_some() && note_top(&stack, &mut found, stop) {
                    return Ok(found);
                }
                i = next;
            }
            b',' => {
                after_comma(&mut stack);
                i += 1;
            }
            b':' => {
                after_colon(&mut stack);
                i += 1;
            }
            b' ' | b'\n' => i += 1,
            _ if is_word_byte(c) && stack.last().is_some_and(Frame::at_token_start) => {
                let end = b[i..]
                    .iter()
                    .position(|x| !is_word_byte(*x))
                    .map_or(b.len(), |n| i + n);
                budget.node()?;
                let word = &text[i..end];
                if token(&mut stack, word).is_some() && note_top(&stack, &mut found, stop) {
                    return Ok(found);
                }
                i = end;
            }
            _ => {
                if let Some(top) = stack.last_mut() {
                    if top.expect != Expect::After || !top.object {
                        top.expect = Expect::Junk;
                    }
                }
                i += 1;
            }
        }
    }
    for frame in stack.iter().rev() {
        if frame.object && note(&frame.shape, &mut found) {
            return Ok(found);
        }
    }
    Ok(found)
}

/// Records an object or array opening as the value of the top frame's
/// key (or as junk where no value may stand); whether to stop.
fn nest_in_top(stack: &mut [Frame], object: bool, found: &mut TextStructure, stop: bool) -> bool {
    if let Some(top) = stack.last_mut() {
        if top.object {
            if top.expect == Expect::Value {
                if let Some(key) = top.key.take() {
                    let kind = if object {
                        ValueKind::Object
                    } else {
                        ValueKind::Array
                    };
                    top.shape.add(&key, kind);
                    if note_shape(&top.shape, found, stop) {
                        return true;
                    }
                }
                top.expect = Expect::After;
            } else {
                top.expect = Expect::Junk;
            }
        } else {
            top.expect = Expect::After;
        }
    }
    false
}

/// Closes the innermost open frame of the bracket's kind and every frame
/// opened inside it, noting each object's shape; whether to stop.
fn close_frames(
    stack: &mut Vec<Frame>,
    object: bool,
    found: &mut TextStructure,
    stop: bool,
) -> bool {
    if let Some(at) = stack.iter().rposition(|f| f.object == object) {
        for frame in stack.drain(at..) {
            if frame.object && note_shape(&frame.shape, found, stop) {
                return true;
            }
        }
    }
    false
}

/// Notes a closed or grown object's shape: the first suspicious rule, or
/// the closest near miss; whether to stop.
fn note_shape(shape: &ObjectShape, found: &mut TextStructure, stop: bool) -> bool {
    if let Some(rule) = shape.suspicious() {
        if found.smuggled.is_none() {
            found.smuggled = Some(rule);
        }
        return stop;
    }
    if let Some((rule, closeness)) = shape.near() {
        if found.near.is_none_or(|(_, best)| closeness > best) {
            found.near = Some((rule, closeness));
        }
    }
    false
}

/// After a `,`: an object expects a key, an array a value.
fn after_comma(stack: &mut [Frame]) {
    if let Some(top) = stack.last_mut() {
        top.expect = if top.object {
            Expect::Key
        } else {
            Expect::Value
        };
        top.key = None;
    }
}

/// After a `:`: an object that expected it expects a value; anything else is junk.
fn after_colon(stack: &mut [Frame]) {
    if let Some(top) = stack.last_mut() {
        if top.object {
            top.expect = if top.expect == Expect::Colon {
                Expect::Value
            } else {
                Expect::Junk
            };
        }
    }
}

/// Notes the top frame's suspicious shape after a token; whether to stop.
fn note_top(stack: &[Frame], found: &mut TextStructure, stop: bool) -> bool {
    match stack.last().and_then(|f| f.shape.suspicious()) {
        Some(rule) => {
            if found.smuggled.is_none() {
                found.smuggled = Some(rule);
            }
            stop
        }
        None => false,
    }
}

#[cfg(test)]
mod tests;
