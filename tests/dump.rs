//! The library's dump and restore against a real redis-server: a dump
//! that a structural change interrupts is refused, never inconsistent.

#[path = "support/harness.rs"]
mod harness;

use harness::{scan, RedisServer};
use rotabloom::{CircularFilter, Error};
use std::io::Write;

/// A dump file that rotates the filter, through another connection, once
/// the first bytes of bits come in.
struct RotatingSink {
    conn: redis::Connection,
    filter: CircularFilter,
    bytes: Vec<u8>,
    rotated: bool,
}

impl Write for RotatingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // A `D` record (type byte first) starts the bits.
        if !self.rotated && buf.first() == Some(&b'D') {
            self.rotated = true;
            self.filter.rotate(&mut self.conn).expect("rotate");
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_rotation_during_a_dump_fails_it_and_a_quiet_filter_round_trips() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = CircularFilter::builder("w")
        .generations(3)
        .capacity(1000)
        .create_or_open(&mut conn)
        .unwrap();
    let items: Vec<String> = (0..500).map(|i| format!("i{i}")).collect();
    f.insert_many(&mut conn, &items).unwrap();

    let mut sink = RotatingSink {
        conn: server.connection(),
        filter: f.clone(),
        bytes: Vec::new(),
        rotated: false,
    };
    let e = rotabloom::dump::dump(&mut conn, "w", &mut sink).unwrap_err();
    assert!(sink.rotated);
    assert!(matches!(e, Error::Contention { .. }), "{e}");

    // Without interference: the same answers after a restore.
    let mut file = Vec::new();
    let s = rotabloom::dump::dump(&mut conn, "w", &mut file).unwrap();
    assert_eq!(s.items, 500);
    let r = rotabloom::dump::restore(&mut conn, &file[..], Some("w2")).unwrap();
    assert_eq!((r.name.as_str(), r.generations), ("w2", 3));
    let copy = CircularFilter::open(&mut conn, "w2").unwrap();
    assert!(copy
        .contains_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&b| b));
    // The restored instance has its own uid: no key is shared.
    let uid = |name: &str, conn: &mut redis::Connection| -> String {
        redis::cmd("HGET")
            .arg(format!("rotabloom:{{{name}}}:meta"))
            .arg("uid")
            .query(conn)
            .unwrap()
    };
    assert_ne!(uid("w", &mut conn), uid("w2", &mut conn));
    // Never over an existing filter.
    let e = rotabloom::dump::restore(&mut conn, &file[..], None).unwrap_err();
    assert!(matches!(e, Error::AlreadyExists { .. }), "{e}");
}

#[test]
fn copy_string_copies_in_slices_and_refuses_an_existing_target() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    // 3 MiB with bits at the start and the end: the middle slices are
    // zeros, skipped but there.
    let len = 3u64 << 20;
    redis::cmd("SETRANGE")
        .arg("src")
        .arg(0)
        .arg("ab")
        .exec(&mut conn)
        .unwrap();
    redis::cmd("SETRANGE")
        .arg("src")
        .arg(len - 2)
        .arg("yz")
        .exec(&mut conn)
        .unwrap();
    assert_eq!(
        rotabloom::dump::copy_string(&mut conn, "src", "dst").unwrap(),
        len
    );
    let (a, b): (Vec<u8>, Vec<u8>) = redis::pipe()
        .cmd("GET")
        .arg("src")
        .cmd("GET")
        .arg("dst")
        .query(&mut conn)
        .unwrap();
    assert_eq!(a, b);
    assert!(rotabloom::dump::copy_string(&mut conn, "src", "dst").is_err());
    assert_eq!(
        rotabloom::dump::copy_string(&mut conn, "missing", "other").unwrap(),
        0
    );
    let exists: bool = redis::cmd("EXISTS").arg("other").query(&mut conn).unwrap();
    assert!(!exists);
}

