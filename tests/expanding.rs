//! The expanding filter against a real, private redis-server.

#[path = "support/harness.rs"]
mod harness;
#[path = "support/suite.rs"]
mod suite;

use harness::RedisServer;
use rotabloom::{AnyFilter, BloomFilter, Error, ExpandingFilter, Kind, WhenFull};
use std::sync::{Arc, Barrier};

#[test]
fn functional_suite_sync_and_async() {
    let server = RedisServer::start();
    suite::expanding_suite(&mut server.connection(), "s", &|n| {
        suite::keys_of(&mut server.connection(), n)
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut conn = server
            .client()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        suite::expanding_suite_async(&mut conn, "a").await;
    });
}

#[test]
fn false_positive_rate_after_twentyfold_growth_stays_under_the_bound() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let (n0, p) = (10_000u64, 0.01);
    let f = ExpandingFilter::builder("fpr")
        .capacity(n0)
        .error_rate(p)
        .create_or_open(&mut conn)
        .unwrap();
    let members: Vec<String> = (0..20 * n0)
        .map(|i| format!("https://example.com/m/{i}"))
        .collect();
    for chunk in members.chunks(20_000) {
        f.insert_many(&mut conn, chunk).unwrap();
    }
    let info = f.info(&mut conn).unwrap();
    assert_eq!(info.generations.len(), 5);
    assert!(
        f.contains_many(&mut conn, &members)
            .unwrap()
            .iter()
            .all(|&b| b),
        "a false negative"
    );
    let probes = 1_000_000u64;
    let mut fp = 0u64;
    for start in (0..probes).step_by(100_000) {
        let batch: Vec<String> = (start..start + 100_000)
            .map(|i| format!("https://example.org/x/{i}"))
            .collect();
        fp += f
            .contains_many(&mut conn, &batch)
            .unwrap()
            .into_iter()
            .filter(|&b| b)
            .count() as u64;
    }
    let rate = fp as f64 / probes as f64;
    eprintln!(
        "after 20x growth: {} generations, capacities {:?}, measured false-positive rate {rate} (bound {p})",
        info.generations.len(),
        info.generations.iter().map(|g| g.capacity).collect::<Vec<_>>()
    );
    assert!(rate <= p, "{rate}");
}

#[test]
fn sixteen_writers_expand_exactly_as_the_counts_imply() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let n0 = 2_000u64;
    let f = ExpandingFilter::builder("race")
        .capacity(n0)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap();
    let total = 20 * n0 as usize;
    let items: Arc<Vec<String>> = Arc::new(
        (0..total)
            .map(|i| format!("https://race.example/{i}"))
            .collect(),
    );
    let writers = 16;
    let barrier = Arc::new(Barrier::new(writers));
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let (f, items, barrier, client) =
                (f.clone(), items.clone(), barrier.clone(), server.client());
            std::thread::spawn(move || {
                let mut conn = client.get_connection().unwrap();
                barrier.wait();
                // Every item is offered by two writers, starting at different
                // places, in batches of 200.
                let mut new = Vec::new();
                let slice = total / writers;
                for part in [w, (w + writers / 2) % writers] {
                    let idx: Vec<usize> = (part * slice..(part + 1) * slice).collect();
                    for chunk in idx.chunks(200) {
                        let batch: Vec<&str> = chunk.iter().map(|&i| items[i].as_str()).collect();
                        let r = f.check_and_insert_many(&mut conn, batch).unwrap();
                        new.extend(chunk.iter().zip(r).filter(|(_, b)| *b).map(|(&i, _)| i));
                    }
                }
                new
            })
        })
        .collect();
    let mut seen_new = vec![0u8; total];
    for h in handles {
        for i in h.join().unwrap() {
            seen_new[i] += 1;
        }
    }
    assert!(seen_new.iter().all(|&c| c <= 1), "an item was new twice");
    let total_new: u64 = seen_new.iter().map(|&c| u64::from(c)).sum();

    let info = f.info(&mut conn).unwrap();
    let gens = &info.generations;
    assert_eq!(info.count, total_new);
    // Every frozen generation holds exactly its capacity, the newest less:
    // the generation count is exactly what the inserted count implies.
    let mut left = total_new;
    let mut implied = 0;
    while left > 0 {
        let cap = n0 << implied;
        implied += 1;
        if left < cap {
            break;
        }
        left -= cap;
    }
    if left == 0 {
        implied += 1; // a full newest generation is frozen at once
    }
    assert_eq!(gens.len(), implied, "{gens:?}");
    for (i, g) in gens.iter().enumerate() {
        assert_eq!(g.capacity, n0 << i);
        if i + 1 < gens.len() {
            assert_eq!(g.count, g.capacity);
        } else {
            assert!(g.count < g.capacity);
        }
    }
    assert_eq!(
        info.epoch,
        gens.len() as u64 - 1,
        "one expansion per generation"
    );
    assert!(
        f.contains_many(&mut conn, items.iter())
            .unwrap()
            .iter()
            .all(|&b| b),
        "an item is missing"
    );

    // No orphan keys: the metadata, the generations' blocks and the next
    // generation's blocks (allocated ahead of need), nothing else.
    let uid = &info.fields["uid"];
    let next_seq: u64 = info.fields["next_seq"].parse().unwrap();
    for key in suite::keys_of(&mut conn, "race") {
        if key == "rotabloom:{race}:meta" || key == "rotabloom:{race}:fence" {
            continue;
        }
        let seq: u64 = key
            .strip_prefix(&format!("rotabloom:{{race}}:gen:{uid}-"))
            .and_then(|rest| rest.split(':').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("orphan key {key}"));
        assert!(
            gens.iter().any(|g| g.seq == seq) || seq == next_seq,
            "orphan key {key}"
        );
    }
    eprintln!(
        "16 writers, {total} items offered twice each: {total_new} new exactly once, {} generations {:?}",
        gens.len(),
        gens.iter().map(|g| (g.capacity, g.count)).collect::<Vec<_>>()
    );
}

