//! SARIF 2.1.0 reports (`chio arena evolve --sarif PATH`): every adversary
//! action that escaped the guard pipeline becomes a result a code-scanning
//! tool shows against the scenario file.
//!
//! One rule per adversary class (rule id = the class's kebab-case token, in
//! `AdversaryClass::ALL` order) sits in the tool's driver; every escape of
//! every generation, each action id once, is a result at level `error`
//! whose message names the population, its class and lineage, the action
//! and the step it mutated (and, for a bred action, its operator sequence
//! in words). Its location is the scenario file (the path as
//! given on the command line, as a URI reference) at the line of the
//! `[[steps]]` header of the step the action mutates; the `[[adversaries]]`
//! header of the population's lineage is a related location (and the
//! location itself when the step's header cannot be found). Lines are found
//! by counting the `[[steps]]` and `[[adversaries]]` headers in the file's
//! text: the n-th header of each is the n-th declaration.
//!
//! The document is a pure function of the scenario and the evolution: no
//! timestamps, no host names, results ordered by rule, population and action
//! id (a `BTreeMap`), keys in the order written here.

use std::collections::BTreeMap;
use std::path::Path;

use chio_arena::adversary::coevolution::EvolutionResult;
use chio_arena::adversary::fitness::{ActionRecord, ActionResult};
use chio_arena::adversary::{describe, AdversaryClass};
use chio_arena::Scenario;
use serde_json::{json, Value};

/// The SARIF version written.
pub const SARIF_VERSION: &str = "2.1.0";
/// The schema URI the document names.
pub const SARIF_SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// What a rule says about its class, for people reading the alert.
fn rule_text(class: AdversaryClass) -> (&'static str, &'static str, &'static str) {
    match class {
        AdversaryClass::PromptInjection => (
            "PromptInjectionEscape",
            "A prompt-injection payload reached a tool call the guard pipeline admitted.",
            "An injection payload placed in a call's arguments, or in a fixture the call reads, was admitted instead of denied. Enforce the prompt-injection guard on the kernel that serves the step (mode = \"enforce\") and scan both arguments and output.",
        ),
        AdversaryClass::CapabilityOverrequest => (
            "CapabilityOverrequestEscape",
            "A call to a server or tool outside the presented capability was admitted.",
            "A call that swapped the server or tool of an admitted step was admitted although the capability does not cover it. Narrow the grant's tools or server, or check the kernel's scope checks.",
        ),
        AdversaryClass::ReplayAttempt => (
            "ReplayAttemptEscape",
            "A replayed request or nonce was admitted.",
            "A captured request was admitted a second time. Check the kernel's nonce and expiry handling for the step's capability.",
        ),
        AdversaryClass::ScopeEscape => (
            "ScopeEscapeEscape",
            "A delegation wider than its parent capability was admitted.",
            "A delegation link that widened its parent's scope (tool, path, server, expiry or share) was honoured. Check the delegation chain's attenuation checks.",
        ),
    }
}

/// The 1-based lines of every `[[NAME]]` header in `text`, in order.
pub fn header_lines(text: &str, name: &str) -> Vec<u64> {
    text.lines()
        .enumerate()
        .filter_map(|(n, line)| {
            let line = line.trim();
            let inner = line.strip_prefix("[[")?;
            let end = inner.find("]]")?;
            let rest = inner[end + 2..].trim_start();
            if !(rest.is_empty() || rest.starts_with('#')) {
                return None;
            }
            (inner[..end].trim() == name).then_some(n as u64 + 1)
        })
        .collect()
}

/// A scenario path as a SARIF `uri`: a relative path stays relative (with
/// `/` separators and percent-encoding), an absolute one becomes `file://`.
pub fn path_uri(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let text = text.strip_prefix("./").unwrap_or(&text).to_string();
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(byte as char)
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    if path.is_absolute() {
        format!(
            "file://{}{out}",
            if out.starts_with('/') { "" } else { "/" }
        )
    } else {
        out
    }
}

