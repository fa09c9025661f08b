//! Kernel stores over trust-control: the kernel's synchronous store traits
//! implemented by blocking on a [`TrustStore`] (the remote `TrustClient`, or
//! a local `SqliteTrustStore` for a node started with `--state-dir`).
//!
//! What lives where: revocations, budget holds, sibling shares, seen request
//! ids, the receipt log and retained labels are trust-control's, so kernels
//! on different nodes see one state and a restarted node forgets nothing a
//! verdict depends on; the session journal stays in the node's memory (it
//! belongs to the sessions a node serves). The embedded topology binds the
//! same adapter to an in-memory trust store ([`bind_node`]), so embedded and
//! distributed runs differ only by transport.
//!
//! Freshness contracts (`docs/topology.md`), fail-closed:
//! - revocation is looked up per id on every call, never cached;
//! - trusted issuer keys are cached at most [`ISSUER_CACHE_MAX_AGE`] by
//!   [`IssuerKeyCache`]; when a refresh fails the kernel keeps its previous
//!   set but every revocation lookup fails, naming the issuer refresh, until
//!   a refresh succeeds, so no allow ever rests on keys older than the bound;
//! - a budget hold that gets no answer is an error, so the kernel denies;
//! - a receipt append is bounded by a deadline (5,000 ms by default,
//!   configurable) and its miss is an error, so no allow is released.
//!
//! Every failure is a `StoreError` naming the store, which the kernel turns
//! into a deny whose reason starts with that name. Calls block the kernel's
//! own OS thread on a runtime handle (never a runtime worker).
//!
//! Every id written to trust-control is prefixed with the run's namespace,
//! so runs sharing one service never see each other's state. The rules the
//! stores apply are `chio_kernel::ledger`'s, the same the kernel's in-memory
//! stores apply, so every store gives the same outcomes.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chio_kernel::canonical::to_canonical_vec;
use chio_kernel::error::{StoreError, StoreName};
use chio_kernel::keys::public_key_hex;
use chio_kernel::label::{is_known_label, LabelCarry};
use chio_kernel::receipt::SignedReceipt;
use chio_kernel::stores::{
    BudgetStore, HoldOutcome, InMemoryJournal, KernelStores, LabelStore, NonceStore, ReceiptStore,
    RevocationStore, ShareAdmission, SiblingShareStore,
};
use chio_trust::model::{IssuerKey, ReceiptRecord, ShareOutcome};
use chio_trust::{TrustError, TrustStore};
use tokio::runtime::Handle;

use crate::actors::IssuerSource;
use crate::error::NodeError;
use crate::link::LinkFuture;
use crate::node::{AuthorityControl, NodeActors};
use crate::world::World;

/// Longest time a fetched issuer key set is trusted without a new fetch.
pub const ISSUER_CACHE_MAX_AGE: Duration = Duration::from_secs(2);
/// Default deadline of a receipt append; its miss means no allow.
pub const DEFAULT_RECEIPT_DEADLINE: Duration = Duration::from_millis(5_000);
/// Default deadline of every other store call.
pub const DEFAULT_STORE_DEADLINE: Duration = Duration::from_millis(2_000);

/// How long the kernel waits on trust-control before denying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreDeadlines {
    /// Deadline of revocation, budget, share and label calls.
    pub call: Duration,
    /// Deadline of a receipt append.
    pub receipt: Duration,
}

impl Default for StoreDeadlines {
    fn default() -> Self {
        Self {
            call: DEFAULT_STORE_DEADLINE,
            receipt: DEFAULT_RECEIPT_DEADLINE,
        }
    }
}

/// One node's binding to a trust store: the store, the runtime that drives
/// its futures, the run namespace and the deadlines.
pub struct TrustBinding<S> {
    store: Arc<S>,
    handle: Handle,
    namespace: String,
    deadlines: StoreDeadlines,
}

impl<S> Clone for TrustBinding<S> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            handle: self.handle.clone(),
            namespace: self.namespace.clone(),
            deadlines: self.deadlines,
        }
    }
}

