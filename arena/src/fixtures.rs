//! Reading a workspace server's fixture folder, confined to the scenario's
//! folder.
//!
//! A `fixtures` path names a folder below the scenario's folder. The loader
//! reads it completely with [`read_fixtures`], so everything a run would
//! refuse about the fixtures is refused by `chio arena validate` as well, and
//! a run seeds exactly the bytes that were validated. Paths are resolved the
//! way the operating system would follow them (every symbolic link
//! included), and any that ends up outside the scenario's folder is refused:
//! a folder written with `..` or as an absolute path, a `fixtures` folder
//! that is a symbolic link to elsewhere, or a file or folder below it that
//! is such a link. A symbolic link that stays inside the scenario's folder is
//! followed. Every file must be UTF-8 text with a UTF-8 name; a socket, FIFO
//! or device, a dangling link and a link looping back to a folder above it
//! are refused. Files are read in sorted order, keyed by their path relative
//! to the fixture folder with `/` separators.
//!
//! What is read is bounded before it is read, so a folder cannot make the
//! loader's time or memory grow without end: a file holds at most
//! [`MAX_WORKSPACE_FILE_BYTES`] (checked as it is read, so a sparse file
//! claiming gigabytes costs nothing), and the fixture folders of one
//! scenario hold at most [`MAX_FIXTURE_ENTRIES`] entries and
//! [`MAX_FIXTURE_BYTES`] in all, counting each path the walk reaches (links
//! that fan out to one folder count each time they reach it).
//!
//! What was read is a [`FixtureSet`] by server id; the path rules that need
//! no disk ([`check_folder`]) also apply when a scenario is validated
//! against a set read before, as a node does.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::ArenaError;
use crate::scenario::Scenario;

/// The files of one fixture folder: relative path (with `/`) to UTF-8 content.
pub type FixtureFiles = BTreeMap<String, String>;

/// The most a workspace file holds (2 MiB), as a fixture and as a call
/// writes it: its read's answer then stays within what a link between
/// node processes carries, so it reads the same on every topology.
pub const MAX_WORKSPACE_FILE_BYTES: usize = 2 * 1024 * 1024;

/// The most entries (files and folders, each path the walk reaches) the
/// fixture folders of one scenario hold.
pub const MAX_FIXTURE_ENTRIES: usize = 10_000;

/// The most bytes the fixture folders of one scenario hold in all (32 MiB):
/// a world carries them to every node in one message of at most 64 MiB.
pub const MAX_FIXTURE_BYTES: u64 = 32 * 1024 * 1024;

/// What the fixture folders of one scenario may still hold, shared by
/// every folder read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixtureBudget {
    entries: usize,
    bytes: u64,
}

impl Default for FixtureBudget {
    fn default() -> Self {
        FixtureBudget {
            entries: MAX_FIXTURE_ENTRIES,
            bytes: MAX_FIXTURE_BYTES,
        }
    }
}

/// The file name the bundle gives the scenario file inside `inputs/`, which
/// a fixture folder must not shadow.
const SCENARIO_INPUT: &str = crate::bundle::SCENARIO_INPUT;

/// The `fixtures` folder as a `/`-separated path below the scenario's
/// folder (`./a//b/` becomes `a/b`), or `None` when it is empty, absolute,
/// climbs with `..`, or names the scenario's folder itself.
pub fn normalized_folder(folder: &str) -> Option<String> {
    let mut parts = Vec::new();
    for component in Path::new(folder).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?.to_string()),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    if parts.is_empty() {
        None
    } else {
        Some(parts.join("/"))
    }
}

/// The fixture files of every workspace server that declares a folder, by
/// server id: what the loader read and checked, and what travels with the
/// scenario's bytes to a node, which validates against it without a
/// filesystem.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixtureSet {
    /// Server id to (relative path to UTF-8 content).
    pub servers: BTreeMap<String, FixtureFiles>,
}

impl FixtureSet {
    /// The fixture files of every workspace server, exactly as the scenario
    /// loader read and checked them: nothing is read from disk again, so a
    /// run seeds the bytes that were validated and cannot fail on them. The
    /// `Result` is kept for callers; it is always `Ok`.
    pub fn load(scenario: &Scenario) -> Result<FixtureSet, ArenaError> {
        Ok(scenario.fixture_set().clone())
    }
}

