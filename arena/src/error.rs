//! The arena's one error type.
//!
//! Every refusal the scenario loader can make is its own [`ArenaError`]
//! variant, carrying the field path it concerns (such as `steps[3].agent`),
//! a stable code (`CHIO-SCENARIO-...`) and a help text saying how to fix it.
//! The CLI renders those parts as an `error[CODE]` block; this module only
//! owns their wording. No variant ever carries a secret value: the inline
//! secret variants name the field and the marker, never what was found.

use chio_kernel::canonical::CanonicalError;

/// Everything that can go wrong while loading, validating or projecting a
/// scenario.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}; {}", self.summary(), self.help())]
pub enum ArenaError {
    /// The scenario file could not be read from disk.
    Unreadable {
        /// The path as the user gave it.
        path: String,
        /// The operating system's reason.
        reason: String,
    },
    /// The text is not TOML.
    Syntax {
        /// 1-based line of the first syntax error.
        line: usize,
        /// 1-based column of the first syntax error.
        column: usize,
        /// The parser's reason, without the offending source line.
        reason: String,
    },
    /// A key the schema does not define (every table is closed).
    UnknownKey {
        /// Path of the unknown key.
        field: String,
    },
    /// A required key is absent.
    MissingKey {
        /// Path of the missing key.
        field: String,
    },
    /// A key holds a value of the wrong TOML type.
    WrongType {
        /// Path of the key.
        field: String,
        /// What the schema expects there.
        expected: String,
    },
    /// `schema_version` is not one this build reads.
    UnsupportedSchemaVersion {
        /// Path of the key.
        field: String,
        /// The value found.
        value: String,
    },
    /// `determinism.scheduler` names no known scheduler.
    UnsupportedScheduler {
        /// Path of the key.
        field: String,
        /// The value found.
        value: String,
    },
    /// `determinism.locale` is not `C`.
    UnsupportedLocale {
        /// Path of the key.
        field: String,
        /// The value found.
        value: String,
    },
    /// A closed set of words (action, verdict, kind, mode) got another word.
    UnsupportedValue {
        /// Path of the key.
        field: String,
        /// The value found.
        value: String,
        /// The accepted words, comma separated.
        allowed: &'static str,
    },
    /// The scenario declares no agent.
    EmptyAgents,
    /// The scenario declares no step.
    EmptySteps,
    /// A list that must hold at least one entry is empty.
    EmptyList {
        /// Path of the list.
        field: String,
    },
    /// A `[determinism]` copy disagrees with its top-level twin.
    DeterminismMismatch {
        /// Path of the copy, such as `determinism.rng_seed`.
        field: String,
        /// Path of the top-level twin.
        twin: &'static str,
    },
    /// An id uses characters outside `[A-Za-z0-9_.-]` or is empty.
    InvalidId {
        /// Path of the id.
        field: String,
    },
    /// Two declarations of one kind share an id.
    DuplicateId {
        /// What kind of thing is duplicated (agent, step, guard...).
        kind: &'static str,
        /// The repeated id.
        id: String,
        /// Path of the second occurrence.
        field: String,
    },
    /// A reference names something the scenario does not declare.
    UndeclaredReference {
        /// What kind of thing is referenced.
        kind: &'static str,
        /// The id that does not resolve.
        id: String,
        /// Path of the reference.
        field: String,
    },
    /// A delegate step hands on a capability its agent does not hold yet.
    CapabilityNotHeld {
        /// Path of the `capability` key.
        field: String,
        /// The delegating agent.
        agent: String,
        /// The capability it names.
        capability: String,
    },
    /// A call names no capability and its agent holds none for the server.
    NoCapability {
        /// Path of the step.
        field: String,
        /// The calling agent.
        agent: String,
        /// The server called.
        server: String,
    },
    /// A call names no capability and its agent holds several for the server.
    AmbiguousCapability {
        /// Path of the step.
        field: String,
        /// The calling agent.
        agent: String,
        /// The server called.
        server: String,
    },
    /// A budget allows zero invocations.
    ZeroBudget {
        /// Path of `max_invocations`.
        field: String,
    },
    /// A number is outside its documented range.
    OutOfRange {
        /// Path of the number.
        field: String,
        /// The range it must satisfy.
        rule: &'static str,
    },
    /// `virtual_clock_start` is not strict RFC 3339 UTC.
    BadClockStart {
        /// Path of the key.
        field: String,
        /// What is wrong with the text.
        reason: &'static str,
    },
    /// `single-agent-v1` was asked to schedule several agents.
    SingleAgentScheduler {
        /// How many agents the scenario declares.
        count: usize,
    },
    /// An agent's model names a live provider, so the run could not replay.
    ProviderDependency {
        /// Path of the `model` key.
        field: String,
        /// The provider marker found.
        marker: &'static str,
    },
    /// An agent's model is not a recorded one.
    UnrecordedModel {
        /// Path of the `model` key.
        field: String,
    },
    /// A secret marker is used as a key name.
    SecretKeyName {
        /// Path of the key.
        field: String,
        /// The marker the key name carries.
        marker: &'static str,
    },
    /// A value carries a credential.
    InlineSecret {
        /// Path of the value.
        field: String,
        /// The marker whose credential shape matched.
        marker: &'static str,
    },
    /// Some world sections are declared but a needed one is missing.
    IncompleteWorld {
        /// The missing section or key.
        field: String,
    },
    /// A runner was given a scenario that declares no world, so none of its
    /// steps can be dispatched.
    NoWorld {
        /// How many steps the scenario schedules.
        steps: usize,
    },
    /// A message's `from_step` is not an earlier call step of its sender.
    MessageSource {
        /// Path of the `from_step` key.
        field: String,
        /// The step it names.
        step: String,
        /// Which condition fails.
        reason: &'static str,
    },
    /// A delegate, revoke or message step in a scenario without a world.
    WorldRequired {
        /// Path of the step's `action`.
        field: String,
        /// The action.
        action: String,
    },
    /// A key that does not apply where it is written.
    KeyNotAllowed {
        /// Path of the key.
        field: String,
        /// Where it does apply.
        context: &'static str,
    },
    /// A call step without `expect_verdict`.
    MissingExpectVerdict {
        /// Path of the missing key.
        field: String,
    },
    /// `expect_verdict` on a step that is not a call.
    ExpectVerdictNotCall {
        /// Path of the key.
        field: String,
        /// The step's action.
        action: String,
    },
    /// A fixtures folder that does not exist next to the scenario.
    FixtureMissing {
        /// Path of the `fixtures` key.
        field: String,
        /// The folder, relative to the scenario.
        folder: String,
    },
    /// A fixtures path that leaves the scenario's folder: absolute, climbing
    /// out with `..`, naming the folder itself, or resolving elsewhere
    /// through a symbolic link (the folder or anything below it).
    FixtureOutsideScenario {
        /// Path of the `fixtures` key.
        field: String,
        /// The file or folder that resolves outside, relative to the
        /// scenario's folder, when it is not the `fixtures` folder as written.
        entry: Option<String>,
    },
    /// A fixture a run could not seed: not UTF-8 text, a name that is not
    /// UTF-8, not a file or folder, a dangling or looping link, unreadable.
    FixtureUnreadable {
        /// Path of the `fixtures` key.
        field: String,
        /// The file or folder, relative to the scenario's folder.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A guard's configuration refused by the kernel's guard builder.
    GuardConfig {
        /// Path of the guard's `config`.
        field: String,
        /// The builder's reason.
        reason: String,
    },
    /// An `[adversaries.params]` entry is unknown, of the wrong type or names an unknown value.
    AdversaryParam {
        /// Path of the parameter, such as `adversaries[0].params.patterns[1]`.
        field: String,
        /// What is wrong and what is accepted.
        reason: String,
    },
    /// A population would have no member.
    EmptyPopulation {
        /// Path of the parameter or population that leaves it empty.
        field: String,
    },
    /// A population mixes members of several classes.
    MixedPopulation {
        /// The population's name.
        population: String,
        /// The class of its first member.
        first: &'static str,
        /// Another class found in it.
        other: &'static str,
    },
    /// Evolution or promotion was asked of a scenario with no `[[adversaries]]`.
    NoAdversaries,
    /// The adversary evaluator failed (not a verdict: the run cannot go on).
    Evaluation {
        /// What failed.
        cause: String,
    },
    /// An arena output (leaderboard, trace, chart, promoted case) could not be written.
    Output {
        /// The file or folder.
        path: String,
        /// What went wrong.
        cause: String,
    },
    /// The promotion bless gate is shut.
    PromotionGate {
        /// The clause that keeps it shut.
        clause: String,
    },
    /// A step named on the command line is not a step the adversaries act on.
    UnknownStep {
        /// The id given.
        step: String,
    },
    /// A value could not be printed as canonical JSON.
    Canonical(#[from] CanonicalError),
    /// An evidence bundle was refused: `--out` names something the arena did
    /// not write, or a folder given to replay or diff is not a bundle.
    Bundle {
        /// The file or folder.
        path: String,
        /// What went wrong and how to fix it.
        cause: String,
    },
    /// Writing an evidence bundle failed on the filesystem (a full disk, a
    /// read-only or missing parent); the previous bundle, if any, is kept.
    BundleIo {
        /// The file or folder being written.
        path: String,
        /// The operating system's reason.
        cause: String,
    },
}

/// Every code an [`ArenaError`] can carry, in the order `docs/errors.md`
/// lists them, so the documentation can be checked for completeness.
pub const ERROR_CODES: &[&str] = &[
    "CHIO-SCENARIO-UNREADABLE",
    "CHIO-SCENARIO-SYNTAX",
    "CHIO-SCENARIO-UNKNOWN-KEY",
    "CHIO-SCENARIO-MISSING-KEY",
    "CHIO-SCENARIO-WRONG-TYPE",
    "CHIO-SCENARIO-SCHEMA-VERSION",
    "CHIO-SCENARIO-SCHEDULER",
    "CHIO-SCENARIO-LOCALE",
    "CHIO-SCENARIO-UNSUPPORTED-VALUE",
    "CHIO-SCENARIO-EMPTY-AGENTS",
    "CHIO-SCENARIO-EMPTY-STEPS",
    "CHIO-SCENARIO-EMPTY-LIST",
    "CHIO-SCENARIO-DETERMINISM-MISMATCH",
    "CHIO-SCENARIO-INVALID-ID",
    "CHIO-SCENARIO-DUPLICATE-ID",
    "CHIO-SCENARIO-UNDECLARED-REFERENCE",
    "CHIO-SCENARIO-CAPABILITY-NOT-HELD",
    "CHIO-SCENARIO-NO-CAPABILITY",
    "CHIO-SCENARIO-AMBIGUOUS-CAPABILITY",
    "CHIO-SCENARIO-ZERO-BUDGET",
    "CHIO-SCENARIO-OUT-OF-RANGE",
    "CHIO-SCENARIO-CLOCK-START",
    "CHIO-SCENARIO-SINGLE-AGENT",
    "CHIO-SCENARIO-PROVIDER-DEPENDENCY",
    "CHIO-SCENARIO-UNRECORDED-MODEL",
    "CHIO-SCENARIO-SECRET-KEY-NAME",
    "CHIO-SCENARIO-INLINE-SECRET",
    "CHIO-SCENARIO-INCOMPLETE-WORLD",
    "CHIO-SCENARIO-WORLD-REQUIRED",
    "CHIO-SCENARIO-KEY-NOT-ALLOWED",
    "CHIO-SCENARIO-MISSING-EXPECT-VERDICT",
    "CHIO-SCENARIO-EXPECT-VERDICT-NOT-CALL",
    "CHIO-SCENARIO-FIXTURE-MISSING",
    "CHIO-SCENARIO-FIXTURE-OUTSIDE",
    "CHIO-SCENARIO-FIXTURE-UNREADABLE",
    "CHIO-SCENARIO-GUARD-CONFIG",
    "CHIO-ARENA-CANONICAL-JSON",
    "CHIO-ARENA-BUNDLE",
    "CHIO-ARENA-BUNDLE-IO",
    "CHIO-SCENARIO-ADVERSARY-PARAM",
    "CHIO-SCENARIO-EMPTY-POPULATION",
    "CHIO-SCENARIO-MIXED-POPULATION",
    "CHIO-ARENA-NO-ADVERSARIES",
    "CHIO-ARENA-EVALUATION",
    "CHIO-ARENA-OUTPUT",
    "CHIO-ARENA-PROMOTE-GATE",
    "CHIO-ARENA-UNKNOWN-STEP",
    "CHIO-SCENARIO-NO-WORLD",
    "CHIO-SCENARIO-MESSAGE-SOURCE",
];

impl ArenaError {
    /// The stable code, such as `CHIO-SCENARIO-DUPLICATE-ID`; one per variant.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unreadable { .. } => "CHIO-SCENARIO-UNREADABLE",
            Self::Syntax { .. } => "CHIO-SCENARIO-SYNTAX",
            Self::UnknownKey { .. } => "CHIO-SCENARIO-UNKNOWN-KEY",
            Self::MissingKey { .. } => "CHIO-SCENARIO-MISSING-KEY",
            Self::WrongType { .. } => "CHIO-SCENARIO-WRONG-TYPE",
            Self::UnsupportedSchemaVersion { .. } => "CHIO-SCENARIO-SCHEMA-VERSION",
            Self::UnsupportedScheduler { .. } => "CHIO-SCENARIO-SCHEDULER",
            Self::UnsupportedLocale { .. } => "CHIO-SCENARIO-LOCALE",
            Self::UnsupportedValue { .. } => "CHIO-SCENARIO-UNSUPPORTED-VALUE",
            Self::EmptyAgents => "CHIO-SCENARIO-EMPTY-AGENTS",
            Self::EmptySteps => "CHIO-SCENARIO-EMPTY-STEPS",
            Self::EmptyList { .. } => "CHIO-SCENARIO-EMPTY-LIST",
            Self::DeterminismMismatch { .. } => "CHIO-SCENARIO-DETERMINISM-MISMATCH",
            Self::InvalidId { .. } => "CHIO-SCENARIO-INVALID-ID",
            Self::DuplicateId { .. } => "CHIO-SCENARIO-DUPLICATE-ID",
            Self::UndeclaredReference { .. } => "CHIO-SCENARIO-UNDECLARED-REFERENCE",
            Self::CapabilityNotHeld { .. } => "CHIO-SCENARIO-CAPABILITY-NOT-HELD",
            Self::NoCapability { .. } => "CHIO-SCENARIO-NO-CAPABILITY",
            Self::AmbiguousCapability { .. } => "CHIO-SCENARIO-AMBIGUOUS-CAPABILITY",
            Self::ZeroBudget { .. } => "CHIO-SCENARIO-ZERO-BUDGET",
            Self::OutOfRange { .. } => "CHIO-SCENARIO-OUT-OF-RANGE",
            Self::BadClockStart { .. } => "CHIO-SCENARIO-CLOCK-START",
            Self::SingleAgentScheduler { .. } => "CHIO-SCENARIO-SINGLE-AGENT",
            Self::ProviderDependency { .. } => "CHIO-SCENARIO-PROVIDER-DEPENDENCY",
            Self::UnrecordedModel { .. } => "CHIO-SCENARIO-UNRECORDED-MODEL",
            Self::SecretKeyName { .. } => "CHIO-SCENARIO-SECRET-KEY-NAME",
            Self::InlineSecret { .. } => "CHIO-SCENARIO-INLINE-SECRET",
            Self::IncompleteWorld { .. } => "CHIO-SCENARIO-INCOMPLETE-WORLD",
            Self::WorldRequired { .. } => "CHIO-SCENARIO-WORLD-REQUIRED",
            Self::NoWorld { .. } => "CHIO-SCENARIO-NO-WORLD",
            Self::MessageSource { .. } => "CHIO-SCENARIO-MESSAGE-SOURCE",
            Self::KeyNotAllowed { .. } => "CHIO-SCENARIO-KEY-NOT-ALLOWED",
            Self::MissingExpectVerdict { .. } => "CHIO-SCENARIO-MISSING-EXPECT-VERDICT",
            Self::ExpectVerdictNotCall { .. } => "CHIO-SCENARIO-EXPECT-VERDICT-NOT-CALL",
            Self::FixtureMissing { .. } => "CHIO-SCENARIO-FIXTURE-MISSING",
            Self::FixtureOutsideScenario { .. } => "CHIO-SCENARIO-FIXTURE-OUTSIDE",
            Self::FixtureUnreadable { .. } => "CHIO-SCENARIO-FIXTURE-UNREADABLE",
            Self::GuardConfig { .. } => "CHIO-SCENARIO-GUARD-CONFIG",
            Self::Canonical(_) => "CHIO-ARENA-CANONICAL-JSON",
            Self::Bundle { .. } => "CHIO-ARENA-BUNDLE",
            Self::BundleIo { .. } => "CHIO-ARENA-BUNDLE-IO",
            Self::AdversaryParam { .. } => "CHIO-SCENARIO-ADVERSARY-PARAM",
            Self::EmptyPopulation { .. } => "CHIO-SCENARIO-EMPTY-POPULATION",
            Self::MixedPopulation { .. } => "CHIO-SCENARIO-MIXED-POPULATION",
            Self::NoAdversaries => "CHIO-ARENA-NO-ADVERSARIES",
            Self::Evaluation { .. } => "CHIO-ARENA-EVALUATION",
            Self::Output { .. } => "CHIO-ARENA-OUTPUT",
            Self::PromotionGate { .. } => "CHIO-ARENA-PROMOTE-GATE",
            Self::UnknownStep { .. } => "CHIO-ARENA-UNKNOWN-STEP",
        }
    }

