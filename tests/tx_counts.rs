//! Counts of the guarded transaction (docs/FORMAT.md §8.5.3), against a
//! real, private server: the script queued inside the transaction counts
//! new items with no request after it; an excess goes back after it;
//! within a tenth of capacity the counting is left to the commit after;
//! concurrent writers at capacity never pass it.

#[path = "support/harness.rs"]
mod harness;

use harness::{command_calls, RedisServer};
use rotabloom::{BloomFilter, CircularFilter, Error, Mode};
use std::sync::{Arc, Barrier};

fn items(tag: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{tag}-{i}")).collect()
}

fn count(f: &BloomFilter, conn: &mut redis::Connection) -> u64 {
    f.info(conn)
        .unwrap()
        .generations
        .iter()
        .map(|g| g.count)
        .sum()
}

/// (transactions, commits after them) since `before`: the commit is the
/// only script sent by hash (the guard and the queued script go in full).
fn calls(conn: &mut redis::Connection, before: (u64, u64)) -> (u64, u64) {
    (
        command_calls(conn, "exec") - before.0,
        command_calls(conn, "evalsha") - before.1,
    )
}

fn now(conn: &mut redis::Connection) -> (u64, u64) {
    calls(conn, (0, 0))
}

fn reservations(conn: &mut redis::Connection, name: &str) -> u64 {
    redis::cmd("ZCARD")
        .arg(format!("rotabloom:{{{name}}}:reserved"))
        .query(conn)
        .unwrap()
}

#[test]
fn new_items_are_counted_in_their_transaction_and_an_excess_goes_back_after() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("tc")
        .capacity(100_000)
        .error_rate(0.001)
        .create_or_open(&mut conn)
        .unwrap();
    // 2,500 new items: three transactions, each counting its items
    // itself, and no commit after any.
    let before = now(&mut conn);
    let new = f
        .check_and_insert_many(&mut conn, items("a", 2_500))
        .unwrap();
    assert!(new.iter().all(|&n| n));
    assert_eq!(calls(&mut conn, before), (3, 0), "(transactions, commits)");
    assert_eq!(count(&f, &mut conn), 2_500);
    assert_eq!(reservations(&mut conn, "tc"), 0, "reservations left");
    // 750 seen and 750 new, one of each in turn: the excess of each
    // transaction goes back after it (the cache emptied first: the commit
    // is sent again in full), and the count is exact.
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut conn).unwrap();
    let mixed: Vec<String> = items("a", 750)
        .into_iter()
        .zip(items("b", 750))
        .flat_map(|(a, b)| [a, b])
        .collect();
    let before = now(&mut conn);
    let new = f.insert_many(&mut conn, &mixed).unwrap();
    assert_eq!(new.iter().filter(|&&n| n).count(), 750);
    assert_eq!(calls(&mut conn, before), (2, 2), "(transactions, commits)");
    assert_eq!(count(&f, &mut conn), 3_250);
    assert_eq!(reservations(&mut conn, "tc"), 0, "reservations left");
}

#[test]
fn within_a_tenth_of_capacity_the_commit_after_counts() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("near")
        .capacity(1_000)
        .error_rate(0.0001)
        .create_or_open(&mut conn)
        .unwrap();
    // Up to 850: a tenth of the capacity stays free after it. (A false
    // positive among them would be an excess to take back.)
    let before = now(&mut conn);
    let new = f.check_and_insert_many(&mut conn, items("a", 850)).unwrap();
    let fp = new.iter().filter(|&&n| !n).count() as u64;
    assert_eq!(
        calls(&mut conn, before),
        (1, u64::from(fp > 0)),
        "(transactions, commits)"
    );
    // To 950 with new items only: less than a tenth would be left, so the
    // queued script changes nothing and a commit after the transaction
    // counts the new items exactly and releases the room (with room to
    // spare, new items alone would need no commit after).
    let before = now(&mut conn);
    let new = f.check_and_insert_many(&mut conn, items("b", 100)).unwrap();
    let fp2 = 100 - new.iter().filter(|&&n| n).count() as u64;
    assert_eq!(calls(&mut conn, before), (1, 1), "(transactions, commits)");
    assert_eq!(count(&f, &mut conn), 950 - fp - fp2);
    assert_eq!(reservations(&mut conn, "near"), 0, "reservations left");
}

/// A check-and-insert over a query-all window: its reads of the older
/// generations, then the transaction writing the newest, which counts
/// only there.
#[test]
fn a_window_counts_in_its_newest_generation_only() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = CircularFilter::builder("win")
        .generations(3)
        .capacity(30_000)
        .error_rate(0.01)
        .mode(Mode::InsertNewestQueryAll)
        .schedule("daily@03:00")
        .create_or_open(&mut conn)
        .unwrap();
    f.check_and_insert_many(&mut conn, items("a", 400)).unwrap();
    f.rotate(&mut conn).unwrap();
    let mut batch = items("a", 400);
    batch.extend(items("b", 100));
    let new = f.check_and_insert_many(&mut conn, &batch).unwrap();
    assert_eq!(new.iter().filter(|&&n| n).count(), 100);
    let counts: Vec<u64> = f
        .info(&mut conn)
        .unwrap()
        .generations
        .iter()
        .map(|g| g.count)
        .collect();
    assert_eq!(counts.iter().sum::<u64>(), 500, "{counts:?}");
    assert!(counts.contains(&100), "{counts:?}");
}

/// Eight writers of overlapping batches into a filter of capacity 3,000:
/// the count never passes the capacity, and at the end it is the number of
/// items answered new, exactly (each excess went back). (In 15 runs here
/// they stopped at exactly 3,000 every time.)
#[test]
fn concurrent_writers_at_capacity_count_exactly_and_never_pass_it() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("race")
        .capacity(3_000)
        .error_rate(0.001)
        .create_or_open(&mut conn)
        .unwrap();
    let f = Arc::new(f);
    let start = Arc::new(Barrier::new(8));
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let (f, start) = (Arc::clone(&f), Arc::clone(&start));
            let mut conn = server.connection();
            std::thread::spawn(move || {
                start.wait();
                let mut new = 0u64;
                for b in 0..10 {
                    // Half of each batch is shared with the next writer.
                    let mut batch = items(&format!("w{w}-{b}"), 100);
                    batch.extend(items(&format!("w{}-{b}", (w + 1) % 8), 100));
                    match f.check_and_insert_many(&mut conn, &batch) {
                        Ok(a) => new += a.iter().filter(|&&n| n).count() as u64,
                        Err(Error::Full { answered, .. }) => {
                            new += answered.iter().filter(|&&n| n).count() as u64;
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                new
            })
        })
        .collect();
    let new: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let held = count(&f, &mut conn);
    assert!(held <= 3_000, "the count {held} is past the capacity");
    assert_eq!(held, new, "the count against the items answered new");
    // Refused early by no more than the excess the other writers' last
    // transactions may still owe (docs/FORMAT.md §8.15): 100 each.
    assert!(new >= 3_000 - 7 * 100, "stopped at {new} of 3,000");
    assert_eq!(reservations(&mut conn, "race"), 0, "reservations left");
}
