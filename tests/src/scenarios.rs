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
