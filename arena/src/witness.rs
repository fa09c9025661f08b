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

/// Where, in canonical JSON `text` that embeds a witness under the key
/// `determinism` and was printed with its `steps` empty, the witness's
/// empty `steps` array opens: the index just after its `[`, where a writer
/// puts the step ids (see `Scenario::write_witness_steps`). The witness's
/// keys before `steps` hold ids and fixed words, never a quote, so the
/// first `"steps":[]` after `"determinism":{` is the witness's own; `None`
/// when there is none before `before`.
pub fn empty_steps_at(text: &str, before: usize) -> Option<usize> {
    const EMPTY: &str = "\"steps\":[]";
    let open = text.find("\"determinism\":{")?;
    text[open..]
        .find(EMPTY)
        .map(|i| open + i + EMPTY.len() - 1)
        .filter(|i| *i < before)
}

impl DeterminismWitness {
    /// The witness as canonical JSON text.
    pub fn to_canonical_json(&self) -> Result<String, ArenaError> {
        Ok(chio_kernel::canonical::to_canonical_string(self)?)
    }
}
