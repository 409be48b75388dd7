//! The guarded-transaction data path: `WATCH fence; EVAL guard; MULTI;
//! BITFIELD ...; EXEC`.
//!
//! The guard compares the fence with the client's view and rewrites it
//! (aborting the transaction) when they differ, so the bits are applied only
//! to the generations the view names, atomically with respect to every
//! structural change; the per-item check-and-set comes for free from
//! BITFIELD's old bits. It costs the server about what raw BITFIELD costs,
//! where a Lua loop over the same bits costs about twice as much. Counts
//! follow in a second, tiny request (`commit`). Every reply is checked: a
//! refused `WATCH` or `MULTI` is the call's error, never a transaction run
//! unguarded.

use super::script::DataOp;
use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::proto::request::{Replies, Request};
use crate::scripts;
use crate::view::{Role, View};
use redis::Value;

/// Items per BITFIELD command: big enough to amortise the command, small
/// enough that one command does not hold the server for long.
const ITEMS_PER_COMMAND: usize = 1_000;

/// One queued command: which generation, set or get, and which round
/// positions it covers, in order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Part {
    pub gen: usize,
    pub set: bool,
    pub positions: Vec<usize>,
}

/// What the guard said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The transaction runs (unless another client's write to the fence
    /// aborts it).
    Ok,
    Stale,
    /// A lazy rotation is due, as judged at this instant (ms).
    Due(Option<i64>),
    /// The deciding generation has no room for the items the transaction
    /// may add: nothing was reserved, the transaction did not run.
    Full,
}

/// How long a reservation holds if its commit never comes (the writer
/// died between its guard and its commit). A commit follows its
/// transaction by one round trip; only a writer stalled longer than this
/// between the two could see its room given to another.
pub(crate) const RESERVATION_MS: u64 = 30_000;

/// Room a transaction reserves in its deciding generation before it runs:
/// the generation's seq, its capacity, how many items the transaction may
/// add to it, and the reservation's unique id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reserve {
    pub seq: u64,
    pub capacity: u64,
    pub items: u64,
    pub id: String,
}

impl Reserve {
    /// The reservation's member in the sorted set: `SEQ:ITEMS:ID`.
    pub fn member(&self) -> String {
        format!("{}:{}:{}", self.seq, self.items, self.id)
    }
}

/// `EVAL guard n fence meta blocks... token due now [reserve] sizes...`,
/// sent in full so that it can never be missing from the script cache: a
/// guard that did not run would let the transaction through unchecked.
/// `gens` are the generations the transaction touches: their blocks must
/// all exist, whole.
fn guard(
    keys: &Keys,
    view: &View,
    gens: &[usize],
    now: &str,
    reserve: Option<&Reserve>,
) -> redis::Cmd {
    let due = view
        .policy
        .lazy_due_at()
        .map(|t| t.to_string())
        .unwrap_or_default();
    let blocks: Vec<(String, crate::generation::BlockCheck)> = gens
        .iter()
        .filter_map(|&g| view.gens.get(g))
        .filter(|g| g.layout.block_check() != crate::generation::BlockCheck::MayBeAbsent)
        .flat_map(|g| {
            let check = g.layout.block_check();
            (0..g.layout.blocks).map(move |b| (keys.block(&view.uid, g.seq, b), check))
        })
        .collect();
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(scripts::GUARD.source)
        .arg(3 + blocks.len())
        .arg(keys.fence())
        .arg(keys.meta())
        .arg(keys.reservations());
    for (b, _) in &blocks {
        cmd.arg(b);
    }
    cmd.arg(view.token()).arg(due).arg(now);
    match reserve {
        Some(r) => cmd
            .arg(r.member())
            .arg(r.seq)
            .arg(r.capacity)
            .arg(r.items)
            .arg(RESERVATION_MS),
        None => cmd.arg("").arg(0).arg(0).arg(0).arg(0),
    };
    for (_, check) in &blocks {
        cmd.arg(check.guard_arg());
    }
    cmd
}

/// The deciding generation's count with the reservation, from a guard's
/// `OK COUNT`.
fn reserved_count(verdict: &str) -> Option<u64> {
    verdict.strip_prefix("OK ")?.parse().ok()
}

/// The count a guard's reply says the deciding generation holds with its
/// reservation, if it reserved.
pub(crate) fn guard_fill(reply: Option<&redis::RedisResult<Value>>) -> Option<u64> {
    match reply? {
        Ok(v) => reserved_count(&super::as_string(v)?),
        Err(_) => None,
    }
}

