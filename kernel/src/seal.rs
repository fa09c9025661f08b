//! Sealed argument values: what a kernel may never write into evidence.
//!
//! A request may name some of its arguments as sealed
//! ([`crate::request::ToolCallRequest::sealed`]): values a test reads from
//! a secret file so that a guard can be tried on a real credential. The
//! kernel checks them like every argument, and the guards see them, but
//! no text the kernel writes (a receipt's reason, an observed finding, a
//! stage or guard answer of the decision trace) may carry one. Reasons
//! quote argument values in several shapes (as written, escaped, cut to a
//! printable length), so the rule is not about one shape: no run of
//! [`WINDOW`] characters of a sealed value survives in any such text.
//! Every maximal stretch of text covered by windows of a sealed value is
//! replaced by [`MARK`]; at most `WINDOW - 1` characters of a sealed value
//! can therefore ever stand together in evidence, and sealed values
//! shorter than [`WINDOW`] are refused where they are declared.
//!
//! The receipt keeps the SHA-256 of the arguments as always, so what was
//! sent stays bound to the decision.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::credentials::{reading, CredentialKind};

/// The length of the runs of a sealed value no evidence text may hold,
/// and the least length of a sealed value.
pub const WINDOW: usize = 8;

/// What stands in evidence where a sealed value was.
pub const MARK: &str = "<sealed>";

/// The windows of the sealed values of one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seal {
    windows: BTreeSet<Vec<char>>,
}

impl Seal {
    /// The seal of `arguments` for the JSON pointers in `sealed`: each
    /// value found there is sealed (a string as its text, any other value
    /// as its JSON text and every string inside it). A pointer that finds
    /// nothing seals nothing: the request is judged on what it carries.
    /// Every string of the arguments that holds a credential is sealed too
    /// (in any form, or split across strings, as the one reader
    /// [`crate::credentials::reading`] finds it), whether or not the request
    /// names it: a credential a caller sent in
    /// the clear (an MCP client's argument) never reaches a reason, a
    /// trace or a receipt, and reads there as the same mark as one the
    /// request names.
    pub fn of(arguments: &Value, sealed: &[String]) -> Seal {
        let mut seal = Seal::default();
        for pointer in sealed {
            if let Some(value) = arguments.pointer(pointer) {
                seal.add_value(value);
            }
        }
        let texts: Vec<&str> = crate::provenance::scalar_leaves(arguments)
            .into_iter()
            .filter_map(|(_, value)| value.as_str())
            .filter(|text| !text.is_empty())
            .collect();
        for text in &texts {
            if reading::credential_in(text).is_some() {
                seal.add_text(text);
            }
        }
        for split in reading::splits(&texts, &CredentialKind::ALL) {
            split.parts.iter().for_each(|&p| seal.add_text(texts[p]));
        }
        seal
    }

    /// The seal of every text in `texts`: the sealed values of a whole
    /// run, to find them again wherever a value travelled, in every form a
    /// server may give one back (see [`Seal::add_text`]).
    pub fn of_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> Seal {
        let mut seal = Seal::default();
        texts.into_iter().for_each(|text| seal.add_text(text));
        seal
    }

