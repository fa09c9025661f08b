//! Which retained labels a call reads (step 6): the session, the
//! principal, the lineage and the delegation record of every chain link,
//! planned as keys for the admission batch and read back out of its answer.

use std::collections::{BTreeMap, BTreeSet};

use super::Kernel;
use crate::allowlist::AllowSource;
use crate::error::{StoreError, StoreName};
use crate::label::{delegation_record_id, Integrity, LabelKey};
use crate::provenance::{OutputRules, Provenance};
use crate::reason::DenyReason;
use crate::request::ToolCallRequest;
use crate::trace::DecisionTrace;
use crate::verification::VerifiedCapability;

impl Kernel {
    /// The delegator of `link` among the registered agents, by key.
    fn delegator_of(&self, delegator_key: &str) -> Option<String> {
        self.agent_keys
            .iter()
            .find(|(_, key)| **key == delegator_key)
            .map(|(agent, _)| agent.clone())
    }

    /// Every label key [`Kernel::collect_labels`] may read, for the batch.
    pub(super) fn label_keys(
        &self,
        request: &ToolCallRequest,
        principal: &str,
        verified: &VerifiedCapability,
    ) -> Vec<String> {
        let mut keys: Vec<String> = [
            LabelKey::Session(request.session_id.clone()),
            LabelKey::Principal(principal.to_string()),
            LabelKey::Lineage(verified.root_id.clone()),
        ]
        .iter()
        .map(LabelKey::as_key)
        .collect();
        for link in &request.capability.delegation_chain {
            if let Some(record) = delegation_record_id(link) {
                keys.push(LabelKey::Delegation(record).as_key());
            }
            if let Some(agent) = self.delegator_of(&link.delegator) {
                keys.push(LabelKey::Principal(agent).as_key());
            }
        }
        for source in &request.argument_sources {
            if let Some(record) = &source.record {
                if !keys.contains(record) {
                    keys.push(record.clone());
                }
            }
        }
        for record in self.allowlist_keys(request, principal) {
            if !keys.contains(&record) {
                keys.push(record);
            }
        }
        if self.keeps_unseen_state(request) {
            keys.push(self.kept_key(request));
        }
        keys
    }

    /// Whether the called server may keep what it is sent where the arena
    /// cannot see it: a server whose answers the arena does not know (a
    /// recorded or live MCP server, whose tools compute their answers),
    /// which may show what any earlier call wrote in any later answer.
    pub(super) fn keeps_unseen_state(&self, request: &ToolCallRequest) -> bool {
        self.output_fields
            .get(&(request.server.clone(), request.tool.clone()))
            .is_some_and(|rules| rules.computed)
    }

    /// Whether the answer `content` (its `output` part, for an answer of
    /// the form `{"ok", "output"}`) holds an object key the called tool's
    /// output schema does not name
    /// (`crate::contract::CompiledCatalog::holds_undeclared_key`).
    fn holds_undeclared_key(&self, request: &ToolCallRequest, content: &serde_json::Value) -> bool {
        let output = match content.as_object() {
            Some(answer) if answer.len() == 2 && answer.contains_key("ok") => {
                answer.get("output").unwrap_or(content)
            }
            _ => content,
        };
        match &self.contracts {
            Some(catalog) => catalog.holds_undeclared_key(&request.server, &request.tool, output),
            None => crate::provenance::holds_undeclared_key(output, None),
        }
    }

    /// The label key under which the called server keeps what it is sent:
    /// `server/<id>` of the server whose store it shares
    /// (`shares_state_with`), else of its own id.
    pub(super) fn kept_key(&self, request: &ToolCallRequest) -> String {
        let owner = self
            .output_fields
            .get(&(request.server.clone(), request.tool.clone()))
            .and_then(|rules| rules.kept_with.clone())
            .unwrap_or_else(|| request.server.clone());
        LabelKey::Server(owner).as_key()
    }

