//! The forms a credential is read in: a content check reads a value the
//! way a receiver can recover it, not only as it is written.
//!
//! A text is read in three forms ([`Form`]):
//!
//! - as written;
//! - its normal form ([`normal_form`]): `%XX` escapes decoded, JSON string
//!   escapes (`\uXXXX`, surrogate pairs, `\xXX`, `\_`) decoded, invisible
//!   and formatting characters removed (the injection reader's set: zero
//!   width space and joiners, word joiner, byte order mark, soft hyphen,
//!   bidi controls, tag characters, ...) together with the no-break spaces
//!   (U+00A0, U+2007, U+202F), which a token never holds, then Unicode NFKC,
//!   so a fullwidth `ｇhp_` reads `ghp_`;
//! - decoded: every run of at least [`MIN_BASE64_RUN`] base64 characters
//!   (standard or URL-safe alphabet) and of at least [`MIN_HEX_RUN`] hex
//!   digits is decoded (a base64 run also from after each of its first
//!   punctuation characters, so `/etc/` glued before it does not shift the
//!   decoding), and the decoded text is read as written, in its
//!   normal form and decoded once more. Only a credential shape in the
//!   decoded text counts, so a SHA-1 or SHA-256 digest in hex, a UUID or
//!   the base64 of ordinary text decode to nothing found.
//!
//! [`find_in_forms`] reads one text; [`find_across`] reads several texts
//! (the string values of one call or of one output) joined in the order
//! given by a separator, in the same three forms, and reports only what
//! lies in two or more of them. In the join each text's edges count as
//! word edges (a token is found whatever its neighbours are), an escape
//! cut between two texts (`ghp%5` and `F...`) is read whole, and a base64
//! or hex run across texts is decoded from each text's edge as well, so a
//! neighbour glued to it does not shift the decoding.
//!
//! A text spread over two calls is never joined: each call is read alone.

use std::borrow::Cow;
use std::ops::Range;

use unicode_normalization::UnicodeNormalization;

use super::{find_credentials_with_edges, CredentialKind, CredentialSpan, REDACTED};
use crate::decode::{base64_bytes, hex_bytes, is_base64_byte, json_unescape, runs};
use crate::guards::prompt_injection::is_invisible;

/// Base64 runs shorter than this are not decoded: 16 characters carry 12
/// bytes, less than the shortest credential shape worth a decode.
pub const MIN_BASE64_RUN: usize = 16;

/// Hex runs shorter than this are not decoded (12 bytes, as for base64).
pub const MIN_HEX_RUN: usize = 24;

/// How many times decoded text is decoded again.
const DECODE_DEPTH: usize = 2;

/// The form of a text a credential was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Form {
    /// The text as written.
    Written,
    /// Its normal form ([`normal_form`]).
    Normal,
    /// A base64 or hex run of it, decoded.
    Decoded,
}

impl Form {
    /// The kebab-case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Form::Written => "as-written",
            Form::Normal => "normal-form",
            Form::Decoded => "decoded",
        }
    }
}

/// One credential found in one form of a text, or of texts read together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormFinding {
    /// The shape that matched.
    pub kind: CredentialKind,
    /// Its public marker; safe to print, unlike the credential.
    pub marker: &'static str,
    /// The form it was read in.
    pub form: Form,
    /// The texts it lies in, its marker included, as positions in the
    /// slice read (for one text, `0..1`).
    pub parts: Range<usize>,
    /// Read as written: the credential's byte range in each text it
    /// touches (position, range); empty for the other forms, where the
    /// whole of each text in `parts` carries it.
    pub secret: Vec<(usize, Range<usize>)>,
}

/// Whether `c` is removed in the normal form: an invisible or formatting
/// character, or a no-break space.
fn is_removed(c: char) -> bool {
    is_invisible(c) || matches!(c, '\u{a0}' | '\u{2007}' | '\u{202f}')
}

