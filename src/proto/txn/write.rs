//! The transaction of one round (docs/FORMAT.md §8.5): `WATCH fence;
//! guard; MULTI; commands...; EXEC`, and what its replies say.

use super::guard::{guard, verdict, Reserve, Verdict};
use super::{all_ones, commands, expect_ok, missing, Part, RoundOf};
use crate::error::{Error, Result};
use crate::proto::script::{DataOp, Limit};
use crate::request::{Replies, Request};
use crate::view::{Role, View};
use redis::Value;

/// The transaction of one round, as sent.
#[derive(Debug)]
pub(crate) struct TxSent {
    pub parts: Vec<Part>,
    /// What its guard reserves, if it reserves.
    pub reserve: Option<Reserve>,
}

/// What the commands of a transaction do, by role and operation: (read the
/// old bits, write).
fn takes_part(op: DataOp, role: Role) -> (bool, bool) {
    match (op, role) {
        (DataOp::Has, Role::Write) => (false, false),
        (DataOp::Has, _) => (true, false),
        (DataOp::Add, Role::Query) => (false, false),
        (DataOp::Add, _) => (true, true),
        (DataOp::CheckAdd, Role::Decide) => (true, true),
        // A write-only generation takes only what the decision accepted,
        // which a transaction cannot express: such filters use the script.
        (DataOp::CheckAdd, Role::Write | Role::Query) => (false, false),
    }
}

/// Whether generation `g` of `view` keeps its own count (a module), so
/// that a transaction reserves nothing in it and commits no count.
fn counts_itself(view: &View, g: usize) -> bool {
    view.store(g).own_count("").is_some()
}

/// `WATCH fence; guard; MULTI; commands...; EXEC` over `round`. `gens` are
/// the generations the server must serve (mirrored ones are answered
/// locally); `present` tells, per round position, whether the item is
/// already known present (check-and-insert writes only the others). With
/// `limit`, the guard reserves room in a deciding bitmap generation for
/// every item the transaction writes there, or refuses (`Verdict::Full`);
/// a deciding generation that keeps its own count refuses past capacity
/// itself, item by item, and its count is read after the writes.
pub(crate) fn tx_request(
    r: RoundOf<'_>,
    op: DataOp,
    gens: &[usize],
    present: &[bool],
    now: &str,
    limit: Limit,
) -> (Request, TxSent) {
    let RoundOf {
        keys, view, round, ..
    } = r;
    let mut req = match op {
        DataOp::Has => Request::new().read_only(),
        DataOp::Add | DataOp::CheckAdd => Request::new(),
    };
    let positions: Vec<usize> = match op {
        DataOp::CheckAdd => (0..round.len())
            .filter(|&p| !present.get(p).copied().unwrap_or(false))
            .collect(),
        _ => (0..round.len()).collect(),
    };
    let reserve = match (op, limit) {
        (DataOp::Has, _) | (_, Limit::Open) => None,
        _ => gens
            .iter()
            .filter(|&&g| view.roles.get(g) == Some(&Role::Decide))
            .filter(|&&g| !counts_itself(view, g))
            .filter_map(|&g| view.gens.get(g))
            .map(|g| Reserve {
                seq: g.seq,
                capacity: g.capacity,
                items: positions.len() as u64,
                id: crate::uid::new_uid(),
            })
            .next(),
    };
    req.push(redis::cmd("WATCH").arg(keys.fence()).clone(), None);
    req.push(guard(keys, view, gens, now, reserve.as_ref()), None);
    req.push(redis::cmd("MULTI"), None);
    let mut parts = Vec::new();
    for &g in gens {
        let Some(&role) = view.roles.get(g) else {
            continue;
        };
        let (take, set) = takes_part(op, role);
        if !take || positions.is_empty() {
            continue;
        }
        commands(r, g, set, &positions, &mut req, &mut parts);
        let own = view
            .gens
            .get(g)
            .and_then(|gen| view.store(g).own_count(&keys.block(&view.uid, gen.seq, 0)));
        if let (true, Role::Decide, Some(cmd)) = (set, role, own) {
            req.push(cmd, None);
            parts.push(Part {
                gen: g,
                set: false,
                positions: Vec::new(),
                count: true,
            });
        }
    }
    req.push(redis::cmd("EXEC"), None);
    (req, TxSent { parts, reserve })
}

/// What a transaction did.
#[derive(Debug, PartialEq)]
pub(crate) enum TxOutcome {
    /// It ran: the answers of a prefix of the round (all of it, unless a
    /// deciding generation that caps itself refused the item after them,
    /// and every item after it); per bitmap generation seq, the items it
    /// counts as new; the deciding generation's own count afterwards, for
    /// one that keeps it.
    Applied {
        answers: Vec<bool>,
        added: Vec<(u64, u64)>,
        count: Option<u64>,
    },
    /// It did not run: the guard's verdict (Ok: another client's write to
    /// the fence aborted it, the view is current).
    Aborted(Verdict),
}

