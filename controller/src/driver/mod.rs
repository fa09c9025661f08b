//! The run driver: dispatches a scenario's actions in total order to the
//! nodes that host the acting agents, and turns what comes back into an
//! evidence bundle.
//!
//! Order of work for one run: resolve the world (keys, grants, placement),
//! then for each scheduled action in the scheduler's order, compute its
//! virtual instant (`start + evaluation offset`), send it to the acting
//! agent's node through a [`Dispatcher`], wait for the answer, record it,
//! and only then send the next. One action in flight at a time is what
//! makes the run replayable whatever the topology: concurrency inside a node
//! never reaches an output. A call whose verdict differs from its
//! expectation, or whose reason lacks the step's `expect_reason`, stops the
//! run unless `keep_going`; an infrastructure failure always stops it.
//! Either way the bundle keeps every receipt so far. Each call's record
//! carries the kernel's decision trace (what the decision read, stage by
//! stage), each message and delegation the labels it carried.
//!
//! The driver does not know how nodes are reached: the embedded topology
//! and the gRPC topologies implement [`Dispatcher`], which also inflicts a
//! fault step's fault. A fault step is a barrier
//! ([`chio_node::executor::PreparedStep::is_barrier`]): nothing runs
//! concurrently with it or is reordered across it, since it changes what
//! every later step meets.

use std::collections::BTreeMap;

use chio_arena::bundle::{
    Bundle, BundleManifest, BundleStatus, StepRecord, BUNDLE_SCHEMA, SCENARIO_INPUT,
};
use chio_arena::fixtures::normalized_folder;
use chio_arena::Scenario;
use chio_kernel::canonical::to_canonical_string;
use chio_kernel::keys::public_key_hex;
use chio_kernel::receipt::merkle_root;
use chio_node::executor::StepExecutor;
use chio_node::{EmbeddedTopology, FixtureSet, NodeError, World};
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use tracing::Instrument;

mod record;

pub use chio_node::executor::Dispatcher;
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

