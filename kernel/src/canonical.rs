//! RFC 8785 (JCS) canonical JSON.
//!
//! Everything the arena hashes, signs or prints as JSON goes through this
//! module, so two machines that hold the same value produce the same bytes.
//! It owns the serialisation rules only: object keys sorted by UTF-16 code
//! units, the minimal string escapes of RFC 8785 section 3.2.2.2, and numbers
//! printed as ECMAScript prints an IEEE 754 double. It refuses an integer
//! beyond 2^53, which JCS cannot represent faithfully, instead of rounding
//! it silently, and a float beyond 2^53, which is what such an integer
//! past the 64-bit range already became when its text was parsed. A float that is not finite is written as `null`, as
//! `serde_json` makes it in a JSON tree (a `serde_json::Value` cannot hold
//! one, so no argument, output or fixture does); [`format_es_number`]
//! refuses it.
//!
//! The bytes are written straight from the value by one `serde` serializer
//! (`writer`); the tree printer it replaced stays in the tests, which hold
//! the writer to it.

use serde::Serialize;
use serde_json::Value;

/// The largest integer magnitude an IEEE 754 double holds exactly; JCS
/// numbers are doubles, so a larger integer would change value when printed.
const MAX_EXACT_INTEGER: u64 = 1 << 53;

/// Why a value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    /// The value could not be turned into a JSON tree at all.
    #[error("value does not serialize to JSON: {0}")]
    Serialize(String),
    /// A NaN or infinite float, which JSON cannot carry.
    #[error("non-finite number has no canonical JSON form; use a finite value")]
    NonFinite,
    /// An integer a double cannot hold exactly.
    #[error(
        "integer {0} exceeds 2^53 and has no exact canonical JSON form; encode it as a string"
    )]
    IntegerOutOfRange(String),
}

mod compound;
mod map_key;
mod unique;
mod writer;
mod written;

pub use written::first_rounded_whole;

pub use unique::{from_slice_unique, is_duplicate_key, DUPLICATE_KEY};

/// Serialises any `Serialize` value to canonical JSON bytes, writing them
/// straight from the value: the bytes, and the errors, of printing the
/// tree `serde_json::to_value(value)` builds.
pub fn to_canonical_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(256);
    writer::write(value, &mut out)?;
    Ok(out)
}

/// Serialises any `Serialize` value to a canonical JSON string.
pub fn to_canonical_string<T: Serialize + ?Sized>(value: &T) -> Result<String, CanonicalError> {
    let bytes = to_canonical_vec(value)?;
    // The writer below only ever emits valid UTF-8; a failure would be a bug
    // in it, reported rather than panicking on the caller's data.
    String::from_utf8(bytes).map_err(|_| {
        CanonicalError::Serialize("the canonical writer produced non-UTF-8 bytes".into())
    })
}

/// Serialises a JSON tree to canonical bytes.
pub fn canonical_bytes(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    to_canonical_vec(value)
}

/// Whether a float lies beyond 2^53 in magnitude. Every such double is a
/// whole number, and it is what an integer literal past the 64-bit range
/// becomes when JSON text is parsed (`18446744073709551623` reads as
/// `1.8446744073709552e19`): its value already changed, so it is refused as
/// an integer past 2^53 is, never signed or forwarded in its rounded form.
pub(crate) fn beyond_exact(f: f64) -> bool {
    f.abs() > MAX_EXACT_INTEGER as f64
}

/// Whether `value` holds a float with a whole value within 2^53, which
/// canonical JSON prints as an integer (`1.0` as `1`).
pub fn has_whole_floats(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64() && whole(n.as_f64()).is_some(),
        Value::Array(items) => items.iter().any(has_whole_floats),
        Value::Object(map) => map.values().any(has_whole_floats),
        _ => false,
    }
}

/// Every float of `value` with a whole value within 2^53 made the integer
/// its canonical text reads back as. A value's meaning is its canonical
/// bytes, which are what is signed and what crosses a process boundary:
/// without this, `1.0` held in memory is a float a check refuses where an
/// integer is wanted, while the same value read back from the wire is `1`,
/// so one topology would admit what another refuses.
pub fn normalize_whole_floats(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(i) = whole(n.as_f64()).filter(|_| n.is_f64()) {
                *value = Value::from(i);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize_whole_floats),
        Value::Object(map) => map.values_mut().for_each(normalize_whole_floats),
        _ => {}
    }
}

/// The integer a float is, when it is whole and within 2^53.
fn whole(f: Option<f64>) -> Option<i64> {
    f.filter(|f| f.fract() == 0.0 && f.abs() <= MAX_EXACT_INTEGER as f64)
        .map(|f| f as i64)
}

/// The path of the first integer in `value` that has no exact canonical
/// form (beyond 2^53 in magnitude, written as an integer or as a float), if any: `root` for `value` itself, then
/// `.key` and `[index]` segments below it (`root` empty starts at the first
/// key). Input boundaries call this to refuse such a value with an error
/// naming the field, instead of failing later when it is printed.
pub fn first_inexact_integer(value: &Value, root: &str) -> Option<String> {
    match value {
        Value::Number(n) => {
            let beyond = match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => u > MAX_EXACT_INTEGER,
                (None, Some(i)) => i.unsigned_abs() > MAX_EXACT_INTEGER,
                // A float: finite, since a JSON tree holds no other.
                (None, None) => n.as_f64().is_some_and(beyond_exact),
            };
            beyond.then(|| root.to_string())
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| first_inexact_integer(item, &format!("{root}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(key, item)| {
            let path = if root.is_empty() {
                key.clone()
            } else {
                format!("{root}.{key}")
            };
            first_inexact_integer(item, &path)
        }),
        Value::Null | Value::Bool(_) | Value::String(_) => None,
    }
}

