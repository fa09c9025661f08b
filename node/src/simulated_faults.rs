//! Faults simulated in one process: what a crashed node, a cut link and a
//! stalled trust-control look like to actors sharing one process (the
//! embedded topology) and to the direct dispatcher's kernels.
//!
//! One [`FaultSwitch`] per run holds the faults in effect. A crashed node's
//! kernels and agents, reached over the in-memory link, and a partitioned
//! link fail as an unavailable link ([`SimulatedLink`]), as a refused or
//! dropped connection does between processes; a node cut from
//! trust-control gets a store call that fails as unavailable, and any node
//! while trust-control is stalled one that fails at its deadline
//! ([`SimulatedStore`] answers at once with the deadline error, so a test
//! never waits in wall time, and applies nothing). The nodes and kernels
//! then give their own fail-closed answers, the same as on real processes
//! (`crate::outage`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chio_arena::scenario::{FaultAction, FaultLink, TRUST_CONTROL};
use chio_kernel::request::ToolCallRequest;
use chio_kernel::token::CapabilityToken;
use chio_trust::model::{
    AppendSummary, BatchAnswers, BatchOp, HoldOutcome, HoldState, IssuerKey, LabelSets,
    ReceiptPage, ReceiptRecord, ReleaseOutcome, Revocation, ShareOutcome,
};
use chio_trust::{TrustError, TrustStore};

use crate::actors::CallOutcome;
use crate::error::NodeError;
use crate::executor::FaultEvent;
use crate::link::{InMemoryLink, KernelLink, LinkFuture};
use crate::outage::Outage;

/// The deadline a simulated stalled store call reports.
const SIMULATED_DEADLINE: Duration = Duration::from_millis(300);

#[derive(Debug, Default)]
struct Faults {
    down: BTreeSet<String>,
    cut: BTreeSet<FaultLink>,
    stalled: bool,
}

/// The faults in effect in one embedded run.
#[derive(Debug, Clone, Default)]
pub struct FaultSwitch {
    faults: Arc<Mutex<Faults>>,
}

impl FaultSwitch {
    fn with<T>(&self, f: impl FnOnce(&mut Faults) -> T) -> T {
        // A poisoned lock only means a panic elsewhere; the set is still whole.
        let mut faults = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut faults)
    }

    /// Applies a fault event.
    pub fn apply(&self, event: &FaultEvent) {
        self.with(|faults| match event {
            FaultEvent::EndStall => faults.stalled = false,
            FaultEvent::Begin(prepared) => match &prepared.fault {
                FaultAction::Crash { node } => {
                    faults.down.insert(node.clone());
                }
                FaultAction::Restart { node, .. } => {
                    faults.down.remove(node);
                }
                FaultAction::Partition { link } => {
                    faults.cut.insert(link.clone());
                }
                FaultAction::Heal { link } => {
                    faults.cut.remove(link);
                }
                FaultAction::Stall { .. } => faults.stalled = true,
                // A delay changes only when a kernel evaluates, which the
                // controller sets in the call itself.
                FaultAction::Delay { .. } => {}
            },
        });
    }

    /// `Err` when `node` is down.
    pub fn check_up(&self, node: &str) -> Result<(), NodeError> {
        if self.with(|f| f.down.contains(node)) {
            Err(NodeError::ActorGone(format!("node {node} (crashed)")))
        } else {
            Ok(())
        }
    }

    /// How a call from node `from` to node `to` fails, if it does: a
    /// crashed node refuses connections, a cut link drops them, so either
    /// is an unavailable link, as on real processes.
    pub fn path_outage(&self, from: &str, to: &str) -> Option<Outage> {
        self.with(|f| {
            let cut = from != to && f.cut.contains(&FaultLink::new(from, to));
            (f.down.contains(to) || cut).then_some(Outage::Unavailable)
        })
    }

    /// `Err` when `to` cannot be reached from `from`.
    fn check_path(&self, from: &str, to: &str) -> Result<(), NodeError> {
        match self.path_outage(from, to) {
            Some(outage) => Err(NodeError::LinkDown {
                node: to.to_string(),
                outage,
            }),
            None => Ok(()),
        }
    }

    /// How a store call from `node` fails, if it does: a stalled
    /// trust-control answers nothing until the call's deadline, a cut link
    /// refuses at once. When both hold, the cut wins, as on real processes:
    /// the call never reaches the stalled service, so it is refused before
    /// any deadline could pass.
    pub fn control_outage(&self, node: &str) -> Option<Outage> {
        self.with(|f| {
            if f.down.contains(node) || f.cut.contains(&FaultLink::new(node, TRUST_CONTROL)) {
                Some(Outage::Unavailable)
            } else if f.stalled {
                Some(Outage::DeadlineExceeded)
            } else {
                None
            }
        })
    }

    /// `Err` when `node` cannot reach trust-control, the error its client
    /// would meet.
    fn check_control(&self, node: &str, operation: &'static str) -> Result<(), TrustError> {
        match self.control_outage(node) {
            Some(Outage::DeadlineExceeded) => Err(TrustError::DeadlineExceeded {
                operation,
                deadline: SIMULATED_DEADLINE,
            }),
            Some(Outage::Unavailable) => Err(TrustError::Unavailable {
                detail: format!("{operation}: the link to trust-control is partitioned"),
            }),
            None => Ok(()),
        }
    }
}

