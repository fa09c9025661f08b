//! Report files as processes write them: `chio arena run --junit`,
//! `chio arena matrix --junit` and `chio arena evolve --sarif`, each run by
//! the real binary in a fresh temporary directory and checked against the
//! schema checked in under `tests/schemas/` (the SARIF 2.1.0 JSON schema
//! with the `jsonschema` crate; the JUnit XSD's declared elements and
//! attributes with `roxmltree`, and with `xmllint` as well where it is
//! installed), for content, for determinism and for the exit code of a
//! report that cannot be written.

use crate::util;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use util::{chio, copy_tree, explain, repo_path};

/// What the XSD declares about one element.
#[derive(Debug, Default)]
struct ElementRule {
    /// Attribute name to (required, type).
    attributes: BTreeMap<String, (bool, String)>,
    /// Child element names allowed.
    children: BTreeSet<String>,
    /// Whether text content is allowed.
    text: bool,
}

/// Reads the top-level elements of `junit.xsd` into rules.
fn xsd_rules(xsd: &str) -> BTreeMap<String, ElementRule> {
    let doc = roxmltree::Document::parse(xsd).expect("the XSD is well-formed XML");
    let schema = doc.root_element();
    let is = |n: &roxmltree::Node, name: &str| n.is_element() && n.tag_name().name() == name;
    let named_types: BTreeMap<&str, roxmltree::Node> = schema
        .children()
        .filter(|n| is(n, "complexType"))
        .map(|n| (n.attribute("name").unwrap(), n))
        .collect();
    let mut rules = BTreeMap::new();
    for element in schema.children().filter(|n| is(n, "element")) {
        let name = element.attribute("name").unwrap().to_string();
        let mut rule = ElementRule::default();
        let complex = element
            .children()
            .find(|n| is(n, "complexType"))
            .or_else(|| {
                element
                    .attribute("type")
                    .and_then(|t| named_types.get(t).copied())
            });
        match complex {
            None => rule.text = true,
            Some(complex) => {
                rule.text = complex.attribute("mixed") == Some("true");
                for n in complex.descendants() {
                    if is(&n, "element") {
                        let child = n.attribute("ref").or(n.attribute("name")).unwrap();
                        rule.children.insert(child.to_string());
                    } else if is(&n, "attribute") {
                        rule.attributes.insert(
                            n.attribute("name").unwrap().to_string(),
                            (
                                n.attribute("use") == Some("required"),
                                n.attribute("type").unwrap_or("xs:string").to_string(),
                            ),
                        );
                    }
                }
            }
        }
        rules.insert(name, rule);
    }
    rules
}

/// Checks `node` and its descendants against the XSD's rules.
fn check_node(
    rules: &BTreeMap<String, ElementRule>,
    node: roxmltree::Node,
    errors: &mut Vec<String>,
) {
    let name = node.tag_name().name();
    let Some(rule) = rules.get(name) else {
        errors.push(format!("element <{name}> is not declared"));
        return;
    };
    for attr in node.attributes() {
        match rule.attributes.get(attr.name()) {
            None => errors.push(format!("<{name}> has undeclared attribute {}", attr.name())),
            Some((_, kind)) if kind == "count" => {
                if attr.value().parse::<u64>().is_err() {
                    errors.push(format!("<{name} {}> is not a count", attr.name()));
                }
            }
            Some(_) => {}
        }
    }
    for (attr, (required, _)) in &rule.attributes {
        if *required && node.attribute(attr.as_str()).is_none() {
            errors.push(format!("<{name}> lacks required attribute {attr}"));
        }
    }
    for child in node.children() {
        if child.is_element() {
            if !rule.children.contains(child.tag_name().name()) {
                errors.push(format!(
                    "<{}> may not hold <{}>",
                    name,
                    child.tag_name().name()
                ));
            }
            check_node(rules, child, errors);
        } else if child.is_text() && !rule.text && !child.text().unwrap_or("").trim().is_empty() {
            errors.push(format!("<{name}> may not hold text"));
        }
    }
}

