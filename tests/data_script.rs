//! The data script (`src/lua/data.lua`) at the server, against a real,
//! private redis-server: the bits it sets are exactly the item positions of
//! the hashing module, however its calls cut a batch into commands; every
//! block it touches is checked (missing, short, another type) before a bit
//! is written; the fence and the exactly-once record it writes.

#[path = "support/harness.rs"]
mod harness;

use harness::RedisServer;
use rotabloom::{BloomFilter, Error, ItemHash};
use std::collections::BTreeSet;

fn items(tag: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("https://example.com/{tag}/{i}"))
        .collect()
}

/// A filter of several blocks: small blocks, so that a batch touches all of
/// them in one call.
fn filter(conn: &mut redis::Connection, name: &str) -> BloomFilter {
    BloomFilter::builder(name)
        .capacity(2_000)
        .error_rate(0.001)
        .max_block_bits(4_096)
        .create_or_open(conn)
        .unwrap()
}

struct Shape {
    uid: String,
    blocks: u32,
    block_bits: u64,
    k: u32,
}

fn shape(f: &BloomFilter, conn: &mut redis::Connection) -> Shape {
    let info = f.info(conn).unwrap();
    let g = &info.generations[0];
    Shape {
        uid: info.fields["uid"].clone(),
        blocks: g.blocks,
        block_bits: g.bits / u64::from(g.blocks),
        k: g.hashes,
    }
}

fn block_key(name: &str, uid: &str, block: u32) -> String {
    format!("rotabloom:{{{name}}}:gen:{uid}-0:{block}")
}

/// Every (block, bit) the items' positions name, from the hashing module.
fn expected(s: &Shape, items: &[String]) -> BTreeSet<(u32, u64)> {
    items
        .iter()
        .flat_map(|it| {
            let h = ItemHash::of(it);
            let b = h.block(s.blocks);
            h.positions(s.block_bits, s.k).map(move |p| (b, p))
        })
        .collect()
}

/// Every (block, bit) set in the filter's blocks (bit 0 is the high bit of
/// byte 0, as `BITFIELD`/`SETBIT` count).
fn set_bits(conn: &mut redis::Connection, name: &str, s: &Shape) -> BTreeSet<(u32, u64)> {
    let mut out = BTreeSet::new();
    for b in 0..s.blocks {
        let bytes: Vec<u8> = redis::cmd("GET")
            .arg(block_key(name, &s.uid, b))
            .query(conn)
            .unwrap();
        for (i, byte) in bytes.iter().enumerate() {
            for j in 0..8 {
                if byte & (0x80 >> j) != 0 {
                    out.insert((b, i as u64 * 8 + j));
                }
            }
        }
    }
    out
}

/// A batch of 1,200 items over 8 blocks (three calls of the script, each
/// cut into many `BITFIELD`s per block) and single items (one call, one
/// block each) set exactly the bits their positions name: none missing,
/// none more.
#[test]
fn the_script_sets_exactly_the_bits_of_the_items_positions() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = filter(&mut conn, "bits");
    let s = shape(&f, &mut conn);
    assert!(s.blocks >= 8, "{} blocks", s.blocks);
    let batch = items("batch", 1_200);
    let new = f
        .idempotent_batch(&batch)
        .check_and_insert(&mut conn)
        .unwrap();
    assert_eq!(new.len(), batch.len());
    let singles = items("single", 10);
    for it in &singles {
        f.insert(&mut conn, it).unwrap();
    }
    let mut all = batch.clone();
    all.extend(singles);
    assert_eq!(set_bits(&mut conn, "bits", &s), expected(&s, &all));
    // And read back through the script: every item present.
    let back = f.contains_many(&mut conn, &all[..15]).unwrap();
    assert!(back.iter().all(|&b| b), "{back:?}");
}

