//! The guard pipeline: one trait, eight guards, configured from data.
//!
//! A guard sees a call that has already passed the capability checks and
//! answers allow, deny or pending approval; post-invocation guards also see
//! the tool's output and may deny it or rewrite it (a sanitized allow).
//! Guards are pure: everything they read (the session journal, retained
//! labels, monetary budgets' totals) is handed to them in a [`GuardContext`] by the kernel, which reads
//! only what a guard declares in [`GuardNeeds`]. A guard error denies.
//!
//! [`GuardSpec`] is the data form (as a scenario declares it) and
//! [`GuardSpec::build`] validates the configuration, refusing unknown keys by
//! name, so a bad configuration is refused at load rather than at the first
//! call. In `observe` mode the kernel records what a guard would have done
//! in the receipt's `observed` list and carries on.
//!
//! Module map: `forbidden_path`, `path_allowlist`, `behavioral_sequence`,
//! `information_flow`, `integrity`, `prompt_injection`, `approval`,
//! `secret_redaction`.

pub mod approval;
pub mod behavioral_sequence;
pub mod forbidden_path;
pub mod information_flow;
pub mod integrity;
pub mod path_allowlist;
pub mod prompt_injection;
pub mod secret_redaction;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::ToolCatalog;
use crate::error::KernelError;
use crate::reason::DenyReason;
use crate::stores::JournalEntry;

/// The guards the kernel ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GuardKind {
    /// Deny-list of path globs.
    ForbiddenPath,
    /// Allow-list of read and write path globs.
    PathAllowlist,
    /// Session rules: a tool requires an allowed predecessor.
    BehavioralSequence,
    /// Retained labels against destination clearances.
    InformationFlow,
    /// Consequential tools refused to a context holding untrusted content.
    Integrity,
    /// Injection detectors over arguments and output.
    PromptInjection,
    /// Human approval above a threshold.
    Approval,
    /// Post-invocation credential redaction.
    SecretRedaction,
}

impl GuardKind {
    /// Every kind, in documentation order.
    pub const ALL: [GuardKind; 8] = [
        GuardKind::ForbiddenPath,
        GuardKind::PathAllowlist,
        GuardKind::BehavioralSequence,
        GuardKind::InformationFlow,
        GuardKind::Integrity,
        GuardKind::PromptInjection,
        GuardKind::Approval,
        GuardKind::SecretRedaction,
    ];

    /// Parses the kebab-case name a scenario uses.
    pub fn parse(text: &str) -> Result<GuardKind, KernelError> {
        GuardKind::ALL
            .into_iter()
            .find(|k| k.as_str() == text)
            .ok_or_else(|| KernelError::UnknownGuardKind {
                kind: text.to_string(),
            })
    }

    /// The kebab-case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            GuardKind::ForbiddenPath => "forbidden-path",
            GuardKind::PathAllowlist => "path-allowlist",
            GuardKind::BehavioralSequence => "behavioral-sequence",
            GuardKind::InformationFlow => "information-flow",
            GuardKind::Integrity => "integrity",
            GuardKind::PromptInjection => "prompt-injection",
            GuardKind::Approval => "approval",
            GuardKind::SecretRedaction => "secret-redaction",
        }
    }
}

impl fmt::Display for GuardKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for GuardKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for GuardKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        GuardKind::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Whether a guard's answer counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuardMode {
    /// The guard's deny or approval request stops the call.
    #[default]
    Enforce,
    /// The guard's answer is recorded in the receipt and never stops the call.
    Observe,
}

impl GuardMode {
    /// Parses `enforce` or `observe`.
    pub fn parse(text: &str) -> Result<GuardMode, KernelError> {
        match text {
            "enforce" => Ok(GuardMode::Enforce),
            "observe" => Ok(GuardMode::Observe),
            other => Err(KernelError::UnknownGuardMode {
                mode: other.to_string(),
            }),
        }
    }

    /// The lowercase name.
    pub fn as_str(&self) -> &'static str {
        match self {
            GuardMode::Enforce => "enforce",
            GuardMode::Observe => "observe",
        }
    }
}

/// A guard as data: what a scenario declares and a policy file records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardSpec {
    /// Names the guard in reasons and receipts.
    pub id: String,
    /// Which guard.
    pub kind: GuardKind,
    /// Enforce or observe.
    #[serde(default)]
    pub mode: GuardMode,
    /// Kind-specific configuration (see each guard module).
    #[serde(default = "empty_object")]
    pub config: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

