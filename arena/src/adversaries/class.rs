//! The four adversary classes, the gene each population member carries,
//! and the class parameters read from `[adversaries.params]`.
//!
//! A gene is the part of an adversary that evolution changes: which
//! injection pattern and where, which part of a call to swap, which replay
//! timing, which widening. Concrete details (which argument carries the
//! payload, which line of a fixture) are drawn from each action's RNG
//! sub-stream by the adversary search (`chio-adversary`). Parameters bound
//! the values a gene may take, so the search's mutation of a gene never
//! leaves what the scenario allowed.
//! Parameters are validated at load; every refusal names the parameter.

use chio_kernel::guards::prompt_injection::Pattern;
use serde::{Deserialize, Serialize};

use crate::error::ArenaError;

/// Tools an over-request or widening tries when `tools` is not given: the
/// simulated servers' whole catalogue.
pub const DEFAULT_TOOLS: &[&str] = &[
    "read_file",
    "write_file",
    "delete_file",
    "list_dir",
    "publish",
    "run_tests",
    "http_post",
];
/// The server an over-request names when the scenario declares no other.
pub const FALLBACK_SERVER: &str = "admin";
/// Default delay of a `delayed` replay, in virtual milliseconds.
pub const DEFAULT_REPLAY_DELAY_MS: u64 = 1_000;
/// Default age of a `stale` replay: a day and an hour, past a default grant.
pub const DEFAULT_REPLAY_STALE_MS: u64 = 90_000_000;
/// How many forms a monetary widening takes; a gene's choice picks one.
pub const MONETARY_FORMS: u32 = 5;

/// An adversary class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdversaryClass {
    /// Injection payloads in a call's arguments or in a fixture it reads.
    PromptInjection,
    /// A call to a server or tool the capability does not cover.
    CapabilityOverrequest,
    /// A captured request or nonce used again.
    ReplayAttempt,
    /// A delegation that widens its parent's scope.
    ScopeEscape,
}

impl AdversaryClass {
    /// Every class, in the order outputs list them.
    pub const ALL: [AdversaryClass; 4] = [
        AdversaryClass::PromptInjection,
        AdversaryClass::CapabilityOverrequest,
        AdversaryClass::ReplayAttempt,
        AdversaryClass::ScopeEscape,
    ];

    /// The kebab-case token every arena artifact uses.
    pub fn as_str(&self) -> &'static str {
        match self {
            AdversaryClass::PromptInjection => "prompt-injection",
            AdversaryClass::CapabilityOverrequest => "capability-overrequest",
            AdversaryClass::ReplayAttempt => "replay-attempt",
            AdversaryClass::ScopeEscape => "scope-escape",
        }
    }

    /// Parses the kebab-case token.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == text)
    }
}

/// Where a prompt-injection payload goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InjectionTarget {
    /// Into the call's arguments (the request-side scan must catch it).
    Arguments,
    /// Into the fixture the call reads (the output scan must catch it).
    Fixture,
}

/// What an over-request swaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SwapKind {
    /// Another server, same tool.
    Server,
    /// Another tool, same server.
    Tool,
    /// Both.
    Both,
}

/// When a captured request comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayMode {
    /// Right after the original completed.
    Immediate,
    /// `delay_ms` after the original.
    Delayed,
    /// `stale_ms` after the original, past the capability's validity.
    Stale,
    /// Admitted while the original is still in flight.
    Concurrent,
}

/// What a replay reuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayReuse {
    /// The captured request, byte for byte, signature included.
    Request,
    /// The captured request id (nonce) on a freshly signed request with
    /// other arguments.
    Nonce,
}

/// How a scope-escape delegation widens its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WideningKind {
    /// Adds a tool the parent does not grant, and calls it.
    Tool,
    /// Drops the parent's path prefix, and calls outside it.
    Path,
    /// Adds a server the parent does not grant, and calls it.
    Server,
    /// Extends the expiry past the parent's.
    Expiry,
    /// Claims more share than the parent holds.
    Share,
    /// Starts before the parent's validity window.
    Start,
    /// Grants every tool (`*`) under a parent that names its tools, and
    /// calls the base tool with it.
    AnyTool,
    /// Drops the invocation limit of a parent that has one, or raises it
    /// above the parent's.
    Budget,
    /// Widens the monetary scope constraint of a parent that carries one
    /// on the called server (another argument, another currency, a larger
    /// per-call limit or total), or drops it.
    Monetary,
}

