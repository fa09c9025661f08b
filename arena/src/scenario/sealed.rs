//! Sealed values: the text of a secret file a step sends as an argument.
//!
//! `{ fixture = "fixtures/secrets/token.txt" }` in a call's arguments
//! sends the text of that file, so a guard can be tried on a real
//! credential without writing it into the scenario (where the loader's
//! inline-secret scan refuses it). The loader reads every such file once,
//! below the scenario's folder and by the same confinement rules as a
//! server's fixture folder ([`crate::fixtures`]); the run sends the text
//! with the argument's pointer marked sealed, so no kernel writes it into
//! a reason, a finding or a trace (`chio_kernel::seal`); the bundle records
//! only each file's SHA-256 (`sealed` in `arena.json`) and never copies the
//! file into `inputs/`. A replay reads the files again from the folder it
//! is given and refuses one whose digest changed.
//!
//! A sealed file must hold UTF-8 text of [`chio_kernel::seal::WINDOW`] to
//! [`MAX_CHARS`] characters (one final newline is not part of the value)
//! and no control characters, and must not lie in a server's fixtures
//! folder: that folder is copied into the bundle and served to agents.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::ArenaError;
use crate::fixtures::{check_folder, FixtureSet, Unresolved};

/// The most characters a sealed value may have.
pub const MAX_CHARS: usize = 65_536;

/// One sealed file's text and digest. Its `Debug` shows the digest only.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedText {
    text: String,
    sha256: String,
}

impl fmt::Debug for SealedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SealedText(sha256:{})", self.sha256)
    }
}

impl SealedText {
    /// The value sent.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The SHA-256 (hex) of the value sent.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }
}

/// Every sealed file of a scenario, by its path as the scenario writes it.
pub type SealedSet = BTreeMap<String, SealedText>;

/// The digests of `set`, by path: what a bundle records.
pub fn digests(set: &SealedSet) -> BTreeMap<String, String> {
    set.iter()
        .map(|(path, sealed)| (path.clone(), sealed.sha256.clone()))
        .collect()
}

/// Reads the sealed file `path` (written at `field`) below `base_dir`,
/// refusing one inside any of `server_folders` (normalised fixture
/// folders).
pub fn read_sealed(
    base_dir: &Path,
    path: &str,
    field: &str,
    server_folders: &[String],
) -> Result<SealedText, ArenaError> {
    let refuse = |problem: String| ArenaError::SealedFixture {
        field: field.to_string(),
        path: path.to_string(),
        problem,
    };
    let normalized = check_folder(path, field)?;
    if let Some(folder) = server_folders
        .iter()
        .find(|folder| normalized == **folder || normalized.starts_with(&format!("{folder}/")))
    {
        return Err(refuse(format!(
            "it lies in the fixtures folder {folder:?} of a server, which the bundle copies and agents can read"
        )));
    }
    let real = match crate::fixtures::resolve_below(base_dir, &normalized, field)? {
        Ok(real) => real,
        Err(Unresolved::Base(e)) => {
            return Err(refuse(format!(
                "the scenario's folder cannot be resolved: {}",
                e.kind()
            )))
        }
        Err(Unresolved::Path(e)) => {
            return Err(refuse(format!("it cannot be resolved: {}", e.kind())))
        }
    };
    // The same rule on the resolved paths: a link outside a fixtures folder
    // to a file inside one, or a fixtures folder that is a link to the
    // sealed file's folder, still puts the value where agents read it.
    if let Some(folder) = server_folders.iter().find(|folder| {
        base_dir
            .join(folder.as_str())
            .canonicalize()
            .is_ok_and(|resolved| real.starts_with(resolved))
    }) {
        return Err(refuse(format!(
            "it resolves into the fixtures folder {folder:?} of a server, which the bundle copies and agents can read"
        )));
    }
    if !real.is_file() {
        return Err(refuse("it is not a regular file".to_string()));
    }
    // Read no further than the longest sealed value and its line break, so
    // a file claiming gigabytes (a sparse one) costs nothing.
    let bound = 4 * MAX_CHARS as u64 + 2;
    let bytes = crate::bundle::read_regular(&real, bound).map_err(|e| match e {
        crate::bundle::FileRefusal::TooLarge(_) => {
            refuse(format!("it holds more than {MAX_CHARS} characters"))
        }
        other => refuse(format!("it cannot be read: {other}")),
    })?;
    seal_bytes(bytes).map_err(refuse)
}