impl<S> std::fmt::Debug for TrustBinding<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrustBinding")
            .field("namespace", &self.namespace)
            .field("deadlines", &self.deadlines)
            .finish_non_exhaustive()
    }
}

impl<S: TrustStore> TrustBinding<S> {
    /// Binds `store` for the run named `run_id`; `handle` drives the calls.
    pub fn new(store: Arc<S>, handle: Handle, run_id: &str, deadlines: StoreDeadlines) -> Self {
        Self {
            store,
            handle,
            namespace: format!("{run_id}/"),
            deadlines,
        }
    }

    /// The run-scoped name of an id in trust-control.
    pub fn scoped(&self, id: &str) -> String {
        format!("{}{id}", self.namespace)
    }

    /// Stores for one kernel and the issuer-key cache that must accompany
    /// them (it shares the revocation store's failure flag).
    pub fn kernel_stores(&self) -> (KernelStores, IssuerKeyCache<S>) {
        let issuer_failure = Arc::new(Mutex::new(None));
        let adapter = TrustBackedStore {
            binding: self.clone(),
            issuer_failure: issuer_failure.clone(),
        };
        let stores = KernelStores {
            revocations: Box::new(adapter.clone()),
            budgets: Box::new(adapter.clone()),
            shares: Box::new(adapter.clone()),
            receipts: Box::new(adapter.clone()),
            journal: Box::new(InMemoryJournal::default()),
            labels: Box::new(adapter.clone()),
            nonces: Box::new(adapter),
        };
        let cache = IssuerKeyCache {
            binding: self.clone(),
            fetched_at: None,
            failure: issuer_failure,
        };
        (stores, cache)
    }

    /// Runs one store future on the bound runtime from a non-runtime thread,
    /// bounded by `deadline`; every failure names `store`.
    fn block<T>(
        &self,
        store: StoreName,
        deadline: Duration,
        future: impl Future<Output = Result<T, TrustError>>,
    ) -> Result<T, StoreError> {
        match self
            .handle
            .block_on(async { tokio::time::timeout(deadline, future).await })
        {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(store_error(store, error)),
            Err(_) => Err(StoreError::unavailable(
                store,
                format!(
                    "trust-control deadline exceeded: no answer within {} ms",
                    deadline.as_millis()
                ),
            )),
        }
    }
}

/// Maps a trust-control failure to the kernel's store error: transport and
/// storage failures are `Unavailable`, refusals are `Refused`.
fn store_error(store: StoreName, error: TrustError) -> StoreError {
    match error {
        TrustError::Unavailable { .. }
        | TrustError::DeadlineExceeded { .. }
        | TrustError::StoreClosed
        | TrustError::Storage { .. }
        | TrustError::Io { .. }
        | TrustError::Unauthenticated
        | TrustError::MalformedAnswer { .. } => StoreError::unavailable(store, error.to_string()),
        other => StoreError::Refused {
            store,
            detail: other.to_string(),
        },
    }
}

/// The kernel-side adapter: one value implements every shared store trait.
struct TrustBackedStore<S> {
    binding: TrustBinding<S>,
    /// Set while trusted issuer keys cannot be refreshed; see the module doc.
    issuer_failure: Arc<Mutex<Option<String>>>,
}

impl<S> Clone for TrustBackedStore<S> {
    fn clone(&self) -> Self {
        Self {
            binding: self.binding.clone(),
            issuer_failure: self.issuer_failure.clone(),
        }
    }
}

impl<S: TrustStore> RevocationStore for TrustBackedStore<S> {
    fn is_revoked(&self, id: &str) -> Result<bool, StoreError> {
        let failure = self
            .issuer_failure
            .lock()
            .map_err(|_| StoreError::unavailable(StoreName::Revocation, "issuer state poisoned"))?
            .clone();
        if let Some(cause) = failure {
            return Err(StoreError::unavailable(
                StoreName::Revocation,
                format!("trusted issuer keys could not be refreshed: {cause}"),
            ));
        }
        let b = &self.binding;
        let scoped = b.scoped(id);
        b.block(
            StoreName::Revocation,
            b.deadlines.call,
            b.store.revoked_at(&scoped),
        )
        .map(|at| at.is_some())
    }

