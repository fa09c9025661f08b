//! Reading an adversary block's `[adversaries.params]` into typed,
//! validated parameters per class, with errors that name the field and the
//! fix. The classes and genes themselves live in the parent module.

use super::*;

/// A population's validated `[adversaries.params]`, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "kebab-case")]
pub enum ClassParams {
    /// `prompt-injection`: `patterns`, `targets`, `evasive`.
    PromptInjection {
        /// Pattern names the population uses (default: all five).
        patterns: Vec<String>,
        /// Where payloads go (default: arguments and fixture).
        targets: Vec<InjectionTarget>,
        /// Whether the detectors' known evasive variants are in play (default false).
        evasive: bool,
    },
    /// `capability-overrequest`: `swaps`, `tools`, `servers`.
    CapabilityOverrequest {
        /// What may be swapped (default: server, tool, both).
        swaps: Vec<SwapKind>,
        /// Candidate tools (default: the simulated catalogue).
        tools: Vec<String>,
        /// Candidate servers (default: the scenario's servers, or `admin`).
        servers: Vec<String>,
    },
    /// `replay-attempt`: `modes`, `reuse`, `delay_ms`, `stale_ms`.
    ReplayAttempt {
        /// Replay timings (default: all four).
        modes: Vec<ReplayMode>,
        /// What is reused (default: request and nonce).
        reuses: Vec<ReplayReuse>,
        /// Delay of a delayed replay, virtual milliseconds.
        delay_ms: u64,
        /// Age of a stale replay, virtual milliseconds.
        stale_ms: u64,
    },
    /// `scope-escape`: `widenings`, `tools`, `servers`.
    ScopeEscape {
        /// Widenings tried (default: all eight).
        widenings: Vec<WideningKind>,
        /// Candidate tools to add (default: the simulated catalogue).
        tools: Vec<String>,
        /// Candidate servers to add (default: the scenario's servers, or `admin`).
        servers: Vec<String>,
    },
}

impl ClassParams {
    /// Validates a block's params for `class`; `field` is the table's path
    /// (such as `adversaries[0].params`) and `servers` the scenario's
    /// declared servers, used for defaults. Unknown keys, wrong types,
    /// unknown words and empty lists are refused naming the parameter.
    pub fn from_table(
        class: AdversaryClass,
        table: Option<&toml::Table>,
        field: &str,
        servers: &[String],
    ) -> Result<ClassParams, ArenaError> {
        let empty = toml::Table::new();
        let table = table.unwrap_or(&empty);
        let reader = ParamReader { table, field };
        match class {
            AdversaryClass::PromptInjection => reader.prompt_injection(),
            AdversaryClass::CapabilityOverrequest => reader.capability_overrequest(servers),
            AdversaryClass::ReplayAttempt => reader.replay_attempt(),
            AdversaryClass::ScopeEscape => reader.scope_escape(servers),
        }
    }

    /// The class these parameters belong to.
    pub fn class(&self) -> AdversaryClass {
        match self {
            ClassParams::PromptInjection { .. } => AdversaryClass::PromptInjection,
            ClassParams::CapabilityOverrequest { .. } => AdversaryClass::CapabilityOverrequest,
            ClassParams::ReplayAttempt { .. } => AdversaryClass::ReplayAttempt,
            ClassParams::ScopeEscape { .. } => AdversaryClass::ScopeEscape,
        }
    }

