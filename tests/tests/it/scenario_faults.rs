//! Faults declared as scenario steps (`action = "fault"`), inflicted on real
//! processes by `--topology local`: every fault kind (crash, restart with
//! and without state, partition, heal, stall, delay) runs to a pass, loses
//! no acknowledged receipt (the controller's audit counts every allow of the
//! bundle in trust-control), and gives the embedded run's bytes and a
//! rerun's on a fresh cluster. A topology file, whose processes the
//! controller did not start, refuses a fault scenario. See docs/faults.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chio_arena::{load_scenario, FaultAction};
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

/// Attacks at the edges of faults. Bob's share is allowed, then his call
/// across a partition from kernel-a is denied by his node and allowed again
/// once healed. Alice revokes it; while kernel-a is cut from trust-control
/// the revoked share is denied for the store (never allowed from stale
/// state), and after the heal for its revocation. Alice's tool budget
/// allows three reads and counts every read she authorised, so Bob's two
/// admitted reads under her delegation spend two; trust-control stalls for
/// 3 virtual ms: her read during the stall and the one 1 ms before its end
/// are denied and hold nothing, the one at the instant it ends is admitted
/// as the third, and the next meets the exhausted budget.
const NEIGHBOUR_STEPS: &str = r#"
[[budgets]]
agent = "alice"
server = "workspace-a"
tool = "read_file"
max_invocations = 3

[[steps]]
id = "alice-to-bob"
agent = "alice"
action = "delegate"
capability = "alice-files"
to = "bob"
delegation = "bob-files"
tools = ["read_file"]
path_prefix = "/workspace/shared/"

[[steps]]
id = "bob-reads-before-the-cut"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "allow"

[[steps]]
id = "cut-node-b-from-node-a"
agent = "alice"
action = "fault"
fault = "partition"
between = ["node-b", "node-a"]

[[steps]]
id = "bob-reads-across-the-cut"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "deny"
expect_reason = "kernel kernel-a on node node-a is unreachable from node node-b: the link is unavailable"

[[steps]]
id = "heal-node-b-and-node-a"
agent = "alice"
action = "fault"
fault = "heal"
between = ["node-a", "node-b"]

[[steps]]
id = "bob-reads-after-the-heal"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "allow"

[[steps]]
id = "alice-revokes-bob"
agent = "alice"
action = "revoke"
target = "bob-files"

[[steps]]
id = "cut-node-a-from-trust-control"
agent = "alice"
action = "fault"
fault = "partition"
between = ["node-a", "trust-control"]

[[steps]]
id = "bob-presents-the-revoked-share-while-cut-off"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "deny"
expect_reason = "revocation store unavailable: trust-control unavailable"

[[steps]]
id = "heal-node-a-and-trust-control"
agent = "alice"
action = "fault"
fault = "heal"
between = ["trust-control", "node-a"]

[[steps]]
id = "bob-presents-the-revoked-share-after-the-heal"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "deny"
expect_reason = "capability has been revoked: bob-files"

[[steps]]
id = "stall-trust-control"
agent = "alice"
action = "fault"
fault = "stall"
duration_ms = 3

[[steps]]
id = "alice-reads-during-the-stall"
agent = "alice"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "deny"
expect_reason = "revocation store unavailable: trust-control deadline exceeded"

[[steps]]
id = "alice-reads-1-ms-before-the-stall-ends"
agent = "alice"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "deny"
expect_reason = "revocation store unavailable: trust-control deadline exceeded"

[[steps]]
id = "alice-reads-as-the-stall-ends"
agent = "alice"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "allow"

[[steps]]
id = "alice-reads-over-budget"
agent = "alice"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "deny"
expect_reason = "exhausted: 3 of 3 used"
"#;

/// A scenario `id` in `dir` on the partition scenario's world with
/// `steps` (which may add budgets) as its schedule.
fn on_the_partition_world(dir: &Path, id: &str, steps: &str) -> PathBuf {
    let world = std::fs::read_to_string(repo_path(
        "scenarios/fault_revocation_during_partition.toml",
    ))
    .expect("reference scenario");
    let head = &world[..world.find("[[steps]]").expect("steps")];
    let head = head.replace(
        "id = \"fault_revocation_during_partition\"",
        &format!("id = \"{id}\""),
    );
    copy_tree(
        &repo_path("scenarios/fixtures/triangular"),
        &dir.join("fixtures/triangular"),
    );
    write_scenario(dir, &format!("{head}{steps}"), &[])
}

