//! A step's `expect_reason`: a reason code, matched exactly, or a part of
//! the reason's text.

use chio_arena::bundle::StepRecord;

/// The message of a record whose reason is not of code `want`, if it is not.
fn code_mismatch(record: &StepRecord, want: &str) -> Option<String> {
    match (record.reason_code.as_deref(), record.reason.as_deref()) {
        (Some(code), _) if code == want => None,
        (Some(code), Some(reason)) => Some(format!(
            "step {} expected a reason of code {want:?} but the reason is {reason:?} (code {code:?})",
            record.step_id
        )),
        (_, Some(reason)) => Some(format!(
            "step {} expected a reason of code {want:?} but the reason {reason:?} has no code",
            record.step_id
        )),
        (_, None) => Some(format!(
            "step {} expected a reason of code {want:?} but it gave no reason (actual {})",
            record.step_id,
            record.actual.map_or("?", |a| a.as_str())
        )),
    }
}

/// The stop cause of a step whose reason lacks its `expect_reason`.
pub const UNEXPECTED_REASON: &str = "unexpected-reason";

/// Whether `text` is a reason code: a kernel's
/// ([`chio_kernel::reason::ReasonCode`]) or a node's
/// ([`chio_node::outage::NodeCode`]).
pub fn is_reason_code(text: &str) -> bool {
    chio_kernel::reason::ReasonCode::parse(text).is_some()
        || chio_node::outage::NodeCode::parse(text).is_some()
}

/// `None` when the record's reason matches its expected reason (or none
/// is expected); otherwise the message naming both. An expectation that
/// is a reason code ([`is_reason_code`]) matches exactly the reason of
/// that code; any other is a plain, case-sensitive substring of the reason
/// the kernel (or the refusal) gave, so a scenario can pin the part that
/// matters (a guard's words, a label key) without restating ids or numbers.
pub fn reason_mismatch(record: &StepRecord) -> Option<String> {
    let want = record.expected_reason.as_deref()?;
    if is_reason_code(want) {
        return code_mismatch(record, want);
    }
    match record.reason.as_deref() {
        Some(reason) if reason.contains(want) => None,
        Some(reason) => Some(format!(
            "step {} expected a reason containing {want:?} but the reason is {reason:?}",
            record.step_id
        )),
        None => Some(format!(
            "step {} expected a reason containing {want:?} but it gave no reason (actual {})",
            record.step_id,
            record.actual.map_or("?", |a| a.as_str())
        )),
    }
}
