//! The state a verdict depends on, behind synchronous store traits.
//!
//! The in-memory budget and share stores decide nothing themselves: every
//! rule is a function of [`crate::ledger`], which trust-control's stores
//! call too.
//!
//! Each trait is one kind of authority state (`docs/architecture.md`): revoked
//! ids, budget holds, delegated sibling shares, the receipt log, the session
//! journal, retained labels and seen request ids. Every method returns
//! `Result<_, StoreError>` and the kernel turns any error into a deny whose
//! reason names the store. The in-memory implementations here are the
//! reference behaviour (BTreeMap only, so iteration is deterministic); SQLite
//! and remote implementations live in other crates and plug into
//! [`KernelStores`] as boxed trait objects.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::{StoreError, StoreName};
use crate::ledger::{
    commit_transition, decide_hold, decide_share, effective_parent_share, release_transition,
    repeat_hold, AdmittedChild, HoldRecord, HoldState, LedgerRefusal, ShareDecision,
};
use crate::receipt::SignedReceipt;
use crate::verdict::ProjectedVerdict;

/// Revoked capability and delegation ids.
pub trait RevocationStore {
    /// Whether `id` (a capability id or a delegated child id) is revoked.
    fn is_revoked(&self, id: &str) -> Result<bool, StoreError>;
    /// Revokes `id` at virtual instant `at_ms` (Unix ms); revoking twice is
    /// not an error and keeps the first instant, as trust-control does.
    fn revoke(&mut self, id: &str, at_ms: u64) -> Result<(), StoreError>;
}

pub use crate::ledger::HoldDecision as HoldOutcome;

/// Invocation-count and monetary budgets: hold before dispatch, then commit
/// or release. A hold counts against the limit until it is released.
pub trait BudgetStore {
    /// Reserves `amount` of `key` (limit `limit`) under `hold_id`. A repeat
    /// of a live hold is a retry (granted, counted once); a repeat of a
    /// committed hold is a replay and an error (see [`crate::ledger`]).
    fn hold(
        &mut self,
        hold_id: &str,
        key: &str,
        amount: u64,
        limit: u64,
    ) -> Result<HoldOutcome, StoreError>;
    /// Makes a hold permanent; idempotent.
    fn commit(&mut self, hold_id: &str) -> Result<(), StoreError>;
    /// Returns a hold's amount to the budget; idempotent.
    fn release(&mut self, hold_id: &str) -> Result<(), StoreError>;
}

/// The answer to a sibling-share admission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareAdmission {
    /// The child holds its share (now or already).
    Admitted,
    /// The child's share plus its admitted siblings would exceed the parent.
    Oversubscribed {
        /// Sum of the other admitted siblings' shares.
        siblings_bps: u32,
        /// The parent's share.
        parent_bps: u32,
    },
    /// The registry does not know the parent (strict registries only).
    UnknownParent,
}

/// Delegated sibling shares: `child + sum(other admitted siblings) <= parent`.
pub trait SiblingShareStore {
    /// Admits `child_id` with `child_bps` under `parent_id`; idempotent for a
    /// child already admitted with the same share.
    fn admit(
        &mut self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> Result<ShareAdmission, StoreError>;
}

/// The signed receipt log.
pub trait ReceiptStore {
    /// Appends a receipt durably; only a successful append lets an allow out.
    fn append(&mut self, receipt: &SignedReceipt) -> Result<(), StoreError>;
}

/// One governed call as the session journal records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// The request id, to tie the entry to its receipt.
    pub request_id: String,
    /// Server called.
    pub server: String,
    /// Tool called.
    pub tool: String,
    /// The projected verdict (`allow`, `rewrite` or `deny`); session rules
    /// count only allowed predecessors.
    pub verdict: ProjectedVerdict,
    /// Virtual time of the decision.
    pub at_ms: u64,
    /// Whether the tool server carried the call out; false for every deny
    /// and for an allowed call the server could not serve.
    #[serde(default)]
    pub performed: bool,
}

impl JournalEntry {
    /// Whether the call was allowed (plainly or sanitized).
    pub fn allowed(&self) -> bool {
        matches!(
            self.verdict,
            ProjectedVerdict::Allow | ProjectedVerdict::Rewrite
        )
    }

    /// Whether the call satisfies a session rule that requires it: it was
    /// admitted and the server performed it. An allowed call to a tool the
    /// server does not have, or on a file it does not hold, is not a
    /// predecessor.
    pub fn satisfies_predecessor(&self) -> bool {
        self.allowed() && self.performed
    }
}

