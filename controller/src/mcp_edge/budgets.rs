//! `[[budgets]]` in `chio mcp serve --policy FILE`: monetary budgets on an
//! upstream's tool, written as a scenario writes them and turned into the
//! kernel's budgets by a run's own conversion
//! (`chio_node::world::monetary_budgets_of`), held and settled in
//! trust-control like every budget of the edge.
//!
//! At the edge an entry must be monetary (`limit`, `amount`, `currency`;
//! a capability limits its own calls with `chio mcp grant --max-calls`),
//! must name its `id` (reasons and the equivalent scenario name it so), and
//! names its subject by `capability` (a granted capability's id, covering
//! its lineage) or by `agent` (a client's public key, 64 lowercase hex).
//! Entries sharing an id share one total, so they must count alike, by the
//! scenario's own rule.
//! Windows (`window_ms`) are counted from the Unix epoch, so a window of
//! 86,400,000 ms is a UTC day; the session's equivalent scenario then
//! starts its clock at the epoch, so its windows are the same.

use std::collections::{BTreeMap, BTreeSet};

use chio_arena::model::BudgetDecl;
use chio_kernel::kernel::MonetaryBudget;
use serde_json::{json, Map, Value};

use super::scenario::toml_inline;

/// Where the edge's budget windows are counted from: the Unix epoch.
pub const WINDOW_ORIGIN_MS: u64 = 0;

fn is_key_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The entries of a policy file, each checked as the edge takes it.
pub fn check(declared: &[BudgetDecl]) -> Result<Vec<BudgetDecl>, String> {
    for b in declared {
        let id = b.id.as_deref().unwrap_or_default();
        let name = if id.is_empty() { "an entry" } else { id };
        if !chio_arena::scenario::is_valid_id(id) {
            return Err(format!(
                "[[budgets]] {name}: name it with an id of letters, digits, '_', '.' or '-'"
            ));
        }
        if b.max_invocations.is_some() || !b.is_monetary() {
            return Err(format!(
                "[[budgets]] {id}: the edge keeps monetary budgets only (limit, amount, currency); limit a capability's calls with chio mcp grant --max-calls"
            ));
        }
        match (&b.agent, &b.capability) {
            (Some(agent), None) if is_key_hex(agent) => {}
            (None, Some(capability)) if chio_arena::scenario::is_valid_id(capability) => {}
            _ => {
                return Err(format!(
                    "[[budgets]] {id}: name either agent (a client's public key, 64 lowercase hex) or capability (a capability id)"
                ))
            }
        }
        if b.window_ms == Some(0) {
            return Err(format!("[[budgets]] {id}: window_ms must be at least 1"));
        }
    }
    shares_counting(declared)?;
    kernel_budgets(declared)?;
    Ok(declared.to_vec())
}

/// Refuses two entries that share an id but count differently, by the
/// scenario's own rule (`chio_arena::scenario::validate::shared_id_conflict`),
/// naming both.
fn shares_counting(declared: &[BudgetDecl]) -> Result<(), String> {
    let Some((first, later)) = chio_arena::scenario::validate::shared_id_conflict(declared) else {
        return Ok(());
    };
    let entry = |i: usize| {
        let b = &declared[i];
        format!("entry {} ({}/{})", i + 1, b.server, b.tool)
    };
    Err(format!(
        "[[budgets]] {}: {} shares its id with {} but counts differently; entries sharing an id share one total: give them the same agent or capability, currency, limit (as written) and window_ms, or another id",
        declared[later].money_id(),
        entry(later),
        entry(first)
    ))
}

/// The kernel's budgets of `declared`, windows counted from the epoch.
pub fn kernel_budgets(declared: &[BudgetDecl]) -> Result<Vec<MonetaryBudget>, String> {
    chio_node::world::monetary_budgets_of(declared, WINDOW_ORIGIN_MS).map_err(|e| e.to_string())
}

/// The keys of `budget` that are set, in the scenario's order.
fn keys(budget: &BudgetDecl) -> Vec<(&'static str, Value)> {
    let mut keys = vec![("id", json!(budget.id))];
    if let Some(agent) = &budget.agent {
        keys.push(("agent", json!(agent)));
    }
    if let Some(capability) = &budget.capability {
        keys.push(("capability", json!(capability)));
    }
    keys.push(("server", json!(budget.server)));
    keys.push(("tool", json!(budget.tool)));
    keys.push(("amount", json!(budget.amount)));
    keys.push(("currency", json!(budget.currency)));
    if let Some(argument) = &budget.currency_argument {
        keys.push(("currency_argument", json!(argument)));
    }
    keys.push(("limit", json!(budget.limit)));
    if let Some(window) = budget.window_ms {
        keys.push(("window_ms", json!(window)));
    }
    keys
}

/// The budgets as `session.json` records them (`budgets`).
pub fn header(declared: &[BudgetDecl]) -> Value {
    Value::Array(
        declared
            .iter()
            .map(|b| {
                Value::Object(
                    keys(b)
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect::<Map<_, _>>(),
                )
            })
            .collect(),
    )
}

/// Whether any budget `session.json` records counts in windows, so the
/// equivalent scenario's clock must start at the edge's window origin.
pub fn windowed(header: &Value) -> bool {
    header["budgets"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|b| b.get("window_ms").is_some())
}

