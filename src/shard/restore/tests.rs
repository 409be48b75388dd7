//! The sharded restore machine driven with canned replies: what it sends
//! at each step of the creation protocol, and how it fails and undoes.

use super::*;
use redis::Value;

fn container(version: u32, body: &[Frame]) -> Vec<u8> {
    let mut file = SHARDED_MAGIC.to_vec();
    let root = Frame::Root {
        version,
        shards: 2,
        kind: "bloom".into(),
        capacity: 1000,
        name: "crawl".into(),
    };
    for f in std::iter::once(&root).chain(body) {
        file.extend(f.encode());
    }
    file
}

fn args(p: Result<Poll<Summary>>) -> Vec<String> {
    match p {
        Ok(Poll::Send(req)) => req.args(0),
        Ok(Poll::Ready(s)) => panic!("done early: {s:?}"),
        Err(e) => panic!("failed: {e}"),
    }
}

fn int(n: i64) -> Option<Replies> {
    Some(vec![Ok(Value::Int(n))])
}

/// Through the existence check and the placement: the claim's request.
fn to_claim(m: &mut ShardedRestore<'_, &[u8]>) -> Vec<String> {
    assert_eq!(args(m.step(None)), ["EXISTS", "rotabloom:{crawl}:meta"]);
    assert_eq!(args(m.step(int(0))), ["CLUSTER", "SLOTS"]);
    let single = redis::RedisError::from((
        redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError),
        "ERR This instance has cluster support disabled",
    ));
    args(m.step(Some(vec![Err(single)])))
}

fn claimed() -> Option<Replies> {
    Some(vec![Ok(Value::Array(vec![Value::BulkString(
        b"claimed".to_vec(),
    )]))])
}

#[test]
fn an_unknown_version_is_refused_before_any_request() {
    let file = container(2, &[]);
    let Err(e) = ShardedRestore::new(&file[..], RestoreOptions::new()) else {
        panic!("read")
    };
    assert!(matches!(e, Error::BadDump { .. }), "{e}");
}

#[test]
fn a_taken_name_is_refused_with_nothing_written() {
    let file = container(1, &[]);
    let mut m = ShardedRestore::new(&file[..], RestoreOptions::new()).unwrap();
    args(m.step(None));
    let e = m.step(int(1)).err();
    assert!(matches!(e, Some(Error::AlreadyExists { .. })), "{e:?}");

    // Taken between the check and the claim: not ours to undo.
    let mut m = ShardedRestore::new(&file[..], RestoreOptions::new()).unwrap();
    assert_eq!(to_claim(&mut m)[0], "EVALSHA");
    let found = Value::Array(vec![
        Value::BulkString(b"exists".to_vec()),
        Value::BulkString(b"1700000000000".to_vec()),
        Value::Array(vec![]),
    ]);
    let e = m.step(Some(vec![Ok(found)])).err();
    assert!(matches!(e, Some(Error::AlreadyExists { .. })), "{e:?}");
}

#[test]
fn a_bad_shard_after_the_claim_deletes_the_root_then_says_which() {
    let file = container(
        1,
        &[
            Frame::Shard {
                index: 0,
                name: "crawl:shard:0:0a1b2c3d".into(),
            },
            Frame::Chunk(b"not a dump".to_vec()),
            Frame::ShardEnd { bytes: 10 },
        ],
    );
    let mut m = ShardedRestore::new(&file[..], RestoreOptions::new()).unwrap();
    to_claim(&mut m);
    // Shard 0's dump is refused before any of its writes: the root
    // claimed is deleted (its move to nothing), then the error.
    let undo = args(m.step(claimed()));
    assert_eq!(undo[0], "EVALSHA");
    assert_eq!(undo[3], "rotabloom:{crawl}:meta");
    assert_eq!(&undo[5..7], ["creating", ""], "{undo:?}");
    let Err(Error::BadDump { reason }) = m.step(int(1)) else {
        panic!("not the dump's error")
    };
    assert!(reason.starts_with("shard 0 of 2: "), "{reason}");
}