    fn revoke(&mut self, id: &str) -> Result<(), StoreError> {
        let b = &self.binding;
        let scoped = b.scoped(id);
        b.block(
            StoreName::Revocation,
            b.deadlines.call,
            b.store.revoke(&scoped, 0),
        )
        .map(|_| ())
    }
}

impl<S: TrustStore> BudgetStore for TrustBackedStore<S> {
    fn hold(
        &mut self,
        hold_id: &str,
        key: &str,
        amount: u64,
        limit: u64,
    ) -> Result<HoldOutcome, StoreError> {
        let b = &self.binding;
        let (hold_id, key) = (b.scoped(hold_id), b.scoped(key));
        b.block(
            StoreName::Budget,
            b.deadlines.call,
            b.store.hold_budget(&hold_id, &key, amount, limit),
        )
    }

    fn commit(&mut self, hold_id: &str) -> Result<(), StoreError> {
        let b = &self.binding;
        let hold_id = b.scoped(hold_id);
        b.block(
            StoreName::Budget,
            b.deadlines.call,
            b.store.commit_budget(&hold_id),
        )
        .map(|_| ())
    }

    fn release(&mut self, hold_id: &str) -> Result<(), StoreError> {
        let b = &self.binding;
        let hold_id = b.scoped(hold_id);
        b.block(
            StoreName::Budget,
            b.deadlines.call,
            b.store.release_budget(&hold_id),
        )
        .map(|_| ())
    }
}

impl<S: TrustStore> NonceStore for TrustBackedStore<S> {
    fn check_and_record(&mut self, request_key: &str) -> Result<bool, StoreError> {
        let b = &self.binding;
        let scoped = b.scoped(request_key);
        b.block(
            StoreName::Nonce,
            b.deadlines.call,
            b.store.record_request(&scoped),
        )
    }
}

impl<S: TrustStore> SiblingShareStore for TrustBackedStore<S> {
    fn admit(
        &mut self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> Result<ShareAdmission, StoreError> {
        let b = &self.binding;
        let (parent, child) = (b.scoped(parent_id), b.scoped(child_id));
        let outcome = b.block(
            StoreName::SiblingShare,
            b.deadlines.call,
            b.store.admit_share(&parent, &child, child_bps, parent_bps),
        )?;
        Ok(match outcome {
            ShareOutcome::Admitted { .. } => ShareAdmission::Admitted,
            ShareOutcome::Refused {
                sibling_sum_bps,
                parent_bps,
            } => ShareAdmission::Oversubscribed {
                siblings_bps: sibling_sum_bps,
                parent_bps,
            },
        })
    }
}

impl<S: TrustStore> ReceiptStore for TrustBackedStore<S> {
    fn append(&mut self, receipt: &SignedReceipt) -> Result<(), StoreError> {
        let body = to_canonical_vec(receipt).map_err(|e| StoreError::Refused {
            store: StoreName::Receipt,
            detail: format!("receipt has no canonical form: {e}"),
        })?;
        let record = ReceiptRecord {
            receipt_id: receipt.id.clone(),
            body,
        };
        let b = &self.binding;
        b.block(
            StoreName::Receipt,
            b.deadlines.receipt,
            b.store.append_receipts(vec![record]),
        )
        .map(|_| ())
    }
}

impl<S: TrustStore> LabelStore for TrustBackedStore<S> {
    fn read(&self, key: &str) -> Result<BTreeSet<String>, StoreError> {
        let b = &self.binding;
        let scoped = b.scoped(key);
        let mut sets = b.block(
            StoreName::Label,
            b.deadlines.call,
            b.store.read_labels(vec![scoped.clone()]),
        )?;
        Ok(sets.remove(&scoped).unwrap_or_default())
    }

