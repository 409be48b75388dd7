//! Damaged data is an error, never an answer; a filter is created whole or
//! not at all; a clear keeps every block allocated. Real servers only.

#[path = "../../tests/support/harness.rs"]
mod harness;

use chrono::{Duration, TimeZone, Utc};
use harness::RedisServer;
use rotabloom::{
    BloomFilter, CircularFilter, Error, ExpandingFilter, FilterName, Keys, Legacy, ManualClock,
};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;

const BIN: &str = env!("CARGO_BIN_EXE_rotabloom");

fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("http://{prefix}.example/{i}"))
        .collect()
}

fn keys(name: &str) -> Keys {
    Keys::new(FilterName::new(name).unwrap())
}

/// Every key of filter `name`.
fn keys_of(conn: &mut redis::Connection, name: &str) -> Vec<String> {
    let pattern = format!("rotabloom:{{{name}}}:*");
    let mut out: Vec<String> = redis::cmd("KEYS").arg(pattern).query(conn).unwrap();
    out.sort();
    out
}

/// The block keys of filter `name`.
fn blocks_of(conn: &mut redis::Connection, name: &str) -> Vec<String> {
    keys_of(conn, name)
        .into_iter()
        .filter(|k| k.contains(":gen:"))
        .collect()
}

/// Runs the binary with `stdin`; (exit code, stdout, stderr).
fn cli(url: &str, args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(BIN)
        .arg("--redis")
        .arg(url)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Fed from a thread: the output is read meanwhile, or a big input and
    // output would block each other.
    let mut input = child.stdin.take().unwrap();
    let data = stdin.as_bytes().to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Creates base filter `name` for `capacity` items at 0.1%.
fn create_base(url: &str, name: &str, capacity: u64) {
    let capacity = capacity.to_string();
    let args = [
        "create",
        name,
        "--kind",
        "bloom",
        "--capacity",
        &capacity,
        "--error-rate",
        "0.001",
    ];
    let (code, _, err) = cli(url, &args, "");
    assert_eq!(code, 0, "{err}");
}

fn assert_missing<T: std::fmt::Debug>(r: rotabloom::Result<T>, key: &str, what: &str) {
    match r {
        Err(Error::MissingData { keys, .. }) => {
            assert!(
                keys.iter().any(|k| k == key),
                "{what}: {keys:?} lacks {key}"
            )
        }
        other => panic!("{what}: expected MissingData naming {key}, got {other:?}"),
    }
}

#[test]
fn a_deleted_block_is_an_error_for_every_path_and_nothing_is_written() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("dmg")
        .capacity(20_000)
        .error_rate(0.01)
        .max_block_bits(1 << 14)
        .create_or_open(&mut conn)
        .unwrap();
    let known = items("known", 2_000);
    f.insert_many(&mut conn, &known).unwrap();
    let blocks = blocks_of(&mut conn, "dmg");
    assert!(blocks.len() >= 10, "{blocks:?}");
    let lost = blocks[3].clone();
    let _: () = redis::cmd("DEL").arg(&lost).query(&mut conn).unwrap();
    let count = f.count(&mut conn).unwrap();

    // Batches (the guarded transaction) and single items (the script). A
    // single item's call checks the blocks it touches: an item of the lost
    // block is an error, one of an intact block is answered (rightly).
    assert_missing(f.contains_many(&mut conn, &known), &lost, "contains_many");
    let (mut hit, mut answered) = (0, 0);
    for k in &known[..200] {
        match f.contains(&mut conn, k) {
            Ok(present) => {
                assert!(present, "{k} inserted, answered absent");
                answered += 1;
            }
            r => {
                assert_missing(r, &lost, "contains");
                hit += 1;
            }
        }
    }
    assert!(hit > 0 && answered > 0, "{hit} errors, {answered} answers");
    let fresh = items("fresh", 500);
    assert_missing(
        f.check_and_insert_many(&mut conn, &fresh),
        &lost,
        "check_and_insert_many",
    );
    // A new item of the lost block: refused, nothing written.
    let doomed = fresh
        .iter()
        .find(|i| f.contains(&mut conn, i).is_err())
        .expect("an item of the lost block");
    assert_missing(
        f.check_and_insert(&mut conn, doomed),
        &lost,
        "check_and_insert",
    );
    assert_missing(f.insert_many(&mut conn, &fresh), &lost, "insert_many");
    // A fresh handle too, and nothing was written.
    let g = BloomFilter::open(&mut conn, "dmg").unwrap();
    assert_missing(g.contains_many(&mut conn, &fresh), &lost, "a fresh handle");
    assert_eq!(f.count(&mut conn).unwrap(), count);
    let exists: i64 = redis::cmd("EXISTS").arg(&lost).query(&mut conn).unwrap();
    assert_eq!(exists, 0, "the missing block was not silently re-created");

    // The command line: one line, exit 3, nothing passed through.
    let input = known[..100].join("\n");
    let (code, out, err) = cli(&server.url(), &["check", "dmg"], &input);
    assert_eq!((code, out.as_str()), (3, ""), "{err}");
    assert!(
        err.starts_with("rotabloom: ") && err.trim_end().lines().count() == 1,
        "{err}"
    );
    assert!(err.contains("lost data") && err.contains(&lost), "{err}");
    let (code, out, err) = cli(&server.url(), &["filter", "dmg"], &fresh.join("\n"));
    assert_eq!((code, out.as_str()), (3, ""), "{err}");
}

