//! Run-time allowlists across node processes and restarts: the record a
//! kernel writes when it releases a trusted listing lives in the label
//! store every kernel shares, so the bank's kernel on another node reads
//! it, and it outlives a restart of both nodes, as every label does.

use std::path::{Path, PathBuf};

use chio_tests::*;

/// The reference scenario with both nodes crashed and restarted (fresh,
/// holding only their grants) after the reader read the history and
/// before the planner pays from it.
fn with_restarts(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(repo_path("scenarios/run_time_allowlist.toml"))
        .expect("reference scenario");
    let text = text.replace(
        "id = \"run_time_allowlist\"",
        "id = \"run_time_allowlist_with_restarts\"",
    );
    let first_use = text
        .find("[[steps]]\nid = \"pay-a-payee-the-bank-recorded\"")
        .expect("the planner's first call after the listing");
    let (before, after) = text.split_at(first_use);
    let mut restarts = String::new();
    for node in ["node-a", "node-b"] {
        for (fault, extra) in [("crash", ""), ("restart", "keep_state = false\n")] {
            restarts.push_str(&format!(
                "[[steps]]\nid = \"{fault}-{node}\"\nagent = \"planner\"\naction = \"fault\"\nfault = \"{fault}\"\nnode = \"{node}\"\n{extra}\n"
            ));
        }
    }
    copy_tree(&repo_path("scenarios/prompts"), &dir.join("prompts"));
    write_scenario(dir, &format!("{before}{restarts}{after}"), &[])
}

fn run(dir: &Path, file: &Path, out: &Path, local: bool) {
    let (file, out) = (file.display().to_string(), out.display().to_string());
    let mut args = vec!["arena", "run", &file, "--out", &out];
    if local {
        args.extend(["--topology", "local"]);
    }
    let output = run_chio(dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
}

fn verdicts(bundle: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(bundle.join("arena.json")).expect("manifest");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("manifest JSON");
    manifest["steps"]
        .as_array()
        .expect("step records")
        .iter()
        .map(|r| {
            let id = r["step_id"].as_str().unwrap_or_default().to_string();
            let code = r["reason_code"].as_str().unwrap_or_default();
            (
                id,
                format!("{} {code}", r["actual"].as_str().unwrap_or_default()),
            )
        })
        .collect()
}

// Proves on real processes that the payee list the reader read on one node admits the planner's payment on the other after both nodes restarted, while the injected IBAN, the near misses and an IBAN handed over by a reader that never read the list are refused; the bundle is the embedded run's byte for byte.
#[test]
fn allowlist_records_cross_nodes_and_outlive_restarts() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = with_restarts(&dir.path().join("allowlist"));
    let (embedded, local) = (dir.path().join("embedded"), dir.path().join("local"));
    run(dir.path(), &file, &embedded, false);
    run(dir.path(), &file, &local, true);
    assert_eq!(tree(&embedded), tree(&local), "local differs from embedded");
    let got: std::collections::BTreeMap<String, String> = verdicts(&local).into_iter().collect();
    assert_eq!(
        got["pay-before-the-history-is-read"],
        "deny untrusted-argument"
    );
    assert_eq!(got["pay-a-payee-the-bank-recorded"], "allow ");
    for refused in [
        "pay-the-injected-iban",
        "pay-a-lowercase-iban",
        "pay-a-padded-iban",
        "pay-a-look-alike-iban",
        "pay-from-a-reader-without-the-listing",
    ] {
        assert_eq!(got[refused], "deny untrusted-argument", "{refused}");
    }
    assert!(got.contains_key("restart-node-b"), "the restarts ran");
}

/// The decision trace of step `id` in `bundle`.
fn trace(bundle: &Path, id: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(bundle.join("arena.json")).expect("manifest");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("manifest JSON");
    manifest["steps"]
        .as_array()
        .expect("step records")
        .iter()
        .find(|r| r["step_id"] == id)
        .map(|r| r["trace"].clone())
        .expect("the step's record")
}

// Proves on real processes that the trace of a payment names the allowlist records admission read (how many values each held) and the record that admitted its recipient, that a refused payment names the records it read and no admission, and that `chio arena explain` prints both.
#[test]
fn the_trace_and_explain_name_the_admitting_record() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let file = repo_path("scenarios/run_time_allowlist.toml");
    let local = dir.path().join("local");
    run(dir.path(), &file, &local, true);
    let reader = "allowlist/reader/history/get_transactions/output/transactions/*/recipient";
    let planner = "allowlist/planner/history/get_transactions/output/transactions/*/recipient";
    let paid = trace(&local, "pay-a-payee-the-bank-recorded");
    assert_eq!(paid["allowlists_read"][reader], 2, "{paid}");
    assert_eq!(paid["allowlists_read"][planner], 0, "{paid}");
    let integrity = &paid["guards"][0];
    assert_eq!(integrity["answer"], "allow");
    assert_eq!(
        integrity["admitted"],
        serde_json::json!([format!("/recipient on {reader}")])
    );
    let early = trace(&local, "pay-before-the-history-is-read");
    assert_eq!(early["allowlists_read"][reader], 0, "{early}");
    assert!(early["guards"][0].get("admitted").is_none(), "{early}");
    let injected = trace(&local, "pay-the-injected-iban");
    assert_eq!(injected["allowlists_read"][reader], 2, "{injected}");
    assert!(
        injected["guards"][0].get("admitted").is_none(),
        "{injected}"
    );
    let bundle = local.display().to_string();
    let args = ["arena", "explain", &bundle, "pay-a-payee-the-bank-recorded"];
    let output = run_chio(dir.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("  allowlist records read\n"), "{text}");
    assert!(text.contains(&format!("{reader}   2 value(s)")), "{text}");
    assert!(
        text.contains(&format!("allow (allowlisted: /recipient on {reader})")),
        "{text}"
    );
}
