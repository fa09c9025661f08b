//! The run driver: dispatches a scenario's actions to the nodes that host
//! the acting agents, and turns what comes back into an evidence bundle.
//!
//! Order of work for one run: resolve the world (keys, grants, placement);
//! the scheduler has already fixed the total order of actions. Each action's
//! virtual instant is `start + evaluation offset`; it is prepared by the
//! step executor from the run's ledger, sent to the acting agent's node
//! through a [`Dispatcher`], and its answer folded and recorded. By default
//! the driver pipelines (`pipeline`): steps whose footprints (`footprint`:
//! agents, capability lineages, server state, forwarded outputs) do not
//! overlap are in flight together, and answers are folded and recorded
//! strictly in the total order, so the bundle is byte for byte the one a
//! run with one action in flight at a time writes
//! ([`DispatchMode::OneAtATime`], `--one-at-a-time`), whatever the
//! topology. A call whose verdict differs from its expectation, or whose
//! reason lacks the step's `expect_reason`, stops the run unless
//! `keep_going`; an infrastructure failure always stops it. Either way the
//! bundle keeps every receipt recorded so far. Each call's record carries
//! the kernel's decision trace (what the decision read, stage by stage),
//! each message and delegation the labels it carried.
//!
//! Every run reaches its bundle one way, [`run_schedule`]: it writes the
//! bundle into a folder as the run goes and keeps no step record, so the
//! run's memory does not grow with its records: what it returns is the
//! manifest without steps, and a report of the steps reads them back from
//! the written bundle (`chio_arena::bundle::for_each_step`). A caller that
//! wants the bundle whole in memory runs into a temporary folder and reads
//! it back ([`ReadBack`]).
//!
//! The driver does not know how nodes are reached: the embedded topology
//! and the gRPC topologies implement [`Dispatcher`], which also inflicts a
//! fault step's fault. A fault step is a barrier
//! ([`chio_node::executor::RunStep::is_barrier`]): nothing runs
//! concurrently with it or is reordered across it, since it changes what
//! every later step meets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chio_arena::bundle::{
    Bundle, BundleManifest, BundleStatus, BundleWriter, StepRecord, StopRecord, StreamedScenario,
    BUNDLE_SCHEMA,
};
use chio_arena::{ArenaError, DeterminismWitness, Scenario, ScheduledStep, Step};
use chio_kernel::canonical::to_canonical_string;
use chio_kernel::keys::public_key_hex;
use chio_node::executor::{PreparedStep, StepExecutor};
use chio_node::{EmbeddedTopology, NodeError, World};
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use tracing::Instrument;

mod claims;
mod expect_reason;
mod footprint;
mod inputs;
mod one_at_a_time;
mod pipeline;
mod record;

pub use chio_node::executor::Dispatcher;
pub use expect_reason::{is_reason_code, reason_mismatch, UNEXPECTED_REASON};
pub use inputs::RunInputs;
use record::StepRecorder;

/// The evaluator's version, part of every step's evaluator fingerprint.
pub const EVALUATOR_VERSION: &str = concat!("chio-kernel/", env!("CARGO_PKG_VERSION"));

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Every action was dispatched and every expectation held.
    Passed,
    /// Every action was dispatched (`keep_going`) and some expectation failed.
    Failed,
    /// An unexpected verdict stopped the run.
    Stopped,
    /// A node or store failed; the run could not continue.
    InfrastructureFailure,
}

