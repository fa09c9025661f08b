//! What the adversary search reads of a scenario's world before it mutates
//! anything: the call steps an action can start from, the scopes the
//! scenario grants, and the steps after which a revocation or a labelled
//! read has happened (where `outlive-revocation` and `leak-label` actions
//! are made), and the redefine steps after which a pinned capability's tool
//! has changed or a tool's definition in force is flagged (where
//! `use-changed-definition` and `call-poisoned-tool` actions are made),
//! and the untrusted reads after which an `act-on-untrusted` action makes
//! a consequential call.
//! Building and mutating actions lives in the parent module.

use super::*;

/// A call of the scenario that adversaries mutate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseStep {
    /// The step id.
    pub step_id: String,
    /// The step's index in declaration order.
    pub step_index: usize,
    /// The calling agent, whose key signs the request.
    pub agent: String,
    /// The capability the step presents.
    pub capability: String,
    /// The server called.
    pub server: String,
    /// The tool called.
    pub tool: String,
    /// The call's arguments.
    pub arguments: Value,
    /// The verdict the scenario expects of the step.
    pub expect: ProjectedVerdict,
    /// Virtual offset the step is evaluated at.
    pub evaluation_ms: u64,
    /// The fixture path the step reads, when it is a `read_file` on a workspace.
    pub reads_fixture: Option<String>,
    /// The arguments the called tool declares as integers or numbers, in
    /// name order: where a monetary widening may read its amount. Derived
    /// from the scenario, so never written out.
    #[serde(skip)]
    pub amount_arguments: Vec<String>,
}

/// The call steps of a scenario that adversaries mutate: calls expected to
/// be admitted, in execution order. A scenario without a world has none,
/// and a call whose arguments take values from other steps is none: its
/// values exist only in the scripted run, which the adversary does not
/// replay step by step.
pub fn base_steps(scenario: &Scenario) -> Result<Vec<BaseStep>, ArenaError> {
    let file = scenario.file();
    let mut out = Vec::new();
    for scheduled in scenario.schedule() {
        let step = scenario.step(scheduled.step_index)?;
        let Action::Call(call) = &step.action else {
            continue;
        };
        let Some(capability) = &call.capability else {
            continue;
        };
        if chio_arena::scenario::value::has_references(&call.arguments) {
            continue;
        }
        let expect = match call.expect_verdict {
            ExpectedVerdict::Allow => ProjectedVerdict::Allow,
            ExpectedVerdict::Rewrite => ProjectedVerdict::Rewrite,
            ExpectedVerdict::Deny => continue,
        };
        let workspace = file.servers.iter().any(|s| {
            s.id == call.server && ServerKind::parse(&s.kind) == Some(ServerKind::Workspace)
        });
        let reads_fixture = (workspace && call.tool == "read_file")
            .then(|| {
                call.arguments
                    .get("path")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .flatten();
        out.push(BaseStep {
            step_id: step.head.id.clone(),
            step_index: scheduled.step_index,
            agent: step.head.agent.clone(),
            capability: capability.clone(),
            server: call.server.clone(),
            tool: call.tool.clone(),
            arguments: call.arguments.clone(),
            expect,
            evaluation_ms: scheduled.evaluation_ms,
            reads_fixture,
            amount_arguments: super::monetary::amount_arguments(file, &call.server, &call.tool),
        });
    }
    Ok(out)
}

/// One server's part of a declared scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeclaredGrant {
    /// The server.
    pub server: String,
    /// Tools granted (`*` for all).
    pub tools: Vec<String>,
    /// Path prefix, when constrained.
    pub path_prefix: Option<String>,
    /// Monetary scope constraint, when the grant carries one (a delegation
    /// without its own keeps its parent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monetary: Option<chio_kernel::token::MonetaryLimit>,
}

/// What a capability covers as the scenario declares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeclaredScope {
    /// The agent holding it.
    pub holder: String,
    /// Its grants.
    pub grants: Vec<DeclaredGrant>,
    /// Its invocation limit (a delegation without its own keeps its
    /// parent's), `None` when unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_invocations: Option<u64>,
}

