//! Answers at the seams between features, against a real, private
//! redis-server: capacity under batches and concurrency, a handle that
//! learnt a filter was full and then sees it cleared, a block cut short.

#[path = "support/harness.rs"]
mod harness;

use harness::RedisServer;
use rotabloom::{AnyFilter, BloomFilter, CircularFilter, Error, ExpandingFilter, WhenFull};
use std::sync::{Arc, Barrier};

fn items(tag: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{tag}-{i}")).collect()
}

fn count_of(info: &rotabloom::Info) -> u64 {
    info.generations.iter().map(|g| g.count).sum()
}

/// A batch of new items into a base filter of capacity 100 takes exactly
/// 100, answers them "new", and refuses the rest as an error that carries
/// the answers of what it did handle; never "seen". Through the guarded
/// transaction (a plain batch), the data script (an idempotent batch) and
/// the async path.
#[test]
fn a_batch_stops_exactly_at_capacity_and_refuses_the_rest() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    for (i, how) in ["transaction", "script", "small calls"].iter().enumerate() {
        let f = BloomFilter::builder(format!("cap{i}"))
            .capacity(100)
            .error_rate(0.01)
            .create_or_open(&mut conn)
            .unwrap();
        let batch = items(how, 500);
        let result = match *how {
            "transaction" => f.check_and_insert_many(&mut conn, &batch),
            "script" => f.idempotent_batch(&batch).check_and_insert(&mut conn),
            _ => {
                // One item at a time: the 101st is the first refused.
                let mut out = Vec::new();
                let mut err = None;
                for item in &batch {
                    match f.check_and_insert(&mut conn, item) {
                        Ok(new) => out.push(new),
                        Err(e) => {
                            err = Some(e);
                            break;
                        }
                    }
                }
                match err {
                    Some(Error::Full {
                        name,
                        capacity,
                        count,
                        ..
                    }) => Err(Error::Full {
                        name,
                        capacity,
                        count,
                        answered: out,
                    }),
                    Some(e) => Err(e),
                    None => Ok(out),
                }
            }
        };
        match result {
            Err(Error::Full {
                capacity,
                count,
                answered,
                ..
            }) => {
                assert_eq!((capacity, count), (100, 100), "{how}");
                // Exactly 100 answered new; the others handled are false
                // positives (items the filter already answers present),
                // a few at this rate.
                let fresh = answered.iter().filter(|&&new| new).count();
                assert_eq!(fresh, 100, "{how}");
                assert!(answered.len() < 110, "{how}: {} handled", answered.len());
            }
            other => panic!("{how}: {other:?}"),
        }
        let info = f.info(&mut conn).unwrap();
        assert_eq!(count_of(&info), 100, "{how}");
        // Exactly the first 100 are in; an item present is still
        // answered, an absent one refused.
        let found = f.contains_many(&mut conn, &batch).unwrap();
        let fps = found[110..].iter().filter(|&&x| x).count();
        assert!(found[..100].iter().all(|&x| x), "{how}");
        assert!(fps < 20, "{how}: {fps} of 390 refused items answer present");
        assert!(!f.check_and_insert(&mut conn, &batch[0]).unwrap());
        assert!(f.insert(&mut conn, &batch[0]).is_ok_and(|changed| !changed));
        assert!(matches!(
            f.insert(&mut conn, "one more"),
            Err(Error::Full { ref answered, .. }) if answered.is_empty()
        ));
    }
}

/// Items of a full filter that are already present are answered, not
/// refused: the first refused item is the first that needed room.
#[test]
fn at_capacity_present_items_are_answered_and_the_first_absent_is_refused() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("full")
        .capacity(50)
        .error_rate(0.001)
        .create_or_open(&mut conn)
        .unwrap();
    let first = items("a", 50);
    assert!(f.insert_many(&mut conn, &first).unwrap().iter().all(|&x| x));
    let mut mixed: Vec<String> = first[..20].to_vec();
    mixed.push("brand new".into());
    mixed.extend(first[20..].iter().cloned());
    for script in [false, true] {
        let got = match script {
            false => f.check_and_insert_many(&mut conn, &mixed),
            true => f.idempotent_batch(&mixed).check_and_insert(&mut conn),
        };
        match got {
            Err(Error::Full { answered, .. }) => assert_eq!(answered, vec![false; 20]),
            other => panic!("{other:?}"),
        }
    }
}

