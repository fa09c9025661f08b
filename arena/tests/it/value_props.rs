//! Properties of the value grammar, a parser of what a scenario's author
//! (or an adversary) writes: it never panics, finding references and
//! resolving them agree on what is malformed, and a value without
//! references is sent exactly as written.

use chio_arena::scenario::value::{has_references, references, resolve, Reference, Resolution};
use proptest::prelude::*;
use serde_json::{json, Value};

/// JSON values biased towards the grammar's keys.
fn arb_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("from_step".to_string()),
        Just("pointer".to_string()),
        Just("literal".to_string()),
        Just("fixture".to_string()),
        Just("null".to_string()),
        "[a-z/~]{0,4}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just("".to_string()),
            Just("/a".to_string()),
            "[a-z/~0-9]{0,6}"
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    // Finding references and resolving them never panic, and agree: a value the grammar refuses is refused by both, and every reference found is looked up once.
    #[test]
    fn finding_and_resolving_agree(value in arb_value()) {
        let found = references(&value);
        let mut looked_up = 0usize;
        let mut lookup = |_: &Reference| -> Result<Value, ()> {
            looked_up += 1;
            Ok(json!("resolved"))
        };
        let resolved = resolve(&value, &mut lookup);
        match (&found, &resolved) {
            (Ok(placed), Ok(_)) => prop_assert_eq!(placed.len(), looked_up),
            (Err(malformed), Err(Resolution::Malformed(again))) => prop_assert_eq!(malformed, again),
            _ => prop_assert!(false, "disagree on {value}: {found:?} / {resolved:?}"),
        }
    }

    // A value with no reserved key anywhere is sent exactly as written.
    #[test]
    fn plain_values_are_sent_as_written(value in arb_value()) {
        prop_assume!(!has_references(&value));
        let mut lookup = |_: &Reference| -> Result<Value, ()> { Err(()) };
        prop_assert_eq!(resolve(&value, &mut lookup).ok(), Some(value));
    }
}
