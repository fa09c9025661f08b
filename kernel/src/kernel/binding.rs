//! Step 3, binding a request to its subject: the proof of possession, the
//! registered agent that signed it (the call's principal) and the request's
//! freshness. The seen-request check that completes the step is a store
//! operation of the admission batch.

use std::collections::BTreeMap;

use super::Kernel;
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
    ) -> Result<String, String> {
        let principal = bind_proof(request, verified, &self.agent_keys)?;
        if let Some(max_age) = self.max_request_age_ms {
            if now_ms.saturating_sub(request.issued_at_ms) > max_age {
                return Err(format!(
                    "request is stale: issued at {} ms, evaluated at {now_ms} ms, older than {max_age} ms",
                    request.issued_at_ms
                ));
            }
            if request.issued_at_ms.saturating_sub(now_ms) > max_age {
                return Err(format!(
                    "request is dated {} ms, after the evaluation time {now_ms} ms",
                    request.issued_at_ms
                ));
            }
        }
        Ok(principal)
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
) -> Result<String, String> {
    if request.proof.signer.is_empty() || request.proof.signature.is_empty() {
        return Err("proof of possession is missing".to_string());
    }
    match agent_keys.get(&request.agent_id) {
        Some(key) if *key != verified.subject => {
            return Err(format!(
                "capability presented by another agent: agent {} does not hold the subject key of capability {}",
                request.agent_id, verified.id
            ));
        }
        Some(_) => {}
        None => {
            return Err(format!(
                "{NOT_THE_PROVING_AGENT}: agent {} is not registered with key {}",
                printable_id(&request.agent_id),
                short(&request.proof.signer)
            ));
        }
    }
    if request.proof.signer != verified.subject {
        return Err(format!(
            "capability presented by another agent: request signed by key {}, capability {} belongs to key {}",
            short(&request.proof.signer),
            verified.id,
            short(&verified.subject)
        ));
    }
    let message = request
        .proof_message()
        .map_err(|e| format!("request cannot be canonicalised for its proof: {e}"))?;
    if !verify_hex(None, &verified.subject, &message, &request.proof.signature) {
        return Err("proof of possession is invalid".to_string());
    }
    Ok(request.agent_id.clone())
}

/// An attacker-chosen id as it may appear in a reason: at most 64
/// characters, control characters replaced, so a reason stays one line.
fn printable_id(id: &str) -> String {
    let mut out: String = id
        .chars()
        .take(64)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if id.chars().count() > 64 {
        out.push_str("...");
    }
    out
}

fn short(key: &str) -> &str {
    key.get(..16).unwrap_or(key)
}