/// Eight concurrent writers of distinct items into a filter of capacity
/// 1,000: exactly 1,000 are new across all of them, the count says 1,000,
/// and every writer's items are a prefix answered plus a refusal.
#[test]
fn concurrent_writers_never_take_a_generation_past_capacity() {
    let server = RedisServer::start();
    let cap = 1_000u64;
    for (kind, when) in [("bloom", 0), ("circular", 1)] {
        let name = format!("conc-{kind}");
        let mut conn = server.connection();
        match when {
            0 => {
                BloomFilter::builder(&name)
                    .capacity(cap)
                    .error_rate(0.001)
                    .create_or_open(&mut conn)
                    .unwrap();
            }
            _ => {
                CircularFilter::builder(&name)
                    .generations(3)
                    .capacity(cap)
                    .error_rate(0.001)
                    .create_or_open(&mut conn)
                    .unwrap();
            }
        }
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (client, barrier, name) = (server.client(), Arc::clone(&barrier), name.clone());
                std::thread::spawn(move || {
                    let mut conn = client.get_connection().unwrap();
                    let f = AnyFilter::open(&mut conn, &name).unwrap();
                    barrier.wait();
                    let mut new = 0u64;
                    for round in 0..20 {
                        let batch = items(&format!("{t}-{round}"), 60);
                        let got = match round % 3 {
                            0 => f.idempotent_batch(&batch).check_and_insert(&mut conn),
                            1 => f.insert_many(&mut conn, &batch),
                            _ => f.check_and_insert_many(&mut conn, &batch),
                        };
                        match got {
                            Ok(a) => new += a.iter().filter(|&&x| x).count() as u64,
                            Err(Error::Full { answered, .. }) => {
                                new += answered.iter().filter(|&&x| x).count() as u64
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                    new
                })
            })
            .collect();
        let new: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        let f = AnyFilter::open(&mut conn, &name).unwrap();
        let info = f.info(&mut conn).unwrap();
        let newest = info.generations.last().unwrap().count;
        assert_eq!(newest, cap, "{kind}: the count is the capacity, not more");
        // A false positive can make a distinct item "seen", never "new".
        assert!(new <= cap && new + 5 >= cap, "{kind}: {new} new");
    }
}

/// `when_full = warn` writes on past capacity and says so; `expand` turns
/// a base filter into an expanding one and keeps every item.
#[test]
fn warn_and_expand_keep_their_meaning() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("warn")
        .capacity(100)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap()
        .with_when_full(WhenFull::Warn);
    let batch = items("w", 300);
    let new = f.check_and_insert_many(&mut conn, &batch).unwrap();
    assert!(new.iter().filter(|&&x| x).count() > 250);
    BloomFilter::builder("grow")
        .capacity(100)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap();
    let g = AnyFilter::open(&mut conn, "grow")
        .unwrap()
        .with_when_full(WhenFull::Expand);
    let new = g.check_and_insert_many(&mut conn, &batch).unwrap();
    let fresh = new.iter().filter(|&&x| x).count();
    // None refused; a few false positives at the converted filter's rate.
    assert!(fresh > 290, "{fresh} of 300 new");
    let g = AnyFilter::open(&mut conn, "grow").unwrap();
    assert!(g.expanding().is_some());
    assert!(g
        .contains_many(&mut conn, &batch)
        .unwrap()
        .iter()
        .all(|&x| x));
}

/// A handle that met its filter full keeps no memory of it: once another
/// process clears the filter or rotates in a fresh generation, it writes.
#[test]
fn a_handle_that_met_a_full_filter_writes_after_a_clear_or_a_rotation() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("cleared")
        .capacity(10)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap();
    assert!(matches!(
        f.insert_many(&mut conn, items("a", 20)),
        Err(Error::Full { .. })
    ));
    let other = BloomFilter::builder("cleared")
        .capacity(10)
        .error_rate(0.01)
        .create_or_open(&mut server.connection())
        .unwrap();
    other.clear(&mut server.connection()).unwrap();
    assert!(f.check_and_insert(&mut conn, "after the clear").unwrap());
    let c = CircularFilter::builder("rot")
        .generations(2)
        .capacity(10)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap();
    assert!(matches!(
        c.insert_many(&mut conn, items("b", 20)),
        Err(Error::Full { .. })
    ));
    let other = CircularFilter::builder("rot")
        .generations(2)
        .capacity(10)
        .error_rate(0.01)
        .create_or_open(&mut server.connection())
        .unwrap();
    other.rotate(&mut server.connection()).unwrap();
    assert!(c.check_and_insert(&mut conn, "after the rotation").unwrap());
}

/// An expanding filter reached through the guarded transaction grows at
/// each capacity and holds exactly its capacity in every full generation.
#[test]
fn an_expanding_filter_fills_each_generation_exactly() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = ExpandingFilter::builder("exp")
        .capacity(100)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap();
    let batch = items("e", 1_000);
    for chunk in batch.chunks(150) {
        f.check_and_insert_many(&mut conn, chunk).unwrap();
    }
    let info = f.info(&mut conn).unwrap();
    let gens = &info.generations;
    assert!(gens.len() >= 3);
    for g in &gens[..gens.len() - 1] {
        assert_eq!(
            g.count, g.capacity,
            "a frozen generation holds its capacity"
        );
    }
    assert!(f
        .contains_many(&mut conn, &batch)
        .unwrap()
        .iter()
        .all(|&x| x));
}

