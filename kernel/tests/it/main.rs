//! The kernel's integration tests, one test binary: each module below was
//! once a binary of its own, and one binary links the workspace once
//! instead of once per area. Run one area with its module path as the
//! filter, for example `cargo test -p chio-kernel --test it -- hostile::`.
//! The planted weaknesses stay a binary of their own (`tests/planted.rs`,
//! built only with the `planted-weakness` feature).
//!
//! Module map: the shared helper `util` (a small authority world: keys,
//! grants, kernels, signed requests, a deterministic dispatcher); then one
//! module per area, named as its binary was.

mod util;

mod carried;
mod closing;
mod detector_bench;
mod detector_generalization;
mod fuzz_decode;
mod hostile;
mod injection_corpus;
#[path = "../support/injection_training.rs"]
mod injection_training;
mod integrity;
mod kernel_surface;
mod key_agents;
mod label_flow;
mod learned_model;
mod monetary_budgets;
mod pipeline;
mod planner;
mod portable;
mod properties;
mod request_age;
mod tool_poisoning;
