//! The property strategy of a decision trace, every field drawn, for the
//! wire's round-trip properties.

use super::*;

pub(super) fn trace() -> impl Strategy<Value = DecisionTrace> {
    let stage = (text(), text(), text()).prop_map(|(stage, outcome, detail)| StageTrace {
        stage,
        outcome,
        detail,
    });
    let budget = (
        text(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        text(),
        prop::option::of(text()),
    )
        .prop_map(|(key, amount, limit, used, outcome, settled)| BudgetRead {
            key,
            amount,
            limit,
            used,
            outcome,
            settled,
        });
    let journal = (
        text(),
        text(),
        text(),
        projected(),
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(
            |(request_id, server, tool, verdict, at_ms, performed)| JournalEntry {
                request_id,
                server,
                tool,
                verdict,
                at_ms,
                performed,
            },
        );
    let guard = (
        text(),
        text(),
        text(),
        text(),
        text(),
        prop::option::of(text()),
        prop::collection::vec(text(), 0..3),
    )
        .prop_map(
            |(guard, kind, mode, phase, answer, reason, admitted)| GuardAnswer {
                guard,
                kind,
                mode,
                phase,
                answer,
                reason,
                admitted,
            },
        );
    let share =
        (text(), text(), any::<u32>(), text()).prop_map(|(parent, child, child_bps, outcome)| {
            ShareRead {
                parent,
                child,
                child_bps,
                outcome,
            }
        });
    (
        (
            prop::option::of(text()),
            prop::collection::vec(text(), 0..3),
            prop::option::of(prop::sample::select(ReasonCode::ALL)),
        ),
        prop::collection::vec(stage, 0..3),
        (
            prop::collection::btree_map(text(), prop::collection::vec(text(), 0..3), 0..3),
            prop::collection::btree_map(text(), prop::collection::vec(text(), 0..3), 0..3),
            prop::collection::btree_map(text(), any::<u64>(), 0..3),
        ),
        prop::collection::vec(budget, 0..3),
        prop::collection::vec(journal, 0..3),
        prop::collection::vec(guard, 0..3),
        prop::collection::vec(share, 0..3),
        (
            prop::option::of(text()),
            prop::option::of(text()),
            prop::collection::vec(text(), 0..3),
            any::<bool>(),
            prop::collection::vec(text(), 0..3),
        ),
    )
        .prop_map(
            |(
                (principal, chain, reason_code),
                stages,
                (label_keys, argument_labels, allowlists_read),
                budget_keys,
                journal,
                guards,
                shares,
                (output_label, output_integrity, label_writes, not_performed, server_kept),
            )| DecisionTrace {
                principal,
                chain,
                stages,
                reason_code,
                label_keys,
                argument_labels,
                allowlists_read,
                budget_keys,
                journal,
                guards,
                shares,
                output_label,
                output_integrity,
                label_writes,
                not_performed,
                server_kept,
            },
        )
}
