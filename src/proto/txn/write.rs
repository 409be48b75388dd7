//! The transaction of one round (docs/FORMAT.md §8.5): `WATCH fence;
//! guard; MULTI; commands...; EXEC`, and what its replies say.

use super::guard::{guard, verdict, Reserve, Verdict};
use super::settle::{decode_settle, settle_cmd, Settled};
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
    /// With a commit queued after the writes (`settle`): per bitmap
    /// generation seq, the items written there, which it adds.
    pub settle: Option<Vec<(u64, u64)>>,
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
    // The bitmap generation that decides a write: (seq, capacity).
    let decider = gens
        .iter()
        .filter(|&&g| view.roles.get(g) == Some(&Role::Decide) && !counts_itself(view, g))
        .filter_map(|&g| view.gens.get(g))
        .map(|g| (g.seq, g.capacity))
        .next()
        .filter(|_| op != DataOp::Has);
    let reserve = match limit {
        Limit::Open => None,
        Limit::Capacity => decider.map(|(seq, capacity)| Reserve {
            seq,
            capacity,
            items: positions.len() as u64,
            id: crate::uid::new_uid(),
        }),
    };
    req.push(redis::cmd("WATCH").arg(keys.fence()).clone(), None);
    req.push(guard(keys, view, gens, now, reserve.as_ref()), None);
    req.push(redis::cmd("MULTI"), None);
    let mut parts = Vec::new();
    let mut bound: Vec<(u64, u64)> = Vec::new();
    for &g in gens {
        let Some(&role) = view.roles.get(g) else {
            continue;
        };
        let (take, set) = takes_part(op, role);
        if !take || positions.is_empty() {
            continue;
        }
        commands(r, g, set, &positions, &mut req, &mut parts);
        if let (true, false, Some(gen)) = (set, counts_itself(view, g), view.gens.get(g)) {
            bound.push((gen.seq, positions.len() as u64));
        }
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
    let settle = settle_cmd(keys, reserve.as_ref(), decider, &bound).map(|cmd| {
        req.push(cmd, None);
        bound
    });
    req.push(redis::cmd("EXEC"), None);
    (
        req,
        TxSent {
            parts,
            reserve,
            settle,
        },
    )
}

/// What a transaction did.
#[derive(Debug, PartialEq)]
pub(crate) enum TxOutcome {
    /// It ran: the answers of a prefix of the round (all of it, unless a
    /// deciding generation that caps itself refused the item after them,
    /// and every item after it); per bitmap generation seq, the items it
    /// counts as new; the deciding generation's own count afterwards, for
    /// one that keeps it; what the commit queued after the writes did.
    Applied {
        answers: Vec<bool>,
        added: Vec<(u64, u64)>,
        count: Option<u64>,
        settled: Settled,
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
    let settles = usize::from(sent.settle.is_some());
    for _ in 0..sent.parts.len() + settles {
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
    let mut results = match exec? {
        Value::Nil => return Ok(TxOutcome::Aborted(v)),
        Value::Array(results) if v == Verdict::Ok => results,
        Value::Array(_) => return Ok(TxOutcome::Aborted(v)),
        other => return Err(unexpected("EXEC", &other)),
    };
    if results.len() != sent.parts.len() + settles {
        return Err(Error::UnexpectedReply(format!(
            "EXEC: {} results for {} commands",
            results.len(),
            sent.parts.len() + settles
        )));
    }
    // The queued commit is the last command; a corrupt count it met is
    // the call's error, with the bits in.
    let settled = match &sent.settle {
        Some(bound) => {
            let reply = results.pop().ok_or_else(|| missing("the queued commit"))?;
            decode_settle(&view.name, bound, reply)?
        }
        None => Settled::After,
    };
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
        settled,
    })
}

#[cfg(test)]
mod tests;
