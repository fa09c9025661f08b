//! Tool contracts at validation: every tool a grant, a delegation or a call
//! step names must be one its server declares (the built-in kind's table,
//! or a recorded server's own declarations: `crate::scenario::tools`), and a call step's arguments must satisfy that
//! tool's input schema. The kernels check the same at admission for every
//! call; this refuses a scenario that could only pass by accident.

use std::collections::{BTreeMap, BTreeSet};

use chio_kernel::contract::{compile_schema, schema_failure, ToolContract};

use super::schedule::Walk;
use super::Validator;
use crate::error::ArenaError;
use crate::scenario::tools::{closest, server_tools};
use crate::scenario::{Action, ServerKind};

impl Validator<'_> {
    /// Refuses a tool no server declares where a grant, delegation or call
    /// names it, and call arguments its schema refuses. A world-less
    /// scenario names no server, so nothing is checked.
    pub(super) fn tool_contracts(&self, walk: &Walk<'_>) -> Result<(), ArenaError> {
        let f = self.file;
        if !walk.has_world {
            return Ok(());
        }
        let declared: BTreeMap<&str, Vec<ToolContract>> = f
            .servers
            .iter()
            .filter_map(|s| Some((s.id.as_str(), server_tools(s)?)))
            .collect();
        let named =
            |server: &str, tool: &str, field: String| named_tool(&declared, server, tool, field);
        let mut server_of: BTreeMap<&str, &str> = BTreeMap::new();
        for (i, grant) in f.grants.iter().enumerate() {
            server_of.insert(&grant.id, &grant.server);
            for (j, tool) in grant.tools.iter().enumerate() {
                named(&grant.server, tool, format!("grants[{i}].tools[{j}]"))?;
            }
        }
        let redefined = self.redefined_tools(walk, &declared)?;
        let mut parents: BTreeMap<String, String> = BTreeMap::new();
        let mut delegated: Vec<(usize, String, Vec<String>)> = Vec::new();
        for i in 0..self.source.len() {
            let action = self.action_at(walk, i)?;
            match action.as_ref() {
                Action::Call(call) => {
                    named(&call.server, &call.tool, format!("steps[{i}].tool"))?;
                    if !redefined.contains(&(call.server.clone(), call.tool.clone())) {
                        self.call_arguments(
                            &declared,
                            i,
                            &call.server,
                            &call.tool,
                            &call.arguments,
                        )?;
                    }
                }
                Action::Delegate(d) => {
                    parents.insert(d.delegation.clone(), d.capability.clone());
                    if let Some(tools) = &d.tools {
                        delegated.push((i, d.capability.clone(), tools.clone()));
                    }
                }
                _ => {}
            }
        }
        for (i, parent, tools) in delegated {
            let Some(server) = root_server(&parent, &parents, &server_of) else {
                continue;
            };
            for (j, tool) in tools.iter().enumerate() {
                named(server, tool, format!("steps[{i}].tools[{j}]"))?;
            }
        }
        Ok(())
    }

    /// The tools redefine steps change, each on a recorded server that
    /// declares it. A tool a redefine step changes is checked at admission
    /// only, against the definition in force when each call is decided.
    fn redefined_tools(
        &self,
        walk: &Walk<'_>,
        declared: &BTreeMap<&str, Vec<ToolContract>>,
    ) -> Result<BTreeSet<(String, String)>, ArenaError> {
        let mut redefined: BTreeSet<(String, String)> = BTreeSet::new();
        for i in 0..self.source.len() {
            if let Action::Redefine(r) = self.action_at(walk, i)?.as_ref() {
                let kind = self
                    .file
                    .servers
                    .iter()
                    .find(|s| s.id == r.server)
                    .map(|s| s.kind.as_str());
                if kind != Some(ServerKind::Recorded.as_str()) {
                    return Err(ArenaError::ToolDeclaration {
                        field: format!("steps[{i}].server"),
                        reason: format!(
                            "server {} is not a recorded server; only a server that declares its own tools can change one",
                            r.server
                        ),
                    });
                }
                named_tool(declared, &r.server, &r.tool, format!("steps[{i}].tool"))?;
                redefined.insert((r.server.clone(), r.tool.clone()));
            }
        }
        Ok(redefined)
    }

    /// Refuses call step `i`'s arguments when the tool's schema does.
    fn call_arguments(
        &self,
        declared: &BTreeMap<&str, Vec<ToolContract>>,
        i: usize,
        server: &str,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> Result<(), ArenaError> {
        let Some(contract) = declared
            .get(server)
            .and_then(|tools| tools.iter().find(|t| t.name == tool))
        else {
            return Ok(());
        };
        // A value a reference takes is known only when the run reaches the
        // call; the kernel checks the arguments it is sent against the
        // same schema then.
        if crate::scenario::value::has_references(arguments) {
            return Ok(());
        }
        let validator = compile_schema(server, tool, &contract.input_schema).map_err(|e| {
            ArenaError::ArgumentsRefused {
                field: format!("steps[{i}].arguments"),
                server: server.to_string(),
                tool: tool.to_string(),
                why: e.to_string(),
            }
        })?;
        match schema_failure(&validator, arguments) {
            None => Ok(()),
            Some(why) => Err(ArenaError::ArgumentsRefused {
                field: format!("steps[{i}].arguments"),
                server: server.to_string(),
                tool: tool.to_string(),
                why: why.to_string(),
            }),
        }
    }
}

/// The server of capability `id`: its grant's, or its delegation chain's
/// root grant's; `None` when the chain does not end in a grant (refused
/// elsewhere).
fn root_server<'a>(
    id: &str,
    parents: &BTreeMap<String, String>,
    server_of: &BTreeMap<&str, &'a str>,
) -> Option<&'a str> {
    let mut current = id;
    for _ in 0..=parents.len() {
        if let Some(server) = server_of.get(current) {
            return Some(server);
        }
        current = parents.get(current)?;
    }
    None
}

/// Refuses `tool` where `field` names it when `server` declares its tools
/// and that is not one of them.
fn named_tool(
    declared: &BTreeMap<&str, Vec<ToolContract>>,
    server: &str,
    tool: &str,
    field: String,
) -> Result<(), ArenaError> {
    let Some(tools) = declared.get(server) else {
        return Ok(());
    };
    if tools.iter().any(|t| t.name == tool) {
        return Ok(());
    }
    Err(ArenaError::UnknownTool {
        field,
        tool: tool.to_string(),
        server: server.to_string(),
        closest: closest(tool, tools.iter().map(|t| t.name.as_str()))
            .unwrap_or_default()
            .to_string(),
    })
}
