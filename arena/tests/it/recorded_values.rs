//! Recorded answers read by the value grammar: a null, a literal and a
//! sealed file load, the loader reads the sealed file with the scenario,
//! and an answer is the value the grammar writes, its sealed text only
//! where the file was read.

use std::path::Path;

use chio_arena::load_scenario;
use chio_arena::scenario::sealed::SealedSet;
use serde_json::json;

const FILE: &str = "fixtures/secrets/answer.txt";

// Proves a recorded answer's { null = true } is null, its { literal = ... } the object inside, and its { fixture = ... } the sealed file's text, read at load like a call argument's; without the file read, the answer is refused naming the file, never its text.
#[test]
fn recorded_answers_read_nulls_literals_and_sealed_files() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/valid/recorded_answer_values.toml");
    let scenario = load_scenario(&path).expect("the scenario loads");
    let sealed = scenario.sealed();
    assert_eq!(sealed.keys().collect::<Vec<_>>(), [FILE]);
    let secret = sealed[FILE].text().to_string();
    let server = scenario
        .file()
        .servers
        .iter()
        .find(|s| s.id == "git")
        .expect("the recorded server");
    let answers = server.answers.as_ref().expect("answers");
    assert_eq!(
        answers[0].output_json(sealed).unwrap(),
        json!({"branch": "main", "upstream": null, "note": {"from_step": "x"}})
    );
    assert_eq!(
        answers[1].output_json(sealed).unwrap(),
        json!(["abc123 first commit", secret])
    );
    let refused = answers[1].output_json(&SealedSet::new()).unwrap_err();
    assert_eq!(refused.code(), "CHIO-SCENARIO-VALUE-FIXTURE");
    let message = refused.to_string();
    assert!(
        message.contains(FILE) && message.contains("output/1"),
        "{message}"
    );
    assert!(!message.contains(&secret), "{message}");
}
