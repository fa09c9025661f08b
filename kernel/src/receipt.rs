//! Signed receipts and the Merkle root over a list of them.
//!
//! A receipt records one decision: its canonical body (schema
//! `chio.receipt/v1`) carries the virtual timestamp, kernel id and key,
//! capability, request, agent, session, server, tool, the SHA-256 of the
//! canonical arguments, the decision (verdict, reason, guard, sanitized),
//! what observe-mode guards would have done, and the SHA-256 of the released
//! output. The receipt id is the lowercase hex SHA-256 of the canonical body
//! bytes, and the Ed25519 signature (kernel key) is over those same bytes,
//! so a receipt is content-addressed and byte-identical across replays.
//!
//! Merkle tree ([`merkle_root`]): leaf = SHA-256(0x00 || receipt id as its
//! 64 ASCII hex bytes), inner node = SHA-256(0x01 || left || right), built
//! level by level in list order; an odd node at the end of a level is
//! promoted unchanged to the next level (never duplicated, so a list and the
//! same list with its last receipt repeated have different roots). The root
//! of an empty list is SHA-256 of the empty string. Roots are lowercase hex.
//! [`MerkleFrontier`] computes the same root one id at a time, keeping only
//! the tree's right frontier, so a run's bundle never holds every receipt.

use ed25519_dalek::{Signature, Signer, SigningKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::canonical::to_canonical_vec;
use crate::error::KernelError;
use crate::keys::{decode_lower_hex, parse_public_key_hex, public_key_hex};
use crate::verdict::Verdict;

/// Schema id of receipt bodies.
pub const RECEIPT_SCHEMA: &str = "chio.receipt/v1";

/// The decision a receipt records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptDecision {
    /// Allow, deny or pending approval.
    pub verdict: Verdict,
    /// Why, for anything but a plain allow.
    pub reason: Option<String>,
    /// The guard that decided, when a guard did.
    pub guard: Option<String>,
    /// Whether a post-invocation guard rewrote the output.
    pub sanitized: bool,
}

/// What an observe-mode guard would have done, had it been enforcing;
/// receipts carry it as its snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WouldAnswer {
    /// It would have refused the call or withheld the output.
    Deny,
    /// It would have held the call for a human decision.
    PendingApproval,
    /// It would have rewritten the output.
    Rewrite,
    /// It failed, which an enforcing guard turns into a deny.
    Error,
}

impl WouldAnswer {
    /// The snake_case name, as receipts carry it.
    pub fn as_str(&self) -> &'static str {
        match self {
            WouldAnswer::Deny => "deny",
            WouldAnswer::PendingApproval => "pending_approval",
            WouldAnswer::Rewrite => "rewrite",
            WouldAnswer::Error => "error",
        }
    }
}

impl std::fmt::Display for WouldAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an observe-mode guard would have done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservedFinding {
    /// The guard id.
    pub guard: String,
    /// What the guard would have done.
    pub would: WouldAnswer,
    /// The guard's reason.
    pub reason: String,
}

/// The signed content of a receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptBody {
    /// Always [`RECEIPT_SCHEMA`].
    pub schema: String,
    /// Virtual time of the decision, in milliseconds.
    pub timestamp_ms: u64,
    /// The deciding kernel.
    pub kernel_id: String,
    /// The deciding kernel's public key (hex), which signs the receipt.
    pub kernel_key: String,
    /// The presented capability (the leaf id for a delegated one).
    pub capability_id: String,
    /// The request decided.
    pub request_id: String,
    /// The calling agent.
    pub agent_id: String,
    /// The calling session.
    pub session_id: String,
    /// Server called.
    pub server: String,
    /// Tool called.
    pub tool: String,
    /// SHA-256 (hex) of the canonical arguments.
    pub parameter_hash: String,
    /// The decision.
    pub decision: ReceiptDecision,
    /// Observe-mode findings, in pipeline order.
    pub observed: Vec<ObservedFinding>,
    /// SHA-256 (hex) of the canonical released output, when output was released.
    pub output_hash: Option<String>,
}

