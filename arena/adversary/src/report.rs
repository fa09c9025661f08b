//! The report of an adversary search (`chio arena evolve` output): what
//! was searched and whether anything escaped, in words; the fitness chart
//! per generation (the chart `survival.svg` holds, inline); the ranked
//! populations; and the escapes grouped by cause, each cause with its count
//! and shortest example, then every escape under its cause.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::causes::{CauseKey, EscapeCause};
use crate::chart::{first_escape, render_chart};
use crate::coevolution::GenerationRecord;
use crate::{Leaderboard, LeaderboardRow, TRACE_SCHEMA};
use chio_arena::error::ArenaError;
use chio_arena::report::{escape, number, Page};

/// The generation trace as `evolve-trace.json` holds it (the fields the
/// report reads).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TraceFile {
    /// Always [`TRACE_SCHEMA`].
    pub schema_version: String,
    /// The scenario searched.
    pub scenario_id: String,
    /// Its seed.
    pub rng_seed: u64,
    /// The SHA-256 of the scenario file searched, so a search of an edited
    /// file that kept the id and the seed is told apart.
    pub scenario_sha256: String,
    /// Generations run.
    pub generations_completed: u32,
    /// One record per generation.
    pub generations: Vec<GenerationRecord>,
}

impl TraceFile {
    /// Reads `evolve-trace.json`'s bytes, refusing another schema.
    /// The schema is read first, so a trace of another version is named
    /// as such rather than by the first field it lacks.
    pub fn parse(bytes: &[u8], path: &str) -> Result<TraceFile, ArenaError> {
        #[derive(Deserialize)]
        struct Head {
            schema_version: String,
        }
        let refused = |e: serde_json::Error| ArenaError::Bundle {
            path: path.to_string(),
            cause: format!("not an evolve trace: {e}"),
        };
        let head: Head = serde_json::from_slice(bytes).map_err(refused)?;
        if head.schema_version != TRACE_SCHEMA {
            return Err(ArenaError::Bundle {
                path: path.to_string(),
                cause: format!("schema {:?} is not {TRACE_SCHEMA}", head.schema_version),
            });
        }
        serde_json::from_slice(bytes).map_err(refused)
    }
}

impl TraceFile {
    /// The first place the trace contradicts itself, naming its field: a
    /// sample's counts (`survivals`, `defeats`, `inside_grant`,
    /// `goal_missed`, `total_actions`) that are not what its records'
    /// results give, a record scored against its own verdict (`defeated`
    /// is a deny, `survived` and `goal-missed` an admission), a
    /// generation's `escapes` that are not its samples' survivals, or a
    /// `generations_completed` that is not the generations it lists. A
    /// trace whose records were edited (every escape turned into a defeat,
    /// the counts left) is never read as a search with nothing escaped.
    pub fn inconsistency(&self) -> Option<String> {
        if self.generations.len() != self.generations_completed as usize {
            return Some(format!(
                "generations_completed is {}, but the trace lists {} generation(s)",
                self.generations_completed,
                self.generations.len()
            ));
        }
        self.generations.iter().enumerate().find_map(|(g, record)| {
            let at = format!("generations[{g}]");
            let survivals: u64 = record.samples.iter().map(|s| u64::from(s.survivals)).sum();
            if survivals != u64::from(record.escapes) {
                return Some(format!(
                    "{at}.escapes is {}, but its samples record {survivals} survival(s)",
                    record.escapes
                ));
            }
            record
                .samples
                .iter()
                .enumerate()
                .find_map(|(i, sample)| sample_inconsistency(&format!("{at}.samples[{i}]"), sample))
        })
    }
}

