//! The circular filter against a real, private redis-server.

#[path = "support/harness.rs"]
mod harness;
#[path = "support/suite.rs"]
mod suite;

use chrono::{DateTime, Duration, TimeZone, Utc};
use harness::RedisServer;
use rotabloom::{CircularFilter, Error, ManualClock, Mode, Rotation, Schedule};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

fn t(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
}

#[test]
fn functional_suite_sync_and_async() {
    let server = RedisServer::start();
    suite::circular_suite(&mut server.connection(), "s", &|n| {
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
        suite::circular_suite_async(&mut conn, "a").await;
    });
}

#[test]
fn sixteen_skewed_cron_hosts_rotate_exactly_once_per_month() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let start = t(2026, 1, 15, 12, 0);
    let truth = ManualClock::new(start);
    let f = CircularFilter::builder("cron")
        .generations(3)
        .capacity(1000)
        .schedule("monthly:1@00:00")
        .clock(Arc::new(truth.clone()))
        .create_or_open(&mut conn)
        .unwrap();
    let hosts = 16;
    // Every host's clock is off by up to five minutes, both ways.
    let skews: Vec<i64> = (0..hosts).map(|h| (h as i64 * 37) % 601 - 300).collect();
    let schedule: Schedule = "monthly:1@00:00".parse().unwrap();
    // Each host's cron fires every 2 minutes from 10 minutes before to 10
    // minutes after each boundary (by its own clock), plus once mid-month.
    let mut instants = Vec::new();
    let first = schedule.period(start) + 1;
    for k in first..first + 24 {
        let b = schedule.boundary(k);
        for m in (-10..=10).step_by(2) {
            instants.push(b + Duration::minutes(m));
        }
        instants.push(b + Duration::days(14));
    }
    let rotations = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(hosts));
    let instants = Arc::new(instants);
    let handles: Vec<_> = (0..hosts)
        .map(|h| {
            let (client, barrier, instants, rotations) = (
                server.client(),
                barrier.clone(),
                instants.clone(),
                rotations.clone(),
            );
            let skew = Duration::seconds(skews[h]);
            std::thread::spawn(move || {
                let mut conn = client.get_connection().unwrap();
                let clock = ManualClock::new(instants[0]);
                let host = CircularFilter::open(&mut conn, "cron")
                    .unwrap()
                    .with_clock(Arc::new(clock.clone()));
                for &at in instants.iter() {
                    clock.set(at + skew);
                    barrier.wait();
                    match host.rotate_if_due(&mut conn).unwrap() {
                        Rotation::Rotated { rotations: r, .. } => {
                            rotations.fetch_add(u64::from(r), Ordering::SeqCst);
                        }
                        Rotation::NotDue { next_at } => {
                            assert!(next_at > at + skew - Duration::days(32))
                        }
                        Rotation::Superseded { .. } => {
                            unreachable!("scheduled rotations are never superseded")
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(rotations.load(Ordering::SeqCst), 24);
    let info = f.info(&mut conn).unwrap();
    assert_eq!(info.epoch, 24);
    assert_eq!(info.generations.len(), 3);
    eprintln!(
        "16 skewed hosts over 24 months: {} rotations, epoch {}",
        rotations.load(Ordering::SeqCst),
        info.epoch
    );
}

/// Inserts an item in the middle of period j, then probes just before and
/// at every later boundary (running `rotate_if_due` first, as cron would).
/// Returns (j, the last period in which it was seen, the first period at
/// whose start it was gone).
fn window(mode: Mode, n: u32) -> (i64, i64, i64) {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let schedule: Schedule = "monthly:1@00:00".parse().unwrap();
    let clock = ManualClock::new(t(2024, 1, 10, 0, 0));
    let f = CircularFilter::builder("win")
        .generations(n)
        .mode(mode)
        .capacity(1000)
        .schedule("monthly:1@00:00")
        .clock(Arc::new(clock.clone()))
        .create_or_open(&mut conn)
        .unwrap();
    let inserted_at = t(2024, 2, 20, 12, 0); // across 29 February
    let j = schedule.period(inserted_at);
    clock.set(inserted_at);
    f.rotate_if_due(&mut conn).unwrap();
    assert!(f.check_and_insert(&mut conn, "item").unwrap());
    let mut last_seen = j;
    let mut first_gone = None;
    for k in j + 1..=j + i64::from(n) + 1 {
        for probe in [
            schedule.boundary(k) - Duration::seconds(1),
            schedule.boundary(k),
        ] {
            clock.set(probe);
            f.rotate_if_due(&mut conn).unwrap();
            f.insert(&mut conn, format!("noise-{probe}")).unwrap();
            let seen = f.contains(&mut conn, "item").unwrap();
            match (seen, first_gone) {
                (true, None) => last_seen = schedule.period(probe),
                (true, Some(_)) => panic!("seen again at {probe} after it was gone"),
                (false, None) => {
                    assert_eq!(probe, schedule.boundary(k), "gone only at a boundary");
                    first_gone = Some(k);
                }
                (false, Some(_)) => {}
            }
        }
    }
    (j, last_seen, first_gone.expect("never forgotten"))
}

#[test]
fn window_boundaries_insert_newest_query_all() {
    let (j, last, gone) = window(Mode::InsertNewestQueryAll, 3);
    eprintln!("insert-newest-query-all, N = 3: inserted in period {j}, seen through period {last}, gone from period {gone}");
    assert_eq!((last, gone), (j + 2, j + 3));
}

#[test]
fn window_boundaries_insert_all_query_oldest() {
    let (j, last, gone) = window(Mode::InsertAllQueryOldest, 4);
    eprintln!("insert-all-query-oldest, N = 4: inserted in period {j}, seen through period {last}, gone from period {gone}");
    assert_eq!((last, gone), (j + 3, j + 4));
}

#[test]
fn missed_runs_are_caught_up_at_most_n_times() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let clock = ManualClock::new(t(2026, 1, 5, 0, 0));
    let f = CircularFilter::builder("missed")
        .generations(4)
        .capacity(100)
        .schedule("monthly:1@00:00")
        .clock(Arc::new(clock.clone()))
        .create_or_open(&mut conn)
        .unwrap();
    f.insert(&mut conn, "old").unwrap();
    assert_eq!(
        f.rotate_if_due(&mut conn).unwrap(),
        Rotation::NotDue {
            next_at: t(2026, 2, 1, 0, 0)
        }
    );
    clock.set(t(2026, 3, 15, 0, 0)); // February's and March's runs were missed
    let r = f.rotate_if_due(&mut conn).unwrap();
    assert!(
        matches!(r, Rotation::Rotated { rotations: 2, epoch: 2, next_at: Some(n) } if n == t(2026, 4, 1, 0, 0)),
        "{r:?}"
    );
    assert!(f.contains(&mut conn, "old").unwrap());
    clock.set(t(2027, 1, 1, 0, 0)); // ten months later: the window is empty
    let r = f.rotate_if_due(&mut conn).unwrap();
    assert!(
        matches!(
            r,
            Rotation::Rotated {
                rotations: 4,
                epoch: 6,
                ..
            }
        ),
        "{r:?}"
    );
    assert!(!f.contains(&mut conn, "old").unwrap());
    assert!(matches!(
        f.rotate_if_due(&mut conn).unwrap(),
        Rotation::NotDue { .. }
    ));
    // A host whose clock is behind never rotates backwards.
    let r = f.rotate_if_due_at(&mut conn, t(2026, 6, 1, 0, 0)).unwrap();
    assert!(matches!(r, Rotation::NotDue { .. }), "{r:?}");
}

#[test]
fn concurrent_manual_rotations_with_the_same_epoch_rotate_once() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = CircularFilter::builder("cas")
        .generations(3)
        .capacity(100)
        .create_or_open(&mut conn)
        .unwrap();
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (barrier, client) = (barrier.clone(), server.client());
            std::thread::spawn(move || {
                let mut conn = client.get_connection().unwrap();
                let mine = CircularFilter::open(&mut conn, "cas").unwrap();
                barrier.wait();
                mine.rotate(&mut conn).unwrap()
            })
        })
        .collect();
    let results: Vec<Rotation> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        results
            .iter()
            .filter(|r| matches!(r, Rotation::Rotated { .. }))
            .count(),
        1,
        "{results:?}"
    );
    assert!(results.iter().all(|r| matches!(
        r,
        Rotation::Rotated { epoch: 1, .. } | Rotation::Superseded { epoch: 1 }
    )));
    assert_eq!(f.info(&mut conn).unwrap().epoch, 1);
}

#[test]
fn a_hundred_rotations_under_eight_writers_leave_exactly_n_generations() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    for mode in [Mode::InsertNewestQueryAll, Mode::InsertAllQueryOldest] {
        let name = format!("churn-{}", mode.as_str());
        let n = 3;
        let f = CircularFilter::builder(&name)
            .generations(n)
            .mode(mode)
            .capacity(5_000)
            .create_or_open(&mut conn)
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let writes = Arc::new(AtomicU64::new(0));
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let (f, stop, writes, client) =
                    (f.clone(), stop.clone(), writes.clone(), server.client());
                std::thread::spawn(move || {
                    let mut conn = client.get_connection().unwrap();
                    let mut i = 0u64;
                    // Bounded: stops when the rotator is done, or after 20k batches.
                    while !stop.load(Ordering::SeqCst) && i < 20_000 {
                        let batch: Vec<String> = (0..20).map(|j| format!("w{w}-{i}-{j}")).collect();
                        let r = if i.is_multiple_of(2) {
                            f.check_and_insert_many(&mut conn, &batch)
                        } else {
                            f.insert_many(&mut conn, &batch)
                        };
                        // The writers may fill the newest generation before
                        // the rotator comes round (a loaded machine runs it
                        // late): a refusal as full is an answer, not a fault.
                        match r {
                            Ok(_) | Err(rotabloom::Error::Full { .. }) => {}
                            Err(e) => panic!("{e:?}"),
                        }
                        writes.fetch_add(1, Ordering::SeqCst);
                        i += 1;
                    }
                })
            })
            .collect();
        let rotator = CircularFilter::open(&mut conn, &name).unwrap();
        let mut done = 0;
        while done < 100 {
            // Let writers get some batches in between rotations.
            let before = writes.load(Ordering::SeqCst);
            while writes.load(Ordering::SeqCst) < before + 8 {
                // A writer that failed stops writing: say why, not hang.
                if let Some(w) = writers.iter().position(|w| w.is_finished()) {
                    stop.store(true, Ordering::SeqCst);
                    let failed = writers.into_iter().nth(w).map(|w| w.join());
                    panic!("writer {w} ended early: {failed:?}");
                }
                std::thread::yield_now();
            }
            if let Rotation::Rotated { .. } = rotator.rotate(&mut conn).unwrap() {
                done += 1;
            }
        }
        stop.store(true, Ordering::SeqCst);
        for w in writers {
            w.join().unwrap();
        }
        let info = f.info(&mut conn).unwrap();
        assert_eq!(info.epoch, 100);
        let uid = &info.fields["uid"];
        let mut expected: Vec<String> = info
            .generations
            .iter()
            .map(|g| format!("rotabloom:{{{name}}}:gen:{uid}-{}:0", g.seq))
            .collect();
        expected.push(format!("rotabloom:{{{name}}}:meta"));
        expected.push(format!("rotabloom:{{{name}}}:fence"));
        expected.sort();
        let keys = suite::keys_of(&mut conn, &name);
        assert_eq!(
            keys, expected,
            "{mode}: the keyspace holds exactly the live generations and the metadata (hash and fence)"
        );
        eprintln!(
            "{mode}: 100 rotations under 8 writers ({} batches): keys {:?}",
            writes.load(Ordering::SeqCst),
            keys.len()
        );
    }
}

