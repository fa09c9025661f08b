//! Planted weaknesses: guard mutants for benchmarking the adversary search.
//!
//! The arena's adversary search claims it finds what a human red team
//! finds. To measure that claim, this module can switch off one
//! normalisation or check of the `prompt-injection` or `forbidden-path`
//! guard, one check of the budget stage, the scope check's comparison
//! of pinned tool definitions, or one rule of the delegation chain's
//! attenuation check, at run time, and the search is scored on whether it finds an
//! escape through the hole. The switches after the hand-planted ones each
//! plant a mutant that survived the kernel's own tests under
//! `cargo-mutants` (`kernel/tests/mutants/survivors.txt`), so one build
//! serves the search over all of them. Everything here is behind the test-only cargo
//! feature `planted-weakness`: without it, [`weakened`] is a constant
//! `false` and every mutant branch compiles away, so a production kernel
//! carries none of them.
//!
//! A weakness applies only inside a guard's own check (the guard opens a
//! [`GuardScope`] for its duration, on its thread). Every other caller of the
//! same functions, such as the scope check's path normalisation or the
//! arena's reference reading through [`crate::guards::prompt_injection::inspect`],
//! keeps the hardened behaviour: that is what lets the search use the
//! unweakened detector as its oracle while the kernel's pipeline runs the
//! mutant.

