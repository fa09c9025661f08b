//! Unit tests of evidence bundles: writing, atomic replacement, reading back
//! and refusing linked or foreign inputs.

use super::*;
use crate::files::tests::names;
use chio_kernel::verdict::ProjectedVerdict;

pub(super) fn step(id: &str, actual: &str, evaluator: &str) -> StepRecord {
    let projected = ProjectedVerdict::parse(actual).expect("a verdict of the scenario alphabet");
    StepRecord {
        kernel: Some("k".to_string()),
        target: Some("s/t".to_string()),
        expected: Some(ProjectedVerdict::Allow.into()),
        actual: Some(projected.into()),
        verdict: Some(match projected {
            ProjectedVerdict::Deny => Verdict::Deny,
            ProjectedVerdict::Allow | ProjectedVerdict::Rewrite => Verdict::Allow,
        }),
        reason: None,
        guard: None,
        receipt_id: Some(format!("r-{id}-{actual}")),
        recorded: Some(true),
        pass: Some(actual == "allow"),
        ..StepRecord::new(
            id,
            ActionKind::Call,
            "a",
            "2026-01-01T00:00:00.000Z".to_string(),
            StepInputs {
                invocation: "i".to_string(),
                evaluator: evaluator.to_string(),
                authority_time: "t".to_string(),
                admission: "a".to_string(),
                session: "s".to_string(),
            },
        )
    }
}

pub(super) fn manifest(steps: Vec<StepRecord>) -> BundleManifest {
    BundleManifest {
        schema_version: BUNDLE_SCHEMA.to_string(),
        determinism: DeterminismWitness {
            agents: vec!["a".to_string()],
            locale: "C".to_string(),
            rng_seed: 1,
            scenario_id: "s".to_string(),
            scheduler: "single-agent-v1".to_string(),
            schema_version: "chio.arena.scenario/v1".to_string(),
            steps: steps.iter().map(|s| s.step_id.clone()).collect(),
            virtual_clock_start: "2026-01-01T00:00:00.000Z".to_string(),
        },
        scenario_title: "t".to_string(),
        scenario_sha256: "x".to_string(),
        status: BundleStatus::Completed,
        stopped: None,
        mismatches: Vec::new(),
        receipt_root: "r".to_string(),
        receipt_count: steps.len() as u64,
        arena_keys: BTreeMap::new(),
        policies: BTreeMap::new(),
        sealed: std::collections::BTreeMap::new(),
        steps,
    }
}

// Identical runs show no drift.
#[test]
fn identical_runs_do_not_drift() {
    let a = manifest(vec![step("one", "allow", "e1"), step("two", "deny", "e1")]);
    assert!(compare_runs(&a, &a.clone()).is_empty());
}

// A changed policy names the step and the evaluator as the changed input.
#[test]
fn policy_change_names_the_evaluator() {
    let a = manifest(vec![step("one", "allow", "e1"), step("two", "allow", "e1")]);
    let b = manifest(vec![step("one", "allow", "e1"), step("two", "deny", "e2")]);
    let drift = compare_runs(&a, &b);
    assert_eq!(drift.len(), 1);
    assert_eq!(drift[0].step_id, "two");
    assert_eq!(drift[0].what, "verdict");
    assert_eq!(drift[0].changed_inputs, vec!["evaluator".to_string()]);
}

// A run that ended early shows the missing steps.
#[test]
fn shorter_run_is_reported_missing() {
    let a = manifest(vec![step("one", "allow", "e1"), step("two", "allow", "e1")]);
    let b = manifest(vec![step("one", "allow", "e1")]);
    let drift = compare_runs(&a, &b);
    assert_eq!(drift[0].what, "missing");
    assert_eq!(drift[0].step_id, "two");
}

pub(super) fn sample(steps: Vec<StepRecord>, inputs: &[(&str, &[u8])]) -> Bundle {
    let mut recorded = manifest(steps);
    recorded
        .policies
        .insert("k".to_string(), "hash-of-policy".to_string());
    Bundle {
        manifest: recorded,
        receipts: vec!["{\"a\":1}".to_string()],
        policies: BTreeMap::from([("k".to_string(), "[]".to_string())]),
        inputs: inputs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect(),
    }
}

