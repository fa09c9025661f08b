//! Property tests: the loader never panics, whatever bytes or TOML it is
//! given, every refusal comes back as an error value with a code, and no
//! refusal shows a credential the generators placed.

use std::path::Path;

use chio_arena::{parse_scenario, parse_scenario_bytes, ERROR_CODES};
use proptest::prelude::*;

const SEED: &str = include_str!("../fixtures/seed_pr_421_review.toml");

fn toml_value() -> impl Strategy<Value = toml::Value> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(toml::Value::Integer),
        any::<bool>().prop_map(toml::Value::Boolean),
        any::<f64>().prop_map(toml::Value::Float),
        "[ -~]{0,24}".prop_map(toml::Value::String),
        prop::sample::select(vec![
            "chio.arena.scenario/v1",
            "single-agent-v1",
            "deterministic-multi-v1",
            "C",
            "reviewer",
            "workspace",
            "allow",
            "deny",
            "delegate",
            "revoke",
            "advance",
            "recorded:reviewer",
            "2026-10-12T09:00:00.000Z",
            "Bearer abcdef123456",
            "sk-0123456789abcdefABCD",
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "Bearer\n\tabcdef123456",
        ])
        .prop_map(|s| toml::Value::String(s.to_string())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(toml::Value::Array),
            prop::collection::btree_map(key(), inner, 0..6)
                .prop_map(|m| toml::Value::Table(m.into_iter().collect())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "schema_version",
            "id",
            "title",
            "rng_seed",
            "virtual_clock_start",
            "determinism",
            "scheduler",
            "locale",
            "tick_ms",
            "agents",
            "steps",
            "nodes",
            "kernels",
            "servers",
            "grants",
            "guards",
            "budgets",
            "adversaries",
            "agent",
            "server",
            "tool",
            "action",
            "arguments",
            "expect_verdict",
            "capability",
            "to",
            "delegation",
            "target",
            "advance_ms",
            "at",
            "kernel",
            "node",
            "kind",
            "fixtures",
            "model",
            "role",
            "seed_prompt_ref",
            "tools",
            "share_bps",
            "max_invocations",
            "config",
            "password",
        ])
        .prop_map(str::to_string),
        "[a-z_]{1,10}",
    ]
}

fn check(result: Result<chio_arena::Scenario, chio_arena::ArenaError>) {
    if let Err(err) = result {
        assert!(
            ERROR_CODES.contains(&err.code()),
            "unlisted code {}",
            err.code()
        );
        assert!(!err.to_string().is_empty());
        let shown = format!("{err} {err:?}");
        for secret in SECRETS {
            assert!(
                !shown.contains(secret),
                "the error echoes a credential: {shown}"
            );
        }
    }
}

/// The secret parts of the credentials the generators place; no error may show them.
const SECRETS: [&str; 4] = [
    "0123456789abcdefABCD",
    "IOSFODNN7EXAMPLE",
    "16C7e42F292c6912E7710c838347Ae178B4a",
    "abcdef123456",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    // Arbitrary bytes never panic the loader.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check(parse_scenario_bytes(&bytes, Path::new(".")));
    }

    // Arbitrary TOML documents built from schema-like keys never panic the loader.
    #[test]
    fn arbitrary_toml_never_panics(doc in prop::collection::btree_map(key(), toml_value(), 0..12)) {
        let table: toml::Table = doc.into_iter().collect();
        let text = toml::to_string(&table).unwrap_or_default();
        check(parse_scenario(&text, Path::new(".")));
    }

    // Mutating one byte of the seed's example never panics the loader.
    #[test]
    fn mutated_seed_never_panics(index in 0usize..SEED.len(), byte in any::<u8>()) {
        let mut bytes = SEED.as_bytes().to_vec();
        bytes[index] = byte;
        check(parse_scenario_bytes(&bytes, Path::new(".")));
    }

    // Replacing one top-level value of the seed with an arbitrary value never panics the loader.
    #[test]
    fn seed_with_an_arbitrary_value_never_panics(k in key(), v in toml_value()) {
        let mut table: toml::Table = SEED.parse().unwrap();
        table.insert(k, v);
        let text = toml::to_string(&table).unwrap_or_default();
        check(parse_scenario(&text, Path::new(".")));
    }
}

/// A scenario with a recorded tool whose input schema the property test rewrites.
const ESCAPED_SCHEMA: &str = include_str!("../invalid/secret_schema_json_escape.toml");

/// `text` with the characters `escape` picks written as JSON `\u` escapes
/// (a character outside the basic plane as its surrogate pair).
fn json_escaped(text: &str, escape: &[bool]) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if escape.get(i).copied().unwrap_or(false) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    // A credential in a tool's schema, any of its characters written as JSON escapes, at any key
    // or as a key, is refused naming the schema, never the credential.
    #[test]
    fn escaped_credential_in_a_schema_is_refused(
        secret in prop::sample::select(vec![
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "AKIAIOSFODNN7EXAMPLE",
            "sk-0123456789abcdefABCD",
        ]),
        escape in prop::collection::vec(any::<bool>(), 40),
        place in 0usize..3,
    ) {
        let written = json_escaped(secret, &escape);
        let schema = match place {
            0 => format!(r#"{{"type": "object", "default": "{written}"}}"#),
            1 => format!(r#"{{"type": "object", "examples": [{{"note": "see {written}"}}]}}"#),
            _ => format!(r#"{{"type": "object", "properties": {{"{written}": {{}}}}}}"#),
        };
        let original = r#"'{"type": "object", "default": "\u0067hp_16C7e42F292c6912E7710c838347Ae178B4a"}'"#;
        prop_assert!(ESCAPED_SCHEMA.contains(original));
        let text = ESCAPED_SCHEMA.replace(original, &format!("'{schema}'"));
        let err = parse_scenario(&text, Path::new(".")).expect_err("a credential in a schema loads");
        prop_assert_eq!(err.code(), "CHIO-SCENARIO-INLINE-SECRET");
        prop_assert!(err.to_string().contains("servers[1].tools[0].input_schema"), "{}", err);
        check(Err(err));
    }
}
