//! A small glob matcher for normalised paths.
//!
//! Syntax: `*` matches any run of characters within one component, `?` one
//! character other than `/`, `**` any run including `/`. A `**/` matches zero
//! or more whole directories and a trailing `/**` also matches the directory
//! itself, so `**/.ssh/**` refuses both `/home/u/.ssh` and everything in it.
//! Any other character is literal (there are no character classes). Matching
//! is always against a normalised path; callers choose case folding by
//! building the glob with [`Glob::case_insensitive`].

/// One element of a compiled glob.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    Any,
    One,
    /// `**` not followed by `/`: any run, separators included.
    AnyDeep,
    /// `**/`: empty, or any run ending in `/`.
    AnyDirs,
    /// A trailing `/**`: empty, or `/` followed by anything.
    SubtreeTail,
}

/// A compiled glob pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    /// The pattern as configured, for reasons and receipts.
    source: String,
    tokens: Vec<Token>,
    fold_case: bool,
}

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
        let chars: Vec<char> = text.chars().collect();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '*' if chars.get(i + 1) == Some(&'*') => {
                    if chars.get(i + 2) == Some(&'/') {
                        tokens.push(Token::AnyDirs);
                        i += 3;
                    } else {
                        if i + 2 == chars.len() && tokens.last() == Some(&Token::Literal('/')) {
                            tokens.pop();
                            tokens.push(Token::SubtreeTail);
                        } else {
                            tokens.push(Token::AnyDeep);
                        }
                        i += 2;
                    }
                }
                '*' => {
                    tokens.push(Token::Any);
                    i += 1;
                }
                '?' => {
                    tokens.push(Token::One);
                    i += 1;
                }
                c => {
                    tokens.push(Token::Literal(c));
                    i += 1;
                }
            }
        }
        Glob {
            source: pattern.to_string(),
            tokens,
            fold_case,
        }
    }

    /// The pattern as configured.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `path` (already normalised) matches.
    pub fn is_match(&self, path: &str) -> bool {
        let text: Vec<char> = if self.fold_case {
            path.to_lowercase().chars().collect()
        } else {
            path.chars().collect()
        };
        let width = text.len() + 1;
        let mut memo = vec![None; (self.tokens.len() + 1) * width];
        self.matches_from(0, 0, &text, &mut memo, width)
    }

    fn matches_from(
        &self,
        ti: usize,
        si: usize,
        text: &[char],
        memo: &mut [Option<bool>],
        width: usize,
    ) -> bool {
        if let Some(known) = memo[ti * width + si] {
            return known;
        }
        let result = match self.tokens.get(ti) {
            None => si == text.len(),
            Some(Token::Literal(c)) => {
                text.get(si) == Some(c) && self.matches_from(ti + 1, si + 1, text, memo, width)
            }
            Some(Token::One) => {
                matches!(text.get(si), Some(c) if *c != '/')
                    && self.matches_from(ti + 1, si + 1, text, memo, width)
            }
            Some(Token::Any) => (si..=text.len())
                .take_while(|&end| end == si || text[end - 1] != '/')
                .any(|end| self.matches_from(ti + 1, end, text, memo, width)),
            Some(Token::AnyDeep) => {
                (si..=text.len()).any(|end| self.matches_from(ti + 1, end, text, memo, width))
            }
            Some(Token::AnyDirs) => {
                self.matches_from(ti + 1, si, text, memo, width)
                    || (si + 1..=text.len()).any(|end| {
                        text[end - 1] == '/' && self.matches_from(ti + 1, end, text, memo, width)
                    })
            }
            Some(Token::SubtreeTail) => si == text.len() || text.get(si) == Some(&'/'),
        };
        memo[ti * width + si] = Some(result);
        result
    }
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
}
