//! Cutting scenario text at its top-level table headers, so a long schedule
//! is parsed one `[[steps]]` table at a time instead of as one tree.
//!
//! A TOML parse tree costs kilobytes per step, and a scenario of 100,000
//! steps would hold hundreds of megabytes of it at once. [`split`] walks the
//! text once with a small lexer (strings, multi-line strings, comments and
//! bracket depth, so a `[` inside a value or a string is never taken for a
//! header) and hands back the world (every block that is not a `[[steps]]`
//! table, byte for byte and in order) and each `[[steps]]` block. The loader
//! parses the world as one document and each step block as its own, and
//! falls back to parsing the whole file whenever a cut document fails or the
//! world still holds a `steps` key, so a refusal is always the one the whole
//! file gives and a split never changes what a scenario means.

/// The scenario text cut at its top-level headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Split<'t> {
    /// Every block but the `[[steps]]` tables, in file order.
    pub world: String,
    /// Each `[[steps]]` table, header included, in file order.
    pub steps: Vec<&'t str>,
}

/// Where the lexer stands at the end of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carry {
    /// Between values or keys.
    Plain,
    /// Inside a `"""` string.
    MultiBasic,
    /// Inside a `'''` string.
    MultiLiteral,
}

/// The lexer fed one line at a time, so a file can be cut as it is read.
#[derive(Debug, Clone)]
pub(crate) struct Cutter {
    carry: Carry,
    depth: usize,
    /// Start of the current block and whether it is a step table.
    block: (usize, bool),
    offset: usize,
}

/// A block the cutter closed: its byte range and whether it is a
/// `[[steps]]` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Block {
    pub start: usize,
    pub end: usize,
    pub is_step: bool,
}

impl Cutter {
    pub(crate) fn new() -> Self {
        Self {
            carry: Carry::Plain,
            depth: 0,
            block: (0, false),
            offset: 0,
        }
    }

    /// Feeds the next line (its `\n` included); the block a header on this
    /// line closes, if any; `None` when the lexer cannot go on (the caller
    /// then parses the whole text, which reports the problem).
    pub(crate) fn line(&mut self, line: &str) -> Option<Option<Block>> {
        let mut closed = None;
        if self.carry == Carry::Plain && self.depth == 0 {
            let trimmed = line.trim_start_matches([' ', '\t']);
            if trimmed.starts_with('[') {
                // A step's own sub-table (`[steps.definition]`) belongs to
                // the step table it follows.
                if self.block.1 && is_steps_subtable_header(trimmed) {
                    header_end(trimmed)?;
                    self.offset += line.len();
                    return Some(None);
                }
                closed = self.close();
                self.block = (self.offset, is_steps_header(trimmed));
                // A header line holds no value: only its own quoted keys,
                // which `header_end` skips.
                header_end(trimmed)?;
                self.offset += line.len();
                return Some(closed);
            }
        }
        (self.carry, self.depth) = lex_line(line, self.carry, self.depth)?;
        self.offset += line.len();
        Some(closed)
    }

    /// The last block, once every line is fed; `None` when the text ends
    /// inside a string or a bracket.
    pub(crate) fn finish(mut self) -> Option<Option<Block>> {
        if self.carry != Carry::Plain || self.depth != 0 {
            return None;
        }
        Some(self.close())
    }

    fn close(&mut self) -> Option<Block> {
        let (start, is_step) = self.block;
        (start != self.offset).then_some(Block {
            start,
            end: self.offset,
            is_step,
        })
    }
}

/// Cuts `text` at its top-level headers; `None` when it holds no
/// `[[steps]]` header or the lexer ends inside a string or a bracket (the
/// caller then parses the whole text, which reports the problem).
pub(crate) fn split(text: &str) -> Option<Split<'_>> {
    let mut world = String::new();
    let mut steps = Vec::new();
    let mut cutter = Cutter::new();
    let mut take = |block: Option<Block>| {
        if let Some(b) = block {
            if b.is_step {
                steps.push(&text[b.start..b.end]);
            } else {
                world.push_str(&text[b.start..b.end]);
            }
        }
    };
    for line in text.split_inclusive('\n') {
        take(cutter.line(line)?);
    }
    take(cutter.finish()?);
    if steps.is_empty() {
        None
    } else {
        Some(Split { world, steps })
    }
}

/// Whether a header line is exactly `[[steps]]` (spaces inside the
/// brackets allowed), optionally followed by a comment.
fn is_steps_header(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("[[") else {
        return false;
    };
    let Some((key, after)) = rest.split_once("]]") else {
        return false;
    };
    let after = after.trim_start_matches([' ', '\t']);
    key.trim_matches([' ', '\t']) == "steps"
        && (after.is_empty() || after.starts_with('#') || after.starts_with(['\r', '\n']))
}

/// Whether a header line opens a sub-table of the last step
/// (`[steps.definition]`, `[[steps.x.y]]`): its first bare key is `steps`
/// and a dotted key follows.
fn is_steps_subtable_header(line: &str) -> bool {
    let rest = line.trim_start_matches('[').trim_start_matches([' ', '\t']);
    let Some(after) = rest.strip_prefix("steps") else {
        return false;
    };
    after.trim_start_matches([' ', '\t']).starts_with('.')
}

