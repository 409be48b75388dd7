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

/// The request fingerprints of `count` URLs `PREFIX<i>`, inserted into
/// `key` by the real scrapy-redis-bloomfilter package with BLOOMFILTER_BIT
/// `bit` and 6 hash functions, as its dupefilter would.
fn package_fingerprints(
    server: &RedisServer,
    key: &str,
    bit: u32,
    count: usize,
    prefix: &str,
) -> Vec<String> {
    let fps = run_python(
        &legacy_python(),
        "gen_scrapy_redis_bloomfilter.py",
        &[
            "--url".into(),
            server.url(),
            "--key".into(),
            key.into(),
            "--bit".into(),
            bit.to_string(),
            "--hash-number".into(),
            "6".into(),
            "--count".into(),
            count.to_string(),
            "--prefix".into(),
            prefix.into(),
            "--fingerprints".into(),
        ],
    );
    assert_eq!(fps.len(), count);
    assert!(fps.iter().all(|f| f.len() == 40));
    fps
}

#[test]
fn adopts_bitmaps_written_by_the_real_python_code() {
    let python = legacy_python();
    let server = RedisServer::start();
    let mut conn = server.connection();

    // 1. scrapy-redis-bloomfilter, through its own BloomFilter class, fed
    //    request fingerprints as its dupefilter would.
    let fps = package_fingerprints(
        &server,
        "spider:bloomfilter",
        30,
        10_000,
        "https://example.com/page/",
    );
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

/// A 40-hex-digit fingerprint, as scrapy-redis's dupefilter makes them
/// (uniform hex digits: the positions of the legacy scheme spread).
fn fingerprint(i: usize) -> String {
    let a = ItemHash::of(format!("fp{i}")).digest();
    let b = ItemHash::of(format!("fq{i}")).digest();
    let hex: String = a.iter().chain(&b).map(|x| format!("{x:02x}")).collect();
    hex[..40].to_string()
}

/// Writes `items` into `key` as scrapy-redis-bloomfilter's
/// `BloomFilter.insert` does (SETBIT at the positions pinned by the
/// Python vectors), with BLOOMFILTER_BIT `bit` and `k` hash functions.
fn write_scrapy(conn: &mut redis::Connection, key: &str, bit: u32, k: u32, items: &[String]) {
    let layout = Layout {
        bits: 1 << bit,
        hashes: k,
        blocks: 1,
        scheme: Scheme::ScrapyRedisBloomfilter,
    };
    let mut pipe = redis::pipe();
    for item in items {
        let (_, positions) = layout.locate(&ItemHash::of(item), Some(item.as_bytes()));
        for p in positions {
            pipe.cmd("SETBIT").arg(key).arg(p).arg(1).ignore();
        }
    }
    pipe.exec(conn).unwrap();
}

fn scrapy_legacy(key: &str, bit: u32, hashes: u32) -> Legacy {
    Legacy::ScrapyRedisBloomfilter {
        key: key.into(),
        bit,
        hashes,
    }
}

fn adopt(
    conn: &mut redis::Connection,
    name: &str,
    legacy: impl Into<rotabloom::Adoption>,
) -> Result<ExpandingFilter, Error> {
    ExpandingFilter::builder(name)
        .capacity(10_000)
        .error_rate(0.001)
        .adopt_legacy(conn, legacy)
}

/// The bytes of `key` (nil: missing).
fn bytes(conn: &mut redis::Connection, key: &str) -> Option<Vec<u8>> {
    redis::cmd("GET").arg(key).query(conn).unwrap()
}

/// Every key of rotabloom's on the server.
fn rotabloom_keys(conn: &mut redis::Connection) -> Vec<String> {
    redis::cmd("KEYS").arg("rotabloom*").query(conn).unwrap()
}

fn not_adoptable(e: &Error) -> String {
    match e {
        Error::NotAdoptable { reason, .. } => reason.clone(),
        other => panic!("not NotAdoptable: {other:?} ({other})"),
    }
}

#[test]
fn a_bitmap_written_with_bit_24_is_refused_as_bit_30_and_adopted_as_24() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    // The real package, BLOOMFILTER_BIT = 24, fed 5,000 request
    // fingerprints as its dupefilter would.
    let fps = package_fingerprints(
        &server,
        "crawl:bloomfilter",
        24,
        5000,
        "https://example.com/item/",
    );
    let before = bytes(&mut conn, "crawl:bloomfilter").unwrap();
    assert!(before.len() <= 1 << 21, "{}", before.len());

    // With the default 30 the 2 MiB string is far shorter than 2^30 bits
    // would make it: refused, naming the bit it fits.
    let e = adopt(
        &mut conn,
        "crawl",
        scrapy_legacy("crawl:bloomfilter", 30, 6),
    )
    .unwrap_err();
    eprintln!("bit 24 adopted as 30: {e}");
    match &e {
        Error::InvalidParameter {
            name: "bit",
            reason,
        } => {
            assert!(
                reason.contains("it fits BLOOMFILTER_BIT = 24 only"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
    // Insisting with the fingerprints shows why: read with bit 30, none
    // of them is there.
    let e = adopt(
        &mut conn,
        "crawl",
        scrapy_legacy("crawl:bloomfilter", 30, 6).verify(&fps),
    )
    .unwrap_err();
    eprintln!("with the fingerprints: {e}");
    let reason = not_adoptable(&e);
    assert!(
        reason.starts_with("5000 of the 5000 items known to be in it are absent"),
        "{reason}"
    );
    assert!(reason.contains("also: invalid bit"), "{reason}");
    assert_eq!(bytes(&mut conn, "crawl:bloomfilter").unwrap(), before);
    assert!(rotabloom_keys(&mut conn).is_empty());

    // With its own bit, every fingerprint is found.
    let f = adopt(
        &mut conn,
        "crawl",
        scrapy_legacy("crawl:bloomfilter", 24, 6).verify(&fps),
    )
    .unwrap();
    let found = f.contains_many(&mut conn, &fps).unwrap();
    assert!(found.iter().all(|&b| b));
    assert_eq!(bytes(&mut conn, "crawl:bloomfilter"), None, "moved");
    let info = f.info(&mut conn).unwrap();
    assert_eq!(info.fields["legacy_source"], "crawl:bloomfilter");
}

#[test]
fn what_cannot_be_adopted_is_refused_and_nothing_written() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    // No such key.
    let e = adopt(&mut conn, "f", scrapy_legacy("nokey", 20, 6)).unwrap_err();
    assert!(not_adoptable(&e).starts_with("there is no such key"), "{e}");
    let keys: u64 = redis::cmd("DBSIZE").query(&mut conn).unwrap();
    assert_eq!(keys, 0, "nothing written");
    let e = adopt(
        &mut conn,
        "f",
        Legacy::Seed000 {
            prefix: "nobf".into(),
            blocks: 3,
        },
    )
    .unwrap_err();
    assert!(not_adoptable(&e).contains("none of the keys nobf0 to nobf2 exists"));

    // scrapy-redis's own dupefilter: a SET of fingerprints.
    let fps: Vec<String> = (0..100).map(fingerprint).collect();
    redis::cmd("SADD")
        .arg("spider:dupefilter")
        .arg(&fps)
        .exec(&mut conn)
        .unwrap();
    let e = adopt(&mut conn, "f", scrapy_legacy("spider:dupefilter", 30, 6)).unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("cannot adopt \"spider:dupefilter\": it is a Redis set, not a bitmap"),
        "{text}"
    );
    assert!(text.contains("rotabloom load NAME -"), "{text}");
    let members: u64 = redis::cmd("SCARD")
        .arg("spider:dupefilter")
        .query(&mut conn)
        .unwrap();
    assert_eq!(members, 100);
    // Another type is named as it is.
    redis::cmd("HSET")
        .arg("ahash")
        .arg("a")
        .arg("b")
        .exec(&mut conn)
        .unwrap();
    let e = adopt(&mut conn, "f", scrapy_legacy("ahash", 30, 6)).unwrap_err();
    assert!(e.to_string().contains("holds a Redis hash"), "{e}");

    // All zeros: nothing to adopt.
    redis::cmd("SETRANGE")
        .arg("zero:bloomfilter")
        .arg(999)
        .arg(&b"\0"[..])
        .exec(&mut conn)
        .unwrap();
    let e = adopt(&mut conn, "f", scrapy_legacy("zero:bloomfilter", 20, 6)).unwrap_err();
    assert!(
        not_adoptable(&e).starts_with("no bit is set in its 1000 bytes"),
        "{e}"
    );
    // Every bit set: it would answer "seen" for everything.
    redis::cmd("SET")
        .arg("full:bloomfilter")
        .arg(vec![0xffu8; 1 << 17])
        .exec(&mut conn)
        .unwrap();
    let e = adopt(&mut conn, "f", scrapy_legacy("full:bloomfilter", 20, 6)).unwrap_err();
    assert!(
        not_adoptable(&e).contains("for 100% of all new items"),
        "{e}"
    );
    // Longer than 2^20 bits can be.
    redis::cmd("SETBIT")
        .arg("big:bloomfilter")
        .arg(1 << 21)
        .arg(1)
        .exec(&mut conn)
        .unwrap();
    let e = adopt(&mut conn, "f", scrapy_legacy("big:bloomfilter", 20, 6)).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidParameter { name: "bit", reason } if reason.contains("longer than a bitmap of BLOOMFILTER_BIT = 20")),
        "{e}"
    );
    assert!(rotabloom_keys(&mut conn).is_empty());
    for key in ["zero:bloomfilter", "full:bloomfilter", "big:bloomfilter"] {
        assert!(bytes(&mut conn, key).is_some(), "{key} stays");
    }
}

