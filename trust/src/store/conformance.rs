//! The behaviour every `TrustStore` must show, written once and run against
//! each implementation (in-memory, SQLite, and the gRPC client over the
//! service) through [`conformance_suite!`].
//!
//! Each check takes a fresh, empty store. Error checks match on the message
//! rather than the variant, because the gRPC client carries the service's
//! message, not its variant.

use std::collections::BTreeSet;

use chio_kernel::batch::StoreOp;
use chio_kernel::stores::ShareAdmission;

use crate::model::{
    BatchOp, HoldOutcome, HoldState, IssuerKey, OpAnswer, ReceiptRecord, ReleaseOutcome,
    ShareOutcome,
};
use crate::store::TrustStore;

fn key(seed: u8) -> IssuerKey {
    let signing = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
    IssuerKey::parse_hex(&hex::encode(signing.verifying_key().as_bytes())).expect("valid key")
}

fn receipt(id: &str, body: &str) -> ReceiptRecord {
    ReceiptRecord {
        receipt_id: id.to_owned(),
        body: body.as_bytes().to_vec(),
    }
}

fn expect_error<T: std::fmt::Debug>(result: Result<T, crate::TrustError>, needle: &str) {
    match result {
        Ok(value) => panic!("expected an error containing {needle:?}, got Ok({value:?})"),
        Err(error) => assert!(
            error.to_string().contains(needle),
            "error {error} does not contain {needle:?}"
        ),
    }
}

pub(crate) async fn issuer_keys<S: TrustStore>(store: S) {
    let (a, b) = (key(1), key(2));
    assert!(store.add_issuer_key(b).await.unwrap());
    assert!(store.add_issuer_key(a).await.unwrap());
    assert!(
        !store.add_issuer_key(a).await.unwrap(),
        "re-adding is a no-op"
    );
    let listed = store.list_issuer_keys().await.unwrap();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(listed, expected);
}

pub(crate) async fn revocation<S: TrustStore>(store: S) {
    assert_eq!(store.revoked_at("cap-1").await.unwrap(), None);
    let first = store.revoke("cap-1", 1_000).await.unwrap();
    assert!(first.newly_revoked);
    assert_eq!(first.revoked_at_ms, 1_000);
    let again = store.revoke("cap-1", 5_000).await.unwrap();
    assert!(!again.newly_revoked);
    assert_eq!(again.revoked_at_ms, 1_000, "the first revocation time wins");
    assert_eq!(store.revoked_at("cap-1").await.unwrap(), Some(1_000));
    assert_eq!(store.revoked_at("cap-2").await.unwrap(), None);
    expect_error(store.revoke("", 1).await, "id");
}