/// Writes `s` as a JSON string: `"` and `\\` escaped, the control
/// characters as their short escapes or `\u00xx`, everything else as its
/// UTF-8 bytes. Runs that need no escape are copied whole (a byte of a
/// multi-byte character is never one that needs it).
fn write_string(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0C => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1F => &[],
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if short.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0x0F)]);
        } else {
            out.extend_from_slice(short);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Formats a double exactly as ECMAScript `Number.prototype.toString` does
/// (ECMA-262 section 7.1.12.1), which RFC 8785 adopts for numbers.
pub fn format_es_number(f: f64) -> Result<String, CanonicalError> {
    if !f.is_finite() {
        return Err(CanonicalError::NonFinite);
    }
    if f == 0.0 {
        // Both +0 and -0 print as "0".
        return Ok("0".to_string());
    }
    let negative = f < 0.0;
    // Rust's `{:e}` prints the shortest digit string that round-trips,
    // which is the digit string ECMAScript requires.
    let sci = format!("{:e}", f.abs());
    // LowerExp always writes `<digits>e<exponent>`; anything else is refused
    // rather than panicking on the caller's number.
    let unexpected = || CanonicalError::Serialize("unexpected float formatting".to_string());
    let (mantissa, exponent) = sci.split_once('e').ok_or_else(unexpected)?;
    let shortest: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exp: i32 = exponent.parse().map_err(|_| unexpected())?;
    let digits = closest_digits(f.abs(), &shortest, exp);
    let k = digits.len() as i32;
    // n is the position of the decimal point relative to the digit string.
    let n = exp + 1;
    let mut s = String::new();
    if negative {
        s.push('-');
    }
    if k <= n && n <= 21 {
        s.push_str(&digits);
        for _ in 0..(n - k) {
            s.push('0');
        }
    } else if 0 < n && n <= 21 {
        s.push_str(&digits[..n as usize]);
        s.push('.');
        s.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        s.push_str("0.");
        for _ in 0..(-n) {
            s.push('0');
        }
        s.push_str(&digits);
    } else {
        s.push_str(&digits[..1]);
        if k > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        s.push('e');
        let e = n - 1;
        if e >= 0 {
            s.push('+');
        }
        s.push_str(&e.to_string());
    }
    Ok(s)
}

/// Among the digit strings of the shortest length that round-trip,
/// ECMAScript wants the one closest to the exact value, ties to even. Rust's
/// shortest formatter may pick the other neighbour on an exact tie, so this
/// rounds the exact decimal expansion of the double to the same length,
/// half to even, and keeps that when it round-trips.
fn closest_digits(f: f64, shortest: &str, exp: i32) -> String {
    let k = shortest.len();
    // 1,100 fractional digits in scientific form hold any double exactly.
    let exact = format!("{:.1100e}", f);
    let Some((mantissa, exact_exp)) = exact.split_once('e') else {
        return shortest.to_string();
    };
    if exact_exp.parse::<i32>().ok() != Some(exp) || mantissa.len() <= k {
        return shortest.to_string();
    }
    let all: Vec<u8> = mantissa
        .bytes()
        .filter(|b| *b != b'.')
        .map(|b| b - b'0')
        .collect();
    let mut kept: Vec<u8> = all[..k].to_vec();
    let rest = &all[k..];
    let first = rest.first().copied().unwrap_or(0);
    let beyond_nonzero = rest.iter().skip(1).any(|d| *d != 0);
    // Round half to even: above half rounds up, exactly half rounds to even.
    let round_up =
        first > 5 || (first == 5 && (beyond_nonzero || kept.last().is_some_and(|d| d % 2 == 1)));
    if round_up {
        let mut i = kept.len();
        loop {
            if i == 0 {
                // Carry out of the leading digit changes the exponent; the
                // shortest formatter's answer stands in that rare case.
                return shortest.to_string();
            }
            i -= 1;
            if kept[i] == 9 {
                kept[i] = 0;
            } else {
                kept[i] += 1;
                break;
            }
        }
    }
    let candidate: String = kept.iter().map(|d| (b'0' + d) as char).collect();
    let text = format!("{}.{}e{}", &candidate[..1], &candidate[1..], exp);
    match text.parse::<f64>() {
        // The leading digit of a positive double is never 0, so trimming
        // trailing zeros always leaves at least one digit.
        Ok(back) if back == f => candidate.trim_end_matches('0').to_string(),
        _ => shortest.to_string(),
    }
}

/// An object's entries in canonical order (RFC 8785 3.2.3: by the UTF-16
/// code units of the keys), whatever order the map holds them in. Whoever
/// reads a signed value's objects for a decision reads them in this order,
/// so the decision is a function of the signed bytes alone, never of the
/// order a sender (or a parser) happened to leave the keys in.
pub fn canonical_entries(map: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| key_order(a.0, b.0));
    entries
}

/// The canonical order of two object keys: by their UTF-16 code units.
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        // ASCII is one code unit per byte, in the same order.
        return a.as_bytes().cmp(b.as_bytes());
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

#[cfg(test)]
mod tests;