/// The first count of `sample` its records do not bear out, or the first
/// record whose result its own verdict contradicts.
fn sample_inconsistency(at: &str, sample: &crate::FitnessSample) -> Option<String> {
    use crate::ActionResult;
    use chio_kernel::verdict::ProjectedVerdict;
    let mut tally = [0u32; 4];
    for (k, record) in sample.records.iter().enumerate() {
        let denied = record.actual == ProjectedVerdict::Deny;
        let (slot, agrees) = match record.result {
            ActionResult::Survived => (0, !denied),
            ActionResult::Defeated => (1, denied),
            ActionResult::InsideGrant => (2, true),
            ActionResult::GoalMissed => (3, !denied),
        };
        if !agrees {
            let word = |v: serde_json::Result<serde_json::Value>| match v {
                Ok(serde_json::Value::String(word)) => word,
                _ => "?".to_string(),
            };
            return Some(format!(
                "{at}.records[{k}].result is {:?}, but the record's verdict is {:?}",
                word(serde_json::to_value(record.result)),
                word(serde_json::to_value(record.actual))
            ));
        }
        tally[slot] += 1;
    }
    let counts = [
        ("survivals", sample.survivals),
        ("defeats", sample.defeats),
        ("inside_grant", sample.inside_grant),
        ("goal_missed", sample.goal_missed),
    ];
    for ((name, stated), counted) in counts.into_iter().zip(tally) {
        if stated != counted {
            return Some(format!(
                "{at}.{name} is {stated}, but its records give {counted}"
            ));
        }
    }
    (sample.records.len() != sample.total_actions as usize).then(|| {
        format!(
            "{at}.total_actions is {}, but it holds {} record(s)",
            sample.total_actions,
            sample.records.len()
        )
    })
}

/// Whether `bytes`, a search's `leaderboard.json`, are byte for byte the
/// leaderboard the trace beside it derives ([`Leaderboard::from_trace`],
/// what `chio arena evolve` writes of those generation records); what
/// differs when they are not. A leaderboard with an escape removed, or of
/// another search, is never read as this trace's.
pub fn leaderboard_disagreement(bytes: &[u8], trace: &TraceFile) -> Option<String> {
    let derived = Leaderboard::from_trace(&trace.scenario_id, &trace.generations);
    let again = match derived.to_json() {
        Ok(again) => again,
        Err(e) => return Some(format!("the trace's leaderboard cannot be derived: {e}")),
    };
    if again == bytes {
        return None;
    }
    Some(match serde_json::from_slice::<Leaderboard>(bytes) {
        Ok(stated) => what_differs(&stated, &derived),
        Err(e) => format!("it is not a leaderboard ({e})"),
    })
}

/// The first thing a stated leaderboard says that its trace does not:
/// the scenario, the escapes per cause, the generation ranked, a row.
fn what_differs(stated: &Leaderboard, derived: &Leaderboard) -> String {
    if stated.scenario_id != derived.scenario_id {
        return format!(
            "it ranks scenario {:?}, the trace searched {:?}",
            stated.scenario_id, derived.scenario_id
        );
    }
    let counts = |b: &Leaderboard| -> BTreeMap<CauseKey, u32> {
        b.causes.iter().map(|c| (c.key(), c.count)).collect()
    };
    let (said, traced) = (counts(stated), counts(derived));
    if let Some(key) = said
        .keys()
        .chain(traced.keys())
        .find(|k| said.get(*k) != traced.get(*k))
    {
        return format!(
            "it records {} escape(s) in {} cause(s), the trace's survived actions give {} in {} (cause {}: {} against {})",
            stated.escape_count(),
            stated.causes.len(),
            derived.escape_count(),
            derived.causes.len(),
            key.label(),
            said.get(key).copied().unwrap_or(0),
            traced.get(key).copied().unwrap_or(0)
        );
    }
    if stated.generation != derived.generation {
        return format!(
            "it ranks generation {}, the trace's last generation is {}",
            stated.generation, derived.generation
        );
    }
    if let Some(at) = (0..stated.rows.len().max(derived.rows.len()))
        .find(|i| stated.rows.get(*i) != derived.rows.get(*i))
    {
        let show = |row: Option<&LeaderboardRow>| {
            row.map_or("no population".to_string(), |r| {
                format!(
                    "{:?} with {} survival(s), {} defeat(s) of {} action(s)",
                    r.population, r.survivals, r.defeats, r.total_actions
                )
            })
        };
        return format!(
            "its rank {} is {}, the trace's last generation gives {}",
            at + 1,
            show(stated.rows.get(at)),
            show(derived.rows.get(at))
        );
    }
    "its escapes' examples or occurrences, or its bytes, are not the leaderboard the trace derives"
        .to_string()
}

/// What the search report reads.
#[derive(Debug, Clone, Copy)]
pub struct Search<'a> {
    /// The final leaderboard.
    pub leaderboard: &'a Leaderboard,
    /// The scenario's seed.
    pub rng_seed: u64,
    /// Generations run.
    pub generations_completed: u32,
    /// One record per generation.
    pub generations: &'a [GenerationRecord],
}

