//! `chio arena validate FILE [--json]`.
//!
//! Loads and validates the scenario and prints its determinism witness:
//! with `--json` the canonical JSON document `chio.arena.validate/v1`
//! (`determinism`, `scenario_id`, `scenario_title`, `schema_version`),
//! otherwise a readable summary with the schedule. It writes nothing but
//! standard output, and nothing at all when the scenario is refused.

use std::io::Write;

use chio_arena::{load_scenario, Action, Scenario};
use serde::Serialize;

use crate::cli::ValidateArgs;
use crate::error::CliError;

const COMMAND: &str = "arena validate";

/// The schema of the `--json` document.
pub const VALIDATE_SCHEMA_VERSION: &str = "chio.arena.validate/v1";

#[derive(Serialize)]
struct ValidateReport<'a> {
    determinism: chio_arena::DeterminismWitness,
    scenario_id: &'a str,
    scenario_title: &'a str,
    schema_version: &'static str,
}

/// Runs the command, printing to `out`.
pub fn run(args: &ValidateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let scenario = load_scenario(&args.file)
        .and_then(|s| s.check_seed_prompts().map(|()| s))
        .map_err(|e| CliError::from_scenario_file(COMMAND, &args.file, &e))?;
    tracing::info!(
        scenario_id = scenario.id(),
        rng_seed = scenario.file().rng_seed,
        "scenario validated"
    );
    let refused = |e: chio_arena::ArenaError| CliError::from_arena(COMMAND, &e);
    let text = if args.json {
        let report = ValidateReport {
            determinism: scenario.determinism_witness().map_err(refused)?,
            scenario_id: scenario.id(),
            scenario_title: scenario.title(),
            schema_version: VALIDATE_SCHEMA_VERSION,
        };
        CliError::json_document(COMMAND, &report)?
    } else {
        summary(&scenario).map_err(refused)?
    };
    CliError::print(COMMAND, out, text.as_bytes())
}

/// The readable summary: the determinism witness, the schedule, flagged
/// tool definitions and the world.
fn summary(scenario: &Scenario) -> Result<String, chio_arena::ArenaError> {
    let w = scenario.determinism_witness()?;
    let clock = scenario.clock();
    let mut s = format!(
        "scenario {} is valid: {}\n",
        w.scenario_id,
        crate::term::printable(scenario.title())
    );
    s.push_str("determinism\n");
    for (key, value) in [
        ("schema_version", w.schema_version.clone()),
        ("rng_seed", w.rng_seed.to_string()),
        ("virtual_clock_start", w.virtual_clock_start.clone()),
        ("scheduler", w.scheduler.clone()),
        ("locale", w.locale.clone()),
        ("agents", w.agents.join(", ")),
        ("steps", w.steps.join(", ")),
    ] {
        s.push_str(&format!("  {key:<20} {value}\n"));
    }
    s.push_str(&schedule(scenario)?);
    // One line per tool definition the injection reader flags (tool
    // poisoning), naming where and the rule, never the text; none for a
    // world whose definitions are clean.
    for (kernel, found) in scenario.poisoned_definitions()? {
        let from = match found.from_ms {
            0 => String::new(),
            at => format!(
                " from {}",
                clock.format_offset_ms(at.saturating_sub(clock.now_ms()))
            ),
        };
        s.push_str(&format!(
            "flagged definition: {}/{} on {kernel}{from}: {}\n",
            found.server, found.tool, found.finding
        ));
    }
    if scenario.has_world() {
        let f = scenario.file();
        s.push_str(&format!(
            "world: {} nodes, {} kernels, {} servers, {} grants, {} guards\n",
            f.nodes.len(),
            f.kernels.len(),
            f.servers.len(),
            f.grants.len(),
            f.guards.len()
        ));
    } else {
        // The same words `arena run` refuses this scenario with.
        if let Err(refusal) = scenario.require_world() {
            s.push_str(&format!(
                "world: none declared; arena run refuses this scenario ({}): {}\n  {}\n",
                refusal.code(),
                refusal.summary(),
                refusal.help()
            ));
        }
    }
    Ok(s)
}

/// The schedule in execution order, one line per step: its instant, agent,
/// id and what it does, in columns as wide as the longest agent and step id.
fn schedule(scenario: &Scenario) -> Result<String, chio_arena::ArenaError> {
    let clock = scenario.clock();
    let mut s = String::from("schedule (execution order)\n");
    // Columns as wide as the longest agent and step id, so long ids stay aligned.
    let (mut agent_width, mut step_width) = (0, 0);
    for step in scenario.steps() {
        let step = step?;
        agent_width = agent_width.max(step.head.agent.chars().count());
        step_width = step_width.max(step.head.id.chars().count());
    }
    for entry in scenario.schedule() {
        let step = scenario.step(entry.step_index)?;
        let what = describe(&step.action);
        let what = match &step.head.expect_reason {
            Some(reason) => format!("{what} (reason contains {reason:?})"),
            None => what,
        };
        s.push_str(&format!(
            "  {}  {:<agent_width$}  {:<step_width$}  {}\n",
            clock.format_offset_ms(entry.evaluation_ms),
            step.head.agent,
            step.head.id,
            what
        ));
    }
    Ok(s)
}

/// What one step does, as the schedule prints it.
fn describe(action: &Action) -> String {
    match action {
        Action::Call(c) => format!(
            "call {}/{} expect {}{}",
            c.server,
            c.tool,
            serde_json::to_value(c.expect_verdict)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            c.capability
                .as_ref()
                .map(|cap| format!(" with {cap}"))
                .unwrap_or_default()
        ),
        Action::Delegate(d) => {
            format!("delegate {} to {} as {}", d.capability, d.to, d.delegation)
        }
        Action::Revoke(r) => format!("revoke {}", r.target),
        Action::Message(m) => match (&m.from_step, &m.handover) {
            (Some(source), _) => format!("message {} the output of {source}", m.to),
            (None, Some(handover)) => format!(
                "hand over to {} a value under its schema{}",
                m.to,
                if handover.expect.is_done() {
                    ""
                } else {
                    " (expected refused)"
                }
            ),
            (None, None) => format!("message {} literal content", m.to),
        },
        Action::Advance(a) => format!("advance {} ms", a.advance_ms),
        Action::Fault(f) => format!("fault: {}", f.describe()),
        Action::Redefine(r) => format!(
            "redefine {}/{} (definition digest {})",
            r.server, r.tool, r.digest
        ),
    }
}
