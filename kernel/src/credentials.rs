//! Credential-shaped spans in text: the one detector behind the arena
//! loader's inline-secret refusal and the `secret-redaction` guard.
//!
//! Pure (no I/O, no allocation beyond the result). [`find_credentials`]
//! returns every span, in text order, that carries a credential of one of
//! these shapes ([`CredentialKind`]):
//!
//! - `pem-private-key`: an armour line `-----BEGIN ... PRIVATE KEY-----` (or
//!   `BEGIN ... PRIVATE KEY` in capitals without the dashes) through the
//!   end of its `END` line, or to the end of the text when unterminated;
//! - `authorization-header`: `authorization:` (any case, also
//!   `proxy-authorization:`) followed on the same line by a value; the
//!   span is the credential after the scheme word (`Basic`, `Bearer`, ...)
//!   to the end of the line, or the whole value when it has no scheme;
//! - `bearer-token`: the word `bearer` (any case), any whitespace, line
//!   breaks included, then a credential of token characters
//!   (`[A-Za-z0-9._~+/=-]`): at least 8 with a digit or punctuation, or at
//!   least 20;
//! - `sk-key`: `sk-` at a word start followed by 16 or more key letters and
//!   digits (with `_` and `-`) that mix letters and digits or hold an
//!   unbroken run of 20 (so `sk-learn-compatible-estimators` is prose);
//! - `aws-access-key`: `AKIA` or `ASIA` at a word start followed by exactly
//!   16 capitals or digits, in any case (key ids are upper case, so one
//!   written in lower case is the same id); written other than in capitals,
//!   the 16 must be base32 as issued (letters, digits 2 to 7) and hold a
//!   digit, so `asiapacificcustomers` stays a word;
//! - `github-token`: `ghp_`, `gho_`, `ghu_`, `ghs_` or `ghr_` at a word
//!   start followed by 30 or more letters and digits, or `github_pat_`
//!   followed by 22 or more letters, digits and `_`;
//! - `credential-assignment`: `password`, `passwd`, `secret`, `token`,
//!   `api_key`, `api-key`, `apikey` or `access_key`, not preceded by a
//!   letter or digit (`_` is a boundary, so `db_password` counts), an
//!   optional closing quote, `=` or `:`, and a value that does not start
//!   with whitespace, `&`, `,`, `;` or a second quote; the span is the value
//!   (a quoted value to its closing quote). After a colon and a space an
//!   unquoted value counts only when it looks like a credential, as a
//!   `bearer` token must, so prose (`password: open Settings`) is no match.
//!
//! Each span names the marker that identified it (`BEGIN PRIVATE KEY`,
//! `authorization:`, `bearer `, `sk-`, `AKIA`, `ghp_`, `password`, ...):
//! the marker is public vocabulary and may be printed, the span never.
//! [`credential_key_name`] judges a key name built on a marker word, for a
//! loader that refuses `password = "..."` whatever the value.
//!
//! [`forms`] reads a text in the forms a receiver recovers a credential
//! from (percent-decoded, JSON-unescaped, invisible characters removed,
//! NFKC; base64 and hex runs decoded) and text made of several parts read
//! together; the `secret-redaction` guard reads through it. [`mark`]
//! marks each credential in a message that quotes input by its shape.
//! [`reading`] is the one reader of "is this a credential" for values.
//!
//! Limits: a credential with no recognisable shape (a bare 40-character
//! secret, a password in prose) is not found; values are matched on ASCII
//! shapes, so a credential spelled with look-alike letters of another
//! script (Cyrillic `р` for `p`) is missed; [`find_credentials`] reads the
//! text as written only.

use std::ops::Range;

pub mod forms;
pub mod mark;
pub mod reading;

/// What replaces a credential when text is redacted.
pub const REDACTED: &str = "[REDACTED]";

/// A credential shape the detector knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CredentialKind {
    /// A PEM private-key block.
    PemPrivateKey,
    /// An `Authorization:` header value.
    AuthorizationHeader,
    /// An HTTP bearer token.
    BearerToken,
    /// An `sk-` API key.
    SkKey,
    /// An AWS access key id.
    AwsAccessKey,
    /// A GitHub token.
    GitHubToken,
    /// A credential assigned to a secret-named key, such as `password=...`.
    CredentialAssignment,
}

