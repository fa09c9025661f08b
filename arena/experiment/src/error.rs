//! The error type of the experiment layer: campaign declarations, attempt
//! ledgers and policy matrices.
//!
//! Scenario refusals stay [`chio_arena::ArenaError`]; everything a campaign or a
//! matrix can refuse is one [`ExperimentError`] variant with a stable code
//! (`CHIO-CAMPAIGN-...`, `CHIO-MATRIX-...`, `CHIO-EXPERIMENT-...`), a summary
//! naming what went wrong and a help text saying how to fix it. The CLI
//! renders those parts as its `error[CODE]` block. Experiments keep their
//! own enum because their refusals concern files the scenario loader never
//! reads (declarations, ledgers, run records), and a reader of
//! `docs/errors.md` finds them under their own domains. The table lives
//! here, below the campaigns (`chio-campaign`), which share it.

use std::path::Path;

use serde::Serialize;

use chio_arena::diagnostic::error_table;
use chio_arena::ArenaError;

error_table! {
    /// Everything a campaign or a matrix can refuse or fail on.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum ExperimentError;
    /// Every code an [`ExperimentError`] can carry, so `docs/errors.md` can be
    /// checked for completeness.
    codes EXPERIMENT_ERROR_CODES;
    /// Every code with its class, so the exit code `docs/errors.md` gives
    /// each can be checked.
    classes EXPERIMENT_ERROR_CLASSES;

    /// A declaration, ledger, result or matrix file could not be read.
    Unreadable {
        /// The path as the user gave it.
        path: String,
        /// Why: the operating system's reason, no regular file, or over
        /// the bound.
        reason: String,
    } => "CHIO-EXPERIMENT-UNREADABLE", Input, at: None,
        summary: format!("cannot read {path:?}: {reason}"),
        help: "pass the path of a readable regular file of at most 1 GiB (a link to one is followed; a named pipe or a device is refused)";
    /// A file is not the TOML or JSON its schema requires, or breaks its shape.
    Syntax {
        /// The path as the user gave it.
        path: String,
        /// The parser's reason, naming the key.
        reason: String,
    } => "CHIO-EXPERIMENT-SYNTAX", Input, at: None,
        summary: format!("{path:?} is malformed: {reason}"),
        help: "fix the file; docs/campaigns.md and docs/matrices.md describe every key";
    /// Writing an output file failed.
    Io {
        /// The file or folder.
        path: String,
        /// The operating system's reason.
        reason: String,
    } => "CHIO-EXPERIMENT-IO", Infrastructure, at: None,
        summary: format!("cannot write {path:?}: {reason}"),
        help: "check that the folder exists and is writable";
    /// A value could not be printed as canonical JSON.
    Canonical {
        /// The serialiser's reason.
        reason: String,
    } => "CHIO-EXPERIMENT-CANONICAL-JSON", Infrastructure, at: None,
        summary: format!("cannot print canonical JSON: {reason}"),
        help: "report this: experiment documents hold only integers within 2^53 and finite numbers";
    /// A campaign declaration breaks a rule of its schema.
    Declaration {
        /// The key concerned.
        field: String,
        /// What is wrong with it.
        reason: String,
    } => "CHIO-CAMPAIGN-DECLARATION", Input, at: Some(field),
        summary: format!("campaign declaration refused at {field}: {reason}"),
        help: "fix the key; docs/campaigns.md describes the declaration";
    /// A file a task reads cannot be hashed (missing, outside the root, not UTF-8 named).
    DefinitionPath {
        /// The path concerned, relative to the definition root.
        path: String,
        /// What is wrong with it.
        reason: String,
    } => "CHIO-CAMPAIGN-DEFINITION-PATH", Input, at: None,
        summary: format!("cannot hash task file {path:?}: {reason}"),
        help: "keep every file a task reads under the declaration's root, with UTF-8 names";
    /// A task's files no longer hash to its declared definition hash.
    DefinitionDrift {
        /// The task id.
        task: String,
        /// The hash the declaration records.
        declared: String,
        /// The hash of the files now.
        actual: String,
    } => "CHIO-CAMPAIGN-DEFINITION-DRIFT", Input, at: None,
        summary: format!(
            "task {task:?}: its files hash to {actual}, not the declared definition {declared}"
        ),
        help: "restore the task's files, or declare a new campaign with the new definition hash (chio campaign hash prints it)";
    /// The ledger names another campaign.
    OtherDeclaration {
        /// The campaign id the ledger names.
        ledger: String,
        /// The campaign id of the declaration given.
        declared: String,
    } => "CHIO-CAMPAIGN-OTHER-DECLARATION", Input, at: None,
        summary: format!(
            "the ledger belongs to campaign {ledger:?}, not to the declaration given ({declared:?})"
        ),
        help: "pass the declaration this ledger was made from";
    /// The declaration's bytes changed after the ledger was admitted.
    DeclarationChanged {
        /// The SHA-256 the ledger records.
        recorded: String,
        /// The SHA-256 of the declaration now.
        actual: String,
    } => "CHIO-CAMPAIGN-DECLARATION-CHANGED", Input, at: None,
        summary: format!(
            "the declaration's bytes changed after admission: the ledger records sha256 {recorded}, the file is {actual}"
        ),
        help: "restore the declaration's admitted bytes; a changed protocol needs a new campaign and a new ledger";
    /// A scheduled attempt has no ledger row.
    MissingAttempt {
        /// The schedule id.
        schedule_id: String,
    } => "CHIO-CAMPAIGN-MISSING-ATTEMPT", Input, at: None,
        summary: format!("scheduled attempt {schedule_id:?} has no ledger row"),
        help: "restore the row; every scheduled attempt stays in the ledger, DEFERRED if it never ran";
    /// A scheduled attempt has two ledger rows.
    DuplicateAttempt {
        /// The schedule id.
        schedule_id: String,
    } => "CHIO-CAMPAIGN-DUPLICATE-ATTEMPT", Input, at: None,
        summary: format!("scheduled attempt {schedule_id:?} appears twice in the ledger"),
        help: "keep one row per schedule id; a retry needs a new declared schedule";
    /// A ledger row names an attempt the declaration does not schedule.
    UnscheduledAttempt {
        /// The schedule id.
        schedule_id: String,
    } => "CHIO-CAMPAIGN-UNSCHEDULED-ATTEMPT", Input, at: None,
        summary: format!("ledger row {schedule_id:?} is not a scheduled attempt"),
        help: "remove the row, or declare the attempt in a new campaign";
    /// A row disagrees with its schedule entry (task, repetition or kind).
    RowMismatch {
        /// The schedule id.
        schedule_id: String,
        /// The row field that disagrees.
        field: String,
    } => "CHIO-CAMPAIGN-ROW-MISMATCH", Input, at: None,
        summary: format!(
            "ledger row {schedule_id:?}: {field} disagrees with the declared schedule"
        ),
        help: "restore the row's task, repetition and evidence from chio campaign template";
    /// A fixture replay of a recorded bundle is labelled as a live attempt, or the reverse.
    RelabelledEvidence {
        /// The schedule id.
        schedule_id: String,
        /// What the schedule declares (`live` or `fixture`).
        declared: String,
        /// What the row or result claims.
        claimed: String,
    } => "CHIO-CAMPAIGN-RELABELLED-EVIDENCE", Input, at: None,
        summary: format!(
            "ledger row {schedule_id:?} is scheduled as {declared} evidence but carries {claimed} evidence"
        ),
        help: "fill a fixture row only from chio arena replay results and a live row only from chio arena run, evolve or matrix results";
    /// A native outcome the task's kind never produces.
    UnknownOutcome {
        /// The schedule id.
        schedule_id: String,
        /// The outcome found.
        outcome: String,
        /// The outcomes this task's kind produces.
        allowed: String,
    } => "CHIO-CAMPAIGN-UNKNOWN-OUTCOME", Input, at: None,
        summary: format!(
            "ledger row {schedule_id:?}: native outcome {outcome:?} is not one its task produces"
        ),
        help: format!("record the native outcome as the tool wrote it: one of {allowed}");
    /// A pass whose own evidence says otherwise.
    ContradictedPass {
        /// The schedule id.
        schedule_id: String,
        /// The evidence that contradicts it.
        evidence: String,
    } => "CHIO-CAMPAIGN-CONTRADICTED-PASS", Input, at: None,
        summary: format!("ledger row {schedule_id:?} passes but its own evidence says {evidence}"),
        help: "import the record as written; a native outcome is copied, never rescored";
    /// A row that did not pass gives no reason.
    MissingReason {
        /// The schedule id.
        schedule_id: String,
    } => "CHIO-CAMPAIGN-MISSING-REASON", Input, at: None,
        summary: format!("ledger row {schedule_id:?} did not pass and gives no reason"),
        help: "give the row a reason naming why it did not pass";
    /// A deferred (not attempted) row carries results.
    DeferredWithResults {
        /// The schedule id.
        schedule_id: String,
        /// `DEFERRED` or `SKIPPED`.
        outcome: String,
        /// The result field that is set.
        field: String,
    } => "CHIO-CAMPAIGN-DEFERRED-WITH-RESULTS", Input, at: None,
        summary: format!(
            "ledger row {schedule_id:?} is {outcome} (not attempted) but carries {field}"
        ),
        help: "an attempt that ran keeps its native outcome; set it, or clear the results (an intervention needs an attempt, or a SKIPPED row)";
    /// An import targets a row that already holds an attempt.
    AlreadyAttempted {
        /// The schedule id.
        schedule_id: String,
    } => "CHIO-CAMPAIGN-ALREADY-ATTEMPTED", Input, at: None,
        summary: format!("ledger row {schedule_id:?} already holds an attempt"),
        help: "a retry needs a new declared schedule; the original row stays";
    /// An import names a schedule id twice, or one record for two rows.
    ImportTwice {
        /// What the import repeats, as a clause: `names schedule id "x"
        /// twice`, or the two rows given one record.
        what: String,
    } => "CHIO-CAMPAIGN-IMPORT-TWICE", Input, at: None,
        summary: format!("the import {what}"),
        help: "name each schedule id and each record once";
    /// A result record belongs to another task or kind than its row.
    WrongTask {
        /// The schedule id.
        schedule_id: String,
        /// Why the record does not fit.
        reason: String,
    } => "CHIO-CAMPAIGN-WRONG-TASK", Input, at: None,
        summary: format!("the record for {schedule_id:?} does not belong to its task: {reason}"),
        help: "import the record under the schedule id of the task that produced it";
    /// A pinned revision cannot be read from the repository.
    Revision {
        /// The revision as declared.
        revision: String,
        /// What went wrong.
        reason: String,
    } => "CHIO-CAMPAIGN-REVISION", Input, at: None,
        summary: format!("cannot read the pinned revision {revision:?}: {reason}"),
        help: "declare a commit the repository holds (git log shows them), or drop revision to hash the working tree";
    /// A row spent more than a declared limit and does not say so.
    OverLimit {
        /// The schedule id.
        schedule_id: String,
        /// The limit, such as `wall_seconds`.
        limit: String,
        /// What the row spent.
        spent: String,
        /// What the task allows.
        declared: String,
    } => "CHIO-CAMPAIGN-OVER-LIMIT", Input, at: None,
        summary: format!(
            "ledger row {schedule_id:?} spent {spent} against a {limit} limit of {declared} and its reason does not name the overrun"
        ),
        help: format!("keep the row as it happened and give it a reason naming the {limit} overrun (chio campaign import writes one); an over-limit attempt blocks comparison either way");
    /// A row holds a negative or non-finite number.
    BadNumber {
        /// The schedule id.
        schedule_id: String,
        /// The field.
        field: String,
    } => "CHIO-CAMPAIGN-BAD-NUMBER", Input, at: None,
        summary: format!(
            "ledger row {schedule_id:?}: {field} is negative or not finite"
        ),
        help: "write a finite number of zero or more, or null when it is unknown";
    /// A matrix file breaks a rule of its schema.
    Matrix {
        /// The key concerned.
        field: String,
        /// What is wrong with it.
        reason: String,
    } => "CHIO-MATRIX-INVALID", Input, at: Some(field),
        summary: format!("matrix refused at {field}: {reason}"),
        help: "fix the key; docs/matrices.md describes the matrix file";
    /// The first value of an axis declares a delta.
    BaselineDelta {
        /// The axis.
        axis: String,
        /// Its first value.
        value: String,
    } => "CHIO-MATRIX-BASELINE-DELTA", Input, at: None,
        summary: format!(
            "axis {axis:?}: value {value:?} is the baseline (the first value) and declares a delta"
        ),
        help: "move the delta to another value, or put the baseline first";
    /// A non-baseline value of an axis declares no delta.
    MissingDelta {
        /// The axis.
        axis: String,
        /// The value without a delta.
        value: String,
        /// The axis's baseline value.
        baseline: String,
        /// The values that do declare a delta.
        declared: String,
    } => "CHIO-MATRIX-MISSING-DELTA", Input, at: None,
        summary: format!(
            "axis {axis:?}: value {value:?} declares no delta; only the first value ({baseline:?}) is the baseline; deltas declared for this axis: [{declared}]"
        ),
        help: "declare a [values.<axis>.<value>] delta, or correct the value's spelling";
    /// Two axes' deltas set the same key, so a cell combining them would
    /// measure only the later axis's setting under both names.
    OverlappingDeltas {
        /// The axis declared first.
        first: String,
        /// The later axis.
        second: String,
        /// The key both set (`guards.<kernel>`, `grants.<grant>.<key>`,
        /// `adversaries.<population>` or `topology`).
        key: String,
    } => "CHIO-MATRIX-OVERLAPPING-DELTAS", Input, at: None,
        summary: format!(
            "axes {first:?} and {second:?} both set {key} in their deltas, so a cell combining them would not be what its name says"
        ),
        help: "let one axis own each key (merge the two axes into one, or move the setting into [variants])";
    /// A `[values]` table names an axis or value that is not declared.
    StrayDelta {
        /// The `values.<axis>.<value>` path.
        field: String,
    } => "CHIO-MATRIX-STRAY-DELTA", Input, at: Some(field),
        summary: format!("{field} is a delta for an axis value that is not declared"),
        help: "name a declared non-baseline value of a declared axis, or remove the delta";
    /// Two cells share a name.
    DuplicateCell {
        /// The cell name.
        cell: String,
    } => "CHIO-MATRIX-DUPLICATE-CELL", Input, at: None,
        summary: format!("cell {cell:?} is declared twice"),
        help: "give each cell a unique name";
    /// The verdict's reference names no cell.
    UnknownReference {
        /// The reference as written.
        reference: String,
        /// The declared cells.
        cells: String,
    } => "CHIO-MATRIX-UNKNOWN-REFERENCE", Input, at: None,
        summary: format!(
            "verdict.reference {reference} is not a cell; the cells are [{cells}]"
        ),
        help: "name one of the declared cells";
    /// A grid reference leaves axes out.
    PartialReference {
        /// The axes the reference does not name.
        missing: String,
    } => "CHIO-MATRIX-PARTIAL-REFERENCE", Input, at: None,
        summary: format!("verdict.reference is a partial grid reference: it does not name axes [{missing}]"),
        help: "name a value for every axis";
    /// The criterion names no metric a run provides.
    UnknownCriterion {
        /// The criterion as written.
        criterion: String,
        /// The metrics a criterion may name.
        metrics: String,
    } => "CHIO-MATRIX-UNKNOWN-CRITERION", Input, at: None,
        summary: format!(
            "verdict.criterion {criterion:?} is not a metric a run provides; criterion metrics: [{metrics}]"
        ),
        help: "name one of the criterion metrics docs/matrices.md lists";
    /// A validity metric does not exist.
    UnknownValidity {
        /// The metric as written.
        metric: String,
        /// The metrics validity may name.
        metrics: String,
    } => "CHIO-MATRIX-UNKNOWN-VALIDITY", Input, at: None,
        summary: format!(
            "verdict.validity names {metric:?}, which is not a validity metric; validity metrics: [{metrics}]"
        ),
        help: "name one of the validity metrics docs/matrices.md lists, or remove it";
    /// A `[[validation]]` block names no validator metric.
    UnknownValidator {
        /// The metric as written.
        metric: String,
        /// The metrics a validator may judge.
        metrics: String,
    } => "CHIO-MATRIX-UNKNOWN-VALIDATOR", Input, at: None,
        summary: format!(
            "a [[validation]] block names {metric:?}, which is not a validator metric; validator metrics: [{metrics}]"
        ),
        help: "name one of the validator metrics docs/matrices.md lists";
    /// Two `[[validation]]` blocks declare one metric.
    DuplicateValidator {
        /// The metric declared twice.
        metric: String,
    } => "CHIO-MATRIX-DUPLICATE-VALIDATOR", Input, at: None,
        summary: format!(
            "two [[validation]] blocks declare the metric {metric:?}"
        ),
        help: "keep one block per metric, with both min and max in it if both apply";
    /// A load setting is given twice with different values.
    AmbiguousLoad {
        /// The setting, such as `concurrency`.
        setting: String,
        /// What the matrix file declares.
        declared: String,
        /// What the command line says.
        given: String,
    } => "CHIO-MATRIX-AMBIGUOUS-LOAD", Input, at: None,
        summary: format!(
            "{setting} is given twice: the matrix declares {declared} and the command line says {given}"
        ),
        help: "drop the command-line flag, or change the [protocol] key; the matrix file is the record of its load";
    /// A cell's delta cannot be applied to the base scenario.
    Delta {
        /// The delta's path, such as `values.pipeline.weak.guards`.
        field: String,
        /// Why it does not apply.
        reason: String,
    } => "CHIO-MATRIX-DELTA", Input, at: Some(field),
        summary: format!("delta {field} cannot apply: {reason}"),
        help: "name a kernel, guard, grant or adversary population the base scenario declares";
    /// The base scenario, or a cell's scenario after its delta, is refused.
    Scenario {
        /// The cell whose scenario is refused (or `base`).
        cell: String,
        /// The scenario loader's refusal.
        source: Box<ArenaError>,
    } => "CHIO-MATRIX-SCENARIO", Input, at: None,
        summary: format!(
            "the scenario of cell {cell:?} is refused: {}",
            source.summary()
        ),
        help: source.help();
    /// A campaign task's file (a scenario or evolve task, or `campaign hash`
    /// of one) is refused by the scenario loader.
    TaskScenario {
        /// The task file, relative to the root.
        file: String,
        /// The scenario loader's refusal.
        source: Box<ArenaError>,
    } => "CHIO-CAMPAIGN-TASK-SCENARIO", Input, at: None,
        summary: format!(
            "task file {file:?} is refused as a scenario: {}",
            source.summary()
        ),
        help: format!(
            "{}; a task's kind (`kind` in the declaration, `--kind` of campaign hash) decides whether its file is read as a scenario or a matrix",
            source.help()
        );
    /// The output folder holds runs of another matrix definition.
    ForeignRunLedger {
        /// The run record concerned.
        path: String,
    } => "CHIO-MATRIX-FOREIGN-RUN-LEDGER", Input, at: None,
        summary: format!(
            "run record {path:?} belongs to another matrix definition"
        ),
        help: "use another --out folder, or remove the runs of the old definition";
    /// The output folder already holds runs and `--resume` was not given.
    RunLedgerExists {
        /// The output folder.
        path: String,
    } => "CHIO-MATRIX-RUN-LEDGER-EXISTS", Input, at: None,
        summary: format!("{path:?} already holds a run ledger"),
        help: "pass --resume to complete it, or choose another --out folder";
    /// A run could not be evaluated (the kernel world failed to start).
    RunFailed {
        /// The cell.
        cell: String,
        /// The repetition index.
        repetition: u32,
        /// What failed.
        reason: String,
    } => "CHIO-MATRIX-RUN-FAILED", Infrastructure, at: None,
        summary: format!("cell {cell:?} repetition {repetition} could not run: {reason}"),
        help: "check the scenario's world; the runs done so far stay in the run ledger for --resume";
}