impl DeclaredScope {
    /// Whether a call to `tool` on `server` with `arguments` stays inside the scope.
    pub fn covers(&self, server: &str, tool: &str, arguments: &Value) -> bool {
        self.grants.iter().any(|g| {
            g.server == server
                && g.tools.iter().any(|t| t == tool || t == "*")
                && match &g.path_prefix {
                    None => true,
                    Some(prefix) => arguments
                        .get("path")
                        .and_then(Value::as_str)
                        .is_some_and(|p| p.starts_with(prefix.as_str()) && !p.contains("..")),
                }
        })
    }

    /// Whether the scope grants `tool` on `server` at all.
    pub fn grants_tool(&self, server: &str, tool: &str) -> bool {
        self.grants
            .iter()
            .any(|g| g.server == server && g.tools.iter().any(|t| t == tool || t == "*"))
    }
}

/// Every capability of the scenario (grants, then delegations in execution
/// order) with the scope it declares.
pub fn declared_scopes(scenario: &Scenario) -> Result<BTreeMap<String, DeclaredScope>, ArenaError> {
    let mut scopes: BTreeMap<String, DeclaredScope> = scenario
        .file()
        .grants
        .iter()
        .map(|g| {
            (
                g.id.clone(),
                DeclaredScope {
                    holder: g.agent.clone(),
                    grants: vec![DeclaredGrant {
                        server: g.server.clone(),
                        tools: g.tools.clone(),
                        path_prefix: g.path_prefix.clone(),
                        monetary: g.monetary.as_ref().and_then(|m| m.to_limit()),
                    }],
                    max_invocations: g.max_invocations,
                },
            )
        })
        .collect();
    for scheduled in scenario.schedule() {
        if !scenario.delegate_steps().contains(&scheduled.step_index) {
            continue;
        }
        let step = scenario.step(scheduled.step_index)?;
        if let Action::Delegate(d) = &step.action {
            if let Some(parent) = scopes.get(&d.capability).cloned() {
                let grants = parent
                    .grants
                    .iter()
                    .map(|g| DeclaredGrant {
                        server: g.server.clone(),
                        tools: d.tools.clone().unwrap_or_else(|| g.tools.clone()),
                        path_prefix: d.path_prefix.clone().or_else(|| g.path_prefix.clone()),
                        monetary: d.monetary.clone().or_else(|| g.monetary.clone()),
                    })
                    .collect();
                scopes.insert(
                    d.delegation.clone(),
                    DeclaredScope {
                        holder: d.to.clone(),
                        grants,
                        max_invocations: d.max_invocations.or(parent.max_invocations),
                    },
                );
            }
        }
    }
    Ok(scopes)
}

/// The receiver of a widening link from `capability`: the first declared
/// agent (in id order) outside the capability's lineage (its holder and the
/// holder of every ancestor), an insider the kernels register, or `None`
/// when every declared agent is in the lineage. A link to an agent already
/// in the lineage would be refused as a key cycle, and a key no kernel
/// registers as a call by an unknown agent, whatever the link widens.
pub fn insider(scenario: &Scenario, capability: &str) -> Option<String> {
    let delegated = delegations(scenario);
    let mut lineage = std::collections::BTreeSet::new();
    let mut current = capability.to_string();
    // Each hop moves one delegation up; a chain is never longer than the
    // delegations declared, so the walk ends even on a malformed scenario.
    for _ in 0..=delegated.len() {
        if let Some(d) = delegated.iter().find(|d| d.delegation == current) {
            lineage.insert(d.to.clone());
            current = d.capability.clone();
            continue;
        }
        if let Some(g) = scenario.file().grants.iter().find(|g| g.id == current) {
            lineage.insert(g.agent.clone());
        }
        break;
    }
    let mut agents: Vec<&String> = scenario.file().agents.iter().map(|a| &a.id).collect();
    agents.sort();
    agents.into_iter().find(|a| !lineage.contains(*a)).cloned()
}