impl CredentialKind {
    /// Every kind, in priority order: when spans of several kinds overlap,
    /// the earlier kind names the finding.
    pub const ALL: [CredentialKind; 7] = [
        CredentialKind::PemPrivateKey,
        CredentialKind::AuthorizationHeader,
        CredentialKind::BearerToken,
        CredentialKind::SkKey,
        CredentialKind::AwsAccessKey,
        CredentialKind::GitHubToken,
        CredentialKind::CredentialAssignment,
    ];

    /// The kebab-case name a guard configuration uses.
    pub fn as_str(&self) -> &'static str {
        match self {
            CredentialKind::PemPrivateKey => "pem-private-key",
            CredentialKind::AuthorizationHeader => "authorization-header",
            CredentialKind::BearerToken => "bearer-token",
            CredentialKind::SkKey => "sk-key",
            CredentialKind::AwsAccessKey => "aws-access-key",
            CredentialKind::GitHubToken => "github-token",
            CredentialKind::CredentialAssignment => "credential-assignment",
        }
    }

    /// Parses the kebab-case name.
    pub fn parse(text: &str) -> Option<CredentialKind> {
        CredentialKind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// One credential found in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CredentialSpan {
    /// Byte offset where the secret part starts.
    pub start: usize,
    /// Byte offset just past the secret part.
    pub end: usize,
    /// The shape that matched.
    pub kind: CredentialKind,
    /// The public marker that identified it; safe to print, unlike the span.
    pub marker: &'static str,
    /// Byte offset where the match starts, its marker included (at or
    /// before `start`).
    pub from: usize,
}

/// Every credential span in `text`, sorted by position (then kind).
pub fn find_credentials(text: &str) -> Vec<CredentialSpan> {
    find_credentials_with_edges(text, &[])
}

/// [`find_credentials`] of a text joined from parts, where `edges` (sorted
/// byte offsets) are the parts' edges: a word starts and ends at an edge
/// whatever is beside it, as it does at the text's own start and end, so a
/// credential held by parts read together is found whatever their
/// neighbours are.
pub fn find_credentials_with_edges(text: &str, edges: &[usize]) -> Vec<CredentialSpan> {
    let mut spans = Vec::new();
    for kind in CredentialKind::ALL {
        find_kind(text, edges, kind, &mut spans);
    }
    spans.sort();
    spans
}

/// The finding that names `text`: the span of the highest-priority kind
/// (in [`CredentialKind::ALL`] order), the first in the text among those.
pub fn first_credential(text: &str) -> Option<CredentialSpan> {
    CredentialKind::ALL.into_iter().find_map(|kind| {
        let mut spans = Vec::new();
        find_kind(text, &[], kind, &mut spans);
        spans.into_iter().min()
    })
}

/// `text` with every span of `kinds` replaced by [`REDACTED`]; `None` when
/// nothing matched. Overlapping spans are redacted once.
pub fn redact(text: &str, kinds: &[CredentialKind]) -> Option<String> {
    let spans: Vec<CredentialSpan> = find_credentials(text)
        .into_iter()
        .filter(|s| kinds.contains(&s.kind))
        .collect();
    if spans.is_empty() {
        return None;
    }
    Some(redact_ranges(text, spans.iter().map(|s| s.start..s.end)))
}

/// `text` with each byte range of `ranges` (on character boundaries)
/// replaced by [`REDACTED`]; overlapping ranges are redacted once.
pub fn redact_ranges(text: &str, ranges: impl IntoIterator<Item = Range<usize>>) -> String {
    let mut ranges: Vec<Range<usize>> = ranges.into_iter().filter(|r| r.start < r.end).collect();
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for range in ranges {
        if range.end <= at {
            continue;
        }
        if range.start < at {
            // Overlaps the range just redacted: widen it.
            at = range.end;
            continue;
        }
        out.push_str(&text[at..range.start]);
        out.push_str(REDACTED);
        at = range.end;
    }
    out.push_str(&text[at..]);
    out
}

