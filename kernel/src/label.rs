//! Information-flow labels and the keys they are retained under.
//!
//! A label classifies what a tool returned. Levels are totally ordered,
//! `public < internal < confidential < restricted`, and joining two labels
//! keeps the higher one. The kernel joins the label of every classified read
//! into three retained keys (the session, the principal that read it, and the
//! lineage, i.e. the root capability its chain descends from) before it
//! releases the read's result, so taint reaches delegated work and outlives a
//! restarted node when the label store is durable. Unknown label names are
//! refused wherever they enter, never guessed.
//!
//! Two moves carry labels between principals without a read, and
//! [`LabelCarry`] is the one statement of which keys each reads and writes:
//! a message (the sender's principal labels, plus what the output it
//! forwards or the value it hands over carries, read as a call reads its
//! arguments' sources, hand-over records included, reach the receiver's
//! principal and session) and a delegation
//! (the delegator's principal labels at the time of delegation are kept
//! under `delegation/<child id>/<link digest>`, which admission reads for
//! every link of a presented chain; see [`delegation_record_id`]).
//!
//! Integrity is kept in the same sets under its own prefix: a read of
//! content from an untrusted source joins `integrity:untrusted` into the
//! same keys, and messages and delegations carry it by the same
//! [`LabelCarry`] rules. The prefix cannot collide with a confidentiality
//! level, and trusted content writes nothing, so runs that declare no
//! integrity keep exactly the labels (and bundle bytes) they had.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::batch::{BatchStore, OpAnswer, StoreOp};
use crate::canonical::canonical_bytes;
use crate::error::{StoreError, StoreName};
use crate::provenance::ArgumentSource;
use crate::token::DelegationLink;

/// A classification level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Label {
    /// Anyone may see it.
    Public,
    /// Inside the organisation only.
    Internal,
    /// A named audience only.
    Confidential,
    /// The most restricted level.
    Restricted,
}

impl Label {
    /// Every level in ascending order.
    pub const ALL: [Label; 4] = [
        Label::Public,
        Label::Internal,
        Label::Confidential,
        Label::Restricted,
    ];

    /// Parses a level name (lowercase, as scenarios and tool servers write it).
    pub fn parse(text: &str) -> Option<Label> {
        Label::ALL.into_iter().find(|l| l.as_str() == text)
    }

    /// The level name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Label::Public => "public",
            Label::Internal => "internal",
            Label::Confidential => "confidential",
            Label::Restricted => "restricted",
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How far content can be trusted to say what its reader should do.
/// Ordered from most to least trusted, so joining keeps the lower integrity
/// (the higher variant); more levels can be added between the two.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Integrity {
    /// From the user or a source the policy trusts; the default, and never
    /// stored, so an untainted key stays empty.
    #[default]
    Trusted,
    /// From a source anyone can write to (mail, web pages, shared files).
    Untrusted,
}

/// The prefix integrity labels carry in a label set, which no
/// confidentiality level starts with.
pub const INTEGRITY_PREFIX: &str = "integrity:";

impl Integrity {
    /// Every level, most trusted first.
    pub const ALL: [Integrity; 2] = [Integrity::Trusted, Integrity::Untrusted];

    /// Parses a level name as scenarios write it (`trusted`, `untrusted`).
    pub fn parse(text: &str) -> Option<Integrity> {
        Integrity::ALL.into_iter().find(|l| l.as_str() == text)
    }

    /// The level name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Integrity::Trusted => "trusted",
            Integrity::Untrusted => "untrusted",
        }
    }

    /// The label as label sets keep it (`integrity:untrusted`), or `None`
    /// for trusted content, which lowers nothing.
    pub fn label(&self) -> Option<String> {
        match self {
            Integrity::Trusted => None,
            other => Some(format!("{INTEGRITY_PREFIX}{}", other.as_str())),
        }
    }

    /// Reads an `integrity:<level>` label back; `None` for anything else.
    pub fn from_label(label: &str) -> Option<Integrity> {
        Integrity::parse(label.strip_prefix(INTEGRITY_PREFIX)?)
    }
}

