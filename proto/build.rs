//! Compiles the `.proto` files of this crate into tonic/prost bindings with
//! `protox` (pure Rust), so no system `protoc` is needed. Adding a protocol is
//! one line in `PROTOS`.

/// Every protocol this crate compiles, relative to the crate root.
const PROTOS: &[&str] = &[
    "chio/trust/v1/trust_control.proto",
    "chio/node/v1/decision.proto",
    "chio/node/v1/node_control.proto",
    "chio/node/v1/kernel_link.proto",
    "chio/bench/v1/echo.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = protox::compile(PROTOS, ["."])?;
    // Every protobuf map is a BTreeMap, so a message encodes its map entries
    // in one order and the same message is the same bytes on every run.
    tonic_prost_build::configure()
        .btree_map(".")
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
