//! Chio Arena's adversary search: the search for the calls the guards miss.
//!
//! This crate owns the search over the four adversary classes
//! (`docs/adversaries.md`; the classes, their parameters and goals are part
//! of the scenario format, in `chio_arena::adversaries`): populations, the
//! actions they produce, fitness, co-evolution, leaderboards, the survival
//! chart, promotion and the search report. It depends on the scenario core
//! (`chio-arena`) and nothing above it. It does not
//! evaluate anything itself: every action goes through an
//! [`ActionEvaluator`], which the runtime implements with the real kernel in
//! the scenario's world, so this crate needs neither the node runtime nor an
//! async executor.
//!
//! Module map:
//! - [`population`]: [`AdversaryPopulation`] and building populations from
//!   a scenario's `[[adversaries]]` blocks;
//! - [`action`]: base steps, the deterministic mutation of a base step into
//!   an [`AdversaryAction`], and the declared-scope check that keeps a
//!   mutation inside its grant from counting as an escape;
//! - [`gene`]: the field-aware mutation of a member's gene within its
//!   class parameters;
//! - [`operators`]: [`Operator`], the composable mutation operators a
//!   genome is a sequence of, and the [`operators::Draft`] they act on;
//! - [`fitness`]: the [`ActionEvaluator`] trait, per-action verdicts,
//!   [`FitnessSample`], [`FitnessReport`] and [`evaluate_populations`];
//! - [`coevolution`]: [`evolve`], its configuration and generation trace;
//! - [`causes`]: escapes grouped by cause (goal, deciding stage, reference
//!   pattern, operator family), with counts and shortest examples;
//! - [`leaderboard`]: the `chio.arena.leaderboard/v2` document and its
//!   Markdown rendering;
//! - [`chart`]: the SVG chart of best and mean fitness and survival per
//!   generation, the first escape marked;
//! - [`promotion`]: the bless gate, fixture descriptors and adversarial
//!   cases;
//! - [`report`]: the HTML page of a search (the fitness chart and the
//!   escapes of an evolve output).

#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod action;
pub mod causes;
pub mod chart;
pub mod coevolution;
pub mod fitness;
pub mod gene;
pub mod leaderboard;
pub mod operators;
pub mod population;
pub mod promotion;
pub mod report;

pub use action::{
    base_steps, declared_scopes, mutate, AdversaryAction, BaseStep, DeclaredScope, FixtureEdit,
    MutatedCall, Mutation, ReplayPlan, WideningPlan,
};
pub use causes::{CauseKey, EscapeCause, EscapeOccurrence};
pub use coevolution::{
    evolve, BudgetControl, EvolutionResult, EvolveConfig, GenerationRecord, MutationConfig,
    TRACE_SCHEMA,
};
pub use fitness::{
    actions_for, evaluate_populations, ActionEvaluator, ActionOutcome, ActionRecord, ActionResult,
    Feedback, FitnessReport, FitnessSample, Stage,
};
pub use leaderboard::{Leaderboard, LeaderboardRow, LEADERBOARD_SCHEMA};
pub use operators::{describe, Draft, Family, Operator};
pub use population::{populations_from_scenario, AdversaryPopulation};
pub use promotion::{
    AdversarialCase, FixtureDescriptor, PromotedCase, PromotionGate, ADVERSARIAL_CASE_SCHEMA,
    ARENA_PROMOTE_CAP_DEFAULT, FIXTURE_SCHEMA,
};
