//! Portable evaluation: the kernel's checks as a pure function.
//!
//! [`evaluate_portable`] reads only what the caller supplies (request,
//! capability, trusted issuer keys, a clock value in Unix milliseconds, guards,
//! optional session filesystem roots) plus a sibling-share registry the
//! caller owns. It dispatches nothing and persists nothing. Order and
//! reasons are the full pipeline's: verify issuer, signature, time and
//! chain; bind the request's agent (the agent's public key in hex) to the
//! verified subject; select the grant; run the supplied guards in order,
//! fail-closed (a guard asking for approval denies here, since this function
//! cannot run an approval workflow); admit the delegated shares last, as the
//! only mutation. There is no proof of possession to check here: the caller
//! vouches for the agent, as the seed's browser adapter does.
//!
//! [`evaluate_envelope`] is the JSON form behind `chio eval`: an envelope
//! `{ "request": { "request_id", "server", "tool", "agent_id", "arguments" },
//! "capability": <signed token>, "trusted_issuers_hex": [...],
//! "clock_override_unix_secs": n }` (or `"clock_override_unix_ms": n`, the
//! instant to the millisecond, as the kernel compares it) answers `pending_approval` with
//! `authorized: false` when the capability-only check passes (guards and
//! tools did not run) and `deny` with the reason otherwise. Each share
//! admission uses a fresh registry, since an envelope carries no allocation
//! state. A malformed envelope is an [`EnvelopeError`] naming the field by
//! its full path and never quoting the value; the envelope is parsed by
//! serde with every object closed, and every integer in it must lie within
//! -2^53..=2^53 so the answer (and any signature's bytes) prints exactly.
//! Parsing and its error paths live in the `envelope` submodule
//! ([`parse_envelope`]); this module evaluates what it parsed.
//!
//! [`reference_fixture`] builds the signed fixture of
//! `tests/fixtures/portable/envelope.json` (a grant for `srv-files` /
//! `file_read` under `/workspace/`, valid 1710000200 through 1710000800,
//! issued by an arena-derived key), so the file can be regenerated and
//! checked byte for byte.

mod envelope;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use envelope::MAX_EXACT_INTEGER;
pub use envelope::{parse_envelope, Envelope};

use crate::canonical::{to_canonical_string, CanonicalError};
use crate::error::EnvelopeError;
use crate::guards::{Guard, GuardContext, GuardMode, GuardVerdict};
use crate::kernel::share_refusal_reason;
use crate::keys::{derive_arena_key, public_key_hex};
use crate::reason::DenyReason;
use crate::receipt::{ObservedFinding, WouldAnswer};
use crate::scope::{select_grant, CallUnderScope};
use crate::stores::{InMemorySiblingShares, ShareAdmission};
use crate::token::{CapabilityBody, CapabilityToken, ScopeGrant, CAPABILITY_SCHEMA};
use crate::verification::{verify_capability, ShareClaim};

/// Delegation depth limit of portable evaluation (the kernel's default).
pub const PORTABLE_MAX_DELEGATION_DEPTH: usize = crate::kernel::DEFAULT_MAX_DELEGATION_DEPTH;

/// A request as the portable evaluator sees it (no proof of possession).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortableRequest {
    /// Names the request in the answer.
    pub request_id: String,
    /// Server called.
    pub server: String,
    /// Tool called.
    pub tool: String,
    /// The calling agent's public key (hex); must be the capability's subject.
    pub agent_id: String,
    /// Tool arguments.
    pub arguments: Value,
}

/// Everything a portable evaluation reads.
#[derive(Debug, Clone, Copy)]
pub struct EvaluateInput<'a> {
    /// The call.
    pub request: &'a PortableRequest,
    /// The capability presented.
    pub capability: &'a CapabilityToken,
    /// Trusted issuer keys (hex).
    pub trusted_issuers: &'a [String],
    /// The clock, in Unix milliseconds: a token's window is compared with
    /// it as the kernel compares its own clock, never rounded.
    pub now_ms: u64,
    /// Guards, in order.
    pub guards: &'a [&'a dyn Guard],
    /// Filesystem roots of the owning session, passed to guards.
    pub session_filesystem_roots: Option<&'a [String]>,
}

