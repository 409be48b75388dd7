//! The guarded-transaction data path: pure request building and reply
//! decoding.
//!
//! A write is `WATCH fence; EVAL guard; MULTI; BITFIELD ...; EXEC`. The guard
//! compares the fence with the client's view and rewrites it (aborting the
//! transaction) when they differ, so the bits are applied only to the
//! generations the view names, atomically with respect to every structural
//! change; the per-item check-and-set comes for free from BITFIELD's old
//! bits. It costs the server about what raw BITFIELD costs, where a Lua loop
//! over the same bits costs about twice as much. Counts follow in a second,
//! tiny request (`commit`).

use crate::engine::Core;
use crate::error::{Error, Result};
use crate::exec::Request;
use crate::hashing::ItemHash;
use crate::metadata::Meta;
use crate::scripts;
use redis::Value;

/// Items per BITFIELD command: big enough to amortise the command, small
/// enough that one command does not hold the server for long.
const ITEMS_PER_COMMAND: usize = 1_000;

/// One queued BITFIELD: which generation, set or get, and which items
/// (indexes into the round) it covers, in order.
#[derive(Clone, Debug)]
pub(crate) struct Part {
    pub gen: usize,
    pub set: bool,
    pub hashes: u32,
    pub items: Vec<usize>,
    /// A RedisBloom generation: one reply value per item (BF.INSERT says 1
    /// when added, BF.MEXISTS 1 when present).
    pub module: bool,
}

/// `EVAL guard 2 fence meta token now`, sent in full so that it can never
/// be missing from the script cache: a guard that did not run would let the
/// transaction through unchecked.
pub(crate) fn guard(core: &Core, meta: &Meta, now: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(scripts::GUARD.source)
        .arg(2)
        .arg(core.keys.fence())
        .arg(core.keys.meta())
        .arg(meta.token())
        .arg(now);
    cmd
}

/// Appends the BITFIELD commands for generation `gen` over `round` (global
/// item indexes), grouped by block, to `req`, and their map to `parts`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn bitfields(
    core: &Core,
    meta: &Meta,
    gen: usize,
    set: bool,
    round: &[usize],
    hashes: &[ItemHash],
    items: &[Vec<u8>],
    req: &mut Request,
    parts: &mut Vec<Part>,
) {
    let g = &meta.gens[gen];
    if g.layout.scheme.is_module() {
        let key = core.keys.block(&meta.uid, g.seq, 0);
        for chunk in round
            .chunks(ITEMS_PER_COMMAND)
            .enumerate()
            .map(|(c, ch)| (c * ITEMS_PER_COMMAND, ch))
        {
            let (offset, ids) = chunk;
            let mut cmd = if set {
                let mut c = redis::cmd("BF.INSERT");
                c.arg(&key).arg("NOCREATE").arg("ITEMS");
                c
            } else {
                let mut c = redis::cmd("BF.MEXISTS");
                c.arg(&key);
                c
            };
            for &i in ids {
                cmd.arg(items.get(i).map(Vec::as_slice).unwrap_or_default());
            }
            req.push(cmd, None);
            parts.push(Part {
                gen,
                set,
                hashes: 1,
                items: (offset..offset + ids.len()).collect(),
                module: true,
            });
        }
        return;
    }
    let blocks = g.layout.blocks as usize;
    // Per block: the round positions and their bit positions.
    let mut by_block: Vec<Vec<(usize, crate::generation::ItemPositions)>> =
        vec![Vec::new(); blocks.max(1)];
    for (pos, &i) in round.iter().enumerate() {
        let (b, p) = g.layout.locate(&hashes[i], items.get(i).map(Vec::as_slice));
        by_block[(b as usize).min(blocks.saturating_sub(1))].push((pos, p));
    }
    for (b, list) in by_block.into_iter().enumerate() {
        if list.is_empty() {
            continue;
        }
        let key = core.keys.block(&meta.uid, g.seq, b as u32);
        for chunk in list.chunks(ITEMS_PER_COMMAND) {
            let mut cmd = redis::cmd(if set { "BITFIELD" } else { "BITFIELD_RO" });
            cmd.arg(&key);
            let mut covered = Vec::with_capacity(chunk.len());
            for (pos, positions) in chunk {
                covered.push(*pos);
                for p in positions.clone() {
                    if set {
                        cmd.arg("SET").arg("u1").arg(p).arg(1);
                    } else {
                        cmd.arg("GET").arg("u1").arg(p);
                    }
                }
            }
            req.push(cmd, None);
            parts.push(Part {
                gen,
                set,
                hashes: g.layout.hashes,
                items: covered,
                module: false,
            });
        }
    }
}

/// For each item a part covers: whether all its bits were (already) 1.
pub(crate) fn all_ones(part: &Part, reply: &Value) -> Result<Vec<bool>> {
    let Value::Array(bits) = reply else {
        return Err(Error::UnexpectedReply(format!("BITFIELD: {reply:?}")));
    };
    if part.module {
        if bits.len() != part.items.len() {
            return Err(Error::UnexpectedReply(format!(
                "{} answers for {} items",
                bits.len(),
                part.items.len()
            )));
        }
        // BF.INSERT: 1 added (not all set before); BF.MEXISTS: 1 present.
        return Ok(bits
            .iter()
            .map(|v| matches!(v, Value::Int(1)) != part.set)
            .collect());
    }
    let k = part.hashes as usize;
    if bits.len() != k * part.items.len() {
        return Err(Error::UnexpectedReply(format!(
            "BITFIELD returned {} values for {} items of {k} bits",
            bits.len(),
            part.items.len()
        )));
    }
    Ok(bits
        .chunks(k)
        .map(|c| c.iter().all(|v| matches!(v, Value::Int(1))))
        .collect())
}

/// `EVALSHA commit meta uid seq added ...`: adds to the generations' counts.
pub(crate) fn commit(
    core: &Core,
    meta: &Meta,
    added: &[(u64, u64)],
) -> Option<(redis::Cmd, &'static scripts::LuaScript)> {
    let added: Vec<&(u64, u64)> = added.iter().filter(|(_, n)| *n > 0).collect();
    if added.is_empty() {
        return None;
    }
    let mut cmd = scripts::COMMIT.invoke(&[core.keys.meta()]);
    cmd.arg(&meta.uid);
    for (seq, n) in added {
        cmd.arg(*seq).arg(*n);
    }
    Some((cmd, &scripts::COMMIT))
}

/// What the guard said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Ok,
    Stale,
    Due,
}

pub(crate) fn verdict(reply: &redis::RedisResult<Value>) -> Result<Verdict> {
    match reply {
        Ok(Value::BulkString(b)) if b == b"OK" => Ok(Verdict::Ok),
        Ok(Value::BulkString(b)) if b == b"STALE" => Ok(Verdict::Stale),
        Ok(Value::BulkString(b)) if b == b"DUE" => Ok(Verdict::Due),
        Ok(Value::SimpleString(s)) if s == "OK" => Ok(Verdict::Ok),
        Ok(Value::Okay) => Ok(Verdict::Ok),
        Ok(v) => Err(Error::UnexpectedReply(format!("guard: {v:?}"))),
        Err(e) => Err(e.clone().into()),
    }
}