/// The guard's answer; missing blocks are the call's error.
pub(crate) fn verdict(name: &str, reply: &redis::RedisResult<Value>) -> Result<Verdict> {
    match reply {
        Ok(v) => match super::as_string(v).as_deref() {
            Some(s) if s == "OK" || reserved_count(s).is_some() => Ok(Verdict::Ok),
            Some("STALE") => Ok(Verdict::Stale),
            Some(s) if s == "DUE" || s.starts_with("DUE ") => Ok(Verdict::Due(
                s.strip_prefix("DUE ").and_then(|n| n.parse().ok()),
            )),
            Some("FULL") => Ok(Verdict::Full),
            Some(s) if s.starts_with("WRONGTYPE ") => {
                Err(super::wrong_block_type(&s["WRONGTYPE ".len()..]))
            }
            Some(s) if s.starts_with("MISSING ") => Err(Error::MissingData {
                name: name.to_string(),
                keys: s.split(' ').skip(1).map(str::to_string).collect(),
            }),
            _ => Err(super::unexpected("guard", v)),
        },
        Err(e) => Err(Error::from_script(name, e.clone())),
    }
}

pub(crate) use super::script::RoundOf;

/// Appends the commands for generation `gen` over the round positions
/// `positions`, as its store lays them out.
fn commands(
    r: RoundOf<'_>,
    gen: usize,
    set: bool,
    positions: &[usize],
    req: &mut Request,
    parts: &mut Vec<Part>,
) {
    let RoundOf {
        keys,
        view,
        round,
        batch,
    } = r;
    let Some(g) = view.gens.get(gen) else { return };
    let items: Vec<(usize, usize)> = positions
        .iter()
        .filter_map(|&p| round.get(p).map(|&i| (p, i)))
        .collect();
    let key = |b: u32| keys.block(&view.uid, g.seq, b);
    for c in view
        .store(gen)
        .tx_commands(&g.layout, &key, batch, &items, set, ITEMS_PER_COMMAND)
    {
        req.push(c.cmd, None);
        parts.push(Part {
            gen,
            set,
            positions: c.positions,
        });
    }
}

/// For each position a part covers: whether all its bits were (already) 1
/// (or the module had the item).
pub(crate) fn all_ones(view: &View, part: &Part, reply: &Value) -> Result<Vec<bool>> {
    let layout = view
        .gens
        .get(part.gen)
        .map(|g| g.layout)
        .ok_or_else(|| Error::Internal(format!("generation {} of the view", part.gen)))?;
    view.store(part.gen)
        .tx_answers(&layout, part.set, part.positions.len(), reply)
}

/// Phase A of a check-and-insert over query-only generations the server
/// holds: read them, with the guard telling whether the view was current.
#[derive(Debug)]
pub(crate) struct ReadSent {
    pub parts: Vec<Part>,
}

pub(crate) fn read_request(r: RoundOf<'_>, gens: &[usize], now: &str) -> (Request, ReadSent) {
    let mut req = Request::new().read_only();
    req.push(guard(r.keys, r.view, gens, now, None), None);
    let mut parts = Vec::new();
    let all: Vec<usize> = (0..r.round.len()).collect();
    for &g in gens {
        commands(r, g, false, &all, &mut req, &mut parts);
    }
    (req, ReadSent { parts })
}

/// Per round position, whether a read generation holds the item; or the
/// guard's verdict when the view was not current.
pub(crate) fn decode_read(
    view: &View,
    sent: &ReadSent,
    len: usize,
    replies: Replies,
) -> Result<std::result::Result<Vec<bool>, Verdict>> {
    let mut replies = replies.into_iter();
    let v = verdict(&view.name, &replies.next().ok_or_else(|| missing("guard"))?)?;
    if v != Verdict::Ok {
        return Ok(Err(v));
    }
    let mut present = vec![false; len];
    for part in &sent.parts {
        let reply = replies.next().ok_or_else(|| missing("BITFIELD_RO"))??;
        for (&p, f) in part.positions.iter().zip(all_ones(view, part, &reply)?) {
            if let Some(slot) = present.get_mut(p) {
                *slot |= f;
            }
        }
    }
    Ok(Ok(present))
}

fn missing(what: &str) -> Error {
    Error::Internal(format!("the reply to {what} is missing"))
}

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

/// `WATCH fence; UNWATCH`: whether the server lets this user watch, asked
/// before the first transaction rather than learnt from one that ran
/// unguarded.
pub(crate) fn preflight_request(keys: &Keys) -> Request {
    let mut req = Request::new().read_only();
    req.push(redis::cmd("WATCH").arg(keys.fence()).clone(), None);
    req.push(redis::cmd("UNWATCH"), None);
    req
}

pub(crate) fn decode_preflight(replies: Replies) -> Result<()> {
    let mut replies = replies.into_iter();
    expect_ok("WATCH", replies.next())?;
    expect_ok("UNWATCH", replies.next())
}

