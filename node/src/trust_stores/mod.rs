//! Kernel stores over trust-control: the kernel's synchronous batch store
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
//! own OS thread on a runtime handle (never a runtime worker), except in a
//! binding made with [`TrustBinding::inline`]: the direct dispatcher's, over
//! the in-memory store, whose every answer is ready at once, so a call is
//! polled once on the caller's thread with no runtime and no deadline.
//!
//! A kernel decision sends its store work as two batches
//! (`chio_kernel::batch`), each one `TrustStore::run_batch` call, so a
//! remote trust-control answers a decision in two round trips; the issuer
//! refresh adds one at most every [`ISSUER_CACHE_MAX_AGE`] per kernel.
//!
//! Module map: `adapter` (the kernel's decision batches over a
//! trust store), `issuers` ([`IssuerKeyCache`]); this module holds the
//! binding, [`bind_node`] and the authority's label and revocation moves.
//!
//! Every id written to trust-control is prefixed with the run's namespace,
//! so runs sharing one service never see each other's state. The rules the
//! stores apply are `chio_kernel::ledger`'s, the same the kernel's in-memory
//! stores apply, so every store gives the same outcomes.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chio_kernel::batch::StoreOp;
use chio_kernel::error::{StoreError, StoreName};
use chio_kernel::keys::public_key_hex;
use chio_kernel::label::{is_known_label, LabelCarry};
use chio_kernel::stores::KernelStores;
use chio_trust::model::{BatchOp, IssuerKey};
use chio_trust::{TrustError, TrustStore};
use tokio::runtime::Handle;

use crate::actors::IssuerSource;
use crate::error::NodeError;
use crate::link::LinkFuture;
use crate::node::{AuthorityControl, NodeActors};
use crate::outage::Outage;
use crate::world::World;

mod adapter;
mod issuers;
#[cfg(test)]
mod tests;

use adapter::{store_error, TrustBackedStore};
pub use issuers::IssuerKeyCache;

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

/// What drives a binding's store calls.
#[derive(Clone)]
enum Driver {
    /// A tokio runtime, each call bounded by its deadline.
    Runtime(Handle),
    /// The caller's thread: the store answers every call at once (the
    /// in-memory store, alone or behind simulated faults), so a call is
    /// polled once; one that is not ready fails closed.
    Inline,
}

/// One node's binding to a trust store: the store, what drives its
/// futures, the run namespace and the deadlines.
pub struct TrustBinding<S> {
    store: Arc<S>,
    driver: Driver,
    namespace: String,
    deadlines: StoreDeadlines,
}

impl<S> Clone for TrustBinding<S> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            driver: self.driver.clone(),
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
            driver: Driver::Runtime(handle),
            namespace: format!("{run_id}/"),
            deadlines,
        }
    }

    /// Binds `store`, which answers every call at once, for the run named
    /// `run_id`, its calls polled on the caller's thread (see the module doc).
    pub fn inline(store: Arc<S>, run_id: &str) -> Self {
        Self {
            store,
            driver: Driver::Inline,
            namespace: format!("{run_id}/"),
            deadlines: StoreDeadlines::default(),
        }
    }

    /// The bound store.
    pub fn store(&self) -> &S {
        &self.store
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
        let stores = KernelStores::new(adapter);
        let cache = IssuerKeyCache {
            binding: self.clone(),
            fetched_at: None,
            failure: issuer_failure,
        };
        (stores, cache)
    }

    /// Runs one store future bounded by `deadline`, leaving the failure
    /// unnamed so a batch can name each operation's own store: from a
    /// non-runtime thread on the bound runtime, or polled once inline.
    fn block_raw<T>(
        &self,
        deadline: Duration,
        future: impl Future<Output = Result<T, TrustError>>,
    ) -> Result<T, CallFailure> {
        let handle = match &self.driver {
            Driver::Runtime(handle) => handle,
            Driver::Inline => return poll_once(future)?.map_err(CallFailure::Store),
        };
        match handle.block_on(async { tokio::time::timeout(deadline, future).await }) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(CallFailure::Store(error)),
            Err(_) => Err(CallFailure::Deadline(deadline)),
        }
    }

    /// One authority-state call (a label move's read or join, a
    /// revocation), bounded by the call deadline when a runtime drives the
    /// binding; a failure names the operation, and one that could not reach
    /// trust-control is [`NodeError::ControlDown`] of its kind, the
    /// transport's detail only logged.
    async fn authority_call<T>(
        &self,
        operation: &'static str,
        future: impl Future<Output = Result<T, TrustError>>,
    ) -> Result<T, NodeError> {
        let deadline = self.deadlines.call;
        let answered = match self.driver {
            Driver::Runtime(_) => tokio::time::timeout(deadline, future).await,
            Driver::Inline => Ok(future.await),
        };
        match answered {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(source)) => Err(authority_error(operation, source)),
            Err(_) => {
                tracing::warn!(
                    operation,
                    deadline_ms = deadline.as_millis() as u64,
                    "trust-control call got no answer within its deadline"
                );
                Err(NodeError::ControlDown {
                    operation,
                    outage: Outage::DeadlineExceeded,
                })
            }
        }
    }
}

