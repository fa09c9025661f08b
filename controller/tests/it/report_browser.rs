//! The pages `chio report` writes, loaded in a real headless Chromium
//! driven over its DevTools protocol (`report_pages/cdp.rs`): for each kind
//! of result the page loads with no console message, no log error, no
//! exception and no network request but its own file; its key elements are
//! in the DOM; it holds no script element, and markup in untrusted strings
//! shows as text; and its screenshot is not blank. Two control pages prove
//! the listeners hear what they listen for: a page that loads an image
//! over the network, and a script the policy refuses.
//!
//! The browser is Debian's `chromium`, named by `CHIO_CHROMIUM`; `.ci/run`
//! installs it. Without it these tests say why and return, except under
//! CI, where they fail.

use crate::report_pages::cdp;
use crate::report_pages::results;

use std::path::{Path, PathBuf};

use cdp::Browser;
use results::{hostile, make, ok, s};
use serde_json::Value;

/// The executable `.ci/run` provides for these tests (`chio_tests::outside`).
fn chromium() -> Option<PathBuf> {
    chio_tests::outside::outside_part(chio_tests::outside::CHROMIUM, "the browser tests")
}

fn file_url(path: &Path) -> String {
    format!("file://{}", path.canonicalize().unwrap().display())
}

/// What a loaded page did that a report must never do, in words.
fn misdeeds(browser: &Browser, url: &str) -> Vec<String> {
    let mut found = Vec::new();
    for event in &browser.events {
        let params = &event["params"];
        match event["method"].as_str().unwrap_or("") {
            "Network.requestWillBeSent" => {
                let requested = params["request"]["url"].as_str().unwrap_or("");
                if requested != url {
                    found.push(format!("network request to {requested}"));
                }
            }
            "Log.entryAdded" if params["entry"]["level"] == "error" => {
                found.push(format!("log error: {}", params["entry"]["text"]));
            }
            "Runtime.consoleAPICalled" => {
                found.push(format!("console {}: {}", params["type"], params["args"]));
            }
            "Runtime.exceptionThrown" => {
                found.push(format!("exception: {}", params["exceptionDetails"]));
            }
            _ => {}
        }
    }
    found
}

/// Distinct colours and non-white pixels of a PNG.
fn colours(png_bytes: &[u8]) -> (usize, usize, (u32, u32)) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buffer = vec![0; reader.output_buffer_size().expect("a buffer size")];
    let info = reader.next_frame(&mut buffer).expect("a frame");
    let channels = info.color_type.samples();
    let pixels = &buffer[..info.buffer_size()];
    let mut distinct = std::collections::BTreeSet::new();
    let mut ink = 0;
    for pixel in pixels.chunks(channels) {
        let rgb = [pixel[0], pixel[1 % channels], pixel[2 % channels]];
        if rgb != [255, 255, 255] {
            ink += 1;
        }
        distinct.insert(rgb);
    }
    (distinct.len(), ink, (info.width, info.height))
}

/// Loads `page` and checks everything a report page must satisfy;
/// answers the page's text.
fn check_page(browser: &mut Browser, page: &Path, ids: &[&str]) -> String {
    let url = file_url(page);
    browser.open(&url);
    let found = misdeeds(browser, &url);
    assert!(found.is_empty(), "{}: {found:#?}", page.display());
    let script = format!(
        "JSON.stringify({}.filter(id => document.getElementById(id) === null))",
        serde_json::to_string(ids).unwrap()
    );
    let missing = browser.evaluate(&script);
    assert_eq!(missing, "[]", "{}: elements missing by id", page.display());
    assert_eq!(
        browser.evaluate("document.querySelectorAll('script, iframe, object, embed, img').length"),
        Value::from(0),
        "{}: an active or loading element is in the DOM",
        page.display()
    );
    let shot = browser.screenshot();
    let (distinct, ink, size) = colours(&shot);
    assert!(
        distinct > 2 && ink > 1000,
        "{}: the screenshot ({size:?}) is blank: {distinct} colours, {ink} non-white pixels",
        page.display()
    );
    browser
        .evaluate("document.body.innerText")
        .as_str()
        .unwrap_or_default()
        .to_string()
}

