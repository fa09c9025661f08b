//! The matrices' integration tests, one test binary. Run one area with its
//! module path as the filter, for example
//! `cargo test -p chio-experiment --test it -- matrix_attempts::`.

mod matrix_attempts;