fn find_kind(text: &str, edges: &[usize], kind: CredentialKind, out: &mut Vec<CredentialSpan>) {
    match kind {
        CredentialKind::PemPrivateKey => pem_blocks(text, out),
        CredentialKind::AuthorizationHeader => authorization_headers(text, out),
        CredentialKind::BearerToken => bearer_tokens(text, edges, out),
        CredentialKind::SkKey => sk_keys(text, edges, out),
        CredentialKind::AwsAccessKey => aws_keys(text, edges, out),
        CredentialKind::GitHubToken => github_tokens(text, edges, out),
        CredentialKind::CredentialAssignment => assignments(text, edges, out),
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Positions of `needle` in `haystack` not preceded by a letter or digit,
/// or at one of the `edges`.
fn word_starts<'a>(
    haystack: &'a str,
    needle: &'a str,
    edges: &'a [usize],
) -> impl Iterator<Item = usize> + 'a {
    haystack
        .match_indices(needle)
        .map(|(at, _)| at)
        .filter(move |&at| {
            at == 0
                || !is_word_byte(haystack.as_bytes()[at - 1])
                || edges.binary_search(&at).is_ok()
        })
}

/// Length of the run of `b[from..]` whose bytes satisfy `keep`.
fn run(b: &[u8], from: usize, keep: impl Fn(u8) -> bool) -> usize {
    b.get(from..)
        .map_or(0, |rest| rest.iter().take_while(|c| keep(**c)).count())
}

/// Records a span: its match starts at `from`, its secret part is `secret`.
fn push(
    out: &mut Vec<CredentialSpan>,
    kind: CredentialKind,
    marker: &'static str,
    from: usize,
    secret: Range<usize>,
) {
    out.push(CredentialSpan {
        start: secret.start,
        end: secret.end,
        kind,
        marker,
        from,
    });
}

/// Whether `line` is a private-key armour line (`BEGIN`/`END` as given).
fn armour(line: &str, word: &str) -> Option<usize> {
    let upper_at = line.find(word).and_then(|begin| {
        let key = line[begin..].find("PRIVATE KEY")? + begin;
        line[begin + word.len()..key]
            .bytes()
            .all(|b| b == b' ' || b.is_ascii_uppercase() || b.is_ascii_digit())
            .then_some(begin)
    });
    let lower = line.to_ascii_lowercase();
    let dashed = format!("-----{}", word.to_ascii_lowercase());
    let any_case_at = lower
        .find(&dashed)
        .filter(|begin| lower[*begin..].contains("private key"));
    match (any_case_at, upper_at) {
        (Some(dashes), _) => Some(dashes),
        (None, Some(begin)) => Some(line[..begin].trim_end_matches('-').len()),
        (None, None) => None,
    }
}

fn pem_blocks(text: &str, out: &mut Vec<CredentialSpan>) {
    let mut offset = 0;
    let mut open: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        match open {
            None => {
                if let Some(at) = armour(body, "BEGIN") {
                    open = Some(offset + at);
                }
            }
            Some(start) => {
                if armour(body, "END").is_some() {
                    let end = offset + body.trim_end().len();
                    push(
                        out,
                        CredentialKind::PemPrivateKey,
                        "BEGIN PRIVATE KEY",
                        start,
                        start..end,
                    );
                    open = None;
                }
            }
        }
        offset += line.len();
    }
    if let Some(start) = open {
        push(
            out,
            CredentialKind::PemPrivateKey,
            "BEGIN PRIVATE KEY",
            start,
            start..text.len(),
        );
    }
}

fn authorization_headers(text: &str, out: &mut Vec<CredentialSpan>) {
    let b = text.as_bytes();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let lower = line.to_ascii_lowercase();
        let line_end = offset + line.trim_end().len();
        for (at, m) in lower.match_indices("authorization:") {
            let header = offset + at + m.len();
            let value = header + run(b, header, |c| c == b' ' || c == b'\t');
            if value >= line_end {
                continue;
            }
            // A scheme word (`Basic`, `Bearer`, `Digest`, ...) stays visible.
            let scheme = run(b, value, |c| c.is_ascii_alphabetic());
            let after = value + scheme;
            let gap = run(b, after, |c| c == b' ' || c == b'\t');
            let start = if scheme > 0 && gap > 0 && after + gap < line_end {
                after + gap
            } else {
                value
            };
            push(
                out,
                CredentialKind::AuthorizationHeader,
                "authorization:",
                offset + at,
                start..line_end,
            );
        }
        offset += line.len();
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')
}