/// What the driver needs to know about a scenario's inputs.
#[derive(Debug, Clone)]
pub struct RunInputs {
    /// The scenario file's bytes, as run.
    pub scenario_bytes: Vec<u8>,
    /// The fixture files, by server.
    pub fixtures: FixtureSet,
    /// Input files for the bundle, by path relative to `inputs/`.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl RunInputs {
    /// Gathers the scenario's bytes and the fixtures its loader read; each
    /// fixture folder is recorded under its normalised path (`./a/` as `a`).
    pub fn load(scenario: &Scenario, scenario_bytes: Vec<u8>) -> Result<RunInputs, NodeError> {
        let fixtures = FixtureSet::load(scenario)?;
        let mut files = BTreeMap::new();
        files.insert(SCENARIO_INPUT.to_string(), scenario_bytes.clone());
        for server in &scenario.file().servers {
            let folder = server.fixtures.as_deref().and_then(normalized_folder);
            if let (Some(rel), Some(seeded)) = (folder, fixtures.servers.get(&server.id)) {
                for (path, content) in seeded {
                    files.insert(format!("{rel}/{path}"), content.as_bytes().to_vec());
                }
            }
        }
        Ok(RunInputs {
            scenario_bytes,
            fixtures,
            files,
        })
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Each kernel's policy as canonical JSON, by kernel id.
pub fn kernel_policies(world: &World) -> Result<BTreeMap<String, String>, NodeError> {
    let mut out = BTreeMap::new();
    for (id, plan) in &world.kernels {
        let policy = json!({
            "kernel": id,
            "kernel_key": public_key_hex(&plan.config.signing_key),
            "trusted_issuers": plan.config.trusted_issuers,
            "max_delegation_depth": plan.config.max_delegation_depth,
            "guards": plan.config.guards,
            "tool_budgets": plan.config.tool_budgets.iter().map(|b| json!({
                "agent": b.agent, "server": b.server, "tool": b.tool,
                "max_invocations": b.max_invocations,
            })).collect::<Vec<_>>(),
        });
        let text = to_canonical_string(&policy).map_err(NodeError::canonical("a kernel policy"))?;
        out.insert(id.clone(), text);
    }
    Ok(out)
}

/// The stop cause of a step whose reason lacks its `expect_reason`.
pub const UNEXPECTED_REASON: &str = "unexpected-reason";

/// `None` when the record's reason contains its expected reason (or none
/// is expected); otherwise the message naming both. The expectation is a
/// plain, case-sensitive substring of the reason the kernel (or the
/// refusal) gave, so a scenario can pin the part that matters (a guard's
/// words, a label key) without restating ids or numbers.
pub fn reason_mismatch(record: &StepRecord) -> Option<String> {
    let want = record.expected_reason.as_deref()?;
    match record.reason.as_deref() {
        Some(reason) if reason.contains(want) => None,
        Some(reason) => Some(format!(
            "step {} expected a reason containing {want:?} but the reason is {reason:?}",
            record.step_id
        )),
        None => Some(format!(
            "step {} expected a reason containing {want:?} but it gave no reason (actual {})",
            record.step_id,
            record.actual.map_or("?", |a| a.as_str())
        )),
    }
}

/// Runs a scenario's whole schedule through `dispatcher`: each scheduled
/// action is prepared and performed by the step executor and recorded by
/// the step recorder, one at a time in the scheduler's order.
pub async fn run_schedule(
    scenario: &Scenario,
    world: &World,
    inputs: &RunInputs,
    dispatcher: &dyn Dispatcher,
    keep_going: bool,
) -> Result<RunResult, NodeError> {
    let policies = kernel_policies(world)?;
    let policy_hashes: BTreeMap<String, String> = policies
        .iter()
        .map(|(k, v)| (k.clone(), sha256_hex(v.as_bytes())))
        .collect();
    let clock = scenario.clock();
    let file = scenario.file();
    let mut executor = StepExecutor::new(world);
    let mut recorder = StepRecorder::new(world, &policy_hashes, keep_going);
    let mut failure = None;

    for scheduled in scenario.schedule() {
        let step = &file.steps[scheduled.step_index];
        let action = &scenario.actions()[scheduled.step_index];
        let agent = &scheduled.agent_id;
        let now_ms = world.start_ms + scheduled.evaluation_ms;
        let node = world
            .agent_node(agent)
            .ok_or_else(|| NodeError::Unroutable(format!("agent {agent}")))?
            .to_string();
        // A stall over by this instant ends before the step is prepared.
        let settled = executor.settle_faults(dispatcher, now_ms).await;
        let prepared = executor.prepare(world, &step.id, action, agent, now_ms)?;
        let mut record = recorder.begin(
            &step.id,
            prepared.kind(),
            agent,
            clock.format_offset_ms(scheduled.evaluation_ms),
            scenario.expect_reason(scheduled.step_index),
        );
        recorder.prepared(&mut record, action, &prepared);
        let performed = match settled {
            Ok(()) => {
                executor
                    .perform(dispatcher, &node, &step.id, &prepared)
                    .await
            }
            Err(e) => Err(e),
        };
        match performed {
            Ok(performed) => recorder.performed(record, action, &prepared, performed),
            Err(e) => {
                recorder.infrastructure(record, &e);
                failure = Some(e);
                break;
            }
        }
        if recorder.stopped() {
            break;
        }
    }

    let recorded = recorder.finish();
    let status = if failure.is_some() {
        RunStatus::InfrastructureFailure
    } else if recorded.stopped.is_some() {
        RunStatus::Stopped
    } else if recorded.mismatches.is_empty() {
        RunStatus::Passed
    } else {
        RunStatus::Failed
    };
    let receipt_lines = recorded
        .receipts
        .iter()
        .map(|r| to_canonical_string(r).map_err(NodeError::canonical("a signed receipt")))
        .collect::<Result<Vec<_>, _>>()?;
    let manifest = BundleManifest {
        schema_version: BUNDLE_SCHEMA.to_string(),
        determinism: scenario.determinism_witness(),
        scenario_title: scenario.title().to_string(),
        scenario_sha256: sha256_hex(&inputs.scenario_bytes),
        status: match status {
            RunStatus::Passed | RunStatus::Failed => BundleStatus::Completed,
            RunStatus::Stopped => BundleStatus::Stopped,
            RunStatus::InfrastructureFailure => BundleStatus::Failed,
        },
        stopped: recorded.stopped,
        mismatches: recorded.mismatches,
        receipt_root: merkle_root(&recorded.receipts),
        receipt_count: recorded.receipts.len() as u64,
        arena_keys: world.public_keys(),
        policies: policy_hashes,
        steps: recorded.steps,
    };
    Ok(RunResult {
        bundle: Bundle {
            manifest,
            receipts: receipt_lines,
            policies,
            inputs: inputs.files.clone(),
        },
        status,
        failure,
    })
}

/// Runs a scenario in the embedded topology (every node in this process).
pub async fn run_embedded(
    scenario: &Scenario,
    inputs: &RunInputs,
    keep_going: bool,
) -> Result<RunResult, NodeError> {
    let world = World::resolve(scenario, &inputs.fixtures)?;
    let span = tracing::info_span!(
        "run",
        scenario_id = scenario.id(),
        rng_seed = scenario.file().rng_seed,
        topology = "embedded"
    );
    tracing::info!(parent: &span, "starting embedded run");
    let topology = EmbeddedTopology::start(&world).await?;
    run_schedule(scenario, &world, inputs, &topology, keep_going)
        .instrument(span)
        .await
}
