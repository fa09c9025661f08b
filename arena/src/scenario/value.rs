//! The one grammar of the values a step sends: a literal, or a reference
//! to a value the run produces.
//!
//! A call's arguments are JSON. Anywhere in them, an object whose keys
//! name a reference is read as one:
//!
//! - `{ from_step = "read-bill", pointer = "/iban" }`: the value at the
//!   RFC 6901 JSON pointer `pointer` (default `""`, the whole) in the
//!   released output of the earlier call step `read-bill` of the same
//!   agent, after the output guards, or in the value an earlier hand-over
//!   (a message step with a schema) delivered to the agent;
//! - `{ fixture = "fixtures/secrets/token.txt" }`: the text of a file
//!   below the scenario's folder, sealed: it reaches the kernel and its
//!   guards as the argument's value, and everything the run writes keeps
//!   only its digest (see `crate::scenario::sealed`);
//! - `{ literal = { ... } }`: the value as written, never read as a
//!   reference, for an object that would otherwise read as one;
//! - `{ null = true }`: JSON's null, which TOML cannot write.
//!
//! An object with `from_step`, `literal`, `fixture` or `null` among its
//! keys is a reference and nothing else: any other key beside them is refused at
//! load rather than guessed. A
//! reference whose step was denied, withheld or not carried out, or whose
//! pointer finds nothing, makes the call a deny with its own reason at run
//! time ([`Unresolved`]); it is never sent with a missing value.

use std::fmt;

use serde_json::Value;

/// The keys that make an object a reference.
pub const REFERENCE_KEYS: [&str; 4] = ["from_step", "literal", "fixture", "null"];

/// A value the run produces, named by a reference.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reference {
    /// The value at `pointer` in the released output of call step `step`.
    Step {
        /// The call step.
        step: String,
        /// An RFC 6901 JSON pointer into its released output.
        pointer: String,
    },
    /// The sealed text of the file at `path`, relative to the scenario's
    /// folder.
    Fixture {
        /// The file, as the scenario writes it.
        path: String,
    },
}

/// A reference and where it sits in the value it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The JSON pointer of the reference object within the value.
    pub at: String,
    /// What it names.
    pub reference: Reference,
}

/// A reference object the grammar refuses, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// The JSON pointer of the object within the value.
    pub at: String,
    /// What is wrong, naming the fix.
    pub problem: &'static str,
}

/// Why a reference finds no value at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// The step was denied or sent to approval, so it released nothing.
    Denied,
    /// The step was allowed but its output was withheld.
    Withheld,
    /// The step was not carried out: refused before any kernel decided it,
    /// or answered by its server as not done.
    NotPerformed,
    /// The pointer finds nothing in the released output.
    NoValue,
    /// The sealed file was not read where the run resolves its values.
    Unsealed,
    /// The step was a hand-over that was refused, so it delivered nothing.
    Refused,
    /// The step is a call still on its way to its kernel over a delayed
    /// link: it is decided when it arrives, after this step.
    InFlight,
    /// The value it completes nests deeper, or is larger, than a value a
    /// link between node processes carries, so no topology sends it.
    OutOfBounds,
}

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unresolved::Denied => "it was not allowed",
            Unresolved::Withheld => "its output was withheld",
            Unresolved::NotPerformed => "it was not carried out",
            Unresolved::NoValue => "its pointer finds nothing in the released output",
            Unresolved::Unsealed => "it was not read for this run",
            Unresolved::Refused => "the hand-over was refused",
            Unresolved::InFlight => {
                "it is still on its way to its kernel over a delayed link, and is decided after this step"
            }
            Unresolved::OutOfBounds => {
                "the value it completes is nested deeper than 96 levels or larger than 4 MiB, which no topology sends"
            }
        })
    }
}

