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
//! carries its verdict and reason in `<system-out>`. A matrix with
//! validators adds one suite, `<matrix> [validation]`, with one case per
//! validator and judged cell, a `<failure type="validator-failed">` when the
//! cell fails it.
//!
//! The XML is written by the `quick-junit` crate from the suites judged
//! here. The file is a pure function of the runs: no wall-clock time, no
//! host name, no durations (the format's `time` and `timestamp` attributes
//! are optional and never set), suites in the order given, cases in schedule
//! order, properties in a `BTreeMap`. It is written with
//! [`crate::report::write_report`]. A `chio
//! arena run` suite reads the run's step records back from the bundle it
//! wrote, one at a time ([`suite_from_bundle`]), since the run keeps none in
//! memory; a matrix cell's suites are judged from the manifests its runs
//! kept.

use std::collections::BTreeMap;
use std::path::Path;

use chio_arena::bundle::{BundleManifest, StepOutcome, StepRecord, StopRecord};
use chio_arena::Scenario;
use chio_experiment::synthesis::ValidatorResult;
use quick_junit::{NonSuccessKind, Property, Report, TestCaseStatus};

use crate::arena_run::{bundle_error, read_back_error};
use crate::error::CliError;
use crate::report::{ReportError, ReportKind};

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
    /// A matrix validator judged a cell outside its thresholds
    /// (`<failure type="validator-failed">`).
    Invalid {
        /// One line naming the validator, the cell, its value and the bounds.
        message: String,
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

/// The one-line failure message of a step whose verdict (or whose reason,
/// against its `expect_reason`) was unexpected; the harness prints it too.
pub(crate) fn failure_message(step: &StepRecord) -> String {
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

/// The suite of a matrix's validators, when it declares any: one case per
/// validator and judged cell (`<metric> [<cell>]`), a `<failure>` when the
/// cell's value is undefined or outside the validator's bounds, so a CI
/// system sees a failed validator as a failed test.
pub fn suite_from_validators(matrix_id: &str, validators: &[ValidatorResult]) -> Option<TestSuite> {
    if validators.is_empty() {
        return None;
    }
    let mut cases = Vec::new();
    for validator in validators {
        let bound = |b: Option<f64>| b.map_or("none".to_string(), |b| b.to_string());
        for judged in &validator.cells {
            let outcome = if judged.passed {
                CaseOutcome::Passed
            } else {
                CaseOutcome::Invalid {
                    message: format!(
                        "validator {} of cell {}: {} is outside min {} max {}",
                        validator.metric,
                        judged.cell,
                        judged
                            .value
                            .map_or("undefined".to_string(), |v| v.to_string()),
                        bound(validator.min),
                        bound(validator.max)
                    ),
                }
            };
            cases.push(TestCase {
                name: format!("{} [{}]", validator.metric, judged.cell),
                classname: matrix_id.to_string(),
                outcome,
                output: None,
            });
        }
    }
    Some(TestSuite {
        name: format!("{matrix_id} [validation]"),
        properties: BTreeMap::from([("matrix".to_string(), matrix_id.to_string())]),
        cases,
    })
}

/// `text` as XML 1.0 can carry it: C0 controls other than tab, newline and
/// carriage return, and U+FFFE and U+FFFF, become U+FFFD. (The writer then
/// drops tabs, carriage returns and C1 controls, and escapes markup.)
fn xml_text(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => '\u{FFFD}',
            c => c,
        })
        .collect()
}

/// A non-success status of `kind`, with `message`, `ty` and an optional body.
fn non_success(
    mut status: TestCaseStatus,
    message: &str,
    ty: Option<&str>,
    body: Option<&str>,
) -> TestCaseStatus {
    status.set_message(xml_text(message));
    if let Some(ty) = ty {
        status.set_type(ty);
    }
    if let Some(body) = body {
        status.set_description(xml_text(body));
    }
    status
}

/// One case as the writer takes it.
fn junit_case(case: &TestCase) -> quick_junit::TestCase {
    let status = match &case.outcome {
        CaseOutcome::Passed => TestCaseStatus::success(),
        CaseOutcome::Failed { message, detail } => non_success(
            TestCaseStatus::non_success(NonSuccessKind::Failure),
            message,
            Some("unexpected-verdict"),
            Some(detail),
        ),
        CaseOutcome::Invalid { message } => non_success(
            TestCaseStatus::non_success(NonSuccessKind::Failure),
            message,
            Some("validator-failed"),
            None,
        ),
        CaseOutcome::Error { message } => non_success(
            TestCaseStatus::non_success(NonSuccessKind::Error),
            message,
            Some("infrastructure"),
            None,
        ),
        CaseOutcome::Skipped { message } => {
            non_success(TestCaseStatus::skipped(), message, None, None)
        }
    };
    let mut junit = quick_junit::TestCase::new(xml_text(&case.name), status);
    junit.set_classname(xml_text(&case.classname));
    if let Some(output) = &case.output {
        junit.set_system_out(xml_text(output));
    }
    junit
}

/// The whole report: `<testsuites name=NAME>` over `suites`, each with its
/// position as `id`, as UTF-8 XML written by `quick-junit` (no `time` or
/// `timestamp` attribute is set) and ending in a newline.
pub fn render(name: &str, suites: &[TestSuite]) -> Result<Vec<u8>, ReportError> {
    let mut report = Report::new(xml_text(name));
    for (id, suite) in suites.iter().enumerate() {
        let mut junit = quick_junit::TestSuite::new(xml_text(&suite.name));
        junit.extra.insert("id".into(), id.to_string().into());
        junit.add_properties(
            suite
                .properties
                .iter()
                .map(|(key, value)| Property::new(xml_text(key), xml_text(value))),
        );
        junit.add_test_cases(suite.cases.iter().map(junit_case));
        report.add_test_suite(junit);
    }
    let mut bytes = Vec::new();
    report
        .serialize(&mut bytes)
        .map_err(|e| ReportError::Render {
            kind: ReportKind::Junit,
            cause: e.to_string(),
        })?;
    Ok(bytes)
}

#[cfg(test)]
#[path = "junit_tests.rs"]
mod tests;
