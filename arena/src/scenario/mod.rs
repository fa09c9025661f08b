//! The scenario: its typed form, how it is loaded, and its fail-closed
//! validation.
//!
//! A scenario is loaded in two parts. [`load`] reads (the file, once, and
//! every fixture folder a server names, confined as [`crate::fixtures`]
//! describes) and parses; [`validate`] is pure: it reads nothing, and checks
//! a fixture folder against the files already read, a
//! [`FixtureSet`](crate::fixtures::FixtureSet). A node that receives the
//! scenario's bytes and fixture files from the controller therefore
//! validates exactly what the controller validated, without a filesystem.
//! The pipeline stops at the first refusal:
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
//! 6. the world: nodes, kernels, servers (each fixture folder as read),
//!    guards (their configuration is built by the kernel's guard builder),
//!    grants, budgets;
//! 7. steps: per-action keys, references, then the schedule, walked in
//!    execution order to check that each delegation hands on a capability
//!    its agent holds at that point and to resolve each call's capability,
//!    and that each message forwards an earlier call step of its sender;
//!    and that faults follow each other as a run can suffer them (a crash
//!    before its restart, a partition before its heal, no message across
//!    a fault);
//! 8. adversaries.
//!
//! A scenario without a world (no nodes, kernels, servers, grants or agent
//! kernels) validates as the seed's example does, and its steps may name any
//! server; once any world key is present the world must be complete.
//!
//! Module map:
//! - [`actions`]: the typed actions and the words they parse;
//! - [`load`]: reading, parsing and the entry points;
//! - [`locate`]: the line and column where an error's field is written;
//! - [`validate`]: the validator, one module per section (checks shared by
//!   all, world, steps, schedule).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chio_kernel::guards::GuardSpec;

use crate::clock::VirtualClock;
use crate::error::ArenaError;
use crate::fixtures::{FixtureFiles, FixtureSet};
use crate::model::{GrantDecl, ScenarioFile, ServerDecl};
use crate::rng::ArenaRng;
use crate::scheduler::{ScheduledAction, SchedulerKind};
use crate::witness::DeterminismWitness;

pub mod actions;
pub mod load;
pub mod locate;
mod split;
pub mod validate;

pub use actions::{
    Action, ActionKind, AdvanceAction, CallAction, DelegateAction, ExpectedVerdict, FaultAction,
    FaultLink, MessageAction, RevokeAction, ServerKind, StepExpectation, TRUST_CONTROL,
};
pub use load::{
    load_scenario, load_scenario_with_bytes, parse_scenario, parse_scenario_bytes,
    parse_scenario_with_fixtures, parse_world_with_fixtures, world_bytes,
};
pub use locate::locate;
pub use validate::is_valid_id;

use validate::guard_spec;

/// The only schema this build reads.
pub const SCENARIO_SCHEMA_VERSION: &str = "chio.arena.scenario/v1";
/// Where a workspace server is mounted when `root` is absent.
pub const DEFAULT_WORKSPACE_ROOT: &str = "/workspace";
/// A grant's validity when `expires_after_ms` is absent: one virtual day.
pub const DEFAULT_GRANT_EXPIRY_MS: u64 = 86_400_000;
/// A capability's share when `share_bps` is absent: the whole allowance.
pub const DEFAULT_SHARE_BPS: u64 = 10_000;

/// A validated scenario. Only the loaders of [`load`] make one.
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
    fixtures: FixtureSet,
}

impl Scenario {
    /// The declarations as written, but for the steps: of each, only its
    /// head ([`crate::model::StepHead`]); what the step does is its typed
    /// action (see [`Self::actions`]).
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

    /// The fault steps' faults, in declaration order.
    pub fn fault_steps(&self) -> impl Iterator<Item = &FaultAction> {
        self.actions.iter().filter_map(|action| match action {
            Action::Fault(fault) => Some(fault),
            _ => None,
        })
    }

    /// The ids of the scenario's nodes, in declaration order.
    pub fn node_ids(&self) -> Vec<String> {
        self.file.nodes.iter().map(|n| n.id.clone()).collect()
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
        &self.fixtures.servers
    }

    /// The same files as a [`FixtureSet`], the form that travels with the
    /// scenario's bytes to a node.
    pub fn fixture_set(&self) -> &FixtureSet {
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
