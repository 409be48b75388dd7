//! The data script's requests checked argument by argument, and its
//! replies decoded, with canned values: no server.

use super::*;
use crate::hashing::ItemHash;
use crate::testkit::view_of;

fn ok(v: Value) -> redis::RedisResult<Value> {
    Ok(v)
}

fn reply(status: &str, processed: i64, flags: &str, fill: i64) -> redis::RedisResult<Value> {
    ok(Value::Array(vec![
        Value::BulkString(status.into()),
        Value::Int(processed),
        Value::BulkString(flags.into()),
        Value::Int(fill),
    ]))
}

#[test]
fn the_request_carries_the_view_and_every_position() {
    let view = view_of("bloom", 1);
    let keys = crate::testkit::keys("t");
    let hashes: Vec<ItemHash> = ["a", "b", "c"].iter().map(ItemHash::of).collect();
    let batch = Batch {
        hashes: &hashes,
        items: &crate::items::Items::default(),
    };
    let (req, chunks) = request(
        RoundOf {
            keys: &keys,
            view: &view,
            round: &[1, 2],
            batch,
        },
        DataOp::CheckAdd,
        "",
        None,
        &Local::default(),
        Limit::Open,
    );
    assert_eq!(chunks, vec![vec![1, 2]]);
    assert!(req.writes());
    let args = req.args(0);
    // EVALSHA sha numkeys meta fence reservations block, then op uid
    // epoch cleared n due now groups first ttl round.
    assert_eq!(args[0], "EVALSHA");
    assert_eq!(args[2], "4");
    assert_eq!(
        &args[7..18],
        [
            "cai",
            "0123456789abcdef",
            "0",
            "0",
            "2",
            "",
            "",
            "1",
            "1",
            "",
            ""
        ]
    );
    // One group: decide, seq 0, k, 1 block, no cap, every block must
    // exist whole (125 bytes), then per item block + k positions.
    let k = view.gens[0].layout.hashes as usize;
    assert_eq!(&args[18..24], ["d", "0", &k.to_string(), "1", "0", "=125"]);
    assert_eq!(args.len(), 24 + 2 * (1 + k));
}

#[test]
fn the_calls_of_a_capped_round_share_a_round_so_that_one_stop_stops_them_all() {
    let view = view_of("bloom", 1);
    let keys = crate::testkit::keys("t");
    let hashes: Vec<ItemHash> = (0..1200).map(|i| ItemHash::of(i.to_string())).collect();
    let batch = Batch {
        hashes: &hashes,
        items: &crate::items::Items::default(),
    };
    let round: Vec<usize> = (0..1200).collect();
    let r = RoundOf {
        keys: &keys,
        view: &view,
        round: &round,
        batch,
    };
    let (req, chunks) = request(r, DataOp::Add, "", None, &Local::default(), Limit::Capacity);
    assert!(chunks.len() > 1);
    let rounds: Vec<String> = (0..chunks.len()).map(|i| req.args(i)[17].clone()).collect();
    assert!(!rounds[0].is_empty() && rounds.iter().all(|r| *r == rounds[0]));
    // One call, or no cap: nothing to stop.
    let (one, _) = request(
        RoundOf {
            round: &round[..10],
            ..r
        },
        DataOp::Add,
        "",
        None,
        &Local::default(),
        Limit::Capacity,
    );
    assert_eq!(one.args(0)[17], "");
    let (open, _) = request(r, DataOp::Add, "", None, &Local::default(), Limit::Open);
    assert_eq!(open.args(0)[17], "");
}

