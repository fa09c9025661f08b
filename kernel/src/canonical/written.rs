//! Numbers as they are written: a fraction that a parser rounds to a whole
//! number.
//!
//! A JSON or TOML parser reads `100.000000000000001` as the binary float
//! `100.0`, and the kernel holds a whole float as the integer it is
//! ([`super::normalize_whole_floats`]), so the fraction would reach a guard
//! as `100`, past an approval threshold of 100 or a limit it exceeds. Only
//! the text tells the two apart, so every boundary that reads numbers from
//! text (a scenario, a trace, an envelope, an MCP message) asks
//! [`first_rounded_whole`] first and refuses what it finds.

use super::MAX_EXACT_INTEGER;

/// The byte offset of the first number in `text` (JSON or TOML, outside
/// strings and comments) written with a fraction or an exponent whose
/// value is not exactly the whole number it parses to, if any. A number
/// that parses to a fraction, past 2^53 or to no finite float is left to
/// the checks of range and fraction that follow parsing.
pub fn first_rounded_whole(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' => i = skip_past(b, i, b"\n"),
            b'"' if b[i..].starts_with(b"\"\"\"") => i = skip_string(b, i + 3, b"\"\"\"", true),
            b'\'' if b[i..].starts_with(b"'''") => i = skip_string(b, i + 3, b"'''", false),
            b'"' => i = skip_string(b, i + 1, b"\"", true),
            b'\'' => i = skip_string(b, i + 1, b"'", false),
            c if starts_token(c) && token_starts_at(b, i) => {
                let end = i + b[i..]
                    .iter()
                    .take_while(|c| in_token(**c) || **c == b':')
                    .count();
                if !is_key(b, end) && rounds(&text[i..end]) {
                    return Some(i);
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    None
}

fn starts_token(c: u8) -> bool {
    c.is_ascii_digit() || c == b'+' || c == b'-' || c == b'.'
}

fn in_token(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'+' | b'-')
}

/// Whether a token starts at `i`: after a separator, or after the colon
/// of a JSON member (`"a":1.5`), not inside a time (`07:32:00.5`), whose
/// colons continue its token.
fn token_starts_at(b: &[u8], i: usize) -> bool {
    match i.checked_sub(1).map(|p| b[p]) {
        None => true,
        Some(b':') => !(i >= 2 && b[i - 2].is_ascii_digit()),
        Some(prev) => !in_token(prev),
    }
}

/// Whether the token ending at `end` is a TOML key (`1.5 = ...`).
fn is_key(b: &[u8], end: usize) -> bool {
    b[end..]
        .iter()
        .find(|c| !matches!(c, b' ' | b'\t'))
        .is_some_and(|c| *c == b'=')
}

/// The offset just past the first `close` at or after `from`.
fn skip_past(b: &[u8], from: usize, close: &[u8]) -> usize {
    (from..b.len())
        .find(|at| b[*at..].starts_with(close))
        .map_or(b.len(), |at| at + close.len())
}

/// The offset just past a string's closing delimiter, honouring
/// backslash escapes where the string kind has them.
fn skip_string(b: &[u8], mut at: usize, close: &[u8], escapes: bool) -> usize {
    while at < b.len() {
        if escapes && b[at] == b'\\' {
            at += 2;
        } else if b[at..].starts_with(close) {
            return at + close.len();
        } else {
            at += 1;
        }
    }
    b.len()
}

/// Whether `token` is a number written with a fraction or an exponent
/// that parses to a whole number within 2^53 other than its written value.
fn rounds(token: &str) -> bool {
    let plain: String = token.chars().filter(|c| *c != '_').collect();
    let Some((digits, exponent)) = decimal(&plain) else {
        return false;
    };
    let Ok(f) = plain.parse::<f64>() else {
        return false;
    };
    if !f.is_finite() || f.fract() != 0.0 || f.abs() > MAX_EXACT_INTEGER as f64 {
        return false;
    }
    let Some(exponent) = exponent else {
        // An exponent past i64 that still parses to a whole number is a
        // fraction rounded to zero.
        return true;
    };
    trimmed(&digits, exponent) != trimmed(&(f.abs() as u64).to_string(), 0)
}

/// The digits and the power of ten of a number written with a fraction or
/// an exponent (`None` for any other token); the exponent is `None` when it
/// does not fit an `i64`.
fn decimal(plain: &str) -> Option<(String, Option<i64>)> {
    let unsigned = plain.strip_prefix(['+', '-']).unwrap_or(plain);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits_only = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
    let fractional = mantissa.contains('.');
    if whole.is_empty() || !digits_only(whole) || !digits_only(fraction) {
        return None;
    }
    if (fractional && fraction.is_empty()) || (!fractional && exponent.is_none()) {
        return None;
    }
    let power = match exponent {
        Some(e) => {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits_only(digits) {
                return None;
            }
            e.parse::<i64>().ok()
        }
        None => Some(0),
    };
    let scale = i64::try_from(fraction.len()).ok();
    let power = power.zip(scale).and_then(|(p, s)| p.checked_sub(s));
    Some((format!("{whole}{fraction}"), power))
}

/// `digits x 10^exponent` with leading and trailing zeros taken off, for
/// comparing two written values exactly.
fn trimmed(digits: &str, exponent: i64) -> (String, i64) {
    let significant = digits.trim_start_matches('0');
    let kept = significant.trim_end_matches('0');
    if kept.is_empty() {
        return (String::new(), 0);
    }
    let zeros = i64::try_from(significant.len() - kept.len()).unwrap_or(i64::MAX);
    (kept.to_string(), exponent.saturating_add(zeros))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fractions_rounded_to_whole_numbers_are_found() {
        for text in [
            "a = 100.000000000000001",
            "{\"amount\": 100.000000000000001}",
            "x = [1, 2, 99.99999999999999999]",
            "n = 1.0000000000000000001e2",
            "n = 1e-400",
            "{\"a\":100.000000000000001}",
            "[1,2.00000000000000001]",
            "n = -7.0000000000000000001",
            "n = 1_000.000_000_000_000_000_1",
            "n = 1e-99999999999999999999999",
        ] {
            assert!(first_rounded_whole(text).is_some(), "{text}");
        }
        let at =
            first_rounded_whole("a = \"100.000000000000001\"\nb = 5.00000000000000001").unwrap();
        assert_eq!(at, 30);
    }

    #[test]
    fn exact_numbers_strings_comments_dates_and_keys_pass() {
        for text in [
            "a = 100.0",
            "a = 100.000",
            "a = 1e3",
            "a = 1.5e1",
            "a = 0.5",
            "a = 0.1",
            "a = 100.0e0 # no: this one is in a comment 7.00000000000000001",
            "a = \"7.00000000000000001\"",
            "a = '7.00000000000000001'",
            "a = '''7.00000000000000001'''",
            "a = \"\"\"x \\\" 7.00000000000000001\"\"\"",
            "{\"k\": \"\\\" 7.00000000000000001\"}",
            "d = 1979-05-27T07:32:00.000000000000001Z",
            "t = 07:32:00.99999999999999999",
            "1.00000000000000000001 = 3",
            "a = 9007199254740993.5",
            "a = 1e400",
            "a = 0",
            "a = -0.0",
            "a = 1_000.0",
            "v = [1.25, 2.5e-1, 3]",
            "ip = \"1.2.3.4\"",
        ] {
            assert_eq!(first_rounded_whole(text), None, "{text}");
        }
    }

    proptest! {
        // Whatever the text, the scan ends without a panic.
        #[test]
        fn any_text_is_scanned(text in ".{0,200}") {
            let _ = first_rounded_whole(&text);
        }

        // A whole number written with trailing zeros after its point, or as
        // its exact decimal with an exponent, is exact; with one more
        // non-zero digit far past the point, it is found.
        #[test]
        fn whole_numbers_exact_or_rounded(n in 1u64..(1 << 53), zeros in 1usize..30) {
            let exact = format!("a = {n}.{}", "0".repeat(zeros));
            prop_assert_eq!(first_rounded_whole(&exact), None);
            let rounded = format!("a = {n}.{}1", "0".repeat(zeros.max(17)));
            prop_assert_eq!(first_rounded_whole(&rounded), Some(4));
        }
    }
}
