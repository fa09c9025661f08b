//! How `secret-redaction` reads a JSON value: each key and string alone in
//! every form ([`crate::credentials::forms`]), then the string values read
//! together, so a credential split across two of them is found too.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use serde_json::Value;

use crate::canonical::canonical_entries;
use crate::credentials::forms::{find_in_forms, Form};
use crate::credentials::reading::splits;
use crate::credentials::{redact, redact_ranges, CredentialKind, REDACTED};
use crate::planted::{weakened_anywhere, Weakness};
use crate::reason::DenyReason;

/// A key or a string value of a JSON value, with its JSON pointer.
struct Leaf<'v> {
    /// The JSON pointer of the string (of the member, for a key).
    pointer: String,
    /// The text.
    text: &'v str,
    /// Whether it is an object key.
    key: bool,
}

/// The strings of `value` in canonical document order (objects by RFC 8785
/// key order, so the reading is the signed document's whatever order the
/// map holds; each key before its value): the keys only with `keys`, the
/// insides of arrays only with `arrays`.
fn leaves(value: &Value, keys: bool, arrays: bool) -> Vec<Leaf<'_>> {
    let mut out = Vec::new();
    collect(value, String::new(), keys, arrays, &mut out);
    out
}

fn collect<'v>(value: &'v Value, at: String, keys: bool, arrays: bool, out: &mut Vec<Leaf<'v>>) {
    match value {
        Value::String(text) => out.push(Leaf {
            pointer: at,
            text,
            key: false,
        }),
        Value::Array(items) if arrays => {
            for (i, item) in items.iter().enumerate() {
                collect(item, format!("{at}/{i}"), keys, arrays, out);
            }
        }
        Value::Object(members) => {
            for (key, member) in canonical_entries(members) {
                let here = member_pointer(&at, key);
                if keys {
                    out.push(Leaf {
                        pointer: here.clone(),
                        text: key,
                        key: true,
                    });
                }
                collect(member, here, keys, arrays, out);
            }
        }
        _ => {}
    }
}

/// The JSON pointer of the member `key` of the object at `at`.
fn member_pointer(at: &str, key: &str) -> String {
    format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Why a call's arguments may not be sent: the first key or string that
/// carries a credential of `kinds` in any form, else the first credential
/// split across string values. Names the shape and the pointers only.
pub(super) fn refuse_arguments(arguments: &Value, kinds: &[CredentialKind]) -> Option<DenyReason> {
    let arrays = !weakened_anywhere(Weakness::SecretArraysUnread);
    let leaves = leaves(arguments, true, arrays);
    let single = leaves
        .iter()
        .find_map(|leaf| find_in_forms(leaf.text, kinds).map(|found| (leaf, found)));
    if let Some((leaf, found)) = single {
        return Some(DenyReason::CredentialInArguments {
            shape: found.kind.as_str(),
            pointer: leaf.pointer.clone(),
        });
    }
    let values: Vec<&Leaf<'_>> = leaves
        .iter()
        .filter(|leaf| !leaf.key && !leaf.text.is_empty())
        .collect();
    let texts: Vec<&str> = values.iter().map(|leaf| leaf.text).collect();
    let split = splits(&texts, kinds).into_iter().next()?;
    Some(DenyReason::CredentialSplitInArguments {
        shape: split.kind.as_str(),
        pointers: split
            .parts
            .iter()
            .map(|&p| values[p].pointer.clone())
            .collect(),
    })
}

/// `output` with every credential of `kinds` redacted, and how many of its
/// strings changed. Object keys are left as they are.
///
/// Each string alone: a credential read as written becomes `[REDACTED]`
/// where it sits; a string that still carries one in another form (its
/// normal form, a decoded run) is redacted whole. Then the string values
/// read together: a credential split across values read as written is
/// redacted in each value where its pieces sit, one read in another form
/// redacts each value it lies in whole; and if redacting left a credential
/// readable anywhere, every value it lies in is redacted whole.
pub(super) fn redact_output(output: &Value, kinds: &[CredentialKind]) -> (Value, usize) {
    let leaves = leaves(output, false, true);
    let mut texts: Vec<String> = leaves.iter().map(|l| redact_one(l.text, kinds)).collect();
    if redact_splits(&mut texts, kinds, true) {
        while redact_remaining(&mut texts, kinds) {}
    }
    let changed: BTreeMap<&str, String> = leaves
        .iter()
        .zip(texts)
        .filter(|(leaf, text)| leaf.text != text)
        .map(|(leaf, text)| (leaf.pointer.as_str(), text))
        .collect();
    let count = changed.len();
    if count == 0 {
        return (output.clone(), 0);
    }
    (rebuild(output, String::new(), &changed), count)
}

/// One string with its credentials redacted (see [`redact_output`]).
pub(super) fn redact_one(text: &str, kinds: &[CredentialKind]) -> String {
    let written = redact(text, kinds).unwrap_or_else(|| text.to_string());
    if find_in_forms(&written, kinds).is_some() {
        REDACTED.to_string()
    } else {
        written
    }
}

/// Redacts the credentials split across the non-empty `texts`: with
/// `precise`, one read as written where its pieces sit; otherwise, and in
/// another form, each text it lies in whole. Whether a text changed.
fn redact_splits(texts: &mut [String], kinds: &[CredentialKind], precise: bool) -> bool {
    let index: Vec<usize> = (0..texts.len()).filter(|&i| !texts[i].is_empty()).collect();
    let values: Vec<&str> = index.iter().map(|&i| texts[i].as_str()).collect();
    let mut whole = BTreeSet::new();
    let mut cuts: BTreeMap<usize, Vec<Range<usize>>> = BTreeMap::new();
    for split in splits(&values, kinds) {
        if precise && split.form == Form::Written {
            for (p, range) in split.secret {
                cuts.entry(index[p]).or_default().push(range);
            }
        } else {
            whole.extend(split.parts.iter().map(|&p| index[p]));
        }
    }
    let mut changed = false;
    for (i, ranges) in cuts {
        if !whole.contains(&i) {
            let cut = redact_ranges(&texts[i], ranges);
            changed |= cut != texts[i];
            texts[i] = cut;
        }
    }
    for i in whole {
        changed |= texts[i] != REDACTED;
        texts[i] = REDACTED.to_string();
    }
    changed
}

/// After the precise redactions: redacts whole each text that still
/// carries a credential alone or read together with others. Whether a text
/// changed; each pass that changes one turns a text into `[REDACTED]`, so
/// repeating it ends.
fn redact_remaining(texts: &mut [String], kinds: &[CredentialKind]) -> bool {
    let mut changed = false;
    for text in texts.iter_mut() {
        if text != REDACTED && find_in_forms(text, kinds).is_some() {
            *text = REDACTED.to_string();
            changed = true;
        }
    }
    redact_splits(texts, kinds, false) || changed
}

/// `value` with the string at each pointer of `changed` replaced.
fn rebuild(value: &Value, at: String, changed: &BTreeMap<&str, String>) -> Value {
    match value {
        Value::String(_) => match changed.get(at.as_str()) {
            Some(text) => Value::String(text.clone()),
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| rebuild(item, format!("{at}/{i}"), changed))
                .collect(),
        ),
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(key, member)| {
                    let here = member_pointer(&at, key);
                    (key.clone(), rebuild(member, here, changed))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}