    /// What the called server keeps from earlier calls, from the batch's
    /// label answer, into `trace.server_kept` (nothing for a server the
    /// arena models): its answer carries it, whichever part a reader takes.
    pub(super) fn collect_server_kept(
        &self,
        request: &ToolCallRequest,
        sets: &BTreeMap<String, BTreeSet<String>>,
        trace: &mut DecisionTrace,
    ) -> Result<(), DenyReason> {
        if !self.keeps_unseen_state(request) {
            return Ok(());
        }
        let key = self.kept_key(request);
        let Some(set) = sets.get(&key) else {
            return Err(StoreError::unavailable(
                StoreName::Label,
                format!("the batch did not answer label key {key}"),
            )
            .into());
        };
        trace.server_kept = set.iter().cloned().collect();
        // Read like every label key the decision read, so the evidence
        // names where what the answer carries came from.
        trace.label_keys.insert(key, trace.server_kept.clone());
        Ok(())
    }

    /// The rules of the called tool's output, as a reader takes it in:
    /// with no field rule when what its server keeps from earlier calls is
    /// untrusted, since then no part of its answer is the server's own
    /// record.
    pub(super) fn rules_of(&self, request: &ToolCallRequest, kept: &[String]) -> OutputRules {
        self.output_fields
            .get(&(request.server.clone(), request.tool.clone()))
            .cloned()
            .unwrap_or_default()
            .with_server_kept(kept)
    }

    /// The run-time allowlist records a call reads (`crate::allowlist`):
    /// for every source of the called tool's protected arguments, the
    /// record of the caller and of every agent that handed it a value the
    /// call uses, in order.
    fn allowlist_keys(&self, request: &ToolCallRequest, principal: &str) -> Vec<String> {
        let sources: BTreeSet<AllowSource> = self
            .guards
            .iter()
            .flat_map(|g| g.allowlist_sources_for(&request.server, &request.tool))
            .collect();
        if sources.is_empty() {
            return Vec::new();
        }
        let readers: BTreeSet<&str> = std::iter::once(principal)
            .chain(
                request
                    .argument_sources
                    .iter()
                    .filter(|s| s.record.is_some())
                    .filter_map(|s| s.sender.as_deref()),
            )
            .collect();
        let keys: BTreeSet<String> = sources
            .iter()
            .flat_map(|source| readers.iter().map(|reader| source.record_key(reader)))
            .collect();
        keys.into_iter().collect()
    }

    /// Hands the guards the run-time allowlist records the batch read, and
    /// the senders of each handed-over argument. A record the batch did not
    /// answer admits nothing. Each record read goes into
    /// `trace.allowlists_read` with how many values it held.
    pub(super) fn collect_allowlists(
        &self,
        request: &ToolCallRequest,
        principal: &str,
        sets: &BTreeMap<String, BTreeSet<String>>,
        provenance: &mut Provenance,
        trace: &mut DecisionTrace,
    ) {
        for key in self.allowlist_keys(request, principal) {
            let held = sets.get(&key).cloned().unwrap_or_default();
            trace.allowlists_read.insert(key.clone(), held.len() as u64);
            provenance.allowlists.insert(key, held);
        }
        // A sender counts only for a value handed over, whose record
        // admission has read.
        for source in request
            .argument_sources
            .iter()
            .filter(|s| s.record.is_some())
        {
            if let Some(sender) = &source.sender {
                provenance
                    .senders
                    .entry(source.pointer.clone())
                    .or_default()
                    .insert(sender.clone());
            }
        }
    }