pub(crate) async fn budgets<S: TrustStore>(store: S) {
    let k = "inv:cap-1:fs:read";
    assert_eq!(
        store.hold_budget("h1", k, 1, 2).await.unwrap(),
        HoldOutcome::Granted { used: 1, limit: 2 }
    );
    assert_eq!(
        store.hold_budget("h1", k, 1, 2).await.unwrap(),
        HoldOutcome::Granted { used: 1, limit: 2 },
        "a retried hold is granted again and counted once"
    );
    assert_eq!(
        store.hold_budget("h2", k, 1, 2).await.unwrap(),
        HoldOutcome::Granted { used: 2, limit: 2 }
    );
    assert_eq!(
        store.hold_budget("h3", k, 1, 2).await.unwrap(),
        HoldOutcome::Refused { used: 2, limit: 2 }
    );
    expect_error(
        store.hold_budget("h1", k, 5, 10).await,
        "another budget or amount",
    );

    // Releasing a hold gives its amount back; the refused hold id was not recorded.
    assert_eq!(
        store.release_budget("h2").await.unwrap(),
        ReleaseOutcome::Released
    );
    assert_eq!(
        store.release_budget("h2").await.unwrap(),
        ReleaseOutcome::Released
    );
    assert_eq!(
        store.hold_budget("h3", k, 1, 2).await.unwrap(),
        HoldOutcome::Granted { used: 2, limit: 2 }
    );

    // Committing makes a hold permanent and is idempotent.
    assert_eq!(
        store.commit_budget("h1").await.unwrap(),
        HoldState::Committed
    );
    assert_eq!(
        store.commit_budget("h1").await.unwrap(),
        HoldState::Committed
    );
    expect_error(store.release_budget("h1").await, "already committed");
    expect_error(store.hold_budget("h1", k, 1, 2).await, "request replayed");
    expect_error(store.commit_budget("h2").await, "already released");
    expect_error(store.hold_budget("h2", k, 1, 2).await, "already released");
    expect_error(store.commit_budget("nope").await, "no hold nope");
    assert_eq!(
        store.release_budget("nope").await.unwrap(),
        ReleaseOutcome::UnknownHold
    );

    // Monetary amounts use the same rule with larger units, per key.
    let money = "usd:agent-1";
    assert_eq!(
        store.hold_budget("m1", money, 700, 1_000).await.unwrap(),
        HoldOutcome::Granted {
            used: 700,
            limit: 1_000
        }
    );
    assert_eq!(
        store.hold_budget("m2", money, 301, 1_000).await.unwrap(),
        HoldOutcome::Refused {
            used: 700,
            limit: 1_000
        }
    );
    expect_error(
        store.hold_budget("m3", money, u64::MAX, u64::MAX).await,
        "amount",
    );
}

pub(crate) async fn shares<S: TrustStore>(store: S) {
    let admitted = |sum_bps| ShareOutcome::Admitted {
        sum_bps,
        parent_bps: 10_000,
    };
    assert_eq!(
        store.admit_share("p", "c1", 6_000, 10_000).await.unwrap(),
        admitted(6_000)
    );
    assert_eq!(
        store.admit_share("p", "c2", 4_000, 10_000).await.unwrap(),
        admitted(10_000)
    );
    assert_eq!(
        store.admit_share("p", "c3", 1, 10_000).await.unwrap(),
        ShareOutcome::Refused {
            sibling_sum_bps: 10_000,
            parent_bps: 10_000
        }
    );
    assert_eq!(
        store.admit_share("p", "c1", 6_000, 10_000).await.unwrap(),
        admitted(10_000),
        "re-admitting the same child and share is idempotent"
    );
    expect_error(
        store.admit_share("p", "c1", 5_000, 10_000).await,
        "another parent or share",
    );
    expect_error(
        store.admit_share("q", "c1", 6_000, 10_000).await,
        "another parent or share",
    );
    assert_eq!(
        store.admit_share("q", "d1", 3_000, 5_000).await.unwrap(),
        ShareOutcome::Admitted {
            sum_bps: 3_000,
            parent_bps: 5_000
        },
        "another parent's children are summed separately"
    );
    assert_eq!(
        store.admit_share("q", "d2", 2_001, 5_000).await.unwrap(),
        ShareOutcome::Refused {
            sibling_sum_bps: 3_000,
            parent_bps: 5_000
        }
    );
    assert_eq!(
        store.admit_share("q", "d4", 2_001, 10_000).await.unwrap(),
        ShareOutcome::Refused {
            sibling_sum_bps: 3_000,
            parent_bps: 5_000
        },
        "a parent's share never grows past the first one recorded"
    );
    expect_error(
        store.admit_share("q", "d3", 10_001, 10_000).await,
        "child_bps",
    );
}

pub(crate) async fn requests<S: TrustStore>(store: S) {
    assert!(store.record_request("4:root/5:alice/r1").await.unwrap());
    assert!(
        !store.record_request("4:root/5:alice/r1").await.unwrap(),
        "a seen request id is a replay"
    );
    assert!(
        store.record_request("4:root/3:bob/r1").await.unwrap(),
        "ids are scoped by principal"
    );
    expect_error(store.record_request("").await, "request_key");
}

