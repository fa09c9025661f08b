//! Routing between kernels on separate node processes. Three node processes
//! each host one kernel serving one workspace, and one agent enters through
//! each kernel holding a grant for every workspace. The suite proves that
//! every ordered pair of kernels routes a call (each agent reads each
//! workspace, so every pair is crossed both ways) to the kernel serving the
//! target and that kernel alone decides it and signs its receipt; that a
//! capability presented to a server on a kernel it was not issued for is
//! refused there for its scope, for every agent and every wrong server;
//! that the whole run writes the same bundle in the embedded topology; and
//! that a call forwarded to a node that is down is denied by the
//! forwarding node naming that node (never an allow), records nothing, and
//! leaves every other route working.

use std::collections::{BTreeMap, BTreeSet};

use chio_node::{CallAnswer, CallCommand};
use chio_tests::*;
use chio_trust::TrustStore;
use serde_json::{json, Value};

/// The nodes, each hosting the kernel and workspace of the same letter.
const NODES: [&str; 3] = ["a", "b", "c"];

/// The routing scenario: per letter `x`, node `node-x` hosts `kernel-x`
/// serving workspace `ws-x`, and agent `reader-x` enters through
/// `kernel-x` with a grant `reader-x-ws-y` for every workspace `ws-y`.
/// Steps: every agent reads every workspace with the grant for it (allow),
/// then presents each of its grants to every other workspace (deny).
fn routing_scenario() -> String {
    let mut text = String::from(
        r#"id = "multi_kernel_routing"
title = "every pair of kernels on three node processes routes both ways"
schema_version = "chio.arena.scenario/v1"
rng_seed = 41
virtual_clock_start = "2026-01-05T08:00:00.000Z"

[determinism]
rng_seed = 41
virtual_clock_start = "2026-01-05T08:00:00.000Z"
scheduler = "deterministic-multi-v1"
locale = "C"
"#,
    );
    for x in NODES {
        text.push_str(&format!(
            "\n[[nodes]]\nid = \"node-{x}\"\n\n[[kernels]]\nid = \"kernel-{x}\"\nnode = \"node-{x}\"\n\n[[servers]]\nid = \"ws-{x}\"\nkernel = \"kernel-{x}\"\nkind = \"workspace\"\nfixtures = \"fixtures/ws\"\n"
        ));
    }
    for x in NODES {
        text.push_str(&format!(
            "\n[[agents]]\nid = \"reader-{x}\"\nrole = \"reader\"\nmodel = \"recorded:reader\"\nseed_prompt_ref = \"prompts/agent.txt\"\nkernel = \"kernel-{x}\"\n"
        ));
        for y in NODES {
            text.push_str(&format!(
                "\n[[grants]]\nid = \"reader-{x}-ws-{y}\"\nagent = \"reader-{x}\"\nserver = \"ws-{y}\"\ntools = [\"read_file\"]\npath_prefix = \"/workspace/\"\n"
            ));
        }
    }
    for (agent, server, capability, verdict) in routing_steps() {
        let id = step_id(&agent, &server, &capability);
        text.push_str(&format!(
            "\n[[steps]]\nid = \"{id}\"\nagent = \"{agent}\"\nserver = \"{server}\"\ntool = \"read_file\"\narguments = {{ path = \"/workspace/notes.txt\" }}\ncapability = \"{capability}\"\nexpect_verdict = \"{verdict}\"\n"
        ));
        if verdict == "deny" {
            text.push_str(&format!(
                "expect_reason = \"tool read_file on server {server} not covered by any scope grant\"\n"
            ));
        }
    }
    text
}

/// Every step of the routing scenario: (agent, server, capability,
/// expected verdict), the allowed reads first.
fn routing_steps() -> Vec<(String, String, String, &'static str)> {
    let mut steps = Vec::new();
    for x in NODES {
        for y in NODES {
            steps.push((
                format!("reader-{x}"),
                format!("ws-{y}"),
                format!("reader-{x}-ws-{y}"),
                "allow",
            ));
        }
    }
    for x in NODES {
        for issued in NODES {
            for y in NODES.into_iter().filter(|y| *y != issued) {
                steps.push((
                    format!("reader-{x}"),
                    format!("ws-{y}"),
                    format!("reader-{x}-ws-{issued}"),
                    "deny",
                ));
            }
        }
    }
    steps
}