/// A scenario in `dir` on the partition scenario's world whose only fault
/// is a delay.
fn delay_scenario(dir: &Path) -> PathBuf {
    on_the_partition_world(dir, "fault_delay", DELAY_STEPS)
}

/// Frank and mia, readers on node-b, for the restarts appended to the
/// labels-at-rest scenario.
const LATE_READERS: &str = r#"
[[agents]]
id = "frank"
role = "payer"
model = "recorded:frank"
seed_prompt_ref = "prompts/integrity-payer.txt"
kernel = "kernel-b"

[[agents]]
id = "mia"
role = "control"
model = "recorded:mia"
seed_prompt_ref = "prompts/integrity-control.txt"
kernel = "kernel-b"

[[grants]]
id = "frank-files"
agent = "frank"
server = "files"
tools = ["read_file"]
path_prefix = "/workspace/"

[[grants]]
id = "frank-payments"
agent = "frank"
server = "payments"
tools = ["http_post"]

[[grants]]
id = "mia-files"
agent = "mia"
server = "files"
tools = ["read_file"]
path_prefix = "/workspace/"

[[grants]]
id = "mia-payments"
agent = "mia"
server = "payments"
tools = ["http_post"]

"#;

/// After the schedule of labels_at_rest: the reader's node restarts and
/// frank still reads alice's overwrite of the todo fixture tainted; then the
/// workspace's node restarts, which reseeds its files from the fixtures,
/// data and labels together, so mia finds no copy and a clean todo list.
const RESTARTS: &str = r#"
[[steps]]
id = "crash-node-b"
agent = "alice"
action = "fault"
fault = "crash"
node = "node-b"
at = 40

[[steps]]
id = "restart-node-b"
agent = "alice"
action = "fault"
fault = "restart"
node = "node-b"
keep_state = true
at = 41

[[steps]]
id = "frank-reads-todo"
agent = "frank"
server = "files"
tool = "read_file"
arguments = { path = "/workspace/notes/todo.txt" }
expect_verdict = "allow"
at = 42

[[steps]]
id = "frank-pays"
agent = "frank"
server = "payments"
tool = "http_post"
arguments = { url = "https://payments.test/transfer", to = "IBAN-X", amount = "900" }
expect_verdict = "deny"
expect_reason = "integrity: session/frank holds untrusted content; tool http_post on server payments is consequential"
at = 43

[[steps]]
id = "crash-node-a"
agent = "alice"
action = "fault"
fault = "crash"
node = "node-a"
at = 44

[[steps]]
id = "restart-node-a"
agent = "alice"
action = "fault"
fault = "restart"
node = "node-a"
keep_state = true
at = 45

[[steps]]
id = "mia-reads-copy"
agent = "mia"
server = "files"
tool = "read_file"
arguments = { path = "/workspace/notes/invoice-copy.txt" }
expect_verdict = "allow"
at = 46

[[steps]]
id = "mia-reads-todo"
agent = "mia"
server = "files"
tool = "read_file"
arguments = { path = "/workspace/notes/todo.txt" }
expect_verdict = "allow"
at = 47

[[steps]]
id = "mia-pays"
agent = "mia"
server = "payments"
tool = "http_post"
arguments = { url = "https://payments.test/transfer", to = "IBAN-X", amount = "900" }
expect_verdict = "allow"
at = 48
"#;

/// The labels-at-rest reference scenario in `dir` with frank, mia and
/// the restarts of both nodes after its schedule.
fn labels_at_rest_with_restarts(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(repo_path("scenarios/labels_at_rest.toml"))
        .expect("reference scenario");
    let steps = text.find("[[steps]]").expect("steps");
    let (head, schedule) = text.split_at(steps);
    let head = head.replace(
        "id = \"labels_at_rest\"",
        "id = \"labels_at_rest_with_restarts\"",
    );
    for folder in ["prompts", "fixtures/labels-at-rest"] {
        copy_tree(
            &repo_path(&format!("scenarios/{folder}")),
            &dir.join(folder),
        );
    }
    write_scenario(
        dir,
        &format!("{head}{LATE_READERS}{schedule}{RESTARTS}"),
        &[],
    )
}

/// After the schedule of recorded_git: the git server's node restarts, so
/// its server starts afresh with no answer used (as a workspace reseeds its
/// files): the log call both recorded answers were used for is answered
/// again, by the first, and a commit message read from it is sent.
const RECORDED_RESTART: &str = r#"
[[steps]]
id = "crash-node-a"
agent = "dev"
action = "fault"
fault = "crash"
node = "node-a"
at = 40

