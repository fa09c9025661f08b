//! Monetary budgets across real processes: the reference scenario
//! (`scenarios/monetary_budget.toml`) writes the same bundle bytes embedded,
//! across node processes with trust-control on its SQLite file
//! (`--topology local`) and one step at a time; the spent total lives in
//! trust-control, so a restarted kernel does not forget it, and two kernels
//! on two node processes counting one budget see each other's payments.
//! The monetary scope reference scenario (`scenarios/monetary_scope.toml`,
//! a grant's own monetary constraint) is held to the same bytes.

use std::path::Path;

use chio_tests::scenarios::{agent, grant, header, two_nodes};
use chio_tests::*;

/// Runs `file` with `extra` arguments into `out`; the run must pass.
fn run_passing(dir: &Path, file: &Path, out: &Path, extra: &[&str]) {
    let (file, out) = (file.display().to_string(), out.display().to_string());
    let mut args = vec!["arena", "run", file.as_str(), "--out", out.as_str()];
    args.extend_from_slice(extra);
    let output = run_chio(dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
}

/// Runs `file` embedded, with `--topology local`, and each of them with
/// `--one-at-a-time`, and asserts all four bundles are the same bytes.
fn assert_same_everywhere(dir: &Path, file: &Path) {
    let runs: [(&str, &[&str]); 4] = [
        ("embedded", &[]),
        ("embedded-one", &["--one-at-a-time"]),
        ("local", &["--topology", "local"]),
        ("local-one", &["--topology", "local", "--one-at-a-time"]),
    ];
    let mut bundles = Vec::new();
    for (label, extra) in runs {
        let out = dir.join("out").join(label);
        run_passing(dir, file, &out, extra);
        bundles.push((label, tree(&out)));
    }
    let (_, first) = &bundles[0];
    assert!(first.contains_key("arena.json"), "no bundle written");
    for (label, bundle) in &bundles[1..] {
        assert_eq!(
            first.keys().collect::<Vec<_>>(),
            bundle.keys().collect::<Vec<_>>(),
            "{label}: the file lists differ"
        );
        for (path, bytes) in first {
            assert!(
                bytes == &bundle[path],
                "{label}: {path} differs from embedded"
            );
        }
    }
}

/// A world of two nodes: kernel-a on node-a serves `payments-a`, kernel-b
/// on node-b serves `payments-b`, and the clerk enters through kernel-b;
/// `budgets` and `steps` are appended.
fn payments_world(id: &str, title: &str, budgets: &str, steps: &str) -> String {
    let mut text = header(id, title, 62, "single-agent-v1", "2026-03-02T09:00:00.000Z");
    text.push_str(&two_nodes(&[]));
    for (server, kernel) in [("payments-a", "kernel-a"), ("payments-b", "kernel-b")] {
        text.push_str(&format!(
            "\n[[servers]]\nid = \"{server}\"\nkernel = \"{kernel}\"\nkind = \"http\"\n"
        ));
    }
    text.push_str(&agent("clerk", "finance", "kernel-b"));
    text.push_str(&grant(
        "clerk-pays-a",
        "clerk",
        "payments-a",
        &["http_post"],
        None,
    ));
    text.push_str(&grant(
        "clerk-pays-b",
        "clerk",
        "payments-b",
        &["http_post"],
        None,
    ));
    text.push_str(budgets);
    text.push_str(steps);
    text
}

/// The clerk's daily budget of 2000.00 EUR on `server`, under id `daily`.
fn daily_budget(server: &str) -> String {
    format!(
        "\n[[budgets]]\nid = \"daily\"\nagent = \"clerk\"\nserver = \"{server}\"\ntool = \"http_post\"\namount = \"amount\"\ncurrency = \"EUR\"\nlimit = \"2000.00\"\nwindow_ms = 86400000\n"
    )
}

/// A step in which the clerk pays `amount` EUR through `server`.
fn pay(id: &str, server: &str, amount: &str, verdict: &str, reason: Option<&str>) -> String {
    let reason = reason
        .map(|r| format!("expect_reason = \"{r}\"\n"))
        .unwrap_or_default();
    format!(
        "\n[[steps]]\nid = \"{id}\"\nagent = \"clerk\"\nserver = \"{server}\"\ntool = \"http_post\"\narguments = {{ url = \"https://bank.example/transfers\", amount = \"{amount}\" }}\nexpect_verdict = \"{verdict}\"\n{reason}"
    )
}

// Proves the reference scenario (two payments of 999.99 pass, the third is denied, other currencies and too-precise amounts hold nothing, the next window starts again, an approval on the running total releases its hold) gives the same bytes embedded, across processes and one step at a time.
#[test]
fn reference_scenario_is_the_same_bytes_on_every_topology_and_mode() {
    let dir = tempfile::tempdir().expect("temporary folder");
    assert_same_everywhere(dir.path(), &repo_path("scenarios/monetary_budget.toml"));
}

// Proves the monetary scope reference scenario (a grant's own monetary constraint, narrowed by a delegation to another node's agent and refused when a delegation widens it) gives the same bytes embedded, across processes, where each delegation's constraint crosses the wire, and one step at a time.
#[test]
fn monetary_scope_is_the_same_bytes_on_every_topology_and_mode() {
    let dir = tempfile::tempdir().expect("temporary folder");
    assert_same_everywhere(dir.path(), &repo_path("scenarios/monetary_scope.toml"));
}

// Proves a kernel whose node crashes and restarts afresh still finds the spent total in trust-control: the third payment is denied after the restart and the exact remainder fits, embedded and on real processes alike.
#[test]
fn a_kernel_restart_does_not_reset_the_spent_total() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let mut steps = pay("pay-first", "payments-a", "999.99", "allow", None);
    steps.push_str(&pay("pay-second", "payments-a", "999.99", "allow", None));
    steps.push_str(
        "\n[[steps]]\nid = \"crash-node-a\"\nagent = \"clerk\"\naction = \"fault\"\nfault = \"crash\"\nnode = \"node-a\"\n\n[[steps]]\nid = \"restart-node-a\"\nagent = \"clerk\"\naction = \"fault\"\nfault = \"restart\"\nnode = \"node-a\"\nkeep_state = false\n",
    );
    steps.push_str(&pay(
        "pay-third-after-restart",
        "payments-a",
        "999.99",
        "deny",
        Some("monetary budget daily exceeded: 1999.98 of 2000.00 EUR spent in window 0, 999.99 more requested"),
    ));
    steps.push_str(&pay("pay-the-rest", "payments-a", "0.02", "allow", None));
    let text = payments_world(
        "money_restart",
        "a restarted kernel keeps the spent total",
        &daily_budget("payments-a"),
        &steps,
    );
    let file = write_scenario(&dir.path().join("scenario"), &text, &[]);
    let embedded = dir.path().join("embedded");
    let local = dir.path().join("local");
    run_passing(dir.path(), &file, &embedded, &[]);
    run_passing(dir.path(), &file, &local, &["--topology", "local"]);
    assert_eq!(tree(&embedded), tree(&local), "local differs from embedded");
}

// Proves two kernels on two node processes counting one budget (one id on two servers) share its total: what kernel-a spent leaves kernel-b only the remainder.
#[test]
fn two_kernels_share_one_budget() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let mut budgets = daily_budget("payments-a");
    budgets.push_str(&daily_budget("payments-b"));
    let mut steps = pay("pay-on-a", "payments-a", "1500.00", "allow", None);
    steps.push_str(&pay(
        "pay-on-b-too-much",
        "payments-b",
        "600.00",
        "deny",
        Some("monetary budget daily exceeded: 1500.00 of 2000.00 EUR spent in window 0, 600.00 more requested"),
    ));
    steps.push_str(&pay(
        "pay-on-b-the-rest",
        "payments-b",
        "500.00",
        "allow",
        None,
    ));
    steps.push_str(&pay(
        "pay-on-a-again",
        "payments-a",
        "0.01",
        "deny",
        Some("budget-exceeded"),
    ));
    let text = payments_world(
        "money_two_kernels",
        "two kernels count one budget",
        &budgets,
        &steps,
    );
    let file = write_scenario(&dir.path().join("scenario"), &text, &[]);
    assert_same_everywhere(dir.path(), &file);
}
