//! What a client presents in a request's `_meta`, read as untrusted input.
//!
//! `tools/list` may carry `"chio/capability": "<token string>"`. Every
//! `tools/call` carries the token and the signed request:
//!
//! ```json
//! "_meta": {
//!   "chio/capability": "chio-cap1....",
//!   "chio/request": {
//!     "request_id": "r-1", "agent_id": "<client key hex>", "session_id": "s-1",
//!     "issued_at_ms": 1767225600000,
//!     "proof": { "signer": "<client key hex>", "signature": "<hex>" }
//!   }
//! }
//! ```
//!
//! The server and tool of the signed request are the upstream id serving
//! the called tool and the tool's name, and its arguments are the call's
//! own `arguments` (`{}` when absent): the edge assembles the kernel's
//! `ToolCallRequest` from them, so a proof signed over anything else does
//! not verify. Every other `_meta` key is ignored; a `chio/request` with a
//! key it does not define, a field of the wrong type or a text past its
//! bound is refused, naming the field, never its value. Every id a client
//! chooses (the request, agent and session ids, and the ids of a capability
//! it delegated) is an id by one rule ([`id_problem`]: not empty, at most
//! [`MAX_ID_CHARS`] characters, no control character), checked here before
//! the kernel, so an unusable id is the client's error and never reaches
//! trust-control's store as a key it refuses.

use serde::Deserialize;
use serde_json::{Map, Value};

use chio_kernel::request::{RequestProof, ToolCallRequest};
use chio_kernel::token::CapabilityToken;

use super::grant::{decode_token, TokenError};

/// The `_meta` key of the token string.
pub const CAPABILITY_KEY: &str = "chio/capability";
/// The `_meta` key of the signed request.
pub const REQUEST_KEY: &str = "chio/request";
/// The longest id (request, agent, session) read.
pub const MAX_ID_CHARS: usize = 256;

/// Why a presentation is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PresentError {
    /// No token in `_meta`.
    #[error("no capability was presented: put the token string in _meta[\"chio/capability\"]")]
    NoCapability,
    /// The token's key holds something other than a string.
    #[error("_meta[\"chio/capability\"] is not a string")]
    CapabilityType,
    /// The token string is refused.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// No signed request in `_meta`.
    #[error("no signed request was presented: put it in _meta[\"chio/request\"]")]
    NoRequest,
    /// The signed request is not the object this module defines.
    #[error("_meta[\"chio/request\"] is not a signed request object (fields request_id, agent_id, session_id, issued_at_ms, proof)")]
    RequestShape,
    /// An id is not one ([`id_problem`]).
    #[error("_meta[\"chio/request\"].{0} {1}")]
    Id(&'static str, &'static str),
    /// An id of the capability (its own, its root's or a delegation
    /// link's) is not one ([`id_problem`]).
    #[error("the capability token holds an id that {0}")]
    TokenId(&'static str),
    /// The session id is not the client's own.
    #[error("_meta[\"chio/request\"].session_id is not the client's own: use its agent_id, or agent_id, '-' and a name")]
    ForeignSession,
}

impl PresentError {
    /// The stable code a refused presentation is answered with.
    pub fn code(&self) -> &'static str {
        match self {
            PresentError::NoCapability => "edge-no-capability",
            PresentError::CapabilityType | PresentError::Token(_) | PresentError::TokenId(_) => {
                "edge-token-malformed"
            }
            PresentError::NoRequest => "edge-no-signed-request",
            PresentError::RequestShape | PresentError::Id(..) => "edge-request-malformed",
            PresentError::ForeignSession => "edge-session-not-own",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignedPart {
    request_id: String,
    agent_id: String,
    session_id: String,
    issued_at_ms: u64,
    proof: RequestProof,
}

/// Why `value` is not an id a client may choose, if it is not: empty,
/// longer than [`MAX_ID_CHARS`] characters, or holding a control character
/// (a line break, a NUL, ...), which no id, log line or store key carries.
pub fn id_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        Some("is empty")
    } else if value.chars().count() > MAX_ID_CHARS {
        Some("is longer than 256 characters")
    } else if value.chars().any(char::is_control) {
        Some("holds a control character")
    } else {
        None
    }
}