    /// The windows of every text in `texts` as written and escaped only:
    /// for texts that are already every form of what a server said
    /// (`crate::provenance::Echoes`).
    pub(crate) fn of_written<'a>(texts: impl IntoIterator<Item = &'a str>) -> Seal {
        let mut seal = Seal::default();
        texts.into_iter().for_each(|text| seal.add_written(text));
        seal
    }

    /// Whether `text` holds a run of [`WINDOW`] characters of a sealed
    /// value.
    pub fn holds(&self, text: &str) -> bool {
        if self.windows.is_empty() {
            return false;
        }
        let chars: Vec<char> = text.chars().collect();
        chars
            .windows(WINDOW)
            .any(|window| self.windows.contains(window))
    }

    /// Whether `text`, in any form a server may give text back
    /// (`crate::provenance::echo_forms`), holds a run of [`WINDOW`]
    /// characters of a sealed value: a text that would show one once
    /// decoded (a fixture file a server serves, percent-encoded).
    pub fn holds_in_any_form(&self, text: &str) -> bool {
        !self.windows.is_empty()
            && crate::provenance::echo_forms(text)
                .iter()
                .any(|form| self.holds(form))
    }

    /// The JSON pointers of the strings of `value` that hold a run of a
    /// sealed value (a reference resolves to values, never to keys),
    /// in document order: the places a value taken from a sealed one
    /// reached, however it got there.
    pub fn pointers_holding(&self, value: &Value) -> Vec<String> {
        if self.windows.is_empty() {
            return Vec::new();
        }
        string_leaves(value)
            .into_iter()
            .filter(|(_, text)| self.holds(text))
            .map(|(at, _)| at)
            .collect()
    }

    fn add_value(&mut self, value: &Value) {
        match value {
            Value::String(text) => self.add_text(text),
            Value::Array(items) => items.iter().for_each(|item| self.add_value(item)),
            Value::Object(members) => members.values().for_each(|item| self.add_value(item)),
            _ => {}
        }
        if !value.is_string() {
            self.add_text(&value.to_string());
        }
    }

    /// Adds the windows of `text` in every form a server may give it back
    /// and the echo rule reads (`crate::provenance::echo_forms`:
    /// percent-decoded layer after layer, normalised as a path, compacted,
    /// in lower case), each as written and escaped ([`Seal::add_written`]):
    /// a sealed path a workspace answers decoded and normalised, taken by
    /// reference into another call, stays sealed there.
    fn add_text(&mut self, text: &str) {
        for form in crate::provenance::echo_forms(text) {
            self.add_written(&form);
        }
    }

    /// Adds the windows of `text` as written and as a reason may quote it
    /// escaped (Rust's `{:?}`, a JSON string), so an escaped quote or
    /// backslash does not break every window of it.
    fn add_written(&mut self, text: &str) {
        let debug = format!("{text:?}");
        let json = serde_json::to_string(text).unwrap_or_default();
        for form in [text, unquoted(&debug), unquoted(&json)] {
            let chars: Vec<char> = form.chars().collect();
            for window in chars.windows(WINDOW) {
                self.windows.insert(window.to_vec());
            }
        }
    }

    /// Whether nothing is sealed.
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// `text` with every stretch covered by windows of a sealed value
    /// replaced by [`MARK`].
    pub fn scrub(&self, text: &str) -> String {
        if self.windows.is_empty() {
            return text.to_string();
        }
        let chars: Vec<char> = text.chars().collect();
        let mut covered = vec![false; chars.len()];
        for (start, window) in chars.windows(WINDOW).enumerate() {
            if self.windows.contains(window) {
                covered[start..start + WINDOW].fill(true);
            }
        }
        let mut out = String::with_capacity(text.len());
        let mut in_mark = false;
        for (c, hidden) in chars.iter().zip(covered) {
            match (hidden, in_mark) {
                (true, false) => {
                    out.push_str(MARK);
                    in_mark = true;
                }
                (true, true) => {}
                (false, _) => {
                    out.push(*c);
                    in_mark = false;
                }
            }
        }
        out
    }

    /// [`Self::scrub`] of an optional text.
    pub fn scrub_opt(&self, text: &mut Option<String>) {
        if let Some(text) = text {
            *text = self.scrub(text);
        }
    }

    /// [`Self::scrub`] in place.
    pub fn scrub_in(&self, text: &mut String) {
        if !self.windows.is_empty() {
            *text = self.scrub(text);
        }
    }
}

/// `quoted` without its surrounding double quotes.
fn unquoted(quoted: &str) -> &str {
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(quoted)
}