/// The per-session call history that session rules read.
pub trait SessionJournal {
    /// Appends one decided call to a session.
    fn append(&mut self, session_id: &str, entry: JournalEntry) -> Result<(), StoreError>;
    /// The session's calls in decision order.
    fn entries(&self, session_id: &str) -> Result<Vec<JournalEntry>, StoreError>;
}

/// Retained information-flow labels, by key (see [`crate::label::LabelKey`]).
pub trait LabelStore {
    /// The labels retained under `key` (empty when none).
    fn read(&self, key: &str) -> Result<BTreeSet<String>, StoreError>;
    /// Adds `label` to `key` durably before returning.
    fn join(&mut self, key: &str, label: &str) -> Result<(), StoreError>;
}

/// Seen request ids, for replay protection.
pub trait NonceStore {
    /// Records `request_key` (a request id scoped by lineage and principal,
    /// [`crate::ledger::seen_request_key`]); answers false when it was
    /// already recorded. Stores shared by several kernels make replay
    /// protection global; durable ones make it survive restarts.
    fn check_and_record(&mut self, request_key: &str) -> Result<bool, StoreError>;
}

/// All stores a kernel reads and writes, as trait objects so that in-memory,
/// SQLite and remote implementations are interchangeable.
pub struct KernelStores {
    /// Revoked ids.
    pub revocations: Box<dyn RevocationStore + Send>,
    /// Budget holds.
    pub budgets: Box<dyn BudgetStore + Send>,
    /// Sibling shares.
    pub shares: Box<dyn SiblingShareStore + Send>,
    /// Receipt log.
    pub receipts: Box<dyn ReceiptStore + Send>,
    /// Session journal.
    pub journal: Box<dyn SessionJournal + Send>,
    /// Retained labels.
    pub labels: Box<dyn LabelStore + Send>,
    /// Seen request ids.
    pub nonces: Box<dyn NonceStore + Send>,
    /// Answers a whole decision batch in one call when set (trust-control);
    /// `None` runs batches operation by operation against the stores above
    /// ([`KernelStores::run_batch`]).
    pub batch: Option<Box<dyn crate::batch::BatchStore + Send>>,
}

impl KernelStores {
    /// Fresh in-memory stores, for the embedded topology and tests.
    pub fn in_memory() -> Self {
        KernelStores {
            revocations: Box::new(InMemoryRevocations::default()),
            budgets: Box::new(InMemoryBudgets::default()),
            shares: Box::new(InMemorySiblingShares::default()),
            receipts: Box::new(InMemoryReceipts::default()),
            journal: Box::new(InMemoryJournal::default()),
            labels: Box::new(InMemoryLabels::default()),
            nonces: Box::new(InMemoryNonces::default()),
            batch: None,
        }
    }
}

/// In-memory revocations: each revoked id with the instant of its first
/// revocation.
#[derive(Debug, Clone, Default)]
pub struct InMemoryRevocations {
    /// Revoked ids, each with its first revocation's instant (Unix ms).
    pub revoked: BTreeMap<String, u64>,
}

impl InMemoryRevocations {
    /// When `id` was first revoked, if it was.
    pub fn revoked_at(&self, id: &str) -> Option<u64> {
        self.revoked.get(id).copied()
    }
}

impl RevocationStore for InMemoryRevocations {
    fn is_revoked(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.revoked.contains_key(id))
    }
    fn revoke(&mut self, id: &str, at_ms: u64) -> Result<(), StoreError> {
        self.revoked.entry(id.to_string()).or_insert(at_ms);
        Ok(())
    }
}

/// In-memory budgets: per key, the sum of live holds and commits, decided
/// by the shared rules of [`crate::ledger`].
#[derive(Debug, Clone, Default)]
pub struct InMemoryBudgets {
    holds: BTreeMap<String, HoldRecord>,
    used: BTreeMap<String, u64>,
}

impl InMemoryBudgets {
    /// What is held or committed against `key`.
    pub fn used(&self, key: &str) -> u64 {
        self.used.get(key).copied().unwrap_or(0)
    }
}

fn refused(store: StoreName, refusal: LedgerRefusal) -> StoreError {
    StoreError::Refused {
        store,
        detail: refusal.to_string(),
    }
}

