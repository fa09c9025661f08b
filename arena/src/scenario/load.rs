//! Reading and parsing a scenario, and the entry points that then validate it.
//!
//! This is the only part of the scenario module that touches the disk: the
//! scenario file is read once (so the bytes validated are the bytes a run
//! records and hashes), and after the schema is parsed every fixture folder a
//! server names is read, confined to the scenario's folder, by
//! [`crate::fixtures::read_fixtures`]. Each read's outcome is kept by server
//! and handed to the pure validator (`super::validate`), which reports a
//! fixture refusal when it reaches that server, so the first refusal is the
//! same whichever stage finds it. [`parse_scenario_with_fixtures`] skips the
//! reading altogether and validates against files read before.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::split::{split, Split};
use super::validate::{arguments_json, validate, validate_world, FixtureSource};
use super::Scenario;
use crate::error::ArenaError;
use crate::fixtures::{self, FixtureSet};
use crate::model::{ScenarioFile, StepDecl, StepHead};
use crate::secrets;

/// Reads and validates a scenario file; fixtures resolve next to it.
pub fn load_scenario(path: impl AsRef<Path>) -> Result<Scenario, ArenaError> {
    load_scenario_with_bytes(path).map(|(scenario, _)| scenario)
}

/// Reads and validates a scenario file, returning the bytes it validated,
/// so a caller that records the file (a run's bundle) records exactly those
/// rather than reading the file a second time.
pub fn load_scenario_with_bytes(path: impl AsRef<Path>) -> Result<(Scenario, Vec<u8>), ArenaError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| ArenaError::Unreadable {
        path: path.display().to_string(),
        reason: e.kind().to_string(),
    })?;
    let base_dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let scenario = parse_scenario_bytes(&bytes, &base_dir)?;
    Ok((scenario, bytes))
}

/// Validates scenario bytes, which must be UTF-8 TOML; fixture folders are
/// read below `base_dir`.
pub fn parse_scenario_bytes(bytes: &[u8], base_dir: &Path) -> Result<Scenario, ArenaError> {
    parse_scenario(utf8(bytes)?, base_dir)
}

/// Validates scenario text; `base_dir` is the folder fixtures are read from.
pub fn parse_scenario(text: &str, base_dir: &Path) -> Result<Scenario, ArenaError> {
    let parsed = parse_file(text)?;
    let reads: BTreeMap<usize, Result<fixtures::FixtureFiles, ArenaError>> = parsed
        .file
        .servers
        .iter()
        .enumerate()
        .filter_map(|(i, server)| {
            let folder = server.fixtures.as_deref()?;
            let field = format!("servers[{i}].fixtures");
            Some((i, fixtures::read_fixtures(base_dir, folder, &field)))
        })
        .collect();
    validate(parsed, base_dir, FixtureSource::Read(&reads))
}

/// Validates scenario bytes against fixture files read before (a node
/// receives them with the bytes): nothing is read from disk, and a server's
/// folder exists exactly when `fixtures` holds files for that server.
/// `base_dir` is recorded in the scenario but nothing is resolved against it.
pub fn parse_scenario_with_fixtures(
    bytes: &[u8],
    base_dir: &Path,
    fixtures: &FixtureSet,
) -> Result<Scenario, ArenaError> {
    validate(
        parse_file(utf8(bytes)?)?,
        base_dir,
        FixtureSource::Given(fixtures),
    )
}

/// Validates the world of scenario bytes against fixture files read
/// before, as a node loads it: the step tables are neither parsed nor
/// validated (the controller that holds the schedule did both), so what a
/// node holds does not grow with the schedule. The scenario has no actions
/// and no schedule.
pub fn parse_world_with_fixtures(
    bytes: &[u8],
    base_dir: &Path,
    fixtures: &FixtureSet,
) -> Result<Scenario, ArenaError> {
    let file = parse_world_file(utf8(bytes)?)?;
    validate_world(file, base_dir, FixtureSource::Given(fixtures))
}

/// The world part of scenario bytes: the file without its `[[steps]]`
/// tables, every other byte kept in order, when the file splits and that
/// part parses to the same world; otherwise the whole file. This is what a
/// node is sent, so what it holds does not grow with the schedule.
pub fn world_bytes(scenario: &Scenario, bytes: &[u8]) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return bytes.to_vec();
    };
    match split(text) {
        Some(cut)
            if parse_cut(&cut, false).is_some_and(|w| same_world(&w.file, scenario.file())) =>
        {
            cut.world.into_bytes()
        }
        _ => bytes.to_vec(),
    }
}

