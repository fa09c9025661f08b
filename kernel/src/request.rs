//! Tool-call requests and their proof of possession.
//!
//! Tokens are not bearer tokens: the agent signs every request with the key
//! its capability's subject names. The proof covers (as canonical JSON, schema
//! `chio.request-proof/v1`) the request id, the presented capability's id,
//! server, tool, the SHA-256 of the canonical arguments, agent id, session id
//! and the virtual time the request was issued (and the pointers of its
//! sealed arguments, when it names any, and, for a call whose arguments are
//! built from earlier values, the SHA-256 of their sources), so none of
//! them can be
//! changed or the proof moved to another request. The proof names its
//! signer's key, which lets the kernel tell "presented by another agent" (a
//! valid signature by a key that is not the subject) from "invalid proof".

use ed25519_dalek::{Signer, SigningKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::to_canonical_vec;
use crate::error::KernelError;
use crate::keys::public_key_hex;
use crate::receipt::canonical_sha256;
use crate::token::CapabilityToken;

/// Schema id of the signed proof message.
pub const PROOF_SCHEMA: &str = "chio.request-proof/v1";

/// The agent's signature over a request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestProof {
    /// The signer's public key (hex); must be the capability's subject.
    pub signer: String,
    /// Ed25519 signature (hex) over [`ToolCallRequest::proof_message`].
    pub signature: String,
}

/// A call to a tool, as an agent presents it to a kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallRequest {
    /// Unique per request; a second use is a replay.
    pub request_id: String,
    /// The capability presented, with its delegation chain.
    pub capability: CapabilityToken,
    /// Server called.
    pub server: String,
    /// Tool called.
    pub tool: String,
    /// Tool arguments.
    pub arguments: Value,
    /// The calling agent.
    pub agent_id: String,
    /// The calling session (journal and label key).
    pub session_id: String,
    /// Virtual time the agent issued the request, in milliseconds.
    pub issued_at_ms: u64,
    /// Proof of possession of the subject key.
    pub proof: RequestProof,
    /// JSON pointers of the arguments whose values are sealed: checked and
    /// guarded like any other, never written into evidence text
    /// ([`crate::seal`]). Signed with the request when present.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sealed: Vec<String>,
    /// The arguments built from earlier values, with where each came from
    /// (`crate::provenance`); empty for a call of literals only, and then
    /// absent from the JSON and the proof, so such requests sign as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argument_sources: Vec<crate::provenance::ArgumentSource>,
}

/// The signed part of a request.
#[derive(Serialize)]
struct ProofMessage<'a> {
    schema: &'a str,
    request_id: &'a str,
    capability_id: &'a str,
    server: &'a str,
    tool: &'a str,
    arguments_sha256: &'a str,
    agent_id: &'a str,
    session_id: &'a str,
    issued_at_ms: u64,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    sealed: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    argument_sources_sha256: Option<String>,
}

impl ToolCallRequest {
    /// The canonical bytes the proof signs.
    pub fn proof_message(&self) -> Result<Vec<u8>, KernelError> {
        let arguments_sha256 = canonical_sha256(&self.arguments)?;
        let argument_sources_sha256 = if self.argument_sources.is_empty() {
            None
        } else {
            let sources = serde_json::to_value(&self.argument_sources)
                .map_err(|e| crate::canonical::CanonicalError::Serialize(e.to_string()))?;
            Some(canonical_sha256(&sources)?)
        };
        Ok(to_canonical_vec(&ProofMessage {
            schema: PROOF_SCHEMA,
            request_id: &self.request_id,
            capability_id: &self.capability.id,
            server: &self.server,
            tool: &self.tool,
            arguments_sha256: &arguments_sha256,
            agent_id: &self.agent_id,
            session_id: &self.session_id,
            issued_at_ms: self.issued_at_ms,
            sealed: &self.sealed,
            argument_sources_sha256,
        })?)
    }

    /// Signs the request with the agent's key, replacing any earlier proof.
    pub fn sign(mut self, agent_key: &SigningKey) -> Result<Self, KernelError> {
        let message = self.proof_message()?;
        self.proof = RequestProof {
            signer: public_key_hex(agent_key),
            signature: hex::encode(agent_key.sign(&message).to_bytes()),
        };
        Ok(self)
    }
}
