//! A task of a declaration: the files it reads, its definition computed
//! from the working tree or a pinned revision, and its validation against
//! the tasks before it. The byte rules of a definition are
//! `chio_experiment::definition`'s; reading a revision is [`crate::git`]'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chio_experiment::definition::{
    definition_hash, normalise, relative_to, scenario_input_paths, sha256_hex, Definition,
};
use chio_experiment::error::ExperimentError;

use crate::git::PinnedTree;
use crate::{declaration_error, limits, Evidence, Task, TaskDecl, TaskKind, MAX_REPETITIONS};

/// What a task reads, as its loader read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFiles {
    /// The scenario (run, replay, evolution) or matrix id its results name.
    pub subject: String,
    /// The files and folders it reads, relative to the root.
    pub paths: Vec<PathBuf>,
    /// A scenario's fixture files as a run records them in its bundle
    /// (by path below the bundle's `inputs/`), each with the SHA-256 of the
    /// bytes the loader read; empty for a matrix.
    pub fixtures: BTreeMap<String, String>,
}

/// Refuses a task file that is a symbolic link or lies below one: the
/// definition would pin the link's text (or nothing, for a link out of the
/// root), not the file the task runs, so a task names the file itself.
fn refuse_linked_task_file(root: &Path, file: &str, rel: &Path) -> Result<(), ExperimentError> {
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        let linked = std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        if linked {
            let link = relative_to(root, &at).unwrap_or_else(|_| rel.to_path_buf());
            return Err(ExperimentError::DefinitionPath {
                path: file.to_string(),
                reason: format!(
                    "{} is a symbolic link; a task file is pinned by its own bytes, so name the file the link leads to, below the root",
                    link.display()
                ),
            });
        }
    }
    Ok(())
}

/// The fixture files a run of `scenario` records in its bundle, each with
/// its SHA-256 (the bundle keeps each server's folder below `inputs/`).
fn bundle_fixtures(scenario: &chio_arena::Scenario) -> BTreeMap<String, String> {
    let mut fixtures = BTreeMap::new();
    let set = scenario.fixture_set();
    for server in &scenario.file().servers {
        let folder = server
            .fixtures
            .as_deref()
            .and_then(chio_arena::fixtures::normalized_folder);
        if let (Some(folder), Some(files)) = (folder, set.servers.get(&server.id)) {
            for (path, content) in files {
                fixtures.insert(format!("{folder}/{path}"), sha256_hex(content.as_bytes()));
            }
        }
    }
    fixtures
}

/// What the task file `file` (below `root`) of `kind` reads; a task file
/// that is a symbolic link is refused.
pub fn task_files(root: &Path, kind: TaskKind, file: &str) -> Result<TaskFiles, ExperimentError> {
    let rel = PathBuf::from(normalise(Path::new(file))?);
    refuse_linked_task_file(root, file, &rel)?;
    match kind {
        TaskKind::Scenario | TaskKind::Evolve => {
            let scenario = chio_arena::load_scenario(root.join(&rel)).map_err(|source| {
                ExperimentError::TaskScenario {
                    file: file.to_string(),
                    source: Box::new(source),
                }
            })?;
            Ok(TaskFiles {
                subject: scenario.id().to_string(),
                paths: scenario_input_paths(&scenario, &rel),
                fixtures: bundle_fixtures(&scenario),
            })
        }
        TaskKind::Matrix => {
            let matrix = chio_experiment::load_matrix(&root.join(&rel))?;
            let paths = matrix
                .input_files()
                .iter()
                .map(|p| relative_to(root, p))
                .collect::<Result<_, _>>()?;
            Ok(TaskFiles {
                subject: matrix.id().to_string(),
                paths,
                fixtures: BTreeMap::new(),
            })
        }
    }
}

/// The subject id and the root-relative files a task reads.
pub fn task_inputs(
    root: &Path,
    kind: TaskKind,
    file: &str,
) -> Result<(String, Vec<PathBuf>), ExperimentError> {
    let files = task_files(root, kind, file)?;
    Ok((files.subject, files.paths))
}

/// Computes the definition of a task file from the working tree, as
/// `chio campaign hash` prints it.
pub fn task_definition(
    root: &Path,
    kind: TaskKind,
    file: &str,
) -> Result<(String, Definition), ExperimentError> {
    let (subject, paths) = task_inputs(root, kind, file)?;
    Ok((subject, definition_hash(root, &paths)?))
}

