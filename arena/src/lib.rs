//! Chio Arena's library: the `chio.arena.scenario/v1` format, its
//! fail-closed validation, the determinism contract a run obeys, and the
//! adversaries and experiments built on them.
//!
//! A scenario is one TOML file declaring agents, the world they act in
//! (nodes, kernels, tool servers, grants, guards, budgets) and a schedule of
//! steps with the verdicts they expect. This crate parses and validates it
//! completely before any kernel is touched, and provides the only sources of
//! time, randomness and order a run may use. Evaluating calls is the
//! kernel's job; dispatching them is the controller's.
//!
//! The crate has four rooms, each a top-level module:
//! - the scenario core (every module not named below): the format, loading,
//!   validation, time, randomness, order and the evidence bundle;
//! - [`adversary`]: adversary classes, populations, fitness, co-evolution,
//!   leaderboards, the survival chart and promotion;
//! - [`experiment`]: policy matrices and pinned campaigns, with
//!   [`ExperimentError`], the error table they share;
//! - [`report`]: the self-contained HTML page of a run bundle, a search, a
//!   matrix synthesis or a campaign portfolio (pure: no I/O).
//!
//! Module map of the scenario core:
//! - [`bundle`]: the evidence bundle and run comparison;
//! - [`fixtures`] reads fixture folders, confined to the scenario's folder;
//! - [`model`] holds the file's tables as serde structs;
//! - [`scenario`] holds the validated [`Scenario`], its actions, loading and
//!   the pure validator;
//! - [`secrets`] holds inline-secret detection;
//! - [`clock`] holds [`VirtualClock`];
//! - [`rng`] holds [`ArenaRng`] and FNV-1a;
//! - [`scheduler`] holds [`DeterministicScheduler`];
//! - [`witness`] holds [`DeterminismWitness`];
//! - [`error`] holds [`ArenaError`] and its codes;
//! - [`diagnostic`] holds [`ErrorClass`], the [`Diagnostic`] trait every
//!   error implements, the table macro both error enums are declared
//!   with, and the docs anchor and URN derived from a code.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod adversaries;
pub mod adversary;
pub mod bundle;
pub mod clock;
pub mod diagnostic;
pub mod error;
pub mod experiment;
pub mod fixtures;
pub mod model;
pub mod recording;
pub mod report;
pub mod rng;
pub mod scenario;
pub mod scheduler;
pub mod secrets;
pub mod witness;

pub use clock::VirtualClock;
pub use diagnostic::{Diagnostic, ErrorClass};
pub use error::{ArenaError, ERROR_CLASSES, ERROR_CODES};
pub use experiment::{ExperimentError, EXPERIMENT_ERROR_CLASSES, EXPERIMENT_ERROR_CODES};
pub use rng::{fnv1a64, ArenaRng};
pub use scenario::{
    load_scenario, load_scenario_with_bytes, parse_scenario, parse_scenario_bytes,
    parse_scenario_with_fixtures, parse_world_with_fixtures, world_bytes, Action, ActionKind,
    AdvanceAction, CallAction, DelegateAction, ExpectedVerdict, FaultAction, FaultLink,
    MessageAction, RevokeAction, Scenario, ScenarioText, ServerKind, Step, SCENARIO_SCHEMA_VERSION,
};
pub use scheduler::{DeterministicScheduler, ScheduleInput, ScheduledStep, SchedulerKind};
pub use witness::DeterminismWitness;
