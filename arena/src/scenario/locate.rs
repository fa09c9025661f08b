//! Where a field path is written: the line and column of the value an
//! error names, so a refusal points at the text as the TOML parser's own
//! errors do.
//!
//! Errors name a field by its path in the document (`agents[0].id`,
//! `steps[2].arguments.query`, `servers[0].labels."src/**"`); [`locate`]
//! parses the text again with spans and walks that path. It never quotes
//! the text, so a location cannot carry a secret.

use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// One step of a field path.
#[derive(Debug, PartialEq, Eq)]
enum Segment {
    /// A table key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// Splits `a.b[2]."c.d"` into its keys and indexes, or `None` when the path
/// is not one this crate writes.
fn segments(field: &str) -> Option<Vec<Segment>> {
    let mut out = Vec::new();
    let mut chars = field.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {}
            '[' => {
                let mut digits = String::new();
                for d in chars.by_ref() {
                    if d == ']' {
                        break;
                    }
                    digits.push(d);
                }
                out.push(Segment::Index(digits.parse().ok()?));
            }
            '"' => {
                let mut key = String::new();
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => key.push(chars.next()?),
                        other => key.push(other),
                    }
                }
                out.push(Segment::Key(key));
            }
            first => {
                let mut key = first.to_string();
                while let Some(&next) = chars.peek() {
                    if next == '.' || next == '[' {
                        break;
                    }
                    key.push(next);
                    chars.next();
                }
                out.push(Segment::Key(key));
            }
        }
    }
    Some(out)
}

/// The 1-based line and column where the value at `field` is written in
/// `text`; for a path whose last keys are absent (a missing key), where the
/// deepest written part of it is. `None` when the text does not parse or
/// the path's first key is not written.
pub fn locate(text: &str, field: &str) -> Option<(usize, usize)> {
    let root = DeTable::parse(text).ok()?;
    let mut table: &DeTable = root.get_ref();
    let mut current: Option<&Spanned<DeValue>> = None;
    for segment in segments(field)? {
        let next = match (&segment, current.map(Spanned::get_ref)) {
            (Segment::Key(key), None) => lookup(table, key),
            (Segment::Key(key), Some(DeValue::Table(inner))) => {
                table = inner;
                lookup(table, key)
            }
            (Segment::Index(i), Some(DeValue::Array(items))) => items.get(*i),
            _ => None,
        };
        match next {
            Some(value) => current = Some(value),
            None => break,
        }
    }
    let start = current?.span().start;
    Some(line_column(text, start))
}

fn lookup<'t, 'i>(table: &'t DeTable<'i>, key: &str) -> Option<&'t Spanned<DeValue<'i>>> {
    table
        .iter()
        .find(|(name, _)| name.get_ref().as_ref() == key)
        .map(|(_, value)| value)
}

/// The 1-based line and column of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |p| p + 1);
    (line, before.len() - line_start + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "id = \"x\"\n\n[[agents]]\nid = \"a\"\n\n[[agents]]\nid = \"rev/iewer\"\nmodel = \"m\"\n\n[servers.labels]\n\"src/**\" = \"internal\"\n";

    // A path names the value where it is written: array of tables, nested key, quoted key.
    #[test]
    fn locates_written_values() {
        assert_eq!(locate(TEXT, "id"), Some((1, 6)));
        assert_eq!(locate(TEXT, "agents[1].id"), Some((7, 6)));
        assert_eq!(locate(TEXT, "agents[1].model"), Some((8, 9)));
        assert_eq!(locate(TEXT, "servers.labels.\"src/**\""), Some((11, 12)));
    }

    // A missing key points at the deepest written part of its path; an unknown root at nothing.
    #[test]
    fn missing_keys_point_at_their_table() {
        let table = locate(TEXT, "agents[0]").expect("the first agent is written");
        assert_eq!(locate(TEXT, "agents[0].kernel"), Some(table));
        assert_eq!(locate(TEXT, "nodes[0].id"), None);
        assert_eq!(locate("not = [toml", "not"), None);
    }

    // Paths split into keys and indexes, quotes and escapes included.
    #[test]
    fn splits_paths() {
        assert_eq!(
            segments("a[2].\"b.c\\\"\"").expect("a path"),
            vec![
                Segment::Key("a".into()),
                Segment::Index(2),
                Segment::Key("b.c\"".into())
            ]
        );
        assert_eq!(segments("a[x]"), None);
    }
}
