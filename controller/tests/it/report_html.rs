//! `chio report` as a process: each kind of result (run bundle, evolve
//! output, matrix output, campaign ledger) rendered twice gives the same
//! bytes, and the same bytes as the page the command that made it wrote
//! (`arena run --html`, `arena evolve --html`, `synthesis.html`); every
//! page declares the policy and holds no script; markup in untrusted
//! strings is escaped; and what is not a result is refused with a code
//! naming what was expected. The pages in a real browser:
//! `report_browser.rs`.

use crate::report_pages::results;
use crate::util;

use std::path::Path;

use results::{hostile, make, ok, s, HOSTILE, HOSTILE_ESCAPED};
use util::{chio, explain};

const CSP: &str = "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">";

/// Runs `chio report` and answers the page.
fn report(dir: &Path, path: &Path, extra: &[&str], name: &str) -> String {
    let out = dir.join(name);
    let mut args = vec!["report", s(path), "--out", s(&out)];
    args.extend_from_slice(extra);
    let output = ok(dir, &args);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("wrote the "), "{stdout}");
    std::fs::read_to_string(&out).unwrap()
}

fn assert_page(html: &str, ids: &[&str]) {
    assert!(html.starts_with("<!DOCTYPE html>\n"), "{html}");
    assert!(html.contains(CSP), "no policy in the page");
    assert!(
        !html.to_lowercase().contains("<script"),
        "a script in the page"
    );
    // Text may name an address; markup never loads one.
    for forbidden in [
        "src=",
        "href=\"http",
        "url(http",
        "@import",
        "<link",
        "<iframe",
    ] {
        assert!(
            !html.contains(forbidden),
            "the page names an external resource ({forbidden})"
        );
    }
    for id in ids {
        assert!(html.contains(&format!("id=\"{id}\"")), "no element #{id}");
    }
}

/// A result, the extra flags of `chio report`, the page its own command
/// wrote, and the element ids its page holds.
type Case<'a> = (&'a Path, &'a [&'a str], Option<&'a Path>, &'a [&'a str]);

// Each kind rendered twice is the same bytes, the same as the page its own command wrote, holds the policy and no script, and says what it found.
#[test]
fn every_kind_renders_the_same_bytes_twice() {
    let r = make();
    let dir = r.tmp.path();
    let decl = ["--declaration", s(&r.declaration)];
    let matrix_decl = ["--declaration", s(&r.matrix_file)];
    let cases: [Case<'_>; 4] = [
        (
            &r.bundle,
            &[],
            Some(&r.run_html),
            &[
                "title",
                "summary",
                "steps",
                "flow",
                "flow-svg",
                "flow-table",
                "decisions",
                "step-1-stages",
            ],
        ),
        (
            &r.evolve,
            &[],
            Some(&r.evolve_html),
            &[
                "title",
                "summary",
                "fitness-chart",
                "populations",
                "shortest",
                "escapes",
            ],
        ),
        (
            &r.matrix,
            &matrix_decl,
            Some(&r.matrix.join("synthesis.html")),
            &[
                "title",
                "summary",
                "matrix-chart",
                "grid",
                "cells",
                "gaps",
                "validators",
            ],
        ),
        (
            &r.ledger,
            &decl,
            None,
            &["title", "summary", "portfolio", "attempts"],
        ),
    ];
    for (i, (path, extra, written, ids)) in cases.iter().enumerate() {
        let first = report(dir, path, extra, &format!("{i}-a.html"));
        let second = report(dir, path, extra, &format!("{i}-b.html"));
        assert_eq!(
            first,
            second,
            "{} renders differently twice",
            path.display()
        );
        if let Some(written) = written {
            assert_eq!(
                std::fs::read_to_string(written).unwrap(),
                first,
                "{} differs from chio report's page",
                written.display()
            );
        }
        assert_page(&first, ids);
    }
    // A second run of the same scenario gives the same page.
    let again = dir.join("again");
    let html = dir.join("again.html");
    let scenario = util::repo_path(results::RUN_SCENARIO);
    ok(
        dir,
        &[
            "arena",
            "run",
            s(&scenario),
            "--out",
            s(&again),
            "--html",
            s(&html),
        ],
    );
    assert_eq!(
        std::fs::read(&html).unwrap(),
        std::fs::read(&r.run_html).unwrap()
    );
    let run = std::fs::read_to_string(&r.run_html).unwrap();
    assert!(run.contains("matched it and 0 did not"), "{run}");
    assert!(run.contains("hand-over refused: the value fails its schema at the root: maxLength"));
    assert!(run.contains(">hand-over ("), "no hand-over in the picture");
    assert!(
        run.contains(">value ("),
        "no value taken from an output in the picture"
    );
    let search = std::fs::read_to_string(&r.evolve_html).unwrap();
    assert!(
        search.contains(" cause(s); the first escape of the search came at generation ")
            && search.contains("id=\"shortest\""),
        "{search}"
    );
    let campaign = report(dir, &r.ledger, &decl, "campaign.html");
    assert!(campaign.contains("walking-skeleton/01"), "{campaign}");
    assert!(campaign.contains("verified delivery"), "{campaign}");
}

// Markup in a bundle's title, reason and labels, a leaderboard's names, a matrix's title and hypothesis, and a ledger's skip reason is printed as text.
#[test]
fn untrusted_markup_is_escaped() {
    let r = make();
    let dir = r.tmp.path();
    let h = hostile(&r);
    let decl = ["--declaration", s(&h.declaration)];
    let matrix_decl = ["--declaration", s(&h.matrix_file)];
    let cases: [(&Path, &[&str]); 4] = [
        (&h.bundle, &[]),
        (&h.evolve, &[]),
        (&h.matrix, &matrix_decl),
        (&h.ledger, &decl),
    ];
    for (i, (path, extra)) in cases.iter().enumerate() {
        let html = report(dir, path, extra, &format!("hostile-{i}.html"));
        assert!(
            html.contains(HOSTILE_ESCAPED),
            "{} does not print the hostile string escaped:\n{html}",
            path.display()
        );
        assert!(
            !html.contains(HOSTILE),
            "{} prints markup raw",
            path.display()
        );
        assert!(
            !html.contains("<script"),
            "{} holds a script",
            path.display()
        );
        assert!(!html.contains("<img"), "{} holds an image", path.display());
    }
}

fn assert_refused(dir: &Path, args: &[&str], code: &str, message: &str) {
    let output = chio(dir, args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("error[{code}]")), "{stderr}");
    assert!(stderr.contains(message), "{stderr}");
}

