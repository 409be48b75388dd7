//! The administration commands of the `rotabloom` binary, driven as a user
//! would against private redis-servers: list, clear, expand, convert,
//! adopt, metrics, dump and restore; and rotations by hand and at a
//! given time.

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;
#[path = "../../tests/support/venv.rs"]
mod venv;

use bin::{rb, rotabloom, Run};
use harness::{scan, RedisServer};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// `rotabloom --redis URL ARGS`.
fn run(url: &str, args: &[&str]) -> Run {
    let mut all = vec!["--redis", url];
    all.extend_from_slice(args);
    rb(&all)
}

fn status(url: &str, name: &str) -> Value {
    let out = run(url, &["status", "--json", name]).ok();
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    doc["filters"][0].clone()
}

/// A circular filter of 3 generations of 100 items, on schedule `every`.
fn create_circular(url: &str, name: &str, every: Option<&str>) {
    let mut args = vec!["create", name, "--kind", "circular", "--generations", "3"];
    args.extend(["--capacity", "100"]);
    if let Some(e) = every {
        args.extend(["--every", e]);
    }
    run(url, &args).ok();
}

fn items(prefix: &str, n: usize) -> String {
    (0..n).map(|i| format!("{prefix}{i}\n")).collect()
}

#[test]
fn list_prints_one_name_per_line() {
    let server = RedisServer::start();
    let url = server.url();
    assert_eq!(run(&url, &["list"]).ok().stdout, "");
    run(
        &url,
        &["create", "b", "--kind", "bloom", "--capacity", "1000"],
    )
    .ok();
    run(
        &url,
        &["create", "a", "--kind", "expanding", "--capacity", "1000"],
    )
    .ok();
    create_circular(&url, "c", None);
    // A key that only looks like a filter's is not listed.
    redis::cmd("SET")
        .arg("rotabloom:{x}:other")
        .arg("1")
        .exec(&mut server.connection())
        .unwrap();
    assert_eq!(run(&url, &["list"]).ok().stdout, "a\nb\nc\n");
    let doc: Value = serde_json::from_str(&run(&url, &["list", "--json"]).ok().stdout).unwrap();
    assert_eq!(
        doc["filters"],
        serde_json::json!([
            {"name": "a", "kind": "expanding"},
            {"name": "b", "kind": "bloom"},
            {"name": "c", "kind": "circular"},
        ])
    );
}

/// Every key under filter `name`'s pattern, sorted.
fn keys_under(conn: &mut redis::Connection, name: &str) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("rotabloom:{{{name}}}:*"))
        .query(conn)
        .unwrap();
    keys.sort();
    keys
}

#[test]
fn drop_removes_every_key_and_finishes_an_interrupted_drop() {
    let server = RedisServer::start();
    let url = server.url();
    let mut conn = server.connection();
    let create = || {
        run(
            &url,
            &["create", "d", "--kind", "bloom", "--capacity", "1000"],
        )
        .ok();
        // `filter` keeps the answers of its batches in records.
        let out = rotabloom(&["--redis", &url, "filter", "d"], &[], b"a\nb\nc\n").ok();
        assert_eq!(out.stdout, "a\nb\nc\n");
    };
    create();
    let keys = keys_under(&mut conn, "d");
    assert!(keys.iter().any(|k| k.contains("}:done:")), "{keys:?}");
    assert_eq!(
        run(&url, &["drop", "d", "--yes"]).ok().stdout,
        "d: dropped\n"
    );
    assert_eq!(keys_under(&mut conn, "d"), Vec::<String>::new());

    // What a drop killed after its first step leaves: no metadata, the
    // blocks in the trash list, the records.
    create();
    let blocks: Vec<String> = keys_under(&mut conn, "d")
        .into_iter()
        .filter(|k| k.contains("}:gen:"))
        .collect();
    redis::cmd("RPUSH")
        .arg("rotabloom:{d}:trash")
        .arg(&blocks)
        .exec(&mut conn)
        .unwrap();
    redis::cmd("DEL")
        .arg("rotabloom:{d}:meta")
        .arg("rotabloom:{d}:fence")
        .exec(&mut conn)
        .unwrap();
    let left = keys_under(&mut conn, "d").len();
    assert!(left >= 3, "trash, block, record");
    let out = run(&url, &["drop", "d", "--yes"]).ok();
    assert_eq!(
        out.stdout,
        format!(
            "d: no such filter; removed {} keys an interrupted drop left\n",
            left - 1
        ),
        "{out:?}"
    );
    assert_eq!(keys_under(&mut conn, "d"), Vec::<String>::new());
    let out = run(&url, &["drop", "d", "--yes"]);
    assert_eq!(out.failed(2), "rotabloom: filter \"d\" does not exist");
}

