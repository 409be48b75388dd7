//! The guard (`lua/guard.lua`, docs/FORMAT.md §8.5.1): the script between
//! `WATCH` and `MULTI` that lets the transaction run only on the view's
//! structure, with every block it touches whole and, for a capped write,
//! room reserved; and its verdict.

use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::scripts;
use crate::view::View;
use redis::Value;

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

/// How long a reservation holds if no commit releases it (the writer died
/// between its guard and its `EXEC`, or its transaction did not run). A
/// transaction that runs releases it itself, with the commit queued inside;
/// only one that ran without that commit (`NOSCRIPT`) owes a commit after
/// it, a round trip later.
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
pub(super) fn guard(
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
    let blocks: Vec<(String, crate::store::generation::BlockCheck)> = gens
        .iter()
        .filter_map(|&g| view.gens.get(g))
        .filter(|g| g.layout.block_check() != crate::store::generation::BlockCheck::MayBeAbsent)
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
        Ok(v) => reserved_count(&super::super::as_string(v)?),
        Err(_) => None,
    }
}

/// The guard's answer; missing blocks are the call's error.
pub(crate) fn verdict(name: &str, reply: &redis::RedisResult<Value>) -> Result<Verdict> {
    use super::super::{as_string, wrong_block_type};
    use crate::error::unexpected;
    match reply {
        Ok(v) => match as_string(v).as_deref() {
            Some(s) if s == "OK" || reserved_count(s).is_some() => Ok(Verdict::Ok),
            Some("STALE") => Ok(Verdict::Stale),
            Some(s) if s == "DUE" || s.starts_with("DUE ") => Ok(Verdict::Due(
                s.strip_prefix("DUE ").and_then(|n| n.parse().ok()),
            )),
            Some("FULL") => Ok(Verdict::Full),
            Some(s) if s.starts_with("WRONGTYPE ") => {
                Err(wrong_block_type(&s["WRONGTYPE ".len()..]))
            }
            Some(s) if s.starts_with("MISSING ") => Err(Error::MissingData {
                name: name.to_string(),
                keys: s.split(' ').skip(1).map(str::to_string).collect(),
            }),
            _ => Err(unexpected("guard", v)),
        },
        Err(e) => Err(Error::from_script(name, e.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_answers_decode() {
        let ok = |s: &str| -> redis::RedisResult<Value> { Ok(Value::BulkString(s.into())) };
        assert_eq!(verdict("t", &ok("OK 57")).unwrap(), Verdict::Ok);
        assert_eq!(guard_fill(Some(&ok("OK 57"))), Some(57));
        assert_eq!(guard_fill(Some(&ok("OK"))), None);
        assert_eq!(verdict("t", &ok("FULL")).unwrap(), Verdict::Full);
        assert_eq!(verdict("t", &ok("DUE 17")).unwrap(), Verdict::Due(Some(17)));
        assert!(verdict("t", &ok("OK x")).is_err());
        match verdict("t", &ok("MISSING k1 k2")) {
            Err(Error::MissingData { keys, .. }) => assert_eq!(keys, ["k1", "k2"]),
            other => panic!("{other:?}"),
        }
    }
}
