//! Which agent's data reached which agent and which call, from a bundle's
//! records: a message (a hand-over when it declares a schema) from its
//! sender to its receiver with the labels it joined into the receiver, a
//! delegation from the delegator to the delegatee with the labels recorded
//! for the child, a call from its agent to its tool with the labels its
//! decision read, and a value one step takes from an earlier call's output
//! (`{ from_step = ... }`) from that call's tool to where it went. Edges
//! with the same ends and kind are merged, their steps and labels joined;
//! every collection is ordered, so the picture is the same bytes for the
//! same bundle. Drawn as inline SVG, one edge per row, and listed again as
//! a table with the full names and labels.

use std::collections::{BTreeMap, BTreeSet};

use chio_kernel::trace::DecisionTrace;

use super::escape;
use crate::bundle::StepRecord;
use crate::ActionKind;

/// What carried the data along an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EdgeKind {
    /// A message between agents.
    Message,
    /// A message with a schema.
    HandOver,
    /// A delegation of a capability.
    Delegation,
    /// A tool call.
    Call,
    /// A value taken from an earlier call's output.
    Value,
}

impl EdgeKind {
    /// The kind in words.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Message => "message",
            EdgeKind::HandOver => "hand-over",
            EdgeKind::Delegation => "delegation",
            EdgeKind::Call => "call",
            EdgeKind::Value => "value",
        }
    }
}

/// One edge of the picture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// Where the data came from: an agent, or a `server/tool`.
    pub from: String,
    /// Where it went: an agent, or a `server/tool`.
    pub to: String,
    /// What carried it.
    pub kind: EdgeKind,
    /// The steps that carried it, in bundle order.
    pub steps: Vec<String>,
    /// The labels it carried, sorted.
    pub labels: BTreeSet<String>,
}

/// The labels a call's decision read: its arguments' and every label key's.
fn call_labels(trace: Option<&DecisionTrace>) -> BTreeSet<String> {
    let Some(trace) = trace else {
        return BTreeSet::new();
    };
    trace
        .label_keys
        .values()
        .chain(trace.argument_labels.values())
        .flatten()
        .cloned()
        .collect()
}

/// Every step id a step's table names with `from_step`, in place order.
fn from_steps(value: &toml::Value, out: &mut Vec<String>) {
    match value {
        toml::Value::Table(table) => {
            if let Some(toml::Value::String(step)) = table.get("from_step") {
                out.push(step.clone());
            }
            for inner in table.values() {
                from_steps(inner, out);
            }
        }
        toml::Value::Array(items) => items.iter().for_each(|v| from_steps(v, out)),
        _ => {}
    }
}

/// The edges of a bundle's steps; `tables` holds each step's table of the
/// recorded scenario by step id (for a delegatee, a schema, a `from_step`).
pub fn edges(steps: &[StepRecord], tables: &BTreeMap<String, toml::Table>) -> Vec<Edge> {
    let mut merged = Merged::default();
    let targets: BTreeMap<&str, &str> = steps
        .iter()
        .filter(|s| s.action == ActionKind::Call)
        .filter_map(|s| Some((s.step_id.as_str(), s.target.as_deref()?)))
        .collect();
    for step in steps {
        let table = tables.get(&step.step_id);
        let Some(destination) = direct_edge(&mut merged, step, table) else {
            continue;
        };
        let mut sources = Vec::new();
        if let Some(table) = table {
            from_steps(&toml::Value::Table(table.clone()), &mut sources);
        }
        for source in sources {
            if let Some(from) = targets.get(source.as_str()) {
                merged.add(
                    from.to_string(),
                    destination.clone(),
                    EdgeKind::Value,
                    &step.step_id,
                    BTreeSet::new(),
                );
            }
        }
    }
    merged
        .0
        .into_iter()
        .map(|((from, to, kind), (steps, labels))| Edge {
            from,
            to,
            kind,
            steps,
            labels,
        })
        .collect()
}

/// Edges merged by their ends and kind: the steps that carried each, in
/// bundle order, and the labels joined.
#[derive(Default)]
struct Merged(BTreeMap<EdgeEnds, Carried>);

/// An edge's source, destination and kind.
type EdgeEnds = (String, String, EdgeKind);

/// The steps that carried an edge and the labels it carried.
type Carried = (Vec<String>, BTreeSet<String>);