/// A block cut shorter than its generation is lost data: every path says
/// so, none answers "absent" for what the lost end held.
#[test]
fn a_truncated_block_is_lost_data_not_zeros() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("cut")
        .capacity(2_000)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap();
    let batch = items("c", 2_000);
    f.insert_many(&mut conn, &batch).unwrap();
    let uid = f.info(&mut conn).unwrap().fields["uid"].clone();
    let key = format!("rotabloom:{{cut}}:gen:{uid}-0:0");
    let whole: Vec<u8> = redis::cmd("GET").arg(&key).query(&mut conn).unwrap();
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg(&whole[..whole.len() / 2])
        .query(&mut conn)
        .unwrap();
    let lost = |r: rotabloom::Result<Vec<bool>>| match r {
        Err(Error::MissingData { keys, .. }) => keys == vec![key.clone()],
        other => panic!("{other:?}"),
    };
    assert!(lost(f.contains_many(&mut conn, &batch)));
    assert!(lost(f.check_and_insert_many(&mut conn, &batch)));
    assert!(lost(f.idempotent_batch(&batch).check_and_insert(&mut conn)));
    assert!(lost(f.contains(&mut conn, &batch[0]).map(|x| vec![x])));
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg(whole)
        .query(&mut conn)
        .unwrap();
    assert!(f
        .contains_many(&mut conn, &batch)
        .unwrap()
        .iter()
        .all(|&x| x));
}

/// Room reserved by a transaction in flight is taken: a write that needs
/// it waits for it (BUSY), and takes the generation as full if it never
/// comes back; a reservation whose writer died lapses at its deadline.
#[test]
fn reserved_room_is_taken_until_released_or_lapsed() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("held")
        .capacity(100)
        .error_rate(0.001)
        .create_or_open(&mut conn)
        .unwrap();
    f.insert_many(&mut conn, items("h", 60)).unwrap();
    // A writer that reserved 40 items and died before its commit.
    let key = "rotabloom:{held}:reserved";
    let now: (i64, i64) = redis::cmd("TIME").query(&mut conn).unwrap();
    let now_ms = now.0 * 1000 + now.1 / 1000;
    let _: () = redis::cmd("ZADD")
        .arg(key)
        .arg(now_ms + 60_000)
        .arg("0:40:deadwriter")
        .query(&mut conn)
        .unwrap();
    let more = items("m", 10);
    for script in [false, true] {
        let got = match script {
            false => f.check_and_insert_many(&mut conn, &more),
            true => f.idempotent_batch(&more).check_and_insert(&mut conn),
        };
        match got {
            Err(Error::Full {
                count, answered, ..
            }) => {
                assert_eq!(count, 60);
                assert!(answered.is_empty(), "{answered:?}");
            }
            other => panic!("{other:?}"),
        }
    }
    // Its deadline passes: the room is free again.
    let _: () = redis::cmd("ZADD")
        .arg(key)
        .arg(now_ms - 1)
        .arg("0:40:deadwriter")
        .query(&mut conn)
        .unwrap();
    assert!(f
        .check_and_insert_many(&mut conn, &more)
        .unwrap()
        .iter()
        .all(|&x| x));
    assert_eq!(count_of(&f.info(&mut conn).unwrap()), 70);
    // A transaction's own reservation is released by its commit.
    let exists: bool = redis::cmd("EXISTS").arg(key).query(&mut conn).unwrap();
    assert!(!exists, "no reservation left behind");
}

/// A filter whose metadata cannot be read can still be dropped, whole:
/// every other operation refuses it, so this is the way out.
#[test]
fn a_filter_with_unreadable_metadata_can_be_dropped_whole() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("bad")
        .capacity(1_000)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap();
    f.idempotent_batch(items("b", 20))
        .check_and_insert(&mut conn)
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg("rotabloom:{bad}:meta")
        .arg("gen.0.count")
        .arg("lots")
        .query(&mut conn)
        .unwrap();
    assert!(matches!(
        AnyFilter::open(&mut conn, "bad"),
        Err(Error::CorruptMetadata { .. })
    ));
    assert!(AnyFilter::drop_unreadable(&mut conn, "bad").unwrap());
    let left: Vec<String> = redis::cmd("KEYS")
        .arg("rotabloom:{bad}:*")
        .query(&mut conn)
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
    assert!(!AnyFilter::drop_unreadable(&mut conn, "bad").unwrap());
}

/// A creation that waits for a replica nobody runs fails at the step that
/// publishes the filter, which is then on the primary, whole; not at its
/// first block, with nothing published and a block left behind.
#[test]
fn a_creation_no_replica_acknowledges_is_published_whole_and_says_so() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let wait = rotabloom::WaitReplicas::new(1, std::time::Duration::from_millis(50)).unwrap();
    let made = BloomFilter::builder("w")
        .capacity(1_000)
        .error_rate(0.01)
        .wait_replicas(wait)
        .create_or_open(&mut conn);
    assert!(
        matches!(made, Err(Error::ReplicasTimeout { .. })),
        "{made:?}"
    );
    let f = AnyFilter::open(&mut conn, "w").unwrap();
    assert!(f.check_and_insert(&mut conn, "x").unwrap());
    let leased: Vec<i64> = redis::cmd("KEYS")
        .arg("rotabloom:{w}:gen:*")
        .query::<Vec<String>>(&mut conn)
        .unwrap()
        .iter()
        .map(|k| redis::cmd("PTTL").arg(k).query(&mut conn).unwrap())
        .collect();
    assert_eq!(leased, vec![-1], "one block, permanent");
}
