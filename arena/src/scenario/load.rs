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
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use super::split::{split, Block, Cutter};
use super::text::{ScenarioText, Span, Spooler};
use super::validate::{
    arguments_json, validate, validate_holding, validate_world, FixtureSource, HELD_STEPS_LIMIT,
};
use super::Scenario;
use crate::error::ArenaError;
use crate::files::FileRefusal;
use crate::fixtures::{self, FixtureSet};
use crate::model::{ScenarioFile, StepDecl};
use crate::secrets;

/// The private spool of a scenario's bytes could not be written or read
/// back: the machine's fault, not the file's.
pub(crate) fn spool_failed(e: std::io::Error) -> ArenaError {
    ArenaError::Output {
        path: "the private spool of the scenario's bytes (a temporary file)".to_string(),
        cause: e.kind().to_string(),
    }
}

/// The most bytes a scenario file may hold (1 GiB): the most any file of a
/// bundle may hold ([`crate::bundle::MAX_FILE_BYTES`]), and a bundle keeps
/// the scenario among its inputs. A longer file is refused after one byte
/// past it, never read to its end.
pub const MAX_SCENARIO_BYTES: u64 = crate::bundle::MAX_FILE_BYTES;

/// A scenario file that is not read, as [`ArenaError::Unreadable`] naming
/// the file and, for one over the bound, the bound.
fn refused(path: &Path, refusal: FileRefusal) -> ArenaError {
    ArenaError::Unreadable {
        path: path.display().to_string(),
        reason: refusal.describe("a scenario file"),
    }
}

/// The bytes of the scenario file `path` as the loader reads it: a regular
/// file (a link to one is followed), at most [`MAX_SCENARIO_BYTES`]; for a
/// caller that reads the file again to point at a place in it.
pub fn read_scenario_bytes(path: &Path) -> Result<Vec<u8>, ArenaError> {
    crate::files::read_named(path, MAX_SCENARIO_BYTES).map_err(|e| refused(path, e))
}

/// A scenario file longer than this is spooled rather than held in memory.
const SPOOL_AFTER: usize = 1 << 20;

/// Reads and validates a scenario file; fixtures resolve next to it.
///
/// The file must be a regular file (a link to one is followed; a named
/// pipe or a device is refused before it is opened) of at most
/// [`MAX_SCENARIO_BYTES`]. It is read once, line by line, while it is cut
/// at its step tables, and each table is checked as it passes; a file longer than
/// 1 MiB goes into a private spool (see [`super::text`]), so memory then
/// holds the world, each table's offset and the schedule, never the file.
pub fn load_scenario(path: impl AsRef<Path>) -> Result<Scenario, ArenaError> {
    load_scenario_sealed_from(path, None)
}

/// [`load_scenario`], reading the files its arguments seal
/// (`{ fixture = ... }`, see [`super::sealed`]) below `sealed_from`
/// instead of the scenario's folder when it is given: a replay of a bundle,
/// whose `inputs/` never holds them, names the folder they are in.
pub fn load_scenario_sealed_from(
    path: impl AsRef<Path>,
    sealed_from: Option<&Path>,
) -> Result<Scenario, ArenaError> {
    let path = path.as_ref();
    let base_dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut scenario = load_unsealed(path)?;
    scenario.read_sealed(sealed_from.unwrap_or(&base_dir))?;
    Ok(scenario)
}

/// [`load_scenario`] without reading the files its arguments seal: what a
/// command needs that never sends a call's arguments (`chio eval
/// --from-bundle` of a bundle, whose `inputs/` never holds them). A call
/// or an answer that takes a sealed value finds it not read.
pub fn load_scenario_unsealed(path: impl AsRef<Path>) -> Result<Scenario, ArenaError> {
    load_unsealed(path.as_ref())
}

fn load_unsealed(path: &Path) -> Result<Scenario, ArenaError> {
    let unreadable = |e: std::io::Error| refused(path, FileRefusal::Io(e));
    let file = crate::files::open_named(path).map_err(|e| refused(path, e))?;
    let mut reader = std::io::BufReader::new(file.take(MAX_SCENARIO_BYTES + 1));
    let mut total: u64 = 0;
    // A file is kept in memory until it outgrows `SPOOL_AFTER`, then in a
    // private spool; failing to write the spool is the machine's fault.
    let mut held: Vec<u8> = Vec::new();
    let mut spooler: Option<Spooler> = None;
    let mut cut = CutBuilder::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(unreadable)? == 0 {
            break;
        }
        total += line.len() as u64;
        if total > MAX_SCENARIO_BYTES {
            return Err(refused(path, FileRefusal::TooLarge(MAX_SCENARIO_BYTES)));
        }
        match &mut spooler {
            Some(spool) => spool.write(&line).map_err(spool_failed)?,
            None => {
                held.extend_from_slice(&line);
                if held.len() > SPOOL_AFTER {
                    let mut spool = Spooler::new().map_err(spool_failed)?;
                    spool.write(&held).map_err(spool_failed)?;
                    held = Vec::new();
                    spooler = Some(spool);
                }
            }
        }
        cut.line(&line);
    }
    let text = match spooler {
        Some(spool) => spool.finish().map_err(spool_failed)?,
        None => ScenarioText::memory(held),
    };
    let base_dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    read_and_validate(text, cut.finish(), &base_dir)
}

