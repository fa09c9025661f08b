//! The request-age bound (`max_request_age_ms`): a request as old as the
//! bound, or dated as far ahead of the kernel's clock, is admitted; one
//! millisecond more either way is refused, naming the instants.

use crate::util;

use chio_kernel::stores::KernelStores;
use chio_kernel::{Kernel, Verdict};
use serde_json::json;
use util::*;

const MAX_AGE_MS: u64 = 1_000;

/// A kernel with the age bound; its decision on a read issued at
/// [`NOW_MS`] and evaluated at `now_ms`.
fn verdict_at(now_ms: u64, request_id: &str) -> (Verdict, Option<String>) {
    let mut config = kernel_config(Vec::new());
    config.max_request_age_ms = Some(MAX_AGE_MS);
    let mut kernel = Kernel::new(config, KernelStores::in_memory()).expect("test kernel builds");
    let files = standard_files();
    let cap = issue("cap-alice", "alice", files_scope());
    let call = request(
        "alice",
        &cap,
        "files",
        "read_file",
        json!({ "path": "/workspace/notes.txt" }),
        request_id,
    );
    let decision = kernel.evaluate(&call, now_ms, &mut dispatch(&files));
    (decision.verdict, decision.reason)
}

// A request exactly as old as the bound is admitted, one millisecond older is stale.
#[test]
fn the_age_bound_is_inclusive() {
    assert_eq!(verdict_at(NOW_MS + MAX_AGE_MS, "r-edge").0, Verdict::Allow);
    let (verdict, reason) = verdict_at(NOW_MS + MAX_AGE_MS + 1, "r-stale");
    assert_eq!(verdict, Verdict::Deny);
    assert_eq!(
        reason.as_deref(),
        Some(
            format!(
                "request is stale: issued at {NOW_MS} ms, evaluated at {} ms, older than {MAX_AGE_MS} ms",
                NOW_MS + MAX_AGE_MS + 1
            )
            .as_str()
        )
    );
    assert_eq!(verdict_at(NOW_MS, "r-now").0, Verdict::Allow);
}

// A request dated exactly the bound ahead of the kernel's clock is admitted, one millisecond further is refused.
#[test]
fn a_request_from_the_future_is_bounded_alike() {
    assert_eq!(verdict_at(NOW_MS - MAX_AGE_MS, "r-edge").0, Verdict::Allow);
    let (verdict, reason) = verdict_at(NOW_MS - MAX_AGE_MS - 1, "r-future");
    assert_eq!(verdict, Verdict::Deny);
    assert_eq!(
        reason.as_deref(),
        Some(
            format!(
                "request is dated {NOW_MS} ms, after the evaluation time {} ms",
                NOW_MS - MAX_AGE_MS - 1
            )
            .as_str()
        )
    );
}
