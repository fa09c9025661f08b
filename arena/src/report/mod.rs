//! Self-contained HTML reports of every result the arena writes: this
//! module renders a run bundle ([`run`]) and holds the page frame every
//! report shares; the pages of an adversary search (`chio_adversary::report`),
//! a matrix synthesis (`chio_experiment::report`) and a campaign portfolio
//! (`chio_campaign::report`) live with what they report and use this frame.
//! One renderer serves `chio report`, `arena run --html`, `arena evolve
//! --html` and the matrix's `synthesis.html`.
//!
//! Every page is one file a browser shows offline: inline CSS and inline
//! SVG only, no script, no external resource, and a Content-Security-Policy
//! ([`CSP`]) that forbids anything else, so a page that tried to load
//! something would be refused by the browser rather than reach the
//! network. Everything a page prints from its input passes through
//! [`escape`] (bundle contents are untrusted: a reason or an argument is
//! text, never markup). A page is a pure function of its input: no clock,
//! no randomness, and every collection it iterates is ordered, so the same
//! input gives the same bytes.
//!
//! Module map:
//! - this module: the page frame, the policy, the style and escaping;
//! - [`run`]: a run bundle, with [`explain`] (each call's decision, stage
//!   by stage) and [`flow`] (the picture of which data reached whom).

pub mod explain;
pub mod flow;
pub mod run;

/// The Content-Security-Policy every page declares: nothing may load but
/// the page's own inline style and `data:` images.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// The inline style sheet every page shares.
const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:72em;color:#222}\
table{border-collapse:collapse;margin:0.5em 0 1em}\
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}\
th{background:#f3f3f3}\
code{font-size:90%}\
.pass{color:#1b6e20;font-weight:bold}\
.fail{color:#b5402a;font-weight:bold}\
.muted{color:#777}\
.summary{border-left:4px solid #4a7ab5;padding:0.2em 1em;background:#f6f8fb}\
.summary.bad{border-color:#b5402a;background:#fbf4f3}\
details{margin:0.3em 0;padding-left:1em;border-left:2px solid #ddd}\
summary{cursor:pointer}\
svg{max-width:100%;height:auto}";

/// `text` as it may reach a terminal: every control character (C0, DEL,
/// C1) and every bidirectional override or isolate written as a `\u{..}`
/// escape, so a title, an id or a reason from a scenario, an envelope or a
/// bundle cannot move the cursor, retitle the window, clear the screen or
/// reorder what the reader sees. Text without such characters is returned
/// as it is.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    escape_hidden(
        text,
        |c| c.is_control() || is_bidi_control(c),
        |c, out| {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        },
    )
}

/// A text of several lines as it may reach a terminal: [`printable`] of
/// each line, the line breaks kept. What was already printable stays as
/// it is, so a text assembled from parts, some made printable and some
/// not (a currency, an id, a count), is made safe whole.
pub fn printable_text(text: &str) -> std::borrow::Cow<'_, str> {
    escape_hidden(
        text,
        |c| (c.is_control() && c != '\n') || is_bidi_control(c),
        |c, out| out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    )
}

/// A JSON document as it may reach a terminal: DEL, every C1 control and
/// every bidirectional control written as a JSON `\uXXXX` escape. Such a
/// character can only stand inside a string of a JSON document, so the
/// document still parses to the same value; the C0 controls canonical JSON
/// already escapes, and the document's final newline stays as it is.
pub fn printable_json(json: &str) -> std::borrow::Cow<'_, str> {
    escape_hidden(
        json,
        |c| (c.is_control() && c > '\u{1f}') || is_bidi_control(c),
        |c, out| out.push_str(&format!("\\u{:04x}", c as u32)),
    )
}

/// The characters that reorder what a terminal or an editor shows: the
/// bidirectional embeddings, overrides and isolates, and the implicit marks
/// (left-to-right, right-to-left and Arabic letter marks).
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
    )
}

/// `text` with every character `hidden` selects written by `escape`;
/// borrowed when there is none.
fn escape_hidden(
    text: &str,
    hidden: impl Fn(char) -> bool,
    escape: impl Fn(char, &mut String),
) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(&hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `text` as plain text in Markdown (CommonMark with GFM tables): every
/// character that opens markup (emphasis, code, a link or image, raw HTML,
/// an entity, strikethrough) or ends a table cell (`|`) written with a
/// backslash, and every line break as a space, so a title, an axis value
/// or a cell from a matrix file can neither forge a table cell nor fetch
/// an image in a renderer. Text without them is returned as it is.
pub fn markdown_text(text: &str) -> std::borrow::Cow<'_, str> {
    const ACTIVE: &[char] = &['\\', '`', '*', '[', ']', '<', '>', '|', '!', '&', '~'];
    if !text.contains(ACTIVE) && !text.contains(['\n', '\r']) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            c if ACTIVE.contains(&c) => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `text` with the five HTML-significant characters escaped, safe in an
/// element's content and in a double- or single-quoted attribute; and each
/// bidirectional embedding, override and isolate (U+202A to U+202E, U+2066
/// to U+2069) shown as `\u{202e}` text, as the terminal shows it, so an
/// unterminated override in a title or a cell name cannot reverse the
/// text that follows it on the page.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// A page being written: its body, then [`Page::finish`] frames it.
#[derive(Debug, Default)]
pub struct Page {
    body: String,
}

impl Page {
    /// An empty page.
    pub fn new() -> Page {
        Page::default()
    }

    /// Appends markup written by the renderer (never untrusted text).
    pub fn raw(&mut self, markup: &str) {
        self.body.push_str(markup);
    }

    /// Appends `text`, escaped.
    pub fn text(&mut self, text: &str) {
        self.body.push_str(&escape(text));
    }

    /// Appends `<tag id="id">text</tag>` with `text` escaped; `id` is the
    /// renderer's own.
    pub fn element(&mut self, tag: &str, id: Option<&str>, text: &str) {
        match id {
            Some(id) => self.body.push_str(&format!("<{tag} id=\"{id}\">")),
            None => self.body.push_str(&format!("<{tag}>")),
        }
        self.text(text);
        self.body.push_str(&format!("</{tag}>\n"));
    }

    /// Appends a table: `id`, header cells, and rows of cells already
    /// written as markup (escape untrusted parts with [`escape`]).
    pub fn table(&mut self, id: Option<&str>, header: &[&str], rows: &[Vec<String>]) {
        match id {
            Some(id) => self.body.push_str(&format!("<table id=\"{id}\">\n<tr>")),
            None => self.body.push_str("<table>\n<tr>"),
        }
        for h in header {
            self.body.push_str(&format!("<th>{}</th>", escape(h)));
        }
        self.body.push_str("</tr>\n");
        for row in rows {
            self.body.push_str("<tr>");
            for cell in row {
                self.body.push_str(&format!("<td>{cell}</td>"));
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</table>\n");
    }

    /// The whole document, titled `title` (escaped), with the policy and
    /// the style inline.
    pub fn finish(self, kind: &str, title: &str) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
             <meta name=\"generator\" content=\"chio report ({kind})\">\n\
             <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
            escape(title),
            self.body
        )
    }
}

/// A rate in `[0, 1]` with four decimals, or `n/a`.
pub fn number(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |v| format!("{v:.4}"))
}

/// A signed number with four decimals, or `n/a`.
pub fn signed(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |v| format!("{v:+.4}"))
}