impl Merged {
    /// Joins one step's edge into the edge with the same ends and kind.
    fn add(
        &mut self,
        from: String,
        to: String,
        kind: EdgeKind,
        step: &str,
        labels: BTreeSet<String>,
    ) {
        let entry = self.0.entry((from, to, kind)).or_default();
        if !entry.0.iter().any(|s| s == step) {
            entry.0.push(step.to_string());
        }
        entry.1.extend(labels);
    }
}

/// Adds the edge a message, delegation or call step draws from its agent;
/// where the step's data went, for the values it takes from earlier calls
/// (none for a delegation or another action).
fn direct_edge(
    merged: &mut Merged,
    step: &StepRecord,
    table: Option<&toml::Table>,
) -> Option<String> {
    let to = table
        .and_then(|t| t.get("to"))
        .and_then(toml::Value::as_str)
        .map(str::to_string)
        .or_else(|| step.target.clone());
    let recorded_labels: BTreeSet<String> = step.labels.iter().flatten().cloned().collect();
    match step.action {
        ActionKind::Message => {
            let kind = if table.is_some_and(|t| t.contains_key("schema")) {
                EdgeKind::HandOver
            } else {
                EdgeKind::Message
            };
            let to = to?;
            merged.add(
                step.agent.clone(),
                to.clone(),
                kind,
                &step.step_id,
                recorded_labels,
            );
            Some(to)
        }
        ActionKind::Delegate => {
            let to = to?;
            merged.add(
                step.agent.clone(),
                to,
                EdgeKind::Delegation,
                &step.step_id,
                recorded_labels,
            );
            None
        }
        ActionKind::Call => {
            let target = step.target.clone()?;
            let labels = call_labels(step.trace.as_deref());
            merged.add(
                step.agent.clone(),
                target.clone(),
                EdgeKind::Call,
                &step.step_id,
                labels,
            );
            Some(target)
        }
        _ => None,
    }
}

/// `text` cut to `max` characters with an ellipsis, escaped.
fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        escape(text)
    } else {
        let cut: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{}\u{2026}", escape(&cut))
    }
}

fn node_box(out: &mut String, x: f64, y: f64, name: &str) {
    let fill = if name.contains('/') {
        "#eeeeee"
    } else {
        "#dde7f3"
    };
    out.push_str(&format!(
        "<g><title>{}</title><rect x=\"{x:.0}\" y=\"{y:.0}\" width=\"200\" height=\"30\" rx=\"6\" fill=\"{fill}\" stroke=\"#667\"/>\
         <text x=\"{:.0}\" y=\"{:.0}\">{}</text></g>\n",
        escape(name),
        x + 8.0,
        y + 20.0,
        short(name, 26)
    ));
}

/// The picture: one row per edge, its source on the left, its
/// destination on the right, the kind and steps above the arrow and the
/// labels below it. An empty bundle gets a one-line picture saying so.
pub fn to_svg(edges: &[Edge]) -> String {
    let row = 56.0;
    let height = 30.0 + row * edges.len().max(1) as f64;
    let mut svg = format!(
        "<svg id=\"flow-svg\" xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"{height:.0}\" viewBox=\"0 0 760 {height:.0}\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\" aria-label=\"which data reached which agent and which call\">\n\
         <defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#445\"/></marker></defs>\n\
         <text x=\"10\" y=\"18\" font-weight=\"bold\">from</text><text x=\"550\" y=\"18\" font-weight=\"bold\">to</text>\n"
    );
    if edges.is_empty() {
        svg.push_str("<text x=\"10\" y=\"45\">no message, hand-over, delegation or call was recorded</text>\n");
    }
    for (i, edge) in edges.iter().enumerate() {
        let y = 28.0 + i as f64 * row;
        node_box(&mut svg, 10.0, y, &edge.from);
        node_box(&mut svg, 550.0, y, &edge.to);
        let colour = match edge.kind {
            EdgeKind::Call => "#4a7ab5",
            EdgeKind::Value => "#8a6d1f",
            EdgeKind::Delegation => "#6a3d9a",
            EdgeKind::Message | EdgeKind::HandOver => "#1b6e20",
        };
        svg.push_str(&format!(
            "<line x1=\"212\" y1=\"{:.0}\" x2=\"546\" y2=\"{:.0}\" stroke=\"{colour}\" stroke-width=\"2\" marker-end=\"url(#arrow)\"/>\n\
             <text x=\"220\" y=\"{:.0}\" fill=\"{colour}\">{} ({})</text>\n<text x=\"220\" y=\"{:.0}\" fill=\"#555\">{}</text>\n",
            y + 15.0,
            y + 15.0,
            y + 10.0,
            edge.kind.as_str(),
            short(&edge.steps.join(", "), 40),
            y + 30.0,
            short(&labels_text(&edge.labels), 50)
        ));
    }
    svg.push_str("</svg>\n");
    svg
}

