//! The domain values trust-control stores and answers with, the limits on
//! what a request may carry, and the pure rules both stores apply (budget
//! holds, sibling shares, receipt deduplication), so the SQLite and in-memory
//! stores cannot drift apart.
//!
//! Storage, transport and authentication live elsewhere: `store` persists
//! these values, `service` and `client` carry them over gRPC.

use std::collections::{BTreeMap, BTreeSet};

use crate::TrustError;

pub use chio_kernel::batch::{run_ops, OpAnswer};
pub use chio_kernel::ledger::{
    commit_transition, decide_hold, decide_share, effective_parent_share, release_transition,
    repeat_hold, sibling_sum_bps, AdmittedChild, HoldDecision as HoldOutcome, HoldRecord,
    HoldState, ShareDecision as ShareOutcome, SiblingShare, MAX_AMOUNT,
};

/// Longest id, key or label accepted, in bytes; bounds rows and messages.
pub const MAX_ID_BYTES: usize = 2048;
/// A whole allowance in basis points; shares above it are meaningless.
pub const MAX_BPS: u32 = 10_000;
/// Most keys one label read or join may name; bounds one transaction.
pub const MAX_KEYS_PER_CALL: usize = 1_024;
/// Most receipts one append may carry; bounds one transaction.
pub const MAX_RECEIPTS_PER_APPEND: usize = 10_000;
/// Largest receipt page a list returns.
pub const MAX_RECEIPT_PAGE: u32 = 1_000;
/// Page size used when a list asks for 0 receipts.
pub const DEFAULT_RECEIPT_PAGE: u32 = 100;

/// Most operations one batch may carry; a decision needs a few dozen at
/// most (one per chain link, hold, share, label join and receipt).
pub const MAX_BATCH_OPS: usize = 1_024;

/// One operation of a decision batch, as trust-control takes it: the
/// kernel's operation with the receipt as its canonical bytes.
pub type BatchOp = chio_kernel::batch::StoreOp<ReceiptRecord>;

/// The answers to a batch: one per operation that ran, in order; a batch
/// stops after the first answer that ends its decision
/// (`chio_kernel::batch::stops`).
pub type BatchAnswers = Vec<Result<OpAnswer, TrustError>>;

/// The share admission a batch answers, from the ledger's decision.
pub fn share_answer(outcome: ShareOutcome) -> OpAnswer {
    OpAnswer::Share(match outcome {
        ShareOutcome::Admitted { .. } => chio_kernel::stores::ShareAdmission::Admitted,
        ShareOutcome::Refused {
            sibling_sum_bps,
            parent_bps,
        } => chio_kernel::stores::ShareAdmission::Oversubscribed {
            siblings_bps: sibling_sum_bps,
            parent_bps,
        },
    })
}