/// The normal form of `text` (see the module documentation); `text` itself
/// when nothing in it changes.
pub fn normal_form(text: &str) -> Cow<'_, str> {
    let plain = text.is_ascii()
        && !text.bytes().any(|b| b == b'%' || b == b'\\')
        && !text.chars().any(is_invisible);
    if plain {
        return Cow::Borrowed(text);
    }
    let decoded = crate::path::percent_decode(text);
    let unescaped = json_unescape(&decoded);
    let normal: String = unescaped
        .chars()
        .filter(|c| !is_removed(*c))
        .nfkc()
        .filter(|c| !is_removed(*c))
        .collect();
    if normal == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(normal)
    }
}

/// Texts joined by a separator, with where each one lies in the join.
struct Layout {
    /// The joined text.
    text: String,
    /// The byte range of each part in `text`.
    bounds: Vec<Range<usize>>,
    /// Where parts start and end, sorted, once each.
    edges: Vec<usize>,
}

impl Layout {
    fn join<S: AsRef<str>>(parts: &[S], separator: &str) -> Layout {
        let mut text = String::new();
        let mut bounds = Vec::with_capacity(parts.len());
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                text.push_str(separator);
            }
            let start = text.len();
            text.push_str(part.as_ref());
            bounds.push(start..text.len());
        }
        let mut edges: Vec<usize> = bounds.iter().flat_map(|b| [b.start, b.end]).collect();
        edges.dedup();
        Layout {
            text,
            bounds,
            edges,
        }
    }

    /// The spans of `kinds` in the joined text, each part's edges read as
    /// word edges.
    fn spans(&self, kinds: &[CredentialKind]) -> Vec<CredentialSpan> {
        spans_of(&self.text, &self.edges, kinds)
    }

    /// The positions of the parts `range` overlaps.
    fn parts_of(&self, range: &Range<usize>) -> Range<usize> {
        let first = self.bounds.partition_point(|b| b.end <= range.start);
        let last = self.bounds.partition_point(|b| b.start < range.end);
        first..last.max(first)
    }

    /// `range` cut to each part it touches, in the part's own offsets.
    fn secret_in_parts(&self, range: &Range<usize>) -> Vec<(usize, Range<usize>)> {
        self.parts_of(range)
            .filter_map(|p| {
                let b = &self.bounds[p];
                let (start, end) = (range.start.max(b.start), range.end.min(b.end));
                (start < end).then(|| (p, start - b.start..end - b.start))
            })
            .collect()
    }
}

/// The spans of `kinds` in `text` (with word edges at `edges`), without
/// the ones that are only a redaction already made (`password=[REDACTED]`).
fn spans_of(text: &str, edges: &[usize], kinds: &[CredentialKind]) -> Vec<CredentialSpan> {
    find_credentials_with_edges(text, edges)
        .into_iter()
        .filter(|s| kinds.contains(&s.kind) && &text[s.start..s.end] != REDACTED)
        .collect()
}

/// Every credential of `kinds` in one text, as written first, then in its
/// normal form, then decoded.
pub fn find_all_in_forms(text: &str, kinds: &[CredentialKind]) -> Vec<FormFinding> {
    read(&[text], "", kinds, false)
}

/// The first credential of `kinds` in one text in any form.
pub fn find_in_forms(text: &str, kinds: &[CredentialKind]) -> Option<FormFinding> {
    find_all_in_forms(text, kinds).into_iter().next()
}

/// The credentials of `kinds` in `parts` read together, joined by
/// `separator` in the order given, that lie in two or more of them.
pub fn find_across(parts: &[&str], separator: &str, kinds: &[CredentialKind]) -> Vec<FormFinding> {
    if parts.len() < 2 {
        return Vec::new();
    }
    read(parts, separator, kinds, true)
}