/// The delegate steps' actions, in declaration order. Read from a
/// scenario whose text can no longer be read, there are none; the run that
/// evaluates any action reads every step and fails on the same text.
fn delegations(scenario: &Scenario) -> Vec<DelegateAction> {
    scenario
        .delegate_steps()
        .iter()
        .filter_map(|i| match scenario.step(*i).ok()?.action.clone() {
            Action::Delegate(d) => Some(d),
            _ => None,
        })
        .collect()
}

/// Step `i`'s id, agent and action, or `None` when its text cannot be read
/// (see [`delegations`]).
fn step_at(scenario: &Scenario, i: usize) -> Option<Step> {
    scenario.step(i).ok().map(|s| s.into_owned())
}

/// The first revoke step after `base` whose target is the base step's
/// capability or one of its ancestors, with its evaluation offset.
pub fn revocation_after(scenario: &Scenario, base: &BaseStep) -> Option<(String, u64)> {
    let delegated = delegations(scenario);
    let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
    for d in &delegated {
        parent.insert(d.delegation.as_str(), d.capability.as_str());
    }
    let mut lineage = vec![base.capability.as_str()];
    while let Some(up) = lineage.last().and_then(|c| parent.get(c)) {
        if lineage.contains(up) {
            break;
        }
        lineage.push(up);
    }
    scenario
        .schedule()
        .iter()
        .skip_while(|s| s.step_index != base.step_index)
        .find_map(|s| {
            let step = step_at(scenario, s.step_index)?;
            match &step.action {
                Action::Revoke(r) if lineage.contains(&r.target.as_str()) => {
                    Some((step.head.id.clone(), s.evaluation_ms))
                }
                _ => None,
            }
        })
}

/// The first call step at or after `base` that `pick` accepts, with its
/// evaluation offset.
fn first_call_from(
    scenario: &Scenario,
    base: &BaseStep,
    pick: impl Fn(&Step, &chio_arena::scenario::CallAction) -> bool,
) -> Option<(String, u64)> {
    scenario
        .schedule()
        .iter()
        .skip_while(|s| s.step_index != base.step_index)
        .find_map(|s| {
            let step = step_at(scenario, s.step_index)?;
            match &step.action {
                Action::Call(call) if pick(&step, call) => {
                    Some((step.head.id.clone(), s.evaluation_ms))
                }
                _ => None,
            }
        })
}

/// The first call step after `base`, by the same agent on another server,
/// whose `path` argument one of that server's `labels` globs marks, with its
/// evaluation offset.
pub fn labelled_read_after(scenario: &Scenario, base: &BaseStep) -> Option<(String, u64)> {
    let file = scenario.file();
    first_call_from(scenario, base, |step, call| {
        let labels = file
            .servers
            .iter()
            .find(|d| d.id == call.server)
            .and_then(|d| d.labels.as_ref());
        let path = call.arguments.get("path").and_then(Value::as_str);
        let marked = labels.zip(path).is_some_and(|(labels, path)| {
            labels
                .keys()
                .any(|glob| chio_kernel::glob::Glob::new(glob).is_match(path))
        });
        marked && step.head.agent == base.agent && call.server != base.server
    })
}

/// The first call step at or after `base`, by the same agent and expected
/// to be performed, whose server marks what it returns untrusted
/// (`integrity = "untrusted"`, or an `integrity_globs` entry matching its
/// `path` argument), with its evaluation offset: where an
/// `act-on-untrusted` action is made.
pub fn untrusted_read_after(scenario: &Scenario, base: &BaseStep) -> Option<(String, u64)> {
    let file = scenario.file();
    first_call_from(scenario, base, |step, call| {
        let Some(server) = file.servers.iter().find(|d| d.id == call.server) else {
            return false;
        };
        let path = call.arguments.get("path").and_then(Value::as_str);
        let by_glob = path.and_then(|path| {
            server.integrity_globs.as_ref().and_then(|globs| {
                globs
                    .iter()
                    .find(|(glob, _)| chio_kernel::glob::Glob::new(glob).is_match(path))
                    .map(|(_, integrity)| integrity.as_str())
            })
        });
        let untrusted = by_glob.or(server.integrity.as_deref()) == Some("untrusted");
        // A read the scenario expects refused taints nothing.
        let performed = call.expect_verdict != ExpectedVerdict::Deny;
        untrusted && performed && step.head.agent == base.agent
    })
}

