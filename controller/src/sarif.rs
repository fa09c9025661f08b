//! SARIF 2.1.0 reports (`chio arena evolve --sarif PATH`): every cause of
//! the adversary actions that escaped the guard pipeline becomes one result
//! a code-scanning tool shows against the scenario file.
//!
//! One rule per adversary class (rule id = the class's kebab-case token, in
//! `AdversaryClass::ALL` order) sits in the tool's driver. The escapes of
//! every generation, each action id once, are grouped by cause
//! (`chio_adversary::causes`: goal, the stage that decided, the
//! reference reader's pattern, the operator family); each cause is one
//! result at level `error` under its class's rule, whose message gives the
//! cause, its count and its shortest example. Its location is the scenario
//! file (the path as given on the command line, as a URI reference) at the
//! line of the `[[steps]]` header of the step the example mutates (the
//! `[[adversaries]]` header of its lineage when the step cannot be found);
//! every occurrence is a related location, at the header of the step it
//! mutates, so the related locations of all results add up to the escape
//! count. A step is found as the TOML parser reads the file (the line of
//! its `id`, `chio_arena::scenario::locate`), then its header above it, so
//! a line that only looks like a header inside a multi-line string before
//! the step moves no location.
//!
//! The document is a pure function of the scenario and the evolution: no
//! timestamps, no host names, results in the causes' order (count
//! descending, then key), keys in the order written here.

use std::path::Path;

use chio_adversary::causes::{causes_of_run, EscapeCause, EscapeOccurrence};
use chio_adversary::coevolution::EvolutionResult;
use chio_arena::adversaries::AdversaryClass;
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

/// Whether `line` is a `[[name]]` header (spacing and a trailing comment
/// aside).
fn is_header(line: &str, name: &str) -> bool {
    let line = line.trim();
    let Some(inner) = line.strip_prefix("[[") else {
        return false;
    };
    let Some(end) = inner.find("]]") else {
        return false;
    };
    let rest = inner[end + 2..].trim_start();
    (rest.is_empty() || rest.starts_with('#')) && inner[..end].trim() == name
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
        text: scenario_text,
    };
    let uri = &lines.uri;
    let file = scenario.file();
    let causes = causes_of_run(&result.trace);
    let rules = driver_rules();
    let results: Vec<Value> = causes.iter().map(|c| lines.result(c)).collect();

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
                "escapes": causes.iter().map(|c| u64::from(c.count)).sum::<u64>(),
            },
        }],
    });
    let mut text = serde_json::to_string_pretty(&log).unwrap_or_default();
    text.push('\n');
    text
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
    /// The scenario's text, where lines are found as the TOML parser
    /// reads it (a `[[steps]]` line inside a multi-line string is text,
    /// not a header).
    text: &'a str,
}

impl ScenarioLines<'_> {
    /// The header line of step `id`, when found (a step whose table cannot
    /// be read again is not found, and its result carries no location).
    fn step_line(&self, id: &str) -> Option<u64> {
        self.scenario
            .steps()
            .position(|s| s.is_ok_and(|s| s.head.id == id))
            .and_then(|i| self.header_of(&format!("steps[{i}].id"), "steps"))
    }

    /// The line of the `[[name]]` header of the table whose value at
    /// `field` the TOML parser finds: the nearest such header above that
    /// value (the value's own line when there is none).
    fn header_of(&self, field: &str, name: &str) -> Option<u64> {
        let (line, _) = chio_arena::scenario::locate(self.text, field)?;
        let above: Vec<&str> = self.text.lines().take(line).collect();
        let header = above
            .iter()
            .rposition(|text| is_header(text, name))
            .map_or(line, |n| n + 1);
        Some(header as u64)
    }

    /// The header line of the population `population`, when found.
    fn adversary_line(&self, population: &str) -> Option<u64> {
        self.scenario
            .file()
            .adversaries
            .iter()
            .position(|a| a.population == population)
            .and_then(|i| self.header_of(&format!("adversaries[{i}].population"), "adversaries"))
    }

    /// An occurrence's location: the header of the step it mutates, else
    /// its lineage's header.
    fn occurrence_line(&self, o: &EscapeOccurrence) -> (Option<u64>, bool) {
        match self.step_line(&o.base_step) {
            Some(line) => (Some(line), true),
            None => (self.adversary_line(&o.lineage), false),
        }
    }

    /// One cause as a SARIF result under its class's rule, located at the
    /// step its shortest example mutates, every occurrence a related
    /// location.
    fn result(&self, cause: &EscapeCause) -> Value {
        let rule = AdversaryClass::ALL
            .iter()
            .position(|c| *c == cause.class)
            .unwrap_or(0);
        let class = cause.class.as_str();
        let e = &cause.example;
        let key = cause.key();
        let text = format!(
            "{} escape{} of goal {} admitted (deciding stage {}, reference pattern {}, operator family {}); shortest example: action {} of population {} ({class}, lineage {}) mutating step {}, {}",
            cause.count,
            if cause.count == 1 { "" } else { "s" },
            key.goal,
            key.stage,
            key.pattern,
            key.family,
            e.action,
            e.population,
            e.lineage,
            e.base_step,
            cause.example_description,
        );
        let (at, on_step) = self.occurrence_line(e);
        let primary_text = if on_step {
            format!("step {}, which the shortest example mutates", e.base_step)
        } else {
            format!("adversary population {}", e.lineage)
        };
        let related: Vec<Value> = cause
            .occurrences
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let (line, _) = self.occurrence_line(o);
                json!({
                    "id": i + 1,
                    "physicalLocation": physical(&self.uri, line),
                    "message": { "text": format!(
                        "action {} of population {} (generation {}), mutating step {}: {}",
                        o.action, o.population, o.generation, o.base_step, o.description()
                    ) },
                })
            })
            .collect();
        json!({
            "ruleId": class,
            "ruleIndex": rule,
            "level": "error",
            "message": { "text": text },
            "locations": [{
                "physicalLocation": physical(&self.uri, at),
                "message": { "text": primary_text },
            }],
            "relatedLocations": related,
            "partialFingerprints": {
                "chioArenaEscapeCause/v1": format!(
                    "{}:{}:{}:{}:{}",
                    self.scenario.id(), key.goal, key.stage, key.pattern, key.family
                ),
            },
            "properties": {
                "scenario": self.scenario.id(),
                "goal": key.goal,
                "stage": key.stage,
                "pattern": key.pattern,
                "family": key.family,
                "count": cause.count,
                "population": e.population,
                "lineage": e.lineage,
                "action": e.action,
                "baseStep": e.base_step,
                "gene": e.gene,
                "generation": e.generation,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A step is found as the TOML parser reads the file, then its header above it: a `[[steps]]` line and an `id` inside a multi-line string before it are text, not a step; headers are found by exact name, ignoring spacing and trailing comments.
    #[test]
    fn lines_are_found_as_toml_reads_them() {
        let text = "title = \"\"\"\n[[steps]]\nid = \"read-fixture\"\n\"\"\"\n\n  [[ steps ]] # real\nid = \"read-fixture\"\n";
        assert_eq!(
            chio_arena::scenario::locate(text, "steps[0].id"),
            Some((7, 6))
        );
        let scenario = chio_arena::load_scenario(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../scenarios/walking_skeleton.toml"),
        )
        .unwrap();
        let lines = ScenarioLines {
            scenario: &scenario,
            uri: String::new(),
            text,
        };
        assert_eq!(lines.header_of("steps[0].id", "steps"), Some(6));
        assert!(!is_header("[[steps.sub]]", "steps"));
        assert!(is_header("[[adversaries]] # x", "adversaries"));
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