/// Every string inside `value` with its JSON pointer, in document order.
pub fn string_leaves(value: &Value) -> Vec<(String, &str)> {
    fn walk<'v>(value: &'v Value, at: String, found: &mut Vec<(String, &'v str)>) {
        match value {
            Value::String(text) => found.push((at, text)),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, format!("{at}/{i}"), found);
                }
            }
            Value::Object(members) => {
                for (key, item) in members {
                    let place = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                    walk(item, place, found);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(value, String::new(), &mut found);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const SECRET: &str = "correct-horse-battery-staple";

    // An encoded credential and the pieces of a split one are sealed as the
    // guard reads them, whether or not the request names them.
    #[test]
    fn credentials_in_any_form_are_sealed() {
        let encoded = "Z2hwXzE2QzdlNDJGMjkyYzY5MTJFNzcxMGM4MzgzNDdBZTE3OEI0YQ==";
        let seal = Seal::of(&json!({"a": encoded, "n": "plain words"}), &[]);
        assert!(seal.holds(encoded));
        assert!(!seal.holds("plain words"));
        let split = json!({"t": "ghp_16C7e42F292c6912", "b": "E7710c838347Ae178B4a"});
        let seal = Seal::of(&split, &[]);
        assert!(seal.holds("ghp_16C7e42F292c6912") && seal.holds("E7710c838347Ae178B4a"));
    }

    // Proves a sealed value is hidden as written, escaped, cut short and inside longer text, and other text is kept.
    #[test]
    fn sealed_values_leave_no_window_in_text() {
        let seal = Seal::of(&json!({"path": SECRET, "n": 1}), &["/path".to_string()]);
        assert_eq!(
            seal.scrub(&format!("path {SECRET} escapes the root")),
            "path <sealed> escapes the root"
        );
        assert_eq!(
            seal.scrub(&format!("path {:?} contains", SECRET)),
            "path \"<sealed>\" contains"
        );
        assert_eq!(
            seal.scrub("path correct-hor... is cut"),
            "path <sealed>... is cut"
        );
        assert_eq!(seal.scrub("nothing secret here"), "nothing secret here");
        assert_eq!(seal.scrub("correct"), "correct");
        // A value full of quotes and backslashes, quoted escaped (`{:?}`,
        // JSON), leaves no run of 8 of its escaped characters either.
        let odd = "K\"7\\q\"9\\w\"2\\x\"5\\z\"8\\m\"1\\";
        let seal = Seal::of(&json!({"c": odd}), &["/c".to_string()]);
        for quoted in [
            format!("argument currency names {odd:?}"),
            format!(
                "argument currency names {}",
                serde_json::to_string(odd).unwrap()
            ),
            format!("argument currency names {odd}"),
        ] {
            let scrubbed = seal.scrub(&quoted);
            assert!(scrubbed.contains(MARK), "{scrubbed}");
            assert!(!scrubbed.contains("q\\\"9"), "{scrubbed}");
        }
    }

    // Proves pointers that find nothing seal nothing, and a sealed object seals its strings.
    #[test]
    fn a_seal_covers_what_its_pointers_find() {
        let args = json!({"a": {"token": SECRET}, "b": "plain text value"});
        assert!(Seal::of(&args, &["/missing".to_string()]).is_empty());
        let seal = Seal::of(&args, &["/a".to_string()]);
        assert_eq!(seal.scrub(SECRET), MARK);
        assert_eq!(seal.scrub("plain text value"), "plain text value");
    }

    /// `text` with every third character percent-encoded: no run of
    /// [`WINDOW`] characters of it is a run of `text`.
    fn every_third_encoded(text: &str) -> String {
        text.chars()
            .enumerate()
            .map(|(i, c)| match i % 3 {
                2 => format!("%{:02X}", c as u32),
                _ => c.to_string(),
            })
            .collect()
    }

    // Proves a sealed value is found and hidden in every form a server may give it back (percent-decoded, normalised as a path, with `\` for `/`, with `.` and `..` segments collapsed, in lower case), as the echo rule reads them, and text sharing no run with any form is kept.
    #[test]
    fn a_sealed_value_is_hidden_in_its_decoded_forms() {
        let path = "/workspace/notes/Tr0ub4dor-and-3-horse-staples-9Qx";
        for sealed in [
            every_third_encoded(path),
            every_third_encoded(&path.replace('/', "\\")),
            every_third_encoded("/workspace/./notes/x/../Tr0ub4dor-and-3-horse-staples-9Qx"),
            every_third_encoded(&path.to_uppercase()),
        ] {
            let seal = Seal::of_texts([sealed.as_str()]);
            let echoed = path.to_lowercase();
            assert!(seal.holds(&echoed), "{sealed}");
            assert_eq!(
                seal.pointers_holding(&json!({"path": echoed})),
                ["/path"],
                "{sealed}"
            );
            let reason = format!("path {echoed} (argument /path) is outside");
            let scrubbed = seal.scrub(&reason);
            assert!(!scrubbed.contains("tr0ub4do"), "{scrubbed}");
            assert!(!scrubbed.contains("horse-st"), "{scrubbed}");
            assert!(scrubbed.ends_with(" (argument /path) is outside"));
            let by_request = Seal::of(&json!({"p": sealed}), &["/p".to_string()]);
            assert!(!by_request.scrub(&reason).contains("horse-st"));
        }
        let seal = Seal::of_texts([every_third_encoded(path).as_str()]);
        assert_eq!(seal.scrub("nothing secret here"), "nothing secret here");
    }

    proptest! {
        // Proves no run of WINDOW characters of a sealed value survives scrubbing, wherever and however often it appears.
        #[test]
        fn no_window_survives(
            secret in "[ -~]{8,40}",
            before in "[ -~]{0,20}",
            after in "[ -~]{0,20}",
            cut in 8usize..40,
        ) {
            let seal = Seal::of(&json!({"s": secret.clone()}), &["/s".to_string()]);
            let shown: String = secret.chars().take(cut).collect();
            let text = format!("{before}{secret}{after} and {shown}...");
            let out = seal.scrub(&text);
            let chars: Vec<char> = secret.chars().collect();
            for window in chars.windows(WINDOW) {
                let window: String = window.iter().collect();
                prop_assert!(!out.contains(&window), "{window:?} in {out:?}");
            }
        }
    }
}
