//! Scripts over every key of a filter: clear and drop.

use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::request::Request;
use crate::scripts;
use crate::view::View;
use redis::Value;

/// Every block key of every generation in `view`.
pub(crate) fn block_keys(keys: &Keys, view: &View) -> Vec<String> {
    view.gens
        .iter()
        .flat_map(|g| (0..g.layout.blocks).map(move |b| keys.block(&view.uid, g.seq, b)))
        .collect()
}

/// Each block to empty in a clear, with how: its size (a bitmap rotabloom
/// made, kept allocated), `bf|rate|capacity` (a module's generation,
/// reserved again), or nothing (an adopted legacy block, deleted).
pub(crate) fn zero_targets(keys: &Keys, view: &View) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for g in &view.gens {
        let how = g.layout.store().zero(&g.layout, g.capacity);
        for b in 0..g.layout.blocks {
            out.push((keys.block(&view.uid, g.seq, b), how.clone()));
        }
    }
    out
}

/// Empties one block, while the view is current.
pub(crate) fn zero_request(keys: &Keys, view: &View, block: &str, how: &[String]) -> Request {
    let mut cmd = scripts::ZERO.invoke(&[keys.meta(), block]);
    cmd.arg(&view.uid).arg(view.epoch).arg(view.cleared);
    for a in how {
        cmd.arg(a);
    }
    let mut req = Request::new();
    req.script(&scripts::ZERO, cmd);
    req
}

/// The last step of a clear: counts reset, the clear counted, the fence
/// moved.
pub(crate) fn clear_request(keys: &Keys, view: &View) -> Result<Request> {
    let cleared = view
        .cleared
        .checked_add(1)
        .ok_or_else(|| Error::CorruptMetadata {
            name: view.name.clone(),
            field: crate::metadata::field::CLEARED.into(),
            reason: "cannot count another clear".into(),
        })?;
    let mut cmd = scripts::CLEAR.invoke(&[keys.meta().to_string(), keys.fence()]);
    cmd.arg(&view.uid)
        .arg(view.epoch)
        .arg(view.cleared)
        .arg(cleared);
    for g in &view.gens {
        cmd.arg(g.seq);
    }
    let mut req = Request::new();
    req.script(&scripts::CLEAR, cmd);
    Ok(req)
}

/// The block keys a drop deletes: every block of every listed
/// generation, and of the generation made next (it may have been
/// allocated ahead of need).
pub(crate) fn drop_targets(keys: &Keys, view: &View) -> Vec<String> {
    let mut out = block_keys(keys, view);
    if let Some(g) = view.pending() {
        out.extend((0..g.layout.blocks).map(|b| keys.block(&view.uid, g.seq, b)));
    }
    out
}

/// Drop: the view check, then the metadata and the fence removed, and the
/// blocks that exist of every listed generation and of the one made next
/// (it may have been allocated ahead of need) put in the trash list.
pub(crate) fn drop_request(keys: &Keys, view: &View) -> Request {
    let mut key_list = vec![keys.meta().to_string(), keys.fence(), keys.trash()];
    key_list.extend(drop_targets(keys, view));
    let mut cmd = scripts::DROP.invoke(&key_list);
    cmd.arg(&view.uid).arg(view.epoch).arg(view.cleared);
    let mut req = Request::new();
    req.script(&scripts::DROP, cmd);
    req
}

/// What clear or drop said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Done,
    Gone,
    Stale,
}

pub(crate) fn decode(name: &str, reply: redis::RedisResult<Value>) -> Result<Outcome> {
    let v = reply.map_err(|e| Error::from_script(name, e))?;
    match super::as_string(&v).as_deref() {
        Some("OK") => Ok(Outcome::Done),
        Some("GONE") => Ok(Outcome::Gone),
        Some("STALE") => Ok(Outcome::Stale),
        _ => Err(crate::error::unexpected("clear/drop script", &v)),
    }
}

/// `HMGET meta uid epoch cleared`, sent after the last block read: the
/// blocks were read over several round trips, and only a view still
/// current after them makes the report one state of the filter. A roll
/// deletes the blocks it dropped after its step, and a drop deletes every
/// block after the metadata, so a block read as missing is lost data only
/// if the view is still current once it was read.
pub(crate) fn recheck(keys: &crate::keys::Keys) -> redis::Cmd {
    redis::cmd("HMGET")
        .arg(keys.meta())
        .arg(crate::metadata::field::UID)
        .arg(crate::metadata::field::EPOCH)
        .arg(crate::metadata::field::CLEARED)
        .clone()
}
