//! What a version 1 file recorded of the requests it admitted, and how the
//! migration to version 2 carries them over, so that they are still refused
//! as replays after the upgrade.
//!
//! Version 1 kept no seen request ids: each node remembered the ids its
//! kernels had taken in memory. What a version 1 file holds of a request its
//! kernels admitted is
//! - one `budget_holds` row per budget the request held (committed once the
//!   call completed, released when it was denied after its holds), with the
//!   hold id `<run>/<request id>#<budget key>` and the budget key
//!   `<run>/<budget key>`, where `<run>/` is the run's namespace (a run id
//!   has no `/`);
//! - its receipt, the canonical JSON of the signed receipt, which names the
//!   request id and the verdict but not the run: receipts are not namespaced,
//!   and two runs that decide alike share one receipt.
//!
//! Neither names the capability lineage or the principal, which the current
//! key needs (`<run>/` + `chio_kernel::ledger::seen_request_key`, so
//! `<run>/<n>:<lineage>/<m>:<principal>/<request id>`), so no current key can
//! be rebuilt from a version 1 file. What it does name, the run and the
//! request id, is what version 1 refused a replay by: an id once taken was
//! refused whatever lineage or principal presented it again. The migration
//! therefore records each admission as [`carried_key`] of its run and
//! request id, a key no caller can send (it holds a control character, which
//! every request key is refused for), and `record_request` refuses a
//! current key whose run and request id have such a record. Hold ids are
//! kept as version 1 wrote them; budgets keep counting them.
//!
//! The migration fails closed ([`TrustError::MigrationRefused`]) where a
//! version 1 admission cannot be attributed to a run:
//! - a hold whose id and budget key are not of the form above (not a
//!   kernel's hold, so its request is unknown);
//! - a receipt whose body is not a receipt naming a request id and a
//!   verdict;
//! - a receipt of an admitted request (any verdict but `deny`) whose request
//!   id has no hold in any run: the request held no budget, and nothing in
//!   the file says which run admitted it.
//!
//! A denied request that held no budget was denied before or without taking
//! its id for good, so its receipt needs no record: a replay of it is
//! decided afresh.

use chio_kernel::reason::printable_id;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rusqlite::Connection;

use crate::TrustError;

/// What the operator of a file the migration refuses does.
const FIX: &str = "keep serving this file with the version 1 build until the runs it served are over, \
                   then start this build on a new --db file (the version 1 build still reads this one)";

/// Separates the run from the request id in a carried key; a control
/// character, so no request key a caller sends can equal a carried one.
const CARRIED_MARK: char = '\u{1f}';

/// The seen-request record of a request a version 1 file admitted in run
/// namespace `namespace` (`<run>/`).
pub(super) fn carried_key(namespace: &str, request_id: &str) -> String {
    format!("{namespace}{CARRIED_MARK}{request_id}")
}

/// The run namespace and request id of a version 1 kernel's hold, when
/// `hold_id` is `<run>/<request id>#<budget key>` and `budget_key` is
/// `<run>/<budget key>`.
fn hold_request<'a>(hold_id: &'a str, budget_key: &str) -> Option<(&'a str, &'a str)> {
    let (namespace, key) = budget_key.split_at(budget_key.find('/')? + 1);
    if key.is_empty() {
        return None;
    }
    let rest = hold_id.strip_prefix(namespace)?;
    let request_id = rest.strip_suffix(key)?.strip_suffix('#')?;
    (!request_id.is_empty()).then_some((&hold_id[..namespace.len()], request_id))
}

/// The request id and verdict a receipt body names.
fn receipt_request(body: &[u8]) -> Option<(String, String)> {
    let receipt: serde_json::Value = serde_json::from_slice(body).ok()?;
    let body = receipt.get("body")?;
    let request_id = body.get("request_id")?.as_str()?;
    let verdict = body.get("decision")?.get("verdict")?.as_str()?;
    Some((request_id.to_owned(), verdict.to_owned()))
}

