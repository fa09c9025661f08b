//! Decoders shared by the content readers (the prompt-injection reader and
//! the credential reader): JSON string escapes, base64 and hex runs.
//!
//! Each decoder is lenient, as a receiver that wants the text back is: an
//! escape it does not know stands for its own character, a trailing partial
//! base64 group or an odd hex digit is dropped. None of them allocates more
//! than its result.

use std::borrow::Cow;
use std::ops::Range;

/// The value of the `len` hex digits at `text[at..]`, when they are all hex.
fn hex_at(text: &str, at: usize, len: usize) -> Option<u32> {
    let digits = text.get(at..at + len)?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

/// One escape sequence at `text[at]` (the backslash): the character it
/// stands for and the index after it. `\uXXXX` (a surrogate pair as one
/// character), `\xXX`, `\n`, `\t`, `\r` are decoded, `\b` and `\f` read as a
/// space, and any other escaped character stands for itself.
pub(crate) fn json_escape(text: &str, at: usize) -> (Option<char>, usize) {
    let Some(next) = text[at + 1..].chars().next() else {
        return (None, at + 1);
    };
    let after = at + 1 + next.len_utf8();
    match next {
        'n' => (Some('\n'), after),
        't' => (Some('\t'), after),
        'r' => (Some('\r'), after),
        'b' | 'f' => (Some(' '), after),
        'x' => match hex_at(text, after, 2).and_then(char::from_u32) {
            Some(c) => (Some(c), after + 2),
            None => (Some('x'), after),
        },
        'u' => {
            let Some(unit) = hex_at(text, after, 4) else {
                return (Some('u'), after);
            };
            if (0xd800..0xdc00).contains(&unit) && text[after + 4..].starts_with("\\u") {
                if let Some(low) =
                    hex_at(text, after + 6, 4).filter(|l| (0xdc00..0xe000).contains(l))
                {
                    let code = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
                    return (char::from_u32(code), after + 10);
                }
            }
            (char::from_u32(unit), after + 4)
        }
        other => (Some(other), after),
    }
}

/// `text` with every escape sequence ([`json_escape`]) decoded once; the
/// text itself when it holds no backslash.
pub(crate) fn json_unescape(text: &str) -> Cow<'_, str> {
    if !text.contains('\\') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut run_start = 0;
    while let Some(found) = text[run_start..].find('\\') {
        let at = run_start + found;
        out.push_str(&text[run_start..at]);
        let (ch, next) = json_escape(text, at);
        out.extend(ch);
        run_start = next;
    }
    out.push_str(&text[run_start..]);
    Cow::Owned(out)
}

/// Whether `b` belongs to the standard or the URL-safe base64 alphabet
/// (padding excluded).
pub(crate) fn is_base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_')
}

/// The maximal runs of `text` whose bytes satisfy `keep`, of at least
/// `min` bytes, in text order. The bytes kept are ASCII, so each run is a
/// character range of `text`.
pub(crate) fn runs<'t>(
    text: &'t str,
    min: usize,
    keep: impl Fn(u8) -> bool + 't,
) -> impl Iterator<Item = Range<usize>> + 't {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            if !keep(bytes[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && keep(bytes[i]) {
                i += 1;
            }
            if i - start >= min {
                return Some(start..i);
            }
        }
        None
    })
}

/// The bytes of one base64 run (either alphabet, no padding); a trailing
/// partial group is decoded as far as it carries whole bytes.
pub(crate) fn base64_bytes(run: &[u8]) -> Vec<u8> {
    let value = |b: u8| -> u32 {
        match b {
            b'A'..=b'Z' => u32::from(b - b'A'),
            b'a'..=b'z' => u32::from(b - b'a') + 26,
            b'0'..=b'9' => u32::from(b - b'0') + 52,
            b'+' | b'-' => 62,
            _ => 63,
        }
    };
    let mut bytes = Vec::with_capacity(run.len() / 4 * 3 + 2);
    for group in run.chunks(4) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (k, b)| n | value(*b) << (18 - 6 * k));
        let keep = match group.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => 0,
        };
        for k in 0..keep {
            bytes.push((n >> (16 - 8 * k)) as u8);
        }
    }
    bytes
}

/// The bytes of one run of hex digits, two digits a byte; an odd last
/// digit is dropped.
pub(crate) fn hex_bytes(run: &[u8]) -> Vec<u8> {
    let digit = |b: u8| -> u8 {
        match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => 0,
        }
    };
    run.chunks_exact(2)
        .map(|pair| digit(pair[0]) << 4 | digit(pair[1]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Escapes decode as JSON spells them, surrogate pairs included; unknown ones stand for their character.
    #[test]
    fn json_escapes() {
        assert_eq!(json_unescape("plain"), Cow::Borrowed("plain"));
        assert_eq!(json_unescape("ghp\\u005fx"), "ghp_x");
        assert_eq!(
            json_unescape("\\ud83d\\ude00 \\x41\\_\\n"),
            "\u{1f600} A_\n"
        );
        assert_eq!(json_unescape("\\uzz \\"), "uzz ");
    }

    // Runs are maximal and at least the minimum; base64 decodes in either alphabet, hex in either case.
    #[test]
    fn runs_and_bytes() {
        let found: Vec<_> = runs("ab cdef g", 2, |b| b.is_ascii_alphabetic()).collect();
        assert_eq!(found, vec![0..2, 3..7]);
        assert_eq!(base64_bytes(b"aGVsbG8"), b"hello");
        assert_eq!(base64_bytes(b"-_-_"), base64_bytes(b"+/+/"));
        assert_eq!(hex_bytes(b"68656C6c6f0"), b"hello");
    }
}