impl fmt::Display for Integrity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a stored label name is known: a confidentiality level or an
/// integrity label. Every place a label enters the stores checks this, so
/// a name is refused rather than guessed.
pub fn is_known_label(name: &str) -> bool {
    Label::parse(name).is_some() || Integrity::from_label(name).is_some()
}

/// Whether a stored label is an integrity label (which the
/// confidentiality guard leaves to the integrity guard).
pub fn is_integrity_label(name: &str) -> bool {
    name.starts_with(INTEGRITY_PREFIX)
}

/// Where a label is retained.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum LabelKey {
    /// Everything one session has read.
    Session(String),
    /// Everything one principal (agent) has read, across sessions.
    Principal(String),
    /// Everything read under one root capability, across delegations.
    Lineage(String),
    /// What the delegator of one delegation link held when it delegated,
    /// keyed by [`delegation_record_id`] of the link.
    Delegation(String),
    /// The labels of one handed-over value, keyed by
    /// [`crate::handover::record_key`] (`handover/<receiver>/<step>`).
    HandOver(String),
    /// What the calls that may write sent one server whose state the arena
    /// does not model (a recorded or live MCP server), by server id: such a
    /// server may show what it keeps in any later answer, to any caller.
    Server(String),
}

impl LabelKey {
    /// The key as stores persist it: `session/<id>`, `principal/<id>`,
    /// `lineage/<id>`, `delegation/<id>`, `server/<id>`.
    pub fn as_key(&self) -> String {
        match self {
            LabelKey::Session(id) => format!("session/{id}"),
            LabelKey::Principal(id) => format!("principal/{id}"),
            LabelKey::Lineage(id) => format!("lineage/{id}"),
            LabelKey::Delegation(id) => format!("delegation/{id}"),
            LabelKey::HandOver(key) => key.clone(),
            LabelKey::Server(id) => format!("server/{id}"),
        }
    }
}

/// The label every delegation record holds besides the delegator's own, so
/// that admission can tell a link recorded at delegation (never empty) from
/// a link signed outside the run, which has no record. `public` never
/// exceeds any clearance, so the floor changes no verdict.
pub const DELEGATION_RECORD_FLOOR: Label = Label::Public;

/// The id a delegation link's record is kept under: the child capability
/// id, a slash, and the first 32 hex digits of the SHA-256 of the signed
/// link's canonical JSON. The child id keeps the key readable; the digest
/// ties the record to this very link, so a link signed outside the run that
/// reuses the child id of a clean record (its own earlier one, or another
/// delegator's) finds no record and falls back to its delegator's labels.
/// `None` only for a link with no canonical form, which verification
/// already refuses.
pub fn delegation_record_id(link: &DelegationLink) -> Option<String> {
    let value = serde_json::to_value(link).ok()?;
    let digest = Sha256::digest(canonical_bytes(&value).ok()?);
    Some(format!("{}/{}", link.child_id, &hex::encode(digest)[..32]))
}

/// One move of labels between retained keys: the union of the labels held
/// under `from`, plus `extra`, plus what the value's `sources` carry, is
/// joined into every key of `into`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelCarry {
    /// Keys whose labels are carried.
    pub from: Vec<LabelKey>,
    /// Labels carried besides those read (already known level names).
    pub extra: Vec<String>,
    /// Keys the labels are joined into.
    pub into: Vec<LabelKey>,
    /// What the carried value (a hand-over's value, a forwarded output) was
    /// built from, read as a call's arguments are
    /// ([`crate::provenance::argument_labels`]): the labels each source
    /// names, and what each hand-over record it names holds. A record
    /// that holds nothing refuses the move ([`Unrecorded`]).
    pub sources: Vec<ArgumentSource>,
}

/// A source of a carried value that names a hand-over record holding
/// nothing (never written): its labels are unknown, so nothing is carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrecorded {
    /// The JSON pointer of the source within the value (`""` for the
    /// whole).
    pub pointer: String,
    /// The record key it names.
    pub record: String,
}