#[test]
fn a_stale_writer_never_writes_into_a_frozen_generation() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let stale = ExpandingFilter::builder("stale")
        .capacity(1000)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap();
    stale
        .insert_many(&mut conn, (0..100).map(|i| format!("a{i}")))
        .unwrap();
    // Another process expands.
    let other = ExpandingFilter::open(&mut conn, "stale").unwrap();
    assert!(other.expand(&mut conn).unwrap());
    let before = other.info(&mut conn).unwrap();
    // The stale handle still believes generation 0 is the newest.
    assert_eq!(stale.generations().len(), 1);
    let new = stale
        .check_and_insert_many(&mut conn, (0..50).map(|i| format!("b{i}")))
        .unwrap();
    assert!(new.iter().all(|&b| b));
    let after = other.info(&mut conn).unwrap();
    assert_eq!(
        after.generations[0].set_bits, before.generations[0].set_bits,
        "the frozen generation changed"
    );
    assert_eq!(after.generations[0].count, 100);
    assert_eq!(after.generations[1].count, 50);
    assert_eq!(
        stale.generations().len(),
        2,
        "the stale handle caught up within the call"
    );
    // An item of the frozen generation is still seen, and not re-inserted.
    assert!(!stale.check_and_insert(&mut conn, "a7").unwrap());
    assert_eq!(other.count(&mut conn).unwrap(), 150);
}

#[test]
fn concurrent_manual_expansion_happens_once() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = ExpandingFilter::builder("once")
        .capacity(1000)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap();
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (f, barrier, client) = (f.clone(), barrier.clone(), server.client());
            std::thread::spawn(move || {
                let mut conn = client.get_connection().unwrap();
                // A private handle with the same view as everyone else.
                let mine = ExpandingFilter::open(&mut conn, f.name()).unwrap();
                barrier.wait();
                mine.expand(&mut conn).unwrap()
            })
        })
        .collect();
    let expanded = handles
        .into_iter()
        .filter(|_| true)
        .map(|h| h.join().unwrap())
        .filter(|&b| b)
        .count();
    assert_eq!(expanded, 1);
    assert_eq!(f.info(&mut conn).unwrap().generations.len(), 2);
}