#[test]
fn clear_empties_a_filter_once_confirmed() {
    let server = RedisServer::start();
    let url = server.url();
    run(
        &url,
        &["create", "f", "--kind", "bloom", "--capacity", "10000"],
    )
    .ok();
    let input = items("x", 500);
    let mut all = vec!["--redis", url.as_str(), "add", "f"];
    all.push("--quiet");
    rotabloom(&all, &[], input.as_bytes()).ok();
    assert_eq!(status(&url, "f")["items"], 500);

    let line = run(&url, &["clear", "f"]).failed(2).to_string();
    assert_eq!(
        line,
        "rotabloom: clear empties filter \"f\": every item in it is forgotten: add --yes to confirm"
    );
    assert_eq!(status(&url, "f")["items"], 500);

    let out = run(&url, &["clear", "f", "--yes"]).ok();
    assert_eq!(out.stdout, "f: cleared\n");
    let s = status(&url, "f");
    assert_eq!(s["items"], 0);
    assert_eq!(s["generations"][0]["set_bits"], 0);
    // Still there, with its parameters, and its blocks kept allocated.
    assert_eq!(s["parameters"]["capacity"], 10000);
    assert!(s["memory_bytes"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(run(&url, &["check", "f", "x1"]).code, 1);
    let out = run(&url, &["clear", "f", "--yes", "--json"]).ok();
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["result"], "cleared");
    run(&url, &["clear", "nope", "--yes"]).failed(2);
}

#[test]
fn expand_adds_a_generation_to_expanding_filters_only() {
    let server = RedisServer::start();
    let url = server.url();
    run(
        &url,
        &["create", "g", "--kind", "expanding", "--capacity", "1000"],
    )
    .ok();
    run(&url, &["add", "g", "before"]).ok();
    let out = run(&url, &["expand", "g"]).ok();
    assert_eq!(out.stdout, "g: expanded (2 generations)\n");
    let doc: Value =
        serde_json::from_str(&run(&url, &["expand", "g", "--json"]).ok().stdout).unwrap();
    assert_eq!(doc["result"], "expanded");
    assert_eq!(doc["generations"], 3);
    let s = status(&url, "g");
    assert_eq!(s["generations"].as_array().unwrap().len(), 3);
    assert_eq!(s["epoch"], 2);
    // The old items are still found; new ones go to the newest generation.
    assert_eq!(run(&url, &["check", "g", "before"]).ok().stdout, "before\n");
    run(&url, &["add", "g", "after"]).ok();
    assert_eq!(s["generations"][2]["items"], 0);
    assert_eq!(status(&url, "g")["generations"][2]["items"], 1);

    run(
        &url,
        &["create", "b", "--kind", "bloom", "--capacity", "1000"],
    )
    .ok();
    let line = run(&url, &["expand", "b"]).failed(2).to_string();
    assert!(line.contains("a bloom filter does not expand"), "{line}");
    assert!(line.contains("rotabloom convert"), "{line}");
    run(&url, &["expand", "nope"]).failed(2);
}

#[test]
fn convert_turns_a_bloom_filter_into_an_expanding_one_in_place() {
    let server = RedisServer::start();
    let url = server.url();
    run(
        &url,
        &["create", "b", "--kind", "bloom", "--capacity", "1000"],
    )
    .ok();
    let old = items("old", 1000);
    rotabloom(&["--redis", &url, "add", "b"], &[], old.as_bytes()).ok();

    let out = run(&url, &["convert", "b", "--max-generations", "8"]).ok();
    assert_eq!(out.stdout, "b: converted to expanding (1 generation)\n");
    let s = status(&url, "b");
    assert_eq!(s["kind"], "expanding");
    assert_eq!(s["parameters"]["max_generations"], 8);
    // Less a few false positives at insertion, which are not counted.
    let kept = s["generations"][0]["items"].as_u64().unwrap();
    assert!((990..=1000).contains(&kept), "{s}");
    // Every old item is still there, and the filter now grows.
    let out = rotabloom(
        &["--redis", &url, "check", "--absent", "b"],
        &[],
        old.as_bytes(),
    );
    assert_eq!(out.code, 1, "{out:?}");
    let new = items("new", 3000);
    rotabloom(&["--redis", &url, "add", "b"], &[], new.as_bytes()).ok();
    assert!(status(&url, "b")["generations"].as_array().unwrap().len() >= 2);

    // Again: already converted, same parameters; other parameters differ.
    let out = run(&url, &["convert", "b", "--max-generations", "8"]).ok();
    assert!(
        out.stdout
            .starts_with("b: already expanding, same parameters"),
        "{out:?}"
    );
    let line = run(&url, &["convert", "b", "--max-generations", "9"])
        .failed(2)
        .to_string();
    assert!(line.contains("max_generations"), "{line}");

    create_circular(&url, "c", None);
    let line = run(&url, &["convert", "c"]).failed(2).to_string();
    assert!(
        line.contains("circular filter cannot be converted"),
        "{line}"
    );
}

/// scrapy-redis-bloomfilter's positions of `text` (docs/FORMAT.md §4):
/// `poly(text, j) & (2^bit - 1)` for `j = 1..=k`.
fn scrapy_positions(text: &str, bit: u32, k: u64) -> Vec<u64> {
    (1..=k)
        .map(|j| {
            let h = text
                .chars()
                .fold(0u64, |h, c| h.wrapping_mul(j).wrapping_add(c as u64));
            h & ((1u64 << bit) - 1)
        })
        .collect()
}

/// The scheme of generation 0 of filter `name`, from its metadata hash.
fn scheme(conn: &mut redis::Connection, name: &str) -> String {
    redis::cmd("HGET")
        .arg(format!("rotabloom:{{{name}}}:meta"))
        .arg("gen.0.scheme")
        .query(conn)
        .unwrap()
}

/// Adopts the bitmap [`write_scrapy_bitmap`] writes as filter `spider`.
const ADOPT_SPIDER: [&str; 10] = [
    "adopt",
    "spider",
    "--scrapy-redis-bloomfilter",
    "spider:bloomfilter",
    "--bit",
    "20",
    "--hash-number",
    "6",
    "--capacity",
    "10k",
];

/// The `redis+cluster://` URL of every node of `cluster`.
fn cluster_url(cluster: &harness::RedisCluster) -> String {
    let seeds: Vec<String> = cluster
        .nodes()
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port()))
        .collect();
    format!("redis+cluster://{}", seeds.join(","))
}

/// A scrapy-redis-bloomfilter bitmap at `key` of 2^20 bits, 6 hash
/// functions, holding 200 fingerprints, written as its BloomFilter.insert
/// does; returns the fingerprints.
fn write_scrapy_bitmap(conn: &mut impl redis::ConnectionLike, key: &str) -> Vec<String> {
    let fps: Vec<String> = (0..200).map(|i| format!("{i:040x}")).collect();
    // One command at a time: the cluster connection does not pipeline.
    for fp in &fps {
        for p in scrapy_positions(fp, 20, 6) {
            redis::cmd("SETBIT")
                .arg(key)
                .arg(p)
                .arg(1)
                .exec(conn)
                .unwrap();
        }
    }
    fps
}

#[test]
fn adopt_copies_legacy_keys_from_another_cluster_slot() {
    let cluster = harness::RedisCluster::start();
    let url = cluster_url(&cluster);
    let mut conn = cluster.connection();
    let slot = |conn: &mut redis::cluster::ClusterConnection, key: &str| -> i64 {
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(conn)
            .unwrap()
    };
    assert_ne!(
        slot(&mut conn, "spider:bloomfilter"),
        slot(&mut conn, "{spider}")
    );
    let fps = write_scrapy_bitmap(&mut conn, "spider:bloomfilter");
    let out = run(&url, &ADOPT_SPIDER).ok();
    assert!(
        out.stdout
            .trim_end()
            .ends_with("; copied from another cluster slot, the legacy keys are left as they were"),
        "{out:?}"
    );
    let input: String = fps.iter().map(|f| format!("{f}\n")).collect();
    let out = rotabloom(&["--redis", &url, "check", "spider"], &[], input.as_bytes()).ok();
    assert_eq!(out.stdout, input, "every legacy fingerprint is found");
    let left: bool = redis::cmd("EXISTS")
        .arg("spider:bloomfilter")
        .query(&mut conn)
        .unwrap();
    assert!(left, "the original stays");
    let copy: bool = redis::cmd("EXISTS")
        .arg("rotabloom-import:{spider}:0")
        .query(&mut conn)
        .unwrap();
    assert!(!copy, "the copy became the filter's block");
    // Adopting again compares with what the copy was adopted as.
    let out = run(&url, &[&ADOPT_SPIDER[..], &["--json"]].concat()).ok();
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["result"], "exists", "{out:?}");
    // A set elsewhere is not copied: it is refused by its own name.
    redis::cmd("SADD")
        .arg("spider:dupefilter")
        .arg("x")
        .exec(&mut conn)
        .unwrap();
    let line = run(
        &url,
        &[
            "adopt",
            "other",
            "--scrapy-redis-bloomfilter",
            "spider:dupefilter",
            "--capacity",
            "10",
        ],
    )
    .failed(2)
    .to_string();
    assert!(
        line.contains("cannot adopt \"spider:dupefilter\": it is a Redis set"),
        "{line}"
    );
}