/// Parses a JUnit report and checks it against `tests/schemas/junit.xsd`
/// (and with `xmllint --schema` when that tool is installed).
fn check_junit(path: &Path) -> String {
    let xml = std::fs::read_to_string(path).expect("the report was written");
    let xsd_path = repo_path("controller/tests/schemas/junit.xsd");
    let rules = xsd_rules(&std::fs::read_to_string(&xsd_path).unwrap());
    let doc = roxmltree::Document::parse(&xml).expect("the report is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "testsuites");
    let mut errors = Vec::new();
    check_node(&rules, doc.root_element(), &mut errors);
    for case in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
        let outcomes = case
            .children()
            .filter(|n| ["failure", "error", "skipped"].contains(&n.tag_name().name()))
            .count();
        if outcomes > 1 {
            errors.push(format!(
                "testcase {:?} has {outcomes} outcomes",
                case.attribute("name")
            ));
        }
    }
    assert!(
        errors.is_empty(),
        "{} breaks junit.xsd: {errors:#?}",
        path.display()
    );
    if let Ok(output) = std::process::Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&xsd_path)
        .arg(path)
        .output()
    {
        assert!(
            output.status.success(),
            "xmllint refuses the report: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    xml
}

/// A temporary directory holding a copy of the reference scenarios under
/// `scenarios/`, so relative paths (and the SARIF URI) stay relative.
fn workspace() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    copy_tree(&repo_path("scenarios"), &tmp.path().join("scenarios"));
    tmp
}

/// The three-agent scenario with the stolen-token step expecting `allow`,
/// so the kernel's deny is a mismatch.
fn write_broken_scenario(dir: &Path) -> &'static str {
    let text =
        std::fs::read_to_string(dir.join("scenarios/three_agent_triangular_delegation.toml"))
            .unwrap();
    let at = text
        .find("id = \"carol-presents-bobs-token\"")
        .expect("the step exists");
    let (head, tail) = text.split_at(at);
    let tail = tail.replacen("expect_verdict = \"deny\"", "expect_verdict = \"allow\"", 1);
    std::fs::write(dir.join("scenarios/broken.toml"), format!("{head}{tail}")).unwrap();
    "scenarios/broken.toml"
}

// A step answered other than expected appears as a <failure> naming expected and actual verdict and the kernel's reason, and the steps after the stop are <skipped>.
#[test]
fn junit_reports_a_failing_step_with_its_reason() {
    let tmp = workspace();
    let file = write_broken_scenario(tmp.path());
    let args = [
        "arena",
        "run",
        file,
        "--out",
        "bundle",
        "--junit",
        "reports/run.xml",
    ];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(1), "{}", explain(&args, &output));
    let xml = check_junit(&tmp.path().join("reports/run.xml"));
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let suites: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 1);
    assert_eq!(
        suites[0].attribute("name"),
        Some("three_agent_triangular_delegation")
    );
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let names: Vec<_> = cases.iter().map(|c| c.attribute("name").unwrap()).collect();
    let text = std::fs::read_to_string(tmp.path().join(file)).unwrap();
    let steps = text.lines().filter(|l| *l == "[[steps]]").count();
    assert_eq!(names.len(), steps, "one case per step: {names:?}");
    assert!(cases
        .iter()
        .all(|c| c.attribute("classname") == Some("three_agent_triangular_delegation")));
    let failing = cases
        .iter()
        .find(|c| c.attribute("name") == Some("carol-presents-bobs-token"))
        .unwrap();
    let failure = failing
        .children()
        .find(|n| n.has_tag_name("failure"))
        .expect("a <failure>");
    assert_eq!(
        failure.attribute("message"),
        Some("expected allow, the kernel answered deny: capability presented by another agent: agent carol does not hold the subject key of capability bob-files")
    );
    let position = names
        .iter()
        .position(|n| *n == "carol-presents-bobs-token")
        .unwrap();
    for case in &cases[position + 1..] {
        let skipped = case.children().find(|n| n.has_tag_name("skipped"));
        assert_eq!(
            skipped.and_then(|s| s.attribute("message")),
            Some("not run: the run stopped at step carol-presents-bobs-token"),
            "{:?}",
            case.attribute("name")
        );
    }
    assert_eq!(failure.attribute("type"), Some("unexpected-verdict"));
    let body = failure.text().unwrap_or_default();
    assert!(
        body.contains("agent: carol\n") && body.contains("actual: deny\n"),
        "{body}"
    );
    for case in &cases[..position] {
        assert!(case
            .children()
            .all(|n| !n.has_tag_name("failure") && !n.has_tag_name("skipped")));
        let out = case.children().find(|n| n.has_tag_name("system-out"));
        let out = out.and_then(|n| n.text()).unwrap_or_default();
        assert!(
            out.starts_with("action: ") && out.contains("actual: "),
            "{out}"
        );
    }
    assert_eq!(suites[0].attribute("id"), Some("0"));
    let properties: Vec<_> = suites[0]
        .descendants()
        .filter(|n| n.has_tag_name("property"))
        .map(|n| n.attribute("name").unwrap())
        .collect();
    assert_eq!(
        properties,
        [
            "receipt_root",
            "receipts",
            "rng_seed",
            "scenario_sha256",
            "status"
        ]
    );
    let root = doc.root_element();
    assert_eq!(root.attribute("failures"), Some("1"));
    assert_eq!(
        root.attribute("skipped"),
        Some(&*(names.len() - position - 1).to_string())
    );
}

