//! Load test of the distributed arena: trust-control and eight `chio node
//! serve` processes on loopback run a generated scenario in which many
//! agents on every node read, step after step, through the kernel of the
//! next node, so every call crosses a process boundary. Nothing may be
//! lost: every step has exactly one receipt in the bundle, trust-control
//! holds exactly the bundle's receipts (`CountReceipts` and the listed
//! bodies), and the peak memory (`VmHWM` of `/proc/<pid>/status`) of the
//! controller, trust-control and every node is reported; a node, which
//! loads the world without the schedule, must stay within 150 MiB.
//!
//! Size: `CHIO_LOAD_STEPS` (default 1,000, what CI runs; the full test is
//! `CHIO_LOAD_STEPS=100000`) and `CHIO_LOAD_AGENTS` agents per node (default
//! 4). See docs/benchmarks.md for measured figures.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chio_tests::*;
use chio_trust::TrustStore;

const NODES: usize = 8;

/// The most a node's peak memory may reach, whatever the schedule's length.
const NODE_PEAK_LIMIT_KIB: u64 = 150 * 1024;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `VmHWM` of a live process, in KiB.
fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

// Proves eight node processes and trust-control run the generated load with exactly one receipt per step in the bundle and in trust-control.
#[test]
fn eight_nodes_lose_no_receipt_under_load() {
    let steps = env_usize("CHIO_LOAD_STEPS", 1_000);
    let agents = env_usize("CHIO_LOAD_AGENTS", 4);
    let names: Vec<String> = (0..NODES).map(|n| format!("node-{n}")).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let cluster = Cluster::start(&name_refs);
    let scenario_dir = cluster.dir.path().join("scenario");
    let file = write_scenario(
        &scenario_dir,
        &many_agent_scenario(NODES, agents, steps),
        &[("fixtures/ws/notes.txt", "notes\n")],
    );
    let topology = cluster.topology();
    let out_dir = cluster.dir.path().join("bundle");
    let args = [
        "arena".to_string(),
        "run".to_string(),
        file.display().to_string(),
        "--topology".to_string(),
        topology.display().to_string(),
        "--out".to_string(),
        out_dir.display().to_string(),
    ];
    let stderr_path = cluster.dir.path().join("controller.stderr");
    let started = Instant::now();
    let mut controller = Command::new(chio())
        .args(&args)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("controller starts");
    // VmHWM only grows, so the last reading before exit is the peak.
    let mut controller_hwm = 0;
    let status = loop {
        if let Some(kib) = vm_hwm_kib(controller.id()) {
            controller_hwm = controller_hwm.max(kib);
        }
        if let Some(status) = controller.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let elapsed = started.elapsed();
    let context = || {
        format!(
            "command: chio {}\nstatus: {status}\nstderr:\n{}\n{}",
            args.join(" "),
            std::fs::read_to_string(&stderr_path).unwrap_or_default(),
            cluster.logs()
        )
    };
    assert_eq!(status.code(), Some(0), "{}", context());

    // Exactly one receipt per step in the bundle.
    let bundle = std::fs::read_to_string(out_dir.join("receipts.ndjson")).unwrap();
    let lines: Vec<&str> = bundle.lines().collect();
    assert_eq!(lines.len(), steps, "bundle receipts");
    let mut step_ids = BTreeSet::new();
    for line in &lines {
        let receipt: serde_json::Value = serde_json::from_str(line).unwrap();
        let request = receipt["body"]["request_id"].as_str().unwrap().to_owned();
        assert!(step_ids.insert(request), "a step has two receipts");
    }
    let expected: BTreeSet<String> = (0..steps).map(|i| format!("s-{i:06}")).collect();
    assert!(
        step_ids == expected,
        "the bundle's steps are not the scenario's"
    );

    // Trust-control holds exactly the bundle's receipts.
    let rt = runtime();
    let _entered = rt.enter();
    let trust = cluster.trust_client(TRUST_TOKEN);
    let count = rt.block_on(trust.count_receipts()).unwrap();
    assert_eq!(count, steps as u64, "CountReceipts");
    let mut stored = BTreeSet::new();
    let mut after = 0;
    loop {
        let page = rt.block_on(trust.list_receipts(after, 1_000)).unwrap();
        for receipt in page.receipts {
            assert!(stored.insert(receipt.body), "a receipt is stored twice");
        }
        match page.next_after_seq {
            Some(next) => after = next,
            None => break,
        }
    }
    let in_bundle: BTreeSet<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
    assert!(stored == in_bundle, "trust-control and the bundle disagree");

    // Memory of every process.
    let mut report = format!(
        "load: {steps} steps, {NODES} nodes, {} agents, {:.1} s, {:.0} steps/s\n",
        NODES * agents,
        elapsed.as_secs_f64(),
        steps as f64 / elapsed.as_secs_f64()
    );
    report.push_str(&format!("VmHWM controller: {controller_hwm} KiB\n"));
    let trust_hwm = vm_hwm_kib(cluster.trust.child.id()).expect("trust-control is alive");
    report.push_str(&format!("VmHWM trust-control: {trust_hwm} KiB\n"));
    for (name, proc) in &cluster.nodes {
        let kib = vm_hwm_kib(proc.child.id()).expect("every node is alive");
        assert!(kib > 0);
        // A node loads the world without the schedule, so its peak does not
        // grow with the number of steps.
        assert!(
            kib <= NODE_PEAK_LIMIT_KIB,
            "{name} peaked at {kib} KiB, above {NODE_PEAK_LIMIT_KIB} KiB\n{report}"
        );
        report.push_str(&format!("VmHWM {name}: {kib} KiB\n"));
    }
    assert!(controller_hwm > 0, "the controller's memory was not read");
    eprint!("{report}");
}
