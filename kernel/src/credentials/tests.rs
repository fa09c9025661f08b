//! Unit tests of `credentials`.
use super::*;
use proptest::prelude::*;

fn kinds(text: &str) -> Vec<(CredentialKind, &'static str)> {
    find_credentials(text)
        .into_iter()
        .map(|s| (s.kind, s.marker))
        .collect()
}

fn secret_of(text: &str) -> Vec<&str> {
    find_credentials(text)
        .into_iter()
        .map(|s| &text[s.start..s.end])
        .collect()
}

// Each shape is found with its marker, and the span is the secret part only.
#[test]
fn shapes_and_spans() {
    use CredentialKind::*;
    let pem = "k:\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nok";
    assert_eq!(
        secret_of(pem),
        vec!["-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"]
    );
    assert_eq!(
        kinds("-----BEGIN OPENSSH PRIVATE KEY-----"),
        vec![(PemPrivateKey, "BEGIN PRIVATE KEY")]
    );
    assert_eq!(
        secret_of("Authorization: Basic YWxpY2U6czNjcjN0 "),
        vec!["YWxpY2U6czNjcjN0"]
    );
    assert_eq!(secret_of("proxy-authorization:abc123"), vec!["abc123"]);
    assert_eq!(
        secret_of("Bearer\n\t  eyJhbGciOi.e30.c2ln"),
        vec!["eyJhbGciOi.e30.c2ln"]
    );
    assert_eq!(
        secret_of("use sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e now"),
        vec!["sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e"]
    );
    assert_eq!(
        kinds("id AKIAIOSFODNN7EXAMPLE."),
        vec![(AwsAccessKey, "AKIA")]
    );
    assert_eq!(kinds("ASIAY34FZKBOKMUTVV7A"), vec![(AwsAccessKey, "ASIA")]);
    let ghp = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
    assert_eq!(kinds(&format!("GITHUB={ghp}")), vec![(GitHubToken, "ghp_")]);
    for prefix in ["gho_", "ghu_", "ghs_", "ghr_"] {
        let token = format!("{prefix}{}", &ghp[4..]);
        assert_eq!(kinds(&token), vec![(GitHubToken, prefix)], "{token}");
    }
    let pat = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz";
    assert_eq!(kinds(pat), vec![(GitHubToken, "github_pat_")]);
    assert_eq!(
        secret_of("db_password: \"correct horse\""),
        vec!["correct horse"]
    );
    assert_eq!(secret_of("?password=hunter2&x=1"), vec!["hunter2"]);
    assert_eq!(
        kinds("aws_secret_access_key = wJalrXUtnFEMI"),
        vec![(CredentialAssignment, "access_key")]
    );
}

// Spans start on a character boundary even after a multi-byte character.
#[test]
fn spans_after_multibyte_text() {
    let text = "é--BEGIN RSA PRIVATE KEY\nMIIE";
    let spans = find_credentials(text);
    assert_eq!(spans.len(), 1);
    assert_eq!(&text[spans[0].start..], "--BEGIN RSA PRIVATE KEY\nMIIE");
    assert_eq!(
        redact(text, &CredentialKind::ALL).as_deref(),
        Some("é[REDACTED]")
    );
}

// Look-alikes and near-misses carry no credential.
#[test]
fn near_misses_are_innocent() {
    for text in [
        "task-1.txt",
        "/workspace/task-1.txt",
        "risk-assessment",
        "the bearer of news",
        "bearer tokens are refused by default",
        "-----BEGIN PUBLIC KEY-----",
        "a private key ceremony",
        "AKIA",
        "ASIAN markets",
        "ASIAPACIFICREGIONALOFFICES",
        "AKIAIOSFODNN7EXAMPL",
        "AKIAIOSFODNN7EXAMPLE1",
        "xAKIAIOSFODNN7EXAMPLE",
        "ghp_",
        "ghp_short123",
        "gh_pages",
        "github_pat_",
        "github_pat_example",
        "myghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "scikit-learn and sk-learn-compatible-estimators",
        "max_tokens=256",
        "secret=",
        "password reset",
        "Authorization: ",
    ] {
        assert_eq!(find_credentials(text), vec![], "{text}");
    }
}

// Redaction replaces each span once and keeps the rest, including a header's scheme word.
#[test]
fn redaction() {
    let all = CredentialKind::ALL;
    assert_eq!(
        redact("Authorization: Bearer abc.def-123456", &all).as_deref(),
        Some("Authorization: Bearer [REDACTED]")
    );
    assert_eq!(
        redact(
            "token ghp_16C7e42F292c6912E7710c838347Ae178B4a, AKIAIOSFODNN7EXAMPLE",
            &all
        )
        .as_deref(),
        Some("token [REDACTED], [REDACTED]")
    );
    assert_eq!(redact("nothing here", &all), None);
    assert_eq!(
        redact(
            "password=hunter2 AKIAIOSFODNN7EXAMPLE",
            &[CredentialKind::AwsAccessKey]
        )
        .as_deref(),
        Some("password=hunter2 [REDACTED]")
    );
}

