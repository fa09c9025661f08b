//! `chio eval --from-bundle BUNDLE STEP`: the portable-evaluation envelope
//! of a call a run recorded.
//!
//! The bundle keeps the scenario it ran (`inputs/scenario.toml`, with its
//! fixtures), and a scenario's world is a pure function of its bytes: the
//! arena keys, and the capability tokens its grants issue, are derived
//! again exactly as the run derived them. The envelope is then the step's
//! request (its id is the step id, as in the run; the agent is the acting
//! agent's arena public key; server, tool and arguments as written), the
//! token the step presented, the arena authority as the one trusted
//! issuer, and the clock at which the step was decided (its receipt's
//! instant, to the millisecond, as `clock_override_unix_ms`: the kernel
//! compared the token's window with that millisecond, so a call it refused
//! as expired 1 ms after expiry is refused here too; `--now-unix-secs`
//! moves it to the start of that second).
//!
//! Refused, as `CHIO-EVAL-FROM-BUNDLE` naming the step: a step that is not
//! a call, a call that presents a delegation (its link is signed during the
//! run, so the scenario alone does not hold it), a call that was never
//! decided (no receipt), and a call whose arguments the run resolved from
//! earlier values or sealed files: the envelope's arguments must hash to
//! the receipt's `parameter_hash`, so the envelope is the recorded call or
//! nothing. An unknown step is `CHIO-ARENA-UNKNOWN-STEP`.
//!
//! The bundle is evidence only once it holds up as `chio report` holds it:
//! it must agree with its own signed receipts, and then be re-decided
//! ([`crate::redecide::redecision`], the one re-decision path): its
//! scenario and fixtures run again, embedded, and the new run must be the
//! recorded one. What no signature covers, the scenario among its inputs
//! included, can be edited consistently with the manifest (its digest
//! rewritten too), and the envelope is derived from that scenario, so a
//! bundle that drifts is refused (`CHIO-ARENA-BUNDLE`, naming the first
//! step that drifted), never answered from. So is one that cannot be
//! re-decided here: a run that read sealed files needs the folder they were
//! read from (`--sealed-from`), and one of MCP servers the recording of
//! their answers.

use std::path::Path;

use chio_arena::bundle::{Bundle, StepRecord, SCENARIO_INPUT};
use chio_arena::scenario::actions::Action;
use chio_arena::ActionKind;
use chio_kernel::keys::public_key_hex;
use chio_kernel::receipt::canonical_sha256;
use chio_node::world::World;
use serde_json::{json, Value};

use chio_campaign::evidence::Redecision;

use crate::arena_replay::read_verified_bundle;
use crate::error::{codes, CliError};

const COMMAND: &str = "eval";

fn refused(step: &str, why: String) -> CliError {
    CliError::new(
        codes::EVAL_FROM_BUNDLE,
        COMMAND,
        format!("cannot build an envelope from step {step}: {why}"),
        "name a call step of the bundle that presents a grant's capability with literal arguments (chio arena explain BUNDLE STEP shows the step)",
    )
}

/// The envelope of step `step` of the bundle in `dir`, once the bundle
/// holds up when re-decided, reading the sealed files its run read below
/// `sealed_from`; `now_unix_secs` replaces the recorded clock when given.
pub fn envelope_from_bundle(
    dir: &Path,
    step: &str,
    now_unix_secs: Option<u64>,
    sealed_from: Option<&Path>,
) -> Result<Value, CliError> {
    let bundle = read_verified_bundle(COMMAND, dir)?;
    let record = recorded_call(&bundle, step)?;
    let receipt = recorded_receipt(&bundle, record.receipt_id.as_deref()).ok_or_else(|| {
        refused(
            step,
            "no kernel decided it (the bundle holds no receipt for it)".into(),
        )
    })?;
    let scenario_path = dir.join("inputs").join(SCENARIO_INPUT);
    // The bundle never holds the files a scenario seals, and a call whose
    // arguments take one is refused below: the scenario is read without
    // them, so every other call of it can be evaluated.
    let scenario = chio_arena::scenario::load::load_scenario_unsealed(&scenario_path)
        .map_err(|e| CliError::from_scenario_file(COMMAND, &scenario_path, &e))?;
    scenario
        .require_world()
        .map_err(|e| CliError::from_arena(COMMAND, &e))?;
    let world = World::resolve_parties(&scenario).map_err(|e| CliError::node(COMMAND, &e))?;
    let step_decl = scenario
        .steps()
        .filter_map(Result::ok)
        .find(|s| s.head.id == step)
        .ok_or_else(|| refused(step, "the bundle's scenario does not declare it".into()))?;
    let Action::Call(call) = &step_decl.action else {
        return Err(refused(
            step,
            "the bundle's scenario does not declare it as a call".into(),
        ));
    };
    let capability_id = call
        .capability
        .as_deref()
        .ok_or_else(|| refused(step, "it presents no capability".into()))?;
    let (_, token) = world.grants.get(capability_id).ok_or_else(|| {
        refused(
            step,
            format!("it presents delegation {capability_id}, whose link the run signed; only a grant's capability can be rebuilt from the scenario"),
        )
    })?;
    let agent = world.agents.get(&record.agent).ok_or_else(|| {
        refused(
            step,
            format!("its agent {} is not in the world", record.agent),
        )
    })?;
    let recorded_hash = receipt["body"]["parameter_hash"].as_str().unwrap_or("");
    let hash = canonical_sha256(&call.arguments).map_err(|e| {
        refused(
            step,
            format!("its arguments have no canonical form to compare with the receipt's parameter hash: {e}"),
        )
    })?;
    if hash != recorded_hash {
        return Err(refused(
            step,
            "its arguments were resolved during the run (earlier values or sealed files), so the scenario does not hold the arguments the kernel decided".into(),
        ));
    }
    // The step can be rebuilt; the bundle must now hold up as evidence.
    held_up(dir, sealed_from)?;
    let mut envelope = json!({
        "request": {
            "request_id": step,
            "server": call.server,
            "tool": call.tool,
            "agent_id": public_key_hex(&agent.key),
            "arguments": call.arguments,
        },
        "capability": token,
        "trusted_issuers_hex": [public_key_hex(&world.authority)],
    });
    let (field, clock) = clock(&receipt, now_unix_secs);
    envelope[field] = json!(clock);
    Ok(envelope)
}

