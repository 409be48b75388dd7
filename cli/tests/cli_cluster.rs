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

    sharded(&cluster, &url);

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

/// A sharded filter from the command line: created with `--shards` (and
/// `ROTABLOOM_SHARDS`), filled by `filter`, shown by `status` with one line
/// per shard, rotated shard by shard, listed once, a missing shard loud
/// (`status --check` exit 4), dropped whole.
fn sharded(cluster: &RedisCluster, url: &str) {
    let r = |args: &[&str]| {
        let mut all = vec!["--redis", url];
        all.extend_from_slice(args);
        bin::rotabloom(&all, &[], b"")
    };
    let out = r(&[
        "create",
        "sh",
        "--kind",
        "bloom",
        "--capacity",
        "60000",
        "--shards",
        "6",
    ])
    .ok();
    assert!(out.stdout.contains("created (bloom, 6 shards"), "{out:?}");
    let out = bin::rotabloom(
        &[
            "--redis",
            url,
            "create",
            "shenv",
            "--kind",
            "bloom",
            "--capacity",
            "3000",
        ],
        &[("ROTABLOOM_SHARDS", "3")],
        b"",
    )
    .ok();
    assert!(out.stdout.contains("3 shards"), "{out:?}");

    // The configuration's `shards`; ROTABLOOM_SHARDS is only a default for
    // filters given by flags.
    let cfg = cluster.nodes()[0].dir().join("shards.toml");
    std::fs::write(
        &cfg,
        "[filter.shcfg]\nkind = \"bloom\"\ncapacity = 1000\nshards = 2\n",
    )
    .unwrap();
    let out = bin::rotabloom(
        &["--redis", url, "--config", cfg.to_str().unwrap(), "create"],
        &[("ROTABLOOM_SHARDS", "3")],
        b"",
    )
    .ok();
    assert!(
        out.stdout.contains("shcfg: created (bloom, 2 shards"),
        "{out:?}"
    );
    r(&["drop", "shcfg", "--yes"]).ok();

    // --dry-run: one shard's sizing, and the whole's; nothing written.
    let dry = |json: bool| {
        let mut args = vec!["create", "shdry", "--kind", "bloom", "--capacity", "90000"];
        args.extend_from_slice(&["--shards", "3", "--dry-run"]);
        if json {
            args.push("--json");
        }
        r(&args).ok()
    };
    let out = dry(false);
    assert!(
        out.stdout
            .contains("would create bloom (3 shards, each 1 generation of"),
        "{out:?}"
    );
    assert!(out.stdout.contains("in all)"), "{out:?}");
    assert!(
        out.stdout
            .contains("each shard: the table above, for 31,040 items"),
        "{out:?}"
    );
    let doc: serde_json::Value = serde_json::from_str(&dry(true).stdout).unwrap();
    assert_eq!(doc["shards"], 3);
    let shard_bytes = doc["shard_bytes"].as_u64().unwrap();
    assert_eq!(doc["bytes"].as_u64().unwrap(), 3 * shard_bytes);
    assert_eq!(
        doc["generations"][0]["capacity"], 31_040,
        "30,000 + ceil(6 sqrt(30,000))"
    );
    assert!(
        r(&["status", "shdry"]).code != 0,
        "a dry run creates nothing"
    );

    // `filter` drops repeats, exactly as unsharded.
    let input: String = (0..3000).map(|i| format!("u{}\n", i % 2000)).collect();
    let out = bin::rotabloom(&["--redis", url, "filter", "sh"], &[], input.as_bytes()).ok();
    assert_eq!(out.stdout.lines().count(), 2000, "{}", out.stderr);
    let again = bin::rotabloom(&["--redis", url, "filter", "sh"], &[], input.as_bytes()).ok();
    assert_eq!(again.stdout, "");
    let out = r(&["check", "sh", "u1", "u1999", "nope"]).ok();
    assert_eq!(out.stdout, "u1\nu1999\n");

    // status: totals, one line per shard with its master; JSON "shards".
    let out = r(&["status", "sh"]).ok();
    assert!(out.stdout.contains("6 shards"), "{out:?}");
    assert!(
        out.stdout.contains("2,000 items") || out.stdout.contains("2000 items"),
        "{out:?}"
    );
    let lines = out
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("shard "))
        .count();
    assert_eq!(lines, 6, "{out:?}");
    assert!(out.stdout.contains(" on 127.0.0.1:"), "{out:?}");
    let out = r(&["status", "sh", "--json"]).ok();
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["filters"][0]["shards"], 6);
    assert_eq!(doc["filters"][0]["items"], 2000);
    assert_eq!(
        doc["filters"][0]["shard_filters"].as_array().unwrap().len(),
        6
    );

    // list: the filter once, not its shards.
    let out = r(&["list"]).ok();
    assert!(out.stdout.lines().any(|l| l == "sh"), "{out:?}");
    assert!(!out.stdout.contains(":shard:"), "{out:?}");

    // metrics: one sample per filter, the shards' totals; clear empties
    // every shard.
    r(&[
        "create",
        "shc",
        "--kind",
        "bloom",
        "--capacity",
        "3000",
        "--shards",
        "3",
    ])
    .ok();
    let input: String = (0..300).map(|i| format!("c{i}\n")).collect();
    bin::rotabloom(&["--redis", url, "add", "shc"], &[], input.as_bytes()).ok();
    let items = |name: &str| -> u64 {
        let out = r(&["status", name, "--json"]).ok();
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        doc["filters"][0]["items"].as_u64().unwrap()
    };
    let n = items("shc");
    assert!(n > 290, "{n} of 300 counted");
    let out = r(&["metrics", "shc"]).ok();
    let samples: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("rotabloom_items{") && l.contains("filter=\"shc\""))
        .collect();
    assert_eq!(samples.len(), 1, "{out:?}");
    assert!(
        samples[0].ends_with(&format!(" {n}")),
        "{samples:?} (status says {n})"
    );
    assert!(!out.stdout.contains(":shard:"), "{out:?}");
    let out = r(&["clear", "shc", "--yes"]).ok();
    assert!(out.stdout.contains("cleared"), "{out:?}");
    assert_eq!(items("shc"), 0);
    let out = bin::rotabloom(
        &["--redis", url, "check", "shc", "--absent"],
        &[],
        input.as_bytes(),
    )
    .ok();
    assert_eq!(
        out.stdout.lines().count(),
        300,
        "every item absent after clear: {out:?}"
    );

    // A circular sharded filter rotates every shard.
    let circular = |name: &str, extra: &[&str]| {
        let mut args = vec!["create", name, "--kind", "circular", "--generations", "2"];
        args.extend_from_slice(&["--capacity", "600", "--shards", "3"]);
        args.extend_from_slice(extra);
        r(&args).ok();
    };
    circular("shw", &[]);
    let out = r(&["rotate", "shw"]).ok();
    assert_eq!(out.stdout.matches("rotated").count(), 3, "{out:?}");

    // 16 cron runs of `rotate --if-due` at once, an hour on: each of the 3
    // shards of an hourly filter rotates exactly once.
    circular("shcron", &["--every", "1h"]);
    let later = (chrono::Utc::now() + chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let runs: Vec<_> = (0..16)
        .map(|_| {
            bin::spawn(&[
                "--redis", url, "rotate", "--if-due", "--now", &later, "--force", "--json",
                "shcron",
            ])
        })
        .collect();
    let mut rotations = 0;
    for run in runs {
        let out = bin::finish(run).ok();
        for line in out.stdout.lines() {
            let doc: serde_json::Value = serde_json::from_str(line).unwrap();
            rotations += doc["rotations"].as_u64().unwrap();
        }
    }
    assert_eq!(rotations, 3, "16 runs rotated each of 3 shards once");
    let doc: serde_json::Value =
        serde_json::from_str(&r(&["status", "shcron", "--json"]).ok().stdout).unwrap();
    let epochs: Vec<u64> = doc["filters"][0]["shard_filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["epoch"].as_u64().unwrap())
        .collect();
    assert_eq!(epochs, [1, 1, 1]);
    r(&["drop", "shcron", "--yes"]).ok();

    // One shard's keys gone: loud, naming it; status --check exits 4.
    let doc: serde_json::Value =
        serde_json::from_str(&r(&["status", "sh", "--json"]).ok().stdout).unwrap();
    let lost = doc["filters"][0]["shard_filters"][2]["name"]
        .as_str()
        .unwrap()
        .to_string();
    for node in cluster.nodes() {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("rotabloom:{{{lost}}}:*"))
            .query(&mut node.connection())
            .unwrap();
        for k in keys {
            let _: () = redis::cmd("DEL")
                .arg(&k)
                .query(&mut node.connection())
                .unwrap();
        }
    }
    let line = r(&["check", "sh", "u1"]).failed(3).to_string();
    assert!(line.contains(&lost) && line.contains("shard 2"), "{line}");
    let out = r(&["status", "sh", "--check"]);
    assert_eq!(out.code, 4, "{out:?}");
    assert!(out.stderr.contains(&lost), "{out:?}");
    // A filter with a missing shard cannot be dumped: loud, naming it.
    let file = cluster.nodes()[0].dir().join("sh.dump");
    let line = r(&["dump", "sh", file.to_str().unwrap()])
        .failed(3)
        .to_string();
    assert!(line.contains(&lost), "{line}");

    sharded_dump_expand_convert(url, cluster);

    // drop takes the whole, the missing shard notwithstanding.
    for name in ["sh", "shenv", "shw", "shc"] {
        r(&["drop", name, "--yes"]).ok();
    }
    for node in cluster.nodes() {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("rotabloom:{sh*")
            .query(&mut node.connection())
            .unwrap();
        assert_eq!(keys, Vec::<String>::new());
    }
}

