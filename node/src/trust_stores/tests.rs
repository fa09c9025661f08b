//! Tests of the adapter over an in-memory trust store: shared state across
//! kernels, run isolation, the issuer-refresh flag, and decision batches.

use super::*;
use chio_kernel::stores::{HoldOutcome, ShareAdmission};
use chio_trust::InMemoryTrustStore;

use crate::actors::IssuerSource;

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
    let (rt, binding) = binding("run-1");
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
    a.revocations.revoke("cap", 7).unwrap();
    assert!(b.revocations.is_revoked("cap").unwrap());
    // The kernel's revocation keeps its instant, as the node's does.
    let at = rt.block_on(binding.store.revoked_at(&binding.scoped("cap")));
    assert_eq!(at.unwrap(), Some(7));
    a.labels.join("session:s", "internal").unwrap();
    assert!(b.labels.read("session:s").unwrap().contains("internal"));
}

// Proves a run namespace isolates state: another run does not see the revocation.
#[test]
fn runs_do_not_see_each_other() {
    let (_rt, one) = binding("run-1");
    let two = TrustBinding::inline(one.store.clone(), "run-2");
    let (mut a, _) = one.kernel_stores();
    let (b, _) = two.kernel_stores();
    a.revocations.revoke("cap", 7).unwrap();
    assert!(!b.revocations.is_revoked("cap").unwrap());
}

// Proves a binding driven inline needs no runtime and shares the store's
// state with one driven by a runtime, and that a store that does not answer
// at once fails closed, naming the store, rather than blocking.
#[test]
fn an_inline_binding_answers_without_a_runtime_and_fails_closed_when_pending() {
    let (_rt, run) = binding("run-1");
    let inline = TrustBinding::inline(run.store.clone(), "run-1");
    let (mut a, _) = inline.kernel_stores();
    let (b, _) = run.kernel_stores();
    a.revocations.revoke("cap", 7).unwrap();
    assert!(b.revocations.is_revoked("cap").unwrap());
    assert!(a.revocations.is_revoked("cap").unwrap());
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
    let (stores, mut cache) = binding.kernel_stores();
    assert_eq!(cache.refresh(), Some(Vec::new()));
    assert_eq!(cache.refresh(), None, "a fresh set is cached");
    *cache.failure.lock().unwrap() = Some(StoreError::unavailable(
        StoreName::Revocation,
        "trust-control unavailable",
    ));
    let error = stores.revocations.is_revoked("cap").unwrap_err();
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
    let (refreshed, mut cache) = binding.kernel_stores();
    let (unrefreshed, _) = binding.kernel_stores();
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
        let after_refresh = refreshed.revocations.is_revoked("cap").unwrap_err();
        let without = unrefreshed.revocations.is_revoked("cap").unwrap_err();
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
        assert_eq!(refreshed.revocations.is_revoked("cap"), Ok(false));
    }
}
