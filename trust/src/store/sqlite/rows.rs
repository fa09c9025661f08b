//! The SQL of every trust-control operation, one function per operation on
//! a connection inside the writer's transaction.
//!
//! Each function validates its arguments, reads the rows it needs, applies
//! the ledger rule (`model`, from `chio_kernel::ledger`) and writes the
//! result; none decides anything itself. The operations a decision batch
//! carries implement `model::Rows`, so a batch and a single call run the
//! same SQL.

use rusqlite::{params, Connection, OptionalExtension};

use super::version_one;
use crate::model::{
    check_amount, check_bps, check_id, check_label_keys, check_receipts, commit_transition,
    decide_hold, decide_share, effective_parent_share, plan_append, release_transition,
    repeat_hold, sibling_sum_bps, AdmittedChild, AppendSummary, HoldOutcome, HoldRecord, HoldState,
    IssuerKey, LabelSets, ReceiptPage, ReceiptRecord, ReleaseOutcome, Revocation, Rows,
    ShareOutcome, SiblingShare, StoredReceipt,
};
use crate::TrustError;

/// Reads a non-negative integer `column` (`table.column`), refusing a
/// negative value a corrupt file could hold, named by its column.
fn unsigned_from(column: &str, value: i64) -> Result<u64, TrustError> {
    u64::try_from(value).map_err(|_| TrustError::Storage {
        detail: format!("negative {column} in database"),
    })
}

fn load_hold(conn: &Connection, hold_id: &str) -> Result<Option<HoldRecord>, TrustError> {
    let row = conn
        .prepare_cached("SELECT budget_key, amount, state FROM budget_holds WHERE hold_id = ?1")?
        .query_row([hold_id], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, String>(2)?,
            ))
        })
        .optional()?;
    row.map(|(budget_key, amount, state)| {
        Ok(HoldRecord {
            budget_key,
            amount: unsigned_from("budget_holds.amount", amount)?,
            state: HoldState::parse(&state).ok_or_else(|| TrustError::Storage {
                detail: "unknown hold state in database".to_owned(),
            })?,
        })
    })
    .transpose()
}

fn set_hold_state(conn: &Connection, hold_id: &str, state: HoldState) -> Result<(), TrustError> {
    conn.prepare_cached("UPDATE budget_holds SET state = ?2 WHERE hold_id = ?1")?
        .execute(params![hold_id, state.as_str()])?;
    Ok(())
}

fn budget_used(conn: &Connection, budget_key: &str) -> Result<u64, TrustError> {
    let used: Option<i64> = conn
        .prepare_cached("SELECT used FROM budget_usage WHERE budget_key = ?1")?
        .query_row([budget_key], |row| row.get(0))
        .optional()?;
    unsigned_from("budget_usage.used", used.unwrap_or(0))
}

fn set_budget_used(conn: &Connection, budget_key: &str, used: u64) -> Result<(), TrustError> {
    // `used` is checked against MAX_AMOUNT (i64::MAX) by the budget rule.
    let used = i64::try_from(used).map_err(|_| {
        TrustError::Refused(chio_kernel::ledger::LedgerRefusal::BudgetOverflow {
            budget_key: budget_key.to_owned(),
        })
    })?;
    conn.prepare_cached(
        "INSERT INTO budget_usage (budget_key, used) VALUES (?1, ?2)
         ON CONFLICT (budget_key) DO UPDATE SET used = excluded.used",
    )?
    .execute(params![budget_key, used])?;
    Ok(())
}

fn labels_of(conn: &Connection, keys: &[String]) -> Result<LabelSets, TrustError> {
    let mut statement =
        conn.prepare_cached("SELECT label FROM labels WHERE label_key = ?1 ORDER BY label")?;
    let mut sets = LabelSets::new();
    for key in keys {
        let labels = statement
            .query_map([key], |row| row.get::<_, String>(0))?
            .collect::<Result<_, _>>()?;
        sets.insert(key.clone(), labels);
    }
    Ok(sets)
}

/// Trusts an issuer key; whether it was new.
pub(super) fn add_issuer_key(conn: &Connection, key: IssuerKey) -> Result<bool, TrustError> {
    let inserted = conn
        .prepare_cached("INSERT OR IGNORE INTO issuer_keys (public_key_hex) VALUES (?1)")?
        .execute([key.to_hex()])?;
    Ok(inserted == 1)
}

/// Every trusted issuer key, ascending.
pub(super) fn list_issuer_keys(conn: &Connection) -> Result<Vec<IssuerKey>, TrustError> {
    let keys: Vec<String> = conn
        .prepare_cached("SELECT public_key_hex FROM issuer_keys ORDER BY public_key_hex")?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    keys.iter()
        .map(|hex| {
            IssuerKey::parse_hex(hex).map_err(|_| TrustError::Storage {
                detail: "malformed issuer key in database".to_owned(),
            })
        })
        .collect()
}