impl BudgetStore for InMemoryBudgets {
    fn hold(
        &mut self,
        hold_id: &str,
        key: &str,
        amount: u64,
        limit: u64,
    ) -> Result<HoldOutcome, StoreError> {
        let used = self.used(key);
        if let Some(existing) = self.holds.get(hold_id) {
            return repeat_hold(hold_id, existing, key, amount, used, limit)
                .map_err(|r| refused(StoreName::Budget, r));
        }
        let outcome =
            decide_hold(key, used, amount, limit).map_err(|r| refused(StoreName::Budget, r))?;
        if let HoldOutcome::Granted { used: after, .. } = outcome {
            self.used.insert(key.to_string(), after);
            self.holds.insert(
                hold_id.to_string(),
                HoldRecord {
                    budget_key: key.to_string(),
                    amount,
                    state: HoldState::Held,
                },
            );
        }
        Ok(outcome)
    }

    fn commit(&mut self, hold_id: &str) -> Result<(), StoreError> {
        let Some(hold) = self.holds.get_mut(hold_id) else {
            return Err(StoreError::Refused {
                store: StoreName::Budget,
                detail: format!("no hold {hold_id} to commit"),
            });
        };
        hold.state =
            commit_transition(hold_id, hold.state).map_err(|r| refused(StoreName::Budget, r))?;
        Ok(())
    }

    fn release(&mut self, hold_id: &str) -> Result<(), StoreError> {
        let Some(hold) = self.holds.get(hold_id).cloned() else {
            return Ok(());
        };
        let next =
            release_transition(hold_id, hold.state).map_err(|r| refused(StoreName::Budget, r))?;
        if hold.state == HoldState::Held {
            let used = self.used.entry(hold.budget_key.clone()).or_insert(0);
            *used = used.saturating_sub(hold.amount);
        }
        if let Some(record) = self.holds.get_mut(hold_id) {
            record.state = next;
        }
        Ok(())
    }
}

/// In-memory sibling-share registry.
///
/// By default a parent becomes known on first admission with the share the
/// kernel verified from the presented chain. A strict registry (the portable
/// evaluator's caller-owned form) knows only the parents registered with
/// [`InMemorySiblingShares::register_parent`] and answers `UnknownParent`
/// for any other.
#[derive(Debug, Clone, Default)]
pub struct InMemorySiblingShares {
    strict: bool,
    parents: BTreeMap<String, u32>,
    children: BTreeMap<String, BTreeMap<String, u32>>,
    child_parent: BTreeMap<String, String>,
}

impl InMemorySiblingShares {
    /// A registry that refuses parents it was not told about.
    pub fn strict() -> Self {
        InMemorySiblingShares {
            strict: true,
            ..Default::default()
        }
    }

    /// Declares a parent and its share.
    pub fn register_parent(&mut self, parent_id: &str, parent_bps: u32) {
        self.parents.insert(parent_id.to_string(), parent_bps);
    }

    /// The admitted children of a parent and their shares.
    pub fn children(&self, parent_id: &str) -> BTreeMap<String, u32> {
        self.children.get(parent_id).cloned().unwrap_or_default()
    }
}