/// The seen-request records of every request the version 1 rows of `conn`
/// admitted, or the refusal naming the first admission that cannot be
/// carried over.
pub(super) fn carried_requests(
    conn: &Connection,
    path: &Path,
) -> Result<BTreeSet<String>, TrustError> {
    let refuse = |problem: String| TrustError::MigrationRefused {
        path: path.display().to_string(),
        problem,
        fix: FIX,
    };
    // Request id -> the runs whose holds name it.
    let mut held: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut holds =
        conn.prepare("SELECT hold_id, budget_key FROM budget_holds ORDER BY hold_id")?;
    let mut rows = holds.query([])?;
    while let Some(row) = rows.next()? {
        let (hold_id, budget_key): (String, String) = (row.get(0)?, row.get(1)?);
        let Some((namespace, request_id)) = hold_request(&hold_id, &budget_key) else {
            return Err(refuse(format!(
                "hold {} of budget {} is not a kernel's hold <run>/<request id>#<budget key>, so \
                 the request that took it is unknown",
                printable_id(&hold_id),
                printable_id(&budget_key)
            )));
        };
        held.entry(request_id.to_owned())
            .or_default()
            .insert(namespace.to_owned());
    }
    let mut receipts = conn.prepare("SELECT receipt_id, body FROM receipts ORDER BY seq")?;
    let mut rows = receipts.query([])?;
    while let Some(row) = rows.next()? {
        let (receipt_id, body): (String, Vec<u8>) = (row.get(0)?, row.get(1)?);
        let Some((request_id, verdict)) = receipt_request(&body) else {
            return Err(refuse(format!(
                "receipt {} is not a kernel receipt naming a request id and a verdict, so whether \
                 it admitted a request is unknown",
                printable_id(&receipt_id)
            )));
        };
        if verdict != "deny" && !held.contains_key(&request_id) {
            return Err(refuse(format!(
                "receipt {} admitted request {} ({verdict}) without a budget hold, and version 1 \
                 recorded no run for it",
                printable_id(&receipt_id),
                printable_id(&request_id)
            )));
        }
    }
    Ok(held
        .iter()
        .flat_map(|(request_id, namespaces)| {
            namespaces
                .iter()
                .map(move |namespace| carried_key(namespace, request_id))
        })
        .collect())
}

/// Skips `<n>:`, `n` bytes and `/` at the start of `text`.
fn skip_counted(text: &str) -> Option<&str> {
    let (digits, rest) = text.split_once(':')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let length: usize = digits.parse().ok()?;
    rest.get(length..)?.strip_prefix('/')
}

/// Every way `key` reads as `<namespace><n>:<lineage>/<m>:<principal>/<request id>`,
/// a namespace (empty or ending in `/`) before a
/// `chio_kernel::ledger::seen_request_key`, as (namespace, request id).
fn current_key_splits(key: &str) -> impl Iterator<Item = (&str, &str)> {
    std::iter::once(0)
        .chain(key.match_indices('/').map(|(at, _)| at + 1))
        .filter_map(move |start| {
            let rest = skip_counted(skip_counted(&key[start..])?)?;
            (!rest.is_empty()).then_some((&key[..start], rest))
        })
}

/// Whether `request_key` names, by its run and request id, a request a
/// version 1 file admitted before the migration.
pub(super) fn admitted_by_version_one(
    conn: &Connection,
    request_key: &str,
) -> Result<bool, TrustError> {
    let mut lookup =
        conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM seen_requests WHERE request_key = ?1)")?;
    for (namespace, request_id) in current_key_splits(request_key) {
        let carried: bool =
            lookup.query_row([carried_key(namespace, request_id)], |row| row.get(0))?;
        if carried {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chio_kernel::ledger::seen_request_key;

    // Proves a version 1 kernel's hold ids name their run and request id, and other holds name none.
    #[test]
    fn hold_ids_name_their_run_and_request() {
        assert_eq!(
            hold_request("run-a/req-1#invocations/cap", "run-a/invocations/cap"),
            Some(("run-a/", "req-1"))
        );
        assert_eq!(
            hold_request(
                "run-a/r#2#monetary/grant/files/usd",
                "run-a/monetary/grant/files/usd"
            ),
            Some(("run-a/", "r#2"))
        );
        for (hold_id, budget_key) in [
            ("h-1", "inv:cap-1"),
            ("run-a/#invocations/cap", "run-a/invocations/cap"),
            ("run-b/req-1#invocations/cap", "run-a/invocations/cap"),
            ("run-a/req-1#invocations/other", "run-a/invocations/cap"),
            ("run-a/req-1", "run-a/"),
        ] {
            assert_eq!(hold_request(hold_id, budget_key), None, "{hold_id}");
        }
    }

    // Proves the run and request id are read back from every current key, whatever its lineage and principal hold.
    #[test]
    fn current_keys_split_into_run_and_request() {
        for (lineage, principal, request_id) in [
            ("alice-files", "alice", "req-1"),
            ("a/b", "c/d", "e/f"),
            ("3:x/1:y", "", "1:z/1:w/r"),
            ("ü", "ß", "#"),
        ] {
            let key = format!("run-a/{}", seen_request_key(lineage, principal, request_id));
            let splits: Vec<_> = current_key_splits(&key).collect();
            assert!(
                splits.contains(&("run-a/", request_id)),
                "{key}: {splits:?}"
            );
        }
        assert_eq!(current_key_splits("k").count(), 0);
        assert_eq!(current_key_splits("run-a/req-1").count(), 0);
    }

    // Proves a carried record can never be sent as a request key.
    #[test]
    fn carried_keys_are_not_valid_request_keys() {
        let carried = carried_key("run-a/", "req-1");
        assert!(crate::model::check_id("request_key", &carried).is_err());
    }
}