    /// The genes a population starts with: one per allowed combination of
    /// its class's main fields, in parameter order.
    pub fn initial_genes(&self) -> Vec<Gene> {
        match self {
            ClassParams::PromptInjection {
                patterns,
                targets,
                evasive,
            } => {
                let mut genes = Vec::new();
                for pattern in patterns {
                    for variant in 0..=variant_limit(pattern, *evasive) {
                        for target in targets {
                            genes.push(Gene::PromptInjection {
                                pattern: pattern.clone(),
                                variant,
                                target: *target,
                            });
                        }
                    }
                }
                genes
            }
            ClassParams::CapabilityOverrequest { swaps, .. } => swaps
                .iter()
                .map(|swap| Gene::CapabilityOverrequest {
                    swap: *swap,
                    choice: 0,
                })
                .collect(),
            ClassParams::ReplayAttempt { modes, reuses, .. } => modes
                .iter()
                .flat_map(|mode| {
                    reuses.iter().map(|reuse| Gene::ReplayAttempt {
                        mode: *mode,
                        reuse: *reuse,
                    })
                })
                .collect(),
            // A monetary widening's choice picks its form (another
            // argument, another currency, the per-call limit, the total,
            // dropped), so the population starts with each form.
            ClassParams::ScopeEscape { widenings, .. } => widenings
                .iter()
                .flat_map(|widening| {
                    let forms = match widening {
                        WideningKind::Monetary => MONETARY_FORMS,
                        _ => 1,
                    };
                    (0..forms).map(|choice| Gene::ScopeEscape {
                        widening: *widening,
                        choice,
                    })
                })
                .collect(),
        }
    }
}

/// Reads typed parameters out of one `[adversaries.params]` table.
struct ParamReader<'a> {
    table: &'a toml::Table,
    field: &'a str,
}

/// The servers a population targets by default: the scenario's, or
/// `admin` when it declares none.
fn default_servers(servers: &[String]) -> Vec<String> {
    if servers.is_empty() {
        vec![FALLBACK_SERVER.to_string()]
    } else {
        servers.to_vec()
    }
}

/// The tools a population targets by default: the simulated catalogue.
fn default_tools() -> Vec<String> {
    DEFAULT_TOOLS.iter().map(|t| t.to_string()).collect()
}

