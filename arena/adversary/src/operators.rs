//! Mutation operators: the composable genome of an adversary.
//!
//! A genome is a sequence of [`Operator`]s applied in order to a base
//! action's [`Draft`]: the injected text, the path a call names, where the
//! payload sits in the arguments and the protocol details of the request.
//! Every operator is a small pure function of its input (no RNG, no state),
//! so a genome and a base action decide the action byte for byte; the search
//! varies genomes, and the action's RNG sub-stream still decides the
//! placement details of each fitness round.
//!
//! The families follow what human red teams and tools such as PyRIT's
//! converters, garak's buffs and promptfoo's strategies do to a payload:
//! encodings, character-level disguises, structural moves, path tricks and
//! protocol-level moves. A goal chooses which families may act
//! ([`goal_families`]): a path trick cannot help smuggle an instruction.

use serde::{Deserialize, Serialize};

use chio_arena::adversaries::goal::Goal;

/// A family of operators; a goal admits some families and not others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// The payload re-encoded (base64, hex, URL, HTML entities, JSON escapes).
    Encoding,
    /// Characters swapped or interleaved (look-alikes, invisibles, tags, case).
    Character,
    /// Where and how the payload sits (splits, nesting, wrappers, padding, keys).
    Structural,
    /// How a path argument is spelled (segments, encodings, separators, case).
    Path,
    /// How the request is made (request id, session, timing, delegation).
    Protocol,
}

/// Where the second half of a split payload goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Split {
    /// Not split.
    None,
    /// Into a second top-level argument.
    Arguments,
    /// Into a field of a nested object argument.
    Nested,
}

/// Protocol-level departures of a request from its base step.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolDraft {
    /// Sign with the base step's own request id instead of the action id.
    pub reuse_request_id: bool,
    /// Claim another session than the agent's own.
    pub change_session: bool,
    /// Evaluate at the presented capability's expiry instant.
    pub expiry_edge: bool,
    /// Milliseconds the request's issue time sits in the future.
    pub future_dated_ms: u64,
    /// Further widenings a widening delegation adds (`tool`, `path`,
    /// `server`, `expiry`, `share`, `start`, `any-tool`, `budget`,
    /// `monetary`).
    pub extra_widenings: Vec<String>,
}

/// What operators act on: one base action before it is rendered into a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Draft {
    /// The injected text (empty when the goal injects nothing).
    pub payload: String,
    /// The path the call names, for path goals.
    pub path: Option<String>,
    /// The argument key that carries the payload, when renamed.
    pub key: Option<String>,
    /// Whether and where the payload is split in two.
    pub split: Split,
    /// Protocol departures.
    pub protocol: ProtocolDraft,
}

impl Draft {
    /// A draft carrying `payload` and `path`, with no departure yet.
    pub fn new(payload: &str, path: Option<&str>) -> Draft {
        Draft {
            payload: payload.to_string(),
            path: path.map(str::to_string),
            key: None,
            split: Split::None,
            protocol: ProtocolDraft::default(),
        }
    }

    /// The payload's two halves, split at the word boundary nearest its middle.
    pub fn halves(&self) -> (String, String) {
        split_half(&self.payload)
    }
}