/// Whether a word looks like a credential rather than a word of prose, as
/// a `bearer` token must: 8 characters or more with a digit or punctuation
/// (trailing sentence punctuation aside), or 20 or more.
fn credential_like(word: &[u8]) -> bool {
    let core = word.trim_ascii_end();
    let core = match core
        .iter()
        .rposition(|c| !matches!(c, b'.' | b'!' | b'?' | b':' | b')'))
    {
        Some(last) => &core[..=last],
        None => return false,
    };
    let marked = core
        .iter()
        .any(|c| c.is_ascii_digit() || c.is_ascii_punctuation());
    (core.len() >= 8 && marked) || core.len() >= 20
}

fn bearer_tokens(text: &str, edges: &[usize], out: &mut Vec<CredentialSpan>) {
    let lower = text.to_ascii_lowercase();
    for at in word_starts(&lower, "bearer", edges) {
        let after = at + 6;
        let spaces: usize = text[after..]
            .chars()
            .take_while(|c| c.is_whitespace())
            .map(char::len_utf8)
            .sum();
        if spaces == 0 {
            continue;
        }
        let start = after + spaces;
        let b = text.as_bytes();
        let len = run(b, start, is_token_byte);
        let token = &b[start..start + len];
        let marked = token.iter().any(|c| {
            c.is_ascii_digit() || matches!(c, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')
        });
        if (len >= 8 && marked) || len >= 20 {
            push(
                out,
                CredentialKind::BearerToken,
                "bearer ",
                at,
                start..start + len,
            );
        }
    }
}

fn sk_keys(text: &str, edges: &[usize], out: &mut Vec<CredentialSpan>) {
    let b = text.as_bytes();
    // A match inside the run of an earlier one is a suffix of it: skipping it
    // keeps the scan linear and loses nothing.
    let mut covered = 0;
    for at in word_starts(text, "sk-", edges) {
        if at < covered {
            continue;
        }
        let len = run(b, at + 3, |c| {
            c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
        });
        let key = &b[at + 3..at + 3 + len];
        let alnum = key.iter().filter(|c| c.is_ascii_alphanumeric()).count();
        let mixed = key.iter().any(u8::is_ascii_digit) && key.iter().any(u8::is_ascii_alphabetic);
        let unbroken = key
            .split(|c| !c.is_ascii_alphanumeric())
            .any(|segment| segment.len() >= 20);
        covered = at + 3 + len;
        if alnum >= 16 && (mixed || unbroken) {
            push(out, CredentialKind::SkKey, "sk-", at, at..at + 3 + len);
        }
    }
}

fn aws_keys(text: &str, edges: &[usize], out: &mut Vec<CredentialSpan>) {
    // ASCII upper-casing keeps every byte offset.
    let upper = text.to_ascii_uppercase();
    let b = upper.as_bytes();
    for prefix in ["AKIA", "ASIA"] {
        for at in word_starts(&upper, prefix, edges) {
            let len = run(b, at + 4, |c| c.is_ascii_uppercase() || c.is_ascii_digit());
            let next = b.get(at + 20).copied();
            let ends = edges.binary_search(&(at + 20)).is_ok()
                || !next.is_some_and(|c| c.is_ascii_alphanumeric());
            if len < 16 || !ends {
                continue;
            }
            // Written other than in capitals, the id must be what AWS issues
            // (base32: letters and 2 to 7) and hold a digit, so that a word
            // (`asiapacificcustomers`) or a hex id beside `asia` is no key.
            let written = &text.as_bytes()[at..at + 20];
            let capitals = !written.iter().any(u8::is_ascii_lowercase);
            let base32 = written[4..]
                .iter()
                .all(|c| c.is_ascii_alphabetic() || (b'2'..=b'7').contains(c));
            if capitals || (base32 && written[4..].iter().any(u8::is_ascii_digit)) {
                push(out, CredentialKind::AwsAccessKey, prefix, at, at..at + 20);
            }
        }
    }
}

fn github_tokens(text: &str, edges: &[usize], out: &mut Vec<CredentialSpan>) {
    let b = text.as_bytes();
    for prefix in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"] {
        for at in word_starts(text, prefix, edges) {
            let len = run(b, at + 4, |c| c.is_ascii_alphanumeric());
            if len >= 30 {
                push(
                    out,
                    CredentialKind::GitHubToken,
                    prefix,
                    at,
                    at..at + 4 + len,
                );
            }
        }
    }
    for at in word_starts(text, "github_pat_", edges) {
        let len = run(b, at + 11, |c| c.is_ascii_alphanumeric() || c == b'_');
        if len >= 22 {
            push(
                out,
                CredentialKind::GitHubToken,
                "github_pat_",
                at,
                at..at + 11 + len,
            );
        }
    }
}

