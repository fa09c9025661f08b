//! The adversary search's integration tests, one test binary. Run one area
//! with its module path as the filter, for example
//! `cargo test -p chio-adversary --test it -- definition_goals::`.

mod definition_goals;
