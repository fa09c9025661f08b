//! `InMemoryTrustStore`: the whole trust-control state in ordered maps
//! behind one mutex, for the embedded topology and for tests.
//!
//! Every operation, and every decision batch, takes the lock once, applies
//! the shared rules of `model` and returns, so operations are linearizable
//! exactly as the SQLite store's single writer makes them. Nothing here is durable; restarts are the SQLite
//! store's job.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::model::{
    apply_op, check_amount, check_batch, check_bps, check_id, check_label_keys, check_receipts,
    commit_transition, decide_hold, decide_share, effective_parent_share, plan_append,
    receipt_page_size, release_transition, repeat_hold, run_ops, sibling_sum_bps, AdmittedChild,
    AppendSummary, BatchAnswers, BatchOp, HoldOutcome, HoldRecord, HoldState, IssuerKey, LabelSets,
    ReceiptPage, ReceiptRecord, ReleaseOutcome, Revocation, Rows, ShareOutcome, SiblingShare,
};
use crate::store::receipt_log::{key_digest, KeyDigest, ReceiptLog};
use crate::store::TrustStore;
use crate::TrustError;

/// Trust-control state in memory; cheap to clone (clones share the state).
#[derive(Debug, Clone, Default)]
pub struct InMemoryTrustStore {
    state: Arc<Mutex<MemoryState>>,
}

/// An admitted child share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AdmittedShare {
    child_bps: u32,
}

#[derive(Debug, Default)]
struct MemoryState {
    issuer_keys: BTreeSet<IssuerKey>,
    revocations: BTreeMap<String, u64>,
    holds: BTreeMap<String, HoldRecord>,
    /// Held plus committed amount per budget key.
    budget_used: BTreeMap<String, u64>,
    /// Parent of each admitted child, so a child cannot join two parents.
    share_parent: BTreeMap<String, String>,
    /// Admitted children per parent.
    shares: BTreeMap<String, BTreeMap<String, AdmittedShare>>,
    /// The first share recorded for each parent.
    parent_shares: BTreeMap<String, u32>,
    /// Request ids seen, per lineage and principal, by the key's
    /// [`key_digest`] (16 bytes each, whatever the key's length).
    seen_requests: BTreeSet<KeyDigest>,
    /// The receipt log, its bytes spilled to a temporary file.
    receipts: ReceiptLog,
    /// The first failure of the spill file: the store's own machinery,
    /// not a decision's, so whoever runs on the store stops on it.
    spill_failure: Option<String>,
    labels: BTreeMap<String, BTreeSet<String>>,
}

impl InMemoryTrustStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the store can serve a run: its receipt spill file is
    /// created now, so a temporary directory that cannot hold it stops the
    /// run before any call is decided, never turning allows into denies.
    pub fn ready(&self) -> Result<(), TrustError> {
        let mut state = self.lock();
        let opened = state.receipts.open();
        if let Err(TrustError::Spill { detail }) = &opened {
            state.spill_failure.get_or_insert_with(|| detail.clone());
        }
        opened
    }

    /// The first failure of the receipt spill file, if the store met one:
    /// a run on the store has stopped being evidence from that call on.
    pub fn spill_failure(&self) -> Option<TrustError> {
        let detail = self.lock().spill_failure.clone()?;
        Some(TrustError::Spill { detail })
    }

    fn lock(&self) -> MutexGuard<'_, MemoryState> {
        // A panic while holding the lock leaves no half-applied operation:
        // every method validates and computes before it mutates.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl MemoryState {
    fn used(&self, budget_key: &str) -> u64 {
        self.budget_used.get(budget_key).copied().unwrap_or(0)
    }

    fn labels_of(&self, keys: &[String]) -> LabelSets {
        keys.iter()
            .map(|key| {
                (
                    key.clone(),
                    self.labels.get(key).cloned().unwrap_or_default(),
                )
            })
            .collect()
    }
}

impl Rows for MemoryState {
    fn revoked_at(&mut self, id: &str) -> Result<Option<u64>, TrustError> {
        check_id("id", id)?;
        Ok(self.revocations.get(id).copied())
    }

    fn record_request(&mut self, request_key: &str) -> Result<bool, TrustError> {
        check_id("request_key", request_key)?;
        Ok(self.seen_requests.insert(key_digest(request_key)))
    }