#[tokio::test]
async fn dump_and_restore_async() {
    let server = RedisServer::start();
    let mut conn = server
        .client()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let f = rotabloom::BloomFilter::builder("a")
        .capacity(10_000)
        .create_or_open_async(&mut conn)
        .await
        .unwrap();
    let items: Vec<String> = (0..1000).map(|i| format!("a{i}")).collect();
    f.insert_many_async(&mut conn, &items).await.unwrap();
    let mut file = Vec::new();
    rotabloom::dump::dump_async(&mut conn, "a", &mut file)
        .await
        .unwrap();
    let s = rotabloom::dump::restore_async(&mut conn, &file[..], Some("b"))
        .await
        .unwrap();
    assert_eq!(s.items, 1000);
    let b = rotabloom::BloomFilter::open_async(&mut conn, "b")
        .await
        .unwrap();
    let found = b.contains_many_async(&mut conn, &items).await.unwrap();
    assert!(found.iter().all(|&x| x));
    assert_eq!(
        rotabloom::dump::copy_string_async(&mut conn, "nothing", "there")
            .await
            .unwrap(),
        0
    );
}

/// A dump file read in slices of 64 KiB that calls `at` once, when the
/// reading passes `mark` bytes: what the restore wrote before that is in
/// Redis then, and its next write not sent yet.
struct Spy<'a, F: FnMut()> {
    file: &'a [u8],
    pos: usize,
    mark: usize,
    at: Option<F>,
}

impl<F: FnMut()> std::io::Read for Spy<'_, F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos >= self.mark {
            if let Some(mut f) = self.at.take() {
                f();
            }
        }
        let end = self.file.len().min(self.pos + buf.len().min(64 << 10));
        let end = if self.pos < self.mark {
            end.min(self.mark)
        } else {
            end
        };
        let n = end - self.pos;
        buf[..n].copy_from_slice(&self.file[self.pos..end]);
        self.pos = end;
        Ok(n)
    }
}

fn pttl(conn: &mut redis::Connection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(conn).unwrap()
}

/// A dump of about 4 MiB in 4 blocks, every 1 MiB slice with bits set.
fn four_blocks(conn: &mut redis::Connection) -> (Vec<u8>, Vec<String>) {
    let f = rotabloom::BloomFilter::builder("big")
        .capacity(3_000_000)
        .max_block_bits(8 << 20)
        .create_or_open(conn)
        .unwrap();
    let items: Vec<String> = (0..20_000).map(|i| format!("i{i}")).collect();
    f.insert_many(conn, &items).unwrap();
    let mut file = Vec::new();
    let s = rotabloom::dump::dump(conn, "big", &mut file).unwrap();
    assert!(s.blocks >= 3 && s.bytes > 3 << 20, "{s:?}");
    (file, items)
}

#[test]
fn a_restore_in_progress_writes_its_blocks_with_a_lease_that_the_publish_removes() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let (file, items) = four_blocks(&mut conn);
    let mut spy_conn = server.connection();
    let mut during = Vec::new();
    let spy = Spy {
        file: &file,
        pos: 0,
        mark: file.len() / 2,
        at: Some(|| {
            for k in scan(&mut spy_conn, "rotabloom:{copy}:*") {
                during.push((k.clone(), pttl(&mut spy_conn, &k)));
            }
        }),
    };
    rotabloom::dump::restore(&mut conn, spy, Some("copy")).unwrap();
    // Halfway, blocks were there, each with a lease of at most 15 min,
    // and no metadata yet.
    assert!(!during.is_empty());
    for (k, ttl) in &during {
        assert!(k.contains(":gen:"), "{k}");
        assert!(*ttl > 0 && *ttl <= 15 * 60 * 1000, "{k}: {ttl}");
    }
    // Published: every block is permanent.
    let blocks = scan(&mut conn, "rotabloom:{copy}:gen:*");
    assert_eq!(blocks.len(), scan(&mut conn, "rotabloom:{big}:gen:*").len());
    for k in &blocks {
        assert_eq!(pttl(&mut conn, k), -1, "{k}");
    }
    let copy = rotabloom::BloomFilter::open(&mut conn, "copy").unwrap();
    assert!(copy
        .contains_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&b| b));
}

