//! JSON text read into a tree with every object's keys distinct. `serde_json`
//! keeps the last of two equal keys silently, so a document holding
//! `"tool": "file_write", "tool": "file_read"` means one request to this
//! reader and another to a reader that keeps the first. Input that is
//! signed, evaluated or forwarded is read with [`from_slice_unique`], which
//! refuses such a document at the position of the second key, never quoting
//! the key or a value: a key is input too (it may be a credential).

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The start of the error [`from_slice_unique`] gives for a key given twice
/// in one object (serde_json adds the line and column).
pub const DUPLICATE_KEY: &str = "a key appears twice in one object; give it once";

/// Whether `err` is the refusal of a key given twice in one object.
pub fn is_duplicate_key(err: &serde_json::Error) -> bool {
    err.to_string().starts_with(DUPLICATE_KEY)
}

/// Parses `bytes` as one JSON document, refusing an object that holds a key
/// twice.
pub fn from_slice_unique(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    let value = Unique.deserialize(&mut reader)?;
    reader.end()?;
    Ok(value)
}

/// A JSON value whose objects hold each key once.
struct Unique;

impl<'de> DeserializeSeed<'de> for Unique {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(Unique)
    }
}

impl<'de> Visitor<'de> for Unique {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Unique)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                // serde_json adds the line and column of the second one.
                return Err(A::Error::custom(DUPLICATE_KEY));
            }
            let value = map.next_value_seed(Unique)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::from_slice_unique;

    // A key given twice in any object, at any depth, is refused at its position without quoting the key or a value; a document without one reads as serde_json reads it.
    #[test]
    fn a_key_given_twice_is_refused() {
        let doc = br#"{"a": [1, -2, 2.5, "x", null, true, {"b": {}}], "c": {"d": "e"}}"#;
        assert_eq!(
            from_slice_unique(doc).unwrap(),
            serde_json::from_slice::<serde_json::Value>(doc).unwrap()
        );
        for twice in [
            &br#"{"tool": "file_write", "tool": "file_read"}"#[..],
            br#"{"request": {"arguments": {"path": "/etc/passwd", "path": "/w/a"}}}"#,
            br#"[{"k": 1}, {"k": 1, "k": 1}]"#,
            br#"{"x": {"ghp_AAAAAAAAAAAAAAAAAAAA": 1, "ghp_AAAAAAAAAAAAAAAAAAAA": 1}}"#,
        ] {
            let err = from_slice_unique(twice).unwrap_err().to_string();
            assert!(err.contains("a key appears twice"), "{err}");
            assert!(
                super::is_duplicate_key(&from_slice_unique(twice).unwrap_err()),
                "{err}"
            );
            assert!(err.contains(" at line 1 column "), "{err}");
            for quoted in ["passwd", "file_read", "tool", "path", "\"k\"", "ghp_"] {
                assert!(!err.contains(quoted), "{err}");
            }
        }
        assert!(from_slice_unique(b"{} {}").is_err(), "one document only");
    }
}
