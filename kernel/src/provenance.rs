//! Where a call's argument values came from, and the roles that split
//! reading untrusted content from acting on it.
//!
//! A call's arguments are literals (which carry nothing beyond their
//! caller's own labels) or values built from earlier values: the released
//! output of a call, or a value a quarantined reader handed over. The
//! runtime that resolves a scenario's references names each such argument
//! in the request ([`ArgumentSource`]): its pointer, the labels the
//! releasing kernel recorded for the output it came from, and, for a
//! handed-over value, the label record ([`crate::handover::record_key`])
//! the kernel reads at admission from the store every kernel shares. The
//! kernel joins them into each argument's labels ([`argument_labels`]),
//! records them in the decision trace and hands them to the guards.
//!
//! [`AgentRole`] is what a world declares of an agent: a quarantined
//! reader calls nothing consequential (every kernel refuses it, whatever
//! its guards); a planner is judged by argument by the `integrity` guard
//! (`crate::guards::integrity`); every other agent by its session.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use serde_json::Value;

use crate::label::{Label, DELEGATION_RECORD_FLOOR};

/// What a world declares of an agent for the planner / reader split.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentRole {
    /// Judged by its session, principal and lineage, as every agent is.
    #[default]
    Ordinary,
    /// May read untrusted content; calls nothing consequential and passes
    /// values on only by schema-checked hand-overs.
    Quarantined,
    /// Judged by argument: only a protected or open-world argument that
    /// carries an untrusted value refuses its call.
    Planner,
}

impl AgentRole {
    /// The role's name.
    pub fn as_str(&self) -> &'static str {
        match self {
            AgentRole::Ordinary => "ordinary",
            AgentRole::Quarantined => "quarantined",
            AgentRole::Planner => "planner",
        }
    }
}

/// One argument of a call built from an earlier value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgumentSource {
    /// The JSON pointer of the argument within the call's arguments.
    pub pointer: String,
    /// The labels the kernel that released the output recorded for it
    /// (its label and integrity), for a value taken from a call's output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// The label record of a handed-over value, which admission reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// The agent that handed the value over (the hand-over's sender): the
    /// run-time allowlists it read count for a protected argument built
    /// from the value (`crate::allowlist`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
}

/// What the guards know of a call's provenance.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    /// The calling principal's role.
    pub role: AgentRole,
    /// Whether the called tool reaches an open world (`openWorldHint`).
    pub open_world: bool,
    /// Each argument built from an earlier value, by pointer, with its
    /// labels (`public` left out: it raises nothing).
    pub arguments: BTreeMap<String, BTreeSet<String>>,
    /// The run-time allowlist records admission read for the called tool's
    /// protected arguments, by record key (`crate::allowlist`): the
    /// digests of the values they admit.
    pub allowlists: BTreeMap<String, BTreeSet<String>>,
    /// The agents that handed over a value an argument is built from, by
    /// the argument's pointer.
    pub senders: BTreeMap<String, BTreeSet<String>>,
}

/// No provenance: an ordinary caller, a tool that stays in its world, and
/// only literal arguments.
pub static NO_PROVENANCE: Provenance = Provenance {
    role: AgentRole::Ordinary,
    open_world: false,
    arguments: BTreeMap::new(),
    allowlists: BTreeMap::new(),
    senders: BTreeMap::new(),
};

/// The labels of each argument of `sources`: the recorded labels of the
/// output it came from, joined with what its hand-over record holds
/// (`records` answers a record key). A record that holds nothing was never
/// written (a written record always holds the floor `public`), so its
/// pointer is answered as the error and the call must be refused.
pub fn argument_labels(
    sources: &[ArgumentSource],
    records: &dyn Fn(&str) -> Option<BTreeSet<String>>,
) -> Result<BTreeMap<String, BTreeSet<String>>, (String, String)> {
    let mut labels: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in sources {
        let entry = labels.entry(source.pointer.clone()).or_default();
        entry.extend(source.labels.iter().cloned());
        if let Some(record) = &source.record {
            match records(record) {
                Some(held) if !held.is_empty() => entry.extend(held),
                _ => return Err((source.pointer.clone(), record.clone())),
            }
        }
        entry.retain(|l| l != Label::Public.as_str() && l != DELEGATION_RECORD_FLOOR.as_str());
    }
    Ok(labels)
}

