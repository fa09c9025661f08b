//! Target `portable_envelope`: the JSON envelope of portable evaluation
//! (`chio eval`), parsed by `parse_envelope` and evaluated by
//! `evaluate_envelope_at` with a fallback clock.
//!
//! Properties: nothing panics; the parser and the evaluator agree on what is
//! malformed; every refusal is an `EnvelopeError` whose message names its
//! cause; an envelope that parses prints back to JSON that parses to the
//! same envelope; every answer prints as canonical JSON, is never
//! `authorized`, and is `pending_approval` only for a capability someone
//! legitimately signed (the token world's or the reference fixture's), since
//! the envelope names its own trusted issuers but cannot forge a signature.

use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use chio_kernel::canonical::to_canonical_vec;
use chio_kernel::portable::{evaluate_envelope_at, parse_envelope, reference_fixture, Envelope};
use chio_kernel::CapabilityToken;

use crate::world::{token_world, NOW_SECS};
use crate::Reach;

/// Canonical bytes of every capability a known key signed.
fn signed_capabilities() -> &'static Vec<Vec<u8>> {
    static SIGNED: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SIGNED.get_or_init(|| {
        let world = token_world();
        let fixture: CapabilityToken =
            serde_json::from_value(reference_fixture()["capability"].clone())
                .expect("the reference fixture's capability decodes");
        world
            .tokens
            .iter()
            .chain([&world.too_deep, &fixture])
            .map(|t| to_canonical_vec(t).expect("a signed token has a canonical form"))
            .collect()
    })
}

/// Runs one input (see the module doc).
pub fn portable_envelope(data: &[u8]) -> Reach {
    let parsed = parse_envelope(data);
    let answered = evaluate_envelope_at(data, Some(NOW_SECS));
    let (envelope, answer) = match (parsed, answered) {
        (Ok(envelope), Ok(answer)) => (envelope, answer),
        (Err(parse), Err(evaluate)) => {
            assert_eq!(parse, evaluate, "parser and evaluator refuse differently");
            assert!(
                !parse.to_string().is_empty(),
                "a refusal must name its cause"
            );
            return Reach::Undecoded;
        }
        (parsed, answered) => {
            panic!("parser and evaluator disagree: {parsed:?} against {answered:?}")
        }
    };
    round_trips(&envelope);
    if let Err(error) = answer.to_canonical_json() {
        panic!("an answer has no canonical JSON form: {error}");
    }
    assert!(!answer.authorized, "portable evaluation never authorizes");
    match answer.verdict.as_str() {
        "pending_approval" => {
            let signed = to_canonical_vec(&envelope.capability)
                .is_ok_and(|bytes| signed_capabilities().contains(&bytes));
            assert!(signed, "a capability nobody signed passed the check");
            Reach::Accepted
        }
        "deny" => {
            let named = answer.reason.as_deref().is_some_and(|r| !r.is_empty());
            assert!(named, "a deny must name its cause");
            Reach::Refused
        }
        other => panic!("unknown verdict {other:?}"),
    }
}

/// Prints a parsed envelope back as JSON and parses it again.
fn round_trips(envelope: &Envelope) {
    let arguments = match &envelope.request.arguments {
        Value::Object(map) => map.clone(),
        other => panic!("parsed arguments are not an object: {other}"),
    };
    let mut top = Map::new();
    top.insert(
        "request".into(),
        json!({
            "request_id": envelope.request.request_id,
            "server": envelope.request.server,
            "tool": envelope.request.tool,
            "agent_id": envelope.request.agent_id,
            "arguments": arguments,
        }),
    );
    top.insert("capability".into(), json!(envelope.capability));
    top.insert(
        "trusted_issuers_hex".into(),
        json!(envelope.trusted_issuers),
    );
    if let Some(clock) = envelope.clock {
        top.insert("clock_override_unix_secs".into(), json!(clock));
    }
    if let Some(clock) = envelope.clock_ms {
        top.insert("clock_override_unix_ms".into(), json!(clock));
    }
    let printed = Value::Object(top).to_string();
    match parse_envelope(printed.as_bytes()) {
        Ok(again) => assert_eq!(&again, envelope, "an envelope changed across a round trip"),
        Err(error) => panic!("a printed envelope does not parse: {error}"),
    }
}