/// Reads and validates a scenario file, returning the bytes it validated,
/// so a caller that records the file records exactly those rather than
/// reading the file a second time. A run keeps the scenario's own
/// [`Scenario::text`] instead, which a long file does not hold in memory.
pub fn load_scenario_with_bytes(path: impl AsRef<Path>) -> Result<(Scenario, Vec<u8>), ArenaError> {
    let path = path.as_ref();
    let scenario = load_scenario(path)?;
    let bytes = scenario
        .text()
        .to_vec()
        .map_err(|e| ArenaError::Unreadable {
            path: path.display().to_string(),
            reason: e.kind().to_string(),
        })?;
    Ok((scenario, bytes))
}

/// Validates scenario bytes, which must be UTF-8 TOML; fixture folders are
/// read below `base_dir`.
pub fn parse_scenario_bytes(bytes: &[u8], base_dir: &Path) -> Result<Scenario, ArenaError> {
    let cut = CutBuilder::over(bytes);
    let mut scenario = read_and_validate(ScenarioText::memory(bytes.to_vec()), cut, base_dir)?;
    scenario.read_sealed(base_dir)?;
    Ok(scenario)
}

/// Validates scenario text; `base_dir` is the folder fixtures are read from.
pub fn parse_scenario(text: &str, base_dir: &Path) -> Result<Scenario, ArenaError> {
    parse_scenario_bytes(text.as_bytes(), base_dir)
}

/// Parses `text` (cut as `cut` says, when it cut), reads the fixture
/// folders its servers name and validates it.
fn read_and_validate(
    text: ScenarioText,
    cut: Option<Cut>,
    base_dir: &Path,
) -> Result<Scenario, ArenaError> {
    read_and_validate_holding(text, cut, base_dir, HELD_STEPS_LIMIT)
}

/// [`read_and_validate`], keeping at most `held_limit` steps of a cut file
/// parsed in memory.
fn read_and_validate_holding(
    text: ScenarioText,
    cut: Option<Cut>,
    base_dir: &Path,
    held_limit: usize,
) -> Result<Scenario, ArenaError> {
    let parsed = parse_file(text, cut)?;
    // One budget for every folder, read in declaration order.
    let mut budget = fixtures::FixtureBudget::default();
    let reads: BTreeMap<usize, Result<fixtures::FixtureFiles, ArenaError>> = parsed
        .file
        .servers
        .iter()
        .enumerate()
        .filter_map(|(i, server)| {
            let folder = server.fixtures.as_deref()?;
            let field = format!("servers[{i}].fixtures");
            Some((
                i,
                fixtures::read_fixtures(base_dir, folder, &field, &mut budget),
            ))
        })
        .collect();
    validate_holding(parsed, base_dir, FixtureSource::Read(&reads), held_limit)
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
    let cut = CutBuilder::over(bytes);
    let parsed = parse_file(ScenarioText::memory(bytes.to_vec()), cut)?;
    validate(parsed, base_dir, FixtureSource::Given(fixtures))
}

/// Validates the world of scenario bytes against fixture files read
/// before, as a node loads it: the step tables are neither parsed nor
/// validated (the controller that holds the schedule did both), so what a
/// node holds does not grow with the schedule. The scenario has no steps
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
            if parse_world_piece(&cut.world).is_some_and(|w| same_world(&w, scenario.file())) =>
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
pub(crate) struct Parsed {
    /// The declarations. After the cut parse the file holds no step:
    /// validation parses each from its table in `text`, by `spans`; after
    /// the whole parse each step head holds its declaration.
    pub file: ScenarioFile,
    /// The bytes parsed.
    pub text: ScenarioText,
    /// After the cut parse, where each step's table lies in `text`, by step
    /// index, and the world's own text (every block but the step tables).
    pub cut: Option<(Vec<Span>, String)>,
}

/// The text cut as it was read: the world, each step table's place, and
/// whether every step table passed stages 1 to 3 on its own.
pub(crate) struct Cut {
    world: String,
    spans: Vec<Span>,
}

/// Cuts text line by line as it is read (see [`super::split`]), checking
/// each step table as it closes.
struct CutBuilder {
    cutter: Cutter,
    /// The block being read.
    current: String,
    world: String,
    spans: Vec<Span>,
    /// False once the text cannot be cut, is not UTF-8, or a step table is
    /// refused: the whole parse then reports what the whole file gives.
    ok: bool,
}

impl CutBuilder {
    fn new() -> Self {
        Self {
            cutter: Cutter::new(),
            current: String::new(),
            world: String::new(),
            spans: Vec::new(),
            ok: true,
        }
    }

