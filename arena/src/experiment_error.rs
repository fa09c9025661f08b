//! The error type of the experiment layer: campaign declarations, attempt
//! ledgers and policy matrices.
//!
//! Scenario refusals stay [`crate::ArenaError`]; everything a campaign or a
//! matrix can refuse is one [`ExperimentError`] variant with a stable code
//! (`CHIO-CAMPAIGN-...`, `CHIO-MATRIX-...`, `CHIO-EXPERIMENT-...`), a summary
//! naming what went wrong and a help text saying how to fix it. The CLI
//! renders those parts as its `error[CODE]` block. Experiments keep their
//! own enum because their refusals concern files the scenario loader never
//! reads (declarations, ledgers, run records), and a reader of
//! `docs/errors.md` finds them under their own domains.

use crate::ArenaError;

/// Everything a campaign or a matrix can refuse or fail on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}; {}", self.summary(), self.help())]
pub enum ExperimentError {
    /// A declaration, ledger, result or matrix file could not be read.
    Unreadable {
        /// The path as the user gave it.
        path: String,
        /// The operating system's reason.
        reason: String,
    },
    /// A file is not the TOML or JSON its schema requires, or breaks its shape.
    Syntax {
        /// The path as the user gave it.
        path: String,
        /// The parser's reason, naming the key.
        reason: String,
    },
    /// Writing an output file failed.
    Io {
        /// The file or folder.
        path: String,
        /// The operating system's reason.
        reason: String,
    },
    /// A value could not be printed as canonical JSON.
    Canonical {
        /// The serialiser's reason.
        reason: String,
    },
    /// A campaign declaration breaks a rule of its schema.
    Declaration {
        /// The key concerned.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A file a task reads cannot be hashed (missing, outside the root, not UTF-8 named).
    DefinitionPath {
        /// The path concerned, relative to the definition root.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A task's files no longer hash to its declared definition hash.
    DefinitionDrift {
        /// The task id.
        task: String,
        /// The hash the declaration records.
        declared: String,
        /// The hash of the files now.
        actual: String,
    },
    /// The ledger names another campaign.
    OtherDeclaration {
        /// The campaign id the ledger names.
        ledger: String,
        /// The campaign id of the declaration given.
        declared: String,
    },
    /// The declaration's bytes changed after the ledger was admitted.
    DeclarationChanged {
        /// The SHA-256 the ledger records.
        recorded: String,
        /// The SHA-256 of the declaration now.
        actual: String,
    },
    /// A scheduled attempt has no ledger row.
    MissingAttempt {
        /// The schedule id.
        schedule_id: String,
    },
    /// A scheduled attempt has two ledger rows.
    DuplicateAttempt {
        /// The schedule id.
        schedule_id: String,
    },
    /// A ledger row names an attempt the declaration does not schedule.
    UnscheduledAttempt {
        /// The schedule id.
        schedule_id: String,
    },
    /// A row disagrees with its schedule entry (task, repetition or kind).
    RowMismatch {
        /// The schedule id.
        schedule_id: String,
        /// The row field that disagrees.
        field: String,
    },
    /// A fixture replay of a recorded bundle is labelled as a live attempt, or the reverse.
    RelabelledEvidence {
        /// The schedule id.
        schedule_id: String,
        /// What the schedule declares (`live` or `fixture`).
        declared: String,
        /// What the row or result claims.
        claimed: String,
    },
    /// A native outcome the task's kind never produces.
    UnknownOutcome {
        /// The schedule id.
        schedule_id: String,
        /// The outcome found.
        outcome: String,
        /// The outcomes this task's kind produces.
        allowed: String,
    },
    /// A pass whose own evidence says otherwise.
    ContradictedPass {
        /// The schedule id.
        schedule_id: String,
        /// The evidence that contradicts it.
        evidence: String,
    },
    /// A row that did not pass gives no reason.
    MissingReason {
        /// The schedule id.
        schedule_id: String,
    },
    /// A deferred (not attempted) row carries results.
    DeferredWithResults {
        /// The schedule id.
        schedule_id: String,
        /// `DEFERRED` or `SKIPPED`.
        outcome: String,
        /// The result field that is set.
        field: String,
    },
    /// An import targets a row that already holds an attempt.
    AlreadyAttempted {
        /// The schedule id.
        schedule_id: String,
    },
    /// An import names a schedule id twice, or one record for two rows.
    ImportTwice {
        /// The schedule id or record path named twice.
        what: String,
    },
    /// A result record belongs to another task or kind than its row.
    WrongTask {
        /// The schedule id.
        schedule_id: String,
        /// Why the record does not fit.
        reason: String,
    },
    /// A pinned revision cannot be read from the repository.
    Revision {
        /// The revision as declared.
        revision: String,
        /// What went wrong.
        reason: String,
    },
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
    },
    /// A row holds a negative or non-finite number.
    BadNumber {
        /// The schedule id.
        schedule_id: String,
        /// The field.
        field: String,
    },
    /// A matrix file breaks a rule of its schema.
    Matrix {
        /// The key concerned.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The first value of an axis declares a delta.
    BaselineDelta {
        /// The axis.
        axis: String,
        /// Its first value.
        value: String,
    },
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
    },
    /// A `[values]` table names an axis or value that is not declared.
    StrayDelta {
        /// The `values.<axis>.<value>` path.
        field: String,
    },
    /// Two cells share a name.
    DuplicateCell {
        /// The cell name.
        cell: String,
    },
    /// The verdict's reference names no cell.
    UnknownReference {
        /// The reference as written.
        reference: String,
        /// The declared cells.
        cells: String,
    },
    /// A grid reference leaves axes out.
    PartialReference {
        /// The axes the reference does not name.
        missing: String,
    },
    /// The criterion names no metric a run provides.
    UnknownCriterion {
        /// The criterion as written.
        criterion: String,
        /// The metrics a criterion may name.
        metrics: String,
    },
    /// A validity metric does not exist.
    UnknownValidity {
        /// The metric as written.
        metric: String,
        /// The metrics validity may name.
        metrics: String,
    },
    /// A `[[validation]]` block names no validator metric.
    UnknownValidator {
        /// The metric as written.
        metric: String,
        /// The metrics a validator may judge.
        metrics: String,
    },
    /// Two `[[validation]]` blocks declare one metric.
    DuplicateValidator {
        /// The metric declared twice.
        metric: String,
    },
    /// A load setting is given twice with different values.
    AmbiguousLoad {
        /// The setting, such as `concurrency`.
        setting: String,
        /// What the matrix file declares.
        declared: String,
        /// What the command line says.
        given: String,
    },
    /// A cell's delta cannot be applied to the base scenario.
    Delta {
        /// The delta's path, such as `values.pipeline.weak.guards`.
        field: String,
        /// Why it does not apply.
        reason: String,
    },
    /// The base scenario, or a cell's scenario after its delta, is refused.
    Scenario {
        /// The cell whose scenario is refused (or `base`).
        cell: String,
        /// The scenario loader's refusal.
        source: ArenaError,
    },
    /// The output folder holds runs of another matrix definition.
    ForeignRunLedger {
        /// The run record concerned.
        path: String,
    },
    /// The output folder already holds runs and `--resume` was not given.
    RunLedgerExists {
        /// The output folder.
        path: String,
    },
    /// A run could not be evaluated (the kernel world failed to start).
    RunFailed {
        /// The cell.
        cell: String,
        /// The repetition index.
        repetition: u32,
        /// What failed.
        reason: String,
    },
}

/// Every code an [`ExperimentError`] can carry, so `docs/errors.md` can be
/// checked for completeness.
pub const EXPERIMENT_ERROR_CODES: &[&str] = &[
    "CHIO-EXPERIMENT-UNREADABLE",
    "CHIO-EXPERIMENT-SYNTAX",
    "CHIO-EXPERIMENT-IO",
    "CHIO-EXPERIMENT-CANONICAL-JSON",
    "CHIO-CAMPAIGN-DECLARATION",
    "CHIO-CAMPAIGN-DEFINITION-PATH",
    "CHIO-CAMPAIGN-DEFINITION-DRIFT",
    "CHIO-CAMPAIGN-OTHER-DECLARATION",
    "CHIO-CAMPAIGN-DECLARATION-CHANGED",
    "CHIO-CAMPAIGN-MISSING-ATTEMPT",
    "CHIO-CAMPAIGN-DUPLICATE-ATTEMPT",
    "CHIO-CAMPAIGN-UNSCHEDULED-ATTEMPT",
    "CHIO-CAMPAIGN-ROW-MISMATCH",
    "CHIO-CAMPAIGN-RELABELLED-EVIDENCE",
    "CHIO-CAMPAIGN-UNKNOWN-OUTCOME",
    "CHIO-CAMPAIGN-CONTRADICTED-PASS",
    "CHIO-CAMPAIGN-MISSING-REASON",
    "CHIO-CAMPAIGN-DEFERRED-WITH-RESULTS",
    "CHIO-CAMPAIGN-ALREADY-ATTEMPTED",
    "CHIO-CAMPAIGN-IMPORT-TWICE",
    "CHIO-CAMPAIGN-WRONG-TASK",
    "CHIO-CAMPAIGN-REVISION",
    "CHIO-CAMPAIGN-OVER-LIMIT",
    "CHIO-CAMPAIGN-BAD-NUMBER",
    "CHIO-MATRIX-INVALID",
    "CHIO-MATRIX-BASELINE-DELTA",
    "CHIO-MATRIX-MISSING-DELTA",
    "CHIO-MATRIX-STRAY-DELTA",
    "CHIO-MATRIX-DUPLICATE-CELL",
    "CHIO-MATRIX-UNKNOWN-REFERENCE",
    "CHIO-MATRIX-PARTIAL-REFERENCE",
    "CHIO-MATRIX-UNKNOWN-CRITERION",
    "CHIO-MATRIX-UNKNOWN-VALIDITY",
    "CHIO-MATRIX-UNKNOWN-VALIDATOR",
    "CHIO-MATRIX-DUPLICATE-VALIDATOR",
    "CHIO-MATRIX-AMBIGUOUS-LOAD",
    "CHIO-MATRIX-DELTA",
    "CHIO-MATRIX-SCENARIO",
    "CHIO-MATRIX-FOREIGN-RUN-LEDGER",
    "CHIO-MATRIX-RUN-LEDGER-EXISTS",
    "CHIO-MATRIX-RUN-FAILED",
];

impl ExperimentError {
    /// The stable code; one per variant.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unreadable { .. } => "CHIO-EXPERIMENT-UNREADABLE",
            Self::Syntax { .. } => "CHIO-EXPERIMENT-SYNTAX",
            Self::Io { .. } => "CHIO-EXPERIMENT-IO",
            Self::Canonical { .. } => "CHIO-EXPERIMENT-CANONICAL-JSON",
            Self::Declaration { .. } => "CHIO-CAMPAIGN-DECLARATION",
            Self::DefinitionPath { .. } => "CHIO-CAMPAIGN-DEFINITION-PATH",
            Self::DefinitionDrift { .. } => "CHIO-CAMPAIGN-DEFINITION-DRIFT",
            Self::OtherDeclaration { .. } => "CHIO-CAMPAIGN-OTHER-DECLARATION",
            Self::DeclarationChanged { .. } => "CHIO-CAMPAIGN-DECLARATION-CHANGED",
            Self::MissingAttempt { .. } => "CHIO-CAMPAIGN-MISSING-ATTEMPT",
            Self::DuplicateAttempt { .. } => "CHIO-CAMPAIGN-DUPLICATE-ATTEMPT",
            Self::UnscheduledAttempt { .. } => "CHIO-CAMPAIGN-UNSCHEDULED-ATTEMPT",
            Self::RowMismatch { .. } => "CHIO-CAMPAIGN-ROW-MISMATCH",
            Self::RelabelledEvidence { .. } => "CHIO-CAMPAIGN-RELABELLED-EVIDENCE",
            Self::UnknownOutcome { .. } => "CHIO-CAMPAIGN-UNKNOWN-OUTCOME",
            Self::ContradictedPass { .. } => "CHIO-CAMPAIGN-CONTRADICTED-PASS",
            Self::MissingReason { .. } => "CHIO-CAMPAIGN-MISSING-REASON",
            Self::DeferredWithResults { .. } => "CHIO-CAMPAIGN-DEFERRED-WITH-RESULTS",
            Self::AlreadyAttempted { .. } => "CHIO-CAMPAIGN-ALREADY-ATTEMPTED",
            Self::ImportTwice { .. } => "CHIO-CAMPAIGN-IMPORT-TWICE",
            Self::WrongTask { .. } => "CHIO-CAMPAIGN-WRONG-TASK",
            Self::Revision { .. } => "CHIO-CAMPAIGN-REVISION",
            Self::OverLimit { .. } => "CHIO-CAMPAIGN-OVER-LIMIT",
            Self::BadNumber { .. } => "CHIO-CAMPAIGN-BAD-NUMBER",
            Self::Matrix { .. } => "CHIO-MATRIX-INVALID",
            Self::BaselineDelta { .. } => "CHIO-MATRIX-BASELINE-DELTA",
            Self::MissingDelta { .. } => "CHIO-MATRIX-MISSING-DELTA",
            Self::StrayDelta { .. } => "CHIO-MATRIX-STRAY-DELTA",
            Self::DuplicateCell { .. } => "CHIO-MATRIX-DUPLICATE-CELL",
            Self::UnknownReference { .. } => "CHIO-MATRIX-UNKNOWN-REFERENCE",
            Self::PartialReference { .. } => "CHIO-MATRIX-PARTIAL-REFERENCE",
            Self::UnknownCriterion { .. } => "CHIO-MATRIX-UNKNOWN-CRITERION",
            Self::UnknownValidity { .. } => "CHIO-MATRIX-UNKNOWN-VALIDITY",
            Self::UnknownValidator { .. } => "CHIO-MATRIX-UNKNOWN-VALIDATOR",
            Self::DuplicateValidator { .. } => "CHIO-MATRIX-DUPLICATE-VALIDATOR",
            Self::AmbiguousLoad { .. } => "CHIO-MATRIX-AMBIGUOUS-LOAD",
            Self::Delta { .. } => "CHIO-MATRIX-DELTA",
            Self::Scenario { .. } => "CHIO-MATRIX-SCENARIO",
            Self::ForeignRunLedger { .. } => "CHIO-MATRIX-FOREIGN-RUN-LEDGER",
            Self::RunLedgerExists { .. } => "CHIO-MATRIX-RUN-LEDGER-EXISTS",
            Self::RunFailed { .. } => "CHIO-MATRIX-RUN-FAILED",
        }
    }

    /// Whether the failure lies outside the input (exit 3) rather than in it (exit 2).
    pub fn is_infrastructure(&self) -> bool {
        matches!(
            self,
            Self::Io { .. } | Self::Canonical { .. } | Self::RunFailed { .. }
        )
    }

    /// What went wrong, naming the key, row or file.
    pub fn summary(&self) -> String {
        match self {
            Self::Unreadable { path, reason } => format!("cannot read {path:?}: {reason}"),
            Self::Syntax { path, reason } => format!("{path:?} is malformed: {reason}"),
            Self::Io { path, reason } => format!("cannot write {path:?}: {reason}"),
            Self::Canonical { reason } => format!("cannot print canonical JSON: {reason}"),
            Self::Declaration { field, reason } => {
                format!("campaign declaration refused at {field}: {reason}")
            }
            Self::DefinitionPath { path, reason } => {
                format!("cannot hash task file {path:?}: {reason}")
            }
            Self::DefinitionDrift {
                task,
                declared,
                actual,
            } => format!(
                "task {task:?}: its files hash to {actual}, not the declared definition {declared}"
            ),
            Self::OtherDeclaration { ledger, declared } => format!(
                "the ledger belongs to campaign {ledger:?}, not to the declaration given ({declared:?})"
            ),
            Self::DeclarationChanged { recorded, actual } => format!(
                "the declaration's bytes changed after admission: the ledger records sha256 {recorded}, the file is {actual}"
            ),
            Self::MissingAttempt { schedule_id } => {
                format!("scheduled attempt {schedule_id:?} has no ledger row")
            }
            Self::DuplicateAttempt { schedule_id } => {
                format!("scheduled attempt {schedule_id:?} appears twice in the ledger")
            }
            Self::UnscheduledAttempt { schedule_id } => {
                format!("ledger row {schedule_id:?} is not a scheduled attempt")
            }
            Self::RowMismatch { schedule_id, field } => format!(
                "ledger row {schedule_id:?}: {field} disagrees with the declared schedule"
            ),
            Self::RelabelledEvidence {
                schedule_id,
                declared,
                claimed,
            } => format!(
                "ledger row {schedule_id:?} is scheduled as {declared} evidence but carries {claimed} evidence"
            ),
            Self::UnknownOutcome {
                schedule_id,
                outcome,
                ..
            } => format!(
                "ledger row {schedule_id:?}: native outcome {outcome:?} is not one its task produces"
            ),
            Self::ContradictedPass {
                schedule_id,
                evidence,
            } => format!("ledger row {schedule_id:?} passes but its own evidence says {evidence}"),
            Self::MissingReason { schedule_id } => {
                format!("ledger row {schedule_id:?} did not pass and gives no reason")
            }
            Self::DeferredWithResults {
                schedule_id,
                outcome,
                field,
            } => format!(
                "ledger row {schedule_id:?} is {outcome} (not attempted) but carries {field}"
            ),
            Self::AlreadyAttempted { schedule_id } => {
                format!("ledger row {schedule_id:?} already holds an attempt")
            }
            Self::ImportTwice { what } => format!("the import names {what} twice"),
            Self::WrongTask {
                schedule_id,
                reason,
            } => format!("the record for {schedule_id:?} does not belong to its task: {reason}"),
            Self::Revision { revision, reason } => {
                format!("cannot read the pinned revision {revision:?}: {reason}")
            }
            Self::OverLimit {
                schedule_id,
                limit,
                spent,
                declared,
            } => format!(
                "ledger row {schedule_id:?} spent {spent} against a {limit} limit of {declared} and its reason does not name the overrun"
            ),
            Self::BadNumber { schedule_id, field } => format!(
                "ledger row {schedule_id:?}: {field} is negative or not finite"
            ),
            Self::Matrix { field, reason } => format!("matrix refused at {field}: {reason}"),
            Self::BaselineDelta { axis, value } => format!(
                "axis {axis:?}: value {value:?} is the baseline (the first value) and declares a delta"
            ),
            Self::MissingDelta {
                axis,
                value,
                baseline,
                declared,
            } => format!(
                "axis {axis:?}: value {value:?} declares no delta; only the first value ({baseline:?}) is the baseline; deltas declared for this axis: [{declared}]"
            ),
            Self::StrayDelta { field } => {
                format!("{field} is a delta for an axis value that is not declared")
            }
            Self::DuplicateCell { cell } => format!("cell {cell:?} is declared twice"),
            Self::UnknownReference { reference, cells } => format!(
                "verdict.reference {reference} is not a cell; the cells are [{cells}]"
            ),
            Self::PartialReference { missing } => {
                format!("verdict.reference is a partial grid reference: it does not name axes [{missing}]")
            }
            Self::UnknownCriterion { criterion, metrics } => format!(
                "verdict.criterion {criterion:?} is not a metric a run provides; criterion metrics: [{metrics}]"
            ),
            Self::UnknownValidity { metric, metrics } => format!(
                "verdict.validity names {metric:?}, which is not a validity metric; validity metrics: [{metrics}]"
            ),
            Self::UnknownValidator { metric, metrics } => format!(
                "a [[validation]] block names {metric:?}, which is not a validator metric; validator metrics: [{metrics}]"
            ),
            Self::DuplicateValidator { metric } => format!(
                "two [[validation]] blocks declare the metric {metric:?}"
            ),
            Self::AmbiguousLoad {
                setting,
                declared,
                given,
            } => format!(
                "{setting} is given twice: the matrix declares {declared} and the command line says {given}"
            ),
            Self::Delta { field, reason } => format!("delta {field} cannot apply: {reason}"),
            Self::Scenario { cell, source } => format!(
                "the scenario of cell {cell:?} is refused: {}",
                source.summary()
            ),
            Self::ForeignRunLedger { path } => format!(
                "run record {path:?} belongs to another matrix definition"
            ),
            Self::RunLedgerExists { path } => {
                format!("{path:?} already holds a run ledger")
            }
            Self::RunFailed {
                cell,
                repetition,
                reason,
            } => format!("cell {cell:?} repetition {repetition} could not run: {reason}"),
        }
    }

    /// How to fix it.
    pub fn help(&self) -> String {
        match self {
            Self::Unreadable { .. } => "check the path and that the file is readable".into(),
            Self::Syntax { .. } => {
                "fix the file; docs/campaigns.md and docs/matrices.md describe every key".into()
            }
            Self::Io { .. } => "check that the folder exists and is writable".into(),
            Self::Canonical { .. } => "report this: experiment documents hold only integers within 2^53 and finite numbers".into(),
            Self::Declaration { .. } => "fix the key; docs/campaigns.md describes the declaration".into(),
            Self::DefinitionPath { .. } => {
                "keep every file a task reads under the declaration's root, with UTF-8 names".into()
            }
            Self::DefinitionDrift { .. } => "restore the task's files, or declare a new campaign with the new definition hash (chio campaign hash prints it)".into(),
            Self::OtherDeclaration { .. } => "pass the declaration this ledger was made from".into(),
            Self::DeclarationChanged { .. } => "restore the declaration's admitted bytes; a changed protocol needs a new campaign and a new ledger".into(),
            Self::MissingAttempt { .. } => "restore the row; every scheduled attempt stays in the ledger, DEFERRED if it never ran".into(),
            Self::DuplicateAttempt { .. } => "keep one row per schedule id; a retry needs a new declared schedule".into(),
            Self::UnscheduledAttempt { .. } => "remove the row, or declare the attempt in a new campaign".into(),
            Self::RowMismatch { .. } => "restore the row's task, repetition and evidence from chio campaign template".into(),
            Self::RelabelledEvidence { .. } => "fill a fixture row only from chio arena replay results and a live row only from chio arena run, evolve or matrix results".into(),
            Self::UnknownOutcome { allowed, .. } => format!("record the native outcome as the tool wrote it: one of {allowed}"),
            Self::ContradictedPass { .. } => "import the record as written; a native outcome is copied, never rescored".into(),
            Self::MissingReason { .. } => "give the row a reason naming why it did not pass".into(),
            Self::DeferredWithResults { .. } => "an attempt that ran keeps its native outcome; set it, or clear the results (an intervention needs an attempt, or a SKIPPED row)".into(),
            Self::AlreadyAttempted { .. } => "a retry needs a new declared schedule; the original row stays".into(),
            Self::ImportTwice { .. } => "name each schedule id and each record once".into(),
            Self::WrongTask { .. } => "import the record under the schedule id of the task that produced it".into(),
            Self::Revision { .. } => "declare a commit the repository holds (git log shows them), or drop revision to hash the working tree".into(),
            Self::OverLimit { limit, .. } => format!("keep the row as it happened and give it a reason naming the {limit} overrun (chio campaign import writes one); an over-limit attempt blocks comparison either way"),
            Self::BadNumber { .. } => "write a finite number of zero or more, or null when it is unknown".into(),
            Self::Matrix { .. } => "fix the key; docs/matrices.md describes the matrix file".into(),
            Self::BaselineDelta { .. } => "move the delta to another value, or put the baseline first".into(),
            Self::MissingDelta { .. } => "declare a [values.<axis>.<value>] delta, or correct the value's spelling".into(),
            Self::StrayDelta { .. } => "name a declared non-baseline value of a declared axis, or remove the delta".into(),
            Self::DuplicateCell { .. } => "give each cell a unique name".into(),
            Self::UnknownReference { .. } => "name one of the declared cells".into(),
            Self::PartialReference { .. } => "name a value for every axis".into(),
            Self::UnknownCriterion { .. } => "name one of the criterion metrics docs/matrices.md lists".into(),
            Self::UnknownValidity { .. } => "name one of the validity metrics docs/matrices.md lists, or remove it".into(),
            Self::UnknownValidator { .. } => "name one of the validator metrics docs/matrices.md lists".into(),
            Self::DuplicateValidator { .. } => "keep one block per metric, with both min and max in it if both apply".into(),
            Self::AmbiguousLoad { .. } => "drop the command-line flag, or change the [protocol] key; the matrix file is the record of its load".into(),
            Self::Delta { .. } => "name a kernel, guard, grant or adversary population the base scenario declares".into(),
            Self::Scenario { source, .. } => source.help(),
            Self::ForeignRunLedger { .. } => "use another --out folder, or remove the runs of the old definition".into(),
            Self::RunLedgerExists { .. } => "pass --resume to complete it, or choose another --out folder".into(),
            Self::RunFailed { .. } => "check the scenario's world; the runs done so far stay in the run ledger for --resume".into(),
        }
    }
}
