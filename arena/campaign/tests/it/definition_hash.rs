//! Definition hashes pinned for a fixture tree holding a symbolic link, an
//! executable and a non-ASCII name, and their sensitivity to every byte and
//! mode. The pinned value was computed independently with Python's
//! `json.dumps(rows, separators=(",", ":"), ensure_ascii=True)` and hashlib.

#![cfg(unix)]

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use chio_campaign::git::PinnedTree;
use chio_experiment::definition::{definition_hash, rows_json};

use crate::git_repo;
use git_repo::git;

const PINNED: &str = "c32c289faaad13208f1dd51846c8e5fd8a20dff5ca517f582c23546964e225ed";

fn build_tree(root: &Path) {
    let tree = root.join("tree");
    std::fs::create_dir_all(tree.join("bin")).unwrap();
    std::fs::write(tree.join("a.txt"), b"alpha\n").unwrap();
    std::fs::write(tree.join("bin/run.sh"), b"#!/bin/sh\necho run\n").unwrap();
    std::fs::set_permissions(
        tree.join("bin/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    symlink("a.txt", tree.join("link")).unwrap();
    std::fs::write(tree.join("n\u{e9}.txt"), "caf\u{e9}\n").unwrap();
}

fn hash(root: &Path) -> String {
    definition_hash(root, &[PathBuf::from("tree")])
        .unwrap()
        .sha256
}

// The tree hashes to the independently computed value, with Git modes 100644, 100755 and 120000.
#[test]
fn fixture_tree_hash_is_pinned() {
    let tmp = tempfile::tempdir().unwrap();
    build_tree(tmp.path());
    let definition = definition_hash(tmp.path(), &[PathBuf::from("tree")]).unwrap();
    assert_eq!(definition.files, 4);
    let modes: Vec<&str> = definition.rows.iter().map(|r| r.mode.as_str()).collect();
    assert_eq!(modes, ["100644", "100755", "120000", "100644"]);
    assert!(rows_json(&definition.rows).contains("tree/n\\u00e9.txt"));
    assert_eq!(definition.sha256, PINNED);
}

// Changing one byte, a mode, or a link's target changes the hash; restoring them restores it.
#[test]
fn any_byte_or_mode_change_moves_the_hash() {
    let tmp = tempfile::tempdir().unwrap();
    build_tree(tmp.path());
    let tree = tmp.path().join("tree");
    assert_eq!(hash(tmp.path()), PINNED);

    std::fs::write(tree.join("a.txt"), b"alphA\n").unwrap();
    assert_ne!(hash(tmp.path()), PINNED, "a content byte");
    std::fs::write(tree.join("a.txt"), b"alpha\n").unwrap();
    assert_eq!(hash(tmp.path()), PINNED);

    let script = tree.join("bin/run.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_ne!(hash(tmp.path()), PINNED, "the executable bit");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(hash(tmp.path()), PINNED);

    std::fs::remove_file(tree.join("link")).unwrap();
    symlink("bin/run.sh", tree.join("link")).unwrap();
    assert_ne!(hash(tmp.path()), PINNED, "the link's target");
    std::fs::remove_file(tree.join("link")).unwrap();
    std::fs::write(tree.join("link"), b"a.txt").unwrap();
    assert_ne!(
        hash(tmp.path()),
        PINNED,
        "a link replaced by a file of its target bytes"
    );
}

// A link is hashed as its target path and never followed, even when the target is outside the tree.
#[test]
fn links_are_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("tree")).unwrap();
    symlink("/nonexistent/secret", tmp.path().join("tree/out")).unwrap();
    let definition = definition_hash(tmp.path(), &[PathBuf::from("tree")]).unwrap();
    assert_eq!(definition.rows[0].mode, "120000");
    assert_eq!(definition.files, 1);
}

// The same tree committed to Git hashes to the same pinned value from the revision's objects, and later working-tree edits do not move it.
#[test]
fn a_pinned_revision_hashes_from_git_objects() {
    let tmp = tempfile::tempdir().unwrap();
    build_tree(tmp.path());
    git(tmp.path(), &["init", "-q"]);
    git(tmp.path(), &["add", "-A"]);
    git(tmp.path(), &["commit", "-q", "-m", "tree"]);
    let commit = git(tmp.path(), &["rev-parse", "HEAD"]);
    std::fs::write(tmp.path().join("tree/a.txt"), b"changed after the pin\n").unwrap();
    std::fs::remove_file(tmp.path().join("tree/link")).unwrap();
    assert_ne!(hash(tmp.path()), PINNED, "the working tree moved");
    let pinned = PinnedTree::read(tmp.path(), &commit).unwrap();
    let definition = pinned.definition(&["tree".to_string()]).unwrap();
    assert_eq!(definition.sha256, PINNED);
    let modes: Vec<&str> = definition.rows.iter().map(|r| r.mode.as_str()).collect();
    assert_eq!(modes, ["100644", "100755", "120000", "100644"]);
    let err = PinnedTree::read(tmp.path(), "no-such-revision").unwrap_err();
    assert_eq!(err.code(), "CHIO-CAMPAIGN-REVISION");
}

// An annotated tag's object id is not a commit, though Git peels it to one: a pin names the commit itself, and the refusal names the commit to pin; the commit's id, a branch and a lightweight tag still read.
#[test]
fn a_tag_object_is_not_a_pinned_commit() {
    let tmp = tempfile::tempdir().unwrap();
    build_tree(tmp.path());
    git(tmp.path(), &["init", "-q"]);
    git(tmp.path(), &["add", "-A"]);
    git(tmp.path(), &["commit", "-q", "-m", "tree"]);
    let commit = git(tmp.path(), &["rev-parse", "HEAD"]);
    git(tmp.path(), &["tag", "-a", "v1", "-m", "annotated"]);
    git(tmp.path(), &["tag", "light"]);
    let tag = git(tmp.path(), &["rev-parse", "v1"]);
    assert_ne!(tag, commit);
    for revision in [tag.as_str(), "v1"] {
        let err = PinnedTree::read(tmp.path(), revision).unwrap_err();
        assert_eq!(err.code(), "CHIO-CAMPAIGN-REVISION", "{revision}");
        let text = err.summary();
        assert!(
            text.contains("it is a tag object, not a commit; pin the commit itself: ")
                && text.contains(&commit),
            "{text}"
        );
    }
    let tree = git(tmp.path(), &["rev-parse", "HEAD^{tree}"]);
    let err = PinnedTree::read(tmp.path(), &tree).unwrap_err();
    assert!(
        err.summary().contains("no such commit"),
        "{}",
        err.summary()
    );
    for revision in [commit.as_str(), "main", "light", "HEAD"] {
        let pinned = PinnedTree::read(tmp.path(), revision).unwrap();
        assert_eq!(pinned.commit, commit, "{revision}");
    }
}

// A link to a file below the root that no listed input covers adds that file's row: a task reads what the link leads to, so a change behind an unchanged link moves the hash.
#[test]
fn what_a_link_leads_to_below_the_root_is_covered() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("tree")).unwrap();
    std::fs::write(tmp.path().join("shared.txt"), b"one\n").unwrap();
    symlink("../shared.txt", tmp.path().join("tree/link")).unwrap();
    let definition = definition_hash(tmp.path(), &[PathBuf::from("tree/link")]).unwrap();
    let paths: Vec<&str> = definition.rows.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["shared.txt", "tree/link"]);
    let before = definition.sha256;
    std::fs::write(tmp.path().join("shared.txt"), b"two\n").unwrap();
    let after = definition_hash(tmp.path(), &[PathBuf::from("tree/link")]).unwrap();
    assert_ne!(after.sha256, before, "the file behind the link changed");
}

