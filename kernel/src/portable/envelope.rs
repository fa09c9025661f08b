//! The JSON envelope of portable evaluation: parsing and validation.
//!
//! [`parse_envelope`] reads `{ "request": {...}, "capability": <signed
//! token>, "trusted_issuers_hex": [...], "clock_override_unix_secs": n }`
//! (or `"clock_override_unix_ms": n`, the clock to the millisecond)
//! with serde and `serde_path_to_error`, every object closed
//! (`deny_unknown_fields`), as the scenario loader reads a scenario. What
//! serde cannot say (an array where an object belongs, an empty request
//! field, an integer beyond 2^53, an issuer key that is not a key) is
//! checked here too, and every refusal is an [`EnvelopeError`] naming the
//! field by its full path without quoting its value. What the envelope
//! means (evaluation, the answer) is the parent module's; the token's own
//! format is `crate::token`'s.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::PortableRequest;
use crate::canonical::{first_inexact_integer, from_slice_unique};
use crate::error::EnvelopeError;
use crate::keys::parse_public_key_hex;
use crate::token::CapabilityToken;
use crate::verification::first_malformed_key;

/// A parsed envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The call.
    pub request: PortableRequest,
    /// The capability.
    pub capability: CapabilityToken,
    /// Trusted issuer keys (hex, validated).
    pub trusted_issuers: Vec<String>,
    /// The clock override in Unix seconds, when given (at most 2^53).
    pub clock: Option<u64>,
    /// The clock override in Unix milliseconds, when given instead (at most
    /// 2^53): a token's window is in milliseconds, so this is the instant
    /// the kernel compares, not rounded to a second.
    pub clock_ms: Option<u64>,
}

/// The largest integer magnitude an IEEE 754 double holds exactly, so the
/// largest canonical JSON prints as written.
pub(super) const MAX_EXACT_INTEGER: u64 = 1 << 53;

/// The envelope as it arrives. Every object is closed, so a misspelt field
/// is refused rather than ignored.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvelopeWire {
    /// The call.
    request: RequestWire,
    /// The signed capability, parsed with the token's own closed schema.
    capability: CapabilityToken,
    /// Trusted issuer keys (hex), checked after parsing.
    trusted_issuers_hex: Vec<String>,
    /// The clock; absent or `null` when the caller supplies it.
    #[serde(default)]
    clock_override_unix_secs: Option<u64>,
    /// The clock to the millisecond; at most one of the two is given.
    #[serde(default)]
    clock_override_unix_ms: Option<u64>,
}

/// The envelope's `request` as it arrives.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestWire {
    /// Names the request in the answer.
    request_id: String,
    /// Server called.
    server: String,
    /// Tool called.
    tool: String,
    /// The calling agent's public key (hex).
    agent_id: String,
    /// Tool arguments; `{}` when absent.
    #[serde(default)]
    arguments: Map<String, Value>,
}

/// Parses and validates an envelope, naming the first malformed field by
/// its full path (such as `request.arguments` or
/// `capability.delegation_chain[2].signature`). The envelope is parsed by
/// serde with every object closed; no error ever quotes the value it
/// refused. Missing and unknown fields of the envelope and its `request`
/// are [`EnvelopeError::MissingField`] and [`EnvelopeError::UnknownField`];
/// anything wrong inside `capability` is [`EnvelopeError::InvalidField`],
/// since the token is one field whose format is the token's own. Every
/// integer anywhere in the envelope must lie within -2^53..=2^53, or it is
/// [`EnvelopeError::OutOfRange`].
pub fn parse_envelope(json: &[u8]) -> Result<Envelope, EnvelopeError> {
    // A key given twice would mean one request here and another to a
    // reader that keeps the first: refused at its position, never quoting
    // the key.
    let value: Value = from_slice_unique(json).map_err(|e| EnvelopeError::NotJson {
        detail: syntax_detail(&e),
    })?;
    let Value::Object(top) = &value else {
        return Err(EnvelopeError::NotAnObject);
    };
    // `100.000000000000001` reads as `100`: refused before the kernel holds
    // a whole number the request never carried.
    if crate::canonical::first_rounded_whole(&String::from_utf8_lossy(json)).is_some() {
        return Err(invalid(
            "request.arguments",
            "holds a number whose fraction rounds away when it is read; write the exact value, or the amount as a string",
        ));
    }
    objects_where_expected(top)?;
    let wire: EnvelopeWire = serde_path_to_error::deserialize(&value).map_err(wire_error)?;
    check_clock(&wire)?;
    let request = wire.request;
    for (name, text) in [
        ("request_id", &request.request_id),
        ("server", &request.server),
        ("tool", &request.tool),
        ("agent_id", &request.agent_id),
    ] {
        if text.is_empty() {
            return Err(invalid(&format!("request.{name}"), "must not be empty"));
        }
    }
    let arguments = Value::Object(request.arguments);
    check_integers(&arguments, "request.arguments")?;
    let token = serde_json::to_value(&wire.capability)
        .map_err(|_| invalid("capability", "does not form a JSON object"))?;
    check_integers(&token, "capability")?;
    check_keys(
        &wire.trusted_issuers_hex,
        &wire.capability,
        &request.agent_id,
    )?;
    Ok(Envelope {
        request: PortableRequest {
            request_id: request.request_id,
            server: request.server,
            tool: request.tool,
            agent_id: request.agent_id,
            arguments,
        },
        capability: wire.capability,
        trusted_issuers: wire.trusted_issuers_hex,
        clock: wire.clock_override_unix_secs,
        clock_ms: wire.clock_override_unix_ms,
    })
}

