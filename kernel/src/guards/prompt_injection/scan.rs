//! The scan: runs the enabled patterns over every reading of a text, then
//! over the JSON strings embedded in it, and walks a JSON value (every
//! object's shape, every key and string, then the string values read
//! together). The rules themselves live in `rules.rs`, `markup.rs`,
//! and `structure.rs`; what a finding means to a
//! call is the guard's business (`mod.rs`).

use serde_json::Value;

use super::describe;
use super::learned;
use super::normalise::{normalise, readings, Reading};
use super::rules::{self, Outcome, Views};
use super::structure::{self, Budget, ScanLimit, ValueKind, MAX_EMBEDDING};
use super::{Inspection, NearMiss, Pattern, RuleMatch, ValueFinding};
use crate::canonical::canonical_entries;
use crate::planted::{weakened, Weakness};

/// Scans one text with the enabled patterns; the first match, in
/// [`Pattern::DETECTED`] order, with JSON strings embedded in it scanned after
/// the text itself.
fn scan(
    text: &str,
    enabled: &[Pattern],
    level: usize,
    budget: &mut Budget,
) -> Result<Option<RuleMatch>, ScanLimit> {
    scan_described(text, None, enabled, level, budget)
}

/// [`scan`], with the plain reading's view for the verb rules given: for
/// values read together, each value's own clauses about attacks blanked out
/// (`describe.rs`), since a clause of one value does not open where the
/// value before it ends.
fn scan_described(
    text: &str,
    plain_described: Option<String>,
    enabled: &[Pattern],
    level: usize,
    budget: &mut Budget,
) -> Result<Option<RuleMatch>, ScanLimit> {
    let text = if weakened(Weakness::ShortScanWindow) {
        &text[..floor_boundary(text, crate::planted::SHORT_SCAN_WINDOW)]
    } else {
        text
    };
    let readings: Vec<(Reading, Views)> = readings(text)
        .into_iter()
        .map(|(reading, text)| (reading, Views::new(text)))
        .collect();
    let described = described_views(&readings, plain_described);
    budget.bytes(
        readings.iter().map(|(_, v)| v.len()).sum::<usize>()
            + described.iter().flatten().map(Views::len).sum::<usize>(),
    )?;
    let json = enabled.contains(&Pattern::JsonPayloadSmuggle);
    let mut structures = Vec::new();
    for (reading, views) in &readings {
        if matches!(
            reading,
            Reading::Plain | Reading::TagDecoded | Reading::Base64Decoded
        ) && views.flat.contains(['{', '['])
        {
            structures.push((*reading, structure::scan_text(&views.flat, json, budget)?));
        }
    }
    for pattern in Pattern::DETECTED
        .into_iter()
        .filter(|p| enabled.contains(p))
    {
        if pattern == Pattern::DelimiterConfusion && weakened(Weakness::DropDelimiterPattern) {
            continue;
        }
        let hit = if pattern == Pattern::JsonPayloadSmuggle {
            structures
                .iter()
                .find_map(|(reading, s)| s.smuggled.map(|rule| (*reading, rule)))
        } else if pattern == Pattern::Learned {
            readings.iter().find_map(|(reading, views)| {
                learned::check(&views.flat).map(|rule| (*reading, rule))
            })
        } else {
            text_rule_hit(pattern, &readings, &described)
        };
        if let Some((reading, rule)) = hit {
            return Ok(Some(RuleMatch {
                pattern,
                rule,
                reading,
                embedding: level,
            }));
        }
    }
    if weakened(Weakness::NoEmbeddedRescan) {
        return Ok(None);
    }
    for (_, found) in &structures {
        for inner in &found.embedded {
            if level >= MAX_EMBEDDING {
                return Err(ScanLimit::Embedding);
            }
            if let Some(hit) = scan(inner, enabled, level + 1, budget)? {
                return Ok(Some(hit));
            }
        }
    }
    Ok(None)
}

/// The verb rules' view of each reading: the reading with its clauses about
/// attacks blanked out (`describe.rs`), or `None` where it has none; for the
/// plain reading, `plain` when given.
fn described_views(readings: &[(Reading, Views)], plain: Option<String>) -> Vec<Option<Views>> {
    let mut plain = plain;
    readings
        .iter()
        .map(|(reading, views)| {
            let given = if *reading == Reading::Plain {
                plain.take()
            } else {
                None
            };
            match given {
                Some(given) => Some(Views::new(given)),
                None => describe::mask(&views.lines).map(Views::new),
            }
        })
        .collect()
}

/// The first reading on which a text rule of `pattern` fires, and the
/// rule; the two verb patterns read the described views where there are.
fn text_rule_hit(
    pattern: Pattern,
    readings: &[(Reading, Views)],
    described: &[Option<Views>],
) -> Option<(Reading, &'static str)> {
    let verbs = matches!(
        pattern,
        Pattern::IgnorePreviousInstructions | Pattern::SystemPromptLeak
    );
    readings
        .iter()
        .zip(described)
        .find_map(|((reading, views), described)| {
            let views = match described {
                Some(described) if verbs => described,
                _ => views,
            };
            match rules::check(pattern, views) {
                Outcome::Hit(rule) => Some((*reading, rule)),
                _ => None,
            }
        })
}

