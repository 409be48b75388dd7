//! The data script (`lua/data.lua`): one atomic call per chunk of items,
//! pipelined, for every operation and every filter. The path for small
//! batches, capped generations and filters that write more than one
//! generation.

use super::as_string;
use crate::error::unexpected;
use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::request::Request;
use crate::scripts;
use crate::view::{Role, View};
use redis::Value;

/// Limits of one script call: arguments and items. Bigger inputs are cut
/// into several calls, pipelined in one round trip; small calls keep any one
/// script short (a few milliseconds), so other clients are not held up.
const MAX_ARGS_PER_CALL: usize = 16_000;
const MAX_ITEMS_PER_CALL: usize = 500;

/// The three data operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DataOp {
    /// Insert; true when the write changed the filter.
    Add,
    /// Query; true when present.
    Has,
    /// Check-and-insert; true when the item was new.
    CheckAdd,
}

impl DataOp {
    fn code(self) -> &'static str {
        match self {
            DataOp::Add => "add",
            DataOp::Has => "has",
            DataOp::CheckAdd => "cai",
        }
    }
}

pub(crate) use crate::items::Batch;

fn role_code(role: Role) -> &'static str {
    match role {
        Role::Query => "q",
        Role::Decide => "d",
        Role::Write => "w",
    }
}

/// What every request of a round is built from: the filter's keys, the
/// snapshot, the round (indexes into the batch) and the batch.
#[derive(Clone, Copy)]
pub(crate) struct RoundOf<'a> {
    pub keys: &'a Keys,
    pub view: &'a View,
    pub round: &'a [usize],
    pub batch: Batch<'a>,
}

/// Frozen generations the client mirrors (`mirrored`, indexes into the
/// view's list) and the items found in them (`present`, batch indexes):
/// the call leaves those generations out and passes the findings instead,
/// so the script confirms them with its view check.
#[derive(Clone, Debug, Default)]
pub(crate) struct Local {
    pub mirrored: Vec<usize>,
    pub present: std::collections::HashSet<usize>,
}

/// Whether the writes of a call stop at the deciding generation's
/// capacity, item by item inside the atomic step (an expanding filter's
/// generation, or any generation when the handle refuses writes past
/// capacity), or go on past it (`when_full = warn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Limit {
    /// Writes go on past capacity.
    Open,
    /// Writes stop at capacity.
    Capacity,
}

/// Where a write keeps its answers so that a retry after a lost reply gets
/// them back (`lua/data.lua`): the record key, and for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub key: String,
    pub ttl_ms: u64,
}

/// One generation's share of a call, as its store lays it out.
struct Part<'a> {
    gen: &'a crate::store::generation::Generation,
    role: Role,
    share: crate::store::ScriptShare<'a>,
}

/// `round` cut into calls: runs of consecutive items (a call names its
/// items by the first one's index, for the record), each of at most
/// `per_call` items.
fn calls(round: &[usize], per_call: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for &i in round {
        match out.last_mut() {
            Some(c) if c.len() < per_call && c.last().is_some_and(|&l| l + 1 == i) => c.push(i),
            _ => out.push(vec![i]),
        }
    }
    out
}

