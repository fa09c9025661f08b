//! `chio mcp serve --policy FILE`: the guards the edge's kernel runs and
//! the labels its upstreams' answers carry, written as a scenario writes
//! them and read by the scenario's own readers, so each means at the edge
//! what it means in a run:
//!
//! - `[[guards]]` entries (`id`, `kind`, `mode`, `[guards.config]`), read
//!   by `chio_arena::scenario::guard_specs_of` over the scenario model's
//!   `GuardDecl`. The kernel's guard builder then checks each configuration
//!   when the kernel starts, as it does for a run's kernel. The guards run
//!   in the order the file declares them.
//! - `[[servers]]` entries naming an `--upstream` id with a server's label
//!   keys only (`labels`, `integrity`, `integrity_globs`), resolved by the
//!   node's own reader (`chio_node::world::answer_labeller`): an upstream
//!   declared `integrity = "untrusted"` taints the session of whoever reads
//!   it, and a `labels` glob labels the answer to a call whose `path`
//!   matches, as a recorded server's answer is labelled.
//!
//! The session's equivalent scenario declares the same guards on its kernel
//! and the same label keys on each upstream's recorded server.

use std::collections::BTreeMap;
use std::path::Path;

use chio_arena::model::{BudgetDecl, GuardDecl, ServerDecl};
use chio_arena::scenario::validate::check_guard_served;
use chio_kernel::contract::ToolCatalog;
use chio_kernel::guards::GuardSpec;
use chio_node::tools::ToolServer;
use serde::{Deserialize, Serialize};

use crate::error::{codes, CliError};

const COMMAND: &str = "mcp serve";

/// Largest policy file read.
const MAX_POLICY_BYTES: u64 = 1 << 20;

/// The file: guards, upstream labels and monetary budgets.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    guards: Vec<GuardDecl>,
    #[serde(default)]
    servers: Vec<UpstreamLabels>,
    #[serde(default)]
    budgets: Vec<BudgetDecl>,
}

/// `[[servers]]`: what one upstream's answers carry, in a scenario server's
/// own keys.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamLabels {
    /// The `--upstream` id.
    pub id: String,
    /// Glob of a call's `path` argument to the label of its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// `trusted` (the default) or `untrusted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
    /// Glob of a call's `path` argument to the integrity of its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity_globs: Option<BTreeMap<String, String>>,
}

impl UpstreamLabels {
    /// No labels: an upstream the file does not name.
    pub fn none(id: &str) -> Self {
        UpstreamLabels {
            id: id.to_string(),
            labels: None,
            integrity: None,
            integrity_globs: None,
        }
    }

    /// The recorded server these keys declare, answering no call.
    pub fn labeller(&self) -> Result<ToolServer, String> {
        let declaration = ServerDecl {
            id: self.id.clone(),
            kernel: super::scenario::KERNEL.to_string(),
            kind: "recorded".to_string(),
            root: None,
            fixtures: None,
            labels: self.labels.clone(),
            failing: None,
            integrity: self.integrity.clone(),
            integrity_globs: self.integrity_globs.clone(),
            tools: None,
            answers: None,
            fields: None,
            command: None,
            env: None,
            cwd: None,
            timeout_ms: None,
            shares_state_with: None,
        };
        chio_node::world::answer_labeller(&declaration).map_err(|e| e.to_string())
    }
}

/// What `--policy` sets: the guards in declaration order and the labels of
/// the upstreams it names, by id.
#[derive(Debug, Clone, Default)]
pub struct EdgePolicy {
    /// The guard pipeline.
    pub guards: Vec<GuardSpec>,
    /// The upstreams' label keys, by upstream id.
    pub servers: BTreeMap<String, UpstreamLabels>,
    /// The monetary budgets, in declaration order (`super::budgets`).
    pub budgets: Vec<BudgetDecl>,
}

impl EdgePolicy {
    /// Refuses a `[[servers]]` entry naming no upstream of `ids`.
    pub fn check_upstreams(&self, path: &Path, ids: &[&str]) -> Result<(), CliError> {
        match self.servers.keys().find(|id| !ids.contains(&id.as_str())) {
            Some(id) => Err(refused(
                path,
                format!(
                    "[[servers]] {id} names no --upstream; give one --upstream {id}=\"CMD ARGS\""
                ),
            )),
            None => Ok(()),
        }
    }
}