/// The largest character boundary of `text` at or below `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Whether one pattern's detector fires on `text` (a text past the scan
/// budget does not count as a firing here; see [`inspect`]).
pub fn detects(pattern: Pattern, text: &str) -> bool {
    matches!(
        scan(text, &[pattern], 0, &mut Budget::default()),
        Ok(Some(_))
    )
}

/// The first pattern (in [`Pattern::DETECTED`] order) detected in `text`.
pub fn detect(text: &str) -> Option<Pattern> {
    scan(text, &Pattern::DETECTED, 0, &mut Budget::default())
        .ok()
        .flatten()
        .map(|m| m.pattern)
}

/// Every pattern detected in `text`.
pub fn detect_all(text: &str) -> Vec<Pattern> {
    Pattern::DETECTED
        .into_iter()
        .filter(|p| detects(*p, text))
        .collect()
}

/// The detectors' full conclusion on `text`: which rule of each pattern
/// fired, how close the others came, and whether the scan budget ran out.
pub fn inspect(text: &str) -> Inspection {
    let mut inspection = Inspection::default();
    let mut budget = Budget::default();
    for pattern in Pattern::DETECTED {
        match scan(text, &[pattern], 0, &mut budget) {
            Ok(Some(found)) => inspection.matches.push(found),
            Ok(None) => {}
            Err(limit) => {
                inspection.limit = Some(limit);
                return inspection;
            }
        }
    }
    let plain = Views::new(normalise(text));
    for pattern in Pattern::DETECTED {
        if inspection.matches.iter().any(|m| m.pattern == pattern) {
            continue;
        }
        let near = if pattern == Pattern::JsonPayloadSmuggle {
            structure::scan_text(&plain.flat, false, &mut Budget::default())
                .ok()
                .and_then(|s| s.near)
                .map_or(Outcome::Miss, |(rule, closeness)| {
                    Outcome::Near(rule, closeness)
                })
        } else {
            rules::check(pattern, &plain)
        };
        if let Outcome::Near(rule, closeness) = near {
            if closeness > 0 {
                inspection.near_misses.push(NearMiss {
                    pattern,
                    rule,
                    closeness,
                });
            }
        }
    }
    inspection
}

/// One step of the value walk.
enum Work<'v> {
    /// A value and its pointer.
    Value(&'v Value, String),
    /// An object key and the pointer of its entry.
    Key(&'v str, String),
}

fn pointer_or_root(pointer: &str) -> String {
    if pointer.is_empty() {
        "/".to_string()
    } else {
        pointer.to_string()
    }
}

/// The shape of an object of a JSON value, for `json-payload-smuggle`.
fn value_shape(map: &serde_json::Map<String, Value>) -> Option<&'static str> {
    let mut shape = structure::ObjectShape::default();
    for (key, value) in canonical_entries(map) {
        let kind = match value {
            Value::String(s) => ValueKind::Str(s),
            Value::Object(_) => ValueKind::Object,
            Value::Array(_) => ValueKind::Array,
            _ => ValueKind::Other,
        };
        shape.add(key, kind);
    }
    shape.suspicious_value()
}

/// Scans a JSON value with `patterns`: every object's shape and every key
/// and string (in canonical document order, objects by RFC 8785 key order,
/// depth first), then the string values read together, forwards and
/// backwards. The walk keeps its own stack, so no nesting is too deep for
/// it; the scan budget bounds the work and running out of it is a finding.
///
/// A finding of the learned rule (`ngram-model`) waits while the walk goes
/// on: a hand-written rule found anywhere later, the joined values
/// included, is the finding instead, because its reason says what it
/// read. The value is refused either way, so which finding is reported
/// never changes a verdict; the budget running out after a learned finding
/// reports the learned finding.
pub fn scan_value(value: &Value, patterns: &[Pattern]) -> Option<ValueFinding> {
    let mut learned: Option<ValueFinding> = None;
    let finding = walk_value(value, patterns, &mut learned);
    match finding {
        Some(ValueFinding::Limit { .. }) | None => learned.or(finding),
        Some(found) => Some(found),
    }
}

/// Whether a finding is the learned rule's.
fn is_learned(finding: &ValueFinding) -> bool {
    matches!(
        finding,
        ValueFinding::At { found, .. } | ValueFinding::Split { found }
            if found.pattern == Pattern::Learned
    )
}