impl GuardSpec {
    /// Whether the configuration names no tools where its kind can take
    /// them from the tools' effects: an `integrity` guard without
    /// `consequential`, an `information-flow` guard without `clearance`.
    pub fn takes_tools_from_effects(&self) -> bool {
        let names = |key: &str| self.config.get(key).is_some();
        match self.kind {
            GuardKind::Integrity => !names("consequential"),
            GuardKind::InformationFlow => !names("clearance"),
            _ => false,
        }
    }

    /// The spec as a kernel serving `catalog` builds it. A configuration
    /// that names its tools keeps its meaning exactly; one that names none
    /// takes them from the tools' annotations: the `integrity` guard's
    /// consequential tools are every tool that is not read-only or that
    /// reaches an open world, and the `information-flow` guard clears every
    /// server with an open-world tool for `public` only. Without a catalog
    /// nothing is filled in, so such a configuration is refused as before.
    pub fn with_effects(&self, catalog: Option<&ToolCatalog>) -> GuardSpec {
        let mut spec = self.clone();
        let Some(catalog) = catalog.filter(|_| self.takes_tools_from_effects()) else {
            return spec;
        };
        if spec.config.is_null() {
            spec.config = empty_object();
        }
        let Value::Object(config) = &mut spec.config else {
            return spec;
        };
        let mut chosen = serde_json::Map::new();
        for (server, tools) in catalog {
            let picked: Vec<Value> = tools
                .values()
                .filter(|tool| match self.kind {
                    GuardKind::Integrity => {
                        !tool.annotations.read_only_hint || tool.annotations.open_world_hint
                    }
                    _ => tool.annotations.open_world_hint,
                })
                .map(|tool| Value::String(tool.name.clone()))
                .collect();
            if picked.is_empty() {
                continue;
            }
            let entry = match self.kind {
                GuardKind::Integrity => Value::Array(picked),
                _ => Value::String(crate::label::Label::Public.as_str().to_string()),
            };
            chosen.insert(server.clone(), entry);
        }
        let key = match self.kind {
            GuardKind::Integrity => "consequential",
            _ => "clearance",
        };
        config.insert(key.to_string(), Value::Object(chosen));
        spec
    }

    /// Validates the configuration and builds the guard.
    pub fn build(&self) -> Result<Box<dyn Guard>, KernelError> {
        let meta = GuardMeta {
            id: self.id.clone(),
            mode: self.mode,
        };
        let config = if self.config.is_null() {
            empty_object()
        } else {
            self.config.clone()
        };
        Ok(match self.kind {
            GuardKind::ForbiddenPath => Box::new(forbidden_path::ForbiddenPathGuard::new(
                meta,
                parse_config(&self.id, config)?,
            )?),
            GuardKind::PathAllowlist => Box::new(path_allowlist::PathAllowlistGuard::new(
                meta,
                parse_config(&self.id, config)?,
            )?),
            GuardKind::BehavioralSequence => {
                Box::new(behavioral_sequence::BehavioralSequenceGuard::new(
                    meta,
                    parse_config(&self.id, config)?,
                )?)
            }
            GuardKind::InformationFlow => Box::new(information_flow::InformationFlowGuard::new(
                meta,
                parse_config(&self.id, config)?,
            )?),
            GuardKind::Integrity => Box::new(integrity::IntegrityGuard::new(
                meta,
                parse_config(&self.id, config)?,
            )?),
            GuardKind::PromptInjection => Box::new(prompt_injection::PromptInjectionGuard::new(
                meta,
                parse_config(&self.id, config)?,
            )?),
            GuardKind::Approval => Box::new(approval::ApprovalGuard::new(
                meta,
                parse_config(&self.id, config)?,
            )?),
            GuardKind::SecretRedaction => Box::new(secret_redaction::SecretRedactionGuard::new(
                meta,
                parse_config(&self.id, config)?,
            )?),
        })
    }
}

/// Deserialises a guard config, turning serde's complaint (which names an
/// unknown or missing key) into a guard-config error naming the guard.
fn parse_config<T: DeserializeOwned>(guard: &str, config: Value) -> Result<T, KernelError> {
    serde_json::from_value(config).map_err(|e| KernelError::GuardConfig {
        guard: guard.to_string(),
        message: e.to_string(),
    })
}

/// A guard-config error built by a guard's own validation.
pub(crate) fn config_error(guard: &GuardMeta, message: impl Into<String>) -> KernelError {
    KernelError::GuardConfig {
        guard: guard.id.clone(),
        message: message.into(),
    }
}

/// Identity and mode every built guard carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardMeta {
    /// The configured id.
    pub id: String,
    /// Enforce or observe.
    pub mode: GuardMode,
}

