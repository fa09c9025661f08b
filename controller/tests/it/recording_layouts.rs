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

/// The typed scenario of `typed_replay` with three calls of `get`: `first`
/// and `second` allowed, `late` denied (the grant expired), and a
/// recording answering all three, `late` included, in `rec`.
fn three_calls(dir: &Path) {
    typed_replay(dir, serde_json::json!({"n": 3}));
    let path = dir.join("typed.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text
        .replacen(
            "tools = [\"get\"]\n",
            "tools = [\"get\"]\nexpires_after_ms = 1500\n",
            1,
        )
        .replacen(
            "expect_verdict = \"allow\"\n",
            "expect_verdict = \"allow\"\nat = 1\n",
            1,
        );
    let more = |id: &str, verdict: &str, at: u32| {
        format!("\n[[steps]]\nid = \"{id}\"\nagent = \"dev\"\nserver = \"live\"\ntool = \"get\"\nexpect_verdict = \"{verdict}\"\nat = {at}\n")
    };
    let text = format!(
        "{text}{}{}",
        more("second", "allow", 2),
        more("late", "deny", 1700)
    );
    std::fs::write(&path, text).unwrap();
    let rec = dir.join("rec/recording/live.json");
    let mut recording: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&rec).unwrap()).unwrap();
    let first = recording["calls"][0].clone();
    for id in ["second", "late"] {
        let mut call = first.clone();
        call["request_id"] = id.into();
        recording["calls"].as_array_mut().unwrap().push(call);
    }
    std::fs::write(&rec, recording.to_string()).unwrap();
}

/// Rewrites the recording bundle `name` keeps among its inputs with `edit`,
/// written as a run writes it (pretty JSON, a final newline).
fn edit_kept(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join(name).join("inputs/recording/live.json");
    let mut recording: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut recording);
    let mut bytes = serde_json::to_vec_pretty(&recording).unwrap();
    bytes.push(b'\n');
    std::fs::write(&path, bytes).unwrap();
}

/// Asserts `chio arena replay NAME` finds drift, `said` among its lines.
fn replay_drifts(dir: &Path, name: &str, said: &str) {
    let args = ["arena", "replay", name];
    let output = without_python(dir, &args);
    assert_code(&output, &args, 1, "CHIO-ARENA-DRIFT");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(said), "{said}: {stdout}");
}

// A run replaying a recording keeps in its bundle exactly the calls it forwarded, in the order it forwarded them, and of each tool definition only the part its digest covers: an answer for a call the kernel denied is left out. Read back with the bundle, a recording that claims otherwise drifts: an answer added for the denied call (named by its step), the calls reordered (named by the first step out of place), and a title and _meta added to a definition; a run replaying the titled recording keeps the definition without them.
#[test]
fn a_recording_holds_exactly_the_calls_the_run_forwarded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    three_calls(dir);
    replayed(dir, "rec", "b");
    let kept: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("b/inputs/recording/live.json")).unwrap())
            .unwrap();
    let ids: Vec<&str> = kept["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["request_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["first", "second"]);
    let args = ["arena", "replay", "b"];
    let output = without_python(dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));

    copy_tree(&dir.join("b"), &dir.join("extra"));
    let late = kept["calls"][1].clone();
    edit_kept(dir, "extra", |r| {
        let mut call = late;
        call["request_id"] = "late".into();
        r["calls"].as_array_mut().unwrap().push(call);
    });
    replay_drifts(
        dir,
        "extra",
        "inputs/recording/live.json call of step late (the run never forwarded it)",
    );

    copy_tree(&dir.join("b"), &dir.join("reordered"));
    edit_kept(dir, "reordered", |r| {
        r["calls"].as_array_mut().unwrap().reverse();
    });
    replay_drifts(
        dir,
        "reordered",
        "inputs/recording/live.json call of step second (the run forwarded the calls in another order)",
    );

    copy_tree(&dir.join("b"), &dir.join("titled"));
    edit_kept(dir, "titled", |r| {
        r["tools"][0]["definition"]["title"] = "Delete everything".into();
        r["tools"][0]["definition"]["_meta"] = serde_json::json!({"k": 1});
    });
    replay_drifts(dir, "titled", "file inputs/recording/live.json");
    replayed(dir, "titled", "again");
    assert_eq!(
        std::fs::read(dir.join("again/inputs/recording/live.json")).unwrap(),
        std::fs::read(dir.join("b/inputs/recording/live.json")).unwrap()
    );
}
