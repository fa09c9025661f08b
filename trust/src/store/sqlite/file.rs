//! The database file trust-control keeps its state in, claimed before
//! SQLite opens it: a file another user owns, or that others may write,
//! lets that user rewrite revocations, seen request ids and budgets while
//! the service runs (the checks before each commit see the same file), so
//! it is refused. A new database is created readable and writable by its
//! owner alone, and SQLite gives its `-wal` and `-shm` files the same mode.

use std::path::{Path, PathBuf};

use crate::TrustError;

/// The fix every refusal names.
const FIX: &str = "keep the database in a folder only the service's user may write, owned by that user with mode 0600 (chown, chmod 600), or pass a new --db path";

/// Creates the database file at `path` with mode 0600 when it does not
/// exist, then checks it and its `-wal` and `-shm` companions.
pub(super) fn claim(path: &Path) -> Result<(), TrustError> {
    create_private(path)?;
    check(path)?;
    for suffix in ["-wal", "-shm"] {
        let mut companion = path.as_os_str().to_owned();
        companion.push(suffix);
        let companion = PathBuf::from(companion);
        if std::fs::symlink_metadata(&companion).is_ok() {
            check(&companion)?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn create_private(path: &Path) -> Result<(), TrustError> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(TrustError::Io {
            action: format!("create database {}", path.display()),
            detail: e.kind().to_string(),
            fix: "pass a --db path in an existing, writable directory",
        }),
    }
}

#[cfg(not(unix))]
fn create_private(_: &Path) -> Result<(), TrustError> {
    Ok(())
}

#[cfg(unix)]
fn check(path: &Path) -> Result<(), TrustError> {
    use std::os::unix::fs::MetadataExt;
    let refuse = |detail: String| TrustError::UnusableFile {
        what: format!("database file {}", path.display()),
        detail,
        fix: FIX,
    };
    let meta = std::fs::symlink_metadata(path).map_err(|e| refuse(e.kind().to_string()))?;
    if !meta.file_type().is_file() {
        return Err(refuse("it is not a regular file".to_owned()));
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(refuse(format!(
            "it is owned by user {}, not by this service's user {me}",
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(refuse(format!(
            "other users may write it (mode {:o})",
            meta.mode() & 0o777
        )));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check(_: &Path) -> Result<(), TrustError> {
    Ok(())
}