/// A root holding the walking skeleton, its fixtures and prompt, with the
/// scenario also reachable through `inlink.toml` (a link inside the root)
/// and `outlink.toml` (a link to a copy outside it), and the root again
/// through the folder link `sub/up`.
fn linked_task_files(dir: &Path) -> PathBuf {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let root = dir.join("root");
    for file in [
        "walking_skeleton.toml",
        "fixtures/walking-skeleton/notes.txt",
        "fixtures/walking-skeleton/.env",
        "prompts/walking-skeleton.txt",
    ] {
        let target = root.join(file);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(scenarios.join(file), target).unwrap();
    }
    std::fs::create_dir_all(dir.join("outside")).unwrap();
    std::fs::copy(
        root.join("walking_skeleton.toml"),
        dir.join("outside/ws.toml"),
    )
    .unwrap();
    symlink("walking_skeleton.toml", root.join("inlink.toml")).unwrap();
    symlink("../outside/ws.toml", root.join("outlink.toml")).unwrap();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    symlink("..", root.join("sub/up")).unwrap();
    root
}

// A task file that is a symbolic link (inside the root or out of it), or that lies below one, is refused when it is hashed, from the working tree and from a revision, and when a declaration naming it is loaded: a link's definition pins its text, not the scenario that runs.
#[test]
fn a_task_file_that_is_a_link_is_refused() {
    use chio_campaign::{load_campaign, task_definition, task_definition_at, TaskKind};
    let tmp = tempfile::tempdir().unwrap();
    let root = linked_task_files(tmp.path());
    for file in [
        "inlink.toml",
        "outlink.toml",
        "sub/up/walking_skeleton.toml",
    ] {
        let err = task_definition(&root, TaskKind::Scenario, file).unwrap_err();
        assert_eq!(err.code(), "CHIO-CAMPAIGN-DEFINITION-PATH", "{file}: {err}");
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
    }
    // A file named directly is hashed as before.
    let (_, definition) =
        task_definition(&root, TaskKind::Scenario, "walking_skeleton.toml").unwrap();
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "links"]);
    let err = task_definition_at(&root, "HEAD", TaskKind::Scenario, "inlink.toml").unwrap_err();
    assert_eq!(err.code(), "CHIO-CAMPAIGN-DEFINITION-PATH", "{err}");
    let decl = tmp.path().join("campaign.toml");
    for (file, kind) in [("inlink.toml", "scenario"), ("outlink.toml", "evolve")] {
        std::fs::write(
            &decl,
            format!(
                "schema_version = \"chio.arena.campaign/v2\"\nid = \"links\"\ntitle = \"links\"\nroot = \"root\"\n\n\
                 [[tasks]]\nid = \"ws\"\nkind = \"{kind}\"\nfile = \"{file}\"\nrepetitions = 1\n\
                 limits = {{ wall_seconds = 1, steps = 1, kernel_evaluations = 1, generations = 1 }}\n\
                 definition = {{ sha256 = \"{}\", files = {} }}\n",
                definition.sha256, definition.files
            ),
        )
        .unwrap();
        let err = load_campaign(&decl).unwrap_err();
        assert_eq!(err.code(), "CHIO-CAMPAIGN-DEFINITION-PATH", "{file}: {err}");
    }
}

