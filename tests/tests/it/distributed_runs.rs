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

// A second run's LoadWorld makes the first run's next commands fail with a refusal naming both runs (never a verdict decided under the second run's world), while the second run's commands are decided.
#[test]
fn a_second_runs_world_refuses_the_first_runs_commands() {
    let cluster = Cluster::start(&["node-a", "node-b", "node-c"]);
    let file = repo_path("scenarios/three_agent_triangular_delegation.toml");
    let nodes = ["node-a", "node-b", "node-c"];
    let rt = runtime();
    let first = cluster.load_world(&rt, &file, "run-first", &nodes);
    let start = first.world.start_ms;
    let read = |id: &str, at: u64| {
        call_command(
            id,
            "alice",
            "alice-files",
            ("workspace-a", "read_file"),
            serde_json::json!({"path": "/workspace/shared/plan.md"}),
            at,
        )
    };
    let decided = rt
        .block_on(first.client("node-a").call(&read("first-read", start)))
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()))
        .decided()
        .unwrap();
    assert_eq!(decided.projected.as_str(), "allow", "{:?}", decided.reason);
    let second = cluster.load_world(&rt, &file, "run-second", &nodes);
    let refused = rt
        .block_on(
            first
                .client("node-a")
                .call(&read("first-read-again", start + 1)),
        )
        .expect_err("the first run's call is refused, not decided");
    let revoke = rt
        .block_on(first.client("node-b").revoke("alice-files", start + 1))
        .expect_err("the first run's revocation is refused, not recorded");
    for error in [refused.to_string(), revoke.to_string()] {
        assert!(error.contains("FailedPrecondition"), "{error}");
        assert!(
            error.contains("run run-second") && error.contains("run run-first"),
            "{error}"
        );
        assert!(error.contains("one run at a time"), "{error}");
    }
    let decided = rt
        .block_on(
            second
                .client("node-a")
                .call(&read("second-read", start + 2)),
        )
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.logs()))
        .decided()
        .unwrap();
    assert_eq!(decided.projected.as_str(), "allow", "{:?}", decided.reason);
}