    fn join(&mut self, key: &str, label: &str) -> Result<(), StoreError> {
        let b = &self.binding;
        let scoped = b.scoped(key);
        b.block(
            StoreName::Label,
            b.deadlines.call,
            b.store.join_labels(vec![scoped], label),
        )
        .map(|_| ())
    }
}

/// A kernel's view of trust-control's issuer keys, fetched at most every
/// [`ISSUER_CACHE_MAX_AGE`]; owned by the kernel's thread.
pub struct IssuerKeyCache<S> {
    binding: TrustBinding<S>,
    fetched_at: Option<Instant>,
    failure: Arc<Mutex<Option<String>>>,
}

impl<S: TrustStore> IssuerSource for IssuerKeyCache<S> {
    fn refresh(&mut self) -> Option<Vec<String>> {
        if self
            .fetched_at
            .is_some_and(|at| at.elapsed() < ISSUER_CACHE_MAX_AGE)
        {
            return None;
        }
        let b = &self.binding;
        let fetched = b.block(
            StoreName::Revocation,
            b.deadlines.call,
            b.store.list_issuer_keys(),
        );
        let (keys, failure) = match fetched {
            Ok(keys) => {
                self.fetched_at = Some(Instant::now());
                (Some(keys.iter().map(|k| k.to_hex()).collect()), None)
            }
            Err(error) => {
                self.fetched_at = None;
                (None, Some(error.to_string()))
            }
        };
        if let Ok(mut flag) = self.failure.lock() {
            *flag = failure;
        }
        keys
    }
}

/// Spawns `node`'s actors over `store`, the one way every topology binds
/// kernels to trust state: the embedded topology passes an in-memory trust
/// store, a node process a SQLite store or a trust-control client. When
/// `register_authority` is set the world's authority key is trusted in the
/// store first (a private store has no operator to do it).
pub async fn bind_node<S: TrustStore>(
    store: Arc<S>,
    world: &World,
    node: &str,
    run_id: &str,
    deadlines: StoreDeadlines,
    register_authority: bool,
) -> Result<(NodeActors, TrustAuthority<S>), NodeError> {
    if register_authority {
        let key = IssuerKey::parse_hex(&public_key_hex(&world.authority))
            .map_err(|e| NodeError::Kernel(e.to_string()))?;
        store
            .add_issuer_key(key)
            .await
            .map_err(|e| NodeError::Authority(e.to_string()))?;
    }
    let binding = TrustBinding::new(store, Handle::current(), run_id, deadlines);
    let actors = NodeActors::spawn_with_issuers(world, node, |_| {
        let (stores, cache) = binding.kernel_stores();
        let source: Box<dyn IssuerSource> = Box::new(cache);
        Ok((stores, Some(source)))
    })?;
    Ok((actors, TrustAuthority::new(binding)))
}

/// One label-store call of a label move, bounded by `deadline`; a failure
/// names the store and the operation.
async fn label_call<T>(
    deadline: Duration,
    what: &str,
    future: impl Future<Output = Result<T, TrustError>>,
) -> Result<T, NodeError> {
    match tokio::time::timeout(deadline, future).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(NodeError::Authority(format!("label store {what}: {error}"))),
        Err(_) => Err(NodeError::Authority(format!(
            "label store {what}: trust-control deadline exceeded"
        ))),
    }
}

/// Revocation and label moves on behalf of the authority, through
/// trust-control.
pub struct TrustAuthority<S> {
    binding: TrustBinding<S>,
}

impl<S: TrustStore> TrustAuthority<S> {
    /// Revokes through `binding`'s store in its run namespace.
    pub fn new(binding: TrustBinding<S>) -> Self {
        Self { binding }
    }
}