#[test]
fn limits_are_typed_errors_and_lose_nothing() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = ExpandingFilter::builder("lim")
        .capacity(100)
        .error_rate(0.01)
        .max_generations(2)
        .create_or_open(&mut conn)
        .unwrap();
    let items: Vec<String> = (0..400).map(|i| format!("l{i}")).collect();
    let e = f.insert_many(&mut conn, &items).unwrap_err();
    // The items before the limit keep their answers; the rest are
    // refused by index, with the limit as the cause.
    let Error::Partial(p) = &e else {
        panic!("not a partial outcome: {e}");
    };
    assert!(
        matches!(&p.failures[..], [fail] if matches!(fail.error, Error::LimitReached { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("max_generations = 2"), "{e}");
    let answered = p.answers.iter().filter(|a| a.is_some()).count();
    assert!(answered >= 300, "{answered} answered: {e}");
    assert_eq!(answered + p.refused().len(), items.len(), "{e}");
    let info = f.info(&mut conn).unwrap();
    assert_eq!(info.generations.len(), 2);
    assert_eq!(info.count, 300, "both generations are exactly full");
    // What went in is still found; queries keep working at the limit.
    let present = f.contains_many(&mut conn, &items).unwrap();
    assert!(present.iter().filter(|&&b| b).count() >= 300);
    assert!(matches!(
        f.expand(&mut conn),
        Err(Error::LimitReached { .. })
    ));

    let e = ExpandingFilter::builder("bytes")
        .capacity(100_000)
        .error_rate(0.01)
        .max_bytes(1000)
        .spec()
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "max_bytes",
                ..
            }
        ),
        "{e}"
    );
    for (g, r) in [(0.5, 0.5), (2.0, 1.0), (2.0, 0.0), (f64::NAN, 0.5)] {
        let e = ExpandingFilter::builder("x")
            .capacity(10)
            .growth(g)
            .tightening(r)
            .spec()
            .unwrap_err();
        assert!(matches!(e, Error::InvalidParameter { .. }), "{e}");
    }
    let e = ExpandingFilter::builder("lim")
        .capacity(100)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(
        matches!(&e, Error::ParameterMismatch { field, .. } if field == "max_generations"),
        "{e}"
    );
}

#[test]
fn the_next_generation_is_allocated_ahead_of_need_in_small_steps() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = ExpandingFilter::builder("pre")
        .capacity(10_000)
        .error_rate(0.01)
        .max_block_bits(1 << 14)
        .create_or_open(&mut conn)
        .unwrap();
    let info = f.info(&mut conn).unwrap();
    let uid = info.fields["uid"].clone();
    // Created full-sized, block by block.
    assert!(info.generations[0].blocks > 1);
    let g = &info.generations[0];
    assert_eq!(
        info.memory_bytes,
        u64::from(g.blocks) * (g.bits / u64::from(g.blocks)).div_ceil(8)
    );
    let next_block = format!("rotabloom:{{pre}}:gen:{uid}-1:0");
    f.insert_many(&mut conn, (0..4_000).map(|i| format!("p{i}")))
        .unwrap();
    let len: u64 = redis::cmd("STRLEN")
        .arg(&next_block)
        .query(&mut conn)
        .unwrap();
    assert_eq!(len, 0, "not before half of the capacity");
    f.insert_many(&mut conn, (4_000..6_000).map(|i| format!("p{i}")))
        .unwrap();
    let len: u64 = redis::cmd("STRLEN")
        .arg(&next_block)
        .query(&mut conn)
        .unwrap();
    assert!(
        len > 0,
        "allocated once the newest passed half its capacity"
    );
    assert_eq!(f.generations().len(), 1, "but not yet in use");
    // Once in use, it is exactly the size the metadata says.
    f.insert_many(&mut conn, (6_000..11_000).map(|i| format!("p{i}")))
        .unwrap();
    let info = f.info(&mut conn).unwrap();
    let g1 = &info.generations[1];
    assert_eq!(len, (g1.bits / u64::from(g1.blocks)).div_ceil(8));
}