/// The walk of [`scan_value`]: the first hand-written finding or limit;
/// the first learned finding is kept in `learned` and the walk goes on.
fn walk_value(
    value: &Value,
    patterns: &[Pattern],
    learned: &mut Option<ValueFinding>,
) -> Option<ValueFinding> {
    let mut budget = Budget::default();
    let json = patterns.contains(&Pattern::JsonPayloadSmuggle);
    let mut values: Vec<&str> = Vec::new();
    let mut stack = vec![Work::Value(value, String::new())];
    while let Some(work) = stack.pop() {
        let at = match &work {
            Work::Value(_, pointer) | Work::Key(_, pointer) => pointer,
        };
        if let Err(limit) = budget.node() {
            return Some(ValueFinding::Limit {
                limit,
                pointer: pointer_or_root(at),
            });
        }
        let (text, pointer) = match work {
            Work::Key(key, pointer) => (key, pointer),
            Work::Value(Value::String(text), pointer) => {
                values.push(text);
                (text.as_str(), pointer)
            }
            Work::Value(Value::Array(items), pointer) => {
                if let Err(limit) = budget.reserve(items.len()) {
                    return Some(ValueFinding::Limit {
                        limit,
                        pointer: pointer_or_root(&pointer),
                    });
                }
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push(Work::Value(item, format!("{pointer}/{i}")));
                }
                continue;
            }
            Work::Value(Value::Object(map), pointer) => {
                if let Some(finding) = expand_object(map, &pointer, json, &mut budget, &mut stack) {
                    return Some(finding);
                }
                continue;
            }
            Work::Value(_, _) => continue,
        };
        match scan(text, patterns, 0, &mut budget) {
            Ok(Some(found)) => {
                let finding = ValueFinding::At {
                    found,
                    pointer: pointer_or_root(&pointer),
                };
                if !is_learned(&finding) {
                    return Some(finding);
                }
                learned.get_or_insert(finding);
            }
            Ok(None) => {}
            Err(limit) => {
                return Some(ValueFinding::Limit {
                    limit,
                    pointer: pointer_or_root(&pointer),
                })
            }
        }
    }
    scan_joined(values, patterns, &mut budget, learned)
}

/// Pushes an object's entries onto the walk in canonical key order (each
/// key before its value); a finding when the budget runs out or, with
/// `json-payload-smuggle` enabled, the object's shape is suspicious.
fn expand_object<'v>(
    map: &'v serde_json::Map<String, Value>,
    pointer: &str,
    json: bool,
    budget: &mut Budget,
    stack: &mut Vec<Work<'v>>,
) -> Option<ValueFinding> {
    if let Err(limit) = budget.reserve(map.len().saturating_mul(2)) {
        return Some(ValueFinding::Limit {
            limit,
            pointer: pointer_or_root(pointer),
        });
    }
    if let Some(rule) = value_shape(map).filter(|_| json) {
        return Some(ValueFinding::At {
            found: RuleMatch {
                pattern: Pattern::JsonPayloadSmuggle,
                rule,
                reading: Reading::Plain,
                embedding: 0,
            },
            pointer: pointer_or_root(pointer),
        });
    }
    // Canonical key order: the walk, and so the first finding and
    // the joined values, are the signed document's whatever
    // order the request's map holds its keys in.
    for (key, item) in canonical_entries(map).into_iter().rev() {
        let entry = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
        stack.push(Work::Value(item, entry.clone()));
        stack.push(Work::Key(key, entry));
    }
    None
}

/// Scans the non-empty string values read together, joined with and
/// without a space, forwards and backwards; a learned finding is kept in
/// `learned` (if none is yet) and the joins go on.
fn scan_joined(
    values: Vec<&str>,
    patterns: &[Pattern],
    budget: &mut Budget,
    learned: &mut Option<ValueFinding>,
) -> Option<ValueFinding> {
    let values: Vec<&str> = values.into_iter().filter(|v| !v.is_empty()).collect();
    if values.len() < 2 || weakened(Weakness::NoSplitJoin) {
        return None;
    }
    // Read together forwards and backwards: a payload split over two
    // values is caught whichever of their keys sorts first.
    let backwards: Vec<&str> = values.iter().rev().copied().collect();
    // Each value's plain reading with its own clauses about attacks blanked
    // out, if any value has one.
    let described: Vec<(String, bool)> = values
        .iter()
        .map(|v| {
            let plain = normalise(v);
            match describe::mask(&plain) {
                Some(masked) => (masked, true),
                None => (plain, false),
            }
        })
        .collect();
    let any_described = described.iter().any(|(_, masked)| *masked);
    let described_join = |order: &mut dyn Iterator<Item = &(String, bool)>, separator: &str| {
        any_described.then(|| {
            order
                .map(|(text, _)| text.as_str())
                .collect::<Vec<_>>()
                .join(separator)
        })
    };
    let joins = [" ", ""].into_iter().flat_map(|separator| {
        [
            (
                values.join(separator),
                described_join(&mut described.iter(), separator),
            ),
            (
                backwards.join(separator),
                described_join(&mut described.iter().rev(), separator),
            ),
        ]
    });
    for (joined, plain_described) in joins {
        match scan_described(&joined, plain_described, patterns, 0, budget) {
            Ok(Some(found)) => {
                let finding = ValueFinding::Split { found };
                if !is_learned(&finding) {
                    return Some(finding);
                }
                learned.get_or_insert(finding);
            }
            Ok(None) => {}
            Err(limit) => {
                return Some(ValueFinding::Limit {
                    limit,
                    pointer: "/".to_string(),
                })
            }
        }
    }
    None
}