/// What state a guard reads, so the kernel reads only that.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GuardNeeds {
    /// The session journal.
    pub journal: bool,
    /// Retained labels for the session and lineage.
    pub labels: bool,
    /// Monetary budgets' totals with the call (see [`MoneyTotal`]), which
    /// exist only once admission has held them.
    pub money: bool,
}

/// A monetary budget's running total with the call being decided, as
/// admission held it (in the call's window, with every earlier held or
/// spent amount).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoneyTotal {
    /// The total, this call's amount included.
    pub total: rust_decimal::Decimal,
    /// The budget's currency.
    pub currency: String,
}

/// Everything a guard may look at.
#[derive(Debug, Clone, Copy)]
pub struct GuardContext<'a> {
    /// Server called.
    pub server: &'a str,
    /// Tool called.
    pub tool: &'a str,
    /// The call's arguments.
    pub arguments: &'a Value,
    /// The calling agent.
    pub agent_id: &'a str,
    /// The calling session.
    pub session_id: &'a str,
    /// Earlier decided calls of the session (empty unless the guard needs it).
    pub journal: &'a [JournalEntry],
    /// Retained labels by label key (empty unless the guard needs it).
    pub labels: &'a BTreeMap<String, BTreeSet<String>>,
    /// Totals of the monetary budgets the call was held against, by
    /// budget id (empty after dispatch and for a call no budget counts).
    pub money: &'a BTreeMap<String, MoneyTotal>,
    /// Filesystem roots of the owning session, when the caller knows them.
    pub session_filesystem_roots: Option<&'a [String]>,
    /// The caller's role and where each argument's value came from
    /// ([`crate::provenance::NO_PROVENANCE`] when nothing is known).
    pub provenance: &'a crate::provenance::Provenance,
    /// What the injection reader found in the called tool's definition in
    /// force at the decision (`None` for a clean one, or when the kernel
    /// holds no catalog, or after dispatch).
    pub definition: Option<&'a prompt_injection::DefinitionFinding>,
}

/// A guard's answer before dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardVerdict {
    /// Nothing to object to.
    Allow,
    /// Refused, with the reason.
    Deny(DenyReason),
    /// A human must approve first, with the reason.
    PendingApproval(DenyReason),
}

/// A guard's answer on a tool's output.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputVerdict {
    /// Release the output as it is.
    Pass,
    /// Withhold the output and deny, with the reason.
    Deny(DenyReason),
    /// Release this rewritten output instead (a sanitized allow), with what changed.
    Rewrite(Value, String),
}

/// A guard that could not decide; the kernel denies.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GuardError(pub String);

