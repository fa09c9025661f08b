//! `integrity`: consequential tools refused to a low-integrity context.
//!
//! Config: `{ "consequential": { "<server id>": ["<tool>", ...] },
//! "on_untrusted": "deny" }`, `on_untrusted` being `deny` or `approval`.
//! A call to a listed tool is judged by every label key the kernel read for
//! it (session, principal, lineage, and the delegation record of every link
//! of the presented chain, exactly as `information-flow` reads them): when
//! any holds `integrity:untrusted`, the context that chose this call has
//! seen content from an untrusted source, so the call is refused
//! (`deny`) or held for a human (`approval`, PendingApproval), whatever the
//! content said. The guard never looks at content: an injection the
//! detector misses is stopped by where it came from, not by what it says.
//! `"*"` in a server's list makes every tool of that server consequential.
//!
//! Per-argument judgement (`protected`, `allow`): `{ "protected": {
//! "<server>": { "<tool>": ["recipient", "iban"] } }, "allow": { "<server>":
//! { "<tool>": { "recipient": ["<value>", ...] } } } }`. Besides its context,
//! a call to a consequential tool is judged by the labels of each argument
//! built from an earlier value (`crate::provenance`): a protected argument
//! carrying an untrusted value is refused, and so is any argument carrying
//! one when the tool reaches an open world (`openWorldHint`), unless the
//! argument's value is on the tool's allowlist for it. This judges planners
//! only (whose context a schema-checked hand-over leaves trusted, so the
//! value they were handed must keep its own labels); every other agent is
//! judged by its context alone, as before. For a planner, an open-world
//! tool is consequential for its untrusted-derived arguments even when the
//! configuration does not list it. `on_untrusted` applies to
//! these refusals too. An argument name is a top-level argument; a name
//! starting with `/` is a JSON pointer. A value inside a protected
//! argument counts as the argument, and so does a value the argument lies
//! inside (arguments built as a whole from one value). Every protected
//! argument and every open-world part is judged on its own: an allowlist
//! exempts exactly the value it admits, never a neighbour built from the
//! same untrusted value (a memo beside an allowlisted IBAN in one
//! handed-over object is judged as the protected or open-world argument it
//! is).
//!
//! Run-time allowlists (`allow_from`): `{ "allow_from": { "<server>": {
//! "<tool>": { "recipient": [{ "server": "bank", "tool":
//! "get_scheduled_transactions", "pointer": "/*/recipient" }] } } } }`. A
//! protected argument is also admitted, whatever its labels, when its
//! value (a string, or every string of an array) equals a string found at
//! the pointer pattern in a trusted part of an output of that server and
//! tool that the caller read earlier, or that an agent which handed the
//! caller a value this argument is built from read earlier
//! (`crate::allowlist`, which says how kernels record and read them).

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::{
    config_error, Guard, GuardContext, GuardError, GuardKind, GuardMeta, GuardNeeds, GuardVerdict,
};
use crate::allowlist::{argument_strings, value_digest, AllowSource};
use crate::error::KernelError;
use crate::label::{is_integrity_label, Integrity};
use crate::provenance::AgentRole;
use crate::reason::DenyReason;

/// Configuration of `integrity`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntegrityConfig {
    /// Tools whose effects matter, by server: a call to one of them from a
    /// low-integrity context is refused or held.
    pub consequential: BTreeMap<String, Vec<String>>,
    /// What a low-integrity context gets at a consequential tool: `deny`
    /// (the default) or `approval`.
    #[serde(default = "deny_by_default")]
    pub on_untrusted: String,
    /// Arguments that must not carry an untrusted value, by server and tool.
    #[serde(default)]
    pub protected: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// Values an argument may take even when it carries an untrusted
    /// value, by server, tool and argument.
    #[serde(default)]
    pub allow: BTreeMap<String, BTreeMap<String, BTreeMap<String, Vec<String>>>>,
    /// Where an argument's run-time allowlist is read, by server, tool and
    /// argument: trusted parts of outputs the caller read.
    #[serde(default)]
    pub allow_from: BTreeMap<String, BTreeMap<String, BTreeMap<String, Vec<SourceConfig>>>>,
}