/// A receipt with its content address and signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedReceipt {
    /// Lowercase hex SHA-256 of the canonical body.
    pub id: String,
    /// The signed content.
    pub body: ReceiptBody,
    /// Ed25519 signature (lowercase hex) over the canonical body bytes.
    pub signature: String,
}

impl SignedReceipt {
    /// Signs a body with the kernel key; the body's `kernel_key` must be that key.
    pub fn sign(body: ReceiptBody, key: &SigningKey) -> Result<SignedReceipt, KernelError> {
        if body.kernel_key != public_key_hex(key) {
            return Err(KernelError::ReceiptInvalid {
                detail: "kernel_key is not the signing key".to_string(),
            });
        }
        let bytes = to_canonical_vec(&body)?;
        let id = hex::encode(Sha256::digest(&bytes));
        let signature = hex::encode(key.sign(&bytes).to_bytes());
        Ok(SignedReceipt {
            id,
            body,
            signature,
        })
    }

    /// Checks the schema, the content address and the signature.
    pub fn verify(&self) -> Result<(), KernelError> {
        let invalid = |detail: &str| KernelError::ReceiptInvalid {
            detail: detail.to_string(),
        };
        if self.body.schema != RECEIPT_SCHEMA {
            return Err(invalid("schema is not chio.receipt/v1"));
        }
        let bytes = to_canonical_vec(&self.body)?;
        if self.id != hex::encode(Sha256::digest(&bytes)) {
            return Err(invalid("id is not the SHA-256 of the canonical body"));
        }
        let key = parse_public_key_hex(&self.body.kernel_key)?;
        let sig_bytes: [u8; 64] = decode_lower_hex(&self.signature)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| invalid("signature is not 128 lowercase hex characters"))?;
        key.verify_strict(&bytes, &Signature::from_bytes(&sig_bytes))
            .map_err(|_| invalid("signature does not verify under kernel_key"))
    }
}

/// SHA-256 (hex) of a value's canonical JSON, used for parameter and output hashes.
pub fn canonical_sha256(value: &serde_json::Value) -> Result<String, KernelError> {
    Ok(hex::encode(Sha256::digest(
        crate::canonical::canonical_bytes(value)?,
    )))
}

/// The Merkle root of receipts in list order (tree documented in the module doc).
pub fn merkle_root(receipts: &[SignedReceipt]) -> String {
    let ids: Vec<&str> = receipts.iter().map(|r| r.id.as_str()).collect();
    merkle_root_of_ids(&ids)
}

/// The Merkle root over receipt ids, for callers that hold ids only.
pub fn merkle_root_of_ids(ids: &[&str]) -> String {
    if ids.is_empty() {
        return hex::encode(Sha256::digest([]));
    }
    let mut level: Vec<[u8; 32]> = ids.iter().map(|id| merkle_leaf(id)).collect();
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|pair| match pair {
                [left, right] => merkle_node(left, right),
                [single] => *single,
                _ => unreachable!("chunks(2) yields one or two nodes"),
            })
            .collect();
    }
    hex::encode(level[0])
}

fn merkle_leaf(id: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(id.as_bytes());
    h.finalize().into()
}

fn merkle_node(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The Merkle root of [`merkle_root`], computed one receipt id at a time.
///
/// The level-by-level tree over `n` leaves is the perfect subtrees of the
/// binary decomposition of `n`, largest first, joined from the right (the
/// promoted odd node is the smaller subtree on its right). So only the right
/// frontier is kept: at most one perfect subtree root per height, about
/// `log2(n)` hashes, whatever the number of receipts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MerkleFrontier {
    /// Perfect subtree roots with their heights, largest (leftmost) first.
    peaks: Vec<(u32, [u8; 32])>,
    /// Receipt ids pushed.
    count: u64,
}

