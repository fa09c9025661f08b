//! Reading a campaign's files from Git: the pinned revision's objects and
//! the working tree's commit.
//!
//! A pinned declaration names a `revision` (a commit object itself: a tag
//! object, which Git would peel to its commit, is refused, naming the
//! commit to pin); its definition hashes are then
//! computed from the repository's objects at that revision (`git ls-tree`
//! for paths and modes, `git cat-file` for the bytes), never from the
//! working tree, so editing, adding or deleting files after the pin cannot
//! rewrite what the declaration pins. The rows obey the same byte rules as
//! the working-tree mode (Git stores exactly the modes and link targets
//! those rules name), so a clean checkout of the revision hashes the same
//! either way. To learn which files a task reads (which needs the scenario
//! or matrix parsed), the revision's files under the definition root are
//! written to a private temporary folder and read there.
//!
//! [`source_revision`] answers the other question a ledger row asks: which
//! commit the working tree that ran an attempt was. It is the `HEAD` commit
//! when none of the task's files has an uncommitted change (tracked or
//! untracked), and otherwise unknown, with the reason recorded as a
//! deviation. [`commit_exists`] answers the first question the report asks
//! of a row that names such a commit: does the repository hold it; and
//! [`PinnedTree::first_difference`] the second: does that commit hold the
//! task's pinned files with their pinned modes and bytes. Git is run as the
//! `git` command; nothing here writes to the repository.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use chio_experiment::definition::{rows_json, sha256_hex, Definition, DefinitionRow};
use chio_experiment::error::ExperimentError;

/// One file of a revision under the definition root.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    mode: String,
    object: String,
}

/// The files of one revision below a definition root.
#[derive(Debug, Clone)]
pub struct PinnedTree {
    /// The full commit id the revision resolved to.
    pub commit: String,
    /// Root-relative `/` path to the entry's bytes, mode and blob.
    entries: BTreeMap<String, (Entry, Vec<u8>)>,
}

fn git_error(revision: &str, reason: impl Into<String>) -> ExperimentError {
    ExperimentError::Revision {
        revision: revision.to_string(),
        reason: reason.into(),
    }
}

/// Runs `git -C dir args`, returning its standard output.
fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(stderr.lines().next().unwrap_or("git failed").to_string());
    }
    Ok(output.stdout)
}

fn git_line(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = git(dir, args)?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

/// Reads blobs in one `git cat-file --batch` process.
fn read_blobs(top: &Path, objects: &[String]) -> Result<Vec<Vec<u8>>, String> {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(top)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run git: {e}"))?;
    let mut input = String::new();
    for object in objects {
        input.push_str(object);
        input.push('\n');
    }
    let mut stdin = child.stdin.take().ok_or("git cat-file has no input")?;
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let mut out = Vec::new();
    child
        .stdout
        .take()
        .ok_or("git cat-file has no output")?
        .read_to_end(&mut out)
        .map_err(|e| format!("cannot read git cat-file: {e}"))?;
    let _ = writer.join();
    let _ = child.wait();
    let mut blobs = Vec::with_capacity(objects.len());
    let mut at = 0usize;
    for object in objects {
        let end = out[at..]
            .iter()
            .position(|b| *b == b'\n')
            .map(|p| at + p)
            .ok_or_else(|| format!("git cat-file ended before {object}"))?;
        let header = String::from_utf8_lossy(&out[at..end]).to_string();
        let mut parts = header.split(' ');
        let (Some(_), Some(kind), Some(size)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("git cat-file answered {header:?} for {object}"));
        };
        if kind != "blob" {
            return Err(format!("{object} is a {kind}, not a blob"));
        }
        let size: usize = size
            .parse()
            .map_err(|_| format!("git cat-file gave no size for {object}"))?;
        let start = end + 1;
        let stop = start
            .checked_add(size)
            .filter(|s| *s <= out.len())
            .ok_or_else(|| format!("git cat-file cut {object} short"))?;
        blobs.push(out[start..stop].to_vec());
        at = stop + 1;
    }
    Ok(blobs)
}

