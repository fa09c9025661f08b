//! The state a verdict depends on.
//!
//! A kernel reads and writes shared authority state (revoked ids, budget
//! holds, delegated sibling shares, seen request ids, retained labels and
//! the receipt log) only through decision batches ([`crate::batch`]): one
//! at admission, one at settlement, each answered by a [`BatchStore`]. Every
//! topology binds that store to trust-control's state (its in-memory store,
//! SQLite, or the remote service); [`InMemoryAuthority`] is the kernel
//! crate's own, for its tests, benchmarks and portable evaluation, which
//! cannot reach the trust crate. The session journal stays with the kernel
//! ([`SessionJournal`]): it belongs to the sessions a node serves.
//!
//! No store decides a rule itself: budget holds, sibling shares and repeated
//! ids are functions of [`crate::ledger`], which trust-control's stores call
//! too. Every method returns `Result<_, StoreError>` and the kernel turns
//! any error into a deny whose reason names the store. BTreeMap only, so
//! iteration is deterministic.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use crate::batch::{run_ops, BatchAnswers, BatchStore, OpAnswer, StoreOp};
use crate::error::{StoreError, StoreName};
use crate::ledger::{
    commit_transition, decide_hold, decide_share, effective_parent_share, release_transition,
    repeat_hold, sibling_sum_bps, AdmittedChild, HoldRecord, HoldState, LedgerRefusal,
    ShareDecision, SiblingShare,
};
use crate::receipt::SignedReceipt;
use crate::verdict::ProjectedVerdict;

pub use crate::ledger::HoldDecision as HoldOutcome;

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

/// What a kernel reads and writes: its session journal, and the shared
/// authority state behind one batch store.
pub struct KernelStores {
    /// Session journal.
    pub journal: Box<dyn SessionJournal + Send>,
    /// Shared authority state, answering decision batches.
    pub authority: Box<dyn BatchStore + Send>,
}

impl KernelStores {
    /// A private journal over `authority`.
    pub fn new(authority: impl BatchStore + Send + 'static) -> Self {
        KernelStores {
            journal: Box::new(InMemoryJournal::default()),
            authority: Box::new(authority),
        }
    }

    /// A private journal over fresh in-memory authority state, for tests
    /// and benchmarks.
    pub fn in_memory() -> Self {
        Self::new(InMemoryAuthority::default())
    }

    /// Runs a decision batch through the authority store.
    pub fn run_batch(&mut self, ops: Vec<StoreOp>) -> BatchAnswers {
        self.authority.run(ops)
    }
}

/// The kernel crate's in-memory authority state: one value, cheap to clone
/// (clones share the state), so a test can revoke or read what the kernel
/// it handed a clone to decided against.
#[derive(Debug, Clone, Default)]
pub struct InMemoryAuthority {
    state: Arc<Mutex<AuthorityState>>,
}

#[derive(Debug, Default)]
struct AuthorityState {
    /// Revoked ids, each with its first revocation's instant (Unix ms).
    revoked: BTreeMap<String, u64>,
    holds: BTreeMap<String, HoldRecord>,
    /// Held plus committed amount per budget key.
    used: BTreeMap<String, u64>,
    shares: InMemorySiblingShares,
    seen: BTreeSet<String>,
    labels: BTreeMap<String, BTreeSet<String>>,
    /// Appended receipts, in append order.
    receipts: Vec<SignedReceipt>,
}

impl InMemoryAuthority {
    fn lock(&self) -> MutexGuard<'_, AuthorityState> {
        // Every operation computes before it mutates, so a panic while the
        // lock is held leaves no half-applied operation.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Revokes `id` at virtual instant `at_ms` (Unix ms), as the authority
    /// does; revoking twice keeps the first instant, as trust-control does.
    pub fn revoke(&self, id: &str, at_ms: u64) {
        self.lock().revoked.entry(id.to_string()).or_insert(at_ms);
    }

    /// When `id` was first revoked, if it was.
    pub fn revoked_at(&self, id: &str) -> Option<u64> {
        self.lock().revoked.get(id).copied()
    }

    /// What is held or committed against budget `key`.
    pub fn used(&self, key: &str) -> u64 {
        self.lock().used(key)
    }

    /// The labels retained under `key` (empty when none).
    pub fn labels(&self, key: &str) -> BTreeSet<String> {
        self.lock().labels.get(key).cloned().unwrap_or_default()
    }

    /// Joins `label` into the labels retained under `key`.
    pub fn join_label(&self, key: &str, label: &str) {
        self.lock().join(key, label);
    }

    /// Every receipt appended so far, in append order.
    pub fn receipts(&self) -> Vec<SignedReceipt> {
        self.lock().receipts.clone()
    }
}

impl BatchStore for InMemoryAuthority {
    fn run(&mut self, ops: Vec<StoreOp>) -> BatchAnswers {
        let mut state = self.lock();
        run_ops(&ops, |op| state.apply(op))
    }
}