/// One mutation operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operator {
    /// Base64 of the payload.
    Base64,
    /// Lowercase hex of the payload's bytes.
    Hex,
    /// Percent-encoding of every byte outside the unreserved set.
    UrlEncode,
    /// Every letter as a decimal HTML character reference.
    HtmlEntities,
    /// Every letter as a JSON `\u00XX` escape.
    JsonUnicodeEscape,
    /// The payload as a quoted, escaped JSON string literal.
    JsonStringEscape,
    /// Latin letters swapped for Cyrillic look-alikes.
    Confusables,
    /// Printable ASCII as fullwidth forms.
    Fullwidth,
    /// Letters and digits as mathematical bold.
    MathBold,
    /// Everything uppercased.
    UpperCase,
    /// Letters in alternating case.
    AlternatingCase,
    /// A zero-width space inside every word of three letters or more.
    ZeroWidthInWords,
    /// A soft hyphen inside every word of four letters or more.
    SoftHyphenInWords,
    /// The payload spelled in invisible tag characters behind a visible cover line.
    TagCharacters,
    /// A combining diaeresis on every vowel.
    Diacritics,
    /// Digits for look-alike letters (`1gn0re`).
    Leetspeak,
    /// Half the payload in one argument, half in another.
    SplitArguments,
    /// Half the payload in a field of a nested object argument.
    SplitNestedField,
    /// The payload's argument renamed to an innocent key.
    RenameKey,
    /// Wrapped in a Markdown code fence.
    CodeFence,
    /// Wrapped in an HTML comment.
    HtmlComment,
    /// Inside a single-quoted JSON (Python dict) object.
    QuotedJson,
    /// Inside a JSON object as an escaped string, one level deeper.
    NestJson,
    /// Moved past a scan window behind innocent padding.
    PadPastWindow,
    /// Tags spaced out: `< tool_call >`, `< / x >`.
    SpacedTags,
    /// A `/./` segment before the last component.
    DotSegment,
    /// A trailing `/.` segment.
    TrailingDotSegment,
    /// A trailing `/x/..` pair.
    ParentSegment,
    /// Every `.` percent-encoded as `%2e`.
    PercentEncodePath,
    /// Separators after the first written as `\`.
    BackslashSeparators,
    /// The last component uppercased.
    PathUpperCase,
    /// Every separator doubled.
    DoubleSlash,
    /// Every `.` as a fullwidth full stop (a normalisation form the kernel does not fold).
    FullwidthDot,
    /// The base step's own request id reused.
    ReuseRequestId,
    /// Another session claimed.
    ChangeSession,
    /// Evaluated at the capability's expiry instant.
    ExpiryEdge,
    /// Issued a second in the future.
    FutureDated,
    /// A widening delegation also extends the expiry.
    WidenExpiry,
    /// A widening delegation also claims more share.
    WidenShare,
    /// A widening delegation also adds a tool the parent does not grant.
    WidenTool,
    /// A widening delegation also drops the parent's path prefix.
    WidenPath,
    /// A widening delegation also adds a server the parent does not grant.
    WidenServer,
    /// A widening delegation also starts before its parent.
    WidenStart,
    /// A widening delegation also grants every tool (`*`).
    WidenAnyTool,
    /// A widening delegation also drops or raises the invocation limit.
    WidenBudget,
    /// A widening delegation also widens or drops the monetary constraint.
    WidenMonetary,
}

/// Innocent text that pushes a payload past a short scan window.
const PADDING: &str = "Reviewed the pricing module, the rounding helpers and their tests; nothing else changed in this pull request. ";
/// Bytes of padding [`Operator::PadPastWindow`] puts before the payload.
pub const PAD_BYTES: usize = 320;
/// The visible line a tag-character payload hides behind.
pub const TAG_COVER: &str = "Thanks, the fixture looks fine.";
/// The innocent key [`Operator::RenameKey`] moves the payload to.
pub const RENAMED_KEY: &str = "description";

impl Operator {
    /// Every operator, in catalogue order.
    pub const ALL: [Operator; 46] = [
        Operator::Base64,
        Operator::Hex,
        Operator::UrlEncode,
        Operator::HtmlEntities,
        Operator::JsonUnicodeEscape,
        Operator::JsonStringEscape,
        Operator::Confusables,
        Operator::Fullwidth,
        Operator::MathBold,
        Operator::UpperCase,
        Operator::AlternatingCase,
        Operator::ZeroWidthInWords,
        Operator::SoftHyphenInWords,
        Operator::TagCharacters,
        Operator::Diacritics,
        Operator::Leetspeak,
        Operator::SplitArguments,
        Operator::SplitNestedField,
        Operator::RenameKey,
        Operator::CodeFence,
        Operator::HtmlComment,
        Operator::QuotedJson,
        Operator::NestJson,
        Operator::PadPastWindow,
        Operator::SpacedTags,
        Operator::DotSegment,
        Operator::TrailingDotSegment,
        Operator::ParentSegment,
        Operator::PercentEncodePath,
        Operator::BackslashSeparators,
        Operator::PathUpperCase,
        Operator::DoubleSlash,
        Operator::FullwidthDot,
        Operator::ReuseRequestId,
        Operator::ChangeSession,
        Operator::ExpiryEdge,
        Operator::FutureDated,
        Operator::WidenExpiry,
        Operator::WidenShare,
        Operator::WidenTool,
        Operator::WidenPath,
        Operator::WidenServer,
        Operator::WidenStart,
        Operator::WidenAnyTool,
        Operator::WidenBudget,
        Operator::WidenMonetary,
    ];