pub(crate) async fn receipts<S: TrustStore>(store: S) {
    let summary = store
        .append_receipts(vec![receipt("r1", "one"), receipt("r2", "two")])
        .await
        .unwrap();
    assert_eq!((summary.appended, summary.already_present), (2, 0));
    let retry = store
        .append_receipts(vec![receipt("r2", "two"), receipt("r3", "three")])
        .await
        .unwrap();
    assert_eq!((retry.appended, retry.already_present), (1, 1));
    expect_error(
        store
            .append_receipts(vec![receipt("r4", "four"), receipt("r1", "other")])
            .await,
        "already stored with other bytes",
    );
    assert_eq!(
        store.count_receipts().await.unwrap(),
        3,
        "a conflicting batch appends nothing"
    );
    let first = store.list_receipts(0, 2).await.unwrap();
    let ids: Vec<_> = first
        .receipts
        .iter()
        .map(|r| r.receipt_id.as_str())
        .collect();
    assert_eq!(ids, ["r1", "r2"]);
    assert_eq!(first.receipts[0].seq, 1);
    assert_eq!(first.receipts[1].body, b"two");
    let next = first.next_after_seq.expect("a third receipt remains");
    let second = store.list_receipts(next, 2).await.unwrap();
    assert_eq!(second.receipts.len(), 1);
    assert_eq!(second.receipts[0].receipt_id, "r3");
    assert_eq!(second.receipts[0].seq, 3);
    assert_eq!(second.next_after_seq, None);
    assert!(store
        .list_receipts(3, 10)
        .await
        .unwrap()
        .receipts
        .is_empty());
    expect_error(
        store.append_receipts(vec![receipt("", "x")]).await,
        "receipt_id",
    );
}

pub(crate) async fn labels<S: TrustStore>(store: S) {
    let keys = vec!["s1".to_owned(), "s2".to_owned()];
    let empty = store.read_labels(keys.clone()).await.unwrap();
    assert_eq!(empty.len(), 2);
    assert!(empty.values().all(BTreeSet::is_empty));
    store
        .join_labels(vec!["s1".into()], "public")
        .await
        .unwrap();
    let joined = store.join_labels(keys.clone(), "internal").await.unwrap();
    let expected: BTreeSet<String> = ["internal", "public"].map(String::from).into();
    assert_eq!(joined["s1"], expected);
    store
        .join_labels(vec!["s1".into()], "internal")
        .await
        .unwrap();
    let read = store.read_labels(keys).await.unwrap();
    assert_eq!(read["s1"], expected, "joining is a set union");
    assert_eq!(read["s2"], ["internal".to_owned()].into());
    expect_error(store.join_labels(vec!["s1".into()], "").await, "label");
}

fn op_revoked(id: &str) -> BatchOp {
    StoreOp::IsRevoked { id: id.to_owned() }
}

fn op_request(key: &str) -> BatchOp {
    StoreOp::RecordRequest {
        key: key.to_owned(),
    }
}

fn op_hold(hold_id: &str, amount: u64, limit: u64) -> BatchOp {
    StoreOp::Hold {
        hold_id: hold_id.to_owned(),
        key: "b".to_owned(),
        amount,
        limit,
    }
}