#[test]
fn a_generation_whose_blocks_are_all_gone_is_an_error() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = ExpandingFilter::builder("gone")
        .capacity(1_000)
        .create_or_open(&mut conn)
        .unwrap();
    f.insert_many(&mut conn, items("a", 3_000)).unwrap();
    assert!(f.generations().len() >= 2);
    let uid = {
        let u: String = redis::cmd("HGET")
            .arg(keys("gone").meta())
            .arg("uid")
            .query(&mut conn)
            .unwrap();
        u
    };
    let first = keys("gone").block(&uid, 0, 0);
    let _: () = redis::cmd("DEL").arg(&first).query(&mut conn).unwrap();
    assert_missing(
        f.contains_many(&mut conn, items("a", 100)),
        &first,
        "frozen generation",
    );
    assert_missing(f.check_and_insert(&mut conn, "b"), &first, "a write");
}

#[test]
fn clear_keeps_every_block_allocated_and_empty() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("clr")
        .capacity(20_000)
        .max_block_bits(1 << 14)
        .create_or_open(&mut conn)
        .unwrap();
    let known = items("c", 1_000);
    f.insert_many(&mut conn, &known).unwrap();
    let blocks = blocks_of(&mut conn, "clr");
    let size = |conn: &mut redis::Connection, k: &str| -> u64 {
        redis::cmd("STRLEN").arg(k).query(conn).unwrap()
    };
    let full: Vec<u64> = blocks.iter().map(|k| size(&mut conn, k)).collect();
    f.clear(&mut conn).unwrap();
    for (k, s) in blocks.iter().zip(&full) {
        assert_eq!(size(&mut conn, k), *s, "{k} kept its size");
        let set: u64 = redis::cmd("BITCOUNT").arg(k).query(&mut conn).unwrap();
        assert_eq!(set, 0, "{k} is empty");
    }
    assert_eq!(f.count(&mut conn).unwrap(), 0);
    let after = f.contains_many(&mut conn, &known).unwrap();
    assert!(after.iter().filter(|p| **p).count() < 50, "cleared");
    assert!(
        f.check_and_insert_many(&mut conn, &known)
            .unwrap()
            .iter()
            .filter(|n| **n)
            .count()
            > 950
    );
}

