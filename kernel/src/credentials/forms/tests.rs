//! Unit tests of the credential reader's forms.
use super::*;
use proptest::prelude::*;

const GHP: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
const AKIA: &str = "AKIAIOSFODNN7EXAMPLE";
const ALL: [CredentialKind; 7] = CredentialKind::ALL;

/// Base64 of `bytes`, standard or URL-safe, padded.
pub(crate) fn base64(bytes: &[u8], url: bool) -> String {
    let alphabet: &[u8] = if url {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    };
    let mut out = String::new();
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (k, b)| n | u32::from(*b) << (16 - 8 * k));
        for k in 0..4 {
            if k <= group.len() {
                out.push(alphabet[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Each character of `text` as a `%XX` escape.
fn percent_all(text: &str) -> String {
    text.bytes().map(|b| format!("%{b:02X}")).collect()
}

fn form_of(text: &str) -> Option<(CredentialKind, Form)> {
    find_in_forms(text, &ALL).map(|f| (f.kind, f.form))
}

// The normal form decodes escapes, drops invisible characters and no-break spaces, and folds compatibility forms.
#[test]
fn normal_form_steps() {
    assert!(matches!(normal_form("plain text 100%"), Cow::Borrowed(_)));
    assert_eq!(normal_form("ghp%5Fx"), "ghp_x");
    assert_eq!(normal_form("ghp\\u005fx"), "ghp_x");
    assert_eq!(
        normal_form("a\u{200b}b\u{a0}c\u{ad}d\u{feff}e\u{2060}f"),
        "abcdef"
    );
    assert_eq!(normal_form("ｇｈｐ＿ｘ"), "ghp_x");
    assert_eq!(normal_form("%5Cu005f"), "_");
}

// The token alone, inside prose, and each transformed spelling of it is found, in the form it needs.
#[test]
fn every_form_of_a_token_is_read() {
    let g = CredentialKind::GitHubToken;
    assert_eq!(form_of(GHP), Some((g, Form::Written)));
    assert_eq!(
        form_of(&format!("the token {GHP} leaked.")),
        Some((g, Form::Written))
    );
    let rest = &GHP[4..];
    for (text, form) in [
        (format!("ghp%5F{rest}"), Form::Normal),
        (format!("ghp%5f{rest}"), Form::Normal),
        (percent_all(GHP), Form::Normal),
        (
            format!("ghp_{}\u{200b}{}", &rest[..10], &rest[10..]),
            Form::Normal,
        ),
        (
            format!("ghp_{}\u{a0}{}", &rest[..10], &rest[10..]),
            Form::Normal,
        ),
        (
            format!("ghp_{}\u{ad}{}", &rest[..10], &rest[10..]),
            Form::Normal,
        ),
        (
            format!("ghp_{}\u{feff}{}", &rest[..10], &rest[10..]),
            Form::Normal,
        ),
        (
            format!("ghp_{}\u{2062}{}", &rest[..10], &rest[10..]),
            Form::Normal,
        ),
        (format!("\u{ff47}hp_{rest}"), Form::Normal),
        (format!("ghp\\u005f{rest}"), Form::Normal),
        (
            format!("x {} y", base64(GHP.as_bytes(), false)),
            Form::Decoded,
        ),
        (base64(format!("a?{GHP}>").as_bytes(), true), Form::Decoded),
        (hex::encode(GHP), Form::Decoded),
        (hex::encode_upper(GHP), Form::Decoded),
        (
            base64(base64(GHP.as_bytes(), false).as_bytes(), false),
            Form::Decoded,
        ),
        (base64(percent_all(GHP).as_bytes(), false), Form::Decoded),
    ] {
        assert_eq!(form_of(&text), Some((g, form)), "{text:?}");
    }
}

// An AWS key id is read in any case: the ids are upper case, so lower case loses nothing.
#[test]
fn aws_key_ids_in_any_case() {
    let aws = CredentialKind::AwsAccessKey;
    for text in [
        AKIA.to_string(),
        AKIA.to_lowercase(),
        format!("id {} here", AKIA.to_lowercase()),
        "Akiaiosfodnn7Example".to_string(),
        base64(AKIA.as_bytes(), false),
        hex::encode(AKIA),
        percent_all(&AKIA.to_lowercase()),
    ] {
        assert_eq!(
            find_in_forms(&text, &ALL).map(|f| f.kind),
            Some(aws),
            "{text:?}"
        );
    }
    for word in [
        "asiapacificcustomers",
        "akia",
        "akiaiosfodnn7exampl",
        "xakiaiosfodnn7example",
    ] {
        assert_eq!(find_in_forms(word, &ALL), None, "{word}");
    }
}

// A near miss stays a near miss in every form: a token one character short, a prefix alone.
#[test]
fn near_misses_in_every_form() {
    let short = &GHP[..GHP.len() - 7];
    for text in [
        short.to_string(),
        format!("ghp%5F{}", &short[4..]),
        format!("ghp_{}\u{200b}", &short[4..]),
        base64(short.as_bytes(), false),
        hex::encode(short),
        "ghp\\u005f".to_string(),
    ] {
        assert_eq!(find_in_forms(&text, &ALL), None, "{text:?}");
    }
}

// Ordinary text, paths, UUIDs, digests and encoded prose carry nothing.
#[test]
fn no_false_positives() {
    let prose = "The quick brown fox jumps over the lazy dog, and the token is not here.";
    let innocent = [
        prose.to_string(),
        "/workspace/src/internationalization/configuration_manager.rs".into(),
        "C:\\Users\\me\\Documents\\report.pdf".into(),
        "123e4567-e89b-12d3-a456-426614174000".into(),
        "da39a3ee5e6b4b0d3255bfef95601890afd80709".into(),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".into(),
        "sha256:47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU".into(),
        base64(prose.as_bytes(), false),
        base64(prose.as_bytes(), true),
        hex::encode(prose),
        "https://example.com/search?q=a%20b%2Fc&page=2".into(),
        "He said \\u0022hello\\u0022 and left.\\n".into(),
        "caf\u{e9} \u{ff21}\u{ff22}\u{ff23} na\u{ef}ve \u{a0}50%".into(),
        "Asia Pacific customers and AKIA are words here".into(),
    ];
    for text in innocent {
        assert_eq!(find_in_forms(&text, &ALL), None, "{text:?}");
    }
}

// Texts read together find a token split across them, naming the parts, and nothing a single part holds alone.
#[test]
fn read_across_parts() {
    let g = CredentialKind::GitHubToken;
    let found = find_across(&["ghp_", &GHP[4..]], "", &ALL);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].kind, found[0].form, found[0].parts.clone()),
        (g, Form::Written, 0..2)
    );
    assert_eq!(found[0].secret, vec![(0, 0..4), (1, 0..36)]);
    let found = find_across(&["say", "AKIAIOSFOD", "NN7EXAMPLE", "ok"], "", &ALL);
    assert_eq!(found[0].parts, 1..3);
    let bearer = find_across(&["Bearer", "abc.def-123456"], " ", &ALL);
    assert_eq!(bearer[0].secret, vec![(1, 0..14)]);
    assert_eq!(bearer[0].parts, 0..2);
    let encoded = base64(GHP.as_bytes(), false);
    let (a, b) = encoded.split_at(21);
    let found = find_across(&[a, b], "", &ALL);
    assert_eq!(
        (found[0].form, found[0].parts.clone()),
        (Form::Decoded, 0..2)
    );
    let found = find_across(&["ghp%5F", &GHP[4..]], "", &ALL);
    assert_eq!(
        (found[0].form, found[0].parts.clone()),
        (Form::Normal, 0..2)
    );
    // An escape cut between two parts is read whole.
    for (head, tail) in [
        ("ghp%5", "F"),
        ("ghp%", "5F"),
        ("ghp\\u00", "5f"),
        ("ghp\\", "u005f"),
    ] {
        let tail = format!("{tail}{}", &GHP[4..]);
        let found = find_across(&[head, &tail], "", &ALL);
        assert_eq!(
            found.first().map(|f| (f.form, f.parts.clone())),
            Some((Form::Normal, 0..2)),
            "{head}"
        );
    }
    assert_eq!(cut_escape(b"a%"), 1);
    assert_eq!(cut_escape(b"a%5"), 2);
    assert_eq!(cut_escape(b"a%5F"), 0);
    assert_eq!(cut_escape(b"a\\u00"), 4);
    assert_eq!(cut_escape(b"a\\\\"), 0);
    assert_eq!(cut_escape(b"a\\\\\\"), 1);
    assert_eq!(cut_escape(b"a\\u005f"), 0);
    assert_eq!(find_across(&[GHP, "- other"], "", &ALL), vec![]);
    // A neighbour glued to a token's last part is read with it.
    let glued = find_across(&["ghp_", &GHP[4..], "done"], "", &ALL);
    assert_eq!(glued[0].parts, 0..3);
    assert_eq!(find_across(&[GHP], "", &ALL), vec![]);
    assert_eq!(find_across(&["the bearer", "of news"], " ", &ALL), vec![]);
}

proptest! {
    // The reader never panics on any text, alone or with another.
    #[test]
    fn reader_total(a in any::<String>(), b in any::<String>()) {
        let _ = find_all_in_forms(&a, &ALL);
        let _ = find_across(&[&a, &b], "", &ALL);
        let _ = normal_form(&a);
    }

    // A token embedded in printable text is found in every encoding of the text, and split at any point across two parts.
    #[test]
    fn encoded_and_split_tokens_found(before in "[ -~]{0,30}", after in "[ -~]{0,30}", pick in 0usize..3, cut in 1usize..39) {
        let secret = [GHP, AKIA, "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e"][pick];
        let text = format!("{before} {secret} {after}");
        for encoded in [base64(text.as_bytes(), false), base64(text.as_bytes(), true), hex::encode(&text), percent_all(&text)] {
            prop_assert!(find_in_forms(&encoded, &ALL).is_some(), "{}", encoded);
        }
        let cut = cut.min(secret.len() - 1);
        let (head, tail) = secret.split_at(cut);
        let first = format!("{before} {head}");
        let second = format!("{tail} {after}");
        let alone = find_in_forms(&first, &ALL).is_some() || find_in_forms(&second, &ALL).is_some();
        prop_assert!(alone || !find_across(&[&first, &second], "", &ALL).is_empty());
    }

    // Base64 and hex of arbitrary printable prose without a marker carry no credential.
    #[test]
    fn encoded_prose_is_innocent(words in prop::collection::vec("[a-z]{1,9}", 1..20)) {
        let text = words.join(" ");
        prop_assume!(find_all_in_forms(&text, &ALL).is_empty());
        for encoded in [base64(text.as_bytes(), false), hex::encode(&text)] {
            prop_assert!(find_in_forms(&encoded, &ALL).is_none(), "{}", encoded);
        }
    }
}
