//! The shape of one object, for `json-payload-smuggle`: which of its keys
//! make it a tool call or a privileged chat message.

use super::super::normalise::normalise;

const TOOL_KEYS: &[&str] = &["tool", "toolname", "function", "functionname"];
const NAME_KEYS: &[&str] = &["name", "server"];
const ARGUMENT_KEYS: &[&str] = &["arguments", "args", "parameters", "params", "input"];
const CONTENT_KEYS: &[&str] = &["content", "text", "message"];
const PRIVILEGED_ROLES: &[&str] = &["system", "developer", "assistant"];
/// Keys that carry a call's arguments inline, beside a tool key naming a
/// snake_case tool (`{"tool": "run_shell", "command": "..."}`).
const PAYLOAD_KEYS: &[&str] = &[
    "command",
    "cmd",
    "code",
    "script",
    "query",
    "sql",
    "url",
    "path",
    "file",
    "to",
    "recipient",
    "amount",
    "body",
    "data",
    "target",
    "repo",
    "account",
    "destination",
];
/// The payload keys that make an `action` key a tool call too; an `action`
/// beside a `url` or `path` is an analytics or log record.
const ACTION_PAYLOAD_KEYS: &[&str] = &[
    "command",
    "cmd",
    "code",
    "script",
    "sql",
    "to",
    "recipient",
    "amount",
    "actioninput",
];

/// A value as the shape check sees it.
#[derive(Debug, Clone, Copy)]
pub enum ValueKind<'a> {
    /// A string, or a bare word in text.
    Str(&'a str),
    /// An object.
    Object,
    /// An array.
    Array,
    /// A number, boolean or null.
    Other,
}

/// What the keys of one object amount to so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct ObjectShape {
    /// A `tool`, `tool_name`, `function` or `function_name` key holds a string.
    tool: bool,
    /// A `name` or `server` key holds a string.
    name: bool,
    /// An arguments key holds an object, or JSON text of one.
    arguments_object: bool,
    /// An arguments key holds an array.
    arguments_array: bool,
    /// `role` is `system`, `developer` or `assistant`.
    privileged_role: bool,
    /// Some `role` key holds a string.
    any_role: bool,
    /// A `content`, `text` or `message` key is present.
    content: bool,
    /// A tool key names a snake_case tool (`delete_file`).
    tool_ident: bool,
    /// An `action` key names a snake_case tool.
    action_ident: bool,
    /// A payload key holds a value.
    payload: bool,
    /// A payload key of an `action` call holds a value.
    action_payload: bool,
}

/// Whether `text` names a tool: a snake_case or dotted identifier.
fn is_tool_ident(text: &str) -> bool {
    let text = text.trim();
    (text.contains('_') || text.contains('.'))
        && text.len() <= 64
        && text.starts_with(|c: char| c.is_ascii_alphabetic())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// A key with case, look-alikes and separators folded away.
fn canonical_key(key: &str) -> String {
    normalise(key)
        .chars()
        .filter(|c| !matches!(c, '_' | '-' | ' ' | '\n'))
        .collect()
}

impl ObjectShape {
    /// Records one entry.
    pub fn add(&mut self, key: &str, value: ValueKind<'_>) {
        let key = canonical_key(key);
        let key = key.as_str();
        match value {
            ValueKind::Str(text) => {
                if TOOL_KEYS.contains(&key) {
                    self.tool = true;
                    self.tool_ident |= is_tool_ident(text);
                }
                if key == "action" {
                    self.action_ident |= is_tool_ident(text);
                }
                if NAME_KEYS.contains(&key) {
                    self.name = true;
                }
                if ARGUMENT_KEYS.contains(&key) && text.trim_start().starts_with('{') {
                    self.arguments_object = true;
                }
                if key == "role" {
                    self.any_role = true;
                    if PRIVILEGED_ROLES.contains(&normalise(text).trim()) {
                        self.privileged_role = true;
                    }
                }
            }
            ValueKind::Object if ARGUMENT_KEYS.contains(&key) => self.arguments_object = true,
            ValueKind::Array if ARGUMENT_KEYS.contains(&key) => self.arguments_array = true,
            _ => {}
        }
        if CONTENT_KEYS.contains(&key) {
            self.content = true;
        }
        let filled = !matches!(value, ValueKind::Str(text) if text.trim().is_empty());
        if filled && PAYLOAD_KEYS.contains(&key) {
            self.payload = true;
        }
        if filled && ACTION_PAYLOAD_KEYS.contains(&key) {
            self.action_payload = true;
        }
    }

    /// The shape rule this object, written in text, satisfies, if any: a
    /// value's shape rules and a call with its arguments inline.
    pub fn suspicious(&self) -> Option<&'static str> {
        if (self.tool_ident && self.payload) || (self.action_ident && self.action_payload) {
            Some("tool-call-object")
        } else {
            self.suspicious_value()
        }
    }

    /// The shape rule this object satisfies as part of a JSON value, if any.
    /// Arguments inline are left to text: a call's own arguments may name a
    /// function beside its code.
    pub fn suspicious_value(&self) -> Option<&'static str> {
        if ((self.tool || self.name) && self.arguments_object)
            || (self.tool && self.arguments_array)
        {
            Some("tool-call-object")
        } else if self.privileged_role && self.content {
            Some("chat-message-object")
        } else {
            None
        }
    }

    /// The shape rule a harmless object came closest to, with how close
    /// (thousandths), or `None` when it resembles neither shape.
    pub fn near(&self) -> Option<(&'static str, u16)> {
        if self.suspicious().is_some() {
            None
        } else if self.tool || (self.name && self.arguments_array) {
            Some(("tool-call-object", 500))
        } else if self.privileged_role || (self.any_role && self.content) {
            Some(("chat-message-object", 500))
        } else {
            None
        }
    }
}