/// One run-time allowlist source as configured.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// The server whose output is read.
    pub server: String,
    /// The tool whose output is read.
    pub tool: String,
    /// The JSON pointer pattern of the values (`*` for any key or index).
    pub pointer: String,
}

fn deny_by_default() -> String {
    "deny".to_string()
}

/// What a low-integrity context gets at a consequential tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnUntrusted {
    /// The call is refused.
    Deny,
    /// The call waits for a human (PendingApproval).
    Approval,
}

/// The built guard.
#[derive(Debug, Clone)]
pub struct IntegrityGuard {
    meta: GuardMeta,
    consequential: BTreeMap<String, BTreeSet<String>>,
    on_untrusted: OnUntrusted,
    /// Protected argument pointers by `(server, tool)`.
    protected: BTreeMap<(String, String), BTreeSet<String>>,
    /// Allowlisted values by `(server, tool)` and argument pointer.
    allow: BTreeMap<(String, String), BTreeMap<String, BTreeSet<String>>>,
    /// Run-time allowlist sources by `(server, tool)` and argument pointer.
    allow_from: BTreeMap<(String, String), BTreeMap<String, Vec<AllowSource>>>,
}

/// The JSON pointer an argument name stands for: a top-level argument, or
/// the pointer itself when it starts with `/`.
fn argument_pointer(name: &str) -> String {
    if name.starts_with('/') {
        name.to_string()
    } else {
        format!("/{}", name.replace('~', "~0").replace('/', "~1"))
    }
}

impl IntegrityGuard {
    /// Validates the configuration.
    pub fn new(meta: GuardMeta, config: IntegrityConfig) -> Result<Self, KernelError> {
        if config.consequential.is_empty() {
            return Err(config_error(
                &meta,
                "consequential is empty; list at least one server's tools",
            ));
        }
        let mut consequential = BTreeMap::new();
        for (server, tools) in config.consequential {
            if tools.is_empty() || tools.iter().any(String::is_empty) {
                return Err(config_error(
                    &meta,
                    format!("consequential.{server} must list tool names (or \"*\")"),
                ));
            }
            consequential.insert(server, tools.into_iter().collect());
        }
        let on_untrusted = match config.on_untrusted.as_str() {
            "deny" => OnUntrusted::Deny,
            "approval" => OnUntrusted::Approval,
            other => {
                return Err(config_error(
                    &meta,
                    format!("on_untrusted is {other:?}; use deny or approval"),
                ))
            }
        };
        let mut protected = BTreeMap::new();
        for (server, tools) in config.protected {
            for (tool, names) in tools {
                if names.is_empty() || names.iter().any(|n| n.is_empty() || n == "/") {
                    return Err(config_error(
                        &meta,
                        format!("protected.{server}.{tool} must name arguments"),
                    ));
                }
                let pointers = names.iter().map(|n| argument_pointer(n)).collect();
                protected.insert((server.clone(), tool), pointers);
            }
        }
        let mut allow = BTreeMap::new();
        for (server, tools) in config.allow {
            for (tool, arguments) in tools {
                let mut lists = BTreeMap::new();
                for (name, values) in arguments {
                    if name.is_empty() || values.is_empty() {
                        return Err(config_error(
                            &meta,
                            format!("allow.{server}.{tool} must list values for named arguments"),
                        ));
                    }
                    lists.insert(argument_pointer(&name), values.into_iter().collect());
                }
                allow.insert((server.clone(), tool), lists);
            }
        }
        let allow_from = sources(&meta, config.allow_from, &protected)?;
        Ok(IntegrityGuard {
            meta,
            consequential,
            on_untrusted,
            protected,
            allow,
            allow_from,
        })
    }
}

