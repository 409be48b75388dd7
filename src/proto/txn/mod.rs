//! The guarded-transaction data path: `WATCH fence; EVAL guard; MULTI;
//! BITFIELD ...; EVALSHA commit; EXEC` (docs/FORMAT.md §8.5).
//!
//! The guard compares the fence with the client's view and rewrites it
//! (aborting the transaction) when they differ, so the bits are applied only
//! to the generations the view names, atomically with respect to every
//! structural change; the per-item check-and-set comes for free from
//! BITFIELD's old bits. It costs the server about what raw BITFIELD costs,
//! where a Lua loop over the same bits costs about twice as much. Counts of
//! bitmap generations are raised inside the transaction by an upper bound
//! (`settle`), and a second, tiny request takes the excess back only when
//! some item was there already (`commit`); a module's generation counts
//! itself, and its count is read inside the transaction. Every reply is checked: a refused `WATCH` or `MULTI` is the
//! call's error, never a transaction run unguarded.
//!
//! One job per file: the guard and its verdict (`guard`), asking whether
//! the server lets this user `WATCH` (`preflight`), reading frozen
//! generations before a check-and-insert (`read`), the transaction itself
//! (`write`), the counts inside it (`settle`), and the commit of counts and
//! reservations (`commit`).

mod commit;
mod guard;
mod preflight;
mod read;
mod settle;
#[cfg(test)]
mod testing;
mod write;

pub(crate) use commit::{commit_request, decode_commit};
pub(crate) use guard::{guard_fill, Verdict};
pub(crate) use preflight::{decode_preflight, preflight_request};
pub(crate) use read::{decode_read, read_request, ReadSent};
pub(crate) use settle::{after_tx, Settled};
pub(crate) use write::{decode_tx, tx_request, TxOutcome, TxSent};

use crate::error::{Error, Result};
use crate::request::Request;
use redis::Value;

pub(crate) use super::script::RoundOf;

/// Items per BITFIELD command: big enough to amortise the command, small
/// enough that one command does not hold the server for long.
const ITEMS_PER_COMMAND: usize = 1_000;

/// One queued command: which generation, what it does, and which round
/// positions it covers, in order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Part {
    pub gen: usize,
    pub set: bool,
    pub positions: Vec<usize>,
    /// A read of the generation's own count (a store that counts itself),
    /// after its writes: covers no item.
    pub count: bool,
}

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
            count: false,
        });
    }
}

/// For each position a part covers, in order: whether all its bits were
/// (already) 1 (or the module had the item). Fewer than the positions
/// when a store that caps itself refused the rest of a write.
fn all_ones(view: &crate::view::View, part: &Part, reply: &Value) -> Result<Vec<bool>> {
    let layout = view
        .gens
        .get(part.gen)
        .map(|g| g.layout)
        .ok_or_else(|| Error::Internal(format!("generation {} of the view", part.gen)))?;
    view.store(part.gen)
        .tx_answers(&layout, part.set, part.positions.len(), reply)
}

fn missing(what: &str) -> Error {
    Error::Internal(format!("the reply to {what} is missing"))
}

fn expect_ok(what: &str, reply: Option<redis::RedisResult<Value>>) -> Result<()> {
    match reply.ok_or_else(|| missing(what))?? {
        Value::Okay => Ok(()),
        Value::SimpleString(s) if s == "OK" => Ok(()),
        other => Err(crate::error::unexpected(what, &other)),
    }
}
