//! The command line on the local 3-master cluster: every subcommand, from
//! a `redis+cluster://` URL and from the configuration's `cluster_nodes`.

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;

use bin::rb;
use harness::{RedisCluster, RedisServer};

#[test]
fn every_subcommand_on_a_cluster() {
    let cluster = RedisCluster::start();
    let seeds: Vec<String> = cluster
        .nodes()
        .iter()
        .take(2)
        .map(|n| format!("127.0.0.1:{}", n.port()))
        .collect();
    let url = format!("redis+cluster://{}", seeds.join(","));
    let dir = cluster.nodes()[0].dir().join("cli");
    std::fs::create_dir_all(&dir).unwrap();
    bin::every_subcommand(&["--redis", &url], &dir);

    // The filters are spread over the nodes, and status found them all.
    let holding = cluster
        .nodes()
        .iter()
        .filter(|n| {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg("rotabloom:*:meta")
                .query(&mut n.connection())
                .unwrap();
            !keys.is_empty()
        })
        .count();
    assert!(holding >= 2, "filters on {holding} node(s)");

    // The configuration's seed nodes.
    let list: Vec<String> = seeds.iter().map(|s| format!("\"{s}\"")).collect();
    let toml = format!("[defaults]\ncluster_nodes = [{}]\n", list.join(", "));
    let out = bin::with_config(&dir, &toml, &["check", "b0", "x", "nope"]).ok();
    assert_eq!(out.stdout, "x\n");

    // No seed node answers: one line, exit 3.
    let dead = RedisServer::start();
    let port = dead.port();
    drop(dead);
    let down = format!("redis+cluster://127.0.0.1:{port}");
    let line = rb(&["--redis", &down, "status"]).failed(3).to_string();
    assert!(
        line.starts_with(&format!("rotabloom: cannot connect to {down}: ")),
        "{line}"
    );
}
