//! The arena's one error type.
//!
//! Every refusal the scenario loader can make is its own [`ArenaError`]
//! variant, carrying the field path it concerns (such as `steps[3].agent`),
//! a stable code (`CHIO-SCENARIO-...`), its
//! [`ErrorClass`](crate::diagnostic::ErrorClass) and a help text
//! saying how to fix it, all declared in one row of the table below
//! ([`crate::diagnostic`] owns the table's shape). The CLI renders those
//! parts as an `error[CODE]` block; this module only owns their wording. No
//! variant ever carries a secret value: the inline secret variants name the
//! field and the marker, never what was found, and a value is quoted only
//! after the inline-secret scan has passed the whole document.

use chio_kernel::canonical::CanonicalError;

use crate::diagnostic::error_table;

#[macro_use]
mod world_rows;

with_world_rows! { error_table! {
    /// Everything that can go wrong while loading, validating or projecting a
    /// scenario.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum ArenaError;
    /// Every code an [`ArenaError`] can carry, in declaration order, so the
    /// documentation can be checked for completeness.
    codes ERROR_CODES;
    /// Every code with its class, so the exit code `docs/errors.md` gives
    /// each can be checked.
    classes ERROR_CLASSES;

    /// The scenario file could not be read from disk.
    Unreadable {
        /// The path as the user gave it.
        path: String,
        /// Why: the operating system's reason, no regular file, or over
        /// the bound.
        reason: String,
    } => "CHIO-SCENARIO-UNREADABLE", Input, at: None,
        summary: format!("cannot read scenario file {path:?}: {reason}"),
        help: "pass the path of a readable regular file of at most 1 GiB (a link to one is followed; a named pipe or a device is refused)";
    /// The text is not TOML.
    Syntax {
        /// 1-based line of the first syntax error.
        line: usize,
        /// 1-based column of the first syntax error.
        column: usize,
        /// The parser's reason, without the offending source line.
        reason: String,
    } => "CHIO-SCENARIO-SYNTAX", Input, at: None,
        summary: format!("scenario is not valid TOML at line {line}, column {column}: {reason}"),
        help: "fix the TOML syntax at that position";
    /// A key the schema does not define (every table is closed).
    UnknownKey {
        /// Path of the unknown key.
        field: String,
    } => "CHIO-SCENARIO-UNKNOWN-KEY", Input, at: Some(field),
        summary: format!("unknown key at {field}"),
        help: "remove the key or correct its spelling; docs/scenario-schema.md lists every key";
    /// A required key is absent.
    MissingKey {
        /// Path of the missing key.
        field: String,
    } => "CHIO-SCENARIO-MISSING-KEY", Input, at: Some(field),
        summary: format!("missing required key {field}"),
        help: "add the key; docs/scenario-schema.md describes it";
    /// A key holds a value of the wrong TOML type.
    WrongType {
        /// Path of the key.
        field: String,
        /// What the schema expects there.
        expected: String,
    } => "CHIO-SCENARIO-WRONG-TYPE", Input, at: Some(field),
        summary: format!("wrong type at {field}: expected {expected}"),
        help: format!("write {expected} there");
    /// `schema_version` is not one this build reads.
    UnsupportedSchemaVersion {
        /// Path of the key.
        field: String,
        /// The value found.
        value: String,
    } => "CHIO-SCENARIO-SCHEMA-VERSION", Input, at: Some(field),
        summary: format!("unsupported schema version {value:?} at {field}"),
        help: "set schema_version = \"chio.arena.scenario/v1\"";
    /// `determinism.scheduler` names no known scheduler.
    UnsupportedScheduler {
        /// Path of the key.
        field: String,
        /// The value found.
        value: String,
    } => "CHIO-SCENARIO-SCHEDULER", Input, at: Some(field),
        summary: format!("unsupported scheduler {value:?} at {field}"),
        help: "use scheduler = \"single-agent-v1\" or \"deterministic-multi-v1\"";
    /// `determinism.locale` is not `C`.
    UnsupportedLocale {
        /// Path of the key.
        field: String,
        /// The value found.
        value: String,
    } => "CHIO-SCENARIO-LOCALE", Input, at: Some(field),
        summary: format!("unsupported locale {value:?} at {field}"),
        help: "set locale = \"C\"";
    /// A closed set of words (action, verdict, kind, mode) got another word.
    UnsupportedValue {
        /// Path of the key.
        field: String,
        /// The value found.
        value: String,
        /// The accepted words, comma separated.
        allowed: &'static str,
    } => "CHIO-SCENARIO-UNSUPPORTED-VALUE", Input, at: Some(field),
        summary: format!("unsupported value {value:?} at {field}"),
        help: format!("use one of: {allowed}");
    /// The scenario declares no agent.
    EmptyAgents => "CHIO-SCENARIO-EMPTY-AGENTS", Input, at: Some("agents"),
        summary: "the scenario declares no agent at agents".to_string(),
        help: "declare at least one [[agents]] table";
    /// The scenario declares no step.
    EmptySteps => "CHIO-SCENARIO-EMPTY-STEPS", Input, at: Some("steps"),
        summary: "the scenario declares no step at steps".to_string(),
        help: "declare at least one [[steps]] table";
    /// A list that must hold at least one entry is empty.
    EmptyList {
        /// Path of the list.
        field: String,
    } => "CHIO-SCENARIO-EMPTY-LIST", Input, at: Some(field),
        summary: format!("empty list at {field}"),
        help: "list at least one entry or remove the key";
    /// A `[determinism]` copy disagrees with its top-level twin.
    DeterminismMismatch {
        /// Path of the copy, such as `determinism.rng_seed`.
        field: String,
        /// Path of the top-level twin.
        twin: &'static str,
    } => "CHIO-SCENARIO-DETERMINISM-MISMATCH", Input, at: Some(field),
        summary: format!("{field} disagrees with the top-level {twin}"),
        help: format!("make the [determinism] copy equal to {twin} or remove it");
    /// An id uses characters outside `[A-Za-z0-9_.-]` or is empty.
    InvalidId {
        /// Path of the id.
        field: String,
        /// The id as written. Ids are quoted only after the inline-secret
        /// scan has passed every value of the document.
        value: String,
    } => "CHIO-SCENARIO-INVALID-ID", Input, at: Some(field),
        summary: match value.char_indices().nth(crate::scenario::validate::MAX_ID_BYTES) {
            Some(_) => format!(
                "id {:?}... at {field} is {} bytes long; an id is at most {}",
                value.chars().take(32).collect::<String>(),
                value.len(),
                crate::scenario::validate::MAX_ID_BYTES,
            ),
            None if value.len() > crate::scenario::validate::MAX_ID_BYTES => format!(
                "id at {field} is {} bytes long; an id is at most {}",
                value.len(),
                crate::scenario::validate::MAX_ID_BYTES,
            ),
            None => format!(
                "id {value:?} at {field} is empty, is '.' or '..', or uses characters outside [A-Za-z0-9_.-]"
            ),
        },
        help: "use only letters, digits, '_', '.' and '-' (1 to 128 characters, not '.' or '..')";
    /// Two declarations of one kind share an id.
    DuplicateId {
        /// What kind of thing is duplicated (agent, step, guard...).
        kind: &'static str,
        /// The repeated id.
        id: String,
        /// Path of the second occurrence.
        field: String,
    } => "CHIO-SCENARIO-DUPLICATE-ID", Input, at: Some(field),
        summary: format!("duplicate {kind} id {id:?} at {field}"),
        help: format!("give each {kind} a unique id");
    /// A reference names something the scenario does not declare.
    UndeclaredReference {
        /// What kind of thing is referenced.
        kind: &'static str,
        /// The id that does not resolve.
        id: String,
        /// Path of the reference.
        field: String,
    } => "CHIO-SCENARIO-UNDECLARED-REFERENCE", Input, at: Some(field),
        summary: format!("undeclared {kind} {id:?} at {field}"),
        help: format!("declare the {kind} or correct the reference");
    /// A delegate step hands on a capability its agent does not hold yet.
    CapabilityNotHeld {
        /// Path of the `capability` key.
        field: String,
        /// The delegating agent.
        agent: String,
        /// The capability it names.
        capability: String,
    } => "CHIO-SCENARIO-CAPABILITY-NOT-HELD", Input, at: Some(field),
        summary: format!(
            "agent {agent:?} does not hold capability {capability:?} at this point of the schedule at {field}"
        ),
        help: "delegate only a grant issued to the agent or a delegation handed to it by an earlier step";
    /// A call names no capability and its agent holds none for the server.
    NoCapability {
        /// Path of the step.
        field: String,
        /// The calling agent.
        agent: String,
        /// The server called.
        server: String,
    } => "CHIO-SCENARIO-NO-CAPABILITY", Input, at: Some(field),
        summary: format!("agent {agent:?} holds no capability for server {server:?} at {field}"),
        help: "add a grant for that server or name the presented capability with `capability`";
    /// A call names no capability and its agent holds several for the server.
    AmbiguousCapability {
        /// Path of the step.
        field: String,
        /// The calling agent.
        agent: String,
        /// The server called.
        server: String,
    } => "CHIO-SCENARIO-AMBIGUOUS-CAPABILITY", Input, at: Some(field),
        summary: format!("agent {agent:?} holds several capabilities for server {server:?} at {field}"),
        help: "name the presented capability with `capability`";
    /// A grant, delegation or call names a tool its server does not
    /// declare.
    UnknownTool {
        /// Path of the tool name.
        field: String,
        /// The tool as written.
        tool: String,
        /// The server.
        server: String,
        /// The declared tool closest to it.
        closest: String,
    } => "CHIO-SCENARIO-UNKNOWN-TOOL", Input, at: Some(field),
        summary: format!("{field} names tool {tool:?}, which server {server:?} does not declare"),
        help: format!("did you mean {closest:?}? docs/scenario-schema.md lists the tools of each server kind");
    /// A call step's arguments fail its tool's input schema.
    ArgumentsRefused {
        /// Path of the arguments.
        field: String,
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The JSON pointer and keyword that fail (never the value).
        why: String,
    } => "CHIO-SCENARIO-ARGUMENTS-REFUSED", Input, at: Some(field),
        summary: format!("the arguments at {field} for {server}/{tool} {why}"),
        help: "give the arguments the tool's input schema requires; docs/scenario-schema.md lists each tool's required arguments";
    /// A tool a recorded server declares is malformed: its name breaks
    /// MCP's grammar, or a schema is not JSON, not an object, does not
    /// compile or refers outside itself.
    ToolDeclaration {
        /// Path of the key at fault, such as `servers[2].tools[0].input_schema`.
        field: String,
        /// What is wrong (never a value).
        reason: String,
    } => "CHIO-SCENARIO-TOOL-DECLARATION", Input, at: Some(field),
        summary: format!("the tool declared at {field} is refused: {reason}"),
        help: "fix the declaration as docs/scenario-schema.md, \"Declared tools\", describes (or import it again with chio import mcp)";
    /// A declared tool's definition does not digest to the digest it states.
    ToolDigest {
        /// Path of the `digest` key.
        field: String,
        /// Why, naming the tool and the digest its definition has.
        reason: String,
    } => "CHIO-SCENARIO-TOOL-DIGEST", Input, at: Some(field),
        summary: format!("{field} does not match: {reason}"),
        help: "compare the declaration with the server's current tools/list; state the digest of the definition you accept, or remove the key";
    /// A recorded server's answer cannot be matched as written.
    RecordedAnswer {
        /// Path of the answer's key at fault, such as `servers[2].answers[1].step`.
        field: String,
        /// What is wrong (never a value).
        reason: String,
    } => "CHIO-SCENARIO-RECORDED-ANSWER", Input, at: Some(field),
        summary: format!("the recorded answer at {field} is refused: {reason}"),
        help: "an answer names a call step of this server (step), or an agent, a declared tool and arguments; docs/scenario-schema.md, \"Recorded servers\", shows both";
    /// An argument or answer object that names a reference (`from_step`,
    /// `literal`, `fixture`, `null`) but is not one the value grammar reads.
    ValueReference {
        /// Path of the object, its JSON pointer appended.
        field: String,
        /// What is wrong.
        problem: &'static str,
    } => "CHIO-SCENARIO-VALUE-REFERENCE", Input, at: Some(field),
        summary: format!("{field} is not a reference the value grammar reads: {problem}"),
        help: "write { from_step = \"<step>\", pointer = \"/json/pointer\" }, { null = true } for null, or { literal = ... } for an object that should be sent as written; docs/scenario-schema.md, \"Values\"";
    /// A reference to a step whose value the referring step cannot have.
    ValueSource {
        /// Path of the reference, its JSON pointer appended.
        field: String,
        /// The step it names.
        step: String,
        /// Which condition fails.
        reason: &'static str,
    } => "CHIO-SCENARIO-VALUE-SOURCE", Input, at: Some(field),
        summary: format!("{field} takes its value from step {step:?}, which it cannot read: {reason}"),
        help: "name an earlier call step of the same agent; docs/scenario-schema.md, \"Values\"";
    /// A `{ fixture = ... }` value whose file cannot be sealed.
    SealedFixture {
        /// Path of the reference, its JSON pointer appended.
        field: String,
        /// The file as the scenario writes it.
        path: String,
        /// What is wrong, never what the file holds.
        problem: String,
    } => "CHIO-SCENARIO-VALUE-FIXTURE", Input, at: Some(field),
        summary: format!("{field} reads its value from fixture {path:?}, which cannot be sealed: {problem}"),
        help: "name a UTF-8 text file of 8 to 65536 characters below the scenario's folder, outside every server's fixtures folder, with no control characters but one final newline; docs/scenario-schema.md, \"Values\"";
    /// A hand-over's schema uses a keyword or form outside the kernel's subset.
    HandOverSchema {
        /// Path of the schema, the offending part's JSON pointer appended.
        field: String,
        /// What is wrong, naming the keyword.
        problem: String,
    } => "CHIO-SCENARIO-HANDOVER-SCHEMA", Input, at: Some(field),
        summary: format!("{field} is not a hand-over schema: {problem}"),
        help: "use only enum, integer, string (with maxLength), array (with maxItems) and closed objects; docs/scenario-schema.md, \"Hand-overs\"";
    /// A hand-over to an agent that is not a planner.
    HandOverReceiver {
        /// Path of the `to` key.
        field: String,
        /// The receiving agent.
        agent: String,
    } => "CHIO-SCENARIO-HANDOVER-RECEIVER", Input, at: Some(field),
        summary: format!("{field} hands a value over to agent {agent:?}, which is not a planner"),
        help: "declare the receiver planner = true, or send an ordinary message (content or from_step)";
    /// An agent declared both quarantined and planner.
    AgentRoles {
        /// Path of the agent.
        field: String,
    } => "CHIO-SCENARIO-AGENT-ROLES", Input, at: Some(field),
        summary: format!("{field} is declared both quarantined and planner"),
        help: "a quarantined reader reads untrusted content and a planner acts on hand-overs: give the two roles to two agents";
    /// A budget allows zero invocations.
    ZeroBudget {
        /// Path of `max_invocations`.
        field: String,
    } => "CHIO-SCENARIO-ZERO-BUDGET", Input, at: Some(field),
        summary: format!("zero-invocation budget at {field}"),
        help: "set max_invocations to 1 or more";
    /// A budget that sets neither `max_invocations` nor `limit`.
    BudgetWithoutLimit {
        /// Path of the budget.
        field: String,
    } => "CHIO-SCENARIO-BUDGET-NO-LIMIT", Input, at: Some(field),
        summary: format!("budget at {field} limits nothing: it sets neither max_invocations nor limit"),
        help: "add max_invocations = N, or amount, currency and limit = \"2000.00\" for a monetary budget";
    /// A monetary limit that is not a positive exact decimal string.
    BudgetLimit {
        /// Path of `limit`.
        field: String,
        /// What is wrong with it.
        reason: String,
    } => "CHIO-SCENARIO-BUDGET-LIMIT", Input, at: Some(field),
        summary: format!("monetary limit at {field} {reason}"),
        help: "write the limit as a positive decimal string such as \"2000.00\"; its decimal places are the budget's minor unit";
    /// A currency code that is empty or not letters and digits.
    BudgetCurrency {
        /// Path of `currency`.
        field: String,
    } => "CHIO-SCENARIO-BUDGET-CURRENCY", Input, at: Some(field),
        summary: format!("currency at {field} is not a code of 1 to 12 ASCII letters and digits"),
        help: "write a currency code such as \"EUR\"";
    /// A budget naming a tool its server does not declare, so it would
    /// never count a call.
    BudgetUnserved {
        /// Path of the budget's `tool`.
        field: String,
        /// The tool as written.
        tool: String,
        /// The server.
        server: String,
        /// The tools the server declares, in name order.
        tools: String,
    } => "CHIO-SCENARIO-BUDGET-UNSERVED", Input, at: Some(field),
        summary: format!("{field} names tool {tool:?}, which server {server:?} does not declare (it declares {tools}): the budget would never count a call"),
        help: "name a tool the server declares, exactly as it declares it; docs/scenario-schema.md lists the tools of each server kind";
    /// An amount or currency argument the tool's input schema cannot carry.
    BudgetArgument {
        /// Path of `amount` or `currency_argument`.
        field: String,
        /// The argument named.
        argument: String,
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// What the schema says of it.
        why: &'static str,
    } => "CHIO-SCENARIO-BUDGET-ARGUMENT", Input, at: Some(field),
        summary: format!("{field} names argument {argument:?}, which the input schema of {server}/{tool} {why}"),
        help: "name an argument the tool's input schema admits (a string or a number for amount, a string for currency_argument); docs/scenario-schema.md lists each tool's arguments";
    /// A limit of a monetary scope constraint that is not a whole number of
    /// minor units of at least 1.
    MonetaryAmount {
        /// Path of `max_per_invocation` or `max_total`.
        field: String,
        /// What was found instead (a kind, never the value).
        found: &'static str,
    } => "CHIO-SCENARIO-MONETARY-AMOUNT", Input, at: Some(field),
        summary: format!("monetary limit at {field} is {found}, not a whole number of minor units of at least 1"),
        help: "write the limit as a TOML integer in the currency's minor units, such as max_per_invocation = 50000 for 500.00 EUR (a [[budgets]] limit is a decimal string; this constraint is the kernel's and counts minor units)";
    /// A monetary scope constraint's argument that a tool the grant covers
    /// cannot carry as a whole number.
    MonetaryArgument {
        /// Path of the constraint's `argument`.
        field: String,
        /// The argument named.
        argument: String,
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// What the schema says of it.
        why: &'static str,
    } => "CHIO-SCENARIO-MONETARY-ARGUMENT", Input, at: Some(field),
        summary: format!("{field} names argument {argument:?}, which the input schema of {server}/{tool} {why}"),
        help: "name an argument every tool the grant covers declares as an integer (or a number), or narrow the grant's tools to those that carry it";
    /// Entries sharing a monetary budget id that count differently.
    BudgetShared {
        /// Path of the later entry's `id`.
        field: String,
        /// The shared id.
        id: String,
    } => "CHIO-SCENARIO-BUDGET-SHARED", Input, at: Some(field),
        summary: format!("budget id {id:?} at {field} is shared with an earlier entry that counts differently"),
        help: "entries sharing an id share one total: give them the same agent or capability, currency, limit and window_ms, or another id";
    /// A number is outside its documented range.
    OutOfRange {
        /// Path of the number.
        field: String,
        /// The range it must satisfy.
        rule: &'static str,
    } => "CHIO-SCENARIO-OUT-OF-RANGE", Input, at: Some(field),
        summary: format!("value out of range at {field}: {rule}"),
        help: format!("use a value where {rule}");
    /// `virtual_clock_start` is not strict RFC 3339 UTC.
    BadClockStart {
        /// Path of the key.
        field: String,
        /// What is wrong with the text.
        reason: &'static str,
    } => "CHIO-SCENARIO-CLOCK-START", Input, at: Some(field),
        summary: format!("clock start at {field} is not strict RFC 3339 UTC: {reason}"),
        help: "write the instant as YYYY-MM-DDTHH:MM:SS[.fraction]Z, for example 2026-10-12T09:00:00.000Z";
    /// `single-agent-v1` was asked to schedule several agents.
    SingleAgentScheduler {
        /// How many agents the scenario declares.
        count: usize,
    } => "CHIO-SCENARIO-SINGLE-AGENT", Input, at: Some("determinism.scheduler"),
        summary: format!("scheduler single-agent-v1 at determinism.scheduler cannot run {count} agents"),
        help: "use scheduler = \"deterministic-multi-v1\" or keep one agent";
    /// An agent's model names a live provider, so the run could not replay.
    ProviderDependency {
        /// Path of the `model` key.
        field: String,
        /// The provider marker found.
        marker: &'static str,
    } => "CHIO-SCENARIO-PROVIDER-DEPENDENCY", Input, at: Some(field),
        summary: format!("model at {field} depends on a live provider (marker {marker:?})"),
        help: RECORDED_MODEL_HELP;
    /// An agent's model is not a recorded one.
    UnrecordedModel {
        /// Path of the `model` key.
        field: String,
    } => "CHIO-SCENARIO-UNRECORDED-MODEL", Input, at: Some(field),
        summary: format!("model at {field} is not a recorded model"),
        help: RECORDED_MODEL_HELP;
    /// A secret marker is used as a key name.
    SecretKeyName {
        /// Path of the key.
        field: String,
        /// The marker the key name carries.
        marker: &'static str,
    } => "CHIO-SCENARIO-SECRET-KEY-NAME", Input, at: Some(field),
        summary: format!("inline secret: key name at {field} carries the marker {marker:?}"),
        help: INLINE_SECRET_HELP;
    /// A value carries a credential.
    InlineSecret {
        /// Path of the value.
        field: String,
        /// The marker whose credential shape matched.
        marker: &'static str,
    } => "CHIO-SCENARIO-INLINE-SECRET", Input, at: Some(field),
        summary: format!(
            "inline secret: value at {field} carries a credential (marker {marker:?}); value not shown"
        ),
        help: INLINE_SECRET_HELP;
} }

/// The help shared by the two refusals of a model that would not replay.
const RECORDED_MODEL_HELP: &str = "use a recorded model such as model = \"recorded:<name>\" so the scenario replays without a live model";

/// The help shared by the two inline-secret refusals.
const INLINE_SECRET_HELP: &str =
    "remove the credential from the scenario; arena runs use derived arena keys";
