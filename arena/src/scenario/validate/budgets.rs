//! `[[budgets]]`: invocation budgets and monetary budgets.
//!
//! An entry names its subject (an agent, or for a monetary budget a grant
//! whose lineage it counts), a server and a tool, and limits calls by
//! `max_invocations`, by a monetary `limit`, or both. A monetary entry needs
//! `amount` (the argument carrying each call's amount), `currency` and a
//! `limit` that is a positive exact decimal string (read by the kernel's
//! own rule, `chio_kernel::amount::MoneyLimit`); `currency_argument`,
//! `window_ms` and `id` apply to monetary entries only. In a world, the
//! tool must be one its server declares and its input schema must be able
//! to carry the amount (and currency) arguments. Entries sharing an id share
//! one total, so they must count alike. An approval guard's `budget` names
//! a monetary budget's id.

use std::collections::{BTreeMap, BTreeSet};

use chio_kernel::amount::MoneyLimit;
use chio_kernel::guards::GuardKind;
use serde_json::Value;

use super::checks::{check_id, check_invocations, resolve};
use super::Validator;
use crate::error::ArenaError;
use crate::model::BudgetDecl;
use crate::scenario::ServerKind;
use crate::scheduler::MAX_OFFSET_MS;

/// What entries sharing an id must agree on.
type Counting<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<u64>,
);

fn counting(budget: &BudgetDecl) -> Counting<'_> {
    (
        budget.agent.as_deref(),
        budget.capability.as_deref(),
        budget.currency.as_deref(),
        budget.limit.as_deref(),
        budget.window_ms,
    )
}

/// Whether `code` is a currency code: 1 to 12 ASCII letters and digits.
pub(super) fn is_currency_code(code: &str) -> bool {
    (1..=12).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Why `schema` cannot carry `argument` as an amount (`amount`) or a
/// currency code, if it cannot: a declared property of another type, or an
/// undeclared one where the schema admits no other property.
fn schema_refusal(schema: &Value, argument: &str, amount: bool) -> Option<&'static str> {
    let Some(property) = schema.get("properties").and_then(|p| p.get(argument)) else {
        return (schema.get("additionalProperties") == Some(&Value::Bool(false)))
            .then_some("does not declare and closes to other arguments");
    };
    let allowed: &[&str] = if amount {
        &["string", "number", "integer"]
    } else {
        &["string"]
    };
    let admits = match property.get("type") {
        None => true,
        Some(Value::String(kind)) => allowed.contains(&kind.as_str()),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .any(|k| k.as_str().is_some_and(|k| allowed.contains(&k))),
        Some(_) => false,
    };
    match (admits, amount) {
        (true, _) => None,
        (false, true) => Some("declares as neither a string nor a number"),
        (false, false) => Some("does not declare as a string"),
    }
}

/// Entry `i`'s subject: its agent or its grant, exactly one, declared.
fn budget_subject<'b>(
    i: usize,
    budget: &'b BudgetDecl,
    agents: &BTreeSet<&str>,
    grants: &BTreeSet<&str>,
) -> Result<&'b String, ArenaError> {
    let at = |key: &str| format!("budgets[{i}].{key}");
    match (&budget.agent, &budget.capability) {
        (Some(agent), None) => {
            resolve(agents, "agent", agent, || at("agent"))?;
            Ok(agent)
        }
        (None, Some(capability)) => {
            resolve(grants, "grant", capability, || at("capability"))?;
            Ok(capability)
        }
        (Some(_), Some(_)) => Err(ArenaError::KeyNotAllowed {
            field: at("capability"),
            context: "a budget names agent or capability, not both",
        }),
        (None, None) => Err(ArenaError::MissingKey { field: at("agent") }),
    }
}