/// A finished run: its bundle and how it ended.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The evidence.
    pub bundle: Bundle,
    /// How it ended.
    pub status: RunStatus,
    /// The infrastructure failure, when one ended the run.
    pub failure: Option<NodeError>,
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A monetary budget as a kernel policy records it (written only for
/// kernels that have one, so other policies keep their bytes).
fn monetary_policy(budget: &chio_kernel::kernel::MonetaryBudget) -> serde_json::Value {
    let (subject, name) = match &budget.subject {
        chio_kernel::kernel::BudgetSubject::Agent(agent) => ("agent", agent),
        chio_kernel::kernel::BudgetSubject::Capability(id) => ("capability", id),
    };
    let mut policy = json!({
        "id": budget.id,
        "server": budget.server,
        "tool": budget.tool,
        "amount": budget.amount_argument,
        "currency": budget.currency,
        "currency_argument": budget.currency_argument,
        "limit": budget.limit.text,
        "window": budget.window.map(|w| json!({"origin_ms": w.origin_ms, "length_ms": w.length_ms})),
    });
    policy[subject] = json!(name);
    policy
}

/// Each kernel's policy as canonical JSON, by kernel id.
pub fn kernel_policies(world: &World) -> Result<BTreeMap<String, String>, NodeError> {
    let mut out = BTreeMap::new();
    for (id, plan) in &world.kernels {
        let mut policy = json!({
            "kernel": id,
            "kernel_key": public_key_hex(&plan.config.signing_key),
            "trusted_issuers": plan.config.trusted_issuers,
            "max_delegation_depth": plan.config.max_delegation_depth,
            "guards": plan.config.guards,
            "tool_budgets": plan.config.tool_budgets.iter().map(|b| json!({
                "agent": b.agent, "server": b.server, "tool": b.tool,
                "max_invocations": b.max_invocations,
            })).collect::<Vec<_>>(),
            "tools": plan.config.tools,
        });
        if !plan.config.monetary_budgets.is_empty() {
            policy["monetary_budgets"] = plan
                .config
                .monetary_budgets
                .iter()
                .map(monetary_policy)
                .collect();
        }
        // Redefinitions are recorded only where a kernel has some, so the
        // policies of every other world keep their bytes.
        if !plan.config.redefinitions.is_empty() {
            policy["redefinitions"] = json!(plan.config.redefinitions);
        }
        // Flagged definitions (tool poisoning: the injection reader's
        // findings over the catalog and its redefinitions, as the kernel
        // reads them when it loads) are recorded only where a kernel has
        // some, so the policies of every other world keep their bytes.
        let poisoned = plan
            .config
            .tools
            .as_ref()
            .map(|tools| {
                chio_kernel::contract::poisoned_definitions(tools, &plan.config.redefinitions)
            })
            .unwrap_or_default();
        if !poisoned.is_empty() {
            policy["poisoned_definitions"] = json!(poisoned);
        }
        // Roles are recorded only when a world declares some, so the
        // policies of every other world keep their bytes.
        if !plan.config.agent_roles.is_empty() {
            policy["agent_roles"] = json!(plan.config.agent_roles);
        }
        let text = to_canonical_string(&policy).map_err(NodeError::canonical("a kernel policy"))?;
        out.insert(id.clone(), text);
    }
    Ok(out)
}

/// How the driver sends a run's steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DispatchMode {
    /// Steps whose footprints do not overlap are in flight together;
    /// answers are recorded in the total order (the default).
    #[default]
    Pipelined,
    /// One step in flight at a time, each recorded before the next is sent
    /// (`chio arena run --one-at-a-time`).
    OneAtATime,
}

/// How one run is driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunOptions {
    /// Record every step and every mismatch instead of stopping at the first.
    pub keep_going: bool,
    /// Pipelined or one step at a time; the bundle is the same bytes.
    pub dispatch: DispatchMode,
}

impl RunOptions {
    /// Pipelined dispatch, stopping at the first mismatch unless `keep_going`.
    pub fn keep_going(keep_going: bool) -> Self {
        Self {
            keep_going,
            dispatch: DispatchMode::Pipelined,
        }
    }
}

/// A step's record with everything known before its answer, made when its
/// turn to be recorded comes (the recorder's hash chains are read then).
/// A call decided later than its instant (over a delayed link) records
/// the instant it was decided beside the one it was sent.
fn begin_record(
    scenario: &Scenario,
    world: &World,
    recorder: &mut StepRecorder<'_>,
    scheduled: &ScheduledStep,
    step: &Step,
    prepared: &PreparedStep,
) -> Result<StepRecord, NodeError> {
    let mut record = recorder.begin(
        &step.head.id,
        prepared.kind(),
        &step.head.agent,
        scenario.clock().format_offset_ms(scheduled.evaluation_ms),
        step.head.expect_reason.as_deref(),
    );
    if let Some(arrival) = prepared.arrival_ms() {
        let offset = arrival.saturating_sub(world.start_ms);
        record.decided_time = Some(scenario.clock().format_offset_ms(offset));
    }
    if let Err(e) = recorder.prepared(&mut record, &step.action, prepared) {
        recorder.infrastructure(record, &e);
        return Err(e);
    }
    Ok(record)
}

