//! The gRPC protocols of Chio Arena and their generated bindings, nothing
//! else: logic lives in the crates that serve or call these services.
//!
//! The `.proto` files sit beside this crate under `chio/` and are compiled by
//! `build.rs` with `protox`, so building needs no system `protoc`.
//!
//! Module map:
//! - [`trust::v1`]: `TrustControl`, the service nodes call for shared
//!   authority state (issuer keys, revocations, budgets, sibling shares,
//!   receipts, retained labels).
//! - [`node::v1`]: `NodeControl` (controller to node) and `KernelLink`
//!   (node to node).
//! - [`bench::v1`]: `Echo`, the bare unary round trip the distributed
//!   benchmark compares a scheduled step with.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

/// The trust-control protocols.
pub mod trust {
    /// Version 1 of `chio.trust.v1.TrustControl`: messages, client and server.
    #[allow(clippy::too_many_lines)]
    pub mod v1 {
        tonic::include_proto!("chio.trust.v1");
    }
}

/// The node protocols.
pub mod node {
    /// Version 1 of `chio.node.v1`: `NodeControl` and `KernelLink`.
    #[allow(clippy::too_many_lines)]
    pub mod v1 {
        tonic::include_proto!("chio.node.v1");
    }
}

/// The benchmark's baseline protocol.
pub mod bench {
    /// Version 1 of `chio.bench.v1.Echo`.
    #[allow(clippy::too_many_lines)]
    pub mod v1 {
        tonic::include_proto!("chio.bench.v1");
    }
}

#[cfg(test)]
mod tests {
    use super::trust::v1 as pb;
    use prost::Message;

    // Proves the wire name nodes dial is the one the proto package declares.
    #[test]
    fn trust_control_service_name_is_stable() {
        assert_eq!(
            pb::trust_control_server::SERVICE_NAME,
            "chio.trust.v1.TrustControl"
        );
    }

    // Proves the node services keep the wire names nodes and the controller dial.
    #[test]
    fn node_service_names_are_stable() {
        assert_eq!(
            super::node::v1::node_control_server::SERVICE_NAME,
            "chio.node.v1.NodeControl"
        );
        assert_eq!(
            super::node::v1::kernel_link_server::SERVICE_NAME,
            "chio.node.v1.KernelLink"
        );
    }

    // Proves a oneof outcome and optional fields survive an encode/decode round trip.
    #[test]
    fn outcomes_round_trip() {
        let refused = pb::HoldBudgetResponse {
            outcome: Some(pb::hold_budget_response::Outcome::Refused(
                pb::BudgetRefused { used: 3, limit: 3 },
            )),
        };
        let decoded = pb::HoldBudgetResponse::decode(refused.encode_to_vec().as_slice()).unwrap();
        assert_eq!(decoded, refused);
        let absent = pb::IsRevokedResponse::decode(
            pb::IsRevokedResponse {
                revoked: false,
                revoked_at_ms: None,
            }
            .encode_to_vec()
            .as_slice(),
        )
        .unwrap();
        assert_eq!(absent.revoked_at_ms, None);
    }
}