/// The rules a `fixtures` path obeys as written, whatever the disk holds:
/// below the scenario's folder, and not below a folder named like the
/// bundle's copy of the scenario file. Returns the normalised folder.
pub fn check_folder(folder: &str, field: &str) -> Result<String, ArenaError> {
    let normalized =
        normalized_folder(folder).ok_or_else(|| ArenaError::FixtureOutsideScenario {
            field: field.to_string(),
            entry: None,
        })?;
    if normalized.split('/').next() == Some(SCENARIO_INPUT) {
        return Err(ArenaError::OutOfRange {
            field: field.to_string(),
            rule: "fixtures is not below a folder named scenario.toml, the bundle's name for the scenario file",
        });
    }
    Ok(normalized)
}

/// Why a path below the scenario's folder could not be resolved.
#[derive(Debug)]
pub enum Unresolved {
    /// The scenario's folder itself cannot be resolved.
    Base(std::io::Error),
    /// The path cannot be resolved (it is missing, or a link dangles).
    Path(std::io::Error),
}

/// The one rule every file or folder a scenario names by path obeys (a
/// `fixtures` folder, a sealed file, an agent's `seed_prompt_ref`): as
/// written, a relative path below the scenario's folder ([`check_folder`]);
/// resolved with every symbolic link followed, still inside it, else
/// [`ArenaError::FixtureOutsideScenario`]. Answers the resolved path, or
/// why it could not be resolved (the caller words a missing file), so
/// nothing is revealed about a path outside the scenario's folder.
pub fn resolve_below(
    base_dir: &Path,
    path: &str,
    field: &str,
) -> Result<Result<PathBuf, Unresolved>, ArenaError> {
    let normalized = check_folder(path, field)?;
    let base = match base_dir.canonicalize() {
        Ok(base) => base,
        Err(e) => return Ok(Err(Unresolved::Base(e))),
    };
    let real = match base_dir.join(&normalized).canonicalize() {
        Ok(real) => real,
        Err(e) => return Ok(Err(Unresolved::Path(e))),
    };
    if !real.starts_with(&base) {
        return Err(ArenaError::FixtureOutsideScenario {
            field: field.to_string(),
            entry: Some(normalized),
        });
    }
    Ok(Ok(real))
}

/// Reads the fixture folder `folder` (as written at `field`) below
/// `base_dir`, the scenario's folder, within what `budget` still allows
/// (and spends it); see the module documentation for what is refused.
pub fn read_fixtures(
    base_dir: &Path,
    folder: &str,
    field: &str,
    budget: &mut FixtureBudget,
) -> Result<FixtureFiles, ArenaError> {
    let outside = |entry: Option<String>| ArenaError::FixtureOutsideScenario {
        field: field.to_string(),
        entry,
    };
    let normalized = check_folder(folder, field)?;
    let dir = base_dir.join(&normalized);
    if !dir.is_dir() {
        return Err(ArenaError::FixtureMissing {
            field: field.to_string(),
            folder: folder.to_string(),
        });
    }
    let unreadable = |entry: &str, reason: String| ArenaError::FixtureUnreadable {
        field: field.to_string(),
        entry: entry.to_string(),
        reason,
    };
    let base = base_dir.canonicalize().map_err(|e| {
        unreadable(
            ".",
            format!("the scenario's folder cannot be resolved: {}", e.kind()),
        )
    })?;
    let real = dir
        .canonicalize()
        .map_err(|e| unreadable(&normalized, format!("cannot be resolved: {}", e.kind())))?;
    if !real.starts_with(&base) {
        return Err(outside(Some(normalized)));
    }
    let mut walk = Walk {
        base,
        shown: normalized,
        field,
        files: FixtureFiles::new(),
        above: vec![real.clone()],
        budget,
    };
    walk.folder(&real, "")?;
    Ok(walk.files)
}

/// One traversal of a fixture folder.
struct Walk<'a> {
    /// The scenario's folder, resolved; nothing outside it is read.
    base: PathBuf,
    /// The fixture folder as errors show it (relative to the scenario's folder).
    shown: String,
    /// The `fixtures` key, for errors.
    field: &'a str,
    /// What was read so far.
    files: FixtureFiles,
    /// The resolved folders being walked, outermost first, to refuse loops.
    above: Vec<PathBuf>,
    /// What the scenario's fixture folders may still hold.
    budget: &'a mut FixtureBudget,
}