/// Reads `parts` joined by `separator` in every form; with `across`, only
/// what lies in two or more parts is kept.
fn read(
    parts: &[&str],
    separator: &str,
    kinds: &[CredentialKind],
    across: bool,
) -> Vec<FormFinding> {
    let mut out = Vec::new();
    let written = Layout::join(parts, separator);
    read_layout(&written, Form::Written, kinds, &mut out);
    // Joined by nothing, an escape cut between two parts (`ghp%5` and
    // `F...`) is whole again in the join: each part's cut escape is read
    // at the start of the next.
    let healed = if separator.is_empty() {
        heal(parts)
    } else {
        parts.iter().map(|p| p.to_string()).collect()
    };
    let normals: Vec<Cow<'_, str>> = healed.iter().map(|p| normal_form(p)).collect();
    let normal = normals
        .iter()
        .zip(parts)
        .any(|(n, p)| n != p)
        .then(|| Layout::join(&normals, separator));
    if let Some(normal) = &normal {
        read_layout(normal, Form::Normal, kinds, &mut out);
    }
    for layout in std::iter::once(&written).chain(&normal) {
        read_decoded(layout, kinds, across, &mut out);
    }
    if across {
        out.retain(|f| f.parts.len() >= 2);
    }
    out
}

/// `parts` with the escape each one ends in before it is complete moved
/// to the start of the next part.
fn heal(parts: &[&str]) -> Vec<String> {
    let mut out = Vec::with_capacity(parts.len());
    let mut carry = String::new();
    for (i, part) in parts.iter().enumerate() {
        let mut whole = std::mem::take(&mut carry);
        whole.push_str(part);
        if i + 1 < parts.len() {
            // The escape is ASCII, so the cut is a character boundary.
            carry = whole.split_off(whole.len() - cut_escape(whole.as_bytes()));
        }
        out.push(whole);
    }
    out
}

/// The length of the escape `text` ends in before it is complete: `%`
/// with at most one hex digit, or a backslash that is not itself escaped,
/// alone or with `u` and at most three hex digits or `x` and at most one.
fn cut_escape(text: &[u8]) -> usize {
    let n = text.len();
    let hex = |b: &u8| b.is_ascii_hexdigit();
    if text.ends_with(b"%") || (n >= 2 && text[n - 2] == b'%' && hex(&text[n - 1])) {
        return if text.ends_with(b"%") { 1 } else { 2 };
    }
    (1..=n.min(5))
        .find(|&len| {
            let (before, tail) = text.split_at(n - len);
            let cut = match &tail[1..] {
                [] => true,
                [b'u', digits @ ..] => digits.len() <= 3 && digits.iter().all(hex),
                [b'x', digits @ ..] => digits.len() <= 1 && digits.iter().all(hex),
                _ => false,
            };
            let escaped = before.iter().rev().take_while(|b| **b == b'\\').count() % 2 == 1;
            tail[0] == b'\\' && cut && !escaped
        })
        .unwrap_or(0)
}

/// Pushes the credentials of a layout's text as written or normalised.
fn read_layout(layout: &Layout, form: Form, kinds: &[CredentialKind], out: &mut Vec<FormFinding>) {
    for span in layout.spans(kinds) {
        let secret = match form {
            Form::Written => layout.secret_in_parts(&(span.start..span.end)),
            _ => Vec::new(),
        };
        out.push(FormFinding {
            kind: span.kind,
            marker: span.marker,
            form,
            parts: layout.parts_of(&(span.from..span.end)),
            secret,
        });
    }
}

/// A decoder of a run of text.
type Decoder = fn(&[u8]) -> Vec<u8>;

/// The decodable runs of `text`: base64 runs, then hex runs, each with its
/// decoder and the shortest stretch worth decoding.
fn decodable_runs(text: &str) -> impl Iterator<Item = (Range<usize>, Decoder, usize)> + '_ {
    let base64 = runs(text, MIN_BASE64_RUN, is_base64_byte)
        .flat_map(|r| realigned(text.as_bytes(), r))
        .map(|r| (r, base64_bytes as Decoder, MIN_BASE64_RUN));
    let hex = runs(text, MIN_HEX_RUN, |b| b.is_ascii_hexdigit())
        .map(|r| (r, hex_bytes as Decoder, MIN_HEX_RUN));
    base64.chain(hex)
}