// The naming finding follows kind priority, not position.
#[test]
fn first_credential_by_priority() {
    let found = first_credential("token=abc AKIAIOSFODNN7EXAMPLE").expect("found");
    assert_eq!(found.kind, CredentialKind::AwsAccessKey);
    assert_eq!(
        first_credential("GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a").map(|s| s.marker),
        Some("ghp_")
    );
}

// Key names built on a marker word are named; paths and look-alike words are not.
#[test]
fn key_names() {
    assert_eq!(credential_key_name("clientSecret"), Some("secret"));
    assert_eq!(credential_key_name("ApiKey"), Some("api_key"));
    assert_eq!(credential_key_name("x-apikey"), Some("apikey"));
    for key in [
        "max_tokens",
        "tokenizer",
        "keyboard",
        "/workspace/secret/**",
    ] {
        assert_eq!(credential_key_name(key), None, "{key}");
    }
}

proptest! {
    // The detector never panics, and every span lies on character boundaries inside the text.
    #[test]
    fn spans_are_valid(text in any::<String>()) {
        for span in find_credentials(&text) {
            prop_assert!(span.start <= span.end && span.end <= text.len());
            prop_assert!(text.is_char_boundary(span.start) && text.is_char_boundary(span.end));
        }
        if let Some(redacted) = redact(&text, &CredentialKind::ALL) {
            prop_assert!(redacted.contains(REDACTED));
        }
    }

    // Joined from parts, every span still lies on character boundaries, and a key id split at any point between two parts is found whatever their neighbours are.
    #[test]
    fn edges_join_parts(text in any::<String>(), cut in 1usize..20, left in "[a-z0-9]{0,6}", right in "[a-z0-9]{0,6}") {
        let edges = [text.len() / 2];
        if text.is_char_boundary(edges[0]) {
            for span in find_credentials_with_edges(&text, &edges) {
                prop_assert!(text.is_char_boundary(span.start) && text.is_char_boundary(span.end));
            }
        }
        for key in ["AKIAIOSFODNN7EXAMPLE", "akiaiosfodnn7example"] {
            let joined = format!("{left}{key}{right}");
            let edges = [left.len(), left.len() + cut, left.len() + 20];
            let kinds: Vec<_> = find_credentials_with_edges(&joined, &edges).into_iter().map(|s| s.kind).collect();
            prop_assert!(kinds.contains(&CredentialKind::AwsAccessKey), "{}", joined);
        }
    }

    // A credential embedded in arbitrary text is always redacted away.
    #[test]
    fn embedded_credentials_never_survive(before in "[ -~\n]{0,40}", after in "[ -~\n]{0,40}", pick in 0usize..5) {
        let secret = [
            "AKIAIOSFODNN7EXAMPLE",
            "akiaiosfodnn7example",
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        ][pick];
        let text = format!("{before} {secret} {after}");
        let redacted = redact(&text, &CredentialKind::ALL).expect("found");
        prop_assert!(!redacted.contains(secret), "{}", redacted);
    }
}

// After a colon and a space an unquoted word counts only when it looks like
// a credential: prose is no match, a credential-like value or a quoted one is.
#[test]
fn a_word_after_a_colon_and_a_space_must_look_like_a_credential() {
    for prose in [
        "Reset your password: open Settings, then Security.",
        "Each answer carries a page token: pass it back.",
        "secret: unknown",
        "Forgot the password: forgotten.",
    ] {
        assert!(kinds(prose).is_empty(), "{prose}");
    }
    assert_eq!(secret_of("password: hunter2024!"), ["hunter2024!"]);
    assert_eq!(secret_of("token: 4f9a8b7c6d5e"), ["4f9a8b7c6d5e"]);
    assert_eq!(secret_of("password=open"), ["open"]);
    assert_eq!(secret_of("password: \"open\""), ["open"]);
}

// The one reader finds a token base64-encoded behind a path, and split
// across two strings.
#[test]
fn the_reader_finds_an_encoded_token_behind_a_path_and_a_split_one() {
    let encoded = "Z2hwXzE2QzdlNDJGMjkyYzY5MTJFNzcxMGM4MzgzNDdBZTE3OEI0YQ==";
    assert!(reading::credential_in(&format!("/etc/{encoded}")).is_some());
    assert!(reading::credential_in(&format!("a/b+c-d_{encoded}")).is_some());
    // A message quoting such a path (chio eval's reason) marks it.
    let reason = format!("path /etc/{encoded} is outside the grant");
    let marked = mark::mark_credentials(&reason);
    assert!(
        marked.contains("[REDACTED:github-token]") && !marked.contains(encoded),
        "{marked}"
    );
    let split = reading::split_in(&["E7710c838347Ae178B4a", "ghp_16C7e42F292c6912"]).unwrap();
    assert_eq!((split.marker, split.parts), ("ghp_", vec![0, 1]));
}