/// Checks a header line closes on itself (quoted keys may hold brackets);
/// `None` when a quote is left open.
fn header_end(line: &str) -> Option<()> {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'#' => return Some(()),
            b'"' => i = basic_end(bytes, i + 1)?,
            b'\'' => i = bytes[i + 1..].iter().position(|b| *b == b'\'')? + i + 2,
            _ => i += 1,
        }
    }
    Some(())
}

/// The index after the closing quote of a one-line basic string opened
/// before `i`.
fn basic_end(bytes: &[u8], mut i: usize) -> Option<usize> {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            b'\n' => return None,
            _ => i += 1,
        }
    }
    None
}

/// The index after a run of `quote` of at least three that closes a
/// multi-line string, searching from `i`; `None` when the line ends first.
fn multi_end(bytes: &[u8], mut i: usize, quote: u8, escapes: bool) -> Option<usize> {
    while i < bytes.len() {
        if escapes && bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if bytes[i] == quote {
            let run = bytes[i..].iter().take_while(|b| **b == quote).count();
            if run >= 3 {
                return Some(i + run);
            }
            i += run;
            continue;
        }
        i += 1;
    }
    None
}

/// Lexes one line that is not a header, from the state `carry` and bracket
/// `depth` the previous line left; `None` for a one-line string left open.
fn lex_line(line: &str, carry: Carry, mut depth: usize) -> Option<(Carry, usize)> {
    let bytes = line.as_bytes();
    let mut i = 0;
    let open = |quote: u8, escapes: bool, from: usize| multi_end(bytes, from, quote, escapes);
    match carry {
        Carry::MultiBasic => match open(b'"', true, 0) {
            Some(end) => i = end,
            None => return Some((Carry::MultiBasic, depth)),
        },
        Carry::MultiLiteral => match open(b'\'', false, 0) {
            Some(end) => i = end,
            None => return Some((Carry::MultiLiteral, depth)),
        },
        Carry::Plain => {}
    }
    while i < bytes.len() {
        match bytes[i] {
            b'#' => break,
            b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            b'"' if bytes[i..].starts_with(b"\"\"\"") => match open(b'"', true, i + 3) {
                Some(end) => i = end,
                None => return Some((Carry::MultiBasic, depth)),
            },
            b'\'' if bytes[i..].starts_with(b"'''") => match open(b'\'', false, i + 3) {
                Some(end) => i = end,
                None => return Some((Carry::MultiLiteral, depth)),
            },
            b'"' => i = basic_end(bytes, i + 1)?,
            b'\'' => i = bytes[i + 1..].iter().position(|b| *b == b'\'')? + i + 2,
            _ => i += 1,
        }
    }
    Some((Carry::Plain, depth))
}

#[cfg(test)]
mod tests {
    use super::*;

    // A plain file splits into its world and each step table, byte for byte.
    #[test]
    fn splits_world_and_steps() {
        let text = "id = \"a\"\n[[agents]]\nid = \"x\"\n[[steps]] # one\nid = \"s1\"\n[[ steps ]]\nid = \"s2\"\n[determinism]\nlocale = \"C\"\n";
        let split = split(text).unwrap();
        assert_eq!(
            split.world,
            "id = \"a\"\n[[agents]]\nid = \"x\"\n[determinism]\nlocale = \"C\"\n"
        );
        assert_eq!(
            split.steps,
            vec![
                "[[steps]] # one\nid = \"s1\"\n",
                "[[ steps ]]\nid = \"s2\"\n"
            ]
        );
    }

    // A header-like line inside a multi-line string or array is not a cut.
    #[test]
    fn strings_and_arrays_are_not_headers() {
        let text = "[[steps]]\ncontent = \"\"\"\n[[steps]]\n\"\"\"\n[[steps]]\ntools = [\n[\"a\"],\n]\nc = '''\n[x]'''\nd = \"[[steps]]\"\n";
        let split = split(text).unwrap();
        assert_eq!(split.steps.len(), 2);
        assert!(split.world.is_empty());
        assert!(split.steps[1].contains("[x]'''"));
    }

    // Text the lexer cannot close, or without step tables, is not split.
    #[test]
    fn refuses_what_it_cannot_close() {
        assert_eq!(split("[[steps]]\nc = \"\"\"\nopen\n"), None);
        assert_eq!(split("[[steps]]\nc = [1,\n"), None);
        assert_eq!(split("[[steps]]\nc = \"open\n"), None);
        assert_eq!(split("id = \"a\"\n[[agents]]\nid = \"x\"\n"), None);
    }

    // A step's sub-tables stay with the step they follow; a `steps`-prefixed name that is another key, or a sub-table before any step, is a world block.
    #[test]
    fn step_sub_tables_stay_with_their_step() {
        let text = "[[steps]]\nid = \"s1\"\n[steps.definition]\nx = 1\n[ steps . definition.annotations ]\ny = true\n[[steps]]\nid = \"s2\"\n[stepsize]\nz = 2\n";
        let split = split(text).unwrap();
        assert_eq!(
            split.steps,
            vec![
                "[[steps]]\nid = \"s1\"\n[steps.definition]\nx = 1\n[ steps . definition.annotations ]\ny = true\n",
                "[[steps]]\nid = \"s2\"\n"
            ]
        );
        assert_eq!(split.world, "[stepsize]\nz = 2\n");
        let before = split_world_first("[steps.definition]\nx = 1\n[[steps]]\nid = \"s\"\n");
        assert_eq!(before, "[steps.definition]\nx = 1\n");
    }

    fn split_world_first(text: &str) -> String {
        split(text).unwrap().world
    }
}