impl Walk<'_> {
    fn entry(&self, rel: &str) -> String {
        format!("{}/{rel}", self.shown)
    }

    fn unreadable(&self, rel: &str, reason: impl Into<String>) -> ArenaError {
        ArenaError::FixtureUnreadable {
            field: self.field.to_string(),
            entry: if rel.is_empty() {
                self.shown.clone()
            } else {
                self.entry(rel)
            },
            reason: reason.into(),
        }
    }

    /// The bytes of the resolved file `real`, read no further than the
    /// bound of one workspace file and what the budget still allows.
    fn read_bounded(&mut self, real: &Path, rel: &str) -> Result<Vec<u8>, ArenaError> {
        use crate::bundle::FileRefusal;
        let file_bound = MAX_WORKSPACE_FILE_BYTES as u64;
        let bound = file_bound.min(self.budget.bytes);
        let bytes = crate::bundle::read_regular(real, bound).map_err(|e| match e {
            FileRefusal::TooLarge(_) if bound < file_bound => self.unreadable(
                rel,
                format!("the scenario's fixture folders hold more than {MAX_FIXTURE_BYTES} bytes in all"),
            ),
            FileRefusal::TooLarge(_) => self.unreadable(
                rel,
                format!("it holds more than {MAX_WORKSPACE_FILE_BYTES} bytes, the most a workspace file holds"),
            ),
            FileRefusal::NotRegular(_) => self.unreadable(
                rel,
                "neither a file nor a folder (a socket, a FIFO or a device)",
            ),
            FileRefusal::Io(e) => self.unreadable(rel, format!("cannot be read: {}", e.kind())),
        })?;
        self.budget.bytes -= bytes.len() as u64;
        Ok(bytes)
    }

    /// Reads the resolved folder `real`, whose path below the fixture folder is `rel`.
    fn folder(&mut self, real: &Path, rel: &str) -> Result<(), ArenaError> {
        let listing = std::fs::read_dir(real).map_err(|e| {
            self.unreadable(rel, format!("the folder cannot be listed: {}", e.kind()))
        })?;
        let mut names = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|e| {
                self.unreadable(rel, format!("the folder cannot be listed: {}", e.kind()))
            })?;
            let name = entry
                .file_name()
                .into_string()
                .map_err(|_| self.unreadable(rel, "a file name in it is not UTF-8"))?;
            names.push(name);
        }
        // Directory order is the filesystem's; sort so nothing depends on it.
        names.sort();
        for name in names {
            let child_rel = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            self.child(&real.join(&name), &child_rel)?;
        }
        Ok(())
    }

    /// Reads one entry: a file, a folder, or a link to either inside the scenario's folder.
    fn child(&mut self, path: &Path, rel: &str) -> Result<(), ArenaError> {
        self.budget.entries = self.budget.entries.checked_sub(1).ok_or_else(|| {
            self.unreadable(
                rel,
                format!(
                    "the scenario's fixture folders reach more than {MAX_FIXTURE_ENTRIES} files and folders (each path counts, links that reach one folder twice too)"
                ),
            )
        })?;
        let link = std::fs::symlink_metadata(path)
            .map_err(|e| self.unreadable(rel, format!("cannot be read: {}", e.kind())))?;
        let (real, meta) = if link.file_type().is_symlink() {
            let target = path.canonicalize().map_err(|_| {
                self.unreadable(rel, "a symbolic link that dangles or cannot be resolved")
            })?;
            if !target.starts_with(&self.base) {
                return Err(ArenaError::FixtureOutsideScenario {
                    field: self.field.to_string(),
                    entry: Some(self.entry(rel)),
                });
            }
            let meta = std::fs::metadata(&target)
                .map_err(|e| self.unreadable(rel, format!("cannot be read: {}", e.kind())))?;
            (target, meta)
        } else {
            (path.to_path_buf(), link)
        };
        if meta.is_dir() {
            if self.above.contains(&real) {
                return Err(self.unreadable(rel, "a symbolic link loops back to a folder above it"));
            }
            self.above.push(real.clone());
            self.folder(&real, rel)?;
            self.above.pop();
            Ok(())
        } else if meta.is_file() {
            let bytes = self.read_bounded(&real, rel)?;
            let text = String::from_utf8(bytes)
                .map_err(|_| self.unreadable(rel, "not UTF-8 text; fixtures are text files"))?;
            self.files.insert(rel.to_string(), text);
            Ok(())
        } else {
            Err(self.unreadable(
                rel,
                "neither a file nor a folder (a socket, a FIFO or a device)",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A scenario folder with `fixtures/ws/a.txt` and `fixtures/ws/sub/b.txt`,
    /// next to an `outside` folder holding `secret.txt`.
    fn layout() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("scenario");
        std::fs::create_dir_all(base.join("fixtures/ws/sub")).unwrap();
        std::fs::write(base.join("fixtures/ws/a.txt"), "a").unwrap();
        std::fs::write(base.join("fixtures/ws/sub/b.txt"), "b").unwrap();
        std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
        std::fs::write(tmp.path().join("outside/secret.txt"), "outside").unwrap();
        (tmp, base)
    }

    /// Makes one bad entry in a fixture folder.
    type Make = Box<dyn Fn(&Path)>;

    fn read(base: &Path, folder: &str) -> Result<FixtureFiles, ArenaError> {
        read_fixtures(
            base,
            folder,
            "servers[0].fixtures",
            &mut FixtureBudget::default(),
        )
    }

    // A plain folder is read completely, keyed by relative path in sorted order.
    #[test]
    fn reads_every_file() {
        let (_tmp, base) = layout();
        let files = read(&base, "./fixtures//ws/").unwrap();
        assert_eq!(
            files.into_iter().collect::<Vec<_>>(),
            [
                ("a.txt".to_string(), "a".to_string()),
                ("sub/b.txt".to_string(), "b".to_string())
            ]
        );
    }

    // A fixtures folder that is a symbolic link to a folder outside the scenario's folder is refused, naming the field.
    #[test]
    fn symlinked_folder_outside_is_refused() {
        let (tmp, base) = layout();
        symlink(tmp.path().join("outside"), base.join("fixtures/escape")).unwrap();
        let err = read(&base, "fixtures/escape").unwrap_err();
        assert_eq!(err.code(), "CHIO-SCENARIO-FIXTURE-OUTSIDE");
        assert_eq!(err.field(), Some("servers[0].fixtures"));
        assert!(!err.to_string().contains("outside/"), "{err}");
    }

    // A symbolic link to a file outside, below the fixture folder, is refused, naming the entry.
    #[test]
    fn symlinked_file_outside_is_refused() {
        let (tmp, base) = layout();
        symlink(
            tmp.path().join("outside/secret.txt"),
            base.join("fixtures/ws/leak.txt"),
        )
        .unwrap();
        let err = read(&base, "fixtures/ws").unwrap_err();
        assert_eq!(
            err,
            ArenaError::FixtureOutsideScenario {
                field: "servers[0].fixtures".into(),
                entry: Some("fixtures/ws/leak.txt".into()),
            }
        );
    }

    // A symbolic link to a folder outside, below the fixture folder, is refused.
    #[test]
    fn symlinked_subfolder_outside_is_refused() {
        let (tmp, base) = layout();
        symlink(
            tmp.path().join("outside"),
            base.join("fixtures/ws/sub/more"),
        )
        .unwrap();
        let err = read(&base, "fixtures/ws").unwrap_err();
        assert_eq!(err.code(), "CHIO-SCENARIO-FIXTURE-OUTSIDE");
        assert!(err.to_string().contains("fixtures/ws/sub/more"), "{err}");
    }

    // `..` segments, absolute paths and the scenario's folder itself are refused before anything is read.
    #[test]
    fn lexical_escapes_are_refused() {
        let (_tmp, base) = layout();
        for folder in [
            "../outside",
            "fixtures/../../outside",
            "/etc",
            "",
            ".",
            "./",
        ] {
            let err = read(&base, folder).unwrap_err();
            assert_eq!(err.code(), "CHIO-SCENARIO-FIXTURE-OUTSIDE", "{folder:?}");
        }
    }

    // A symbolic link that stays inside the scenario's folder is followed.
    #[test]
    fn links_inside_are_followed() {
        let (_tmp, base) = layout();
        std::fs::write(base.join("shared.txt"), "shared").unwrap();
        symlink(base.join("shared.txt"), base.join("fixtures/ws/shared.txt")).unwrap();
        let files = read(&base, "fixtures/ws").unwrap();
        assert_eq!(files["shared.txt"], "shared");
    }

    // A link looping back to a folder above it, a dangling link, a non-UTF-8 file and a FIFO are refused as unreadable.
    #[test]
    fn unreadable_entries_are_refused() {
        let cases: Vec<(&str, Make)> = vec![
            (
                "loop",
                Box::new(|ws| symlink(ws, ws.join("sub/loop")).unwrap()),
            ),
            (
                "dangling",
                Box::new(|ws| symlink(ws.join("nothing"), ws.join("dangling")).unwrap()),
            ),
            (
                "binary",
                Box::new(|ws| std::fs::write(ws.join("binary"), [0xff, 0xfe]).unwrap()),
            ),
            (
                "fifo",
                Box::new(|ws| {
                    let status = std::process::Command::new("mkfifo")
                        .arg(ws.join("fifo"))
                        .status()
                        .unwrap();
                    assert!(status.success());
                }),
            ),
        ];
        for (name, make) in cases {
            let (_tmp, base) = layout();
            make(&base.join("fixtures/ws"));
            let err = read(&base, "fixtures/ws").unwrap_err();
            assert_eq!(
                err.code(),
                "CHIO-SCENARIO-FIXTURE-UNREADABLE",
                "{name}: {err}"
            );
            assert_eq!(err.field(), Some("servers[0].fixtures"), "{name}");
        }
    }

    // A fixture folder named scenario.toml would shadow the scenario file in the bundle, so it is refused.
    #[test]
    fn scenario_input_name_is_refused() {
        let (_tmp, base) = layout();
        std::fs::create_dir_all(base.join("scenario.toml")).unwrap();
        let err = read(&base, "scenario.toml").unwrap_err();
        assert_eq!(err.code(), "CHIO-SCENARIO-OUT-OF-RANGE");
    }

    // Links that fan out (each folder holding two links to the next) reach
    // 2^N paths to one file; the walk stops at its entry bound instead of
    // taking exponential time, and a sparse file claiming gigabytes is
    // refused without being read. At the bound a file is read.
    #[test]
    fn fan_out_links_and_sparse_files_stop_at_their_bounds() {
        let (_tmp, base) = layout();
        let ws = base.join("fixtures/ws");
        for level in 0..16 {
            let here = ws.join(format!("l{level}"));
            std::fs::create_dir_all(&here).unwrap();
            let next = ws.join(format!("l{}", level + 1));
            std::fs::create_dir_all(&next).unwrap();
            symlink(&next, here.join("x")).unwrap();
            symlink(&next, here.join("y")).unwrap();
        }
        std::fs::write(ws.join("l16/leaf.txt"), "leaf").unwrap();
        let err = read(&base, "fixtures/ws").unwrap_err();
        assert_eq!(err.code(), "CHIO-SCENARIO-FIXTURE-UNREADABLE", "{err}");
        assert!(
            err.to_string()
                .contains("more than 10000 files and folders"),
            "{err}"
        );

        let (_tmp, base) = layout();
        let ws = base.join("fixtures/ws");
        let sparse = std::fs::File::create(ws.join("sparse.txt")).unwrap();
        sparse.set_len(8 * 1024 * 1024 * 1024).unwrap();
        let err = read(&base, "fixtures/ws").unwrap_err();
        assert!(
            err.to_string().contains("the most a workspace file holds"),
            "{err}"
        );
        std::fs::File::create(ws.join("sparse.txt"))
            .unwrap()
            .set_len(MAX_WORKSPACE_FILE_BYTES as u64)
            .unwrap();
        let files = read(&base, "fixtures/ws").unwrap();
        assert_eq!(files["sparse.txt"].len(), MAX_WORKSPACE_FILE_BYTES);
    }

    // The bytes of every folder of one scenario count against one bound.
    #[test]
    fn the_folders_of_one_scenario_share_one_byte_bound() {
        let (_tmp, base) = layout();
        let ws = base.join("fixtures/ws");
        let mut budget = FixtureBudget::default();
        for n in 0..(MAX_FIXTURE_BYTES as usize / MAX_WORKSPACE_FILE_BYTES) {
            std::fs::File::create(ws.join(format!("f{n:02}.txt")))
                .unwrap()
                .set_len(MAX_WORKSPACE_FILE_BYTES as u64)
                .unwrap();
        }
        read_fixtures(&base, "fixtures/ws", "servers[0].fixtures", &mut budget).unwrap_err();
        let mut budget = FixtureBudget::default();
        std::fs::remove_file(ws.join("a.txt")).unwrap();
        std::fs::remove_file(ws.join("sub/b.txt")).unwrap();
        read_fixtures(&base, "fixtures/ws", "servers[0].fixtures", &mut budget).unwrap();
        let err =
            read_fixtures(&base, "fixtures/ws", "servers[1].fixtures", &mut budget).unwrap_err();
        assert!(err.to_string().contains("in all"), "{err}");
    }
}
