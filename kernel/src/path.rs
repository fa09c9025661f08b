//! Lexical path handling: normalisation and finding path-like arguments.
//!
//! The kernel never touches a filesystem, so it reasons about paths as text.
//! A path is normalised by percent-decoding, trimming the whitespace and
//! invisible format characters around it, dropping a `file:`, `file://` or
//! `file://localhost/` prefix (in any case), turning `\` into `/`, dropping
//! empty and `.` components and resolving `..` against the components before
//! it; a `..` that would climb above the start (the root for an absolute
//! path) is refused as an escape rather than clamped. Case is preserved here:
//! scope constraints (`path_prefix`) compare case-sensitively, as the tool
//! servers' filesystems do, while the deny-list guard (`forbidden-path`)
//! lowercases both sides so that `.SSH` cannot slip past a rule for `.ssh` on
//! a case-insensitive filesystem.
//!
//! Which arguments are paths is decided here too, for every check that
//! constrains paths: a string is path-like when its key is a path key
//! (`path`, `file`, `dir`, `target`, `source`, `destination`, ... or a key
//! ending in `_path`, `_file`, `_dir`, plural forms included) or when the
//! value itself looks like a path, as written or percent-decoded (without
//! the whitespace around it, starts with `/`, a drive such as `C:\\` or
//! `c:/`, `~`, `./`, `../`, `file:` in any case, or contains a `..`
//! component). A drive is an absolute path's root, as `/` is. Every path-like string must satisfy
//! a constraint, so a decoy field cannot satisfy it on behalf of another.

use std::borrow::Cow;

use serde_json::Value;

use crate::reason::DenyReason;

/// Key names whose string values are paths wherever they appear.
const PATH_KEYS: &[&str] = &[
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "filepath",
    "dir",
    "dirs",
    "directory",
    "folder",
    "target",
    "source",
    "src",
    "dst",
    "dest",
    "destination",
    "from",
    "to",
    "root",
    "cwd",
];

/// Key suffixes that mark a path key (`output_path`, `config_file` ...).
const PATH_KEY_SUFFIXES: &[&str] = &["_path", "_paths", "_file", "_files", "_dir", "_dirs"];

/// A path that cannot be normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathProblem {
    /// A `..` climbs above the start of the path.
    EscapesRoot,
    /// A NUL byte, which no filesystem path may contain.
    NulByte,
}

impl PathProblem {
    /// The deny reason for this problem on the path as presented.
    pub fn reason(&self, raw: &str) -> DenyReason {
        let path = raw.to_string();
        match self {
            PathProblem::EscapesRoot => DenyReason::PathEscapesRoot { path },
            PathProblem::NulByte => DenyReason::PathNulByte { path },
        }
    }
}

/// One path-like string found in a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathArgument {
    /// JSON pointer of the value, so a reason can say which field it was.
    pub pointer: String,
    /// The string as presented (before normalisation).
    pub raw: String,
}

/// Normalises a path lexically (see the module doc); keeps it absolute when it
/// was absolute and relative otherwise.
pub fn normalize_path(raw: &str) -> Result<String, PathProblem> {
    let decoded = percent_decode(raw);
    if decoded.contains('\0') {
        return Err(PathProblem::NulByte);
    }
    // Whitespace (and invisible format characters) around a path is not
    // part of the file a server that trims its input opens; a URI scheme
    // and its host name are case-insensitive (RFC 3986), and `localhost`
    // names this machine (RFC 8089).
    let mut text = trim_around(&decoded).replace('\\', "/");
    if let Some(rest) = strip_scheme(&text, "file://localhost/") {
        text = format!("/{rest}");
    } else if let Some(rest) =
        strip_scheme(&text, "file://").or_else(|| strip_scheme(&text, "file:"))
    {
        text = rest.to_string();
    }
    // A drive may follow what names it: `file:///C:/...` and
    // `file://localhost/C:/...` (RFC 8089) leave `/C:/...`, and Win32's
    // `\\?\C:\...` and `\\.\C:\...` leave `//?/C:/...` and `//./C:/...`.
    for prefix in ["//?/", "//./", "/"] {
        if let Some(rest) = text.strip_prefix(prefix) {
            if drive_of(rest).is_some() {
                text = rest.to_string();
                break;
            }
        }
    }
    // A drive letter (`C:/`, `c:\\`) is the root of an absolute path, as
    // `/` is: kept (in its case), never climbed above.
    let drive = drive_of(&text).map(str::to_string);
    if let Some(drive) = &drive {
        text = text[drive.len()..].to_string();
    }
    let absolute = drive.is_some() || text.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in text.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(PathProblem::EscapesRoot);
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    Ok(if let Some(drive) = drive {
        format!("{drive}/{joined}")
    } else if absolute {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    })
}