/// `pass` or `FAIL` as a coloured span, `-` when there is no judgement.
pub fn pass_cell(pass: Option<bool>) -> String {
    match pass {
        Some(true) => "<span class=\"pass\">pass</span>".to_string(),
        Some(false) => "<span class=\"fail\">FAIL</span>".to_string(),
        None => "<span class=\"muted\">-</span>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // The five significant characters are escaped and nothing else changes.
    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(escape("plain text é"), "plain text é");
        // Embeddings, overrides and isolates are shown, never applied.
        assert_eq!(
            escape("ax\u{202e}b \u{2066}c\u{2069} \u{202a}"),
            "ax\\u{202e}b \\u{2066}c\\u{2069} \\u{202a}"
        );
    }

    // The frame declares the policy and escapes its title.
    #[test]
    fn frame_declares_the_policy() {
        let mut page = Page::new();
        page.element("h1", Some("title"), "<b>");
        let html = page.finish("run", "a <title>");
        assert!(html.contains(&format!(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
        )));
        assert!(html.contains("<title>a &lt;title&gt;</title>"));
        assert!(html.contains("<h1 id=\"title\">&lt;b&gt;</h1>"));
        assert!(!html.contains("<script"));
    }

    // Markdown text cannot open a cell, a link, an image or raw HTML.
    #[test]
    fn markdown_text_is_plain() {
        assert_eq!(markdown_text("plain (a_b) 1.5"), "plain (a_b) 1.5");
        assert_eq!(
            markdown_text("x | 0.0 |\n![i](http://e/x.png) <b>&amp;"),
            "x \\| 0.0 \\| \\!\\[i\\](http://e/x.png) \\<b\\>\\&amp;"
        );
    }

    // A JSON document keeps its value and loses every character that would
    // reorder or drive a terminal; a plain one is borrowed as it is.
    #[test]
    fn printable_json_keeps_the_value() {
        let value = serde_json::json!({
            "reason": "ok\u{202e}gnp.exe\u{9b}31m\u{7f}\u{200f}\u{61c}\u{2066}",
            "k\u{202d}": "tab\there",
        });
        let json = format!("{}\n", serde_json::to_string(&value).unwrap());
        let shown = printable_json(&json);
        assert!(shown.ends_with("}\n"));
        assert!(!shown.chars().any(|c| c.is_control() && c != '\n'));
        assert!(!shown.chars().any(is_bidi_control));
        assert!(shown.contains("\\u202e") && shown.contains("\\u009b"));
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
        assert!(matches!(
            printable_json("{\"a\":\"été\"}\n"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(printable("a\u{200e}b"), "a\\u{200e}b");
    }

    proptest! {
        // Whatever the text, its escaped form holds no character that
        // opens markup or ends an attribute, and unescaping gives it back.
        #[test]
        fn escaped_text_holds_no_markup(text in ".*") {
            let escaped = escape(&text);
            prop_assert!(!escaped.contains(['<', '>', '"', '\'']));
            let overrides = |c: char| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
            prop_assert!(!escaped.contains(overrides), "an override stayed in {:?}", escaped);
            let text: String = text
                .chars()
                .map(|c| match c {
                    '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => format!("\\u{{{:x}}}", c as u32),
                    c => c.to_string(),
                })
                .collect();
            let back = escaped
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&amp;", "&");
            prop_assert_eq!(back, text);
        }
    }
}