// Two runs write the same JUnit bytes, with no wall-clock time or host name in them; a passing run has neither failures nor skips.
#[test]
fn junit_is_deterministic() {
    let mut reports = Vec::new();
    for _ in 0..2 {
        let tmp = workspace();
        let args = [
            "arena",
            "run",
            "scenarios/three_agent_triangular_delegation.toml",
            "--out",
            "bundle",
            "--junit",
            "run.xml",
        ];
        let output = chio(tmp.path(), &args);
        assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
        reports.push(check_junit(&tmp.path().join("run.xml")));
    }
    assert_eq!(reports[0], reports[1]);
    let doc = roxmltree::Document::parse(&reports[0]).unwrap();
    for node in doc
        .descendants()
        .filter(|n| n.has_tag_name("testsuites") || n.has_tag_name("testsuite"))
    {
        let counts: Vec<_> = ["tests", "failures", "errors", "skipped"]
            .iter()
            .map(|a| node.attribute(*a))
            .collect();
        assert_eq!(counts, [Some("10"), Some("0"), Some("0"), Some("0")]);
    }
    assert!(!reports[0].contains("timestamp") && !reports[0].contains("hostname"));
}

// A matrix report has one suite per cell with one case per step, and a resumed matrix (every run from the ledger) writes the same bytes.
#[test]
fn junit_for_a_matrix_has_a_suite_per_cell() {
    let tmp = workspace();
    let matrix = "scenarios/matrices/guard_pipelines.toml";
    let text = std::fs::read_to_string(tmp.path().join(matrix)).unwrap();
    std::fs::write(
        tmp.path().join(matrix),
        text.replace("repetitions = 12", "repetitions = 2"),
    )
    .unwrap();
    let args = [
        "arena",
        "matrix",
        matrix,
        "--out",
        "mx",
        "--workers",
        "1",
        "--junit",
        "first.xml",
    ];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let first = check_junit(&tmp.path().join("first.xml"));
    let doc = roxmltree::Document::parse(&first).unwrap();
    let suites: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testsuite"))
        .map(|n| n.attribute("name").unwrap().to_string())
        .collect();
    assert_eq!(
        suites,
        [
            "guard_pipelines [full]",
            "guard_pipelines [no-injection-guard]",
            "guard_pipelines [reordered]"
        ]
    );
    for suite in doc.descendants().filter(|n| n.has_tag_name("testsuite")) {
        let cases: Vec<_> = suite
            .children()
            .filter(|n| n.has_tag_name("testcase"))
            .map(|c| c.attribute("name").unwrap())
            .collect();
        assert_eq!(cases, ["read-fixture", "write-test"]);
    }
    let resume = [
        "arena",
        "matrix",
        matrix,
        "--out",
        "mx",
        "--resume",
        "--junit",
        "second.xml",
    ];
    let output = chio(tmp.path(), &resume);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        explain(&resume, &output)
    );
    assert_eq!(first, check_junit(&tmp.path().join("second.xml")));
}

// A report path that cannot be written is an infrastructure failure: exit 3 with CHIO-REPORT-WRITE, refused before the run, so no bundle is written.
#[test]
fn an_unwritable_report_exits_3() {
    let tmp = workspace();
    std::fs::create_dir(tmp.path().join("taken")).unwrap();
    let args = [
        "arena",
        "run",
        "scenarios/walking_skeleton.toml",
        "--out",
        "bundle",
        "--junit",
        "taken",
    ];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(3), "{}", explain(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error[CHIO-REPORT-WRITE]: arena run: refused to write the --junit report to taken: it is a folder, not a regular file, and is never replaced; checked before the run"), "{stderr}");
    assert!(stderr.contains("docs: https://chio.computer/docs/reference/errors#error-report-write"));
    assert!(!tmp.path().join("bundle").exists());
}

/// The SARIF 2.1.0 schema, compiled with format checks on.
fn sarif_validator() -> jsonschema::Validator {
    // The schema's `run.language` pattern ends in a bare `]`, a literal in
    // ECMAScript regular expressions but refused by the Rust regex engines
    // the validator compiles patterns with; escaping it keeps the pattern's
    // meaning. The checked-in file itself stays as published.
    let text = std::fs::read_to_string(repo_path(
        "controller/tests/schemas/sarif-schema-2.1.0.json",
    ))
    .unwrap()
    .replace("[a-zA-Z]{2}]?$", "[a-zA-Z]{2}\\\\]?$");
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the SARIF schema compiles")
}

/// Evolves `file` for two generations in `dir`, writing `sarif`; returns
/// the SARIF log after checking it against the SARIF 2.1.0 schema.
fn evolve_sarif(dir: &Path, file: &str, sarif: &str) -> serde_json::Value {
    let args = [
        "arena",
        "evolve",
        file,
        "--generations",
        "2",
        "--out",
        "evolve",
        "--sarif",
        sarif,
    ];
    let output = chio(dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(sarif)).unwrap()).expect("JSON");
    let errors: Vec<String> = sarif_validator()
        .iter_errors(&log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "the SARIF breaks the 2.1.0 schema: {errors:#?}"
    );
    log
}

