//! `chio arena evolve` groups escapes by cause (goal, deciding stage,
//! reference pattern, operator family) in its summary, its leaderboard and
//! its SARIF report, run by the real binary in a temporary copy of the
//! reference scenarios: a world with two weakened guards gives exactly two
//! causes, and on a longer search the causes' counts and the SARIF related
//! locations add up to the escapes the trace records.

use crate::util;

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use util::{chio, copy_tree, explain, repo_path};

fn workspace() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    copy_tree(&repo_path("scenarios"), &tmp.path().join("scenarios"));
    tmp
}

/// The weakened twin with a second weakened guard: `forbidden-path` also
/// observes only. Two populations, each narrowed to one gene: an injection
/// of one pattern into the fixture the step reads, and a read of a
/// forbidden path.
fn write_two_weakened(dir: &Path) -> &'static str {
    let text = std::fs::read_to_string(dir.join("scenarios/adversaries-weakened.toml")).unwrap();
    let world = &text[..text.find("[[adversaries]]").expect("adversaries")];
    let world = world.replacen(
        "kind = \"forbidden-path\"\nmode = \"enforce\"",
        "kind = \"forbidden-path\"\nmode = \"observe\"",
        1,
    );
    assert!(world.contains("kind = \"forbidden-path\"\nmode = \"observe\""));
    let adversaries = r#"[[adversaries]]
class = "prompt-injection"
population = "injection"
seed_ref = "corpus/pr-421"

[adversaries.params]
patterns = ["tool-name-spoof"]
targets = ["fixture"]

[[adversaries]]
class = "capability-overrequest"
population = "dotenv"
seed_ref = "corpus/dotenv"
goal = "reach-forbidden-path"
goal_path = "/workspace/.env"

[adversaries.params]
swaps = ["tool"]
"#;
    std::fs::write(
        dir.join("scenarios/two-weakened.toml"),
        format!("{world}{adversaries}"),
    )
    .unwrap();
    "scenarios/two-weakened.toml"
}

/// Runs `chio arena evolve FILE --generations N --out OUT --sarif OUT.sarif`
/// and answers standard output, the leaderboard and the SARIF log.
fn evolve(dir: &Path, file: &str, generations: &str, out: &str) -> (String, Value, Value) {
    let sarif = format!("{out}.sarif");
    let args = [
        "arena",
        "evolve",
        file,
        "--generations",
        generations,
        "--out",
        out,
        "--sarif",
        &sarif,
    ];
    let output = chio(dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let read = |path: &Path| -> Value {
        serde_json::from_slice(&std::fs::read(dir.join(path)).unwrap()).expect("JSON")
    };
    (
        String::from_utf8(output.stdout).unwrap(),
        read(&Path::new(out).join("leaderboard.json")),
        read(Path::new(&sarif)),
    )
}

fn related_total(sarif: &Value) -> usize {
    sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["relatedLocations"].as_array().unwrap().len())
        .sum()
}