#[test]
fn adopt_takes_over_legacy_bitmaps() {
    let server = RedisServer::start();
    let url = server.url();
    let mut conn = server.connection();
    // A scrapy-redis-bloomfilter bitmap of 2^20 bits, 6 hash functions,
    // holding 200 fingerprints, written as its BloomFilter.insert does.
    let fps = write_scrapy_bitmap(&mut conn, "spider:bloomfilter");

    let out = run(&url, &ADOPT_SPIDER).ok();
    assert!(
        out.stdout.starts_with(
            "spider: adopted (expanding, 2 generations; the legacy bitmap holds about "
        ),
        "{out:?}"
    );
    let exists: bool = redis::cmd("EXISTS")
        .arg("spider:bloomfilter")
        .query(&mut conn)
        .unwrap();
    assert!(!exists, "the bitmap was moved into the filter");
    let input: String = fps.iter().map(|f| format!("{f}\n")).collect();
    let out = rotabloom(&["--redis", &url, "check", "spider"], &[], input.as_bytes()).ok();
    assert_eq!(out.stdout, input, "every legacy fingerprint is found");
    // New items go to the new generation, and are found too.
    run(&url, &["add", "spider", "https://new/"]).ok();
    assert_eq!(
        run(&url, &["check", "spider", "https://new/"]).ok().stdout,
        "https://new/\n"
    );
    let s = status(&url, "spider");
    assert_eq!(s["parameters"]["legacy_gens"], 1);
    assert_eq!(scheme(&mut conn, "spider"), "scrapy-redis-bloomfilter");
    // Adopting again opens it.
    let out = run(&url, &[&ADOPT_SPIDER[..], &["--json"]].concat()).ok();
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["result"], "exists");

    // Seed 000: keys PREFIX0.. of 2^31 bits; a short one reads as zeros
    // past its end.
    let mut short = vec![0u8; 64];
    short[63] = 1;
    redis::cmd("SET")
        .arg("seedbf0")
        .arg(short)
        .exec(&mut conn)
        .unwrap();
    let out = run(
        &url,
        &[
            "adopt",
            "seed",
            "--seed000",
            "seedbf",
            "--block-num",
            "1",
            "--capacity",
            "1000",
        ],
    )
    .ok();
    assert!(out.stdout.starts_with("seed: adopted"), "{out:?}");
    let s = status(&url, "seed");
    assert_eq!(scheme(&mut conn, "seed"), "seed000");
    assert_eq!(s["generations"][0]["bits"], 1u64 << 31);

    // Exactly one source; a wrong key type is one line, nothing adopted.
    let out = run(&url, &["adopt", "x", "--capacity", "10"]);
    assert_eq!(out.code, 2, "{out:?}");
    redis::cmd("LPUSH")
        .arg("alist")
        .arg("1")
        .exec(&mut conn)
        .unwrap();
    let out = run(
        &url,
        &[
            "adopt",
            "y",
            "--scrapy-redis-bloomfilter",
            "alist",
            "--bit",
            "20",
            "--capacity",
            "10",
        ],
    );
    assert_eq!(out.code, 3, "{out:?}");
    out.failed(3);
    assert_eq!(run(&url, &["list"]).ok().stdout, "seed\nspider\n");
}

#[test]
fn adopt_refuses_what_it_cannot_read_and_verifies_known_items() {
    let server = RedisServer::start();
    let url = server.url();
    let mut conn = server.connection();
    // `adopt spider --scrapy-redis-bloomfilter KEY --capacity 10k FLAGS`.
    let adopt = |key: &str, flags: &[&str]| {
        let mut args = vec![
            "adopt",
            "spider",
            "--scrapy-redis-bloomfilter",
            key,
            "--capacity",
            "10k",
        ];
        args.extend_from_slice(flags);
        run(&url, &args)
    };
    fn bit20<'a>(flags: &[&'a str]) -> Vec<&'a str> {
        [&["--bit", "20"][..], flags].concat()
    }
    // No such key: refused, nothing written.
    let line = adopt("nokey", &bit20(&[])).failed(2).to_string();
    assert!(
        line.starts_with("rotabloom: cannot adopt \"nokey\": there is no such key"),
        "{line}"
    );
    let keys: u64 = redis::cmd("DBSIZE").query(&mut conn).unwrap();
    assert_eq!(keys, 0);
    // scrapy-redis's own dupefilter, a SET: named, with the way out.
    redis::cmd("SADD")
        .arg("spider:dupefilter")
        .arg("8e7f80913230debca7264dfb3c055dcda5aaf9f8")
        .exec(&mut conn)
        .unwrap();
    let line = adopt("spider:dupefilter", &bit20(&[]))
        .failed(2)
        .to_string();
    assert!(line.contains("it is a Redis set, not a bitmap"), "{line}");
    assert!(line.contains("| rotabloom load NAME -"), "{line}");

    // The bitmap, adopted with the wrong bit: refused, naming the right
    // one.
    let fps = write_scrapy_bitmap(&mut conn, "spider:bloomfilter");
    let line = adopt("spider:bloomfilter", &[]).failed(2).to_string();
    assert!(line.contains("it fits BLOOMFILTER_BIT = 20 only"), "{line}");

    // --verify: one fingerprint the crawler never stored, and the key
    // stays where it was.
    let file = server.dir().join("known.txt");
    let stranger = "ffffffffffffffffffffffffffffffffffffffff";
    let mut text: String = fps.iter().map(|f| format!("{f}\r\n")).collect();
    text.push_str(stranger);
    text.push_str("\n\n");
    std::fs::write(&file, &text).unwrap();
    let path = file.to_str().unwrap();
    let line = adopt("spider:bloomfilter", &bit20(&["--verify", path]))
        .failed(2)
        .to_string();
    assert!(
        line.contains(&format!(
            "1 of the 201 items known to be in it are absent with these parameters (the first: \"{stranger}\")"
        )),
        "{line}"
    );
    let len: u64 = redis::cmd("STRLEN")
        .arg("spider:bloomfilter")
        .query(&mut conn)
        .unwrap();
    assert!(len > 0, "the legacy key stays");
    assert_eq!(run(&url, &["list"]).ok().stdout, "");
    let missing = server.dir().join("none.txt");
    adopt(
        "spider:bloomfilter",
        &bit20(&["--verify", missing.to_str().unwrap()]),
    )
    .failed(5);

    // Every known item found: adopted, and said so.
    let text: String = fps.iter().map(|f| format!("{f}\n")).collect();
    std::fs::write(&file, &text).unwrap();
    let out = adopt("spider:bloomfilter", &bit20(&["--verify", path])).ok();
    assert!(
        out.stdout.contains(", all 200 known items found)"),
        "{out:?}"
    );
    // Again with another legacy parameter: the difference is named.
    let line = adopt("spider:bloomfilter", &bit20(&["--hash-number", "5"]))
        .failed(2)
        .to_string();
    assert!(
        line.contains("exists with gen.0.hashes = 6, but 5 was requested"),
        "{line}"
    );
    let out = adopt("spider:bloomfilter", &bit20(&["--verify", path, "--json"])).ok();
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["result"], "exists");

    // A bitmap half full with 2 hash functions answers a quarter of new
    // items "seen": adopted, with a warning.
    redis::cmd("SET")
        .arg("half")
        .arg(vec![0x55u8; 1 << 13])
        .exec(&mut conn)
        .unwrap();
    let out = run(
        &url,
        &[
            "adopt",
            "half",
            "--scrapy-redis-bloomfilter",
            "half",
            "--bit",
            "16",
            "--hash-number",
            "2",
            "--capacity",
            "1000",
        ],
    )
    .ok();
    assert!(out.stdout.starts_with("half: adopted"), "{out:?}");
    assert_eq!(
        out.stderr,
        "rotabloom: warning: half: the adopted bitmap \"half\" alone answers about 25.00% of new \
         items \"seen\", more than the error rate 0.01 of the new generations\n"
    );
}