/// Where two monetary entries of `budgets` share an id but count
/// differently: the index of the id's first entry and of the first later
/// entry that disagrees with it. Entries sharing an id share one total (one
/// store key, whatever the limit's scale), so they must name the same
/// subject, currency, limit as written and window. The scenario's
/// validator and the MCP edge's policy check both apply this one rule.
pub fn shared_id_conflict(budgets: &[BudgetDecl]) -> Option<(usize, usize)> {
    let mut first: BTreeMap<String, usize> = BTreeMap::new();
    for (i, budget) in budgets.iter().enumerate() {
        if !budget.is_monetary() {
            continue;
        }
        let id = budget.money_id();
        match first.get(&id) {
            Some(&j) if counting(&budgets[j]) != counting(budget) => return Some((j, i)),
            Some(_) => {}
            None => {
                first.insert(id, i);
            }
        }
    }
    None
}

/// `names` as the refusal lists them: each quoted and printable, the first
/// 16, then how many more.
fn listed(names: BTreeSet<&str>) -> String {
    const SHOWN: usize = 16;
    let mut out: Vec<String> = names
        .iter()
        .take(SHOWN)
        .map(|n| format!("{:?}", crate::report::printable(n)))
        .collect();
    if names.len() > SHOWN {
        out.push(format!("and {} more", names.len() - SHOWN));
    }
    out.join(", ")
}

/// Refuses, on invocation-only entry `i`, the first key that belongs to a
/// monetary budget.
fn refuse_monetary_keys(i: usize, budget: &BudgetDecl) -> Result<(), ArenaError> {
    match [
        ("id", budget.id.is_some()),
        ("amount", budget.amount.is_some()),
        ("currency", budget.currency.is_some()),
        ("currency_argument", budget.currency_argument.is_some()),
        ("window_ms", budget.window_ms.is_some()),
    ]
    .into_iter()
    .find_map(|(key, set)| set.then_some(key))
    {
        Some(key) => Err(ArenaError::KeyNotAllowed {
            field: format!("budgets[{i}].{key}"),
            context: "id, amount, currency, currency_argument and window_ms belong to a monetary budget; add limit",
        }),
        None => Ok(()),
    }
}

