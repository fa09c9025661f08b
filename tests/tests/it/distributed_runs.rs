//! Process tests of what a cluster serves: the real `chio` binary as
//! trust-control, node processes and controller, on loopback with port 0
//! and fresh temporary folders. A run's nodes must read the authority state
//! its topology names, and a cluster serves one run at a time.

use chio_tests::*;
use chio_trust::TrustStore;

// A node started with private authority state (--state-dir) in a multi-node topology is refused before any step runs, naming the node and the trust-control to start it against.
#[test]
fn node_with_private_state_is_refused_before_any_step() {
    let mut cluster = Cluster::start(&["node-a", "node-c"]);
    cluster.start_private_node("node-b");
    let topology = cluster.topology();
    let out_dir = cluster.dir.path().join("bundle");
    let file = repo_path("scenarios/three_agent_triangular_delegation.toml");
    let args = [
        "arena",
        "run",
        file.to_str().unwrap(),
        "--topology",
        topology.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ];
    let output = run_chio(cluster.dir.path(), &args);
    let context = format!("{}\n{}", explain(&args, &output), cluster.logs());
    assert_eq!(output.status.code(), Some(2), "{context}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error[CHIO-TOPOLOGY-STATE-NOT-SHARED]"),
        "{context}"
    );
    assert!(stderr.contains("node node-b"), "{context}");
    assert!(
        stderr.contains(&format!("--control-url {}", cluster.trust.url())),
        "{context}"
    );
    assert!(!stderr.contains("node node-a"), "{context}");
    // No step ran: no kernel appended a receipt, and no bundle was written.
    let receipts = runtime().block_on(async {
        cluster
            .trust_client(TRUST_TOKEN)
            .count_receipts()
            .await
            .expect("count receipts")
    });
    assert_eq!(receipts, 0, "{context}");
    assert!(!out_dir.join("arena.json").exists(), "{context}");
}