/// Every operation of a batch, on one store's rows; each method validates
/// its arguments and applies the ledger rules exactly as the store's
/// single-operation method does, so [`apply_op`] is the one mapping from a
/// batch operation to a store call.
pub(crate) trait Rows {
    /// The revocation time of `id`.
    fn revoked_at(&mut self, id: &str) -> Result<Option<u64>, TrustError>;
    /// Records a seen request key; whether it was fresh.
    fn record_request(&mut self, request_key: &str) -> Result<bool, TrustError>;
    /// Holds an amount of a budget.
    fn hold(
        &mut self,
        hold_id: &str,
        budget_key: &str,
        amount: u64,
        limit: u64,
    ) -> Result<HoldOutcome, TrustError>;
    /// Commits a hold.
    fn commit(&mut self, hold_id: &str) -> Result<HoldState, TrustError>;
    /// Releases a hold.
    fn release(&mut self, hold_id: &str) -> Result<ReleaseOutcome, TrustError>;
    /// Admits a child's share.
    fn admit_share(
        &mut self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> Result<ShareOutcome, TrustError>;
    /// Appends receipts, all or nothing.
    fn append(&mut self, receipts: &[ReceiptRecord]) -> Result<AppendSummary, TrustError>;
    /// Reads the labels of keys.
    fn read_labels(&mut self, keys: &[String]) -> Result<LabelSets, TrustError>;
    /// Joins a label into keys.
    fn join_labels(&mut self, keys: &[String], label: &str) -> Result<LabelSets, TrustError>;
}

/// Applies one batch operation to `rows`.
pub(crate) fn apply_op(rows: &mut impl Rows, op: &BatchOp) -> Result<OpAnswer, TrustError> {
    use chio_kernel::batch::StoreOp;
    match op {
        StoreOp::IsRevoked { id } => rows
            .revoked_at(id)
            .map(|at| OpAnswer::Revoked(at.is_some())),
        StoreOp::RecordRequest { key } => rows.record_request(key).map(OpAnswer::Fresh),
        StoreOp::Hold {
            hold_id,
            key,
            amount,
            limit,
        } => rows.hold(hold_id, key, *amount, *limit).map(OpAnswer::Hold),
        StoreOp::ReadLabels { keys, .. } => rows.read_labels(keys).map(OpAnswer::Labels),
        StoreOp::AdmitShare {
            parent_id,
            child_id,
            child_bps,
            parent_bps,
        } => rows
            .admit_share(parent_id, child_id, *child_bps, *parent_bps)
            .map(share_answer),
        StoreOp::Commit { hold_id } => rows.commit(hold_id).map(|_| OpAnswer::Done),
        StoreOp::Release { hold_id } => rows.release(hold_id).map(|_| OpAnswer::Done),
        StoreOp::JoinLabels { keys, label } => {
            rows.join_labels(keys, label).map(|_| OpAnswer::Done)
        }
        StoreOp::AppendReceipt { receipt } => rows
            .append(std::slice::from_ref(receipt))
            .map(|_| OpAnswer::Done),
    }
}

/// Checks the size of a batch.
pub fn check_batch(ops: &[BatchOp]) -> Result<(), TrustError> {
    if ops.len() > MAX_BATCH_OPS {
        return Err(TrustError::InvalidArgument {
            field: "ops",
            problem: format!("batch of {} operations", ops.len()),
            fix: "send at most 1024 operations per batch",
        });
    }
    Ok(())
}

/// The retained labels of several keys, ordered so answers are deterministic.
pub type LabelSets = BTreeMap<String, BTreeSet<String>>;

/// A trusted Ed25519 issuer public key, checked to be a valid curve point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IssuerKey([u8; 32]);

impl IssuerKey {
    /// Parses 64 hex digits (either case) and refuses bytes that are not an
    /// Ed25519 public key (`chio_kernel::keys::parse_public_key_hex`: a
    /// second spelling of a point or one of small order is not), so the
    /// store never trusts a key nothing can match.
    pub fn parse_hex(text: &str) -> Result<Self, TrustError> {
        let invalid = |problem: String| TrustError::InvalidArgument {
            field: "public_key_hex",
            problem,
            fix: "pass the issuer's Ed25519 public key as 64 hex digits",
        };
        if text.len() != 64 {
            return Err(invalid(format!(
                "expected 64 hex digits, got {}",
                text.len()
            )));
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text, &mut bytes)
            .map_err(|_| invalid("contains a character that is not a hex digit".to_owned()))?;
        // The kernel's one rule for a key: a canonical point of large order.
        chio_kernel::keys::parse_public_key_hex(&hex::encode(bytes))
            .map_err(|_| invalid("is not a valid Ed25519 public key".to_owned()))?;
        Ok(IssuerKey(bytes))
    }

    /// The key as 64 lowercase hex digits, the form the store keeps and lists.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The raw 32 key bytes, for building a verifying key.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

/// The recorded revocation of an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Revocation {
    /// Whether this call revoked the id (false for a repeat).
    pub newly_revoked: bool,
    /// The virtual time of the first revocation, in Unix milliseconds.
    pub revoked_at_ms: u64,
}

/// The answer to a release: releasing an unknown hold is harmless, so it is
/// an answer rather than an error, and the caller can tell the cases apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseOutcome {
    /// The hold is released (now or by an earlier call).
    Released,
    /// No hold with that id was ever granted; nothing changed.
    UnknownHold,
}

/// One signed receipt handed to the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptRecord {
    /// The content-addressed receipt id.
    pub receipt_id: String,
    /// The canonical body, stored byte for byte.
    pub body: Vec<u8>,
}

/// How an append batch was applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AppendSummary {
    /// Receipts newly appended.
    pub appended: u32,
    /// Receipts already present with identical bytes (retries).
    pub already_present: u32,
}

/// A receipt with its place in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredReceipt {
    /// Position in append order, starting at 1.
    pub seq: u64,
    /// The content-addressed receipt id.
    pub receipt_id: String,
    /// The body exactly as appended.
    pub body: Vec<u8>,
}

/// One page of the receipt log.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReceiptPage {
    /// The receipts, in append order.
    pub receipts: Vec<StoredReceipt>,
    /// The cursor for the next page; `None` at the end of the log.
    pub next_after_seq: Option<u64>,
}

/// Checks an id, key or label: non-empty, at most [`MAX_ID_BYTES`], no control
/// characters (they would corrupt logs and messages).
pub fn check_id(field: &'static str, value: &str) -> Result<(), TrustError> {
    let fix = "pass a non-empty printable string of at most 2048 bytes";
    if value.is_empty() {
        return Err(TrustError::InvalidArgument {
            field,
            problem: "is empty".to_owned(),
            fix,
        });
    }
    if value.len() > MAX_ID_BYTES {
        return Err(TrustError::InvalidArgument {
            field,
            problem: format!("is {} bytes long", value.len()),
            fix,
        });
    }
    if value.chars().any(char::is_control) {
        return Err(TrustError::InvalidArgument {
            field,
            problem: "contains a control character".to_owned(),
            fix,
        });
    }
    Ok(())
}