impl Validator<'_> {
    /// Checks every `[[budgets]]` entry (see the module doc).
    pub(super) fn budgets(&self, has_world: bool) -> Result<(), ArenaError> {
        let f = self.file;
        let agents = self.agent_ids();
        let servers: BTreeMap<&str, Option<ServerKind>> = f
            .servers
            .iter()
            .map(|s| (s.id.as_str(), ServerKind::parse(&s.kind)))
            .collect();
        let server_ids: BTreeSet<&str> = servers.keys().copied().collect();
        let grants: BTreeSet<&str> = f.grants.iter().map(|g| g.id.as_str()).collect();
        let mut seen = BTreeSet::new();
        let mut ids: BTreeSet<String> = BTreeSet::new();
        let conflict = shared_id_conflict(&f.budgets).map(|(_, later)| later);
        for (i, budget) in f.budgets.iter().enumerate() {
            let at = |key: &str| format!("budgets[{i}].{key}");
            let subject = budget_subject(i, budget, &agents, &grants)?;
            if has_world {
                resolve(&server_ids, "server", &budget.server, || at("server"))?;
                self.budget_tool(i, budget)?;
            }
            // A capability budget counts its grant's lineage, which calls
            // only the grant's server and tools: any other can never apply.
            if let Some(grant) = budget
                .capability
                .as_ref()
                .and_then(|c| f.grants.iter().find(|g| &g.id == c))
            {
                if grant.server != budget.server {
                    return Err(ArenaError::KeyNotAllowed {
                        field: at("server"),
                        context: "a capability budget counts the calls of its grant's lineage, which reach only the grant's server: name that server, or the grant for this one",
                    });
                }
                if !grant.tools.contains(&budget.tool) {
                    return Err(ArenaError::KeyNotAllowed {
                        field: at("tool"),
                        context: "a capability budget counts the calls of its grant's lineage, which call only the grant's tools: name one of them",
                    });
                }
            }
            if budget.capability.is_some() && budget.max_invocations.is_some() {
                return Err(ArenaError::KeyNotAllowed {
                    field: at("max_invocations"),
                    context: "a capability budget is monetary; a grant limits its own invocations with its max_invocations",
                });
            }
            check_invocations(budget.max_invocations, || at("max_invocations"))?;
            if budget.max_invocations.is_none() && !budget.is_monetary() {
                return Err(ArenaError::BudgetWithoutLimit {
                    field: format!("budgets[{i}]"),
                });
            }
            if budget.is_monetary() {
                self.monetary(i, budget, &servers)?;
                if conflict == Some(i) {
                    return Err(ArenaError::BudgetShared {
                        field: format!("budgets[{i}].id"),
                        id: budget.money_id(),
                    });
                }
                ids.insert(budget.money_id());
            } else {
                refuse_monetary_keys(i, budget)?;
            }
            let key = (
                budget.agent.is_some(),
                subject,
                &budget.server,
                &budget.tool,
            );
            if !seen.insert(key) {
                return Err(ArenaError::DuplicateId {
                    kind: "budget",
                    id: format!("{subject}/{}/{}", budget.server, budget.tool),
                    field: format!("budgets[{i}]"),
                });
            }
        }
        self.approval_budgets(&ids)
    }

    /// The tools server `server` declares (a built-in kind's, or those a
    /// recorded or MCP server lists), when it is a server of the world.
    fn tools_of(&self, server: &str) -> Option<Vec<chio_kernel::contract::ToolContract>> {
        self.file
            .servers
            .iter()
            .find(|s| s.id == server)
            .and_then(crate::scenario::tools::server_tools)
    }

    /// Refuses entry `i` when its server declares its tools and its tool is
    /// not one of them: a budget counts calls by the exact tool name, so
    /// it would never count one.
    fn budget_tool(&self, i: usize, budget: &BudgetDecl) -> Result<(), ArenaError> {
        let Some(tools) = self.tools_of(&budget.server) else {
            return Ok(());
        };
        if tools.iter().any(|t| t.name == budget.tool) {
            return Ok(());
        }
        let names: BTreeSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        Err(ArenaError::BudgetUnserved {
            field: format!("budgets[{i}].tool"),
            tool: budget.tool.clone(),
            server: budget.server.clone(),
            tools: listed(names),
        })
    }

    /// The monetary keys of entry `i`.
    fn monetary(
        &self,
        i: usize,
        budget: &BudgetDecl,
        servers: &BTreeMap<&str, Option<ServerKind>>,
    ) -> Result<(), ArenaError> {
        let at = |key: &str| format!("budgets[{i}].{key}");
        if let Some(id) = &budget.id {
            check_id(id, at("id"))?;
        }
        let limit = budget.limit.as_deref().unwrap_or_default();
        MoneyLimit::parse(limit).map_err(|reason| ArenaError::BudgetLimit {
            field: at("limit"),
            reason,
        })?;
        let amount = budget
            .amount
            .as_deref()
            .ok_or_else(|| ArenaError::MissingKey {
                field: at("amount"),
            })?;
        check_id(amount, at("amount"))?;
        let currency = budget
            .currency
            .as_deref()
            .ok_or_else(|| ArenaError::MissingKey {
                field: at("currency"),
            })?;
        if !is_currency_code(currency) {
            return Err(ArenaError::BudgetCurrency {
                field: at("currency"),
            });
        }
        if let Some(argument) = &budget.currency_argument {
            check_id(argument, at("currency_argument"))?;
        }
        if let Some(window) = budget.window_ms {
            if window == 0 || window > MAX_OFFSET_MS {
                return Err(ArenaError::OutOfRange {
                    field: at("window_ms"),
                    rule: "window_ms is between 1 and 2^53",
                });
            }
        }
        // The tool's contract: a built-in kind's, or the tools a recorded
        // or MCP server declares.
        if !matches!(servers.get(budget.server.as_str()), Some(Some(_))) {
            return Ok(());
        }
        let Some(tools) = self.tools_of(&budget.server) else {
            return Ok(());
        };
        // Every budget's tool was found declared (`budget_tool`).
        let Some(tool) = tools.iter().find(|t| t.name == budget.tool) else {
            return Ok(());
        };
        let arguments = std::iter::once(("amount", amount, true)).chain(
            budget
                .currency_argument
                .as_deref()
                .map(|a| ("currency_argument", a, false)),
        );
        for (key, argument, is_amount) in arguments {
            if let Some(why) = schema_refusal(&tool.input_schema, argument, is_amount) {
                return Err(ArenaError::BudgetArgument {
                    field: at(key),
                    argument: argument.to_string(),
                    server: budget.server.clone(),
                    tool: budget.tool.clone(),
                    why,
                });
            }
        }
        Ok(())
    }

    /// Every approval guard's `budget` names a monetary budget.
    fn approval_budgets(&self, ids: &BTreeSet<String>) -> Result<(), ArenaError> {
        let declared: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
        for (i, guard) in self.file.guards.iter().enumerate() {
            if guard.kind.as_deref() != Some(GuardKind::Approval.as_str()) {
                continue;
            }
            let named = guard
                .config
                .as_ref()
                .and_then(|c| c.get("budget"))
                .and_then(|b| b.as_str());
            if let Some(budget) = named {
                resolve(&declared, "monetary budget", budget, || {
                    format!("guards[{i}].config.budget")
                })?;
                // The guard meets only calls to its `tools`: a budget none
                // of whose entries counts one of them would have its total
                // never checked.
                let tools: Vec<&str> = guard
                    .config
                    .as_ref()
                    .and_then(|c| c.get("tools"))
                    .and_then(|t| t.as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.as_str())
                    .collect();
                let counted: Vec<_> = self
                    .file
                    .budgets
                    .iter()
                    .filter(|b| b.id.as_deref() == Some(budget))
                    .collect();
                let met = counted.iter().any(|b| tools.contains(&b.tool.as_str()));
                if let (false, Some(entry)) = (met, counted.first()) {
                    return Err(ArenaError::GuardConfig {
                        field: format!("guards[{i}].config.budget"),
                        reason: format!(
                            "budget {budget} counts tool {} on server {}, which this guard's tools do not list, so the guard never checks its total; add {} to tools",
                            entry.tool, entry.server, entry.tool
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Proves an amount argument is refused only where the schema types it otherwise or closes to it, and a currency argument must be a string.
    #[test]
    fn schema_refusals() {
        let schema = json!({
            "type": "object",
            "properties": {"tests": {"type": "array"}, "amount": {"type": ["string", "number"]}, "note": {}},
        });
        assert_eq!(schema_refusal(&schema, "amount", true), None);
        assert_eq!(schema_refusal(&schema, "note", true), None);
        assert_eq!(schema_refusal(&schema, "other", true), None);
        assert!(schema_refusal(&schema, "tests", true).is_some());
        assert!(schema_refusal(&schema, "amount", false).is_none());
        let closed = json!({"type": "object", "properties": {}, "additionalProperties": false});
        assert!(schema_refusal(&closed, "amount", true).is_some());
        let number = json!({"properties": {"c": {"type": "number"}}});
        assert!(schema_refusal(&number, "c", false).is_some());
    }

    // Proves entries sharing an id must count alike (the limit compared as written, so "100" and "100.00" differ) and the rule names the id's first entry and the first later one that differs; invocation-only entries and distinct ids never conflict.
    #[test]
    fn shared_ids_count_alike() {
        let entry = |id: &str, tool: &str, limit: &str| -> BudgetDecl {
            toml::from_str(&format!(
                "id = \"{id}\"\nagent = \"a\"\nserver = \"s\"\ntool = \"{tool}\"\namount = \"amount\"\ncurrency = \"EUR\"\nlimit = \"{limit}\"\n"
            ))
            .unwrap()
        };
        let calls: BudgetDecl =
            toml::from_str("agent = \"a\"\nserver = \"s\"\ntool = \"t\"\nmax_invocations = 2\n")
                .unwrap();
        let alike = [entry("d", "t", "100"), entry("d", "u", "100"), calls];
        assert_eq!(shared_id_conflict(&alike), None);
        let scaled = [
            entry("d", "t", "100"),
            entry("e", "t", "5"),
            entry("d", "u", "100.00"),
        ];
        assert_eq!(shared_id_conflict(&scaled), Some((0, 2)));
        assert_eq!(
            shared_id_conflict(&[entry("d", "t", "1"), entry("x", "u", "2")]),
            None
        );
    }
}