impl PinnedTree {
    /// Reads the files of `revision` below `root` (a folder of a Git checkout).
    pub fn read(root: &Path, revision: &str) -> Result<Self, ExperimentError> {
        let fail = |reason: String| git_error(revision, reason);
        let top = PathBuf::from(git_line(root, &["rev-parse", "--show-toplevel"]).map_err(fail)?);
        let prefix = git_line(root, &["rev-parse", "--show-prefix"]).map_err(fail)?;
        let commit = git_line(
            root,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{revision}^{{commit}}"),
            ],
        )
        .map_err(|_| fail("no such commit in the repository".into()))?;
        if commit.is_empty() {
            return Err(fail("no such commit in the repository".into()));
        }
        // `REV^{commit}` peels a tag object to the commit it names; a pin
        // names the commit itself, as a row's source revision must.
        let kind = git_line(root, &["cat-file", "-t", revision]).map_err(fail)?;
        if kind != "commit" {
            return Err(fail(format!(
                "it is a {kind} object, not a commit; pin the commit itself: {commit}, the commit it names (`git rev-parse {revision}^{{commit}}`)"
            )));
        }
        let mut args = vec!["ls-tree", "-r", "-z", "--full-tree", commit.as_str()];
        if !prefix.is_empty() {
            args.push("--");
            args.push(prefix.as_str());
        }
        let listing = git(&top, &args).map_err(fail)?;
        let mut listed = Vec::new();
        for record in listing.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let record = std::str::from_utf8(record)
                .map_err(|_| fail("a path at the revision is not UTF-8".into()))?;
            let (meta, path) = record
                .split_once('\t')
                .ok_or_else(|| fail(format!("git ls-tree answered {record:?}")))?;
            let mut meta = meta.split(' ');
            let (Some(mode), Some(kind), Some(object)) = (meta.next(), meta.next(), meta.next())
            else {
                return Err(fail(format!("git ls-tree answered {record:?}")));
            };
            let Some(relative) = path.strip_prefix(prefix.as_str()) else {
                continue;
            };
            if kind != "blob" {
                return Err(ExperimentError::DefinitionPath {
                    path: relative.to_string(),
                    reason: format!("a {kind} at the revision (mode {mode}) is not a file"),
                });
            }
            listed.push((
                relative.to_string(),
                Entry {
                    mode: mode.to_string(),
                    object: object.to_string(),
                },
            ));
        }
        let objects: Vec<String> = listed.iter().map(|(_, e)| e.object.clone()).collect();
        let blobs = read_blobs(&top, &objects).map_err(fail)?;
        let entries = listed
            .into_iter()
            .zip(blobs)
            .map(|((path, entry), bytes)| (path, (entry, bytes)))
            .collect();
        Ok(Self { commit, entries })
    }

    /// Hashes `paths` (root-relative, `/`-separated: files, or folders whose
    /// files are all taken) as the revision holds them.
    pub fn definition(&self, paths: &[String]) -> Result<Definition, ExperimentError> {
        let mut rows: BTreeMap<String, DefinitionRow> = BTreeMap::new();
        for path in paths {
            let folder = format!("{path}/");
            let mut found = false;
            for (name, (entry, bytes)) in &self.entries {
                if name == path || name.starts_with(&folder) {
                    found = true;
                    rows.insert(
                        name.clone(),
                        DefinitionRow {
                            path: name.clone(),
                            mode: entry.mode.clone(),
                            sha256: sha256_hex(bytes),
                        },
                    );
                }
            }
            if !found {
                return Err(ExperimentError::DefinitionPath {
                    path: path.clone(),
                    reason: format!("the revision {} holds no such file", self.commit),
                });
            }
        }
        let rows: Vec<DefinitionRow> = rows.into_values().collect();
        Ok(Definition {
            sha256: sha256_hex(rows_json(&rows).as_bytes()),
            files: rows.len(),
            rows,
        })
    }

    /// The first of `rows` (a definition's) the revision does not hold as
    /// pinned: absent, or with another mode or other bytes; `None` when it
    /// holds every one.
    pub fn first_difference(&self, rows: &[DefinitionRow]) -> Option<String> {
        rows.iter()
            .find_map(|row| match self.entries.get(&row.path) {
                None => Some(format!("holds no {}", row.path)),
                Some((entry, _)) if entry.mode != row.mode => Some(format!(
                    "holds {} with mode {}, the definition pins mode {}",
                    row.path, entry.mode, row.mode
                )),
                Some((_, bytes)) if sha256_hex(bytes) != row.sha256 => Some(format!(
                    "holds {} with SHA-256 {}, the definition pins {}",
                    row.path,
                    sha256_hex(bytes),
                    row.sha256
                )),
                Some(_) => None,
            })
    }

    /// Writes the revision's files below `dest`, with their modes and links,
    /// so the scenario and matrix loaders can read them.
    pub fn materialise(&self, dest: &Path) -> Result<(), ExperimentError> {
        let io = |path: &Path, e: std::io::Error| ExperimentError::Io {
            path: path.display().to_string(),
            reason: e.kind().to_string(),
        };
        for (name, (entry, bytes)) in &self.entries {
            let target = dest.join(name);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
            }
            if entry.mode == chio_experiment::definition::MODE_SYMLINK {
                write_link(&target, bytes).map_err(|e| io(&target, e))?;
            } else {
                std::fs::write(&target, bytes).map_err(|e| io(&target, e))?;
                set_executable(
                    &target,
                    entry.mode == chio_experiment::definition::MODE_EXECUTABLE,
                )
                .map_err(|e| io(&target, e))?;
            }
        }
        Ok(())
    }
}