/// Allow or deny; portable evaluation has no approval workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PortableVerdict {
    /// Every supplied check passed.
    Allow,
    /// A check failed.
    Deny,
}

/// The result of [`evaluate_portable`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortableDecision {
    /// Allow or deny.
    pub verdict: PortableVerdict,
    /// Why, for a deny.
    pub reason: Option<String>,
    /// The guard that denied, when one did.
    pub guard: Option<String>,
    /// Index of the selected grant in the effective scope, once selected.
    pub matched_grant: Option<usize>,
    /// Observe-mode findings.
    pub observed: Vec<ObservedFinding>,
}

impl PortableDecision {
    fn deny(reason: DenyReason, guard: Option<String>, matched: Option<usize>) -> Self {
        PortableDecision {
            verdict: PortableVerdict::Deny,
            reason: Some(reason.to_string()),
            guard,
            matched_grant: matched,
            observed: Vec::new(),
        }
    }
}

/// Evaluates a call with caller-supplied state (see the module doc).
pub fn evaluate_portable(
    input: &EvaluateInput<'_>,
    shares: &mut InMemorySiblingShares,
) -> PortableDecision {
    let request = input.request;
    let verified = match verify_capability(
        input.capability,
        input.trusted_issuers,
        input.now_ms,
        PORTABLE_MAX_DELEGATION_DEPTH,
        None,
    ) {
        Ok(v) => v,
        Err(reason) => return PortableDecision::deny(reason, None, None),
    };
    if request.agent_id != verified.subject {
        let reason = DenyReason::PortableNotSubject {
            agent: request
                .agent_id
                .get(..16)
                .unwrap_or(&request.agent_id)
                .to_string(),
            capability: verified.id.clone(),
        };
        return PortableDecision::deny(reason, None, None);
    }
    // A portable evaluation holds no catalog: a capability that pins tool
    // definitions is denied, since no definition is known to compare.
    let grant = match select_grant(
        &verified.state.scope,
        CallUnderScope {
            server: &request.server,
            tool: &request.tool,
            arguments: &request.arguments,
            definition: None,
        },
    ) {
        Ok(g) => g,
        Err(reason) => return PortableDecision::deny(reason, None, None),
    };
    let ctx = GuardContext {
        server: &request.server,
        tool: &request.tool,
        arguments: &request.arguments,
        agent_id: &request.agent_id,
        session_id: &request.request_id,
        journal: &[],
        labels: &Default::default(),
        money: &Default::default(),
        session_filesystem_roots: input.session_filesystem_roots,
        provenance: &crate::provenance::NO_PROVENANCE,
        definition: None,
    };
    let observed = match request_guards(input.guards, &ctx, grant.index) {
        Ok(observed) => observed,
        Err(decision) => return decision,
    };
    if let Some(refusal) = share_refusal(shares, &verified.shares) {
        let mut d = PortableDecision::deny(refusal, None, Some(grant.index));
        d.observed = observed;
        return d;
    }
    PortableDecision {
        verdict: PortableVerdict::Allow,
        reason: None,
        guard: None,
        matched_grant: Some(grant.index),
        observed,
    }
}

