//! The determinism witness.
//!
//! The witness is the projection of a scenario that fixes a run's bytes:
//! `{agents, locale, rng_seed, scenario_id, scheduler, schema_version,
//! steps, virtual_clock_start}`, agents and steps in declaration order. It
//! prints only as canonical JSON (RFC 8785, keys sorted), through the
//! kernel's canonical writer, so the same scenario gives the same bytes on
//! every machine. Outputs such as `arena validate` and the bundle manifest
//! embed it; this module only owns its shape.

use serde::{Deserialize, Serialize};

use crate::error::ArenaError;

/// What a replay must agree on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeterminismWitness {
    /// Agent ids in declaration order.
    pub agents: Vec<String>,
    /// The locale outputs are produced under (always `C`).
    pub locale: String,
    /// The seed of every random stream.
    pub rng_seed: u64,
    /// The scenario's id.
    pub scenario_id: String,
    /// The scheduler's name.
    pub scheduler: String,
    /// The scenario's schema version.
    pub schema_version: String,
    /// Step ids in declaration order.
    pub steps: Vec<String>,
    /// The start instant exactly as written.
    pub virtual_clock_start: String,
}

impl DeterminismWitness {
    /// The witness as canonical JSON text.
    pub fn to_canonical_json(&self) -> Result<String, ArenaError> {
        Ok(chio_kernel::canonical::to_canonical_string(self)?)
    }
}