[[steps]]
id = "restart-node-a"
agent = "dev"
action = "fault"
fault = "restart"
node = "node-a"
keep_state = true
at = 41

[[steps]]
id = "log-after-restart"
agent = "dev"
server = "git"
tool = "git_log"
arguments = { repo_path = "/repo", max_count = 1 }
expect_verdict = "allow"
at = 42

[[steps]]
id = "commit-the-first-log-line"
agent = "dev"
server = "git"
tool = "git_commit"
arguments = { repo_path = "/repo", message = { from_step = "log-after-restart", pointer = "/output/0" } }
expect_verdict = "allow"
at = 43
"#;

/// The recorded-git reference scenario in `dir` with a restart of the git
/// server's node after its schedule.
fn recorded_git_with_restart(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(repo_path("scenarios/recorded_git.toml"))
        .expect("reference scenario");
    let text = text.replace(
        "id = \"recorded_git\"",
        "id = \"recorded_git_with_restart\"",
    );
    for folder in ["prompts", "fixtures/recorded-git"] {
        copy_tree(
            &repo_path(&format!("scenarios/{folder}")),
            &dir.join(folder),
        );
    }
    write_scenario(dir, &format!("{text}{RECORDED_RESTART}"), &[])
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
        .fault_steps()
        .map(|fault| match fault {
            FaultAction::Restart { keep_state, .. } => format!("restart keep_state={keep_state}"),
            fault => fault.kind().to_string(),
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
    files.push(recorded_git_with_restart(&dir.path().join("recorded")));
    // Last: its step records are read below.
    files.push(labels_at_rest_with_restarts(&dir.path().join("labels")));
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
    // The restarted reader still reads the overwrite tainted; the reseeded workspace reads clean.
    let labels = step_records(&dir.path().join(format!("{}-local", files.len() - 1)));
    let integrity = |step: &str| labels[step]["trace"]["output_integrity"].clone();
    assert_eq!(integrity("frank-reads-todo"), "integrity:untrusted");
    assert_eq!(integrity("mia-reads-todo"), serde_json::Value::Null);
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

/// Each step record of a bundle by step id.
fn step_records(bundle: &Path) -> BTreeMap<String, serde_json::Value> {
    let text = std::fs::read_to_string(bundle.join("arena.json")).expect("manifest");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("manifest JSON");
    manifest["steps"]
        .as_array()
        .expect("step records")
        .iter()
        .map(|record| {
            let id = record["step_id"].as_str().unwrap_or_default();
            (id.to_string(), record.clone())
        })
        .collect()
}

// Proves no fault turns into an allow at its edges, embedded and on real processes alike: a call across a partition to a kernel that would allow is denied by the agent's node and allowed after the heal; a revoked share is denied while its kernel is cut from trust-control and for its revocation after; a read during a stall and 1 ms before its end is denied with the kernel's trace and holds no budget, the read at its end is admitted; every admitted call's receipt is in trust-control and the bundles are byte-identical.
#[test]
fn no_fault_turns_into_an_allow_at_its_edges() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = on_the_partition_world(&dir.path().join("edges"), "fault_edges", NEIGHBOUR_STEPS);
    let (embedded, local) = (dir.path().join("embedded"), dir.path().join("local"));
    run_passing(dir.path(), &file, &embedded, false);
    let stderr = run_passing(dir.path(), &file, &local, true);
    let audit = "every admitted call's receipt is in trust-control allows=3";
    assert!(stderr.contains(audit), "no audit of 3 allows\n{stderr}");
    assert_eq!(tree(&embedded), tree(&local), "local differs from embedded");
    let records = step_records(&embedded);
    let at = |id: &str| {
        records[id]["virtual_time"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(at("stall-trust-control"), "2026-07-01T09:00:00.011Z");
    assert_eq!(
        at("alice-reads-1-ms-before-the-stall-ends"),
        "2026-07-01T09:00:00.013Z"
    );
    assert_eq!(
        at("alice-reads-as-the-stall-ends"),
        "2026-07-01T09:00:00.014Z"
    );
    // The node's deny has no kernel behind it; the kernel's deny during the
    // stall carries its trace and a receipt recorded nowhere.
    let across = &records["bob-reads-across-the-cut"];
    assert!(
        across["receipt_id"].is_null() && across["trace"].is_null(),
        "{across}"
    );
    let stalled = &records["alice-reads-during-the-stall"];
    assert_eq!(stalled["recorded"], false, "{stalled}");
    assert!(stalled["trace"].is_object(), "{stalled}");
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

/// Calls in flight over a 1 s delay. Bob sends three reads at +10, +11
/// and +12 ms; they reach kernel-a at +1,010, +1,011 and +1,012 ms. The
/// first share is revoked at +20 ms (before its call arrives), the second
/// at +1,011 ms (the exact instant its call arrives: a step scheduled at an
/// instant is applied first), the third at +1,013 ms (after its call is
/// decided). Alice's read at +30 ms is decided before bob's earlier calls.
/// After a heal and a second delay, a call in flight when kernel-a's node
/// crashes is lost, though the node is back before it would arrive; the
/// next call after the restart is admitted.
const IN_FLIGHT_STEPS: &str = r#"
[[steps]]
id = "alice-to-bob-early"
agent = "alice"
action = "delegate"
capability = "alice-files"
to = "bob"
delegation = "bob-early"
tools = ["read_file"]
path_prefix = "/workspace/shared/"
share_bps = 2500
at = 0

[[steps]]
id = "alice-to-bob-edge"
agent = "alice"
action = "delegate"
capability = "alice-files"
to = "bob"
delegation = "bob-edge"
tools = ["read_file"]
path_prefix = "/workspace/shared/"
share_bps = 2500
at = 1

[[steps]]
id = "alice-to-bob-late"
agent = "alice"
action = "delegate"
capability = "alice-files"
to = "bob"
delegation = "bob-late"
tools = ["read_file"]
path_prefix = "/workspace/shared/"
share_bps = 2500
at = 2

[[steps]]
id = "alice-to-bob-crash"
agent = "alice"
action = "delegate"
capability = "alice-files"
to = "bob"
delegation = "bob-crash"
tools = ["read_file"]
path_prefix = "/workspace/shared/"
share_bps = 2500
at = 3

[[steps]]
id = "slow-node-b-to-node-a"
agent = "alice"
action = "fault"
fault = "delay"
between = ["node-b", "node-a"]
delay_ms = 1000
at = 4

[[steps]]
id = "bob-reads-revoked-in-flight"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
capability = "bob-early"
expect_verdict = "deny"
expect_reason = "revoked"
at = 10

[[steps]]
id = "bob-reads-revoked-as-it-arrives"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
capability = "bob-edge"
expect_verdict = "deny"
expect_reason = "revoked"
at = 11

[[steps]]
id = "bob-reads-revoked-after-it-arrives"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
capability = "bob-late"
expect_verdict = "allow"
at = 12

[[steps]]
id = "revoke-bob-early"
agent = "alice"
action = "revoke"
target = "bob-early"
at = 20

[[steps]]
id = "alice-reads-meanwhile"
agent = "alice"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "allow"
at = 30

[[steps]]
id = "revoke-bob-edge"
agent = "alice"
action = "revoke"
target = "bob-edge"
at = 1011

[[steps]]
id = "revoke-bob-late"
agent = "alice"
action = "revoke"
target = "bob-late"
at = 1013

[[steps]]
id = "heal-the-delay"
agent = "alice"
action = "fault"
fault = "heal"
between = ["node-a", "node-b"]
at = 1100

[[steps]]
id = "slow-node-b-to-node-a-again"
agent = "alice"
action = "fault"
fault = "delay"
between = ["node-b", "node-a"]
delay_ms = 1000
at = 1101

[[steps]]
id = "bob-reads-as-node-a-crashes"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
capability = "bob-crash"
expect_verdict = "deny"
expect_reason = "kernel kernel-a cannot decide: node node-a crashed at step crash-node-a while the call was in flight"
at = 1110

[[steps]]
id = "crash-node-a"
agent = "alice"
action = "fault"
fault = "crash"
node = "node-a"
at = 1200

[[steps]]
id = "restart-node-a"
agent = "alice"
action = "fault"
fault = "restart"
node = "node-a"
keep_state = true
at = 1300

[[steps]]
id = "bob-reads-after-the-restart"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
capability = "bob-crash"
expect_verdict = "allow"
at = 1400
"#;

// Proves a call over a delayed link is decided at its arrival instant, after every step scheduled at or before it (a revocation before arrival and at the exact arrival instant deny it, one after does not), that a later undelayed call is decided first while every record keeps its scheduled place with its decision time, and that a crash of the kernel's node while the call is in flight loses it even when the node is back before arrival; embedded and on real processes, byte for byte.
#[test]
fn a_delayed_call_is_decided_when_it_arrives() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = on_the_partition_world(
        &dir.path().join("flight"),
        "fault_in_flight",
        IN_FLIGHT_STEPS,
    );
    let (embedded, local) = (dir.path().join("embedded"), dir.path().join("local"));
    run_passing(dir.path(), &file, &embedded, false);
    run_passing(dir.path(), &file, &local, true);
    assert_eq!(tree(&embedded), tree(&local), "local differs from embedded");
    let text = std::fs::read_to_string(embedded.join("arena.json")).expect("manifest");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("manifest JSON");
    let order: Vec<&str> = manifest["steps"]
        .as_array()
        .expect("step records")
        .iter()
        .map(|record| record["step_id"].as_str().unwrap_or_default())
        .collect();
    let scheduled: Vec<&str> = IN_FLIGHT_STEPS
        .lines()
        .filter_map(|line| line.strip_prefix("id = \""))
        .map(|id| id.trim_end_matches('"'))
        .collect();
    assert_eq!(order, scheduled, "records leave their scheduled place");
    let records = step_records(&embedded);
    let field = |id: &str, key: &str| records[id][key].as_str().map(str::to_string);
    for (id, decided) in [
        ("bob-reads-revoked-in-flight", "2026-07-01T09:00:01.010Z"),
        (
            "bob-reads-revoked-as-it-arrives",
            "2026-07-01T09:00:01.011Z",
        ),
        (
            "bob-reads-revoked-after-it-arrives",
            "2026-07-01T09:00:01.012Z",
        ),
        ("bob-reads-as-node-a-crashes", "2026-07-01T09:00:02.110Z"),
    ] {
        assert_eq!(field(id, "decided_time").as_deref(), Some(decided), "{id}");
    }
    assert_eq!(
        field("bob-reads-revoked-in-flight", "virtual_time").as_deref(),
        Some("2026-07-01T09:00:00.010Z")
    );
    assert_eq!(field("alice-reads-meanwhile", "decided_time"), None);
    // The allow's receipt is stamped at its arrival, before the revocation
    // that follows it.
    let receipts = std::fs::read_to_string(embedded.join("receipts.ndjson")).expect("receipts");
    let receipt = |id: &str| {
        receipts
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("receipt"))
            .find(|receipt| receipt["body"]["request_id"] == id)
            .unwrap_or_else(|| panic!("no receipt for {id}"))
    };
    let (late, meanwhile) = (
        receipt("bob-reads-revoked-after-it-arrives"),
        receipt("alice-reads-meanwhile"),
    );
    assert_eq!(late["body"]["decision"]["verdict"], "allow", "{late}");
    let stamp = |receipt: &serde_json::Value| receipt["body"]["timestamp_ms"].as_u64();
    assert_eq!(
        stamp(&late).zip(stamp(&meanwhile)).map(|(l, m)| l - m),
        Some(1012 - 30),
        "the late allow is stamped at its arrival"
    );
    // A kernel that decided the revoked calls signed their denies.
    let early = receipt("bob-reads-revoked-in-flight");
    assert_eq!(early["body"]["decision"]["verdict"], "deny", "{early}");
}

/// A call in flight when a later step stops the run, before the call
/// arrives: alice's read expects the wrong verdict.
const STOP_IN_FLIGHT_STEPS: &str = r#"
[[steps]]
id = "alice-to-bob"
agent = "alice"
action = "delegate"
capability = "alice-files"
to = "bob"
delegation = "bob-files"
tools = ["read_file"]
path_prefix = "/workspace/shared/"

[[steps]]
id = "slow-node-b-to-node-a"
agent = "alice"
action = "fault"
fault = "delay"
between = ["node-b", "node-a"]
delay_ms = 1000

[[steps]]
id = "bob-reads-in-flight"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "deny"
expect_reason = "run-stopped-before-arrival"

[[steps]]
id = "alice-reads-expecting-the-wrong-verdict"
agent = "alice"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "deny"

[[steps]]
id = "alice-reads-never"
agent = "alice"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "allow"
"#;

/// Runs `file` with `mode`'s flags into `dir/name`, asserts that a
/// mismatch stopped it (exit 1), and gives the bundle folder and standard
/// error.
fn stopped_run(dir: &Path, file: &Path, name: &str, mode: &[&str]) -> (PathBuf, String) {
    let out = dir.join(name);
    let (file, out_arg) = (file.display().to_string(), out.display().to_string());
    let mut args = vec!["arena", "run", &file, "--out", &out_arg];
    args.extend_from_slice(mode);
    let output = run_chio(dir, &args);
    assert_eq!(output.status.code(), Some(1), "{}", explain(&args, &output));
    (out, String::from_utf8_lossy(&output.stderr).into_owned())
}

// Proves a run stopped by a mismatch while a call is in flight still records that call, at its scheduled place, before the step that stopped the run, as the controller's deny naming the stop (the call arrives after the stop's instant, so no kernel decides it: no receipt), and runs nothing scheduled after it; embedded and on real processes, byte for byte.
#[test]
fn a_stop_still_records_the_calls_in_flight() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = on_the_partition_world(
        &dir.path().join("stop"),
        "fault_stop_in_flight",
        STOP_IN_FLIGHT_STEPS,
    );
    let mut trees = Vec::new();
    for local in [false, true] {
        let mode: &[&str] = if local { &["--topology", "local"] } else { &[] };
        let (out, stderr) = stopped_run(dir.path(), &file, &format!("out-{local}"), mode);
        assert!(
            stderr.contains("step alice-reads-expecting-the-wrong-verdict expected deny"),
            "{stderr}"
        );
        let text = std::fs::read_to_string(out.join("arena.json")).expect("manifest");
        let manifest: serde_json::Value = serde_json::from_str(&text).expect("manifest JSON");
        let steps = manifest["steps"].as_array().expect("step records");
        let order: Vec<&str> = steps
            .iter()
            .map(|record| record["step_id"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            order,
            [
                "alice-to-bob",
                "slow-node-b-to-node-a",
                "bob-reads-in-flight",
                "alice-reads-expecting-the-wrong-verdict"
            ],
            "{text}"
        );
        let landed = &steps[2];
        assert_eq!(landed["actual"], "deny", "{landed}");
        assert_eq!(
            landed["reason"],
            "call refused: the run stopped at step alice-reads-expecting-the-wrong-verdict before this call arrived",
            "{landed}"
        );
        assert_eq!(landed["reason_code"], "run-stopped-before-arrival");
        assert!(landed["receipt_id"].is_null(), "{landed}");
        assert_eq!(
            landed["decided_time"], "2026-07-01T09:00:00.003Z",
            "{landed}"
        );
        trees.push(tree(&out));
    }
    assert_eq!(trees[0], trees[1], "local differs from embedded");
}

/// A delayed call that itself stops the run: bob's read of a path outside
/// his delegation expects an allow and is decided at its arrival (+1,030);
/// his second read, sent after it, is still in flight then; alice's read
/// at +500 is decided before the arrival.
const DELAYED_STOP_STEPS: &str = r#"
[[steps]]
id = "alice-to-bob"
at = 0
agent = "alice"
action = "delegate"
capability = "alice-files"
to = "bob"
delegation = "bob-files"
tools = ["read_file"]
path_prefix = "/workspace/shared/"

[[steps]]
id = "slow-node-b-to-node-a"
at = 10
agent = "alice"
action = "fault"
fault = "delay"
between = ["node-b", "node-a"]
delay_ms = 1000

[[steps]]
id = "bob-reads-outside-expecting-allow"
at = 30
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/private/ledger.md" }
expect_verdict = "allow"

[[steps]]
id = "bob-reads-sent-after"
at = 40
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "allow"

[[steps]]
id = "alice-reads-before-the-arrival"
at = 500
agent = "alice"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "allow"

[[steps]]
id = "alice-reads-never"
at = 5000
agent = "alice"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "allow"
"#;

// Proves a delayed call that itself stops the run ends it at its arrival: the step decided before the arrival stays recorded after it, a call sent after it and still in flight is never decided (no record, no receipt), nothing later runs, and the run exits 1 for the mismatch; embedded, on real processes and one step at a time, byte for byte.
#[test]
fn a_delayed_call_that_stops_the_run_ends_it_at_its_arrival() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = on_the_partition_world(
        &dir.path().join("stop"),
        "fault_delayed_stop",
        DELAYED_STOP_STEPS,
    );
    let mut trees = Vec::new();
    for mode in [
        &[][..],
        &["--topology", "local"][..],
        &["--one-at-a-time"][..],
    ] {
        let (out, stderr) = stopped_run(dir.path(), &file, &format!("out-{}", trees.len()), mode);
        assert!(
            stderr.contains("CHIO-ARENA-UNEXPECTED-VERDICT")
                && stderr.contains("step bob-reads-outside-expecting-allow expected allow"),
            "{stderr}"
        );
        let records = step_records(&out);
        let order: Vec<&str> = records.keys().map(String::as_str).collect();
        assert_eq!(
            order,
            [
                "alice-reads-before-the-arrival",
                "alice-to-bob",
                "bob-reads-outside-expecting-allow",
                "slow-node-b-to-node-a"
            ],
            "the call sent after the stopping one is never decided"
        );
        let receipts = std::fs::read_to_string(out.join("receipts.ndjson")).unwrap();
        assert_eq!(receipts.lines().count(), 2, "{receipts}");
        trees.push(tree(&out));
    }
    assert_eq!(trees[0], trees[1], "local differs from embedded");
    assert_eq!(trees[0], trees[2], "one at a time differs from embedded");
}

/// The planner / reader reference scenario with the planner's node crashed
/// and restarted (fresh, holding only its grants) after every hand-over and
/// before the planner uses any of them.
fn planner_reader_with_restart(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(repo_path("scenarios/planner_reader.toml"))
        .expect("reference scenario");
    let text = text.replace(
        "id = \"planner_reader\"",
        "id = \"planner_reader_with_restart\"",
    );
    let first_use = text
        .find("[[steps]]\nid = \"planner-pays-rent\"")
        .expect("the planner's first call");
    let (before, after) = text.split_at(first_use);
    let restart = r#"[[steps]]
id = "crash-planner-node"
agent = "planner"
action = "fault"
fault = "crash"
node = "node-b"
at = 150

[[steps]]
id = "restart-planner-node"
agent = "planner"
action = "fault"
fault = "restart"
node = "node-b"
keep_state = false
at = 160

"#;
    for folder in ["prompts", "fixtures/planner-reader"] {
        copy_tree(
            &repo_path(&format!("scenarios/{folder}")),
            &dir.join(folder),
        );
    }
    write_scenario(dir, &format!("{before}{restart}{after}"), &[])
}

// Proves a hand-over's record outlives a restart of the planner's node on real processes: across two kernels on two node processes, the restarted planner pays from the handed-over IBAN (allowlisted), is refused the injected IBAN by its own labels, and the bundle is the embedded run's byte for byte.
#[test]
fn hand_overs_keep_their_labels_across_a_restart_of_the_planners_node() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = planner_reader_with_restart(&dir.path().join("planner"));
    let (embedded, local) = (dir.path().join("embedded"), dir.path().join("local"));
    run_passing(dir.path(), &file, &embedded, false);
    run_passing(dir.path(), &file, &local, true);
    assert_eq!(tree(&embedded), tree(&local), "local differs from embedded");
    let records = step_records(&local);
    assert_eq!(records["planner-pays-rent"]["actual"], "allow");
    let refused = &records["planner-pays-injected-iban"];
    assert_eq!(refused["reason_code"], "untrusted-argument");
    assert_eq!(
        refused["trace"]["argument_labels"]["/recipient"],
        serde_json::json!(["integrity:untrusted"])
    );
    assert_eq!(
        refused["trace"]["label_keys"]["handover/planner/hand-injected-iban"],
        serde_json::json!(["integrity:untrusted", "public"])
    );
    assert_eq!(
        records["reader-pays-itself"]["reason_code"],
        "quarantined-consequential"
    );
    assert_eq!(records["hand-the-bill-as-iban"]["actual"], "refused");
}

/// Kernel-a admits requests at most 1 virtual second old. Bob's share
/// crosses a link from node-b delayed by exactly the bound, then by 1 ms
/// more, then not at all; alice's own calls on node-a never wait.
const AGE_STEPS: &str = r#"
[[steps]]
id = "alice-to-bob"
agent = "alice"
action = "delegate"
capability = "alice-files"
to = "bob"
delegation = "bob-files"
tools = ["read_file"]
path_prefix = "/workspace/shared/"

[[steps]]
id = "slow-node-b-by-the-bound"
agent = "alice"
action = "fault"
fault = "delay"
between = ["node-b", "node-a"]
delay_ms = 1000

[[steps]]
id = "bob-reads-at-the-bound"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "allow"

[[steps]]
id = "heal-the-first-delay"
agent = "alice"
action = "fault"
fault = "heal"
between = ["node-a", "node-b"]
at = 1100

[[steps]]
id = "slow-node-b-past-the-bound"
agent = "alice"
action = "fault"
fault = "delay"
between = ["node-b", "node-a"]
delay_ms = 1001
at = 1101

[[steps]]
id = "bob-reads-past-the-bound"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "deny"
expect_reason = "request-stale"
at = 1102

[[steps]]
id = "alice-reads-unslowed"
agent = "alice"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "allow"
at = 1103

[[steps]]
id = "heal-the-second-delay"
agent = "alice"
action = "fault"
fault = "heal"
between = ["node-a", "node-b"]
at = 2300

[[steps]]
id = "bob-reads-in-time"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
expect_verdict = "allow"
at = 2301
"#;

// Proves a kernel's request-age bound meets the delay of the link a call crosses: a call delayed by exactly the bound is admitted, one delayed 1 ms past it is refused as stale by the serving kernel with a signed receipt, an undelayed call and the same call once healed are admitted; embedded and on real processes, byte for byte. A run that stops at the delayed call (its expectation changed) exits 1 at that step, keeping the later call decided before it arrived, embedded, local and one at a time alike.
#[test]
fn a_request_delayed_past_its_kernels_age_bound_is_stale() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = on_the_partition_world(&dir.path().join("age"), "fault_request_age", AGE_STEPS);
    let text = std::fs::read_to_string(&file).expect("scenario");
    let bounded = text.replacen(
        "id = \"kernel-a\"\nnode = \"node-a\"\n",
        "id = \"kernel-a\"\nnode = \"node-a\"\nmax_request_age_ms = 1000\n",
        1,
    );
    assert_ne!(bounded, text, "kernel-a is declared as expected");
    std::fs::write(&file, bounded).expect("scenario written");
    let (embedded, local) = (dir.path().join("embedded"), dir.path().join("local"));
    run_passing(dir.path(), &file, &embedded, false);
    let stderr = run_passing(dir.path(), &file, &local, true);
    assert!(
        stderr.contains("every admitted call's receipt is in trust-control allows=3"),
        "{stderr}"
    );
    assert_eq!(tree(&embedded), tree(&local), "local differs from embedded");
    let records = step_records(&embedded);
    let stale = &records["bob-reads-past-the-bound"];
    assert_eq!(stale["trace"]["reason_code"], "request-stale", "{stale}");
    assert!(stale["receipt_id"].is_string(), "{stale}");
    assert_eq!(
        records["bob-reads-at-the-bound"]["decided_time"],
        "2026-07-01T09:00:01.002Z"
    );

    // Expecting the stale call to pass stops the run there, with exit 1
    // and its mismatch, although alice's later call, decided before the
    // stale one arrived, is recorded after it.
    let bounded = std::fs::read_to_string(&file).expect("scenario");
    let at = bounded
        .find("id = \"bob-reads-past-the-bound\"")
        .expect("the stale step");
    let mut wrong = bounded.clone();
    wrong.replace_range(
        at..,
        &bounded[at..]
            .replacen("expect_verdict = \"deny\"", "expect_verdict = \"allow\"", 1)
            .replacen("expect_reason = \"request-stale\"\n", "", 1),
    );
    std::fs::write(&file, wrong).expect("scenario written");
    let stopped = |out: &Path, mode: &str| {
        let (file, out) = (file.display().to_string(), out.display().to_string());
        let mut args = vec!["arena", "run", &file, "--out", &out, "--json"];
        match mode {
            "local" => args.extend(["--topology", "local"]),
            "one-at-a-time" => args.push("--one-at-a-time"),
            _ => {}
        }
        let output = run_chio(dir.path(), &args);
        assert_eq!(output.status.code(), Some(1), "{}", explain(&args, &output));
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("--json");
        assert_eq!(report["outcome"]["stopped_at"], "bob-reads-past-the-bound");
    };
    let (embedded, local) = (
        dir.path().join("stopped-embedded"),
        dir.path().join("stopped-local"),
    );
    let one = dir.path().join("stopped-one-at-a-time");
    stopped(&embedded, "embedded");
    stopped(&local, "local");
    stopped(&one, "one-at-a-time");
    assert_eq!(tree(&embedded), tree(&local), "local differs from embedded");
    assert_eq!(tree(&embedded), tree(&one), "one at a time differs");
    let order: Vec<String> = step_records(&embedded).into_keys().collect();
    assert!(
        order.contains(&"alice-reads-unslowed".to_string()),
        "{order:?}"
    );
    assert!(
        !order.contains(&"bob-reads-in-time".to_string()),
        "{order:?}"
    );
}