/// One guard of the pipeline.
pub trait Guard: Send + Sync + fmt::Debug {
    /// Identity and mode.
    fn meta(&self) -> &GuardMeta;
    /// Which guard.
    fn kind(&self) -> GuardKind;
    /// State the guard reads.
    fn needs(&self) -> GuardNeeds {
        GuardNeeds::default()
    }
    /// The monetary budgets whose totals the guard reads, so the kernel
    /// can refuse a configuration naming a budget it does not keep.
    fn money_budgets(&self) -> Vec<&str> {
        Vec::new()
    }
    /// Whether the guard inspects output (runs in the post-invocation pipeline).
    fn inspects_output(&self) -> bool {
        false
    }
    /// Whether `tool` on `server` is consequential to this guard, for a
    /// guard that names consequential tools (`integrity`); `None` for any
    /// other. A kernel refuses a quarantined reader every consequential tool.
    fn consequential(&self, _server: &str, _tool: &str) -> Option<bool> {
        None
    }
    /// Every run-time allowlist source the guard reads
    /// (`crate::allowlist`): a kernel that releases an output of one of
    /// their tools records the trusted values at their patterns.
    fn allowlist_sources(&self) -> Vec<crate::allowlist::AllowSource> {
        Vec::new()
    }
    /// The run-time allowlist sources of the protected arguments of `tool`
    /// on `server`, whose records admission reads for a call of it.
    fn allowlist_sources_for(
        &self,
        _server: &str,
        _tool: &str,
    ) -> Vec<crate::allowlist::AllowSource> {
        Vec::new()
    }
    /// Decides on a call before dispatch.
    fn check_request(&self, ctx: &GuardContext<'_>) -> Result<GuardVerdict, GuardError>;
    /// Decides as [`Guard::check_request`] does and adds to `admitted`
    /// each untrusted protected argument a run-time allowlist let through,
    /// as `POINTER on RECORD`, for the decision trace; a guard that reads
    /// no allowlist adds nothing.
    fn check_request_noting(
        &self,
        ctx: &GuardContext<'_>,
        _admitted: &mut Vec<String>,
    ) -> Result<GuardVerdict, GuardError> {
        self.check_request(ctx)
    }
    /// Decides on a tool's output after dispatch.
    fn check_output(
        &self,
        _ctx: &GuardContext<'_>,
        _output: &Value,
    ) -> Result<OutputVerdict, GuardError> {
        Ok(OutputVerdict::Pass)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Every kind name round-trips and an unknown kind is refused by name.
    #[test]
    fn kind_names() {
        for kind in GuardKind::ALL {
            assert_eq!(GuardKind::parse(kind.as_str()).unwrap(), kind);
        }
        let err = GuardKind::parse("forbidden_path").unwrap_err();
        assert!(err.to_string().contains("forbidden_path"));
    }

    // Every kind displays as its name, and both modes round-trip; an unknown mode is refused.
    #[test]
    fn kinds_display_and_modes_round_trip() {
        for kind in GuardKind::ALL {
            assert_eq!(kind.to_string(), kind.as_str());
        }
        assert_eq!(GuardKind::ForbiddenPath.to_string(), "forbidden-path");
        for (text, mode) in [
            ("enforce", GuardMode::Enforce),
            ("observe", GuardMode::Observe),
        ] {
            assert_eq!(GuardMode::parse(text).unwrap(), mode);
            assert_eq!(mode.as_str(), text);
        }
        assert!(GuardMode::parse("audit").is_err());
    }

    // An unknown config key is refused at build time and the message names it.
    #[test]
    fn unknown_config_key_refused() {
        for kind in GuardKind::ALL {
            let spec = GuardSpec {
                id: "g".into(),
                kind,
                mode: GuardMode::Enforce,
                config: json!({"bogus_key": 1}),
            };
            let err = spec.build().unwrap_err().to_string();
            assert!(err.contains("bogus_key"), "{kind}: {err}");
        }
    }

    // The spec itself deserialises from scenario-shaped JSON with mode defaulting to enforce.
    #[test]
    fn spec_from_json() {
        let spec: GuardSpec = serde_json::from_value(json!({
            "id": "no-dotfiles", "kind": "forbidden-path", "config": {"globs": ["**/.env"]}
        }))
        .unwrap();
        assert_eq!(spec.mode, GuardMode::Enforce);
        assert!(spec.build().is_ok());
    }

    // A guard that names no tools takes them from the annotations (integrity: not read-only or open-world; information flow: open-world servers at public); one that names its tools keeps them; without a catalog nothing is filled in and the guard is refused as before.
    #[test]
    fn guards_without_tools_take_them_from_effects() {
        use crate::contract::{ToolAnnotations, ToolCatalog, ToolContract};
        let tool = |name: &str, read_only_hint: bool, open_world_hint: bool| ToolContract {
            name: name.to_string(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            annotations: ToolAnnotations {
                read_only_hint,
                destructive_hint: false,
                idempotent_hint: true,
                open_world_hint,
            },
        };
        let mut catalog = ToolCatalog::new();
        catalog.insert(
            "files".to_string(),
            [
                tool("read_file", true, false),
                tool("write_file", false, false),
            ]
            .into_iter()
            .map(|t| (t.name.clone(), t))
            .collect(),
        );
        catalog.insert(
            "web".to_string(),
            [tool("fetch", true, true)]
                .into_iter()
                .map(|t| (t.name.clone(), t))
                .collect(),
        );
        let spec = |kind, config| GuardSpec {
            id: "g".to_string(),
            kind,
            mode: GuardMode::Enforce,
            config,
        };
        let integrity = spec(
            GuardKind::Integrity,
            serde_json::json!({"on_untrusted": "deny"}),
        );
        assert!(integrity.takes_tools_from_effects());
        assert!(integrity.build().is_err(), "no tools and no catalog");
        let filled = integrity.with_effects(Some(&catalog));
        assert_eq!(
            filled.config["consequential"],
            serde_json::json!({"files": ["write_file"], "web": ["fetch"]})
        );
        assert!(filled.build().is_ok());
        let flow = spec(GuardKind::InformationFlow, Value::Null);
        assert_eq!(
            flow.with_effects(Some(&catalog)).config,
            serde_json::json!({"clearance": {"web": "public"}})
        );
        let named = spec(
            GuardKind::Integrity,
            serde_json::json!({"consequential": {"files": ["read_file"]}}),
        );
        assert!(!named.takes_tools_from_effects());
        assert_eq!(named.with_effects(Some(&catalog)), named);
        assert_eq!(integrity.with_effects(None), integrity);
    }
}
