//! The kernel-side adapter: the kernel's decision batches over a
//! [`TrustStore`], blocking the kernel's own thread on the binding's runtime
//! (or polling inline) for each.
//!
//! A batch ([`chio_kernel::batch`]) is one call (`TrustStore::run_batch`),
//! so a remote trust-control answers a kernel decision in two round trips. Ids are scoped into the run's
//! namespace on the way out and label keys scoped back on the way in; every
//! failure names the store of the operation it failed.

use std::sync::{Arc, Mutex};

use chio_kernel::batch::{stops, BatchAnswers, BatchStore, OpAnswer, StoreOp};
use chio_kernel::canonical::to_canonical_vec;
use chio_kernel::error::{StoreError, StoreName};
use chio_kernel::receipt::SignedReceipt;
use chio_trust::model::{BatchOp, ReceiptRecord};
use chio_trust::{TrustError, TrustStore};

use super::TrustBinding;
use crate::outage::Outage;

/// Maps a trust-control failure to the kernel's store error: transport and
/// storage failures are `Unavailable`, refusals are `Refused`. A transport
/// failure names only its kind ([`Outage::trust_cause`]), its detail
/// logged, so the kernel's deny reads the same whatever the transport said
/// and whether the fault is real or simulated.
pub(super) fn store_error(store: StoreName, error: TrustError) -> StoreError {
    if let Some(outage) = Outage::of_trust(&error) {
        tracing::warn!(store = %store, error = %error, "trust-control call failed");
        return StoreError::unavailable(store, outage.trust_cause());
    }
    match error {
        TrustError::Unavailable { .. }
        | TrustError::DeadlineExceeded { .. }
        | TrustError::StoreClosed
        | TrustError::Storage { .. }
        | TrustError::Spill { .. }
        | TrustError::Io { .. }
        | TrustError::Unauthenticated
        | TrustError::MalformedAnswer { .. } => StoreError::unavailable(store, error.to_string()),
        other => StoreError::Refused {
            store,
            detail: other.to_string(),
        },
    }
}

/// The kernel-side adapter: the kernel's batch store over trust-control.
pub(super) struct TrustBackedStore<S> {
    pub(super) binding: TrustBinding<S>,
    /// Set while trusted issuer keys cannot be refreshed, to the error
    /// every revocation lookup fails with; see the module doc.
    pub(super) issuer_failure: Arc<Mutex<Option<StoreError>>>,
}

impl<S> Clone for TrustBackedStore<S> {
    fn clone(&self) -> Self {
        Self {
            binding: self.binding.clone(),
            issuer_failure: self.issuer_failure.clone(),
        }
    }
}

