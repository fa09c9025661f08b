//! The campaigns' integration tests, one test binary. Run one area with its
//! module path as the filter, for example
//! `cargo test -p chio-campaign --test it -- definition_hash::`.
//!
//! Module map: the shared helper `git_repo` (git in a temporary folder,
//! also used by `chio-controller`'s tests); then one module per area.

mod git_repo;

mod campaign_evidence;
mod definition_hash;