/// Run-time allowlist sources by `(server, tool)` and argument pointer;
/// each must name a protected argument and a pointer pattern.
#[allow(clippy::type_complexity)]
fn sources(
    meta: &GuardMeta,
    config: BTreeMap<String, BTreeMap<String, BTreeMap<String, Vec<SourceConfig>>>>,
    protected: &BTreeMap<(String, String), BTreeSet<String>>,
) -> Result<BTreeMap<(String, String), BTreeMap<String, Vec<AllowSource>>>, KernelError> {
    let mut out = BTreeMap::new();
    for (server, tools) in config {
        for (tool, arguments) in tools {
            let key = (server.clone(), tool.clone());
            let mut lists = BTreeMap::new();
            for (name, configured) in arguments {
                let pointer = argument_pointer(&name);
                if name.is_empty() || configured.is_empty() {
                    return Err(config_error(
                        meta,
                        format!("allow_from.{server}.{tool} must list sources for named arguments"),
                    ));
                }
                if !protected
                    .get(&key)
                    .is_some_and(|set| set.contains(&pointer))
                {
                    return Err(config_error(
                        meta,
                        format!("allow_from.{server}.{tool}.{name} names no protected argument; list it under protected.{server}.{tool}"),
                    ));
                }
                let mut list = Vec::new();
                for source in configured {
                    let built = AllowSource::new(&source.server, &source.tool, &source.pointer)
                        .ok_or_else(|| {
                            config_error(
                                meta,
                                format!("allow_from.{server}.{tool}.{name}: a source names a server, a tool and a pointer starting with /"),
                            )
                        })?;
                    list.push(built);
                }
                lists.insert(pointer, list);
            }
            out.insert(key, lists);
        }
    }
    Ok(out)
}

impl Guard for IntegrityGuard {
    fn meta(&self) -> &GuardMeta {
        &self.meta
    }
    fn kind(&self) -> GuardKind {
        GuardKind::Integrity
    }
    fn needs(&self) -> GuardNeeds {
        GuardNeeds {
            labels: !crate::planted::weakened_anywhere(
                crate::planted::Weakness::IntegrityReadsNoLabels,
            ),
            ..GuardNeeds::default()
        }
    }
    fn allowlist_sources(&self) -> Vec<AllowSource> {
        let all: BTreeSet<&AllowSource> = self
            .allow_from
            .values()
            .flat_map(|lists| lists.values().flatten())
            .collect();
        all.into_iter().cloned().collect()
    }
    fn allowlist_sources_for(&self, server: &str, tool: &str) -> Vec<AllowSource> {
        let all: BTreeSet<&AllowSource> = self
            .allow_from
            .get(&(server.to_string(), tool.to_string()))
            .map(|lists| lists.values().flatten().collect())
            .unwrap_or_default();
        all.into_iter().cloned().collect()
    }
    fn consequential(&self, server: &str, tool: &str) -> Option<bool> {
        Some(
            self.consequential
                .get(server)
                .is_some_and(|tools| tools.contains(tool) || tools.contains("*")),
        )
    }
    fn check_request(&self, ctx: &GuardContext<'_>) -> Result<GuardVerdict, GuardError> {
        self.check_request_noting(ctx, &mut Vec::new())
    }
    fn check_request_noting(
        &self,
        ctx: &GuardContext<'_>,
        admitted: &mut Vec<String>,
    ) -> Result<GuardVerdict, GuardError> {
        if self.consequential(ctx.server, ctx.tool) != Some(true) {
            // A tool that reaches the open world is consequential for a
            // planner exactly for its untrusted-derived arguments.
            if ctx.provenance.role == AgentRole::Planner && ctx.provenance.open_world {
                if let Some(reason) = self.untrusted_argument(ctx, admitted)? {
                    return Ok(self.refuse(reason));
                }
            }
            return Ok(GuardVerdict::Allow);
        }
        // Name the narrowest scope of taint first, as information-flow does.
        let rank = |key: &str| {
            ["session/", "principal/", "lineage/", "delegation/"]
                .iter()
                .position(|p| key.starts_with(p))
                .unwrap_or(4)
        };
        let mut entries: Vec<_> = ctx.labels.iter().collect();
        entries.sort_by_key(|(key, _)| (rank(key), key.as_str()));
        for (key, labels) in entries {
            for name in labels.iter().filter(|n| is_integrity_label(n)) {
                let level = Integrity::from_label(name).ok_or_else(|| {
                    GuardError(format!(
                        "retained label {name:?} under {key} is not a known integrity level"
                    ))
                })?;
                if level > Integrity::Trusted {
                    let reason = DenyReason::UntrustedContext {
                        key: key.clone(),
                        level: level.to_string(),
                        tool: ctx.tool.to_string(),
                        server: ctx.server.to_string(),
                    };
                    return Ok(self.refuse(reason));
                }
            }
        }
        // Session taint is the rule for every other agent; a planner is
        // judged by its arguments besides.
        if ctx.provenance.role != AgentRole::Planner {
            return Ok(GuardVerdict::Allow);
        }
        match self.untrusted_argument(ctx, admitted)? {
            Some(reason) => Ok(self.refuse(reason)),
            None => Ok(GuardVerdict::Allow),
        }
    }
}

