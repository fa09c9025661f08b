//! Decision batches: the store work of one decision as an ordered list of
//! operations that a store answers in one call.
//!
//! A kernel decision touches shared state twice: at admission (revocation
//! of every chain id, the seen request id, budget holds, retained labels,
//! sibling shares) and at settlement (hold commits or releases, revocation
//! again, label joins, the receipt). The kernel checks everything it can
//! locally first, then sends each phase as one [`StoreOp`] list, so a store
//! behind a network answers a decision in two round trips instead of one
//! per operation.
//!
//! A batch runs in order and stops after the first answer that ends the
//! decision: a revoked id, a replayed request id, a refused hold or share,
//! a non-empty label read the kernel asked to stop on, or any error (except
//! a failed release, which the kernel ignores as it always has: a hold left
//! counted errs towards refusing later calls). The answers are that prefix,
//! so the state a store is left in is exactly the state the one-call-per-
//! operation kernel left it in. The rule of where a batch stops is
//! [`stops`], and every store runs a batch through [`run_ops`], so no store
//! decides it for itself; the rules of each operation stay in
//! [`crate::ledger`].
//!
//! [`KernelStores::run_batch`] runs a batch through the kernel's
//! [`BatchStore`]: trust-control's state (one call per batch), or the
//! kernel crate's own [`crate::stores::InMemoryAuthority`].

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{StoreError, StoreName};
use crate::ledger::HoldDecision;
use crate::receipt::SignedReceipt;
#[cfg(doc)]
use crate::stores::KernelStores;
use crate::stores::ShareAdmission;

/// One operation on shared state; `R` is the receipt as the store takes it
/// (the kernel's [`SignedReceipt`], or its canonical bytes on the wire).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreOp<R = SignedReceipt> {
    /// Whether `id` (a capability or delegation id) is revoked.
    IsRevoked {
        /// The id to look up.
        id: String,
    },
    /// Records a seen request key; a key seen before is a replay.
    RecordRequest {
        /// The scoped request key (`ledger::seen_request_key`).
        key: String,
    },
    /// Holds `amount` of `key` against `limit` under `hold_id`.
    Hold {
        /// The hold's id, scoped by the request key.
        hold_id: String,
        /// The budget key.
        key: String,
        /// The amount to hold.
        amount: u64,
        /// The budget's limit.
        limit: u64,
    },
    /// Reads the retained labels of `keys`.
    ReadLabels {
        /// The label keys to read.
        keys: Vec<String>,
        /// Stop the batch after this read when any set is non-empty: the
        /// operations after it were planned for an untainted call.
        stop_unless_empty: bool,
    },
    /// Admits a delegated child's share of its parent.
    AdmitShare {
        /// The parent capability id.
        parent_id: String,
        /// The child capability id.
        child_id: String,
        /// The child's share in basis points.
        child_bps: u32,
        /// The parent's share in basis points.
        parent_bps: u32,
    },
    /// Makes a granted hold permanent.
    Commit {
        /// The hold's id.
        hold_id: String,
    },
    /// Gives a held amount back; its failure never stops a batch.
    Release {
        /// The hold's id.
        hold_id: String,
    },
    /// Joins `label` into the retained sets of `keys`.
    JoinLabels {
        /// The label keys.
        keys: Vec<String>,
        /// The label to join.
        label: String,
    },
    /// Appends a signed receipt durably.
    AppendReceipt {
        /// The receipt.
        receipt: R,
    },
}

impl<R> StoreOp<R> {
    /// The store whose failure this operation's error names.
    pub fn store(&self) -> StoreName {
        match self {
            StoreOp::IsRevoked { .. } => StoreName::Revocation,
            StoreOp::RecordRequest { .. } => StoreName::Nonce,
            StoreOp::Hold { .. } | StoreOp::Commit { .. } | StoreOp::Release { .. } => {
                StoreName::Budget
            }
            StoreOp::ReadLabels { .. } | StoreOp::JoinLabels { .. } => StoreName::Label,
            StoreOp::AdmitShare { .. } => StoreName::SiblingShare,
            StoreOp::AppendReceipt { .. } => StoreName::Receipt,
        }
    }
}

/// A store's answer to one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpAnswer {
    /// `IsRevoked`: whether the id is revoked.
    Revoked(bool),
    /// `RecordRequest`: whether the key was fresh.
    Fresh(bool),
    /// `Hold`: granted or refused.
    Hold(HoldDecision),
    /// `ReadLabels`: the set of every key asked for.
    Labels(BTreeMap<String, BTreeSet<String>>),
    /// `AdmitShare`: the admission.
    Share(ShareAdmission),
    /// `Commit`, `Release`, `JoinLabels`, `AppendReceipt`: done.
    Done,
}

