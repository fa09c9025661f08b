//! The world sections of a scenario: nodes, guards (each configuration
//! built by the kernel's guard builder), kernels and their pipelines,
//! servers and their fixture folders, agents' placement and grants (the
//! budgets are the sibling module `budgets`).

use std::collections::BTreeSet;

use chio_kernel::guards::{GuardKind, GuardMode, GuardSpec};

use crate::scenario::tools::catalog_of;
use chio_kernel::label::{Integrity, Label};

use super::checks::{
    check_id, check_instant, check_invocations, check_offset, check_path_prefix, check_share,
    check_tools, declared_ids, resolve, table_to_json,
};
use super::guard_names::check_guard_names;
use super::{FixtureSource, Validator};
use crate::error::ArenaError;
use crate::fixtures::{self, FixtureFiles, FixtureSet};
use crate::model::ServerDecl;
use crate::scenario::ServerKind;

const GUARD_KINDS: &str = "forbidden-path, path-allowlist, behavioral-sequence, information-flow, integrity, prompt-injection, approval, secret-redaction";

impl<'a> Validator<'a> {
    /// Checks the world and returns the fixture files of each workspace
    /// server that declares a folder, by server id.
    pub(super) fn world(&self, has_world: bool, start_ms: u64) -> Result<FixtureSet, ArenaError> {
        let f = self.file;
        let nodes = declared_ids("node", "nodes", f.nodes.iter().map(|n| n.id.as_str()))?;
        let guards = self.guards(has_world)?;
        let kernels = self.kernels(&nodes, &guards)?;
        let servers = declared_ids("server", "servers", f.servers.iter().map(|s| s.id.as_str()))?;
        let mut fixtures = FixtureSet::default();
        for (i, server) in f.servers.iter().enumerate() {
            resolve(&kernels, "kernel", &server.kernel, || {
                format!("servers[{i}].kernel")
            })?;
            if let Some(files) = self.server(i, server)? {
                fixtures.servers.insert(server.id.clone(), files);
            }
        }
        self.effect_guards(has_world)?;
        if has_world {
            for (i, guard) in f.guards.iter().enumerate() {
                if let Some(spec) = guard_spec(i, guard)? {
                    check_guard_names(f, i, &spec)?;
                }
            }
        }
        self.placement(&kernels, has_world)?;
        self.grants(&servers, start_ms)?;
        Ok(fixtures)
    }