/// The `[[budgets]]` tables of the equivalent scenario: each recorded
/// budget whose subject made a call of the session (a client by its
/// scenario agent name in `agents`, a capability in `presented`); one no
/// call of the session could meet is left out, as it decides nothing.
pub fn scenario_tables(
    header: &Value,
    agents: &BTreeMap<String, String>,
    presented: &BTreeSet<String>,
) -> Result<String, String> {
    let mut out = String::new();
    for budget in header["budgets"].as_array().into_iter().flatten() {
        let subject = match (budget["agent"].as_str(), budget["capability"].as_str()) {
            (Some(key), None) => agents.get(key).map(|name| ("agent", name.clone())),
            (None, Some(id)) => presented
                .contains(id)
                .then(|| ("capability", id.to_string())),
            _ => return Err("a recorded budget has no one subject".to_string()),
        };
        let Some((subject_key, subject)) = subject else {
            continue;
        };
        out.push_str("\n[[budgets]]\n");
        let object = budget
            .as_object()
            .ok_or("a recorded budget is not an object")?;
        for (key, value) in object {
            let value = match key.as_str() {
                "agent" | "capability" if key == subject_key => json!(subject),
                _ => value.clone(),
            };
            out.push_str(&format!("{key} = {}\n", toml_inline(&value)?));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(extra: &str) -> Result<Vec<BudgetDecl>, String> {
        let text = format!(
            "server = \"pay\"\ntool = \"send\"\namount = \"amount\"\ncurrency = \"EUR\"\n{extra}"
        );
        let decl: BudgetDecl = toml::from_str(&text).map_err(|e| e.to_string())?;
        check(&[decl])
    }

    // Proves two entries sharing an id with limits written differently ("100" and "100.00") are refused at the policy's check, naming both entries, by the scenario's rule; the same id counting alike is taken.
    #[test]
    fn shared_ids_must_count_alike() {
        let key = "ab".repeat(32);
        let decl = |tool: &str, limit: &str| -> BudgetDecl {
            toml::from_str(&format!(
                "id = \"daily\"\nagent = \"{key}\"\nserver = \"bank\"\ntool = \"{tool}\"\namount = \"amount\"\ncurrency = \"EUR\"\nlimit = \"{limit}\"\n"
            ))
            .unwrap()
        };
        let refused = check(&[decl("pay", "100"), decl("pay2", "100.00")]).unwrap_err();
        assert!(refused.contains("[[budgets]] daily"), "{refused}");
        assert!(refused.contains("entry 2 (bank/pay2)"), "{refused}");
        assert!(refused.contains("entry 1 (bank/pay)"), "{refused}");
        assert!(!refused.contains("100"), "no configured value: {refused}");
        assert!(check(&[decl("pay", "100"), decl("pay2", "100")]).is_ok());
    }

    // An edge budget is monetary, named, and limits one subject: a capability id or a client's key; its windows count from the epoch.
    #[test]
    fn edge_budgets_are_named_monetary_and_of_one_subject() {
        let key = "ab".repeat(32);
        let ok = entry(&format!(
            "id = \"daily\"\nagent = \"{key}\"\nlimit = \"10.00\"\nwindow_ms = 86400000\n"
        ))
        .unwrap();
        let kernel = kernel_budgets(&ok).unwrap();
        assert_eq!(kernel[0].window.unwrap().origin_ms, WINDOW_ORIGIN_MS);
        assert!(entry("id = \"c\"\ncapability = \"cap-1\"\nlimit = \"1\"\n").is_ok());
        for (extra, why) in [
            ("capability = \"cap-1\"\nlimit = \"1\"\n", "id"),
            (
                "id = \"a b\"\ncapability = \"cap-1\"\nlimit = \"1\"\n",
                "id",
            ),
            (
                "id = \"c\"\ncapability = \"cap-1\"\nmax_invocations = 2\nlimit = \"1\"\n",
                "monetary",
            ),
            ("id = \"c\"\ncapability = \"cap-1\"\n", "monetary"),
            ("id = \"c\"\nlimit = \"1\"\n", "either agent"),
            (
                "id = \"c\"\nagent = \"alice\"\nlimit = \"1\"\n",
                "either agent",
            ),
            (
                &format!("id = \"c\"\nagent = \"{key}\"\ncapability = \"x\"\nlimit = \"1\"\n"),
                "either agent",
            ),
            (
                "id = \"c\"\ncapability = \"cap-1\"\nlimit = \"1\"\nwindow_ms = 0\n",
                "window_ms",
            ),
            (
                "id = \"c\"\ncapability = \"cap-1\"\nlimit = \"ten\"\n",
                "limit",
            ),
        ] {
            let err = entry(extra).unwrap_err();
            assert!(err.contains(why), "{extra}: {err}");
        }
    }

    // The equivalent scenario keeps the budgets whose subject made a call, the client under its scenario name, and leaves out the others.
    #[test]
    fn scenario_tables_name_the_client_by_its_scenario_name() {
        let key = "ab".repeat(32);
        let budgets = entry(&format!(
            "id = \"daily\"\nagent = \"{key}\"\nlimit = \"10.00\"\n"
        ))
        .unwrap();
        let header = json!({ "budgets": header(&budgets) });
        let agents = BTreeMap::from([(key.clone(), format!("{key}-1"))]);
        let tables = scenario_tables(&header, &agents, &BTreeSet::new()).unwrap();
        assert!(
            tables.contains(&format!("agent = \"{key}-1\"\n")),
            "{tables}"
        );
        assert!(tables.contains("id = \"daily\"\n"), "{tables}");
        assert!(!windowed(&header));
        let none = scenario_tables(&header, &BTreeMap::new(), &BTreeSet::new()).unwrap();
        assert!(none.is_empty(), "{none}");
    }
}