#[test]
fn expanding_into_a_huge_generation_does_not_stall_redis() {
    // The next generation is ~350 MB. Allocated in one command (as the
    // first write into it would without allocation ahead of need), Redis
    // would stop for the whole allocation; the control below shows one.
    // What is checked is what each command allocates, not how long it
    // took (a loaded machine stretches any command): every command is
    // logged (SLOWLOG at 0 µs, scripts' commands included), and a
    // SETRANGE at offset o or a SETBIT at bit b makes its key o + 1 or
    // b / 8 + 1 bytes long at most.
    let server = RedisServer::start();
    let mut conn = server.connection();
    // (command, bytes it may allocate, µs) of each logged command.
    let logged = |conn: &mut redis::Connection| -> Vec<(String, u64, u64)> {
        let entries: Vec<redis::Value> = redis::cmd("SLOWLOG")
            .arg("GET")
            .arg(-1)
            .query(conn)
            .unwrap();
        let text = |v: Option<&redis::Value>| match v {
            Some(redis::Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        };
        entries
            .into_iter()
            .filter_map(|e| match e {
                redis::Value::Array(parts) => {
                    let micros = match parts.get(2) {
                        Some(redis::Value::Int(us)) => *us as u64,
                        _ => 0,
                    };
                    let Some(redis::Value::Array(args)) = parts.get(3) else {
                        return None;
                    };
                    let name = text(args.first()).to_ascii_uppercase();
                    let at = text(args.get(2)).parse::<u64>().ok();
                    let bytes = match (name.as_str(), at) {
                        ("SETRANGE", Some(o)) => o + 1,
                        ("SETBIT", Some(b)) => b / 8 + 1,
                        _ => 0,
                    };
                    Some((format!("{name} {}", text(args.get(1))), bytes, micros))
                }
                _ => None,
            })
            .collect()
    };
    let f = ExpandingFilter::builder("huge")
        .capacity(10_000_000)
        .error_rate(0.001)
        .growth(16.0)
        .create_or_open(&mut conn)
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .arg("slowlog-max-len")
        .arg(100_000)
        .query(&mut conn)
        .unwrap();
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut conn).unwrap();
    assert!(f.expand(&mut conn).unwrap());
    let info = f.info(&mut conn).unwrap();
    let newest = info.generations.last().unwrap();
    assert!(newest.bits / 8 > 300_000_000, "{newest:?}");
    let block = (newest.bits / u64::from(newest.blocks)).div_ceil(8);
    let full = u64::from(newest.blocks) * block;
    assert_eq!(newest.memory_bytes, full, "allocated before use");
    f.check_and_insert_many(&mut conn, (0..10_000).map(|i| format!("h{i}")))
        .unwrap();
    let expansion = logged(&mut conn);
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut conn).unwrap();
    let allocations: Vec<&(String, u64, u64)> = expansion
        .iter()
        .filter(|(_, bytes, _)| *bytes > 0)
        .collect();
    assert!(
        allocations.len() >= usize::try_from(newest.blocks).unwrap(),
        "the generation of {} blocks was not allocated block by block: {allocations:?}",
        newest.blocks
    );
    let largest = allocations
        .iter()
        .max_by_key(|(_, bytes, _)| *bytes)
        .map(|e| (*e).clone())
        .unwrap();
    // Control: the same size allocated by one command is caught.
    let _: () = redis::cmd("SETBIT")
        .arg("control")
        .arg(newest.bits - 1)
        .arg(1)
        .query(&mut conn)
        .unwrap();
    let control = logged(&mut conn)
        .into_iter()
        .find(|(c, _, _)| c.starts_with("SETBIT"))
        .unwrap();
    eprintln!(
        "one command allocating {} MB: {} us; the expansion's largest allocation: {largest:?}",
        control.1 / 1_000_000,
        control.2
    );
    assert!(
        control.1 >= newest.bits / 8,
        "the control was not measured: {control:?}"
    );
    assert!(
        largest.1 <= block,
        "a command of the expansion ({largest:?}) allocated more than a block ({block} bytes)"
    );
}

