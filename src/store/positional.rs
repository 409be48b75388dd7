//! What every store that places bits itself shares (the format-1 bitmap
//! and the legacy bitmaps): an item is a block and k bit offsets in it; a
//! data call passes them, a transaction sets or reads them with
//! `BITFIELD`, `info` counts them with `BITCOUNT`.

use super::{Held, ScriptShare, TxCommand};
use crate::error::{Error, Result};
use crate::store::generation::{ItemPositions, Layout};
use redis::Value;

/// Where an item lies: its block and its offsets there.
pub(super) type Place = (u32, ItemPositions);

/// The data script's share of a positional generation: per item its
/// block and its offsets.
pub(super) fn script_share<'a>(
    l: &Layout,
    items: &[usize],
    place: impl Fn(usize) -> Option<Place>,
) -> ScriptShare<'a> {
    let located: Vec<Place> = items.iter().filter_map(|&i| place(i)).collect();
    let mut touched: Vec<u32> = located.iter().map(|(b, _)| *b).collect();
    touched.sort_unstable();
    touched.dedup();
    ScriptShare::placed(l.hashes, touched, located)
}

/// `BITFIELD` (set) or `BITFIELD_RO` commands over `items`, grouped by
/// block, at most `per_command` items each.
pub(super) fn tx_commands(
    l: &Layout,
    key: &dyn Fn(u32) -> String,
    items: &[(usize, usize)],
    set: bool,
    per_command: usize,
    place: impl Fn(usize) -> Option<Place>,
) -> Vec<TxCommand> {
    let blocks = l.blocks.max(1) as usize;
    let mut by_block: Vec<Vec<(usize, ItemPositions)>> = vec![Vec::new(); blocks];
    for &(p, i) in items {
        if let Some((b, bits)) = place(i) {
            by_block[(b as usize).min(blocks - 1)].push((p, bits));
        }
    }
    let mut out = Vec::new();
    for (b, list) in by_block.into_iter().enumerate() {
        let key = key(b as u32);
        for chunk in list.chunks(per_command.max(1)) {
            let mut cmd = redis::cmd(if set { "BITFIELD" } else { "BITFIELD_RO" });
            cmd.arg(&key);
            for (_, bits) in chunk {
                for o in bits.clone() {
                    if set {
                        cmd.arg("SET").arg("u1").arg(o).arg(1);
                    } else {
                        cmd.arg("GET").arg("u1").arg(o);
                    }
                }
            }
            out.push(TxCommand {
                cmd,
                positions: chunk.iter().map(|(p, _)| *p).collect(),
            });
        }
    }
    out
}

/// Per item of a `BITFIELD`'s reply: whether all its k bits were 1.
pub(super) fn tx_answers(l: &Layout, items: usize, reply: &Value) -> Result<Vec<bool>> {
    let Value::Array(bits) = reply else {
        return Err(crate::error::unexpected("BITFIELD", reply));
    };
    let k = l.hashes as usize;
    if k == 0 || bits.len() != k * items {
        return Err(Error::UnexpectedReply(format!(
            "BITFIELD returned {} values for {items} items of {k} bits",
            bits.len()
        )));
    }
    Ok(bits
        .chunks(k)
        .map(|c| c.iter().all(|v| matches!(v, Value::Int(1))))
        .collect())
}

/// The most bytes one `BITCOUNT` of `info` counts, so that none holds the
/// server for long (and a round trip of them counts at most as many).
pub(crate) const COUNT_BYTES: u64 = 4 << 20;

/// The byte ranges of a block that its `BITCOUNT`s cover.
pub(super) fn ranges(block_bytes: u64) -> Vec<(u64, u64)> {
    (0..block_bytes.div_ceil(COUNT_BYTES).max(1))
        .map(|i| {
            let start = i * COUNT_BYTES;
            (start, (start + COUNT_BYTES).min(block_bytes.max(1)) - 1)
        })
        .collect()
}

/// `BITCOUNT`s over each range (costing their bytes), then `STRLEN`.
pub(super) fn info_commands(l: &Layout, key: &str) -> Vec<(redis::Cmd, u64)> {
    let mut out: Vec<(redis::Cmd, u64)> = ranges(l.block_bits().div_ceil(8))
        .into_iter()
        .map(|(s, e)| {
            (
                redis::cmd("BITCOUNT").arg(key).arg(s).arg(e).clone(),
                e + 1 - s,
            )
        })
        .collect();
    out.push((redis::cmd("STRLEN").arg(key).clone(), 0));
    out
}

fn int(reply: Option<redis::RedisResult<Value>>, what: &str) -> Result<u64> {
    match reply {
        Some(Ok(Value::Int(n))) => u64::try_from(n)
            .map_err(|_| Error::UnexpectedReply(format!("{what} replied a negative count {n}"))),
        Some(Ok(v)) => Err(crate::error::unexpected(what, &v)),
        Some(Err(e)) => Err(e.into()),
        None => Err(Error::Internal(format!("the reply to {what} is missing"))),
    }
}

/// One block's bits and bytes; `full`, when rotabloom made it at that
/// size, tells a short one.
pub(super) fn info_block(
    l: &Layout,
    block: u32,
    replies: &mut dyn Iterator<Item = redis::RedisResult<Value>>,
    out: &mut Held,
    full: Option<u64>,
) -> Result<()> {
    let mut bits = 0u64;
    for _ in ranges(l.block_bits().div_ceil(8)) {
        bits = bits.saturating_add(int(replies.next(), "BITCOUNT")?);
    }
    let len = int(replies.next(), "STRLEN")?;
    out.set_bits = out.set_bits.saturating_add(bits);
    out.memory_bytes = out.memory_bytes.saturating_add(len);
    if len == 0 || full.is_some_and(|full| len < full) {
        out.short.push((block, len));
    }
    Ok(())
}