/// A revoked child's share is free for new siblings, whether the admission
/// is its own call or a batch's operation, and whenever the revocation came.
pub(crate) async fn revoked_shares<S: TrustStore>(store: S) {
    assert_eq!(
        store.admit_share("p", "c1", 6_000, 10_000).await.unwrap(),
        ShareOutcome::Admitted {
            sum_bps: 6_000,
            parent_bps: 10_000
        }
    );
    let refused = ShareOutcome::Refused {
        sibling_sum_bps: 6_000,
        parent_bps: 10_000,
    };
    assert_eq!(
        store.admit_share("p", "c2", 4_001, 10_000).await.unwrap(),
        refused
    );
    store.revoke("c1", 5).await.unwrap();
    assert_eq!(
        store.admit_share("p", "c2", 6_000, 10_000).await.unwrap(),
        ShareOutcome::Admitted {
            sum_bps: 6_000,
            parent_bps: 10_000
        },
        "a revoked sibling holds no share"
    );
    let batch = |child: &str, bps: u32| -> Vec<BatchOp> {
        vec![StoreOp::AdmitShare {
            parent_id: "p".into(),
            child_id: child.into(),
            child_bps: bps,
            parent_bps: 10_000,
        }]
    };
    assert_eq!(
        store.run_batch(batch("c3", 4_001)).await.unwrap(),
        vec![Ok(OpAnswer::Share(ShareAdmission::Oversubscribed {
            siblings_bps: 6_000,
            parent_bps: 10_000
        }))]
    );
    store.revoke("c2", 6).await.unwrap();
    assert_eq!(
        store.run_batch(batch("c3", 10_000)).await.unwrap(),
        vec![Ok(OpAnswer::Share(ShareAdmission::Admitted))],
        "a batch reads the revocation with the admission"
    );
    assert!(
        matches!(
            store.admit_share("p", "c1", 6_000, 10_000).await.unwrap(),
            ShareOutcome::Admitted { .. }
        ),
        "a revoked child's own admission stays idempotent"
    );
}

/// One decision's work in one call: every operation as its own call would
/// do it, the prefix up to the first ending answer, nothing after it.
pub(crate) async fn batches<S: TrustStore>(store: S) {
    store.revoke("cap-r", 1).await.unwrap();
    let stopped = store
        .run_batch(vec![
            op_revoked("cap-a"),
            op_revoked("cap-r"),
            op_request("k1"),
        ])
        .await
        .unwrap();
    assert_eq!(
        stopped,
        vec![Ok(OpAnswer::Revoked(false)), Ok(OpAnswer::Revoked(true))]
    );
    assert!(
        store.record_request("k1").await.unwrap(),
        "nothing after a revoked id runs"
    );
    store
        .join_labels(vec!["s".into()], "internal")
        .await
        .unwrap();
    let full = vec![
        op_request("k2"),
        op_hold("h1", 1, 2),
        StoreOp::ReadLabels {
            keys: vec!["s".into(), "t".into()],
            stop_unless_empty: false,
        },
        StoreOp::AdmitShare {
            parent_id: "p".into(),
            child_id: "c".into(),
            child_bps: 6000,
            parent_bps: 10000,
        },
        StoreOp::Commit {
            hold_id: "h1".into(),
        },
        StoreOp::JoinLabels {
            keys: vec!["t".into()],
            label: "public".into(),
        },
        StoreOp::AppendReceipt {
            receipt: receipt("r1", "{}"),
        },
    ];
    let answers = store.run_batch(full).await.unwrap();
    let sets = [
        ("s".to_owned(), ["internal".to_owned()].into()),
        ("t".to_owned(), BTreeSet::new()),
    ]
    .into();
    assert_eq!(
        answers,
        vec![
            Ok(OpAnswer::Fresh(true)),
            Ok(OpAnswer::Hold(HoldOutcome::Granted { used: 1, limit: 2 })),
            Ok(OpAnswer::Labels(sets)),
            Ok(OpAnswer::Share(ShareAdmission::Admitted)),
            Ok(OpAnswer::Done),
            Ok(OpAnswer::Done),
            Ok(OpAnswer::Done),
        ]
    );
    assert_eq!(store.count_receipts().await.unwrap(), 1);
    assert!(store.read_labels(vec!["t".into()]).await.unwrap()["t"].contains("public"));
    expect_error(store.hold_budget("h1", "b", 1, 2).await, "request replayed");
    let replay = store
        .run_batch(vec![op_request("k2"), op_hold("h9", 1, 2)])
        .await
        .unwrap();
    assert_eq!(replay, vec![Ok(OpAnswer::Fresh(false))]);
    let refused = store
        .run_batch(vec![op_hold("h2", 5, 2), op_request("k3")])
        .await
        .unwrap();
    assert_eq!(
        refused,
        vec![Ok(OpAnswer::Hold(HoldOutcome::Refused {
            used: 1,
            limit: 2
        }))]
    );
    assert!(store.record_request("k3").await.unwrap());
    let release = vec![
        StoreOp::Release {
            hold_id: "h1".into(),
        },
        StoreOp::AppendReceipt {
            receipt: receipt("r2", "{}"),
        },
    ];
    let answers = store.run_batch(release).await.unwrap();
    assert_eq!(answers.len(), 2, "a failed release does not stop the batch");
    expect_error(answers[0].clone(), "committed");
    assert_eq!(answers[1], Ok(OpAnswer::Done));
    let failed = store
        .run_batch(vec![op_revoked(""), op_request("k4")])
        .await
        .unwrap();
    assert_eq!(failed.len(), 1);
    expect_error(failed[0].clone(), "id");
    let tainted = StoreOp::ReadLabels {
        keys: vec!["s".into()],
        stop_unless_empty: true,
    };
    let answers = store
        .run_batch(vec![tainted, op_request("k4")])
        .await
        .unwrap();
    assert_eq!(answers.len(), 1, "a tainted read marked to stop stops");
    assert!(store.record_request("k4").await.unwrap());
    assert_eq!(store.run_batch(Vec::new()).await.unwrap(), Vec::new());
}