#[test]
fn a_cancelled_restore_deletes_what_it_wrote() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let (file, _) = four_blocks(&mut conn);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut spy_conn = server.connection();
    let mut seen = 0;
    let spy = Spy {
        file: &file,
        pos: 0,
        mark: file.len() / 2,
        at: Some(|| {
            seen = scan(&mut spy_conn, "rotabloom:{copy}:gen:*").len();
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        }),
    };
    let options = rotabloom::dump::RestoreOptions::new()
        .name(Some("copy"))
        .cancel_on(&stop);
    let e = rotabloom::dump::restore_with(&mut conn, spy, options).unwrap_err();
    assert!(matches!(e, Error::Cancelled { .. }), "{e}");
    assert!(seen > 0, "blocks were written before the cancel");
    assert_eq!(scan(&mut conn, "rotabloom:{copy}:*"), Vec::<String>::new());
}

#[test]
fn a_restore_whose_blocks_expire_in_a_pause_fails_and_leaves_nothing() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let (file, _) = four_blocks(&mut conn);
    let mut spy_conn = server.connection();
    let mut expired = Vec::new();
    let spy = Spy {
        file: &file,
        pos: 0,
        mark: file.len() / 2,
        // The input stalls until the blocks written so far expire.
        at: Some(|| {
            expired = scan(&mut spy_conn, "rotabloom:{copy}:gen:*");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while !scan(&mut spy_conn, "rotabloom:{copy}:gen:*").is_empty() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the leases never ran out"
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }),
    };
    let options = rotabloom::dump::RestoreOptions::new()
        .name(Some("copy"))
        .lease(std::time::Duration::from_secs(1));
    let e = rotabloom::dump::restore_with(&mut conn, spy, options).unwrap_err();
    assert!(
        matches!(&e, Error::RestoreExpired { lease_secs: 1, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("nothing was restored"), "{e}");
    assert!(!expired.is_empty());
    assert_eq!(scan(&mut conn, "rotabloom:{copy}:*"), Vec::<String>::new());
}

#[test]
fn bytes_after_the_end_record_restore_nothing() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let (mut file, _) = four_blocks(&mut conn);
    file.extend_from_slice(b"more");
    let e = rotabloom::dump::restore(&mut conn, &file[..], Some("copy")).unwrap_err();
    assert!(e.to_string().contains("follow the end record"), "{e}");
    assert_eq!(scan(&mut conn, "rotabloom:{copy}:*"), Vec::<String>::new());
}

/// A block rotabloom made that is missing or short is lost data: the dump
/// says so, rather than write a file that no restore takes (or, for a
/// short block, one that restores the loss silently).
#[test]
fn a_missing_or_short_block_fails_the_dump_as_missing_data() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = rotabloom::BloomFilter::builder("lost")
        .capacity(1000)
        .create_or_open(&mut conn)
        .unwrap();
    f.insert_many(&mut conn, ["a", "b"]).unwrap();
    let blocks = scan(&mut conn, "rotabloom:{lost}:gen:*");
    assert_eq!(blocks.len(), 1);
    let full: u64 = redis::cmd("STRLEN")
        .arg(&blocks[0])
        .query(&mut conn)
        .unwrap();
    for damage in ["short", "missing"] {
        let _: () = match damage {
            "short" => redis::cmd("SET")
                .arg(&blocks[0])
                .arg(vec![0u8; (full / 2) as usize])
                .query(&mut conn)
                .unwrap(),
            _ => redis::cmd("DEL").arg(&blocks[0]).query(&mut conn).unwrap(),
        };
        let mut file = Vec::new();
        match rotabloom::dump::dump(&mut conn, "lost", &mut file) {
            Err(Error::MissingData { keys, .. }) => assert_eq!(keys, blocks, "{damage}"),
            other => panic!("{damage}: {other:?}"),
        }
    }
}
