//! The servers and tools a guard's configuration names. A guard matches a
//! call by name, so a name no kernel running the guard serves leaves the
//! guard silent for the tool that was meant: an integrity guard whose
//! consequential tool is spelt `http_pots` admits every tainted
//! `http_post`, and an approval guard on a kernel that serves no payment
//! tool holds no payment. Each such name is refused at load.
//!
//! A name that picks the guarded call (an approval's `tools`, an
//! integrity guard's `consequential`, `protected`, `allow` and `allow_from`
//! keys, a sequence rule's `tool`, a path allowlist's tool lists, an
//! information-flow clearance's servers) must be served by a kernel whose
//! pipeline names the guard (by any kernel, for a guard no pipeline names).
//! A name that points at an earlier call, which another kernel may have
//! served (an allowlist's source, a sequence rule's `requires`), must be
//! served by some kernel of the scenario. A rule's `tool` and `requires`
//! may name `server/tool`; a bare `requires` two servers serve is refused
//! as ambiguous, since a look-alike on the other server would satisfy it.

use std::collections::BTreeSet;

use chio_kernel::contract::ToolCatalog;
use chio_kernel::guards::{GuardKind, GuardSpec};
use serde_json::Value;

use crate::error::ArenaError;
use crate::model::ScenarioFile;
use crate::scenario::tools::{catalog_of, closest};

/// One name a configuration holds: where, and the server and tool it names
/// (a tool without a server matches that tool on any server).
struct Named {
    field: String,
    server: Option<String>,
    tool: Option<String>,
    /// Whether it names a call of the guard's own kernels (else any kernel's).
    own: bool,
    /// Whether a bare tool name must be one server's only: a name a
    /// predecessor satisfies, which a look-alike on another server must not.
    unique: bool,
}

/// Every server and tool name of `spec`'s configuration, by kind.
fn names(spec: &GuardSpec) -> Vec<Named> {
    let config = &spec.config;
    let mut out = Vec::new();
    let tool_list = |key: &str, value: Option<&Value>, own: bool, out: &mut Vec<Named>| {
        for (i, tool) in value
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if let Some(tool) = tool.as_str() {
                out.push(Named {
                    field: format!("{key}[{i}]"),
                    server: None,
                    tool: Some(tool.to_string()),
                    own,
                    unique: false,
                });
            }
        }
    };
    match spec.kind {
        GuardKind::Approval => tool_list("tools", config.get("tools"), true, &mut out),
        GuardKind::PathAllowlist => {
            for key in ["read_tools", "write_tools"] {
                tool_list(key, config.get(key), true, &mut out);
            }
        }
        GuardKind::BehavioralSequence => {
            let rules = config.get("rules").and_then(Value::as_array);
            for (i, rule) in rules.into_iter().flatten().enumerate() {
                for (key, own) in [("tool", true), ("requires", false)] {
                    if let Some(name) = rule.get(key).and_then(Value::as_str) {
                        let (server, tool) = match name.split_once('/') {
                            Some((s, t)) => (Some(s.to_string()), t),
                            None => (None, name),
                        };
                        out.push(Named {
                            field: format!("rules[{i}].{key}"),
                            server,
                            tool: Some(tool.to_string()),
                            own,
                            unique: !own,
                        });
                    }
                }
            }
        }
        GuardKind::InformationFlow => {
            let clearance = config.get("clearance").and_then(Value::as_object);
            for server in clearance.into_iter().flatten().map(|(k, _)| k) {
                out.push(Named {
                    field: format!("clearance.{server}"),
                    server: Some(server.clone()),
                    tool: None,
                    own: true,
                    unique: false,
                });
            }
        }
        GuardKind::Integrity => integrity_names(config, &mut out),
        _ => {}
    }
    out
}

/// An integrity guard's names: `consequential` (server to tools, `*` for
/// all), and the server and tool keys of `protected`, `allow` and
/// `allow_from` with each allowlist source's server and tool.
fn integrity_names(config: &Value, out: &mut Vec<Named>) {
    let object = |v: Option<&Value>| v.and_then(Value::as_object).cloned().unwrap_or_default();
    for (server, tools) in object(config.get("consequential")) {
        out.push(Named {
            field: format!("consequential.{server}"),
            server: Some(server.clone()),
            tool: None,
            own: true,
            unique: false,
        });
        for (i, tool) in tools.as_array().into_iter().flatten().enumerate() {
            if let Some(tool) = tool.as_str().filter(|t| *t != "*") {
                out.push(Named {
                    field: format!("consequential.{server}[{i}]"),
                    server: Some(server.clone()),
                    tool: Some(tool.to_string()),
                    own: true,
                    unique: false,
                });
            }
        }
    }
    for key in ["protected", "allow", "allow_from"] {
        for (server, tools) in object(config.get(key)) {
            for (tool, arguments) in object(Some(&tools)) {
                out.push(Named {
                    field: format!("{key}.{server}.{tool}"),
                    server: Some(server.clone()),
                    tool: Some(tool.clone()),
                    own: true,
                    unique: false,
                });
                if key != "allow_from" {
                    continue;
                }
                for (argument, sources) in object(Some(&arguments)) {
                    let sources = sources.as_array().cloned().unwrap_or_default();
                    for (i, source) in sources.iter().enumerate() {
                        out.push(Named {
                            field: format!("{key}.{server}.{tool}.{argument}[{i}]"),
                            server: source
                                .get("server")
                                .and_then(Value::as_str)
                                .map(String::from),
                            tool: source.get("tool").and_then(Value::as_str).map(String::from),
                            own: false,
                            unique: false,
                        });
                    }
                }
            }
        }
    }
}

