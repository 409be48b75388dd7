//! A round's transaction built and its replies decoded with canned values:
//! which generations it writes, what its guard reserves, and how each
//! refused or aborted step reads.

use super::super::guard::RESERVATION_MS;
use super::super::testing::{hashes, replies};
use super::*;
use crate::proto::script::Batch;
use crate::testkit::{keys, module_view_of, server_error, view_of};

/// The transaction of `op` over `n` items of `view`, none known present.
fn sent(view: &View, op: DataOp, n: usize, limit: Limit) -> (Request, TxSent) {
    let h = hashes(n);
    let items = crate::items::Items::collect((0..n).map(|i| format!("item{i}")));
    let batch = Batch {
        hashes: &h,
        items: &items,
    };
    let round: Vec<usize> = (0..n).collect();
    let r = RoundOf {
        keys: &keys("t"),
        view,
        round: &round,
        batch,
    };
    tx_request(r, op, &[0], &vec![false; n], "", limit)
}

#[test]
fn a_transaction_is_watch_guard_multi_bitfields_exec() {
    let view = view_of("bloom", 1);
    let h = hashes(3);
    let batch = Batch {
        hashes: &h,
        items: &crate::items::Items::default(),
    };
    let r = RoundOf {
        keys: &keys("t"),
        view: &view,
        round: &[0, 1, 2],
        batch,
    };
    let (req, sent) = tx_request(
        r,
        DataOp::CheckAdd,
        &[0],
        &[false, true, false],
        "",
        Limit::Open,
    );
    assert_eq!(req.args(0), ["WATCH", "rotabloom:{t}:fence"]);
    let guard = req.args(1);
    assert_eq!(guard[0], "EVAL");
    // Token, deadline, now, no reservation, then the block's size:
    // it must be whole, not only there.
    assert_eq!(
        &guard[guard.len() - 9..],
        [
            "0123456789abcdef:0:0",
            "",
            "",
            "",
            "0",
            "0",
            "0",
            "0",
            "125"
        ]
    );
    assert_eq!(req.args(2), ["MULTI"]);
    assert_eq!(req.args(3)[0], "BITFIELD");
    // The item already known present is not written.
    assert_eq!(sent.parts.len(), 1);
    assert_eq!(sent.parts[0].positions, vec![0, 2]);
    assert_eq!(req.args(3).len(), 2 + 2 * 3 * 4);
    // The script queued after the writes adds the two items written: an
    // upper bound of the new ones (nothing reserved, so no member; the
    // deciding generation 0 with its capacity).
    let settle = req.args(4);
    assert_eq!(settle[0], "EVAL");
    let cap = view.gens[0].capacity.to_string();
    assert_eq!(&settle[settle.len() - 5..], ["", "0", &cap, "0", "2"]);
    assert_eq!(sent.settle, Some(vec![(0, 2)]));
    assert_eq!(req.args(5), ["EXEC"]);
}