/// The input files a run keeps in its bundle: `files`, with each recording
/// of an mcp server it replayed holding only the calls the run forwarded,
/// in the order it forwarded them (`Recording::forwarded`).
fn kept_inputs<'a>(
    files: &'a BTreeMap<String, Vec<u8>>,
    admitted: &[String],
) -> std::borrow::Cow<'a, BTreeMap<String, Vec<u8>>> {
    use chio_arena::recording::{parse_recording, RECORDING_FOLDER};
    let prefix = format!("{RECORDING_FOLDER}/");
    if !files.keys().any(|k| k.starts_with(&prefix)) {
        return std::borrow::Cow::Borrowed(files);
    }
    let kept = files
        .iter()
        .map(|(path, bytes)| {
            let server = path
                .strip_prefix(&prefix)
                .and_then(|name| name.strip_suffix(".json"));
            let bytes = match server.map(|s| parse_recording(bytes, s)) {
                Some(Ok(recording)) => recording.forwarded(admitted).to_bytes(),
                _ => bytes.clone(),
            };
            (path.clone(), bytes)
        })
        .collect();
    std::borrow::Cow::Owned(kept)
}

/// A run whose bundle was written: the inner error is the bundle's, a
/// refused output folder or a write that failed (which stops the run).
pub type Written = Result<RunResult, ArenaError>;

/// Runs a scenario's whole schedule through `dispatcher`, the one path
/// every run takes to its bundle: each scheduled action is prepared and
/// performed by the step executor and recorded by the step recorder in the
/// scheduler's order, pipelined or one at a time as `options` say, and
/// each receipt and step record is appended to the bundle in `out` as it
/// is recorded; the manifest is written last and the folder installed
/// atomically (see `chio_arena::bundle::BundleWriter`), whether the run
/// completes, stops or fails. The returned bundle holds the manifest
/// without its steps, and no receipts or inputs: the written bundle holds
/// them, and a report reads the steps back from it one at a time; a caller
/// that wants the bundle whole runs into a [`ReadBack`] folder.
pub async fn run_schedule(
    scenario: &Scenario,
    world: &World,
    inputs: &RunInputs,
    dispatcher: &dyn Dispatcher,
    options: RunOptions,
    out: &Path,
) -> Result<Written, NodeError> {
    let policies = kernel_policies(world)?;
    let policy_hashes = policy_hashes(&policies);
    let writer = match BundleWriter::create(out) {
        Ok(writer) => writer,
        Err(e) => return Ok(Err(e)),
    };
    let mut recorder = StepRecorder::new(world, &policy_hashes, options.keep_going, writer);
    let failure = dispatch_all(scenario, world, dispatcher, &mut recorder, options).await?;
    let recorded = recorder.finish();
    if let Some(e) = recorded.failed {
        return Ok(Err(e));
    }
    let status = run_status(&failure, &recorded.stopped, &recorded.mismatches);
    // The writer writes the witness's step ids from the scenario.
    let witness = scenario.determinism_head();
    let mut manifest = manifest(scenario, witness, world, inputs, &status, policy_hashes);
    manifest.stopped = recorded.stopped;
    manifest.mismatches = recorded.mismatches;
    manifest.receipt_root = recorded.writer.receipt_root();
    manifest.receipt_count = recorded.writer.receipt_count();
    let streamed = StreamedScenario {
        text: &inputs.text,
        scenario,
    };
    let files = kept_inputs(&inputs.files, &recorded.admitted);
    let finished = recorded
        .writer
        .finish(&manifest, &policies, &files, Some(streamed));
    if let Err(e) = finished {
        return Ok(Err(e));
    }
    Ok(Ok(RunResult {
        bundle: Bundle {
            manifest,
            receipts: Vec::new(),
            policies,
            inputs: BTreeMap::new(),
        },
        status,
        failure,
    }))
}

/// A temporary folder for a run whose caller wants its bundle whole, in
/// memory (a matrix cell, a campaign's attempt, a replay, a test): the run
/// writes its bundle into [`ReadBack::out`] as every run does, and
/// [`ReadBack::bundle`] reads it back and removes the folder.
pub struct ReadBack {
    folder: tempfile::TempDir,
    out: PathBuf,
}

impl ReadBack {
    /// A fresh temporary folder to write a bundle into.
    pub fn new() -> Result<ReadBack, NodeError> {
        let folder = tempfile::tempdir().map_err(|e| {
            NodeError::Refused(ArenaError::BundleIo {
                path: std::env::temp_dir().display().to_string(),
                cause: format!("a temporary folder for a run's bundle: {e}"),
            })
        })?;
        let out = folder.path().join("bundle");
        Ok(ReadBack { folder, out })
    }

    /// Where the run writes its bundle.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// The run with its whole bundle read back from [`Self::out`]; a
    /// bundle that could not be written or read is the run's error.
    pub fn bundle(self, run: Result<Written, NodeError>) -> Result<RunResult, NodeError> {
        let ReadBack { folder, out } = self;
        let mut run = run??;
        run.bundle = Bundle::read(&out)?;
        // The folder and the bundle in it are removed once read.
        drop(folder);
        Ok(run)
    }
}

