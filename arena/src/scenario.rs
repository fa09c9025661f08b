//! Loading and validating a scenario.
//!
//! [`load_scenario`] reads a file, [`parse_scenario`] takes text and the
//! folder fixtures are resolved against. Both run the same pipeline, which
//! stops at the first refusal and reads nothing outside the scenario's
//! folder (fixture folders are resolved and confined as [`crate::fixtures`]
//! describes):
//!
//! 1. TOML syntax;
//! 2. inline secrets over the whole tree, keys and every string value
//!    including the title ([`crate::secrets`], built on the kernel's one
//!    credential detector), before any other message could quote a value;
//! 3. the closed schema of [`crate::model`] (unknown keys, missing keys,
//!    wrong types);
//! 4. the determinism contract (schema version, scheduler, locale, tick,
//!    `[determinism]` copies, clock start, seed range);
//! 5. ids, duplicates and agents' models;
//! 6. the world: nodes, kernels, servers (each fixture folder read
//!    completely), guards (their configuration is built by the kernel's
//!    guard builder), grants, budgets;
//! 7. steps: per-action keys, references, then the schedule, walked in
//!    execution order to check that each delegation hands on a capability
//!    its agent holds at that point and to resolve each call's capability,
//!    and that each message forwards an earlier call step of its sender;
//! 8. adversaries.
//!
//! A scenario without a world (no nodes, kernels, servers, grants or agent
//! kernels) validates as the seed's example does, and its steps may name any
//! server; once any world key is present the world must be complete.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chio_kernel::guards::{GuardKind, GuardMode, GuardSpec};
use chio_kernel::label::{Integrity, Label};
use serde::Serialize;

use crate::clock::{VirtualClock, DEFAULT_TICK_MS};
use crate::error::ArenaError;
use crate::fixtures::{self, FixtureFiles};
use crate::model::{GrantDecl, ScenarioFile, ServerDecl, StepDecl};
use crate::rng::ArenaRng;
use crate::scheduler::{
    DeterministicScheduler, ScheduleInput, ScheduledAction, SchedulerKind, MAX_INSTANT_MS,
    MAX_OFFSET_MS,
};
use crate::secrets;
use crate::witness::DeterminismWitness;

/// The only schema this build reads.
pub const SCENARIO_SCHEMA_VERSION: &str = "chio.arena.scenario/v1";
/// Where a workspace server is mounted when `root` is absent.
pub const DEFAULT_WORKSPACE_ROOT: &str = "/workspace";
/// A grant's validity when `expires_after_ms` is absent: one virtual day.
pub const DEFAULT_GRANT_EXPIRY_MS: u64 = 86_400_000;
/// A capability's share when `share_bps` is absent: the whole allowance.
pub const DEFAULT_SHARE_BPS: u64 = 10_000;

const GUARD_KINDS: &str = "forbidden-path, path-allowlist, behavioral-sequence, information-flow, integrity, prompt-injection, approval, secret-redaction";
const ADVERSARY_CLASSES: &[&str] = &[
    "prompt-injection",
    "capability-overrequest",
    "replay-attempt",
    "scope-escape",
];
/// Provider names whose presence in a model string means a live dependency.
const PROVIDER_MARKERS: &[&str] = &[
    "openai",
    "anthropic",
    "claude",
    "gpt-",
    "gemini",
    "mistral",
    "ollama",
    "cohere",
    "bedrock",
    "vertex",
    "azure",
    "huggingface",
    "http://",
    "https://",
    "live:",
];

/// The kind of a tool server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerKind {
    /// A simulated filesystem seeded from fixtures.
    Workspace,
    /// A publish sink.
    Publish,
    /// A deterministic test runner.
    TestRunner,
    /// An HTTP sink.
    Http,
}

impl ServerKind {
    /// Parses the kind as written in the scenario.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "workspace" => Some(Self::Workspace),
            "publish" => Some(Self::Publish),
            "test-runner" => Some(Self::TestRunner),
            "http" => Some(Self::Http),
            _ => None,
        }
    }
}

/// The verdict a call step expects, in the scenario alphabet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpectedVerdict {
    /// A plain allow.
    Allow,
    /// A deny or a pending approval.
    Deny,
    /// A sanitized allow.
    Rewrite,
}

impl ExpectedVerdict {
    /// Parses the verdict as written in the scenario.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "allow" => Some(Self::Allow),
            "deny" => Some(Self::Deny),
            "rewrite" => Some(Self::Rewrite),
            _ => None,
        }
    }

    /// The verdict as written in the scenario.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::Rewrite => "rewrite",
        }
    }
}

/// A tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallAction {
    /// The server called.
    pub server: String,
    /// The tool called.
    pub tool: String,
    /// The arguments as a JSON object, ready to hash and send.
    pub arguments: serde_json::Value,
    /// What the kernel is expected to answer.
    pub expect_verdict: ExpectedVerdict,
    /// The capability presented: as written, or resolved to the agent's only
    /// capability for the server; `None` only in a scenario without a world.
    pub capability: Option<String>,
}

/// An attenuated hand-over of a capability.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DelegateAction {
    /// The parent capability the delegator holds.
    pub capability: String,
    /// The receiving agent.
    pub to: String,
    /// The id of the new capability.
    pub delegation: String,
    /// Attenuated tools; inherited when absent.
    pub tools: Option<Vec<String>>,
    /// Attenuated path prefix; inherited when absent.
    pub path_prefix: Option<String>,
    /// Validity in milliseconds after the delegation is evaluated; inherited when absent.
    pub expires_after_ms: Option<u64>,
    /// Attenuated invocation cap; inherited when absent.
    pub max_invocations: Option<u64>,
    /// Share of the parent's allowance; the whole parent share when absent.
    pub share_bps: Option<u64>,
    /// Whether the delegation is expected to be done or refused.
    #[serde(skip_serializing_if = "StepExpectation::is_done")]
    pub expect: StepExpectation,
}

/// What a delegate or revoke step expects of itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepExpectation {
    /// The step takes effect (the default).
    #[default]
    Done,
    /// The step is refused (an unauthorised revocation, a delegation of a
    /// capability the agent does not hold or that widens its parent).
    Refused,
}

impl StepExpectation {
    /// The word a bundle and a table print.
    pub fn as_str(self) -> &'static str {
        match self {
            StepExpectation::Done => "done",
            StepExpectation::Refused => "refused",
        }
    }

    /// Whether this is the default, so fingerprints of steps that do not
    /// declare an expectation keep their bytes.
    pub fn is_done(&self) -> bool {
        *self == StepExpectation::Done
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "done" => Some(StepExpectation::Done),
            "refused" => Some(StepExpectation::Refused),
            _ => None,
        }
    }
}