/// One escape, as found in the trace.
struct Escape<'a> {
    generation: u32,
    class: AdversaryClass,
    population: &'a str,
    lineage: &'a str,
    record: &'a ActionRecord,
}

/// A `physicalLocation` in the scenario file, at `line` when known.
fn physical(uri: &str, line: Option<u64>) -> Value {
    match line {
        Some(line) => json!({
            "artifactLocation": { "uri": uri, "index": 0 },
            "region": { "startLine": line },
        }),
        None => json!({ "artifactLocation": { "uri": uri, "index": 0 } }),
    }
}

/// The SARIF log of an evolution's escapes, as pretty JSON ending in a
/// newline. `scenario_path` is the path as given (it becomes the URI) and
/// `scenario_text` the file's text (for the header lines).
pub fn render(
    scenario: &Scenario,
    scenario_path: &Path,
    scenario_text: &str,
    result: &EvolutionResult,
) -> String {
    let lines = ScenarioLines {
        scenario,
        uri: path_uri(scenario_path),
        steps: header_lines(scenario_text, "steps"),
        adversaries: header_lines(scenario_text, "adversaries"),
    };
    let uri = &lines.uri;
    let file = scenario.file();
    let escapes = collect_escapes(result);
    let rules = driver_rules();
    let results: Vec<Value> = escapes
        .iter()
        .map(|((rule, _, _), e)| lines.result(*rule, e))
        .collect();

    let log = json!({
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {
                "driver": {
                    "name": "chio-arena",
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                }
            },
            "automationDetails": { "id": format!("chio-arena-evolve/{}/", scenario.id()) },
            "artifacts": [ { "location": { "uri": uri } } ],
            "results": results,
            "properties": {
                "scenario": scenario.id(),
                "rngSeed": file.rng_seed,
                "generationsCompleted": result.generations_completed,
                "stoppedBy": if result.stopped_by_budget { "wall-budget" } else { "generations" },
                "actionsEvaluated": result.actions_evaluated,
            },
        }],
    });
    let mut text = serde_json::to_string_pretty(&log).unwrap_or_default();
    text.push('\n');
    text
}

/// Every escape once, by (rule, population, action id); the first
/// generation that recorded it is kept (elites keep their sample).
fn collect_escapes(result: &EvolutionResult) -> BTreeMap<(usize, &str, &str), Escape<'_>> {
    let mut escapes = BTreeMap::new();
    for generation in &result.trace {
        for sample in &generation.samples {
            let rule = AdversaryClass::ALL
                .iter()
                .position(|c| *c == sample.class)
                .unwrap_or(0);
            for record in &sample.records {
                if record.result != ActionResult::Survived {
                    continue;
                }
                escapes
                    .entry((rule, sample.population.as_str(), record.action.as_str()))
                    .or_insert(Escape {
                        generation: generation.generation,
                        class: sample.class,
                        population: &sample.population,
                        lineage: &sample.lineage,
                        record,
                    });
            }
        }
    }
    escapes
}

/// One rule per adversary class, in `AdversaryClass::ALL` order.
fn driver_rules() -> Vec<Value> {
    AdversaryClass::ALL
        .iter()
        .map(|class| {
            let (name, short, full) = rule_text(*class);
            json!({
                "id": class.as_str(),
                "name": name,
                "shortDescription": { "text": short },
                "fullDescription": { "text": full },
                "help": { "text": full },
                "defaultConfiguration": { "level": "error" },
                "properties": { "tags": ["security", "chio-arena", "adversary"] },
            })
        })
        .collect()
}

/// The scenario file as results point into it: its URI and the lines of
/// its `[[steps]]` and `[[adversaries]]` headers.
struct ScenarioLines<'a> {
    /// The scenario the evolution ran.
    scenario: &'a Scenario,
    /// The scenario path as a URI reference.
    uri: String,
    /// The line of each `[[steps]]` header, in declaration order.
    steps: Vec<u64>,
    /// The line of each `[[adversaries]]` header, in declaration order.
    adversaries: Vec<u64>,
}