/// Whether a batch stops after `op` answered `answer`; see the module doc.
pub fn stops<R, E>(op: &StoreOp<R>, answer: &Result<OpAnswer, E>) -> bool {
    match answer {
        Err(_) => !matches!(op, StoreOp::Release { .. }),
        Ok(OpAnswer::Revoked(revoked)) => *revoked,
        Ok(OpAnswer::Fresh(fresh)) => !*fresh,
        Ok(OpAnswer::Hold(decision)) => !matches!(decision, HoldDecision::Granted { .. }),
        Ok(OpAnswer::Labels(sets)) => {
            matches!(
                op,
                StoreOp::ReadLabels {
                    stop_unless_empty: true,
                    ..
                }
            ) && sets.values().any(|set| !set.is_empty())
        }
        Ok(OpAnswer::Share(admission)) => *admission != ShareAdmission::Admitted,
        Ok(OpAnswer::Done) => false,
    }
}

/// Runs `ops` in order through `apply`, stopping as [`stops`] says; the
/// answers are the prefix that ran. Every store runs its batches here.
pub fn run_ops<R, E>(
    ops: &[StoreOp<R>],
    mut apply: impl FnMut(&StoreOp<R>) -> Result<OpAnswer, E>,
) -> Vec<Result<OpAnswer, E>> {
    let mut answers = Vec::with_capacity(ops.len());
    for op in ops {
        let answer = apply(op);
        let stop = stops(op, &answer);
        answers.push(answer);
        if stop {
            break;
        }
    }
    answers
}

/// The answers to a batch: one per operation that ran, in order. A store
/// that could not be reached answers every operation with the failure,
/// each naming the operation's own store.
pub type BatchAnswers = Vec<Result<OpAnswer, StoreError>>;

/// A store that answers a whole batch in one call: the kernel's only way to
/// shared authority state.
pub trait BatchStore {
    /// Runs `ops` as [`run_ops`] does and answers the prefix that ran.
    fn run(&mut self, ops: Vec<StoreOp>) -> BatchAnswers;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stores::{InMemoryAuthority, KernelStores};

    fn revoked(id: &str) -> StoreOp {
        StoreOp::IsRevoked { id: id.to_string() }
    }

    // Proves a batch stops at the first revoked id and runs nothing after it, so a refused call consumes no request id.
    #[test]
    fn batch_stops_at_the_first_ending_answer() {
        let authority = InMemoryAuthority::default();
        let mut stores = KernelStores::new(authority.clone());
        authority.revoke("b", 1);
        let ops = vec![
            revoked("a"),
            revoked("b"),
            StoreOp::RecordRequest { key: "k".into() },
        ];
        let answers = stores.run_batch(ops);
        assert_eq!(
            answers,
            vec![Ok(OpAnswer::Revoked(false)), Ok(OpAnswer::Revoked(true))]
        );
        assert_eq!(
            stores.run_batch(vec![StoreOp::RecordRequest { key: "k".into() }]),
            vec![Ok(OpAnswer::Fresh(true))],
            "the request key after the revoked id was not recorded"
        );
    }

    // Proves a failed release does not stop the receipt after it, while a refused hold stops the batch.
    #[test]
    fn releases_never_stop_and_refusals_do() {
        let mut stores = KernelStores::in_memory();
        let held = stores.run_batch(vec![
            StoreOp::Hold {
                hold_id: "h".into(),
                key: "k".into(),
                amount: 1,
                limit: 1,
            },
            StoreOp::Commit {
                hold_id: "h".into(),
            },
        ]);
        assert!(held.iter().all(Result::is_ok), "{held:?}");
        let release_then_hold = vec![
            StoreOp::Release {
                hold_id: "h".into(),
            },
            StoreOp::Hold {
                hold_id: "h2".into(),
                key: "k".into(),
                amount: 1,
                limit: 1,
            },
            StoreOp::RecordRequest { key: "r".into() },
        ];
        let answers = stores.run_batch(release_then_hold);
        assert_eq!(answers.len(), 2, "{answers:?}");
        assert!(answers[0].is_err(), "a committed hold cannot be released");
        assert_eq!(
            answers[1],
            Ok(OpAnswer::Hold(HoldDecision::Refused { used: 1, limit: 1 }))
        );
    }

    // Proves a label read marked stop-unless-empty stops on a tainted key and passes an untainted one.
    #[test]
    fn tainted_read_stops_when_asked() {
        let authority = InMemoryAuthority::default();
        let mut stores = KernelStores::new(authority.clone());
        let read = |key: &str| StoreOp::ReadLabels {
            keys: vec![key.to_string()],
            stop_unless_empty: true,
        };
        let tail = StoreOp::RecordRequest { key: "r".into() };
        assert_eq!(stores.run_batch(vec![read("s"), tail.clone()]).len(), 2);
        authority.join_label("t", "internal");
        assert_eq!(stores.run_batch(vec![read("t"), tail]).len(), 1);
    }
}
