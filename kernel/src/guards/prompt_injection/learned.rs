//! `ngram-model`: a learned rule, a logistic regression over hashed n-grams
//! of a normalised reading, that fires alongside the hand-written patterns.
//!
//! The reading (line breaks read as spaces) is cut into tokens: runs of
//! letters, digits and `_` (words) and runs of other visible characters
//! (symbols such as `<|`, `###` or `{"`), none longer than
//! [`MAX_TOKEN_CHARS`] characters (a longer run is cut). Tokens are grouped
//! in windows of [`WINDOW_TOKENS`] tokens, one every [`STRIDE_TOKENS`], so
//! an instruction buried in a long document is read in a window of its own
//! size. A window's features are its tokens, its pairs of adjacent tokens
//! and the character 3-, 4- and 5-grams of its words (with a mark at each
//! end of the word), each hashed with 32-bit FNV-1a into one of
//! 2^[`BUCKET_BITS`] buckets; the window's vector holds `1/norm` for each
//! of its `n` distinct buckets, `norm = sqrt(max(n, 32))` ([`norm`]). A
//! window scores `bias + sum of its buckets' weights / norm` and the rule
//! fires when any window of any reading scores above the threshold.
//!
//! The weights, bias and threshold live in `learned_model.txt`, made by
//! `kernel/examples/train_injection_model.rs` from the repository's
//! injection and benign corpora: fixed data order, fixed seed, fixed
//! epochs, single-threaded f64 with an exponential written out, weights
//! quantised to integers ([`SCALE`] per unit) and near-zero ones dropped,
//! so training reproduces the file byte for byte (a test retrains and
//! compares). The threshold comes from cross-validation grouped by source
//! package (see `docs/security.md`). Scoring is integer sums and one
//! square root per window: one pass over the text, linear in its length,
//! and the text's bytes are already counted against the scan budget.

use std::sync::OnceLock;

/// The weights, bias and threshold, as `train_injection_model` writes them.
const MODEL_TEXT: &str = include_str!("learned_model.txt");

/// log2 of the number of hash buckets.
pub const BUCKET_BITS: u32 = 18;
/// Tokens per window.
pub const WINDOW_TOKENS: usize = 48;
/// Tokens between the starts of two windows.
pub const STRIDE_TOKENS: usize = 24;
/// The longest token, in characters; a longer run is cut into pieces.
pub const MAX_TOKEN_CHARS: usize = 32;
/// Integer weight units per unit of score.
pub const SCALE: f64 = 1000.0;

const MASK: u32 = (1 << BUCKET_BITS) - 1;
const FNV_OFFSET: u32 = 0x811c_9dc5;
const FNV_PRIME: u32 = 0x0100_0193;

/// Feature kinds, hashed first so a token and an n-gram never share a hash.
const KIND_TOKEN: u8 = 1;
const KIND_PAIR: u8 = 2;
const KIND_GRAM: u8 = 3;

/// FNV-1a over a kind byte and some byte strings.
fn fnv(kind: u8, parts: &[&[u8]]) -> u32 {
    let mut h = (FNV_OFFSET ^ u32::from(kind)).wrapping_mul(FNV_PRIME);
    for part in parts {
        for b in *part {
            h = (h ^ u32::from(*b)).wrapping_mul(FNV_PRIME);
        }
    }
    (h ^ (h >> BUCKET_BITS)) & MASK
}

/// A token of a reading: its text and whether it is a word.
#[derive(Debug, Clone, Copy)]
struct Token<'t> {
    text: &'t str,
    word: bool,
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The tokens of a reading (see the module documentation).
fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut start: Option<(usize, bool)> = None;
    let mut chars = 0;
    for (at, c) in text.char_indices() {
        let class = (!c.is_whitespace()).then(|| is_word_char(c));
        if let Some((from, word)) = start {
            if class != Some(word) || chars == MAX_TOKEN_CHARS {
                out.push(Token {
                    text: &text[from..at],
                    word,
                });
                start = None;
            }
        }
        if let (None, Some(word)) = (start, class) {
            start = Some((at, word));
            chars = 0;
        }
        chars += 1;
    }
    if let Some((from, word)) = start {
        out.push(Token {
            text: &text[from..],
            word,
        });
    }
    out
}

/// Pushes the character 3- to 5-grams of `word`, marked at both ends.
fn push_grams(word: &str, marked: &mut String, ends: &mut Vec<usize>, out: &mut Vec<u32>) {
    marked.clear();
    marked.push('\u{2}');
    marked.push_str(word);
    marked.push('\u{3}');
    ends.clear();
    ends.extend(marked.char_indices().map(|(at, _)| at));
    ends.push(marked.len());
    let bytes = marked.as_bytes();
    for n in 3..=5 {
        for pair in ends.windows(n + 1) {
            out.push(fnv(KIND_GRAM, &[&bytes[pair[0]..pair[n]]]));
        }
    }
}