/// The most bytes a declaration, ledger, result or matrix file may hold
/// (1 GiB, the bound of every file of a bundle).
pub const MAX_INPUT_BYTES: u64 = chio_arena::bundle::MAX_FILE_BYTES;

impl ExperimentError {
    /// Reads a declaration, ledger, result or matrix file: a regular file
    /// (a link to one is followed; a named pipe or a device is refused
    /// unopened) of at most [`MAX_INPUT_BYTES`]; a failure is
    /// [`ExperimentError::Unreadable`] naming why.
    pub fn read(path: &Path) -> Result<Vec<u8>, ExperimentError> {
        chio_arena::files::read_named(path, MAX_INPUT_BYTES).map_err(|e| {
            ExperimentError::Unreadable {
                path: path.display().to_string(),
                reason: e.describe("a declaration, ledger or matrix file"),
            }
        })
    }

    /// A document of a campaign or a matrix as canonical JSON with a final
    /// newline; a failure is [`ExperimentError::Canonical`].
    pub fn canonical_line(value: &impl Serialize) -> Result<String, ExperimentError> {
        let mut text = chio_kernel::canonical::to_canonical_string(value).map_err(|e| {
            ExperimentError::Canonical {
                reason: e.to_string(),
            }
        })?;
        text.push('\n');
        Ok(text)
    }
}
