//! `approval`: human approval above a threshold.
//!
//! Config: `{ "tools": ["pay"], "argument": "amount", "above": 100 }`. A call
//! to a listed tool is PendingApproval when its numeric `argument` exceeds
//! `above`; with no `argument` configured every call to a listed tool needs
//! approval. A listed call whose argument is missing or not a number is a
//! guard error (deny): the threshold cannot be evaluated.

use serde::Deserialize;
use serde_json::Value;

use super::{config_error, Guard, GuardContext, GuardError, GuardKind, GuardMeta, GuardVerdict};
use crate::error::KernelError;

/// Configuration of `approval`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    /// Tools under approval.
    pub tools: Vec<String>,
    /// The numeric argument compared with `above`.
    #[serde(default)]
    pub argument: Option<String>,
    /// The threshold; a value strictly above it needs approval.
    #[serde(default)]
    pub above: Option<f64>,
}

/// The built guard.
#[derive(Debug, Clone)]
pub struct ApprovalGuard {
    meta: GuardMeta,
    tools: Vec<String>,
    threshold: Option<(String, f64)>,
}

impl ApprovalGuard {
    /// Validates the configuration.
    pub fn new(meta: GuardMeta, config: ApprovalConfig) -> Result<Self, KernelError> {
        if config.tools.is_empty() {
            return Err(config_error(
                &meta,
                "tools is empty; list the tools that need approval",
            ));
        }
        let threshold = match (config.argument, config.above) {
            (Some(arg), Some(above)) if above.is_finite() => Some((arg, above)),
            (Some(_), Some(_)) => {
                return Err(config_error(
                    &meta,
                    "above is not a finite number; use a number",
                ))
            }
            (None, None) => None,
            (Some(_), None) => {
                return Err(config_error(
                    &meta,
                    "argument is set without above; add above",
                ))
            }
            (None, Some(_)) => {
                return Err(config_error(
                    &meta,
                    "above is set without argument; add argument",
                ))
            }
        };
        Ok(ApprovalGuard {
            meta,
            tools: config.tools,
            threshold,
        })
    }
}

impl Guard for ApprovalGuard {
    fn meta(&self) -> &GuardMeta {
        &self.meta
    }
    fn kind(&self) -> GuardKind {
        GuardKind::Approval
    }
    fn check_request(&self, ctx: &GuardContext<'_>) -> Result<GuardVerdict, GuardError> {
        if !self.tools.iter().any(|t| t == ctx.tool) {
            return Ok(GuardVerdict::Allow);
        }
        let Some((argument, above)) = &self.threshold else {
            return Ok(GuardVerdict::PendingApproval(format!(
                "tool {} requires approval",
                ctx.tool
            )));
        };
        let value = match ctx.arguments.get(argument) {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
            _ => None,
        };
        let Some(value) = value else {
            return Err(GuardError(format!(
                "argument {argument} of tool {} is missing or not a number; the approval threshold cannot be evaluated",
                ctx.tool
            )));
        };
        if value > *above {
            Ok(GuardVerdict::PendingApproval(format!(
                "argument {argument} = {value} exceeds {above}; approval required"
            )))
        } else {
            Ok(GuardVerdict::Allow)
        }
    }
}