mod fields;

pub use fields::{holds_undeclared_key, integrity_at, sends_anything, FieldLabel, OutputRules};

/// What a server said, to find in it the values a call sent: every string
/// of an answer (or of a part of one) in the forms a server may give back
/// what it was sent (as sent, percent-decoded, in lower case), and every
/// number and boolean.
pub struct Echoes {
    texts: BTreeSet<String>,
    windows: crate::seal::Seal,
    /// The skeleton ([`skeleton`]) of every string and key said, whole.
    skeletons: BTreeSet<String>,
    /// Every number said, and every string said that is an exact decimal,
    /// as [`number_form`].
    numbers: BTreeSet<String>,
    /// Every boolean said.
    flags: BTreeSet<bool>,
}

/// The forms of `text` a server may answer with: as written,
/// percent-decoded (again and again, as layers of encoding come off), as a
/// normalised path, compacted (without whitespace and dashes, as an IBAN,
/// a card or a phone number is normalised), and each in lower case.
pub(crate) fn echo_forms(text: &str) -> BTreeSet<String> {
    let mut forms: BTreeSet<String> = BTreeSet::from([text.to_string()]);
    let mut decoded = text.to_string();
    for _ in 0..4 {
        let next = crate::path::percent_decode(&decoded).into_owned();
        if next == decoded {
            break;
        }
        forms.insert(next.clone());
        decoded = next;
    }
    forms.extend(crate::path::normalize_path(text).ok());
    let compact: String = text
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect();
    forms.insert(compact);
    let lower: Vec<String> = forms.iter().map(|form| form.to_lowercase()).collect();
    forms.extend(lower);
    forms
}

/// The least letters and digits a skeleton holds to be compared
/// ([`Echoes::repeat`]): a shorter one (`yes`, `ok`) says nothing of where
/// a value came from.
const MIN_SKELETON: usize = 6;