impl DelegateAction {
    /// What the delegator narrows, as the kernel applies it, for a
    /// delegation evaluated at `now_ms` (Unix milliseconds of virtual time):
    /// `expires_after_ms` counts from that instant and the kernel's expiry
    /// is in whole seconds. Every runner (the run driver, the adversary
    /// evaluator) builds the child's attenuation here, so they agree.
    pub fn attenuation(&self, now_ms: u64) -> chio_kernel::token::Attenuation {
        chio_kernel::token::Attenuation {
            tools: self.tools.clone(),
            path_prefix: self.path_prefix.clone(),
            not_before_ms: None,
            expires_at_ms: self.expires_after_ms.map(|ms| now_ms.saturating_add(ms)),
            max_invocations: self.max_invocations,
            // Validation keeps share_bps within 1..=10,000.
            share_bps: self.share_bps.and_then(|b| u32::try_from(b).ok()),
        }
    }
}

/// A revocation of a capability or delegation link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RevokeAction {
    /// The grant or delegation revoked.
    pub target: String,
    /// Whether the issuing authority revokes (`by = "authority"`); otherwise
    /// the step's agent does, and must hold an ancestor of the target.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_authority: bool,
    /// Whether the revocation is expected to be done or refused.
    #[serde(skip_serializing_if = "StepExpectation::is_done")]
    pub expect: StepExpectation,
}

/// Content one agent sends another. The receiver's principal and session
/// take the join of the content's labels: what the sender's principal holds
/// when it sends, plus the label of a forwarded output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MessageAction {
    /// The receiving agent.
    pub to: String,
    /// Literal text, when the message says something of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The earlier call step of the sender whose output is forwarded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_step: Option<String>,
}

/// A move of the virtual clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdvanceAction {
    /// Milliseconds added for every later action.
    pub advance_ms: u64,
}

/// A step's action, typed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum Action {
    /// A tool call with an expected verdict.
    Call(CallAction),
    /// A delegation.
    Delegate(DelegateAction),
    /// A revocation.
    Revoke(RevokeAction),
    /// A message from the step's agent to another agent.
    Message(MessageAction),
    /// A clock advance.
    Advance(AdvanceAction),
}

/// A validated scenario. Only [`load_scenario`] and [`parse_scenario`] make one.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The declarations as written.
    file: ScenarioFile,
    /// The folder fixture paths are relative to.
    base_dir: PathBuf,
    /// The parsed scheduler.
    scheduler: SchedulerKind,
    /// The tick in milliseconds.
    tick_ms: u64,
    /// The clock at the start instant.
    clock: VirtualClock,
    /// Whether the scenario declares a world.
    has_world: bool,
    /// One typed action per step, in declaration order.
    actions: Vec<Action>,
    /// The actions in execution order with their times.
    schedule: Vec<ScheduledAction>,
    /// The fixture files read and checked at load, by workspace server id.
    fixtures: BTreeMap<String, FixtureFiles>,
}

impl Scenario {
    /// The declarations exactly as written.
    pub fn file(&self) -> &ScenarioFile {
        &self.file
    }

    /// The scenario id.
    pub fn id(&self) -> &str {
        &self.file.id
    }

    /// The scenario title.
    pub fn title(&self) -> &str {
        &self.file.title
    }

    /// The folder fixture paths resolve against.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    /// The scheduler the scenario runs under.
    pub fn scheduler(&self) -> SchedulerKind {
        self.scheduler
    }

    /// Milliseconds between default step instants.
    pub fn tick_ms(&self) -> u64 {
        self.tick_ms
    }

    /// A clock at the scenario's start instant, with the scenario's tick.
    pub fn clock(&self) -> VirtualClock {
        self.clock.clone()
    }

    /// The scenario's random streams.
    pub fn rng(&self) -> ArenaRng {
        ArenaRng::new(self.file.rng_seed)
    }

    /// Whether the scenario declares the world it runs in.
    pub fn has_world(&self) -> bool {
        self.has_world
    }

    /// Refuses a scenario without a world, saying that no step can be
    /// dispatched and naming the keys to add; a runner calls this before
    /// dispatching or writing anything.
    pub fn require_world(&self) -> Result<(), ArenaError> {
        if self.has_world {
            Ok(())
        } else {
            Err(ArenaError::NoWorld {
                steps: self.file.steps.len(),
            })
        }
    }

    /// The substring a step's reason must contain (`expect_reason`), by
    /// declaration index.
    pub fn expect_reason(&self, step_index: usize) -> Option<&str> {
        self.file
            .steps
            .get(step_index)
            .and_then(|s| s.expect_reason.as_deref())
    }

    /// One typed action per step, in declaration order.
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }

    /// The actions in execution order, with scheduled and evaluation offsets.
    pub fn schedule(&self) -> &[ScheduledAction] {
        &self.schedule
    }

    /// The guards that declare a kind, as the kernel's data form, in declaration order.
    pub fn guard_specs(&self) -> Result<Vec<GuardSpec>, ArenaError> {
        let mut specs = Vec::new();
        for (index, guard) in self.file.guards.iter().enumerate() {
            if let Some(spec) = guard_spec(index, guard)? {
                specs.push(spec);
            }
        }
        Ok(specs)
    }

    /// The fixture files of each workspace server that declares a folder, by
    /// server id, as the loader read and checked them: a run seeds exactly
    /// these bytes and never reads the folder again.
    pub fn fixtures(&self) -> &BTreeMap<String, FixtureFiles> {
        &self.fixtures
    }

    /// The determinism witness: the projection replay depends on.
    pub fn determinism_witness(&self) -> DeterminismWitness {
        DeterminismWitness {
            scenario_id: self.file.id.clone(),
            schema_version: self.file.schema_version.clone(),
            rng_seed: self.file.rng_seed,
            virtual_clock_start: self.clock.format_start(),
            scheduler: self.scheduler.as_str().to_string(),
            locale: self.file.determinism.locale.clone(),
            agents: self.file.agents.iter().map(|a| a.id.clone()).collect(),
            steps: self.file.steps.iter().map(|s| s.id.clone()).collect(),
        }
    }
}

impl GrantDecl {
    /// Start of validity after the clock start, with the default applied.
    pub fn not_before(&self) -> u64 {
        self.not_before_ms.unwrap_or(0)
    }

    /// End of validity after the clock start, with the default applied.
    pub fn expires_after(&self) -> u64 {
        self.expires_after_ms.unwrap_or(DEFAULT_GRANT_EXPIRY_MS)
    }

    /// Share in basis points, with the default applied.
    pub fn share(&self) -> u64 {
        self.share_bps.unwrap_or(DEFAULT_SHARE_BPS)
    }
}

