//! Tests of the loader: the cut parse against the whole one, steps held
//! against steps read again, the spool.

use super::*;

/// Every reference scenario's text, by path.
fn reference_texts() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut out = Vec::new();
    for dir in [root.clone(), root.join("agentdojo")] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path, text));
        }
    }
    out
}

/// A reference scenario's text validated with its steps kept in
/// memory and with none kept (each parsed again from its table).
fn both_ways(path: &Path, text: &str) -> Option<(Scenario, Scenario)> {
    let base = path.parent().unwrap();
    let held = parse_scenario(text, base).ok()?;
    let read = |bytes: &[u8]| {
        let text = ScenarioText::memory(bytes.to_vec());
        read_and_validate_holding(text, CutBuilder::over(bytes), base, 0)
    };
    Some((
        held,
        read(text.as_bytes()).expect("validates without held steps"),
    ))
}

// Parsing a reference scenario one step table at a time gives the very world and steps the whole parse gives.
#[test]
fn cut_parse_equals_the_whole_parse() {
    let texts = reference_texts();
    assert!(texts.len() > 30);
    let mut cut = 0;
    for (path, text) in &texts {
        let Ok(whole) = parse_whole(text) else {
            continue;
        };
        if let Some(pieces) = CutBuilder::over(text.as_bytes()) {
            cut += 1;
            let world = parse_world_piece(&pieces.world).expect("the world parses");
            assert!(world.steps.is_empty());
            assert!(same_world(&world, &whole), "{}", path.display());
            assert_eq!(pieces.spans.len(), whole.steps.len());
            let memory = ScenarioText::memory(text.as_bytes().to_vec());
            for (span, head) in pieces.spans.iter().zip(&whole.steps) {
                let table = String::from_utf8(memory.read_span(*span).unwrap()).unwrap();
                let again = parse_step_table(&table).expect("parses again");
                assert!(Some(&again) == head.decl.as_deref(), "{}", path.display());
            }
        }
        let mut stepless = whole.clone();
        stepless.steps = Vec::new();
        assert!(parse_world_file(text).unwrap() == stepless);
    }
    assert!(cut > 30, "only {cut} reference scenarios were cut");
}

// A scenario whose steps are parsed again from their tables answers every step, the schedule, the faults and the witness exactly as one that holds them.
#[test]
fn steps_read_again_equal_steps_held() {
    let mut checked = 0;
    for (path, text) in reference_texts() {
        let Some((held, read)) = both_ways(&path, &text) else {
            continue;
        };
        assert!(matches!(held.steps, super::super::Steps::Held(_)));
        assert!(matches!(read.steps, super::super::Steps::Spans { .. }));
        assert_eq!(held.step_count(), read.step_count(), "{}", path.display());
        for i in 0..held.step_count() {
            assert_eq!(
                held.step(i).unwrap(),
                read.step(i).unwrap(),
                "{}",
                path.display()
            );
        }
        assert!(read.step(held.step_count()).is_err());
        assert_eq!(held.schedule(), read.schedule());
        assert_eq!(
            held.fault_steps().collect::<Vec<_>>(),
            read.fault_steps().collect::<Vec<_>>()
        );
        assert_eq!(held.forwarded_steps(), read.forwarded_steps());
        assert_eq!(held.delegate_steps(), read.delegate_steps());
        assert_eq!(
            held.determinism_witness().unwrap(),
            read.determinism_witness().unwrap()
        );
        let mut ids = Vec::new();
        read.write_witness_steps(&mut ids).unwrap();
        let list =
            chio_kernel::canonical::to_canonical_string(&held.determinism_witness().unwrap().steps)
                .unwrap();
        assert_eq!(format!("[{}]", String::from_utf8(ids).unwrap()), list);
        assert_eq!(held.world_bytes().unwrap(), read.world_bytes().unwrap());
        checked += 1;
    }
    assert!(checked > 25, "only {checked} scenarios checked both ways");
}

