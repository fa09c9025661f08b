//! Tests of the adapter over an in-memory trust store: shared state across
//! kernels, run isolation, the issuer-refresh flag, and decision batches.

use super::*;
use chio_kernel::batch::OpAnswer;
use chio_kernel::stores::{HoldOutcome, ShareAdmission};
use chio_trust::InMemoryTrustStore;

use crate::actors::IssuerSource;

/// Revokes `id` in `binding`'s namespace as the authority does, polled
/// inline (the in-memory store answers at once).
fn revoke_inline(binding: &TrustBinding<InMemoryTrustStore>, id: &str) {
    let revoked = poll_once(binding.store.revoke(&binding.scoped(id), 7));
    assert!(matches!(revoked, Ok(Ok(_))), "the revocation is recorded");
}

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

/// One operation as a batch of one, through `stores`.
fn one(stores: &mut KernelStores, op: StoreOp) -> Result<OpAnswer, StoreError> {
    stores.run_batch(vec![op]).pop().expect("one answer")
}

/// Whether `stores` see `id` revoked.
fn revoked(stores: &mut KernelStores, id: &str) -> Result<bool, StoreError> {
    one(stores, StoreOp::IsRevoked { id: id.into() }).map(|a| a == OpAnswer::Revoked(true))
}

fn hold(hold_id: &str, amount: u64, limit: u64) -> StoreOp {
    StoreOp::Hold {
        hold_id: hold_id.into(),
        key: "k".into(),
        amount,
        limit,
    }
}

fn share(child_id: &str, child_bps: u32) -> StoreOp {
    StoreOp::AdmitShare {
        parent_id: "p".into(),
        child_id: child_id.into(),
        child_bps,
        parent_bps: 10_000,
    }
}

// Proves two kernels' adapters see one share registry and one budget, with the reference arithmetic.
#[test]
fn adapters_share_state_with_reference_arithmetic() {
    let (rt, binding) = binding("run-1");
    let (mut a, _) = binding.kernel_stores();
    let (mut b, _) = binding.kernel_stores();
    assert_eq!(
        one(&mut a, share("c1", 6000)),
        Ok(OpAnswer::Share(ShareAdmission::Admitted))
    );
    assert_eq!(
        one(&mut b, share("c2", 6000)),
        Ok(OpAnswer::Share(ShareAdmission::Oversubscribed {
            siblings_bps: 6000,
            parent_bps: 10000
        }))
    );
    assert_eq!(
        one(&mut a, hold("h1", 1, 1)),
        Ok(OpAnswer::Hold(HoldOutcome::Granted { used: 1, limit: 1 }))
    );
    assert_eq!(
        one(&mut b, hold("h2", 1, 1)),
        Ok(OpAnswer::Hold(HoldOutcome::Refused { used: 1, limit: 1 }))
    );
    let commit = StoreOp::Commit {
        hold_id: "h1".into(),
    };
    assert_eq!(one(&mut a, commit), Ok(OpAnswer::Done));
    let release = StoreOp::Release {
        hold_id: "h1".into(),
    };
    assert!(
        one(&mut a, release).is_err(),
        "a committed hold is permanent"
    );
    let replay = one(&mut b, hold("h1", 1, 1)).unwrap_err().to_string();
    assert!(replay.contains("request replayed"), "{replay}");
    let seen = || StoreOp::RecordRequest {
        key: "root/alice/r1".into(),
    };
    assert_eq!(one(&mut a, seen()), Ok(OpAnswer::Fresh(true)));
    assert_eq!(
        one(&mut b, seen()),
        Ok(OpAnswer::Fresh(false)),
        "a request id seen by one kernel is seen by every kernel"
    );
    rt.block_on(binding.store.revoke(&binding.scoped("cap"), 7))
        .unwrap();
    assert!(revoked(&mut b, "cap").unwrap());
    let join = StoreOp::JoinLabels {
        keys: vec!["session:s".into()],
        label: "internal".into(),
    };
    assert_eq!(one(&mut a, join), Ok(OpAnswer::Done));
    let read = StoreOp::ReadLabels {
        keys: vec!["session:s".into()],
        stop_unless_empty: false,
    };
    let Ok(OpAnswer::Labels(sets)) = one(&mut b, read) else {
        panic!("a label read answers labels");
    };
    assert!(sets["session:s"].contains("internal"), "{sets:?}");
}

