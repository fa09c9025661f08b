//! Step 3, binding a request to its subject: the proof of possession, the
//! registered agent that signed it (the call's principal) and the request's
//! freshness. The seen-request check that completes the step is a store
//! operation of the admission batch.

use std::collections::BTreeMap;

use super::Kernel;
use crate::reason::{printable_id, DenyReason};
use crate::request::ToolCallRequest;
use crate::signature::verify_hex;
use crate::verification::VerifiedCapability;

impl Kernel {
    /// Binds the proof ([`bind_proof`]) and checks the request's age
    /// against the configured bound; answers the principal.
    pub(super) fn bind(
        &self,
        request: &ToolCallRequest,
        verified: &VerifiedCapability,
        now_ms: u64,
    ) -> Result<String, DenyReason> {
        let principal = bind_proof(request, verified, &self.agent_keys)?;
        if let Some(max_age) = self.max_request_age_ms {
            if beyond_age(now_ms.saturating_sub(request.issued_at_ms), max_age, true) {
                return Err(DenyReason::RequestStale {
                    issued: request.issued_at_ms,
                    now: now_ms,
                    max_age,
                });
            }
            if beyond_age(request.issued_at_ms.saturating_sub(now_ms), max_age, false) {
                return Err(DenyReason::RequestFromFuture {
                    issued: request.issued_at_ms,
                    now: now_ms,
                });
            }
        }
        Ok(principal)
    }
}

/// Whether a request `gap` milliseconds from now (`stale`: in the past) is
/// past the bound (inclusive: exactly at the bound is within). Each planted
/// comparison is a surviving mutant (`planted-weakness` builds only).
fn beyond_age(gap: u64, max_age: u64, stale: bool) -> bool {
    use crate::planted::{weakened_anywhere, Weakness};
    if weakened_anywhere(Weakness::AgeBoundEqualOnly) {
        gap == max_age
    } else if stale && weakened_anywhere(Weakness::AgeBoundInverted) {
        gap < max_age
    } else {
        gap > max_age
    }
}

/// Exact reason prefix: the request names an agent that is not the
/// registered holder of the key that signed its proof.
pub const NOT_THE_PROVING_AGENT: &str = "request names an agent that does not hold the proving key";

/// Checks the proof of possession against the verified subject and answers
/// the call's principal: the registered agent whose key signed the proof.
///
/// The named `agent_id` is a claim; only the key is evidence. A request
/// whose named agent is registered with another key, or is not registered
/// at all, is refused, so budgets, labels, journals and receipts can key on
/// the answer without trusting the request. A kernel with no registered
/// agents therefore admits no call.
pub fn bind_proof(
    request: &ToolCallRequest,
    verified: &VerifiedCapability,
    agent_keys: &BTreeMap<String, String>,
) -> Result<String, DenyReason> {
    if request.proof.signer.is_empty() || request.proof.signature.is_empty() {
        return Err(DenyReason::ProofMissing);
    }
    match agent_keys.get(&request.agent_id) {
        Some(key) if *key != verified.subject => {
            return Err(DenyReason::AgentNotSubject {
                agent: request.agent_id.clone(),
                capability: verified.id.clone(),
            });
        }
        Some(_) => {}
        None => {
            return Err(DenyReason::NotTheProvingAgent {
                agent: printable_id(&request.agent_id),
                key: short(&request.proof.signer).to_string(),
            });
        }
    }
    if request.proof.signer != verified.subject {
        return Err(DenyReason::SignerNotSubject {
            signer: short(&request.proof.signer).to_string(),
            capability: verified.id.clone(),
            subject: short(&verified.subject).to_string(),
        });
    }
    let message = request
        .proof_message()
        .map_err(|e| DenyReason::ProofUncanonical {
            cause: e.to_string(),
        })?;
    if !verify_hex(None, &verified.subject, &message, &request.proof.signature) {
        return Err(DenyReason::ProofInvalid);
    }
    Ok(request.agent_id.clone())
}

fn short(key: &str) -> &str {
    key.get(..16).unwrap_or(key)
}