/// A venv with the reference implementation of the Prometheus text
/// format's parser, made once per target directory.
fn prometheus_python() -> std::path::PathBuf {
    static PYTHON: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PYTHON
        .get_or_init(|| {
            venv::python(
                Path::new(env!("CARGO_TARGET_TMPDIR")),
                "prometheus-venv",
                &["prometheus_client"],
            )
        })
        .clone()
}

/// The samples of `text`, parsed by prometheus_client, as
/// `[name, {labels}, value]` triples; the parser refuses a malformed
/// exposition.
fn parse_exposition(text: &str) -> Vec<(String, serde_json::Map<String, Value>, f64)> {
    let script = r#"
import sys, json
from prometheus_client.parser import text_string_to_metric_families
out = []
for fam in text_string_to_metric_families(sys.stdin.read()):
    assert fam.type == "gauge", fam
    for s in fam.samples:
        out.append([s.name, s.labels, s.value])
print(json.dumps(out))
"#;
    let mut child = Command::new(prometheus_python())
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Vec<(String, serde_json::Map<String, Value>, f64)> =
        serde_json::from_slice(&o.stdout).unwrap();
    v
}

#[test]
fn metrics_are_valid_prometheus_text() {
    let server = RedisServer::start_with(&["--maxmemory-policy", "allkeys-lru"]);
    let url = server.url();
    run(
        &url,
        &[
            "create",
            "small",
            "--kind",
            "bloom",
            "--capacity",
            "100",
            "--error-rate",
            "0.01",
        ],
    )
    .ok();
    create_circular(&url, "circ", Some("daily@00:00"));
    // Over capacity: an error-level warning.
    let input = items("u", 300);
    rotabloom(
        &["--redis", &url, "--when-full", "warn", "add", "small"],
        &[],
        input.as_bytes(),
    )
    .ok();
    // A name the text format must escape.
    run(
        &url,
        &["create", "q\"uote:d", "--kind", "bloom", "--capacity", "10"],
    )
    .ok();

    let out = run(&url, &["metrics"]).ok();
    let samples = parse_exposition(&out.stdout);
    let get = |name: &str, filter: &str| -> Vec<f64> {
        samples
            .iter()
            .filter(|(n, l, _)| {
                n == name && l.get("filter").and_then(Value::as_str) == Some(filter)
            })
            .map(|(_, _, v)| *v)
            .collect()
    };
    // Over capacity, some insertions were false positives: not counted.
    let n = status(&url, "small")["items"].as_u64().unwrap() as f64;
    assert!(n > 200.0, "{n}");
    assert_eq!(get("rotabloom_items", "small"), [n]);
    assert_eq!(get("rotabloom_capacity", "small"), [100.0]);
    assert_eq!(get("rotabloom_fill_ratio", "small"), [n / 100.0]);
    assert_eq!(get("rotabloom_generations", "circ"), [3.0]);
    assert_eq!(get("rotabloom_epoch", "circ"), [0.0]);
    assert_eq!(get("rotabloom_filter_up", "q\"uote:d"), [1.0]);
    let fpr = get("rotabloom_false_positive_rate", "small")[0];
    assert!(fpr > 0.01 && fpr < 1.0, "{fpr}");
    assert!(get("rotabloom_memory_bytes", "small")[0] > 0.0);
    let next = get("rotabloom_next_rotation_seconds", "circ");
    assert!(
        next.len() == 1 && next[0] > 0.0 && next[0] <= 86_400.0,
        "{next:?}"
    );
    assert!(get("rotabloom_next_rotation_seconds", "small").is_empty());
    let errors: Vec<f64> = samples
        .iter()
        .filter(|(n, l, _)| {
            n == "rotabloom_warnings" && l["filter"] == "small" && l["level"] == "error"
        })
        .map(|(_, _, v)| *v)
        .collect();
    assert_eq!(errors.len(), 1);
    assert!(errors[0] >= 1.0, "{errors:?}");
    assert!(samples.iter().any(|(n, l, v)| n == "rotabloom_warning"
        && l["filter"] == "small"
        && l["code"] == "over_capacity"
        && *v == 1.0));
    assert!(samples
        .iter()
        .any(|(n, l, _)| n == "rotabloom_server_warning" && l["code"] == "eviction_policy"));

    // To a file, for the textfile collector: the same exposition.
    let file = server.dir().join("rotabloom.prom");
    let out = run(
        &url,
        &["metrics", "small", "--output", file.to_str().unwrap()],
    )
    .ok();
    assert_eq!(out.stdout, "");
    let text = std::fs::read_to_string(&file).unwrap();
    let from_file = parse_exposition(&text);
    assert!(from_file
        .iter()
        .all(|(_, l, _)| l.get("filter").is_none_or(|f| f == "small")));
    assert!(from_file
        .iter()
        .any(|(name, _, v)| name == "rotabloom_items" && *v == n));
    // A directory that does not exist: a local file error, exit 5.
    let bad = server.dir().join("no/such/dir/x.prom");
    run(&url, &["metrics", "--output", bad.to_str().unwrap()]).failed(5);

    // A filter that cannot be read is `up 0` in a file written anyway; the
    // error is on standard error and in the exit code.
    redis::cmd("HSET")
        .arg("rotabloom:{small}:meta")
        .arg("gens")
        .arg("x")
        .exec(&mut server.connection())
        .unwrap();
    let out = run(&url, &["metrics", "--output", file.to_str().unwrap()]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains("corrupt metadata"), "{out:?}");
    let samples = parse_exposition(&std::fs::read_to_string(&file).unwrap());
    let up = |f: &str| {
        samples
            .iter()
            .find(|(n, l, _)| n == "rotabloom_filter_up" && l["filter"] == f)
            .map(|(_, _, v)| *v)
    };
    assert_eq!((up("small"), up("circ")), (Some(0.0), Some(1.0)));
}

/// The items of `lines` that `check` says may be present in filter `name`.
fn present(base: &[&str], name: &str, lines: &str) -> String {
    let out = rotabloom(&[base, &["check", name]].concat(), &[], lines.as_bytes());
    assert!(out.code == 0 || out.code == 1, "{out:?}");
    out.stdout
}