impl LabelCarry {
    /// A message from `sender` to `receiver`: the sender's principal labels
    /// (a tainted sender taints what it says) and the label of the output it
    /// forwards, if any, reach the receiver's principal and its session.
    pub fn message(
        sender: &str,
        receiver: &str,
        receiver_session: &str,
        output_label: Option<&str>,
    ) -> Self {
        LabelCarry {
            from: vec![LabelKey::Principal(sender.to_string())],
            extra: output_label.map(str::to_string).into_iter().collect(),
            into: vec![
                LabelKey::Principal(receiver.to_string()),
                LabelKey::Session(receiver_session.to_string()),
            ],
            sources: Vec::new(),
        }
    }

    /// A delegation by `delegator` signing `link`: the delegator's
    /// principal labels at this moment, with [`DELEGATION_RECORD_FLOOR`],
    /// are kept under the link's record ([`delegation_record_id`]).
    pub fn delegation(delegator: &str, link: &DelegationLink) -> Result<Self, StoreError> {
        let record = delegation_record_id(link).ok_or_else(|| StoreError::Refused {
            store: StoreName::Label,
            detail: format!(
                "delegation link {} has no canonical form; nothing was recorded",
                link.child_id
            ),
        })?;
        Ok(LabelCarry {
            from: vec![LabelKey::Principal(delegator.to_string())],
            extra: vec![DELEGATION_RECORD_FLOOR.as_str().to_string()],
            into: vec![LabelKey::Delegation(record)],
            sources: Vec::new(),
        })
    }

    /// A hand-over of a schema-checked value from `sender` to `receiver`
    /// by message step `step`: the sender's principal labels and the
    /// labels of the outputs the value was built from (`value_labels`),
    /// with [`DELEGATION_RECORD_FLOOR`] so a written record is never empty,
    /// are kept under the value's record. When `endorsed` (a quarantined
    /// reader handing over to a planner, the one exception to message
    /// tainting) nothing else is written: the receiver's principal and
    /// session stay as they are. Otherwise the receiver is tainted exactly
    /// as by [`LabelCarry::message`], and the record is kept besides.
    ///
    /// `sender_chose` is whether the sender wrote the value (wholly or in
    /// part, or as an output's part that repeats what its call sent).
    /// Only an endorsed value the sender did not choose leaves the
    /// sender's principal out: a value that is wholly one part of an
    /// output carries that part's labels alone. A hand-over that is not
    /// endorsed carries every label the sender's principal holds, whoever
    /// chose the value, as any message does.
    pub fn handover(
        sender: &str,
        receiver: &str,
        step: &str,
        value_labels: &[String],
        endorsed: bool,
        sender_chose: bool,
    ) -> Self {
        let mut into = Vec::new();
        if !endorsed {
            into.push(LabelKey::Principal(receiver.to_string()));
            into.push(LabelKey::Session(receiver.to_string()));
        }
        into.push(LabelKey::HandOver(crate::handover::record_key(
            receiver, step,
        )));
        let mut extra: Vec<String> = value_labels.to_vec();
        extra.push(DELEGATION_RECORD_FLOOR.as_str().to_string());
        LabelCarry {
            from: if sender_chose || !endorsed {
                vec![LabelKey::Principal(sender.to_string())]
            } else {
                Vec::new()
            },
            extra,
            into,
            sources: Vec::new(),
        }
    }

    /// The move carrying, besides, what the value's `sources` carry: a
    /// message or hand-over carries everything its sources carry,
    /// including the records of earlier hand-overs they were built from.
    pub fn with_sources(mut self, sources: &[ArgumentSource]) -> Self {
        self.sources = sources.to_vec();
        self
    }