fn policy_hashes(policies: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    policies
        .iter()
        .map(|(k, v)| (k.clone(), sha256_hex(v.as_bytes())))
        .collect()
}

fn run_status(
    failure: &Option<NodeError>,
    stopped: &Option<StopRecord>,
    mismatches: &[String],
) -> RunStatus {
    if failure.is_some() {
        RunStatus::InfrastructureFailure
    } else if stopped.is_some() {
        RunStatus::Stopped
    } else if mismatches.is_empty() {
        RunStatus::Passed
    } else {
        RunStatus::Failed
    }
}

/// The manifest's fields known before any step is recorded; the caller
/// fills the stop, the mismatches, the receipts and the steps.
fn manifest(
    scenario: &Scenario,
    determinism: DeterminismWitness,
    world: &World,
    inputs: &RunInputs,
    status: &RunStatus,
    policy_hashes: BTreeMap<String, String>,
) -> BundleManifest {
    BundleManifest {
        schema_version: BUNDLE_SCHEMA.to_string(),
        determinism,
        scenario_title: scenario.title().to_string(),
        scenario_sha256: inputs.scenario_sha256.clone(),
        status: match status {
            RunStatus::Passed | RunStatus::Failed => BundleStatus::Completed,
            RunStatus::Stopped => BundleStatus::Stopped,
            RunStatus::InfrastructureFailure => BundleStatus::Failed,
        },
        stopped: None,
        mismatches: Vec::new(),
        receipt_root: String::new(),
        receipt_count: 0,
        arena_keys: world.public_keys(),
        policies: policy_hashes,
        sealed: chio_arena::scenario::sealed::digests(scenario.sealed()),
        steps: Vec::new(),
    }
}

/// Dispatches and records every scheduled action, pipelined or one at a
/// time; the infrastructure failure that ended the run early, if one did.
async fn dispatch_all(
    scenario: &Scenario,
    world: &World,
    dispatcher: &dyn Dispatcher,
    recorder: &mut StepRecorder<'_>,
    options: RunOptions,
) -> Result<Option<NodeError>, NodeError> {
    let mut executor = StepExecutor::for_forwarded(world, scenario.forwarded_steps())?;
    // Faults are run state that changes with virtual time and reaches every
    // later step's preparation, so a scenario with fault steps is driven one
    // step at a time whatever the mode asked; the bundle is the same bytes.
    let has_faults = scenario.fault_steps().next().is_some();
    let dispatch = if has_faults {
        DispatchMode::OneAtATime
    } else {
        options.dispatch
    };
    match dispatch {
        DispatchMode::Pipelined => {
            pipeline::run(scenario, world, dispatcher, &mut executor, recorder).await
        }
        DispatchMode::OneAtATime => {
            one_at_a_time::run(scenario, world, dispatcher, &mut executor, recorder).await
        }
    }
}

/// Runs a scenario in the embedded topology (every node in this process)
/// as `options` say, writing its bundle into `out` (see [`run_schedule`]).
/// Each server named in `live` is answered by that live server (`chio
/// arena record`): its calls are forwarded to it, and answered by the rule
/// a recorded answer follows.
pub async fn run_embedded(
    scenario: &Scenario,
    inputs: &RunInputs,
    options: RunOptions,
    live: &BTreeMap<String, chio_node::tools::LiveServer>,
    out: &Path,
) -> Result<Written, NodeError> {
    let (mut world, span) = embedded_world(scenario, inputs)?;
    for (id, server) in live {
        let plan = world
            .servers
            .get_mut(id)
            .ok_or_else(|| NodeError::Scenario(format!("unknown server {id}")))?;
        let labels = match &plan.config {
            chio_node::tools::ToolServerConfig::Recorded { labels, .. } => labels.clone(),
            _ => Vec::new(),
        };
        plan.config = chio_node::tools::ToolServerConfig::Live {
            live: server.clone(),
            labels,
        };
    }
    let topology = EmbeddedTopology::start(&world).await?;
    run_schedule(scenario, &world, inputs, &topology, options, out)
        .instrument(span)
        .await
}

/// The world of an embedded run and the run's tracing span.
fn embedded_world(
    scenario: &Scenario,
    inputs: &RunInputs,
) -> Result<(World, tracing::Span), NodeError> {
    let world = World::resolve(scenario, &inputs.fixtures)?;
    let span = tracing::info_span!(
        "run",
        scenario_id = scenario.id(),
        rng_seed = scenario.file().rng_seed,
        topology = "embedded"
    );
    tracing::info!(parent: &span, "starting embedded run");
    Ok((world, span))
}