fn step_id(agent: &str, server: &str, capability: &str) -> String {
    format!("{agent}-to-{server}-with-{capability}")
}

/// The kernel that serves `server` (`ws-x` -> `kernel-x`).
fn kernel_of(server: &str) -> String {
    format!("kernel-{}", server.trim_start_matches("ws-"))
}

fn write_routing_scenario(dir: &std::path::Path) -> std::path::PathBuf {
    write_scenario(
        dir,
        &routing_scenario(),
        &[("fixtures/ws/notes.txt", "notes\n")],
    )
}

// Proves every ordered pair of kernels on separate node processes routes a call to the kernel serving its target, which decides it and signs its receipt (stored in trust-control), and that a capability presented to a server on a kernel it was not issued for is refused there for its scope; the bundle is byte-identical to the embedded run's.
#[test]
fn every_pair_of_kernels_routes_both_ways() {
    let cluster = Cluster::start(&["node-a", "node-b", "node-c"]);
    let file = write_routing_scenario(&cluster.dir.path().join("scenario"));
    let topology = cluster.topology();
    let out = cluster.dir.path().join("bundle");
    let args = [
        "arena",
        "run",
        file.to_str().expect("utf-8 path"),
        "--topology",
        topology.to_str().expect("utf-8 path"),
        "--json",
        "--out",
        out.to_str().expect("utf-8 path"),
    ];
    let output = run_chio(cluster.dir.path(), &args);
    let context = format!("{}\n{}", explain(&args, &output), cluster.logs());
    assert_eq!(output.status.code(), Some(0), "{context}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON report");
    assert_eq!(report["outcome"]["status"], "passed", "{context}");
    let reported: BTreeMap<String, &Value> = report["outcome"]["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| (s["step_id"].as_str().unwrap_or_default().to_string(), s))
        .collect();
    let steps = routing_steps();
    assert_eq!(reported.len(), steps.len(), "{context}");
    let mut crossings = BTreeSet::new();
    for (agent, server, capability, verdict) in &steps {
        let id = step_id(agent, server, capability);
        let step = reported
            .get(&id)
            .unwrap_or_else(|| panic!("no step {id}: {context}"));
        assert_eq!(step["agent"], agent.as_str(), "{id}");
        assert_eq!(
            step["kernel"],
            kernel_of(server).as_str(),
            "{id}: decided elsewhere"
        );
        assert_eq!(step["actual"], *verdict, "{id}");
        let entry = format!("kernel-{}", agent.trim_start_matches("reader-"));
        if *verdict == "allow" && entry != kernel_of(server) {
            crossings.insert((entry, kernel_of(server)));
        }
    }
    // Six ordered pairs of distinct kernels: every pair, both ways.
    assert_eq!(
        crossings.len(),
        NODES.len() * (NODES.len() - 1),
        "{crossings:?}"
    );
    let receipts = std::fs::read_to_string(out.join("receipts.ndjson")).expect("receipts");
    let mut signed_by: BTreeMap<String, usize> = BTreeMap::new();
    for line in receipts.lines() {
        let receipt: Value = serde_json::from_str(line).expect("receipt JSON");
        let kernel = receipt["body"]["kernel_id"].as_str().unwrap_or_default();
        *signed_by.entry(kernel.to_string()).or_default() += 1;
    }
    // Each kernel decides its workspace's 3 reads and the 6 wrong-server presentations aimed at it.
    for x in NODES {
        assert_eq!(
            signed_by.get(&format!("kernel-{x}")),
            Some(&9),
            "{signed_by:?}"
        );
    }
    let rt = runtime();
    let _entered = rt.enter();
    let stored = rt
        .block_on(cluster.trust_client(TRUST_TOKEN).list_receipts(0, 1000))
        .expect("list receipts");
    let stored: BTreeSet<Vec<u8>> = stored.receipts.into_iter().map(|r| r.body).collect();
    for line in receipts.lines() {
        assert!(
            stored.contains(line.as_bytes()),
            "not in trust-control: {line}"
        );
    }
    let embedded = cluster.dir.path().join("embedded");
    let args_e = [
        "arena",
        "run",
        file.to_str().expect("utf-8 path"),
        "--out",
        embedded.to_str().expect("utf-8 path"),
    ];
    let output = run_chio(cluster.dir.path(), &args_e);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        explain(&args_e, &output)
    );
    assert!(
        tree(&embedded) == tree(&out),
        "the bundle depends on the topology"
    );
}