/// `WATCH fence; guard; MULTI; commands...; EXEC` over `round`. `gens` are
/// the generations the server must serve (mirrored ones are answered
/// locally); `present` tells, per round position, whether the item is
/// already known present (check-and-insert writes only the others). With
/// `limit`, the guard reserves room in the deciding generation for every
/// item the transaction writes there, or refuses (`Verdict::Full`).
pub(crate) fn tx_request(
    r: RoundOf<'_>,
    op: DataOp,
    gens: &[usize],
    present: &[bool],
    now: &str,
    limit: super::script::Limit,
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
        (DataOp::Has, _) | (_, super::script::Limit::Open) => None,
        _ => gens
            .iter()
            .filter(|&&g| view.roles.get(g) == Some(&Role::Decide))
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
        if take && !positions.is_empty() {
            commands(r, g, set, &positions, &mut req, &mut parts);
        }
    }
    req.push(redis::cmd("EXEC"), None);
    (req, TxSent { parts, reserve })
}

/// What a transaction did.
#[derive(Debug, PartialEq)]
pub(crate) enum TxOutcome {
    /// It ran: per round position, the answer; per generation seq, the
    /// items it counts as new.
    Applied {
        answers: Vec<bool>,
        added: Vec<(u64, u64)>,
    },
    /// It did not run: the guard's verdict (Ok: another client's write to
    /// the fence aborted it, the view is current).
    Aborted(Verdict),
}

fn expect_ok(what: &str, reply: Option<redis::RedisResult<Value>>) -> Result<()> {
    match reply.ok_or_else(|| missing(what))?? {
        Value::Okay => Ok(()),
        Value::SimpleString(s) if s == "OK" => Ok(()),
        other => Err(super::unexpected(what, &other)),
    }
}