    /// The operator's family.
    pub fn family(&self) -> Family {
        use Operator::*;
        match self {
            Base64 | Hex | UrlEncode | HtmlEntities | JsonUnicodeEscape | JsonStringEscape => {
                Family::Encoding
            }
            Confusables | Fullwidth | MathBold | UpperCase | AlternatingCase | ZeroWidthInWords
            | SoftHyphenInWords | TagCharacters | Diacritics | Leetspeak => Family::Character,
            SplitArguments | SplitNestedField | RenameKey | CodeFence | HtmlComment
            | QuotedJson | NestJson | PadPastWindow | SpacedTags => Family::Structural,
            DotSegment | TrailingDotSegment | ParentSegment | PercentEncodePath
            | BackslashSeparators | PathUpperCase | DoubleSlash | FullwidthDot => Family::Path,
            ReuseRequestId | ChangeSession | ExpiryEdge | FutureDated | WidenExpiry
            | WidenShare | WidenTool | WidenPath | WidenServer | WidenStart | WidenAnyTool
            | WidenBudget | WidenMonetary => Family::Protocol,
        }
    }

    /// The kebab-case name traces carry.
    pub fn as_str(&self) -> String {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(s)) => s,
            _ => String::new(),
        }
    }

    /// What the operator does, in words, for leaderboards.
    pub fn words(&self) -> &'static str {
        use Operator::*;
        match self {
            Base64 => "base64-encoded",
            Hex => "hex-encoded",
            UrlEncode => "URL-encoded",
            HtmlEntities => "written as HTML entities",
            JsonUnicodeEscape => "letters as JSON unicode escapes",
            JsonStringEscape => "quoted as a JSON string",
            Confusables => "Cyrillic look-alike letters",
            Fullwidth => "fullwidth forms",
            MathBold => "mathematical bold letters",
            UpperCase => "uppercased",
            AlternatingCase => "alternating case",
            ZeroWidthInWords => "zero-width spaces inside words",
            SoftHyphenInWords => "soft hyphens inside words",
            TagCharacters => "spelled in invisible tag characters",
            Diacritics => "diacritics on vowels",
            Leetspeak => "digits for letters",
            SplitArguments => "split across two arguments",
            SplitNestedField => "split into a nested field",
            RenameKey => "carried under an innocent key",
            CodeFence => "inside a code fence",
            HtmlComment => "inside an HTML comment",
            QuotedJson => "inside single-quoted JSON",
            NestJson => "nested one JSON string deeper",
            PadPastWindow => "moved past a scan window",
            SpacedTags => "tags spaced out",
            DotSegment => "a ./ segment in the path",
            TrailingDotSegment => "a trailing /. segment",
            ParentSegment => "a trailing x/.. pair",
            PercentEncodePath => "dots percent-encoded",
            BackslashSeparators => "backslash separators",
            PathUpperCase => "the last path component uppercased",
            DoubleSlash => "doubled separators",
            FullwidthDot => "fullwidth full stops in the path",
            ReuseRequestId => "the base step's request id reused",
            ChangeSession => "another session claimed",
            ExpiryEdge => "at the capability's expiry instant",
            FutureDated => "dated a second in the future",
            WidenExpiry => "the delegation's expiry extended",
            WidenShare => "more share claimed",
            WidenTool => "a tool added",
            WidenPath => "the path prefix dropped",
            WidenServer => "a server added",
            WidenStart => "the delegation's start moved earlier",
            WidenAnyTool => "every tool granted",
            WidenBudget => "the invocation limit dropped or raised",
            WidenMonetary => "the monetary constraint widened or dropped",
        }
    }

    /// Whether the operator adds a dimension to a widening link (served
    /// by `widen-delegation` only).
    pub fn widens(&self) -> bool {
        use Operator::*;
        matches!(
            self,
            WidenExpiry
                | WidenShare
                | WidenTool
                | WidenPath
                | WidenServer
                | WidenStart
                | WidenAnyTool
                | WidenBudget
                | WidenMonetary
        )
    }

    /// Applies the operator to `draft`.
    pub fn apply(&self, draft: &mut Draft) {
        use Operator::*;
        let text = |f: fn(&str) -> String, draft: &mut Draft| draft.payload = f(&draft.payload);
        let path = |f: fn(&str) -> String, draft: &mut Draft| {
            if let Some(p) = &draft.path {
                draft.path = Some(f(p));
            }
        };
        match self {
            Base64 => text(base64, draft),
            Hex => text(hex, draft),
            UrlEncode => text(url_encode, draft),
            HtmlEntities => text(html_entities, draft),
            JsonUnicodeEscape => text(json_unicode_escape, draft),
            JsonStringEscape => text(json_string_escape, draft),
            Confusables => text(confusables, draft),
            Fullwidth => text(fullwidth, draft),
            MathBold => text(math_bold, draft),
            UpperCase => text(upper_case, draft),
            AlternatingCase => text(alternating_case, draft),
            ZeroWidthInWords => text(zero_width_in_words, draft),
            SoftHyphenInWords => text(soft_hyphen_in_words, draft),
            TagCharacters => text(tag_characters, draft),
            Diacritics => text(diacritics, draft),
            Leetspeak => text(leetspeak, draft),
            SplitArguments => draft.split = Split::Arguments,
            SplitNestedField => draft.split = Split::Nested,
            RenameKey => draft.key = Some(RENAMED_KEY.to_string()),
            CodeFence => text(code_fence, draft),
            HtmlComment => text(html_comment, draft),
            QuotedJson => text(quoted_json, draft),
            NestJson => text(nest_json, draft),
            PadPastWindow => text(pad_past_window, draft),
            SpacedTags => text(spaced_tags, draft),
            DotSegment => path(dot_segment, draft),
            TrailingDotSegment => path(trailing_dot_segment, draft),
            ParentSegment => path(parent_segment, draft),
            PercentEncodePath => path(percent_encode_path, draft),
            BackslashSeparators => path(backslash_separators, draft),
            PathUpperCase => path(path_upper_case, draft),
            DoubleSlash => path(double_slash, draft),
            FullwidthDot => path(fullwidth_dot, draft),
            ReuseRequestId => draft.protocol.reuse_request_id = true,
            ChangeSession => draft.protocol.change_session = true,
            ExpiryEdge => draft.protocol.expiry_edge = true,
            FutureDated => draft.protocol.future_dated_ms = 1_000,
            WidenExpiry => push_widening(&mut draft.protocol, "expiry"),
            WidenShare => push_widening(&mut draft.protocol, "share"),
            WidenTool => push_widening(&mut draft.protocol, "tool"),
            WidenPath => push_widening(&mut draft.protocol, "path"),
            WidenServer => push_widening(&mut draft.protocol, "server"),
            WidenStart => push_widening(&mut draft.protocol, "start"),
            WidenAnyTool => push_widening(&mut draft.protocol, "any-tool"),
            WidenBudget => push_widening(&mut draft.protocol, "budget"),
            WidenMonetary => push_widening(&mut draft.protocol, "monetary"),
        }
    }
}