// Each kind of report, and each kind with markup in its untrusted strings, loads cleanly in headless Chromium with its elements present, its markup shown as text, and a screenshot that is not blank.
#[test]
fn every_report_loads_cleanly_in_chromium() {
    let Some(chromium) = chromium() else { return };
    let r = make();
    let dir = r.tmp.path();
    let matrix_html = r.matrix.join("synthesis.html");
    let campaign_html = dir.join("campaign.html");
    ok(
        dir,
        &[
            "report",
            s(&r.ledger),
            "--declaration",
            s(&r.declaration),
            "--out",
            s(&campaign_html),
        ],
    );
    let mut browser = Browser::launch(&chromium);
    let run_text = check_page(
        &mut browser,
        &r.run_html,
        &[
            "title",
            "summary",
            "steps",
            "flow-svg",
            "flow-table",
            "decisions",
            "step-1-stages",
            "evidence",
        ],
    );
    assert!(run_text.contains("hand-over refused"), "{run_text}");
    let search_text = check_page(
        &mut browser,
        &r.evolve_html,
        &[
            "title",
            "summary",
            "fitness-chart",
            "populations",
            "shortest",
            "escapes",
        ],
    );
    assert!(search_text.contains("escaped"), "{search_text}");
    check_page(
        &mut browser,
        &matrix_html,
        &[
            "title",
            "summary",
            "matrix-chart",
            "grid",
            "cells",
            "gaps",
            "validators",
        ],
    );
    check_page(
        &mut browser,
        &campaign_html,
        &["title", "summary", "portfolio", "attempts"],
    );

    let h = hostile(&r);
    let cases: [(&Path, Vec<&str>); 4] = [
        (&h.bundle, vec![]),
        (&h.evolve, vec![]),
        (&h.matrix, vec!["--declaration", s(&h.matrix_file)]),
        (&h.ledger, vec!["--declaration", s(&h.declaration)]),
    ];
    for (i, (path, extra)) in cases.iter().enumerate() {
        let page = dir.join(format!("hostile-{i}.html"));
        let mut args = vec!["report", s(path), "--out", s(&page)];
        args.extend(extra.iter().copied());
        ok(dir, &args);
        let text = check_page(&mut browser, &page, &["title", "summary"]);
        assert!(
            text.contains("<script>alert(\"x\")</script>"),
            "{}: the hostile string is not shown as text:\n{text}",
            page.display()
        );
    }
}

// The listeners hear what they listen for: an image fetched over the network is a request, and a script the policy refuses is a logged error, so a clean page is clean because nothing happened.
#[test]
fn the_listeners_catch_a_request_and_a_refused_script() {
    let Some(chromium) = chromium() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let fetching = tmp.path().join("fetching.html");
    std::fs::write(
        &fetching,
        "<!DOCTYPE html><html><body><p>x</p><img src=\"http://127.0.0.1:9/x.png\"></body></html>",
    )
    .unwrap();
    let scripted = tmp.path().join("scripted.html");
    std::fs::write(
        &scripted,
        "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\"></head><body><script>console.log('ran')</script></body></html>",
    )
    .unwrap();
    let mut browser = Browser::launch(&chromium);
    let url = file_url(&fetching);
    browser.open(&url);
    let found = misdeeds(&browser, &url);
    assert!(
        found
            .iter()
            .any(|f| f.contains("network request to http://127.0.0.1:9/x.png")),
        "{found:#?}"
    );
    let url = file_url(&scripted);
    browser.open(&url);
    let found = misdeeds(&browser, &url);
    assert!(
        found.iter().any(|f| f.starts_with("log error")),
        "{found:#?}"
    );
    assert!(
        !found.iter().any(|f| f.starts_with("console")),
        "{found:#?}"
    );
}