// Proves a run namespace isolates state: another run does not see the revocation.
#[test]
fn runs_do_not_see_each_other() {
    let (_rt, one) = binding("run-1");
    let two = TrustBinding::inline(one.store.clone(), "run-2");
    let (mut b, _) = two.kernel_stores();
    revoke_inline(&one, "cap");
    assert!(!revoked(&mut b, "cap").unwrap());
}

// Proves a binding driven inline needs no runtime and shares the store's
// state with one driven by a runtime, and that a store that does not answer
// at once fails closed, naming the store, rather than blocking.
#[test]
fn an_inline_binding_answers_without_a_runtime_and_fails_closed_when_pending() {
    let (_rt, run) = binding("run-1");
    let inline = TrustBinding::inline(run.store.clone(), "run-1");
    let (mut a, _) = inline.kernel_stores();
    let (mut b, _) = run.kernel_stores();
    revoke_inline(&inline, "cap");
    assert!(revoked(&mut b, "cap").unwrap());
    assert!(revoked(&mut a, "cap").unwrap());
    let pending = match poll_once(std::future::pending::<()>()) {
        Err(failure) => failure,
        Ok(()) => panic!("a pending future has no answer"),
    };
    let error = pending.named(StoreName::Budget).to_string();
    assert!(error.starts_with("budget store unavailable"), "{error}");
    assert!(pending.outage().is_none(), "not an outage of trust-control");
}

// Proves a failed issuer refresh keeps no allow possible: every revocation lookup then fails, naming the store.
#[test]
fn failed_issuer_refresh_fails_revocation_lookups() {
    let (_rt, binding) = binding("run-1");
    let (mut stores, mut cache) = binding.kernel_stores();
    assert_eq!(cache.refresh(), Some(Vec::new()));
    assert_eq!(cache.refresh(), None, "a fresh set is cached");
    *cache.failure.lock().unwrap() = Some(StoreError::unavailable(
        StoreName::Revocation,
        "trust-control unavailable",
    ));
    let error = revoked(&mut stores, "cap").unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("revocation store unavailable"),
        "{error}"
    );
}

// Proves a kernel cut from trust-control denies with the same reason whether or not an issuer refresh fell due during the outage (which depends on wall time), naming only the kind of outage.
#[test]
fn an_outage_reads_the_same_with_or_without_an_issuer_refresh() {
    use chio_arena::scenario::{FaultAction, FaultLink, TRUST_CONTROL};

    use crate::executor::{FaultEvent, PreparedFault};
    use crate::simulated_faults::{FaultSwitch, SimulatedStore};

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let switch = FaultSwitch::default();
    let store = SimulatedStore {
        node: "node-a".to_string(),
        inner: Arc::new(InMemoryTrustStore::new()),
        switch: switch.clone(),
    };
    let binding = TrustBinding::new(
        Arc::new(store),
        runtime.handle().clone(),
        "run-1",
        StoreDeadlines::default(),
    );
    let (mut refreshed, mut cache) = binding.kernel_stores();
    let (mut unrefreshed, _) = binding.kernel_stores();
    for (fault, kind) in [
        (
            FaultAction::Partition {
                link: FaultLink::new("node-a", TRUST_CONTROL),
            },
            "trust-control unavailable",
        ),
        (
            FaultAction::Stall { duration_ms: 10 },
            "trust-control deadline exceeded",
        ),
    ] {
        switch.apply(&FaultEvent::Begin(PreparedFault {
            fault,
            restore: Vec::new(),
            lost: Vec::new(),
            at_ms: 0,
        }));
        // The refresh falls due during the outage.
        cache.fetched_at = None;
        assert_eq!(cache.refresh(), None, "a refresh reached a cut-off store");
        let after_refresh = revoked(&mut refreshed, "cap").unwrap_err();
        let without = revoked(&mut unrefreshed, "cap").unwrap_err();
        assert_eq!(after_refresh, without);
        assert_eq!(
            without.to_string(),
            format!("revocation store unavailable: {kind}")
        );
        switch.apply(&FaultEvent::Begin(PreparedFault {
            fault: FaultAction::Heal {
                link: FaultLink::new("node-a", TRUST_CONTROL),
            },
            restore: Vec::new(),
            lost: Vec::new(),
            at_ms: 0,
        }));
        switch.apply(&FaultEvent::EndStall);
        assert!(
            cache.refresh().is_some(),
            "the refresh after the outage failed"
        );
        assert_eq!(revoked(&mut refreshed, "cap"), Ok(false));
    }
}