fn read(id: &str, agent: &str, capability: &str, server: &str, now_ms: u64) -> CallCommand {
    let path = json!({"path": "/workspace/notes.txt"});
    call_command(id, agent, capability, (server, "read_file"), path, now_ms)
}

// Proves a call forwarded to a kernel whose node process is down is denied by the forwarding node naming that node and the kind of failure (no OS text), is never allowed and leaves no receipt, while the same node's local kernel and the route to the live node keep working, before and after.
#[test]
fn forwarded_call_to_a_node_that_is_down_names_it() {
    let mut cluster = Cluster::start(&["node-a", "node-b", "node-c"]);
    let file = write_routing_scenario(&cluster.dir.path().join("scenario"));
    let rt = runtime();
    let _entered = rt.enter();
    let loaded = cluster.load_world(&rt, &file, "run-down", &["node-a", "node-b", "node-c"]);
    let start = loaded.world.start_ms;
    let node_a = loaded.client("node-a");
    let trust = cluster.trust_client(TRUST_TOKEN);
    let before = rt
        .block_on(node_a.call(&read("to-c-up", "reader-a", "reader-a-ws-c", "ws-c", start)))
        .unwrap_or_else(|e| panic!("forwarded call while node-c is up: {e}\n{}", cluster.logs()))
        .decided()
        .unwrap_or_else(|refusal| panic!("node-a refused while node-c is up: {refusal}"));
    assert_eq!(before.projected.as_str(), "allow", "{:?}", before.reason);
    assert_eq!(before.receipt.body.kernel_id, "kernel-c");
    let receipts_before = rt.block_on(trust.count_receipts()).expect("count");
    cluster.kill_node("node-c");
    for i in 0..3u64 {
        let id = format!("to-c-down-{i}");
        let result = rt.block_on(node_a.call(&read(
            &id,
            "reader-a",
            "reader-a-ws-c",
            "ws-c",
            start + 1 + i,
        )));
        match result.map(CallAnswer::decided) {
            Ok(Err(refusal)) => {
                assert_eq!(
                    refusal.message,
                    "kernel kernel-c on node node-c is unreachable from node node-a: the link is unavailable",
                    "{id}"
                );
                assert_eq!(refusal.code.as_str(), "kernel-unreachable", "{id}");
            }
            Ok(Ok(outcome)) => panic!(
                "{id}: answered {} ({:?}) with node-c down",
                outcome.projected.as_str(),
                outcome.reason
            ),
            Err(e) => panic!("{id}: node-a failed instead of denying: {e}"),
        }
    }
    assert_eq!(
        rt.block_on(trust.count_receipts()).expect("count"),
        receipts_before,
        "a receipt was recorded for a call no kernel decided"
    );
    for (id, server, kernel) in [("local", "ws-a", "kernel-a"), ("to-b", "ws-b", "kernel-b")] {
        let capability = format!("reader-a-{server}");
        let outcome = rt
            .block_on(node_a.call(&read(id, "reader-a", &capability, server, start + 10)))
            .unwrap_or_else(|e| panic!("{id} with node-c down: {e}\n{}", cluster.logs()))
            .decided()
            .unwrap_or_else(|refusal| panic!("{id}: node-a refused: {refusal}"));
        assert_eq!(
            outcome.projected.as_str(),
            "allow",
            "{id}: {:?}",
            outcome.reason
        );
        assert_eq!(outcome.receipt.body.kernel_id, kernel, "{id}");
    }
    // The reverse direction: node-b forwarding to node-c is denied alike.
    let from_b = rt.block_on(loaded.client("node-b").call(&read(
        "b-to-c-down",
        "reader-b",
        "reader-b-ws-c",
        "ws-c",
        start + 20,
    )));
    assert_eq!(
        from_b
            .map(CallAnswer::decided)
            .map(|answer| answer.err().map(|refusal| refusal.message)),
        Ok(Some(
            "kernel kernel-c on node node-c is unreachable from node node-b: the link is unavailable"
                .to_string()
        )),
    );
}
