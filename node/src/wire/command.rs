//! The controller's commands on the wire: a scheduled call, delegation and
//! message, and the fixture files a world is loaded with, to and from their
//! `chio.node.v1` messages.
//!
//! Every field is typed but these: a captured capability token, which is a
//! signed value and crosses as its canonical JSON, and a call's arguments
//! and a hand-over's schema and value, which are arbitrary JSON and cross
//! as canonical JSON (`arguments_json`, `schema_json`, `value_json`). A
//! call's argument sources are typed. Decoding names the field that does
//! not decode.

use std::collections::BTreeMap;

use chio_kernel::token::{Attenuation, MonetaryLimit};
use chio_proto::node::v1 as pb;

use super::{decode, encode, required};
use crate::error::NodeError;
use chio_kernel::provenance::ArgumentSource;

use crate::node::{CallCommand, DelegateCommand, HandOverCommand, MessageCommand};
use crate::world::FixtureSet;

/// A scheduled call as the controller sends it.
pub fn call_request(command: &CallCommand) -> Result<pb::CallRequest, NodeError> {
    Ok(pb::CallRequest {
        request_id: command.request_id.clone(),
        agent: command.agent.clone(),
        capability_id: command.capability_id.clone(),
        captured_token_json: command
            .captured
            .as_ref()
            .map(|token| encode("a captured capability token", token))
            .transpose()?,
        server: command.server.clone(),
        tool: command.tool.clone(),
        arguments_json: encode("the call's arguments", &command.arguments)?,
        now_ms: command.now_ms,
        issued_at_ms: command.issued_at_ms,
        sealed: command.sealed.clone(),
        argument_sources: command.sources.iter().map(source_to_proto).collect(),
        run_id: String::new(),
    })
}

/// A scheduled call as a node receives it.
pub fn call_command(request: pb::CallRequest) -> Result<CallCommand, NodeError> {
    let command = CallCommand {
        captured: request
            .captured_token_json
            .as_deref()
            .map(|bytes| decode("captured_token_json", bytes))
            .transpose()?,
        arguments: decode("arguments_json", &request.arguments_json)?,
        sources: request
            .argument_sources
            .into_iter()
            .map(source_from_proto)
            .collect(),
        request_id: request.request_id,
        agent: request.agent,
        capability_id: request.capability_id,
        server: request.server,
        tool: request.tool,
        now_ms: request.now_ms,
        issued_at_ms: request.issued_at_ms,
        sealed: request.sealed,
    };
    if command.issued_at_ms == 0 || command.issued_at_ms > command.now_ms {
        return Err(super::malformed(
            "issued_at_ms",
            "a call is issued at a set instant no later than its decision (now_ms)",
        ));
    }
    Ok(command)
}

/// One source of a value (a call's argument, a message's content), on the
/// wire.
fn source_to_proto(source: &ArgumentSource) -> pb::ArgumentSource {
    pb::ArgumentSource {
        pointer: source.pointer.clone(),
        labels: source.labels.clone(),
        record: source.record.clone(),
        sender: source.sender.clone(),
    }
}

/// One source of a value, from the wire.
fn source_from_proto(source: pb::ArgumentSource) -> ArgumentSource {
    ArgumentSource {
        pointer: source.pointer,
        labels: source.labels,
        record: source.record,
        sender: source.sender,
    }
}

/// What a delegation narrows, on the wire.
pub fn attenuation_to_proto(attenuation: &Attenuation) -> pb::Attenuation {
    pb::Attenuation {
        tools: attenuation.tools.as_ref().map(|tools| pb::ToolList {
            tools: tools.clone(),
        }),
        path_prefix: attenuation.path_prefix.clone(),
        not_before_ms: attenuation.not_before_ms,
        expires_at_ms: attenuation.expires_at_ms,
        max_invocations: attenuation.max_invocations,
        share_bps: attenuation.share_bps,
        monetary: attenuation
            .monetary
            .as_ref()
            .map(|limit| pb::MonetaryLimit {
                argument: limit.argument.clone(),
                currency: limit.currency.clone(),
                max_per_invocation: limit.max_per_invocation,
                max_total: limit.max_total,
            }),
    }
}

