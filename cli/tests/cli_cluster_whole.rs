//! Whole-filter changes from the command line (docs/FORMAT.md §11.8) on a
//! local 3-master cluster, the master of one shard refusing writes
//! (`maxmemory 1`): issue 28's reproductions 2 (`rotate`) and 3
//! (`convert`, then `dump`). What each command printed goes to standard
//! error (`--nocapture`).

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;

use bin::Run;
use harness::{RedisCluster, RedisServer};
use redis::Commands;

fn maxmemory(node: &RedisServer, value: &str) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(value)
        .query(&mut node.connection())
        .unwrap();
}

/// The node that holds filter `name`'s metadata: only its master has it.
fn node_of(cluster: &RedisCluster, name: &str) -> usize {
    let key = format!("rotabloom:{{{name}}}:meta");
    cluster
        .nodes()
        .iter()
        .position(|n| n.connection().exists::<_, bool>(&key).unwrap_or(false))
        .unwrap_or_else(|| panic!("{key} is on no node"))
}

fn show(what: &str, run: &Run) {
    eprintln!(
        "$ rotabloom {what}\n  exit {}\n  stdout: {}\n  stderr: {}",
        run.code,
        run.stdout.trim_end().replace('\n', "\n          "),
        run.stderr.trim_end()
    );
}

#[test]
fn rotate_and_convert_refused_by_one_master_are_finished_by_a_rerun() {
    let cluster = RedisCluster::start();
    let seeds: Vec<String> = cluster
        .nodes()
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port()))
        .collect();
    let url = format!("redis+cluster://{}", seeds.join(","));
    let r = |args: &[&str]| {
        let mut all = vec!["--redis", url.as_str()];
        all.extend_from_slice(args);
        let run = bin::rotabloom(&all, &[], b"");
        show(&args.join(" "), &run);
        run
    };
    // Shard `j` of `name` (from `status --json`) on another master than
    // the root, and that master.
    let faultable = |name: &str| -> (usize, usize) {
        let doc: serde_json::Value =
            serde_json::from_str(&r(&["status", name, "--json"]).ok().stdout).unwrap();
        let root = node_of(&cluster, name);
        let shards = doc["filters"][0]["shard_filters"]
            .as_array()
            .unwrap()
            .clone();
        shards
            .iter()
            .enumerate()
            .map(|(j, s)| (j, node_of(&cluster, s["name"].as_str().unwrap())))
            .find(|&(_, n)| n != root)
            .unwrap()
    };
    let epochs = |name: &str| -> Vec<u64> {
        let doc: serde_json::Value =
            serde_json::from_str(&r(&["status", name, "--json"]).ok().stdout).unwrap();
        doc["filters"][0]["shard_filters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["epoch"].as_u64().unwrap())
            .collect()
    };

    // Reproduction 2: `rotate` with shard j's master out of memory.
    r(&[
        "create",
        "rot3",
        "--kind",
        "circular",
        "--generations",
        "2",
        "--capacity",
        "600",
        "--shards",
        "3",
    ])
    .ok();
    let (j, node) = faultable("rot3");
    maxmemory(&cluster.nodes()[node], "1");
    let out = r(&["rotate", "rot3"]);
    // Readers refuse it, naming the shard, while its master refuses writes.
    let check = r(&["check", "rot3", "a"]);
    maxmemory(&cluster.nodes()[node], "0");
    let line = check.failed(3).to_string();
    assert!(line.contains(&format!("shard {j}")), "{line}");
    let line = out.failed(3).to_string();
    assert!(line.contains(&format!("not on [{j}]")), "{line}");
    let want: Vec<u64> = (0..3).map(|s| u64::from(s != j)).collect();
    assert_eq!(epochs("rot3"), want);
    // status says the truth: an error naming shard j; --check exits 4.
    let out = r(&["status", "rot3"]);
    assert!(out.stdout.contains(&format!("shard {j} (")), "{out:?}");
    assert!(out.stdout.contains("shards_disagree"), "{out:?}");
    assert_eq!(r(&["status", "rot3", "--check"]).code, 4);
    let doc: serde_json::Value =
        serde_json::from_str(&r(&["status", "rot3", "--json"]).ok().stdout).unwrap();
    assert!(
        doc.to_string().contains("\"code\":\"shards_disagree\""),
        "{doc}"
    );
    // The rerun rotates shard j alone.
    let out = r(&["rotate", "rot3"]).ok();
    assert_eq!(out.stdout.matches("rotated by hand").count(), 1, "{out:?}");
    assert_eq!(epochs("rot3"), vec![1, 1, 1]);
    assert_eq!(r(&["status", "rot3", "--check"]).code, 0);

    // Reproduction 3: `convert` with shard j's master out of memory.
    r(&[
        "create",
        "cv3",
        "--kind",
        "bloom",
        "--capacity",
        "900",
        "--shards",
        "3",
    ])
    .ok();
    let items: String = (0..300).map(|i| format!("c{i}\n")).collect();
    bin::rotabloom(&["--redis", &url, "add", "cv3"], &[], items.as_bytes()).ok();
    let (j, node) = faultable("cv3");
    maxmemory(&cluster.nodes()[node], "1");
    let out = r(&["convert", "cv3"]);
    maxmemory(&cluster.nodes()[node], "0");
    let line = out.failed(3).to_string();
    assert!(line.contains(&format!("not on [{j}]")), "{line}");
    assert_eq!(r(&["status", "cv3", "--check"]).code, 4);
    // A dump of it refuses loudly, naming the shard; nothing is written.
    let file = cluster.nodes()[0].dir().join("cv3.dump");
    let file = file.to_str().unwrap();
    let line = r(&["dump", "cv3", file]).failed(3).to_string();
    assert!(line.contains(&format!("shard {j}")), "{line}");
    assert!(!std::path::Path::new(file).exists(), "no file written");
    // The rerun converts shard j alone; then dump and restore work.
    let out = r(&["convert", "cv3"]).ok();
    assert_eq!(
        out.stdout.matches("converted to expanding").count(),
        1,
        "{out:?}"
    );
    assert_eq!(
        out.stdout.matches("already expanding").count(),
        2,
        "{out:?}"
    );
    assert_eq!(r(&["status", "cv3", "--check"]).code, 0);
    r(&["dump", "cv3", file]).ok();
    r(&["drop", "cv3", "--yes"]).ok();
    r(&["restore", file]).ok();
    let mut args = vec!["--redis", url.as_str(), "check", "cv3"];
    let list: Vec<String> = (0..300).map(|i| format!("c{i}")).collect();
    args.extend(list.iter().map(String::as_str));
    assert_eq!(
        bin::rotabloom(&args, &[], b"").ok().stdout.lines().count(),
        300
    );
    r(&["drop", "cv3", "--yes"]).ok();
    r(&["drop", "rot3", "--yes"]).ok();
}