fn dbsize(conn: &mut redis::Connection) -> u64 {
    redis::cmd("DBSIZE").query(conn).unwrap()
}

#[test]
fn dump_restores_into_a_cluster_with_identical_answers() {
    let server = RedisServer::start();
    let url = server.url();
    let dir = server.dir().to_path_buf();
    run(
        &url,
        &[
            "create",
            "crawl",
            "--kind",
            "expanding",
            "--capacity",
            "30000",
            "--error-rate",
            "0.01",
        ],
    )
    .ok();
    let inserted = items("https://example.com/page/", 100_000);
    rotabloom(
        &["--redis", &url, "add", "crawl", "--quiet"],
        &[],
        inserted.as_bytes(),
    )
    .ok();
    let before = status(&url, "crawl");
    assert!(
        before["generations"].as_array().unwrap().len() >= 3,
        "{before}"
    );

    let file = dir.join("crawl.rbdump");
    let out = run(&url, &["dump", "crawl", file.to_str().unwrap(), "--json"]).ok();
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["result"], "dumped");
    assert_eq!(doc["items"], before["items"]);
    assert!(std::fs::read(&file).unwrap().starts_with(b"\x89RBDUMP\n"));

    // Into the local 3-master cluster, under the same name and another.
    let cluster = harness::RedisCluster::start();
    let curl = cluster_url(&cluster);
    let out = run(&curl, &["restore", file.to_str().unwrap()]).ok();
    assert!(out.stdout.starts_with("crawl: restored from "), "{out:?}");
    run(&curl, &["restore", file.to_str().unwrap(), "--as", "copy"]).ok();
    let probe = format!("{inserted}{}", items("https://example.org/other/", 100_000));
    let want = present(&["--redis", &url], "crawl", &probe);
    assert!(
        want.starts_with(&inserted),
        "every inserted item is present"
    );
    for name in ["crawl", "copy"] {
        assert!(
            present(&["--redis", &curl], name, &probe) == want,
            "{name}: the restored filter answers as the dumped one"
        );
        let after = status(&curl, name);
        for k in ["kind", "items", "epoch", "parameters", "capacity"] {
            assert_eq!(after[k], before[k], "{name}: {k}");
        }
    }
    // It is a working filter: it takes writes.
    run(&curl, &["add", "copy", "new-item"]).ok();
    assert_eq!(
        run(&curl, &["check", "copy", "new-item"]).ok().stdout,
        "new-item\n"
    );

    // Never over an existing filter.
    let line = run(&curl, &["restore", file.to_str().unwrap()])
        .failed(2)
        .to_string();
    assert!(line.contains("\"crawl\" already exists"), "{line}");

    // A damaged file is a local file error (exit 5), and leaves nothing
    // behind; so does a truncated one.
    let mut conn = server.connection();
    let keys_before = dbsize(&mut conn);
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    let damaged = dir.join("damaged.rbdump");
    std::fs::write(&damaged, &bytes).unwrap();
    let line = run(&url, &["restore", damaged.to_str().unwrap(), "--as", "d"])
        .failed(5)
        .to_string();
    assert!(line.contains("checksum mismatch"), "{line}");
    let good = std::fs::read(&file).unwrap();
    let truncated = dir.join("truncated.rbdump");
    std::fs::write(&truncated, &good[..good.len() - 10]).unwrap();
    let line = run(&url, &["restore", truncated.to_str().unwrap(), "--as", "t"])
        .failed(5)
        .to_string();
    assert!(line.contains("truncated"), "{line}");
    assert_eq!(dbsize(&mut conn), keys_before, "nothing left behind");
    assert_eq!(run(&url, &["list"]).ok().stdout, "crawl\n");
    // Not a dump; a file that does not exist.
    run(
        &url,
        &[
            "restore",
            file.parent().unwrap().join("nope").to_str().unwrap(),
        ],
    )
    .failed(5);
    std::fs::write(&damaged, "hello").unwrap();
    run(&url, &["restore", damaged.to_str().unwrap()]).failed(5);

    // Through a pipe: dump to standard output, restore from standard input.
    let bin = env!("CARGO_BIN_EXE_rotabloom");
    let dumped = Command::new(bin)
        .args(["--redis", &url, "dump", "crawl", "-"])
        .output()
        .unwrap();
    assert!(dumped.status.success());
    assert_eq!(dumped.stdout, good, "the same bytes as the file");
    let out = rotabloom(
        &["--redis", &url, "restore", "-", "--as", "piped"],
        &[],
        &dumped.stdout,
    )
    .ok();
    assert!(out.stdout.starts_with("piped: restored from -"), "{out:?}");
    assert_eq!(present(&["--redis", &url], "piped", &probe), want);
}

#[test]
fn a_future_now_is_refused_without_force() {
    let server = RedisServer::start();
    let url = server.url();
    create_circular(&url, "m", Some("monthly"));
    let far = "2099-01-01T00:00:05Z";
    let line = run(&url, &["rotate", "--if-due", "--now", far])
        .failed(2)
        .to_string();
    assert!(
        line.starts_with("rotabloom: rotate: --now 2099-01-01T00:00:05Z is ")
            && line.contains("ahead of the Redis server's clock")
            && line.contains("--force"),
        "{line}"
    );
    // Nothing moved.
    assert_eq!(status(&url, "m")["epoch"], 0);
    // Within the tolerance, and in the past, it is taken as given.
    let soon = (chrono::Utc::now() + chrono::TimeDelta::seconds(20))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    run(&url, &["rotate", "--if-due", "--now", &soon]).ok();
    run(
        &url,
        &["rotate", "--if-due", "--now", "2020-01-01T00:00:00Z"],
    )
    .ok();
    // With --force it is done, and the schedule moves to that time.
    let out = run(&url, &["rotate", "--if-due", "--now", far, "--force"]).ok();
    assert!(out.stdout.contains("next 2099-02-01T00:00:00Z"), "{out:?}");
    // --force means nothing without --now.
    assert_eq!(run(&url, &["rotate", "m", "--force"]).code, 2);
}

#[test]
fn a_rotation_by_hand_says_what_it_forgot_and_when_the_next_is_due() {
    let server = RedisServer::start();
    let url = server.url();
    create_circular(&url, "d", Some("daily@00:00"));
    let due = status(&url, "d")["next_rotation_at"].clone();
    run(&url, &["add", "d", "a", "b"]).ok();
    // Generation 0 is the oldest: empty (writes go to the newest).
    let out = run(&url, &["rotate", "d"]).ok();
    let text = out.stdout.trim_end();
    assert!(
        text.starts_with("d: rotated by hand (epoch 1): forgot generation 0 (created ")
            && text.contains(", 0 items); the window now starts at ")
            && text.ends_with(&format!(
                "; next scheduled rotation {} (unchanged: the window is one period shorter until then)",
                due.as_str().unwrap()
            )),
        "{text}"
    );
    let out = run(&url, &["rotate", "d", "--json"]).ok();
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["manual"], true);
    assert_eq!(doc["forgotten"]["seq"], 1);
    assert_eq!(doc["next_rotation_at"], due);
    let third = run(&url, &["rotate", "d", "--json"]).ok();
    let doc: Value = serde_json::from_str(&third.stdout).unwrap();
    assert_eq!(doc["forgotten"]["seq"], 2);
    assert_eq!(
        doc["forgotten"]["items"], 2,
        "the items of the first window"
    );
    assert_eq!(run(&url, &["check", "d", "a"]).code, 1);
    assert_eq!(
        status(&url, "d")["next_rotation_at"],
        due,
        "the schedule did not move"
    );
}

