//! Globs over normalised paths, compiled by `globset`.
//!
//! Syntax: `*` matches any run of characters within one component, `?` one
//! byte other than `/` (one character for ASCII; `*` is the way to cover a
//! component whatever its script), and `**` as a whole component any run of
//! components: a leading `**/` matches zero or more whole directories, a
//! `/**/` inside zero or more, and a trailing `/**` everything below the
//! directory *and the directory itself*, so `**/.ssh/**` refuses both
//! `/home/u/.ssh` and everything in it. A `**` that is not a whole component
//! (`a**b`) is a `*`. Every other character is literal: `[`, `]`, `{`, `}`,
//! `,` and `\` are escaped before `globset` reads the pattern, so there are
//! no character classes or alternations and every pattern compiles.
//!
//! Matching is always against a path that `crate::path` normalised (`\`
//! already a separator, `.` and `..` collapsed, percent escapes decoded), so
//! the matcher never sees a dot segment. Callers choose case folding by
//! building the glob with [`Glob::case_insensitive`]: both the pattern and
//! the path are lowercased (Unicode lowercase, not only ASCII) before
//! `globset` compares them. This module does no I/O.

use globset::{GlobBuilder, GlobMatcher};

/// A compiled glob pattern.
#[derive(Debug, Clone)]
pub struct Glob {
    /// The pattern as configured, for reasons and receipts.
    source: String,
    /// The pattern itself and, for a trailing `/**`, the directory it names:
    /// a path matches when one of them does.
    matchers: Vec<Matcher>,
    /// Whether both sides are lowercased before matching.
    fold_case: bool,
}

impl PartialEq for Glob {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source && self.fold_case == other.fold_case
    }
}

impl Eq for Glob {}

impl Glob {
    /// Compiles a case-sensitive glob.
    pub fn new(pattern: &str) -> Self {
        Self::compile(pattern, false)
    }

    /// Compiles a glob that ignores case (both sides lowercased).
    pub fn case_insensitive(pattern: &str) -> Self {
        Self::compile(pattern, true)
    }

    fn compile(pattern: &str, fold_case: bool) -> Self {
        let text = if fold_case {
            pattern.to_lowercase()
        } else {
            pattern.to_string()
        };
        let mut sources = vec![text.as_str()];
        if let Some(directory) = text.strip_suffix("/**") {
            // globset's `dir/**` needs something below `dir`; the directory
            // itself is refused too, as a deny-list must.
            if !directory.is_empty() {
                sources.push(directory);
            }
        }
        let matchers = sources
            .into_iter()
            .map(|source| match compiled(source) {
                Some(matcher) => Matcher::Compiled(matcher),
                // Unreachable: escaping leaves only `*`, `?` and escaped
                // literals, which globset accepts for every input (a property
                // test holds it to that). Should it ever refuse, the glob
                // matches every path rather than none.
                None => Matcher::Everything,
            })
            .collect();
        Glob {
            source: pattern.to_string(),
            matchers,
            fold_case,
        }
    }

    /// The pattern as configured.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `path` (already normalised) matches.
    pub fn is_match(&self, path: &str) -> bool {
        let text = if self.fold_case {
            std::borrow::Cow::Owned(path.to_lowercase())
        } else {
            std::borrow::Cow::Borrowed(path)
        };
        self.matchers.iter().any(|m| match m {
            Matcher::Compiled(matcher) => matcher.is_match(text.as_ref()),
            Matcher::Everything => true,
        })
    }

    /// Whether globset compiled every part of the pattern (always, by
    /// construction; the property tests check it).
    pub fn compiled(&self) -> bool {
        self.matchers
            .iter()
            .all(|m| matches!(m, Matcher::Compiled(_)))
    }
}

/// One compiled alternative of a [`Glob`].
#[derive(Debug, Clone)]
enum Matcher {
    /// What globset compiled.
    Compiled(GlobMatcher),
    /// The fail-closed stand-in for a pattern globset refused.
    Everything,
}