pub(crate) fn decode_tx(
    view: &View,
    op: DataOp,
    sent: &TxSent,
    present: &[bool],
    replies: Replies,
) -> Result<TxOutcome> {
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
            Ok(other) => return Err(super::unexpected("queued command", &other)),
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
        other => return Err(super::unexpected("EXEC", &other)),
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
    for (part, reply) in sent.parts.iter().zip(results) {
        if let Value::ServerError(e) = reply {
            return Err(redis::RedisError::from(e).into());
        }
        let role = view.roles.get(part.gen).copied();
        let full = all_ones(view, part, &reply)?;
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
        if part.set && new > 0 {
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
    let answers = (0..len)
        .map(|p| match op {
            DataOp::Has => yes[p] || present[p],
            DataOp::Add => changed[p],
            DataOp::CheckAdd => !present[p] && changed[p],
        })
        .collect();
    Ok(TxOutcome::Applied { answers, added })
}

/// `EVALSHA commit meta reservations uid cleared member seq added ...`:
/// releases the reservation (if any) and adds to the generations' counts,
/// if the filter is still the view's instance and was not cleared since.
/// None when there is nothing to do.
pub(crate) fn commit_request(
    keys: &Keys,
    view: &View,
    reserve: Option<&Reserve>,
    added: &[(u64, u64)],
) -> Option<Request> {
    let added: Vec<&(u64, u64)> = added.iter().filter(|(_, n)| *n > 0).collect();
    if added.is_empty() && reserve.is_none() {
        return None;
    }
    let mut cmd = scripts::COMMIT.invoke(&[keys.meta().to_string(), keys.reservations()]);
    cmd.arg(&view.uid)
        .arg(view.cleared)
        .arg(reserve.map(Reserve::member).unwrap_or_default());
    for (seq, n) in added {
        cmd.arg(*seq).arg(*n);
    }
    let mut req = Request::new();
    req.script(&scripts::COMMIT, cmd);
    Some(req)
}

/// The commit's reply: each committed generation's count afterwards, by
/// seq (a generation gone meanwhile is left out).
pub(crate) fn decode_commit(added: &[(u64, u64)], reply: Value) -> Result<Vec<(u64, u64)>> {
    let Value::Array(counts) = &reply else {
        return Err(super::unexpected("commit", &reply));
    };
    let seqs = added.iter().filter(|(_, n)| *n > 0).map(|(s, _)| *s);
    if !counts.is_empty() && counts.len() != seqs.clone().count() {
        return Err(super::unexpected("commit counts", &reply));
    }
    Ok(seqs
        .zip(counts)
        .filter_map(|(seq, c)| match c {
            Value::Int(n) => u64::try_from(*n).ok().map(|n| (seq, n)),
            _ => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hashing::ItemHash;
    use crate::proto::script::{Batch, Limit};
    use crate::testkit::{keys, server_error, view_of};
    use redis::Value;

    fn hashes(n: usize) -> Vec<ItemHash> {
        (0..n).map(|i| ItemHash::of(format!("item{i}"))).collect()
    }

    fn ones(k: usize, n: usize, bit: i64) -> Value {
        Value::Array(vec![Value::Int(bit); k * n])
    }

    fn queued() -> redis::RedisResult<Value> {
        Ok(Value::SimpleString("QUEUED".into()))
    }

    /// The replies of a transaction over a one-generation filter: WATCH,
    /// guard, MULTI, QUEUED per part, EXEC.
    fn replies(guard: &str, parts: usize, exec: redis::RedisResult<Value>) -> Replies {
        let mut r = vec![
            Ok(Value::Okay),
            Ok(Value::BulkString(guard.into())),
            Ok(Value::Okay),
        ];
        r.extend((0..parts).map(|_| queued()));
        r.push(exec);
        r
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

    /// A bloom view, and the transaction of `op` over two items.
    fn two_new(op: DataOp) -> (View, TxSent) {
        let view = view_of("bloom", 1);
        let h = hashes(2);
        let batch = Batch {
            hashes: &h,
            items: &crate::items::Items::default(),
        };
        let r = RoundOf {
            keys: &keys("t"),
            view: &view,
            round: &[0, 1],
            batch,
        };
        let (_, sent) = tx_request(r, op, &[0], &[false, false], "", Limit::Open);
        (view, sent)
    }

    #[test]
    fn every_verdict_of_a_transaction_decodes() {
        let (view, sent) = two_new(DataOp::CheckAdd);
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
                added: vec![(0, 1)]
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
        let (view, sent) = two_new(DataOp::Add);
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
        // A missing reply is an internal error, not a panic.
        let mut r = replies("OK", 1, Ok(Value::Nil));
        r.truncate(2);
        assert!(matches!(
            decode_tx(&view, DataOp::Add, &sent, &present, r),
            Err(Error::Internal(_))
        ));
    }

    #[test]
    fn phase_a_reads_query_generations_under_the_guard() {
        let view = view_of("circular", 3);
        let h = hashes(2);
        let batch = Batch {
            hashes: &h,
            items: &crate::items::Items::default(),
        };
        let r = RoundOf {
            keys: &keys("t"),
            view: &view,
            round: &[0, 1],
            batch,
        };
        let (req, sent) = read_request(r, &[0, 1], "");
        assert_eq!(req.args(0)[0], "EVAL");
        assert_eq!(sent.parts.len(), 2);
        assert!(sent.parts.iter().all(|p| !p.set));
        let k = view.gens[0].layout.hashes as usize;
        let r = vec![
            Ok(Value::BulkString(b"OK".to_vec())),
            Ok(ones(k, 2, 1)),
            Ok(ones(k, 2, 0)),
        ];
        assert_eq!(
            decode_read(&view, &sent, 2, r).unwrap(),
            Ok(vec![true, true])
        );
        let r = vec![Ok(Value::BulkString(b"STALE".to_vec()))];
        assert_eq!(
            decode_read(&view, &sent, 2, r).unwrap(),
            Err(Verdict::Stale)
        );
    }

    #[test]
    fn commit_names_the_generations_of_the_view() {
        let view = view_of("circular", 3);
        let req = commit_request(&keys("t"), &view, None, &[(2, 5), (1, 0)]).unwrap();
        let args = req.args(0);
        // The instance, its clear count, no reservation, then (seq, added).
        assert_eq!(
            &args[args.len() - 5..],
            ["0123456789abcdef", "0", "", "2", "5"]
        );
        assert!(commit_request(&keys("t"), &view, None, &[(2, 0)]).is_none());
        // A reservation alone is released.
        let r = Reserve {
            seq: 2,
            capacity: 10,
            items: 4,
            id: "ab".into(),
        };
        let release = commit_request(&keys("t"), &view, Some(&r), &[]).unwrap();
        let args = release.args(0);
        assert_eq!(&args[args.len() - 3..], ["0123456789abcdef", "0", "2:4:ab"]);
        let added = [(2, 5), (1, 0), (3, 1)];
        let reply = Value::Array(vec![Value::Int(12), Value::Int(-1)]);
        assert_eq!(decode_commit(&added, reply).unwrap(), [(2, 12)]);
        assert!(decode_commit(&added, Value::Array(vec![]))
            .unwrap()
            .is_empty());
        assert!(decode_commit(&added, Value::Int(1)).is_err());
        assert!(decode_commit(&added, Value::Array(vec![Value::Int(1)])).is_err());
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
        // The guard's answers.
        let ok = |s: &str| -> redis::RedisResult<Value> { Ok(Value::BulkString(s.into())) };
        assert_eq!(verdict("t", &ok("OK 57")).unwrap(), Verdict::Ok);
        assert_eq!(guard_fill(Some(&ok("OK 57"))), Some(57));
        assert_eq!(guard_fill(Some(&ok("OK"))), None);
        assert_eq!(verdict("t", &ok("FULL")).unwrap(), Verdict::Full);
        assert!(verdict("t", &ok("OK x")).is_err());
    }
}
