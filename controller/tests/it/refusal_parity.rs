//! Process tests for the rule that `chio arena validate` and `chio arena run`
//! refuse exactly the same files: every file of the refusal corpus
//! (`arena/tests/invalid/`), and fixture folders that leave the scenario's
//! folder through symbolic links or `..`, give the same exit code and the
//! same error code from both commands, and a refused run writes nothing.

use crate::util;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use util::{chio, copy_tree, entries, explain, repo_path};

/// The exit code and the `error[CODE]` of a command, with its explanation.
struct Outcome {
    exit: Option<i32>,
    code: Option<String>,
    explained: String,
}

fn outcome(dir: &Path, args: &[&str]) -> Outcome {
    let output = chio(dir, args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = stderr
        .strip_prefix("error[")
        .and_then(|rest| rest.split_once(']'))
        .map(|(code, _)| code.to_string());
    Outcome {
        exit: output.status.code(),
        code,
        explained: explain(args, &output),
    }
}

/// Runs `validate` and then `run` on `file` from a fresh folder, and checks
/// they agree, that the refusal is exit 2 with `want` as code, and that the
/// run wrote nothing.
fn assert_refused_alike(file: &Path, want: Option<&str>) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    let path = file.to_str().unwrap();
    let validate = outcome(tmp.path(), &["arena", "validate", path]);
    let run = outcome(tmp.path(), &["arena", "run", path, "--out", "bundle"]);
    let mut problems = Vec::new();
    if validate.exit != Some(2) {
        problems.push(format!("validate did not exit 2\n{}", validate.explained));
    }
    if let Some(want) = want {
        if validate.code.as_deref() != Some(want) {
            problems.push(format!(
                "validate did not say {want}\n{}",
                validate.explained
            ));
        }
    }
    if (run.exit, &run.code) != (validate.exit, &validate.code) {
        problems.push(format!(
            "validate and run disagree\n{}\n{}",
            validate.explained, run.explained
        ));
    }
    if !entries(tmp.path()).is_empty() {
        problems.push(format!("a refused run wrote files\n{}", run.explained));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}:\n{}", file.display(), problems.join("\n")))
    }
}

/// The code a corpus file's `# refuse: CODE at FIELD` header names.
fn header_code(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let header = text.lines().next().unwrap_or_default();
    let rest = header
        .strip_prefix("# refuse: ")
        .unwrap_or_else(|| panic!("{} has no refuse header", file.display()));
    rest.split(' ').next().unwrap_or_default().to_string()
}

// Every file of the refusal corpus is refused by validate and by run with the same exit code (2) and the code its header names.
#[test]
fn corpus_is_refused_alike() {
    let dir = repo_path("arena/tests/invalid");
    let mut files: Vec<PathBuf> = entries(&dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 90, "the corpus shrank to {}", files.len());
    for required in [
        "at_beyond_json_after_start",
        "advance_beyond_json_after_start",
        "grant_expiry_beyond_json",
        "delegation_expiry_beyond_json",
        "label_unknown_level",
        "fixture_not_utf8",
        "fixture_outside",
    ] {
        assert!(
            files.iter().any(|f| f.file_stem().unwrap() == required),
            "{required} is missing from the corpus"
        );
    }
    let failures: Vec<String> = files
        .iter()
        .filter_map(|file| assert_refused_alike(file, Some(&header_code(file))).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A copy of the walking-skeleton scenario in `root/scenario/`, reading its
/// fixtures from `fixtures` (relative to that folder), next to a folder
/// `root/outside/` holding `notes.txt` with `outside text`.
fn staged(root: &Path, fixtures: &str) -> PathBuf {
    let folder = root.join("scenario");
    copy_tree(
        &repo_path("scenarios/fixtures/walking-skeleton"),
        &folder.join("fixtures/walking-skeleton"),
    );
    copy_tree(&repo_path("scenarios/prompts"), &folder.join("prompts"));
    std::fs::create_dir_all(root.join("outside")).unwrap();
    std::fs::write(root.join("outside/notes.txt"), "outside text").unwrap();
    let text = std::fs::read_to_string(repo_path("scenarios/walking_skeleton.toml")).unwrap();
    let declared = "fixtures = \"fixtures/walking-skeleton\"";
    assert!(text.contains(declared), "the reference scenario changed");
    let edited = text.replace(declared, &format!("fixtures = {fixtures:?}"));
    let file = folder.join("walking_skeleton.toml");
    std::fs::write(&file, edited).unwrap();
    file
}

// A fixtures folder that is a symbolic link to a folder outside the scenario's folder is refused alike, and its content is never copied.
#[test]
fn symlinked_fixture_folder_is_refused_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let file = staged(tmp.path(), "fixtures/linked");
    symlink(
        tmp.path().join("outside"),
        tmp.path().join("scenario/fixtures/linked"),
    )
    .unwrap();
    assert_refused_alike(&file, Some("CHIO-SCENARIO-FIXTURE-OUTSIDE")).unwrap();
}

// A symbolic link to a file outside, inside the fixture folder, is refused alike.
#[test]
fn symlinked_fixture_file_is_refused_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let file = staged(tmp.path(), "fixtures/walking-skeleton");
    symlink(
        tmp.path().join("outside/notes.txt"),
        tmp.path()
            .join("scenario/fixtures/walking-skeleton/leak.txt"),
    )
    .unwrap();
    assert_refused_alike(&file, Some("CHIO-SCENARIO-FIXTURE-OUTSIDE")).unwrap();
}

// A symbolic link to a folder outside, inside the fixture folder, is refused alike.
#[test]
fn symlinked_fixture_subfolder_is_refused_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let file = staged(tmp.path(), "fixtures/walking-skeleton");
    symlink(
        tmp.path().join("outside"),
        tmp.path().join("scenario/fixtures/walking-skeleton/more"),
    )
    .unwrap();
    assert_refused_alike(&file, Some("CHIO-SCENARIO-FIXTURE-OUTSIDE")).unwrap();
}

// A `..` segment that climbs out of the scenario's folder is refused alike, even when the folder it names exists.
#[test]
fn dotdot_fixture_path_is_refused_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let file = staged(tmp.path(), "../outside");
    assert_refused_alike(&file, Some("CHIO-SCENARIO-FIXTURE-OUTSIDE")).unwrap();
}

// The staged scenario itself, and a symbolic link that stays inside the scenario's folder, validate and run (exit 0), so the refusals above are the links' doing.
#[test]
fn links_inside_the_scenario_folder_run() {
    let tmp = tempfile::tempdir().unwrap();
    let file = staged(tmp.path(), "fixtures/walking-skeleton");
    std::fs::write(tmp.path().join("scenario/shared.txt"), "shared").unwrap();
    symlink(
        tmp.path().join("scenario/shared.txt"),
        tmp.path()
            .join("scenario/fixtures/walking-skeleton/shared.txt"),
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let args = ["arena", "validate", path];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let args = ["arena", "run", path, "--out", "bundle"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let copied = tmp
        .path()
        .join("bundle/inputs/fixtures/walking-skeleton/shared.txt");
    assert_eq!(std::fs::read_to_string(copied).unwrap(), "shared");
}