/// The token of `meta`, each of its ids checked ([`id_problem`]): a
/// delegated capability's ids are chosen by the clients that delegated it.
pub fn capability(meta: &Map<String, Value>) -> Result<CapabilityToken, PresentError> {
    let token = match meta.get(CAPABILITY_KEY) {
        None | Some(Value::Null) => return Err(PresentError::NoCapability),
        Some(Value::String(text)) => decode_token(text)?,
        Some(_) => return Err(PresentError::CapabilityType),
    };
    let problem = {
        let links = token
            .delegation_chain
            .iter()
            .flat_map(|link| [&link.parent_id, &link.child_id]);
        let root = token.root.as_ref().map(|body| &body.id);
        std::iter::once(&token.id)
            .chain(root)
            .chain(links)
            .find_map(|id| id_problem(id))
    };
    match problem {
        Some(problem) => Err(PresentError::TokenId(problem)),
        None => Ok(token),
    }
}

/// The kernel's request for a call of `tool` on upstream `server` with
/// `arguments`, from what `meta` presents.
pub fn request(
    meta: &Map<String, Value>,
    server: &str,
    tool: &str,
    arguments: Value,
) -> Result<ToolCallRequest, PresentError> {
    let capability = capability(meta)?;
    let part = meta.get(REQUEST_KEY).ok_or(PresentError::NoRequest)?;
    let part: SignedPart =
        serde_json::from_value(part.clone()).map_err(|_| PresentError::RequestShape)?;
    for (name, value) in [
        ("request_id", &part.request_id),
        ("agent_id", &part.agent_id),
        ("session_id", &part.session_id),
    ] {
        if let Some(problem) = id_problem(value) {
            return Err(PresentError::Id(name, problem));
        }
    }
    if !own_session(&part.agent_id, &part.session_id) {
        return Err(PresentError::ForeignSession);
    }
    Ok(ToolCallRequest {
        request_id: part.request_id,
        capability,
        server: server.to_string(),
        tool: tool.to_string(),
        arguments,
        agent_id: part.agent_id,
        session_id: part.session_id,
        issued_at_ms: part.issued_at_ms,
        proof: part.proof,
        sealed: Vec::new(),
        argument_sources: Vec::new(),
    })
}

/// Whether `session` is a session of client `agent`: its id, or its id,
/// `-` and a name. The kernel keeps a session's journal and taint under the
/// session id, so no client may name another's session; the kernel binds
/// `agent` to the proof's key.
fn own_session(agent: &str, session: &str) -> bool {
    session == agent
        || session
            .strip_prefix(agent)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|name| !name.is_empty())
}

/// One call as a client signs it.
#[derive(Debug, Clone)]
pub struct ClientCall<'a> {
    /// The upstream id serving the tool.
    pub server: &'a str,
    /// The tool called.
    pub tool: &'a str,
    /// The call's arguments.
    pub arguments: &'a Value,
    /// Unique per request.
    pub request_id: &'a str,
    /// The client's session.
    pub session_id: &'a str,
    /// The client's clock, Unix milliseconds.
    pub issued_at_ms: u64,
}

