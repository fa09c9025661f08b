//! JUnit XML reports (`--junit PATH`) for `chio arena run` and `chio arena
//! matrix`, so a CI system shows each scenario step as a test.
//!
//! Shape (the Ant/Jenkins JUnit report format; the checked-in schema is
//! `controller/tests/schemas/junit.xsd`): one `<testsuites>` root; one
//! `<testsuite>` per scenario run (per cell for a matrix) with the run's
//! evidence as `<properties>`; one `<testcase>` per step in execution order,
//! `name` the step id and `classname` the scenario id. A call whose verdict
//! is not the expected one carries a `<failure>` whose message names the
//! expected and the actual verdict and the kernel's reason; the step where an
//! infrastructure failure stopped the run carries an `<error>`; a step the
//! run never reached (it stopped first) is `<skipped>`. A step that passed
//! carries its verdict and reason in `<system-out>`.
//!
//! The file is a pure function of the runs: no wall-clock time, no host
//! name, no durations (the format's `time` attributes are optional and left
//! out), suites in the order given, cases in schedule order, properties in a
//! `BTreeMap`. It is written with [`crate::report::write_report`]. A `chio
//! arena run` suite reads the run's step records back from the bundle it
//! wrote, one at a time ([`suite_from_bundle`]), since the run keeps none in
//! memory; a matrix cell's suites are judged from the manifests its runs
//! kept.

use std::collections::BTreeMap;
use std::path::Path;

use chio_arena::bundle::{BundleManifest, StepOutcome, StepRecord, StopRecord};
use chio_arena::Scenario;

use crate::arena_run::{bundle_error, read_back_error};
use crate::error::CliError;

/// How one test case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseOutcome {
    /// The step ran and met its expectation.
    Passed,
    /// The step answered other than expected (`<failure>`).
    Failed {
        /// One line naming expected and actual verdict and the reason.
        message: String,
        /// The step's details, one per line.
        detail: String,
    },
    /// An infrastructure failure stopped the run at this step (`<error>`).
    Error {
        /// What failed.
        message: String,
    },
    /// The run stopped before reaching this step (`<skipped>`).
    Skipped {
        /// Why it was not run.
        message: String,
    },
}

/// One `<testcase>`: a scenario step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCase {
    /// The step id.
    pub name: String,
    /// The scenario id.
    pub classname: String,
    /// How it ended.
    pub outcome: CaseOutcome,
    /// What the step did, for `<system-out>` (passed steps only).
    pub output: Option<String>,
}

/// One `<testsuite>`: a scenario run, or a matrix cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestSuite {
    /// The suite's name (the scenario id, or the matrix id and cell).
    pub name: String,
    /// Evidence about the run, such as the receipt root; sorted by name.
    pub properties: BTreeMap<String, String>,
    /// The steps, in execution order.
    pub cases: Vec<TestCase>,
}

impl TestSuite {
    fn count(&self, pick: fn(&CaseOutcome) -> bool) -> usize {
        self.cases.iter().filter(|c| pick(&c.outcome)).count()
    }
    /// Cases with a `<failure>`.
    pub fn failures(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Failed { .. }))
    }
    /// Cases with an `<error>`.
    pub fn errors(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Error { .. }))
    }
    /// Cases `<skipped>`.
    pub fn skipped(&self) -> usize {
        self.count(|o| matches!(o, CaseOutcome::Skipped { .. }))
    }
}

/// The one-line failure message of a step whose verdict (or whose reason,
/// against its `expect_reason`) was unexpected.
fn failure_message(step: &StepRecord) -> String {
    if step.expected == step.actual {
        if let Some(message) = crate::driver::reason_mismatch(step) {
            return message;
        }
    }
    format!(
        "expected {}, {}{}",
        step.expected.map_or("?", |e| e.as_str()),
        step.answer(),
        step.reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default()
    )
}

