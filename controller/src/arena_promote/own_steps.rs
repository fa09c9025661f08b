//! The scenario promote writes cases for must meet its own steps.
//!
//! A regression case shows that the scenario stops a mutated call while
//! the call it mutates is still admitted. A scenario that refuses its own
//! steps (a "fixed twin" that narrows a grant so the step it mutates,
//! expected allowed, is denied) stops every mutation of that step for a
//! reason no guard decides, so every action would count as stopped and
//! the fix as held. So before anything is evaluated, the scenario is run
//! once, embedded, every step whatever its verdict, and refused
//! (`CHIO-ARENA-PROMOTE-SCENARIO-FAILS`) unless every step it schedules
//! gets what it expects, naming the first that does not, its expected and
//! its observed outcome.

use std::collections::BTreeMap;
use std::path::Path;

use super::COMMAND;
use crate::arena_run::{load_for_run, runtime};
use crate::driver::{run_embedded, ReadBack, RunOptions};
use crate::error::{codes, CliError};

/// Refuses the scenario in `file` unless a run of it meets every step's
/// expectation.
pub(super) fn check(file: &Path) -> Result<(), CliError> {
    let (scenario, inputs) = load_for_run(COMMAND, file)?;
    let scratch = ReadBack::new().map_err(|e| CliError::node(COMMAND, &e))?;
    let run = runtime(COMMAND)?.block_on(run_embedded(
        &scenario,
        &inputs,
        RunOptions::keep_going(true),
        &BTreeMap::new(),
        scratch.out(),
    ));
    let run = scratch
        .bundle(run)
        .map_err(|e| CliError::node(COMMAND, &e))?;
    let steps = &run.bundle.manifest.steps;
    let Some(step) = steps.iter().find(|s| s.pass == Some(false)) else {
        return Ok(());
    };
    let failing = steps.iter().filter(|s| s.pass == Some(false)).count();
    let shown = |o: Option<&chio_arena::bundle::StepOutcome>| {
        o.map_or("-".to_string(), ToString::to_string)
    };
    Err(CliError::new(
        codes::PROMOTE_SCENARIO_FAILS,
        COMMAND,
        format!(
            "{} does not meet its own steps: step {} expects {}{}, and a run of it gives {}{}{}; a scenario that refuses the calls its adversaries mutate stops every mutation for that reason alone, so no case of it shows a fix, and nothing was written",
            file.display(),
            step.step_id,
            shown(step.expected.as_ref()),
            step.expected_reason
                .as_deref()
                .map_or(String::new(), |r| format!(" ({r})")),
            shown(step.actual.as_ref()),
            step.reason
                .as_deref()
                .map_or(String::new(), |r| format!(" ({})", crate::term::printable(r))),
            match failing {
                1 => String::new(),
                n => format!(" ({} more step(s) fail)", n - 1),
            }
        ),
        "fix the scenario so that `chio arena run FILE` passes (a fix narrows the mutated calls, not the calls the scenario expects), then promote again",
    ))
}