#[test]
fn verify_refuses_an_absent_item_and_leaves_the_legacy_key() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let fps: Vec<String> = (0..300).map(fingerprint).collect();
    write_scrapy(&mut conn, "spider:bloomfilter", 20, 6, &fps);
    let before = bytes(&mut conn, "spider:bloomfilter").unwrap();
    let stranger = fingerprint(1_000_000);
    let mut known = fps.clone();
    known.insert(150, stranger.clone());
    let e = adopt(
        &mut conn,
        "spider",
        scrapy_legacy("spider:bloomfilter", 20, 6).verify(&known),
    )
    .unwrap_err();
    let reason = not_adoptable(&e);
    assert!(
        reason.starts_with(&format!(
            "1 of the 301 items known to be in it are absent with these parameters (the first: {stranger:?})"
        )),
        "{reason}"
    );
    assert_eq!(bytes(&mut conn, "spider:bloomfilter").unwrap(), before);
    assert!(rotabloom_keys(&mut conn).is_empty());
    // A wrong hash count is caught the same way (one more function's bits
    // were never set).
    let e = adopt(
        &mut conn,
        "spider",
        scrapy_legacy("spider:bloomfilter", 20, 7).verify(&fps),
    )
    .unwrap_err();
    assert!(
        not_adoptable(&e).contains(" of the 300 items known to be in it are absent"),
        "{e}"
    );

    let f = adopt(
        &mut conn,
        "spider",
        scrapy_legacy("spider:bloomfilter", 20, 6).verify(&fps),
    )
    .unwrap();
    assert!(f.contains_many(&mut conn, &fps).unwrap().iter().all(|&b| b));
    // Adopting again checks the items in the adopted generation.
    adopt(
        &mut conn,
        "spider",
        scrapy_legacy("spider:bloomfilter", 20, 6).verify(&fps),
    )
    .unwrap();
    let e = adopt(
        &mut conn,
        "spider",
        scrapy_legacy("spider:bloomfilter", 20, 6).verify([&stranger]),
    )
    .unwrap_err();
    assert!(not_adoptable(&e).starts_with("1 of the 1 items"), "{e}");
}