// A folder or file that is none of the four results is refused naming what was expected; a ledger needs its declaration; a recognised result that cannot be read is refused; nothing is written.
#[test]
fn refuses_what_it_cannot_render() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = dir.join("out.html");
    let empty = dir.join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_refused(
        dir,
        &["report", s(&empty), "--out", s(&out)],
        "CHIO-REPORT-UNKNOWN-INPUT",
        "is a folder that holds none of these results; expected a run bundle (a folder with arena.json)",
    );
    assert_refused(
        dir,
        &["report", s(&dir.join("absent")), "--out", s(&out)],
        "CHIO-REPORT-UNKNOWN-INPUT",
        "does not exist",
    );
    let other = dir.join("other.json");
    std::fs::write(&other, "{\"schema_version\":\"chio.arena.run/v1\"}").unwrap();
    assert_refused(
        dir,
        &["report", s(&other), "--out", s(&out)],
        "CHIO-REPORT-UNKNOWN-INPUT",
        "is a JSON file of schema \"chio.arena.run/v1\"",
    );
    let ledger = dir.join("ledger.json");
    std::fs::write(
        &ledger,
        "{\"schema_version\":\"chio.arena.campaign-ledger/v2\",\"campaign_id\":\"c\",\"declaration_sha256\":\"0\",\"rows\":[]}",
    )
    .unwrap();
    assert_refused(
        dir,
        &["report", s(&ledger), "--out", s(&out)],
        "CHIO-REPORT-NEEDS-DECLARATION",
        "is a campaign ledger",
    );
    let matrix = dir.join("matrix");
    std::fs::create_dir(&matrix).unwrap();
    std::fs::write(matrix.join("synthesis.json"), "{\"schema_version\":").unwrap();
    assert_refused(
        dir,
        &["report", s(&matrix), "--out", s(&out)],
        "CHIO-REPORT-INPUT-UNREADABLE",
        "not a matrix synthesis",
    );
    assert!(!out.exists(), "a refused report wrote its page");
}
