//! References to earlier values: a call's arguments and a hand-over's
//! value resolved against the run's released outputs and delivered
//! hand-overs, and the provenance each reference carries.
//!
//! A reference carries the labels the serving kernel recorded for the part
//! it takes, the record of a delivered hand-over, and what the part carries
//! from what its call sent (a part that repeats an argument, or that its
//! server computed from the arguments: `chio_kernel::provenance`). Calls
//! (`super::call`) and messages (`super::message`) read the same
//! provenance, so a value carries the same labels whichever step sends it
//! on. The kernels read the records it names (`chio_kernel::label`).

use chio_arena::scenario::value::{self, Reference, Resolution, Unresolved};
use chio_kernel::label::{Integrity, Label};
use chio_kernel::provenance::{integrity_at, ArgumentSource};
use serde_json::Value;

use super::{ReleasedOutput, StepExecutor};
use crate::outage::NodeReason;

/// The scalars `released`'s call was sent that the part of its output at
/// `pointer` repeats (`chio_kernel::provenance::Echoes::repeats`: a string
/// equal, or sharing a run of 8 characters, in any form a server may give
/// back what it was sent: percent-decoded, normalised as a path, in
/// another case; a number of the same exact value, as a number or as the
/// string that writes it; a boolean equal).
pub(super) fn echoed<'r>(
    released: &'r ReleasedOutput,
    pointer: &str,
) -> Vec<&'r (Value, Option<ArgumentSource>)> {
    let Ok(output) = &released.value else {
        return Vec::new();
    };
    if released.sent.is_empty() {
        return Vec::new();
    }
    let Ok(part) = value::at_pointer(output, pointer) else {
        return Vec::new();
    };
    let echoes = chio_kernel::provenance::Echoes::of(&part);
    released
        .sent
        .iter()
        .filter(|(sent, _)| echoes.repeats(sent))
        .collect()
}

/// The provenance of what the call that released `released` sent, which
/// the part at `pointer` carries, placed at `at`: of every argument when
/// the server computed the part from what it was sent (a value
/// normalised, translated or assembled from a handed-over one), else of
/// the arguments it repeats ([`echoed`]: a path built from a handed-over
/// value, echoed back); each once.
fn carried_sources(released: &ReleasedOutput, pointer: &str, at: &str) -> Vec<ArgumentSource> {
    let carried: Vec<&ArgumentSource> = match (&released.computed_from, computed(released, pointer))
    {
        (Some(every), true) => every.iter().collect(),
        _ => echoed(released, pointer)
            .into_iter()
            .filter_map(|(_, source)| source.as_ref())
            .collect(),
    };
    let mut sources: Vec<ArgumentSource> = Vec::new();
    for source in carried {
        let placed = ArgumentSource {
            pointer: at.to_string(),
            ..source.clone()
        };
        if !sources.contains(&placed) {
            sources.push(placed);
        }
    }
    sources
}

/// Whether the part of `released` at `pointer` was computed by its server
/// from what its call sent
/// (`chio_kernel::provenance::OutputRules::computed_part`, for a call that
/// sent anything): the caller's as much as the server's, so it carries
/// what every argument carried, and a reader that hands it over chose it.
pub(super) fn computed(released: &ReleasedOutput, pointer: &str) -> bool {
    match (&released.value, &released.computed_from) {
        (Ok(output), Some(_)) => released.rules.computed_part(output, pointer),
        _ => false,
    }
}

/// The node's reason for a value whose resolution stopped: `step` gives
/// the reason of a reference to a step that found no value (its place,
/// step, pointer and why); a sealed file not read and a malformed
/// reference read the same for calls and hand-overs.
pub(super) fn unresolved(
    stopped: Resolution<Unresolved>,
    step: impl FnOnce(String, String, String, Unresolved) -> NodeReason,
) -> NodeReason {
    match stopped {
        Resolution::Unanswered {
            at,
            reference:
                Reference::Step {
                    step: source,
                    pointer,
                },
            why,
        } => step(at, source, pointer, why),
        Resolution::Unanswered {
            at,
            reference: Reference::Fixture { path },
            why,
        } => NodeReason::SealedUnresolved {
            argument: at,
            path,
            why,
        },
        Resolution::Malformed(malformed) => NodeReason::ReferenceMalformed {
            argument: malformed.at,
            problem: malformed.problem,
        },
    }
}