/// Revokes an id; the first revocation's time is kept.
pub(super) fn revoke(conn: &Connection, id: &str, at_ms: u64) -> Result<Revocation, TrustError> {
    check_id("id", id)?;
    check_amount("at_ms", at_ms)?;
    let first: Option<i64> = conn
        .prepare_cached("SELECT revoked_at_ms FROM revocations WHERE id = ?1")?
        .query_row([id], |row| row.get(0))
        .optional()?;
    if let Some(first) = first {
        return Ok(Revocation {
            newly_revoked: false,
            revoked_at_ms: unsigned_from("revocations.revoked_at_ms", first)?,
        });
    }
    conn.prepare_cached("INSERT INTO revocations (id, revoked_at_ms) VALUES (?1, ?2)")?
        .execute(params![id, at_ms as i64])?;
    Ok(Revocation {
        newly_revoked: true,
        revoked_at_ms: at_ms,
    })
}

/// One page of the receipt log.
pub(super) fn list_receipts(
    conn: &Connection,
    after: i64,
    page: u32,
) -> Result<ReceiptPage, TrustError> {
    let receipts: Vec<StoredReceipt> = conn
        .prepare_cached(
            "SELECT seq, receipt_id, body FROM receipts WHERE seq > ?1
             ORDER BY seq LIMIT ?2",
        )?
        .query_map(params![after, page], |row| {
            Ok(StoredReceipt {
                seq: row.get::<_, i64>(0)? as u64,
                receipt_id: row.get(1)?,
                body: row.get(2)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let next_after_seq = match receipts.last() {
        Some(last) => {
            let more: bool = conn
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM receipts WHERE seq > ?1)")?
                .query_row([last.seq as i64], |row| row.get(0))?;
            more.then_some(last.seq)
        }
        None => None,
    };
    Ok(ReceiptPage {
        receipts,
        next_after_seq,
    })
}

/// The number of receipts in the log.
pub(super) fn count_receipts(conn: &Connection) -> Result<u64, TrustError> {
    let count: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM receipts")?
        .query_row([], |row| row.get(0))?;
    unsigned_from("receipt count", count)
}

/// The operations of a decision batch on one connection.
pub(super) struct SqlRows<'a>(pub(super) &'a Connection);

impl Rows for SqlRows<'_> {
    fn revoked_at(&mut self, id: &str) -> Result<Option<u64>, TrustError> {
        check_id("id", id)?;
        let at: Option<i64> = self
            .0
            .prepare_cached("SELECT revoked_at_ms FROM revocations WHERE id = ?1")?
            .query_row([id], |row| row.get(0))
            .optional()?;
        at.map(|at| unsigned_from("revocations.revoked_at_ms", at))
            .transpose()
    }

    fn record_request(&mut self, request_key: &str) -> Result<bool, TrustError> {
        check_id("request_key", request_key)?;
        let inserted = self
            .0
            .prepare_cached("INSERT OR IGNORE INTO seen_requests (request_key) VALUES (?1)")?
            .execute([request_key])?;
        if inserted != 1 {
            return Ok(false);
        }
        // A request a version 1 file admitted is recorded by its run and
        // request id only, which is all version 1 kept; it is seen too.
        Ok(!version_one::admitted_by_version_one(self.0, request_key)?)
    }

    fn hold(
        &mut self,
        hold_id: &str,
        budget_key: &str,
        amount: u64,
        limit: u64,
    ) -> Result<HoldOutcome, TrustError> {
        check_id("hold_id", hold_id)?;
        check_id("budget_key", budget_key)?;
        check_amount("amount", amount)?;
        check_amount("limit", limit)?;
        let conn = self.0;
        let used = budget_used(conn, budget_key)?;
        if let Some(existing) = load_hold(conn, hold_id)? {
            return Ok(repeat_hold(
                hold_id, &existing, budget_key, amount, used, limit,
            )?);
        }
        let outcome = decide_hold(budget_key, used, amount, limit)?;
        if let HoldOutcome::Granted { used: after, .. } = outcome {
            conn.prepare_cached(
                "INSERT INTO budget_holds (hold_id, budget_key, amount, state)
                 VALUES (?1, ?2, ?3, 'held')",
            )?
            .execute(params![hold_id, budget_key, amount as i64])?;
            set_budget_used(conn, budget_key, after)?;
        }
        Ok(outcome)
    }

    fn commit(&mut self, hold_id: &str) -> Result<HoldState, TrustError> {
        check_id("hold_id", hold_id)?;
        let hold = load_hold(self.0, hold_id)?.ok_or_else(|| TrustError::UnknownHold {
            hold_id: hold_id.to_owned(),
        })?;
        let next = commit_transition(hold_id, hold.state)?;
        if next != hold.state {
            set_hold_state(self.0, hold_id, next)?;
        }
        Ok(next)
    }

    fn release(&mut self, hold_id: &str) -> Result<ReleaseOutcome, TrustError> {
        check_id("hold_id", hold_id)?;
        let conn = self.0;
        let Some(hold) = load_hold(conn, hold_id)? else {
            return Ok(ReleaseOutcome::UnknownHold);
        };
        let next = release_transition(hold_id, hold.state)?;
        if hold.state == HoldState::Held {
            let used = budget_used(conn, &hold.budget_key)?;
            let after = used
                .checked_sub(hold.amount)
                .ok_or_else(|| TrustError::Storage {
                    detail: "budget usage below a held amount in database".to_owned(),
                })?;
            set_budget_used(conn, &hold.budget_key, after)?;
            set_hold_state(conn, hold_id, next)?;
        }
        Ok(ReleaseOutcome::Released)
    }

    fn admit_share(
        &mut self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> Result<ShareOutcome, TrustError> {
        check_id("parent_id", parent_id)?;
        check_id("child_id", child_id)?;
        check_bps("child_bps", child_bps)?;
        check_bps("parent_bps", parent_bps)?;
        let conn = self.0;
        // Each sibling with whether it is revoked, read in this admission's
        // transaction; the ledger decides what counts.
        let siblings: Vec<(String, i64, bool)> = conn
            .prepare_cached(
                "SELECT child_id, child_bps,
                        EXISTS (SELECT 1 FROM revocations WHERE revocations.id = shares.child_id)
                 FROM shares WHERE parent_id = ?1 ORDER BY child_id",
            )?
            .query_map([parent_id], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })?
            .collect::<Result<_, _>>()?;
        let mut counted = Vec::with_capacity(siblings.len());
        for (id, bps, revoked) in &siblings {
            counted.push(SiblingShare {
                child_id: id,
                child_bps: u32::try_from(*bps).map_err(|_| TrustError::Storage {
                    detail: "sibling share out of range in database".to_owned(),
                })?,
                revoked: *revoked,
            });
        }
        let sibling_sum = sibling_sum_bps(child_id, counted);
        let known: Option<(String, i64)> = conn
            .prepare_cached("SELECT parent_id, child_bps FROM shares WHERE child_id = ?1")?
            .query_row([child_id], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        let existing = match known {
            Some((parent_id, bps)) => Some(AdmittedChild {
                parent_id,
                child_bps: u32::try_from(bps).map_err(|_| TrustError::Storage {
                    detail: "child share out of range in database".to_owned(),
                })?,
            }),
            None => None,
        };
        let known_parent: Option<i64> = conn
            .prepare_cached("SELECT parent_bps FROM share_parents WHERE parent_id = ?1")?
            .query_row([parent_id], |row| row.get(0))
            .optional()?;
        let known_parent = known_parent
            .map(|bps| {
                u32::try_from(bps).map_err(|_| TrustError::Storage {
                    detail: "parent share out of range in database".to_owned(),
                })
            })
            .transpose()?;
        let parent_bps = effective_parent_share(known_parent, parent_bps);
        let outcome = decide_share(
            parent_id,
            child_id,
            existing.as_ref(),
            sibling_sum,
            child_bps,
            parent_bps,
        )?;
        if existing.is_none() {
            if let ShareOutcome::Admitted { .. } = outcome {
                conn.prepare_cached(
                    "INSERT INTO shares (child_id, parent_id, child_bps) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![child_id, parent_id, child_bps])?;
                conn.prepare_cached(
                    "INSERT OR IGNORE INTO share_parents (parent_id, parent_bps) VALUES (?1, ?2)",
                )?
                .execute(params![parent_id, parent_bps])?;
            }
        }
        Ok(outcome)
    }

    fn append(&mut self, receipts: &[ReceiptRecord]) -> Result<AppendSummary, TrustError> {
        check_receipts(receipts)?;
        let conn = self.0;
        let mut lookup = conn.prepare_cached("SELECT body FROM receipts WHERE receipt_id = ?1")?;
        let (to_insert, summary) = plan_append(receipts, |id| {
            Ok(lookup.query_row([id], |row| row.get(0)).optional()?)
        })?;
        let mut insert =
            conn.prepare_cached("INSERT INTO receipts (receipt_id, body) VALUES (?1, ?2)")?;
        for receipt in to_insert {
            insert.execute(params![receipt.receipt_id, receipt.body])?;
        }
        Ok(summary)
    }

    fn read_labels(&mut self, keys: &[String]) -> Result<LabelSets, TrustError> {
        check_label_keys(keys)?;
        labels_of(self.0, keys)
    }

    fn join_labels(&mut self, keys: &[String], label: &str) -> Result<LabelSets, TrustError> {
        check_label_keys(keys)?;
        check_id("label", label)?;
        let mut insert = self
            .0
            .prepare_cached("INSERT OR IGNORE INTO labels (label_key, label) VALUES (?1, ?2)")?;
        for key in keys {
            insert.execute(params![key, label])?;
        }
        labels_of(self.0, keys)
    }
}