impl ServerDecl {
    /// The workspace mount point, with the default applied.
    pub fn root_or_default(&self) -> &str {
        self.root.as_deref().unwrap_or(DEFAULT_WORKSPACE_ROOT)
    }
}

/// Reads and validates a scenario file; fixtures resolve next to it.
pub fn load_scenario(path: impl AsRef<Path>) -> Result<Scenario, ArenaError> {
    load_scenario_with_bytes(path).map(|(scenario, _)| scenario)
}

/// Reads and validates a scenario file, returning the bytes it validated,
/// so a caller that records the file (a run's bundle) records exactly those
/// rather than reading the file a second time.
pub fn load_scenario_with_bytes(path: impl AsRef<Path>) -> Result<(Scenario, Vec<u8>), ArenaError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| ArenaError::Unreadable {
        path: path.display().to_string(),
        reason: e.kind().to_string(),
    })?;
    let base_dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let scenario = parse_scenario_bytes(&bytes, &base_dir)?;
    Ok((scenario, bytes))
}

/// Validates scenario bytes, which must be UTF-8 TOML.
pub fn parse_scenario_bytes(bytes: &[u8], base_dir: &Path) -> Result<Scenario, ArenaError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let (line, column) = line_column(&bytes[..e.valid_up_to()], e.valid_up_to());
        ArenaError::Syntax {
            line,
            column,
            reason: "the file is not UTF-8 text".to_string(),
        }
    })?;
    parse_scenario(text, base_dir)
}

/// Validates scenario text; `base_dir` is the folder fixtures resolve against.
pub fn parse_scenario(text: &str, base_dir: &Path) -> Result<Scenario, ArenaError> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let offset = e.span().map(|s| s.start).unwrap_or(0).min(text.len());
        let (line, column) = line_column(text.as_bytes(), offset);
        ArenaError::Syntax {
            line,
            column,
            // The parser's wording quotes no source today; redact in case it ever does.
            reason: secrets::redact_credentials(e.message().lines().next().unwrap_or("")),
        }
    })?;
    secrets::scan_document(&table)?;
    let file: ScenarioFile =
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(schema_error)?;
    Validator {
        file: &file,
        base_dir,
    }
    .validate()
    .map(|resolved| Scenario {
        file,
        base_dir: base_dir.to_path_buf(),
        scheduler: resolved.scheduler,
        tick_ms: resolved.tick_ms,
        clock: resolved.clock,
        has_world: resolved.has_world,
        actions: resolved.actions,
        schedule: resolved.schedule,
        fixtures: resolved.fixtures,
    })
}

fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |p| p + 1);
    (line, offset - line_start + 1)
}

/// Turns serde's complaint into a typed error naming the field. Serde quotes
/// offending values ("invalid type: string \"...\""), so only the expected
/// part of its message is kept.
fn schema_error(err: serde_path_to_error::Error<toml::de::Error>) -> ArenaError {
    let path = err.path().to_string();
    let message = err
        .inner()
        .message()
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    let quoted = |prefix: &str| -> Option<String> {
        let rest = message.strip_prefix(prefix)?;
        let end = rest.find('`')?;
        Some(rest[..end].to_string())
    };
    if message.starts_with("unknown field `") {
        return ArenaError::UnknownKey { field: path };
    }
    if let Some(name) = quoted("missing field `") {
        let field = if path == "." || path.is_empty() {
            name
        } else {
            format!("{path}.{name}")
        };
        return ArenaError::MissingKey { field };
    }
    let expected = message
        .split_once(", expected ")
        .map(|(_, e)| e.to_string())
        .unwrap_or_else(|| "a value of the documented type".to_string());
    let expected = match expected.as_str() {
        "u64" | "u32" | "i64" => "a non-negative integer".to_string(),
        "a sequence" => "an array".to_string(),
        "a map" => "a table".to_string(),
        _ => expected,
    };
    ArenaError::WrongType {
        field: path,
        expected,
    }
}

/// Whether `id` is non-empty, uses only `[A-Za-z0-9_.-]` and is not `.` or
/// `..` (ids become file and folder names, such as a bundle's default
/// `target/arena/<scenario-id>/`).
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id != "."
        && id != ".."
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn check_id(id: &str, field: String) -> Result<(), ArenaError> {
    if is_valid_id(id) {
        Ok(())
    } else {
        Err(ArenaError::InvalidId {
            field,
            value: id.to_string(),
        })
    }
}

fn check_offset(value: Option<u64>, field: impl FnOnce() -> String) -> Result<(), ArenaError> {
    match value {
        Some(v) if v > MAX_OFFSET_MS => Err(ArenaError::OutOfRange {
            field: field(),
            rule: "the value is at most 2^53",
        }),
        _ => Ok(()),
    }
}

/// Refuses an offset whose instant, `start_ms + offset` in Unix
/// milliseconds, is past 2^53: it would not print exactly as canonical JSON.
fn check_instant(
    start_ms: u64,
    offset: u64,
    field: impl FnOnce() -> String,
) -> Result<(), ArenaError> {
    if start_ms.saturating_add(offset) > MAX_INSTANT_MS {
        Err(ArenaError::OutOfRange {
            field: field(),
            rule:
                "the instant, the clock start plus this offset, is at most 2^53 Unix milliseconds",
        })
    } else {
        Ok(())
    }
}

fn check_share(value: Option<u64>, field: impl FnOnce() -> String) -> Result<(), ArenaError> {
    match value {
        Some(v) if !(1..=10_000).contains(&v) => Err(ArenaError::OutOfRange {
            field: field(),
            rule: "share_bps is between 1 and 10000",
        }),
        _ => Ok(()),
    }
}

fn check_invocations(value: Option<u64>, field: impl Fn() -> String) -> Result<(), ArenaError> {
    match value {
        Some(0) => Err(ArenaError::ZeroBudget { field: field() }),
        Some(v) if v > MAX_OFFSET_MS => Err(ArenaError::OutOfRange {
            field: field(),
            rule: "max_invocations is at most 2^53",
        }),
        _ => Ok(()),
    }
}

fn check_tools(tools: &[String], field: &str) -> Result<(), ArenaError> {
    if tools.is_empty() {
        return Err(ArenaError::EmptyList {
            field: field.to_string(),
        });
    }
    for (index, tool) in tools.iter().enumerate() {
        check_id(tool, format!("{field}[{index}]"))?;
    }
    Ok(())
}

fn check_path_prefix(
    prefix: Option<&str>,
    field: impl FnOnce() -> String,
) -> Result<(), ArenaError> {
    match prefix {
        Some(p) if !p.starts_with('/') => Err(ArenaError::OutOfRange {
            field: field(),
            rule: "path_prefix is an absolute path starting with '/'",
        }),
        _ => Ok(()),
    }
}