    /// The keys read, as stores persist them: the `from` keys, then every
    /// hand-over record a source names, each once.
    pub fn from_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.from.iter().map(LabelKey::as_key).collect();
        for record in self.sources.iter().filter_map(|s| s.record.as_ref()) {
            if !keys.contains(record) {
                keys.push(record.clone());
            }
        }
        keys
    }

    /// The keys written, as stores persist them.
    pub fn into_keys(&self) -> Vec<String> {
        self.into.iter().map(LabelKey::as_key).collect()
    }

    /// The labels to join, given what each key of [`Self::from_keys`]
    /// holds (`read`, by the key as stores persist it): what the `from`
    /// keys hold, the `extra` labels, and what the sources carry; or the
    /// first source whose hand-over record holds nothing.
    pub fn carried(
        &self,
        read: &BTreeMap<String, BTreeSet<String>>,
    ) -> Result<BTreeSet<String>, Unrecorded> {
        let sources =
            crate::provenance::argument_labels(&self.sources, &|key| read.get(key).cloned())
                .map_err(|(pointer, record)| Unrecorded { pointer, record })?;
        Ok(self
            .from
            .iter()
            .filter_map(|key| read.get(&key.as_key()))
            .flatten()
            .cloned()
            .chain(self.extra.iter().cloned())
            .chain(sources.into_values().flatten())
            .collect())
    }

    /// The labels of `carried` a step reports: a delegation record's floor
    /// is bookkeeping, not something the delegator held.
    pub fn reported(&self, carried: &BTreeSet<String>) -> Vec<String> {
        let record = self
            .into
            .iter()
            .any(|k| matches!(k, LabelKey::Delegation(_) | LabelKey::HandOver(_)));
        carried
            .iter()
            .filter(|l| !(record && l.as_str() == DELEGATION_RECORD_FLOOR.as_str()))
            .cloned()
            .collect()
    }

    /// Applies the move to authority state through `store`, in two
    /// batches (the read, then every join), and answers the labels joined.
    /// An unknown label name is refused before anything is written.
    pub fn apply(&self, store: &mut dyn BatchStore) -> Result<BTreeSet<String>, StoreError> {
        let read = store.run(vec![StoreOp::ReadLabels {
            keys: self.from_keys(),
            stop_unless_empty: false,
        }]);
        let sets = match read.into_iter().next() {
            Some(Ok(OpAnswer::Labels(sets))) => sets,
            Some(Err(error)) => return Err(error),
            _ => return Err(unexpected_answer("label read")),
        };
        let carried = self
            .carried(&sets)
            .map_err(|unrecorded| StoreError::Refused {
                store: StoreName::Label,
                detail: format!(
                    "hand-over record {} holds nothing; nothing was carried",
                    unrecorded.record
                ),
            })?;
        if let Some(unknown) = carried.iter().find(|l| !is_known_label(l)) {
            return Err(StoreError::Refused {
                store: StoreName::Label,
                detail: format!("label {unknown:?} is not a known level; nothing was carried"),
            });
        }
        let joins: Vec<StoreOp> = carried
            .iter()
            .map(|label| StoreOp::JoinLabels {
                keys: self.into_keys(),
                label: label.clone(),
            })
            .collect();
        let wanted = joins.len();
        let answers = store.run(joins);
        if let Some(Err(error)) = answers.iter().find(|a| a.is_err()) {
            return Err(error.clone());
        }
        if answers.len() < wanted {
            return Err(unexpected_answer("label join"));
        }
        Ok(carried)
    }
}