/// Refuses a sealed value that a file a server serves holds, whatever path
/// put it there (a copy, a link into the sealed file's folder, a link to
/// the file): agents read it through the server and the bundle copies it.
/// A file holds it when it holds any run of `chio_kernel::seal::WINDOW`
/// characters of it in any form the evidence check reads
/// (`chio_kernel::seal::Seal`: as written, escaped, percent-decoded,
/// normalised as a path, compacted, in lower case), the rule that keeps a
/// sealed value out of every reason: a near-copy (the value less one
/// character, or lower-cased) gives it away as surely as a copy. The
/// message names the server and the file, never the value.
pub fn refuse_served(
    fixtures: &FixtureSet,
    sealed: &SealedText,
    path: &str,
    field: &str,
) -> Result<(), ArenaError> {
    let seal = chio_kernel::seal::Seal::of_texts([sealed.text()]);
    for (server, files) in &fixtures.servers {
        if let Some((file, _)) = files
            .iter()
            .find(|(_, content)| seal.holds_in_any_form(content))
        {
            return Err(ArenaError::SealedFixture {
                field: field.to_string(),
                path: path.to_string(),
                problem: format!(
                    "the fixture {file:?} that server {server:?} serves holds a run of {} characters of its value (as written or in another form: escaped, percent-decoded, as a path, in lower case), which the bundle copies and agents can read; remove that text from the fixture or seal another value",
                    chio_kernel::seal::WINDOW
                ),
            });
        }
    }
    Ok(())
}

/// The sealed value of a file's bytes, or what is wrong with them (never
/// what they hold).
pub fn seal_bytes(bytes: Vec<u8>) -> Result<SealedText, String> {
    let mut text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?;
    if text.ends_with("\r\n") {
        text.truncate(text.len() - 2);
    } else if text.ends_with('\n') {
        text.truncate(text.len() - 1);
    }
    let count = text.chars().count();
    if count < chio_kernel::seal::WINDOW {
        return Err(format!(
            "it holds {count} characters and a sealed value holds at least {}",
            chio_kernel::seal::WINDOW
        ));
    }
    if count > MAX_CHARS {
        return Err(format!("it holds more than {MAX_CHARS} characters"));
    }
    if text.chars().any(char::is_control) {
        return Err(
            "it holds a control character (a line break is allowed only at its end)".to_string(),
        );
    }
    let sha256 = hex::encode(Sha256::digest(text.as_bytes()));
    Ok(SealedText { text, sha256 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Proves one final newline is not part of the value, and short, control-bearing or non-UTF-8 files are refused without their content.
    #[test]
    fn sealed_text_rules() {
        let sealed = seal_bytes(b"correct-horse-battery\n".to_vec()).unwrap();
        assert_eq!(sealed.text(), "correct-horse-battery");
        assert_eq!(
            seal_bytes(b"correct-horse-battery\r\n".to_vec()).unwrap(),
            sealed
        );
        assert!(!format!("{sealed:?}").contains("horse"));
        for (bytes, problem) in [
            (b"short\n".to_vec(), "at least 8"),
            (b"two\nlines-of-text".to_vec(), "control character"),
            (
                vec![0xff, 0xfe, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41],
                "UTF-8",
            ),
        ] {
            let refused = seal_bytes(bytes.clone()).unwrap_err();
            assert!(refused.contains(problem), "{refused}");
        }
    }

    // Proves a fixture file a server serves is refused when it holds any run of 8 characters of a sealed value in a form the evidence check reads (a copy, the value less its last character, lower-cased, percent-encoded), naming the server and file and never the value; a file sharing no such run is served.
    #[test]
    fn a_served_near_copy_is_refused() {
        let token = "ghp_Q7rT9xWm2KpL5vZc8NbY3hJd6FsA1eGu4iOo";
        let sealed = seal_bytes(token.as_bytes().to_vec()).unwrap();
        let served = |content: String| FixtureSet {
            servers: BTreeMap::from([(
                "files".to_string(),
                BTreeMap::from([("notes/copy.txt".to_string(), content)]),
            )]),
        };
        let encoded: String = token
            .chars()
            .map(|c| format!("%{:02X}", c as u32))
            .collect();
        for content in [
            format!("token: {token}"),
            token[..token.len() - 1].to_string(),
            token.to_lowercase(),
            format!("see {}", &token[10..18]),
            encoded,
        ] {
            let refused = refuse_served(&served(content), &sealed, "secrets/token.txt", "steps[0]")
                .unwrap_err()
                .to_string();
            assert!(
                refused.contains("notes/copy.txt") && refused.contains("files"),
                "{refused}"
            );
            assert!(
                !refused.contains(&token[..8]) && !refused.contains("ghp_q7rt"),
                "{refused}"
            );
        }
        for content in ["nothing here".to_string(), token[..7].to_string()] {
            assert!(
                refuse_served(&served(content), &sealed, "secrets/token.txt", "steps[0]").is_ok()
            );
        }
    }

    proptest! {
        // Proves no bytes make sealing panic, and a refusal never quotes the bytes.
        #[test]
        fn sealing_never_panics_or_quotes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Err(problem) = seal_bytes(bytes.clone()) {
                if let Ok(text) = String::from_utf8(bytes) {
                    let trimmed = text.trim_end_matches(['\r', '\n']);
                    prop_assert!(trimmed.chars().count() < 8 || !problem.contains(trimmed));
                }
            }
        }
    }
}
