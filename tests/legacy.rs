//! Adopting what came before: a base filter converted in place, and bitmaps
//! written by the seeds' Python code read with their own hash schemes.

#[path = "support/harness.rs"]
mod harness;
#[path = "support/venv.rs"]
mod venv;

use harness::RedisServer;
use rotabloom::{BloomFilter, Error, ExpandingFilter, ItemHash, Layout, Legacy, Scheme};
use std::path::{Path, PathBuf};
use std::process::Command;

fn vectors() -> serde_json::Value {
    let text = include_str!("legacy/vectors.json");
    serde_json::from_str(text).unwrap()
}

#[test]
fn legacy_positions_match_the_python_vectors() {
    let v = vectors();
    let mut checked = 0;
    for case in v["scrapy_redis_bloomfilter"].as_array().unwrap() {
        let item = case["item"].as_str().unwrap();
        let bit = case["bit"].as_u64().unwrap();
        let k = case["hash_number"].as_u64().unwrap() as u32;
        let layout = Layout {
            bits: 1 << bit,
            hashes: k,
            blocks: 1,
            scheme: Scheme::ScrapyRedisBloomfilter,
        };
        let (block, pos) = layout.locate(&ItemHash::of(item), Some(item.as_bytes()));
        let want: Vec<u64> = case["offsets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_u64().unwrap())
            .collect();
        assert_eq!(
            (block, pos.collect::<Vec<_>>()),
            (0, want),
            "{item:?} bit {bit}"
        );
        checked += 1;
    }
    for case in v["seed000"].as_array().unwrap() {
        let item = case["item"].as_str().unwrap();
        let blocks = case["block_num"].as_u64().unwrap() as u32;
        let layout = Layout {
            bits: u64::from(blocks) << 31,
            hashes: 7,
            blocks,
            scheme: Scheme::Seed000,
        };
        let (block, pos) = layout.locate(&ItemHash::of(item), None);
        let want: Vec<u64> = case["offsets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_u64().unwrap())
            .collect();
        let key = case["block_key"].as_str().unwrap();
        let prefix = case["key_prefix"].as_str().unwrap();
        assert_eq!(format!("{prefix}{block}"), key, "{item:?}");
        assert_eq!(pos.collect::<Vec<_>>(), want, "{item:?}");
        checked += 1;
    }
    assert!(checked >= 10, "{checked}");
}

#[test]
fn a_base_filter_becomes_generation_zero_in_place() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let base = BloomFilter::builder("grow")
        .capacity(1_000)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap();
    let old: Vec<String> = (0..900).map(|i| format!("old{i}")).collect();
    base.insert_many(&mut conn, &old).unwrap();
    let before = base.info(&mut conn).unwrap();

    let f = ExpandingFilter::builder("grow")
        .convert_bloom(&mut conn)
        .unwrap();
    let info = f.info(&mut conn).unwrap();
    assert_eq!(info.generations.len(), 1);
    assert_eq!(
        info.generations[0].set_bits, before.generations[0].set_bits,
        "no bit moved"
    );
    assert_eq!(
        info.fields["uid"], before.fields["uid"],
        "same filter, converted in place"
    );
    assert_eq!(info.fields["error_rate"], "0.02", "bound p0 / (1 - r)");
    assert!(f.contains_many(&mut conn, &old).unwrap().iter().all(|&b| b));
    // It grows past the base filter's capacity without a rebuild.
    let new: Vec<String> = (0..5_000).map(|i| format!("new{i}")).collect();
    f.insert_many(&mut conn, &new).unwrap();
    let info = f.info(&mut conn).unwrap();
    assert!(info.generations.len() >= 3, "{:?}", info.generations);
    assert_eq!(info.generations[0].count, 1_000);
    assert!(f.contains_many(&mut conn, &old).unwrap().iter().all(|&b| b));
    assert!(f.contains_many(&mut conn, &new).unwrap().iter().all(|&b| b));
    // The old handle refuses the converted filter; converting again opens it.
    let e = base.insert(&mut conn, "x").unwrap_err();
    assert!(matches!(e, Error::KindMismatch { .. }), "{e}");
    let again = ExpandingFilter::builder("grow")
        .convert_bloom(&mut conn)
        .unwrap();
    assert_eq!(again.generations().len(), info.generations.len());
}

/// A venv with the seeds' real package, made once per target directory.
fn legacy_python() -> PathBuf {
    static PYTHON: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PYTHON.get_or_init(provision_python).clone()
}

fn provision_python() -> PathBuf {
    venv::python(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        "legacy-venv",
        &["scrapy-redis-bloomfilter", "redis"],
    )
}

fn run_python(python: &PathBuf, script: &str, args: &[String]) -> Vec<String> {
    let out = Command::new(python)
        .arg(format!(
            "{}/tests/legacy/{script}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn adopts_bitmaps_written_by_the_real_python_code() {
    let python = legacy_python();
    let server = RedisServer::start();
    let mut conn = server.connection();

    // 1. scrapy-redis-bloomfilter, through its own BloomFilter class, fed
    //    request fingerprints as its dupefilter would.
    let fps = run_python(
        &python,
        "gen_scrapy_redis_bloomfilter.py",
        &[
            "--url".into(),
            server.url(),
            "--key".into(),
            "spider:bloomfilter".into(),
            "--bit".into(),
            "30".into(),
            "--hash-number".into(),
            "6".into(),
            "--count".into(),
            "10000".into(),
            "--prefix".into(),
            "https://example.com/page/".into(),
            "--fingerprints".into(),
        ],
    );
    assert_eq!(fps.len(), 10_000);
    assert!(fps.iter().all(|f| f.len() == 40));
    let f = ExpandingFilter::builder("spider")
        .capacity(100_000)
        .error_rate(0.001)
        .adopt_legacy(
            &mut conn,
            Legacy::ScrapyRedisBloomfilter {
                key: "spider:bloomfilter".into(),
                bit: 30,
                hashes: 6,
            },
        )
        .unwrap();
    let found = f
        .contains_many(&mut conn, &fps)
        .unwrap()
        .into_iter()
        .filter(|&b| b)
        .count();
    assert_eq!(found, 10_000, "every legacy fingerprint is found");
    let exists: bool = redis::cmd("EXISTS")
        .arg("spider:bloomfilter")
        .query(&mut conn)
        .unwrap();
    assert!(!exists, "moved into the filter, not copied");
    let info = f.info(&mut conn).unwrap();
    assert_eq!(info.generations.len(), 2);
    assert_eq!(info.generations[0].hashes, 6);
    assert!(
        !f.check_and_insert(&mut conn, &fps[17]).unwrap(),
        "history kept: not new"
    );
    assert!(f
        .check_and_insert(&mut conn, "0123456789abcdef0123456789abcdef01234567")
        .unwrap());
    let after = f.info(&mut conn).unwrap();
    assert_eq!(
        after.generations[0].set_bits, info.generations[0].set_bits,
        "the legacy bitmap is never written"
    );
    assert_eq!(after.generations[1].count, 1);
    // Adopting again is opening.
    let again = ExpandingFilter::builder("spider")
        .capacity(100_000)
        .error_rate(0.001)
        .adopt_legacy(
            &mut conn,
            Legacy::ScrapyRedisBloomfilter {
                key: "spider:bloomfilter".into(),
                bit: 30,
                hashes: 6,
            },
        )
        .unwrap();
    assert!(again.contains(&mut conn, &fps[0]).unwrap());
    eprintln!("scrapy-redis-bloomfilter: adopted, {found}/10000 fingerprints found");

    // 2. Seed 000's layout: two blocks of 2^31 bits, MD5 hex digests.
    let items = run_python(
        &python,
        "gen_seed000.py",
        &[
            "--url".into(),
            server.url(),
            "--key".into(),
            "bloomfilter".into(),
            "--block-num".into(),
            "2".into(),
            "--count".into(),
            "10000".into(),
            "--prefix".into(),
            "http://www.example.com/item/".into(),
        ],
    );
    assert_eq!(items.len(), 10_000);
    let g = ExpandingFilter::builder("seed")
        .capacity(100_000)
        .error_rate(0.001)
        .adopt_legacy(
            &mut conn,
            Legacy::Seed000 {
                prefix: "bloomfilter".into(),
                blocks: 2,
            },
        )
        .unwrap();
    let found = g
        .contains_many(&mut conn, &items)
        .unwrap()
        .into_iter()
        .filter(|&b| b)
        .count();
    assert_eq!(found, 10_000, "every seed-000 item is found");
    let misses = (0..10_000)
        .map(|i| format!("http://www.example.com/other/{i}"))
        .collect::<Vec<_>>();
    let fp = g
        .contains_many(&mut conn, &misses)
        .unwrap()
        .into_iter()
        .filter(|&b| b)
        .count();
    assert!(fp < 50, "{fp} false positives on 10000 non-members");
    eprintln!("seed000: adopted, {found}/10000 items found, {fp}/10000 false positives");

    // Wrong parameters are caught, not silently misread.
    let _: () = redis::cmd("SETBIT")
        .arg("big:bloomfilter")
        .arg((1u64 << 31) - 1)
        .arg(1)
        .query(&mut conn)
        .unwrap();
    let e = ExpandingFilter::builder("wrongbit")
        .capacity(1000)
        .adopt_legacy(
            &mut conn,
            Legacy::ScrapyRedisBloomfilter {
                key: "big:bloomfilter".into(),
                bit: 30,
                hashes: 6,
            },
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::InvalidParameter { name: "bit", .. }),
        "{e}"
    );
    let _: () = redis::cmd("LPUSH")
        .arg("list:bloomfilter")
        .arg("x")
        .query(&mut conn)
        .unwrap();
    let e = ExpandingFilter::builder("wrongtype")
        .capacity(1000)
        .adopt_legacy(
            &mut conn,
            Legacy::ScrapyRedisBloomfilter {
                key: "list:bloomfilter".into(),
                bit: 30,
                hashes: 6,
            },
        )
        .unwrap_err();
    assert!(
        matches!(&e, Error::WrongType { key, .. } if key == "list:bloomfilter"),
        "{e}"
    );
}