#[test]
fn adopting_again_compares_every_legacy_parameter() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let fps: Vec<String> = (0..300).map(fingerprint).collect();
    write_scrapy(&mut conn, "spider:bloomfilter", 20, 6, &fps);
    adopt(
        &mut conn,
        "spider",
        scrapy_legacy("spider:bloomfilter", 20, 6),
    )
    .unwrap();
    // Each difference is refused, naming the field, as the user reads it.
    for (legacy, message) in [
        (
            scrapy_legacy("spider:bloomfilter", 24, 6),
            "gen.0.bits = 1048576 (BLOOMFILTER_BIT = 20), but 16777216 (BLOOMFILTER_BIT = 24) was requested",
        ),
        (
            scrapy_legacy("spider:bloomfilter", 20, 5),
            "gen.0.hashes = 6, but 5 was requested",
        ),
        (
            scrapy_legacy("other:bloomfilter", 20, 6),
            "legacy_source = spider:bloomfilter, but other:bloomfilter was requested",
        ),
        (
            Legacy::Seed000 {
                prefix: "spider:bloomfilter".into(),
                blocks: 1,
            },
            "gen.0.scheme = scrapy-redis-bloomfilter, but seed000 was requested",
        ),
    ] {
        let e = adopt(&mut conn, "spider", legacy).unwrap_err();
        assert!(matches!(e, Error::ParameterMismatch { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!("filter \"spider\" exists with {message}")
        );
    }
    // The same parameters open it, though the legacy key has moved.
    let f = adopt(
        &mut conn,
        "spider",
        scrapy_legacy("spider:bloomfilter", 20, 6),
    )
    .unwrap();
    assert!(f.contains(&mut conn, &fps[0]).unwrap());
}

fn config_set(conn: &mut redis::Connection, key: &str, value: &str) {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(key)
        .arg(value)
        .exec(conn)
        .unwrap();
}

#[test]
fn a_failure_mid_adoption_leaves_the_legacy_key_where_it_was() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let fps: Vec<String> = (0..300).map(fingerprint).collect();
    write_scrapy(&mut conn, "spider:bloomfilter", 20, 6, &fps);
    let before = bytes(&mut conn, "spider:bloomfilter").unwrap();
    let legacy = || scrapy_legacy("spider:bloomfilter", 20, 6).verify(&fps);

    // The new generation cannot be allocated: memory is full.
    config_set(&mut conn, "maxmemory-policy", "noeviction");
    config_set(&mut conn, "maxmemory", "1");
    let e = adopt(&mut conn, "spider", legacy()).unwrap_err();
    assert!(
        matches!(e, Error::OutOfMemory { .. } | Error::MemoryFull { .. }),
        "{e:?}"
    );
    config_set(&mut conn, "maxmemory", "0");
    assert_eq!(bytes(&mut conn, "spider:bloomfilter").unwrap(), before);
    assert!(rotabloom_keys(&mut conn).is_empty());

    // The user may not RENAME: the create script fails at its first write,
    // after the new generation was allocated, which is given back.
    redis::cmd("ACL")
        .arg(&[
            "SETUSER", "norename", "on", ">pw", "~*", "&*", "+@all", "-rename",
        ])
        .exec(&mut conn)
        .unwrap();
    let url = format!("redis://norename:pw@127.0.0.1:{}/", server.port());
    let mut user = redis::Client::open(url).unwrap().get_connection().unwrap();
    let e = adopt(&mut user, "spider", legacy()).unwrap_err();
    assert!(
        matches!(&e, Error::PermissionDenied { message } if message.contains("'rename'")),
        "{e:?}"
    );
    assert_eq!(bytes(&mut conn, "spider:bloomfilter").unwrap(), before);
    assert!(rotabloom_keys(&mut conn).is_empty());

    // The create script itself: a source gone since it was measured, or
    // a target key taken, and it writes nothing.
    let script = redis::Script::new(include_str!("../src/lua/create.lua"));
    let run = |conn: &mut redis::Connection, source: &str| -> redis::Value {
        script
            .key("rotabloom:{s}:meta")
            .key(source)
            .key("rotabloom:{s}:gen:u-0:0")
            .key("rotabloom:{s}:fence")
            .arg(1)
            .arg(0)
            .arg("format")
            .arg("1")
            .invoke(conn)
            .unwrap()
    };
    let reply = run(&mut conn, "gone:bloomfilter");
    assert_eq!(
        reply,
        redis::Value::Array(vec![
            redis::Value::BulkString(b"badsource".to_vec()),
            redis::Value::BulkString(b"gone:bloomfilter".to_vec()),
            redis::Value::BulkString(b"none".to_vec()),
        ])
    );
    redis::cmd("SET")
        .arg("rotabloom:{s}:gen:u-0:0")
        .arg("x")
        .exec(&mut conn)
        .unwrap();
    let reply = run(&mut conn, "spider:bloomfilter");
    assert!(format!("{reply:?}").contains("taken"), "{reply:?}");
    assert_eq!(bytes(&mut conn, "spider:bloomfilter").unwrap(), before);
    let keys = rotabloom_keys(&mut conn);
    assert_eq!(keys, ["rotabloom:{s}:gen:u-0:0"]);
    redis::cmd("DEL")
        .arg("rotabloom:{s}:gen:u-0:0")
        .exec(&mut conn)
        .unwrap();

    // Nothing failing, it is adopted.
    let f = adopt(&mut conn, "spider", legacy()).unwrap();
    assert!(f.contains_many(&mut conn, &fps).unwrap().iter().all(|&b| b));
    assert_eq!(bytes(&mut conn, "spider:bloomfilter"), None);
}