// A bundle written and read back is the same bundle, and refuses to
// overwrite a folder that is not a bundle.
#[test]
fn write_read_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    let bundle = sample(
        vec![step("one", "allow", "e1")],
        &[("scenario.toml", b"id = 1"), ("fixtures/x/a.txt", b"hello")],
    );
    bundle.write(&dir).unwrap();
    assert_eq!(Bundle::read(&dir).unwrap(), bundle);
    bundle.write(&dir).unwrap();
    assert_eq!(Bundle::read(&dir).unwrap(), bundle);
    let other = dir.join("not-a-bundle");
    std::fs::create_dir_all(other.join("x")).unwrap();
    let refused = bundle.write(&other).unwrap_err();
    assert!(matches!(refused, ArenaError::Bundle { .. }), "{refused:?}");
    assert!(!refused.is_infrastructure());
}

// Replacing a bundle leaves only the new bundle: no temporary sibling stays behind.
#[test]
fn replacing_leaves_no_sibling() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    sample(vec![step("one", "allow", "e1")], &[("scenario.toml", b"a")])
        .write(&dir)
        .unwrap();
    let newer = sample(vec![step("two", "deny", "e2")], &[("scenario.toml", b"b")]);
    newer.write(&dir).unwrap();
    assert_eq!(Bundle::read(&dir).unwrap(), newer);
    assert_eq!(names(tmp.path()), ["out"]);
    // An empty folder is replaced as well.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    newer.write(&empty).unwrap();
    assert_eq!(Bundle::read(&empty).unwrap(), newer);
}

// A write that fails half-way is a filesystem failure (exit 3) and leaves the previous bundle byte for byte.
#[test]
fn failed_write_keeps_the_previous_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let old = sample(vec![step("one", "allow", "e1")], &[("scenario.toml", b"a")]);
    old.write(&dir).unwrap();
    // "x" is written as a file, so the folder "x/" cannot be created.
    let broken = sample(
        vec![step("two", "deny", "e2")],
        &[("x", b"file"), ("x/y", b"below a file")],
    );
    let err = broken.write(&dir).unwrap_err();
    assert!(matches!(err, ArenaError::BundleIo { .. }), "{err:?}");
    assert!(err.is_infrastructure());
    assert_eq!(err.code(), "CHIO-ARENA-BUNDLE-IO");
    assert_eq!(Bundle::read(&dir).unwrap(), old);
    assert_eq!(names(tmp.path()), ["out"]);
}

// A parent that is a file is a filesystem failure, not a refusal of the input.
#[test]
fn parent_that_is_a_file_is_an_io_failure() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("file"), b"x").unwrap();
    let bundle = sample(vec![step("one", "allow", "e1")], &[("scenario.toml", b"a")]);
    let err = bundle.write(&tmp.path().join("file/out")).unwrap_err();
    assert!(matches!(err, ArenaError::BundleIo { .. }), "{err:?}");
    // An --out that is itself a file is refused instead: the arena did not write it.
    let err = bundle.write(&tmp.path().join("file")).unwrap_err();
    assert!(matches!(err, ArenaError::Bundle { .. }), "{err:?}");
}

// A symbolic link in a bundle's inputs is refused on read, so replay never stages a file from outside the bundle.
#[test]
fn read_refuses_linked_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    sample(vec![step("one", "allow", "e1")], &[("scenario.toml", b"a")])
        .write(&dir)
        .unwrap();
    std::fs::write(tmp.path().join("elsewhere.txt"), b"outside").unwrap();
    std::os::unix::fs::symlink(
        tmp.path().join("elsewhere.txt"),
        dir.join(INPUTS_DIR).join("linked.txt"),
    )
    .unwrap();
    let err = Bundle::read(&dir).unwrap_err();
    assert!(matches!(err, ArenaError::Bundle { .. }), "{err:?}");
}

