//! Scenario files on disk: the refusal table under `tests/invalid/`, the
//! innocent look-alikes under `tests/valid/`, the inline-secret corpora under
//! `tests/secrets/`, the seed's example and the reference scenarios.

use std::path::{Path, PathBuf};

use chio_arena::secrets::{credential_marker, key_finding, SecretFinding};
use chio_arena::{load_scenario, parse_scenario, Action, ArenaError, ExpectedVerdict, ERROR_CODES};

fn tests_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name)
}

fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

struct Expectation {
    code: String,
    field: Option<String>,
    never_echo: Option<String>,
}

fn expectation(text: &str, path: &Path) -> Expectation {
    let header = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# refuse: "))
        .unwrap_or_else(|| panic!("{} has no '# refuse:' header", path.display()));
    let (code, field) = header
        .split_once(" at ")
        .unwrap_or_else(|| panic!("{}: header needs 'CODE at FIELD'", path.display()));
    let never_echo = text
        .lines()
        .nth(1)
        .and_then(|l| l.strip_prefix("# never-echo: "))
        .map(str::to_string);
    Expectation {
        code: code.to_string(),
        field: (field != "-").then(|| field.to_string()),
        never_echo,
    }
}

// Every bad file is refused with the code and field its header names, and the message names that field and never echoes a secret.
#[test]
fn invalid_files_are_refused_with_their_code_and_field() {
    let mut failures = Vec::new();
    let files = toml_files(&tests_dir("invalid"));
    assert!(
        files.len() >= 60,
        "the refusal table shrank to {}",
        files.len()
    );
    for path in &files {
        let text = std::fs::read_to_string(path).expect("readable");
        let want = expectation(&text, path);
        let err = match load_scenario(path) {
            Ok(_) => {
                failures.push(format!(
                    "{}: loaded, expected {}",
                    path.display(),
                    want.code
                ));
                continue;
            }
            Err(err) => err,
        };
        let message = err.to_string();
        if err.code() != want.code {
            failures.push(format!(
                "{}: got {} ({message}), expected {}",
                path.display(),
                err.code(),
                want.code
            ));
        }
        if let Some(field) = &want.field {
            if err.field() != Some(field.as_str()) || !message.contains(field.as_str()) {
                failures.push(format!(
                    "{}: field {:?} / message {message:?}, expected field {field}",
                    path.display(),
                    err.field()
                ));
            }
        }
        if let Some(secret) = &want.never_echo {
            if message.contains(secret.as_str()) || format!("{err:?}").contains(secret.as_str()) {
                failures.push(format!("{}: the error echoes the secret", path.display()));
            }
        }
        if !ERROR_CODES.contains(&err.code()) {
            failures.push(format!(
                "{}: code {} is not listed",
                path.display(),
                err.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// The refusal table holds at least one file for each rule issue 2 lists.
#[test]
fn invalid_table_covers_each_listed_rule() {
    let dir = tests_dir("invalid");
    let required = [
        "schema_version",
        "scheduler",
        "locale",
        "empty_agents",
        "empty_steps",
        "determinism_rng_seed",
        "determinism_clock_start",
        "bad_id_scenario",
        "bad_id_agent",
        "bad_id_step",
        "duplicate_agent",
        "duplicate_step",
        "duplicate_guard",
        "duplicate_kernel",
        "duplicate_server",
        "duplicate_grant",
        "duplicate_node",
        "duplicate_capability",
        "undeclared_step_agent",
        "undeclared_budget_agent",
        "undeclared_grant_agent",
        "undeclared_grant_server",
        "undeclared_step_server",
        "undeclared_kernel_node",
        "undeclared_server_kernel",
        "undeclared_agent_kernel",
        "undeclared_pipeline_guard",
        "undeclared_call_capability",
        "undeclared_delegate_capability",
        "undeclared_delegate_to",
        "undeclared_revoke_target",
        "capability_not_held",
        "capability_not_held_yet",
        "zero_budget",
        "clock_missing_z",
        "clock_february_30",
        "single_agent_two_agents",
        "unknown_key_top",
        "unknown_key_step",
        "provider_marker",
        "secret_begin_private_key",
        "secret_api_key",
        "secret_apikey",
        "secret_authorization",
        "secret_bearer",
        "secret_password",
        "secret_secret",
        "secret_sk",
        "secret_token",
        "secret_aws_title",
        "secret_aws_scheduler",
        "secret_github_title",
        "secret_github_id",
        "secret_bearer_newline",
        "missing_expect_verdict",
        "expect_verdict_on_delegate",
        "fixture_missing",
        "guard_config_refused",
    ];
    let missing: Vec<&str> = required
        .iter()
        .copied()
        .filter(|name| !dir.join(format!("{name}.toml")).is_file())
        .collect();
    assert!(missing.is_empty(), "missing refusal files: {missing:?}");
}

// Innocent look-alikes (a server named secrets, task-1 paths, tokenizer files, marker words in prose) load.
#[test]
fn valid_files_load() {
    for path in toml_files(&tests_dir("valid")) {
        if let Err(err) = load_scenario(&path) {
            panic!("{} was refused: {err}", path.display());
        }
    }
}

fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn scenario_with_argument(key: &str, value: &str) -> String {
    format!(
        "schema_version = \"chio.arena.scenario/v1\"\nid = \"corpus\"\ntitle = \"t\"\nrng_seed = 1\nvirtual_clock_start = \"2026-01-01T00:00:00Z\"\n\n[determinism]\nscheduler = \"single-agent-v1\"\nlocale = \"C\"\n\n[[agents]]\nid = \"a\"\nrole = \"r\"\nmodel = \"recorded:a\"\nseed_prompt_ref = \"p.txt\"\n\n[[steps]]\nid = \"s\"\nagent = \"a\"\nserver = \"workspace\"\ntool = \"read_file\"\nexpect_verdict = \"allow\"\n\n[steps.arguments]\n{} = {}\n",
        quoted(key),
        quoted(value)
    )
}

fn corpus(name: &str) -> Vec<toml::Table> {
    let text = std::fs::read_to_string(tests_dir("secrets").join(name)).expect("corpus");
    let table: toml::Table = text.parse().expect("corpus is TOML");
    table["case"]
        .as_array()
        .expect("[[case]] list")
        .iter()
        .map(|c| c.as_table().expect("case table").clone())
        .collect()
}

// Every refused corpus entry is refused by the detector and by the loader, naming its marker without echoing the text.
#[test]
fn refused_secret_corpus_is_refused_without_echo() {
    for case in corpus("refused.toml") {
        let kind = case["kind"].as_str().expect("kind");
        let marker = case["marker"].as_str().expect("marker");
        let text = case["text"].as_str().expect("text");
        let (detected, source) = if kind == "key" {
            let finding = key_finding(text);
            assert!(
                matches!(finding, Some(SecretFinding::KeyName(m)) if m == marker),
                "key {text:?}: {finding:?}"
            );
            (finding, scenario_with_argument(text, "x"))
        } else {
            assert_eq!(
                credential_marker(text).unwrap_or("none"),
                marker,
                "value {text:?}"
            );
            (None, scenario_with_argument("note", text))
        };
        let err = parse_scenario(&source, Path::new(".")).expect_err(text);
        match (&err, detected) {
            (ArenaError::SecretKeyName { marker: m, .. }, Some(_)) => assert_eq!(*m, marker),
            (ArenaError::InlineSecret { marker: m, field }, None) => {
                assert_eq!(*m, marker);
                assert_eq!(field, "steps[0].arguments.note");
                assert!(!err.to_string().contains(text), "echoed {text:?}");
            }
            _ => panic!("{text:?}: unexpected error {err}"),
        }
    }
}

// Every innocent corpus entry passes the detector and loads inside a scenario.
#[test]
fn innocent_secret_corpus_loads() {
    for case in corpus("innocent.toml") {
        let kind = case["kind"].as_str().expect("kind");
        let text = case["text"].as_str().expect("text");
        let source = if kind == "key" {
            assert_eq!(key_finding(text), None, "key {text:?}");
            scenario_with_argument(text, "x")
        } else {
            assert_eq!(credential_marker(text), None, "value {text:?}");
            scenario_with_argument("note", text)
        };
        if let Err(err) = parse_scenario(&source, Path::new(".")) {
            panic!("{text:?} was refused: {err}");
        }
    }
}

/// Field paths of every string leaf of `value`, named as the loader names them.
fn string_leaves(value: &toml::Value, path: String, out: &mut Vec<String>) {
    match value {
        toml::Value::String(_) => out.push(path),
        toml::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                string_leaves(item, format!("{path}[{i}]"), out);
            }
        }
        toml::Value::Table(table) => {
            for (key, item) in table {
                let field = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                string_leaves(item, field, out);
            }
        }
        _ => {}
    }
}

/// Replaces the string leaf at `path` (as `string_leaves` names it).
fn replace_leaf(value: &mut toml::Value, path: &str, prefix: String, with: &str) -> bool {
    match value {
        toml::Value::String(s) if prefix == path => {
            *s = with.to_string();
            true
        }
        toml::Value::Array(items) => items
            .iter_mut()
            .enumerate()
            .any(|(i, item)| replace_leaf(item, path, format!("{prefix}[{i}]"), with)),
        toml::Value::Table(table) => table.iter_mut().any(|(key, item)| {
            let field = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            replace_leaf(item, path, field, with)
        }),
        _ => false,
    }
}

// A credential of each new shape in any string field (the title, ids, models, arguments, guard config, every one) is refused at that field, and no message echoes it.
#[test]
fn a_credential_in_any_string_field_is_refused_without_echo() {
    let text = std::fs::read_to_string(tests_dir("valid").join("all_actions.toml")).expect("valid");
    let document: toml::Value = toml::Value::Table(text.parse().expect("TOML"));
    let mut leaves = Vec::new();
    string_leaves(&document, String::new(), &mut leaves);
    assert!(leaves.len() >= 30, "only {} string fields", leaves.len());
    let credentials = [
        ("AKIAIOSFODNN7EXAMPLE", "AKIA", "IOSFODNN7EXAMPLE"),
        (
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "ghp_",
            "16C7e42F292c6912E7710c838347Ae178B4a",
        ),
        (
            "Bearer\n  eyJhbGciOi.e30.c2ln",
            "bearer ",
            "eyJhbGciOi.e30.c2ln",
        ),
    ];
    let mut failures = Vec::new();
    for leaf in &leaves {
        for (credential, marker, secret) in credentials {
            let mut doc = document.clone();
            assert!(replace_leaf(&mut doc, leaf, String::new(), credential));
            let source = toml::to_string(&doc).expect("printable");
            match parse_scenario(&source, &tests_dir("valid")) {
                Err(ArenaError::InlineSecret { field, marker: m })
                    if field == *leaf && m == marker => {}
                Err(err)
                    if !err.to_string().contains(secret)
                        && !format!("{err:?}").contains(secret) =>
                {
                    failures.push(format!("{leaf} with {marker}: refused as {err}"))
                }
                Err(_) => {
                    failures.push(format!("{leaf} with {marker}: the error echoes the secret"))
                }
                Ok(_) => failures.push(format!("{leaf} with {marker}: loaded")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// The seed's example, byte for byte, validates and projects exactly the seed's printed determinism object.
#[test]
fn seed_example_projects_the_seed_witness() {
    let fixtures = tests_dir("fixtures");
    let scenario = load_scenario(fixtures.join("seed_pr_421_review.toml")).expect("seed validates");
    assert!(!scenario.has_world());
    assert!(scenario.require_world().is_err());
    let printed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("seed_pr_421_review.run.json")).expect("output"),
    )
    .expect("seed output is JSON");
    let witness: serde_json::Value = serde_json::from_str(
        &scenario
            .determinism_witness()
            .unwrap()
            .to_canonical_json()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(witness, printed["determinism"]);
}

fn reference(name: &str) -> chio_arena::Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(name);
    load_scenario(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn expectations(scenario: &chio_arena::Scenario) -> Vec<(String, ExpectedVerdict, String)> {
    scenario
        .schedule()
        .iter()
        .filter_map(
            |entry| match scenario.step(entry.step_index).unwrap().into_owned() {
                chio_arena::Step {
                    head,
                    action: Action::Call(call),
                } => Some((
                    head.id.clone(),
                    call.expect_verdict,
                    call.capability
                        .clone()
                        .expect("world calls resolve a capability"),
                )),
                _ => None,
            },
        )
        .collect()
}

// The four reference scenarios validate with a complete world and the expected verdicts of their design.
#[test]
fn reference_scenarios_validate_with_their_expectations() {
    use chio_kernel::verdict::ProjectedVerdict::{Allow, Deny};
    let pr = reference("pr-421-review.toml");
    assert!(pr.has_world());
    let seed = load_scenario(tests_dir("fixtures").join("seed_pr_421_review.toml")).unwrap();
    assert_eq!(pr.determinism_witness(), seed.determinism_witness());
    let got: Vec<_> = expectations(&pr)
        .into_iter()
        .map(|(s, v, _)| (s, v))
        .collect();
    assert_eq!(
        got,
        vec![("read-fixture".into(), Allow), ("write-test".into(), Deny)]
    );

    let specs = pr.guard_specs().expect("guard specs");
    let kinds: Vec<&str> = specs.iter().map(|g| g.kind.as_str()).collect();
    assert_eq!(kinds, ["forbidden-path", "prompt-injection"]);
    assert!(specs.iter().all(|g| g.build().is_ok()));

    let skeleton = reference("walking_skeleton.toml");
    assert_eq!(skeleton.file().agents.len(), 1);
    let got: Vec<_> = expectations(&skeleton)
        .into_iter()
        .map(|(s, v, _)| (s, v))
        .collect();
    assert_eq!(
        got,
        vec![("read-notes".into(), Allow), ("read-dotenv".into(), Deny)]
    );

    let exchange = reference("two_agent_tool_exchange.toml");
    let kernels: Vec<_> = exchange
        .file()
        .agents
        .iter()
        .map(|a| a.kernel.clone().unwrap())
        .collect();
    assert_eq!(kernels, ["kernel-a", "kernel-b"]);
    let last = exchange.schedule().last().unwrap();
    assert_eq!(
        exchange.step(last.step_index).unwrap().head.id,
        "write-after-expiry"
    );
    assert!(last.evaluation_ms > exchange.file().grants[0].expires_after());

    let triangle = reference("three_agent_triangular_delegation.toml");
    let f = triangle.file();
    assert_eq!(f.nodes.len(), 3);
    assert_eq!(f.kernels.len(), 3);
    let delegations: Vec<(String, String, String)> = triangle
        .steps()
        .filter_map(|s| match &s.unwrap().action {
            Action::Delegate(d) => Some((d.capability.clone(), d.to.clone(), d.delegation.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        delegations[0],
        ("alice-files".into(), "bob".into(), "bob-files".into())
    );
    assert_eq!(
        delegations[1],
        ("bob-files".into(), "carol".into(), "carol-files".into())
    );
    let got = expectations(&triangle);
    let verdicts: Vec<_> = got
        .iter()
        .map(|(s, v, c)| (s.as_str(), *v, c.as_str()))
        .collect();
    assert_eq!(
        verdicts,
        vec![
            ("alice-reads-plan", Allow, "alice-files"),
            ("carol-reads-plan", Allow, "carol-files"),
            ("carol-writes-plan", Deny, "carol-files"),
            ("carol-presents-bobs-token", Deny, "bob-files"),
            ("carol-uses-oversubscribed-share", Deny, "carol-files-extra"),
            ("carol-reads-after-revocation", Deny, "carol-files"),
        ]
    );
}

// The PR 421 fixture carries the injected request, phrased so the kernel's injection detectors do not flag it, so the seed's allow holds.
#[test]
fn pr_421_fixture_carries_an_undetected_injected_comment() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/fixtures/pr-421/tests/fixtures/issue_414.json");
    let text = std::fs::read_to_string(path).expect("fixture");
    assert!(text.contains("rewrite tests/test_pricing.py"));
    assert_eq!(chio_kernel::guards::prompt_injection::detect(&text), None);
    let json: serde_json::Value = serde_json::from_str(&text).expect("fixture is JSON");
    assert!(json["comment"].is_string());
}

/// The repository's `scenarios/` folder.
fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

// Validation against the fixture files a loader read gives the very scenario
// the loader validated, from the bytes alone: no folder is read or created.
#[test]
fn validation_against_a_fixture_set_matches_the_loader() {
    let (scenario, bytes) =
        chio_arena::load_scenario_with_bytes(scenarios_dir().join("walking_skeleton.toml"))
            .expect("the reference scenario loads");
    let set = scenario.fixture_set().clone();
    assert!(!set.servers.is_empty(), "the skeleton seeds a workspace");
    let nowhere = Path::new("no/such/folder");
    let again = chio_arena::parse_scenario_with_fixtures(&bytes, nowhere, &set)
        .expect("the same bytes validate against the same files");
    let steps = |s: &chio_arena::Scenario| {
        s.steps()
            .map(|step| step.unwrap().into_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(steps(&again), steps(&scenario));
    assert_eq!(again.schedule(), scenario.schedule());
    assert_eq!(again.fixture_set(), &set);
}

// A fixture folder with no files in the set is missing, and a folder that
// leaves the scenario's folder is refused by its path alone, before any lookup.
#[test]
fn a_fixture_set_without_the_folder_refuses_it() {
    let (_, bytes) =
        chio_arena::load_scenario_with_bytes(scenarios_dir().join("walking_skeleton.toml"))
            .expect("the reference scenario loads");
    let empty = chio_arena::fixtures::FixtureSet::default();
    let err = chio_arena::parse_scenario_with_fixtures(&bytes, Path::new("."), &empty)
        .expect_err("no files for the workspace");
    assert_eq!(err.code(), "CHIO-SCENARIO-FIXTURE-MISSING", "{err}");
    let text = std::str::from_utf8(&bytes).expect("UTF-8").replace(
        "fixtures = \"fixtures/walking-skeleton\"",
        "fixtures = \"../walking-skeleton\"",
    );
    let err = chio_arena::parse_scenario_with_fixtures(text.as_bytes(), Path::new("."), &empty)
        .expect_err("a folder outside");
    assert_eq!(err.code(), "CHIO-SCENARIO-FIXTURE-OUTSIDE", "{err}");
}

// An invalid id is quoted in the message, so the reader sees which value is wrong.
#[test]
fn an_invalid_id_is_named() {
    let text = std::fs::read_to_string(scenarios_dir().join("walking_skeleton.toml"))
        .expect("the reference scenario reads");
    let first_agent = text.find("[[agents]]").expect("an agent");
    let id_at = first_agent + text[first_agent..].find("id = \"").expect("its id");
    let end = id_at + 6 + text[id_at + 6..].find('"').expect("closing quote");
    let broken = format!("{}id = \"rev/iewer{}", &text[..id_at], &text[end..]);
    let err = parse_scenario(&broken, &scenarios_dir()).expect_err("refused");
    assert_eq!(err.code(), "CHIO-SCENARIO-INVALID-ID");
    assert!(
        err.summary()
            .starts_with("id \"rev/iewer\" at agents[0].id is empty"),
        "{}",
        err.summary()
    );
}

/// Every scenario file under `dir`, at any depth, in path order.
fn scenario_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).expect("listable") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "toml") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

// The injection reader flags no tool definition of any scenario in scenarios/ or tests/valid/ (recorded servers, redefinitions, built-in kinds), except the poisoned ones tool_poisoning.toml and its adversary twin adversaries-tool-poisoning.toml declare on purpose.
#[test]
fn no_definition_of_a_scenario_is_flagged_but_the_poisoned_reference() {
    let mut flagged = Vec::new();
    let mut read = 0;
    for path in scenario_files_under(&scenarios_dir())
        .into_iter()
        .chain(scenario_files_under(&tests_dir("valid")))
    {
        let Ok(scenario) = load_scenario(&path) else {
            continue;
        };
        read += 1;
        let found = scenario.poisoned_definitions().expect("redefinitions");
        if path.ends_with("tool_poisoning.toml")
            || path.ends_with("adversaries-tool-poisoning.toml")
        {
            assert!(!found.is_empty(), "the poisoned reference is not flagged");
            continue;
        }
        flagged.extend(found.into_iter().map(|(kernel, f)| {
            format!(
                "{}: {kernel} {}/{} {}",
                path.display(),
                f.server,
                f.tool,
                f.finding
            )
        }));
    }
    assert!(read >= 30, "only {read} scenarios loaded");
    assert!(flagged.is_empty(), "{flagged:#?}");
}

// A seed prompt obeys the fixtures' path rule: an absolute path, a `..` path or a link out of the
// scenario's folder is refused as outside, whether or not the file exists, so validation tells
// nothing about a file elsewhere; a prompt inside (through a link too) loads.
#[test]
fn a_seed_prompt_outside_the_scenario_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    std::fs::create_dir_all(dir.join("prompts")).unwrap();
    std::fs::write(dir.join("prompts/p.txt"), "prompt").unwrap();
    std::fs::write(tmp.path().join("outside.txt"), "elsewhere").unwrap();
    std::os::unix::fs::symlink("../../outside.txt", dir.join("prompts/out.txt")).unwrap();
    std::os::unix::fs::symlink("p.txt", dir.join("prompts/in.txt")).unwrap();
    let text = std::fs::read_to_string(scenarios_dir().join("walking_skeleton.toml")).unwrap();
    let original = text
        .lines()
        .find(|l| l.starts_with("seed_prompt_ref = "))
        .expect("a seed prompt")
        .to_string();
    let check = |prompt: &str| {
        let file = dir.join("s.toml");
        let edited = text.replace(&original, &format!("seed_prompt_ref = {prompt:?}"));
        let edited = edited.replace("fixtures = ", "# fixtures = ");
        std::fs::write(&file, edited).unwrap();
        load_scenario(&file).and_then(|s| s.check_seed_prompts())
    };
    for prompt in [
        "/etc/passwd",
        "/etc/definitely-missing",
        "../outside.txt",
        "../../../../etc/passwd",
        "prompts/../../outside.txt",
        "prompts/out.txt",
    ] {
        let err = check(prompt).expect_err(prompt);
        assert_eq!(
            err.code(),
            "CHIO-SCENARIO-FIXTURE-OUTSIDE",
            "{prompt}: {err}"
        );
        assert!(
            err.to_string().contains("agents[0].seed_prompt_ref"),
            "{err}"
        );
    }
    check("prompts/p.txt").expect("a prompt inside loads");
    check("./prompts/in.txt").expect("a link inside loads");
    let err = check("prompts/missing.txt").expect_err("missing");
    assert_eq!(err.code(), "CHIO-SCENARIO-SEED-PROMPT-MISSING", "{err}");
}