/// One node's view of the in-memory link: what a cut or crash refuses.
#[derive(Debug, Clone)]
pub struct SimulatedLink {
    /// The node using the link.
    pub from: String,
    /// The shared in-memory link.
    pub inner: Arc<InMemoryLink>,
    /// The node hosting each kernel.
    pub kernel_nodes: BTreeMap<String, String>,
    /// The node hosting each agent.
    pub agent_nodes: BTreeMap<String, String>,
    /// The faults in effect.
    pub switch: FaultSwitch,
}

impl SimulatedLink {
    fn path(&self, table: &BTreeMap<String, String>, id: &str) -> Result<(), NodeError> {
        match table.get(id) {
            Some(node) => self.switch.check_path(&self.from, node),
            None => Ok(()),
        }
    }
}

impl KernelLink for SimulatedLink {
    fn evaluate(
        &self,
        kernel_id: &str,
        request: ToolCallRequest,
        now_ms: u64,
    ) -> LinkFuture<'_, CallOutcome> {
        if let Err(e) = self.path(&self.kernel_nodes, kernel_id) {
            return Box::pin(async move { Err(e) });
        }
        self.inner.evaluate(kernel_id, request, now_ms)
    }

    fn hand_over(&self, agent_id: &str, token: CapabilityToken) -> LinkFuture<'_, ()> {
        if let Err(e) = self.path(&self.agent_nodes, agent_id) {
            return Box::pin(async move { Err(e) });
        }
        self.inner.hand_over(agent_id, token)
    }
}

/// One node's trust store in the embedded topology: the shared store, unless
/// a fault cuts the node from it.
pub struct SimulatedStore<S> {
    /// The node whose kernels use this store.
    pub node: String,
    /// The shared store.
    pub inner: Arc<S>,
    /// The faults in effect.
    pub switch: FaultSwitch,
}

impl<S: TrustStore> TrustStore for SimulatedStore<S> {
    async fn add_issuer_key(&self, key: IssuerKey) -> Result<bool, TrustError> {
        self.switch.check_control(&self.node, "add_issuer_key")?;
        self.inner.add_issuer_key(key).await
    }
    async fn list_issuer_keys(&self) -> Result<Vec<IssuerKey>, TrustError> {
        self.switch.check_control(&self.node, "list_issuer_keys")?;
        self.inner.list_issuer_keys().await
    }
    async fn revoke(&self, id: &str, at_ms: u64) -> Result<Revocation, TrustError> {
        self.switch.check_control(&self.node, "revoke")?;
        self.inner.revoke(id, at_ms).await
    }
    async fn revoked_at(&self, id: &str) -> Result<Option<u64>, TrustError> {
        self.switch.check_control(&self.node, "is_revoked")?;
        self.inner.revoked_at(id).await
    }
    async fn hold_budget(
        &self,
        hold_id: &str,
        budget_key: &str,
        amount: u64,
        limit: u64,
    ) -> Result<HoldOutcome, TrustError> {
        self.switch.check_control(&self.node, "hold_budget")?;
        self.inner
            .hold_budget(hold_id, budget_key, amount, limit)
            .await
    }
    async fn commit_budget(&self, hold_id: &str) -> Result<HoldState, TrustError> {
        self.switch.check_control(&self.node, "commit_budget")?;
        self.inner.commit_budget(hold_id).await
    }
    async fn release_budget(&self, hold_id: &str) -> Result<ReleaseOutcome, TrustError> {
        self.switch.check_control(&self.node, "release_budget")?;
        self.inner.release_budget(hold_id).await
    }
    async fn admit_share(
        &self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> Result<ShareOutcome, TrustError> {
        self.switch.check_control(&self.node, "admit_share")?;
        self.inner
            .admit_share(parent_id, child_id, child_bps, parent_bps)
            .await
    }
    async fn record_request(&self, request_key: &str) -> Result<bool, TrustError> {
        self.switch.check_control(&self.node, "record_request")?;
        self.inner.record_request(request_key).await
    }
    async fn append_receipts(
        &self,
        receipts: Vec<ReceiptRecord>,
    ) -> Result<AppendSummary, TrustError> {
        self.switch.check_control(&self.node, "append_receipts")?;
        self.inner.append_receipts(receipts).await
    }
    async fn list_receipts(&self, after_seq: u64, limit: u32) -> Result<ReceiptPage, TrustError> {
        self.switch.check_control(&self.node, "list_receipts")?;
        self.inner.list_receipts(after_seq, limit).await
    }
    async fn count_receipts(&self) -> Result<u64, TrustError> {
        self.switch.check_control(&self.node, "count_receipts")?;
        self.inner.count_receipts().await
    }
    async fn read_labels(&self, keys: Vec<String>) -> Result<LabelSets, TrustError> {
        self.switch.check_control(&self.node, "read_labels")?;
        self.inner.read_labels(keys).await
    }
    async fn join_labels(&self, keys: Vec<String>, label: &str) -> Result<LabelSets, TrustError> {
        self.switch.check_control(&self.node, "join_labels")?;
        self.inner.join_labels(keys, label).await
    }
    async fn run_batch(&self, ops: Vec<BatchOp>) -> Result<BatchAnswers, TrustError> {
        self.switch.check_control(&self.node, "batch")?;
        self.inner.run_batch(ops).await
    }
}