#[cfg(unix)]
fn write_link(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(bytes), target)
}

#[cfg(not(unix))]
fn write_link(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(target, bytes)
}

#[cfg(unix)]
fn set_executable(path: &Path, executable: bool) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_executable(_path: &Path, _executable: bool) -> std::io::Result<()> {
    Ok(())
}

/// The commit of the working tree an attempt ran from, or why it is unknown.
pub fn source_revision(root: &Path, paths: &[PathBuf]) -> Result<String, String> {
    let head = git_line(root, &["rev-parse", "--verify", "HEAD"])
        .map_err(|e| format!("the definition root is not in a Git checkout with a commit ({e})"))?;
    let mut args: Vec<String> = [
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for path in paths {
        args.push(path.to_string_lossy().into_owned());
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let status = git(root, &refs).map_err(|e| format!("git status failed: {e}"))?;
    let changed: Vec<String> = status
        .split(|b| *b == 0)
        .filter(|r| r.len() > 3)
        .map(|r| String::from_utf8_lossy(&r[3..]).to_string())
        .collect();
    if changed.is_empty() {
        Ok(head)
    } else {
        Err(format!(
            "uncommitted changes to the task's files ({}), so no commit holds the tree that ran",
            changed.join(", ")
        ))
    }
}

/// Whether `revision` is written as a full commit id: 40 (SHA-1) or 64
/// (SHA-256) lowercase hex digits, never a name that can move.
pub fn is_full_commit_id(revision: &str) -> bool {
    matches!(revision.len(), 40 | 64)
        && revision
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Whether the repository holding `root` has the commit `revision`, written
/// as a full commit id (40 or 64 lowercase hex digits): `Ok(false)` when it
/// does not (or `revision` is not a full id), `Err` with the reason when it
/// cannot be asked (`root` is not in a Git checkout, or git cannot run).
pub fn commit_exists(root: &Path, revision: &str) -> Result<bool, String> {
    git_line(root, &["rev-parse", "--show-toplevel"])
        .map_err(|e| format!("the campaign root is not in a Git checkout ({e})"))?;
    if !is_full_commit_id(revision) {
        return Ok(false);
    }
    match git_line(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{revision}^{{commit}}"),
        ],
    ) {
        Ok(commit) => Ok(commit == revision),
        Err(_) => Ok(false),
    }
}
