//! The pure machine driven with canned replies: no server.
use super::*;
use crate::proto::script::Record;
use crate::request::Request;
use crate::testkit::{fields, keys, view_at, view_of, ALL};
use crate::view::Accept;
use redis::Value;

fn core(view: View) -> Core {
    let c = Core::new(keys("t"), view, Accept::Any(ALL));
    c.set_watch_ok();
    c
}

fn machine(core: &Core, op: DataOp, n: usize) -> DataMachine {
    let items = Items::collect((0..n).map(|i| format!("item{i}")));
    let mut m = DataMachine::new(core.clone(), op, Arc::new(items));
    m.allow_transactions(true);
    m
}

fn send(p: Poll<DataOutput>) -> Request {
    match p {
        Poll::Send(r) => r,
        Poll::Ready(_) => panic!("expected a request"),
    }
}

/// Replies to a transaction request: every command answered, each
/// BITFIELD with `bit` for every position.
fn tx_replies(req: &Request, bit: i64) -> Replies {
    let mut out: Replies = Vec::new();
    let mut results = Vec::new();
    let mut queued = false;
    for i in 0..req.len() {
        let args = req.args(i);
        match args[0].as_str() {
            "WATCH" => out.push(Ok(Value::Okay)),
            "MULTI" => {
                queued = true;
                out.push(Ok(Value::Okay))
            }
            // The settle script queued after the writes: each generation's
            // count afterwards is what it adds (the counts started at 0).
            "EVAL" if queued => {
                out.push(Ok(Value::SimpleString("QUEUED".into())));
                let deltas = args[8..].iter().skip(1).step_by(2);
                results.push(Value::Array(
                    deltas
                        .map(|d| Value::Int(d.parse().unwrap_or(-7)))
                        .collect(),
                ));
            }
            "EVAL" | "EVALSHA" => out.push(Ok(Value::BulkString(b"OK".to_vec()))),
            "EXEC" => {
                queued = false;
                out.push(Ok(Value::Array(std::mem::take(&mut results))))
            }
            "BITFIELD" | "BITFIELD_RO" => {
                let n = args.iter().filter(|a| *a == "u1").count();
                let v = Value::Array(vec![Value::Int(bit); n]);
                if queued {
                    out.push(Ok(Value::SimpleString("QUEUED".into())));
                    results.push(v);
                } else {
                    out.push(Ok(v));
                }
            }
            other => panic!("unexpected command {other}"),
        }
    }
    out
}

#[test]
fn a_reload_by_a_clone_between_build_and_decode_changes_nothing() {
    // Clone A builds a check-and-insert round over a query-all filter
    // of generations 0, 1, 2; clone B then loads the filter rotated
    // (generations 1, 2, 3). A's counts must go to generation 2, the
    // one its round wrote, and nothing may panic.
    let mut a = core(view_of("circular", 3));
    // Writes past capacity: no reservation, the commit adds the count.
    a.when_full = crate::full::WhenFull::Warn;
    let b = a.clone();
    let mut m = machine(&a, DataOp::CheckAdd, 20);
    let phase_a = send(m.step(None).unwrap());
    assert_eq!(phase_a.args(0)[0], "EVAL", "phase A opens with the guard");
    b.publish(view_at("circular", 3, 1)).unwrap();
    assert_eq!(a.view().epoch, 1, "the clones share the latest view");
    let tx = send(m.step(Some(tx_replies(&phase_a, 0))).unwrap());
    assert_eq!(tx.args(0)[0], "WATCH");
    let guard = tx.args(1);
    assert!(
        guard.contains(&"0123456789abcdef:0:0".to_string()),
        "built from A's snapshot"
    );
    // The commit queued in the transaction adds its 20 items.
    let commit = tx.args(tx.len() - 2);
    assert_eq!(commit[0], "EVAL");
    assert_eq!(
        &commit[commit.len() - 2..],
        ["2", "20"],
        "credited to A's deciding generation"
    );
    // All were new: nothing to take back, no second round trip.
    match m.step(Some(tx_replies(&tx, 0))).unwrap() {
        Poll::Ready((out, _)) => assert!(out.iter().all(|&new| new)),
        Poll::Send(_) => panic!("expected the answers"),
    }
}

/// Drives an insert of `n` items of a bloom filter whose bits are all
/// `bit`: the round trips, and each commit sent after a transaction (its
/// last argument, the delta).
fn insert_all(n: usize, bit: i64) -> (usize, Vec<String>, Vec<bool>) {
    let mut c = core(view_of("bloom", 1));
    c.when_full = crate::full::WhenFull::Warn;
    let mut m = machine(&c, DataOp::Add, n);
    let mut req = send(m.step(None).unwrap());
    assert_eq!(req.args(0)[0], "WATCH");
    let mut trips = 1;
    let mut credited = Vec::new();
    let out = loop {
        let mut replies = tx_replies(&req, bit);
        if req.args(0)[0].starts_with("EVAL") {
            // A commit after a transaction: the count after it.
            let args = req.args(0);
            credited.push(args[args.len() - 1].clone());
            replies[0] = Ok(Value::Array(vec![Value::Int(0)]));
        }
        match m.step(Some(replies)).unwrap() {
            Poll::Send(next) => {
                trips += 1;
                req = next;
            }
            Poll::Ready((out, _)) => break out,
        }
    };
    (trips, credited, out)
}