    /// The allowlist records a released output of `request` adds to, with
    /// the digests each gains: for every source reading this tool, the
    /// trusted strings at its pattern (`crate::allowlist`), recorded for
    /// the principal that read them. Empty records are left out. Only a
    /// performed output is read: the caller asks for none other.
    pub(super) fn allowlist_records(
        &self,
        request: &ToolCallRequest,
        principal: &str,
        content: &serde_json::Value,
        integrity: Option<&str>,
        server_kept: &[String],
    ) -> Vec<(String, Vec<String>)> {
        let rules = self.rules_of(request, server_kept);
        let base = integrity
            .and_then(Integrity::from_label)
            .unwrap_or(Integrity::Trusted)
            .max(kept_integrity(server_kept));
        let sources: BTreeSet<AllowSource> = self
            .guards
            .iter()
            .flat_map(|g| g.allowlist_sources())
            .filter(|s| s.reads(&request.server, &request.tool))
            .collect();
        sources
            .iter()
            .map(|source| {
                let values = source.trusted_values_said(content, base, &rules, &request.arguments);
                (source.record_key(principal), values.into_iter().collect())
            })
            .filter(|(_, values): &(String, Vec<String>)| !values.is_empty())
            .collect()
    }

    /// The labels the reader of a released output takes in: the output's
    /// label; the integrity of its least trusted part (where the server
    /// declares one part lower than the rest); and what every argument the
    /// output repeats carried (`argument_labels`), since a server may
    /// answer with what it was sent, or, where the server computes its
    /// answers and this one holds text no field rule declares
    /// (`crate::provenance::OutputRules::computed_text`), what every argument carried;
    /// and what its server kept from earlier calls (`trace.server_kept`):
    /// its levels always, its integrity when the answer holds text, which
    /// could carry an instruction (a value taken by reference carries both).
    pub(super) fn read_labels(
        &self,
        request: &ToolCallRequest,
        content: &serde_json::Value,
        label: Option<crate::label::Label>,
        integrity: Option<&str>,
        trace: &DecisionTrace,
    ) -> Vec<String> {
        let (argument_labels, server_kept) = (&trace.argument_labels, &trace.server_kept);
        let rules = self.rules_of(request, server_kept);
        let read = output_read_integrity(content, integrity, &rules);
        let mut joined: Vec<String> = label
            .iter()
            .map(|l| l.as_str().to_string())
            .chain(read)
            .collect();
        let text = rules.computed_text(content);
        let carried: BTreeSet<String> = if text {
            argument_labels.values().flatten().cloned().collect()
        } else {
            crate::provenance::echoed_labels(&request.arguments, argument_labels, content)
        };
        // What the server kept lowers a reader whose answer holds text, or a
        // key its tool's output schema does not name: kept text may come
        // back as a key (a note's title, a set of tags).
        let kept_text =
            text || (!server_kept.is_empty() && self.holds_undeclared_key(request, content));
        let kept = server_kept.iter().filter(|label| {
            label.as_str() != crate::label::Label::Public.as_str()
                && (kept_text || !crate::label::is_integrity_label(label))
        });
        for label in carried.iter().chain(kept) {
            if !joined.contains(label) {
                joined.push(label.clone());
            }
        }
        joined
    }

    /// The labels of each argument built from an earlier value
    /// ([`crate::provenance::argument_labels`]): the output labels its
    /// source names, joined with what its hand-over record holds in
    /// `sets`. Each record read is kept in `trace` like every label key,
    /// and the arguments' labels in `trace.argument_labels`; a record that
    /// holds nothing (never written) denies, naming the argument.
    pub(super) fn collect_argument_labels(
        &self,
        request: &ToolCallRequest,
        sets: &BTreeMap<String, BTreeSet<String>>,
        trace: &mut DecisionTrace,
    ) -> Result<BTreeMap<String, BTreeSet<String>>, DenyReason> {
        if request.argument_sources.is_empty() {
            return Ok(BTreeMap::new());
        }
        for source in &request.argument_sources {
            if let Some(record) = &source.record {
                let set = sets.get(record).cloned().unwrap_or_default();
                trace
                    .label_keys
                    .insert(record.clone(), set.into_iter().collect());
            }
        }
        let labels = crate::provenance::argument_labels(&request.argument_sources, &|key| {
            sets.get(key).cloned()
        })
        .map_err(|(argument, record)| DenyReason::ArgumentUnrecorded { argument, record })?;
        trace.argument_labels = labels
            .iter()
            .map(|(pointer, set)| (pointer.clone(), set.iter().cloned().collect()))
            .collect();
        Ok(labels)
    }