/// `when_full = expand`: eight writers hit a full base filter together; it
/// is converted once, grows, and no item is answered new twice; the whole
/// filter stays near its bound (twice the base filter's rate).
#[test]
fn when_full_expand_converts_a_full_base_filter_once_under_concurrent_writers() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let (cap, writers, distinct) = (20_000u64, 8usize, 160_000usize);
    BloomFilter::builder("wf")
        .capacity(cap)
        .error_rate(0.001)
        .create_or_open(&mut conn)
        .unwrap();
    let items: Vec<String> = (0..distinct)
        .map(|i| format!("https://example.com/wf/{i}"))
        .collect();
    let all = suite::offered_twice(&server.client(), writers, &items, 100, |c| {
        let f = AnyFilter::open(c, "wf")
            .unwrap()
            .with_when_full(WhenFull::Expand);
        Box::new(move |c, part| f.check_and_insert_many(c, part).unwrap())
    });
    // Taken as seen although new: false positives at insertion. The bound
    // is 0.2%; the base filter, overfilled eightfold, would take most.
    let missed = distinct - all.len();
    assert!(
        missed <= distinct / 250,
        "{missed} of {distinct} new items taken as seen"
    );
    let f = AnyFilter::open(&mut conn, "wf").unwrap();
    assert_eq!(f.kind(), Kind::Expanding);
    let gens = f.info(&mut conn).unwrap().generations.len();
    assert!(gens >= 3);
    eprintln!("when_full = expand, 8 writers: {distinct} new items, {missed} taken as seen, {gens} generations");
    assert!(matches!(
        BloomFilter::open(&mut conn, "wf"),
        Err(Error::KindMismatch { .. })
    ));

    // A typed base-filter handle cannot follow the change: it refuses, as
    // with `error`, and leaves the filter a base filter.
    let b = BloomFilter::builder("wf-typed")
        .capacity(100)
        .error_rate(0.001)
        .create_or_open(&mut conn)
        .unwrap()
        .with_when_full(WhenFull::Expand);
    let hundred: Vec<String> = (0..100).map(|i| format!("t{i}")).collect();
    b.insert_many(&mut conn, &hundred).unwrap();
    assert!(matches!(
        b.insert(&mut conn, "more"),
        Err(Error::Full { .. })
    ));
    assert_eq!(
        AnyFilter::open(&mut conn, "wf-typed").unwrap().kind(),
        Kind::Bloom
    );
}

/// A conversion writes `kind`, `epoch` (the old one + 1) and the expanding
/// parameters, and leaves every other field as it was: `gens`,
/// `next_seq`, generation 0's fields, the base filter's leftovers
/// (FORMAT.md §8.10). The fence follows the new epoch, and a handle of the
/// base filter refuses it afterwards.
#[test]
fn a_conversion_changes_only_the_kind_the_epoch_and_the_expanding_parameters() {
    use std::collections::HashMap;
    let server = RedisServer::start();
    let mut conn = server.connection();
    let b = BloomFilter::builder("cv")
        .capacity(1000)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap();
    b.insert_many(&mut conn, &["a", "b", "c"]).unwrap();
    let hash = |conn: &mut redis::Connection| -> HashMap<String, String> {
        redis::cmd("HGETALL")
            .arg("rotabloom:{cv}:meta")
            .query(conn)
            .unwrap()
    };
    let before = hash(&mut conn);
    let f = ExpandingFilter::builder("cv")
        .max_generations(8)
        .convert_bloom(&mut conn)
        .unwrap();
    let after = hash(&mut conn);
    let epoch: u64 = before["epoch"].parse().unwrap();
    assert_eq!(after["epoch"], (epoch + 1).to_string());
    assert_eq!(after["kind"], "expanding");
    assert_eq!(after["max_generations"], "8");
    let params = [
        "capacity",
        "error_rate",
        "growth",
        "tightening",
        "max_generations",
        "max_bytes",
        "max_bits",
        "max_block_bits",
        "backend",
    ];
    let written = |k: &str| k == "epoch" || k == "kind" || params.contains(&k);
    for (k, v) in &before {
        if !written(k) {
            assert_eq!(after.get(k), Some(v), "{k} changed");
        }
    }
    for k in after.keys() {
        assert!(before.contains_key(k) || written(k), "{k} is new");
    }
    let fence: String = redis::cmd("GET")
        .arg("rotabloom:{cv}:fence")
        .query(&mut conn)
        .unwrap();
    assert_eq!(fence, format!("{}:{}:0", after["uid"], epoch + 1));
    assert!(f.contains(&mut conn, "a").unwrap());
    assert!(matches!(
        b.insert(&mut conn, "d"),
        Err(Error::KindMismatch { .. })
    ));
}