/// Converts a TOML value to JSON, refusing what canonical JSON cannot print.
fn toml_to_json(value: &toml::Value, field: &str) -> Result<serde_json::Value, ArenaError> {
    use serde_json::Value as J;
    Ok(match value {
        toml::Value::String(s) => J::String(s.clone()),
        toml::Value::Integer(i) => {
            if i.unsigned_abs() > MAX_OFFSET_MS {
                return Err(ArenaError::OutOfRange {
                    field: field.to_string(),
                    rule: "integers stay within -2^53..=2^53",
                });
            }
            J::from(*i)
        }
        toml::Value::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => J::Number(n),
            None => {
                return Err(ArenaError::OutOfRange {
                    field: field.to_string(),
                    rule: "numbers are finite (no nan or inf)",
                })
            }
        },
        toml::Value::Boolean(b) => J::Bool(*b),
        toml::Value::Datetime(d) => J::String(d.to_string()),
        toml::Value::Array(items) => J::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| toml_to_json(v, &format!("{field}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(table) => table_to_json(table, field)?,
    })
}

fn table_to_json(table: &toml::Table, field: &str) -> Result<serde_json::Value, ArenaError> {
    let mut map = serde_json::Map::new();
    for (key, value) in table {
        map.insert(key.clone(), toml_to_json(value, &format!("{field}.{key}"))?);
    }
    Ok(serde_json::Value::Object(map))
}

fn guard_spec(
    index: usize,
    guard: &crate::model::GuardDecl,
) -> Result<Option<GuardSpec>, ArenaError> {
    let mode = match guard.mode.as_deref() {
        None => GuardMode::Enforce,
        Some(text) => GuardMode::parse(text).map_err(|_| ArenaError::UnsupportedValue {
            field: format!("guards[{index}].mode"),
            value: text.to_string(),
            allowed: "enforce, observe",
        })?,
    };
    let Some(kind_text) = guard.kind.as_deref() else {
        if guard.config.is_some() {
            return Err(ArenaError::KeyNotAllowed {
                field: format!("guards[{index}].config"),
                context: "a guard takes config only together with kind",
            });
        }
        return Ok(None);
    };
    let kind = GuardKind::parse(kind_text).map_err(|_| ArenaError::UnsupportedValue {
        field: format!("guards[{index}].kind"),
        value: kind_text.to_string(),
        allowed: GUARD_KINDS,
    })?;
    let field = format!("guards[{index}].config");
    let config = match &guard.config {
        Some(table) => table_to_json(table, &field)?,
        None => serde_json::Value::Object(Default::default()),
    };
    Ok(Some(GuardSpec {
        id: guard.id.clone(),
        kind,
        mode,
        config,
    }))
}

/// What validation derives from the file.
struct Resolved {
    scheduler: SchedulerKind,
    tick_ms: u64,
    clock: VirtualClock,
    has_world: bool,
    actions: Vec<Action>,
    schedule: Vec<ScheduledAction>,
    fixtures: BTreeMap<String, FixtureFiles>,
}

struct Validator<'a> {
    file: &'a ScenarioFile,
    base_dir: &'a Path,
}

/// Fails with a duplicate-id error at the second occurrence.
fn check_unique<'a>(
    kind: &'static str,
    ids: impl Iterator<Item = (&'a str, String)>,
) -> Result<BTreeSet<&'a str>, ArenaError> {
    let mut seen = BTreeSet::new();
    for (id, field) in ids {
        if !seen.insert(id) {
            return Err(ArenaError::DuplicateId {
                kind,
                id: id.to_string(),
                field,
            });
        }
    }
    Ok(seen)
}

fn resolve(
    declared: &BTreeSet<&str>,
    kind: &'static str,
    id: &str,
    field: impl FnOnce() -> String,
) -> Result<(), ArenaError> {
    if declared.contains(id) {
        Ok(())
    } else {
        Err(ArenaError::UndeclaredReference {
            kind,
            id: id.to_string(),
            field: field(),
        })
    }
}