/// A value built by reference is bounded as an answer is: what one process
/// would send, every topology sends, or none does. Out of bounds, the
/// first reference of `value` is named as what made `resolved` so.
fn within_bounds(value: &Value, resolved: &Value) -> Result<(), Resolution<Unresolved>> {
    if chio_arena::recording::answer_out_of_bounds(resolved).is_none() {
        return Ok(());
    }
    match value::references(value)
        .map_err(Resolution::Malformed)?
        .into_iter()
        .next()
    {
        Some(first) => Err(Resolution::Unanswered {
            at: first.at,
            reference: first.reference,
            why: Unresolved::OutOfBounds,
        }),
        None => Ok(()),
    }
}

/// `value` with every reference resolved against the run's released
/// outputs and delivered hand-overs, and the provenance of each reference
/// whose source carries labels or a record (in document order).
pub(super) fn resolve_value(
    executor: &StepExecutor,
    value: &Value,
) -> Result<(Value, Vec<ArgumentSource>), Resolution<Unresolved>> {
    if !value::has_references(value) {
        return Ok((value.clone(), Vec::new()));
    }
    let mut lookup = |reference: &Reference| match reference {
        Reference::Step { step, pointer } => match executor.outputs.get(step) {
            Some(released) => match &released.value {
                Ok(output) => value::at_pointer(output, pointer),
                Err(why) => Err(why.clone()),
            },
            // Validation orders every source before its reader, so a source
            // with no outcome yet is a call still in flight.
            None => Err(Unresolved::InFlight),
        },
        Reference::Fixture { path } => executor
            .sealed
            .get(path)
            .map(|sealed| Value::String(sealed.text().to_string()))
            .ok_or(Unresolved::Unsealed),
    };
    let resolved = value::resolve(value, &mut lookup)?;
    within_bounds(value, &resolved)?;
    let mut sources = Vec::new();
    for placed in value::references(value).map_err(Resolution::Malformed)? {
        // A sealed file is the scenario's own text: it carries no label.
        let Reference::Step { step, pointer } = &placed.reference else {
            continue;
        };
        if let Some(released) = executor.outputs.get(step) {
            sources.extend(reference_sources(released, pointer, &placed.at));
        }
    }
    Ok((resolved, sources))
}

/// The provenance a reference to the part of `released` at `pointer`,
/// placed at `at`, carries: what the call sent that the part repeats or
/// was computed from ([`carried_sources`]), then the part's own labels
/// and hand-over record, when it has any.
pub(super) fn reference_sources(
    released: &ReleasedOutput,
    pointer: &str,
    at: &str,
) -> Vec<ArgumentSource> {
    let mut sources = carried_sources(released, pointer, at);
    let labels = part_labels(released, pointer);
    if !labels.is_empty() || released.record.is_some() {
        sources.push(ArgumentSource {
            pointer: at.to_string(),
            labels,
            record: released.record.clone(),
            sender: released.sender.clone(),
        });
    }
    sources
}

/// The labels the serving kernel recorded for the part of `released` at
/// `pointer` (`public` left out): its label, and its integrity, which is
/// the part's own where the server declares parts.
fn part_labels(released: &ReleasedOutput, pointer: &str) -> Vec<String> {
    let public = |label: &&String| label.as_str() != Label::Public.as_str();
    match (&released.value, released.rules.fields.is_empty()) {
        // Declared parts: the integrity of the part the reference takes.
        (Ok(output), false) => {
            let base = released
                .integrity
                .as_deref()
                .and_then(Integrity::from_label)
                .unwrap_or(Integrity::Trusted);
            released
                .label
                .iter()
                .filter(public)
                .cloned()
                .chain(integrity_at(output, pointer, base, &released.rules.fields).label())
                .collect()
        }
        _ => released
            .label
            .iter()
            .chain(released.integrity.iter())
            .filter(public)
            .cloned()
            .collect(),
    }
}