/// Escapes one reference token of a JSON pointer (RFC 6901).
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Whether `pointer` is an RFC 6901 JSON pointer: empty, or `/`-led with
/// every `~` followed by `0` or `1`.
pub fn is_pointer(pointer: &str) -> bool {
    if !(pointer.is_empty() || pointer.starts_with('/')) {
        return false;
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return false;
        }
    }
    true
}

/// What one object of a value is to the grammar.
enum Reading<'a> {
    /// Not a reference: its members are values in turn.
    Plain,
    /// A reference.
    Reference(Reference),
    /// A literal: its value as written.
    Literal(&'a Value),
    /// `{ null = true }`: JSON's null.
    Null,
}

fn read<'v>(
    object: &'v serde_json::Map<String, Value>,
    at: &str,
) -> Result<Reading<'v>, Malformed> {
    let malformed = |problem| Malformed {
        at: at.to_string(),
        problem,
    };
    let named: Vec<&str> = REFERENCE_KEYS
        .into_iter()
        .filter(|key| object.contains_key(*key))
        .collect();
    match named.as_slice() {
        [] => Ok(Reading::Plain),
        ["literal"] if object.len() == 1 => Ok(Reading::Literal(&object["literal"])),
        ["literal"] => Err(malformed(
            "a literal takes only the key literal; put the whole object inside it",
        )),
        ["from_step"] => {
            if object.keys().any(|k| k != "from_step" && k != "pointer") {
                return Err(malformed(
                    "a reference to a step takes only from_step and pointer; write { literal = { ... } } for an object with these keys",
                ));
            }
            let Some(Value::String(step)) = object.get("from_step") else {
                return Err(malformed("from_step must be a step id (a string)"));
            };
            let pointer = match object.get("pointer") {
                None => String::new(),
                Some(Value::String(p)) if is_pointer(p) => p.clone(),
                Some(_) => {
                    return Err(malformed(
                        "pointer must be a JSON pointer (RFC 6901): empty, or starting with /, with ~ only as ~0 or ~1",
                    ))
                }
            };
            Ok(Reading::Reference(Reference::Step {
                step: step.clone(),
                pointer,
            }))
        }
        ["null"] if object.len() == 1 && object["null"] == Value::Bool(true) => Ok(Reading::Null),
        ["null"] => Err(malformed(
            "a null is written { null = true } and takes no other key; write { literal = { ... } } for an object with this key",
        )),
        ["fixture"] => {
            if object.len() != 1 {
                return Err(malformed(
                    "a fixture reference takes only the key fixture; write { literal = { ... } } for an object with this key",
                ));
            }
            let Some(Value::String(path)) = object.get("fixture") else {
                return Err(malformed(
                    "fixture must be the path of a file below the scenario's folder (a string)",
                ));
            };
            Ok(Reading::Reference(Reference::Fixture { path: path.clone() }))
        }
        _ => Err(malformed(
            "an object names at most one of from_step, literal, fixture and null; write { literal = { ... } } for an object with these keys",
        )),
    }
}

/// Every reference in `value`, in document order, or the first malformed
/// reference object.
pub fn references(value: &Value) -> Result<Vec<Placed>, Malformed> {
    let mut found = Vec::new();
    walk(value, String::new(), &mut found)?;
    Ok(found)
}

