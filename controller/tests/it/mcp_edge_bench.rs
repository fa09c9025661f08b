//! Benchmark of the MCP edge, ignored by default: in one run, the latency
//! of a `tools/call` through `chio mcp serve` (bound to a `chio trust
//! serve` process), of the same call made directly to the upstream, and of
//! one trust-control batch round trip (a revocation look-up and a request
//! record), in interleaved rounds so a change of load weighs on all three.
//! Prints p50 and p99 of each and the ratio the goal names: edge p50 over
//! direct p50 plus one round-trip p50 (goal: at most 1.3).
//!
//! `cargo test --release -p chio-controller --test it -- mcp_edge_bench:: --ignored --nocapture`
//! (needs the venv `CHIO_MCP_PYTHON` names; `CHIO_BENCH_CALLS` sets the
//! calls per kind, 400 by default).

use crate::mcp_edge_util;
use crate::trust_process;

use std::time::{Duration, Instant};

use chio_kernel::batch::StoreOp;
use chio_trust::TrustStore;
use mcp_edge_util::*;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::ServiceExt;
use serde_json::json;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn report(name: &str, samples: &mut [Duration]) -> Duration {
    samples.sort();
    let (p50, p99) = (percentile(samples, 0.5), percentile(samples, 0.99));
    println!(
        "{name}: n={} p50 {:.0} µs, p99 {:.0} µs",
        samples.len(),
        p50.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6
    );
    p50
}

// Prints p50 and p99 of a call through the edge, the same call direct to the upstream, and one trust-control batch round trip.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn edge_latency_against_direct_and_round_trip() {
    let Some(python) = mcp_python() else { return };
    let calls: usize = std::env::var("CHIO_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let token_file = trust_process::token_file(dir.path(), trust_process::TOKEN);
    let trust = trust_process::TrustProcess::start(&dir.path().join("trust.db"), &token_file);
    let authority = authority(dir.path());
    let alice = client_key(1);
    let token = grant(&authority, &alice, "notes", "echo", &[]);
    let upstream_argv = [
        python.to_str().unwrap().to_string(),
        fixture("counting_server.py").to_str().unwrap().to_string(),
        log.to_str().unwrap().to_string(),
    ];
    let edge = Edge::start(&[
        "--upstream".into(),
        format!("notes={}", shell_words::join(&upstream_argv)),
        "--authority".into(),
        authority.to_str().unwrap().into(),
        "--control-url".into(),
        trust.url.clone(),
        "--control-token-file".into(),
        token_file.to_str().unwrap().into(),
    ])
    .await;
    let mut child = tokio::process::Command::new(&upstream_argv[0])
        .args(&upstream_argv[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let direct = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("bench", "0"),
    )
    .serve((stdout, stdin))
    .await
    .unwrap();
    let control = trust.client().await;
    let args = json!({"text": "bench"});
    let mut params = CallToolRequestParams::new("echo");
    if let serde_json::Value::Object(map) = &args {
        params = params.with_arguments(map.clone());
    }
    // Warm every path once.
    edge.call(&token, &alice, "notes", "echo", &args, "warm")
        .await;
    direct.peer().call_tool(params.clone()).await.unwrap();

    let (mut through_edge, mut to_upstream, mut round_trips) = (Vec::new(), Vec::new(), Vec::new());
    let rounds = 4;
    for round in 0..rounds {
        for i in 0..calls / rounds {
            let id = format!("b-{round}-{i}");
            let start = Instant::now();
            let answer = edge.call(&token, &alice, "notes", "echo", &args, &id).await;
            through_edge.push(start.elapsed());
            assert_eq!(verdict(&answer).0, "allow", "{answer:?}");

            let start = Instant::now();
            direct.peer().call_tool(params.clone()).await.unwrap();
            to_upstream.push(start.elapsed());

            let ops = vec![
                StoreOp::IsRevoked {
                    id: format!("bench/cap-{i}"),
                },
                StoreOp::RecordRequest {
                    key: format!("bench/{id}"),
                },
            ];
            let start = Instant::now();
            control.run_batch(ops).await.unwrap();
            round_trips.push(start.elapsed());
        }
    }
    let edge_p50 = report("tools/call through the edge", &mut through_edge);
    let direct_p50 = report("tools/call direct to the upstream", &mut to_upstream);
    let trip_p50 = report("trust-control batch round trip", &mut round_trips);
    println!(
        "edge p50 / (direct p50 + round-trip p50) = {:.2} (goal at most 1.3)",
        edge_p50.as_secs_f64() / (direct_p50 + trip_p50).as_secs_f64()
    );
    let _ = direct.cancel().await;
    edge.stop().await;
}