    fn hold(
        &mut self,
        hold_id: &str,
        budget_key: &str,
        amount: u64,
        limit: u64,
    ) -> Result<HoldOutcome, TrustError> {
        check_id("hold_id", hold_id)?;
        check_id("budget_key", budget_key)?;
        check_amount("amount", amount)?;
        check_amount("limit", limit)?;
        let used = self.used(budget_key);
        if let Some(existing) = self.holds.get(hold_id) {
            return Ok(repeat_hold(
                hold_id, existing, budget_key, amount, used, limit,
            )?);
        }
        let outcome = decide_hold(budget_key, used, amount, limit)?;
        if let HoldOutcome::Granted { used: after, .. } = outcome {
            self.budget_used.insert(budget_key.to_owned(), after);
            self.holds.insert(
                hold_id.to_owned(),
                HoldRecord {
                    budget_key: budget_key.to_owned(),
                    amount,
                    state: HoldState::Held,
                },
            );
        }
        Ok(outcome)
    }

    fn commit(&mut self, hold_id: &str) -> Result<HoldState, TrustError> {
        check_id("hold_id", hold_id)?;
        let hold = self
            .holds
            .get_mut(hold_id)
            .ok_or_else(|| TrustError::UnknownHold {
                hold_id: hold_id.to_owned(),
            })?;
        hold.state = commit_transition(hold_id, hold.state)?;
        Ok(hold.state)
    }

    fn release(&mut self, hold_id: &str) -> Result<ReleaseOutcome, TrustError> {
        check_id("hold_id", hold_id)?;
        let Some(hold) = self.holds.get(hold_id).cloned() else {
            return Ok(ReleaseOutcome::UnknownHold);
        };
        let next = release_transition(hold_id, hold.state)?;
        if hold.state == HoldState::Held {
            let used = self.used(&hold.budget_key);
            // A held amount was added to `used` when granted; a usage below
            // it is a broken store, refused as SQLite refuses it, not a panic.
            let after = used
                .checked_sub(hold.amount)
                .ok_or_else(|| TrustError::Storage {
                    detail: "budget usage below a held amount in memory".to_owned(),
                })?;
            self.budget_used.insert(hold.budget_key.clone(), after);
        }
        if let Some(record) = self.holds.get_mut(hold_id) {
            record.state = next;
        }
        Ok(ReleaseOutcome::Released)
    }

    fn admit_share(
        &mut self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> Result<ShareOutcome, TrustError> {
        check_id("parent_id", parent_id)?;
        check_id("child_id", child_id)?;
        check_bps("child_bps", child_bps)?;
        check_bps("parent_bps", parent_bps)?;
        let sibling_sum = sibling_sum_bps(
            child_id,
            self.shares
                .get(parent_id)
                .into_iter()
                .flatten()
                .map(|(id, share)| SiblingShare {
                    child_id: id,
                    child_bps: share.child_bps,
                    revoked: self.revocations.contains_key(id),
                }),
        );
        let existing = self.share_parent.get(child_id).map(|parent| AdmittedChild {
            parent_id: parent.clone(),
            child_bps: self
                .shares
                .get(parent)
                .and_then(|children| children.get(child_id))
                .map_or(0, |share| share.child_bps),
        });
        let parent_bps =
            effective_parent_share(self.parent_shares.get(parent_id).copied(), parent_bps);
        let outcome = decide_share(
            parent_id,
            child_id,
            existing.as_ref(),
            sibling_sum,
            child_bps,
            parent_bps,
        )?;
        if existing.is_none() {
            if let ShareOutcome::Admitted { .. } = outcome {
                self.share_parent
                    .insert(child_id.to_owned(), parent_id.to_owned());
                self.parent_shares
                    .entry(parent_id.to_owned())
                    .or_insert(parent_bps);
                self.shares
                    .entry(parent_id.to_owned())
                    .or_default()
                    .insert(child_id.to_owned(), AdmittedShare { child_bps });
            }
        }
        Ok(outcome)
    }

    fn append(&mut self, receipts: &[ReceiptRecord]) -> Result<AppendSummary, TrustError> {
        check_receipts(receipts)?;
        let log = &mut self.receipts;
        let appended = plan_append(receipts, |id| log.body_of(id))
            .and_then(|(to_insert, summary)| log.extend(&to_insert).map(|()| summary));
        if let Err(TrustError::Spill { detail }) = &appended {
            self.spill_failure.get_or_insert_with(|| detail.clone());
        }
        appended
    }

    fn read_labels(&mut self, keys: &[String]) -> Result<LabelSets, TrustError> {
        check_label_keys(keys)?;
        Ok(self.labels_of(keys))
    }

    fn join_labels(&mut self, keys: &[String], label: &str) -> Result<LabelSets, TrustError> {
        check_label_keys(keys)?;
        check_id("label", label)?;
        for key in keys {
            self.labels
                .entry(key.clone())
                .or_default()
                .insert(label.to_owned());
        }
        Ok(self.labels_of(keys))
    }
}

impl TrustStore for InMemoryTrustStore {
    async fn add_issuer_key(&self, key: IssuerKey) -> Result<bool, TrustError> {
        Ok(self.lock().issuer_keys.insert(key))
    }

