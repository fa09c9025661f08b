//! The report of an adversary search (`chio arena evolve` output): what
//! was searched and whether anything escaped, in words; the fitness chart
//! per generation (the chart `survival.svg` holds, inline); the ranked
//! populations; and the escapes, one row per escaping action, the shortest
//! example (fewest operators) first.

use serde::Deserialize;

use super::{escape, number, Page};
use crate::adversary::chart::{first_escape, render_chart};
use crate::adversary::coevolution::GenerationRecord;
use crate::adversary::{Leaderboard, LeaderboardEscape, TRACE_SCHEMA};
use crate::error::ArenaError;

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
    /// Generations run.
    pub generations_completed: u32,
    /// One record per generation.
    pub generations: Vec<GenerationRecord>,
}

impl TraceFile {
    /// Reads `evolve-trace.json`'s bytes, refusing another schema.
    pub fn parse(bytes: &[u8], path: &str) -> Result<TraceFile, ArenaError> {
        let trace: TraceFile = serde_json::from_slice(bytes).map_err(|e| ArenaError::Bundle {
            path: path.to_string(),
            cause: format!("not an evolve trace: {e}"),
        })?;
        if trace.schema_version != TRACE_SCHEMA {
            return Err(ArenaError::Bundle {
                path: path.to_string(),
                cause: format!("schema {:?} is not {TRACE_SCHEMA}", trace.schema_version),
            });
        }
        Ok(trace)
    }
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

/// The escapes, shortest example (fewest operators) first, then by
/// population and action.
pub fn sorted_escapes(board: &Leaderboard) -> Vec<&LeaderboardEscape> {
    let mut escapes: Vec<&LeaderboardEscape> = board.escapes.iter().collect();
    escapes.sort_by(|a, b| {
        (a.operators.len(), &a.population, &a.action, &a.gene).cmp(&(
            b.operators.len(),
            &b.population,
            &b.action,
            &b.gene,
        ))
    });
    escapes
}

/// The report of a search as a self-contained HTML page.
pub fn render(search: &Search<'_>) -> Result<String, ArenaError> {
    let board = search.leaderboard;
    let escapes = sorted_escapes(board);
    let mut page = Page::new();
    page.element(
        "h1",
        Some("title"),
        &format!("Adversary search report: {}", board.scenario_id),
    );
    page.raw(&format!(
        "<div id=\"summary\" class=\"summary{}\">\n<p>",
        if escapes.is_empty() { "" } else { " bad" }
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
        _ if escapes.is_empty() => page.text(
            "No action escaped in the ranked generation: the kernel denied every adversary action it had to deny.",
        ),
        Some(g) => page.text(&format!(
            "{} action(s) escaped in the ranked generation; the first escape of the search came at generation {g}. Each is listed below, the shortest example first.",
            escapes.len()
        )),
        None => page.text(&format!(
            "{} action(s) escaped in the ranked generation. Each is listed below, the shortest example first.",
            escapes.len()
        )),
    }
    page.raw("</p>\n</div>\n<h2>Fitness per generation</h2>\n<div id=\"fitness-chart\">\n");
    page.raw(&render_chart(&board.scenario_id, search.generations)?);
    page.raw("</div>\n<h2>Populations</h2>\n");
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
    page.raw("<h2>Escapes</h2>\n");
    if escapes.is_empty() {
        page.raw("<p id=\"escapes\">None.</p>\n");
    } else {
        let class_of = |population: &str| {
            board
                .rows
                .iter()
                .find(|r| r.population == population)
                .map(|r| r.class.clone())
                .unwrap_or_default()
        };
        // The shortest example of each class: the first of its escapes in
        // the sorted order, with how many it stands for.
        let mut shortest: std::collections::BTreeMap<String, (usize, &LeaderboardEscape)> =
            std::collections::BTreeMap::new();
        for e in &escapes {
            shortest
                .entry(class_of(&e.population))
                .and_modify(|(n, _)| *n += 1)
                .or_insert((1, e));
        }
        page.raw("<p>The shortest example of each class:</p>\n");
        let rows: Vec<Vec<String>> = shortest
            .iter()
            .map(|(class, (n, e))| {
                vec![
                    escape(class),
                    n.to_string(),
                    escape(&e.action),
                    e.operators.len().to_string(),
                    escape(&e.description),
                ]
            })
            .collect();
        page.table(
            Some("shortest"),
            &[
                "class",
                "escapes",
                "shortest example",
                "operators",
                "what was done to the base action",
            ],
            &rows,
        );
        page.raw("<p>Every escape, the shortest first:</p>\n");
        let rows: Vec<Vec<String>> = escapes
            .iter()
            .map(|e| {
                vec![
                    escape(&e.population),
                    escape(&class_of(&e.population)),
                    escape(&e.action),
                    escape(&e.gene),
                    e.operators.len().to_string(),
                    escape(&e.description),
                ]
            })
            .collect();
        page.table(
            Some("escapes"),
            &[
                "population",
                "class",
                "action",
                "gene",
                "operators",
                "what was done to the base action",
            ],
            &rows,
        );
    }
    Ok(page.finish(
        "search",
        &format!("Adversary search report: {}", board.scenario_id),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adversary::operators::Operator;
    use proptest::prelude::*;

    proptest! {
        // Any bytes read as an evolve trace are a trace or a typed error, never a panic.
        #[test]
        fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = TraceFile::parse(&bytes, "evolve-trace.json");
        }
    }

    // Escapes come shortest example first (fewest operators), then by population and action.
    #[test]
    fn escapes_are_sorted_shortest_first() {
        let escape = |action: &str, population: &str, operators: Vec<Operator>| LeaderboardEscape {
            action: action.into(),
            population: population.into(),
            gene: "g".into(),
            description: String::new(),
            operators,
        };
        let board = Leaderboard {
            schema_version: crate::adversary::LEADERBOARD_SCHEMA.into(),
            scenario_id: "s".into(),
            generation: 1,
            rows: Vec::new(),
            escapes: vec![
                escape("a3", "p", vec![Operator::Base64, Operator::Hex]),
                escape("a2", "q", vec![Operator::Hex]),
                escape("a1", "q", vec![Operator::Base64]),
                escape(
                    "a0",
                    "p",
                    vec![Operator::Base64, Operator::Hex, Operator::UrlEncode],
                ),
                escape("a4", "o", vec![Operator::UrlEncode]),
            ],
        };
        let order: Vec<&str> = sorted_escapes(&board)
            .iter()
            .map(|e| e.action.as_str())
            .collect();
        assert_eq!(order, ["a4", "a1", "a2", "a3", "a0"]);
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
