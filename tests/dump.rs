//! The library's dump and restore against a real redis-server: a dump
//! that a structural change interrupts is refused, never inconsistent.

#[path = "support/harness.rs"]
mod harness;

use harness::RedisServer;
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
