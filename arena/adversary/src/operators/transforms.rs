//! The pure text and path transforms behind the operators: encodings,
//! character-level disguises, structural wrappers and path rewrites. Each is
//! a function of its input alone; `Operator::apply` decides where in a
//! draft it is applied.

use super::*;

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn base64(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Lowercase hex of the UTF-8 bytes.
pub fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Percent-encoding of every byte outside `A-Za-z0-9-._~`.
pub fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Every ASCII letter as `&#NNN;`.
pub fn html_entities(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphabetic() {
                format!("&#{};", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Every ASCII letter as `\u00XX`.
pub fn json_unicode_escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphabetic() {
                format!("\\u{:04x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The text as a JSON string literal, quotes included.
pub fn json_string_escape(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// Latin letters with a Cyrillic twin swapped for it.
pub fn confusables(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a' => 'а',
            'c' => 'с',
            'e' => 'е',
            'i' => 'і',
            'o' => 'о',
            'p' => 'р',
            's' => 'ѕ',
            'x' => 'х',
            'y' => 'у',
            'A' => 'А',
            'E' => 'Е',
            'I' => 'І',
            'O' => 'О',
            'P' => 'Р',
            'S' => 'Ѕ',
            other => other,
        })
        .collect()
}

/// Printable ASCII as fullwidth forms, spaces as ideographic spaces.
pub fn fullwidth(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '!'..='~' => char::from_u32(c as u32 + 0xfee0).unwrap_or(c),
            ' ' => '\u{3000}',
            other => other,
        })
        .collect()
}

/// Letters and digits as mathematical bold.
pub fn math_bold(text: &str) -> String {
    text.chars()
        .map(|c| {
            let code = match c {
                'A'..='Z' => 0x1d400 + (c as u32 - 'A' as u32),
                'a'..='z' => 0x1d41a + (c as u32 - 'a' as u32),
                '0'..='9' => 0x1d7ce + (c as u32 - '0' as u32),
                _ => return c,
            };
            char::from_u32(code).unwrap_or(c)
        })
        .collect()
}

/// Everything uppercased.
pub fn upper_case(text: &str) -> String {
    text.to_uppercase()
}

/// Letters alternate upper and lower case, starting lower.
pub fn alternating_case(text: &str) -> String {
    let mut upper = false;
    text.chars()
        .map(|c| {
            if !c.is_ascii_alphabetic() {
                return c;
            }
            let out = if upper {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
            upper = !upper;
            out
        })
        .collect()
}

/// `mark` after the `at`-th letter of every word at least `min` letters long.
fn inside_words(text: &str, mark: char, min: usize, at: impl Fn(usize) -> usize) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_alphanumeric() {
            let start = i;
            while i < chars.len() && chars[i].is_alphanumeric() {
                i += 1;
            }
            let word = &chars[start..i];
            let cut = (word.len() >= min).then(|| at(word.len()));
            for (k, c) in word.iter().enumerate() {
                out.push(*c);
                if Some(k + 1) == cut {
                    out.push(mark);
                }
            }
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// A zero-width space after the first letter of every word of three letters or more.
pub fn zero_width_in_words(text: &str) -> String {
    inside_words(text, '\u{200b}', 3, |_| 1)
}

/// A soft hyphen in the middle of every word of four letters or more.
pub fn soft_hyphen_in_words(text: &str) -> String {
    inside_words(text, '\u{00ad}', 4, |n| n / 2)
}

/// A visible cover line, then the text as tag characters (printable ASCII only).
pub fn tag_characters(text: &str) -> String {
    let hidden: String = text
        .chars()
        .filter_map(|c| match c {
            ' '..='~' => char::from_u32(c as u32 + 0xe0000),
            '\n' => char::from_u32(0xe0020),
            _ => None,
        })
        .collect();
    format!("{TAG_COVER}{hidden}")
}

/// A combining diaeresis after every vowel.
pub fn diacritics(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        out.push(c);
        if "aeiouAEIOU".contains(c) {
            out.push('\u{0308}');
        }
    }
    out
}

/// Digits for the letters they resemble.
pub fn leetspeak(text: &str) -> String {
    text.chars()
        .map(|c| match c.to_ascii_lowercase() {
            'i' => '1',
            'o' => '0',
            'e' => '3',
            'a' => '4',
            's' => '5',
            _ => c,
        })
        .collect()
}

/// The text split at the space nearest its middle (or at the middle character).
pub fn split_half(text: &str) -> (String, String) {
    let chars: Vec<char> = text.chars().collect();
    let mid = chars.len() / 2;
    let cut = (0..=mid)
        .flat_map(|d| [mid.saturating_sub(d), (mid + d).min(chars.len())])
        .find(|i| chars.get(*i) == Some(&' '))
        .unwrap_or(mid);
    (
        chars[..cut].iter().collect(),
        chars[cut..]
            .iter()
            .collect::<String>()
            .trim_start()
            .to_string(),
    )
}

/// Inside a Markdown code fence.
pub fn code_fence(text: &str) -> String {
    format!("```text\n{text}\n```")
}

/// Inside an HTML comment.
pub fn html_comment(text: &str) -> String {
    format!("<!-- {text} -->")
}

/// Inside a single-quoted JSON object (a Python dict literal).
pub fn quoted_json(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('\'', "\\'");
    format!("{{'note': '{escaped}'}}")
}

/// Inside a JSON object as an escaped string value.
pub fn nest_json(text: &str) -> String {
    serde_json::json!({ "note": text }).to_string()
}

/// Behind [`PAD_BYTES`] or more of innocent text, on its own line.
pub fn pad_past_window(text: &str) -> String {
    let mut pad = String::with_capacity(PAD_BYTES + PADDING.len());
    while pad.len() < PAD_BYTES {
        pad.push_str(PADDING);
    }
    format!("{}\n{text}", pad.trim_end())
}

/// A space after every `<` that opens a tag, and before every `>`.
pub fn spaced_tags(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (i, c) in chars.iter().enumerate() {
        match c {
            '<' if chars
                .get(i + 1)
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == '/' || *n == '|') =>
            {
                out.push_str("< ");
            }
            '/' if i > 0 && chars[i - 1] == '<' => out.push_str("/ "),
            '>' if i > 0 && chars[i - 1] != ' ' => out.push_str(" >"),
            other => out.push(*other),
        }
    }
    out
}

/// A `./` segment before the last component.
pub fn dot_segment(path: &str) -> String {
    match path.rfind('/') {
        Some(at) => format!("{}/.{}", &path[..at], &path[at..]),
        None => format!("./{path}"),
    }
}

/// A trailing `/.`.
pub fn trailing_dot_segment(path: &str) -> String {
    format!("{}/.", path.trim_end_matches('/'))
}

/// A trailing `/x/..`, which climbs back to the path itself.
pub fn parent_segment(path: &str) -> String {
    format!("{}/x/..", path.trim_end_matches('/'))
}

/// Every `.` as `%2e`.
pub fn percent_encode_path(path: &str) -> String {
    path.replace('.', "%2e")
}

/// Every separator after the first as `\`.
pub fn backslash_separators(path: &str) -> String {
    match path.strip_prefix('/') {
        Some(rest) => format!("/{}", rest.replace('/', "\\")),
        None => path.replace('/', "\\"),
    }
}

/// The last component uppercased.
pub fn path_upper_case(path: &str) -> String {
    match path.rfind('/') {
        Some(at) => format!("{}{}", &path[..at], path[at..].to_uppercase()),
        None => path.to_uppercase(),
    }
}

/// Every `/` doubled.
pub fn double_slash(path: &str) -> String {
    path.replace('/', "//")
}

/// Every `.` as a fullwidth full stop U+FF0E.
pub fn fullwidth_dot(path: &str) -> String {
    path.replace('.', "\u{ff0e}")
}