/// One planted weakness: the normalisation or check it removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Weakness {
    /// Injection readings skip Unicode NFKC (fullwidth forms stay as they are).
    NoNfkc,
    /// Injection readings skip the look-alike (confusable skeleton) fold.
    NoConfusableFold,
    /// Injection readings keep invisible and formatting characters.
    NoInvisibleRemoval,
    /// Injection readings keep combining marks (diacritics).
    NoDiacriticStrip,
    /// Injection readings are not lowercased.
    CaseSensitiveRules,
    /// Each injection scan reads only the first [`SHORT_SCAN_WINDOW`] bytes of a string.
    ShortScanWindow,
    /// String values are never read together, so a split payload passes.
    NoSplitJoin,
    /// A tool tag counts only when written tight (`<tool_call`, not `< tool_call >`).
    TightToolTagsOnly,
    /// The `delimiter-confusion` pattern is dropped.
    DropDelimiterPattern,
    /// No reading of messages spelled in tag characters.
    NoTagDecoding,
    /// JSON text escaped inside strings is not scanned again.
    NoEmbeddedRescan,
    /// `forbidden-path` globs match case-sensitively.
    CaseSensitiveGlobs,
    /// `forbidden-path` does not collapse `.` and `..` segments.
    NoDotSegmentCollapse,
    /// `forbidden-path` does not percent-decode.
    NoPercentDecoding,
    /// `forbidden-path` does not read `\` as a separator.
    NoBackslashSeparator,
    /// A budget hold is granted while the count *before* it is within the
    /// limit, so one call more than the limit is admitted.
    BudgetCheckBeforeAdd,
    /// The kernel skips the configured per-agent tool budgets.
    NoToolBudgets,
    /// The scope check skips the `tool_digests` comparison: a pinned
    /// capability covers a tool whose definition changed under it.
    NoDefinitionPins,
    /// The `prompt-injection` guard skips the definition scan: a call to a
    /// tool whose definition in force is flagged passes it.
    NoDefinitionScan,
    /// The attenuation check lets a delegation link expire after its parent.
    ChildExpiryAfterParent,
    /// The attenuation check's start comparison is inverted: a link may
    /// start before its parent, and one starting after it is refused.
    StartCheckInverted,
    /// The attenuation check lets a link drop its parent's invocation limit.
    UnlimitedChildBudget,
    /// The scope check lets a link's `*` tool be covered by a parent that
    /// names any other tool.
    AnyToolUnderNamedTools,
    /// The scope check admits a link's monetary constraint that either
    /// names the parent's argument and currency or stays within its limits.
    MonetaryEitherMatch,
    /// The scope check's monetary argument comparison is inverted.
    MonetaryArgumentInverted,
    /// The scope check's per-call monetary limit comparison is inverted.
    MonetaryPerCallInverted,
    /// The scope check admits a link's monetary constraint whose total
    /// stays within the parent's, whatever its argument, currency or
    /// per-call limit.
    MonetaryTotalSuffices,
    /// The scope check admits a link's monetary constraint that names the
    /// parent's argument, whatever its currency or limits.
    MonetaryArgumentSuffices,
    /// The scope check's monetary currency comparison is inverted.
    MonetaryCurrencyInverted,
    /// The scope check's monetary total comparison is inverted.
    MonetaryTotalInverted,
    /// The integrity guard asks admission for no retained labels, so alone
    /// (with no other label-reading guard) it never sees a session's taint.
    IntegrityReadsNoLabels,
    /// Admission hands the guards no open-world flag: every tool looks
    /// closed-world to the integrity guard.
    NoOpenWorldFlag,
    /// No tool keeps what it is sent: a writing tool stores none of its
    /// caller's labels.
    WritersKeepNothing,
    /// Whether a tool keeps what it is sent is inverted: a writing tool
    /// carries nothing, a read-only one everything.
    KeepInverted,
    /// Labels are read only when a guard needs them and the tool may keep
    /// what it is sent, or for a handed-over argument.
    LabelsOnlyWithAGuard,
    /// Labels are read only for a handed-over argument (to a tool that may
    /// keep it, or under a guard that needs them).
    LabelsOnlyForHandovers,
    /// The handed-over-argument test is inverted: an argument built from a
    /// hand-over is not read.
    UnrecordedArgumentUnread,
    /// When the guards read non-empty labels first, sibling shares are not
    /// read at all.
    SharesSkippedAfterLabels,
    /// A delegated token's last link must differ from it in both id and
    /// subject to refuse it: a token re-keyed to its thief passes.
    LeafRenameAndRekey,
    /// The approval guard asks for no running totals, so a call checked
    /// ahead of the budget batch sees none.
    ApprovalWithoutTotals,
    /// The path allowlist holds a tool to the read globs whenever any other
    /// tool is a read tool: a write tool meets the wider read globs.
    WritesMeetReadGlobs,
    /// The path allowlist's session-roots test is inverted.
    SessionRootsInverted,
    /// The path allowlist's glob test is inverted.
    AllowlistInverted,
    /// The request-age bound refuses only a request exactly at the bound,
    /// in the past or the future.
    AgeBoundEqualOnly,
    /// The request-age bound's staleness test is inverted: a request
    /// within it is refused, a stale one admitted.
    AgeBoundInverted,
    /// The information-flow guard drops what a delegator held when it
    /// delegated (the mutant made `carry_delegator_labels` default to
    /// `false`; planted on every world, as no reference world writes the
    /// key out as `true`).
    DelegatorLabelsDropped,
    /// The secret-redaction guard's argument scan skips arrays.
    SecretArraysUnread,
    /// Every guard that names no consequential tools answers "not
    /// consequential", and the guards' answers decide alone, open world
    /// included, so beside any guard a quarantined reader's call to a tool
    /// with effects that no guard lists passes.
    OtherGuardsSayInconsequential,
    /// A tool budget applies to every agent but its own.
    ToolBudgetAgentInverted,
    /// A tool budget applies to every server but its own.
    ToolBudgetServerInverted,
    /// A tool budget applies to every tool but its own.
    ToolBudgetToolInverted,
}

/// Bytes an injection scan reads under [`Weakness::ShortScanWindow`].
pub const SHORT_SCAN_WINDOW: usize = 256;