/// Whether two files declare the same world (every section but the steps).
fn same_world(a: &ScenarioFile, b: &ScenarioFile) -> bool {
    let ScenarioFile {
        schema_version,
        id,
        title,
        rng_seed,
        virtual_clock_start,
        determinism,
        nodes,
        kernels,
        servers,
        agents,
        grants,
        guards,
        budgets,
        steps: _,
        adversaries,
    } = a;
    *schema_version == b.schema_version
        && *id == b.id
        && *title == b.title
        && *rng_seed == b.rng_seed
        && *virtual_clock_start == b.virtual_clock_start
        && *determinism == b.determinism
        && *nodes == b.nodes
        && *kernels == b.kernels
        && *servers == b.servers
        && *agents == b.agents
        && *grants == b.grants
        && *guards == b.guards
        && *budgets == b.budgets
        && *adversaries == b.adversaries
}

/// The text of the bytes, or a syntax error at the first byte that is not UTF-8.
fn utf8(bytes: &[u8]) -> Result<&str, ArenaError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let (line, column) = line_column(&bytes[..e.valid_up_to()], e.valid_up_to());
        ArenaError::Syntax {
            line,
            column,
            reason: "the file is not UTF-8 text".to_string(),
        }
    })
}

/// A parsed file, as validation receives it.
#[derive(Debug)]
pub(crate) struct Parsed<'t> {
    /// The declarations. After the cut parse no step head holds its
    /// declaration: validation parses it again from `tables`.
    pub file: ScenarioFile,
    /// Each step's `arguments` as the cut parse converted them (empty after
    /// the whole parse, whose validation converts).
    pub converted: Vec<Option<serde_json::Value>>,
    /// After the cut parse, each step's table, by step index (empty after
    /// the whole parse, whose heads hold their declarations).
    pub tables: Vec<&'t str>,
}

/// Stages 1 to 3: TOML syntax, inline secrets, the closed schema. A file
/// the splitter cuts is parsed one step table at a time (see
/// [`super::split`]); any refusal, or a cut the pieces do not accept, is
/// reported by parsing the whole file, so the error is the whole file's.
fn parse_file(text: &str) -> Result<Parsed<'_>, ArenaError> {
    if let Some(parsed) = split(text).and_then(|cut| parse_cut(&cut, true)) {
        return Ok(parsed);
    }
    Ok(Parsed {
        file: parse_whole(text)?,
        converted: Vec::new(),
        tables: Vec::new(),
    })
}

/// The world of a scenario without its steps, as a node needs it: the
/// step tables are skipped without being parsed when the file splits.
fn parse_world_file(text: &str) -> Result<ScenarioFile, ArenaError> {
    if let Some(parsed) = split(text).and_then(|cut| parse_cut(&cut, false)) {
        return Ok(parsed.file);
    }
    let mut file = parse_whole(text)?;
    file.steps = Vec::new();
    Ok(file)
}

/// One `[[steps]]` table parsed on its own.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StepTable {
    steps: Vec<StepDecl>,
}

/// The one step a cut `[[steps]]` table declares, or `None` when it does
/// not parse to exactly one.
pub(crate) fn parse_step_table(table: &str) -> Option<StepDecl> {
    one_step(table.parse().ok()?)
}

/// The one step a parsed `[[steps]]` table declares.
fn one_step(table: toml::Table) -> Option<StepDecl> {
    let parsed: StepTable = toml::Value::Table(table).try_into().ok()?;
    let [step] = <[StepDecl; 1]>::try_from(parsed.steps).ok()?;
    Some(step)
}

/// The file from its cut pieces (the step tables only when `with_steps`):
/// each step table is parsed and scanned, its `arguments` converted to
/// JSON, and only its head kept; `None` when a piece or a conversion is
/// refused, a step table does not hold exactly one step, or the world still
/// holds a `steps` key.
fn parse_cut<'t>(cut: &Split<'t>, with_steps: bool) -> Option<Parsed<'t>> {
    let world: toml::Table = cut.world.parse().ok()?;
    if world.contains_key("steps") {
        return None;
    }
    secrets::scan_document(&world).ok()?;
    let mut file: ScenarioFile = toml::Value::Table(world).try_into().ok()?;
    let mut converted = Vec::new();
    if !with_steps {
        return Some(Parsed {
            file,
            converted,
            tables: Vec::new(),
        });
    }
    file.steps.reserve_exact(cut.steps.len());
    converted.reserve_exact(cut.steps.len());
    for piece in &cut.steps {
        let table: toml::Table = piece.parse().ok()?;
        secrets::scan_document(&table).ok()?;
        let step = one_step(table)?;
        let index = file.steps.len();
        let json = match &step.arguments {
            Some(table) => Some(arguments_json(table, &format!("steps[{index}].arguments")).ok()?),
            None => None,
        };
        converted.push(json);
        file.steps.push(StepHead::of(&step));
    }
    Some(Parsed {
        file,
        converted,
        tables: cut.steps.clone(),
    })
}