/// `future` polled once on this thread: its answer, or
/// [`CallFailure::Pending`] when a store bound inline did not answer at once.
fn poll_once<T>(future: impl Future<Output = T>) -> Result<T, CallFailure> {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(value) => Ok(value),
        std::task::Poll::Pending => Err(CallFailure::Pending),
    }
}

/// Why a call to trust-control got no answer.
#[derive(Debug, Clone)]
enum CallFailure {
    /// The store answered with an error.
    Store(TrustError),
    /// The deadline passed first.
    Deadline(Duration),
    /// A store bound inline did not answer at once.
    Pending,
}

impl CallFailure {
    /// The kernel's store error for `store`: an outage names its kind only
    /// (the deadline's length is logged), whatever missed it.
    fn named(&self, store: StoreName) -> StoreError {
        match self {
            CallFailure::Store(error) => store_error(store, error.clone()),
            CallFailure::Deadline(deadline) => {
                tracing::warn!(
                    store = %store,
                    deadline_ms = deadline.as_millis() as u64,
                    "trust-control call got no answer within its deadline"
                );
                StoreError::unavailable(store, Outage::DeadlineExceeded.trust_cause())
            }
            CallFailure::Pending => {
                StoreError::unavailable(store, "the in-process trust store did not answer at once")
            }
        }
    }

    /// The kind of outage, when trust-control could not be reached.
    fn outage(&self) -> Option<Outage> {
        match self {
            CallFailure::Store(error) => Outage::of_trust(error),
            CallFailure::Deadline(_) => Some(Outage::DeadlineExceeded),
            CallFailure::Pending => None,
        }
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
        let key = IssuerKey::parse_hex(&public_key_hex(&world.authority)).map_err(|source| {
            NodeError::AuthorityOperation {
                operation: "reading the arena authority's key",
                source,
            }
        })?;
        store
            .add_issuer_key(key)
            .await
            .map_err(NodeError::Authority)?;
    }
    let binding = TrustBinding::new(store, Handle::current(), run_id, deadlines);
    let actors = NodeActors::spawn_with_issuers(world, node, |_| {
        let (stores, cache) = binding.kernel_stores();
        let source: Box<dyn IssuerSource> = Box::new(cache);
        Ok((stores, Some(source)))
    })?;
    Ok((actors, TrustAuthority::new(binding)))
}

/// The error of authority operation `operation` that trust-control failed
/// with `source`.
fn authority_error(operation: &'static str, source: TrustError) -> NodeError {
    match Outage::of_trust(&source) {
        Some(outage) => {
            tracing::warn!(operation, error = %source, "trust-control call failed");
            NodeError::ControlDown { operation, outage }
        }
        None => NodeError::AuthorityOperation { operation, source },
    }
}

/// The authority operation a label move starts with: reading what the
/// sender holds (the first call that meets a trust-control outage).
pub(crate) const LABEL_READ: &str = "label store read";

/// The authority operation of a revocation.
pub(crate) const REVOCATION_WRITE: &str = "revocation store";

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
            let keys = carry.from_keys();
            let from: Vec<String> = keys.iter().map(|k| b.scoped(k)).collect();
            let mut read = b
                .authority_call(LABEL_READ, b.store.read_labels(from))
                .await?;
            // What each key holds, by the key as the carry names it.
            let read: BTreeMap<String, BTreeSet<String>> = keys
                .into_iter()
                .filter_map(|key| read.remove(&b.scoped(&key)).map(|set| (key, set)))
                .collect();
            let carried = carry.carried(&read).map_err(NodeError::MessageUnrecorded)?;
            if let Some(unknown) = carried.iter().find(|l| !is_known_label(l)) {
                return Err(NodeError::AuthorityAnswer(format!(
                    "label store: label {unknown:?} is not a known level; nothing was carried"
                )));
            }
            let into: Vec<String> = carry.into_keys().iter().map(|k| b.scoped(k)).collect();
            // Every join in one call; the batch stops at the first failure,
            // as joining one label after another would.
            let joins: Vec<BatchOp> = carried
                .iter()
                .map(|label| StoreOp::JoinLabels {
                    keys: into.clone(),
                    label: label.clone(),
                })
                .collect();
            if joins.is_empty() {
                return Ok(carried);
            }
            let wanted = joins.len();
            let answers = b
                .authority_call("label store join", b.store.run_batch(joins))
                .await?;
            for answer in &answers {
                if let Err(error) = answer {
                    return Err(authority_error("label store join", error.clone()));
                }
            }
            if answers.len() < wanted {
                return Err(NodeError::AuthorityAnswer(
                    "label store join: the batch ended before every label was joined".to_string(),
                ));
            }
            Ok(carried)
        })
    }

    fn revoke(&self, id: &str, at_ms: u64) -> LinkFuture<'_, ()> {
        let scoped = self.binding.scoped(id);
        Box::pin(async move {
            self.binding
                .authority_call(REVOCATION_WRITE, self.binding.store.revoke(&scoped, at_ms))
                .await
                .map(|_| ())
        })
    }
}