#[test]
fn a_record_is_the_last_key_and_calls_are_runs_of_consecutive_items() {
    let view = view_of("bloom", 1);
    let keys = crate::testkit::keys("t");
    let hashes: Vec<ItemHash> = (0..6).map(|i| ItemHash::of(i.to_string())).collect();
    let batch = Batch {
        hashes: &hashes,
        items: &crate::items::Items::default(),
    };
    let record = Record {
        key: "rotabloom:{t}:done:ab".into(),
        ttl_ms: 300_000,
    };
    let (req, chunks) = request(
        RoundOf {
            keys: &keys,
            view: &view,
            round: &[0, 1, 3, 4, 5],
            batch,
        },
        DataOp::Add,
        "",
        Some(&record),
        &Local::default(),
        Limit::Open,
    );
    assert_eq!(chunks, vec![vec![0, 1], vec![3, 4, 5]]);
    for (i, (numkeys, first)) in [("5", "0"), ("5", "3")].into_iter().enumerate() {
        let args = req.args(i);
        assert_eq!(args[2], numkeys);
        assert_eq!(args[7], "rotabloom:{t}:done:ab");
        assert_eq!(&args[16..18], [first, "300000"]);
    }
    let (read, _) = request(
        RoundOf {
            keys: &keys,
            view: &view,
            round: &[0],
            batch,
        },
        DataOp::Has,
        "",
        None,
        &Local::default(),
        Limit::Open,
    );
    assert!(!read.writes());
    assert_eq!(
        calls(&[0, 1, 2, 3, 4], 2),
        vec![vec![0, 1], vec![2, 3], vec![4]]
    );
}

#[test]
fn replies_decode_or_fail_loudly() {
    let c = decode("t", 3, reply("OK", 3, "101", -1)).unwrap();
    assert_eq!(
        (c.status, c.answers, c.fill),
        (Status::Ok, vec![true, false, true], None)
    );
    let c = decode("t", 3, reply("FULL", 1, "1", 7)).unwrap();
    assert_eq!(
        (c.status, c.answers.len(), c.fill),
        (Status::Full, 1, Some(7))
    );
    assert_eq!(
        decode("t", 3, reply("STALE", 0, "", -1)).unwrap().status,
        Status::Stale
    );
    assert_eq!(
        decode("t", 3, reply("DUE", 0, "", -1)).unwrap().status,
        Status::Due
    );
    match decode("t", 3, reply("MISSING", 0, "k1 k2", -1)) {
        Err(Error::MissingData { keys, .. }) => assert_eq!(keys, ["k1", "k2"]),
        other => panic!("{other:?}"),
    }
    for bad in [
        reply("OK", 4, "1011", -1),
        reply("OK", 2, "1", -1),
        reply("MAYBE", 0, "", -1),
        reply("OK", -1, "", -1),
        reply("OK", 2, "1\0", -1),
        ok(Value::Int(1)),
    ] {
        assert!(matches!(
            decode("t", 3, bad),
            Err(Error::UnexpectedReply(_))
        ));
    }
    let corrupt = crate::testkit::server_error(
        "CORRUPT gen.0.count holds a value that is not a count script: x",
    );
    assert!(matches!(
        decode("t", 3, Err(corrupt)),
        Err(Error::CorruptMetadata { ref field, .. }) if field == "gen.0.count"
    ));
}

#[test]
fn mirrored_generations_are_left_out_and_their_findings_passed() {
    // Query-all over three generations; the client mirrors 0 and 1 and
    // found item 1 there.
    let view = view_of("circular", 3);
    let keys = crate::testkit::keys("t");
    let hashes: Vec<ItemHash> = ["a", "b", "c"].iter().map(ItemHash::of).collect();
    let batch = Batch {
        hashes: &hashes,
        items: &crate::items::Items::default(),
    };
    let local = Local {
        mirrored: vec![0, 1],
        present: [1].into_iter().collect(),
    };
    let (req, _) = request(
        RoundOf {
            keys: &keys,
            view: &view,
            round: &[0, 1, 2],
            batch,
        },
        DataOp::CheckAdd,
        "",
        None,
        &local,
        Limit::Open,
    );
    let args = req.args(0);
    // No block key of generations 0 and 1.
    assert!(!args.iter().any(|a| a.contains("-0:") || a.contains("-1:")));
    let g = args
        .iter()
        .position(|a| a == "l")
        .expect("the findings group");
    assert_eq!(
        &args[g..g + 9],
        ["l", "0", "0", "0", "0", "0", "0", "1", "0"]
    );
    // Inserts read no query generation: no findings.
    let (add, _) = request(
        RoundOf {
            keys: &keys,
            view: &view,
            round: &[0, 1, 2],
            batch,
        },
        DataOp::Add,
        "",
        None,
        &local,
        Limit::Open,
    );
    assert!(!add.args(0).iter().any(|a| a == "l"));
}