/// The escape causes in the leaderboard's order (largest first), and the
/// number of escapes they hold together.
pub fn causes(board: &Leaderboard) -> (&[EscapeCause], u32) {
    let total = board.causes.iter().map(|c| c.count).sum();
    (&board.causes, total)
}

/// The report of a search as a self-contained HTML page.
pub fn render(search: &Search<'_>) -> Result<String, ArenaError> {
    let board = search.leaderboard;
    let (causes, escaped) = causes(board);
    let mut page = Page::new();
    page.element(
        "h1",
        Some("title"),
        &format!("Adversary search report: {}", board.scenario_id),
    );
    summary(&mut page, search, causes, escaped);
    page.raw("</p>\n</div>\n<h2>Fitness per generation</h2>\n<div id=\"fitness-chart\">\n");
    page.raw(&render_chart(&board.scenario_id, search.generations)?);
    page.raw("</div>\n<h2>Populations</h2>\n");
    populations(&mut page, board);
    page.raw("<h2>Escapes by cause</h2>\n");
    escapes_by_cause(&mut page, causes);
    Ok(page.finish(
        "search",
        &format!("Adversary search report: {}", board.scenario_id),
    ))
}

/// Writes the summary box: what was searched, and whether and when
/// anything escaped.
fn summary(page: &mut Page, search: &Search<'_>, causes: &[EscapeCause], escaped: u32) {
    let board = search.leaderboard;
    page.raw(&format!(
        "<div id=\"summary\" class=\"summary{}\">\n<p>",
        if causes.is_empty() { "" } else { " bad" }
    ));
    page.text(&format!(
        "Adversary populations were bred for {} generation(s) (seed {}) against scenario {}, each action they invented evaluated by the real capability kernel. \
         At generation {}, {} population(s) were ranked by how often their actions survived, that is, were not denied when they should have been.",
        search.generations_completed,
        search.rng_seed,
        board.scenario_id,
        board.generation,
        board.rows.len()
    ));
    page.raw("</p>\n<p>");
    match first_escape(search.generations) {
        _ if causes.is_empty() => page.text(
            "No action escaped: the kernel denied every adversary action it had to deny.",
        ),
        Some(g) => page.text(&format!(
            "{escaped} action(s) escaped, in {} cause(s); the first escape of the search came at generation {g}. Each cause is listed below with its shortest example, then every escape under its cause.",
            causes.len()
        )),
        None => page.text(&format!(
            "{escaped} action(s) escaped, in {} cause(s). Each cause is listed below with its shortest example, then every escape under its cause.",
            causes.len()
        )),
    }
}

/// Writes the ranked populations as a table.
fn populations(page: &mut Page, board: &Leaderboard) {
    let rows: Vec<Vec<String>> = board
        .rows
        .iter()
        .map(|r| {
            vec![
                r.rank.to_string(),
                escape(&r.population),
                escape(&r.class),
                number(Some(r.survival_rate)),
                r.survivals.to_string(),
                r.defeats.to_string(),
                r.total_actions.to_string(),
                number(Some(r.fitness)),
            ]
        })
        .collect();
    page.table(
        Some("populations"),
        &[
            "rank",
            "population",
            "class",
            "survival rate",
            "survivals",
            "defeats",
            "actions",
            "fitness",
        ],
        &rows,
    );
}

