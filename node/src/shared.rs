//! Authority state shared by the kernels of one embedded run.
//!
//! In the embedded topology trust-control lives in process: every kernel of
//! the run reads and writes one set of revocations, budgets, sibling shares,
//! receipts and retained labels, exactly as kernels on separate nodes share
//! them through the trust-control service. [`SharedTrust`] holds that state
//! behind one mutex and hands each kernel store adapters over it; the session
//! journal and the nonce set stay per kernel (they live in the serving
//! process's memory). Kernels evaluate one action at a time in the
//! controller's total order, so the mutex never decides an outcome.
//!
//! Only the direct dispatcher (`crate::executor::direct`, which the
//! synchronous adversary evaluator drives) uses this; runs bind their
//! kernels through [`crate::trust_stores::bind_node`]. The rules applied
//! are `chio_kernel::ledger`'s either way. Seen request ids are shared too,
//! so replay protection is global across the kernels, as in a run. A view
//! gated by the run's fault switch ([`SharedTrust::gated`]) fails every
//! store call while its node cannot reach trust-control, as a node's do.

use std::sync::{Arc, Mutex, MutexGuard};

use chio_kernel::error::{StoreError, StoreName};
use chio_kernel::receipt::SignedReceipt;
use chio_kernel::stores::{
    BudgetStore, HoldOutcome, InMemoryBudgets, InMemoryJournal, InMemoryLabels, InMemoryNonces,
    InMemoryReceipts, InMemoryRevocations, InMemorySiblingShares, KernelStores, LabelStore,
    NonceStore, ReceiptStore, RevocationStore, ShareAdmission, SiblingShareStore,
};
use std::collections::BTreeSet;

use crate::simulated_faults::FaultSwitch;

/// The in-process stand-in for trust-control's state.
#[derive(Debug, Default)]
struct TrustState {
    revocations: InMemoryRevocations,
    budgets: InMemoryBudgets,
    shares: InMemorySiblingShares,
    receipts: InMemoryReceipts,
    labels: InMemoryLabels,
    nonces: InMemoryNonces,
    /// Receipts in append order, for the run's own accounting.
    log: Vec<SignedReceipt>,
}

/// Where a view of the shared state sits: the node whose kernels use it,
/// and the faults that may cut that node off.
#[derive(Debug, Clone)]
struct Gate {
    node: String,
    switch: FaultSwitch,
}

/// One shared authority state, cloned into every kernel of an embedded run.
#[derive(Debug, Clone, Default)]
pub struct SharedTrust {
    state: Arc<Mutex<TrustState>>,
    gate: Option<Gate>,
}

impl SharedTrust {
    /// Fresh, empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same state as node `node` reaches it: while `switch` cuts the
    /// node from trust-control or trust-control stalls, every store call
    /// fails with that outage's kind, as a node's store calls do, and
    /// nothing is read or written.
    pub fn gated(&self, node: &str, switch: &FaultSwitch) -> Self {
        Self {
            state: self.state.clone(),
            gate: Some(Gate {
                node: node.to_string(),
                switch: switch.clone(),
            }),
        }
    }

    fn lock(&self, store: StoreName) -> Result<MutexGuard<'_, TrustState>, StoreError> {
        if let Some(gate) = &self.gate {
            if let Some(outage) = gate.switch.control_outage(&gate.node) {
                return Err(StoreError::unavailable(store, outage.trust_cause()));
            }
        }
        self.state
            .lock()
            .map_err(|_| StoreError::unavailable(store, "shared state poisoned by a panic"))
    }

    /// Kernel stores over this state, with a private journal.
    pub fn kernel_stores(&self) -> KernelStores {
        KernelStores {
            revocations: Box::new(self.clone()),
            budgets: Box::new(self.clone()),
            shares: Box::new(self.clone()),
            receipts: Box::new(self.clone()),
            journal: Box::new(InMemoryJournal::default()),
            labels: Box::new(self.clone()),
            nonces: Box::new(self.clone()),
            batch: None,
        }
    }

    /// Revokes `id` on behalf of the authority at `at_ms`.
    pub fn revoke(&self, id: &str, at_ms: u64) -> Result<(), StoreError> {
        self.lock(StoreName::Revocation)?
            .revocations
            .revoke(id, at_ms)
    }

    /// When `id` was first revoked, if it was.
    pub fn revoked_at(&self, id: &str) -> Result<Option<u64>, StoreError> {
        Ok(self.lock(StoreName::Revocation)?.revocations.revoked_at(id))
    }

    /// Every receipt appended so far, in append order.
    pub fn receipts(&self) -> Vec<SignedReceipt> {
        self.state.lock().map(|s| s.log.clone()).unwrap_or_default()
    }
}

impl RevocationStore for SharedTrust {
    fn is_revoked(&self, id: &str) -> Result<bool, StoreError> {
        self.lock(StoreName::Revocation)?.revocations.is_revoked(id)
    }

    fn revoke(&mut self, id: &str, at_ms: u64) -> Result<(), StoreError> {
        self.lock(StoreName::Revocation)?
            .revocations
            .revoke(id, at_ms)
    }
}

impl NonceStore for SharedTrust {
    fn check_and_record(&mut self, request_key: &str) -> Result<bool, StoreError> {
        self.lock(StoreName::Nonce)?
            .nonces
            .check_and_record(request_key)
    }
}

impl BudgetStore for SharedTrust {
    fn hold(
        &mut self,
        hold_id: &str,
        key: &str,
        amount: u64,
        limit: u64,
    ) -> Result<HoldOutcome, StoreError> {
        self.lock(StoreName::Budget)?
            .budgets
            .hold(hold_id, key, amount, limit)
    }

    fn commit(&mut self, hold_id: &str) -> Result<(), StoreError> {
        self.lock(StoreName::Budget)?.budgets.commit(hold_id)
    }

    fn release(&mut self, hold_id: &str) -> Result<(), StoreError> {
        self.lock(StoreName::Budget)?.budgets.release(hold_id)
    }
}

impl SiblingShareStore for SharedTrust {
    fn admit(
        &mut self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> Result<ShareAdmission, StoreError> {
        self.lock(StoreName::SiblingShare)?
            .shares
            .admit(parent_id, child_id, child_bps, parent_bps)
    }
}

impl ReceiptStore for SharedTrust {
    fn append(&mut self, receipt: &SignedReceipt) -> Result<(), StoreError> {
        let mut state = self.lock(StoreName::Receipt)?;
        state.receipts.append(receipt)?;
        state.log.push(receipt.clone());
        Ok(())
    }
}

impl LabelStore for SharedTrust {
    fn read(&self, key: &str) -> Result<BTreeSet<String>, StoreError> {
        self.lock(StoreName::Label)?.labels.read(key)
    }

    fn join(&mut self, key: &str, label: &str) -> Result<(), StoreError> {
        self.lock(StoreName::Label)?.labels.join(key, label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Two kernels' store sets see one revocation set and one share registry.
    #[test]
    fn kernels_share_authority_state() {
        let trust = SharedTrust::new();
        let mut a = trust.kernel_stores();
        let b = trust.kernel_stores();
        a.revocations.revoke("cap-1", 1).unwrap();
        assert!(b.revocations.is_revoked("cap-1").unwrap());
        let mut b = b;
        assert_eq!(
            a.shares.admit("p", "c1", 6000, 10000).unwrap(),
            ShareAdmission::Admitted
        );
        assert!(matches!(
            b.shares.admit("p", "c2", 6000, 10000).unwrap(),
            ShareAdmission::Oversubscribed { .. }
        ));
    }
}