/// Stages 1 to 3 over the whole file as one document.
fn parse_whole(text: &str) -> Result<ScenarioFile, ArenaError> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let offset = e.span().map(|s| s.start).unwrap_or(0).min(text.len());
        let (line, column) = line_column(text.as_bytes(), offset);
        ArenaError::Syntax {
            line,
            column,
            // The parser's wording quotes no source today; redact in case it ever does.
            reason: secrets::redact_credentials(e.message().lines().next().unwrap_or("")),
        }
    })?;
    secrets::scan_document(&table)?;
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(schema_error)
}

fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |p| p + 1);
    (line, offset - line_start + 1)
}

/// Turns serde's complaint into a typed error naming the field. Serde quotes
/// offending values ("invalid type: string \"...\""), so only the expected
/// part of its message is kept.
fn schema_error(err: serde_path_to_error::Error<toml::de::Error>) -> ArenaError {
    let path = err.path().to_string();
    let message = err
        .inner()
        .message()
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    let quoted = |prefix: &str| -> Option<String> {
        let rest = message.strip_prefix(prefix)?;
        let end = rest.find('`')?;
        Some(rest[..end].to_string())
    };
    if message.starts_with("unknown field `") {
        return ArenaError::UnknownKey { field: path };
    }
    if let Some(name) = quoted("missing field `") {
        let field = if path == "." || path.is_empty() {
            name
        } else {
            format!("{path}.{name}")
        };
        return ArenaError::MissingKey { field };
    }
    let expected = message
        .split_once(", expected ")
        .map(|(_, e)| e.to_string())
        .unwrap_or_else(|| "a value of the documented type".to_string());
    let expected = match expected.as_str() {
        "u64" | "u32" | "i64" => "a non-negative integer".to_string(),
        "a sequence" => "an array".to_string(),
        "a map" => "a table".to_string(),
        _ => expected,
    };
    ArenaError::WrongType {
        field: path,
        expected,
    }
}

#[cfg(test)]
mod tests {
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

    // Parsing a reference scenario one step table at a time gives the very file the whole parse gives, and its world alone the same world.
    #[test]
    fn cut_parse_equals_the_whole_parse() {
        let texts = reference_texts();
        assert!(texts.len() > 30);
        let mut cut = 0;
        for (path, text) in &texts {
            let Ok(whole) = parse_whole(text) else {
                continue;
            };
            if let Some(pieces) = split(text) {
                cut += 1;
                let parsed = parse_cut(&pieces, true).expect("the cut parses");
                // The cut converts each step's arguments as it parses the
                // step's table, and keeps only each step's head.
                assert_eq!(parsed.converted.len(), whole.steps.len());
                assert_eq!(parsed.tables.len(), whole.steps.len());
                let mut expected = whole.clone();
                for (i, head) in expected.steps.iter_mut().enumerate() {
                    let decl = head
                        .decl
                        .take()
                        .expect("the whole parse keeps declarations");
                    let want = decl
                        .arguments
                        .as_ref()
                        .map(|table| arguments_json(table, "arguments").expect("converts"));
                    assert_eq!(parsed.converted[i], want, "{}", path.display());
                    // The table parses again to the very declaration.
                    let again = parse_step_table(parsed.tables[i]).expect("parses again");
                    assert!(again == *decl, "{}", path.display());
                }
                assert!(parsed.file == expected, "{}", path.display());
                let world = parse_cut(&pieces, false).expect("the world parses").file;
                assert!(world.steps.is_empty());
                assert!(same_world(&world, &whole), "{}", path.display());
            }
            let mut stepless = whole.clone();
            stepless.steps = Vec::new();
            assert!(parse_world_file(text).unwrap() == stepless);
        }
        assert!(cut > 30, "only {cut} reference scenarios were cut");
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
            assert!(loaded.actions().is_empty() && loaded.schedule().is_empty());
            assert_eq!(loaded.fixture_set(), scenario.fixture_set());
            checked += 1;
        }
        assert!(checked > 25, "only {checked} scenarios with a world");
    }

    // A file whose steps are also written as a root key, or whose step table has a sub-table header, falls back to the whole parse and its refusal.
    #[test]
    fn odd_shapes_fall_back_to_the_whole_parse() {
        let text = "steps = []\n[[steps]]\nid = \"a\"\n";
        let pieces = split(text).unwrap();
        assert!(parse_cut(&pieces, true).is_none());
        assert_eq!(
            parse_file(text).unwrap_err().to_string(),
            parse_whole(text).unwrap_err().to_string()
        );
        let text = "[[steps]]\nid = \"a\"\n[steps.arguments]\npath = \"x\"\n";
        let pieces = split(text).unwrap();
        assert!(parse_cut(&pieces, true).is_none());
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
            let pieces = split(&text).unwrap();
            assert!(parse_cut(&pieces, true).is_none(), "{value}");
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
        assert_eq!(
            parse_file(&text).unwrap_err().to_string(),
            parse_whole(&text).unwrap_err().to_string()
        );
    }
}