#[test]
fn create_is_all_or_nothing_under_maxmemory() {
    let server =
        RedisServer::start_with(&["--maxmemory", "40mb", "--maxmemory-policy", "noeviction"]);
    let mut conn = server.connection();
    // About 171 MiB in 8 MiB blocks: the server refuses part way.
    let r = BloomFilter::builder("huge")
        .capacity(100_000_000)
        .error_rate(0.001)
        .create_or_open(&mut conn);
    match r {
        Err(Error::OutOfMemory {
            bytes, ref message, ..
        }) => {
            assert!(bytes > 150 << 20, "{bytes}");
            assert!(message.contains("maxmemory"), "{message}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    assert!(keys_of(&mut conn, "huge").is_empty(), "nothing left behind");
    let (code, out, err) = cli(
        &server.url(),
        &[
            "create",
            "huge2",
            "--kind",
            "bloom",
            "--capacity",
            "100000000",
            "--error-rate",
            "0.001",
        ],
        "",
    );
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        err.contains("maxmemory") && err.trim_end().lines().count() == 1,
        "{err}"
    );
    assert!(
        keys_of(&mut conn, "huge2").is_empty(),
        "nothing left behind by the CLI"
    );
    // A filter that fits is created whole.
    BloomFilter::builder("small")
        .capacity(100_000)
        .create_or_open(&mut conn)
        .unwrap();
}

#[test]
fn missed_rotations_allocate_every_new_generation() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 30, 0).unwrap();
    let clock = ManualClock::new(t0);
    let f = CircularFilter::builder("rot")
        .generations(3)
        .capacity(10_000)
        .schedule("1h")
        .clock(Arc::new(clock.clone()))
        .create_or_open(&mut conn)
        .unwrap();
    clock.advance(Duration::hours(5));
    f.rotate_if_due(&mut conn).unwrap();
    let blocks = blocks_of(&mut conn, "rot");
    assert_eq!(blocks.len(), 3, "{blocks:?}");
    let sizes: Vec<u64> = blocks
        .iter()
        .map(|k| redis::cmd("STRLEN").arg(k).query(&mut conn).unwrap())
        .collect();
    assert!(sizes.iter().all(|s| *s == sizes[0] && *s > 0), "{sizes:?}");
    assert!(f.check_and_insert_many(&mut conn, items("r", 100)).is_ok());
}

#[test]
fn an_adopted_legacy_bitmap_may_lack_blocks_its_crawler_never_wrote() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    // Seed 000 layout with two blocks, of which only the first was written.
    let _: () = redis::cmd("SETBIT")
        .arg("legacy0")
        .arg(12345)
        .arg(1)
        .query(&mut conn)
        .unwrap();
    let f = ExpandingFilter::builder("adopted")
        .capacity(1_000)
        .adopt_legacy(
            &mut conn,
            Legacy::Seed000 {
                prefix: "legacy".into(),
                blocks: 2,
            },
        )
        .unwrap();
    let answers = f.contains_many(&mut conn, items("l", 200)).unwrap();
    assert_eq!(answers.len(), 200);
    assert!(f.check_and_insert_many(&mut conn, items("l", 50)).is_ok());
}