/// Writes the escape causes, each with its count and shortest example,
/// then every escape under its cause; or says that none escaped.
fn escapes_by_cause(page: &mut Page, causes: &[EscapeCause]) {
    if causes.is_empty() {
        page.raw("<p id=\"escapes\">None.</p>\n");
    } else {
        page.raw("<p>A cause is the goal, the pipeline stage that decided, the reference reader's pattern that matched and the operator families; each with its count and shortest example (fewest operators):</p>\n");
        let rows: Vec<Vec<String>> = causes
            .iter()
            .map(|c| {
                vec![
                    escape(&c.goal),
                    escape(&c.stage),
                    escape(&c.pattern),
                    escape(&c.family),
                    escape(c.class.as_str()),
                    c.count.to_string(),
                    escape(&c.example.action),
                    c.example.operators.len().to_string(),
                    escape(&c.example_description),
                ]
            })
            .collect();
        page.table(
            Some("shortest"),
            &[
                "goal",
                "stage",
                "pattern",
                "operator families",
                "class",
                "escapes",
                "shortest example",
                "operators",
                "what was done to the base action",
            ],
            &rows,
        );
        page.raw("<p>Every escape, under its cause:</p>\n");
        let rows: Vec<Vec<String>> = causes
            .iter()
            .enumerate()
            .flat_map(|(i, c)| {
                c.occurrences.iter().map(move |e| {
                    vec![
                        (i + 1).to_string(),
                        escape(&e.population),
                        escape(&e.action),
                        escape(&e.gene),
                        e.operators.len().to_string(),
                        escape(&e.description()),
                    ]
                })
            })
            .collect();
        page.table(
            Some("escapes"),
            &[
                "cause",
                "population",
                "action",
                "gene",
                "operators",
                "what was done to the base action",
            ],
            &rows,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // Any bytes read as an evolve trace are a trace or a typed error, never a panic.
        #[test]
        fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = TraceFile::parse(&bytes, "evolve-trace.json");
        }
    }

    fn escaped(action: &str) -> crate::ActionRecord {
        crate::ActionRecord {
            action: action.into(),
            base_step: "read".into(),
            gene: "g".into(),
            expected: chio_kernel::verdict::ProjectedVerdict::Deny,
            actual: chio_kernel::verdict::ProjectedVerdict::Allow,
            reason: None,
            guard: None,
            receipt_id: None,
            result: crate::ActionResult::Survived,
            operators: Vec::new(),
            stage: None,
            detail: Some("names-the-goal-path".into()),
            progress: 1000,
            goal: Some("reach-forbidden-path".into()),
            decided_stage: None,
        }
    }

    fn trace_of(scenario: &str) -> TraceFile {
        let sample = crate::FitnessSample {
            population: "p".into(),
            class: chio_arena::adversaries::AdversaryClass::CapabilityOverrequest,
            lineage: "p".into(),
            survivals: 2,
            defeats: 0,
            inside_grant: 0,
            goal_missed: 0,
            fitness_ppm: 0,
            novel_outcomes: 0,
            total_actions: 2,
            kernel_evaluations: 2,
            records: vec![escaped("a"), escaped("b")],
        };
        TraceFile {
            schema_version: TRACE_SCHEMA.into(),
            scenario_id: scenario.into(),
            rng_seed: 1,
            scenario_sha256: "ab".repeat(32),
            generations_completed: 1,
            generations: vec![GenerationRecord {
                generation: 0,
                best_population: Some("p".into()),
                samples: vec![sample],
                populations: Vec::new(),
                best_fitness: 0.0,
                mean_fitness: 0.0,
                escapes: 2,
                new_actions: 2,
                novel_outcomes: 0,
            }],
        }
    }

    // The leaderboard its trace derives agrees; one with its escapes removed, or of another search, is named.
    #[test]
    fn a_leaderboard_is_what_its_trace_derives() {
        let trace = trace_of("s");
        let board = Leaderboard::from_trace("s", &trace.generations);
        assert_eq!(board.escape_count(), 2);
        let bytes = board.to_json().unwrap();
        assert_eq!(leaderboard_disagreement(&bytes, &trace), None);
        let mut emptied = board.clone();
        emptied.causes.clear();
        let why = leaderboard_disagreement(&emptied.to_json().unwrap(), &trace).unwrap();
        assert!(
            why.contains("0 escape(s) in 0 cause(s)") && why.contains("give 2 in 1"),
            "{why}"
        );
        let why = leaderboard_disagreement(&bytes, &trace_of("other")).unwrap();
        assert!(why.contains("\"s\"") && why.contains("\"other\""), "{why}");
        let mut ranked = board;
        ranked.rows[0].survivals = 0;
        let why = leaderboard_disagreement(&ranked.to_json().unwrap(), &trace).unwrap();
        assert!(why.contains("rank 1"), "{why}");
        let why = leaderboard_disagreement(b"{}", &trace).unwrap();
        assert!(why.contains("not a leaderboard"), "{why}");
    }

    // Another schema is refused naming the file and the schema expected.
    #[test]
    fn another_schema_is_refused() {
        let text = serde_json::json!({
            "schema_version": "chio.arena.evolve-trace/v0",
            "scenario_id": "s",
            "rng_seed": 1,
            "generations_completed": 0,
            "generations": [],
        })
        .to_string();
        let err = TraceFile::parse(text.as_bytes(), "t.json").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("t.json") && text.contains(TRACE_SCHEMA),
            "{text}"
        );
    }
}