impl SiblingShareStore for InMemorySiblingShares {
    fn admit(
        &mut self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> Result<ShareAdmission, StoreError> {
        let known = self.parents.get(parent_id).copied();
        if known.is_none() && self.strict {
            return Ok(ShareAdmission::UnknownParent);
        }
        let parent_bps = effective_parent_share(known, parent_bps);
        let existing = self.child_parent.get(child_id).map(|parent| AdmittedChild {
            parent_id: parent.clone(),
            child_bps: self
                .children
                .get(parent)
                .and_then(|c| c.get(child_id))
                .copied()
                .unwrap_or(0),
        });
        let siblings = self.children.get(parent_id);
        let others: u32 = siblings
            .map(|c| {
                c.iter()
                    .filter(|(id, _)| id.as_str() != child_id)
                    .map(|(_, bps)| *bps)
                    .sum()
            })
            .unwrap_or(0);
        let decision = decide_share(
            parent_id,
            child_id,
            existing.as_ref(),
            others,
            child_bps,
            parent_bps,
        )
        .map_err(|r| refused(StoreName::SiblingShare, r))?;
        match decision {
            ShareDecision::Admitted { .. } => {
                if existing.is_none() {
                    self.parents
                        .entry(parent_id.to_string())
                        .or_insert(parent_bps);
                    self.child_parent
                        .insert(child_id.to_string(), parent_id.to_string());
                    self.children
                        .entry(parent_id.to_string())
                        .or_default()
                        .insert(child_id.to_string(), child_bps);
                }
                Ok(ShareAdmission::Admitted)
            }
            ShareDecision::Refused {
                sibling_sum_bps,
                parent_bps,
            } => Ok(ShareAdmission::Oversubscribed {
                siblings_bps: sibling_sum_bps,
                parent_bps,
            }),
        }
    }
}

/// In-memory receipt log, in append order.
#[derive(Debug, Clone, Default)]
pub struct InMemoryReceipts {
    /// Appended receipts.
    pub receipts: Vec<SignedReceipt>,
}

impl ReceiptStore for InMemoryReceipts {
    fn append(&mut self, receipt: &SignedReceipt) -> Result<(), StoreError> {
        self.receipts.push(receipt.clone());
        Ok(())
    }
}

/// In-memory session journal.
#[derive(Debug, Clone, Default)]
pub struct InMemoryJournal {
    sessions: BTreeMap<String, Vec<JournalEntry>>,
}

impl SessionJournal for InMemoryJournal {
    fn append(&mut self, session_id: &str, entry: JournalEntry) -> Result<(), StoreError> {
        self.sessions
            .entry(session_id.to_string())
            .or_default()
            .push(entry);
        Ok(())
    }
    fn entries(&self, session_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        Ok(self.sessions.get(session_id).cloned().unwrap_or_default())
    }
}

/// In-memory retained labels.
#[derive(Debug, Clone, Default)]
pub struct InMemoryLabels {
    labels: BTreeMap<String, BTreeSet<String>>,
}

impl LabelStore for InMemoryLabels {
    fn read(&self, key: &str) -> Result<BTreeSet<String>, StoreError> {
        Ok(self.labels.get(key).cloned().unwrap_or_default())
    }
    fn join(&mut self, key: &str, label: &str) -> Result<(), StoreError> {
        self.labels
            .entry(key.to_string())
            .or_default()
            .insert(label.to_string());
        Ok(())
    }
}

/// In-memory set of seen request ids.
#[derive(Debug, Clone, Default)]
pub struct InMemoryNonces {
    seen: BTreeSet<String>,
}

impl NonceStore for InMemoryNonces {
    fn check_and_record(&mut self, request_id: &str) -> Result<bool, StoreError> {
        Ok(self.seen.insert(request_id.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Holds count until released, commits are permanent, a committed hold is never released or re-granted.
    #[test]
    fn budget_hold_commit_release() {
        let granted = |used| HoldOutcome::Granted { used, limit: 2 };
        let mut b = InMemoryBudgets::default();
        assert_eq!(b.hold("h1", "k", 1, 2).unwrap(), granted(1));
        assert_eq!(b.hold("h2", "k", 1, 2).unwrap(), granted(2));
        assert_eq!(
            b.hold("h3", "k", 1, 2).unwrap(),
            HoldOutcome::Refused { used: 2, limit: 2 }
        );
        b.release("h2").unwrap();
        b.commit("h1").unwrap();
        assert!(b.release("h1").is_err(), "a committed hold is permanent");
        let replay = b.hold("h1", "k", 1, 2).unwrap_err().to_string();
        assert!(replay.contains("request replayed"), "{replay}");
        assert!(
            b.hold("h2", "k", 1, 2).is_err(),
            "a released hold id is spent"
        );
        assert_eq!(b.used("k"), 1);
        assert_eq!(b.hold("h3", "k", 1, 2).unwrap(), granted(2));
    }

    // Sibling shares never sum above the parent, admission is idempotent, strict registries refuse unknown parents.
    #[test]
    fn sibling_shares() {
        let mut s = InMemorySiblingShares::default();
        assert_eq!(
            s.admit("p", "a", 6000, 10000).unwrap(),
            ShareAdmission::Admitted
        );
        assert_eq!(
            s.admit("p", "a", 6000, 10000).unwrap(),
            ShareAdmission::Admitted
        );
        assert_eq!(
            s.admit("p", "b", 5000, 10000).unwrap(),
            ShareAdmission::Oversubscribed {
                siblings_bps: 6000,
                parent_bps: 10000
            }
        );
        assert_eq!(
            s.admit("p", "b", 4000, 10000).unwrap(),
            ShareAdmission::Admitted
        );
        let mut strict = InMemorySiblingShares::strict();
        assert_eq!(
            strict.admit("p", "a", 1, 10000).unwrap(),
            ShareAdmission::UnknownParent
        );
    }
}
