//! The HTML report tests' shared parts: the results each kind of `chio
//! report` input is made from (`results`) and the DevTools client the
//! browser tests drive a headless Chromium with (`cdp`).

pub mod cdp;
pub mod results;