#[test]
fn new_items_are_counted_inside_their_transaction_and_an_excess_goes_back_after_it() {
    // 2,500 new items: three transactions of at most 1,000, each counting
    // its items itself: three round trips, no commit after any.
    let (trips, credited, out) = insert_all(2500, 0);
    assert_eq!(trips, 3, "three transactions");
    assert!(credited.is_empty(), "{credited:?}");
    assert!(out.iter().all(|&changed| changed));
    // 2,500 items already there: each transaction's bound goes back. The
    // first two commits ride in front of the next transaction; the last
    // goes alone. Four round trips instead of six.
    let (trips, credited, out) = insert_all(2500, 1);
    assert_eq!(trips, 4, "three transactions and the last commit");
    assert_eq!(credited, ["-1000", "-1000", "-500"], "every excess, once");
    assert!(out.iter().all(|&changed| !changed));
}

#[test]
fn a_clone_reloading_a_smaller_filter_cannot_make_a_decode_panic() {
    // A's round reads three generations; B then loads a re-created
    // filter with one, which the handle refuses. A decodes its replies
    // against its own three.
    let a = core(view_of("expanding", 3));
    let b = a.clone();
    let mut m = machine(&a, DataOp::Has, 20);
    let tx = send(m.step(None).unwrap());
    let mut small = fields("expanding", 1, 0);
    small.raw.insert("uid".into(), b"fedcba9876543210".to_vec());
    let small = View::decode(small, None, "fence", Accept::Any(ALL)).unwrap();
    assert!(matches!(
        b.publish(small),
        Err(crate::error::Error::Recreated { .. })
    ));
    assert_eq!(
        a.view().gens.len(),
        3,
        "the other instance is not published"
    );
    match m.step(Some(tx_replies(&tx, 1))).unwrap() {
        Poll::Ready((out, _)) => assert_eq!(out, vec![true; 20]),
        Poll::Send(_) => panic!("expected the answers"),
    }
}

#[test]
fn a_big_batch_goes_in_transactions_of_bounded_size() {
    // Each transaction runs whole on the server: 2,500 items go in
    // three of at most MAX_ITEMS_PER_TX items each.
    let c = core(view_of("bloom", 1));
    let k = c.view().gens[0].layout.hashes as usize;
    let mut m = machine(&c, DataOp::Has, 2_500);
    let mut step = m.step(None).unwrap();
    let mut sizes = Vec::new();
    loop {
        match step {
            Poll::Send(req) => {
                let bits: usize = (0..req.len())
                    .map(|i| req.args(i).iter().filter(|a| *a == "u1").count())
                    .sum();
                sizes.push(bits / k);
                step = m.step(Some(tx_replies(&req, 1))).unwrap();
            }
            Poll::Ready((out, _)) => {
                assert_eq!(out, vec![true; 2_500]);
                break;
            }
        }
    }
    assert_eq!(sizes, vec![1_000, 1_000, 500]);
}

#[test]
fn a_round_holds_a_bounded_number_of_arguments() {
    // 40,000 items of a three-generation filter through the script (a
    // record forces it): about 500,000 arguments uncapped.
    let c = core(view_of("circular", 3));
    let record = Record {
        key: "rotabloom:{t}:done:0123456789abcdef".into(),
        ttl_ms: 1000,
    };
    let mut m = machine(&c, DataOp::CheckAdd, 40_000).with_record(record);
    let req = send(m.step(None).unwrap());
    let args: usize = (0..req.len()).map(|i| req.args(i).len()).sum();
    assert!(args <= 210_000, "{args} arguments in one round trip");
}

#[test]
fn no_transaction_is_sent_before_the_server_accepted_watch() {
    let fresh = Core::new(keys("t"), view_of("bloom", 1), Accept::Any(ALL));
    let mut m = machine(&fresh, DataOp::CheckAdd, 20);
    let pre = send(m.step(None).unwrap());
    assert_eq!(
        (pre.args(0)[0].as_str(), pre.args(1)[0].as_str()),
        ("WATCH", "UNWATCH")
    );
    let denied =
        crate::testkit::server_error("NOPERM User u has no permissions to run the 'watch' command");
    match m.step(Some(vec![Err(denied), Ok(Value::Okay)])) {
        Err(Error::PermissionDenied { message }) => assert!(message.contains("watch")),
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("a transaction was sent after WATCH was refused"),
    }
    // Accepted: the transaction follows, and the next machine of the
    // handle goes straight to it.
    let mut m = machine(&fresh, DataOp::CheckAdd, 20);
    let pre = send(m.step(None).unwrap());
    let tx = send(m.step(Some(vec![Ok(Value::Okay); pre.len()])).unwrap());
    assert_eq!(tx.args(0)[0], "WATCH");
    assert_eq!(tx.args(2)[0], "MULTI");
    let mut again = machine(&fresh, DataOp::CheckAdd, 20);
    assert_eq!(send(again.step(None).unwrap()).args(2)[0], "MULTI");
}

#[test]
fn a_script_round_that_finds_the_generation_full_appends_the_next() {
    let a = core(view_of("expanding", 1));
    let mut m = machine(&a, DataOp::CheckAdd, 4);
    let req = send(m.step(None).unwrap());
    assert_eq!(req.args(0)[0], "EVALSHA");
    // Two items written, the generation is full, two left.
    let full = Value::Array(vec![
        Value::BulkString(b"FULL".to_vec()),
        Value::Int(2),
        Value::BulkString(b"11".to_vec()),
        Value::Int(100),
    ]);
    // Allocation ahead of the new generation, then the roll.
    let alloc = send(m.step(Some(vec![Ok(full)])).unwrap());
    assert!(alloc
        .args(0)
        .contains(&"rotabloom:{t}:gen:0123456789abcdef-1:0".to_string()));
    let roll = send(
        m.step(Some(vec![Ok(Value::BulkString(b"GREW".to_vec()))]))
            .unwrap(),
    );
    let args = roll.args(0);
    assert_eq!(
        &args[6..12],
        ["0123456789abcdef", "0", "0", "1", "0,1", "2"]
    );
}