// A refusal is the same whether the steps are held or read again: a duplicate id, an undeclared capability and a misplaced message each name the same field.
#[test]
fn refusals_are_the_same_either_way() {
    let (path, text) = reference_texts()
        .into_iter()
        .find(|(p, _)| p.ends_with("three_agent_triangular_delegation.toml"))
        .unwrap();
    let base = path.parent().unwrap();
    let first_id = parse_whole(&text).unwrap().steps[0].id.clone();
    for extra in [
        format!("\n[[steps]]\nid = \"{first_id}\"\nagent = \"alice\"\nserver = \"workspace-a\"\ntool = \"read_file\"\nexpect_verdict = \"allow\"\n"),
        "\n[[steps]]\nid = \"odd\"\nagent = \"alice\"\nserver = \"workspace-a\"\ntool = \"read_file\"\nexpect_verdict = \"allow\"\ncapability = \"nobody\"\n".to_string(),
        "\n[[steps]]\nid = \"m\"\nagent = \"alice\"\naction = \"message\"\nto = \"bob\"\nfrom_step = \"m\"\n".to_string(),
    ] {
        let text = format!("{text}{extra}");
        let held = parse_scenario(&text, base).unwrap_err();
        let bytes = text.clone().into_bytes();
        let cut = CutBuilder::over(&bytes);
        let read = read_and_validate_holding(ScenarioText::memory(bytes), cut, base, 0);
        let read = read.unwrap_err();
        assert_eq!(held.to_string(), read.to_string());
    }
}

// A file over 1 MiB is spooled as it is read; the spooled scenario gives the very steps, schedule and bytes the same text gives in memory, and an edit of the file after loading changes none of them.
#[test]
fn a_long_file_is_spooled_and_reads_as_the_text() {
    let (path, text) = reference_texts()
        .into_iter()
        .find(|(p, _)| p.ends_with("three_agent_triangular_delegation.toml"))
        .unwrap();
    let mut long = text.clone();
    let mut extra = 0;
    while long.len() <= SPOOL_AFTER {
        long.push_str(&format!("\n[[steps]] # {extra}\nid = \"more-{extra:05}\"\nagent = \"alice\"\nserver = \"workspace-a\"\ntool = \"read_file\"\narguments = {{ path = \"/workspace/plan.md\" }}\nexpect_verdict = \"allow\"\ncapability = \"alice-files\"\n"));
        extra += 1;
    }
    let dir = tempfile::tempdir().unwrap();
    copy_tree(
        &path.parent().unwrap().join("fixtures/triangular"),
        &dir.path().join("fixtures/triangular"),
    );
    let file = dir.path().join("long.toml");
    std::fs::write(&file, &long).unwrap();
    let spooled = load_scenario(&file).unwrap();
    assert!(format!("{:?}", spooled.text()).contains("spooled: true"));
    std::fs::write(&file, "edited").unwrap();
    let held = parse_scenario(&long, dir.path()).unwrap();
    assert!(format!("{:?}", held.text()).contains("spooled: false"));
    assert!(matches!(spooled.steps, super::super::Steps::Spans { .. }));
    assert_eq!(spooled.step_count(), held.step_count());
    assert!(spooled.step_count() > 1000);
    for i in 0..held.step_count() {
        assert_eq!(spooled.step(i).unwrap(), held.step(i).unwrap());
    }
    assert_eq!(spooled.schedule(), held.schedule());
    assert_eq!(spooled.text().to_vec().unwrap(), long.as_bytes());
    assert_eq!(spooled.text(), held.text());
    assert_eq!(spooled.world_bytes().unwrap(), held.world_bytes().unwrap());
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::copy(from, to).unwrap();
    }
}

// A node's world bytes drop every step table, and validate, on the fixture files alone, to the world the controller validated.
#[test]
fn world_bytes_validate_to_the_same_world() {
    let mut checked = 0;
    for (path, text) in reference_texts() {
        let Ok(scenario) = load_scenario(&path) else {
            continue;
        };
        if !scenario.has_world() {
            continue;
        }
        let world = world_bytes(&scenario, text.as_bytes());
        assert!(world.len() < text.len(), "{}", path.display());
        assert!(!String::from_utf8_lossy(&world).contains("[[steps]]"));
        let loaded =
            parse_world_with_fixtures(&world, Path::new("."), scenario.fixture_set()).unwrap();
        assert!(
            same_world(loaded.file(), scenario.file()),
            "{}",
            path.display()
        );
        assert!(loaded.step_count() == 0 && loaded.schedule().is_empty());
        assert_eq!(loaded.fixture_set(), scenario.fixture_set());
        checked += 1;
    }
    assert!(checked > 25, "only {checked} scenarios with a world");
}

