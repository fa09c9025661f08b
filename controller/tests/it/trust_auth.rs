//! Process tests of authentication: every `TrustControl` RPC sent to the
//! real `chio trust serve` without the bearer token, or with a wrong one,
//! is refused as unauthenticated, never echoes what was sent, and changes
//! nothing.

use crate::trust_process;

use chio_proto::trust::v1 as pb;
use chio_proto::trust::v1::trust_control_client::TrustControlClient;
use chio_trust::TrustStore;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

use trust_process::{token_file, TrustProcess};

/// Builds a request carrying `authorization` exactly as given (or none).
fn request<T>(message: T, authorization: Option<&str>) -> Request<T> {
    let mut request = Request::new(message);
    if let Some(value) = authorization {
        let value = MetadataValue::try_from(value).expect("ascii header");
        request.metadata_mut().insert("authorization", value);
    }
    request
}

/// Calls every RPC of the service once with `authorization` and returns
/// each RPC's name with its result status (`Ok` status code for success).
async fn call_every_rpc(
    client: &mut TrustControlClient<Channel>,
    authorization: Option<&str>,
) -> Vec<(&'static str, Result<(), Status>)> {
    let a = authorization;
    let key = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    vec![
        (
            "AddIssuerKey",
            client
                .add_issuer_key(request(
                    pb::AddIssuerKeyRequest {
                        public_key_hex: key.into(),
                    },
                    a,
                ))
                .await
                .map(drop),
        ),
        (
            "ListIssuerKeys",
            client
                .list_issuer_keys(request(pb::ListIssuerKeysRequest {}, a))
                .await
                .map(drop),
        ),
        (
            "Revoke",
            client
                .revoke(request(
                    pb::RevokeRequest {
                        id: "cap-1".into(),
                        at_ms: 1,
                    },
                    a,
                ))
                .await
                .map(drop),
        ),
        (
            "IsRevoked",
            client
                .is_revoked(request(pb::IsRevokedRequest { id: "cap-1".into() }, a))
                .await
                .map(drop),
        ),
        (
            "HoldBudget",
            client
                .hold_budget(request(
                    pb::HoldBudgetRequest {
                        hold_id: "h".into(),
                        budget_key: "k".into(),
                        amount: 1,
                        limit: 1,
                    },
                    a,
                ))
                .await
                .map(drop),
        ),
        (
            "CommitBudget",
            client
                .commit_budget(request(
                    pb::CommitBudgetRequest {
                        hold_id: "h".into(),
                    },
                    a,
                ))
                .await
                .map(drop),
        ),
        (
            "ReleaseBudget",
            client
                .release_budget(request(
                    pb::ReleaseBudgetRequest {
                        hold_id: "x".into(),
                    },
                    a,
                ))
                .await
                .map(drop),
        ),
        (
            "AdmitShare",
            client
                .admit_share(request(
                    pb::AdmitShareRequest {
                        parent_id: "p".into(),
                        child_id: "c".into(),
                        child_bps: 1,
                        parent_bps: 1,
                    },
                    a,
                ))
                .await
                .map(drop),
        ),
        (
            "AppendReceipts",
            client
                .append_receipts(request(
                    pb::AppendReceiptsRequest {
                        receipts: vec![pb::Receipt {
                            receipt_id: "r".into(),
                            body: b"{}".to_vec(),
                        }],
                    },
                    a,
                ))
                .await
                .map(drop),
        ),
        (
            "ListReceipts",
            client
                .list_receipts(request(pb::ListReceiptsRequest::default(), a))
                .await
                .map(drop),
        ),
        (
            "CountReceipts",
            client
                .count_receipts(request(pb::CountReceiptsRequest {}, a))
                .await
                .map(drop),
        ),
        (
            "ReadLabels",
            client
                .read_labels(request(
                    pb::ReadLabelsRequest {
                        keys: vec!["s".into()],
                    },
                    a,
                ))
                .await
                .map(drop),
        ),
        (
            "JoinLabels",
            client
                .join_labels(request(
                    pb::JoinLabelsRequest {
                        keys: vec!["s".into()],
                        label: "internal".into(),
                    },
                    a,
                ))
                .await
                .map(drop),
        ),
    ]
}

// Proves all 13 RPCs are refused without a token and with wrong ones, change nothing, and echo nothing.
#[tokio::test]
async fn every_rpc_requires_the_bearer_token() {
    let dir = tempfile::tempdir().unwrap();
    let process = TrustProcess::start(
        &dir.path().join("trust.db"),
        &token_file(dir.path(), trust_process::TOKEN),
    );
    let mut raw = TrustControlClient::connect(process.url.clone())
        .await
        .unwrap();

    let wrong_secret = "wrong-token-zyxwvutsrqponm";
    let wrong = format!("Bearer {wrong_secret}");
    let bare = trust_process::TOKEN.to_owned();
    let prefix_only = format!(
        "Bearer {}",
        &trust_process::TOKEN[..trust_process::TOKEN.len() - 1]
    );
    let attempts: [(&str, Option<&str>); 5] = [
        ("no header", None),
        ("wrong token", Some(&wrong)),
        ("token without scheme", Some(&bare)),
        ("token prefix", Some(&prefix_only)),
        ("empty bearer", Some("Bearer ")),
    ];
    for (label, authorization) in attempts {
        let results = call_every_rpc(&mut raw, authorization).await;
        assert_eq!(results.len(), 13);
        for (rpc, result) in results {
            let status = result.expect_err(&format!("{rpc} with {label} must be refused"));
            assert_eq!(
                status.code(),
                Code::Unauthenticated,
                "{rpc} with {label}: {status:?}"
            );
            assert!(
                !status.message().contains(wrong_secret)
                    && !status.message().contains(trust_process::TOKEN),
                "{rpc} with {label} echoed the token: {}",
                status.message()
            );
        }
    }

    // None of the refused calls changed anything.
    let client = process.client().await;
    assert_eq!(client.count_receipts().await.unwrap(), 0);
    assert!(!client.is_revoked("cap-1").await.unwrap());
    assert!(client.list_issuer_keys().await.unwrap().is_empty());
    let labels = client.read_labels(vec!["s".into()]).await.unwrap();
    assert!(labels["s"].is_empty());

    // The same calls with the right token are answered (most succeed; none is unauthenticated).
    let right = format!("Bearer {}", trust_process::TOKEN);
    for (rpc, result) in call_every_rpc(&mut raw, Some(&right)).await {
        if let Err(status) = result {
            assert_ne!(status.code(), Code::Unauthenticated, "{rpc}: {status:?}");
        }
    }
    assert_eq!(client.count_receipts().await.unwrap(), 1);
}

// Proves the typed client reports a wrong token as a trust-control authentication failure.
#[tokio::test]
async fn client_with_wrong_token_gets_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let process = TrustProcess::start(
        &dir.path().join("trust.db"),
        &token_file(dir.path(), trust_process::TOKEN),
    );
    let client = process.client_with("wrong-token-zyxwvutsrqponm").await;
    let error = client.hold_budget("h", "k", 1, 1).await.unwrap_err();
    assert_eq!(error, chio_trust::TrustError::Unauthenticated);
    assert!(error
        .to_string()
        .starts_with("trust-control refused the bearer token"));
}