/// How many starts after a punctuation character of a base64 run are
/// decoded besides the run's own start.
const REALIGNED_STARTS: usize = 4;

/// A base64 run, then the rest of it after each of its first
/// [`REALIGNED_STARTS`] punctuation characters (`/`, `+`, `-`, `_`) that
/// leaves [`MIN_BASE64_RUN`] characters: base64 glued to a path or a word
/// (`/etc/Z2hw...`) is decoded from where it starts, not shifted by what
/// precedes it.
fn realigned(text: &[u8], run: Range<usize>) -> impl Iterator<Item = Range<usize>> {
    let end = run.end;
    let starts: Vec<usize> = (run.start..end)
        .filter(|&i| matches!(text[i], b'/' | b'+' | b'-' | b'_'))
        .map(|i| i + 1)
        .filter(|&start| end - start >= MIN_BASE64_RUN)
        .take(REALIGNED_STARTS)
        .collect();
    std::iter::once(run).chain(starts.into_iter().map(move |start| start..end))
}

/// Pushes the credentials found in the decoded runs of a layout's text.
fn read_decoded(
    layout: &Layout,
    kinds: &[CredentialKind],
    across: bool,
    out: &mut Vec<FormFinding>,
) {
    for (run, decode, min) in decodable_runs(&layout.text) {
        for window in windows(layout, &run, across, min) {
            let decoded = decode(&layout.text.as_bytes()[window.clone()]);
            if let Some((kind, marker)) = decoded_credential(&decoded, kinds, DECODE_DEPTH - 1) {
                out.push(FormFinding {
                    kind,
                    marker,
                    form: Form::Decoded,
                    parts: layout.parts_of(&window),
                    secret: Vec::new(),
                });
            }
        }
    }
}

/// The stretches of a run to decode: the run itself; read `across` parts,
/// only a run that lies in two or more, and then also each stretch of its
/// pieces of two to four neighbouring parts (at least `min` long), so a
/// neighbour glued to either end does not shift the decoding.
fn windows(layout: &Layout, run: &Range<usize>, across: bool, min: usize) -> Vec<Range<usize>> {
    if !across {
        return vec![run.clone()];
    }
    if layout.parts_of(run).len() < 2 {
        return Vec::new();
    }
    let inside = layout
        .edges
        .iter()
        .filter(|&&e| run.start < e && e < run.end);
    let points: Vec<usize> = std::iter::once(run.start)
        .chain(inside.copied())
        .chain(std::iter::once(run.end))
        .collect();
    let mut out = vec![run.clone()];
    for i in 0..points.len() {
        for j in i + 2..points.len().min(i + 5) {
            let window = points[i]..points[j];
            if window != *run && window.len() >= min {
                out.push(window);
            }
        }
    }
    out
}

/// The first credential of `kinds` in decoded bytes, read as text (bytes
/// that are not UTF-8 and control characters read as spaces) as written,
/// in its normal form, and, while `depth` allows, decoded again.
fn decoded_credential(
    bytes: &[u8],
    kinds: &[CredentialKind],
    depth: usize,
) -> Option<(CredentialKind, &'static str)> {
    let text: String = String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| {
            if (c.is_control() && !c.is_whitespace()) || c == '\u{fffd}' {
                ' '
            } else {
                c
            }
        })
        .collect();
    let first = |t: &str| spans_of(t, &[], kinds).first().map(|s| (s.kind, s.marker));
    let normal = normal_form(&text);
    let found = first(&text).or_else(|| match &normal {
        Cow::Owned(normal) => first(normal),
        Cow::Borrowed(_) => None,
    });
    if found.is_some() || depth == 0 {
        return found;
    }
    let found = decodable_runs(&normal).find_map(|(run, decode, _)| {
        decoded_credential(&decode(&normal.as_bytes()[run]), kinds, depth - 1)
    });
    found
}

#[cfg(test)]
pub(crate) mod tests;
