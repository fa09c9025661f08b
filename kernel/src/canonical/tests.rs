//! The canonical JSON rules, and the writer held to the tree printer it
//! replaced.

use super::*;
use serde_json::json;

/// The tree printer the writer replaced: what the writer must agree
/// with, bytes and errors, for any value.
fn write_value(value: &Value, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out)?,
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            // Sorted here as RFC 8785 says, apart from `key_order`.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_value(item, out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

fn write_number(n: &serde_json::Number, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    if let Some(u) = n.as_u64() {
        if u > MAX_EXACT_INTEGER {
            return Err(CanonicalError::IntegerOutOfRange(u.to_string()));
        }
        out.extend_from_slice(u.to_string().as_bytes());
        return Ok(());
    }
    if let Some(i) = n.as_i64() {
        if i.unsigned_abs() > MAX_EXACT_INTEGER {
            return Err(CanonicalError::IntegerOutOfRange(i.to_string()));
        }
        out.extend_from_slice(i.to_string().as_bytes());
        return Ok(());
    }
    let f = n.as_f64().ok_or(CanonicalError::NonFinite)?;
    out.extend_from_slice(format_es_number(f)?.as_bytes());
    Ok(())
}

fn num(bits: u64) -> String {
    format_es_number(f64::from_bits(bits)).unwrap()
}

// The IEEE 754 examples of RFC 8785 appendix B print exactly as listed.
#[test]
fn rfc8785_number_examples() {
    assert_eq!(num(0x0000000000000000), "0");
    assert_eq!(num(0x8000000000000000), "0");
    assert_eq!(num(0x0000000000000001), "5e-324");
    assert_eq!(num(0x8000000000000001), "-5e-324");
    assert_eq!(num(0x7fefffffffffffff), "1.7976931348623157e+308");
    assert_eq!(num(0xffefffffffffffff), "-1.7976931348623157e+308");
    assert_eq!(num(0x4340000000000000), "9007199254740992");
    assert_eq!(num(0xc340000000000000), "-9007199254740992");
    assert_eq!(num(0x4430000000000000), "295147905179352830000");
    assert_eq!(num(0x44b52d02c7e14af5), "9.999999999999997e+22");
    assert_eq!(num(0x44b52d02c7e14af6), "1e+23");
    assert_eq!(num(0x44b52d02c7e14af7), "1.0000000000000001e+23");
    assert_eq!(num(0x444b1ae4d6e2ef4e), "999999999999999700000");
    assert_eq!(num(0x444b1ae4d6e2ef4f), "999999999999999900000");
    assert_eq!(num(0x444b1ae4d6e2ef50), "1e+21");
    assert_eq!(num(0x3eb0c6f7a0b5ed8c), "9.999999999999997e-7");
    assert_eq!(num(0x3eb0c6f7a0b5ed8d), "0.000001");
    assert_eq!(num(0x41b3de4355555553), "333333333.3333332");
    assert_eq!(num(0x41b3de4355555554), "333333333.33333325");
    assert_eq!(num(0x41b3de4355555555), "333333333.3333333");
    assert_eq!(num(0x41b3de4355555556), "333333333.3333334");
    assert_eq!(num(0x41b3de4355555557), "333333333.33333343");
    assert_eq!(num(0xbecbf647612f3696), "-0.0000033333333333333333");
    assert_eq!(num(0x43143ff3c1cb0959), "1424953923781206.2");
}

// Non-finite doubles are refused rather than printed.
#[test]
fn non_finite_refused() {
    assert_eq!(format_es_number(f64::NAN), Err(CanonicalError::NonFinite));
    assert_eq!(
        format_es_number(f64::INFINITY),
        Err(CanonicalError::NonFinite)
    );
}