#[test]
fn create_dry_run_shows_the_generations_and_whether_they_fit() {
    let server =
        RedisServer::start_with(&["--maxmemory", "40mb", "--maxmemory-policy", "noeviction"]);
    let url = server.url();
    let huge = ["create", "huge", "--kind", "bloom", "--capacity", "100M"];
    let out = run(
        &url,
        &[&huge[..], &["--error-rate", "0.001", "--dry-run"]].concat(),
    );
    assert_eq!(out.code, 1, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "huge: would create bloom (1 generation, 171.4 MiB)"
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["gen", "capacity", "bits", "hashes", "blocks", "bytes"]
    );
    // The library's sizing, as `create` would make it.
    let layout = rotabloom::BloomFilter::builder("huge")
        .capacity(100_000_000)
        .error_rate(0.001)
        .spec()
        .unwrap()
        .layout();
    let bits = layout.bits.to_string();
    let hashes = layout.hashes.to_string();
    let blocks = layout.blocks.to_string();
    assert_eq!(
        lines[2]
            .split_whitespace()
            .map(|w| w.replace(',', ""))
            .collect::<Vec<_>>(),
        ["0", "100000000", &bits, &hashes, &blocks, "171.4", "MiB"]
    );
    // Counts with thousands separators, as everywhere for people.
    assert!(lines[2].contains(" 100,000,000 "), "{out:?}");
    assert_eq!(lines[2].matches(',').count(), 2 + 3, "{out:?}");
    assert!(
        lines[3]
            .trim_start()
            .starts_with("does not fit: maxmemory 40 MiB, "),
        "{out:?}"
    );
    let out = run(
        &url,
        &[
            "create",
            "c",
            "--kind",
            "circular",
            "--generations",
            "4",
            "--capacity",
            "10k",
            "--dry-run",
            "--json",
        ],
    )
    .ok();
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["fits"], true);
    assert_eq!(doc["maxmemory"], 40u64 << 20);
    let gens = doc["generations"].as_array().unwrap();
    assert_eq!(gens.len(), 4);
    assert_eq!(gens[0]["capacity"], 10_000);
    let sum: u64 = gens.iter().map(|g| g["bytes"].as_u64().unwrap()).sum();
    assert_eq!(doc["bytes"], sum);
    // Nothing was created.
    assert_eq!(run(&url, &["list"]).ok().stdout, "");
    let keys: u64 = redis::cmd("DBSIZE")
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(keys, 0);
}

#[test]
fn the_redis_url_comes_from_the_flag_then_the_configuration_then_the_environment() {
    let server = RedisServer::start();
    let good = server.url();
    run(
        &good,
        &["create", "f", "--kind", "bloom", "--capacity", "10"],
    )
    .ok();
    let dead = {
        let s = RedisServer::start();
        let url = s.url();
        drop(s);
        url
    };
    let dir = server.dir().join("precedence");
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("rotabloom.toml");
    std::fs::write(&cfg, format!("[defaults]\nredis_url = \"{dead}\"\n")).unwrap();
    let cfg = cfg.to_str().unwrap();
    let env = [("REDIS_URL", good.as_str())];
    // The environment alone.
    assert_eq!(rotabloom(&["list"], &env, b"").ok().stdout, "f\n");
    // The configuration beats the environment...
    let out = rotabloom(&["--config", cfg, "list"], &env, b"");
    assert!(out.failed(3).contains(&dead), "{out:?}");
    // ... and the flag beats both.
    let out = rotabloom(
        &["--config", cfg, "--redis", &good, "list"],
        &[("REDIS_URL", &dead)],
        b"",
    );
    assert_eq!(out.ok().stdout, "f\n");
    // --help names the variable, never its value (it may hold a password).
    let out = rotabloom(&["--help"], &[("REDIS_URL", "redis://:s3cr3t@h:1/")], b"").ok();
    assert!(out.stdout.contains("[env: REDIS_URL]"), "{out:?}");
    assert!(!out.stdout.contains("s3cr3t"), "{out:?}");
    // A bad value says where it came from.
    let line = rotabloom(&["list"], &[("REDIS_URL", "ftp://h/")], b"")
        .failed(2)
        .to_string();
    assert!(line.starts_with("rotabloom: $REDIS_URL: "), "{line}");
}

#[test]
fn usage_errors_of_the_new_commands_are_one_line() {
    for args in [
        &["adopt", "x", "--capacity", "10"][..],
        &[
            "adopt",
            "x",
            "--seed000",
            "p",
            "--scrapy-redis-bloomfilter",
            "k",
            "--capacity",
            "1",
        ],
        &["adopt", "x", "--seed000", "p"],
        &["dump"],
        &["dump", "x"],
        &["restore"],
        &["metrics", "--output"],
        &["convert", "x", "--growth", "lots"],
        &["expand"],
        &["clear"],
        &["rotate", "x", "--force"],
        &["list", "extra"],
        &[
            "create",
            "x",
            "--kind",
            "bloom",
            "--capacity",
            "10",
            "--dry-run",
            "--dry-run",
        ],
    ] {
        let out = rb(args);
        out.failed(2);
    }
    // Help still goes to standard output, whole.
    let out = rb(&["restore", "--help"]).ok();
    assert!(out.stdout.contains("--as <NAME>"), "{out:?}");
}

/// Filter `big` on `server`, about 12 MiB in 2 blocks with bits in every
/// 1 MiB slice, and its dump in the server's directory.
fn big_dump(server: &RedisServer) -> std::path::PathBuf {
    let url = server.url();
    let big = [
        "--kind",
        "bloom",
        "--capacity",
        "10M",
        "--max-block-bits",
        "67108864",
    ];
    run(&url, &[&["create", "big"][..], &big].concat()).ok();
    rotabloom(
        &["--redis", &url, "add", "big", "-q"],
        &[],
        items("x", 5000).as_bytes(),
    )
    .ok();
    let file = server.dir().join("big.rbdump");
    run(&url, &["dump", "big", file.to_str().unwrap()]).ok();
    file
}

