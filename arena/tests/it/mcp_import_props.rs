//! Properties of the `tools/list` parser behind `chio import mcp`, a parser
//! of untrusted input: it never panics on any bytes or any JSON; what it
//! accepts prints a declaration that reads back, digest for digest, as the
//! same tools; what it refuses it refuses without echoing the input.

use chio_arena::model::ServerDecl;
use chio_arena::scenario::mcp::{parse_tools_list, server_declaration};
use chio_arena::scenario::tools::declared_contract;
use proptest::prelude::*;
use serde::Deserialize;
use serde_json::{json, Value};

/// A marker no message may contain: it stands for a secret in the input.
const MARK: &str = "Zq9SECRETz";

/// A tool name: mostly valid, sometimes carrying the marker or a bad byte.
fn arb_name() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => "[A-Za-z0-9_.-]{1,12}".prop_map(Value::String),
        1 => Just(Value::String(format!("{MARK} !"))),
        1 => Just(Value::String(String::new())),
        1 => Just(json!(7)),
    ]
}

/// A schema: mostly an object schema, sometimes not an object, remote or
/// broken.
fn arb_schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::collection::btree_map("[a-z_]{1,6}", prop_oneof![
            Just(json!({"type": "string"})),
            Just(json!({"type": "integer", "minimum": 0})),
            Just(json!({"anyOf": [{"type": "string"}, {"type": "null"}], "default": null})),
            Just(json!({"type": "string", "description": MARK})),
        ], 0..4).prop_map(|props| {
            let required: Vec<&String> = props.keys().take(1).collect();
            json!({"type": "object", "properties": props, "required": required})
        }),
        1 => Just(json!([MARK])),
        1 => Just(json!({"$ref": format!("https://{MARK}.test/s.json")})),
        1 => Just(json!({"type": 12})),
    ]
}

fn arb_hint() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        3 => Just(None),
        3 => any::<bool>().prop_map(|b| Some(Value::Bool(b))),
        1 => Just(Some(Value::String(MARK.to_string()))),
    ]
}

/// One tool definition, with keys the scenario does not keep.
fn arb_tool() -> impl Strategy<Value = Value> {
    (
        prop::option::weighted(0.95, arb_name()),
        prop::option::of("[ -~]{0,20}"),
        prop::option::weighted(0.95, arb_schema()),
        prop::option::weighted(0.2, arb_schema()),
        prop::collection::vec(arb_hint(), 4),
    )
        .prop_map(|(name, description, input, output, hints)| {
            let mut tool = serde_json::Map::new();
            if let Some(name) = name {
                tool.insert("name".into(), name);
            }
            if let Some(d) = description {
                tool.insert("description".into(), Value::String(d));
            }
            if let Some(s) = input {
                tool.insert("inputSchema".into(), s);
            }
            if let Some(s) = output {
                tool.insert("outputSchema".into(), s);
            }
            tool.insert("title".into(), Value::String("ignored".into()));
            let mut annotations = serde_json::Map::new();
            for (key, hint) in [
                "readOnlyHint",
                "destructiveHint",
                "idempotentHint",
                "openWorldHint",
            ]
            .into_iter()
            .zip(hints)
            {
                if let Some(hint) = hint {
                    annotations.insert(key.into(), hint);
                }
            }
            tool.insert("annotations".into(), Value::Object(annotations));
            Value::Object(tool)
        })
}

/// A whole result, bare or wrapped in a JSON-RPC response.
fn arb_result() -> impl Strategy<Value = Value> {
    (prop::collection::vec(arb_tool(), 0..5), any::<bool>()).prop_map(|(tools, wrapped)| {
        let result = json!({ "tools": tools });
        if wrapped {
            json!({"jsonrpc": "2.0", "id": 1, "result": result})
        } else {
            result
        }
    })
}

#[derive(Deserialize)]
struct Servers {
    servers: Vec<ServerDecl>,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // Any bytes at all are answered, never a panic, and a refusal never echoes them.
    #[test]
    fn any_bytes_are_answered_without_echo(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Err(problem) = parse_tools_list(&bytes, "s") {
            prop_assert!(!problem.message.contains(MARK));
        }
    }

    // An accepted result prints a declaration that reads back as the same tools, each digest stated and matched; a refused one never echoes the input, and a truncated accepted result is refused.
    #[test]
    fn accepted_results_round_trip_and_refusals_do_not_echo(result in arb_result(), cut in 1usize..40) {
        let bytes = serde_json::to_vec(&result).unwrap();
        match parse_tools_list(&bytes, "git") {
            Err(problem) => prop_assert!(!problem.message.contains(MARK), "{}", problem.message),
            Ok(tools) => {
                let block = server_declaration("git", "kernel-a", &tools);
                let parsed: Servers = toml::from_str(&block).expect("the declaration is TOML");
                let decls = parsed.servers[0].tools.clone().unwrap_or_default();
                prop_assert_eq!(decls.len(), tools.len());
                for (decl, tool) in decls.iter().zip(&tools) {
                    let (contract, digest) = declared_contract("git", decl).expect("declaration checks");
                    prop_assert_eq!(&contract, &tool.contract);
                    prop_assert_eq!(&digest, &tool.digest);
                    prop_assert_eq!(decl.digest.as_deref(), Some(tool.digest.as_str()));
                }
                let truncated = &bytes[..bytes.len().saturating_sub(cut.min(bytes.len() - 1))];
                prop_assert!(parse_tools_list(truncated, "git").is_err());
            }
        }
    }
}