/// Runs the request guards in order: the findings of observe-mode guards,
/// or the deny of the first enforcing guard that does not allow (carrying
/// the findings so far).
fn request_guards(
    guards: &[&dyn Guard],
    ctx: &GuardContext<'_>,
    grant: usize,
) -> Result<Vec<ObservedFinding>, PortableDecision> {
    let mut observed = Vec::new();
    for guard in guards {
        let meta = guard.meta();
        let (would, reason) = match guard.check_request(ctx) {
            Ok(GuardVerdict::Allow) => continue,
            Ok(GuardVerdict::Deny(r)) => (WouldAnswer::Deny, r),
            Ok(GuardVerdict::PendingApproval(r)) => (
                WouldAnswer::PendingApproval,
                DenyReason::PortableApproval {
                    guard: meta.id.clone(),
                    reason: Box::new(r),
                },
            ),
            Err(e) => (
                WouldAnswer::Error,
                DenyReason::GuardFailed {
                    guard: meta.id.clone(),
                    cause: e.to_string(),
                },
            ),
        };
        if meta.mode == GuardMode::Observe {
            observed.push(ObservedFinding {
                guard: meta.id.clone(),
                would,
                reason: reason.to_string(),
            });
            continue;
        }
        let mut d = PortableDecision::deny(reason, Some(meta.id.clone()), Some(grant));
        d.observed = observed;
        return Err(d);
    }
    Ok(observed)
}

/// Admits each sibling share the chain claims; the reason of the first
/// refusal, if any.
fn share_refusal(shares: &mut InMemorySiblingShares, claims: &[ShareClaim]) -> Option<DenyReason> {
    for claim in claims {
        let refusal = match shares.admit(
            &claim.parent_id,
            &claim.child_id,
            claim.child_bps,
            claim.parent_bps,
            // A portable evaluation knows no revocations.
            &|_| false,
        ) {
            Ok(ShareAdmission::Admitted) => continue,
            Ok(refusal) => match share_refusal_reason(claim, &refusal) {
                Some(reason) => reason,
                None => continue,
            },
            Err(e) => DenyReason::from(e),
        };
        return Some(refusal);
    }
    None
}

/// The answer to an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortableAnswer {
    /// `pending_approval` when the capability-only check passed, else `deny`.
    pub verdict: String,
    /// Always false: a capability-only check authorises nothing by itself.
    pub authorized: bool,
    /// Why, for a deny.
    pub reason: Option<String>,
    /// The capability evaluated.
    pub capability_id: String,
    /// The request evaluated.
    pub request_id: String,
    /// Index of the matched grant, when the check passed.
    pub matched_grant_index: Option<usize>,
    /// The clock used, in Unix seconds (rounded down when the envelope's
    /// clock was in milliseconds).
    pub evaluated_at_unix_secs: u64,
    /// The clock used, in Unix milliseconds, when the envelope gave it so
    /// (`clock_override_unix_ms`); absent otherwise, so an answer to a clock
    /// in seconds prints as it always did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluated_at_unix_ms: Option<u64>,
}

impl PortableAnswer {
    /// The answer as canonical JSON, as `chio eval --json` prints it. An
    /// answer from [`evaluate_envelope_at`] always prints, since the
    /// envelope's clock was checked to be at most 2^53; one built by hand
    /// with a larger `evaluated_at_unix_secs` is refused, not rounded.
    pub fn to_canonical_json(&self) -> Result<String, CanonicalError> {
        to_canonical_string(self)
    }
}

/// Evaluates an envelope whose clock must be in the envelope.
pub fn evaluate_envelope(json: &[u8]) -> Result<PortableAnswer, EnvelopeError> {
    evaluate_envelope_at(json, None)
}

