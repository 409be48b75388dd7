//! Drop against a real, private redis-server: nothing is left under the
//! name (records of idempotent batches included), a batch in flight cannot
//! write after it, readers see the filter whole or not at all, and an
//! interrupted drop is finished by the next.

#[path = "support/harness.rs"]
mod harness;
#[path = "support/suite.rs"]
mod suite;

use harness::RedisServer;
use rotabloom::{AnyFilter, BloomFilter, Error, WarningCode};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn filter(conn: &mut redis::Connection, name: &str) -> BloomFilter {
    BloomFilter::builder(name)
        .capacity(10_000)
        .error_rate(0.01)
        .create_or_open(conn)
        .unwrap()
}

/// The record keys of filter `name`.
fn records(conn: &mut redis::Connection, name: &str) -> Vec<String> {
    suite::keys_of(conn, name)
        .into_iter()
        .filter(|k| k.contains("}:done:"))
        .collect()
}

/// Waits until `done` holds, or fails after a generous deadline.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::yield_now();
    }
}

#[test]
fn drop_removes_the_records_of_idempotent_batches_and_nothing_of_another_filter() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let mine = filter(&mut conn, "mine");
    let theirs = filter(&mut conn, "theirs");
    for i in 0..5 {
        let items: Vec<String> = (0..40).map(|j| format!("{i}-{j}")).collect();
        mine.idempotent_batch(&items)
            .check_and_insert(&mut conn)
            .unwrap();
        theirs.idempotent_batch(&items).insert(&mut conn).unwrap();
    }
    assert_eq!(records(&mut conn, "mine").len(), 5);
    let before = suite::keys_of(&mut conn, "theirs");
    assert_eq!(records(&mut conn, "theirs").len(), 5);

    assert!(mine.drop(&mut conn).unwrap());
    assert_eq!(suite::keys_of(&mut conn, "mine"), Vec::<String>::new());
    assert_eq!(suite::keys_of(&mut conn, "theirs"), before);
}

#[test]
fn batches_in_flight_during_a_drop_leave_no_key() {
    let server = RedisServer::start();
    let mut admin = server.connection();
    for round in 0..4 {
        let name = format!("busy{round}");
        let f = filter(&mut admin, &name);
        let done = Arc::new(AtomicU64::new(0));
        let writers: Vec<_> = (0..3)
            .map(|w| {
                let (f, done) = (f.clone(), Arc::clone(&done));
                let mut conn = server.connection();
                std::thread::spawn(move || {
                    for b in 0u64.. {
                        let items: Vec<String> = (0..30).map(|i| format!("{w}-{b}-{i}")).collect();
                        match f.idempotent_batch(&items).check_and_insert(&mut conn) {
                            Ok(_) => done.fetch_add(1, Ordering::Relaxed),
                            Err(e) => return e,
                        };
                    }
                    unreachable!()
                })
            })
            .collect();
        // The drop lands while every writer has batches going.
        wait_for("batches before the drop", || {
            done.load(Ordering::Relaxed) >= 30
        });
        assert!(f.drop(&mut admin).unwrap());
        for w in writers {
            let e = w.join().unwrap();
            assert!(matches!(e, Error::NotFound { .. }), "{e}");
        }
        let left = suite::keys_of(&mut admin, &name);
        assert!(left.is_empty(), "round {round}: {left:?}");
    }
}

#[test]
fn readers_see_a_filter_whole_or_not_at_all_while_it_is_dropped() {
    let server = RedisServer::start();
    let mut admin = server.connection();
    // 64 blocks: the drop deletes them over 64 round trips.
    let make = |conn: &mut redis::Connection| {
        BloomFilter::builder("dropped")
            .capacity(20_000)
            .error_rate(0.01)
            .max_block_bits(1 << 12)
            .create_or_open(conn)
            .unwrap()
    };
    let f = make(&mut admin);
    assert!(f.info(&mut admin).unwrap().generations[0].blocks >= 40);
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(AtomicU64::new(0));
    let reader = {
        let (stop, seen) = (Arc::clone(&stop), Arc::clone(&seen));
        let mut conn = server.connection();
        std::thread::spawn(move || {
            let mut problems = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let info = AnyFilter::open(&mut conn, "dropped").and_then(|f| f.info(&mut conn));
                match info {
                    Ok(info) => {
                        seen.fetch_add(1, Ordering::Relaxed);
                        problems.extend(
                            info.warnings
                                .iter()
                                .filter(|w| w.code == WarningCode::MissingBlock)
                                .map(|w| w.message.clone()),
                        );
                    }
                    // Dropped between the open and the read, maybe
                    // created again: not there, whole or not, for this
                    // handle.
                    Err(Error::NotFound { .. } | Error::Recreated { .. }) => {}
                    Err(e) => problems.push(e.to_string()),
                }
            }
            problems
        })
    };
    for _ in 0..30 {
        let before = seen.load(Ordering::Relaxed);
        wait_for("a read of the filter", || {
            seen.load(Ordering::Relaxed) > before
        });
        let f = make(&mut admin);
        assert!(f.drop(&mut admin).unwrap());
        make(&mut admin);
    }
    stop.store(true, Ordering::Relaxed);
    let problems = reader.join().unwrap();
    assert!(problems.is_empty(), "{problems:?}");
}

