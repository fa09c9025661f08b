//! Writing an output file (a report, an envelope, a recording, a run
//! record, an imported scenario) whole or not at all, and only over a
//! regular file.
//!
//! [`write_whole`] writes the bytes to a new temporary file of its own
//! beside the destination (created exclusively, so no file or link already
//! there is written through), flushes it and renames it over the
//! destination, so a reader never sees half a file and an old file is
//! replaced only by a whole new one. A rename replaces whatever entry the
//! path names, so the destination is checked first: it must be absent or a
//! regular file. A symbolic link (the rename would replace the link, not
//! its target), a device such as `/dev/null`, a named pipe, a socket or a
//! folder is refused and nothing is written. The new file is created with
//! the mode a plain create gives (0666 less the umask). Every writer in
//! the workspace that renames a finished file into place goes through
//! here; folders (a bundle, `chio arena init`) are checked by their own
//! writers, and the folders between an output folder and a file in it are
//! made by [`make_folders`], never through a link.

use std::io::Write;
use std::path::Path;

use crate::files::kind_of;

/// Why an output file was not written.
#[derive(Debug)]
pub enum WriteRefusal {
    /// Something other than a regular file is at the destination: what it
    /// is, in words (`a device`, `a symbolic link`, ...).
    NotRegular(&'static str),
    /// The temporary file could not be created, written or flushed, or the
    /// destination could not be examined.
    Write(std::io::Error),
    /// The finished file could not be renamed over the destination.
    Replace(std::io::Error),
    /// An entry between an output folder and a file to write in it is not
    /// a real folder (a symbolic link, a file): never followed.
    NotFolder {
        /// The entry.
        path: std::path::PathBuf,
        /// What it is, in words.
        kind: &'static str,
    },
}

impl WriteRefusal {
    /// The refusal in words, for a message that names the destination
    /// itself (`{path}: {describe}`).
    pub fn describe(&self) -> String {
        match self {
            WriteRefusal::NotRegular(kind) => {
                format!("it is {kind}, not a regular file, and is never replaced")
            }
            WriteRefusal::Write(e) | WriteRefusal::Replace(e) => e.kind().to_string(),
            WriteRefusal::NotFolder { path, kind } => format!(
                "{} is {kind}, not a folder, and nothing is written through it",
                path.display()
            ),
        }
    }

    /// The refusal as the arena's output error for `path`
    /// (`CHIO-ARENA-OUTPUT`).
    pub fn output_error(&self, path: &Path) -> crate::error::ArenaError {
        crate::error::ArenaError::Output {
            path: path.display().to_string(),
            cause: self.describe(),
        }
    }
}

/// Refuses a destination that is neither absent nor a regular file
/// (looked at itself, never through a link).
pub fn check_destination(path: &Path) -> Result<(), WriteRefusal> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(WriteRefusal::Write(e)),
        Ok(meta) if meta.file_type().is_file() => Ok(()),
        Ok(meta) => Err(WriteRefusal::NotRegular(kind_of(meta.file_type()))),
    }
}

/// Makes the folders between the output folder `root` and the file `path`
/// below it, each a real folder: an entry on the way that is a symbolic
/// link or anything but a folder is refused, never followed, and nothing
/// is made past it. Every writer of several files into one folder (`chio
/// arena init`, `chio import trace`, promote, record) makes its folders
/// here, so no file lands outside the folder through a planted link.
pub fn make_folders(root: &Path, path: &Path) -> Result<(), WriteRefusal> {
    walk_folders(root, path, true)
}

/// [`make_folders`] without making anything: refuses a link or a
/// non-folder on the way, before any file is written.
pub fn check_folders(root: &Path, path: &Path) -> Result<(), WriteRefusal> {
    walk_folders(root, path, false)
}

fn walk_folders(root: &Path, path: &Path, create: bool) -> Result<(), WriteRefusal> {
    let below = path.strip_prefix(root).unwrap_or(path);
    let mut at = root.to_path_buf();
    for part in below.parent().into_iter().flat_map(Path::components) {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_dir() => {}
            Ok(meta) => {
                return Err(WriteRefusal::NotFolder {
                    path: at,
                    kind: match meta.file_type() {
                        kind if kind.is_file() => "a file",
                        kind => kind_of(kind),
                    },
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&at).map_err(WriteRefusal::Write)?;
            }
            Err(e) => return Err(WriteRefusal::Write(e)),
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` whole or not at all (see the module doc); the
/// temporary file is named `{prefix}*.partial` and is removed on failure.
/// The destination's folder must exist.
pub fn write_whole(path: &Path, bytes: &[u8], prefix: &str) -> Result<(), WriteRefusal> {
    check_destination(path)?;
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix).suffix(".partial");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut file = builder.tempfile_in(folder).map_err(WriteRefusal::Write)?;
    file.write_all(bytes)
        .and_then(|()| file.as_file().sync_all())
        .map_err(WriteRefusal::Write)?;
    // A temporary file that is not persisted is removed when dropped.
    file.persist(path)
        .map(drop)
        .map_err(|e| WriteRefusal::Replace(e.error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::tests::{mkfifo, names};

    // The folders between an output folder and a file are real folders: a
    // link on the way is refused, named, and nothing is written through it.
    #[test]
    fn folders_on_the_way_are_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("out");
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("prompts")).unwrap();
        let file = root.join("prompts/a/agent.txt");
        for refusal in [check_folders(&root, &file), make_folders(&root, &file)] {
            let err = refusal.unwrap_err();
            assert!(
                err.describe().contains("prompts is a symbolic link"),
                "{}",
                err.describe()
            );
        }
        assert!(names(&elsewhere).is_empty());
        let deep = root.join("x/y/z.txt");
        check_folders(&root, &deep).unwrap();
        assert!(!root.join("x").exists());
        make_folders(&root, &deep).unwrap();
        assert!(root.join("x/y").is_dir());
    }

    // A new file and a regular file are written whole; nothing else is left beside them.
    #[test]
    fn writes_new_and_regular_files() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("out.json");
        write_whole(&path, b"one", ".x-").unwrap();
        write_whole(&path, b"two", ".x-").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(names(tmp.path()), vec!["out.json"]);
    }

    // A link, a pipe, a device and a folder at the destination are refused, named, and left as they were.
    #[test]
    fn refuses_to_replace_anything_but_a_regular_file() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target.txt");
        std::fs::write(&target, b"kept").unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let device = tmp.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &device).unwrap();
        let pipe = tmp.path().join("pipe");
        mkfifo(&pipe);
        let folder = tmp.path().join("folder");
        std::fs::create_dir(&folder).unwrap();
        let cases = [
            (link.as_path(), "a symbolic link"),
            (device.as_path(), "a symbolic link"),
            (pipe.as_path(), "a named pipe"),
            (folder.as_path(), "a folder"),
            (Path::new("/dev/null"), "a device"),
        ];
        for (path, kind) in cases {
            let err = check_destination(path).unwrap_err();
            assert!(
                matches!(err, WriteRefusal::NotRegular(k) if k == kind),
                "{path:?}: {err:?}"
            );
            assert!(err
                .describe()
                .ends_with("not a regular file, and is never replaced"));
        }
        for (path, _) in &cases[..4] {
            assert!(write_whole(path, b"new", ".x-").is_err());
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"kept");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(&pipe)
            .unwrap()
            .file_type()
            .is_fifo());
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        assert_eq!(
            names(tmp.path()),
            vec!["folder", "link", "null", "pipe", "target.txt"]
        );
    }
}