/// Evaluates an envelope, using `fallback_now_unix_secs` when the envelope
/// has no clock (`clock_override_unix_secs` or `clock_override_unix_ms`;
/// the one in milliseconds is compared exactly) (a CLI passes its clock here; the kernel
/// never reads one). A fallback above 2^53 is refused as
/// [`EnvelopeError::OutOfRange`] naming `now_unix_secs`, like an envelope
/// clock above it.
pub fn evaluate_envelope_at(
    json: &[u8],
    fallback_now_unix_secs: Option<u64>,
) -> Result<PortableAnswer, EnvelopeError> {
    let envelope = parse_envelope(json)?;
    // A clock in seconds is the first millisecond of that second; every
    // clock is at most 2^53, so the product does not saturate.
    let now_ms = match (envelope.clock_ms, envelope.clock) {
        (Some(ms), _) => ms,
        (None, Some(secs)) => secs.saturating_mul(1000),
        (None, None) => {
            let now = fallback_now_unix_secs.ok_or(EnvelopeError::MissingClock)?;
            if now > MAX_EXACT_INTEGER {
                return Err(EnvelopeError::OutOfRange {
                    field: "now_unix_secs".to_string(),
                });
            }
            now.saturating_mul(1000)
        }
    };
    let mut shares = InMemorySiblingShares::default();
    let decision = evaluate_portable(
        &EvaluateInput {
            request: &envelope.request,
            capability: &envelope.capability,
            trusted_issuers: &envelope.trusted_issuers,
            now_ms,
            guards: &[],
            session_filesystem_roots: None,
        },
        &mut shares,
    );
    Ok(PortableAnswer {
        verdict: match decision.verdict {
            PortableVerdict::Allow => "pending_approval".to_string(),
            PortableVerdict::Deny => "deny".to_string(),
        },
        authorized: false,
        reason: decision.reason,
        capability_id: envelope.capability.id.clone(),
        request_id: envelope.request.request_id.clone(),
        matched_grant_index: decision.matched_grant,
        evaluated_at_unix_secs: now_ms / 1000,
        evaluated_at_unix_ms: envelope.clock_ms,
    })
}

/// Arena seed of the reference fixture's keys.
pub const FIXTURE_SEED: u64 = 1_710_000_000;
/// Start of the fixture's validity window (Unix milliseconds).
pub const FIXTURE_NOT_BEFORE: u64 = 1_710_000_200_000;
/// End of the fixture's validity window (Unix milliseconds, inclusive).
pub const FIXTURE_EXPIRES_AT: u64 = 1_710_000_800_999;

/// The reference envelope: a capability for `srv-files` / `file_read` under
/// `/workspace/`, issued by `derive_arena_key(FIXTURE_SEED, "authority",
/// "portable-fixture")` to `derive_arena_key(FIXTURE_SEED, "agent",
/// "portable-agent")`, with the clock inside its window.
pub fn reference_fixture() -> Value {
    let issuer = derive_arena_key(FIXTURE_SEED, "authority", "portable-fixture");
    let agent = derive_arena_key(FIXTURE_SEED, "agent", "portable-agent");
    let body = CapabilityBody {
        schema: CAPABILITY_SCHEMA.to_string(),
        id: "cap-portable-fixture".to_string(),
        issuer: public_key_hex(&issuer),
        subject: public_key_hex(&agent),
        scope: vec![ScopeGrant::new("srv-files", &["file_read"]).with_path_prefix("/workspace/")],
        not_before_ms: FIXTURE_NOT_BEFORE,
        expires_at_ms: FIXTURE_EXPIRES_AT,
        max_invocations: None,
        share_bps: crate::token::FULL_SHARE_BPS,
    };
    let capability = CapabilityToken::issue(body, &issuer)
        .expect("the fixture body names its own issuer and is canonical");
    json!({
        "request": {
            "request_id": "req-portable-1",
            "server": "srv-files",
            "tool": "file_read",
            "agent_id": public_key_hex(&agent),
            "arguments": { "path": "/workspace/README.md" }
        },
        "capability": capability,
        "trusted_issuers_hex": [public_key_hex(&issuer)],
        "clock_override_unix_secs": 1_710_000_300u64
    })
}

/// The reference envelope as the bytes stored in the repository: canonical
/// key order, pretty-printed, with a final newline.
pub fn reference_fixture_bytes() -> Vec<u8> {
    let canonical = to_canonical_string(&reference_fixture())
        .expect("the fixture holds only strings and small integers");
    let ordered: Value = serde_json::from_str(&canonical).expect("canonical JSON parses");
    let mut text = serde_json::to_string_pretty(&ordered).expect("a JSON tree prints");
    text.push('\n');
    text.into_bytes()
}