#[test]
fn under_maxmemory_reads_keep_working_and_writes_say_why() {
    let server = RedisServer::start();
    let url = server.url();
    let mut conn = server.connection();
    let f = BloomFilter::builder("full")
        .capacity(100_000)
        .error_rate(1e-6)
        .create_or_open(&mut conn)
        .unwrap();
    let known = items("known", 1000);
    let fresh = items("fresh", 1000);
    f.insert_many(&mut conn, &known).unwrap();
    let count = f.count(&mut conn).unwrap();
    for (k, v) in [("maxmemory-policy", "noeviction"), ("maxmemory", "1")] {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(k)
            .arg(v)
            .query(&mut conn)
            .unwrap();
    }
    // Batches big enough for the guarded transaction, which the server
    // refuses under maxmemory: the answers come by the script instead.
    let mut both = known.clone();
    both.extend(fresh.iter().cloned());
    let present = f.contains_many(&mut conn, &both).unwrap();
    assert!(present[..1000].iter().all(|&p| p));
    assert!(present[1000..].iter().all(|&p| !p));
    assert!(f.contains(&mut conn, &known[0]).unwrap());
    // Writes: refused, named, nothing applied.
    for r in [
        f.check_and_insert_many(&mut conn, &fresh),
        f.insert_many(&mut conn, &fresh[..5]),
        f.idempotent_batch(&fresh).check_and_insert(&mut conn),
    ] {
        match r {
            Err(Error::MemoryFull { ref name, .. }) if name == "full" => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(f.count(&mut conn).unwrap(), count);
    assert!(f
        .contains_many(&mut conn, &fresh)
        .unwrap()
        .iter()
        .all(|&p| !p));
    // The command line: check works; add is one line naming maxmemory.
    let (code, out, err) = cli(&url, &["check", "full"], &both.join("\n"));
    assert_eq!((code, out.lines().count()), (0, 1000), "{err}");
    let (code, _, err) = cli(&url, &["--retries", "0", "add", "full", "x"], "");
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("maxmemory") && err.trim_end().lines().count() == 1,
        "{err}"
    );
}

#[test]
fn an_over_full_filter_refuses_or_warns_as_chosen() {
    let server = RedisServer::start();
    let url = server.url();
    let mut conn = server.connection();

    // The library: refused from the first write after the count reached
    // capacity, with nothing written; on with Warn.
    let f = BloomFilter::builder("small-lib")
        .capacity(100)
        .error_rate(1e-6)
        .create_or_open(&mut conn)
        .unwrap();
    f.insert_many(&mut conn, items("a", 100)).unwrap();
    match f.check_and_insert(&mut conn, "one more") {
        Err(Error::Full {
            capacity: 100,
            count: 100,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(!f.contains(&mut conn, "one more").unwrap());
    // A handle opened later knows it from the count it reads.
    let g = BloomFilter::open(&mut conn, "small-lib").unwrap();
    assert!(matches!(g.insert(&mut conn, "x"), Err(Error::Full { .. })));
    let w = g.with_when_full(rotabloom::WhenFull::Warn);
    assert!(w.check_and_insert(&mut conn, "one more").unwrap());

    // A circular filter: its generation is full until the rotation.
    let c = CircularFilter::builder("small-circ")
        .generations(3)
        .capacity(100)
        .error_rate(1e-6)
        .create_or_open(&mut conn)
        .unwrap();
    c.insert_many(&mut conn, items("c", 100)).unwrap();
    assert!(matches!(
        c.insert(&mut conn, "c-more"),
        Err(Error::Full { .. })
    ));
    c.rotate(&mut conn).unwrap();
    assert!(c.insert(&mut conn, "c-more").unwrap());

    // The command line: 50,000 new lines into a filter for 10,000.
    create_base(&url, "small", 10_000);
    let lines = items("full", 50_000).join("\n");
    let (code, out, err) = cli(&url, &["filter", "small"], &lines);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("is full") && err.lines().count() == 1, "{err}");
    let printed = out.lines().count();
    // Everything printed was new; the refusal came within one batch of
    // 1,000 per batch in flight (2 by default) past the capacity.
    assert!((9_000..=12_000).contains(&printed), "{printed} printed");
    let (code, out, err) = cli(&url, &["--when-full", "warn", "filter", "small"], &lines);
    assert_eq!(code, 0, "{err}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("over its capacity"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].starts_with("rotabloom: warning: "), "{err}");
    // It wrote on past the capacity (the lines the first run printed are
    // seen now, and the rising false-positive rate drops many more).
    assert!(out.lines().count() > 10_000);
}

#[test]
fn a_full_base_filter_becomes_an_expanding_one_when_asked() {
    let server = RedisServer::start();
    let url = server.url();
    let mut conn = server.connection();
    create_base(&url, "grows", 10_000);
    let lines = items("grows", 50_000).join("\n");
    let (code, out, err) = cli(&url, &["--when-full", "expand", "filter", "grows"], &lines);
    assert_eq!(code, 0, "{err}");
    let warnings: Vec<&str> = err.lines().collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].starts_with("rotabloom: warning: ")
            && warnings[0].contains("becomes an expanding filter"),
        "{err}"
    );
    // The bound of the converted filter is twice the base filter's rate
    // (0.2%): of 50,000 new lines, about 100 may be taken as seen; without
    // the conversion, the over-full base filter would drop thousands.
    let printed = out.lines().count();
    assert!(printed >= 49_700, "{printed} of 50,000 printed");
    let f = rotabloom::AnyFilter::open(&mut conn, "grows").unwrap();
    assert_eq!(f.kind(), rotabloom::Kind::Expanding);
    assert!(f.info(&mut conn).unwrap().generations.len() >= 3);
    // A second run finds it expanding and simply goes on: all seen.
    let (code, out, err) = cli(&url, &["--when-full", "expand", "filter", "grows"], &lines);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
}