/// `dump`/`restore`, `convert`, `expand` and `adopt` of sharded filters
/// from the command line.
fn sharded_dump_expand_convert(url: &str, cluster: &RedisCluster) {
    let r = |args: &[&str]| {
        let mut all = vec!["--redis", url];
        all.extend_from_slice(args);
        bin::rotabloom(&all, &[], b"")
    };
    let items: Vec<String> = (0..600).map(|i| format!("x{i}")).collect();
    let input = items.join("\n") + "\n";
    let count = |name: &str| {
        let doc: serde_json::Value =
            serde_json::from_str(&r(&["status", name, "--json"]).ok().stdout).unwrap();
        (
            doc["filters"][0]["items"].as_u64().unwrap(),
            doc["filters"][0]["shards"].clone(),
        )
    };
    let present = |name: &str| {
        let mut args = vec!["--redis", url, "check", name];
        args.extend(items.iter().map(String::as_str));
        bin::rotabloom(&args, &[], b"").ok().stdout.lines().count()
    };

    // Convert: every shard, one line each; then expand, every shard.
    let create: Vec<&str> = "create shx --kind bloom --capacity 3000 --shards 3"
        .split(' ')
        .collect();
    r(&create).ok();
    bin::rotabloom(&["--redis", url, "add", "shx"], &[], input.as_bytes()).ok();
    let out = r(&["convert", "shx"]).ok();
    assert_eq!(
        out.stdout.matches("converted to expanding").count(),
        3,
        "{out:?}"
    );
    let out = r(&["convert", "shx"]).ok();
    assert_eq!(
        out.stdout.matches("already expanding").count(),
        3,
        "{out:?}"
    );
    let out = r(&["expand", "shx"]).ok();
    assert_eq!(
        out.stdout.matches(": expanded (2 generations)").count(),
        3,
        "{out:?}"
    );
    assert_eq!(present("shx"), 600);
    let out = r(&["status", "shx", "--json"]).ok();
    assert!(out.stdout.contains("\"kind\":\"expanding\""), "{out:?}");

    // Dump, drop, restore: the same filter, every item found.
    let file = cluster.nodes()[0].dir().join("shx.dump");
    let file = file.to_str().unwrap();
    let before = count("shx");
    let out = r(&["dump", "shx", file]).ok();
    assert!(out.stdout.contains("shx: dumped to"), "{out:?}");
    let line = r(&["restore", file]).failed(2).to_string();
    assert!(line.contains("exists"), "restore never overwrites: {line}");
    r(&["drop", "shx", "--yes"]).ok();
    let out = r(&["restore", file]).ok();
    assert!(out.stdout.contains("shx: restored from"), "{out:?}");
    assert_eq!(count("shx"), before);
    assert_eq!(before.1, 3);
    assert_eq!(present("shx"), 600);

    // adopt into a sharded name: refused, saying why.
    let line = r(&[
        "adopt",
        "shx",
        "--scrapy-redis-bloomfilter",
        "legacy:bf",
        "--capacity",
        "1000",
    ])
    .failed(2)
    .to_string();
    assert!(
        line.contains("sharded") && line.contains("re-routed"),
        "{line}"
    );
    r(&["drop", "shx", "--yes"]).ok();
}