// A declaration pins a commit by its full id: `HEAD`, a branch or an abbreviation, which can move, is refused at load naming the revision key.
#[test]
fn a_pin_that_can_move_is_refused() {
    use chio_campaign::load_campaign;
    let tmp = tempfile::tempdir().unwrap();
    let root = linked_task_files(tmp.path());
    let commit = git_repo::commit_all(&root);
    let decl = tmp.path().join("campaign.toml");
    for revision in ["HEAD", "main", &commit[..12]] {
        std::fs::write(
            &decl,
            format!(
                "schema_version = \"chio.arena.campaign/v2\"\nid = \"pin\"\ntitle = \"pin\"\nroot = \"root\"\nrevision = \"{revision}\"\n\n\
                 [[tasks]]\nid = \"ws\"\nkind = \"scenario\"\nfile = \"walking_skeleton.toml\"\nrepetitions = 1\n\
                 limits = {{ wall_seconds = 1, steps = 1, kernel_evaluations = 1, generations = 1 }}\n\
                 definition = {{ sha256 = \"{}\", files = 1 }}\n",
                "0".repeat(64)
            ),
        )
        .unwrap();
        let err = load_campaign(&decl).unwrap_err();
        assert_eq!(err.code(), "CHIO-CAMPAIGN-DECLARATION", "{revision}: {err}");
        assert!(
            err.to_string().contains("is not a commit id"),
            "{revision}: {err}"
        );
    }
}
