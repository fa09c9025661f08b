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

use std::fmt;

use serde::{Deserialize, Serialize};

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

/// Where a label is retained.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum LabelKey {
    /// Everything one session has read.
    Session(String),
    /// Everything one principal (agent) has read, across sessions.
    Principal(String),
    /// Everything read under one root capability, across delegations.
    Lineage(String),
}

impl LabelKey {
    /// The key as stores persist it: `session/<id>`, `principal/<id>`, `lineage/<id>`.
    pub fn as_key(&self) -> String {
        match self {
            LabelKey::Session(id) => format!("session/{id}"),
            LabelKey::Principal(id) => format!("principal/{id}"),
            LabelKey::Lineage(id) => format!("lineage/{id}"),
        }
    }
}
