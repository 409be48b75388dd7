//! The restore machine, driven with canned replies.

use super::*;
use crate::proto::dump::MAGIC;
use crate::request::Request;
use redis::Value;
use std::time::Duration;

/// A dump of the test fixture's one-generation bloom filter (1000
/// bits: one block of 125 bytes), without its end record.
fn truncated_dump() -> Vec<u8> {
    let fields = crate::testkit::fields("bloom", 1, 0);
    let mut file = MAGIC.to_vec();
    for r in [
        Record::Header {
            version: DUMP_VERSION,
            format: crate::metadata::FORMAT_VERSION,
            name: "t".into(),
        },
        Record::Meta(
            fields
                .raw
                .into_iter()
                .map(|(k, v)| (k.into_bytes(), v))
                .collect(),
        ),
        Record::Block {
            seq: 0,
            block: 0,
            len: 125,
        },
        Record::Data {
            offset: 3,
            bytes: vec![0xff],
        },
    ] {
        file.extend(r.encode());
    }
    file
}

/// The same dump, whole: with its end record.
fn whole_dump() -> Vec<u8> {
    let mut file = truncated_dump();
    file.extend(
        Record::End {
            records: 4,
            data_bytes: 1,
        }
        .encode(),
    );
    file
}

fn command(req: &Request) -> Vec<String> {
    assert_eq!(req.len(), 1, "one command per round trip");
    req.args(0)
}

fn send(p: Poll<Summary>) -> Vec<String> {
    match p {
        Poll::Send(req) => command(&req),
        Poll::Ready(s) => panic!("done early: {s:?}"),
    }
}

fn ok(v: Value) -> Option<Replies> {
    Some(vec![Ok(v)])
}

fn machine<'a>(file: &'a [u8], options: RestoreOptions<'a>) -> RestoreMachine<'a, &'a [u8]> {
    RestoreMachine::new(file, options, crate::any::ACCEPT_ANY).unwrap()
}

/// Steps through the existence check and the block's allocation;
/// returns the block's key.
fn allocate(m: &mut RestoreMachine<'_, &[u8]>) -> String {
    assert_eq!(
        send(m.step(None).unwrap()),
        ["EXISTS", "rotabloom:{copy}:meta"]
    );
    let alloc = send(m.step(ok(Value::Int(0))).unwrap());
    assert_eq!(alloc[0], "EVALSHA");
    assert_eq!(alloc[1], crate::scripts::RESTORE_WRITE.sha());
    // One key, allocated at its full length, with the lease in ms.
    assert_eq!(alloc[2], "1");
    assert_eq!(&alloc[4..], ["NEW", "124", "\0", "900000"]);
    alloc[3].clone()
}

#[test]
fn a_truncated_restore_deletes_what_it_wrote() {
    let file = truncated_dump();
    let mut m = machine(&file, RestoreOptions::new().name(Some("copy")));
    let key = allocate(&mut m);
    assert!(
        key.starts_with("rotabloom:{copy}:gen:") && key.ends_with("-0:0"),
        "{key}"
    );
    assert!(
        !key.contains("0123456789abcdef"),
        "a fresh uid, not the dumped one"
    );
    let data = send(m.step(ok(Value::Int(125))).unwrap());
    assert_eq!(data[3..6], [key.clone(), "MORE".into(), "3".into()]);
    // The file ends there: the block is deleted, then the error.
    let undo = send(m.step(ok(Value::Int(125))).unwrap());
    assert_eq!(undo, ["UNLINK".to_string(), key]);
    let e = m.step(ok(Value::Int(1))).err();
    assert!(matches!(e, Some(Error::BadDump { .. })), "{e:?}");
}

#[test]
fn the_publish_step_names_every_block_written() {
    let file = whole_dump();
    let mut m = machine(&file, RestoreOptions::new().name(Some("copy")));
    let key = allocate(&mut m);
    send(m.step(ok(Value::Int(125))).unwrap());
    let publish = send(m.step(ok(Value::Int(125))).unwrap());
    assert_eq!(publish[1], crate::scripts::RESTORE.sha());
    assert_eq!(
        publish[2..6],
        ["3", "rotabloom:{copy}:meta", "rotabloom:{copy}:fence", &key]
    );
    let gone = Value::Array(vec![
        Value::BulkString(b"GONE".to_vec()),
        Value::BulkString(key.clone().into_bytes()),
    ]);
    // The block expired before it: undone, and said.
    let undo = send(m.step(ok(gone)).unwrap());
    assert_eq!(undo, ["UNLINK".to_string(), key.clone()]);
    let e = m.step(ok(Value::Int(0))).err();
    assert!(
        matches!(&e, Some(Error::RestoreExpired { keys, lease_secs: 900, .. }) if keys == &[key]),
        "{e:?}"
    );
}