/// What a client puts in `_meta` for `call`: the token string and the
/// request signed with `key` (the client side of this module, for Rust
/// clients and tests).
pub fn client_meta(
    token: &str,
    key: &ed25519_dalek::SigningKey,
    call: &ClientCall<'_>,
) -> Result<Map<String, Value>, PresentError> {
    let ClientCall {
        server,
        tool,
        arguments,
        request_id,
        session_id,
        issued_at_ms,
    } = *call;
    let agent = chio_kernel::keys::public_key_hex(key);
    let mut meta = Map::new();
    meta.insert(CAPABILITY_KEY.to_string(), Value::String(token.to_string()));
    let unsigned = ToolCallRequest {
        request_id: request_id.to_string(),
        capability: decode_token(token)?,
        server: server.to_string(),
        tool: tool.to_string(),
        arguments: arguments.clone(),
        agent_id: agent.clone(),
        session_id: session_id.to_string(),
        issued_at_ms,
        proof: RequestProof::default(),
        sealed: Vec::new(),
        argument_sources: Vec::new(),
    };
    let signed = unsigned.sign(key).map_err(|_| PresentError::RequestShape)?;
    meta.insert(
        REQUEST_KEY.to_string(),
        serde_json::json!({
            "request_id": request_id,
            "agent_id": agent,
            "session_id": session_id,
            "issued_at_ms": issued_at_ms,
            "proof": { "signer": signed.proof.signer, "signature": signed.proof.signature },
        }),
    );
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            ".{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("request_id".to_string()),
                        Just("agent_id".to_string()),
                        Just("proof".to_string()),
                        Just("issued_at_ms".to_string()),
                        ".{0,8}"
                    ],
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        // Any `_meta` is refused with a typed error or read, never a panic.
        #[test]
        fn any_meta_is_read_or_refused(capability in arb_json(), signed in arb_json()) {
            let mut meta = Map::new();
            meta.insert(CAPABILITY_KEY.to_string(), capability);
            meta.insert(REQUEST_KEY.to_string(), signed);
            if let Err(e) = request(&meta, "git", "git_status", Value::Object(Map::new())) {
                prop_assert!(!e.code().is_empty());
            }
        }
    }

    // An unknown key in the signed request, an empty id and a missing token are each refused by name.
    #[test]
    fn refusals_name_their_field() {
        let mut meta = Map::new();
        assert_eq!(capability(&meta), Err(PresentError::NoCapability));
        meta.insert(CAPABILITY_KEY.to_string(), Value::from(3));
        assert_eq!(capability(&meta), Err(PresentError::CapabilityType));
        let issuer = ed25519_dalek::SigningKey::from_bytes(&[1; 32]);
        let client = ed25519_dalek::SigningKey::from_bytes(&[2; 32]);
        let token = super::super::grant::encode_token(
            &CapabilityToken::issue(
                chio_kernel::token::CapabilityBody {
                    schema: chio_kernel::token::CAPABILITY_SCHEMA.to_string(),
                    id: "c".to_string(),
                    issuer: chio_kernel::keys::public_key_hex(&issuer),
                    subject: chio_kernel::keys::public_key_hex(&client),
                    scope: vec![],
                    not_before_ms: 0,
                    expires_at_ms: 1,
                    max_invocations: None,
                    share_bps: 10_000,
                },
                &issuer,
            )
            .unwrap(),
        )
        .unwrap();
        let args = serde_json::json!({"repo_path": "."});
        let call = ClientCall {
            server: "git",
            tool: "git_status",
            arguments: &args,
            request_id: "r",
            session_id: &format!("{}-s", chio_kernel::keys::public_key_hex(&client)),
            issued_at_ms: 5,
        };
        let mut meta = client_meta(&token, &client, &call).unwrap();
        let built = request(&meta, "git", "git_status", args.clone()).unwrap();
        assert_eq!(
            built.proof.signer,
            chio_kernel::keys::public_key_hex(&client)
        );
        meta[REQUEST_KEY]["extra"] = Value::from(1);
        assert_eq!(
            request(&meta, "git", "git_status", args.clone()),
            Err(PresentError::RequestShape)
        );
        meta[REQUEST_KEY].as_object_mut().unwrap().remove("extra");
        meta[REQUEST_KEY]["session_id"] = Value::from("");
        assert_eq!(
            request(&meta, "git", "git_status", args.clone()),
            Err(PresentError::Id("session_id", "is empty"))
        );
        for (field, bad) in [
            ("request_id", "r\n1"),
            ("request_id", "\u{7f}"),
            ("session_id", "s\u{85}"),
            ("agent_id", "a\u{0}"),
        ] {
            let mut meta = meta.clone();
            meta[REQUEST_KEY][field] = Value::from(bad);
            assert_eq!(
                request(&meta, "git", "git_status", args.clone()),
                Err(PresentError::Id(field, "holds a control character")),
                "{field}"
            );
        }
        let mut long = meta.clone();
        long[REQUEST_KEY]["request_id"] = Value::from("é".repeat(MAX_ID_CHARS + 1));
        assert_eq!(
            request(&long, "git", "git_status", args.clone()),
            Err(PresentError::Id(
                "request_id",
                "is longer than 256 characters"
            ))
        );
        let own = chio_kernel::keys::public_key_hex(&client);
        for foreign in [
            "s".to_string(),
            format!("{own}-"),
            format!("{own}s"),
            format!("x{own}-s"),
            format!("{}-s", "0".repeat(64)),
        ] {
            meta[REQUEST_KEY]["session_id"] = Value::from(foreign.clone());
            assert_eq!(
                request(&meta, "git", "git_status", args.clone()),
                Err(PresentError::ForeignSession),
                "{foreign}"
            );
        }
        for own_session in [own.clone(), format!("{own}-1"), format!("{own}-a-b")] {
            meta[REQUEST_KEY]["session_id"] = Value::from(own_session.clone());
            assert!(
                request(&meta, "git", "git_status", args.clone()).is_ok(),
                "{own_session}"
            );
        }
    }
}
