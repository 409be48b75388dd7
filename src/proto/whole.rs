//! Scripts over every key of a filter: clear and drop.

use crate::error::{Error, Result};
use crate::exec::Request;
use crate::keys::Keys;
use crate::metadata::fmt_f64;
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

pub(crate) fn clear_request(keys: &Keys, view: &View) -> Result<Request> {
    let mut key_list = vec![keys.meta().to_string(), keys.fence()];
    key_list.extend(block_keys(keys, view));
    let cleared = view
        .cleared
        .checked_add(1)
        .ok_or_else(|| Error::CorruptMetadata {
            name: view.name.clone(),
            field: crate::metadata::field::CLEARED.into(),
            reason: "cannot count another clear".into(),
        })?;
    let mut cmd = scripts::CLEAR.invoke(&key_list);
    cmd.arg(&view.uid)
        .arg(view.epoch)
        .arg(view.cleared)
        .arg(cleared)
        .arg(view.gens.len());
    for g in &view.gens {
        cmd.arg(g.seq);
    }
    for g in &view.gens {
        for _ in 0..g.layout.blocks {
            if g.layout.scheme.is_module() {
                cmd.arg(format!(
                    "{}|{}",
                    fmt_f64(g.layout.error_rate_at(g.capacity)),
                    g.capacity
                ));
            } else {
                cmd.arg("");
            }
        }
    }
    let mut req = Request::new();
    req.script(&scripts::CLEAR, cmd);
    Ok(req)
}

/// Drop: every key, and the blocks of the generation made next if they
/// were allocated ahead of need.
pub(crate) fn drop_request(keys: &Keys, view: &View) -> Request {
    let mut key_list = vec![keys.meta().to_string(), keys.fence()];
    key_list.extend(block_keys(keys, view));
    if let Some(g) = view.pending() {
        key_list.extend((0..g.layout.blocks).map(|b| keys.block(&view.uid, g.seq, b)));
    }
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
        _ => Err(super::unexpected("clear/drop script", &v)),
    }
}