#[test]
fn every_verdict_of_a_transaction_decodes() {
    let view = view_of("bloom", 1);
    let (_, sent) = sent(&view, DataOp::CheckAdd, 2, Limit::Open);
    let present = [false, false];
    let k = view.gens[0].layout.hashes as usize;
    // Ran: item 0 was new (its bits were 0), item 1 was not.
    let mut bits = vec![Value::Int(0); k];
    bits.extend(vec![Value::Int(1); k]);
    let exec = |commit: Value| {
        let results = vec![Value::Array(bits.clone()), commit];
        replies("OK", 2, Ok(Value::Array(results)))
    };
    let applied = decode_tx(
        &view,
        DataOp::CheckAdd,
        &sent,
        &present,
        exec(Value::Array(vec![Value::Int(5)])),
    )
    .unwrap();
    assert_eq!(
        applied,
        TxOutcome::Applied {
            answers: vec![true, false],
            added: vec![(0, 1)],
            count: None,
            settled: Settled::Ran(vec![(0, 5)]),
        }
    );
    // Near capacity it leaves the counts to the commit after.
    let after = Value::BulkString(b"AFTER".to_vec());
    match decode_tx(&view, DataOp::CheckAdd, &sent, &present, exec(after)).unwrap() {
        TxOutcome::Applied {
            answers, settled, ..
        } => assert_eq!((answers, settled), (vec![true, false], Settled::After)),
        other => panic!("{other:?}"),
    }
    // A corrupt count it met is the call's error.
    let corrupt =
        crate::testkit::error_value("CORRUPT gen.0.count holds a value that is not a count");
    match decode_tx(&view, DataOp::CheckAdd, &sent, &present, exec(corrupt)) {
        Err(Error::CorruptMetadata { field, .. }) => assert_eq!(field, "gen.0.count"),
        other => panic!("{other:?}"),
    }
    for (guard, verdict) in [
        ("STALE", Verdict::Stale),
        ("DUE 17", Verdict::Due(Some(17))),
        ("OK", Verdict::Ok),
    ] {
        let out = decode_tx(
            &view,
            DataOp::CheckAdd,
            &sent,
            &present,
            replies(guard, 2, Ok(Value::Nil)),
        )
        .unwrap();
        assert_eq!(out, TxOutcome::Aborted(verdict), "{guard}");
    }
}

