//! libFuzzer entry point of the `capability_token` target; the body, its properties
//! and its seeds live in `chio_fuzz_targets` (fuzz/targets), so
//! `cargo test` replays the same function on the committed corpus.
#![no_main]
#![forbid(unsafe_code)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    chio_fuzz_targets::capability_token(data);
});