#[test]
fn check_and_insert_is_exactly_once_across_generations_in_both_modes() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    for mode in [Mode::InsertNewestQueryAll, Mode::InsertAllQueryOldest] {
        let name = format!("once-{}", mode.as_str());
        let f = CircularFilter::builder(&name)
            .generations(4)
            .mode(mode)
            .capacity(20_000)
            .create_or_open(&mut conn)
            .unwrap();
        // Half the items go in before two rotations, so they live in older
        // generations; then 8 clients race on all of them.
        let items: Arc<Vec<String>> = Arc::new((0..20_000).map(|i| format!("o{i}")).collect());
        f.insert_many(&mut conn, &items[..10_000]).unwrap();
        f.rotate(&mut conn).unwrap();
        f.rotate(&mut conn).unwrap();
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|c| {
                let (f, items, barrier, client) =
                    (f.clone(), items.clone(), barrier.clone(), server.client());
                std::thread::spawn(move || {
                    let mut conn = client.get_connection().unwrap();
                    barrier.wait();
                    let order: Vec<usize> = (0..items.len())
                        .map(|i| (i + c * 2_500) % items.len())
                        .collect();
                    let mut new = vec![false; items.len()];
                    for chunk in order.chunks(250) {
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
        for i in 0..items.len() {
            let k = results.iter().filter(|r| r[i]).count();
            assert!(k <= 1, "{mode}: item {i} new {k} times");
            if i < 10_000 {
                assert_eq!(
                    k, 0,
                    "{mode}: item {i} from an older generation reported new"
                );
            }
        }
        let total: usize = (10_000..20_000)
            .map(|i| results.iter().filter(|r| r[i]).count())
            .sum();
        assert!(total >= 9_800, "{mode}: {total}");
    }
}

#[test]
fn false_positive_rate_at_full_load_in_both_modes() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let (n, per_period, p) = (4u32, 20_000u64, 0.01);
    for mode in [Mode::InsertNewestQueryAll, Mode::InsertAllQueryOldest] {
        let name = format!("fpr-{}", mode.as_str());
        let f = CircularFilter::builder(&name)
            .generations(n)
            .mode(mode)
            .capacity(per_period)
            .error_rate(p)
            .create_or_open(&mut conn)
            .unwrap();
        // Full load: N periods of distinct items, a rotation after each but
        // the last. The oldest generation of insert-all then holds N periods.
        let mut members = Vec::new();
        for period in 0..n {
            let batch: Vec<String> = (0..per_period).map(|i| format!("m{period}-{i}")).collect();
            f.insert_many(&mut conn, &batch).unwrap();
            members.extend(batch);
            if period + 1 < n {
                f.rotate(&mut conn).unwrap();
            }
        }
        assert!(
            f.contains_many(&mut conn, &members)
                .unwrap()
                .iter()
                .all(|&b| b),
            "{mode}: a false negative"
        );
        let mut fp = 0u64;
        let probes = 1_000_000u64;
        for start in (0..probes).step_by(100_000) {
            let batch: Vec<String> = (start..start + 100_000)
                .map(|i| format!("probe-{i}"))
                .collect();
            fp += f
                .contains_many(&mut conn, &batch)
                .unwrap()
                .into_iter()
                .filter(|&b| b)
                .count() as u64;
        }
        let rate = fp as f64 / probes as f64;
        eprintln!("{mode}: N = {n}, {per_period} items per period, measured false-positive rate at full load {rate} (target {p})");
        // The filter's own rate at full load, from its set bits (the
        // fraction of ones to the k-th power, combined over the
        // generations a query reads), meets the target: that is the sizing.
        let own = f.info(&mut conn).unwrap().false_positive_rate;
        eprintln!("{mode}: rate from the set bits at full load {own:.6}");
        assert!(
            own <= p,
            "{mode}: the filter's rate {own} is above the target {p}"
        );
        // The measurement agrees with it within sampling noise (3 standard
        // deviations of a million probes: 0.0003 at p = 0.01).
        let sigma = (p * (1.0 - p) / probes as f64).sqrt();
        assert!(
            rate <= p + 3.0 * sigma,
            "{mode}: measured {rate} above the target {p}"
        );
    }
}

#[test]
fn lazy_rotation_expires_items_without_cron() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let clock = ManualClock::new(t(2026, 1, 1, 12, 0));
    let f = CircularFilter::builder("lazy")
        .generations(2)
        .capacity(100)
        .schedule("1d")
        .lazy(true)
        .clock(Arc::new(clock.clone()))
        .create_or_open(&mut conn)
        .unwrap();
    assert!(f.check_and_insert(&mut conn, "u").unwrap());
    clock.set(t(2026, 1, 2, 0, 0));
    assert!(
        f.contains(&mut conn, "u").unwrap(),
        "one rotation: still in the window"
    );
    assert_eq!(
        f.epoch(),
        1,
        "the read performed the rotation that came due"
    );
    clock.set(t(2026, 1, 3, 0, 0));
    assert!(
        f.check_and_insert(&mut conn, "u").unwrap(),
        "two rotations: forgotten, new again"
    );
    assert_eq!(f.info(&mut conn).unwrap().epoch, 2);
    // Without lazy rotation nothing moves until rotate_if_due.
    let g = CircularFilter::builder("eager")
        .generations(2)
        .capacity(100)
        .schedule("1d")
        .clock(Arc::new(clock.clone()))
        .create_or_open(&mut conn)
        .unwrap();
    g.insert(&mut conn, "u").unwrap();
    clock.set(t(2026, 1, 10, 0, 0));
    assert!(g.contains(&mut conn, "u").unwrap());
    assert_eq!(g.info(&mut conn).unwrap().epoch, 0);
}

#[test]
fn the_server_clock_is_the_default() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = CircularFilter::builder("srv")
        .generations(2)
        .capacity(100)
        .schedule("1h")
        .create_or_open(&mut conn)
        .unwrap();
    let (secs, _): (i64, i64) = redis::cmd("TIME").query(&mut conn).unwrap();
    let server_now = Utc.timestamp_opt(secs, 0).unwrap();
    match f.rotate_if_due(&mut conn).unwrap() {
        Rotation::NotDue { next_at } => {
            assert!(
                next_at > server_now && next_at <= server_now + Duration::hours(1),
                "{next_at}"
            );
            assert_eq!(f.next_rotation_at(), Some(next_at));
        }
        r => panic!("{r:?}"),
    }
}