/// Refuses the bundle in `dir` unless re-deciding it (reading sealed files
/// below `sealed_from`) gives the recorded run: a bundle that drifts is
/// named by its first difference (the first step that drifted, when one
/// did), one that cannot be re-decided by why.
fn held_up(dir: &Path, sealed_from: Option<&Path>) -> Result<(), CliError> {
    let cause = match crate::redecide::redecision(COMMAND, dir, sealed_from) {
        Redecision::Same => return Ok(()),
        Redecision::Drifted(lines) => format!(
            "re-deciding it gives another run: {}{}; its scenario or another file no signature covers was changed after its run, so no call of it is evaluated",
            lines.first().map_or("", String::as_str),
            match lines.len() {
                0 | 1 => String::new(),
                n => format!(" (and {} more difference(s))", n - 1),
            }
        ),
        Redecision::Undecidable(why) => format!(
            "it cannot be re-decided here ({why}), so it does not hold up as evidence and no call of it is evaluated"
        ),
    };
    let shown = crate::term::printable(&dir.display().to_string()).into_owned();
    let err = chio_arena::ArenaError::Bundle {
        path: shown.clone(),
        cause: crate::term::printable(&cause).into_owned(),
    };
    Err(CliError {
        help: format!(
            "`chio arena replay {shown}` names each difference; pass --sealed-from FOLDER (the folder of the scenario it was run from) for a run that read sealed files, or run the scenario again"
        ),
        ..CliError::from_arena(COMMAND, &err)
    })
}

/// The envelope's clock field and value: `--now-unix-secs` when given,
/// else the receipt's instant. The kernel decided at the receipt's
/// millisecond and compared the token's window with it, so the envelope
/// keeps that instant, never a second rounded toward (or away from)
/// validity.
fn clock(receipt: &Value, now_unix_secs: Option<u64>) -> (&'static str, u64) {
    match now_unix_secs {
        Some(secs) => ("clock_override_unix_secs", secs),
        None => (
            "clock_override_unix_ms",
            receipt["body"]["timestamp_ms"].as_u64().unwrap_or(0),
        ),
    }
}

/// The bundle's record of call step `step`.
fn recorded_call<'b>(bundle: &'b Bundle, step: &str) -> Result<&'b StepRecord, CliError> {
    let record = bundle
        .manifest
        .steps
        .iter()
        .find(|s| s.step_id == step)
        .ok_or_else(|| {
            let recorded: Vec<&str> = bundle
                .manifest
                .steps
                .iter()
                .map(|s| s.step_id.as_str())
                .collect();
            CliError::new(
                codes::UNRECORDED_STEP,
                COMMAND,
                format!("the bundle records no step {step}"),
                format!("name one of: {}", recorded.join(", ")),
            )
        })?;
    if record.action != ActionKind::Call {
        return Err(refused(
            step,
            format!("it is a {} step", record.action.as_str()),
        ));
    }
    Ok(record)
}

/// The receipt line with id `id`, parsed.
fn recorded_receipt(bundle: &Bundle, id: Option<&str>) -> Option<Value> {
    let id = id?;
    bundle
        .receipts
        .iter()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|r| r["id"] == id)
}