fn assignments(text: &str, edges: &[usize], out: &mut Vec<CredentialSpan>) {
    const KEYWORDS: &[(&str, &str)] = &[
        ("password", "password"),
        ("passwd", "password"),
        ("secret", "secret"),
        ("token", "token"),
        ("api_key", "api_key"),
        ("api-key", "api_key"),
        ("apikey", "apikey"),
        ("access_key", "access_key"),
    ];
    let lower = text.to_ascii_lowercase();
    let b = lower.as_bytes();
    for (keyword, marker) in KEYWORDS {
        let mut covered = 0;
        for at in word_starts(&lower, keyword, edges) {
            if at < covered {
                // Inside the value of an earlier match, already redacted.
                continue;
            }
            let mut i = at + keyword.len();
            i += run(b, i, |c| c == b'"' || c == b'\'');
            i += run(b, i, |c| c == b' ' || c == b'\t');
            if !matches!(b.get(i), Some(b'=') | Some(b':')) {
                continue;
            }
            let colon = b[i] == b':';
            i += 1;
            let spaced = run(b, i, |c| c == b' ' || c == b'\t');
            i += spaced;
            let quote = b.get(i).copied().filter(|c| *c == b'"' || *c == b'\'');
            if quote.is_some() {
                i += 1;
            }
            let Some(&first) = b.get(i) else { continue };
            if first.is_ascii_whitespace() || matches!(first, b'&' | b',' | b';' | b'"' | b'\'') {
                continue;
            }
            let len = match quote {
                Some(q) => run(b, i, |c| c != q && c != b'\n'),
                None => run(b, i, |c| {
                    !c.is_ascii_whitespace() && !matches!(c, b'&' | b',' | b';' | b'"' | b'\'')
                }),
            };
            // Prose (`password: open Settings`): an unquoted word after a
            // colon and a space counts only when it looks like a credential.
            if colon && spaced > 0 && quote.is_none() && !credential_like(&b[i..i + len]) {
                continue;
            }
            // The run stops at ASCII bytes, so `i + len` is a character boundary.
            push(
                out,
                CredentialKind::CredentialAssignment,
                marker,
                at,
                i..i + len,
            );
            covered = i + len;
        }
    }
}

/// The marker a key name is built on, when its word segments (split on
/// `_`, `-`, `.`, spaces and camelCase) include `password`, `secret`,
/// `token`, `apikey`, `api` + `key`, `authorization` or `bearer`; keys that
/// are paths or globs (they hold `/` or `*`) are not names.
pub fn credential_key_name(key: &str) -> Option<&'static str> {
    if key.contains('/') || key.contains('*') {
        return None;
    }
    let segments = key_segments(key);
    for (index, segment) in segments.iter().enumerate() {
        let marker = match segment.as_str() {
            "password" => Some("password"),
            "secret" => Some("secret"),
            "token" => Some("token"),
            "apikey" => Some("apikey"),
            "authorization" => Some("authorization:"),
            "bearer" => Some("bearer "),
            "api" if segments.get(index + 1).map(String::as_str) == Some("key") => Some("api_key"),
            _ => None,
        };
        if marker.is_some() {
            return marker;
        }
    }
    None
}

/// Splits a key into lowercase word segments on separators and camelCase.
fn key_segments(key: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for ch in key.chars() {
        if !ch.is_alphanumeric() {
            if !current.is_empty() {
                segments.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if ch.is_uppercase() && previous_lower && !current.is_empty() {
            segments.push(std::mem::take(&mut current));
        }
        previous_lower = ch.is_lowercase() || ch.is_ascii_digit();
        current.extend(ch.to_lowercase());
    }
    if !current.is_empty() {
        segments.push(current);
    }
    segments
}

#[cfg(test)]
mod tests;
