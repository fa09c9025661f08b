//! The tuning and held-out halves of the AgentDojo user tasks.
//!
//! Within each suite the user tasks are ordered by the SHA-256 of
//! `<suite>/<task id>` (hex); the first half (rounded down) is held out,
//! the rest is the tuning half. Rules are designed on the tuning half's
//! figures; the held-out figures are computed once and reported as they
//! are. `scenarios/agentdojo/SPLIT` lists both halves and
//! `scenarios/agentdojo/SPLIT.sha256` its digest; a test checks both.

use std::collections::BTreeSet;

use sha2::{Digest, Sha256};

use super::model::Suite;

/// A half of the split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Half {
    Tuning,
    HeldOut,
}

impl Half {
    pub fn name(self) -> &'static str {
        match self {
            Half::Tuning => "tuning",
            Half::HeldOut => "held-out",
        }
    }
}

/// The hex SHA-256 of `bytes`.
pub fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The user tasks of `suite` in `half`, in AgentDojo's numeric order.
pub fn tasks_of(suite: &Suite, half: Half) -> Vec<&str> {
    let held = held_out(suite);
    suite
        .user_task_ids()
        .into_iter()
        .filter(|id| held.contains(id) == (half == Half::HeldOut))
        .collect()
}

/// The held-out user tasks of `suite`.
fn held_out(suite: &Suite) -> BTreeSet<&str> {
    let mut ids = suite.user_task_ids();
    ids.sort_by_key(|id| hex_sha256(format!("{}/{id}", suite.suite).as_bytes()));
    ids.truncate(ids.len() / 2);
    ids.into_iter().collect()
}

/// The `SPLIT` file: a line `<half> <suite>/<task>` per user task, held-out
/// first, suites in order, tasks in numeric order.
pub fn listing(suites: &[Suite]) -> String {
    let mut out = String::new();
    for half in [Half::HeldOut, Half::Tuning] {
        for suite in suites {
            for task in tasks_of(suite, half) {
                out.push_str(&format!("{} {}/{task}\n", half.name(), suite.suite));
            }
        }
    }
    out
}

/// Every held-out task as the table names it (`<suite> <task>`).
pub fn held_out_names(suites: &[Suite]) -> BTreeSet<String> {
    suites
        .iter()
        .flat_map(|s| held_out(s).into_iter().map(|t| format!("{} {t}", s.suite)))
        .collect()
}
