//! The library entry points for a user's own tests: load a scenario, run it
//! on a topology, inspect its steps and receipts, write its evidence bundle,
//! and assert that every expectation held.
//!
//! This is the surface the `chio` CLI itself is built on, kept small and
//! stable: the CLI's `arena run` is [`load_scenario`], [`LoadedScenario::run`]
//! and [`ScenarioRun::write_arena_bundle`]. The names follow the source
//! design where they fit (`load_scenario`, `write_arena_bundle`); where it
//! differs, a run returns a value ([`ScenarioRun`]) instead of mutating a
//! runtime object, and errors are the CLI's typed [`CliError`] so a test
//! failure prints the same `error[CODE]` block a user sees at the terminal.
//!
//! ```
//! use chio_controller::api::{load_scenario, Topology};
//!
//! let scenario = load_scenario("../scenarios/walking_skeleton.toml").unwrap();
//! let run = scenario.run(&Topology::Embedded).unwrap();
//! run.assert_passed();
//! assert!(!run.receipts().unwrap().is_empty());
//! ```

use std::path::{Path, PathBuf};

use chio_arena::bundle::StepRecord;
use chio_arena::{parse_scenario_bytes, Scenario};
use chio_kernel::receipt::SignedReceipt;

use crate::arena_run::load_for_run;
use crate::cli::RunTopology;
use crate::driver::{ReadBack, RunInputs, RunOptions, RunResult, RunStatus};
use crate::error::CliError;
use crate::topology::run_with_topology;

const COMMAND: &str = "api";

/// Where a scenario runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topology {
    /// Every node in this process (the default of `chio arena run`).
    Embedded,
    /// Node processes and trust-control already running, named by a
    /// topology file (see `docs/topology.md`).
    File(PathBuf),
}

/// A validated scenario with the inputs a run needs, read once.
#[derive(Debug, Clone)]
pub struct LoadedScenario {
    /// The validated scenario.
    scenario: Scenario,
    /// Its bytes and fixtures, exactly as validated.
    inputs: RunInputs,
}

/// Loads and validates the scenario file at `path`, with its fixtures; a
/// refused file is the same error `chio arena validate` prints.
///
/// ```
/// let err = chio_controller::api::load_scenario("no/such/file.toml").unwrap_err();
/// assert_eq!(err.exit.code(), 2);
/// ```
pub fn load_scenario(path: impl AsRef<Path>) -> Result<LoadedScenario, CliError> {
    let (scenario, inputs) = load_for_run(COMMAND, path.as_ref())?;
    Ok(LoadedScenario { scenario, inputs })
}

/// Loads a scenario from its text; fixture paths resolve against `base_dir`.
///
/// ```
/// let text = std::fs::read_to_string("../scenarios/walking_skeleton.toml").unwrap();
/// let scenario = chio_controller::api::load_scenario_str(&text, "../scenarios").unwrap();
/// assert_eq!(scenario.id(), "walking_skeleton");
/// ```
pub fn load_scenario_str(
    text: &str,
    base_dir: impl AsRef<Path>,
) -> Result<LoadedScenario, CliError> {
    let scenario = parse_scenario_bytes(text.as_bytes(), base_dir.as_ref())
        .map_err(|e| CliError::from_arena(COMMAND, &e))?;
    scenario
        .require_world()
        .map_err(|e| CliError::from_arena(COMMAND, &e))?;
    let inputs = RunInputs::load(&scenario).map_err(|e| CliError::node(COMMAND, &e))?;
    Ok(LoadedScenario { scenario, inputs })
}

impl LoadedScenario {
    /// The scenario's id (the default bundle folder's name).
    ///
    /// ```
    /// let s = chio_controller::api::load_scenario("../scenarios/approval.toml").unwrap();
    /// assert_eq!(s.id(), "approval");
    /// ```
    pub fn id(&self) -> &str {
        self.scenario.id()
    }