/// The state a drop leaves when it is interrupted after its script: the
/// metadata and the fence gone, the blocks in the trash list.
fn interrupt_a_drop(conn: &mut redis::Connection, name: &str) {
    let keys = suite::keys_of(conn, name);
    let blocks: Vec<&String> = keys.iter().filter(|k| k.contains("}:gen:")).collect();
    assert!(!blocks.is_empty());
    let _: () = redis::cmd("RPUSH")
        .arg(format!("rotabloom:{{{name}}}:trash"))
        .arg(&blocks)
        .query(conn)
        .unwrap();
    let _: () = redis::cmd("DEL")
        .arg(format!("rotabloom:{{{name}}}:meta"))
        .arg(format!("rotabloom:{{{name}}}:fence"))
        .query(conn)
        .unwrap();
}

#[test]
fn an_interrupted_drop_is_finished_by_the_next_one() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    for by_handle in [true, false] {
        let f = filter(&mut conn, "half");
        f.idempotent_batch(["a", "b"])
            .check_and_insert(&mut conn)
            .unwrap();
        interrupt_a_drop(&mut conn, "half");
        assert!(matches!(
            AnyFilter::open(&mut conn, "half"),
            Err(Error::NotFound { .. })
        ));
        if by_handle {
            // Gone already, so false; what was left goes all the same.
            assert!(!f.drop(&mut conn).unwrap());
        } else {
            // A block and a record.
            assert_eq!(AnyFilter::remove_leftovers(&mut conn, "half").unwrap(), 2);
            assert_eq!(AnyFilter::remove_leftovers(&mut conn, "half").unwrap(), 0);
        }
        assert!(suite::keys_of(&mut conn, "half").is_empty());
    }
}

#[test]
fn blocks_of_a_creation_or_restore_in_progress_outlive_the_sweep() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = filter(&mut conn, "busy");
    f.idempotent_batch(["a"])
        .check_and_insert(&mut conn)
        .unwrap();
    // A block a creation (or a restore) of the name wrote, with its lease,
    // before its script names it.
    let leased = "rotabloom:{busy}:gen:00000000000000ff-0:0";
    redis::cmd("SET")
        .arg(leased)
        .arg("bits")
        .arg("PX")
        .arg(600_000)
        .exec(&mut conn)
        .unwrap();
    assert!(f.drop(&mut conn).unwrap());
    assert_eq!(suite::keys_of(&mut conn, "busy"), [leased]);
}

#[test]
fn leftovers_of_a_live_filter_are_not_removed() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = filter(&mut conn, "live");
    let mut batch = f.idempotent_batch(["a", "b"]);
    assert_eq!(batch.check_and_insert(&mut conn).unwrap(), [true, true]);
    let before = suite::keys_of(&mut conn, "live");
    assert_eq!(before.len(), 4, "meta, fence, block, record: {before:?}");
    assert_eq!(AnyFilter::remove_leftovers(&mut conn, "live").unwrap(), 0);
    assert_eq!(suite::keys_of(&mut conn, "live"), before);
    // The record still answers a retry.
    assert_eq!(batch.check_and_insert(&mut conn).unwrap(), [true, true]);
}

