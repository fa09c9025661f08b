//! `chio mcp grant` and `chio mcp revoke`, and the capability's token
//! string.
//!
//! A grant is the kernel's root capability (`chio.capability/v1`, see
//! `chio_kernel::token`): issued by the edge's authority key for the
//! client's public key (its subject), one scope grant on the named
//! upstream with the named tools, valid from now for `--expires-in-secs`,
//! with `--max-calls` as its invocation budget. It is printed as one token
//! string: `chio-cap1.` followed by the unpadded base64url of the token's
//! canonical JSON. Its id is printed on standard error, for `chio mcp
//! revoke`.
//!
//! `chio mcp revoke` revokes an id in trust-control under the edge's
//! namespace (the id every edge bound to that trust-control and namespace
//! looks up on each call, uncached), through the node's authority adapter
//! (`chio_node::trust_stores::TrustAuthority`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chio_kernel::canonical::to_canonical_vec;
use chio_kernel::keys::{parse_public_key_hex, public_key_hex};
use chio_kernel::receipt::canonical_sha256;
use chio_kernel::token::{
    CapabilityBody, CapabilityToken, ScopeGrant, CAPABILITY_SCHEMA, FULL_SHARE_BPS,
};
use chio_node::node::AuthorityControl;
use chio_node::trust_stores::{StoreDeadlines, TrustAuthority, TrustBinding};
use chio_trust::{BearerToken, TrustClient, TrustClientConfig};

use super::wall_ms;
use super::{ControlArgs, GrantArgs, RevokeArgs};
use crate::arena_run::runtime;
use crate::error::{codes, CliError};

/// What every token string starts with.
pub const TOKEN_PREFIX: &str = "chio-cap1.";
/// The longest token string read (a token with a long delegation chain
/// stays far below it).
pub const MAX_TOKEN_CHARS: usize = 65_536;

const GRANT: &str = "mcp grant";
const REVOKE: &str = "mcp revoke";

/// The token string of `token`.
pub fn encode_token(token: &CapabilityToken) -> Result<String, chio_kernel::error::KernelError> {
    Ok(format!(
        "{TOKEN_PREFIX}{}",
        URL_SAFE_NO_PAD.encode(to_canonical_vec(token)?)
    ))
}

/// Why a token string is refused (never quoting it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Longer than [`MAX_TOKEN_CHARS`].
    #[error("the capability token is longer than {MAX_TOKEN_CHARS} characters")]
    TooLong,
    /// Without the prefix.
    #[error("the capability token does not start with {TOKEN_PREFIX}")]
    Prefix,
    /// Not base64url.
    #[error("the capability token is not unpadded base64url after its prefix")]
    Encoding,
    /// Not a capability token's JSON.
    #[error("the capability token does not hold a chio.capability/v1 token")]
    Shape,
}

/// Reads a token string.
pub fn decode_token(text: &str) -> Result<CapabilityToken, TokenError> {
    if text.len() > MAX_TOKEN_CHARS {
        return Err(TokenError::TooLong);
    }
    let body = text.strip_prefix(TOKEN_PREFIX).ok_or(TokenError::Prefix)?;
    let bytes = URL_SAFE_NO_PAD
        .decode(body)
        .map_err(|_| TokenError::Encoding)?;
    serde_json::from_slice(&bytes).map_err(|_| TokenError::Shape)
}

fn grant_error(message: String, help: &str) -> CliError {
    CliError::new(codes::MCP_GRANT, GRANT, message, help)
}

/// Reads `--client-key`: 64 hex characters, or a file holding them.
fn client_key(arg: &str) -> Result<String, CliError> {
    let text = if arg.len() == 64 && arg.bytes().all(|b| b.is_ascii_hexdigit()) {
        arg.to_string()
    } else {
        // A regular file of at most 4 KiB: a key file holds 64 characters.
        chio_arena::files::read_named(std::path::Path::new(arg), 4 << 10)
            .map_err(|e| e.describe("a key file"))
            .and_then(|b| String::from_utf8(b).map_err(|_| "not UTF-8 text".to_string()))
            .map_err(|cause| {
                grant_error(
                    format!("--client-key is neither 64 hex characters nor a readable file ({cause})"),
                    "pass the client's Ed25519 public key as 64 hex characters or a regular file (at most 4 KiB) holding them",
                )
            })?
            .trim()
            .to_string()
    };
    let lower = text.to_ascii_lowercase();
    parse_public_key_hex(&lower).map_err(|_| {
        grant_error(
            "--client-key is not an Ed25519 public key".to_string(),
            "pass the client's Ed25519 public key as 64 hex characters",
        )
    })?;
    Ok(lower)
}