/// What a damaged block does to each data call: a missing, empty or short
/// block is missing data, another type is named; and nothing is written
/// (no count, no bit, the block not made again).
#[test]
fn every_damaged_block_is_named_and_nothing_is_written() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let damages = ["deleted", "empty", "short", "list", "hash", "zset"];
    for (n, damage) in damages.iter().enumerate() {
        let name = format!("dmg{n}");
        let f = filter(&mut conn, &name);
        let s = shape(&f, &mut conn);
        // An item in block 0, the damaged one.
        let item = items(damage, 200)
            .into_iter()
            .find(|it| ItemHash::of(it).block(s.blocks) == 0)
            .unwrap();
        let key = block_key(&name, &s.uid, 0);
        let _: () = redis::cmd("DEL").arg(&key).query(&mut conn).unwrap();
        let mut damage_cmd = match *damage {
            "deleted" => None,
            "empty" => Some(redis::cmd("SET").arg(&key).arg("").clone()),
            "short" => Some(redis::cmd("SET").arg(&key).arg("abc").clone()),
            "list" => Some(redis::cmd("RPUSH").arg(&key).arg("x").clone()),
            "hash" => Some(redis::cmd("HSET").arg(&key).arg("f").arg("v").clone()),
            _ => Some(redis::cmd("ZADD").arg(&key).arg(1).arg("m").clone()),
        };
        if let Some(c) = damage_cmd.as_mut() {
            let _: () = c.query(&mut conn).unwrap();
        }
        let dump_before: Option<Vec<u8>> = redis::cmd("DUMP").arg(&key).query(&mut conn).unwrap();
        let calls: [(&str, rotabloom::Result<Vec<bool>>); 4] = [
            ("insert", f.insert(&mut conn, &item).map(|b| vec![b])),
            (
                "check_and_insert",
                f.check_and_insert(&mut conn, &item).map(|b| vec![b]),
            ),
            ("contains", f.contains(&mut conn, &item).map(|b| vec![b])),
            (
                "exactly once",
                f.idempotent_batch([&item]).check_and_insert(&mut conn),
            ),
        ];
        for (what, got) in calls {
            let ok = match (&got, *damage) {
                (Err(Error::MissingData { keys, .. }), "deleted" | "empty" | "short") => {
                    *keys == vec![key.clone()]
                }
                (Err(Error::WrongType { key: k, found, .. }), t) => *k == key && found == t,
                _ => false,
            };
            assert!(ok, "{damage} block, {what}: {got:?}");
        }
        let dump_after: Option<Vec<u8>> = redis::cmd("DUMP").arg(&key).query(&mut conn).unwrap();
        assert_eq!(dump_before, dump_after, "{damage}: the block was changed");
        let count: Option<String> = redis::cmd("HGET")
            .arg(format!("rotabloom:{{{name}}}:meta"))
            .arg("gen.0.count")
            .query(&mut conn)
            .unwrap();
        assert!(
            matches!(count.as_deref(), None | Some("0")),
            "{damage}: {count:?}"
        );
        let others: u64 = (1..s.blocks)
            .map(|b| {
                redis::cmd("BITCOUNT")
                    .arg(block_key(&name, &s.uid, b))
                    .query::<u64>(&mut conn)
                    .unwrap()
            })
            .sum();
        assert_eq!(others, 0, "{damage}: bits written elsewhere");
    }
}

/// A single write makes a missing fence (a filter written before fences
/// existed) with the view's value, and leaves a present one as it is.
#[test]
fn a_single_write_makes_a_missing_fence_and_keeps_a_present_one() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = filter(&mut conn, "fence");
    let fence = "rotabloom:{fence}:fence";
    let before: String = redis::cmd("GET").arg(fence).query(&mut conn).unwrap();
    assert!(f.insert(&mut conn, "a").unwrap());
    let after: String = redis::cmd("GET").arg(fence).query(&mut conn).unwrap();
    assert_eq!(before, after);
    let _: () = redis::cmd("DEL").arg(fence).query(&mut conn).unwrap();
    assert!(f.check_and_insert(&mut conn, "b").unwrap());
    let made: Option<String> = redis::cmd("GET").arg(fence).query(&mut conn).unwrap();
    assert_eq!(made.as_deref(), Some(before.as_str()));
}

/// The exactly-once record: one byte per item of the batch, whatever the
/// calls it took, and it expires within the retry window (the first call
/// makes it, the later ones extend it); a run again answers from it.
#[test]
fn the_record_holds_every_answer_and_expires() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = filter(&mut conn, "rec");
    let _ = f.insert_many(&mut conn, items("old", 3)).unwrap();
    for (n, len) in [1usize, 7, 1_100].into_iter().enumerate() {
        let mut list = items(&format!("r{n}"), len);
        // The first item is held already: answered "not new".
        list[0] = items("old", 1)[0].clone();
        let mut batch = f.idempotent_batch(&list);
        let first = batch.check_and_insert(&mut conn).unwrap();
        assert!(!first[0] && first[1..].iter().all(|&b| b), "{len}");
        let key = format!("rotabloom:{{rec}}:done:{}", batch.token());
        let record: Vec<u8> = redis::cmd("GET").arg(&key).query(&mut conn).unwrap();
        let flags: Vec<u8> = first.iter().map(|&b| if b { b'1' } else { b'0' }).collect();
        assert_eq!(record, flags, "{len}");
        let ttl: i64 = redis::cmd("PTTL").arg(&key).query(&mut conn).unwrap();
        let window = batch.retry_window().as_millis() as i64;
        assert!(ttl > 0 && ttl <= window, "{len}: {ttl}");
        assert_eq!(batch.check_and_insert(&mut conn).unwrap(), first);
    }
}
