//! Report files (JUnit XML, SARIF, HTML pages): writing them whole or
//! not at all, and the typed error a failed write becomes.
//!
//! A report is rendered in memory first, then written by
//! [`chio_arena::output::write_whole`]: to a new temporary file of its own
//! beside its destination (`.chio-report-*.partial`, created exclusively,
//! so no file or link already there is written through), flushed to disk
//! and renamed over the destination, so a CI system that picks the file up
//! never reads half a report and an old report is replaced only by a whole
//! new one; a failed write leaves no temporary file. Only a regular file is
//! ever replaced: a symbolic link, a device, a named pipe, a socket or a
//! folder at the destination is refused before anything is written. The destination's folder is created when missing. Where
//! a report may go at all is [`paths`]: never over what its command reads
//! or writes. A failure is a
//! [`ReportError`], which the CLI reports as `CHIO-REPORT-WRITE` with exit 3
//! (infrastructure): the run itself was judged, only its report was lost.

use std::path::Path;

use chio_arena::output::WriteRefusal;

use crate::error::{codes, CliError};

pub mod paths;

/// The CLI code of a report that could not be written.
pub const REPORT_WRITE_CODE: &str = codes::REPORT_WRITE.code;

/// Which report format a file holds, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportKind {
    /// JUnit XML (`--junit`).
    Junit,
    /// SARIF 2.1.0 (`--sarif`).
    Sarif,
    /// A self-contained HTML page (`chio report`, `--html`).
    Html,
    /// A portable-evaluation envelope (`chio eval --write-envelope`).
    Envelope,
}

impl ReportKind {
    /// The format's name as messages print it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportKind::Junit => "JUnit",
            ReportKind::Sarif => "SARIF",
            ReportKind::Html => "HTML",
            ReportKind::Envelope => "envelope",
        }
    }
}

impl std::fmt::Display for ReportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A report file that could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    /// The destination's folder could not be created.
    #[error("cannot create the folder {path} for the {kind} report: {cause}; check the path and its permissions, or pass another path")]
    CreateFolder {
        /// The report's format.
        kind: ReportKind,
        /// The folder that could not be created.
        path: String,
        /// The operating system's reason, without the path.
        cause: String,
    },
    /// The temporary file could not be written or flushed.
    #[error("cannot write the {kind} report {path}: {cause}; check that the folder is writable and has free space, or pass another path")]
    Write {
        /// The report's format.
        kind: ReportKind,
        /// The file that could not be written.
        path: String,
        /// The operating system's reason, without the path.
        cause: String,
    },
    /// Something other than a regular file is at the destination: it is
    /// never replaced.
    #[error("refused to write the {kind} report to {path}: it is {what}, not a regular file, and is never replaced; pass a path that is new or a regular file")]
    NotRegular {
        /// The report's format.
        kind: ReportKind,
        /// The destination.
        path: String,
        /// What is there (`a device`, `a symbolic link`, ...).
        what: &'static str,
    },
    /// The report could not be rendered to bytes.
    #[error("cannot render the {kind} report: {cause}; this is a defect, report it with the command that ran")]
    Render {
        /// The report's format.
        kind: ReportKind,
        /// What the writer refused.
        cause: String,
    },
    /// The finished file could not replace the destination.
    #[error("cannot move the finished {kind} report into place at {path}: {cause}; check that the path is not a folder and is writable")]
    Replace {
        /// The report's format.
        kind: ReportKind,
        /// The destination.
        path: String,
        /// The operating system's reason, without the path.
        cause: String,
    },
}

impl ReportError {
    /// The error as the CLI prints it: `CHIO-REPORT-WRITE`, exit 3.
    pub fn into_cli(self, command: &'static str) -> CliError {
        let text = self.to_string();
        let (message, help) = match text.split_once("; ") {
            Some((message, help)) => (message.to_string(), help.to_string()),
            None => (text, String::new()),
        };
        CliError::new(codes::REPORT_WRITE, command, message, help)
    }
}

/// Writes `bytes` to `path` whole or not at all (see the module doc).
pub fn write_report(kind: ReportKind, path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let shown = || path.display().to_string();
    // The destination is checked before its folder is made: a refusal
    // leaves nothing behind.
    chio_arena::output::check_destination(path).map_err(|e| refusal(kind, path, e))?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| ReportError::CreateFolder {
            kind,
            path: parent.display().to_string(),
            cause: e.kind().to_string(),
        })?;
    }
    chio_arena::output::write_whole(path, bytes, ".chio-report-").map_err(|e| match e {
        WriteRefusal::Replace(e) => ReportError::Replace {
            kind,
            path: shown(),
            cause: e.kind().to_string(),
        },
        other => refusal(kind, path, other),
    })
}

/// A refused or failed write as its typed error.
fn refusal(kind: ReportKind, path: &Path, refusal: WriteRefusal) -> ReportError {
    let path = path.display().to_string();
    match refusal {
        WriteRefusal::NotRegular(what) => ReportError::NotRegular { kind, path, what },
        WriteRefusal::Write(e) => ReportError::Write {
            kind,
            path,
            cause: e.kind().to_string(),
        },
        WriteRefusal::Replace(e) => ReportError::Replace {
            kind,
            path,
            cause: e.kind().to_string(),
        },
        other @ WriteRefusal::NotFolder { .. } => ReportError::Write {
            kind,
            path,
            cause: other.describe(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Exit;

    // A report lands whole, creating its folder, and leaves no temporary file behind.
    #[test]
    fn writes_whole_files_and_creates_the_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("reports/run.xml");
        write_report(ReportKind::Junit, &path, b"<testsuites/>\n").unwrap();
        write_report(ReportKind::Junit, &path, b"<testsuites></testsuites>\n").unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"<testsuites></testsuites>\n"
        );
        let names: Vec<_> = std::fs::read_dir(tmp.path().join("reports"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("run.xml")]);
    }

    // A destination that is a folder is refused with a typed error that the CLI maps to exit 3.
    #[test]
    fn a_folder_as_destination_is_an_infrastructure_failure() {
        let tmp = tempfile::tempdir().unwrap();
        let err = write_report(ReportKind::Sarif, tmp.path(), b"{}").unwrap_err();
        assert!(matches!(err, ReportError::NotRegular { .. }), "{err:?}");
        let cli = err.into_cli("arena evolve");
        assert_eq!(cli.code, REPORT_WRITE_CODE);
        assert_eq!(cli.exit, Exit::Infrastructure);
        assert!(cli
            .message
            .starts_with("refused to write the SARIF report to"));
        assert!(cli.message.contains("it is a folder"));
        assert!(cli
            .help
            .starts_with("pass a path that is new or a regular file"));
    }

    // A link at the destination is refused as the report's own error, naming the path, and left as it was (every other kind is the shared writer's test, `chio_arena::output`).
    #[test]
    fn a_link_is_never_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target.html");
        std::fs::write(&target, b"kept").unwrap();
        let link = tmp.path().join("link.html");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = write_report(ReportKind::Envelope, &link, b"{}").unwrap_err();
        assert!(
            matches!(&err, ReportError::NotRegular { what, .. } if *what == "a symbolic link"),
            "{err:?}"
        );
        assert!(err.to_string().contains(&link.display().to_string()));
        assert_eq!(std::fs::read(&target).unwrap(), b"kept");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }
}
