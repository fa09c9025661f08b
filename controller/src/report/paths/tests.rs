//! Unit tests of where a report may go.

use super::*;

/// A folder holding `s.toml` and `prompts/p.txt`, and the guards of a
/// command reading both and writing `out/`.
fn workspace() -> (tempfile::TempDir, Vec<Guard>) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("prompts")).unwrap();
    std::fs::write(tmp.path().join("s.toml"), "x").unwrap();
    std::fs::write(tmp.path().join("prompts/p.txt"), "p").unwrap();
    let guards = vec![
        Guard::reads(tmp.path().join("s.toml"), "the scenario file"),
        Guard::reads(
            tmp.path().join("prompts/p.txt"),
            "a file or folder the scenario reads",
        ),
        Guard::writes(tmp.path().join("out"), "the --out folder"),
    ];
    (tmp, guards)
}

fn junit(path: &Path) -> Report<'_> {
    Report {
        flag: "--junit",
        path: Some(path),
        example: "target/reports/run.xml",
    }
}

fn html(path: &Path) -> Report<'_> {
    Report {
        flag: "--html",
        path: Some(path),
        example: "target/reports/run.html",
    }
}

// A report at an input, at a link to one, reached through `..` from a folder not made yet, or inside the output folder not made yet, is refused with exit 2, naming the flag, the path, what it is and the fix.
#[test]
fn a_report_over_an_input_or_inside_the_output_is_refused() {
    let (tmp, guards) = workspace();
    let dir = tmp.path();
    std::os::unix::fs::symlink(dir.join("s.toml"), dir.join("link.xml")).unwrap();
    for (path, wanted) in [
        (dir.join("s.toml"), "is the scenario file"),
        (dir.join("link.xml"), "is the scenario file"),
        (dir.join("new/../s.toml"), "is the scenario file"),
        (
            dir.join("./prompts/p.txt"),
            "is a file or folder the scenario reads",
        ),
        (dir.join("out/arena.json"), "lies inside the --out folder"),
        (dir.join("out"), "is the --out folder"),
    ] {
        let err = check_reports("arena run", &[junit(&path)], &guards).unwrap_err();
        assert_eq!(err.code, "CHIO-REPORT-PATH");
        assert_eq!(err.exit.code(), 2);
        assert!(
            err.message
                .starts_with(&format!("--junit {} {wanted}", path.display())),
            "{}",
            err.message
        );
        assert!(
            err.help
                .starts_with("pass --junit a path outside what arena run reads and writes"),
            "{}",
            err.help
        );
    }
    assert_eq!(std::fs::read(dir.join("s.toml")).unwrap(), b"x");
}

// Two reports of one command at one path, however written, are refused; reports beside the inputs and the output each at their own path pass.
#[test]
fn two_reports_at_one_path_are_refused() {
    let (tmp, guards) = workspace();
    let dir = tmp.path();
    let a = dir.join("reports/run.out");
    let b = dir.join("reports/./sub/../run.out");
    let err = check_reports("arena run", &[junit(&a), html(&b)], &guards).unwrap_err();
    assert_eq!(err.code, "CHIO-REPORT-PATH");
    assert!(
        err.message.contains("name the same file"),
        "{}",
        err.message
    );
    assert!(err.help.starts_with("give each report its own path"));
    let c = dir.join("reports/run.html");
    let out_sibling = dir.join("out.xml");
    assert!(check_reports("arena run", &[junit(&a), html(&c)], &guards).is_ok());
    assert!(check_reports("arena run", &[junit(&out_sibling)], &guards).is_ok());
    let absent = Report {
        flag: "--html",
        path: None,
        example: "x",
    };
    assert!(check_reports("arena run", &[junit(&a), absent], &guards).is_ok());
}