impl<S: TrustStore> AuthorityControl for TrustAuthority<S> {
    fn carry_labels(&self, carry: LabelCarry) -> LinkFuture<'_, BTreeSet<String>> {
        Box::pin(async move {
            let b = &self.binding;
            let from: Vec<String> = carry.from_keys().iter().map(|k| b.scoped(k)).collect();
            let read = label_call(b.deadlines.call, "read", b.store.read_labels(from)).await?;
            let carried = carry.carried(read.into_values().flatten());
            if let Some(unknown) = carried.iter().find(|l| !is_known_label(l)) {
                return Err(NodeError::Authority(format!(
                    "label store: label {unknown:?} is not a known level; nothing was carried"
                )));
            }
            let into: Vec<String> = carry.into_keys().iter().map(|k| b.scoped(k)).collect();
            for label in &carried {
                label_call(
                    b.deadlines.call,
                    "join",
                    b.store.join_labels(into.clone(), label),
                )
                .await?;
            }
            Ok(carried)
        })
    }

    fn revoke(&self, id: &str, at_ms: u64) -> LinkFuture<'_, ()> {
        let scoped = self.binding.scoped(id);
        Box::pin(async move {
            match tokio::time::timeout(
                self.binding.deadlines.call,
                self.binding.store.revoke(&scoped, at_ms),
            )
            .await
            {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(error)) => Err(NodeError::Authority(format!("revocation store: {error}"))),
                Err(_) => Err(NodeError::Authority(
                    "revocation store: trust-control deadline exceeded on revoke".to_string(),
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chio_trust::InMemoryTrustStore;

    fn binding(run: &str) -> (tokio::runtime::Runtime, TrustBinding<InMemoryTrustStore>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let binding = TrustBinding::new(
            Arc::new(InMemoryTrustStore::new()),
            runtime.handle().clone(),
            run,
            StoreDeadlines::default(),
        );
        (runtime, binding)
    }

    // Proves two kernels' adapters see one share registry and one budget, with the reference arithmetic.
    #[test]
    fn adapters_share_state_with_reference_arithmetic() {
        let (_rt, binding) = binding("run-1");
        let (mut a, _) = binding.kernel_stores();
        let (mut b, _) = binding.kernel_stores();
        assert_eq!(
            a.shares.admit("p", "c1", 6000, 10000).unwrap(),
            ShareAdmission::Admitted
        );
        assert_eq!(
            b.shares.admit("p", "c2", 6000, 10000).unwrap(),
            ShareAdmission::Oversubscribed {
                siblings_bps: 6000,
                parent_bps: 10000
            }
        );
        assert_eq!(
            a.budgets.hold("h1", "k", 1, 1).unwrap(),
            HoldOutcome::Granted { used: 1, limit: 1 }
        );
        assert_eq!(
            b.budgets.hold("h2", "k", 1, 1).unwrap(),
            HoldOutcome::Refused { used: 1, limit: 1 }
        );
        a.budgets.commit("h1").unwrap();
        assert!(
            a.budgets.release("h1").is_err(),
            "a committed hold is permanent"
        );
        let replay = b.budgets.hold("h1", "k", 1, 1).unwrap_err().to_string();
        assert!(replay.contains("request replayed"), "{replay}");
        assert!(a.nonces.check_and_record("root/alice/r1").unwrap());
        assert!(
            !b.nonces.check_and_record("root/alice/r1").unwrap(),
            "a request id seen by one kernel is seen by every kernel"
        );
        a.revocations.revoke("cap").unwrap();
        assert!(b.revocations.is_revoked("cap").unwrap());
        a.labels.join("session:s", "internal").unwrap();
        assert!(b.labels.read("session:s").unwrap().contains("internal"));
    }

    // Proves a run namespace isolates state: another run does not see the revocation.
    #[test]
    fn runs_do_not_see_each_other() {
        let (_rt, one) = binding("run-1");
        let two = TrustBinding::new(
            one.store.clone(),
            one.handle.clone(),
            "run-2",
            StoreDeadlines::default(),
        );
        let (mut a, _) = one.kernel_stores();
        let (b, _) = two.kernel_stores();
        a.revocations.revoke("cap").unwrap();
        assert!(!b.revocations.is_revoked("cap").unwrap());
    }

    // Proves a failed issuer refresh keeps no allow possible: every revocation lookup then fails, naming the store.
    #[test]
    fn failed_issuer_refresh_fails_revocation_lookups() {
        let (_rt, binding) = binding("run-1");
        let (stores, mut cache) = binding.kernel_stores();
        assert_eq!(cache.refresh(), Some(Vec::new()));
        assert_eq!(cache.refresh(), None, "a fresh set is cached");
        *cache.failure.lock().unwrap() = Some("trust-control unavailable: test".into());
        let error = stores.revocations.is_revoked("cap").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("revocation store unavailable"),
            "{error}"
        );
    }
}
