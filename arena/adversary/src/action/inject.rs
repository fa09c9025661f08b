//! Where an action's payload goes in a call's arguments: split, under a
//! renamed key, appended to an existing string or as a new note.

use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;
use serde_json::Value;

use crate::operators::{Draft, Split};

/// Puts the draft's payload into the arguments: split in two when the draft
/// says so, under the renamed key when it has one; returns the JSON pointer
/// of the (first) argument carrying it.
pub(super) fn inject_draft(arguments: &mut Value, draft: &Draft, rng: &mut ChaCha20Rng) -> String {
    let (first, second) = match draft.split {
        Split::None => (draft.payload.clone(), None),
        _ => {
            let (a, b) = draft.halves();
            (a, Some(b))
        }
    };
    let pointer = match &draft.key {
        Some(key) => {
            if !arguments.is_object() {
                *arguments = Value::Object(Default::default());
            }
            let key = fresh_key(arguments, key);
            if let Value::Object(map) = arguments {
                map.insert(key.clone(), Value::String(first));
            }
            format!("/{key}")
        }
        None => inject_argument(arguments, &first, rng),
    };
    if let (Some(second), Value::Object(map)) = (second, &mut *arguments) {
        match draft.split {
            Split::Nested => {
                let mut inner = serde_json::Map::new();
                inner.insert("note".to_string(), Value::String(second));
                let key = fresh_key(&Value::Object(map.clone()), "meta");
                map.insert(key, Value::Object(inner));
            }
            _ => {
                let key = fresh_key(&Value::Object(map.clone()), "note");
                map.insert(key, Value::String(second));
            }
        }
    }
    pointer
}

/// `base`, or `base_1`, `base_2`, ... : the first key `arguments` lacks.
fn fresh_key(arguments: &Value, base: &str) -> String {
    let taken = |k: &str| arguments.get(k).is_some();
    let mut key = base.to_string();
    let mut n = 1;
    while taken(&key) {
        key = format!("{base}_{n}");
        n += 1;
    }
    key
}

/// Candidate `choice` of `options` other than `current`.
pub(super) fn pick(options: &[String], current: &str, choice: u32) -> Option<String> {
    let others: Vec<&String> = options.iter().filter(|o| *o != current).collect();
    if others.is_empty() {
        return None;
    }
    Some(others[choice as usize % others.len()].clone())
}

/// Puts `text` into an argument: appended to an existing string argument or
/// as a new `note`, chosen by `rng`; returns the argument's JSON pointer.
fn inject_argument(arguments: &mut Value, text: &str, rng: &mut ChaCha20Rng) -> String {
    if !arguments.is_object() {
        *arguments = Value::Object(Default::default());
    }
    let Value::Object(map) = arguments else {
        unreachable!("arguments were just made an object");
    };
    let mut keys: Vec<String> = map
        .iter()
        .filter(|(_, v)| v.is_string())
        .map(|(k, _)| k.clone())
        .collect();
    keys.sort();
    let slot = (rng.next_u32() as usize) % (keys.len() + 1);
    match keys.get(slot) {
        Some(key) => {
            if let Some(Value::String(s)) = map.get_mut(key) {
                s.push('\n');
                s.push_str(text);
            }
            format!("/{key}")
        }
        None => {
            let mut key = "note".to_string();
            let mut n = 1;
            while map.contains_key(&key) {
                key = format!("note_{n}");
                n += 1;
            }
            map.insert(key.clone(), Value::String(text.to_string()));
            format!("/{key}")
        }
    }
}