impl Weakness {
    /// Every weakness, in benchmark order.
    pub const ALL: [Weakness; 51] = [
        Weakness::NoNfkc,
        Weakness::NoConfusableFold,
        Weakness::NoInvisibleRemoval,
        Weakness::NoDiacriticStrip,
        Weakness::CaseSensitiveRules,
        Weakness::ShortScanWindow,
        Weakness::NoSplitJoin,
        Weakness::TightToolTagsOnly,
        Weakness::DropDelimiterPattern,
        Weakness::NoTagDecoding,
        Weakness::NoEmbeddedRescan,
        Weakness::CaseSensitiveGlobs,
        Weakness::NoDotSegmentCollapse,
        Weakness::NoPercentDecoding,
        Weakness::NoBackslashSeparator,
        Weakness::BudgetCheckBeforeAdd,
        Weakness::NoToolBudgets,
        Weakness::NoDefinitionPins,
        Weakness::NoDefinitionScan,
        Weakness::ChildExpiryAfterParent,
        Weakness::StartCheckInverted,
        Weakness::UnlimitedChildBudget,
        Weakness::AnyToolUnderNamedTools,
        Weakness::MonetaryEitherMatch,
        Weakness::MonetaryArgumentInverted,
        Weakness::MonetaryPerCallInverted,
        Weakness::MonetaryTotalSuffices,
        Weakness::MonetaryArgumentSuffices,
        Weakness::MonetaryCurrencyInverted,
        Weakness::MonetaryTotalInverted,
        Weakness::IntegrityReadsNoLabels,
        Weakness::NoOpenWorldFlag,
        Weakness::WritersKeepNothing,
        Weakness::KeepInverted,
        Weakness::LabelsOnlyWithAGuard,
        Weakness::LabelsOnlyForHandovers,
        Weakness::UnrecordedArgumentUnread,
        Weakness::SharesSkippedAfterLabels,
        Weakness::LeafRenameAndRekey,
        Weakness::ApprovalWithoutTotals,
        Weakness::WritesMeetReadGlobs,
        Weakness::SessionRootsInverted,
        Weakness::AllowlistInverted,
        Weakness::AgeBoundEqualOnly,
        Weakness::AgeBoundInverted,
        Weakness::DelegatorLabelsDropped,
        Weakness::SecretArraysUnread,
        Weakness::OtherGuardsSayInconsequential,
        Weakness::ToolBudgetAgentInverted,
        Weakness::ToolBudgetServerInverted,
        Weakness::ToolBudgetToolInverted,
    ];

