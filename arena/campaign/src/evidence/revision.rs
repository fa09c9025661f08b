//! A row's `source_revision` against the repository: the commit must exist
//! and hold the task's pinned files, each with its pinned mode and bytes,
//! so a row naming any commit the repository has (one from before the
//! task's scenario existed, or one with other fixtures) is contradicted.

use std::collections::BTreeMap;

use super::{contradiction, Contradiction};
use crate::git::{self, PinnedTree};
use crate::{Campaign, Task};

/// What the repository said of each revision a ledger names: `Ok(None)`
/// when it holds no such commit, its files below the root when it does.
pub(super) type Revisions = BTreeMap<String, Result<Option<PinnedTree>, String>>;

/// The repository's answer for `revision`, asked once per ledger.
fn ask(campaign: &Campaign, revision: &str) -> Result<Option<PinnedTree>, String> {
    if !git::commit_exists(&campaign.root, revision)? {
        return Ok(None);
    }
    PinnedTree::read(&campaign.root, revision)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Checks the row's claimed `revision` for `task`: the repository holds the
/// commit, and the commit holds every file of the task's definition.
pub(super) fn check_revision(
    campaign: &Campaign,
    task: &Task,
    revision: &str,
    revisions: &mut Revisions,
    found: &mut Vec<Contradiction>,
) {
    let answer = revisions
        .entry(revision.to_string())
        .or_insert_with(|| ask(campaign, revision));
    let why = match answer {
        Ok(Some(tree)) => match tree.first_difference(&task.definition.rows) {
            None => return,
            Some(difference) => format!(
                "{revision} cannot be the tree that ran task {}: it {difference}",
                task.id
            ),
        },
        Ok(None) => {
            format!("{revision} is not a commit the repository at the campaign root holds")
        }
        Err(why) => format!("{revision} cannot be checked: {why}"),
    };
    found.push(contradiction("source_revision", why));
}