impl<S> TrustBackedStore<S> {
    /// Fails every revocation lookup while the issuer keys cannot be
    /// refreshed, with the error the refresh left; see the module doc.
    fn issuer_check(&self) -> Result<(), StoreError> {
        let failure = self
            .issuer_failure
            .lock()
            .map_err(|_| StoreError::unavailable(StoreName::Revocation, "issuer state poisoned"))?
            .clone();
        match failure {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

/// A receipt as trust-control stores it: its canonical bytes.
fn receipt_record(receipt: &SignedReceipt) -> Result<ReceiptRecord, StoreError> {
    let body = to_canonical_vec(receipt).map_err(|e| StoreError::Refused {
        store: StoreName::Receipt,
        detail: format!("receipt has no canonical form: {e}"),
    })?;
    Ok(ReceiptRecord {
        receipt_id: receipt.id.clone(),
        body,
    })
}

impl<S: TrustStore> TrustBackedStore<S> {
    /// An operation in trust-control's terms: ids in the run namespace, the
    /// receipt as its canonical bytes.
    fn scope_op(&self, op: StoreOp) -> Result<BatchOp, StoreError> {
        let b = &self.binding;
        let scoped = |keys: Vec<String>| keys.iter().map(|k| b.scoped(k)).collect();
        Ok(match op {
            StoreOp::IsRevoked { id } => StoreOp::IsRevoked { id: b.scoped(&id) },
            StoreOp::RecordRequest { key } => StoreOp::RecordRequest {
                key: b.scoped(&key),
            },
            StoreOp::Hold {
                hold_id,
                key,
                amount,
                limit,
            } => StoreOp::Hold {
                hold_id: b.scoped(&hold_id),
                key: b.scoped(&key),
                amount,
                limit,
            },
            StoreOp::ReadLabels {
                keys,
                stop_unless_empty,
            } => StoreOp::ReadLabels {
                keys: scoped(keys),
                stop_unless_empty,
            },
            StoreOp::AdmitShare {
                parent_id,
                child_id,
                child_bps,
                parent_bps,
            } => StoreOp::AdmitShare {
                parent_id: b.scoped(&parent_id),
                child_id: b.scoped(&child_id),
                child_bps,
                parent_bps,
            },
            StoreOp::Commit { hold_id } => StoreOp::Commit {
                hold_id: b.scoped(&hold_id),
            },
            StoreOp::Release { hold_id } => StoreOp::Release {
                hold_id: b.scoped(&hold_id),
            },
            StoreOp::JoinLabels { keys, label } => StoreOp::JoinLabels {
                keys: scoped(keys),
                label,
            },
            StoreOp::AppendReceipt { receipt } => StoreOp::AppendReceipt {
                receipt: receipt_record(&receipt)?,
            },
        })
    }

    /// An answer in the kernel's terms: label keys out of the namespace.
    fn unscope_answer(&self, answer: OpAnswer) -> OpAnswer {
        match answer {
            OpAnswer::Labels(sets) => OpAnswer::Labels(
                sets.into_iter()
                    .map(|(key, set)| {
                        let key = match key.strip_prefix(&self.binding.namespace) {
                            Some(local) => local.to_string(),
                            None => key,
                        };
                        (key, set)
                    })
                    .collect(),
            ),
            other => other,
        }
    }
}

impl<S: TrustStore> BatchStore for TrustBackedStore<S> {
    /// One round trip for the whole batch. Operations that cannot be sent
    /// (a revocation lookup while the issuer keys are stale, a receipt with
    /// no canonical form) end the batch there, answered with their error,
    /// as the one-call-per-operation adapter would have failed them.
    fn run(&mut self, ops: Vec<StoreOp>) -> BatchAnswers {
        let mut stores = Vec::with_capacity(ops.len());
        let mut wire = Vec::with_capacity(ops.len());
        let mut unsent = None;
        for op in ops {
            let checked = match op {
                StoreOp::IsRevoked { .. } => self.issuer_check(),
                _ => Ok(()),
            };
            let store = op.store();
            match checked.and_then(|()| self.scope_op(op)) {
                Ok(op) => {
                    stores.push(store);
                    wire.push(op);
                }
                Err(error) => {
                    unsent = Some(error);
                    break;
                }
            }
        }
        let mut answers: BatchAnswers = Vec::with_capacity(wire.len() + 1);
        if !wire.is_empty() {
            let b = &self.binding;
            let appends = wire
                .iter()
                .any(|op| matches!(op, StoreOp::AppendReceipt { .. }));
            let deadline = if appends {
                b.deadlines.receipt
            } else {
                b.deadlines.call
            };
            let last = wire.last().cloned();
            match b.block_raw(deadline, b.store.run_batch(wire)) {
                Ok(ran) => {
                    for (answer, store) in ran.into_iter().zip(&stores) {
                        answers.push(
                            answer
                                .map(|a| self.unscope_answer(a))
                                .map_err(|e| store_error(*store, e)),
                        );
                    }
                }
                Err(failure) => {
                    answers.extend(stores.iter().map(|store| Err(failure.named(*store))));
                }
            }
            // An unsent operation is reached only when every sent one ran
            // and none ended the batch.
            let ended = answers.len() < stores.len()
                || match (last, answers.last()) {
                    (Some(op), Some(answer)) => stops(&op, answer),
                    _ => false,
                };
            if ended {
                return answers;
            }
        }
        answers.extend(unsent.map(Err));
        answers
    }
}