    /// The kebab-case name the benchmark prints.
    pub fn as_str(&self) -> &'static str {
        match self {
            Weakness::NoNfkc => "no-nfkc",
            Weakness::NoConfusableFold => "no-confusable-fold",
            Weakness::NoInvisibleRemoval => "no-invisible-removal",
            Weakness::NoDiacriticStrip => "no-diacritic-strip",
            Weakness::CaseSensitiveRules => "case-sensitive-rules",
            Weakness::ShortScanWindow => "short-scan-window",
            Weakness::NoSplitJoin => "no-split-join",
            Weakness::TightToolTagsOnly => "tight-tool-tags-only",
            Weakness::DropDelimiterPattern => "drop-delimiter-pattern",
            Weakness::NoTagDecoding => "no-tag-decoding",
            Weakness::NoEmbeddedRescan => "no-embedded-rescan",
            Weakness::CaseSensitiveGlobs => "case-sensitive-globs",
            Weakness::NoDotSegmentCollapse => "no-dot-segment-collapse",
            Weakness::NoPercentDecoding => "no-percent-decoding",
            Weakness::NoBackslashSeparator => "no-backslash-separator",
            Weakness::BudgetCheckBeforeAdd => "budget-check-before-add",
            Weakness::NoToolBudgets => "no-tool-budgets",
            Weakness::NoDefinitionPins => "no-definition-pins",
            Weakness::NoDefinitionScan => "no-definition-scan",
            Weakness::ChildExpiryAfterParent => "child-expiry-after-parent",
            Weakness::StartCheckInverted => "start-check-inverted",
            Weakness::UnlimitedChildBudget => "unlimited-child-budget",
            Weakness::AnyToolUnderNamedTools => "any-tool-under-named-tools",
            Weakness::MonetaryEitherMatch => "monetary-either-match",
            Weakness::MonetaryArgumentInverted => "monetary-argument-inverted",
            Weakness::MonetaryPerCallInverted => "monetary-per-call-inverted",
            Weakness::MonetaryTotalSuffices => "monetary-total-suffices",
            Weakness::MonetaryArgumentSuffices => "monetary-argument-suffices",
            Weakness::MonetaryCurrencyInverted => "monetary-currency-inverted",
            Weakness::MonetaryTotalInverted => "monetary-total-inverted",
            Weakness::IntegrityReadsNoLabels => "integrity-reads-no-labels",
            Weakness::NoOpenWorldFlag => "no-open-world-flag",
            Weakness::WritersKeepNothing => "writers-keep-nothing",
            Weakness::KeepInverted => "keep-inverted",
            Weakness::LabelsOnlyWithAGuard => "labels-only-with-a-guard",
            Weakness::LabelsOnlyForHandovers => "labels-only-for-handovers",
            Weakness::UnrecordedArgumentUnread => "unrecorded-argument-unread",
            Weakness::SharesSkippedAfterLabels => "shares-skipped-after-labels",
            Weakness::LeafRenameAndRekey => "leaf-rename-and-rekey",
            Weakness::ApprovalWithoutTotals => "approval-without-totals",
            Weakness::WritesMeetReadGlobs => "writes-meet-read-globs",
            Weakness::SessionRootsInverted => "session-roots-inverted",
            Weakness::AllowlistInverted => "allowlist-inverted",
            Weakness::AgeBoundEqualOnly => "age-bound-equal-only",
            Weakness::AgeBoundInverted => "age-bound-inverted",
            Weakness::DelegatorLabelsDropped => "delegator-labels-dropped",
            Weakness::SecretArraysUnread => "secret-arrays-unread",
            Weakness::OtherGuardsSayInconsequential => "other-guards-say-inconsequential",
            Weakness::ToolBudgetAgentInverted => "tool-budget-agent-inverted",
            Weakness::ToolBudgetServerInverted => "tool-budget-server-inverted",
            Weakness::ToolBudgetToolInverted => "tool-budget-tool-inverted",
        }
    }

    /// Parses the kebab-case name.
    pub fn parse(text: &str) -> Option<Weakness> {
        Weakness::ALL.into_iter().find(|w| w.as_str() == text)
    }

    /// The check the weakness lives in: the guard kind (`prompt-injection`,
    /// `forbidden-path`, `integrity`, `approval`, `path-allowlist`,
    /// `information-flow` or `secret-redaction`),
    /// `budget` for the budget stage, `shares` for the sibling-share read,
    /// `scope` for the scope check, `attenuation` for the delegation
    /// chain's attenuation check, `signature` for its signature check,
    /// `quarantine` for the quarantined reader's consequential set,
    /// `tool-budget` for which calls a tool budget counts,
    /// `labels` for admission's label reads, or `binding` for the
    /// request-age bound.
    pub fn guard_kind(&self) -> &'static str {
        match self {
            Weakness::BudgetCheckBeforeAdd | Weakness::NoToolBudgets => "budget",
            Weakness::NoDefinitionPins => "scope",
            Weakness::ChildExpiryAfterParent
            | Weakness::StartCheckInverted
            | Weakness::UnlimitedChildBudget
            | Weakness::AnyToolUnderNamedTools
            | Weakness::MonetaryEitherMatch
            | Weakness::MonetaryArgumentInverted
            | Weakness::MonetaryPerCallInverted
            | Weakness::MonetaryTotalSuffices
            | Weakness::MonetaryArgumentSuffices
            | Weakness::MonetaryCurrencyInverted
            | Weakness::MonetaryTotalInverted => "attenuation",
            Weakness::CaseSensitiveGlobs
            | Weakness::NoDotSegmentCollapse
            | Weakness::NoPercentDecoding
            | Weakness::NoBackslashSeparator => "forbidden-path",
            Weakness::IntegrityReadsNoLabels => "integrity",
            Weakness::NoOpenWorldFlag
            | Weakness::WritersKeepNothing
            | Weakness::KeepInverted
            | Weakness::LabelsOnlyWithAGuard
            | Weakness::LabelsOnlyForHandovers
            | Weakness::UnrecordedArgumentUnread => "labels",
            Weakness::SharesSkippedAfterLabels => "shares",
            Weakness::LeafRenameAndRekey => "signature",
            Weakness::ApprovalWithoutTotals => "approval",
            Weakness::WritesMeetReadGlobs
            | Weakness::SessionRootsInverted
            | Weakness::AllowlistInverted => "path-allowlist",
            Weakness::AgeBoundEqualOnly | Weakness::AgeBoundInverted => "binding",
            Weakness::DelegatorLabelsDropped => "information-flow",
            Weakness::SecretArraysUnread => "secret-redaction",
            Weakness::OtherGuardsSayInconsequential => "quarantine",
            Weakness::ToolBudgetAgentInverted
            | Weakness::ToolBudgetServerInverted
            | Weakness::ToolBudgetToolInverted => "tool-budget",
            _ => "prompt-injection",
        }
    }

    #[cfg_attr(not(feature = "planted-weakness"), allow(dead_code))]
    fn code(self) -> u8 {
        Weakness::ALL
            .iter()
            .position(|w| *w == self)
            .map_or(0, |i| i as u8 + 1)
    }
}