#[test]
fn bad_input_and_mismatches_are_typed_errors() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let e = CircularFilter::builder("x")
        .generations(1)
        .capacity(10)
        .spec()
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "generations",
                ..
            }
        ),
        "{e}"
    );
    let e = CircularFilter::builder("x")
        .generations(2)
        .capacity(0)
        .spec()
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "capacity",
                ..
            }
        ),
        "{e}"
    );
    let e = CircularFilter::builder("x")
        .generations(2)
        .capacity(10)
        .schedule("fortnightly")
        .spec()
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "schedule",
                ..
            }
        ),
        "{e}"
    );
    let e = CircularFilter::builder("x")
        .generations(2)
        .capacity(10)
        .lazy(true)
        .spec()
        .unwrap_err();
    assert!(
        matches!(e, Error::InvalidParameter { name: "lazy", .. }),
        "{e}"
    );
    let f = CircularFilter::builder("c")
        .generations(3)
        .capacity(10)
        .schedule("7d")
        .create_or_open(&mut conn)
        .unwrap();
    let e = CircularFilter::builder("c")
        .generations(3)
        .capacity(10)
        .schedule("30d")
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(
        matches!(&e, Error::ParameterMismatch { field, stored, requested, .. } if field == "schedule" && stored == "7d" && requested == "30d"),
        "{e}"
    );
    let e = CircularFilter::builder("c")
        .generations(4)
        .capacity(10)
        .schedule("7d")
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(
        matches!(&e, Error::ParameterMismatch { field, .. } if field == "generations"),
        "{e}"
    );
    let e = rotabloom::BloomFilter::open(&mut conn, "c").unwrap_err();
    assert!(matches!(e, Error::KindMismatch { .. }), "{e}");
    let manual = CircularFilter::builder("m")
        .generations(2)
        .capacity(10)
        .create_or_open(&mut conn)
        .unwrap();
    let e = manual.rotate_if_due(&mut conn).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "schedule",
                ..
            }
        ),
        "{e}"
    );
    drop(f);
}