impl ParamReader<'_> {
    /// `prompt-injection`'s params: known pattern names, targets, evasive.
    fn prompt_injection(&self) -> Result<ClassParams, ArenaError> {
        let field = self.field;
        self.only(&["patterns", "targets", "evasive"])?;
        let patterns = match self.strings("patterns")? {
            Some(list) => {
                for (i, name) in list.iter().enumerate() {
                    if Pattern::parse(name).is_none() {
                        return Err(ArenaError::AdversaryParam {
                            field: format!("{field}.patterns[{i}]"),
                            reason: format!("unknown pattern {name:?}; use ignore-previous-instructions, system-prompt-leak, tool-name-spoof, json-payload-smuggle, delimiter-confusion or ngram-model"),
                        });
                    }
                }
                list
            }
            None => Pattern::ALL
                .iter()
                .map(|p| p.as_str().to_string())
                .collect(),
        };
        Ok(ClassParams::PromptInjection {
            patterns,
            targets: self
                .words("targets", "arguments, fixture")?
                .unwrap_or_else(|| vec![InjectionTarget::Arguments, InjectionTarget::Fixture]),
            evasive: self.boolean("evasive")?.unwrap_or(false),
        })
    }

    /// `capability-overrequest`'s params: swaps, tools, servers.
    fn capability_overrequest(&self, servers: &[String]) -> Result<ClassParams, ArenaError> {
        self.only(&["swaps", "tools", "servers"])?;
        Ok(ClassParams::CapabilityOverrequest {
            swaps: self
                .words("swaps", "server, tool, both")?
                .unwrap_or_else(|| vec![SwapKind::Server, SwapKind::Tool, SwapKind::Both]),
            tools: self.strings("tools")?.unwrap_or_else(default_tools),
            servers: self
                .strings("servers")?
                .unwrap_or_else(|| default_servers(servers)),
        })
    }

    /// `replay-attempt`'s params: modes, reuse, delay_ms, stale_ms.
    fn replay_attempt(&self) -> Result<ClassParams, ArenaError> {
        self.only(&["modes", "reuse", "delay_ms", "stale_ms"])?;
        Ok(ClassParams::ReplayAttempt {
            modes: self
                .words("modes", "immediate, delayed, stale, concurrent")?
                .unwrap_or_else(|| {
                    vec![
                        ReplayMode::Immediate,
                        ReplayMode::Delayed,
                        ReplayMode::Stale,
                        ReplayMode::Concurrent,
                    ]
                }),
            reuses: self
                .words("reuse", "request, nonce")?
                .unwrap_or_else(|| vec![ReplayReuse::Request, ReplayReuse::Nonce]),
            delay_ms: self.millis("delay_ms")?.unwrap_or(DEFAULT_REPLAY_DELAY_MS),
            stale_ms: self.millis("stale_ms")?.unwrap_or(DEFAULT_REPLAY_STALE_MS),
        })
    }

    /// `scope-escape`'s params: widenings, tools, servers.
    fn scope_escape(&self, servers: &[String]) -> Result<ClassParams, ArenaError> {
        self.only(&["widenings", "tools", "servers"])?;
        Ok(ClassParams::ScopeEscape {
            widenings: self
                .words(
                    "widenings",
                    "tool, path, server, expiry, share, start, any-tool, budget, monetary",
                )?
                .unwrap_or_else(|| {
                    vec![
                        WideningKind::Tool,
                        WideningKind::Path,
                        WideningKind::Server,
                        WideningKind::Expiry,
                        WideningKind::Share,
                        WideningKind::Start,
                        WideningKind::AnyTool,
                        WideningKind::Budget,
                        WideningKind::Monetary,
                    ]
                }),
            tools: self.strings("tools")?.unwrap_or_else(default_tools),
            servers: self
                .strings("servers")?
                .unwrap_or_else(|| default_servers(servers)),
        })
    }

    fn at(&self, key: &str) -> String {
        format!("{}.{key}", self.field)
    }

    fn only(&self, known: &[&str]) -> Result<(), ArenaError> {
        match self.table.keys().find(|k| !known.contains(&k.as_str())) {
            Some(key) => Err(ArenaError::AdversaryParam {
                field: self.at(key),
                reason: format!("unknown parameter; this class takes {}", known.join(", ")),
            }),
            None => Ok(()),
        }
    }

    fn strings(&self, key: &str) -> Result<Option<Vec<String>>, ArenaError> {
        let Some(value) = self.table.get(key) else {
            return Ok(None);
        };
        let wrong = || ArenaError::AdversaryParam {
            field: self.at(key),
            reason: "expected an array of strings".to_string(),
        };
        let items = value.as_array().ok_or_else(wrong)?;
        if items.is_empty() {
            return Err(ArenaError::EmptyPopulation {
                field: self.at(key),
            });
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let text = item.as_str().ok_or_else(|| ArenaError::AdversaryParam {
                field: format!("{}[{i}]", self.at(key)),
                reason: "expected a string".to_string(),
            })?;
            if out.iter().any(|o: &String| o == text) {
                return Err(ArenaError::AdversaryParam {
                    field: format!("{}[{i}]", self.at(key)),
                    reason: "listed twice".to_string(),
                });
            }
            out.push(text.to_string());
        }
        Ok(Some(out))
    }

    fn words<T: for<'de> Deserialize<'de> + PartialEq>(
        &self,
        key: &str,
        allowed: &str,
    ) -> Result<Option<Vec<T>>, ArenaError> {
        let Some(list) = self.strings(key)? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(list.len());
        for (i, word) in list.iter().enumerate() {
            let parsed: T = serde_json::from_value(serde_json::Value::String(word.clone()))
                .map_err(|_| ArenaError::AdversaryParam {
                    field: format!("{}[{i}]", self.at(key)),
                    reason: format!("unknown value {word:?}; use {allowed}"),
                })?;
            out.push(parsed);
        }
        Ok(Some(out))
    }

    fn boolean(&self, key: &str) -> Result<Option<bool>, ArenaError> {
        match self.table.get(key) {
            None => Ok(None),
            Some(value) => value
                .as_bool()
                .map(Some)
                .ok_or_else(|| ArenaError::AdversaryParam {
                    field: self.at(key),
                    reason: "expected true or false".to_string(),
                }),
        }
    }

    fn millis(&self, key: &str) -> Result<Option<u64>, ArenaError> {
        match self.table.get(key) {
            None => Ok(None),
            Some(value) => match value.as_integer() {
                Some(n) if (1..=1 << 53).contains(&n) => Ok(Some(n as u64)),
                _ => Err(ArenaError::AdversaryParam {
                    field: self.at(key),
                    reason: "expected an integer number of milliseconds between 1 and 2^53"
                        .to_string(),
                }),
            },
        }
    }
}