/// Checks a budget amount or limit fits the store's integers.
pub fn check_amount(field: &'static str, value: u64) -> Result<(), TrustError> {
    if value > MAX_AMOUNT {
        return Err(TrustError::InvalidArgument {
            field,
            problem: format!("{value} exceeds {MAX_AMOUNT}"),
            fix: "express budgets in units whose totals fit in 63 bits",
        });
    }
    Ok(())
}

/// Checks a share is at most a whole allowance.
pub fn check_bps(field: &'static str, value: u32) -> Result<(), TrustError> {
    if value > MAX_BPS {
        return Err(TrustError::InvalidArgument {
            field,
            problem: format!("{value} basis points exceeds {MAX_BPS}"),
            fix: "pass a share between 0 and 10000 basis points",
        });
    }
    Ok(())
}

/// Checks the keys of a label read or join, and the count of them.
pub fn check_label_keys(keys: &[String]) -> Result<(), TrustError> {
    if keys.len() > MAX_KEYS_PER_CALL {
        return Err(TrustError::InvalidArgument {
            field: "keys",
            problem: format!("names {} keys", keys.len()),
            fix: "split the call into batches of at most 1024 keys",
        });
    }
    keys.iter().try_for_each(|key| check_id("keys", key))
}

/// Checks an append batch: its size and every receipt id.
pub fn check_receipts(receipts: &[ReceiptRecord]) -> Result<(), TrustError> {
    if receipts.len() > MAX_RECEIPTS_PER_APPEND {
        return Err(TrustError::InvalidArgument {
            field: "receipts",
            problem: format!("batch of {} receipts", receipts.len()),
            fix: "append at most 10000 receipts per call",
        });
    }
    receipts
        .iter()
        .try_for_each(|receipt| check_id("receipt_id", &receipt.receipt_id))
}

/// The page size a list request really gets: 0 means the default, larger
/// than the maximum is clamped.
pub fn receipt_page_size(limit: u32) -> u32 {
    match limit {
        0 => DEFAULT_RECEIPT_PAGE,
        n => n.min(MAX_RECEIPT_PAGE),
    }
}

/// Plans an append: which receipts are new, how many are retries, and the
/// conflict if any id is stored (or repeated in the batch) with other bytes.
/// `stored` looks an id up in the store. The batch is all or nothing.
pub fn plan_append(
    receipts: &[ReceiptRecord],
    mut stored: impl FnMut(&str) -> Result<Option<Vec<u8>>, TrustError>,
) -> Result<(Vec<&ReceiptRecord>, AppendSummary), TrustError> {
    let mut fresh: BTreeMap<&str, &ReceiptRecord> = BTreeMap::new();
    let mut to_insert = Vec::new();
    let mut summary = AppendSummary::default();
    for receipt in receipts {
        let earlier = match fresh.get(receipt.receipt_id.as_str()) {
            Some(first) => Some(first.body.clone()),
            None => stored(&receipt.receipt_id)?,
        };
        match earlier {
            Some(body) if body == receipt.body => summary.already_present += 1,
            Some(_) => {
                return Err(TrustError::ReceiptConflict {
                    receipt_id: receipt.receipt_id.clone(),
                })
            }
            None => {
                fresh.insert(&receipt.receipt_id, receipt);
                to_insert.push(receipt);
                summary.appended += 1;
            }
        }
    }
    Ok((to_insert, summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves a key that is hex but not a curve point is refused, and case is normalised.
    #[test]
    fn issuer_key_parsing_checks_hex_and_curve() {
        let signing = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
        let hex_upper = hex::encode_upper(signing.verifying_key().as_bytes());
        let key = IssuerKey::parse_hex(&hex_upper).expect("valid key");
        assert_eq!(key.to_hex(), hex_upper.to_lowercase());
        assert!(IssuerKey::parse_hex("zz").is_err());
        assert!(IssuerKey::parse_hex(&"g".repeat(64)).is_err());
        // y = 2 is not on the curve (its x would need a non-square).
        let mut off_curve = [0u8; 32];
        off_curve[0] = 2;
        let refused = IssuerKey::parse_hex(&hex::encode(off_curve));
        assert!(
            refused.is_err(),
            "an off-curve encoding must be refused, got {refused:?}"
        );
    }

    // Proves an append batch that repeats an id with other bytes is refused whole.
    #[test]
    fn plan_append_refuses_in_batch_conflicts() {
        let a = ReceiptRecord {
            receipt_id: "r".into(),
            body: b"a".to_vec(),
        };
        let b = ReceiptRecord {
            receipt_id: "r".into(),
            body: b"b".to_vec(),
        };
        let batch = [a.clone(), a.clone()];
        let (insert, summary) = plan_append(&batch, |_| Ok(None)).unwrap();
        assert_eq!(insert.len(), 1);
        assert_eq!(summary.already_present, 1);
        let err = plan_append(&[a, b], |_| Ok(None)).unwrap_err();
        assert!(matches!(err, TrustError::ReceiptConflict { .. }));
    }
}