/// The labels in words.
pub fn labels_text(labels: &BTreeSet<String>) -> String {
    if labels.is_empty() {
        "no labels".to_string()
    } else {
        format!(
            "labels: {}",
            labels.iter().cloned().collect::<Vec<_>>().join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::StepInputs;

    fn step(id: &str, action: ActionKind, agent: &str, target: Option<&str>) -> StepRecord {
        let mut record = StepRecord::new(id, action, agent, "t".into(), StepInputs::default());
        record.target = target.map(str::to_string);
        record
    }

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    // Messages, hand-overs, delegations, calls and values taken from an output become edges; edges with the same ends and kind merge their steps and labels, in order.
    #[test]
    fn edges_merge_and_sort() {
        let mut read = step("read", ActionKind::Call, "reader", Some("mail/read"));
        let mut trace = chio_kernel::trace::DecisionTrace::default();
        trace
            .label_keys
            .insert("session/reader".into(), vec!["secret".into()]);
        read.trace = Some(Box::new(trace));
        let mut hand = step("hand", ActionKind::Message, "reader", Some("planner"));
        hand.labels = Some(vec!["untrusted".into()]);
        let mut tell = step("tell", ActionKind::Message, "reader", Some("planner"));
        tell.labels = Some(vec!["public".into()]);
        let mut tell_again = step("tell-again", ActionKind::Message, "reader", Some("planner"));
        tell_again.labels = Some(vec!["internal".into()]);
        let delegate = step("give", ActionKind::Delegate, "alice", None);
        let pay = step("pay", ActionKind::Call, "planner", Some("bank/pay"));
        let advance = step("wait", ActionKind::Advance, "planner", None);
        let tables: BTreeMap<String, toml::Table> = [
            ("hand", "id = \"hand\"\nto = \"planner\"\nschema = { type = \"string\" }\nvalue = { from_step = \"read\", pointer = \"/x\" }"),
            ("give", "id = \"give\"\nto = \"bob\""),
            ("pay", "id = \"pay\"\narguments = { to = { from_step = \"read\", pointer = \"/iban\" } }"),
        ]
        .into_iter()
        .map(|(id, text)| (id.to_string(), table(text)))
        .collect();
        let steps = [read, hand, tell, tell_again, delegate, pay, advance];
        let found: Vec<(String, String, &str, String, String)> = edges(&steps, &tables)
            .into_iter()
            .map(|e| {
                (
                    e.from,
                    e.to,
                    e.kind.as_str(),
                    e.steps.join(","),
                    labels_text(&e.labels),
                )
            })
            .collect();
        let expected = [
            ("alice", "bob", "delegation", "give", "no labels"),
            ("mail/read", "bank/pay", "value", "pay", "no labels"),
            ("mail/read", "planner", "value", "hand", "no labels"),
            ("planner", "bank/pay", "call", "pay", "no labels"),
            ("reader", "mail/read", "call", "read", "labels: secret"),
            (
                "reader",
                "planner",
                "message",
                "tell,tell-again",
                "labels: internal, public",
            ),
            (
                "reader",
                "planner",
                "hand-over",
                "hand",
                "labels: untrusted",
            ),
        ];
        let expected: Vec<(String, String, &str, String, String)> = expected
            .iter()
            .map(|(a, b, k, s, l)| {
                (
                    a.to_string(),
                    b.to_string(),
                    *k,
                    s.to_string(),
                    l.to_string(),
                )
            })
            .collect();
        assert_eq!(found, expected);
        let svg = to_svg(&edges(&steps, &tables));
        assert_eq!(svg.matches("<line ").count(), expected.len());
        assert!(to_svg(&[]).contains("no message, hand-over, delegation or call was recorded"));
    }

    // Names longer than a box are cut with an ellipsis after escaping nothing twice.
    #[test]
    fn long_names_are_cut_and_escaped() {
        assert_eq!(short("a<b", 26), "a&lt;b");
        assert_eq!(short("abcdef", 4), "abc\u{2026}");
        assert_eq!(short("<<<<<<", 3), "&lt;&lt;\u{2026}");
    }
}