/// Refuses a name of guard `index`'s configuration that the kernels it
/// must be served by do not serve.
pub(super) fn check_guard_names(
    file: &ScenarioFile,
    index: usize,
    spec: &GuardSpec,
) -> Result<(), ArenaError> {
    let users: Vec<&str> = file
        .kernels
        .iter()
        .filter(|k| k.guards.contains(&spec.id))
        .map(|k| k.id.as_str())
        .collect();
    let all: Vec<&str> = file.kernels.iter().map(|k| k.id.as_str()).collect();
    let union = |kernels: &[&str]| {
        let mut catalog = ToolCatalog::new();
        for kernel in kernels {
            catalog.extend(catalog_of(file, kernel).unwrap_or_default());
        }
        catalog
    };
    let own_kernels = if users.is_empty() { all.clone() } else { users };
    let (own, anywhere) = (union(&own_kernels), union(&all));
    check_names(index, spec, (&own, &own_kernels), (&anywhere, &all))
}

/// Refuses a name of guard `index`'s configuration that `catalog`, the
/// tools of the one kernel `kernel` running it, does not serve: the rule a
/// scenario's guards are loaded under, for a kernel whose tools are not a
/// scenario's (the MCP edge's, its upstreams' listings).
pub fn check_guard_served(
    index: usize,
    spec: &GuardSpec,
    catalog: &ToolCatalog,
    kernel: &str,
) -> Result<(), ArenaError> {
    let kernels = [kernel];
    check_names(index, spec, (catalog, &kernels), (catalog, &kernels))
}

/// The names of `spec` against the catalog of its own kernels and that of
/// every kernel, each with those kernels' ids.
fn check_names(
    index: usize,
    spec: &GuardSpec,
    own: (&ToolCatalog, &[&str]),
    anywhere: (&ToolCatalog, &[&str]),
) -> Result<(), ArenaError> {
    for named in names(spec) {
        let (catalog, kernels) = if named.own { own } else { anywhere };
        let servers: BTreeSet<&str> = match &named.server {
            Some(server) if !catalog.contains_key(server) => {
                return Err(unserved(index, &named, server, kernels, catalog.keys()));
            }
            Some(server) => BTreeSet::from([server.as_str()]),
            None => catalog.keys().map(String::as_str).collect(),
        };
        let Some(tool) = &named.tool else {
            continue;
        };
        let tools: BTreeSet<&String> = servers
            .iter()
            .filter_map(|s| catalog.get(*s))
            .flat_map(|tools| tools.keys())
            .collect();
        if !tools.contains(tool) {
            return Err(unserved(index, &named, tool, kernels, tools.into_iter()));
        }
        let serving: Vec<&str> = servers
            .iter()
            .copied()
            .filter(|s| catalog.get(*s).is_some_and(|t| t.contains_key(tool)))
            .collect();
        if named.unique && serving.len() > 1 {
            return Err(ArenaError::GuardNameAmbiguous {
                field: format!("guards[{index}].config.{}", named.field),
                tool: tool.clone(),
                servers: serving.join(", "),
            });
        }
    }
    Ok(())
}

fn unserved<'a>(
    index: usize,
    named: &Named,
    name: &str,
    kernels: &[&str],
    served: impl Iterator<Item = &'a String>,
) -> ArenaError {
    let served: Vec<&str> = served.map(String::as_str).collect();
    let what = if named.tool.as_deref() == Some(name) {
        match &named.server {
            Some(server) => format!("tool {name:?} of server {server:?}"),
            None => format!("tool {name:?}"),
        }
    } else {
        format!("server {name:?}")
    };
    ArenaError::GuardNameUnserved {
        field: format!("guards[{index}].config.{}", named.field),
        name: what,
        kernels: kernels.join(", "),
        closest: closest(name, served.iter().copied())
            .map(|c| format!(" (did you mean {c:?}?)"))
            .unwrap_or_default(),
    }
}