/// One consequential call an agent may make: the server, the tool and the
/// grant that covers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsequentialCall {
    /// The server called.
    pub server: String,
    /// The tool called.
    pub tool: String,
    /// The agent's grant that covers it.
    pub grant: String,
}

/// The consequential calls `agent` may make, in declaration order: each
/// tool an enforcing `integrity` guard of the server's kernel lists in
/// `consequential` (for `"*"`, every tool the grant names) that one of the
/// agent's own grants covers. Empty when no such guard sits in front of
/// any server the agent holds a grant for.
pub fn consequential_calls(scenario: &Scenario, agent: &str) -> Vec<ConsequentialCall> {
    let file = scenario.file();
    let listed = |server: &str, tool: &str| {
        let Some(decl) = file.servers.iter().find(|d| d.id == server) else {
            return false;
        };
        let Some(kernel) = file.kernels.iter().find(|k| k.id == decl.kernel) else {
            return false;
        };
        file.guards.iter().any(|g| {
            let integrity = g.kind.as_deref().unwrap_or(g.id.as_str()) == "integrity";
            let enforcing = g.mode.as_deref().unwrap_or("enforce") == "enforce";
            let tools = g
                .config
                .as_ref()
                .and_then(|c| c.get("consequential"))
                .and_then(|c| c.get(server))
                .and_then(|c| c.as_array());
            integrity
                && enforcing
                && kernel.guards.contains(&g.id)
                && tools.is_some_and(|tools| {
                    tools
                        .iter()
                        .any(|t| t.as_str().is_some_and(|t| t == tool || t == "*"))
                })
        })
    };
    let mut out = Vec::new();
    for grant in file.grants.iter().filter(|g| g.agent == agent) {
        for tool in &grant.tools {
            if tool != "*" && listed(&grant.server, tool) {
                out.push(ConsequentialCall {
                    server: grant.server.clone(),
                    tool: tool.clone(),
                    grant: grant.id.clone(),
                });
            }
        }
    }
    out
}

/// The tightest budget the scenario declares over `base`'s call: its
/// agent's `[[budgets]]` entry for the server and tool, and the invocation
/// limit of the presented capability and of every ancestor it was
/// delegated from. `None` when no budget applies, so there is nothing to
/// exceed.
pub fn budget_limit(scenario: &Scenario, base: &BaseStep) -> Option<u64> {
    let file = scenario.file();
    let mut limits: Vec<u64> = file
        .budgets
        .iter()
        .filter(|b| {
            b.agent.as_deref() == Some(base.agent.as_str())
                && b.server == base.server
                && b.tool == base.tool
        })
        .filter_map(|b| b.max_invocations)
        .collect();
    let mut capability = base.capability.clone();
    // A chain is at most as long as the schedule; the bound keeps a
    // malformed self-reference from looping.
    let delegated = delegations(scenario);
    for _ in 0..=delegated.len() {
        if let Some(grant) = file.grants.iter().find(|g| g.id == capability) {
            limits.extend(grant.max_invocations);
            break;
        }
        let parent = delegated.iter().find(|d| d.delegation == capability);
        match parent {
            Some(delegate) => {
                limits.extend(delegate.max_invocations);
                capability = delegate.capability.clone();
            }
            None => break,
        }
    }
    limits.into_iter().min()
}

/// The capability `capability` and every ancestor it was delegated from,
/// nearest first.
fn lineage(scenario: &Scenario, capability: &str) -> Vec<String> {
    let delegated = delegations(scenario);
    let mut out = vec![capability.to_string()];
    while let Some(up) = out
        .last()
        .and_then(|c| delegated.iter().find(|d| &d.delegation == c))
        .map(|d| d.capability.clone())
    {
        if out.contains(&up) {
            break;
        }
        out.push(up);
    }
    out
}