// A manifest edited so that a policy's kernel id is a path (`../x`, an absolute path) is refused before any file outside the bundle is opened.
#[test]
fn read_refuses_a_policy_named_by_a_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    sample(vec![step("one", "allow", "e1")], &[("scenario.toml", b"a")])
        .write(&dir)
        .unwrap();
    std::fs::write(tmp.path().join("outside.json"), b"[]").unwrap();
    let path = dir.join(MANIFEST_FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    for name in ["../../outside", "/etc/passwd"] {
        let edited = text.replacen("\"k\"", &format!("{name:?}"), 1);
        assert_ne!(edited, text);
        std::fs::write(&path, &edited).unwrap();
        let err = Bundle::read(&dir).unwrap_err();
        assert!(err.to_string().contains("not a kernel id"), "{err}");
    }
}

// A full disk while the bundle is written is an infrastructure failure (the
// CLI exits 3), never a refused input. /dev/full answers every write with
// ENOSPC, exactly as a full filesystem does, without root: the receipts file
// of the folder being filled is made a link to it, so the bundle's own write
// path meets the error.
#[cfg(target_os = "linux")]
#[test]
fn full_disk_is_an_infrastructure_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let staging = tmp.path().join("staging");
    std::fs::create_dir_all(&staging).unwrap();
    std::os::unix::fs::symlink("/dev/full", staging.join(RECEIPTS_FILE)).unwrap();
    let bundle = sample(
        vec![step("one", "allow", "e1")],
        &[("scenario.toml", b"id = 1")],
    );
    let err = bundle.write_contents(&staging).unwrap_err();
    assert!(matches!(err, ArenaError::BundleIo { .. }), "{err:?}");
    assert_eq!(err.class(), crate::ErrorClass::Infrastructure);
    assert!(err.summary().contains("No space left on device"), "{err}");
}

/// Every file under `dir` with its bytes, by path relative to `dir`.
fn tree(dir: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            for (rel, bytes) in tree(&path) {
                found.insert(format!("{name}/{rel}"), bytes);
            }
        } else {
            found.insert(name, std::fs::read(&path).unwrap());
        }
    }
    found
}

// A folder is replaced only when it is a bundle: a project folder holding an
// unrelated arena.json, or a bundle someone added a file to, is refused with
// the foreign entry named and left byte for byte.
#[test]
fn a_folder_with_a_foreign_arena_json_or_entry_is_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = sample(vec![step("one", "allow", "e1")], &[("scenario.toml", b"a")]);
    let project = tmp.path().join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join(MANIFEST_FILE), br#"{"name":"config"}"#).unwrap();
    std::fs::write(project.join("NOTES.md"), b"notes").unwrap();
    std::fs::write(project.join("src/main.rs"), b"fn main() {}").unwrap();
    let before = tree(&project);
    let err = bundle.write(&project).unwrap_err();
    assert_eq!(err.code(), "CHIO-ARENA-BUNDLE", "{err:?}");
    assert!(err.to_string().contains("not a bundle manifest"), "{err}");
    assert_eq!(tree(&project), before);
    // A real bundle with a note beside it: the note is named.
    let noted = tmp.path().join("noted");
    bundle.write(&noted).unwrap();
    std::fs::write(noted.join("NOTES.md"), b"mine").unwrap();
    let before = tree(&noted);
    let err = bundle.write(&noted).unwrap_err();
    assert_eq!(err.code(), "CHIO-ARENA-BUNDLE", "{err:?}");
    assert!(err.to_string().contains("NOTES.md"), "{err}");
    assert_eq!(tree(&noted), before);
    // A bundle entry in a form no bundle writes (inputs as a link) is refused.
    #[cfg(unix)]
    {
        let linked = tmp.path().join("linked");
        bundle.write(&linked).unwrap();
        std::fs::remove_dir_all(linked.join(INPUTS_DIR)).unwrap();
        std::os::unix::fs::symlink(&project, linked.join(INPUTS_DIR)).unwrap();
        let err = bundle.write(&linked).unwrap_err();
        assert!(err.to_string().contains("inputs in a form"), "{err}");
    }
    assert_eq!(names(tmp.path()), ["linked", "noted", "project"]);
}
