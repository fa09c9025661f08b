//! The edge over MCP's streamable HTTP transport (`chio mcp serve --listen
//! ADDR`): the SDK's streamable HTTP server (a tower service) served by
//! axum at `/mcp`, every MCP session handled by a clone of the one
//! [`Edge`], so a call over HTTP goes through the pipeline a call over
//! stdio does.
//!
//! The request body is bounded by `--max-message-bytes` while it streams
//! (a longer body is answered `413 Payload Too Large` and never parsed).
//! A listen address that is not loopback is refused unless
//! `--allow-non-loopback` is given; on loopback the server accepts only
//! loopback `Host` headers (`localhost`, `127.0.0.1`, `::1`), which stops a
//! web page from reaching the edge by DNS rebinding, and those of
//! `--allowed-host`; a non-loopback listen address's own IP is accepted
//! too (not an unspecified one such as `0.0.0.0`).

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::server::Edge;
use super::ServeArgs;
use crate::error::{codes, CliError};

const COMMAND: &str = "mcp serve";

/// The path the edge serves MCP at.
pub const MCP_PATH: &str = "/mcp";

/// Refuses a non-loopback `addr` unless `allow_non_loopback`.
pub fn check_listen(addr: SocketAddr, allow_non_loopback: bool) -> Result<(), CliError> {
    if addr.ip().is_loopback() || allow_non_loopback {
        return Ok(());
    }
    Err(CliError::new(
        codes::MCP_CONFIG,
        COMMAND,
        format!(
            "--listen {addr} is not a loopback address, and the edge carries capabilities and signed requests in clear HTTP"
        ),
        "listen on 127.0.0.1 or ::1 (put a TLS proxy in front for other hosts), or pass --allow-non-loopback",
    ))
}

/// Reads a `POST` body within `bound` and judges it as the stdio gate
/// judges a line (`super::frames::judge`): a body that is not JSON, or a
/// request whose parameters have the wrong shape, is answered `400 Bad
/// Request` carrying the JSON-RPC error, and never reaches the SDK's
/// server; a body over the bound is answered `413 Payload Too Large`.
async fn judge_body(
    request: axum::extract::Request,
    next: axum::middleware::Next,
    bound: usize,
) -> axum::response::Response {
    use axum::http::{header, Method, StatusCode};
    use axum::response::IntoResponse;
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, bound).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is longer than {bound} bytes"),
        )
            .into_response();
    };
    match super::frames::judge(&bytes) {
        super::frames::Verdict::Answer(answer) => (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            answer,
        )
            .into_response(),
        super::frames::Verdict::Pass | super::frames::Verdict::Skip => {
            next.run(axum::extract::Request::from_parts(
                parts,
                axum::body::Body::from(bytes),
            ))
            .await
        }
    }
}

/// Serves `edge` at `http://ADDR/mcp` until ctrl-c or SIGTERM.
pub async fn serve(edge: Edge, args: &ServeArgs, addr: SocketAddr) -> Result<(), CliError> {
    check_listen(addr, args.allow_non_loopback)?;
    let mut config =
        StreamableHttpServerConfig::default().with_max_request_body_bytes(args.max_message_bytes);
    let mut hosts = config.allowed_hosts.clone();
    if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
        hosts.push(addr.ip().to_string());
    }
    hosts.extend(args.allowed_host.iter().cloned());
    config = config.with_allowed_hosts(hosts);
    let service = StreamableHttpService::new(
        move || Ok(edge.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let bound = args.max_message_bytes;
    let router =
        axum::Router::new()
            .nest_service(MCP_PATH, service)
            .layer(axum::middleware::from_fn(move |request, next| {
                judge_body(request, next, bound)
            }));
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        CliError::new(
            codes::MCP_CONFIG,
            COMMAND,
            format!("cannot listen on {addr}: {}", e.kind()),
            "choose a free port on an address of this host",
        )
    })?;
    let bound = listener.local_addr().unwrap_or(addr);
    tracing::info!(address = %bound, path = MCP_PATH, "serving MCP over streamable HTTP");
    // An open event stream would hold a graceful shutdown forever: the
    // signal ends the server, the session folder is then finished.
    tokio::select! {
        served = axum::serve(listener, router) => served.map_err(|e| {
            CliError::infrastructure(COMMAND, format!("the HTTP server stopped: {e}"))
        }),
        () = crate::serve::shutdown_signal() => Ok(()),
    }
}