#[test]
fn a_restore_that_runs_out_of_memory_leaves_nothing_behind() {
    let source = RedisServer::start();
    let url = source.url();
    let file = big_dump(&source);
    let file = file.to_str().unwrap();
    // A dump into a directory that does not exist: a local file error,
    // and no temporary file left.
    let nowhere = source.dir().join("no/such/dir/big.rbdump");
    run(&url, &["dump", "big", nowhere.to_str().unwrap()]).failed(5);

    let small =
        RedisServer::start_with(&["--maxmemory", "8mb", "--maxmemory-policy", "noeviction"]);
    let mut conn = small.connection();
    let keys_before: u64 = redis::cmd("DBSIZE").query(&mut conn).unwrap();
    let line = run(&small.url(), &["restore", file]).failed(3).to_string();
    assert!(
        line.contains("the Redis server refused") && line.contains("maxmemory"),
        "{line}"
    );
    let keys_after: u64 = redis::cmd("DBSIZE").query(&mut conn).unwrap();
    assert_eq!(keys_after, keys_before, "nothing left behind");
    // With room, the same file restores.
    let roomy = RedisServer::start();
    run(&roomy.url(), &["restore", file]).ok();
    assert_eq!(
        status(&roomy.url(), "big")["items"],
        status(&url, "big")["items"]
    );
}

/// Waits until `cond` holds, at most 60 s.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn kill(child: &std::process::Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success(), "kill {sig}");
}

/// `rotabloom --redis URL ARGS`, running, its three streams piped.
fn spawn(url: &str, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_rotabloom"))
        .args([&["--redis", url][..], args].concat())
        .env_remove("REDIS_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` to exit (its standard input, if the caller took it,
/// stays open) and what it printed.
fn finish(mut child: std::process::Child) -> Run {
    use std::io::Read;
    let status = child.wait().unwrap();
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut stdout).unwrap();
    }
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut stderr).unwrap();
    }
    Run {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
    }
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(ok.success(), "mkfifo {}", path.display());
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path)
        .unwrap()
        .file_type()
        .is_fifo()
}

/// The temporary files left in `dir`.
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

/// The restore's new instance, halfway: waits until one of its block keys
/// exists.
fn wait_for_a_block(conn: &mut redis::Connection, name: &str) {
    let pattern = format!("rotabloom:{{{name}}}:gen:*");
    wait_for(&format!("a block of {name}"), || {
        !scan(conn, &pattern).is_empty()
    });
}

/// `restore - --as NAME`, fed the first half of `bytes`, once a block of
/// it exists; its standard input, still open, beside it.
fn restore_halfway(
    url: &str,
    conn: &mut redis::Connection,
    bytes: &[u8],
    name: &str,
) -> (std::process::Child, std::process::ChildStdin) {
    use std::io::Write;
    let mut child = spawn(url, &["restore", "-", "--as", name]);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&bytes[..bytes.len() / 2]).unwrap();
    wait_for_a_block(conn, name);
    (child, stdin)
}

#[test]
fn an_interrupted_restore_deletes_what_it_wrote() {
    use std::io::Write;
    let server = RedisServer::start();
    let url = server.url();
    let file = big_dump(&server);
    let bytes = std::fs::read(&file).unwrap();
    let half = &bytes[..bytes.len() / 2];
    let mut conn = server.connection();
    let check = |out: Run, code: i32, signal: &str, name: &str, conn: &mut redis::Connection| {
        let line = out.failed(code);
        assert!(
            line.contains(signal) && line.contains("nothing was restored"),
            "{line}"
        );
        let pattern = format!("rotabloom:{{{name}}}:*");
        assert_eq!(scan(conn, &pattern), Vec::<String>::new(), "{signal}");
    };

    // SIGINT while `restore -` waits for input that stalls halfway.
    let (child, stdin) = restore_halfway(&url, &mut conn, &bytes, "c-int");
    kill(&child, "-INT");
    check(finish(child), 130, "SIGINT", "c-int", &mut conn);
    drop(stdin);

    // SIGTERM while `restore FILE` waits on a FIFO that stalls halfway.
    let fifo = server.dir().join("in.fifo");
    mkfifo(&fifo);
    let child = spawn(&url, &["restore", fifo.to_str().unwrap(), "--as", "c-term"]);
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    writer.write_all(half).unwrap();
    wait_for_a_block(&mut conn, "c-term");
    kill(&child, "-TERM");
    check(finish(child), 143, "SIGTERM", "c-term", &mut conn);
    drop(writer);

    // SIGHUP while it waits on a server that holds its write back
    // (CLIENT PAUSE), all its input there.
    let (child, mut stdin) = restore_halfway(&url, &mut conn, &bytes, "c-hup");
    redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(60_000)
        .arg("WRITE")
        .exec(&mut conn)
        .unwrap();
    let rest = bytes[bytes.len() / 2..].to_vec();
    // Ends when the restore is gone (a broken pipe) or has read it all.
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&rest);
    });
    wait_for("the restore blocked on the paused server", || {
        let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut conn).unwrap();
        clients
            .lines()
            .any(|l| l.contains("flags=b ") && l.contains("cmd=evalsha"))
    });
    kill(&child, "-HUP");
    redis::cmd("CLIENT").arg("UNPAUSE").exec(&mut conn).unwrap();
    check(finish(child), 129, "SIGHUP", "c-hup", &mut conn);
    feeder.join().unwrap();
    assert_eq!(run(&url, &["list"]).ok().stdout, "big\n");
}

#[test]
fn a_restore_killed_with_sigkill_leaves_only_keys_that_expire() {
    let server = RedisServer::start();
    let url = server.url();
    let file = big_dump(&server);
    let bytes = std::fs::read(&file).unwrap();
    let mut conn = server.connection();
    let (child, stdin) = restore_halfway(&url, &mut conn, &bytes, "gone");
    kill(&child, "-KILL");
    let out = finish(child);
    assert_eq!(out.code, -1, "killed: {out:?}");
    drop(stdin);

    // Its blocks are left, each with at most the 15-minute lease...
    let left = scan(&mut conn, "rotabloom:{gone}:*");
    assert!(!left.is_empty());
    for k in &left {
        assert!(k.contains(":gen:"), "only blocks, no metadata: {k}");
        let ttl: i64 = redis::cmd("PTTL").arg(k).query(&mut conn).unwrap();
        assert!(ttl > 0 && ttl <= 15 * 60 * 1000, "{k}: {ttl}");
    }
    // ... no command lists them, and the name is free.
    assert_eq!(run(&url, &["list"]).ok().stdout, "big\n");
    assert_eq!(run(&url, &["status", "gone"]).code, 2);
    run(&url, &["restore", file.to_str().unwrap(), "--as", "gone"]).ok();
    for k in scan(&mut conn, "rotabloom:{gone}:gen:*") {
        let ttl: i64 = redis::cmd("PTTL").arg(&k).query(&mut conn).unwrap();
        assert_eq!(ttl > 0, left.contains(&k), "{k}: {ttl}");
    }
    assert_eq!(status(&url, "gone")["items"], status(&url, "big")["items"]);
}

