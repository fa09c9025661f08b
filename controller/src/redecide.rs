//! Evidence is verified by re-deciding it, not by reading it.
//!
//! A bundle's manifest holds fields no signature covers (whether a
//! delegation, revocation or hand-over took effect; that a call was denied
//! by its node before any kernel saw it; which receipts its log keeps), so
//! a bundle edited consistently can agree with itself and still claim what
//! never ran. The readers that present a bundle as evidence therefore
//! re-decide it, with the code path of `chio arena replay`
//! ([`crate::arena_replay::redecide`]): its scenario and fixtures run again
//! and the new run must be the recorded one, step for step and byte for
//! byte.
//!
//! - `chio campaign report` (and `chio report` of a ledger) re-decides each
//!   run's and replay's bundle ([`CampaignRedecider`], the
//!   `chio_campaign::evidence::Redecide` the portfolio asks), reading the
//!   sealed files a run read from the folder of the task's scenario file;
//! - `chio report` of a bundle re-decides it ([`verification`]) and frames
//!   the page red, naming each difference, when it drifts, or says its
//!   outcome is unverified when it cannot be re-decided (a run that read
//!   sealed files, which a bundle records only as digests);
//! - `chio arena explain` re-decides the bundle before it prints a step
//!   ([`differences`]), prints every difference above the step and exits
//!   with `CHIO-ARENA-DRIFT` when it drifts, and is refused when it cannot
//!   be re-decided (a run that read sealed files needs `--sealed-from`);
//! - `chio eval --from-bundle` re-decides the bundle before it builds an
//!   envelope from it (`crate::eval_bundle`), and refuses one that drifts
//!   or cannot be re-decided.
//!
//! Each reads the bundle's world one way (`Bundle::read_world`): a
//! recording of MCP servers' answers counts among its inputs whether the
//! bundle keeps it there or beside them.
//!
//! Re-deciding a bundle costs one embedded run of its scenario.

use std::path::Path;

use chio_arena::report::run::Verification;
use chio_campaign::evidence::{Redecide, Redecision};

use crate::arena_replay::redecide;
use crate::error::CliError;

/// Each difference re-deciding the bundle in `dir` finds (reading sealed
/// files below `sealed_from`), one a line naming the step and the field
/// (or the file); none when it re-decides to the recorded run. Why it
/// cannot be re-decided here is the error.
pub fn differences(
    command: &'static str,
    dir: &Path,
    sealed_from: Option<&Path>,
) -> Result<Vec<String>, CliError> {
    redecide(command, dir, sealed_from).map(|report| {
        if report.identical {
            Vec::new()
        } else {
            report.differences()
        }
    })
}

/// What re-deciding the bundle in `dir` gave, reading sealed files below
/// `sealed_from`: the same run, a run that differs (each difference in a
/// line), or why it cannot be re-decided here.
pub fn redecision(command: &'static str, dir: &Path, sealed_from: Option<&Path>) -> Redecision {
    match differences(command, dir, sealed_from) {
        Ok(lines) if lines.is_empty() => Redecision::Same,
        Ok(lines) => Redecision::Drifted(lines),
        Err(e) => Redecision::Undecidable(format!("{}: {}", e.code, e.message)),
    }
}

/// Re-decides the bundles a campaign's rows name.
#[derive(Debug, Clone, Copy)]
pub struct CampaignRedecider {
    /// The command that asks, named in a refusal.
    pub command: &'static str,
}

impl Redecide for CampaignRedecider {
    fn redecide(&self, bundle: &Path, scenario: &Path) -> Redecision {
        // The sealed files a run read lie below its scenario's folder.
        let folder = scenario
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        redecision(self.command, bundle, Some(folder))
    }
}

/// What `chio report` says of the bundle in `dir` once it is re-decided.
pub fn verification(command: &'static str, dir: &Path) -> Verification {
    match redecision(command, dir, None) {
        Redecision::Same => Verification::Redecided,
        Redecision::Drifted(lines) => Verification::Drifted(lines),
        Redecision::Undecidable(why) => Verification::Unverified(why),
    }
}