#[test]
fn a_clear_keeps_the_records_so_a_retry_gets_the_answers_of_its_first_run() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = filter(&mut conn, "cleared");
    f.insert(&mut conn, "old").unwrap();
    let mut batch = f.idempotent_batch(["old", "new"]);
    // The first run was applied; say its reply was lost.
    assert_eq!(batch.check_and_insert(&mut conn).unwrap(), [false, true]);
    f.clear(&mut conn).unwrap();
    // The retry answers as the run that was applied (before the clear),
    // and writes nothing again: the clear forgot those items.
    assert_eq!(batch.check_and_insert(&mut conn).unwrap(), [false, true]);
    assert_eq!(f.count(&mut conn).unwrap(), 0);
    assert!(!f.contains(&mut conn, "new").unwrap());
}

/// The block keys under `name` of the instance `uid`.
fn blocks_of(conn: &mut redis::Connection, name: &str, uid: &str) -> Vec<String> {
    suite::keys_of(conn, name)
        .into_iter()
        .filter(|k| k.contains(&format!("}}:gen:{uid}-")))
        .collect()
}

/// `g` opened, then dropped and created again by someone else, unsharded
/// or with 3 shards: the old handle's writes, by either protocol, are
/// refused in words and write nothing anywhere.
#[test]
fn a_handle_across_a_re_create_is_refused_and_writes_nothing() {
    let server = RedisServer::start();
    let mut admin = server.connection();
    for (round, shards) in [1u32, 1, 3, 3].into_iter().enumerate() {
        let transactions = round % 2 == 0;
        let name = format!("g{round}");
        let old = filter(&mut admin, &name).with_transactions(transactions);
        let mut conn = server.connection();
        assert_eq!(
            old.check_and_insert_many(&mut conn, ["a", "b"]).unwrap(),
            [true, true]
        );
        let uid = old.info(&mut conn).unwrap().fields["uid"].clone();
        assert!(old.drop(&mut admin).unwrap());
        let new = BloomFilter::builder(&name)
            .capacity(10_000)
            .error_rate(0.01)
            .shards(shards)
            .create_or_open(&mut admin)
            .unwrap();
        for e in [
            old.check_and_insert_many(&mut conn, ["c", "d"])
                .unwrap_err(),
            old.insert(&mut conn, "e").unwrap_err(),
            old.idempotent_batch(["f"])
                .check_and_insert(&mut conn)
                .unwrap_err(),
            old.contains(&mut conn, "a").unwrap_err(),
            old.info(&mut conn).unwrap_err(),
        ] {
            assert!(
                matches!(&e, Error::Recreated { name: n } if *n == name),
                "round {round}: {e}"
            );
            assert!(e.to_string().contains("dropped and created again"), "{e}");
            assert!(!e.is_retryable());
        }
        assert_eq!(
            new.contains_many(&mut admin, ["a", "c", "d", "e", "f"])
                .unwrap(),
            [false; 5],
            "round {round}"
        );
        assert!(
            blocks_of(&mut admin, &name, &uid).is_empty(),
            "round {round}"
        );
        assert_eq!(new.count(&mut admin).unwrap(), 0);
        assert!(new.drop(&mut admin).unwrap());
        let left = suite::keys_of(&mut admin, &name);
        assert!(left.is_empty(), "round {round}: {left:?}");
    }
}

/// A sharded handle whose filter was dropped, or dropped and created again
/// (sharded or not), says so: not that one of its shards is lost.
#[test]
fn a_sharded_handle_across_a_drop_or_re_create_says_which() {
    let server = RedisServer::start();
    let mut admin = server.connection();
    let sharded = |conn: &mut redis::Connection, name: &str, shards: u32| {
        BloomFilter::builder(name)
            .capacity(10_000)
            .error_rate(0.01)
            .shards(shards)
            .create_or_open(conn)
            .unwrap()
    };
    // None: dropped only; else created again with that many shards.
    for (round, again) in [None, Some(1u32), Some(2), Some(3)].into_iter().enumerate() {
        let name = format!("s{round}");
        let old = sharded(&mut admin, &name, 3);
        let mut conn = server.connection();
        assert_eq!(
            old.check_and_insert_many(&mut conn, ["a", "b"]).unwrap(),
            [true, true]
        );
        assert!(old.drop(&mut admin).unwrap());
        if let Some(shards) = again {
            sharded(&mut admin, &name, shards);
        }
        let items: Vec<String> = (0..30).map(|i| format!("x{i}")).collect();
        for e in [
            old.check_and_insert_many(&mut conn, &items).unwrap_err(),
            old.check_and_insert(&mut conn, "c").unwrap_err(),
            old.idempotent_batch(&items)
                .check_and_insert(&mut conn)
                .unwrap_err(),
        ] {
            match again {
                None => assert!(
                    matches!(&e, Error::NotFound { name: n } if *n == name),
                    "round {round}: {e}"
                ),
                Some(_) => assert!(
                    matches!(&e, Error::Recreated { name: n } if *n == name),
                    "round {round}: {e}"
                ),
            }
        }
        // A shard lost under a live filter is still said as that.
        let live = sharded(&mut admin, &format!("{name}-live"), 3);
        let lost = format!("rotabloom:{{{}}}:meta", live.shard(1).unwrap().name());
        let _: () = redis::cmd("DEL").arg(&lost).query(&mut admin).unwrap();
        let e = live.check_and_insert_many(&mut conn, &items).unwrap_err();
        let Error::Partial(p) = &e else {
            panic!("round {round}: {e}")
        };
        assert!(
            p.failures
                .iter()
                .all(|f| matches!(f.error, Error::ShardMissing { shard: 1, .. })),
            "round {round}: {e}"
        );
    }
}