impl EdgePolicy {
    /// Refuses a guard whose configuration names a server or tool no
    /// upstream serves (`catalog`, the upstreams' listings), by the rule a
    /// run loads its guards under: the guard would never apply to it.
    pub fn check_served(&self, path: &Path, catalog: &ToolCatalog) -> Result<(), CliError> {
        for (index, spec) in self.guards.iter().enumerate() {
            if let Err(e) = check_guard_served(index, spec, catalog, super::scenario::KERNEL) {
                let served: Vec<String> = catalog
                    .iter()
                    .flat_map(|(server, tools)| tools.keys().map(move |t| format!("{server}/{t}")))
                    .collect();
                return Err(refused(
                    path,
                    format!(
                        "guard {}: {}; the upstreams serve {}",
                        spec.id,
                        e.summary(),
                        served.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn refused(path: &Path, what: String) -> CliError {
    CliError::new(
        codes::MCP_POLICY,
        COMMAND,
        format!("--policy {}: {what}", path.display()),
        "write [[guards]] entries and [[servers]] label keys as a scenario does (docs/mcp.md, \"--policy\")",
    )
}

/// Reads the guards and upstream labels of `path`.
pub fn read(path: &Path) -> Result<EdgePolicy, CliError> {
    // A regular file (a link to one is followed), bounded: a pipe or a
    // device is refused unopened, whatever its size claims.
    let bytes = chio_arena::files::read_named(path, MAX_POLICY_BYTES).map_err(|e| {
        refused(
            path,
            format!("cannot be read: {}", e.describe("a policy file")),
        )
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| refused(path, "cannot be read: it is not UTF-8 text".to_string()))?;
    let file: PolicyFile = toml::from_str(&text).map_err(|e| {
        let place = e
            .span()
            .map(|s| format!(" at byte {}", s.start))
            .unwrap_or_default();
        refused(
            path,
            format!("is not a file of [[guards]] and [[servers]]{place}"),
        )
    })?;
    Ok(EdgePolicy {
        guards: guards(path, &file.guards)?,
        servers: servers(path, file.servers)?,
        budgets: super::budgets::check(&file.budgets).map_err(|e| refused(path, e))?,
    })
}

fn guards(path: &Path, declared: &[GuardDecl]) -> Result<Vec<GuardSpec>, CliError> {
    let specs =
        chio_arena::scenario::guard_specs_of(declared).map_err(|e| refused(path, e.to_string()))?;
    if let Some(g) = declared.iter().find(|g| g.kind.is_none()) {
        return Err(refused(path, format!("guard {} has no kind", g.id)));
    }
    let mut ids = std::collections::BTreeSet::new();
    if let Some(g) = specs.iter().find(|g| !ids.insert(g.id.clone())) {
        return Err(refused(
            path,
            format!("guard id {} is declared twice", g.id),
        ));
    }
    for spec in &specs {
        spec.build()
            .map_err(|e| refused(path, format!("guard {}: {e}", spec.id)))?;
    }
    Ok(specs)
}

fn servers(
    path: &Path,
    declared: Vec<UpstreamLabels>,
) -> Result<BTreeMap<String, UpstreamLabels>, CliError> {
    let mut by_id = BTreeMap::new();
    for server in declared {
        server
            .labeller()
            .map_err(|e| refused(path, format!("[[servers]] {}: {e}", server.id)))?;
        if by_id.contains_key(&server.id) {
            return Err(refused(
                path,
                format!("[[servers]] {} is declared twice", server.id),
            ));
        }
        by_id.insert(server.id.clone(), server);
    }
    Ok(by_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> Result<EdgePolicy, CliError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, text).unwrap();
        read(&path)
    }

    // A policy file's guards are read as a scenario's: kind, mode and config in declaration order.
    #[test]
    fn guards_are_read_in_order() {
        let specs = read_text(
            "[[guards]]\nid = \"b\"\nkind = \"forbidden-path\"\nmode = \"observe\"\n[guards.config]\nglobs = [\"**/.env\"]\n\n[[guards]]\nid = \"a\"\nkind = \"prompt-injection\"\n",
        )
        .unwrap()
        .guards;
        let ids: Vec<&str> = specs.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["b", "a"]);
        assert_eq!(specs[0].kind.as_str(), "forbidden-path");
        assert_eq!(specs[0].mode.as_str(), "observe");
        assert_eq!(specs[0].config["globs"][0], "**/.env");
    }

    // Anything but guards, a guard without a kind, an unknown kind, a config key the guard's builder refuses, an id twice and two budgets sharing an id that count differently are refused with CHIO-MCP-POLICY.
    #[test]
    fn a_policy_the_scenario_reader_refuses_is_refused() {
        for text in [
            "[[budgets]]\nserver = \"s\"\ntool = \"t\"\nmax_invocations = 1\n",
            "[[guards]]\nid = \"g\"\n",
            "[[guards]]\nid = \"g\"\nkind = \"no-such-guard\"\n",
            "[[guards]]\nid = \"g\"\nkind = \"forbidden-path\"\n[guards.config]\nglobz = [\"x\"]\n",
            "[[guards]]\nid = \"g\"\nkind = \"prompt-injection\"\n[[guards]]\nid = \"g\"\nkind = \"prompt-injection\"\n",
            "not toml [",
            // Two entries sharing an id that count differently (the scenario's
            // CHIO-SCENARIO-BUDGET-SHARED), before the edge's kernel starts.
            format!(
                "[[budgets]]\nid = \"daily\"\nagent = \"{key}\"\nserver = \"bank\"\ntool = \"pay\"\namount = \"amount\"\ncurrency = \"EUR\"\nlimit = \"100\"\n\n[[budgets]]\nid = \"daily\"\nagent = \"{key}\"\nserver = \"bank\"\ntool = \"pay2\"\namount = \"amount\"\ncurrency = \"EUR\"\nlimit = \"100.00\"\n",
                key = "ab".repeat(32)
            )
            .as_str(),
        ] {
            let err = read_text(text).unwrap_err();
            assert_eq!(err.code, codes::MCP_POLICY.code, "{text}: {}", err.message);
        }
    }

    // [[servers]] label keys are read as a scenario server's: the labeller answers an untrusted result for an upstream declared untrusted, the label of a matching path for a labels glob, and the lowest integrity of a matching integrity glob; an upstream the file does not name is unlabelled and trusted.
    #[test]
    fn server_label_keys_label_the_answers() {
        use chio_node::tools::LiveAnswer;
        use serde_json::json;
        let policy = read_text(
            "[[servers]]\nid = \"web\"\nintegrity = \"untrusted\"\n\n[[servers]]\nid = \"files\"\nlabels = { \"/srv/hr/**\" = \"confidential\" }\nintegrity_globs = { \"/srv/inbox/**\" = \"untrusted\" }\n",
        )
        .unwrap();
        assert!(policy.guards.is_empty());
        let answer = || LiveAnswer {
            ok: true,
            output: json!({"content": []}),
        };
        let label = |id: &str, arguments: serde_json::Value| {
            let labeller = policy.servers[id].labeller().unwrap();
            let result = labeller.live_result(answer(), &arguments);
            (result.label.map(|l| l.as_str()), result.integrity.label())
        };
        assert_eq!(
            label("web", json!({"url": "x"})),
            (None, Some("integrity:untrusted".into()))
        );
        assert_eq!(
            label("files", json!({"path": "/srv/hr/pay.csv"})),
            (Some("confidential"), None)
        );
        assert_eq!(
            label("files", json!({"path": "/srv/inbox/1.eml"})),
            (None, Some("integrity:untrusted".into()))
        );
        let none = UpstreamLabels::none("other").labeller().unwrap();
        let result = none.live_result(answer(), &json!({"path": "/srv/hr/pay.csv"}));
        assert_eq!((result.label, result.integrity.label()), (None, None));
    }

    // A [[servers]] entry with a key other than the label keys, an integrity or label the scenario refuses, an id twice, or an id no --upstream names is refused with CHIO-MCP-POLICY naming the entry.
    #[test]
    fn a_server_entry_the_scenario_reader_refuses_is_refused() {
        for (text, names) in [
            ("[[servers]]\nid = \"web\"\nkind = \"http\"\n", "servers"),
            (
                "[[servers]]\nid = \"web\"\nintegrity = \"mostly\"\n",
                "[[servers]] web",
            ),
            (
                "[[servers]]\nid = \"web\"\nlabels = { \"**\" = \"secretish\" }\n",
                "[[servers]] web",
            ),
            (
                "[[servers]]\nid = \"web\"\n[[servers]]\nid = \"web\"\n",
                "declared twice",
            ),
        ] {
            let err = read_text(text).unwrap_err();
            assert_eq!(err.code, codes::MCP_POLICY.code, "{text}: {}", err.message);
            assert!(err.message.contains(names), "{text}: {}", err.message);
        }
        let policy = read_text("[[servers]]\nid = \"web\"\nintegrity = \"untrusted\"\n").unwrap();
        let path = Path::new("policy.toml");
        assert!(policy.check_upstreams(path, &["web", "git"]).is_ok());
        let err = policy.check_upstreams(path, &["git"]).unwrap_err();
        assert_eq!(err.code, codes::MCP_POLICY.code);
        assert!(
            err.message.contains("[[servers]] web names no --upstream"),
            "{}",
            err.message
        );
    }

    // A guard naming a tool no upstream serves is refused by the rule a run loads its guards under (it would never apply), naming the tool, the nearest served name and every served tool; the same guard naming a served tool is accepted.
    #[test]
    fn a_guard_naming_an_unserved_tool_is_refused() {
        let listed = serde_json::json!({"tools": [
            {"name": "g_rug", "inputSchema": {"type": "object"}},
            {"name": "g_log", "inputSchema": {"type": "object"}},
        ]});
        let tools = chio_arena::scenario::mcp::parse_tools_list(
            &serde_json::to_vec(&listed).unwrap(),
            "git",
        )
        .unwrap();
        let mut catalog = ToolCatalog::new();
        catalog.insert(
            "git".to_string(),
            tools
                .into_iter()
                .map(|t| (t.contract.name.clone(), t.contract))
                .collect(),
        );
        let guard = |tool: &str| {
            read_text(&format!(
                "[[guards]]\nid = \"integrity\"\nkind = \"integrity\"\n[guards.config]\nconsequential = {{ git = [\"{tool}\"] }}\n"
            ))
            .unwrap()
        };
        let path = Path::new("policy.toml");
        assert!(guard("g_rug").check_served(path, &catalog).is_ok());
        let err = guard("g_rugg").check_served(path, &catalog).unwrap_err();
        assert_eq!(err.code, codes::MCP_POLICY.code);
        for part in [
            "guard integrity",
            "\"g_rugg\"",
            "did you mean \"g_rug\"",
            "the upstreams serve git/g_log, git/g_rug",
        ] {
            assert!(err.message.contains(part), "{part}: {}", err.message);
        }
    }
}