/// What a step did, one `key: value` per line, for failure bodies and
/// `<system-out>`.
fn step_detail(step: &StepRecord) -> String {
    let mut lines = vec![
        format!("action: {}", step.action),
        format!("agent: {}", step.agent),
        format!("virtual_time: {}", step.virtual_time),
    ];
    let fields = [
        ("target", step.target.as_deref()),
        ("kernel", step.kernel.as_deref()),
        ("expected", step.expected.as_ref().map(StepOutcome::as_str)),
        ("actual", step.actual.as_ref().map(StepOutcome::as_str)),
        ("reason", step.reason.as_deref()),
        ("expected_reason", step.expected_reason.as_deref()),
        ("guard", step.guard.as_deref()),
        ("receipt", step.receipt_id.as_deref()),
        ("detail", step.detail.as_deref()),
    ];
    for (key, value) in fields {
        if let Some(value) = value {
            lines.push(format!("{key}: {value}"));
        }
    }
    if let Some(labels) = &step.labels {
        lines.push(format!("labels: {}", labels.join(", ")));
    }
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

/// The case of the scheduled step `name`, judged from its `record` (none
/// when the run never reached it) and the run's `stop`.
fn case(
    scenario: &Scenario,
    name: &str,
    record: Option<&StepRecord>,
    stop: Option<&StopRecord>,
) -> TestCase {
    let (outcome, output) = match record {
        None => (
            CaseOutcome::Skipped {
                message: match stop {
                    Some(s) => format!("not run: the run stopped at step {}", s.step_id),
                    None => "not run".to_string(),
                },
            },
            None,
        ),
        Some(step) => match stop {
            Some(s) if s.step_id == name && s.cause == "infrastructure" => (
                CaseOutcome::Error {
                    message: s.message.clone(),
                },
                None,
            ),
            _ if step.pass == Some(false) => (
                CaseOutcome::Failed {
                    message: failure_message(step),
                    detail: step_detail(step),
                },
                None,
            ),
            _ => (CaseOutcome::Passed, Some(step_detail(step))),
        },
    };
    TestCase {
        name: name.to_string(),
        classname: scenario.id().to_string(),
        outcome,
        output,
    }
}

/// The cases of one run: every scheduled step of `scenario`, judged from the
/// run's manifest.
pub fn cases_from_run(scenario: &Scenario, manifest: &BundleManifest) -> Vec<TestCase> {
    let records: BTreeMap<&str, &StepRecord> = manifest
        .steps
        .iter()
        .map(|s| (s.step_id.as_str(), s))
        .collect();
    let stop = manifest.stopped.as_ref();
    // A run kept in memory carries its witness's step ids, by declaration index.
    let ids = &manifest.determinism.steps;
    scenario
        .schedule()
        .iter()
        .map(|scheduled| {
            let name = ids
                .get(scheduled.step_index)
                .map_or("(a step the witness does not list)", String::as_str);
            case(scenario, name, records.get(name).copied(), stop)
        })
        .collect()
}

/// The evidence of one run, as suite properties.
fn run_properties(manifest: &BundleManifest) -> BTreeMap<String, String> {
    let mut properties = BTreeMap::new();
    properties.insert("status".into(), manifest.status.to_string());
    properties.insert("receipt_root".into(), manifest.receipt_root.clone());
    properties.insert("receipts".into(), manifest.receipt_count.to_string());
    properties.insert("scenario_sha256".into(), manifest.scenario_sha256.clone());
    properties.insert("rng_seed".into(), manifest.determinism.rng_seed.to_string());
    properties
}

/// The suite of one `chio arena run` whose bundle was written into `dir`
/// and whose `manifest` (without steps) the run returned: the step records
/// are read back one at a time, each the next scheduled step's (a run
/// records its steps in schedule order and stops early only), and every
/// scheduled step after the last record is skipped. A bundle that cannot be
/// read back, or whose records are not the schedule's, is
/// `CHIO-REPORT-BUNDLE-READ`.
pub fn suite_from_bundle(
    command: &'static str,
    scenario: &Scenario,
    manifest: &BundleManifest,
    dir: &Path,
) -> Result<TestSuite, CliError> {
    let stop = manifest.stopped.as_ref();
    let schedule = scenario.schedule();
    let mut next = schedule.iter();
    let mut cases = Vec::with_capacity(schedule.len());
    let id_of = |scheduled: &chio_arena::ScheduledStep| -> Result<String, CliError> {
        scenario
            .step(scheduled.step_index)
            .map(|step| step.head.id.clone())
            .map_err(|e| read_back_error(command, &e))
    };
    crate::arena_run::each_step(command, dir, |record| {
        let scheduled = next.next().map(id_of).transpose()?;
        match scheduled {
            Some(id) if id == record.step_id => {
                cases.push(case(scenario, &id, Some(&record), stop));
                Ok(())
            }
            scheduled => {
                let cause = format!(
                    "step record {} is not the next scheduled step ({})",
                    record.step_id,
                    scheduled.as_deref().unwrap_or("none is left")
                );
                Err(read_back_error(command, &bundle_error(dir, cause)))
            }
        }
    })?;
    for scheduled in next {
        cases.push(case(scenario, &id_of(scheduled)?, None, stop));
    }
    Ok(TestSuite {
        name: scenario.id().to_string(),
        properties: run_properties(manifest),
        cases,
    })
}

/// One repetition of a matrix cell: its seed and its run's manifest.
#[derive(Debug, Clone)]
pub struct CellRun<'a> {
    /// The repetition, from 0.
    pub repetition: u32,
    /// The repetition's seed.
    pub seed: u64,
    /// The cell's scenario for that seed.
    pub scenario: &'a Scenario,
    /// What the run recorded.
    pub manifest: &'a BundleManifest,
}