    /// Reads every place a label is kept for this call out of `sets`,
    /// recording each key in `trace`, and answers the non-empty sets the
    /// guards see.
    ///
    /// The session, the principal and the lineage are read (a fresh session
    /// id of the caller's choosing washes neither the principal nor the
    /// lineage), and the delegation record of every link of the presented
    /// chain: what each delegator held when it delegated, kept under the
    /// link's own digest ([`crate::label::delegation_record_id`]). A link
    /// with no record was signed outside the run (a record always holds at
    /// least [`crate::label::DELEGATION_RECORD_FLOOR`]); for it the
    /// delegator's principal labels are read now instead, which holds
    /// everything it held then, so a hand-made link carries no less taint
    /// than a recorded one. The guards see a link's labels under
    /// `delegation/<child id>` either way, so reasons stay readable; the
    /// trace names the keys actually consulted.
    pub(super) fn collect_labels(
        &self,
        request: &ToolCallRequest,
        principal: &str,
        verified: &VerifiedCapability,
        sets: &BTreeMap<String, BTreeSet<String>>,
        trace: &mut DecisionTrace,
    ) -> Result<BTreeMap<String, BTreeSet<String>>, DenyReason> {
        let mut read = |key: String| -> Result<BTreeSet<String>, DenyReason> {
            let Some(set) = sets.get(&key) else {
                return Err(StoreError::unavailable(
                    StoreName::Label,
                    format!("the batch did not answer label key {key}"),
                )
                .into());
            };
            trace
                .label_keys
                .insert(key, set.iter().cloned().collect::<Vec<_>>());
            Ok(set.clone())
        };
        let mut labels = BTreeMap::new();
        for key in [
            LabelKey::Session(request.session_id.clone()),
            LabelKey::Principal(principal.to_string()),
            LabelKey::Lineage(verified.root_id.clone()),
        ] {
            let key = key.as_key();
            let set = read(key.clone())?;
            if !set.is_empty() {
                labels.insert(key, set);
            }
        }
        for link in &request.capability.delegation_chain {
            let key = format!("delegation/{}", link.child_id);
            let mut set = match delegation_record_id(link) {
                Some(record) => read(LabelKey::Delegation(record).as_key())?,
                None => BTreeSet::new(),
            };
            if set.is_empty() {
                if let Some(agent) = self.delegator_of(&link.delegator) {
                    set = read(LabelKey::Principal(agent).as_key())?;
                }
            }
            if !set.is_empty() {
                labels.insert(key, set);
            }
        }
        Ok(labels)
    }
}

/// The integrity a reader of `content` takes in: the lowest of its parts',
/// where the tool's `[[servers.fields]]` rules give a part its own, over
/// the output's `integrity` (as a label; `None` when trusted).
fn output_read_integrity(
    content: &serde_json::Value,
    integrity: Option<&str>,
    rules: &OutputRules,
) -> Option<String> {
    // A label that is no integrity level is kept as it is: the closing
    // batch refuses it.
    let base = match integrity.map(Integrity::from_label) {
        Some(None) => return integrity.map(str::to_string),
        Some(Some(level)) => level,
        None => Integrity::Trusted,
    };
    if rules.fields.is_empty() {
        return integrity.map(str::to_string);
    }
    crate::provenance::integrity_at(content, "", base, &rules.fields).label()
}

/// The lowest integrity among `labels`.
pub(super) fn kept_integrity(labels: &[String]) -> Integrity {
    labels
        .iter()
        .filter_map(|l| Integrity::from_label(l))
        .max()
        .unwrap_or_default()
}
