//! The two places a folder keeps a recording of MCP servers' answers:
//! beside its inputs (`recording/`, as `chio arena record --out` writes
//! it) or among them (`inputs/recording/`, as a `--replay-from` run keeps
//! it). Every reader takes either, through one mapping of the two, and
//! refuses a folder holding two different copies. No server is started.

use std::path::Path;

use crate::arena_record::{assert_code, typed_replay, without_python};
use crate::util::{copy_tree, explain, tree};

/// `chio arena run typed.toml --replay-from FROM --out OUT`.
fn replay_args<'a>(from: &'a str, out: &'a str) -> [&'a str; 7] {
    [
        "arena",
        "run",
        "typed.toml",
        "--replay-from",
        from,
        "--out",
        out,
    ]
}

fn replayed(dir: &Path, from: &str, out: &str) {
    let args = replay_args(from, out);
    let output = without_python(dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
}

// The bundle a --replay-from run writes keeps its recording among its inputs; a run replays from that bundle as from the recording's own folder, into the same evidence. A folder with no recording is refused naming each path tried; one holding two different copies (beside and among its inputs) is refused by a run and by a replay, naming both.
#[test]
fn a_recording_is_read_from_either_place_and_two_copies_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    typed_replay(dir, serde_json::json!({"n": 3}));
    replayed(dir, "rec", "b");
    let first = tree(&dir.join("b"));
    assert!(first.contains_key("inputs/recording/live.json"));
    assert!(!dir.join("b/recording").exists());
    replayed(dir, "b", "c");
    assert_eq!(tree(&dir.join("c")), first);

    let args = replay_args("nowhere", "d");
    let output = without_python(dir, &args);
    assert_code(&output, &args, 2, "CHIO-ARENA-MCP-RECORDING");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("nowhere/recording/live.json")
            && stderr.contains("nowhere/inputs/recording/live.json"),
        "{stderr}"
    );

    copy_tree(&dir.join("b"), &dir.join("both"));
    std::fs::create_dir_all(dir.join("both/recording")).unwrap();
    let among = std::fs::read(dir.join("both/inputs/recording/live.json")).unwrap();
    let mut other: serde_json::Value = serde_json::from_slice(&among).unwrap();
    other["calls"][0]["output"]["n"] = 4.into();
    std::fs::write(dir.join("both/recording/live.json"), other.to_string()).unwrap();
    let both = [
        "both/recording/live.json",
        "both/inputs/recording/live.json",
    ];
    let args = replay_args("both", "e");
    let output = without_python(dir, &args);
    assert_code(&output, &args, 2, "CHIO-ARENA-MCP-RECORDING");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(both.iter().all(|p| stderr.contains(p)), "{stderr}");
    let args = ["arena", "replay", "both"];
    let output = without_python(dir, &args);
    assert_code(&output, &args, 2, "CHIO-ARENA-BUNDLE");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(both.iter().all(|p| stderr.contains(p)), "{stderr}");
}