/// The drive a Windows path starts with (`C:` of `C:/Users` or of `C:`),
/// after `\\` has become `/`.
fn drive_of(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    (drive && (bytes.len() == 2 || bytes[2] == b'/')).then(|| &text[..2])
}

/// Whether normalised `path` lies at or under normalised `prefix`, comparing
/// whole components (so `/workspace2` is not under `/workspace/`).
pub fn is_under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    if prefix.is_empty() {
        return path.starts_with('/');
    }
    path == prefix || (path.starts_with(prefix) && path.as_bytes().get(prefix.len()) == Some(&b'/'))
}

/// Every path-like string in `arguments`, in document order.
pub fn path_arguments(arguments: &Value) -> Vec<PathArgument> {
    let mut found = Vec::new();
    walk(arguments, "", false, &mut found);
    found
}

fn walk(value: &Value, pointer: &str, under_path_key: bool, found: &mut Vec<PathArgument>) {
    match value {
        Value::String(s) if under_path_key || looks_like_path(s) => {
            found.push(PathArgument {
                pointer: if pointer.is_empty() {
                    "/".to_string()
                } else {
                    pointer.to_string()
                },
                raw: s.clone(),
            });
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{pointer}/{i}"), under_path_key, found);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let escaped = key.replace('~', "~0").replace('/', "~1");
                walk(
                    item,
                    &format!("{pointer}/{escaped}"),
                    is_path_key(key),
                    found,
                );
            }
        }
        _ => {}
    }
}

/// Whether a key names a path.
pub fn is_path_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    PATH_KEYS.contains(&key.as_str()) || PATH_KEY_SUFFIXES.iter().any(|s| key.ends_with(s))
}

/// `text` without the whitespace and the invisible format characters (zero
/// width space, joiners, word joiner, byte order mark) around it.
fn trim_around(text: &str) -> &str {
    text.trim_matches(|c: char| {
        c.is_whitespace() || matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}')
    })
}

/// `text` after `scheme`, compared without regard to ASCII case.
fn strip_scheme<'t>(text: &'t str, scheme: &str) -> Option<&'t str> {
    let head = text.get(..scheme.len())?;
    head.eq_ignore_ascii_case(scheme)
        .then(|| &text[scheme.len()..])
}

/// Whether a free-standing string value looks like a path: judged on the
/// value without the whitespace around it, so a trailing newline does not
/// hide a path; text of several lines is prose, not a path.
pub fn looks_like_path(s: &str) -> bool {
    looks_like_path_as_written(s) || looks_like_path_as_written(&percent_decode(s))
}

/// [`looks_like_path`] of the text as it is written (the caller tries it
/// percent-decoded too, as the normaliser reads it).
fn looks_like_path_as_written(s: &str) -> bool {
    let t = trim_around(s);
    if t.contains('\n') {
        return false;
    }
    let t = t.replace('\\', "/");
    t.starts_with('/')
        || (drive_of(&t).is_some() && t.len() > 2)
        || t.starts_with('~')
        || t.starts_with("./")
        || t.starts_with("../")
        || strip_scheme(&t, "file:").is_some()
        || t == ".."
        || t.contains("/../")
        || t.ends_with("/..")
        || t.to_ascii_lowercase().contains("%2e%2e")
}

