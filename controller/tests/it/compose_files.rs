//! The compose deployment's files agree with each other and with the
//! scenario they run: the topology baked into the image parses as a topology
//! file, names exactly the triangular scenario's nodes, reaches every
//! process by a service name that `compose.yaml` declares, and reads its
//! tokens where compose and a swarm mount the declared secrets.

use crate::util;

use chio_controller::topology::TopologyFile;
use util::repo_path;

/// The host of an `http://HOST:PORT` URL.
fn host(url: &str) -> &str {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    rest.split(':').next().unwrap_or(rest)
}

// Proves compose/topology.toml parses, lists the scenario's nodes, and names only services and secrets compose.yaml declares.
#[test]
fn compose_topology_matches_the_compose_file() {
    let text = std::fs::read_to_string(repo_path("compose/topology.toml")).unwrap();
    let topology: TopologyFile = toml::from_str(&text).expect("the compose topology parses");
    let compose = std::fs::read_to_string(repo_path("compose.yaml")).unwrap();
    let scenario = chio_arena::load_scenario(repo_path(
        "scenarios/three_agent_triangular_delegation.toml",
    ))
    .unwrap();
    let wanted: Vec<String> = scenario.file().nodes.iter().map(|n| n.id.clone()).collect();
    let listed: Vec<String> = topology.nodes.keys().cloned().collect();
    assert_eq!(listed, wanted);
    let service = |name: &str| compose.contains(&format!("\n  {name}:\n"));
    for (node, url) in &topology.nodes {
        assert_eq!(host(url), node, "{node} is reached by its service name");
        assert!(service(node), "compose.yaml declares no service {node}");
        assert!(
            compose.contains(&format!("\"--name\", \"{node}\"")),
            "{node}"
        );
    }
    let trust = host(&topology.trust_control.url);
    assert!(service(trust), "compose.yaml declares no service {trust}");
    assert!(compose.contains(&format!(
        "\"--control-url\", \"{}\"",
        topology.trust_control.url
    )));
    for path in [
        &topology.cluster_token_file,
        &topology.trust_control.token_file,
    ] {
        let name = path
            .strip_prefix("/run/secrets")
            .expect("tokens are read where secrets are mounted")
            .to_string_lossy()
            .into_owned();
        assert!(
            compose.contains(&format!("\n  {name}:\n")),
            "no secret {name}"
        );
    }
}