// The string and structure example of RFC 8785 section 3.2.2.
#[test]
// The RFC's example literal is written with more digits than a double holds, on purpose.
#[allow(clippy::excessive_precision)]
fn rfc8785_structure_example() {
    let v = json!({
        "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u{20ac}$\u{000F}\u{000a}A'\u{0042}\u{0022}\u{005c}\\\"/",
        "literals": [null, true, false]
    });
    let out = to_canonical_string(&v).unwrap();
    assert_eq!(
        out,
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
}

// Keys sort by UTF-16 code units, as in RFC 8785 section 3.2.3.
#[test]
fn rfc8785_key_sorting() {
    let v = json!({
        "\u{20ac}": "Euro Sign",
        "\r": "Carriage Return",
        "\u{fb33}": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\u{1f600}": "Emoji: Grinning Face",
        "\u{0080}": "Control",
        "\u{00f6}": "Latin Small Letter O With Diaeresis"
    });
    let out = to_canonical_string(&v).unwrap();
    let keys: Vec<&str> = vec![
        "\r",
        "1",
        "\u{0080}",
        "\u{00f6}",
        "\u{20ac}",
        "\u{1f600}",
        "\u{fb33}",
    ];
    let mut expected = String::from("{");
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            expected.push(',');
        }
        expected.push_str(&to_canonical_string(&json!(k)).unwrap());
        expected.push(':');
        expected.push_str(&to_canonical_string(&v[*k]).unwrap());
    }
    expected.push('}');
    assert_eq!(out, expected);
}

// Integers beyond 2^53 would change value as doubles and are refused.
#[test]
fn large_integers_refused() {
    assert!(to_canonical_vec(&json!(9007199254740992u64)).is_ok());
    assert!(matches!(
        to_canonical_vec(&json!(9007199254740993u64)),
        Err(CanonicalError::IntegerOutOfRange(_))
    ));
    assert!(matches!(
        to_canonical_vec(&json!(-9007199254740993i64)),
        Err(CanonicalError::IntegerOutOfRange(_))
    ));
}