    /// The cut of bytes held in memory.
    fn over(bytes: &[u8]) -> Option<Cut> {
        let mut cut = Self::new();
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            cut.line(line);
        }
        cut.finish()
    }

    /// Feeds the next line, its newline included.
    fn line(&mut self, line: &[u8]) {
        if !self.ok {
            return;
        }
        let Ok(line) = std::str::from_utf8(line) else {
            self.ok = false;
            return;
        };
        match self.cutter.line(line) {
            None => self.ok = false,
            Some(closed) => {
                if let Some(block) = closed {
                    self.close(block);
                }
                self.current.push_str(line);
            }
        }
    }

    fn close(&mut self, block: Block) {
        if block.is_step {
            let len = u32::try_from(block.end - block.start);
            match len {
                Ok(len) if check_step_piece(&self.current) => self.spans.push(Span {
                    start: block.start as u64,
                    len,
                }),
                _ => self.ok = false,
            }
        } else {
            self.world.push_str(&self.current);
        }
        self.current.clear();
    }

    /// The cut, when the whole text cut and every step table passed.
    fn finish(mut self) -> Option<Cut> {
        if !self.ok {
            return None;
        }
        let last = std::mem::replace(&mut self.cutter, Cutter::new()).finish()?;
        if let Some(block) = last {
            self.close(block);
        }
        (self.ok && !self.spans.is_empty()).then_some(Cut {
            world: self.world,
            spans: self.spans,
        })
    }
}

/// Stages 1 to 3: TOML syntax, inline secrets, the closed schema. A file
/// that was cut is parsed one step table at a time (see [`super::split`]);
/// any refusal, or a cut the pieces do not accept, is reported by parsing
/// the whole file, so the error is the whole file's.
fn parse_file(text: ScenarioText, cut: Option<Cut>) -> Result<Parsed, ArenaError> {
    if let Some(cut) = cut {
        if let Some(file) = parse_world_piece(&cut.world) {
            return Ok(Parsed {
                file,
                text,
                cut: Some((cut.spans, cut.world)),
            });
        }
    }
    let bytes = text.to_vec().map_err(spool_failed)?;
    let file = parse_whole(utf8(&bytes)?)?;
    Ok(Parsed {
        file,
        text,
        cut: None,
    })
}

/// The world of a scenario without its steps, as a node needs it: the
/// step tables are skipped without being parsed when the file splits.
fn parse_world_file(text: &str) -> Result<ScenarioFile, ArenaError> {
    if let Some(file) = split(text).and_then(|cut| parse_world_piece(&cut.world)) {
        return Ok(file);
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
    // Straight into the declaration: the loader checked this table whole
    // (secrets, one step) before, so no TOML table is built in between.
    let parsed: StepTable = toml::from_str(table).ok()?;
    let [step] = <[StepDecl; 1]>::try_from(parsed.steps).ok()?;
    Some(step)
}

/// The one step a parsed `[[steps]]` table declares.
fn one_step(table: toml::Table) -> Option<StepDecl> {
    let parsed: StepTable = toml::Value::Table(table).try_into().ok()?;
    let [step] = <[StepDecl; 1]>::try_from(parsed.steps).ok()?;
    Some(step)
}

/// Whether a cut `[[steps]]` table passes stages 1 to 3 on its own: it
/// parses, holds no inline secret, declares exactly one step, and its
/// `arguments` convert to JSON.
fn check_step_piece(piece: &str) -> bool {
    if chio_kernel::canonical::first_rounded_whole(piece).is_some() {
        return false;
    }
    let Ok(table) = piece.parse::<toml::Table>() else {
        return false;
    };
    if secrets::scan_source(piece, &table).is_err() {
        return false;
    }
    let Some(step) = one_step(table) else {
        return false;
    };
    match &step.arguments {
        Some(table) => arguments_json(table, "arguments").is_ok(),
        None => true,
    }
}

/// The world piece of a cut file as its declarations (no steps); `None`
/// when it does not parse, holds a secret or a `steps` key, or breaks the
/// schema.
fn parse_world_piece(world: &str) -> Option<ScenarioFile> {
    if chio_kernel::canonical::first_rounded_whole(world).is_some() {
        return None;
    }
    let table: toml::Table = world.parse().ok()?;
    if table.contains_key("steps") {
        return None;
    }
    secrets::scan_source(world, &table).ok()?;
    toml::Value::Table(table).try_into().ok()
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
    if let Some(offset) = chio_kernel::canonical::first_rounded_whole(text) {
        let (line, column) = line_column(text.as_bytes(), offset);
        return Err(ArenaError::Syntax {
            line,
            column,
            reason: "this number's fraction rounds away when it is read (it would reach the kernel as a whole number); write its exact value, or the amount as a string".to_string(),
        });
    }
    secrets::scan_source(text, &table)?;
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
#[path = "load_tests.rs"]
mod tests;
