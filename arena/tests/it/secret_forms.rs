//! The loader reads a credential the way the `secret-redaction` guard does:
//! in every form of one string, and across the strings of one table; and a
//! JSON Schema property's name is a field name, not a key holding a value.

use chio_arena::secrets::scan_document;
use chio_arena::ArenaError;

fn scan(text: &str) -> Result<(), ArenaError> {
    scan_document(&text.parse::<toml::Table>().expect("TOML"))
}

fn refused_at(text: &str) -> String {
    match scan(text) {
        Err(ArenaError::InlineSecret { field, marker }) => {
            assert_eq!(marker, "ghp_");
            field
        }
        other => panic!("{text}: {other:?}"),
    }
}

// A token split across two argument strings, at one level or nested, is
// refused naming both; the same strings in two steps are not read together.
#[test]
fn a_credential_split_across_strings_of_one_table_is_refused() {
    let flat = "[[steps]]\nid = \"s\"\n[steps.arguments]\ntitle = \"ghp_16C7e42F292c6912\"\nbody = \"E7710c838347Ae178B4a\"\n";
    let field = refused_at(flat);
    assert!(field.contains("steps[0].arguments.body"), "{field}");
    assert!(field.contains("steps[0].arguments.title"), "{field}");
    let nested = "[[steps]]\nid = \"s\"\n[steps.arguments]\ntitle = \"ghp_16C7e42F292c6912\"\nheaders = { b = \"E7710c838347Ae178B4a\" }\n";
    assert!(refused_at(nested).contains("steps[0].arguments.headers.b"));
    let apart = "[[steps]]\nid = \"s\"\narguments = { title = \"ghp_16C7e42F292c6912\" }\n[[steps]]\nid = \"t\"\narguments = { body = \"E7710c838347Ae178B4a\" }\n";
    assert!(scan(apart).is_ok());
}

fn tool(schema: &str) -> String {
    format!("[[servers]]\nid = \"w\"\n[[servers.tools]]\nname = \"list_files\"\ninput_schema = '{schema}'\n")
}

// Schema property names (pageToken, a required list, $defs) load; a key
// holding a value inside the schema's JSON still meets the key-name rule,
// and a credential used as a property name is still refused.
#[test]
fn schema_property_names_are_names_not_keys_holding_values() {
    let paged = r#"{"type":"object","properties":{"pageToken":{"type":"string"},"api_key_hint":true},"required":["pageToken"],"$defs":{"secret_ref":{"type":"string"}}}"#;
    scan(&tool(paged)).expect("a pagination property loads");
    let valued = r#"{"type":"object","examples":[{"pageToken":"2"}]}"#;
    assert!(matches!(
        scan(&tool(valued)),
        Err(ArenaError::SecretKeyName {
            marker: "token",
            ..
        })
    ));
    let planted = r#"{"type":"object","properties":{"ghp_16C7e42F292c6912E7710c838347Ae178B4a":{"type":"string"}}}"#;
    assert!(matches!(
        scan(&tool(planted)),
        Err(ArenaError::InlineSecret { marker: "ghp_", .. })
    ));
}