#[cfg(feature = "planted-weakness")]
mod active {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU8, Ordering};

    use super::Weakness;

    /// The selected weakness (0: none), process-wide.
    static SELECTED: AtomicU8 = AtomicU8::new(0);

    thread_local! {
        /// How many guard checks are open on this thread.
        static IN_GUARD: Cell<u32> = const { Cell::new(0) };
    }

    pub fn select(weakness: Option<Weakness>) {
        SELECTED.store(weakness.map_or(0, Weakness::code), Ordering::SeqCst);
    }

    pub fn selected() -> Option<Weakness> {
        let code = SELECTED.load(Ordering::SeqCst);
        Weakness::ALL.into_iter().find(|w| w.code() == code)
    }

    pub fn weakened(weakness: Weakness) -> bool {
        IN_GUARD.with(|n| n.get() > 0) && SELECTED.load(Ordering::Relaxed) == weakness.code()
    }

    pub fn weakened_anywhere(weakness: Weakness) -> bool {
        SELECTED.load(Ordering::Relaxed) == weakness.code()
    }

    pub fn enter() {
        IN_GUARD.with(|n| n.set(n.get() + 1));
    }

    pub fn leave() {
        IN_GUARD.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

/// Selects the weakness every guard check of this process plants from now
/// on (`None`: the hardened guards). Only with the `planted-weakness` feature.
#[cfg(feature = "planted-weakness")]
pub fn select(weakness: Option<Weakness>) {
    active::select(weakness);
}

/// The weakness selected, if any. Only with the `planted-weakness` feature.
#[cfg(feature = "planted-weakness")]
pub fn selected() -> Option<Weakness> {
    active::selected()
}

/// Whether `weakness` is planted in the guard check running on this thread.
#[inline]
pub fn weakened(weakness: Weakness) -> bool {
    #[cfg(feature = "planted-weakness")]
    {
        active::weakened(weakness)
    }
    #[cfg(not(feature = "planted-weakness"))]
    {
        let _ = weakness;
        false
    }
}

/// Whether `weakness` is planted in a check outside any guard (the budget
/// stage and its hold rule, the scope check's pinned definitions, the
/// attenuation check) or in a
/// guard check that no reference reading shares (the definition scan's
/// verdict). The arena's budget oracle keeps its own count
/// and never calls these checks, so it stays an independent judge.
#[inline]
pub fn weakened_anywhere(weakness: Weakness) -> bool {
    #[cfg(feature = "planted-weakness")]
    {
        active::weakened_anywhere(weakness)
    }
    #[cfg(not(feature = "planted-weakness"))]
    {
        let _ = weakness;
        false
    }
}

/// `holds`, or its negation while `weakness` is planted anywhere: the
/// inverted comparison of a surviving mutant.
#[inline]
pub fn inverted(weakness: Weakness, holds: bool) -> bool {
    holds != weakened_anywhere(weakness)
}

/// Marks a guard check as open on this thread while it lives.
#[derive(Debug)]
pub struct GuardScope(());

impl GuardScope {
    /// Opens the scope; it closes when dropped.
    #[inline]
    pub fn enter() -> GuardScope {
        #[cfg(feature = "planted-weakness")]
        active::enter();
        GuardScope(())
    }
}

impl Drop for GuardScope {
    #[inline]
    fn drop(&mut self) {
        #[cfg(feature = "planted-weakness")]
        active::leave();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Names round-trip and every weakness names the guard kind it lives in.
    #[test]
    fn names_round_trip() {
        for w in Weakness::ALL {
            assert_eq!(Weakness::parse(w.as_str()), Some(w));
            assert!(matches!(
                w.guard_kind(),
                "prompt-injection"
                    | "forbidden-path"
                    | "integrity"
                    | "approval"
                    | "path-allowlist"
                    | "information-flow"
                    | "secret-redaction"
                    | "budget"
                    | "shares"
                    | "scope"
                    | "attenuation"
                    | "signature"
                    | "labels"
                    | "quarantine"
                    | "tool-budget"
                    | "binding"
            ));
        }
    }

    // Outside a guard scope no guard weakness is ever planted, whatever is selected.
    #[test]
    fn outside_a_guard_nothing_is_weakened() {
        for w in Weakness::ALL {
            assert!(!weakened(w));
        }
    }
}
