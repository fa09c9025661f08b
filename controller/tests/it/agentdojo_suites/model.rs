//! The committed form of an AgentDojo suite (`scenarios/agentdojo/suites/`,
//! written by `scenarios/agentdojo/convert/convert.py`) and the outputs of
//! its pairs, expanded from the clean outputs.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

/// One suite as the converter wrote it.
#[derive(Debug, Deserialize)]
pub struct Suite {
    pub suite: String,
    pub tools: Vec<Tool>,
    pub trusted_tools: Vec<String>,
    pub trusted_fields: Vec<Field>,
    pub kinds: BTreeMap<String, Kind>,
    /// By kind of protected argument, the user's own listings whose values
    /// it may take (a tool and a pointer into its output).
    #[serde(default)]
    pub allow_from: BTreeMap<String, Vec<Field>>,
    pub vectors: BTreeMap<String, String>,
    pub loaded_texts: BTreeMap<String, BTreeMap<String, String>>,
    pub injection_tasks: BTreeMap<String, InjectionTask>,
    pub user_tasks: BTreeMap<String, UserTask>,
}

#[derive(Debug, Deserialize)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub read_only: bool,
    pub open_world: bool,
}

impl Tool {
    /// Whether a call of it has effects: it writes or reaches an open world.
    pub fn consequential(&self) -> bool {
        !self.read_only || self.open_world
    }
}

#[derive(Debug, Deserialize)]
pub struct Field {
    pub tool: String,
    pub pointer: String,
}

/// An argument's kind, its hand-over schema and whether it is protected.
#[derive(Debug, Deserialize)]
pub struct Kind {
    pub kind: String,
    pub schema: Value,
    pub protected: bool,
}

#[derive(Debug, Deserialize)]
pub struct InjectionTask {
    pub targets: BTreeMap<String, Value>,
    pub calls: Vec<Call>,
}

/// One ground-truth call with its recorded output and, for a user task,
/// its place in the planner / reader plan.
#[derive(Debug, Deserialize)]
pub struct Call {
    pub tool: String,
    pub args: Map<String, Value>,
    pub output: Value,
    pub ok: bool,
    #[serde(default)]
    pub actor: String,
    #[serde(default)]
    pub sources: BTreeMap<String, Source>,
}

/// Where an argument's value flows from: an earlier call of the task, and
/// the part of its answer when the value is exactly one.
#[derive(Debug, Deserialize)]
pub struct Source {
    pub from: usize,
    #[serde(default)]
    pub pointer: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct UserTask {
    pub vectors: Vec<String>,
    pub calls: Vec<Call>,
    /// By injection task and call index, the parts of the injected output
    /// that the text replacement does not give.
    pub injected_outputs: BTreeMap<String, BTreeMap<String, Vec<(String, Value)>>>,
}

impl Suite {
    pub fn load(text: &str) -> Suite {
        serde_json::from_str(text).expect("a suite file the converter wrote")
    }

    pub fn tool(&self, name: &str) -> &Tool {
        self.tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{}: no tool {name}", self.suite))
    }

    /// The server a tool is declared on: `tools` for a tool whose output
    /// never carries an injection vector, `data` for the others.
    pub fn server_of(&self, tool: &str) -> &'static str {
        if self.trusted_tools.iter().any(|t| t == tool) {
            "tools"
        } else {
            "data"
        }
    }

    /// User task ids in AgentDojo's numeric order.
    pub fn user_task_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.user_tasks.keys().map(String::as_str).collect();
        ids.sort_by_key(|id| (id.len(), *id));
        ids
    }

    /// Injection task ids in AgentDojo's numeric order.
    pub fn injection_task_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.injection_tasks.keys().map(String::as_str).collect();
        ids.sort_by_key(|id| (id.len(), *id));
        ids
    }

    /// The output call `index` of `task` answers in the pair with
    /// `injection` (`None`: the clean run): each seen vector's default text
    /// replaced by the attack's text as the environment holds it, then the
    /// recorded parts the replacement does not give.
    pub fn output(&self, task: &UserTask, index: usize, injection: Option<&str>) -> Value {
        let clean = task.calls[index].output.clone();
        let Some(injection) = injection else {
            return clean;
        };
        let loaded = &self.loaded_texts[injection];
        let pairs: Vec<(&str, &str)> = task
            .vectors
            .iter()
            .filter_map(|v| {
                let default = self.vectors.get(v)?;
                (!default.is_empty())
                    .then(|| loaded.get(v).map(|t| (default.as_str(), t.as_str())))
                    .flatten()
            })
            .collect();
        let mut out = replace_strings(clean, &pairs);
        let patches = task
            .injected_outputs
            .get(injection)
            .and_then(|by_call| by_call.get(&index.to_string()));
        for (pointer, value) in patches.into_iter().flatten() {
            if pointer.is_empty() {
                out = value.clone();
            } else {
                *out.pointer_mut(pointer).expect("a recorded part's place") = value.clone();
            }
        }
        out
    }
}

fn replace_strings(value: Value, pairs: &[(&str, &str)]) -> Value {
    match value {
        Value::String(mut s) => {
            for (old, new) in pairs {
                s = s.replace(old, new);
            }
            Value::String(s)
        }
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| replace_strings(v, pairs))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, replace_strings(v, pairs)))
                .collect(),
        ),
        other => other,
    }
}

/// Whether an output carries the attack's text.
pub fn carries_injection(output: &Value) -> bool {
    output.to_string().contains("<INFORMATION>")
}