/// The heritable part of one population member.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "kebab-case")]
pub enum Gene {
    /// A prompt-injection payload.
    PromptInjection {
        /// The pattern's kebab-case name.
        pattern: String,
        /// 0 for the canonical sample, `k` for the pattern's `k`-th evasive variant.
        variant: u32,
        /// Arguments or fixture.
        target: InjectionTarget,
    },
    /// A capability over-request.
    CapabilityOverrequest {
        /// What is swapped.
        swap: SwapKind,
        /// Which candidate replaces it (modulo the candidate list).
        choice: u32,
    },
    /// A replay.
    ReplayAttempt {
        /// When the copy comes back.
        mode: ReplayMode,
        /// What it reuses.
        reuse: ReplayReuse,
    },
    /// A widening delegation.
    ScopeEscape {
        /// How the delegation widens.
        widening: WideningKind,
        /// Which candidate tool or server it adds (modulo the list).
        choice: u32,
    },
}

impl Gene {
    /// The class this gene belongs to.
    pub fn class(&self) -> AdversaryClass {
        match self {
            Gene::PromptInjection { .. } => AdversaryClass::PromptInjection,
            Gene::CapabilityOverrequest { .. } => AdversaryClass::CapabilityOverrequest,
            Gene::ReplayAttempt { .. } => AdversaryClass::ReplayAttempt,
            Gene::ScopeEscape { .. } => AdversaryClass::ScopeEscape,
        }
    }

    /// A short readable label, such as `tool-name-spoof/sample/fixture`.
    pub fn label(&self) -> String {
        match self {
            Gene::PromptInjection {
                pattern,
                variant,
                target,
            } => {
                let v = if *variant == 0 {
                    "sample".to_string()
                } else {
                    format!("evasive-{variant}")
                };
                format!("{pattern}/{v}/{}", json_token(target))
            }
            Gene::CapabilityOverrequest { swap, choice } => {
                format!("swap-{}/{choice}", json_token(swap))
            }
            Gene::ReplayAttempt { mode, reuse } => {
                format!("{}/{}", json_token(mode), json_token(reuse))
            }
            Gene::ScopeEscape { widening, choice } => {
                format!("widen-{}/{choice}", json_token(widening))
            }
        }
    }
}

/// The largest variant index a pattern may take: 0 unless `evasive`,
/// else the number of the pattern's known evasive variants.
pub fn variant_limit(pattern: &str, evasive: bool) -> u32 {
    if !evasive {
        return 0;
    }
    Pattern::parse(pattern)
        .map(|p| p.evasive_variants().len() as u32)
        .unwrap_or(0)
}

/// The serde token of a unit enum value, for labels.
fn json_token<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

mod params;
pub use params::ClassParams;

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    // An unknown pattern is refused naming the list element.
    #[test]
    fn unknown_pattern_names_the_parameter() {
        let t = table("patterns = [\"tool-name-spoof\", \"jedi-mind-trick\"]");
        let err = ClassParams::from_table(
            AdversaryClass::PromptInjection,
            Some(&t),
            "adversaries[0].params",
            &[],
        )
        .unwrap_err();
        assert_eq!(err.code(), "CHIO-SCENARIO-ADVERSARY-PARAM");
        assert_eq!(err.field(), Some("adversaries[0].params.patterns[1]"));
    }

    // A wrong type and an unknown key are refused naming the parameter; an empty list is an empty population.
    #[test]
    fn wrong_type_unknown_key_and_empty_list() {
        let err = ClassParams::from_table(
            AdversaryClass::ReplayAttempt,
            Some(&table("delay_ms = \"soon\"")),
            "p",
            &[],
        )
        .unwrap_err();
        assert_eq!(err.field(), Some("p.delay_ms"));
        let err = ClassParams::from_table(
            AdversaryClass::ScopeEscape,
            Some(&table("depth = 3")),
            "p",
            &[],
        )
        .unwrap_err();
        assert_eq!(err.field(), Some("p.depth"));
        let err = ClassParams::from_table(
            AdversaryClass::CapabilityOverrequest,
            Some(&table("tools = []")),
            "p",
            &[],
        )
        .unwrap_err();
        assert_eq!(err.code(), "CHIO-SCENARIO-EMPTY-POPULATION");
    }
}
