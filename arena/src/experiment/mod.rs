//! Experiments: what the arena runs many scenarios for, and the protocols
//! that make their figures comparable.
//!
//! - [`matrix`]: policy matrices (cells over a base scenario), their run
//!   protocol (repetitions, concurrency, timeouts, attempts, resume), the
//!   validity conditions, paired bootstrap verdicts and the synthesis;
//! - [`campaign`]: pinned campaigns, definition hashes (from the working
//!   tree or, through the `git` command, a pinned revision), attempt
//!   ledgers and the portfolio report;
//! - [`error`]: [`ExperimentError`], the error table both share.
//!
//! The scenario core (the rest of this crate) knows nothing of this
//! module; the adversary room ([`crate::adversary`]) is used by matrices
//! only through the populations a cell's scenario declares.

pub mod campaign;
pub mod error;
pub mod matrix;

pub use error::{ExperimentError, EXPERIMENT_ERROR_CLASSES, EXPERIMENT_ERROR_CODES};
