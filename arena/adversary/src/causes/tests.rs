use chio_kernel::verdict::ProjectedVerdict;
use proptest::prelude::*;

use super::*;
use crate::fitness::Stage;

fn record(action: &str, detail: Option<&str>, operators: Vec<Operator>) -> ActionRecord {
    ActionRecord {
        action: action.into(),
        base_step: "read".into(),
        gene: "g".into(),
        expected: ProjectedVerdict::Deny,
        actual: ProjectedVerdict::Allow,
        reason: None,
        guard: None,
        receipt_id: None,
        result: ActionResult::Survived,
        operators,
        stage: Some(Stage::Admitted),
        detail: detail.map(str::to_string),
        progress: 1000,
        goal: Some("smuggle-instruction".into()),
        decided_stage: Some("output".into()),
    }
}

fn sample(name: &str, records: Vec<ActionRecord>) -> FitnessSample {
    FitnessSample {
        population: name.into(),
        class: AdversaryClass::PromptInjection,
        lineage: "injection".into(),
        survivals: records.len() as u32,
        defeats: 0,
        inside_grant: 0,
        goal_missed: 0,
        fitness_ppm: 0,
        novel_outcomes: 0,
        total_actions: records.len() as u32,
        kernel_evaluations: 0,
        records,
    }
}

fn generation(n: u32, samples: Vec<FitnessSample>) -> GenerationRecord {
    GenerationRecord {
        generation: n,
        best_population: None,
        samples,
        populations: Vec::new(),
        best_fitness: 0.0,
        mean_fitness: 0.0,
        escapes: 0,
        new_actions: 0,
        novel_outcomes: 0,
    }
}

// The key reads the goal, the decision trace's stage, the reference pattern and the families in catalogue order.
#[test]
fn key_reads_the_four_parts() {
    let r = record(
        "a",
        Some("tool-name-spoof/tool-tag/plain/0"),
        vec![
            Operator::RenameKey,
            Operator::Leetspeak,
            Operator::Confusables,
        ],
    );
    let key = CauseKey::of(AdversaryClass::PromptInjection, &r);
    assert_eq!(key.goal, "smuggle-instruction");
    assert_eq!(key.stage, "output");
    assert_eq!(key.pattern, "tool-name-spoof");
    assert_eq!(key.family, "character+structural");
    let mut path = record("b", Some("names-the-goal-path"), Vec::new());
    path.goal = Some("reach-forbidden-path".into());
    path.decided_stage = None;
    let key = CauseKey::of(AdversaryClass::CapabilityOverrequest, &path);
    assert_eq!(
        (
            key.pattern.as_str(),
            key.family.as_str(),
            key.stage.as_str()
        ),
        ("none", "none", "admitted")
    );
}

// One cause per key, counted once per action across generations, with the fewest-operator occurrence as example and the largest cause first.
#[test]
fn groups_dedupes_and_picks_the_shortest_example() {
    let spoof = Some("tool-name-spoof/tool-tag/plain/0");
    let leak = Some("system-prompt-leak/disclosure-verb/plain/0");
    let g0 = generation(
        0,
        vec![sample(
            "p",
            vec![
                record(
                    "p/0/r0",
                    spoof,
                    vec![Operator::Fullwidth, Operator::UpperCase],
                ),
                record("p/1/r0", spoof, vec![Operator::Fullwidth]),
                record("p/2/r0", leak, vec![]),
            ],
        )],
    );
    // The elite `p` again in generation 1 (same actions), and a new population.
    let g1 = generation(
        1,
        vec![
            g0.samples[0].clone(),
            sample(
                "q",
                vec![record("q/0/r0", spoof, vec![Operator::Diacritics])],
            ),
        ],
    );
    let causes = causes_of_run(&[g0, g1]);
    assert_eq!(causes.len(), 2);
    assert_eq!(causes[0].pattern, "tool-name-spoof");
    assert_eq!(causes[0].family, "character");
    assert_eq!(causes[0].count, 3);
    assert_eq!(causes[0].occurrences.len(), 3);
    assert_eq!(causes[0].example.action, "p/1/r0");
    assert_eq!(causes[0].occurrences[2].generation, 1);
    assert_eq!(causes[1].pattern, "system-prompt-leak");
    assert_eq!(causes[1].family, "none");
    assert_eq!(causes[1].example_description, "no operator");
}

fn any_operator() -> impl Strategy<Value = Operator> {
    prop::sample::select(Operator::ALL.to_vec())
}

proptest! {
    // Whatever the escapes, the counts add up to the distinct escapes, keys are unique, examples are among the shortest, and the largest cause comes first.
    #[test]
    fn counts_add_up_and_keys_are_unique(
        specs in prop::collection::vec(
            (0u8..3, 0u8..4, prop::collection::vec(any_operator(), 0..4)),
            0..24,
        )
    ) {
        let patterns = ["a/x/plain/0", "b/y/plain/0", "c/z/split"];
        let records: Vec<ActionRecord> = specs
            .iter()
            .enumerate()
            .map(|(i, (p, m, ops))| {
                let mut r = record(&format!("p/{m}/{i}"), Some(patterns[*p as usize]), ops.clone());
                if *m == 3 {
                    r.result = ActionResult::Defeated;
                }
                r
            })
            .collect();
        let escapes = records.iter().filter(|r| r.result == ActionResult::Survived).count();
        let causes = causes_of_samples(0, &[sample("p", records)]);
        let total: u32 = causes.iter().map(|c| c.count).sum();
        prop_assert_eq!(total as usize, escapes);
        let keys: BTreeSet<CauseKey> = causes.iter().map(EscapeCause::key).collect();
        prop_assert_eq!(keys.len(), causes.len());
        for cause in &causes {
            prop_assert!(cause.occurrences.contains(&cause.example));
            prop_assert!(cause
                .occurrences
                .iter()
                .all(|o| o.operators.len() >= cause.example.operators.len()));
        }
        prop_assert!(causes.windows(2).all(|w| w[0].count >= w[1].count));
    }
}
