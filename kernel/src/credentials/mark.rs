//! Marking credentials in a message that quotes input.
//!
//! A message may quote what it was given (a JSON pointer built from
//! argument keys, a field path, a file name) before any content check has
//! read it. [`mark_credentials`] replaces each credential-shaped part of
//! such a text with a mark naming its shape, `[REDACTED:github-token]`,
//! so the message still says where and what, never the credential. It
//! reads the text with the one detector of [`super`]: each span as written
//! is marked where it sits (a header's scheme word and a `password=` stay,
//! as [`super::redact`] keeps them); then each whitespace-separated word
//! that still carries a credential in another form ([`super::forms`]:
//! percent-encoded, JSON-escaped, base64 or hex) is marked whole.
//!
//! Two readings are a message's own words, not a credential, and are
//! kept: a marker named in quotes after the word `marker` (`(marker "BEGIN
//! PRIVATE KEY")`, the way refusals cite the shape they found), and a
//! keyword used as a label in prose, a colon and a space before an unquoted
//! word (`inline secret: value at ...`). So `password: hunter2` in a
//! message is kept too; `password=hunter2` and `"password": "hunter2"` are
//! marked.

use std::borrow::Cow;

use super::forms::{find_all_in_forms, Form};
use super::{find_credentials, CredentialKind, CredentialSpan};

/// The mark that replaces a credential of `kind`.
pub fn mark_of(kind: CredentialKind) -> String {
    format!("[REDACTED:{}]", kind.as_str())
}

/// `text` with every credential-shaped part replaced by the mark of its
/// shape (see the module documentation); `text` itself when it has none.
pub fn mark_credentials(text: &str) -> Cow<'_, str> {
    let written = mark_written(text);
    let words = mark_words(&written);
    match (written, words) {
        (Cow::Borrowed(_), None) => Cow::Borrowed(text),
        (written, None) => Cow::Owned(written.into_owned()),
        (_, Some(words)) => Cow::Owned(words),
    }
}

/// Whether the span is a marker cited by name: `marker "<marker>"`.
fn cited_marker(text: &str, span: &CredentialSpan) -> bool {
    text[..span.from].ends_with("marker \"")
        && text[span.from..]
            .strip_prefix(span.marker)
            .is_some_and(|rest| rest.starts_with('"'))
}

/// Whether the span is a keyword used as a label in prose: `secret: value`.
fn prose_label(text: &str, span: &CredentialSpan) -> bool {
    let before = &text[span.from..span.start];
    let label = before.trim_end_matches([' ', '\t']);
    span.kind == CredentialKind::CredentialAssignment
        && label.len() < before.len()
        && label.ends_with(':')
}

/// Each span read as written, marked where it sits; overlapping spans are
/// marked once, under the shape of the first.
fn mark_written(text: &str) -> Cow<'_, str> {
    let spans: Vec<CredentialSpan> = find_credentials(text)
        .into_iter()
        .filter(|s| s.start < s.end && !cited_marker(text, s) && !prose_label(text, s))
        .collect();
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in spans {
        if span.end <= at {
            continue;
        }
        if span.start < at {
            // Overlaps the span just marked: widen it.
            at = span.end;
            continue;
        }
        out.push_str(&text[at..span.start]);
        out.push_str(&mark_of(span.kind));
        at = span.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// The characters a word may be quoted or bracketed in; they stay.
const FRAME: &[char] = &['"', '\'', '(', ')', '[', ']', '{', '}', '<', '>', ',', ';'];

/// `text` with each word that carries a credential only in another form
/// than as written marked whole (its quotes and brackets kept); `None`
/// when no word does.
fn mark_words(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    for piece in text.split_inclusive(char::is_whitespace) {
        let word = piece.trim_end_matches(char::is_whitespace);
        let space = &piece[word.len()..];
        let core = word.trim_matches(FRAME);
        let found = (!core.is_empty())
            .then(|| find_all_in_forms(core, &CredentialKind::ALL))
            .and_then(|all| all.into_iter().find(|f| f.form != Form::Written));
        match found {
            Some(finding) => {
                let start = word.len() - word.trim_start_matches(FRAME).len();
                let end = start + core.len();
                out.push_str(&word[..start]);
                out.push_str(&mark_of(finding.kind));
                out.push_str(&word[end..]);
                changed = true;
            }
            None => out.push_str(word),
        }
        out.push_str(space);
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GHP: &str = "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    // A credential quoted in a message (a pointer, a field path, a value) is replaced by the mark of its shape, the rest of the message kept byte for byte.
    #[test]
    fn marks_each_credential_by_its_shape() {
        let pointer = format!("(arguments at \"/{GHP}\")");
        assert_eq!(
            mark_credentials(&pointer),
            "(arguments at \"/[REDACTED:github-token]\")"
        );
        assert_eq!(
            mark_credentials(
                "envelope field request.arguments.AKIAIOSFODNN7EXAMPLE is out of range"
            ),
            "envelope field request.arguments.[REDACTED:aws-access-key] is out of range"
        );
        assert_eq!(
            mark_credentials("at /b/2/x password=hunter22 end"),
            "at /b/2/x password=[REDACTED:credential-assignment] end"
        );
        assert_eq!(
            mark_credentials("key \"token\": \"abcdef123456\""),
            "key \"token\": \"[REDACTED:credential-assignment]\""
        );
        let both = format!("{GHP} and AKIAIOSFODNN7EXAMPLE");
        assert_eq!(
            mark_credentials(&both),
            "[REDACTED:github-token] and [REDACTED:aws-access-key]"
        );
    }

    // A credential written in another form (percent-encoded, hex) is marked by its word, quotes kept.
    #[test]
    fn marks_a_credential_in_another_form_by_its_word() {
        let encoded = GHP.replace('_', "%5F");
        let text = format!("at \"/{encoded}\" here");
        assert_eq!(
            mark_credentials(&text),
            "at \"[REDACTED:github-token]\" here"
        );
        let hex = hex::encode(GHP);
        assert_eq!(
            mark_credentials(&format!("field {hex}")),
            "field [REDACTED:github-token]"
        );
    }

    // Text without a credential, a marker cited by name and a digest are left as they are.
    #[test]
    fn leaves_other_text_alone() {
        for text in [
            "inline secret: value at a.b carries a credential (marker \"BEGIN PRIVATE KEY\"); value not shown",
            "inline secret: key name at x carries the marker \"authorization:\"",
            "the written scenario: does not validate (CHIO-SCENARIO-INLINE-SECRET: inline secret: value at servers[0].tools[0].description carries a credential (marker \"AKIA\"); value not shown)",
            "cannot read scenario file \"s.toml\": it is a device, not a regular file",
            "sha256 4f2c9b1a0d3e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd",
            "steps[3].arguments.path",
        ] {
            let marked = mark_credentials(text);
            assert!(matches!(marked, Cow::Borrowed(_)), "{text} -> {marked}");
        }
    }
}