fn walk(value: &Value, at: String, found: &mut Vec<Placed>) -> Result<(), Malformed> {
    match value {
        Value::Object(object) => match read(object, &at)? {
            Reading::Plain => {
                for (key, member) in object {
                    walk(member, format!("{at}/{}", escape(key)), found)?;
                }
                Ok(())
            }
            Reading::Reference(reference) => {
                found.push(Placed { at, reference });
                Ok(())
            }
            Reading::Literal(_) | Reading::Null => Ok(()),
        },
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                walk(item, format!("{at}/{index}"), found)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Whether `value` holds a reference or a literal object: only then does
/// it differ from what is sent.
pub fn has_references(value: &Value) -> bool {
    match value {
        Value::Object(object) => {
            REFERENCE_KEYS.iter().any(|k| object.contains_key(*k))
                || object.values().any(has_references)
        }
        Value::Array(items) => items.iter().any(has_references),
        _ => false,
    }
}

/// `value` as it is sent: every reference replaced by what `lookup`
/// answers for it, every literal by its value. The first reference
/// `lookup` cannot answer stops it, with where that reference sits.
pub fn resolve<E>(
    value: &Value,
    lookup: &mut dyn FnMut(&Reference) -> Result<Value, E>,
) -> Result<Value, Resolution<E>> {
    resolve_at(value, String::new(), lookup)
}

/// Why [`resolve`] stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution<E> {
    /// A reference object the grammar refuses (which a loaded scenario
    /// never holds).
    Malformed(Malformed),
    /// A reference `lookup` could not answer, at the pointer `at`.
    Unanswered {
        /// Where the reference sits.
        at: String,
        /// What it names.
        reference: Reference,
        /// Why it has no value.
        why: E,
    },
}

fn resolve_at<E>(
    value: &Value,
    at: String,
    lookup: &mut dyn FnMut(&Reference) -> Result<Value, E>,
) -> Result<Value, Resolution<E>> {
    match value {
        Value::Object(object) => match read(object, &at).map_err(Resolution::Malformed)? {
            Reading::Plain => {
                let mut out = serde_json::Map::new();
                for (key, member) in object {
                    let inner = resolve_at(member, format!("{at}/{}", escape(key)), lookup)?;
                    out.insert(key.clone(), inner);
                }
                Ok(Value::Object(out))
            }
            Reading::Reference(reference) => {
                lookup(&reference).map_err(|why| Resolution::Unanswered { at, reference, why })
            }
            Reading::Literal(inner) => Ok(inner.clone()),
            Reading::Null => Ok(Value::Null),
        },
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| resolve_at(item, format!("{at}/{index}"), lookup))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other.clone()),
    }
}