/// The calls for `round` (indexes into the batch), in chunks; returns the
/// request and each chunk's items. With a `record`, each call keeps its
/// answers there.
pub(crate) fn request(
    r: RoundOf<'_>,
    op: DataOp,
    now: &str,
    record: Option<&Record>,
    local: &Local,
    limit: Limit,
) -> (Request, Vec<Vec<usize>>) {
    let RoundOf {
        keys,
        view,
        round,
        batch,
    } = r;
    // Reads leave write-only generations alone: they answer nothing; and
    // mirrored generations are answered by the client.
    let groups: Vec<(usize, Role)> = view
        .roles
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, r)| op != DataOp::Has || *r != Role::Write)
        .filter(|(g, _)| !local.mirrored.contains(g))
        .collect();
    // Inserts read no query generation, so they need no findings.
    let findings = !local.mirrored.is_empty() && op != DataOp::Add;
    let per_item: usize = groups
        .iter()
        .filter_map(|(g, _)| view.gens.get(*g))
        .map(|g| g.layout.args_per_item())
        .sum::<usize>()
        + usize::from(findings);
    let per_call = (MAX_ARGS_PER_CALL / per_item.max(1)).clamp(1, MAX_ITEMS_PER_CALL);
    let ttl = record.map(|r| r.ttl_ms.to_string()).unwrap_or_default();
    let due = view
        .policy
        .lazy_due_at()
        .map(|t| t.to_string())
        .unwrap_or_default();
    let mut req = match op {
        DataOp::Has => Request::new().read_only(),
        DataOp::Add | DataOp::CheckAdd => Request::new(),
    };
    let mut chunks = Vec::new();
    let cut = calls(round, per_call);
    // A capped write in several calls: the first that stops at capacity
    // stops the later ones (lua/data.lua), so the round writes a prefix.
    let round_id = match (limit, op, cut.len() > 1) {
        (Limit::Capacity, DataOp::Add | DataOp::CheckAdd, true) => crate::uid::new_uid(),
        _ => String::new(),
    };
    for chunk in cut {
        // Each call names only the blocks its items touch: a single item
        // of a filter of 22 blocks then costs one EXISTS and one key, not
        // 22 of each.
        let parts: Vec<Part> = groups
            .iter()
            .filter_map(|&(g, role)| view.gens.get(g).map(|gen| (gen, role, view.store(g))))
            .map(|(gen, role, store)| Part {
                gen,
                role,
                share: store.script_share(&gen.layout, batch, &chunk),
            })
            .collect();
        let mut key_list = vec![keys.meta().to_string(), keys.fence(), keys.reservations()];
        for part in &parts {
            let (uid, seq) = (&view.uid, part.gen.seq);
            key_list.extend(part.share.touched.iter().map(|&b| keys.block(uid, seq, b)));
        }
        if let Some(r) = record {
            key_list.push(r.key.clone());
        }
        let mut cmd = scripts::DATA.invoke(&key_list);
        cmd.arg(op.code())
            .arg(&view.uid)
            .arg(view.epoch)
            .arg(view.cleared)
            .arg(chunk.len())
            .arg(&due)
            .arg(now)
            .arg(parts.len() + usize::from(findings))
            .arg(chunk.first().copied().unwrap_or(0))
            .arg(&ttl)
            .arg(&round_id);
        if findings {
            // Role l: the client's findings, one flag per item; no keys.
            cmd.arg("l").arg(0).arg(0).arg(0).arg(0).arg("0");
            for i in &chunk {
                cmd.arg(if local.present.contains(i) { "1" } else { "0" });
            }
        }
        for part in parts {
            let gen = part.gen;
            let cap = match (part.role, op, limit) {
                (Role::Decide, DataOp::Add | DataOp::CheckAdd, Limit::Capacity) => gen.capacity,
                _ => 0,
            };
            cmd.arg(part.share.role(role_code(part.role)))
                .arg(gen.seq)
                .arg(part.share.k)
                .arg(part.share.touched.len())
                .arg(cap)
                .arg(gen.layout.block_check().script_arg());
            part.share.write_args(&mut cmd);
        }
        req.script(&scripts::DATA, cmd);
        chunks.push(chunk);
    }
    (req, chunks)
}

/// What one call said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Ok,
    /// The view is stale: nothing done.
    Stale,
    /// A lazy rotation is due: nothing done.
    Due,
    /// The deciding generation is at its capacity; items are left.
    Full,
    /// It would be, but transactions in flight hold part of it, which they
    /// may leave unused: the items left are tried again.
    Busy,
}

/// The block keys a call found missing, or of another type, when it found
/// any.
fn missing(name: &str, status: &str, flags: &str) -> Option<Error> {
    match status {
        "MISSING" => Some(Error::MissingData {
            name: name.to_string(),
            keys: flags
                .split(' ')
                .filter(|k| !k.is_empty())
                .map(str::to_string)
                .collect(),
        }),
        "WRONGTYPE" => Some(super::wrong_block_type(flags)),
        _ => None,
    }
}

/// One call's outcome: answers for a prefix of its chunk.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Chunk {
    pub status: Status,
    pub answers: Vec<bool>,
    /// The deciding generation's count afterwards, when it is capped.
    pub fill: Option<u64>,
    /// The deciding generation's count afterwards, for a write.
    pub count: Option<u64>,
    /// With a due rotation: the instant (ms) the deadline was judged by,
    /// at which the rotation is made.
    pub judged_at: Option<i64>,
}

pub(crate) fn decode(name: &str, len: usize, reply: redis::RedisResult<Value>) -> Result<Chunk> {
    let v = reply.map_err(|e| Error::from_script(name, e))?;
    let Value::Array(parts) = &v else {
        return Err(unexpected("data script", &v));
    };
    let (Some(status), Some(Value::Int(processed)), Some(flags), Some(Value::Int(fill))) = (
        parts.first().and_then(as_string),
        parts.get(1),
        parts.get(2).and_then(as_string),
        parts.get(3),
    ) else {
        return Err(unexpected("data script", &v));
    };
    if let Some(e) = missing(name, &status, &flags) {
        return Err(e);
    }
    let processed = usize::try_from(*processed).map_err(|_| unexpected("data script count", &v))?;
    if processed > len || flags.len() != processed || flags.bytes().any(|b| b != b'0' && b != b'1')
    {
        return Err(unexpected("data script flags", &v));
    }
    let status = match status.as_str() {
        "OK" => Status::Ok,
        "STALE" => Status::Stale,
        "DUE" => Status::Due,
        "FULL" => Status::Full,
        "BUSY" => Status::Busy,
        _ => return Err(unexpected("data script status", &v)),
    };
    Ok(Chunk {
        status,
        answers: flags.bytes().map(|b| b == b'1').collect(),
        fill: u64::try_from(*fill).ok(),
        count: match parts.get(4) {
            Some(Value::Int(n)) => u64::try_from(*n).ok(),
            _ => None,
        },
        judged_at: match parts.get(5) {
            Some(Value::Int(n)) => Some(*n),
            _ => None,
        },
    })
}

#[cfg(test)]
mod tests;