/// The skeleton of `text`: its letters and digits alone, after
/// compatibility normalisation (NFKC) and in lower case, which is what is
/// left of it however it is re-spelled with separators, whitespace, any
/// dash, invisible characters, full-width letters or another case (an
/// IBAN, a card or a phone number given back normalised, pieces joined
/// with or without separators).
fn skeleton(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    text.nfkc()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The number `text` writes, in one form for every way of writing it
/// (`900`, `900.00` and `-0.5` as the exact decimals they are); `None`
/// when `text` is no exact decimal. A JSON number's text that no exact
/// decimal holds (`1e300`) stands for itself.
fn number_form(text: &str) -> Option<String> {
    crate::handover::decimal(text).map(|d| d.normalize().to_string())
}

/// The form of a JSON number said or sent.
fn json_number_form(number: &serde_json::Number) -> String {
    let text = number.to_string();
    number_form(&text).unwrap_or(text)
}

/// Every scalar of `value` that is not `null` (strings, numbers and
/// booleans), with its JSON pointer, in document order.
pub fn scalar_leaves(value: &Value) -> Vec<(String, &Value)> {
    fn walk<'v>(value: &'v Value, at: String, found: &mut Vec<(String, &'v Value)>) {
        match value {
            Value::Null => {}
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
            scalar => found.push((at, scalar)),
        }
    }
    let mut found = Vec::new();
    walk(value, String::new(), &mut found);
    found
}

/// Every key of every object inside `value`.
fn object_keys(value: &Value) -> Vec<&str> {
    fn walk<'v>(value: &'v Value, found: &mut Vec<&'v str>) {
        match value {
            Value::Array(items) => items.iter().for_each(|item| walk(item, found)),
            Value::Object(members) => {
                for (key, item) in members {
                    found.push(key);
                    walk(item, found);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(value, &mut found);
    found
}

/// What a call sent, as the scalars an answer may repeat: every scalar of
/// `sent`, and the joins of its strings ([`joined_pieces`]), which a
/// server may answer with as one string (pieces each shorter than a
/// window, joined).
pub fn sent_values(sent: &Value) -> Vec<Value> {
    let mut values: Vec<Value> = scalar_leaves(sent)
        .into_iter()
        .map(|(_, v)| v.clone())
        .collect();
    values.extend(joined_pieces(sent).into_iter().map(Value::String));
    values
}

/// The joins of the strings of `value` a server may answer with as one
/// string: every string inside it, and every string and key, in document
/// order and in reverse, and, for each array or object inside it, its own string
/// members (whatever else it holds) and an object's keys, in order and in
/// reverse; each join of at least two strings, once. Pieces spread over several arguments, nested at several
/// depths or beside a number are joined as a server joining them would.
pub fn joined_pieces(value: &Value) -> Vec<String> {
    fn push(pieces: &[&str], found: &mut BTreeSet<String>) {
        if pieces.len() >= 2 {
            found.insert(pieces.concat());
            let reversed: Vec<&str> = pieces.iter().rev().copied().collect();
            found.insert(reversed.concat());
        }
    }
    fn walk(value: &Value, found: &mut BTreeSet<String>) {
        let members: Vec<&Value> = match value {
            Value::Array(items) => items.iter().collect(),
            Value::Object(members) => members.values().collect(),
            _ => return,
        };
        let pieces: Vec<&str> = members.iter().filter_map(|m| m.as_str()).collect();
        push(&pieces, found);
        if let Value::Object(map) = value {
            let keys: Vec<&str> = map.keys().map(String::as_str).collect();
            push(&keys, found);
        }
        members.into_iter().for_each(|m| walk(m, found));
    }
    fn texts<'v>(value: &'v Value, keys: bool, found: &mut Vec<&'v str>) {
        match value {
            Value::String(text) => found.push(text),
            Value::Array(items) => items.iter().for_each(|item| texts(item, keys, found)),
            Value::Object(map) => {
                for (key, item) in map {
                    if keys {
                        found.push(key);
                    }
                    texts(item, keys, found);
                }
            }
            _ => {}
        }
    }
    let mut found = BTreeSet::new();
    for keys in [false, true] {
        let mut every = Vec::new();
        texts(value, keys, &mut every);
        push(&every, &mut found);
    }
    walk(value, &mut found);
    found.into_iter().collect()
}

impl Echoes {
    /// The scalars of `said`, strings in every form.
    pub fn of(said: &Value) -> Echoes {
        let mut texts = BTreeSet::new();
        let mut numbers = BTreeSet::new();
        let mut flags = BTreeSet::new();
        let mut skeletons = BTreeSet::new();
        // A key is said too: an answer keyed by what it was sent (a map
        // from a query or a tag to its result) repeats it.
        for key in object_keys(said) {
            texts.extend(echo_forms(key));
            numbers.extend(number_form(key));
            skeletons.insert(skeleton(key));
        }
        for (_, leaf) in scalar_leaves(said) {
            match leaf {
                Value::String(text) => {
                    texts.extend(echo_forms(text));
                    numbers.extend(number_form(text));
                    skeletons.insert(skeleton(text));
                }
                Value::Number(number) => {
                    numbers.insert(json_number_form(number));
                }
                Value::Bool(flag) => {
                    flags.insert(*flag);
                }
                _ => {}
            }
        }
        let windows = crate::seal::Seal::of_written(texts.iter().map(String::as_str));
        skeletons.retain(|s| s.chars().count() >= MIN_SKELETON);
        Echoes {
            texts,
            windows,
            skeletons,
            numbers,
            flags,
        }
    }

    /// Whether what was said repeats the string `sent`: a form of it
    /// equal to a form of a string said, or sharing a run of
    /// [`crate::seal::WINDOW`] characters with one.
    ///
    /// Or the whole of a string said is `sent` re-spelled: its skeleton
    /// ([`skeleton`], at least [`MIN_SKELETON`] letters and digits) is
    /// `sent`'s, or that of a form of it (the IBAN sent with dashes of
    /// any kind, invisible characters or full-width letters, or in pieces
    /// joined, given back whole). A string said that only holds a sent
    /// value's letters among its own (a contact's e-mail address holding
    /// the name it was looked up by) is a record, not a re-spelling.
    pub fn repeat(&self, sent: &str) -> bool {
        let forms = echo_forms(sent);
        forms
            .iter()
            .any(|form| self.texts.contains(form) || self.windows.holds(form))
            || forms
                .iter()
                .any(|form| self.skeletons.contains(&skeleton(form)))
    }

    /// Whether what was said repeats the scalar `sent`, whatever its type:
    /// a string as [`Echoes::repeat`] says, or as the number it writes
    /// (`"900"` sent, `900` said); a number said as a number or a string
    /// of the same exact value (`900`, `900.0`, `"900.00"`), or written
    /// out in a string as a string sent would be; a boolean said as a
    /// boolean. `null`, an array and an object are no scalar.
    pub fn repeats(&self, sent: &Value) -> bool {
        match sent {
            Value::String(text) => {
                self.repeat(text) || number_form(text).is_some_and(|n| self.numbers.contains(&n))
            }
            Value::Number(number) => {
                self.numbers.contains(&json_number_form(number)) || self.repeat(&number.to_string())
            }
            Value::Bool(flag) => self.flags.contains(flag),
            _ => false,
        }
    }
}

/// The labels of the arguments whose value `output` repeats ([`Echoes`]):
/// a string, a number or a boolean of the argument. A server may answer
/// with what it was sent (a path, a query, a message's body, an amount),
/// and whoever reads the answer reads that value too, so it takes in what
/// the argument carried (`labels`: each argument's labels by pointer, as
/// admission computed them).
pub fn echoed_labels(
    arguments: &Value,
    labels: &BTreeMap<String, Vec<String>>,
    output: &Value,
) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    if labels.is_empty() {
        return found;
    }
    let echoes = Echoes::of(output);
    let repeated = |value: &Value| sent_values(value).iter().any(|sent| echoes.repeats(sent));
    for (pointer, carried) in labels {
        let Some(value) = arguments.pointer(pointer) else {
            continue;
        };
        if repeated(value) {
            found.extend(carried.iter().cloned());
        }
    }
    // Pieces each too short to echo alone, nested in one argument or
    // spread over several, repeated joined: every label inside what joins.
    let mut places: Vec<(String, &Value)> = vec![(String::new(), arguments)];
    if let Value::Object(members) = arguments {
        for (key, value) in members {
            places.push((
                format!("/{}", key.replace('~', "~0").replace('/', "~1")),
                value,
            ));
        }
    }
    for (at, value) in places {
        // A piece that echoes alone is accounted for above; what the rest
        // join to is what the pieces too short to echo alone repeat.
        let rest = without_echoed(value, &echoes);
        if joined_pieces(&rest).iter().any(|text| echoes.repeat(text)) {
            for (pointer, carried) in labels {
                if within(pointer, &at) || at.is_empty() {
                    found.extend(carried.iter().cloned());
                }
            }
        }
    }
    found
}

/// `value` with every string that `echoes` repeats on its own made `null`,
/// so what the others join to can be told apart.
fn without_echoed(value: &Value, echoes: &Echoes) -> Value {
    match value {
        Value::String(text) if echoes.repeat(text) => Value::Null,
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| without_echoed(v, echoes)).collect())
        }
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| (k.clone(), without_echoed(v, echoes)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether `pointer` is `argument` or lies inside it (`/to` holds `/to/0`).
pub fn within(pointer: &str, argument: &str) -> bool {
    pointer == argument
        || pointer
            .strip_prefix(argument)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
#[path = "provenance_tests.rs"]
mod tests;