impl Validator<'_> {
    fn validate(&self) -> Result<Resolved, ArenaError> {
        let f = self.file;
        if f.schema_version != SCENARIO_SCHEMA_VERSION {
            return Err(ArenaError::UnsupportedSchemaVersion {
                field: "schema_version".into(),
                value: f.schema_version.clone(),
            });
        }
        let (scheduler, tick_ms, clock) = self.determinism()?;
        check_id(&f.id, "id".into())?;
        if f.agents.is_empty() {
            return Err(ArenaError::EmptyAgents);
        }
        if f.steps.is_empty() {
            return Err(ArenaError::EmptySteps);
        }
        self.agents()?;
        if scheduler == SchedulerKind::SingleAgentV1 && f.agents.len() > 1 {
            return Err(ArenaError::SingleAgentScheduler {
                count: f.agents.len(),
            });
        }
        let has_world = !f.nodes.is_empty()
            || !f.kernels.is_empty()
            || !f.servers.is_empty()
            || !f.grants.is_empty()
            || f.agents.iter().any(|a| a.kernel.is_some());
        // Every virtual instant is the clock start plus an offset; each must
        // print exactly as canonical JSON, so offsets are bounded by it.
        let start_ms = clock.now_ms();
        let fixtures = self.world(has_world, start_ms)?;
        self.budgets(has_world)?;
        let actions = self.steps(has_world)?;
        let inputs: Vec<ScheduleInput> = f
            .steps
            .iter()
            .map(|s| ScheduleInput {
                step_id: s.id.clone(),
                agent_id: s.agent.clone(),
                at: s.at,
                advance_ms: s.advance_ms,
            })
            .collect();
        let schedule = DeterministicScheduler::new(scheduler, tick_ms)
            .with_start_ms(start_ms)
            .schedule(&inputs)?;
        let actions = self.holdings(actions, &schedule, has_world, start_ms)?;
        self.messages(&actions, &schedule)?;
        self.adversaries()?;
        Ok(Resolved {
            scheduler,
            tick_ms,
            clock: clock.with_tick_ms(tick_ms),
            has_world,
            actions,
            schedule,
            fixtures,
        })
    }

    fn determinism(&self) -> Result<(SchedulerKind, u64, VirtualClock), ArenaError> {
        let f = self.file;
        let d = &f.determinism;
        let scheduler =
            SchedulerKind::parse(&d.scheduler).ok_or_else(|| ArenaError::UnsupportedScheduler {
                field: "determinism.scheduler".into(),
                value: d.scheduler.clone(),
            })?;
        if d.locale != "C" {
            return Err(ArenaError::UnsupportedLocale {
                field: "determinism.locale".into(),
                value: d.locale.clone(),
            });
        }
        let tick_ms = d.tick_ms.unwrap_or(DEFAULT_TICK_MS);
        if tick_ms == 0 || tick_ms > 86_400_000 {
            return Err(ArenaError::OutOfRange {
                field: "determinism.tick_ms".into(),
                rule: "tick_ms is between 1 and 86400000",
            });
        }
        if d.rng_seed.is_some_and(|s| s != f.rng_seed) {
            return Err(ArenaError::DeterminismMismatch {
                field: "determinism.rng_seed".into(),
                twin: "rng_seed",
            });
        }
        if d.virtual_clock_start
            .as_ref()
            .is_some_and(|s| *s != f.virtual_clock_start)
        {
            return Err(ArenaError::DeterminismMismatch {
                field: "determinism.virtual_clock_start".into(),
                twin: "virtual_clock_start",
            });
        }
        let clock = VirtualClock::parse(&f.virtual_clock_start)?;
        if f.rng_seed > MAX_OFFSET_MS {
            return Err(ArenaError::OutOfRange {
                field: "rng_seed".into(),
                rule: "rng_seed is at most 2^53 so it prints exactly in JSON",
            });
        }
        Ok((scheduler, tick_ms, clock))
    }

    fn agents(&self) -> Result<(), ArenaError> {
        let agents = &self.file.agents;
        for (i, agent) in agents.iter().enumerate() {
            check_id(&agent.id, format!("agents[{i}].id"))?;
        }
        check_unique(
            "agent",
            agents
                .iter()
                .enumerate()
                .map(|(i, a)| (a.id.as_str(), format!("agents[{i}].id"))),
        )?;
        for (i, agent) in agents.iter().enumerate() {
            let field = format!("agents[{i}].model");
            let recorded = agent
                .model
                .strip_prefix("recorded:")
                .is_some_and(is_valid_id);
            if recorded {
                continue;
            }
            let lower = agent.model.to_ascii_lowercase();
            if let Some(marker) = PROVIDER_MARKERS.iter().find(|m| lower.contains(**m)) {
                return Err(ArenaError::ProviderDependency { field, marker });
            }
            return Err(ArenaError::UnrecordedModel { field });
        }
        Ok(())
    }

    fn agent_ids(&self) -> BTreeSet<&str> {
        self.file.agents.iter().map(|a| a.id.as_str()).collect()
    }

    /// Checks the world and returns the fixture files of each workspace
    /// server that declares a folder, by server id.
    fn world(
        &self,
        has_world: bool,
        start_ms: u64,
    ) -> Result<BTreeMap<String, FixtureFiles>, ArenaError> {
        let f = self.file;
        for (i, n) in f.nodes.iter().enumerate() {
            check_id(&n.id, format!("nodes[{i}].id"))?;
        }
        let nodes = check_unique(
            "node",
            f.nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.id.as_str(), format!("nodes[{i}].id"))),
        )?;
        for (i, g) in f.guards.iter().enumerate() {
            check_id(&g.id, format!("guards[{i}].id"))?;
        }
        let guards = check_unique(
            "guard",
            f.guards
                .iter()
                .enumerate()
                .map(|(i, g)| (g.id.as_str(), format!("guards[{i}].id"))),
        )?;
        for (i, guard) in f.guards.iter().enumerate() {
            if has_world && guard.kind.is_none() {
                return Err(ArenaError::MissingKey {
                    field: format!("guards[{i}].kind"),
                });
            }
            if let Some(spec) = guard_spec(i, guard)? {
                spec.build().map_err(|e| ArenaError::GuardConfig {
                    field: format!("guards[{i}].config"),
                    reason: e.to_string(),
                })?;
            }
        }
        for (i, k) in f.kernels.iter().enumerate() {
            check_id(&k.id, format!("kernels[{i}].id"))?;
        }
        let kernels = check_unique(
            "kernel",
            f.kernels
                .iter()
                .enumerate()
                .map(|(i, k)| (k.id.as_str(), format!("kernels[{i}].id"))),
        )?;
        for (i, kernel) in f.kernels.iter().enumerate() {
            resolve(&nodes, "node", &kernel.node, || {
                format!("kernels[{i}].node")
            })?;
            let mut pipeline = BTreeSet::new();
            for (j, guard) in kernel.guards.iter().enumerate() {
                let field = || format!("kernels[{i}].guards[{j}]");
                resolve(&guards, "guard", guard, field)?;
                if !pipeline.insert(guard.as_str()) {
                    return Err(ArenaError::DuplicateId {
                        kind: "pipeline guard",
                        id: guard.clone(),
                        field: field(),
                    });
                }
            }
        }
        for (i, s) in f.servers.iter().enumerate() {
            check_id(&s.id, format!("servers[{i}].id"))?;
        }
        let servers = check_unique(
            "server",
            f.servers
                .iter()
                .enumerate()
                .map(|(i, s)| (s.id.as_str(), format!("servers[{i}].id"))),
        )?;
        let mut fixtures = BTreeMap::new();
        for (i, server) in f.servers.iter().enumerate() {
            resolve(&kernels, "kernel", &server.kernel, || {
                format!("servers[{i}].kernel")
            })?;
            if let Some(files) = self.server(i, server)? {
                fixtures.insert(server.id.clone(), files);
            }
        }
        let agents = self.agent_ids();
        for (i, agent) in f.agents.iter().enumerate() {
            match &agent.kernel {
                Some(kernel) => {
                    resolve(&kernels, "kernel", kernel, || format!("agents[{i}].kernel"))?
                }
                None if has_world => {
                    return Err(ArenaError::IncompleteWorld {
                        field: format!("agents[{i}].kernel"),
                    })
                }
                None => {}
            }
        }
        if has_world {
            for (section, empty) in [
                ("[[nodes]]", f.nodes.is_empty()),
                ("[[kernels]]", f.kernels.is_empty()),
                ("[[servers]]", f.servers.is_empty()),
            ] {
                if empty {
                    return Err(ArenaError::IncompleteWorld {
                        field: section.to_string(),
                    });
                }
            }
        }
        for (i, g) in f.grants.iter().enumerate() {
            check_id(&g.id, format!("grants[{i}].id"))?;
        }
        check_unique(
            "grant",
            f.grants
                .iter()
                .enumerate()
                .map(|(i, g)| (g.id.as_str(), format!("grants[{i}].id"))),
        )?;
        for (i, grant) in f.grants.iter().enumerate() {
            let at = |key: &str| format!("grants[{i}].{key}");
            resolve(&agents, "agent", &grant.agent, || at("agent"))?;
            resolve(&servers, "server", &grant.server, || at("server"))?;
            check_tools(&grant.tools, &at("tools"))?;
            check_path_prefix(grant.path_prefix.as_deref(), || at("path_prefix"))?;
            check_offset(grant.not_before_ms, || at("not_before_ms"))?;
            check_offset(grant.expires_after_ms, || at("expires_after_ms"))?;
            check_instant(start_ms, grant.not_before(), || at("not_before_ms"))?;
            check_instant(start_ms, grant.expires_after(), || at("expires_after_ms"))?;
            if grant.not_before() >= grant.expires_after() {
                return Err(ArenaError::OutOfRange {
                    field: at("expires_after_ms"),
                    rule: "expires_after_ms is greater than not_before_ms",
                });
            }
            check_invocations(grant.max_invocations, || at("max_invocations"))?;
            check_share(grant.share_bps, || at("share_bps"))?;
        }
        Ok(fixtures)
    }

    /// Checks one server and reads its fixture folder, if it declares one.
    fn server(&self, i: usize, server: &ServerDecl) -> Result<Option<FixtureFiles>, ArenaError> {
        let at = |key: &str| format!("servers[{i}].{key}");
        let kind = ServerKind::parse(&server.kind).ok_or_else(|| ArenaError::UnsupportedValue {
            field: at("kind"),
            value: server.kind.clone(),
            allowed: "workspace, publish, test-runner, http",
        })?;
        if kind != ServerKind::Workspace {
            for (key, present) in [
                ("root", server.root.is_some()),
                ("fixtures", server.fixtures.is_some()),
                ("labels", server.labels.is_some()),
                ("integrity_globs", server.integrity_globs.is_some()),
            ] {
                if present {
                    return Err(ArenaError::KeyNotAllowed {
                        field: at(key),
                        context: "only workspace servers take it",
                    });
                }
            }
        }
        if kind != ServerKind::TestRunner && server.failing.is_some() {
            return Err(ArenaError::KeyNotAllowed {
                field: at("failing"),
                context: "only test-runner servers take it",
            });
        }
        if let Some(root) = &server.root {
            if !root.starts_with('/') || root.split('/').any(|c| c == "..") {
                return Err(ArenaError::OutOfRange {
                    field: at("root"),
                    rule: "root is an absolute path without '..'",
                });
            }
        }
        if let Some(failing) = &server.failing {
            for (j, test) in failing.iter().enumerate() {
                if test.is_empty() {
                    return Err(ArenaError::EmptyList {
                        field: format!("servers[{i}].failing[{j}]"),
                    });
                }
            }
        }
        if let Some(labels) = &server.labels {
            for (glob, label) in labels {
                let field = format!("servers[{i}].labels.{glob:?}");
                if glob.is_empty() {
                    return Err(ArenaError::InvalidId {
                        field,
                        value: String::new(),
                    });
                }
                check_id(label, field.clone())?;
                if Label::parse(label).is_none() {
                    return Err(ArenaError::UnsupportedValue {
                        field,
                        value: label.clone(),
                        allowed: "public, internal, confidential, restricted",
                    });
                }
            }
        }
        if let Some(level) = &server.integrity {
            if Integrity::parse(level).is_none() {
                return Err(ArenaError::UnsupportedValue {
                    field: at("integrity"),
                    value: level.clone(),
                    allowed: "trusted, untrusted",
                });
            }
        }
        if let Some(globs) = &server.integrity_globs {
            for (glob, level) in globs {
                let field = format!("servers[{i}].integrity_globs.{glob:?}");
                if glob.is_empty() {
                    return Err(ArenaError::InvalidId {
                        field,
                        value: String::new(),
                    });
                }
                if Integrity::parse(level).is_none() {
                    return Err(ArenaError::UnsupportedValue {
                        field,
                        value: level.clone(),
                        allowed: "trusted, untrusted",
                    });
                }
            }
        }
        match &server.fixtures {
            Some(folder) => {
                fixtures::read_fixtures(self.base_dir, folder, &at("fixtures")).map(Some)
            }
            None => Ok(None),
        }
    }

    fn budgets(&self, has_world: bool) -> Result<(), ArenaError> {
        let agents = self.agent_ids();
        let servers: BTreeSet<&str> = self.file.servers.iter().map(|s| s.id.as_str()).collect();
        let mut seen = BTreeSet::new();
        for (i, budget) in self.file.budgets.iter().enumerate() {
            let at = |key: &str| format!("budgets[{i}].{key}");
            resolve(&agents, "agent", &budget.agent, || at("agent"))?;
            if has_world {
                resolve(&servers, "server", &budget.server, || at("server"))?;
            }
            check_invocations(Some(budget.max_invocations), || at("max_invocations"))?;
            let key = (&budget.agent, &budget.server, &budget.tool);
            if !seen.insert(key) {
                return Err(ArenaError::DuplicateId {
                    kind: "budget",
                    id: format!("{}/{}/{}", budget.agent, budget.server, budget.tool),
                    field: format!("budgets[{i}]"),
                });
            }
        }
        Ok(())
    }

    fn steps(&self, has_world: bool) -> Result<Vec<Action>, ArenaError> {
        let f = self.file;
        for (i, s) in f.steps.iter().enumerate() {
            check_id(&s.id, format!("steps[{i}].id"))?;
        }
        check_unique(
            "step",
            f.steps
                .iter()
                .enumerate()
                .map(|(i, s)| (s.id.as_str(), format!("steps[{i}].id"))),
        )?;
        let agents = self.agent_ids();
        let servers: BTreeSet<&str> = f.servers.iter().map(|s| s.id.as_str()).collect();
        // Capability ids: grants and delegations share one namespace.
        let mut capabilities: BTreeSet<&str> = f.grants.iter().map(|g| g.id.as_str()).collect();
        for (i, step) in f.steps.iter().enumerate() {
            if let (Some("delegate"), Some(id)) = (step.action.as_deref(), &step.delegation) {
                check_id(id, format!("steps[{i}].delegation"))?;
                if !capabilities.insert(id.as_str()) {
                    return Err(ArenaError::DuplicateId {
                        kind: "capability",
                        id: id.clone(),
                        field: format!("steps[{i}].delegation"),
                    });
                }
            }
        }
        let mut actions = Vec::with_capacity(f.steps.len());
        for (i, step) in f.steps.iter().enumerate() {
            resolve(&agents, "agent", &step.agent, || {
                format!("steps[{i}].agent")
            })?;
            check_offset(step.at, || format!("steps[{i}].at"))?;
            let action = self.step(i, step, has_world, &agents, &servers, &capabilities)?;
            actions.push(action);
        }
        Ok(actions)
    }

    fn step(
        &self,
        i: usize,
        step: &StepDecl,
        has_world: bool,
        agents: &BTreeSet<&str>,
        servers: &BTreeSet<&str>,
        capabilities: &BTreeSet<&str>,
    ) -> Result<Action, ArenaError> {
        let at = |key: &str| format!("steps[{i}].{key}");
        let action = step.action.as_deref().unwrap_or("call");
        let allowed: &[&str] = match action {
            "call" => &[
                "server",
                "tool",
                "arguments",
                "expect_verdict",
                "capability",
            ],
            "delegate" => &[
                "capability",
                "to",
                "delegation",
                "tools",
                "path_prefix",
                "expires_after_ms",
                "max_invocations",
                "share_bps",
                "expect",
            ],
            "revoke" => &["target", "by", "expect"],
            "message" => &["to", "content", "from_step"],
            "advance" => &["advance_ms"],
            other => {
                return Err(ArenaError::UnsupportedValue {
                    field: at("action"),
                    value: other.to_string(),
                    allowed: "call, delegate, revoke, message, advance",
                })
            }
        };
        // A reason is what a call, a delegation or a revocation answers;
        // messages and advances have none to compare.
        let takes_reason = matches!(action, "call" | "delegate" | "revoke");
        if action != "call" {
            if step.expect_verdict.is_some() {
                return Err(ArenaError::ExpectVerdictNotCall {
                    field: at("expect_verdict"),
                    action: action.to_string(),
                });
            }
            if !has_world && matches!(action, "delegate" | "revoke" | "message") {
                return Err(ArenaError::WorldRequired {
                    field: at("action"),
                    action: action.to_string(),
                });
            }
        }
        let present = [
            ("server", step.server.is_some()),
            ("tool", step.tool.is_some()),
            ("arguments", step.arguments.is_some()),
            ("expect_verdict", step.expect_verdict.is_some()),
            ("capability", step.capability.is_some()),
            ("to", step.to.is_some()),
            ("delegation", step.delegation.is_some()),
            ("tools", step.tools.is_some()),
            ("path_prefix", step.path_prefix.is_some()),
            ("expires_after_ms", step.expires_after_ms.is_some()),
            ("max_invocations", step.max_invocations.is_some()),
            ("share_bps", step.share_bps.is_some()),
            ("target", step.target.is_some()),
            ("by", step.by.is_some()),
            ("expect", step.expect.is_some()),
            ("advance_ms", step.advance_ms.is_some()),
            ("content", step.content.is_some()),
            ("from_step", step.from_step.is_some()),
            (
                "expect_reason",
                step.expect_reason.is_some() && !takes_reason,
            ),
        ];
        for (key, is_present) in present {
            if is_present && !allowed.contains(&key) {
                return Err(ArenaError::KeyNotAllowed {
                    field: at(key),
                    context: match action {
                        "call" => "a call step takes server, tool, arguments, expect_verdict, capability, expect_reason and at",
                        "delegate" => "a delegate step takes capability, to, delegation, its attenuations, expect, expect_reason and at",
                        "revoke" => "a revoke step takes target, by, expect, expect_reason and at",
                        "message" => "a message step takes to, content or from_step, and at",
                        _ => "an advance step takes advance_ms and at",
                    },
                });
            }
        }
        let required = |value: &Option<String>, key: &str| -> Result<String, ArenaError> {
            value
                .clone()
                .ok_or_else(|| ArenaError::MissingKey { field: at(key) })
        };
        if step.expect_reason.as_deref() == Some("") {
            return Err(ArenaError::OutOfRange {
                field: at("expect_reason"),
                rule: "expect_reason is a non-empty part of the expected reason",
            });
        }
        let expect = match step.expect.as_deref() {
            None => StepExpectation::Done,
            Some(text) => {
                StepExpectation::parse(text).ok_or_else(|| ArenaError::UnsupportedValue {
                    field: at("expect"),
                    value: text.to_string(),
                    allowed: "done, refused",
                })?
            }
        };
        match action {
            "call" => {
                let server = required(&step.server, "server")?;
                let tool = required(&step.tool, "tool")?;
                if has_world {
                    resolve(servers, "server", &server, || at("server"))?;
                }
                let verdict = step.expect_verdict.as_deref().ok_or_else(|| {
                    ArenaError::MissingExpectVerdict {
                        field: at("expect_verdict"),
                    }
                })?;
                let expect_verdict = ExpectedVerdict::parse(verdict).ok_or_else(|| {
                    ArenaError::UnsupportedValue {
                        field: at("expect_verdict"),
                        value: verdict.to_string(),
                        allowed: "allow, deny, rewrite",
                    }
                })?;
                if let Some(capability) = &step.capability {
                    resolve(capabilities, "capability", capability, || at("capability"))?;
                }
                let arguments = match &step.arguments {
                    Some(table) => table_to_json(table, &at("arguments"))?,
                    None => serde_json::Value::Object(Default::default()),
                };
                Ok(Action::Call(CallAction {
                    server,
                    tool,
                    arguments,
                    expect_verdict,
                    capability: step.capability.clone(),
                }))
            }
            "delegate" => {
                let capability = required(&step.capability, "capability")?;
                let to = required(&step.to, "to")?;
                let delegation = required(&step.delegation, "delegation")?;
                resolve(capabilities, "capability", &capability, || at("capability"))?;
                resolve(agents, "agent", &to, || at("to"))?;
                if let Some(tools) = &step.tools {
                    check_tools(tools, &at("tools"))?;
                }
                check_path_prefix(step.path_prefix.as_deref(), || at("path_prefix"))?;
                check_offset(step.expires_after_ms, || at("expires_after_ms"))?;
                check_invocations(step.max_invocations, || at("max_invocations"))?;
                check_share(step.share_bps, || at("share_bps"))?;
                Ok(Action::Delegate(DelegateAction {
                    capability,
                    to,
                    delegation,
                    tools: step.tools.clone(),
                    path_prefix: step.path_prefix.clone(),
                    expires_after_ms: step.expires_after_ms,
                    max_invocations: step.max_invocations,
                    share_bps: step.share_bps,
                    expect,
                }))
            }
            "revoke" => {
                let target = required(&step.target, "target")?;
                resolve(capabilities, "capability", &target, || at("target"))?;
                let by_authority = match step.by.as_deref() {
                    None => false,
                    Some("authority") => true,
                    Some(other) => {
                        return Err(ArenaError::UnsupportedValue {
                            field: at("by"),
                            value: other.to_string(),
                            allowed: "authority (omit `by` to revoke as the step's agent)",
                        })
                    }
                };
                Ok(Action::Revoke(RevokeAction {
                    target,
                    by_authority,
                    expect,
                }))
            }
            "message" => {
                let to = required(&step.to, "to")?;
                resolve(agents, "agent", &to, || at("to"))?;
                match (&step.content, &step.from_step) {
                    (Some(_), Some(_)) => {
                        return Err(ArenaError::KeyNotAllowed {
                            field: at("from_step"),
                            context: "a message carries either content or from_step, not both",
                        })
                    }
                    (None, None) => {
                        return Err(ArenaError::MissingKey {
                            field: at("content"),
                        })
                    }
                    (None, Some(source)) => check_id(source, at("from_step"))?,
                    (Some(_), None) => {}
                }
                Ok(Action::Message(MessageAction {
                    to,
                    content: step.content.clone(),
                    from_step: step.from_step.clone(),
                }))
            }
            _ => {
                let advance_ms = step.advance_ms.ok_or_else(|| ArenaError::MissingKey {
                    field: at("advance_ms"),
                })?;
                if advance_ms == 0 || advance_ms > MAX_OFFSET_MS {
                    return Err(ArenaError::OutOfRange {
                        field: at("advance_ms"),
                        rule: "advance_ms is between 1 and 2^53",
                    });
                }
                Ok(Action::Advance(AdvanceAction { advance_ms }))
            }
        }
    }

    /// Walks the schedule in execution order: a delegation may hand on only
    /// what its agent holds at that point, a presented delegation must exist
    /// by then, and a call without `capability` resolves to the agent's only
    /// capability for the server.
    fn holdings(
        &self,
        mut actions: Vec<Action>,
        schedule: &[ScheduledAction],
        has_world: bool,
        start_ms: u64,
    ) -> Result<Vec<Action>, ArenaError> {
        if !has_world {
            return Ok(actions);
        }
        let f = self.file;
        // capability id -> server it covers, for capabilities that exist so far.
        let mut server_of: BTreeMap<String, String> = f
            .grants
            .iter()
            .map(|g| (g.id.clone(), g.server.clone()))
            .collect();
        // agent id -> capabilities it holds so far (declaration order kept by BTreeSet on id).
        let mut held: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for grant in &f.grants {
            held.entry(grant.agent.clone())
                .or_default()
                .insert(grant.id.clone());
        }
        for entry in schedule {
            let i = entry.step_index;
            let agent = &f.steps[i].agent;
            match &mut actions[i] {
                Action::Delegate(delegate) => {
                    if let Some(ms) = delegate.expires_after_ms {
                        // The child expires `ms` after the delegation's own instant.
                        check_instant(start_ms, entry.evaluation_ms.saturating_add(ms), || {
                            format!("steps[{i}].expires_after_ms")
                        })?;
                    }
                    let holds = held
                        .get(agent)
                        .is_some_and(|set| set.contains(&delegate.capability));
                    if !holds {
                        return Err(ArenaError::CapabilityNotHeld {
                            field: format!("steps[{i}].capability"),
                            agent: agent.clone(),
                            capability: delegate.capability.clone(),
                        });
                    }
                    let server = server_of
                        .get(&delegate.capability)
                        .cloned()
                        .unwrap_or_default();
                    server_of.insert(delegate.delegation.clone(), server);
                    held.entry(delegate.to.clone())
                        .or_default()
                        .insert(delegate.delegation.clone());
                }
                Action::Call(call) => match &call.capability {
                    Some(capability) => {
                        if !server_of.contains_key(capability) {
                            return Err(ArenaError::UndeclaredReference {
                                kind: "capability (not yet delegated at this point)",
                                id: capability.clone(),
                                field: format!("steps[{i}].capability"),
                            });
                        }
                    }
                    None => {
                        let candidates: Vec<&String> = held
                            .get(agent)
                            .into_iter()
                            .flatten()
                            .filter(|c| server_of.get(*c) == Some(&call.server))
                            .collect();
                        match candidates.as_slice() {
                            [only] => call.capability = Some((*only).clone()),
                            [] => {
                                return Err(ArenaError::NoCapability {
                                    field: format!("steps[{i}]"),
                                    agent: agent.clone(),
                                    server: call.server.clone(),
                                })
                            }
                            _ => {
                                return Err(ArenaError::AmbiguousCapability {
                                    field: format!("steps[{i}]"),
                                    agent: agent.clone(),
                                    server: call.server.clone(),
                                })
                            }
                        }
                    }
                },
                Action::Revoke(_) | Action::Message(_) | Action::Advance(_) => {}
            }
        }
        Ok(actions)
    }

    /// A message forwards the output of an earlier call step of its own
    /// sender, ordered before it in execution order; anything else would
    /// forward what the sender never received.
    fn messages(&self, actions: &[Action], schedule: &[ScheduledAction]) -> Result<(), ArenaError> {
        let f = self.file;
        let position: BTreeMap<usize, usize> = schedule
            .iter()
            .enumerate()
            .map(|(order, entry)| (entry.step_index, order))
            .collect();
        for (i, action) in actions.iter().enumerate() {
            let Action::Message(MessageAction {
                from_step: Some(source),
                ..
            }) = action
            else {
                continue;
            };
            let field = format!("steps[{i}].from_step");
            let Some(j) = f.steps.iter().position(|s| s.id == *source) else {
                return Err(ArenaError::UndeclaredReference {
                    kind: "step",
                    id: source.clone(),
                    field,
                });
            };
            let reason = if !matches!(actions[j], Action::Call(_)) {
                Some("it is not a call step")
            } else if f.steps[j].agent != f.steps[i].agent {
                Some("it is another agent's step")
            } else if position.get(&j) >= position.get(&i) {
                Some("it is not ordered before the message")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(ArenaError::MessageSource {
                    field,
                    step: source.clone(),
                    reason,
                });
            }
        }
        Ok(())
    }

    fn adversaries(&self) -> Result<(), ArenaError> {
        let list = &self.file.adversaries;
        for (i, adversary) in list.iter().enumerate() {
            if !ADVERSARY_CLASSES.contains(&adversary.class.as_str()) {
                return Err(ArenaError::UnsupportedValue {
                    field: format!("adversaries[{i}].class"),
                    value: adversary.class.clone(),
                    allowed:
                        "prompt-injection, capability-overrequest, replay-attempt, scope-escape",
                });
            }
            check_id(
                &adversary.population,
                format!("adversaries[{i}].population"),
            )?;
            if let Some(params) = &adversary.params {
                table_to_json(params, &format!("adversaries[{i}].params"))?;
            }
            // Class parameters are checked here, at load, naming the parameter.
            let servers: Vec<String> = self.file.servers.iter().map(|s| s.id.clone()).collect();
            crate::adversary::population::population_from_block(i, adversary, &servers)?;
        }
        check_unique(
            "population",
            list.iter().enumerate().map(|(i, a)| {
                (
                    a.population.as_str(),
                    format!("adversaries[{i}].population"),
                )
            }),
        )?;
        Ok(())
    }
}