/// Computes the definition of a task file from a pinned revision: the
/// revision's files are parsed from a private copy to learn what the task
/// reads, and hashed from the repository's objects.
pub fn pinned_task_definition(
    tree: &PinnedTree,
    copy: &Path,
    kind: TaskKind,
    file: &str,
) -> Result<(TaskFiles, Definition), ExperimentError> {
    let files = task_files(copy, kind, file)?;
    let names = files
        .paths
        .iter()
        .map(|p| normalise(p))
        .collect::<Result<Vec<_>, _>>()?;
    let definition = tree.definition(&names)?;
    Ok((files, definition))
}

/// The pinned definition hash of a task file at `revision`, as
/// `chio campaign hash --revision` prints it.
pub fn task_definition_at(
    root: &Path,
    revision: &str,
    kind: TaskKind,
    file: &str,
) -> Result<(String, Definition), ExperimentError> {
    let tree = PinnedTree::read(root, revision)?;
    let copy = private_copy(&tree)?;
    let (files, definition) = pinned_task_definition(&tree, copy.path(), kind, file)?;
    Ok((files.subject, definition))
}

pub(crate) fn private_copy(tree: &PinnedTree) -> Result<tempfile::TempDir, ExperimentError> {
    let copy = tempfile::Builder::new()
        .prefix("chio-pinned-")
        .tempdir()
        .map_err(|e| ExperimentError::Io {
            path: std::env::temp_dir().display().to_string(),
            reason: e.kind().to_string(),
        })?;
    tree.materialise(copy.path())?;
    Ok(copy)
}

/// Validates task `i` against the tasks before it and computes its
/// definition (from the pinned tree when there is one), refusing drift.
pub(crate) fn declared_task(
    i: usize,
    decl: &TaskDecl,
    tasks: &[Task],
    root: &Path,
    pinned: Option<&(PinnedTree, tempfile::TempDir)>,
) -> Result<Task, ExperimentError> {
    let at = |key: &str| format!("tasks[{i}].{key}");
    if !chio_arena::scenario::is_valid_id(&decl.id) {
        return Err(declaration_error(at("id"), "use only [A-Za-z0-9_.-]"));
    }
    if tasks.iter().any(|t| t.id == decl.id) {
        return Err(declaration_error(
            at("id"),
            format!("task {:?} is declared twice", decl.id),
        ));
    }
    let (kind, evidence) = task_kind(decl, &at)?;
    if decl.repetitions == 0 || decl.repetitions > MAX_REPETITIONS {
        return Err(declaration_error(
            at("repetitions"),
            format!("must be between 1 and {MAX_REPETITIONS}"),
        ));
    }
    let limits = limits(decl.limits.as_ref(), &at("limits"))?;
    let (files, definition) = match pinned {
        Some((tree, copy)) => pinned_task_definition(tree, copy.path(), kind, &decl.file)?,
        None => {
            let files = task_files(root, kind, &decl.file)?;
            let definition = definition_hash(root, &files.paths)?;
            (files, definition)
        }
    };
    if definition.sha256 != decl.definition.sha256 || definition.files != decl.definition.files {
        return Err(ExperimentError::DefinitionDrift {
            task: decl.id.clone(),
            declared: format!(
                "{} ({} files)",
                decl.definition.sha256, decl.definition.files
            ),
            actual: format!("{} ({} files)", definition.sha256, definition.files),
        });
    }
    Ok(Task {
        id: decl.id.clone(),
        kind,
        evidence,
        file: decl.file.clone(),
        subject: files.subject,
        repetitions: decl.repetitions,
        limits,
        definition,
        inputs: files.paths,
        fixtures: files.fixtures,
    })
}

/// A task's kind and its evidence; only scenario tasks replay fixtures.
fn task_kind(
    decl: &TaskDecl,
    at: &dyn Fn(&str) -> String,
) -> Result<(TaskKind, Evidence), ExperimentError> {
    let kind = match decl.kind.as_str() {
        "scenario" => TaskKind::Scenario,
        "matrix" => TaskKind::Matrix,
        "evolve" => TaskKind::Evolve,
        other => {
            return Err(declaration_error(
                at("kind"),
                format!("{other:?} is not scenario, evolve or matrix"),
            ))
        }
    };
    let evidence = match decl.evidence.as_deref() {
        None | Some("live") => Evidence::Live,
        Some("fixture") if kind == TaskKind::Scenario => Evidence::Fixture,
        Some("fixture") => {
            return Err(declaration_error(
                at("evidence"),
                "only scenario tasks replay recorded bundles",
            ))
        }
        Some(other) => {
            return Err(declaration_error(
                at("evidence"),
                format!("{other:?} is not live or fixture"),
            ))
        }
    };
    Ok((kind, evidence))
}
