//! Shared helpers for the node's service tests: a real node serving
//! `NodeControl` and `KernelLink` on an ephemeral port with local SQLite
//! state, and requests carrying the cluster token.

use std::sync::Arc;
use std::time::Duration;

use chio_node::cluster::ClusterToken;
use chio_node::host::{HostConfig, NodeHost, TrustBackend};
use chio_node::trust_stores::StoreDeadlines;
use chio_trust::SqliteTrustStore;

pub const TOKEN: &str = "cluster-token-for-service-tests";

/// Starts a node named node-a on an ephemeral port; returns its URL and the
/// folder holding its state.
pub async fn start() -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteTrustStore::open(dir.path().join("trust.db")).unwrap();
    let token = ClusterToken::new(TOKEN).unwrap();
    let host = NodeHost::spawn(HostConfig {
        name: "node-a".into(),
        backend: TrustBackend::Local(Arc::new(store)),
        cluster_token: token.clone(),
        deadlines: StoreDeadlines::default(),
        link_deadline: Duration::from_secs(5),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(chio_node::service::serve(
        host,
        token,
        listener,
        std::future::pending(),
    ));
    (url, dir)
}

pub fn authorized<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    request
}