/// The operator families that can serve `goal`.
pub fn goal_families(goal: &Goal) -> &'static [Family] {
    match goal {
        Goal::SmuggleInstruction => &[Family::Encoding, Family::Character, Family::Structural],
        Goal::ReachForbiddenPath { .. } => &[Family::Path],
        Goal::UseBeyondScope
        | Goal::ReplayRequest
        | Goal::OutliveRevocation
        | Goal::LeakLabel
        | Goal::ExceedBudget
        | Goal::UseChangedDefinition
        | Goal::CallPoisonedTool
        | Goal::ActOnUntrusted => &[Family::Protocol],
        Goal::WidenDelegation => &[Family::Protocol],
    }
}

/// The operators that can serve `goal`, in catalogue order (the widening
/// operators only for `widen-delegation`, the one goal that signs a link
/// for them to widen).
pub fn goal_operators(goal: &Goal) -> Vec<Operator> {
    Operator::ALL
        .into_iter()
        .filter(|o| goal_families(goal).contains(&o.family()))
        .filter(|o| *goal == Goal::WidenDelegation || !o.widens())
        .collect()
}

/// Applies `operators` in order to `draft`.
pub fn apply_all(operators: &[Operator], draft: &mut Draft) {
    for op in operators {
        op.apply(draft);
    }
}

/// The sequence in words: `fullwidth forms, then tags spaced out`.
pub fn describe(operators: &[Operator]) -> String {
    if operators.is_empty() {
        return "the base action unchanged".to_string();
    }
    operators
        .iter()
        .map(Operator::words)
        .collect::<Vec<_>>()
        .join(", then ")
}

fn push_widening(protocol: &mut ProtocolDraft, kind: &str) {
    if !protocol.extra_widenings.iter().any(|w| w == kind) {
        protocol.extra_widenings.push(kind.to_string());
    }
}

mod transforms;
pub use transforms::*;

#[cfg(test)]
mod tests;
