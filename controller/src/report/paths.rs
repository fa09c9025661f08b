//! Where a report may go: never over what its command reads or writes.
//!
//! A report file (`--junit`, `--html`, `--sarif`, `chio report --out`,
//! `chio eval --write-envelope`) is renamed over whatever its path names.
//! Before anything runs, [`check_reports`] refuses (`CHIO-REPORT-PATH`,
//! exit 2, naming the flag and the fix) a report path that is, or lies
//! inside, a path the command guards ([`Guard`]): the scenario file and every
//! file or folder it reads (prompts, fixture folders, sealed files), the
//! other inputs (a matrix, a recording, a topology file, a bundle a result
//! is read from), and the folder the command writes (`--out`), whose
//! evidence a report would overwrite; and two reports of one command given
//! the same path, where the second would replace the first.
//!
//! Paths are compared resolved ([`resolve`]): made absolute, each existing
//! part read through its links (so a link to a guarded file is that file),
//! and `.` and `..` applied to what they name; a part that does not exist
//! yet (a report's new folder, an `--out` a run creates) is taken as
//! written.

use std::path::{Component, Path, PathBuf};

use crate::error::{codes, CliError};
use crate::term::printable;

/// Whether the command reads a guarded path or writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// An input: a report there would replace it.
    Reads,
    /// The command's output folder: a report there would overwrite or mix
    /// into what the command writes.
    Writes,
}

/// A path no report may be written to or inside.
#[derive(Debug, Clone)]
pub struct Guard {
    /// The path as given.
    path: PathBuf,
    /// What it is, for the message (`the scenario file`).
    what: String,
    /// Whether the command reads or writes it.
    used: Use,
}

impl Guard {
    /// A file or folder the command reads.
    pub fn reads(path: impl Into<PathBuf>, what: impl Into<String>) -> Guard {
        Guard {
            path: path.into(),
            what: what.into(),
            used: Use::Reads,
        }
    }

    /// The folder the command writes.
    pub fn writes(path: impl Into<PathBuf>, what: impl Into<String>) -> Guard {
        Guard {
            path: path.into(),
            what: what.into(),
            used: Use::Writes,
        }
    }
}

/// One report a command was asked to write.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    /// The flag that names it (`--junit`).
    pub flag: &'static str,
    /// Its path, when the flag was given.
    pub path: Option<&'a Path>,
    /// A path to suggest instead (`target/reports/run.xml`).
    pub example: &'static str,
}

/// `path` made absolute and resolved as the filesystem will resolve it
/// when the report is written (see the module documentation).
pub fn resolve(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                // An existing part is read through its links.
                if let Ok(real) = std::fs::canonicalize(&out) {
                    out = real;
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A path as messages print it.
fn shown(path: &Path) -> String {
    printable(&path.display().to_string()).into_owned()
}

/// Refuses, before any work, a report of `reports` whose path holds
/// something other than a regular file (a symbolic link, a folder, a
/// device): [`crate::report::write_report`] would refuse it only after the
/// run, with the run's outputs already written (`CHIO-REPORT-WRITE`).
pub fn check_report_destinations(
    command: &'static str,
    reports: &[Report<'_>],
) -> Result<(), CliError> {
    for report in reports {
        let Some(path) = report.path else { continue };
        if let Err(e) = chio_arena::output::check_destination(path) {
            return Err(CliError::new(
                codes::REPORT_WRITE,
                command,
                format!(
                    "refused to write the {} report to {}: {}; checked before the run, so nothing was run or written",
                    report.flag,
                    shown(path),
                    e.describe()
                ),
                format!(
                    "pass a path that is new or a regular file, such as {} {}",
                    report.flag, report.example
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses, before any work, an output file `paths` names that holds
/// something other than a regular file, as the arena's output error
/// (`CHIO-ARENA-OUTPUT`), so a refused one leaves none of the others
/// written.
pub fn check_output_files(command: &'static str, paths: &[PathBuf]) -> Result<(), CliError> {
    for path in paths {
        chio_arena::output::check_destination(path)
            .map_err(|e| CliError::from_arena(command, &e.output_error(path)))?;
    }
    Ok(())
}

/// Refuses, before anything is written, a report whose path is or lies
/// inside one of `guards`, or is the path of another report of `reports`.
pub fn check_reports(
    command: &'static str,
    reports: &[Report<'_>],
    guards: &[Guard],
) -> Result<(), CliError> {
    let given: Vec<(&Report<'_>, &Path, PathBuf)> = reports
        .iter()
        .filter_map(|r| r.path.map(|p| (r, p, resolve(p))))
        .collect();
    for (i, (report, path, resolved)) in given.iter().enumerate() {
        if let Some((other, other_path, _)) = given[..i].iter().find(|(_, _, r)| r == resolved) {
            return Err(CliError::new(
                codes::REPORT_PATH,
                command,
                format!(
                    "{} {} and {} {} name the same file: the second report would replace the first",
                    other.flag,
                    shown(other_path),
                    report.flag,
                    shown(path)
                ),
                format!(
                    "give each report its own path, such as {} {} {} {}",
                    other.flag, other.example, report.flag, report.example
                ),
            ));
        }
        for guard in guards {
            let guarded = resolve(&guard.path);
            if !resolved.starts_with(&guarded) {
                continue;
            }
            let relation = if *resolved == guarded {
                "is"
            } else {
                "lies inside"
            };
            let (verb, loss) = match guard.used {
                Use::Reads => ("reads", "the report would replace what it holds"),
                Use::Writes => (
                    "writes",
                    "the report would overwrite or mix into what the command writes there",
                ),
            };
            return Err(CliError::new(
                codes::REPORT_PATH,
                command,
                format!(
                    "{} {} {relation} {} {}, which {command} {verb}: {loss}",
                    report.flag,
                    shown(path),
                    guard.what,
                    shown(&guard.path)
                ),
                format!(
                    "pass {} a path outside what {command} reads and writes, such as {}",
                    report.flag, report.example
                ),
            ));
        }
    }
    Ok(())
}

/// The guards of a scenario: the file itself and every file and folder a
/// run of it reads (its fixture folders, its agents' prompts and
/// adversaries' seeds, `chio_experiment::definition::scenario_input_paths`, and its
/// sealed files).
pub fn scenario_guards(file: &Path, scenario: &chio_arena::Scenario) -> Vec<Guard> {
    let mut guards = vec![Guard::reads(file, "the scenario file")];
    for path in chio_experiment::definition::scenario_input_paths(scenario, file)
        .into_iter()
        .skip(1)
    {
        guards.push(Guard::reads(path, "a file or folder the scenario reads"));
    }
    for sealed in scenario.sealed().keys() {
        guards.push(Guard::reads(
            scenario.base_dir().join(sealed),
            "a sealed file the scenario reads",
        ));
    }
    guards
}

/// The guard of a `--topology FILE`, when one is given.
pub fn topology_guard(topology: Option<&crate::cli::RunTopology>) -> Option<Guard> {
    match topology {
        Some(crate::cli::RunTopology::File(path)) => Some(Guard::reads(path, "the topology file")),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