    async fn list_issuer_keys(&self) -> Result<Vec<IssuerKey>, TrustError> {
        Ok(self.lock().issuer_keys.iter().copied().collect())
    }

    async fn revoke(&self, id: &str, at_ms: u64) -> Result<Revocation, TrustError> {
        check_id("id", id)?;
        check_amount("at_ms", at_ms)?;
        let mut state = self.lock();
        if let Some(first) = state.revocations.get(id) {
            return Ok(Revocation {
                newly_revoked: false,
                revoked_at_ms: *first,
            });
        }
        state.revocations.insert(id.to_owned(), at_ms);
        Ok(Revocation {
            newly_revoked: true,
            revoked_at_ms: at_ms,
        })
    }

    async fn revoked_at(&self, id: &str) -> Result<Option<u64>, TrustError> {
        self.lock().revoked_at(id)
    }

    async fn hold_budget(
        &self,
        hold_id: &str,
        budget_key: &str,
        amount: u64,
        limit: u64,
    ) -> Result<HoldOutcome, TrustError> {
        self.lock().hold(hold_id, budget_key, amount, limit)
    }

    async fn commit_budget(&self, hold_id: &str) -> Result<HoldState, TrustError> {
        self.lock().commit(hold_id)
    }

    async fn release_budget(&self, hold_id: &str) -> Result<ReleaseOutcome, TrustError> {
        self.lock().release(hold_id)
    }

    async fn admit_share(
        &self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> Result<ShareOutcome, TrustError> {
        self.lock()
            .admit_share(parent_id, child_id, child_bps, parent_bps)
    }

    async fn record_request(&self, request_key: &str) -> Result<bool, TrustError> {
        self.lock().record_request(request_key)
    }

    async fn append_receipts(
        &self,
        receipts: Vec<ReceiptRecord>,
    ) -> Result<AppendSummary, TrustError> {
        self.lock().append(&receipts)
    }

    async fn list_receipts(&self, after_seq: u64, limit: u32) -> Result<ReceiptPage, TrustError> {
        let page = receipt_page_size(limit) as usize;
        let mut state = self.lock();
        let start = usize::try_from(after_seq)
            .unwrap_or(usize::MAX)
            .min(state.receipts.len());
        let receipts = state.receipts.page(start, page)?;
        let next_after_seq = receipts
            .last()
            .map(|last| last.seq)
            .filter(|seq| (*seq as usize) < state.receipts.len());
        Ok(ReceiptPage {
            receipts,
            next_after_seq,
        })
    }

    async fn count_receipts(&self) -> Result<u64, TrustError> {
        Ok(self.lock().receipts.len() as u64)
    }

    async fn read_labels(&self, keys: Vec<String>) -> Result<LabelSets, TrustError> {
        self.lock().read_labels(&keys)
    }

    async fn join_labels(&self, keys: Vec<String>, label: &str) -> Result<LabelSets, TrustError> {
        self.lock().join_labels(&keys, label)
    }

    async fn run_batch(&self, ops: Vec<BatchOp>) -> Result<BatchAnswers, TrustError> {
        check_batch(&ops)?;
        let mut state = self.lock();
        Ok(run_ops(&ops, |op| apply_op(&mut *state, op)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A store whose receipt file cannot be created says so before it serves anything, and keeps the first failure of its receipt file for whoever runs on it; a store that can create it is ready and has met no failure.
    #[test]
    fn a_store_that_cannot_keep_receipts_says_so_before_and_after() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-directory");
        let store = InMemoryTrustStore::default();
        store.lock().receipts = ReceiptLog::spilling_to(&missing);
        let err = store.ready().unwrap_err();
        assert!(err.to_string().contains("TMPDIR"), "{err}");
        assert!(matches!(
            store.spill_failure(),
            Some(TrustError::Spill { .. })
        ));

        let appending = InMemoryTrustStore::default();
        appending.lock().receipts = ReceiptLog::spilling_to(&missing);
        let receipt = ReceiptRecord {
            receipt_id: "r-1".into(),
            body: b"{}".to_vec(),
        };
        assert!(appending.lock().append(&[receipt]).is_err());
        assert!(appending.spill_failure().is_some());

        let fine = InMemoryTrustStore::new();
        fine.ready().unwrap();
        assert!(fine.spill_failure().is_none());
    }
}