/// Generates one `#[tokio::test]` per conformance check; `$make` builds a
/// fresh `(store, guard)` pair, the guard keeping its resources alive.
macro_rules! conformance_suite {
    ($make:expr) => {
        // Proves issuer keys are added once and listed in order.
        #[tokio::test]
        async fn conformance_issuer_keys() {
            let (store, _guard) = $make;
            $crate::store::conformance::issuer_keys(store).await;
        }
        // Proves revocation is idempotent and keeps the first time.
        #[tokio::test]
        async fn conformance_revocation() {
            let (store, _guard) = $make;
            $crate::store::conformance::revocation(store).await;
        }
        // Proves holds respect limits, count once on retry, and commit/release correctly.
        #[tokio::test]
        async fn conformance_budgets() {
            let (store, _guard) = $make;
            $crate::store::conformance::budgets(store).await;
        }
        // Proves sibling shares never sum past the parent and admission is idempotent.
        #[tokio::test]
        async fn conformance_shares() {
            let (store, _guard) = $make;
            $crate::store::conformance::shares(store).await;
        }
        // Proves a revoked child's share is free for new siblings, in its own call and in a batch.
        #[tokio::test]
        async fn conformance_revoked_shares() {
            let (store, _guard) = $make;
            $crate::store::conformance::revoked_shares(store).await;
        }
        // Proves a request id is fresh once per scoped key and a replay after that.
        #[tokio::test]
        async fn conformance_requests() {
            let (store, _guard) = $make;
            $crate::store::conformance::requests(store).await;
        }
        // Proves receipts are idempotent, conflicts refused whole, and pages ordered.
        #[tokio::test]
        async fn conformance_receipts() {
            let (store, _guard) = $make;
            $crate::store::conformance::receipts(store).await;
        }
        // Proves a decision batch runs each operation as its own call would and stops at the first ending answer.
        #[tokio::test]
        async fn conformance_batches() {
            let (store, _guard) = $make;
            $crate::store::conformance::batches(store).await;
        }
        // Proves retained labels form a set union per key.
        #[tokio::test]
        async fn conformance_labels() {
            let (store, _guard) = $make;
            $crate::store::conformance::labels(store).await;
        }
    };
}
pub(crate) use conformance_suite;

mod memory_store {
    conformance_suite!((crate::store::memory::InMemoryTrustStore::new(), ()));
}

mod sqlite_store {
    fn open() -> (crate::store::sqlite::SqliteTrustStore, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = crate::store::sqlite::SqliteTrustStore::open(dir.path().join("trust.db"))
            .expect("open");
        (store, dir)
    }
    conformance_suite!(open());
}