// A file whose steps are also written as a root key, or whose step table has a sub-table header, falls back to the whole parse and its refusal.
#[test]
fn odd_shapes_fall_back_to_the_whole_parse() {
    let text = "steps = []\n[[steps]]\nid = \"a\"\n";
    let cut = CutBuilder::over(text.as_bytes());
    assert!(cut.is_none_or(|pieces| parse_world_piece(&pieces.world).is_none()));
    assert_eq!(
        parse_scenario(text, Path::new("."))
            .unwrap_err()
            .to_string(),
        parse_whole(text).unwrap_err().to_string()
    );
    let text = "[[steps]]\nid = \"a\"\n[steps.arguments]\npath = \"x\"\n";
    assert!(CutBuilder::over(text.as_bytes()).is_none());
}

// Arguments the cut parse cannot convert (out of range, not finite) send the file through the whole parse, which refuses them at the same field.
#[test]
fn unconvertible_arguments_are_refused_at_their_field() {
    let (path, text) = reference_texts()
        .into_iter()
        .find(|(p, _)| p.ends_with("three_agent_triangular_delegation.toml"))
        .unwrap();
    let base = path.parent().unwrap();
    let steps = parse_whole(&text).unwrap().steps.len();
    for (value, rule) in [("9007199254740993", "-2^53..=2^53"), ("nan", "finite")] {
        let extra = format!("\n[[steps]]\nid = \"odd\"\nagent = \"alice\"\nserver = \"workspace-a\"\ntool = \"read_file\"\nexpect_verdict = \"allow\"\narguments = {{ n = {value} }}\n");
        let text = format!("{text}{extra}");
        assert!(CutBuilder::over(text.as_bytes()).is_none(), "{value}");
        let err = parse_scenario(&text, base).unwrap_err();
        let shown = err.to_string();
        assert!(
            shown.contains(&format!("steps[{steps}].arguments.n")) && shown.contains(rule),
            "{shown}"
        );
    }
}

// A secret in a step table is refused with the error the whole file gives.
#[test]
fn a_refused_step_table_reports_the_whole_files_error() {
    let (_, text) = reference_texts()
        .into_iter()
        .find(|(p, _)| p.ends_with("three_agent_triangular_delegation.toml"))
        .unwrap();
    let text = format!("{text}\n[[steps]]\nid = \"leak\"\nagent = \"alice\"\napi_key = \"sk-abcdefghijklmnopqrstuvwx\"\n");
    assert!(CutBuilder::over(text.as_bytes()).is_none());
    assert_eq!(
        parse_scenario(&text, Path::new("."))
            .unwrap_err()
            .to_string(),
        parse_whole(&text).unwrap_err().to_string()
    );
}

// A scenario that is a named pipe, a device or a link to one is refused before it is read, naming the file; a link to a regular scenario is followed.
#[test]
fn only_a_regular_scenario_file_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let pipe = tmp.path().join("pipe.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(made.success());
    let zero = tmp.path().join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let (send, receive) = std::sync::mpsc::channel();
    let paths = [pipe.clone(), zero.clone(), PathBuf::from("/dev/zero")];
    std::thread::spawn(move || {
        let refusals: Vec<String> = paths
            .iter()
            .map(|p| load_scenario(p).unwrap_err().to_string())
            .collect();
        let _ = send.send(refusals);
    });
    let refusals = receive
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the loader blocked or read without end");
    assert!(
        refusals[0].contains("pipe.toml")
            && refusals[0].contains("it is a named pipe, not a regular file"),
        "{}",
        refusals[0]
    );
    for refusal in &refusals[1..] {
        assert!(
            refusal.contains("it is a device, not a regular file"),
            "{refusal}"
        );
    }
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/walking_skeleton.toml");
    let link = tmp.path().join("link.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(
        read_scenario_bytes(&link).unwrap(),
        std::fs::read(&real).unwrap()
    );
    assert_eq!(MAX_SCENARIO_BYTES, 1 << 30);
}