// A cause of escapes from adversaries-weakened is a SARIF result under its class's rule, located at the [[steps]] header of the step its shortest example mutates, with every occurrence a related location at the [[steps]] header of the step it mutates.
#[test]
fn sarif_reports_an_escape_with_rule_and_location() {
    let tmp = workspace();
    let file = "scenarios/adversaries-weakened.toml";
    let log = evolve_sarif(tmp.path(), file, "escapes.sarif");
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        [
            "prompt-injection",
            "capability-overrequest",
            "replay-attempt",
            "scope-escape"
        ]
    );
    let results = run["results"].as_array().unwrap();
    assert!(
        !results.is_empty(),
        "the weakened pipeline lets injections through"
    );
    let text = std::fs::read_to_string(tmp.path().join(file)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for result in results {
        let rule = result["ruleId"].as_str().unwrap();
        assert_eq!(rules[result["ruleIndex"].as_u64().unwrap() as usize], rule);
        assert_eq!(result["level"], "error");
        let props = &result["properties"];
        let message = result["message"]["text"].as_str().unwrap();
        assert!(
            message.contains(props["population"].as_str().unwrap()),
            "{message}"
        );
        assert!(
            message.contains(props["action"].as_str().unwrap()),
            "{message}"
        );
        let location = &result["locations"][0]["physicalLocation"];
        assert_eq!(location["artifactLocation"]["uri"], file);
        let line = location["region"]["startLine"].as_u64().unwrap() as usize;
        assert_eq!(lines[line - 1], "[[steps]]");
        assert_eq!(
            lines[line],
            format!("id = \"{}\"", props["baseStep"].as_str().unwrap())
        );
        let related = result["relatedLocations"].as_array().unwrap();
        assert_eq!(related.len() as u64, props["count"].as_u64().unwrap());
        for (i, occurrence) in related.iter().enumerate() {
            assert_eq!(occurrence["id"], i as u64 + 1);
            let line = occurrence["physicalLocation"]["region"]["startLine"]
                .as_u64()
                .unwrap() as usize;
            assert_eq!(lines[line - 1], "[[steps]]");
        }
        assert!(
            message.contains(&format!("{} escape", props["count"])),
            "{message}"
        );
    }
    let injection = results
        .iter()
        .find(|r| r["ruleId"] == "prompt-injection" && r["properties"]["lineage"] == "injection")
        .expect("the injection lineage escapes");
    assert_eq!(injection["properties"]["goal"], "smuggle-instruction");
    let mut broken = log.clone();
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(
        !sarif_validator().is_valid(&broken),
        "the schema check can fail"
    );
}

// Two evolutions write the same SARIF bytes, and the reference pipeline, which stops every class, gives a valid log with rules and no results.
#[test]
fn sarif_is_deterministic_and_empty_when_nothing_escapes() {
    let tmp = workspace();
    evolve_sarif(tmp.path(), "scenarios/adversaries-weakened.toml", "a.sarif");
    evolve_sarif(tmp.path(), "scenarios/adversaries-weakened.toml", "b.sarif");
    assert_eq!(
        std::fs::read(tmp.path().join("a.sarif")).unwrap(),
        std::fs::read(tmp.path().join("b.sarif")).unwrap()
    );
    let log = evolve_sarif(
        tmp.path(),
        "scenarios/adversaries-reference.toml",
        "reference.sarif",
    );
    assert_eq!(log["runs"][0]["results"].as_array().unwrap().len(), 0);
    assert_eq!(
        log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}
