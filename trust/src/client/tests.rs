//! The client against a real service on an ephemeral port: the
//! conformance suite over both stores, unreachable and silent services, and
//! a wrong token.

use super::*;
use crate::service::serve;
use crate::store::sqlite::SqliteTrustStore;
use tokio::net::TcpListener;

const TOKEN: &str = "conformance-token-0123456789";

/// Starts a service over `store` on an ephemeral port; returns its url
/// and the sender that stops it.
async fn start<S: TrustStore>(store: S) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let token = BearerToken::new(TOKEN).expect("token");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve(store, token, listener, async {
        let _ = stopped.await;
    }));
    (url, stop)
}

/// A service over `store` and a client holding the right token; the
/// guard stops the service when dropped.
async fn served<S: TrustStore>(store: S) -> (TrustClient, tokio::sync::oneshot::Sender<()>) {
    let (url, stop) = start(store).await;
    let token = BearerToken::new(TOKEN).expect("token");
    let client = TrustClient::connect(&url, &token, TrustClientConfig::default())
        .await
        .expect("connect");
    (client, stop)
}

mod over_memory_store {
    crate::store::conformance::conformance_suite!(
        super::served(crate::store::memory::InMemoryTrustStore::new()).await
    );
}

mod over_sqlite_store {
    async fn open() -> (
        super::TrustClient,
        (tokio::sync::oneshot::Sender<()>, tempfile::TempDir),
    ) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = crate::store::sqlite::SqliteTrustStore::open(dir.path().join("trust.db"))
            .expect("open");
        let (client, stop) = super::served(store).await;
        (client, (stop, dir))
    }
    crate::store::conformance::conformance_suite!(open().await);
}

// Proves a call to a service that does not answer fails as unavailable, naming trust-control.
// Proves a URL of any scheme but http, https among them, is refused before anything is sent: the client has no TLS, and never sends its token in clear to a service the caller meant to reach over TLS.
#[tokio::test]
async fn only_plain_http_urls_are_accepted() {
    let token = BearerToken::new(TOKEN).unwrap();
    for url in [
        "https://127.0.0.1:1",
        "HTTPS://127.0.0.1:1",
        "grpc://127.0.0.1:1",
        "127.0.0.1:1",
    ] {
        let lazy = TrustClient::connect_lazy(url, &token, TrustClientConfig::default());
        let Err(error) = lazy else {
            panic!("{url} was accepted");
        };
        assert!(
            matches!(
                error,
                TrustError::InvalidArgument {
                    field: "control url",
                    ..
                }
            ),
            "{url}: {error:?}"
        );
        assert!(error.to_string().contains("no TLS"), "{error}");
        assert!(!error.to_string().contains(TOKEN));
        let now = TrustClient::connect(url, &token, TrustClientConfig::default()).await;
        assert!(now.is_err(), "{url}");
    }
    assert!(
        TrustClient::connect_lazy("HTTP://127.0.0.1:1", &token, TrustClientConfig::default())
            .is_ok()
    );
}

#[tokio::test]
async fn unreachable_service_is_unavailable() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let token = BearerToken::new(TOKEN).unwrap();
    let client = TrustClient::connect_lazy(&url, &token, TrustClientConfig::default()).unwrap();
    let error = client.is_revoked("cap").await.unwrap_err();
    assert!(matches!(error, TrustError::Unavailable { .. }), "{error:?}");
    assert!(
        error.to_string().starts_with("trust-control unavailable"),
        "{error}"
    );
}

// Proves a service that accepts but never answers trips the per-call deadline.
#[tokio::test]
async fn silent_service_trips_the_deadline() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // Accept connections and hold them open without speaking HTTP/2.
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let token = BearerToken::new(TOKEN).unwrap();
    let config = TrustClientConfig {
        call_deadline: Duration::from_millis(200),
        append_deadline: Duration::from_millis(300),
        connect_timeout: Duration::from_millis(200),
    };
    let client = TrustClient::connect_lazy(&url, &token, config).unwrap();
    let error = client
        .append_receipts(vec![ReceiptRecord {
            receipt_id: "r".into(),
            body: vec![1],
        }])
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            TrustError::DeadlineExceeded { .. } | TrustError::Unavailable { .. }
        ),
        "{error:?}"
    );
    assert!(error.to_string().starts_with("trust-control"), "{error}");
    holder.abort();
}

// Proves a client with another token is refused and told so without the token echoed.
#[tokio::test]
async fn wrong_token_is_unauthenticated() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _stop) = start(SqliteTrustStore::open(dir.path().join("t.db")).unwrap()).await;
    let wrong = BearerToken::new("another-token-abcdefghijkl").unwrap();
    let client = TrustClient::connect(&url, &wrong, TrustClientConfig::default())
        .await
        .unwrap();
    let error = client.count_receipts().await.unwrap_err();
    assert_eq!(error, TrustError::Unauthenticated);
    assert!(!error.to_string().contains("another-token"));
}

// Proves a connection dropped under the client (a link cut after it carried calls) fails the next call as unavailable at once, never as a missed deadline.
#[tokio::test]
async fn a_dropped_connection_is_unavailable_not_a_deadline() {
    use tokio::io::copy_bidirectional;

    let (upstream, _stop) = start(crate::store::memory::InMemoryTrustStore::new()).await;
    let upstream = upstream.trim_start_matches("http://").to_string();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (cut_tx, cut_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            if *cut_rx.borrow() {
                continue;
            }
            let mut cut = cut_rx.clone();
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let mut outbound = tokio::net::TcpStream::connect(upstream).await.unwrap();
                tokio::select! {
                    _ = copy_bidirectional(&mut inbound, &mut outbound) => {}
                    _ = cut.changed() => {}
                }
            });
        }
    });
    let token = BearerToken::new(TOKEN).unwrap();
    let client = TrustClient::connect_lazy(&url, &token, TrustClientConfig::default()).unwrap();
    assert_eq!(client.is_revoked("cap").await, Ok(false));
    cut_tx.send_replace(true);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let began = std::time::Instant::now();
    let error = client.is_revoked("cap").await.unwrap_err();
    assert!(matches!(error, TrustError::Unavailable { .. }), "{error:?}");
    assert!(began.elapsed() < DEFAULT_CALL_DEADLINE, "{error}");
}

// Proves a call tonic's own timer gave up on reads as late, while a call the transport cancelled otherwise reads as unavailable.
#[test]
fn tonic_timeout_is_a_deadline_and_other_cancels_are_not() {
    let late = tonic::Status::from_error(Box::new(tonic::TimeoutExpired(())));
    assert_eq!(late.code(), Code::Cancelled);
    assert!(super::timed_out(&late));
    let error = super::error_of("revoked_at", DEFAULT_CALL_DEADLINE, late);
    assert!(
        matches!(error, TrustError::DeadlineExceeded { .. }),
        "{error:?}"
    );
    let cancelled = tonic::Status::cancelled("the connection closed");
    assert!(!super::timed_out(&cancelled));
    let error = super::error_of("revoked_at", DEFAULT_CALL_DEADLINE, cancelled);
    assert!(matches!(error, TrustError::Unavailable { .. }), "{error:?}");
}