impl IntegrityGuard {
    /// The run-time allowlist records that admit the value of protected
    /// `argument`: each string of it must be recorded by a source of the
    /// argument for the caller, or for an agent that handed over a value
    /// the argument is built from; `None` when one is not.
    fn read_allowed(
        &self,
        ctx: &GuardContext<'_>,
        key: &(String, String),
        argument: &str,
    ) -> Option<BTreeSet<String>> {
        let sources = self.allow_from.get(key).and_then(|l| l.get(argument))?;
        let values = ctx.arguments.pointer(argument).and_then(argument_strings)?;
        let mut readers: BTreeSet<&str> = BTreeSet::from([ctx.agent_id]);
        for (pointer, senders) in &ctx.provenance.senders {
            if crate::provenance::within(pointer, argument)
                || crate::provenance::within(argument, pointer)
            {
                readers.extend(senders.iter().map(String::as_str));
            }
        }
        let mut records = BTreeSet::new();
        for value in &values {
            let digest = value_digest(value);
            let record = sources
                .iter()
                .flat_map(|source| readers.iter().map(|reader| source.record_key(reader)))
                .find(|record| {
                    ctx.provenance
                        .allowlists
                        .get(record)
                        .is_some_and(|held| held.contains(&digest))
                })?;
            records.insert(record);
        }
        Some(records)
    }

    /// Whether `argument`'s value is on a literal allowlist or a run-time
    /// one; a run-time admission is noted as `POINTER on RECORD`.
    fn allowed(
        &self,
        ctx: &GuardContext<'_>,
        key: &(String, String),
        argument: &str,
        notes: &mut BTreeSet<String>,
    ) -> bool {
        let literal = self
            .allow
            .get(key)
            .and_then(|lists| lists.get(argument))
            .zip(ctx.arguments.pointer(argument).and_then(|v| v.as_str()))
            .is_some_and(|(list, value)| list.contains(value));
        if literal {
            return true;
        }
        match self.read_allowed(ctx, key, argument) {
            Some(records) => {
                let records: Vec<String> = records.into_iter().collect();
                notes.insert(format!("{argument} on {}", records.join(" and ")));
                true
            }
            None => false,
        }
    }

    fn refuse(&self, reason: DenyReason) -> GuardVerdict {
        match self.on_untrusted {
            OnUntrusted::Deny => GuardVerdict::Deny(reason),
            OnUntrusted::Approval => GuardVerdict::PendingApproval(reason),
        }
    }

    /// The first argument (in pointer order) that carries an untrusted
    /// value where it may not: inside a protected argument, or anywhere in
    /// the arguments of an open-world tool, unless the argument's value is
    /// on its allowlist. Each protected argument is judged on its own, and
    /// an allowlisted one covers only its own value.
    fn untrusted_argument(
        &self,
        ctx: &GuardContext<'_>,
        admitted: &mut Vec<String>,
    ) -> Result<Option<DenyReason>, GuardError> {
        let key = (ctx.server.to_string(), ctx.tool.to_string());
        let protected = self.protected.get(&key);
        let mut notes = BTreeSet::new();
        let refusal = self.first_untrusted(ctx, &key, protected, &mut notes);
        admitted.extend(notes);
        refusal
    }