    /// The validated scenario, for everything the arena library offers.
    ///
    /// ```
    /// let s = chio_controller::api::load_scenario("../scenarios/approval.toml").unwrap();
    /// assert!(s.scenario().step_count() > 0);
    /// ```
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Runs every step on `topology` (not stopping at the first unexpected
    /// verdict, so every mismatch is reported); an infrastructure failure
    /// that prevents the run from starting is an error, one during the run
    /// is a [`ScenarioRun`] whose status says so.
    ///
    /// ```
    /// use chio_controller::api::{load_scenario, Topology};
    /// let run = load_scenario("../scenarios/approval.toml").unwrap().run(&Topology::Embedded).unwrap();
    /// assert!(run.passed());
    /// ```
    pub fn run(&self, topology: &Topology) -> Result<ScenarioRun, CliError> {
        let topology = match topology {
            Topology::Embedded => RunTopology::Embedded,
            Topology::File(path) => RunTopology::File(path.clone()),
        };
        let options = RunOptions::keep_going(true);
        let scratch = ReadBack::new().map_err(|e| CliError::node(COMMAND, &e))?;
        let run = run_with_topology(
            COMMAND,
            &topology,
            &self.scenario,
            &self.inputs,
            options,
            scratch.out(),
        )?;
        // The bundle is read back whole from the folder the run wrote.
        let result = scratch
            .bundle(run)
            .map_err(|e| CliError::node(COMMAND, &e))?;
        Ok(ScenarioRun {
            scenario_id: self.scenario.id().to_string(),
            result,
        })
    }
}

/// A finished run: its steps, its receipts and its evidence.
#[derive(Debug, Clone)]
pub struct ScenarioRun {
    /// The scenario that ran.
    scenario_id: String,
    /// What the run driver produced.
    result: RunResult,
}

impl ScenarioRun {
    /// Whether every step met its expectation and nothing failed.
    ///
    /// ```
    /// use chio_controller::api::{load_scenario, Topology};
    /// let run = load_scenario("../scenarios/session_rule.toml").unwrap().run(&Topology::Embedded).unwrap();
    /// assert!(run.passed());
    /// ```
    pub fn passed(&self) -> bool {
        self.result.status == RunStatus::Passed
    }

    /// Every step's record, in schedule order: expected and actual verdict,
    /// the kernel's reason and guard, the receipt id.
    ///
    /// ```
    /// use chio_controller::api::{load_scenario, Topology};
    /// use chio_kernel::verdict::ProjectedVerdict;
    /// let run = load_scenario("../scenarios/approval.toml").unwrap().run(&Topology::Embedded).unwrap();
    /// let deny = Some(ProjectedVerdict::Deny.into());
    /// let denied = run.steps().iter().filter(|s| s.actual == deny).count();
    /// assert!(denied >= 1);
    /// ```
    pub fn steps(&self) -> &[StepRecord] {
        &self.result.bundle.manifest.steps
    }

    /// The signed receipts of every decision, in decision order; each
    /// verifies against its kernel's key.
    ///
    /// ```
    /// use chio_controller::api::{load_scenario, Topology};
    /// let run = load_scenario("../scenarios/walking_skeleton.toml").unwrap().run(&Topology::Embedded).unwrap();
    /// let receipts = run.receipts().unwrap();
    /// assert!(!receipts.is_empty());
    /// assert!(receipts.iter().all(|r| r.verify().is_ok()));
    /// ```
    pub fn receipts(&self) -> Result<Vec<SignedReceipt>, CliError> {
        self.result
            .bundle
            .receipts
            .iter()
            .map(|line| {
                serde_json::from_str(line).map_err(|e| {
                    CliError::infrastructure(
                        COMMAND,
                        format!("a receipt line of the run does not parse: {e}"),
                    )
                })
            })
            .collect()
    }

    /// Writes the evidence bundle into `dir` atomically (the previous bundle
    /// there is kept until the new one is complete); the same bytes
    /// `chio arena run --out DIR` writes.
    ///
    /// ```
    /// use chio_controller::api::{load_scenario, Topology};
    /// let run = load_scenario("../scenarios/walking_skeleton.toml").unwrap().run(&Topology::Embedded).unwrap();
    /// let dir = tempfile::tempdir().unwrap();
    /// run.write_arena_bundle(dir.path().join("bundle")).unwrap();
    /// assert!(dir.path().join("bundle/arena.json").is_file());
    /// ```
    pub fn write_arena_bundle(&self, dir: impl AsRef<Path>) -> Result<(), CliError> {
        self.result
            .bundle
            .write(dir.as_ref())
            .map_err(|e| CliError::from_arena(COMMAND, &e))
    }

    /// Panics unless every expectation held, with one line per step that
    /// did not (expected, actual, the kernel's reason), so a failing
    /// `cargo test` reads like the run table.
    ///
    /// ```should_panic
    /// use chio_controller::api::{load_scenario_str, Topology};
    /// let text = std::fs::read_to_string("../scenarios/approval.toml").unwrap()
    ///     .replace("expect_verdict = \"deny\"", "expect_verdict = \"allow\"");
    /// let run = load_scenario_str(&text, "../scenarios").unwrap().run(&Topology::Embedded).unwrap();
    /// run.assert_passed();
    /// ```
    pub fn assert_passed(&self) {
        if self.passed() {
            return;
        }
        let mut text = format!(
            "scenario {} did not pass:\n{}",
            self.scenario_id,
            crate::harness::mismatch_lines(self.steps())
        );
        if let Some(stop) = &self.result.bundle.manifest.stopped {
            text.push_str(&format!(
                "  stopped at {} ({}): {}\n",
                stop.step_id, stop.cause, stop.message
            ));
        }
        panic!("{text}");
    }
}