/// The error of a batch that answered other than its operations ask.
fn unexpected_answer(what: &str) -> StoreError {
    StoreError::unavailable(
        StoreName::Label,
        format!("the {what} was answered out of order"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stores::InMemoryAuthority;

    fn link(child_id: &str, timestamp_ms: u64) -> DelegationLink {
        DelegationLink {
            schema: crate::token::DELEGATION_SCHEMA.to_string(),
            parent_id: "alice-files".to_string(),
            child_id: child_id.to_string(),
            delegator: "aa".repeat(32),
            delegatee: "bb".repeat(32),
            attenuation: crate::token::GrantState {
                scope: Vec::new(),
                not_before_ms: 0,
                expires_at_ms: 1,
                max_invocations: None,
                share_bps: 10_000,
            },
            timestamp_ms,
            signature: "cc".repeat(64),
        }
    }

    // A delegation record holds the delegator's labels and the floor under the link's own id; the step reports only the delegator's.
    #[test]
    fn a_delegation_record_keeps_the_floor_out_of_the_report() {
        let authority = InMemoryAuthority::default();
        let mut store = authority.clone();
        authority.join_label("principal/alice", "internal");
        let first = link("bob-files", 1);
        let id = delegation_record_id(&first).unwrap();
        assert!(id.starts_with("bob-files/") && id.len() == "bob-files/".len() + 32);
        assert_ne!(id, delegation_record_id(&link("bob-files", 2)).unwrap());
        let carry = LabelCarry::delegation("alice", &first).unwrap();
        let carried = carry.apply(&mut store).unwrap();
        assert_eq!(carry.reported(&carried), ["internal"]);
        let record = authority.labels(&format!("delegation/{id}"));
        assert_eq!(
            record.into_iter().collect::<Vec<_>>(),
            ["internal", "public"]
        );
    }

    // Integrity labels round-trip, never collide with a confidentiality level, and travel through a message like one; trusted content writes nothing.
    #[test]
    fn integrity_labels_are_known_and_carried() {
        assert_eq!(Integrity::Trusted.label(), None);
        let untrusted = Integrity::Untrusted.label().unwrap();
        assert_eq!(untrusted, "integrity:untrusted");
        assert_eq!(
            Integrity::from_label(&untrusted),
            Some(Integrity::Untrusted)
        );
        assert!(Integrity::Trusted < Integrity::Untrusted);
        for level in Label::ALL {
            assert!(!is_integrity_label(level.as_str()));
            assert_eq!(Integrity::from_label(level.as_str()), None);
        }
        assert!(is_known_label(&untrusted) && is_known_label("internal"));
        assert!(!is_known_label("integrity:maybe") && !is_known_label("untrusted"));
        let authority = InMemoryAuthority::default();
        let mut store = authority.clone();
        authority.join_label("principal/alice", &untrusted);
        let carry = LabelCarry::message("alice", "bob", "bob", None);
        let carried = carry.apply(&mut store).unwrap();
        assert_eq!(carry.reported(&carried), ["integrity:untrusted"]);
        assert!(authority.labels("principal/bob").contains(&untrusted));
    }

    // A hand-over carries the sender's principal labels into the receiver and the record unless it is endorsed; only an endorsed value taken by reference leaves them out, and then the receiver is left untouched.
    #[test]
    fn only_an_endorsed_reference_leaves_the_sender_out() {
        let tainted = || {
            let authority = InMemoryAuthority::default();
            authority.join_label("principal/alice", "integrity:untrusted");
            authority.join_label("principal/alice", "internal");
            authority
        };
        let cases = [
            (true, false, false),
            (true, true, true),
            (false, false, true),
            (false, true, true),
        ];
        for (endorsed, sender_chose, carries) in cases {
            let authority = tainted();
            let mut store = authority.clone();
            let carry =
                LabelCarry::handover("alice", "planner", "hand", &[], endorsed, sender_chose);
            carry.apply(&mut store).unwrap();
            let record = authority.labels("handover/planner/hand");
            let case = format!("endorsed {endorsed}, sender chose {sender_chose}");
            assert_eq!(record.contains("integrity:untrusted"), carries, "{case}");
            assert_eq!(record.contains("internal"), carries, "{case}");
            for key in ["principal/planner", "session/planner"] {
                let held = authority.labels(key);
                assert_eq!(
                    held.contains("integrity:untrusted"),
                    !endorsed,
                    "{key}: {case}"
                );
                assert_eq!(held.contains("internal"), !endorsed, "{key}: {case}");
            }
        }
    }

    // A message joins the sender's labels and the forwarded output's into the receiver's principal and session; an unknown label is refused before anything is written.
    #[test]
    fn a_message_reaches_principal_and_session() {
        let authority = InMemoryAuthority::default();
        let mut store = authority.clone();
        authority.join_label("principal/alice", "confidential");
        let carry = LabelCarry::message("alice", "bob", "bob", Some("internal"));
        let carried = carry.apply(&mut store).unwrap();
        assert_eq!(carry.reported(&carried), ["confidential", "internal"]);
        for key in ["principal/bob", "session/bob"] {
            assert_eq!(authority.labels(key).len(), 2, "{key}");
        }
        let bad = LabelCarry::message("alice", "carol", "carol", Some("classified"));
        assert!(bad.apply(&mut store).is_err());
        assert!(authority.labels("principal/carol").is_empty());
    }
}
