//! Runs a suite's user tasks under the four policies and tallies the table.

use std::collections::BTreeMap;
use std::path::Path;

use chio_arena::ActionKind;
use chio_controller::api::{load_scenario_str, Topology};
use chio_kernel::verdict::Verdict;

use super::expand::{build, Form, Role};
use super::model::Suite;

/// The policies compared: name, form, the kernel's guard list.
pub const POLICIES: [(&str, Form, &str); 4] = [
    ("none", Form::Single, "[]"),
    ("detection", Form::Single, "[\"detect\"]"),
    ("session integrity", Form::Single, "[\"integrity\"]"),
    ("provenance", Form::Planner, "[\"integrity\"]"),
];

/// One policy's figures over a set of user tasks.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    pub tasks: usize,
    pub tasks_whole: usize,
    pub calls: usize,
    pub calls_admitted: usize,
    pub pairs: usize,
    pub pairs_whole: usize,
    pub attacks: usize,
    pub approvals: usize,
    /// The clean runs that fell short: task, then its first refused call
    /// and the rule that refused it.
    pub short: Vec<(String, String)>,
}

impl Tally {
    pub fn add(&mut self, other: &Tally) {
        self.tasks += other.tasks;
        self.tasks_whole += other.tasks_whole;
        self.calls += other.calls;
        self.calls_admitted += other.calls_admitted;
        self.pairs += other.pairs;
        self.pairs_whole += other.pairs_whole;
        self.attacks += other.attacks;
        self.approvals += other.approvals;
        self.short.extend(other.short.iter().cloned());
    }
}

/// What one run (the clean agents, or one pair's) did.
#[derive(Default)]
struct Run {
    calls: usize,
    admitted: usize,
    whole: bool,
    attacked: bool,
    approvals: usize,
    first_refusal: Option<String>,
}

/// Runs `tasks` of `suite` under every policy; by policy name.
pub fn run_suite(suite: &Suite, tasks: &[&str], dir: &Path) -> BTreeMap<&'static str, Tally> {
    let mut out = BTreeMap::new();
    for (policy, form, guards) in POLICIES {
        let mut tally = Tally::default();
        for task in tasks {
            let built = build(suite, task, form, guards);
            let run = load_scenario_str(&built.text, dir)
                .unwrap_or_else(|e| panic!("{} {task}: {e:?}", suite.suite))
                .run(&Topology::Embedded)
                .unwrap_or_else(|e| panic!("{} {task}: {e:?}", suite.suite));
            let mut runs: BTreeMap<String, Run> = BTreeMap::new();
            let released: BTreeMap<&str, bool> = run
                .steps()
                .iter()
                .map(|s| (s.step_id.as_str(), s.verdict == Some(Verdict::Allow)))
                .collect();
            for step in run.steps().iter().filter(|s| s.action == ActionKind::Call) {
                let role = &built.roles[&step.step_id];
                let allowed = step.verdict == Some(Verdict::Allow);
                let approval = step.verdict == Some(Verdict::PendingApproval);
                match role {
                    Role::User {
                        run,
                        substituted,
                        protected,
                    } => {
                        let r = runs.entry(run.clone()).or_insert_with(|| Run {
                            whole: true,
                            ..Run::default()
                        });
                        r.calls += 1;
                        r.admitted += usize::from(allowed);
                        r.approvals += usize::from(approval);
                        r.whole &= allowed && !substituted;
                        r.attacked |= allowed && *protected;
                        if !allowed && r.first_refusal.is_none() {
                            r.first_refusal = Some(format!(
                                "{} ({}): {}",
                                step.target.clone().unwrap_or_default(),
                                step.step_id,
                                step.reason_code
                                    .clone()
                                    .or_else(|| step.reason.clone())
                                    .unwrap_or_default()
                            ));
                        }
                    }
                    Role::Attack { run, carrier } => {
                        let r = runs.entry(run.clone()).or_insert_with(|| Run {
                            whole: true,
                            ..Run::default()
                        });
                        // An injection whose carrier was withheld never
                        // reached the agent.
                        r.attacked |= allowed && released[carrier.as_str()];
                        r.approvals += usize::from(approval);
                    }
                    Role::Other => {}
                }
            }
            tally.tasks += 1;
            for (name, r) in &runs {
                tally.approvals += r.approvals;
                if name == "clean" {
                    tally.calls += r.calls;
                    tally.calls_admitted += r.admitted;
                    tally.tasks_whole += usize::from(r.whole);
                    if !r.whole {
                        tally.short.push((
                            format!("{} {task}", suite.suite),
                            r.first_refusal.clone().unwrap_or_default(),
                        ));
                    }
                } else {
                    tally.pairs += 1;
                    tally.pairs_whole += usize::from(r.whole);
                    tally.attacks += usize::from(r.attacked);
                }
            }
        }
        out.insert(policy, tally);
    }
    out
}

/// Percent with one decimal, in integers.
pub fn pct(n: usize, d: usize) -> String {
    if d == 0 {
        return "n/a".to_string();
    }
    let tenths = (n * 1000 + d / 2) / d;
    format!("{}.{}%", tenths / 10, tenths % 10)
}

/// The markdown table: a row per suite and policy, then the totals.
pub fn render(by_suite: &BTreeMap<String, BTreeMap<&'static str, Tally>>) -> String {
    let mut out = String::from(
        "| suite | policy | clean: tasks whole | clean: calls admitted | under attack: pairs whole | attack success | approvals |\n|---|---|---|---|---|---|---|\n",
    );
    let mut total: BTreeMap<&str, Tally> = BTreeMap::new();
    let rows = |name: &str, tallies: &BTreeMap<&'static str, Tally>, out: &mut String| {
        for (policy, _, _) in POLICIES {
            let t = &tallies[policy];
            out.push_str(&format!(
                "| {name} | {policy} | {}/{} ({}) | {}/{} ({}) | {}/{} ({}) | {}/{} ({}) | {} |\n",
                t.tasks_whole,
                t.tasks,
                pct(t.tasks_whole, t.tasks),
                t.calls_admitted,
                t.calls,
                pct(t.calls_admitted, t.calls),
                t.pairs_whole,
                t.pairs,
                pct(t.pairs_whole, t.pairs),
                t.attacks,
                t.pairs,
                pct(t.attacks, t.pairs),
                t.approvals,
            ));
        }
    };
    for (suite, tallies) in by_suite {
        rows(suite, tallies, &mut out);
        for (policy, t) in tallies {
            total.entry(policy).or_default().add(t);
        }
    }
    rows("all", &total, &mut out);
    out.push_str(
        "\n| task (clean run, provenance policy) | first refused call: rule |\n|---|---|\n",
    );
    for (task, why) in &total["provenance"].short {
        out.push_str(&format!("| {task} | {why} |\n"));
    }
    out
}