/// `%XX` escapes decoded once, in either case of hex digit; a `%` not
/// followed by two hex digits is kept as it is, and decoded bytes that are
/// not UTF-8 read as U+FFFD.
pub(crate) fn percent_decode(raw: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(raw).decode_utf8_lossy()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Dots and double dots resolve lexically; climbing above the root is refused.
    #[test]
    fn normalisation() {
        assert_eq!(normalize_path("/a/./b/../c").unwrap(), "/a/c");
        assert_eq!(normalize_path("/a//b/").unwrap(), "/a/b");
        assert_eq!(normalize_path("\\a\\b").unwrap(), "/a/b");
        assert_eq!(normalize_path("/a/%2e%2e/b").unwrap(), "/b");
        assert_eq!(normalize_path("a/.."), Ok(".".to_string()));
        assert_eq!(normalize_path("/a/../.."), Err(PathProblem::EscapesRoot));
        assert_eq!(normalize_path("../x"), Err(PathProblem::EscapesRoot));
        assert_eq!(normalize_path("/a\0b"), Err(PathProblem::NulByte));
        // A scheme in any case, and whitespace around the path, are not part
        // of the file opened.
        assert_eq!(normalize_path("FILE:///etc/shadow").unwrap(), "/etc/shadow");
        assert_eq!(normalize_path("File:/etc/shadow").unwrap(), "/etc/shadow");
        assert_eq!(normalize_path(" /etc/shadow\n").unwrap(), "/etc/shadow");
        assert_eq!(normalize_path("file:///a/b\r\n").unwrap(), "/a/b");
        assert!(looks_like_path("FILE:///etc/shadow"));
        assert!(looks_like_path("fIlE:relative"));
        assert!(looks_like_path("file:///home/u/.ssh/id_rsa\n"));
        assert!(looks_like_path("/etc/shadow\r\n"));
        assert!(!looks_like_path("/first line\nsecond line"));
        assert!(!looks_like_path("files: several"));
        // A drive letter is an absolute path's root, in either separator.
        assert_eq!(
            normalize_path("C:\\Users\\u\\.ssh\\id_rsa").unwrap(),
            "C:/Users/u/.ssh/id_rsa"
        );
        assert_eq!(normalize_path("c:/a/./b/../c").unwrap(), "c:/a/c");
        assert_eq!(normalize_path("C:/../x"), Err(PathProblem::EscapesRoot));
        assert_eq!(normalize_path("C:").unwrap(), "C:/");
        // Every spelling a Windows server opens as the same file.
        for spelling in [
            "file:///C:/Users/u/.ssh/id_rsa",
            "FILE://localhost/C:/Users/u/.ssh/id_rsa",
            "\\\\?\\C:\\Users\\u\\.ssh\\id_rsa",
            "\\\\.\\C:\\Users\\u\\.ssh\\id_rsa",
            "/C:/Users/u/.ssh/id_rsa",
        ] {
            assert_eq!(
                normalize_path(spelling).unwrap(),
                "C:/Users/u/.ssh/id_rsa",
                "{spelling:?}"
            );
            assert!(looks_like_path(spelling), "{spelling:?}");
        }
        for drive in [
            "C:\\Users\\u\\.ssh\\id_rsa",
            "c:/Users/u/.ssh/id_rsa",
            "z:\\x",
        ] {
            assert!(looks_like_path(drive), "{drive:?}");
        }
        for not_path in ["C:", "https://x.example/a", "a:b", "ab:/c"] {
            assert!(!looks_like_path(not_path), "{not_path:?}");
        }
        // The localhost authority names this machine; a path encoded or
        // wrapped in invisible characters is still a path.
        assert_eq!(
            normalize_path("file://localhost/etc/shadow").unwrap(),
            "/etc/shadow"
        );
        assert_eq!(
            normalize_path("FiLe://LocalHost/etc/shadow").unwrap(),
            "/etc/shadow"
        );
        assert_eq!(
            normalize_path("\u{200B}/etc/shadow\u{FEFF}").unwrap(),
            "/etc/shadow"
        );
        assert_eq!(normalize_path("%20/etc/shadow").unwrap(), "/etc/shadow");
        for hidden in [
            "%20/etc/shadow",
            "file%3A///etc/shadow",
            "%2Fetc/shadow",
            "\u{200B}/etc/shadow",
        ] {
            assert!(looks_like_path(hidden), "{hidden:?}");
        }
        assert_eq!(
            PathProblem::EscapesRoot.reason("/a/../..").to_string(),
            "path /a/../.. escapes the root"
        );
    }

    // Escapes decode once, in either case; a stray or truncated `%` stays;
    // bytes that are not UTF-8 become U+FFFD.
    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("/a/%2e%2E/b"), "/a/../b");
        assert_eq!(percent_decode("%252e"), "%2e");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%%41"), "%A");
        assert_eq!(percent_decode("%ff/x"), "\u{fffd}/x");
        assert_eq!(percent_decode("%c3%a9"), "\u{e9}");
        assert_eq!(percent_decode("%00"), "\0");
        assert_eq!(normalize_path("/a%2fb%5c..%2fc").unwrap(), "/a/c");
        assert_eq!(
            normalize_path("/a/%2e%2e%2f%2e%2e"),
            Err(PathProblem::EscapesRoot)
        );
        assert_eq!(normalize_path("/a%00b"), Err(PathProblem::NulByte));
    }

    // Prefix containment compares whole components.
    #[test]
    fn containment() {
        assert!(is_under("/workspace/a", "/workspace/"));
        assert!(is_under("/workspace", "/workspace/"));
        assert!(!is_under("/workspace2/a", "/workspace/"));
        assert!(!is_under("/etc", "/workspace"));
    }

    // Path keys at any depth and path-looking values are both found.
    #[test]
    fn finds_every_path_argument() {
        let args = json!({
            "path": "notes.txt",
            "options": {"backup_file": "b.txt", "note": "/etc/passwd"},
            "message": "hello",
            "list": ["../up"]
        });
        let found: Vec<String> = path_arguments(&args).into_iter().map(|p| p.raw).collect();
        // Document order: the argument map keeps insertion order.
        assert_eq!(found, vec!["notes.txt", "b.txt", "/etc/passwd", "../up"]);
    }
}