/// What a key field expects.
const KEY_DETAIL: &str = "expected 64 lowercase hex characters of an Ed25519 public key";

/// Every key of the envelope is the one accepted spelling of an Ed25519
/// key: each trusted issuer, the caller (`request.agent_id`) and every key
/// field of the capability, by the check the kernel's step 1 applies
/// ([`first_malformed_key`]), so keys compare as strings after this.
fn check_keys(
    trusted_issuers: &[String],
    capability: &CapabilityToken,
    agent_id: &str,
) -> Result<(), EnvelopeError> {
    for (i, text) in trusted_issuers.iter().enumerate() {
        parse_public_key_hex(text)
            .map_err(|_| invalid(&format!("trusted_issuers_hex[{i}]"), KEY_DETAIL))?;
    }
    parse_public_key_hex(agent_id).map_err(|_| invalid("request.agent_id", KEY_DETAIL))?;
    match first_malformed_key(capability) {
        Some(field) => Err(invalid(&format!("capability.{field}"), KEY_DETAIL)),
        None => Ok(()),
    }
}

/// Each clock within 2^53, and at most one of them.
fn check_clock(wire: &EnvelopeWire) -> Result<(), EnvelopeError> {
    for (field, clock) in [
        ("clock_override_unix_secs", wire.clock_override_unix_secs),
        ("clock_override_unix_ms", wire.clock_override_unix_ms),
    ] {
        if clock.is_some_and(|c| c > MAX_EXACT_INTEGER) {
            return Err(EnvelopeError::OutOfRange {
                field: field.to_string(),
            });
        }
    }
    if wire.clock_override_unix_secs.is_some() && wire.clock_override_unix_ms.is_some() {
        return Err(invalid(
            "clock_override_unix_ms",
            "given with clock_override_unix_secs; give one clock",
        ));
    }
    Ok(())
}

/// serde also reads a struct from an array of its fields in order; the
/// envelope format has objects only, so an array where an object belongs
/// (the request, the capability and the objects inside the token) is
/// refused before serde sees it.
fn objects_where_expected(top: &Map<String, Value>) -> Result<(), EnvelopeError> {
    fn no_array(value: Option<&Value>, field: &str) -> Result<(), EnvelopeError> {
        match value {
            Some(Value::Array(_)) => Err(invalid(field, "expected an object")),
            _ => Ok(()),
        }
    }
    fn scope(owner: Option<&Value>, field: &str) -> Result<(), EnvelopeError> {
        if let Some(Value::Array(grants)) = owner.and_then(|o| o.get("scope")) {
            for (i, grant) in grants.iter().enumerate() {
                no_array(Some(grant), &format!("{field}.scope[{i}]"))?;
            }
        }
        Ok(())
    }
    no_array(top.get("request"), "request")?;
    let capability = top.get("capability");
    no_array(capability, "capability")?;
    scope(capability, "capability")?;
    let root = capability.and_then(|c| c.get("root"));
    no_array(root, "capability.root")?;
    scope(root, "capability.root")?;
    if let Some(Value::Array(links)) = capability.and_then(|c| c.get("delegation_chain")) {
        for (i, link) in links.iter().enumerate() {
            let field = format!("capability.delegation_chain[{i}]");
            no_array(Some(link), &field)?;
            let attenuation = link.get("attenuation");
            no_array(attenuation, &format!("{field}.attenuation"))?;
            scope(attenuation, &format!("{field}.attenuation"))?;
        }
    }
    Ok(())
}