/// What a delegation narrows, from the wire.
pub fn attenuation_from_proto(attenuation: pb::Attenuation) -> Attenuation {
    Attenuation {
        tools: attenuation.tools.map(|list| list.tools),
        path_prefix: attenuation.path_prefix,
        not_before_ms: attenuation.not_before_ms,
        expires_at_ms: attenuation.expires_at_ms,
        max_invocations: attenuation.max_invocations,
        share_bps: attenuation.share_bps,
        monetary: attenuation.monetary.map(|limit| MonetaryLimit {
            argument: limit.argument,
            currency: limit.currency,
            max_per_invocation: limit.max_per_invocation,
            max_total: limit.max_total,
        }),
    }
}

/// A scheduled delegation as the controller sends it.
pub fn delegate_request(command: &DelegateCommand) -> pb::DelegateRequest {
    pb::DelegateRequest {
        agent: command.agent.clone(),
        capability_id: command.capability_id.clone(),
        to: command.to.clone(),
        delegation_id: command.delegation_id.clone(),
        attenuation: Some(attenuation_to_proto(&command.attenuation)),
        now_ms: command.now_ms,
        run_id: String::new(),
    }
}

/// A scheduled delegation as a node receives it. The attenuation is
/// required: a sender always writes one, so an absent one is a malformed
/// message, never a silent "inherit everything".
pub fn delegate_command(request: pb::DelegateRequest) -> Result<DelegateCommand, NodeError> {
    Ok(DelegateCommand {
        attenuation: attenuation_from_proto(required("attenuation", request.attenuation)?),
        agent: request.agent,
        capability_id: request.capability_id,
        to: request.to,
        delegation_id: request.delegation_id,
        now_ms: request.now_ms,
    })
}

/// A scheduled message as the controller sends it.
pub fn message_request(command: &MessageCommand) -> Result<pb::MessageRequest, NodeError> {
    Ok(pb::MessageRequest {
        agent: command.agent.clone(),
        to: command.to.clone(),
        sources: command.sources.iter().map(source_to_proto).collect(),
        now_ms: command.now_ms,
        handover: command
            .handover
            .as_ref()
            .map(|h| {
                Ok::<_, NodeError>(pb::HandOver {
                    step: h.step.clone(),
                    schema_json: encode("a hand-over's schema", &h.schema)?,
                    value_json: encode("a handed-over value", &h.value)?,
                    by_reference: h.by_reference,
                })
            })
            .transpose()?,
        run_id: String::new(),
    })
}

/// A scheduled message as a node receives it.
pub fn message_command(request: pb::MessageRequest) -> Result<MessageCommand, NodeError> {
    Ok(MessageCommand {
        handover: request
            .handover
            .map(|h| {
                Ok::<_, NodeError>(HandOverCommand {
                    schema: decode("handover.schema_json", &h.schema_json)?,
                    value: decode("handover.value_json", &h.value_json)?,
                    step: h.step,
                    by_reference: h.by_reference,
                })
            })
            .transpose()?,
        agent: request.agent,
        to: request.to,
        sources: request.sources.into_iter().map(source_from_proto).collect(),
        now_ms: request.now_ms,
    })
}

/// The fixture files of a world, by server, on the wire.
pub fn fixtures_to_proto(fixtures: &FixtureSet) -> BTreeMap<String, pb::ServerFixtures> {
    fixtures
        .servers
        .iter()
        .map(|(server, files)| {
            let files = files
                .iter()
                .map(|(path, text)| (path.clone(), text.clone()))
                .collect();
            (server.clone(), pb::ServerFixtures { files })
        })
        .collect()
}

/// The fixture files of a world, from the wire.
pub fn fixtures_from_proto(fixtures: BTreeMap<String, pb::ServerFixtures>) -> FixtureSet {
    FixtureSet {
        servers: fixtures
            .into_iter()
            .map(|(server, files)| (server, files.files))
            .collect(),
    }
}