/// The globset matcher of `pattern` read with this module's syntax, or
/// `None` if globset refuses it (which escaping rules out).
fn compiled(pattern: &str) -> Option<GlobMatcher> {
    GlobBuilder::new(&escaped(pattern))
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// `pattern` with every globset metacharacter other than `*` and `?`
/// escaped, so it is read literally.
fn escaped(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    for c in pattern.chars() {
        if matches!(c, '[' | ']' | '{' | '}' | ',' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // The deny-list globs of the spec match what they are meant to and nothing else.
    #[test]
    fn spec_globs() {
        let ssh = Glob::case_insensitive("**/.ssh/**");
        assert!(ssh.is_match("/home/u/.ssh/id_rsa"));
        assert!(ssh.is_match("/home/u/.SSH/id_rsa"));
        assert!(ssh.is_match("/home/u/.ssh"));
        assert!(ssh.is_match(".ssh/config"));
        assert!(!ssh.is_match("/home/u/.sshx/id_rsa"));
        let env = Glob::case_insensitive("**/.env");
        assert!(env.is_match("/workspace/.env"));
        assert!(env.is_match("/workspace/.ENV"));
        assert!(env.is_match(".env"));
        assert!(!env.is_match("/workspace/.env.example"));
    }

    // Single stars stay within one component; case-sensitive globs keep case.
    #[test]
    fn stars_and_case() {
        let g = Glob::new("/workspace/*.txt");
        assert!(g.is_match("/workspace/a.txt"));
        assert!(!g.is_match("/workspace/sub/a.txt"));
        assert!(!g.is_match("/WORKSPACE/a.txt"));
        let deep = Glob::new("/workspace/**");
        assert!(deep.is_match("/workspace/sub/a.txt"));
        assert!(Glob::new("/a/?.md").is_match("/a/x.md"));
        assert!(!Glob::new("/a/?.md").is_match("/a/xy.md"));
    }

    // Case: a case-insensitive glob folds every script, a case-sensitive one folds none.
    #[test]
    fn case_neighbours() {
        let ssh = Glob::case_insensitive("**/.ssh/**");
        for path in ["/h/.Ssh/id", "/h/.sSH", "/H/.SSH/ID_RSA"] {
            assert!(ssh.is_match(path), "{path}");
        }
        let umlaut = Glob::case_insensitive("/w/ÄRGER/**");
        assert!(umlaut.is_match("/w/ärger/x"));
        assert!(umlaut.is_match("/W/Ärger"));
        let upper = Glob::case_insensitive("**/.ENV");
        assert!(upper.is_match("/w/.env"));
        let exact = Glob::new("**/.ssh/**");
        assert!(!exact.is_match("/h/.SSH/id"));
        assert!(!Glob::new("/w/ärger").is_match("/w/Ärger"));
    }

    // Separators: `*` and `?` never cross `/`, and `**` only stands for whole components.
    #[test]
    fn separator_neighbours() {
        let env = Glob::case_insensitive("**/.env");
        assert!(env.is_match("/a/b/c/.env"));
        assert!(!env.is_match("/a/b.env"));
        assert!(!env.is_match("/a/x.env"));
        assert!(!env.is_match("/a/.env/x"));
        let star = Glob::new("/w/*");
        assert!(star.is_match("/w/a"));
        assert!(star.is_match("/w/"));
        assert!(!star.is_match("/w/a/b"));
        assert!(!Glob::new("/w?a").is_match("/w/a"));
        // `**` that is not a whole component is a `*`.
        let inner = Glob::new("/w/a**b");
        assert!(inner.is_match("/w/axyb"));
        assert!(!inner.is_match("/w/ax/yb"));
        // A path holding a newline is still one component of text.
        assert!(Glob::case_insensitive("**/.ssh/**").is_match("/h/.ssh/a\nb"));
        assert!(Glob::new("/w/*").is_match("/w/a\nb"));
        assert!(Glob::case_insensitive("**/.env").is_match("/a\nb/.env"));
    }

    // `**` at either end and in the middle: zero or more whole components, the directory itself included.
    #[test]
    fn double_star_ends() {
        let all = Glob::new("**");
        for path in ["/", "/a", "a/b/c", ".env"] {
            assert!(all.is_match(path), "{path}");
        }
        let lead = Glob::new("**/x");
        for path in ["x", "/x", "/a/b/x"] {
            assert!(lead.is_match(path), "{path}");
        }
        assert!(!lead.is_match("/ax"));
        assert!(!lead.is_match("/x/y"));
        let tail = Glob::new("/w/internal/**");
        for path in ["/w/internal", "/w/internal/a", "/w/internal/a/b"] {
            assert!(tail.is_match(path), "{path}");
        }
        assert!(!tail.is_match("/w/internalx"));
        assert!(!tail.is_match("/w/internal.txt"));
        assert!(!tail.is_match("/w"));
        let middle = Glob::new("/a/**/b");
        for path in ["/a/b", "/a/x/b", "/a/x/y/b"] {
            assert!(middle.is_match(path), "{path}");
        }
        assert!(!middle.is_match("/ab"));
        assert!(!middle.is_match("/a/xb"));
        assert!(!middle.is_match("/a/b/c"));
    }

    // Dot segments never reach the matcher: the normaliser collapses them first, so a detour is caught and a literal `..` never matches a name.
    #[test]
    fn dot_segments_are_normalised_before_matching() {
        let ssh = Glob::case_insensitive("**/.ssh/**");
        for raw in [
            "/w/./.ssh/id",
            "/w/x/../.ssh/id",
            "/w/.ssh/./x/..",
            "/w\\.ssh\\id",
        ] {
            let normal = crate::path::normalize_path(raw).expect("normalises");
            assert!(ssh.is_match(&normal), "{raw} -> {normal}");
        }
        let normal = crate::path::normalize_path("/w/.ssh/../notes").expect("normalises");
        assert!(!ssh.is_match(&normal), "{normal}");
    }

    // Characters globset would read as syntax are literal: there are no classes or alternations.
    #[test]
    fn metacharacters_are_literal() {
        let class = Glob::new("/w/[ab].txt");
        assert!(class.is_match("/w/[ab].txt"));
        assert!(!class.is_match("/w/a.txt"));
        let alt = Glob::new("/w/{a,b}");
        assert!(alt.is_match("/w/{a,b}"));
        assert!(!alt.is_match("/w/a"));
        assert!(Glob::new("/w/a\\b").is_match("/w/a\\b"));
        for broken in ["[", "]", "{", "}", "[z-a]", "\\", "a{b", "**/[", "{,}"] {
            assert!(Glob::new(broken).compiled(), "{broken}");
            assert!(Glob::new(broken).is_match(broken), "{broken}");
            assert!(!Glob::new(broken).is_match("/other"), "{broken}");
        }
    }

    // `?` stands for one byte other than `/`: one ASCII character, never a whole multi-byte one.
    #[test]
    fn question_mark_is_one_byte() {
        let one = Glob::new("/a/?.md");
        assert!(one.is_match("/a/x.md"));
        assert!(!one.is_match("/a/.md"));
        assert!(!one.is_match("/a/é.md"));
        assert!(Glob::new("/a/??.md").is_match("/a/é.md"));
        assert!(Glob::new("/a/*.md").is_match("/a/é.md"));
    }

    proptest::proptest! {
        // Every pattern compiles, so no configured glob silently matches everything.
        #[test]
        fn every_pattern_compiles(pattern in "\\PC{0,24}") {
            proptest::prop_assert!(Glob::new(&pattern).compiled());
            proptest::prop_assert!(Glob::case_insensitive(&pattern).compiled());
        }

        // A pattern without `*` or `?` matches exactly itself.
        #[test]
        fn literal_patterns_match_only_themselves(text in "[^*?]{1,24}", extra in "[a-z/]{1,4}") {
            let glob = Glob::new(&text);
            proptest::prop_assert!(glob.is_match(&text));
            let longer = format!("{text}{extra}");
            // A trailing `/**` is not literal; nothing else may match more.
            proptest::prop_assert!(!glob.is_match(&longer));
        }
    }
}
