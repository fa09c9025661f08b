//! Chio Arena's scenario core: the `chio.arena.scenario/v1` format, its
//! fail-closed validation, the determinism contract a run obeys, the
//! evidence bundle and the run report.
//!
//! A scenario is one TOML file declaring agents, the world they act in
//! (nodes, kernels, tool servers, grants, guards, budgets) and a schedule of
//! steps with the verdicts they expect. This crate parses and validates it
//! completely before any kernel is touched, and provides the only sources of
//! time, randomness and order a run may use. Evaluating calls is the
//! kernel's job; dispatching them is the controller's.
//!
//! The arena's other rooms are crates of their own, built on this one and
//! never imported by it: the adversary search (`chio-adversary`), policy
//! matrices (`chio-experiment`) and pinned campaigns (`chio-campaign`).
//! Each renders its own report with the page frame of [`report`].
//!
//! Module map:
//! - [`bundle`]: the evidence bundle and run comparison;
//! - [`files`] reads a file as untrusted input: regular files only, bounded;
//! - [`output`] writes an output file whole, and only over a regular file;
//! - [`fixtures`] reads fixture folders, confined to the scenario's folder;
//! - [`model`] holds the file's tables as serde structs;
//! - [`adversaries`] holds the `[[adversaries]]` blocks: classes, genes,
//!   class parameters and goals, resolved at validation;
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
//!   with, and the docs anchor and URN derived from a code;
//! - [`report`] holds the self-contained HTML page of a run bundle and the
//!   page frame every report shares (pure: no I/O).
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod adversaries;
pub mod bundle;
pub mod clock;
pub mod diagnostic;
pub mod error;
pub mod files;
pub mod fixtures;
pub mod model;
pub mod output;
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
pub use rng::{fnv1a64, ArenaRng};
pub use scenario::{
    load_scenario, load_scenario_with_bytes, parse_scenario, parse_scenario_bytes,
    parse_scenario_with_fixtures, parse_world_with_fixtures, world_bytes, Action, ActionKind,
    AdvanceAction, CallAction, DelegateAction, ExpectedVerdict, FaultAction, FaultLink,
    MessageAction, RevokeAction, Scenario, ScenarioText, ServerKind, Step, SCENARIO_SCHEMA_VERSION,
};
pub use scheduler::{DeterministicScheduler, ScheduleInput, ScheduledStep, SchedulerKind};
pub use witness::DeterminismWitness;