/// The distinct buckets of each window of a reading, sorted.
pub fn windows(reading: &str) -> Vec<Vec<u32>> {
    let tokens = tokens(reading);
    let mut out = Vec::new();
    let mut marked = String::new();
    let mut ends = Vec::new();
    let mut start = 0;
    while start < tokens.len() {
        let end = (start + WINDOW_TOKENS).min(tokens.len());
        let window = &tokens[start..end];
        let mut buckets = Vec::with_capacity(window.len() * 16);
        for (i, token) in window.iter().enumerate() {
            buckets.push(fnv(KIND_TOKEN, &[token.text.as_bytes()]));
            if let Some(next) = window.get(i + 1) {
                buckets.push(fnv(
                    KIND_PAIR,
                    &[token.text.as_bytes(), b" ", next.text.as_bytes()],
                ));
            }
            if token.word {
                push_grams(token.text, &mut marked, &mut ends, &mut buckets);
            }
        }
        buckets.sort_unstable();
        buckets.dedup();
        out.push(buckets);
        if end == tokens.len() {
            break;
        }
        start += STRIDE_TOKENS;
    }
    out
}

/// The norm a window of `n` distinct buckets is divided by:
/// `sqrt(max(n, MIN_NORM_FEATURES))`, so a window of a few words weighs no
/// more than one of [`MIN_NORM_FEATURES`] buckets.
pub fn norm(n: usize) -> f64 {
    (n.max(MIN_NORM_FEATURES) as f64).sqrt()
}

/// The fewest buckets a window's norm counts (see [`norm`]).
pub const MIN_NORM_FEATURES: usize = 32;

/// The learned model: integer weights per bucket, a bias and a threshold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// Added to every window's score, in [`SCALE`] units.
    pub bias: i64,
    /// A window scoring above this fires the rule, in [`SCALE`] units.
    pub threshold: i64,
    /// One weight per bucket, in [`SCALE`] units.
    pub weights: Vec<i32>,
}

impl Model {
    /// Reads a model file: `bias N`, `threshold N`, then `BUCKET WEIGHT`
    /// lines; `#` lines are comments. Checks the file was made for this
    /// tokeniser.
    pub fn parse(text: &str) -> Result<Model, String> {
        let mut model = Model {
            bias: 0,
            threshold: 0,
            weights: vec![0; 1 << BUCKET_BITS],
        };
        let expected = [
            ("buckets", 1_i64 << BUCKET_BITS),
            ("window", WINDOW_TOKENS as i64),
            ("stride", STRIDE_TOKENS as i64),
            ("token", MAX_TOKEN_CHARS as i64),
        ];
        let mut seen = 0;
        for (n, line) in text.lines().enumerate() {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let (key, value) = line
                .split_once(' ')
                .ok_or_else(|| format!("line {}: expected two fields", n + 1))?;
            let value: i64 = value
                .parse()
                .map_err(|e| format!("line {}: {value:?}: {e}", n + 1))?;
            if let Some((_, want)) = expected.iter().find(|(k, _)| *k == key) {
                if value != *want {
                    return Err(format!("line {}: {key} is {value}, not {want}", n + 1));
                }
                seen += 1;
            } else if key == "bias" {
                model.bias = value;
            } else if key == "threshold" {
                model.threshold = value;
            } else {
                let bucket: usize = key
                    .parse()
                    .map_err(|e| format!("line {}: bucket {key:?}: {e}", n + 1))?;
                let slot = model
                    .weights
                    .get_mut(bucket)
                    .ok_or_else(|| format!("line {}: bucket {bucket} out of range", n + 1))?;
                *slot = i32::try_from(value)
                    .map_err(|e| format!("line {}: weight {value}: {e}", n + 1))?;
            }
        }
        if seen != expected.len() {
            return Err("the tokeniser parameters are missing".to_string());
        }
        Ok(model)
    }

    /// A window's score, in [`SCALE`] units.
    pub fn score(&self, window: &[u32]) -> f64 {
        if window.is_empty() {
            return self.bias as f64;
        }
        let sum: i64 = window
            .iter()
            .map(|b| i64::from(self.weights.get(*b as usize).copied().unwrap_or(0)))
            .sum();
        self.bias as f64 + sum as f64 / norm(window.len())
    }

    /// The highest window score of a reading (`None` for a reading without tokens).
    pub fn max_score(&self, reading: &str) -> Option<f64> {
        windows(reading)
            .iter()
            .map(|w| self.score(w))
            .reduce(f64::max)
    }

    /// Whether any window of a reading scores above the threshold.
    pub fn fires(&self, reading: &str) -> bool {
        windows(reading)
            .iter()
            .any(|w| self.score(w) > self.threshold as f64)
    }
}

/// The committed model, read once; an error if the committed file is unreadable.
pub fn model() -> Result<&'static Model, &'static str> {
    static MODEL: OnceLock<Result<Model, String>> = OnceLock::new();
    MODEL
        .get_or_init(|| Model::parse(MODEL_TEXT))
        .as_ref()
        .map_err(String::as_str)
}

/// What the learned rule concludes on a reading: `Some(rule)` when it fires.
/// A model file that cannot be read fires (the guard fails closed).
pub fn check(reading: &str) -> Option<&'static str> {
    match model() {
        Ok(model) => model.fires(reading).then_some("ngram-model"),
        Err(_) => Some("ngram-model-unreadable"),
    }
}
