//! Unit tests of reading a bundle as untrusted input: entries that are no
//! regular file or folder are refused unopened, every read is bounded, and
//! a refusal names its file printably.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use super::tests::{sample, step};
use super::*;

/// A written sample bundle in a new folder.
fn written() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    sample(vec![step("one", "allow", "e1")], &[("scenario.toml", b"a")])
        .write(&dir)
        .unwrap();
    (tmp, dir)
}

use crate::files::tests::mkfifo;

/// `Bundle::read(dir)`'s refusal, or a failure when it blocks or reads.
fn refusal(dir: &Path) -> String {
    let (send, receive) = mpsc::channel();
    let dir = dir.to_path_buf();
    std::thread::spawn(move || {
        let read = match Bundle::read(&dir) {
            Err(e @ ArenaError::Bundle { .. }) => Ok(e.to_string()),
            other => Err(format!("not refused as a bundle: {other:?}")),
        };
        let _ = send.send(read);
    });
    match receive.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(refusal)) => refusal,
        Ok(Err(other)) => panic!("{other}"),
        Err(_) => panic!("reading the bundle blocked"),
    }
}

// A named pipe among the inputs is refused without blocking, named printably.
#[test]
fn a_named_pipe_in_the_inputs_is_refused() {
    let (_tmp, dir) = written();
    mkfifo(&dir.join(INPUTS_DIR).join("pipe\u{1b}[2J"));
    let err = refusal(&dir);
    assert!(err.contains("a named pipe, not a regular file"), "{err}");
    assert!(err.contains("pipe\\u{1b}[2J"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err}");
}

// A top-level file linked to a device is refused, never read until memory runs out.
#[test]
fn top_level_links_to_devices_are_refused() {
    for (name, target) in [
        (RECEIPTS_FILE, "/dev/zero"),
        (MANIFEST_FILE, "/dev/urandom"),
    ] {
        let (_tmp, dir) = written();
        std::fs::remove_file(dir.join(name)).unwrap();
        std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
        let err = refusal(&dir);
        assert!(err.contains(name), "{err}");
        assert!(err.contains("a symbolic link, not a regular file"), "{err}");
    }
}

// A top-level named pipe is refused too, by the whole reader and the streaming one.
#[test]
fn top_level_named_pipes_are_refused() {
    for name in [RECEIPTS_FILE, MANIFEST_FILE] {
        let (_tmp, dir) = written();
        std::fs::remove_file(dir.join(name)).unwrap();
        mkfifo(&dir.join(name));
        let err = refusal(&dir);
        assert!(err.contains("a named pipe"), "{err}");
        if name == MANIFEST_FILE {
            let err = for_each_step(&dir, |_| Ok::<(), ()>(())).unwrap_err();
            assert!(err.to_string().contains("a named pipe"), "{err}");
        }
    }
}

// The policies or inputs folder linked elsewhere is refused.
#[test]
fn linked_folders_are_refused() {
    for name in [POLICIES_DIR, INPUTS_DIR] {
        let (tmp, dir) = written();
        let moved = tmp.path().join("moved");
        std::fs::rename(dir.join(name), &moved).unwrap();
        std::os::unix::fs::symlink(&moved, dir.join(name)).unwrap();
        let err = refusal(&dir);
        assert!(err.contains("a symbolic link, not a folder"), "{err}");
    }
}

// A file longer than the bound is refused after reading one byte past it, and the bound is documented as 1 GiB.
#[test]
fn reads_are_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("f");
    std::fs::write(&path, b"12345").unwrap();
    assert_eq!(read_regular(&path, 5).unwrap(), b"12345");
    let err = read_regular(&path, 4).unwrap_err();
    assert!(matches!(err, FileRefusal::TooLarge(4)), "{err:?}");
    assert_eq!(MAX_FILE_BYTES, 1024 * 1024 * 1024);
}

// Listing a bundle's files never opens a named pipe: it is listed with no bytes.
#[test]
fn listing_files_skips_named_pipes() {
    let (_tmp, dir) = written();
    mkfifo(&dir.join("pipe"));
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || send.send(bundle_files(&dir)));
    let files = receive.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(files.get("pipe"), Some(&None));
}