    /// Guard ids, and each configured guard built as the kernel would.
    fn guards(&self, has_world: bool) -> Result<BTreeSet<&'a str>, ArenaError> {
        let f = self.file;
        let guards = declared_ids("guard", "guards", f.guards.iter().map(|g| g.id.as_str()))?;
        for (i, guard) in f.guards.iter().enumerate() {
            if has_world && guard.kind.is_none() {
                return Err(ArenaError::MissingKey {
                    field: format!("guards[{i}].kind"),
                });
            }
            if let Some(spec) = guard_spec(i, guard)? {
                // Tools taken from effects are known per kernel, once the
                // servers are checked (`effect_guards`).
                if has_world && spec.takes_tools_from_effects() {
                    continue;
                }
                spec.build().map_err(|e| ArenaError::GuardConfig {
                    field: format!("guards[{i}].config"),
                    reason: e.to_string(),
                })?;
            }
        }
        Ok(guards)
    }

    /// Each guard that takes its tools from the tools' effects, built as
    /// every kernel whose pipeline names it builds it (with that kernel's
    /// catalog), or, named by none, with every server's tools.
    fn effect_guards(&self, has_world: bool) -> Result<(), ArenaError> {
        let f = self.file;
        if !has_world {
            return Ok(());
        }
        for (i, guard) in f.guards.iter().enumerate() {
            let Some(spec) = guard_spec(i, guard)? else {
                continue;
            };
            if !spec.takes_tools_from_effects() {
                continue;
            }
            let users: Vec<&str> = f
                .kernels
                .iter()
                .filter(|k| k.guards.contains(&guard.id))
                .map(|k| k.id.as_str())
                .collect();
            let catalogs = if users.is_empty() {
                let mut all = chio_kernel::contract::ToolCatalog::new();
                for kernel in &f.kernels {
                    all.extend(catalog_of(f, &kernel.id).unwrap_or_default());
                }
                vec![(None, all)]
            } else {
                users
                    .into_iter()
                    .map(|k| (Some(k), catalog_of(f, k).unwrap_or_default()))
                    .collect()
            };
            for (kernel, catalog) in catalogs {
                spec.with_effects(Some(&catalog))
                    .build()
                    .map_err(|e| ArenaError::GuardConfig {
                        field: format!("guards[{i}].config"),
                        reason: match kernel {
                            Some(k) => format!("{e} (with the tools kernel {k} serves)"),
                            None => e.to_string(),
                        },
                    })?;
            }
        }
        Ok(())
    }

    /// Kernel ids, each kernel's node, and its pipeline of declared guards
    /// (each at most once).
    fn kernels(
        &self,
        nodes: &BTreeSet<&str>,
        guards: &BTreeSet<&str>,
    ) -> Result<BTreeSet<&'a str>, ArenaError> {
        let f = self.file;
        let kernels = declared_ids("kernel", "kernels", f.kernels.iter().map(|k| k.id.as_str()))?;
        for (i, kernel) in f.kernels.iter().enumerate() {
            resolve(nodes, "node", &kernel.node, || format!("kernels[{i}].node"))?;
            if kernel
                .max_request_age_ms
                .is_some_and(|age| !(1..=crate::scheduler::MAX_OFFSET_MS).contains(&age))
            {
                return Err(ArenaError::OutOfRange {
                    field: format!("kernels[{i}].max_request_age_ms"),
                    rule: "1 <= max_request_age_ms <= 2^53",
                });
            }
            let mut pipeline = BTreeSet::new();
            for (j, guard) in kernel.guards.iter().enumerate() {
                let field = || format!("kernels[{i}].guards[{j}]");
                resolve(guards, "guard", guard, field)?;
                if !pipeline.insert(guard.as_str()) {
                    return Err(ArenaError::DuplicateId {
                        kind: "pipeline guard",
                        id: guard.clone(),
                        field: field(),
                    });
                }
            }
        }
        Ok(kernels)
    }

    /// Each agent's kernel, and a world that declares every section once
    /// any is declared.
    fn placement(&self, kernels: &BTreeSet<&str>, has_world: bool) -> Result<(), ArenaError> {
        let f = self.file;
        for (i, agent) in f.agents.iter().enumerate() {
            if agent.quarantined == Some(true) && agent.planner == Some(true) {
                return Err(ArenaError::AgentRoles {
                    field: format!("agents[{i}]"),
                });
            }
            match &agent.kernel {
                Some(kernel) => {
                    resolve(kernels, "kernel", kernel, || format!("agents[{i}].kernel"))?
                }
                None if has_world => {
                    return Err(ArenaError::IncompleteWorld {
                        field: format!("agents[{i}].kernel"),
                    })
                }
                None => {}
            }
        }
        if has_world {
            for (section, empty) in [
                ("[[nodes]]", f.nodes.is_empty()),
                ("[[kernels]]", f.kernels.is_empty()),
                ("[[servers]]", f.servers.is_empty()),
            ] {
                if empty {
                    return Err(ArenaError::IncompleteWorld {
                        field: section.to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Grant ids, and each grant's agent, server, tools and limits.
    fn grants(&self, servers: &BTreeSet<&str>, start_ms: u64) -> Result<(), ArenaError> {
        let f = self.file;
        let agents = self.agent_ids();
        declared_ids("grant", "grants", f.grants.iter().map(|g| g.id.as_str()))?;
        for (i, grant) in f.grants.iter().enumerate() {
            let at = |key: &str| format!("grants[{i}].{key}");
            resolve(&agents, "agent", &grant.agent, || at("agent"))?;
            resolve(servers, "server", &grant.server, || at("server"))?;
            check_tools(&grant.tools, &at("tools"))?;
            check_path_prefix(grant.path_prefix.as_deref(), || at("path_prefix"))?;
            check_offset(grant.not_before_ms, || at("not_before_ms"))?;
            check_offset(grant.expires_after_ms, || at("expires_after_ms"))?;
            check_instant(start_ms, grant.not_before(), || at("not_before_ms"))?;
            check_instant(start_ms, grant.expires_after(), || at("expires_after_ms"))?;
            if grant.not_before() >= grant.expires_after() {
                return Err(ArenaError::OutOfRange {
                    field: at("expires_after_ms"),
                    rule: "expires_after_ms is greater than not_before_ms",
                });
            }
            check_invocations(grant.max_invocations, || at("max_invocations"))?;
            check_share(grant.share_bps, || at("share_bps"))?;
            self.grant_monetary(i, grant)?;
        }
        Ok(())
    }

    /// Checks one server and returns its fixture files, if it declares a folder.
    fn server(&self, i: usize, server: &ServerDecl) -> Result<Option<FixtureFiles>, ArenaError> {
        let at = |key: &str| format!("servers[{i}].{key}");
        let kind = ServerKind::parse(&server.kind).ok_or_else(|| ArenaError::UnsupportedValue {
            field: at("kind"),
            value: server.kind.clone(),
            allowed: "workspace, publish, test-runner, http, bank, recorded, mcp",
        })?;
        server_kind_keys(i, kind, server)?;
        server_values(i, server)?;
        if kind == ServerKind::Recorded {
            self.recorded(i, server)?;
        }
        if kind == ServerKind::Mcp {
            mcp_server(i, server)?;
            self.recorded(i, server)?;
        }
        if let Some(owner) = &server.shares_state_with {
            self.shared_store(i, server, owner)?;
        }
        match &server.fixtures {
            Some(folder) => self.fixture_files(i, server, folder).map(Some),
            None => Ok(None),
        }
    }

    /// Checks that server `i` shares the store of `owner`: another recorded
    /// or mcp server of the scenario, which shares no other's (the store is
    /// kept under its owner's id).
    fn shared_store(&self, i: usize, server: &ServerDecl, owner: &str) -> Result<(), ArenaError> {
        let field = format!("servers[{i}].shares_state_with");
        let servers: BTreeSet<&str> = self.file.servers.iter().map(|s| s.id.as_str()).collect();
        resolve(&servers, "server", owner, || field.clone())?;
        let target = self.file.servers.iter().find(|s| s.id == owner);
        let keeps = target.is_some_and(|t| {
            matches!(
                ServerKind::parse(&t.kind),
                Some(ServerKind::Recorded | ServerKind::Mcp)
            ) && t.shares_state_with.is_none()
        });
        if owner == server.id || !keeps {
            return Err(ArenaError::OutOfRange {
                field,
                rule: "shares_state_with names another recorded or mcp server, which itself shares no other server's store",
            });
        }
        Ok(())
    }

    /// The files of server `i`'s fixture folder, as the loader read them or
    /// as they were given.
    fn fixture_files(
        &self,
        i: usize,
        server: &ServerDecl,
        folder: &str,
    ) -> Result<FixtureFiles, ArenaError> {
        let field = format!("servers[{i}].fixtures");
        let missing = || ArenaError::FixtureMissing {
            field: field.clone(),
            folder: folder.to_string(),
        };
        match &self.fixtures {
            FixtureSource::Read(reads) => reads.get(&i).cloned().unwrap_or_else(|| Err(missing())),
            FixtureSource::Given(set) => {
                fixtures::check_folder(folder, &field)?;
                set.servers.get(&server.id).cloned().ok_or_else(missing)
            }
        }
    }
}

/// A guard as the kernel's data form, or `None` for a guard without a kind
/// (a world-less scenario may name guards it does not configure).
pub(crate) fn guard_spec(
    index: usize,
    guard: &crate::model::GuardDecl,
) -> Result<Option<GuardSpec>, ArenaError> {
    let mode = match guard.mode.as_deref() {
        None => GuardMode::Enforce,
        Some(text) => GuardMode::parse(text).map_err(|_| ArenaError::UnsupportedValue {
            field: format!("guards[{index}].mode"),
            value: text.to_string(),
            allowed: "enforce, observe",
        })?,
    };
    let Some(kind_text) = guard.kind.as_deref() else {
        if guard.config.is_some() {
            return Err(ArenaError::KeyNotAllowed {
                field: format!("guards[{index}].config"),
                context: "a guard takes config only together with kind",
            });
        }
        return Ok(None);
    };
    let kind = GuardKind::parse(kind_text).map_err(|_| ArenaError::UnsupportedValue {
        field: format!("guards[{index}].kind"),
        value: kind_text.to_string(),
        allowed: GUARD_KINDS,
    })?;
    let field = format!("guards[{index}].config");
    let config = match &guard.config {
        Some(table) => table_to_json(table, &field)?,
        None => serde_json::Value::Object(Default::default()),
    };
    Ok(Some(GuardSpec {
        id: guard.id.clone(),
        kind,
        mode,
        config,
    }))
}

/// The keys only an mcp server takes: a command whose program is not
/// empty, environment names, a folder below the scenario's and a timeout in
/// range (its tools are checked as a recorded server's). Never a value in an error (an
/// environment value may be a secret).
fn mcp_server(i: usize, server: &ServerDecl) -> Result<(), ArenaError> {
    let at = |key: &str| format!("servers[{i}].{key}");
    let command = server
        .command
        .as_ref()
        .ok_or_else(|| ArenaError::MissingKey {
            field: at("command"),
        })?;
    match command.first() {
        None => {
            return Err(ArenaError::EmptyList {
                field: at("command"),
            })
        }
        Some(program) if program.trim().is_empty() => {
            return Err(ArenaError::OutOfRange {
                field: at("command[0]"),
                rule: "the program (the command's first item) is not empty",
            })
        }
        Some(_) => {}
    }
    if command.iter().any(|arg| arg.contains('\0')) {
        return Err(ArenaError::OutOfRange {
            field: at("command"),
            rule: "no item of the command holds a NUL character",
        });
    }
    for (name, value) in server.env.iter().flatten() {
        let bad_name = name.is_empty() || name.contains('=') || name.contains('\0');
        if bad_name || value.contains('\0') {
            return Err(ArenaError::OutOfRange {
                field: at("env"),
                rule: "each variable has a name without '=' or NUL and a value without NUL",
            });
        }
    }
    if let Some(cwd) = &server.cwd {
        if fixtures::normalized_folder(cwd).is_none() && !matches!(cwd.as_str(), "." | "./") {
            return Err(ArenaError::OutOfRange {
                field: at("cwd"),
                rule: "cwd is a folder below the scenario's folder: relative, without '..'",
            });
        }
    }
    if let Some(timeout) = server.timeout_ms {
        if !(1..=MAX_MCP_TIMEOUT_MS).contains(&timeout) {
            return Err(ArenaError::OutOfRange {
                field: at("timeout_ms"),
                rule: "timeout_ms is between 1 and 600000 milliseconds",
            });
        }
    }
    Ok(())
}

/// The longest wall time, in milliseconds, an mcp server may be given to
/// answer one call.
pub const MAX_MCP_TIMEOUT_MS: u64 = 600_000;

/// Refuses the keys of server `i` that its kind does not take: each key
/// with the kinds that take it and the reason another kind does not, in the
/// order the keys are checked.
fn server_kind_keys(i: usize, kind: ServerKind, server: &ServerDecl) -> Result<(), ArenaError> {
    use ServerKind::{Mcp, Recorded, TestRunner, Workspace};
    const WORKSPACE: &str = "only workspace servers take it";
    const LABELLED: &str = "only workspace, recorded and mcp servers take it";
    const DECLARED: &str =
        "only recorded and mcp servers take it; a built-in kind publishes its own tools";
    const MCP: &str = "only mcp servers take it";
    let answers = if kind == Mcp {
        "an mcp server's answers are recorded by chio arena record, not written in the scenario"
    } else {
        "only recorded servers take it; a built-in kind publishes its own tools"
    };
    let keys: [(&str, bool, &[ServerKind], &'static str); 13] = [
        ("root", server.root.is_some(), &[Workspace], WORKSPACE),
        (
            "fixtures",
            server.fixtures.is_some(),
            &[Workspace],
            WORKSPACE,
        ),
        (
            "labels",
            server.labels.is_some(),
            &[Workspace, Recorded, Mcp],
            LABELLED,
        ),
        (
            "integrity_globs",
            server.integrity_globs.is_some(),
            &[Workspace, Recorded, Mcp],
            LABELLED,
        ),
        ("tools", server.tools.is_some(), &[Recorded, Mcp], DECLARED),
        (
            "fields",
            server.fields.is_some(),
            &[Recorded, Mcp],
            DECLARED,
        ),
        ("answers", server.answers.is_some(), &[Recorded], answers),
        ("command", server.command.is_some(), &[Mcp], MCP),
        ("env", server.env.is_some(), &[Mcp], MCP),
        ("cwd", server.cwd.is_some(), &[Mcp], MCP),
        ("timeout_ms", server.timeout_ms.is_some(), &[Mcp], MCP),
        (
            "shares_state_with",
            server.shares_state_with.is_some(),
            &[Recorded, Mcp],
            "only recorded and mcp servers take it; the arena models a built-in kind's store itself",
        ),
        (
            "failing",
            server.failing.is_some(),
            &[TestRunner],
            "only test-runner servers take it",
        ),
    ];
    for (key, present, kinds, context) in keys {
        if present && !kinds.contains(&kind) {
            return Err(ArenaError::KeyNotAllowed {
                field: format!("servers[{i}].{key}"),
                context,
            });
        }
    }
    Ok(())
}

/// Checks the values of server `i`'s root, failing tests, labels and
/// integrity levels.
fn server_values(i: usize, server: &ServerDecl) -> Result<(), ArenaError> {
    let at = |key: &str| format!("servers[{i}].{key}");
    if let Some(root) = &server.root {
        if !root.starts_with('/') || root.split('/').any(|c| c == "..") {
            return Err(ArenaError::OutOfRange {
                field: at("root"),
                rule: "root is an absolute path without '..'",
            });
        }
    }
    if let Some(failing) = &server.failing {
        for (j, test) in failing.iter().enumerate() {
            if test.is_empty() {
                return Err(ArenaError::EmptyList {
                    field: format!("servers[{i}].failing[{j}]"),
                });
            }
        }
    }
    if let Some(labels) = &server.labels {
        for (glob, label) in labels {
            let field = format!("servers[{i}].labels.{glob:?}");
            if glob.is_empty() {
                return Err(ArenaError::InvalidId {
                    field,
                    value: String::new(),
                });
            }
            check_id(label, field.clone())?;
            if Label::parse(label).is_none() {
                return Err(ArenaError::UnsupportedValue {
                    field,
                    value: label.clone(),
                    allowed: "public, internal, confidential, restricted",
                });
            }
        }
    }
    if let Some(level) = &server.integrity {
        if Integrity::parse(level).is_none() {
            return Err(ArenaError::UnsupportedValue {
                field: at("integrity"),
                value: level.clone(),
                allowed: "trusted, untrusted",
            });
        }
    }
    if let Some(globs) = &server.integrity_globs {
        for (glob, level) in globs {
            let field = format!("servers[{i}].integrity_globs.{glob:?}");
            if glob.is_empty() {
                return Err(ArenaError::InvalidId {
                    field,
                    value: String::new(),
                });
            }
            if Integrity::parse(level).is_none() {
                return Err(ArenaError::UnsupportedValue {
                    field,
                    value: level.clone(),
                    allowed: "trusted, untrusted",
                });
            }
        }
    }
    Ok(())
}