    /// Whether the failure lies outside the input (a disk, a printer of
    /// canonical JSON, an evaluator) rather than in the scenario, a flag or a
    /// folder the user named. This is the one place that decides: the CLI
    /// exits 3 for these and 2 for every other variant.
    pub fn is_infrastructure(&self) -> bool {
        matches!(
            self,
            Self::Canonical(_)
                | Self::BundleIo { .. }
                | Self::Evaluation { .. }
                | Self::Output { .. }
        )
    }

    /// The field path the error concerns, when it concerns one field.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::UnknownKey { field }
            | Self::MissingKey { field }
            | Self::WrongType { field, .. }
            | Self::UnsupportedSchemaVersion { field, .. }
            | Self::UnsupportedScheduler { field, .. }
            | Self::UnsupportedLocale { field, .. }
            | Self::UnsupportedValue { field, .. }
            | Self::EmptyList { field }
            | Self::DeterminismMismatch { field, .. }
            | Self::InvalidId { field }
            | Self::DuplicateId { field, .. }
            | Self::UndeclaredReference { field, .. }
            | Self::CapabilityNotHeld { field, .. }
            | Self::NoCapability { field, .. }
            | Self::AmbiguousCapability { field, .. }
            | Self::ZeroBudget { field }
            | Self::OutOfRange { field, .. }
            | Self::BadClockStart { field, .. }
            | Self::ProviderDependency { field, .. }
            | Self::UnrecordedModel { field }
            | Self::SecretKeyName { field, .. }
            | Self::InlineSecret { field, .. }
            | Self::IncompleteWorld { field }
            | Self::WorldRequired { field, .. }
            | Self::MessageSource { field, .. }
            | Self::KeyNotAllowed { field, .. }
            | Self::MissingExpectVerdict { field }
            | Self::ExpectVerdictNotCall { field, .. }
            | Self::FixtureMissing { field, .. }
            | Self::FixtureOutsideScenario { field, .. }
            | Self::FixtureUnreadable { field, .. }
            | Self::GuardConfig { field, .. }
            | Self::AdversaryParam { field, .. }
            | Self::EmptyPopulation { field } => Some(field),
            Self::NoAdversaries => Some("adversaries"),
            Self::MixedPopulation { .. }
            | Self::Evaluation { .. }
            | Self::Output { .. }
            | Self::PromotionGate { .. }
            | Self::UnknownStep { .. }
            | Self::NoWorld { .. } => None,
            Self::EmptyAgents => Some("agents"),
            Self::EmptySteps => Some("steps"),
            Self::SingleAgentScheduler { .. } => Some("determinism.scheduler"),
            Self::Unreadable { .. }
            | Self::Syntax { .. }
            | Self::Canonical(_)
            | Self::Bundle { .. }
            | Self::BundleIo { .. } => None,
        }
    }

    /// What went wrong, naming the field; the first half of the message.
    pub fn summary(&self) -> String {
        match self {
            Self::Unreadable { path, reason } => {
                format!("cannot read scenario file {path:?}: {reason}")
            }
            Self::Syntax {
                line,
                column,
                reason,
            } => format!("scenario is not valid TOML at line {line}, column {column}: {reason}"),
            Self::UnknownKey { field } => format!("unknown key at {field}"),
            Self::MissingKey { field } => format!("missing required key {field}"),
            Self::WrongType { field, expected } => {
                format!("wrong type at {field}: expected {expected}")
            }
            Self::UnsupportedSchemaVersion { field, value } => {
                format!("unsupported schema version {value:?} at {field}")
            }
            Self::UnsupportedScheduler { field, value } => {
                format!("unsupported scheduler {value:?} at {field}")
            }
            Self::UnsupportedLocale { field, value } => {
                format!("unsupported locale {value:?} at {field}")
            }
            Self::UnsupportedValue { field, value, .. } => {
                format!("unsupported value {value:?} at {field}")
            }
            Self::EmptyAgents => "the scenario declares no agent at agents".to_string(),
            Self::EmptySteps => "the scenario declares no step at steps".to_string(),
            Self::EmptyList { field } => format!("empty list at {field}"),
            Self::DeterminismMismatch { field, twin } => {
                format!("{field} disagrees with the top-level {twin}")
            }
            Self::InvalidId { field } => format!(
                "id at {field} is empty, is '.' or '..', or uses characters outside [A-Za-z0-9_.-]"
            ),
            Self::DuplicateId { kind, id, field } => {
                format!("duplicate {kind} id {id:?} at {field}")
            }
            Self::UndeclaredReference { kind, id, field } => {
                format!("undeclared {kind} {id:?} at {field}")
            }
            Self::CapabilityNotHeld {
                field,
                agent,
                capability,
            } => format!(
                "agent {agent:?} does not hold capability {capability:?} at this point of the schedule at {field}"
            ),
            Self::NoCapability {
                field,
                agent,
                server,
            } => format!("agent {agent:?} holds no capability for server {server:?} at {field}"),
            Self::AmbiguousCapability {
                field,
                agent,
                server,
            } => format!(
                "agent {agent:?} holds several capabilities for server {server:?} at {field}"
            ),
            Self::ZeroBudget { field } => format!("zero-invocation budget at {field}"),
            Self::OutOfRange { field, rule } => format!("value out of range at {field}: {rule}"),
            Self::BadClockStart { field, reason } => {
                format!("clock start at {field} is not strict RFC 3339 UTC: {reason}")
            }
            Self::SingleAgentScheduler { count } => format!(
                "scheduler single-agent-v1 at determinism.scheduler cannot run {count} agents"
            ),
            Self::ProviderDependency { field, marker } => {
                format!("model at {field} depends on a live provider (marker {marker:?})")
            }
            Self::UnrecordedModel { field } => {
                format!("model at {field} is not a recorded model")
            }
            Self::SecretKeyName { field, marker } => {
                format!("inline secret: key name at {field} carries the marker {marker:?}")
            }
            Self::InlineSecret { field, marker } => format!(
                "inline secret: value at {field} carries a credential (marker {marker:?}); value not shown"
            ),
            Self::IncompleteWorld { field } => {
                format!("the scenario declares a world but {field} is missing")
            }
            Self::WorldRequired { field, action } => {
                format!("{action} step at {field} needs a world")
            }
            Self::NoWorld { steps } => format!(
                "the scenario declares no world (no [[nodes]], [[kernels]], [[servers]], [[grants]] or agent kernel), so none of its {steps} step(s) can be dispatched"
            ),
            Self::MessageSource {
                field,
                step,
                reason,
            } => format!(
                "{field} names step {step:?}, which a message cannot forward: {reason}"
            ),
            Self::KeyNotAllowed { field, context } => {
                format!("key {field} does not apply here ({context})")
            }
            Self::MissingExpectVerdict { field } => {
                format!("call step has no expect_verdict at {field}")
            }
            Self::ExpectVerdictNotCall { field, action } => {
                format!("expect_verdict at {field} is set on a {action} step")
            }
            Self::FixtureMissing { field, folder } => {
                format!("fixtures folder {folder:?} at {field} does not exist next to the scenario")
            }
            Self::FixtureOutsideScenario { field, entry: None } => {
                format!("fixtures folder at {field} is absolute or leaves the scenario's folder")
            }
            Self::FixtureOutsideScenario {
                field,
                entry: Some(entry),
            } => format!(
                "fixture {entry:?} at {field} resolves outside the scenario's folder through a symbolic link"
            ),
            Self::FixtureUnreadable {
                field,
                entry,
                reason,
            } => format!("fixture {entry:?} at {field} cannot be seeded: {reason}"),
            Self::GuardConfig { field, reason } => {
                format!("guard configuration at {field} refused by the kernel: {reason}")
            }
            Self::Canonical(err) => format!("cannot print canonical JSON: {err}"),
            Self::Bundle { path, cause } => format!("bundle {path}: {cause}"),
            Self::BundleIo { path, cause } => {
                format!("cannot write bundle {path}: {cause}; the previous bundle is kept")
            }
            Self::AdversaryParam { field, reason } => {
                format!("adversary parameter {field} refused: {reason}")
            }
            Self::EmptyPopulation { field } => {
                format!("adversary population at {field} would have no member")
            }
            Self::MixedPopulation {
                population,
                first,
                other,
            } => format!("population {population:?} mixes classes {first} and {other}"),
            Self::NoAdversaries => {
                "the scenario declares no population at adversaries".to_string()
            }
            Self::Evaluation { cause } => format!("adversary evaluation failed: {cause}"),
            Self::Output { path, cause } => format!("cannot write {path}: {cause}"),
            Self::PromotionGate { clause } => format!("promotion gate is shut: {clause}"),
            Self::UnknownStep { step } => {
                format!("step {step:?} is not a call step the adversaries act on")
            }
        }
    }

    /// How to fix it; the second half of the message and the CLI's `help:` line.
    pub fn help(&self) -> String {
        match self {
            Self::Unreadable { .. } => "check the path and that the file is readable".into(),
            Self::Syntax { .. } => "fix the TOML syntax at that position".into(),
            Self::UnknownKey { .. } => {
                "remove the key or correct its spelling; docs/scenario-schema.md lists every key"
                    .into()
            }
            Self::MissingKey { .. } => "add the key; docs/scenario-schema.md describes it".into(),
            Self::WrongType { expected, .. } => format!("write {expected} there"),
            Self::UnsupportedSchemaVersion { .. } => {
                "set schema_version = \"chio.arena.scenario/v1\"".into()
            }
            Self::UnsupportedScheduler { .. } => {
                "use scheduler = \"single-agent-v1\" or \"deterministic-multi-v1\"".into()
            }
            Self::UnsupportedLocale { .. } => "set locale = \"C\"".into(),
            Self::UnsupportedValue { allowed, .. } => format!("use one of: {allowed}"),
            Self::EmptyAgents => "declare at least one [[agents]] table".into(),
            Self::EmptySteps => "declare at least one [[steps]] table".into(),
            Self::EmptyList { .. } => "list at least one entry or remove the key".into(),
            Self::DeterminismMismatch { twin, .. } => {
                format!("make the [determinism] copy equal to {twin} or remove it")
            }
            Self::InvalidId { .. } => {
                "use only letters, digits, '_', '.' and '-' (at least one character, not '.' or '..')".into()
            }
            Self::DuplicateId { kind, .. } => format!("give each {kind} a unique id"),
            Self::UndeclaredReference { kind, .. } => {
                format!("declare the {kind} or correct the reference")
            }
            Self::CapabilityNotHeld { .. } => {
                "delegate only a grant issued to the agent or a delegation handed to it by an earlier step".into()
            }
            Self::NoCapability { .. } => {
                "add a grant for that server or name the presented capability with `capability`"
                    .into()
            }
            Self::AmbiguousCapability { .. } => {
                "name the presented capability with `capability`".into()
            }
            Self::ZeroBudget { .. } => "set max_invocations to 1 or more".into(),
            Self::OutOfRange { rule, .. } => format!("use a value where {rule}"),
            Self::BadClockStart { .. } => {
                "write the instant as YYYY-MM-DDTHH:MM:SS[.fraction]Z, for example 2026-10-12T09:00:00.000Z".into()
            }
            Self::SingleAgentScheduler { .. } => {
                "use scheduler = \"deterministic-multi-v1\" or keep one agent".into()
            }
            Self::ProviderDependency { .. } | Self::UnrecordedModel { .. } => {
                "use a recorded model such as model = \"recorded:<name>\" so the scenario replays without a live model".into()
            }
            Self::SecretKeyName { .. } | Self::InlineSecret { .. } => {
                "remove the credential from the scenario; arena runs use derived arena keys".into()
            }
            Self::IncompleteWorld { .. } => {
                "declare [[nodes]], [[kernels]], [[servers]] and each agent's kernel, or none of them".into()
            }
            Self::WorldRequired { .. } => {
                "declare the world (nodes, kernels, servers, grants) or remove the step".into()
            }
            Self::NoWorld { .. } => {
                "add [[nodes]], [[kernels]] (each with a node), [[servers]] (each with a kernel), [[grants]] for the calls, and kernel = \"...\" on every agent; chio arena validate checks the scenario as it is".into()
            }
            Self::MessageSource { .. } => {
                "name an earlier call step of the message's own agent, or send literal content".into()
            }
            Self::KeyNotAllowed { .. } => "remove the key".into(),
            Self::MissingExpectVerdict { .. } => {
                "add expect_verdict = \"allow\", \"deny\" or \"rewrite\"".into()
            }
            Self::ExpectVerdictNotCall { .. } => {
                "remove expect_verdict; only call steps expect a verdict".into()
            }
            Self::FixtureMissing { .. } => {
                "create the folder next to the scenario file or correct the path".into()
            }
            Self::FixtureOutsideScenario { .. } => {
                "keep fixtures in a folder below the scenario's folder, without '..' and without symbolic links that lead out of it".into()
            }
            Self::FixtureUnreadable { .. } => {
                "make every fixture a readable UTF-8 text file or folder with a UTF-8 name, and remove dangling or looping links".into()
            }
            Self::GuardConfig { .. } => {
                "fix the guard's [guards.config] table; docs/scenario-schema.md lists each kind's keys".into()
            }
            Self::Canonical(_) => "report this as a bug: validated scenarios always print".into(),
            Self::Bundle { .. } => {
                "pass an empty or new --out folder, or a folder a run wrote".into()
            }
            Self::BundleIo { .. } => {
                "check the folder's permissions and free space, or pass another --out".into()
            }
            Self::AdversaryParam { .. } => {
                "fix the parameter; docs/scenario-schema.md lists each class's parameters".into()
            }
            Self::EmptyPopulation { .. } => {
                "list at least one value, or remove the parameter to use its default".into()
            }
            Self::MixedPopulation { .. } => {
                "keep one class per population; declare another [[adversaries]] block for the other class".into()
            }
            Self::NoAdversaries => {
                "declare at least one [[adversaries]] block with class, population and seed_ref".into()
            }
            Self::Evaluation { .. } => {
                "check the scenario's world and fixtures and run again".into()
            }
            Self::Output { .. } => {
                "check the folder's permissions and free space, or pass another --out".into()
            }
            Self::PromotionGate { .. } => {
                "set CHIO_BLESS=1 and BLESS_REASON=arena:<scenario-id>, outside CI, to promote fixtures".into()
            }
            Self::UnknownStep { .. } => {
                "name a call step the scenario expects to be allowed (see chio arena validate)".into()
            }
        }
    }
}