// Two weakened guards give exactly two SARIF results, one per cause, whose related locations add up to the escape count; stdout prints one line per cause with its count and shortest example, the leaderboard groups likewise, and every output is byte-identical on rerun.
#[test]
fn two_weakened_guards_give_two_causes() {
    let tmp = workspace();
    let file = write_two_weakened(tmp.path());
    let (stdout, board, sarif) = evolve(tmp.path(), file, "1", "a");
    assert_eq!(board["schema_version"], "chio.arena.leaderboard/v2");
    let causes = board["causes"].as_array().expect("causes");
    let goals: BTreeSet<&str> = causes.iter().map(|c| c["goal"].as_str().unwrap()).collect();
    assert_eq!(
        goals,
        BTreeSet::from(["reach-forbidden-path", "smuggle-instruction"]),
        "{board:#}"
    );
    assert_eq!(causes.len(), 2, "{board:#}");
    let escapes: u64 = causes.iter().map(|c| c["count"].as_u64().unwrap()).sum();
    assert!(escapes > 2, "each cause has more than one occurrence");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{sarif:#}");
    assert_eq!(related_total(&sarif) as u64, escapes);
    assert_eq!(sarif["runs"][0]["properties"]["escapes"], escapes);
    let text = std::fs::read_to_string(tmp.path().join(file)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for (result, cause) in results.iter().zip(causes) {
        assert_eq!(result["properties"]["goal"], cause["goal"]);
        assert_eq!(result["properties"]["count"], cause["count"]);
        assert_eq!(
            result["relatedLocations"].as_array().unwrap().len() as u64,
            cause["count"].as_u64().unwrap()
        );
        let line = result["locations"][0]["physicalLocation"]["region"]["startLine"]
            .as_u64()
            .unwrap() as usize;
        assert_eq!(lines[line - 1], "[[steps]]");
        // One line per cause: count, goal, stage, pattern, family and the shortest example.
        let row = format!(
            "| {} | {} | {} | {} | {} | {} (",
            cause["count"],
            cause["goal"].as_str().unwrap(),
            cause["stage"].as_str().unwrap(),
            cause["pattern"].as_str().unwrap(),
            cause["family"].as_str().unwrap(),
            cause["example"]["action"].as_str().unwrap()
        );
        assert_eq!(stdout.matches(&row).count(), 1, "{row}\n{stdout}");
    }
    let injection = causes
        .iter()
        .find(|c| c["goal"] == "smuggle-instruction")
        .unwrap();
    assert_eq!(injection["pattern"], "tool-name-spoof");
    assert!(
        stdout.contains(&format!("{escapes} escapes in 2 causes")),
        "{stdout}"
    );
    // Rerun: the same bytes.
    let (again, _, _) = evolve(tmp.path(), file, "1", "b");
    assert_eq!(
        stdout.replace("written to a", ""),
        again.replace("written to b", "")
    );
    for name in ["leaderboard.json", "leaderboard.md", "evolve-trace.json"] {
        assert_eq!(
            std::fs::read(tmp.path().join("a").join(name)).unwrap(),
            std::fs::read(tmp.path().join("b").join(name)).unwrap(),
            "{name}"
        );
    }
    assert_eq!(
        std::fs::read(tmp.path().join("a.sarif")).unwrap(),
        std::fs::read(tmp.path().join("b.sarif")).unwrap()
    );
}

// On a bred search, the causes partition the distinct escapes the trace records: counts and SARIF related locations both add up to them, one result per distinct key, far fewer results than escapes.
#[test]
fn causes_partition_the_escapes_of_a_search() {
    let tmp = workspace();
    let (_, board, sarif) = evolve(
        tmp.path(),
        "scenarios/adversaries-weakened.toml",
        "3",
        "out",
    );
    let trace: Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("out/evolve-trace.json")).unwrap())
            .unwrap();
    let mut distinct = BTreeSet::new();
    let mut keys = BTreeSet::new();
    for generation in trace["generations"].as_array().unwrap() {
        for sample in generation["samples"].as_array().unwrap() {
            for record in sample["records"].as_array().unwrap() {
                if record["result"] == "survived" {
                    distinct.insert((
                        sample["population"].as_str().unwrap().to_string(),
                        record["action"].as_str().unwrap().to_string(),
                    ));
                    let detail = record["detail"].as_str().unwrap_or("none");
                    keys.insert((
                        record["goal"].as_str().unwrap().to_string(),
                        record["decided_stage"].as_str().unwrap().to_string(),
                        detail.split('/').next().unwrap().to_string(),
                    ));
                }
            }
        }
    }
    let causes = board["causes"].as_array().unwrap();
    let counted: usize = causes
        .iter()
        .map(|c| c["count"].as_u64().unwrap() as usize)
        .sum();
    assert_eq!(counted, distinct.len());
    assert_eq!(related_total(&sarif), distinct.len());
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), causes.len());
    let fingerprints: BTreeSet<&str> = results
        .iter()
        .map(|r| {
            r["partialFingerprints"]["chioArenaEscapeCause/v1"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(fingerprints.len(), results.len(), "one result per cause");
    let goal_stage_pattern: BTreeSet<(String, String, String)> = causes
        .iter()
        .map(|c| {
            (
                c["goal"].as_str().unwrap().to_string(),
                c["stage"].as_str().unwrap().to_string(),
                c["pattern"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(goal_stage_pattern, keys);
    assert!(
        results.len() * 5 < distinct.len(),
        "{} causes for {} escapes",
        results.len(),
        distinct.len()
    );
}