/// The redefine steps of `base`'s server and tool scheduled at or after
/// `base`, in execution order, with their evaluation offsets.
fn redefinitions_after(
    scenario: &Scenario,
    base: &BaseStep,
) -> Vec<(String, u64, chio_arena::scenario::RedefineAction)> {
    scenario
        .schedule()
        .iter()
        .skip_while(|s| s.step_index != base.step_index)
        .filter_map(|s| {
            let step = step_at(scenario, s.step_index)?;
            match step.action {
                Action::Redefine(r) if r.server == base.server && r.tool == base.tool => {
                    Some((step.head.id.clone(), s.evaluation_ms, r))
                }
                _ => None,
            }
        })
        .collect()
}

/// The first redefine step after `base` that changes the definition of
/// `base`'s tool, when the presented capability (or the grant it was
/// delegated from) pins definitions (`pin_definitions = true`), with its
/// evaluation offset. The base step is admitted, so the definition in force
/// at it is the pinned one; a redefinition to the same digest changes
/// nothing and is skipped.
pub fn pinned_redefinition_after(scenario: &Scenario, base: &BaseStep) -> Option<(String, u64)> {
    let file = scenario.file();
    let root = lineage(scenario, &base.capability).pop()?;
    let grant = file.grants.iter().find(|g| g.id == root)?;
    if grant.pin_definitions != Some(true) {
        return None;
    }
    let pinned = file
        .servers
        .iter()
        .find(|s| s.id == base.server)
        .and_then(chio_arena::scenario::tools::server_tools)?
        .into_iter()
        .find(|t| t.name == base.tool)?
        .digest()
        .ok()?;
    redefinitions_after(scenario, base)
        .into_iter()
        .find(|(_, _, r)| r.contract.digest().is_ok_and(|d| d != pinned))
        .map(|(id, at, _)| (id, at))
}

/// The first redefine step after `base` whose new definition of `base`'s
/// tool the definition scan flags, when the kernel serving `base`'s server
/// refuses such calls (an enforcing `prompt-injection` guard with
/// `scan_definitions = true` whose patterns include the finding's), with
/// its evaluation offset.
pub fn poisoned_redefinition_after(scenario: &Scenario, base: &BaseStep) -> Option<(String, u64)> {
    redefinitions_after(scenario, base)
        .into_iter()
        .find(|(_, _, r)| {
            chio_kernel::guards::prompt_injection::scan_definition(&r.contract)
                .is_some_and(|finding| scans_definitions(scenario, &base.server, &finding.pattern))
        })
        .map(|(id, at, _)| (id, at))
}

/// Whether the kernel serving `server` has an enforcing `prompt-injection`
/// guard with `scan_definitions = true` that acts on `pattern`.
fn scans_definitions(scenario: &Scenario, server: &str, pattern: &str) -> bool {
    let file = scenario.file();
    let Some(kernel) = file
        .servers
        .iter()
        .find(|s| s.id == server)
        .and_then(|s| file.kernels.iter().find(|k| k.id == s.kernel))
    else {
        return false;
    };
    kernel.guards.iter().any(|id| {
        file.guards.iter().any(|g| {
            let config = g.config.as_ref();
            let patterns = config
                .and_then(|c| c.get("patterns"))
                .and_then(|p| p.as_array());
            &g.id == id
                && g.kind.as_deref() == Some("prompt-injection")
                && g.mode.as_deref().unwrap_or("enforce") == "enforce"
                && config
                    .and_then(|c| c.get("scan_definitions"))
                    .and_then(|v| v.as_bool())
                    == Some(true)
                && (Pattern::parse(pattern).is_none()
                    || patterns.is_none_or(|list| list.iter().any(|p| p.as_str() == Some(pattern))))
        })
    })
}