#[test]
fn an_async_handle_across_a_re_create_is_refused_and_writes_nothing() {
    let server = RedisServer::start();
    let mut admin = server.connection();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for transactions in [true, false] {
        let old = filter(&mut admin, "ga").with_transactions(transactions);
        let uid = old.info(&mut admin).unwrap().fields["uid"].clone();
        rt.block_on(async {
            let client = redis::Client::open(server.url()).unwrap();
            let mut conn = client.get_multiplexed_async_connection().await.unwrap();
            assert!(old.check_and_insert_async(&mut conn, "a").await.unwrap());
            assert!(old.drop(&mut admin).unwrap());
            let _new = filter(&mut admin, "ga");
            let e = old
                .check_and_insert_many_async(&mut conn, ["b", "c"])
                .await
                .unwrap_err();
            assert!(matches!(e, Error::Recreated { .. }), "{e}");
            let e = old.insert_async(&mut conn, "d").await.unwrap_err();
            assert!(matches!(e, Error::Recreated { .. }), "{e}");
        });
        assert!(blocks_of(&mut admin, "ga", &uid).is_empty());
        assert_eq!(filter(&mut admin, "ga").count(&mut admin).unwrap(), 0);
        assert!(filter(&mut admin, "ga").drop(&mut admin).unwrap());
    }
}

/// The metadata hash deleted while the fence remains (a shard's, or an
/// unsharded filter's): open handles take no write, by either protocol,
/// and say the filter is gone.
#[test]
fn a_filter_whose_metadata_is_deleted_under_its_fence_takes_no_write() {
    let server = RedisServer::start();
    let mut admin = server.connection();
    for transactions in [true, false] {
        let f = filter(&mut admin, "headless").with_transactions(transactions);
        let mut conn = server.connection();
        f.insert_many(&mut conn, ["a", "b"]).unwrap();
        let meta = "rotabloom:{headless}:meta";
        let fence: Option<String> = redis::cmd("GET")
            .arg("rotabloom:{headless}:fence")
            .query(&mut admin)
            .unwrap();
        assert!(fence.is_some(), "the fence is there");
        let uid = f.info(&mut conn).unwrap().fields["uid"].clone();
        let blocks = blocks_of(&mut admin, "headless", &uid);
        assert!(!blocks.is_empty());
        let before: Vec<Vec<u8>> = blocks
            .iter()
            .map(|b| redis::cmd("GET").arg(b).query(&mut admin).unwrap())
            .collect();
        let _: () = redis::cmd("DEL").arg(meta).query(&mut admin).unwrap();
        for e in [
            f.check_and_insert_many(&mut conn, ["c", "d"]).unwrap_err(),
            f.insert(&mut conn, "e").unwrap_err(),
            f.idempotent_batch(["f"]).insert(&mut conn).unwrap_err(),
        ] {
            assert!(matches!(e, Error::NotFound { .. }), "{e}");
        }
        let after: Vec<Vec<u8>> = blocks
            .iter()
            .map(|b| redis::cmd("GET").arg(b).query(&mut admin).unwrap())
            .collect();
        assert_eq!(before, after, "no bit written");
        let _: () = redis::cmd("DEL")
            .arg("rotabloom:{headless}:fence")
            .arg(&blocks)
            .query(&mut admin)
            .unwrap();
        let left = suite::keys_of(&mut admin, "headless");
        assert!(left.iter().all(|k| !k.contains(":gen:")), "{left:?}");
    }
}