/// The string writer as it was first written, a character at a time:
/// what the run-copying writer must agree with byte for byte.
fn write_string_by_char(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for ch in s.chars() {
        match ch {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\u{08}' => out.extend_from_slice(b"\\b"),
            '\u{0C}' => out.extend_from_slice(b"\\f"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes());
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

proptest::proptest! {
    // Proves the string writer that copies unescaped runs writes exactly the bytes the one-character-at-a-time writer does, for any string, control characters, quotes and multi-byte characters among them.
    #[test]
    fn run_copying_string_writer_matches_the_character_writer(
        s in "(?s)[\\x00-\\x1f\"\\\\a-z\u{e9}\u{4e2d}\u{1f600}\u{7f}\u{2028}]{0,40}|\\PC{0,40}",
    ) {
        let (mut fast, mut slow) = (Vec::new(), Vec::new());
        write_string(&s, &mut fast);
        write_string_by_char(&s, &mut slow);
        proptest::prop_assert_eq!(fast, slow);
    }
}

proptest::proptest! {
    // Canonical output parses back to the same tree and is a fixed point.
    #[test]
    fn canonical_round_trips(s in ".*", n in -1_000_000i64..1_000_000, f in -1.0e12f64..1.0e12) {
        let v = json!({"s": s, "n": n, "f": f, "nested": [{"b": 1, "a": [s.clone()]}]});
        let bytes = canonical_bytes(&v).unwrap();
        let back: Value = serde_json::from_slice(&bytes).unwrap();
        // Strings and integers come back identical; a float may come
        // back as an integer (5.0 prints as 5) with the same value.
        proptest::prop_assert_eq!(&back["s"], &v["s"]);
        proptest::prop_assert_eq!(&back["n"], &v["n"]);
        proptest::prop_assert_eq!(back["f"].as_f64().unwrap(), f);
        proptest::prop_assert_eq!(canonical_bytes(&back).unwrap(), bytes);
    }
}

/// The bytes, or the error, of printing `to_value(value)` as a tree.
fn by_tree<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    let tree = serde_json::to_value(value).map_err(|e| CanonicalError::Serialize(e.to_string()))?;
    let mut out = Vec::new();
    write_value(&tree, &mut out)?;
    Ok(out)
}

/// A map written as pairs, so one key can come twice.
struct Pairs(Vec<(String, Value)>);

impl Serialize for Pairs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

fn any_value() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        any::<u64>().prop_map(|u| json!(u)),
        (-(1i64 << 54)..(1i64 << 54)).prop_map(|i| json!(i)),
        any::<f64>().prop_map(|f| json!(f)),
        "(?s)[\\x00-\\x1f\"\\\\a-z\u{e9}\u{fb33}\u{1f600}\u{20ac}]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec(("[a-c\u{e9}\u{fb33}\u{1f600}\r1]{0,3}", inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

proptest::proptest! {
    // Proves the writer gives the bytes and the error the tree printer gives, for any JSON value (integers past 2^53 at any depth among them) and for maps that repeat a key.
    #[test]
    fn the_writer_agrees_with_the_tree_printer(
        value in any_value(),
        pairs in proptest::collection::vec(("[ab\u{1f600}]{0,2}", any_value()), 0..6),
    ) {
        proptest::prop_assert_eq!(to_canonical_vec(&value), by_tree(&value));
        let pairs = Pairs(pairs);
        proptest::prop_assert_eq!(to_canonical_vec(&pairs), by_tree(&pairs));
    }
}

// Every shape serde's derive gives a value, written as the tree printer writes it: variants of each kind, flattened and skipped fields, bytes, characters, 128-bit and out-of-range integers, keys that are numbers, booleans or floats, non-finite floats, and the errors of each kind in the order the tree meets them.
#[test]
fn the_writer_agrees_on_every_shape() {
    use std::collections::BTreeMap;
    #[derive(Serialize)]
    enum Shape {
        Unit,
        New(u8),
        Tuple(i8, &'static str),
        Fields { z: f32, a: Option<u64> },
    }
    #[derive(Serialize)]
    #[serde(tag = "kind", rename_all = "kebab-case")]
    enum Tagged {
        OneThing { b: bool },
        Other,
    }
    #[derive(Serialize)]
    struct Inner {
        x: i32,
        kind: &'static str,
    }
    #[derive(Serialize)]
    struct Record {
        shapes: Vec<Shape>,
        tagged: Vec<Tagged>,
        #[serde(flatten)]
        inner: Inner,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        c: char,
        wide: (i128, u128),
        ints: BTreeMap<i64, u8>,
        flags: BTreeMap<bool, u8>,
        floats: Vec<f64>,
        unit: (),
    }
    struct Bytes(&'static [u8]);
    impl Serialize for Bytes {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }
    struct FloatKeys(f64);
    impl Serialize for FloatKeys {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map([(self.0, 1u8), (2.5f64, 2u8)])
        }
    }
    struct Fails;
    impl Serialize for Fails {
        fn serialize<S: serde::Serializer>(&self, _s: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("refused by its Serialize impl"))
        }
    }
    let record = Record {
        shapes: vec![
            Shape::Unit,
            Shape::New(7),
            Shape::Tuple(-3, "t"),
            Shape::Fields { z: 0.1, a: None },
        ],
        tagged: vec![Tagged::OneThing { b: true }, Tagged::Other],
        inner: Inner {
            x: -1,
            kind: "flat",
        },
        skipped: None,
        c: '\u{1f600}',
        wide: (-5, 9),
        ints: BTreeMap::from([(-2, 1), (10, 2), (3, 3)]),
        flags: BTreeMap::from([(true, 1), (false, 0)]),
        floats: vec![f64::NAN, f64::INFINITY, -0.0, 1e21, 5.0],
        unit: (),
    };
    assert_eq!(to_canonical_vec(&record), by_tree(&record));
    assert!(to_canonical_vec(&record).is_ok());
    for float in [1.0, 1e300, -0.0, f64::NAN] {
        assert_eq!(
            to_canonical_vec(&FloatKeys(float)),
            by_tree(&FloatKeys(float))
        );
    }
    assert_eq!(
        to_canonical_vec(&Bytes(b"\x00\xff")),
        by_tree(&Bytes(b"\x00\xff"))
    );
    let big = 9_007_199_254_740_993u64;
    let cases: Vec<(&str, Value)> = vec![
        ("128-bit out of range", json!(null)),
        (
            "two integers past 2^53",
            json!({"z": big, "a": [1, {"q": big + 2}]}),
        ),
        (
            "an integer past 2^53 in a map key's later twin",
            json!([{"b": big}, {"a": -(big as i64)}]),
        ),
    ];
    for (what, value) in &cases[1..] {
        assert_eq!(to_canonical_vec(value), by_tree(value), "{what}");
        assert!(to_canonical_vec(value).is_err(), "{what}");
    }
    assert_eq!(to_canonical_vec(&(i128::MAX,)), by_tree(&(i128::MAX,)));
    assert_eq!(to_canonical_vec(&(u128::MAX,)), by_tree(&(u128::MAX,)));
    assert!(to_canonical_vec(&(u128::MAX,)).is_err());
    // An integer past 2^53 met first, then an error of the tree: the tree's wins.
    assert_eq!(to_canonical_vec(&(big, Fails)), by_tree(&(big, Fails)));
    assert_eq!(
        to_canonical_vec(&(big, Fails)),
        Err(CanonicalError::Serialize(
            "refused by its Serialize impl".into()
        ))
    );
    let char_keys: BTreeMap<char, u8> = BTreeMap::from([('\u{1f600}', 1), ('a', 2)]);
    assert_eq!(to_canonical_vec(&char_keys), by_tree(&char_keys));
    let wide_keys: BTreeMap<u128, u8> = BTreeMap::from([(u128::MAX, 1), (7, 2)]);
    assert_eq!(to_canonical_vec(&wide_keys), by_tree(&wide_keys));
    let unit_key: BTreeMap<(), u8> = BTreeMap::from([((), 1)]);
    assert_eq!(to_canonical_vec(&unit_key), by_tree(&unit_key));
    assert!(to_canonical_vec(&unit_key).is_err());
}

// The first integer beyond 2^53 in magnitude is named by its path, as is a float that large (an integer literal past the 64-bit range parses to one); smaller floats and 2^53 itself pass.
#[test]
fn inexact_integers_are_located() {
    let ok = serde_json::json!({"a": [1, -9007199254740992i64, 9007199254740992u64, 1.5e15, 9007199254740992.0]});
    assert_eq!(first_inexact_integer(&ok, "doc"), None);
    let parsed: Value = serde_json::from_str(r#"{"n": [18446744073709551623]}"#).unwrap();
    assert!(parsed["n"][0].is_f64(), "serde_json reads it as a float");
    assert_eq!(first_inexact_integer(&parsed, "").as_deref(), Some("n[0]"));
    let negative: Value = serde_json::from_str("-1e300").unwrap();
    assert_eq!(first_inexact_integer(&negative, "x").as_deref(), Some("x"));
    // The writer itself stays RFC 8785's: it prints such a double; the
    // boundaries that take values in refuse it first.
    assert!(to_canonical_vec(&negative).is_ok());
    let big = serde_json::json!({"a": [1, {"b": 9007199254740993u64}]});
    assert_eq!(
        first_inexact_integer(&big, "doc").as_deref(),
        Some("doc.a[1].b")
    );
    assert_eq!(first_inexact_integer(&big, "").as_deref(), Some("a[1].b"));
    let low = serde_json::json!(-9007199254740993i64);
    assert_eq!(first_inexact_integer(&low, "n").as_deref(), Some("n"));
}
