//! `convert` and `expand` of a sharded filter when one shard's step fails
//! (its master out of memory) while the others succeed: exit 3, the one
//! error line naming the shards that made the change and those that did
//! not (docs/FORMAT.md §11.8), and the re-run finishing it on those alone
//! once the master has room again.

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;

use harness::RedisCluster;

/// The node that holds each of `shards` shards of `name`.
fn shard_nodes(cluster: &RedisCluster, name: &str, shards: u32) -> Vec<usize> {
    (0..shards)
        .map(|j| {
            let pattern = format!("rotabloom:{{{name}:shard:{j}:*");
            let holders: Vec<usize> = (0..cluster.nodes().len())
                .filter(|&i| {
                    !harness::scan(&mut cluster.nodes()[i].connection(), &pattern).is_empty()
                })
                .collect();
            assert_eq!(holders.len(), 1, "shard {j} is on nodes {holders:?}");
            holders[0]
        })
        .collect()
}

/// Sets `maxmemory` of node `i` (`1`: every write refused, `0`: no limit).
fn maxmemory(cluster: &RedisCluster, i: usize, value: &str) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(value)
        .query(&mut cluster.nodes()[i].connection())
        .unwrap();
}

/// Each shard's kind and number of generations, from `status --json`.
fn shapes(url: &str, name: &str) -> Vec<(String, usize)> {
    let out = bin::rotabloom(&["--redis", url, "status", name, "--json"], &[], b"").ok();
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    doc["filters"][0]["shard_filters"]
        .as_array()
        .unwrap_or_else(|| panic!("no shard_filters in {doc}"))
        .iter()
        .map(|s| {
            (
                s["kind"].as_str().unwrap_or_default().to_string(),
                s["generations"].as_array().map_or(0, Vec::len),
            )
        })
        .collect()
}

#[test]
fn convert_and_expand_stopped_by_one_shard_say_which_and_finish_when_run_again() {
    let cluster = RedisCluster::start();
    let url = format!("redis+cluster://127.0.0.1:{}", cluster.nodes()[0].port());
    let r = |args: &[&str]| {
        let mut all = vec!["--redis", url.as_str()];
        all.extend_from_slice(args);
        bin::rotabloom(&all, &[], b"")
    };
    let items: Vec<String> = (0..600).map(|i| format!("p{i}")).collect();
    let present = || {
        let mut args = vec!["--redis", url.as_str(), "check", "part"];
        args.extend(items.iter().map(String::as_str));
        bin::rotabloom(&args, &[], b"").ok().stdout.lines().count()
    };
    let create: Vec<&str> = "create part --kind bloom --capacity 3000 --shards 3"
        .split(' ')
        .collect();
    r(&create).ok();
    let input = items.join("\n") + "\n";
    bin::rotabloom(&["--redis", &url, "add", "part"], &[], input.as_bytes()).ok();

    // The master of the last shard refuses writes: the change is recorded
    // in the root, every shard on another master makes it, the error line
    // names the shards done and not (docs/FORMAT.md §11.8).
    let nodes = shard_nodes(&cluster, "part", 3);
    // A master of a shard that does not hold the root (which must take
    // the target).
    let root = (0..cluster.nodes().len())
        .find(|&i| {
            !harness::scan(
                &mut cluster.nodes()[i].connection(),
                "rotabloom:{part}:meta",
            )
            .is_empty()
        })
        .unwrap();
    let full = *nodes.iter().find(|&&n| n != root).unwrap();
    let refused: Vec<u32> = (0..3u32).filter(|&j| nodes[j as usize] == full).collect();
    let made: Vec<u32> = (0..3u32).filter(|&j| nodes[j as usize] != full).collect();
    assert!(!made.is_empty(), "every shard on one master: {nodes:?}");
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    let said = |change: &str| {
        format!(
            "{change} is recorded in the root and made on shards [{}], not on [{}]",
            list(&made),
            list(&refused)
        )
    };

    maxmemory(&cluster, full, "1");
    let out = r(&["convert", "part"]);
    let line = out.failed(3).to_string();
    assert!(
        line.contains(&said("the conversion to expanding")),
        "{line}"
    );
    assert!(line.contains("run it again to finish it"), "{line}");
    assert!(line.contains("memory"), "the cause is said: {line}");
    let kinds: Vec<String> = shapes(&url, "part").into_iter().map(|s| s.0).collect();
    for j in 0..3u32 {
        let expected = if refused.contains(&j) {
            "bloom"
        } else {
            "expanding"
        };
        assert_eq!(kinds[j as usize], expected, "shard {j}: {kinds:?}");
    }
    // Readers refuse it meanwhile, naming the shards behind.
    let line = r(&["check", "part", "p1"]).failed(3).to_string();
    assert!(line.contains(&format!("shard {}", refused[0])), "{line}");

    // Room again: run again, the rest is converted.
    maxmemory(&cluster, full, "0");
    let out = r(&["convert", "part"]).ok();
    assert_eq!(
        out.stdout
            .matches("already expanding, same parameters")
            .count(),
        made.len(),
        "{out:?}"
    );
    assert_eq!(
        out.stdout.matches("converted to expanding").count(),
        refused.len(),
        "{out:?}"
    );
    let out = r(&["status", "part", "--json"]).ok();
    assert!(out.stdout.contains("\"kind\":\"expanding\""), "{out:?}");
    assert_eq!(present(), 600);

    // Expand: the same; the rerun grows only the shards not grown.
    maxmemory(&cluster, full, "1");
    let out = r(&["expand", "part"]);
    let line = out.failed(3).to_string();
    assert!(line.contains(&said("the expansion")), "{line}");
    let gens = |j: u32| if refused.contains(&j) { 1 } else { 2 };
    let shapes_now: Vec<usize> = shapes(&url, "part").into_iter().map(|s| s.1).collect();
    assert_eq!(shapes_now, (0..3).map(gens).collect::<Vec<_>>());
    maxmemory(&cluster, full, "0");
    let out = r(&["expand", "part"]).ok();
    assert_eq!(
        out.stdout.matches(": expanded (2 generations)").count(),
        refused.len(),
        "{out:?}"
    );
    assert_eq!(
        out.stdout.matches("not expanded").count(),
        made.len(),
        "{out:?}"
    );
    let shapes_now: Vec<usize> = shapes(&url, "part").into_iter().map(|s| s.1).collect();
    assert_eq!(shapes_now, vec![2, 2, 2], "every shard expanded once");
    assert_eq!(present(), 600);
    r(&["drop", "part", "--yes"]).ok();
}