/// The value at `pointer` in a step's released `output`.
pub fn at_pointer(output: &Value, pointer: &str) -> Result<Value, Unresolved> {
    output.pointer(pointer).cloned().ok_or(Unresolved::NoValue)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(step: &str, pointer: &str) -> Reference {
        Reference::Step {
            step: step.to_string(),
            pointer: pointer.to_string(),
        }
    }

    // References are found at any depth with their places; a literal hides what it holds; plain objects are values.
    #[test]
    fn references_are_found_where_they_sit() {
        let args = json!({
            "to": {"from_step": "read-bill", "pointer": "/iban"},
            "lines": [{"from_step": "read-bill"}, "plain"],
            "a/b": {"literal": {"from_step": "not-a-reference"}},
            "note": {"text": "hello"},
        });
        let found = references(&args).unwrap();
        assert_eq!(
            found,
            vec![
                Placed {
                    at: "/to".to_string(),
                    reference: step("read-bill", "/iban"),
                },
                Placed {
                    at: "/lines/0".to_string(),
                    reference: step("read-bill", ""),
                },
            ]
        );
        assert!(has_references(&args));
        assert!(!has_references(&json!({"note": {"text": "hello"}})));
    }

    // Resolution substitutes each reference, unwraps each literal and writes each { null = true } as null; the first unanswered reference stops it, named by its place.
    #[test]
    fn resolution_substitutes_or_stops_at_the_first_gap() {
        let args = json!({
            "to": {"from_step": "read-bill", "pointer": "/iban"},
            "raw": {"literal": {"from_step": "x"}},
            "n": 3,
            "none": [{"null": true}],
        });
        let output = json!({"iban": "DE00 1234", "amount": "12.50"});
        let mut lookup = |r: &Reference| match r {
            Reference::Step { step, pointer } if step == "read-bill" => {
                at_pointer(&output, pointer)
            }
            Reference::Step { .. } | Reference::Fixture { .. } => Err(Unresolved::NotPerformed),
        };
        let sent = resolve(&args, &mut lookup).unwrap();
        assert_eq!(
            sent,
            json!({"to": "DE00 1234", "raw": {"from_step": "x"}, "n": 3, "none": [null]})
        );
        let missing = json!({"to": {"from_step": "read-bill", "pointer": "/bic"}});
        assert_eq!(
            resolve(&missing, &mut lookup),
            Err(Resolution::Unanswered {
                at: "/to".to_string(),
                reference: step("read-bill", "/bic"),
                why: Unresolved::NoValue,
            })
        );
        let other = json!([{"from_step": "other"}]);
        assert!(matches!(
            resolve(&other, &mut lookup),
            Err(Resolution::Unanswered { at, why: Unresolved::NotPerformed, .. }) if at == "/0"
        ));
    }

    // Every malformed reference object is refused with its place: extra keys, two reserved keys, a non-string step, a bad pointer, a fixture with another key or a path that is not a string.
    #[test]
    fn malformed_references_are_refused() {
        for (value, at) in [
            (
                json!({"x": {"from_step": "s", "pointer": "/a", "extra": 1}}),
                "/x",
            ),
            (json!({"x": {"from_step": "s", "literal": 1}}), "/x"),
            (json!({"x": {"literal": 1, "y": 2}}), "/x"),
            (json!([{"from_step": 7}]), "/0"),
            (json!({"x": {"from_step": "s", "pointer": "a"}}), "/x"),
            (json!({"x": {"from_step": "s", "pointer": "/a~2"}}), "/x"),
            (json!({"x": {"from_step": "s", "pointer": 3}}), "/x"),
            (
                json!({"x": {"fixture": "fixtures/secrets/token.txt", "y": 1}}),
                "/x",
            ),
            (json!({"x": {"fixture": 3}}), "/x"),
            (json!({"x": {"null": false}}), "/x"),
            (json!({"x": {"null": true, "y": 1}}), "/x"),
            (json!({"x": {"null": true, "literal": 1}}), "/x"),
            (json!({"a~b/c": {"from_step": "s", "q": 1}}), "/a~0b~1c"),
        ] {
            let refused = references(&value).unwrap_err();
            assert_eq!(refused.at, at, "{value}");
            assert!(!refused.problem.is_empty());
        }
        assert!(is_pointer("") && is_pointer("/") && is_pointer("/a~0~1/0"));
        assert!(!is_pointer("a") && !is_pointer("/~") && !is_pointer("/~x"));
    }

    // A fixture reference is found with its place and its path as written.
    #[test]
    fn fixture_references_are_found_with_their_paths() {
        let args = json!({"body": {"fixture": "fixtures/secrets/token.txt"}});
        assert_eq!(
            references(&args).unwrap(),
            vec![Placed {
                at: "/body".to_string(),
                reference: Reference::Fixture {
                    path: "fixtures/secrets/token.txt".to_string()
                },
            }]
        );
    }

    /// `value` as a scenario writes it: each null as `{ null = true }`.
    fn written(value: &Value) -> Value {
        match value {
            Value::Null => json!({"null": true}),
            Value::Array(items) => Value::Array(items.iter().map(written).collect()),
            Value::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), written(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn json_values() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            "[a-z ]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-k]{1,3}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        // Proves any JSON value with nulls at any depth, written with { null = true } and read back through TOML, resolves to itself and holds no reference.
        #[test]
        fn nulls_written_as_tables_read_back_as_null(value in json_values()) {
            let text = format!("v = {}", toml::Value::try_from(written(&value)).unwrap());
            let table: toml::Table = toml::from_str(&text).unwrap();
            let read = serde_json::to_value(&table["v"]).unwrap();
            proptest::prop_assert!(references(&read).unwrap().is_empty());
            let mut lookup = |_: &Reference| Err::<Value, ()>(());
            proptest::prop_assert_eq!(resolve(&read, &mut lookup).unwrap(), value);
        }
    }
}