#[test]
fn a_refused_watch_multi_or_command_is_the_error_never_ignored() {
    let view = view_of("bloom", 1);
    let (_, sent) = sent(&view, DataOp::Add, 2, Limit::Open);
    let present = [false, false];
    let noperm = "NOPERM User nowatch has no permissions to run the 'watch' command";
    let mut r = replies("OK", 2, Ok(Value::Nil));
    r[0] = Err(server_error(noperm));
    match decode_tx(&view, DataOp::Add, &sent, &present, r) {
        Err(Error::PermissionDenied { message }) => {
            assert!(message.contains("watch"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let mut r = replies("OK", 2, Ok(Value::Nil));
    r[2] = Err(server_error("ERR MULTI calls can not be nested"));
    assert!(matches!(
        decode_tx(&view, DataOp::Add, &sent, &present, r),
        Err(Error::Redis(_))
    ));
    // A command refused when queued: its error, not EXECABORT.
    let mut r = replies(
        "OK",
        2,
        Err(server_error(
            "EXECABORT Transaction discarded because of previous errors.",
        )),
    );
    r[3] = Err(server_error(
        "OOM command not allowed when used memory > 'maxmemory'.",
    ));
    match decode_tx(&view, DataOp::Add, &sent, &present, r) {
        Err(Error::Redis(e)) => assert_eq!(e.inner().code(), Some("OOM")),
        other => panic!("{other:?}"),
    }
    // EXEC with the wrong number of results.
    let r = replies("OK", 2, Ok(Value::Array(vec![])));
    assert!(matches!(
        decode_tx(&view, DataOp::Add, &sent, &present, r),
        Err(Error::UnexpectedReply(_))
    ));
    // A bitmap's reply cut short is not an answer.
    let k = view.gens[0].layout.hashes as usize;
    let short = Value::Array(vec![
        Value::Array(vec![Value::Int(0); k]),
        Value::Array(vec![Value::Int(2)]),
    ]);
    assert!(matches!(
        decode_tx(
            &view,
            DataOp::Add,
            &sent,
            &present,
            replies("OK", 2, Ok(short))
        ),
        Err(Error::UnexpectedReply(_))
    ));
    // A missing reply is an internal error, not a panic.
    let mut r = replies("OK", 2, Ok(Value::Nil));
    r.truncate(2);
    assert!(matches!(
        decode_tx(&view, DataOp::Add, &sent, &present, r),
        Err(Error::Internal(_))
    ));
}

#[test]
fn a_capped_write_reserves_what_it_may_add_and_the_guard_may_refuse() {
    let view = view_of("bloom", 1);
    let h = hashes(3);
    let batch = Batch {
        hashes: &h,
        items: &crate::items::Items::default(),
    };
    let r = RoundOf {
        keys: &keys("t"),
        view: &view,
        round: &[0, 1, 2],
        batch,
    };
    // One of three known present: two may be added.
    let (req, sent) = tx_request(
        r,
        DataOp::CheckAdd,
        &[0],
        &[false, true, false],
        "",
        Limit::Capacity,
    );
    let res = sent.reserve.clone().unwrap();
    assert_eq!(
        (res.seq, res.capacity, res.items),
        (0, view.gens[0].capacity, 2)
    );
    let guard = req.args(1);
    let (cap, ttl) = (res.capacity.to_string(), RESERVATION_MS.to_string());
    assert_eq!(
        &guard[guard.len() - 6..],
        [res.member().as_str(), "0", &cap, "2", &ttl, "125"]
    );
    assert!(res.member().starts_with("0:2:"));
    // A read reserves nothing.
    let (_, read) = tx_request(r, DataOp::Has, &[0], &[false; 3], "", Limit::Capacity);
    assert_eq!(read.reserve, None);
}

#[test]
fn a_module_counts_itself_and_its_refusal_ends_the_answers() {
    let view = module_view_of("bloom", 1);
    let (req, sent) = sent(&view, DataOp::CheckAdd, 3, Limit::Capacity);
    // No room reserved: the module refuses past capacity itself; its
    // count is read in the transaction, after its write.
    assert_eq!((&sent.reserve, &sent.settle), (&None, &None));
    assert_eq!(
        req.args(3)[..4],
        [
            "BF.INSERT",
            "rotabloom:{t}:gen:0123456789abcdef-0:0",
            "NOCREATE",
            "ITEMS"
        ]
    );
    assert_eq!(
        req.args(4),
        ["BF.CARD", "rotabloom:{t}:gen:0123456789abcdef-0:0"]
    );
    assert_eq!(req.args(5), ["EXEC"]);
    assert_eq!(sent.parts.len(), 2);
    assert!(sent.parts[1].count);
    let present = [false; 3];
    let exec = |insert: Vec<Value>| {
        replies(
            "OK",
            2,
            Ok(Value::Array(vec![Value::Array(insert), Value::Int(9)])),
        )
    };
    // All taken: no count to commit, the module's own afterwards.
    let all = exec(vec![Value::Int(1), Value::Int(0), Value::Int(1)]);
    assert_eq!(
        decode_tx(&view, DataOp::CheckAdd, &sent, &present, all).unwrap(),
        TxOutcome::Applied {
            answers: vec![true, false, true],
            added: vec![],
            count: Some(9),
            settled: Settled::After,
        }
    );
    // Full at the second item: the first is answered, none after.
    let reply = |text: &[u8]| redis::parse_redis_value(text).expect("a canned reply");
    let full = reply(b"-ERR non scaling filter is full\r\n");
    let cut = exec(vec![Value::Int(1), full.clone()]);
    assert_eq!(
        decode_tx(&view, DataOp::CheckAdd, &sent, &present, cut).unwrap(),
        TxOutcome::Applied {
            answers: vec![true],
            added: vec![],
            count: Some(9),
            settled: Settled::After,
        }
    );
    // Any other error, or a read cut short, is not a refusal.
    let bad = exec(vec![Value::Int(1), reply(b"-ERR something else\r\n")]);
    assert!(decode_tx(&view, DataOp::CheckAdd, &sent, &present, bad).is_err());
    let (_, read) = sent_read(&view);
    let r = replies(
        "OK",
        1,
        Ok(Value::Array(vec![Value::Array(vec![Value::Int(1), full])])),
    );
    assert!(decode_tx(&view, DataOp::Has, &read, &present, r).is_err());
}

fn sent_read(view: &View) -> (Request, TxSent) {
    sent(view, DataOp::Has, 3, Limit::Open)
}
