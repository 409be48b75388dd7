//! `convert` and `expand` of a sharded filter when one shard's step fails
//! (its master out of memory) while the others succeed: exit 3, the one
//! error line naming the shard it stopped at and the shards done, and the
//! documented re-run completing the rest once the master has room again.

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

/// Asserts that the shards of `part` before `failed` have `before`
/// generations, the others `after`.
fn generations_are(url: &str, failed: u32, before: usize, after: usize) {
    let gens: Vec<usize> = shapes(url, "part").into_iter().map(|s| s.1).collect();
    assert_eq!(gens.len(), 3, "{gens:?}");
    for (j, &n) in gens.iter().enumerate() {
        let expected = if (j as u32) < failed { before } else { after };
        assert_eq!(n, expected, "shard {j}: {gens:?}");
    }
}

/// `shards 0, 1` / `shard 0`, as the report lists them.
fn listed(list: &[u32]) -> String {
    match list {
        [one] => format!("shard {one}"),
        _ => {
            let list: Vec<String> = list.iter().map(u32::to_string).collect();
            format!("shards {}", list.join(", "))
        }
    }
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

    // The master of the last shard refuses writes: the shards before the
    // first one it holds are done, that one fails.
    let nodes = shard_nodes(&cluster, "part", 3);
    let full = nodes[2];
    let failed = nodes.iter().position(|&n| n == full).unwrap() as u32;
    assert!(failed >= 1, "every shard on one master: {nodes:?}");
    let done: Vec<u32> = (0..failed).collect();

    maxmemory(&cluster, full, "1");
    let out = r(&["convert", "part"]);
    let line = out.failed(3);
    let said = format!(
        "part: stopped at shard {failed}; converted before it: {}",
        listed(&done)
    );
    assert!(line.contains(&said), "{line}");
    assert!(
        line.contains("run `rotabloom convert part` again to convert the rest"),
        "{line}"
    );
    assert!(line.contains("memory"), "the cause is said: {line}");
    let kinds: Vec<String> = shapes(&url, "part").into_iter().map(|s| s.0).collect();
    for j in 0..3u32 {
        let expected = if j < failed { "expanding" } else { "bloom" };
        assert_eq!(kinds[j as usize], expected, "shard {j}: {kinds:?}");
    }
    assert_eq!(present(), 600, "every shard answers as before");

    // Room again: run again, the rest is converted.
    maxmemory(&cluster, full, "0");
    let out = r(&["convert", "part"]).ok();
    assert_eq!(
        out.stdout
            .matches("already expanding, same parameters")
            .count(),
        failed as usize,
        "{out:?}"
    );
    assert_eq!(
        out.stdout.matches("converted to expanding").count(),
        3 - failed as usize,
        "{out:?}"
    );
    let out = r(&["status", "part", "--json"]).ok();
    assert!(out.stdout.contains("\"kind\":\"expanding\""), "{out:?}");
    assert_eq!(present(), 600);

    // Expand: the shards before the full master's get their generation
    // (their lines printed), the error line names them and the shard it
    // stopped at.
    maxmemory(&cluster, full, "1");
    let out = r(&["expand", "part"]);
    assert_eq!(out.code, 3, "{out:?}");
    for j in &done {
        let expanded = format!("part shard {j}: expanded (2 generations)");
        assert!(out.stdout.contains(&expanded), "{out:?}");
    }
    assert_eq!(out.stdout.lines().count(), done.len(), "{out:?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{out:?}");
    let said = format!(
        "rotabloom: part: stopped at shard {failed}; expanded before it: {}",
        listed(&done)
    );
    assert!(lines[0].starts_with(&said), "{out:?}");
    assert!(
        lines[0].contains("running `rotabloom expand part` again expands every shard once more"),
        "{out:?}"
    );
    generations_are(&url, failed, 2, 1);

    // Room again: run again, as the line says: every shard once more.
    maxmemory(&cluster, full, "0");
    let out = r(&["expand", "part"]).ok();
    assert_eq!(out.stdout.matches(": expanded (").count(), 3, "{out:?}");
    generations_are(&url, failed, 3, 2);
    assert_eq!(present(), 600);
    r(&["drop", "part", "--yes"]).ok();
}