/// The suite of one matrix cell over its repetitions: a step fails when it
/// failed in any repetition (the message names the first such repetition
/// and how many failed), is an error when infrastructure stopped any
/// repetition there, and is skipped only when no repetition reached it.
pub fn suite_from_cell(matrix_id: &str, cell: &str, runs: &[CellRun<'_>]) -> TestSuite {
    let mut properties = BTreeMap::new();
    properties.insert("matrix".into(), matrix_id.to_string());
    properties.insert("cell".into(), cell.to_string());
    properties.insert("repetitions".into(), runs.len().to_string());
    let per_run: Vec<Vec<TestCase>> = runs
        .iter()
        .map(|r| cases_from_run(r.scenario, r.manifest))
        .collect();
    let mut cases = Vec::new();
    if let Some(first) = per_run.first() {
        for (i, case) in first.iter().enumerate() {
            let outcomes: Vec<(&CellRun<'_>, &TestCase)> = runs
                .iter()
                .zip(&per_run)
                .filter_map(|(run, cases)| cases.get(i).map(|c| (run, c)))
                .collect();
            let label =
                |run: &CellRun<'_>| format!("repetition {} (seed {})", run.repetition, run.seed);
            let errors: Vec<_> = outcomes
                .iter()
                .filter(|(_, c)| matches!(c.outcome, CaseOutcome::Error { .. }))
                .collect();
            let failures: Vec<_> = outcomes
                .iter()
                .filter(|(_, c)| matches!(c.outcome, CaseOutcome::Failed { .. }))
                .collect();
            let passed: Vec<_> = outcomes
                .iter()
                .filter(|(_, c)| c.outcome == CaseOutcome::Passed)
                .collect();
            let total = outcomes.len();
            let outcome = if let Some((run, c)) = errors.first() {
                let CaseOutcome::Error { message } = &c.outcome else {
                    unreachable!()
                };
                CaseOutcome::Error {
                    message: format!("{}: {message}", label(run)),
                }
            } else if let Some((run, c)) = failures.first() {
                let CaseOutcome::Failed { message, detail } = &c.outcome else {
                    unreachable!()
                };
                CaseOutcome::Failed {
                    message: format!(
                        "{}: {message} (failed in {} of {total} repetitions)",
                        label(run),
                        failures.len()
                    ),
                    detail: detail.clone(),
                }
            } else if passed.is_empty() {
                match outcomes.first().map(|(_, c)| &c.outcome) {
                    Some(CaseOutcome::Skipped { message }) => CaseOutcome::Skipped {
                        message: message.clone(),
                    },
                    _ => CaseOutcome::Skipped {
                        message: "not run".into(),
                    },
                }
            } else {
                CaseOutcome::Passed
            };
            let output = match outcome {
                CaseOutcome::Passed => passed.first().and_then(|(_, c)| c.output.clone()),
                _ => None,
            };
            cases.push(TestCase {
                name: case.name.clone(),
                classname: case.classname.clone(),
                outcome,
                output,
            });
        }
    }
    TestSuite {
        name: format!("{matrix_id} [{cell}]"),
        properties,
        cases,
    }
}

/// Escapes text for an XML attribute value or element content. Characters
/// XML 1.0 cannot carry at all (C0 controls other than tab, newline and
/// carriage return) become U+FFFD; newlines and tabs in attributes are
/// written as character references so parsers keep them.
pub fn escape_xml(text: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            '\'' if attribute => out.push_str("&apos;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\t' | '\n' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

fn attr(name: &str, value: &str) -> String {
    format!(" {name}=\"{}\"", escape_xml(value, true))
}

/// The whole report: `<testsuites name=NAME>` over `suites`, as UTF-8 XML
/// ending in a newline.
pub fn render(name: &str, suites: &[TestSuite]) -> String {
    let total = |f: fn(&TestSuite) -> usize| suites.iter().map(f).sum::<usize>();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    xml.push_str(&format!(
        "<testsuites{}{}{}{}{}>\n",
        attr("name", name),
        attr("tests", &total(|s| s.cases.len()).to_string()),
        attr("failures", &total(TestSuite::failures).to_string()),
        attr("errors", &total(TestSuite::errors).to_string()),
        attr("skipped", &total(TestSuite::skipped).to_string()),
    ));
    for (id, suite) in suites.iter().enumerate() {
        xml.push_str(&format!(
            "  <testsuite{}{}{}{}{}{}>\n",
            attr("name", &suite.name),
            attr("id", &id.to_string()),
            attr("tests", &suite.cases.len().to_string()),
            attr("failures", &suite.failures().to_string()),
            attr("errors", &suite.errors().to_string()),
            attr("skipped", &suite.skipped().to_string()),
        ));
        if !suite.properties.is_empty() {
            xml.push_str("    <properties>\n");
            for (key, value) in &suite.properties {
                xml.push_str(&format!(
                    "      <property{}{}/>\n",
                    attr("name", key),
                    attr("value", value)
                ));
            }
            xml.push_str("    </properties>\n");
        }
        for case in &suite.cases {
            let open = format!(
                "    <testcase{}{}",
                attr("name", &case.name),
                attr("classname", &case.classname)
            );
            let body = match &case.outcome {
                CaseOutcome::Passed => None,
                CaseOutcome::Failed { message, detail } => Some(format!(
                    "      <failure{}{}>{}</failure>\n",
                    attr("message", message),
                    attr("type", "unexpected-verdict"),
                    escape_xml(detail, false)
                )),
                CaseOutcome::Error { message } => Some(format!(
                    "      <error{}{}/>\n",
                    attr("message", message),
                    attr("type", "infrastructure")
                )),
                CaseOutcome::Skipped { message } => {
                    Some(format!("      <skipped{}/>\n", attr("message", message)))
                }
            };
            let output = case
                .output
                .as_ref()
                .map(|o| format!("      <system-out>{}</system-out>\n", escape_xml(o, false)));
            if body.is_none() && output.is_none() {
                xml.push_str(&open);
                xml.push_str("/>\n");
            } else {
                xml.push_str(&open);
                xml.push_str(">\n");
                xml.push_str(&body.unwrap_or_default());
                xml.push_str(&output.unwrap_or_default());
                xml.push_str("    </testcase>\n");
            }
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}

#[cfg(test)]
#[path = "junit_tests.rs"]
mod tests;
