//! Generated scenario texts that several process suites share.

/// A scenario `id` (seed `seed`) in which an agent on node-b reads, `steps`
/// times, a workspace served by kernel-a on node-a, so every call crosses
/// from one node process to the other.
pub fn cross_node_scenario(id: &str, seed: u64, steps: usize) -> String {
    let mut text = format!(
        r#"id = "{id}"
title = "an agent on node-b reads through kernel-a on node-a"
schema_version = "chio.arena.scenario/v1"
rng_seed = {seed}
virtual_clock_start = "2026-01-05T08:00:00.000Z"

[determinism]
rng_seed = {seed}
virtual_clock_start = "2026-01-05T08:00:00.000Z"
scheduler = "single-agent-v1"
locale = "C"

[[nodes]]
id = "node-a"

[[nodes]]
id = "node-b"

[[kernels]]
id = "kernel-a"
node = "node-a"

[[kernels]]
id = "kernel-b"
node = "node-b"

[[servers]]
id = "workspace"
kernel = "kernel-a"
kind = "workspace"
fixtures = "fixtures/ws"

[[agents]]
id = "far"
role = "reader"
model = "recorded:far"
seed_prompt_ref = "prompts/agent.txt"
kernel = "kernel-b"

[[grants]]
id = "far-read"
agent = "far"
server = "workspace"
tools = ["read_file"]
path_prefix = "/workspace/"
"#
    );
    for i in 0..steps {
        text.push_str(&format!(
            "\n[[steps]]\nid = \"read-{i:05}\"\nagent = \"far\"\nserver = \"workspace\"\ntool = \"read_file\"\narguments = {{ path = \"/workspace/notes.txt\" }}\nexpect_verdict = \"allow\"\n"
        ));
    }
    text
}

/// A scenario of `nodes` logical nodes, each with a kernel, a workspace
/// and `agents` agents granted the next node's workspace, and `steps` reads
/// spread round-robin over every agent (`s-000000` on): agents' steps are
/// independent of each other, and with more than one node every call
/// crosses to another node process.
pub fn many_agent_scenario(nodes: usize, agents: usize, steps: usize) -> String {
    let mut text = String::from(
        r#"id = "many_agents"
title = "independent agents on several nodes read through the next node's kernel"
schema_version = "chio.arena.scenario/v1"
rng_seed = 21
virtual_clock_start = "2026-01-05T08:00:00.000Z"

[determinism]
rng_seed = 21
virtual_clock_start = "2026-01-05T08:00:00.000Z"
scheduler = "deterministic-multi-v1"
locale = "C"
"#,
    );
    for n in 0..nodes {
        text.push_str(&format!(
            "\n[[nodes]]\nid = \"node-{n}\"\n\n[[kernels]]\nid = \"kernel-{n}\"\nnode = \"node-{n}\"\n\n[[servers]]\nid = \"ws-{n}\"\nkernel = \"kernel-{n}\"\nkind = \"workspace\"\nfixtures = \"fixtures/ws\"\n"
        ));
    }
    for n in 0..nodes {
        let next = (n + 1) % nodes;
        for a in 0..agents {
            text.push_str(&format!(
                "\n[[agents]]\nid = \"agent-{n}-{a}\"\nrole = \"reader\"\nmodel = \"recorded:reader\"\nseed_prompt_ref = \"prompts/agent.txt\"\nkernel = \"kernel-{n}\"\n\n[[grants]]\nid = \"grant-{n}-{a}\"\nagent = \"agent-{n}-{a}\"\nserver = \"ws-{next}\"\ntools = [\"read_file\"]\npath_prefix = \"/workspace/\"\n"
            ));
        }
    }
    for i in 0..steps {
        let n = i % nodes;
        let a = (i / nodes) % agents;
        let next = (n + 1) % nodes;
        text.push_str(&format!(
            "\n[[steps]]\nid = \"s-{i:06}\"\nagent = \"agent-{n}-{a}\"\nserver = \"ws-{next}\"\ntool = \"read_file\"\narguments = {{ path = \"/workspace/notes.txt\" }}\nexpect_verdict = \"allow\"\n"
        ));
    }
    text
}
