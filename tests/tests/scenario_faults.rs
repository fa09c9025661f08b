//! Faults declared as scenario steps (`action = "fault"`), inflicted on real
//! processes by `--topology local`: every fault kind (crash, restart with
//! and without state, partition, heal, stall, delay) runs to a pass, loses
//! no acknowledged receipt (the controller's audit counts every allow of the
//! bundle in trust-control), and gives the embedded run's bytes and a
//! rerun's on a fresh cluster. A topology file, whose processes the
//! controller did not start, refuses a fault scenario. See docs/faults.md.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use chio_arena::{load_scenario, Action, FaultAction};
use chio_tests::*;

/// The reference scenarios with fault steps.
const REFERENCE: &[&str] = &[
    "fault_revocation_during_partition",
    "fault_crash_between_delegation_and_use",
    "fault_stall_during_budget_hold",
];

/// Bob's share expires 1.5 virtual seconds after it is handed over; over a
/// link delayed by 2 s his call reaches kernel-a after that, and once the
/// link is healed it arrives in time.
const DELAY_STEPS: &str = r#"
[[steps]]
id = "alice-to-bob"
agent = "alice"
action = "delegate"
capability = "alice-files"
to = "bob"
delegation = "bob-files"
tools = ["read_file"]
path_prefix = "/workspace/shared/"
expires_after_ms = 1500

[[steps]]
id = "slow-node-b-to-node-a"
agent = "alice"
action = "fault"
fault = "delay"
between = ["node-b", "node-a"]
delay_ms = 2000

[[steps]]
id = "bob-reads-late"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "deny"
expect_reason = "expired"

[[steps]]
id = "alice-reads-unslowed"
agent = "alice"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "allow"

[[steps]]
id = "heal-the-delay"
agent = "alice"
action = "fault"
fault = "heal"
between = ["node-a", "node-b"]

[[steps]]
id = "bob-reads-in-time"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "allow"
"#;

/// A scenario in `dir` on the partition scenario's world whose only fault
/// is a delay.
fn delay_scenario(dir: &Path) -> PathBuf {
    let world = std::fs::read_to_string(repo_path(
        "scenarios/fault_revocation_during_partition.toml",
    ))
    .expect("reference scenario");
    let head = &world[..world.find("[[steps]]").expect("steps")];
    let head = head.replace(
        "id = \"fault_revocation_during_partition\"",
        "id = \"fault_delay\"",
    );
    copy_tree(
        &repo_path("scenarios/fixtures/triangular"),
        &dir.join("fixtures/triangular"),
    );
    write_scenario(dir, &format!("{head}{DELAY_STEPS}"), &[])
}

/// Runs `chio -v arena run FILE --out OUT [--topology local]` and checks it
/// passes; answers its standard error.
fn run_passing(dir: &Path, file: &Path, out: &Path, local: bool) -> String {
    let (file, out) = (file.display().to_string(), out.display().to_string());
    let mut args = vec!["-v", "arena", "run", &file, "--out", &out];
    if local {
        args.extend(["--topology", "local"]);
    }
    let output = run_chio(dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The number of allows among a bundle's receipts.
fn allows(bundle: &Path) -> usize {
    let text = std::fs::read_to_string(bundle.join("receipts.ndjson")).unwrap_or_default();
    text.lines()
        .filter(|line| {
            let receipt: serde_json::Value = serde_json::from_str(line).expect("receipt");
            receipt["body"]["decision"]["verdict"] == "allow"
        })
        .count()
}

/// Each fault kind a scenario declares (`restart` split by `keep_state`).
fn fault_kinds(file: &Path) -> BTreeSet<String> {
    let scenario = load_scenario(file).expect("loads");
    scenario
        .actions()
        .iter()
        .filter_map(|action| match action {
            Action::Fault(FaultAction::Restart { keep_state, .. }) => {
                Some(format!("restart keep_state={keep_state}"))
            }
            Action::Fault(fault) => Some(fault.kind().to_string()),
            _ => None,
        })
        .collect()
}

// Proves every fault kind, inflicted on real processes, passes, keeps every admitted call's receipt in trust-control, and gives the embedded run's bytes and a fresh rerun's.
#[test]
fn every_fault_kind_runs_locally_identical_to_embedded_and_to_a_rerun() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let mut files: Vec<PathBuf> = REFERENCE
        .iter()
        .map(|name| repo_path(&format!("scenarios/{name}.toml")))
        .collect();
    files.push(delay_scenario(&dir.path().join("delay")));
    let mut kinds = BTreeSet::new();
    for (index, file) in files.iter().enumerate() {
        kinds.extend(fault_kinds(file));
        let out = |label: &str| dir.path().join(format!("{index}-{label}"));
        run_passing(dir.path(), file, &out("embedded"), false);
        let stderr = run_passing(dir.path(), file, &out("local"), true);
        let admitted = allows(&out("local"));
        assert!(admitted > 0, "{file:?} admits nothing");
        let audit = format!("every admitted call's receipt is in trust-control allows={admitted}");
        assert!(
            stderr.contains(&audit),
            "{file:?}: no audit of {admitted} allows\n{stderr}"
        );
        run_passing(dir.path(), file, &out("rerun"), true);
        let embedded = tree(&out("embedded"));
        assert_eq!(
            embedded,
            tree(&out("local")),
            "{file:?}: local differs from embedded"
        );
        assert_eq!(embedded, tree(&out("rerun")), "{file:?}: the rerun differs");
    }
    let every: BTreeSet<String> = [
        "crash",
        "restart keep_state=true",
        "restart keep_state=false",
        "partition",
        "heal",
        "stall",
        "delay",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    assert_eq!(kinds, every, "a fault kind is not exercised");
}

// Proves a topology file (processes the controller did not start) refuses a fault scenario before anything is sent, naming the fix.
#[test]
fn a_topology_file_refuses_a_fault_scenario() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = repo_path("scenarios/fault_crash_between_delegation_and_use.toml");
    let (file, topology) = (
        file.display().to_string(),
        dir.path().join("topology.toml").display().to_string(),
    );
    let args = ["arena", "run", &file, "--topology", &topology];
    let output = run_chio(dir.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("CHIO-TOPOLOGY-INVALID"), "{stderr}");
    assert!(stderr.contains("--topology local"), "{stderr}");
}