#[test]
fn bytes_after_the_end_record_restore_nothing() {
    let mut file = whole_dump();
    file.push(b'\n');
    let mut m = machine(&file, RestoreOptions::new().name(Some("copy")));
    let key = allocate(&mut m);
    send(m.step(ok(Value::Int(125))).unwrap());
    // No publish: the block is deleted, then the error.
    let undo = send(m.step(ok(Value::Int(125))).unwrap());
    assert_eq!(undo, ["UNLINK".to_string(), key]);
    let e = m.step(ok(Value::Int(1))).err();
    assert!(
        matches!(&e, Some(Error::BadDump { reason }) if reason.contains("follow the end record")),
        "{e:?}"
    );
}

#[test]
fn a_cancelled_restore_stops_before_its_next_write_and_undoes() {
    let file = whole_dump();
    let stop = AtomicBool::new(false);
    let options = RestoreOptions::new().name(Some("copy")).cancel_on(&stop);
    let mut m = machine(&file, options);
    let key = allocate(&mut m);
    stop.store(true, Ordering::SeqCst);
    let undo = send(m.step(ok(Value::Int(125))).unwrap());
    assert_eq!(undo, ["UNLINK".to_string(), key]);
    let e = m.step(ok(Value::Int(1))).err();
    assert!(matches!(e, Some(Error::Cancelled { .. })), "{e:?}");

    // Cancelled before anything: nothing sent at all.
    let mut m = machine(&file, options);
    let e = m.step(None).err();
    assert!(matches!(e, Some(Error::Cancelled { .. })), "{e:?}");
}

#[test]
fn leases_are_renewed_and_a_vanished_block_fails_the_restore() {
    let file = whole_dump();
    let mut m = machine(&file, RestoreOptions::new().name(Some("copy")));
    // A lease of 0: every write is followed by the renewal.
    m.lease.length = Duration::ZERO;
    m.at(std::time::Instant::now());
    assert_eq!(send(m.step(None).unwrap())[0], "EXISTS");
    let key = send(m.step(ok(Value::Int(0))).unwrap())[3].clone();
    let renew = send(m.step(ok(Value::Int(125))).unwrap());
    assert_eq!(renew, ["PEXPIRE".to_string(), key.clone(), "0".into()]);
    // PEXPIRE found no key: it expired, the restore fails.
    let undo = send(m.step(ok(Value::Int(0))).unwrap());
    assert_eq!(undo, ["UNLINK".to_string(), key.clone()]);
    let e = m.step(ok(Value::Int(0))).err();
    assert!(matches!(e, Some(Error::RestoreExpired { .. })), "{e:?}");

    // A data write that finds its block gone fails it too.
    let mut m = machine(&file, RestoreOptions::new().name(Some("copy")));
    let key = allocate(&mut m);
    send(m.step(ok(Value::Int(125))).unwrap());
    let undo = send(m.step(ok(Value::SimpleString("GONE".into()))).unwrap());
    assert_eq!(undo, ["UNLINK".to_string(), key]);
    let e = m.step(ok(Value::Int(0))).err();
    assert!(matches!(e, Some(Error::RestoreExpired { .. })), "{e:?}");
}

#[test]
fn the_lease_is_renewed_once_a_third_of_it_passed_on_the_drivers_clock() {
    let file = whole_dump();
    let t0 = std::time::Instant::now();
    // The default lease, 15 minutes: renewed 5 minutes after the start,
    // by the time the driver passes in, not by a clock of the machine's.
    let after_the_write = |elapsed: Duration| {
        let mut m = machine(&file, RestoreOptions::new().name(Some("copy")));
        m.at(t0);
        let key = allocate(&mut m);
        m.at(t0 + elapsed);
        (key, send(m.step(ok(Value::Int(125))).unwrap()))
    };
    let (key, renew) = after_the_write(Duration::from_secs(300));
    assert_eq!(renew, ["PEXPIRE".to_string(), key, "900000".into()]);
    let (_, next) = after_the_write(Duration::from_secs(299));
    assert_ne!(next[0], "PEXPIRE", "renewed before a third had passed");
}

#[test]
fn a_lease_under_a_second_is_refused() {
    let file = whole_dump();
    let options = RestoreOptions::new().lease(Duration::from_millis(999));
    let e = RestoreMachine::new(&file[..], options, crate::any::ACCEPT_ANY).err();
    assert!(
        matches!(e, Some(Error::InvalidParameter { name: "lease", .. })),
        "{e:?}"
    );
}

#[test]
fn an_existing_filter_is_never_overwritten() {
    let file = truncated_dump();
    let mut m = machine(&file, RestoreOptions::new());
    assert_eq!(
        send(m.step(None).unwrap()),
        ["EXISTS", "rotabloom:{t}:meta"]
    );
    let e = m.step(ok(Value::Int(1))).err();
    assert!(matches!(e, Some(Error::AlreadyExists { .. })), "{e:?}");
}
