//! In-process tests of the node's gRPC services: a real `serve` on an
//! ephemeral port with local SQLite state, reached through tonic clients.
//! They prove a node refuses malformed and oversized messages with a status
//! (never a panic) and refuses calls without the cluster token.

use chio_proto::node::v1 as pb;
use chio_proto::node::v1::kernel_link_client::KernelLinkClient;
use chio_proto::node::v1::node_control_client::NodeControlClient;

use crate::util;

use util::{authorized, start, TOKEN};

// Proves fields that do not decode are INVALID_ARGUMENT naming the field on both services, and the node keeps serving.
#[tokio::test]
async fn malformed_messages_are_refused_with_a_status() {
    let (url, _dir) = start().await;
    let mut control = NodeControlClient::connect(url.clone()).await.unwrap();
    let status = control
        .call(authorized(pb::CallRequest {
            agent: "alice".into(),
            arguments_json: b"{\"path\": 7".to_vec(),
            ..pb::CallRequest::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().starts_with("arguments_json is malformed"),
        "{status:?}"
    );
    let mut link = KernelLinkClient::connect(url.clone()).await.unwrap();
    let status = link
        .evaluate(authorized(pb::EvaluateRequest {
            kernel_id: "kernel-a".into(),
            request_json: b"[]".to_vec(),
            now_ms: 0,
            run_id: String::new(),
        }))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    let status = control
        .load_world(authorized(pb::LoadWorldRequest {
            node: "node-a".into(),
            scenario: b"not = [toml".to_vec(),
            fixtures: Default::default(),
            peers: Default::default(),
            run_id: "run-1".into(),
            redefinitions_json: String::new(),
            witness_key: String::new(),
        }))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    // Still serving: a well-formed call gets the "no world" answer.
    let status = control
        .revoke(authorized(pb::RevokeRequest {
            target: "x".into(),
            at_ms: 0,
            run_id: String::new(),
        }))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound, "{status:?}");
}

// Proves a KernelLink message over the size limit is refused as OUT_OF_RANGE.
#[tokio::test]
async fn oversized_messages_are_refused() {
    let (url, _dir) = start().await;
    let mut link = KernelLinkClient::connect(url)
        .await
        .unwrap()
        .max_encoding_message_size(usize::MAX);
    let status = link
        .hand_over(authorized(pb::HandOverRequest {
            agent_id: "a".into(),
            token_json: vec![b' '; chio_node::wire::MAX_LINK_MESSAGE_BYTES + 1],
            run_id: String::new(),
        }))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::OutOfRange, "{status:?}");
}

// Proves a call without the cluster token is UNAUTHENTICATED before anything is decoded.
#[tokio::test]
async fn calls_without_the_token_are_unauthenticated() {
    let (url, _dir) = start().await;
    let mut control = NodeControlClient::connect(url).await.unwrap();
    let status = control
        .call(pb::CallRequest {
            arguments_json: b"garbage".to_vec(),
            ..pb::CallRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    assert!(!status.message().contains(TOKEN));
}