/// What a client that died after its roll leaves: blocks named in the trash.
fn leave_in_trash(conn: &mut redis::Connection, trash: &str, orphans: &[&str]) {
    for o in orphans {
        let _: () = redis::cmd("SET").arg(o).arg("x").query(conn).unwrap();
        let _: () = redis::cmd("RPUSH").arg(trash).arg(o).query(conn).unwrap();
    }
}

/// A rotation frees the dropped generation one block per command after its
/// atomic step; blocks a crashed client left in the trash list are freed
/// by the next rotation or by drop, and nothing of the filter remains.
#[test]
fn dropped_blocks_are_freed_after_the_rotation_and_leftovers_by_the_next() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let c = CircularFilter::builder("trash")
        .generations(2)
        .capacity(200_000)
        .error_rate(0.01)
        .max_block_bits(1 << 16)
        .create_or_open(&mut conn)
        .unwrap();
    let blocks = |conn: &mut redis::Connection| -> Vec<String> {
        suite::keys_of(conn, "trash")
            .into_iter()
            .filter(|k| k.contains(":gen:"))
            .collect()
    };
    let listed = |conn: &mut redis::Connection, c: &CircularFilter| -> usize {
        let info = c.info(conn).unwrap();
        info.generations.iter().map(|g| g.blocks as usize).sum()
    };
    let before = blocks(&mut conn).len();
    assert!(before > 4, "{before} blocks: the test needs several");
    c.rotate(&mut conn).unwrap();
    // Only the listed generations' blocks (and at most one generation
    // allocated ahead of need) are left; the trash list is gone.
    let after = blocks(&mut conn);
    assert!(after.len() <= before, "{after:?}");
    assert!(after.len() >= listed(&mut conn, &c));
    let trash = "rotabloom:{trash}:trash";
    let exists: bool = redis::cmd("EXISTS").arg(trash).query(&mut conn).unwrap();
    assert!(!exists);

    // A client that died after its rotation left two blocks in the trash.
    let orphans = [
        "rotabloom:{trash}:gen:0000000000000000-90:0",
        "rotabloom:{trash}:gen:0000000000000000-90:1",
    ];
    leave_in_trash(&mut conn, trash, &orphans);
    c.rotate(&mut conn).unwrap();
    let left = blocks(&mut conn);
    assert!(
        orphans.iter().all(|o| !left.contains(&o.to_string())),
        "{left:?}"
    );
    // And a drop frees what a crashed rotation left too.
    leave_in_trash(&mut conn, trash, &orphans);
    assert!(c.drop(&mut conn).unwrap());
    assert_eq!(suite::keys_of(&mut conn, "trash"), Vec::<String>::new());
}