#[test]
fn bytes_after_the_end_record_are_refused() {
    let server = RedisServer::start();
    let url = server.url();
    let file = big_dump(&server);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(b"\n");
    let longer = server.dir().join("longer.rbdump");
    std::fs::write(&longer, &bytes).unwrap();
    let line = run(&url, &["restore", longer.to_str().unwrap(), "--as", "t"])
        .failed(5)
        .to_string();
    assert!(line.contains("bytes follow the end record"), "{line}");
    let out = rotabloom(&["--redis", &url, "restore", "-", "--as", "t"], &[], &bytes);
    assert!(out.failed(5).contains("bytes follow the end record"));
    assert_eq!(
        scan(&mut server.connection(), "rotabloom:{t}:*"),
        Vec::<String>::new()
    );
}

#[test]
fn dump_and_metrics_write_through_links_fifos_and_devices() {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let server = RedisServer::start();
    let url = server.url();
    let dir = server.dir().to_path_buf();
    let want = std::fs::read(big_dump(&server)).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();

    // A symbolic link: its target is replaced (its mode kept), the link
    // stays.
    std::fs::write(dir.join("target.rbdump"), "old").unwrap();
    std::fs::set_permissions(
        dir.join("target.rbdump"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    std::os::unix::fs::symlink("target.rbdump", dir.join("link")).unwrap();
    run(&url, &["dump", "big", &path("link")]).ok();
    assert_eq!(
        std::fs::read_link(dir.join("link")).unwrap(),
        Path::new("target.rbdump")
    );
    assert_eq!(std::fs::read(dir.join("target.rbdump")).unwrap(), want);
    let mode = std::fs::metadata(dir.join("target.rbdump"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    // A link to nothing yet: the target is made, as `>` makes it.
    std::os::unix::fs::symlink("made.rbdump", dir.join("dangling")).unwrap();
    run(&url, &["dump", "big", &path("dangling")]).ok();
    assert_eq!(std::fs::read(dir.join("made.rbdump")).unwrap(), want);
    assert!(std::fs::symlink_metadata(dir.join("dangling"))
        .unwrap()
        .file_type()
        .is_symlink());

    // A FIFO: written through to its reader, and still a FIFO.
    let fifo = dir.join("out.fifo");
    mkfifo(&fifo);
    let read_all = |fifo: std::path::PathBuf| {
        std::thread::spawn(move || {
            let mut got = Vec::new();
            std::fs::File::open(fifo)
                .unwrap()
                .read_to_end(&mut got)
                .unwrap();
            got
        })
    };
    let reader = read_all(fifo.clone());
    run(&url, &["dump", "big", &path("out.fifo")]).ok();
    assert_eq!(reader.join().unwrap(), want);
    let reader = read_all(fifo.clone());
    let out = run(&url, &["metrics", "--output", &path("out.fifo")]).ok();
    assert_eq!(out.stdout, "");
    let text = String::from_utf8(reader.join().unwrap()).unwrap();
    assert!(text.starts_with("# HELP rotabloom_filter_up"), "{text}");
    assert!(is_fifo(&fifo));

    // A process substitution (/dev/fd/N of a pipe).
    let script = r#""$0" --redis "$1" dump big >(cat > "$2"); code=$?; wait $!; exit $code"#;
    let ok = Command::new("bash")
        .args([
            "-c",
            script,
            env!("CARGO_BIN_EXE_rotabloom"),
            &url,
            &path("substituted"),
        ])
        .env_remove("REDIS_URL")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success());
    assert_eq!(std::fs::read(dir.join("substituted")).unwrap(), want);

    // A directory is refused.
    let line = run(&url, &["dump", "big", &path("")]).failed(5).to_string();
    assert!(line.contains("is a directory"), "{line}");

    // Device nodes (made here, as root; elsewhere this part is skipped):
    // one like /dev/full fails to be written and stays a device; one like
    // /dev/null takes the dump.
    let made = |name: &str, minor: &str| {
        Command::new("mknod")
            .args([&path(name), "c", "1", minor])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if made("full", "7") && made("null", "3") {
        let line = run(&url, &["dump", "big", &path("full")])
            .failed(5)
            .to_string();
        assert!(line.contains("No space left on device"), "{line}");
        run(&url, &["metrics", "--output", &path("full")]).failed(5);
        run(&url, &["dump", "big", &path("null")]).ok();
        for dev in ["full", "null"] {
            let t = std::fs::symlink_metadata(dir.join(dev))
                .unwrap()
                .file_type();
            assert!(t.is_char_device(), "{dev} is still a device");
        }
    } else {
        eprintln!("mknod refused: the device-node part is skipped");
    }
    assert_eq!(temporaries(&dir), Vec::<String>::new());
}

#[test]
fn a_dump_into_a_closed_pipe_is_an_error() {
    use std::io::Read;
    let server = RedisServer::start();
    let url = server.url();
    big_dump(&server);
    // Standard output is a pipe nobody reads any more.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = Command::new(env!("CARGO_BIN_EXE_rotabloom"))
        .args(["--redis", &url, "dump", "big", "-"])
        .env_remove("REDIS_URL")
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish(child);
    let line = out.failed(5);
    assert!(
        line.contains("standard output") && line.contains("broken pipe"),
        "{line}"
    );
    // A FIFO whose reader goes away after 1000 bytes (`| head -c 1000`).
    let fifo = server.dir().join("short.fifo");
    mkfifo(&fifo);
    let f = fifo.clone();
    let reader = std::thread::spawn(move || {
        let mut head = vec![0u8; 1000];
        std::fs::File::open(f)
            .unwrap()
            .read_exact(&mut head)
            .unwrap();
        head
    });
    let out = run(&url, &["dump", "big", fifo.to_str().unwrap()]);
    assert!(reader.join().unwrap().starts_with(b"\x89RBDUMP\n"));
    let line = out.failed(5);
    assert!(
        line.contains("short.fifo") && line.contains("broken pipe"),
        "{line}"
    );
}

#[test]
fn an_interrupted_dump_removes_its_temporary_file() {
    let mut server = RedisServer::start();
    let url = server.url();
    let dir = server.dir().to_path_buf();
    big_dump(&server);
    let file = dir.join("kept.rbdump");
    for (signal, code) in [("-INT", 130), ("-TERM", 143), ("-HUP", 129)] {
        std::fs::write(&file, "old").unwrap();
        // A frozen server holds the dump after it made its temporary file.
        server.signal("-STOP");
        let child = spawn(&url, &["dump", "big", file.to_str().unwrap()]);
        wait_for("the temporary file", || !temporaries(&dir).is_empty());
        kill(&child, signal);
        let out = finish(child);
        server.signal("-CONT");
        let line = out.failed(code);
        assert!(line.contains("kept.rbdump is left as it was"), "{line}");
        assert_eq!(temporaries(&dir), Vec::<String>::new(), "{signal}");
        assert_eq!(std::fs::read(&file).unwrap(), b"old");
    }
    // Thawed, the same command writes it.
    run(&url, &["dump", "big", file.to_str().unwrap()]).ok();
    assert!(std::fs::read(&file).unwrap().starts_with(b"\x89RBDUMP\n"));
    server.stop();
}
