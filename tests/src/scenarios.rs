//! Generated scenario texts that several process suites share, and the
//! pieces they are built from: a header, two nodes each with a kernel, an
//! agent, a grant and a read step. A suite writes only what is particular
//! to its world; the blocks every world repeats are written here once.

/// The header of a scenario: id, title, seed, clock start and scheduler.
pub fn header(id: &str, title: &str, seed: u64, scheduler: &str, start: &str) -> String {
    format!(
        r#"id = "{id}"
title = "{title}"
schema_version = "chio.arena.scenario/v1"
rng_seed = {seed}
virtual_clock_start = "{start}"

[determinism]
rng_seed = {seed}
virtual_clock_start = "{start}"
scheduler = "{scheduler}"
locale = "C"
"#
    )
}

/// Two nodes, `node-a` hosting `kernel-a` and `node-b` hosting `kernel-b`;
/// `guards_b` lists the ids of kernel-b's guards (kernel-a has none).
pub fn two_nodes(guards_b: &[&str]) -> String {
    let guards = if guards_b.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = guards_b.iter().map(|g| format!("\"{g}\"")).collect();
        format!("guards = [{}]\n", list.join(", "))
    };
    format!(
        r#"
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
{guards}"#
    )
}

/// An agent `id` with `role`, entering through `kernel`.
pub fn agent(id: &str, role: &str, kernel: &str) -> String {
    format!(
        r#"
[[agents]]
id = "{id}"
role = "{role}"
model = "recorded:{id}"
seed_prompt_ref = "prompts/agent.txt"
kernel = "{kernel}"
"#
    )
}

/// A grant `id` to `agent` of `tools` on `server`; with a `path_prefix`
/// when one is given.
pub fn grant(id: &str, agent: &str, server: &str, tools: &[&str], prefix: Option<&str>) -> String {
    let list: Vec<String> = tools.iter().map(|t| format!("\"{t}\"")).collect();
    let prefix = prefix
        .map(|p| format!("path_prefix = \"{p}\"\n"))
        .unwrap_or_default();
    format!(
        "\n[[grants]]\nid = \"{id}\"\nagent = \"{agent}\"\nserver = \"{server}\"\ntools = [{}]\n{prefix}",
        list.join(", ")
    )
}

/// A step `id` in which `agent` reads `path` from `server`, expecting
/// `verdict`; `extra` is appended as written (for `capability = ...` or
/// `at = ...` lines, each ending in a newline).
pub fn read_step(
    id: &str,
    agent: &str,
    server: &str,
    path: &str,
    verdict: &str,
    extra: &str,
) -> String {
    format!(
        "\n[[steps]]\nid = \"{id}\"\nagent = \"{agent}\"\nserver = \"{server}\"\ntool = \"read_file\"\narguments = {{ path = \"{path}\" }}\nexpect_verdict = \"{verdict}\"\n{extra}"
    )
}

/// A scenario `id` (seed `seed`) in which an agent on node-b reads, `steps`
/// times, a workspace served by kernel-a on node-a, so every call crosses
/// from one node process to the other.
pub fn cross_node_scenario(id: &str, seed: u64, steps: usize) -> String {
    let mut text = header(
        id,
        "an agent on node-b reads through kernel-a on node-a",
        seed,
        "single-agent-v1",
        "2026-01-05T08:00:00.000Z",
    );
    text.push_str(&two_nodes(&[]));
    text.push_str(
        r#"
[[servers]]
id = "workspace"
kernel = "kernel-a"
kind = "workspace"
fixtures = "fixtures/ws"
"#,
    );
    text.push_str(&agent("far", "reader", "kernel-b"));
    text.push_str(&grant(
        "far-read",
        "far",
        "workspace",
        &["read_file"],
        Some("/workspace/"),
    ));
    for i in 0..steps {
        text.push_str(&read_step(
            &format!("read-{i:05}"),
            "far",
            "workspace",
            "/workspace/notes.txt",
            "allow",
            "",
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
    let mut text = header(
        "many_agents",
        "independent agents on several nodes read through the next node's kernel",
        21,
        "deterministic-multi-v1",
        "2026-01-05T08:00:00.000Z",
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