/// `chio mcp grant`.
pub fn run_grant(args: &GrantArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let authority = super::authority::read(&args.authority, GRANT)?;
    let subject = client_key(&args.client_key)?;
    if args.server.is_empty() {
        return Err(grant_error(
            "--server is empty".to_string(),
            "name the upstream id the client may call",
        ));
    }
    if args.tools.iter().any(|t| t.is_empty()) {
        return Err(grant_error(
            "--tools names an empty tool".to_string(),
            "list tool names separated by commas, or * for every tool",
        ));
    }
    if args.expires_in_secs == 0 || args.expires_in_secs > 366 * 86_400 {
        return Err(grant_error(
            "--expires-in-secs is outside 1 to 31622400".to_string(),
            "give the capability a lifetime of at most one year",
        ));
    }
    if args.max_calls == Some(0) {
        return Err(grant_error(
            "--max-calls 0 grants no call".to_string(),
            "give a budget of at least one call, or none for unlimited calls",
        ));
    }
    let now = wall_ms();
    let tools: Vec<&str> = args.tools.iter().map(String::as_str).collect();
    let mut body = CapabilityBody {
        schema: CAPABILITY_SCHEMA.to_string(),
        id: String::new(),
        issuer: public_key_hex(&authority.issuer),
        subject,
        scope: vec![ScopeGrant::new(&args.server, &tools)],
        not_before_ms: now,
        expires_at_ms: now + args.expires_in_secs * 1000,
        max_invocations: args.max_calls,
        share_bps: FULL_SHARE_BPS,
    };
    body.id = match &args.id {
        Some(id) => match super::present::id_problem(id) {
            None => id.clone(),
            // The rule every id a client presents meets at the edge.
            Some(problem) => {
                return Err(grant_error(
                    format!("--id {problem}"),
                    "omit --id to derive one, or name the capability with at most 256 printable characters",
                ))
            }
        },
        None => {
            let digest = serde_json::to_value(&body)
                .map_err(|e| CliError::infrastructure(GRANT, e.to_string()))
                .and_then(|v| {
                    canonical_sha256(&v).map_err(|e| CliError::infrastructure(GRANT, e.to_string()))
                })?;
            format!("mcp-{}", &digest[..24])
        }
    };
    let id = body.id.clone();
    let token = CapabilityToken::issue(body, &authority.issuer)
        .and_then(|t| encode_token(&t))
        .map_err(|e| CliError::infrastructure(GRANT, e.to_string()))?;
    eprintln!("{GRANT}: capability {id}");
    writeln!(out, "{token}").map_err(|e| CliError::output(GRANT, &e))
}

/// Deadlines of the edge's trust-control calls.
pub fn deadlines() -> StoreDeadlines {
    StoreDeadlines::default()
}

/// The trust-control client `control` names, or `None` without
/// `--control-url`; a half-given pair or an unreadable token is refused.
pub fn control_client(
    control: &ControlArgs,
    command: &'static str,
) -> Result<Option<Arc<TrustClient>>, CliError> {
    let config_error =
        |message: String, help: &str| CliError::new(codes::MCP_CONFIG, command, message, help);
    let (url, token_file): (&String, &PathBuf) =
        match (&control.control_url, &control.control_token_file) {
            (None, None) => return Ok(None),
            (Some(url), Some(file)) => (url, file),
            _ => {
                return Err(config_error(
                    "--control-url and --control-token-file go together".to_string(),
                    "pass both, or neither for in-memory trust state",
                ))
            }
        };
    if control.namespace.is_empty() || control.namespace.contains('/') {
        return Err(config_error(
            "--namespace is empty or holds a /".to_string(),
            "name the namespace with letters, digits and dashes",
        ));
    }
    let contents = chio_trust::read_token_file(token_file).map_err(|e| {
        config_error(
            e.to_string(),
            "pass a readable file that holds trust-control's token",
        )
    })?;
    let token = BearerToken::from_file_contents(&contents).map_err(|e| {
        config_error(
            e.to_string(),
            "use the token trust-control was started with",
        )
    })?;
    let d = deadlines();
    let config = TrustClientConfig {
        call_deadline: d.call,
        append_deadline: d.receipt,
        ..TrustClientConfig::default()
    };
    TrustClient::connect_lazy(url, &token, config)
        .map(|c| Some(Arc::new(c)))
        .map_err(|e| {
            config_error(
                e.to_string(),
                "pass trust-control's address as http://HOST:PORT",
            )
        })
}