impl ScenarioLines<'_> {
    /// The header line of step `id`, when found (a step whose table cannot
    /// be read again is not found, and its result carries no location).
    fn step_line(&self, id: &str) -> Option<u64> {
        self.scenario
            .steps()
            .position(|s| s.is_ok_and(|s| s.head.id == id))
            .and_then(|i| self.steps.get(i).copied())
    }

    /// The header line of the population `population`, when found.
    fn adversary_line(&self, population: &str) -> Option<u64> {
        self.scenario
            .file()
            .adversaries
            .iter()
            .position(|a| a.population == population)
            .and_then(|i| self.adversaries.get(i).copied())
    }

    /// One escape as a SARIF result of rule `rule`, located at the step it
    /// mutates, with its population's header as a related location.
    fn result(&self, rule: usize, e: &Escape<'_>) -> Value {
        let r = e.record;
        let class = e.class.as_str();
        let origin = if e.population == e.lineage {
            String::new()
        } else {
            format!(", bred from declared population {}", e.lineage)
        };
        let operators = if r.operators.is_empty() {
            String::new()
        } else {
            format!("; its operators: {}", describe(&r.operators))
        };
        let text = format!(
            "population {} ({class}{origin}) escaped the guard pipeline: action {} mutating step {} was expected to be denied, and the kernel answered {}{}{operators}",
            e.population,
            r.action,
            r.base_step,
            r.actual.as_str(),
            r.guard
                .as_deref()
                .map(|g| format!(" (deciding guard {g})"))
                .unwrap_or_default()
        );
        let step_at = self.step_line(&r.base_step);
        let adversary_at = self.adversary_line(e.lineage);
        let primary_text = if step_at.is_some() {
            format!("step {}, which the action mutates", r.base_step)
        } else {
            format!("adversary population {}", e.lineage)
        };
        let related_text = format!("[[adversaries]] population {} ({class})", e.lineage);
        json!({
            "ruleId": class,
            "ruleIndex": rule,
            "level": "error",
            "message": { "text": text },
            "locations": [{
                "physicalLocation": physical(&self.uri, step_at.or(adversary_at)),
                "message": { "text": primary_text },
            }],
            "relatedLocations": [{
                "id": 1,
                "physicalLocation": physical(&self.uri, adversary_at),
                "message": { "text": related_text },
            }],
            "partialFingerprints": {
                "chioArenaEscape/v1": format!("{}:{}", self.scenario.id(), r.action),
            },
            "properties": {
                "scenario": self.scenario.id(),
                "generation": e.generation,
                "population": e.population,
                "lineage": e.lineage,
                "action": r.action,
                "baseStep": r.base_step,
                "gene": r.gene,
                "expected": r.expected.as_str(),
                "actual": r.actual.as_str(),
                "receiptId": r.receipt_id,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Headers are found by exact name, ignoring spacing and trailing comments, and sub-tables do not count.
    #[test]
    fn finds_header_lines() {
        let text = "a = 1\n[[steps]]\nid = \"x\"\n  [[ steps ]] # second\n[[steps.sub]]\n[[adversaries]]\n";
        assert_eq!(header_lines(text, "steps"), vec![2, 4]);
        assert_eq!(header_lines(text, "adversaries"), vec![6]);
    }

    // Relative paths stay relative with forward slashes; odd bytes are percent-encoded; absolute ones become file URIs.
    #[test]
    fn paths_become_uri_references() {
        assert_eq!(
            path_uri(Path::new("./scenarios/a b.toml")),
            "scenarios/a%20b.toml"
        );
        assert_eq!(path_uri(Path::new("/x/y.toml")), "file:///x/y.toml");
    }
}
