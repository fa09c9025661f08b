//! A sealed file may not be one a server's fixtures hold, whatever path
//! reaches it: the rule is checked on the resolved path too, so a link
//! outside the fixtures folder to a file inside it, or a fixtures folder
//! that is a link to the sealed file's folder, is refused as the plain
//! path is.

use std::fs;
use std::path::Path;

use chio_arena::load_scenario;

const SECRET: &str = "sk-test-0123456789abcdefghijklmnop";

/// The refused case's scenario with its fixtures and sealed path rewritten.
fn scenario_text(fixtures: &str, sealed: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/invalid/sealed_fixture_in_served_folder.toml");
    fs::read_to_string(path)
        .expect("the case reads")
        .replace(
            "fixtures = \"fixtures/sealed-served\"",
            &format!("fixtures = \"{fixtures}\""),
        )
        .replace(
            "{ fixture = \"fixtures/sealed-served/key.txt\" }",
            &format!("{{ fixture = \"{sealed}\" }}"),
        )
}

/// Loads `text` from `dir`, answering the error code and message.
fn refusal(dir: &Path, text: &str) -> (String, String) {
    let file = dir.join("scenario.toml");
    fs::write(&file, text).expect("writes");
    let error = load_scenario(&file).expect_err("a sealed file agents can read is refused");
    (error.code().to_string(), error.to_string())
}

// Proves a link outside a server's fixtures folder to a file inside it is refused as the file's own path is, and the message names the folder, never the value.
#[cfg(unix)]
#[test]
fn a_link_into_a_fixtures_folder_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::create_dir_all(dir.path().join("served")).unwrap();
    fs::create_dir_all(dir.path().join("secrets")).unwrap();
    fs::write(dir.path().join("served/key.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink("../served/key.txt", dir.path().join("secrets/key.txt")).unwrap();
    let (code, message) = refusal(dir.path(), &scenario_text("served", "secrets/key.txt"));
    assert_eq!(code, "CHIO-SCENARIO-VALUE-FIXTURE", "{message}");
    assert!(message.contains("\"served\""), "{message}");
    assert!(!message.contains(&SECRET[..8]), "{message}");
    // The plain path, and a sealed file outside any fixtures folder, as before.
    let (plain, _) = refusal(dir.path(), &scenario_text("served", "served/key.txt"));
    assert_eq!(plain, code);
    fs::write(
        dir.path().join("secrets/own.txt"),
        "pk-live-another-value-no-server-serves",
    )
    .unwrap();
    let file = dir.path().join("scenario.toml");
    fs::write(&file, scenario_text("served", "secrets/own.txt")).unwrap();
    load_scenario(&file).expect("a sealed file no server serves loads");
}

// Proves a fixtures folder that is a link to the sealed file's folder is refused: agents read the sealed file through the server.
#[cfg(unix)]
#[test]
fn a_fixtures_folder_linking_to_the_sealed_folder_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::create_dir_all(dir.path().join("secrets")).unwrap();
    fs::write(dir.path().join("secrets/key.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink("secrets", dir.path().join("served")).unwrap();
    let (code, message) = refusal(dir.path(), &scenario_text("served", "secrets/key.txt"));
    assert_eq!(code, "CHIO-SCENARIO-VALUE-FIXTURE", "{message}");
    assert!(!message.contains(&SECRET[..8]), "{message}");
}

// Proves a sealed value a served fixture holds is refused whatever path put it there: a link in the fixtures folder to the sealed file, or a copy of its text; the message names the server's file, never the value.
#[cfg(unix)]
#[test]
fn a_sealed_value_a_served_file_holds_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::create_dir_all(dir.path().join("served")).unwrap();
    fs::create_dir_all(dir.path().join("secrets")).unwrap();
    fs::write(dir.path().join("secrets/key.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink("../secrets/key.txt", dir.path().join("served/mirror.txt")).unwrap();
    let (code, message) = refusal(dir.path(), &scenario_text("served", "secrets/key.txt"));
    assert_eq!(code, "CHIO-SCENARIO-VALUE-FIXTURE", "{message}");
    assert!(message.contains("\"mirror.txt\""), "{message}");
    assert!(!message.contains(&SECRET[..8]), "{message}");
    fs::remove_file(dir.path().join("served/mirror.txt")).unwrap();
    fs::write(
        dir.path().join("served/notes.md"),
        format!("deploy notes\ntoken: {SECRET}\n"),
    )
    .unwrap();
    let (copied, message) = refusal(dir.path(), &scenario_text("served", "secrets/key.txt"));
    assert_eq!(copied, code, "{message}");
    assert!(message.contains("\"notes.md\""), "{message}");
    assert!(!message.contains(&SECRET[..8]), "{message}");
}