/// `chio mcp revoke`.
pub fn run_revoke(args: &RevokeArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if args.control.control_url.is_none() {
        return Err(CliError::new(
            codes::MCP_CONFIG,
            REVOKE,
            "revocation needs trust-control and no --control-url was given",
            "pass the --control-url and --control-token-file the edge was started with",
        ));
    }
    if args.capability.is_empty() {
        return Err(CliError::new(
            codes::MCP_CONFIG,
            REVOKE,
            "--capability is empty",
            "pass the id `chio mcp grant` printed",
        ));
    }
    let rt = runtime(REVOKE)?;
    let _guard = rt.enter();
    let Some(client) = control_client(&args.control, REVOKE)? else {
        return Ok(());
    };
    let binding = TrustBinding::new(
        client,
        rt.handle().clone(),
        &args.control.namespace,
        deadlines(),
    );
    let authority = TrustAuthority::new(binding);
    rt.block_on(authority.revoke(&args.capability, wall_ms()))
        .map_err(|e| {
            CliError::new(
                codes::MCP_CONTROL,
                REVOKE,
                format!("trust-control did not revoke {}: {e}", args.capability),
                "check that trust-control runs at --control-url and the token is its token, then revoke again",
            )
        })?;
    writeln!(out, "revoked {}", args.capability).map_err(|e| CliError::output(REVOKE, &e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn token() -> CapabilityToken {
        let issuer = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        let subject = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
        CapabilityToken::issue(
            CapabilityBody {
                schema: CAPABILITY_SCHEMA.to_string(),
                id: "cap-1".to_string(),
                issuer: public_key_hex(&issuer),
                subject: public_key_hex(&subject),
                scope: vec![ScopeGrant::new("git", &["git_status"])],
                not_before_ms: 1,
                expires_at_ms: 2,
                max_invocations: Some(3),
                share_bps: FULL_SHARE_BPS,
            },
            &issuer,
        )
        .unwrap()
    }

    // A token string reads back as the token it encodes.
    #[test]
    fn token_string_round_trips() {
        let t = token();
        assert_eq!(decode_token(&encode_token(&t).unwrap()).unwrap(), t);
        assert_eq!(decode_token("cap"), Err(TokenError::Prefix));
        assert_eq!(decode_token("chio-cap1.!!"), Err(TokenError::Encoding));
        assert_eq!(decode_token("chio-cap1.e30"), Err(TokenError::Shape));
    }

    proptest! {
        // Any text is refused with a typed error or read as a token, never a panic; one changed character of a valid token never reads as the same token.
        #[test]
        fn token_strings_never_panic(text in ".{0,300}", at in 0usize..400, ch in any::<char>()) {
            let _ = decode_token(&text);
            let valid = encode_token(&token()).unwrap();
            let mut chars: Vec<char> = valid.chars().collect();
            let i = at % chars.len();
            if chars[i] != ch {
                chars[i] = ch;
                let changed: String = chars.into_iter().collect();
                prop_assert_ne!(decode_token(&changed).ok(), Some(token()));
            }
        }
    }

    // A budget of no call, and an id no client could present, are refused at grant time, naming the option.
    #[test]
    fn a_grant_of_no_call_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let authority = dir.path().join("authority.json");
        super::super::authority::run_new(&authority, &mut Vec::new()).unwrap();
        let args = |max_calls: Option<u64>, id: Option<String>| GrantArgs {
            authority: authority.clone(),
            client_key: public_key_hex(&ed25519_dalek::SigningKey::from_bytes(&[9; 32])),
            server: "notes".to_string(),
            tools: vec!["echo".to_string()],
            max_calls,
            expires_in_secs: 60,
            id,
        };
        let err = run_grant(&args(Some(0), None), &mut Vec::new()).unwrap_err();
        assert_eq!(err.code, crate::error::codes::MCP_GRANT.code);
        assert!(err.message.contains("--max-calls 0"), "{}", err.message);
        // An --id the edge would refuse from a client is refused here, by
        // the same rule; a printable one of 256 characters is issued.
        for (id, problem) in [
            (String::new(), "is empty"),
            ("cap\n1".to_string(), "holds a control character"),
            ("c".repeat(257), "is longer than 256 characters"),
        ] {
            let err = run_grant(&args(None, Some(id)), &mut Vec::new()).unwrap_err();
            assert_eq!(err.code, crate::error::codes::MCP_GRANT.code);
            assert_eq!(err.message, format!("--id {problem}"));
        }
        assert!(run_grant(&args(None, Some("ü".repeat(256))), &mut Vec::new()).is_ok());
    }
}