    fn first_untrusted(
        &self,
        ctx: &GuardContext<'_>,
        key: &(String, String),
        protected: Option<&BTreeSet<String>>,
        notes: &mut BTreeSet<String>,
    ) -> Result<Option<DenyReason>, GuardError> {
        for (pointer, labels) in &ctx.provenance.arguments {
            let mut untrusted = false;
            for name in labels.iter().filter(|n| is_integrity_label(n)) {
                let level = Integrity::from_label(name).ok_or_else(|| {
                    GuardError(format!(
                        "argument {pointer} carries label {name:?}, which is not a known integrity level"
                    ))
                })?;
                untrusted |= level > Integrity::Trusted;
            }
            if !untrusted {
                continue;
            }
            if let Some(reason) = self.judge_untrusted(ctx, key, protected, pointer, notes) {
                return Ok(Some(reason));
            }
        }
        Ok(None)
    }

    /// Judges one argument built from an untrusted value (at `pointer`).
    /// Every protected argument it reaches is judged on its own: one the
    /// value lies inside (the argument built as a whole from it, or from
    /// a value holding it), and each one inside the value that the call
    /// sends. An allowlisted protected argument exempts its own value and
    /// nothing beside it: at an open-world tool, every part of the value
    /// that no protected argument covers is judged as an open-world
    /// argument ([`IntegrityGuard::open_rest`]).
    fn judge_untrusted(
        &self,
        ctx: &GuardContext<'_>,
        key: &(String, String),
        protected: Option<&BTreeSet<String>>,
        pointer: &str,
        notes: &mut BTreeSet<String>,
    ) -> Option<DenyReason> {
        let empty = BTreeSet::new();
        let protected = protected.unwrap_or(&empty);
        let holding: Vec<&String> = protected
            .iter()
            .filter(|argument| crate::provenance::within(pointer, argument))
            .collect();
        let inside: Vec<&String> = protected
            .iter()
            .filter(|argument| {
                crate::provenance::within(argument, pointer)
                    && argument.as_str() != pointer
                    && ctx.arguments.pointer(argument).is_some()
            })
            .collect();
        for argument in holding.iter().chain(&inside) {
            if !self.allowed(ctx, key, argument, notes) {
                return Some(DenyReason::UntrustedArgument {
                    argument: argument.to_string(),
                    tool: ctx.tool.to_string(),
                    server: ctx.server.to_string(),
                });
            }
        }
        // A protected argument that holds the value covers it whole.
        if !ctx.provenance.open_world || !holding.is_empty() {
            return None;
        }
        self.open_rest(ctx, key, pointer, &inside, notes)
    }

    /// The first part of the value at `pointer` that no protected argument
    /// of `inside` covers and no allowlist admits, refused as an
    /// open-world argument: the value itself when no protected argument
    /// lies inside it, otherwise each of its members in turn (a member
    /// holding a protected argument is judged the same way).
    fn open_rest(
        &self,
        ctx: &GuardContext<'_>,
        key: &(String, String),
        pointer: &str,
        inside: &[&String],
        notes: &mut BTreeSet<String>,
    ) -> Option<DenyReason> {
        if inside.iter().any(|argument| argument.as_str() == pointer) {
            return None;
        }
        let members = match ctx.arguments.pointer(pointer) {
            Some(value) if inside.iter().any(|a| crate::provenance::within(a, pointer)) => {
                members(value, pointer)
            }
            _ => Vec::new(),
        };
        if members.is_empty() {
            if self.allowed(ctx, key, pointer, notes) {
                return None;
            }
            return Some(DenyReason::UntrustedOpenWorldArgument {
                argument: pointer.to_string(),
                tool: ctx.tool.to_string(),
                server: ctx.server.to_string(),
            });
        }
        members
            .iter()
            .find_map(|member| self.open_rest(ctx, key, member, inside, notes))
    }
}

/// The pointers of the members of `value` (at `pointer`): an object's
/// keys and an array's indexes, in order; none for any other value.
fn members(value: &serde_json::Value, pointer: &str) -> Vec<String> {
    match value {
        serde_json::Value::Object(map) => map
            .keys()
            .map(|k| format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1")))
            .collect(),
        serde_json::Value::Array(items) => {
            (0..items.len()).map(|i| format!("{pointer}/{i}")).collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
#[path = "integrity_rule_tests.rs"]
mod rule_tests;

#[cfg(test)]
#[path = "integrity_tests.rs"]
mod allowlist_tests;