impl MerkleFrontier {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the next receipt id in list order.
    pub fn push(&mut self, id: &str) {
        let mut node = (0u32, merkle_leaf(id));
        while let Some(&(height, left)) = self.peaks.last() {
            if height != node.0 {
                break;
            }
            self.peaks.pop();
            node = (height + 1, merkle_node(&left, &node.1));
        }
        self.peaks.push(node);
        self.count += 1;
    }

    /// Receipt ids pushed so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The root over every id pushed so far, equal to [`merkle_root_of_ids`]
    /// over the same ids.
    pub fn root(&self) -> String {
        let mut peaks = self.peaks.iter().rev();
        let Some(&(_, mut acc)) = peaks.next() else {
            return hex::encode(Sha256::digest([]));
        };
        for (_, left) in peaks {
            acc = merkle_node(left, &acc);
        }
        hex::encode(acc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::derive_arena_key;

    // An observed finding's answer is written and read as the snake_case word receipts always carried.
    #[test]
    fn would_answers_keep_their_words() {
        for would in [
            WouldAnswer::Deny,
            WouldAnswer::PendingApproval,
            WouldAnswer::Rewrite,
            WouldAnswer::Error,
        ] {
            let json = serde_json::to_string(&would).unwrap();
            assert_eq!(json, format!("\"{}\"", would.as_str()));
            assert_eq!(serde_json::from_str::<WouldAnswer>(&json).unwrap(), would);
        }
        assert!(serde_json::from_str::<WouldAnswer>("\"allow\"").is_err());
    }

    fn body(n: u64) -> ReceiptBody {
        let key = derive_arena_key(1, "kernel", "k");
        ReceiptBody {
            schema: RECEIPT_SCHEMA.into(),
            timestamp_ms: n,
            kernel_id: "k".into(),
            kernel_key: public_key_hex(&key),
            capability_id: "cap".into(),
            request_id: format!("r{n}"),
            agent_id: "a".into(),
            session_id: "s".into(),
            server: "srv".into(),
            tool: "t".into(),
            parameter_hash: "00".into(),
            decision: ReceiptDecision {
                verdict: Verdict::Allow,
                reason: None,
                guard: None,
                sanitized: false,
            },
            observed: vec![],
            output_hash: None,
        }
    }

    // A signed receipt verifies and a tampered one does not.
    #[test]
    fn sign_and_verify() {
        let key = derive_arena_key(1, "kernel", "k");
        let r = SignedReceipt::sign(body(1), &key).unwrap();
        r.verify().unwrap();
        let mut t = r.clone();
        t.body.timestamp_ms = 2;
        assert!(t.verify().is_err());
        let mut t = r.clone();
        t.signature = t.signature.to_uppercase();
        assert!(t.verify().is_err());
    }

    // The Merkle root follows the documented tree, including promotion of an odd node.
    #[test]
    fn merkle_tree_shape() {
        let leaf = |id: &str| -> [u8; 32] {
            let mut h = Sha256::new();
            h.update([0u8]);
            h.update(id.as_bytes());
            h.finalize().into()
        };
        let node = |l: [u8; 32], r: [u8; 32]| -> [u8; 32] {
            let mut h = Sha256::new();
            h.update([1u8]);
            h.update(l);
            h.update(r);
            h.finalize().into()
        };
        let expected = node(node(leaf("a"), leaf("b")), leaf("c"));
        assert_eq!(merkle_root_of_ids(&["a", "b", "c"]), hex::encode(expected));
        assert_eq!(merkle_root_of_ids(&["a"]), hex::encode(leaf("a")));
        assert_ne!(
            merkle_root_of_ids(&["a", "b", "c"]),
            merkle_root_of_ids(&["a", "b", "c", "c"])
        );
        assert_eq!(
            merkle_root(&[]),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
