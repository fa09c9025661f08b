//! The two scenarios of an `arena diff` whose bundles ran different ones,
//! and how text from a bundle is shown.

use chio_arena::bundle::Bundle;
use serde::Serialize;

/// The two scenarios of a diff whose bundles ran different ones.
#[derive(Debug, Serialize)]
pub(super) struct ScenariosDiffer {
    left_id: String,
    right_id: String,
    left_sha256: String,
    right_sha256: String,
}

impl ScenariosDiffer {
    /// `None` when both bundles ran the same scenario file.
    pub(super) fn of(left: &Bundle, right: &Bundle) -> Option<Self> {
        let (l, r) = (&left.manifest, &right.manifest);
        (l.determinism.scenario_id != r.determinism.scenario_id
            || l.scenario_sha256 != r.scenario_sha256)
            .then(|| Self {
                left_id: l.determinism.scenario_id.clone(),
                right_id: r.determinism.scenario_id.clone(),
                left_sha256: l.scenario_sha256.clone(),
                right_sha256: r.scenario_sha256.clone(),
            })
    }

    /// The warning printed before the comparison.
    pub(super) fn warning(&self) -> String {
        let (left, right) = (shown(&self.left_id), shown(&self.right_id));
        let what = if self.left_id == self.right_id {
            format!("runs of two different files with the same scenario id {left}")
        } else {
            format!("runs of different scenarios: {left} and {right}")
        };
        format!(
            "warning: the bundles are {what} (scenario sha256 {} vs {}); steps are compared by position, so each difference below may only reflect the scenarios\n",
            shown(short(&self.left_sha256)),
            shown(short(&self.right_sha256))
        )
    }
}

/// Text from a bundle (an id, a file name, a place) as a terminal may show
/// it: a name planted in a bundle cannot clear the screen or forge a line
/// such as `no drift`.
pub(super) fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    crate::term::printable(text)
}

/// The first 12 hex digits of a digest.
fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}