pub(crate) fn decode_tx(
    view: &View,
    op: DataOp,
    sent: &TxSent,
    present: &[bool],
    replies: Replies,
) -> Result<TxOutcome> {
    use crate::error::unexpected;
    let mut replies = replies.into_iter();
    // A refused WATCH (an ACL without it) would leave the writes unguarded:
    // it is the call's error.
    expect_ok("WATCH", replies.next())?;
    let v = verdict(&view.name, &replies.next().ok_or_else(|| missing("guard"))?)?;
    expect_ok("MULTI", replies.next())?;
    // A command refused when queued (ACL, OOM) makes EXEC fail with
    // EXECABORT, which hides why: the first refusal is the error.
    let mut refused = None;
    for _ in &sent.parts {
        match replies.next().ok_or_else(|| missing("QUEUED"))? {
            Ok(Value::SimpleString(s)) if s == "QUEUED" => {}
            Ok(other) => return Err(unexpected("queued command", &other)),
            Err(e) => {
                refused.get_or_insert(e);
            }
        }
    }
    let exec = replies.next().ok_or_else(|| missing("EXEC"))?;
    if let Some(e) = refused {
        return Err(e.into());
    }
    let results = match exec? {
        Value::Nil => return Ok(TxOutcome::Aborted(v)),
        Value::Array(results) if v == Verdict::Ok => results,
        Value::Array(_) => return Ok(TxOutcome::Aborted(v)),
        other => return Err(unexpected("EXEC", &other)),
    };
    if results.len() != sent.parts.len() {
        return Err(Error::UnexpectedReply(format!(
            "EXEC: {} results for {} commands",
            results.len(),
            sent.parts.len()
        )));
    }
    let len = present.len();
    let mut yes = vec![false; len];
    let mut changed = vec![false; len];
    let mut added: Vec<(u64, u64)> = Vec::new();
    let mut count = None;
    // The first round position a deciding generation refused, if any.
    let mut stop = len;
    for (part, reply) in sent.parts.iter().zip(results) {
        if let Value::ServerError(e) = reply {
            return Err(redis::RedisError::from(e).into());
        }
        if part.count {
            match reply {
                Value::Int(n) => count = u64::try_from(n).ok(),
                other => return Err(unexpected("the generation's count", &other)),
            }
            continue;
        }
        let role = view.roles.get(part.gen).copied();
        let full = all_ones(view, part, &reply)?;
        if let Some(&p) = part.positions.get(full.len()) {
            // Only a deciding generation's write stops short.
            if !(part.set && role == Some(Role::Decide)) {
                return Err(Error::UnexpectedReply(format!(
                    "a command of generation {} answered {} of {} items",
                    part.gen,
                    full.len(),
                    part.positions.len()
                )));
            }
            stop = stop.min(p);
        }
        let mut new = 0u64;
        for (&p, f) in part.positions.iter().zip(full) {
            if p >= len {
                return Err(Error::Internal(format!("position {p} of a round of {len}")));
            }
            if part.set && !f {
                new += 1;
                if role == Some(Role::Decide) {
                    changed[p] = true;
                }
            }
            if !part.set && f {
                yes[p] = true;
            }
        }
        if part.set && new > 0 && !counts_itself(view, part.gen) {
            let seq =
                view.gens.get(part.gen).map(|g| g.seq).ok_or_else(|| {
                    Error::Internal(format!("generation {} of the view", part.gen))
                })?;
            match added.iter_mut().find(|(s, _)| *s == seq) {
                Some(e) => e.1 += new,
                None => added.push((seq, new)),
            }
        }
    }
    let answers = (0..stop)
        .map(|p| match op {
            DataOp::Has => yes[p] || present[p],
            DataOp::Add => changed[p],
            DataOp::CheckAdd => !present[p] && changed[p],
        })
        .collect();
    Ok(TxOutcome::Applied {
        answers,
        added,
        count,
    })
}

#[cfg(test)]
mod tests {
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
        assert_eq!(req.args(4), ["EXEC"]);
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
        let applied = decode_tx(
            &view,
            DataOp::CheckAdd,
            &sent,
            &present,
            replies("OK", 1, Ok(Value::Array(vec![Value::Array(bits)]))),
        )
        .unwrap();
        assert_eq!(
            applied,
            TxOutcome::Applied {
                answers: vec![true, false],
                added: vec![(0, 1)],
                count: None,
            }
        );
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
                replies(guard, 1, Ok(Value::Nil)),
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
        let mut r = replies("OK", 1, Ok(Value::Nil));
        r[0] = Err(server_error(noperm));
        match decode_tx(&view, DataOp::Add, &sent, &present, r) {
            Err(Error::PermissionDenied { message }) => {
                assert!(message.contains("watch"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        let mut r = replies("OK", 1, Ok(Value::Nil));
        r[2] = Err(server_error("ERR MULTI calls can not be nested"));
        assert!(matches!(
            decode_tx(&view, DataOp::Add, &sent, &present, r),
            Err(Error::Redis(_))
        ));
        // A command refused when queued: its error, not EXECABORT.
        let mut r = replies(
            "OK",
            1,
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
        let r = replies("OK", 1, Ok(Value::Array(vec![])));
        assert!(matches!(
            decode_tx(&view, DataOp::Add, &sent, &present, r),
            Err(Error::UnexpectedReply(_))
        ));
        // A bitmap's reply cut short is not an answer.
        let k = view.gens[0].layout.hashes as usize;
        let short = Value::Array(vec![Value::Array(vec![Value::Int(0); k])]);
        assert!(matches!(
            decode_tx(
                &view,
                DataOp::Add,
                &sent,
                &present,
                replies("OK", 1, Ok(short))
            ),
            Err(Error::UnexpectedReply(_))
        ));
        // A missing reply is an internal error, not a panic.
        let mut r = replies("OK", 1, Ok(Value::Nil));
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
        assert_eq!(sent.reserve, None);
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
}