/// Refuses any integer of `value` beyond 2^53 in magnitude, naming its path
/// below `path`.
fn check_integers(value: &Value, path: &str) -> Result<(), EnvelopeError> {
    match first_inexact_integer(value, path) {
        Some(field) => Err(EnvelopeError::OutOfRange { field }),
        None => Ok(()),
    }
}

/// A syntax error's kind and position. serde_json's syntax messages are
/// fixed texts ("expected value", "trailing characters") and never quote
/// the input.
fn syntax_detail(err: &serde_json::Error) -> String {
    err.to_string()
}

/// Turns serde's complaint into a typed error naming the field's full path.
/// serde quotes what it refused (`invalid type: string "..."`), so only the
/// path and what was expected are kept, in words of the envelope format.
fn wire_error(err: serde_path_to_error::Error<serde_json::Error>) -> EnvelopeError {
    let path = err.path().to_string();
    let inner = err.into_inner();
    if !inner.is_data() {
        return EnvelopeError::NotJson {
            detail: syntax_detail(&inner),
        };
    }
    let message = inner.to_string();
    let root = path == "." || path.is_empty();
    let in_capability = path == "capability" || path.starts_with("capability.");
    let join = |name: &str| {
        if root {
            name.to_string()
        } else {
            format!("{path}.{name}")
        }
    };
    if root && message.starts_with("invalid type") {
        return EnvelopeError::NotAnObject;
    }
    if let Some(name) = quoted(&message, "missing field `") {
        return if in_capability {
            invalid(&path, &format!("missing field {name}"))
        } else {
            EnvelopeError::MissingField { field: join(name) }
        };
    }
    if message.starts_with("unknown field `") {
        return if in_capability {
            invalid(&path, "not part of the capability format; remove it")
        } else {
            EnvelopeError::UnknownField { field: path }
        };
    }
    if let Some(name) = quoted(&message, "duplicate field `") {
        let field = if path.ends_with(&format!(".{name}")) || path == name {
            path.clone()
        } else {
            join(name)
        };
        return invalid(&field, "appears twice; give it once");
    }
    if message.starts_with("unknown variant") {
        return invalid(&path, "is not one of the accepted words");
    }
    invalid(&path, &expected_detail(&path, &message))
}

/// The text between `prefix` and the next backquote, when `message` starts with `prefix`.
fn quoted<'m>(message: &'m str, prefix: &str) -> Option<&'m str> {
    let rest = message.strip_prefix(prefix)?;
    rest.find('`').map(|end| &rest[..end])
}

/// What a field expects, without the value found: the envelope's own words
/// for its fields, serde's type names translated for the capability's.
fn expected_detail(path: &str, message: &str) -> String {
    let fixed = match path {
        "request" | "request.arguments" => Some("expected an object"),
        "trusted_issuers_hex" => Some("expected an array of hex strings"),
        "clock_override_unix_secs" => Some("expected a non-negative integer of Unix seconds"),
        "clock_override_unix_ms" => Some("expected a non-negative integer of Unix milliseconds"),
        "capability" => Some("expected an object: a signed chio.capability/v1 token"),
        _ => None,
    };
    if let Some(fixed) = fixed {
        return fixed.to_string();
    }
    // serde writes "..., expected <what>" followed by a position.
    let expected = message
        .rsplit_once(", expected ")
        .map(|(_, e)| e.split(" at line ").next().unwrap_or(e))
        .unwrap_or("");
    let words = match expected {
        "u64" | "usize" | "u128" => "a non-negative integer",
        "u32" => "a non-negative integer below 2^32",
        "a string" => "a string",
        "a boolean" => "a boolean",
        "a sequence" => "an array",
        "a map" => "an object",
        "any valid JSON value" => "a JSON value",
        e if e.starts_with("struct ") => "an object",
        _ => "a value of the type the format documents",
    };
    format!("expected {words}")
}

fn invalid(field: &str, detail: &str) -> EnvelopeError {
    EnvelopeError::InvalidField {
        field: field.to_string(),
        detail: detail.to_string(),
    }
}