fn refused(store: StoreName, refusal: LedgerRefusal) -> StoreError {
    StoreError::Refused {
        store,
        detail: refusal.to_string(),
    }
}

impl AuthorityState {
    fn apply(&mut self, op: &StoreOp) -> Result<OpAnswer, StoreError> {
        match op {
            StoreOp::IsRevoked { id } => Ok(OpAnswer::Revoked(self.revoked.contains_key(id))),
            StoreOp::RecordRequest { key } => Ok(OpAnswer::Fresh(self.seen.insert(key.clone()))),
            StoreOp::Hold {
                hold_id,
                key,
                amount,
                limit,
            } => self.hold(hold_id, key, *amount, *limit).map(OpAnswer::Hold),
            StoreOp::ReadLabels { keys, .. } => Ok(OpAnswer::Labels(
                keys.iter()
                    .map(|key| {
                        (
                            key.clone(),
                            self.labels.get(key).cloned().unwrap_or_default(),
                        )
                    })
                    .collect(),
            )),
            StoreOp::AdmitShare {
                parent_id,
                child_id,
                child_bps,
                parent_bps,
            } => {
                let revoked = &self.revoked;
                self.shares
                    .admit(parent_id, child_id, *child_bps, *parent_bps, &|id| {
                        revoked.contains_key(id)
                    })
                    .map(OpAnswer::Share)
            }
            StoreOp::Commit { hold_id } => self.commit(hold_id).map(|()| OpAnswer::Done),
            StoreOp::Release { hold_id } => self.release(hold_id).map(|()| OpAnswer::Done),
            StoreOp::JoinLabels { keys, label } => {
                for key in keys {
                    self.join(key, label);
                }
                Ok(OpAnswer::Done)
            }
            StoreOp::AppendReceipt { receipt } => {
                self.receipts.push(receipt.clone());
                Ok(OpAnswer::Done)
            }
        }
    }

    fn join(&mut self, key: &str, label: &str) {
        self.labels
            .entry(key.to_string())
            .or_default()
            .insert(label.to_string());
    }

    fn used(&self, key: &str) -> u64 {
        self.used.get(key).copied().unwrap_or(0)
    }

    /// Reserves `amount` of `key` (limit `limit`) under `hold_id`. A repeat
    /// of a live hold is a retry (granted, counted once); a repeat of a
    /// committed hold is a replay and an error (see [`crate::ledger`]).
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

    /// Makes a hold permanent; idempotent.
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

    /// Returns a hold's amount to the budget; idempotent.
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

impl InMemorySiblingShares {
    /// Admits `child_id` with `child_bps` under `parent_id`; idempotent for
    /// a child already admitted with the same share. A sibling `revoked`
    /// answers true for no longer holds its share
    /// ([`crate::ledger::sibling_sum_bps`]).
    pub fn admit(
        &mut self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
        revoked: &dyn Fn(&str) -> bool,
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
        let others = sibling_sum_bps(
            child_id,
            self.children
                .get(parent_id)
                .into_iter()
                .flatten()
                .map(|(id, bps)| SiblingShare {
                    child_id: id,
                    child_bps: *bps,
                    revoked: revoked(id),
                }),
        );
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

#[cfg(test)]
mod tests {
    use super::*;

    // Holds count until released, commits are permanent, a committed hold is never released or re-granted.
    #[test]
    fn budget_hold_commit_release() {
        let granted = |used| HoldOutcome::Granted { used, limit: 2 };
        let mut b = AuthorityState::default();
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
            s.admit("p", "a", 6000, 10000, &|_| false).unwrap(),
            ShareAdmission::Admitted
        );
        assert_eq!(
            s.admit("p", "a", 6000, 10000, &|_| false).unwrap(),
            ShareAdmission::Admitted
        );
        assert_eq!(
            s.admit("p", "b", 5000, 10000, &|_| false).unwrap(),
            ShareAdmission::Oversubscribed {
                siblings_bps: 6000,
                parent_bps: 10000
            }
        );
        assert_eq!(
            s.admit("p", "b", 4000, 10000, &|_| false).unwrap(),
            ShareAdmission::Admitted
        );
        // A revoked sibling's share is free: a new child fits beside it.
        let revoked_a = |id: &str| id == "a";
        assert_eq!(
            s.admit("p", "c", 6000, 10000, &revoked_a).unwrap(),
            ShareAdmission::Admitted
        );
        assert_eq!(
            s.admit("p", "d", 1, 10000, &revoked_a).unwrap(),
            ShareAdmission::Oversubscribed {
                siblings_bps: 10000,
                parent_bps: 10000
            }
        );
        let mut strict = InMemorySiblingShares::strict();
        assert_eq!(
            strict.admit("p", "a", 1, 10000, &|_| false).unwrap(),
            ShareAdmission::UnknownParent
        );
    }
}
