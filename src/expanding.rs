//! The expanding filter: frozen generations plus a newest one that takes the
//! writes; a full newest generation is frozen and a bigger one added.
//!
//! Generation `i` holds `n0 * s^i` items at false-positive rate
//! `p * (1 - r) * r^i`. A query that checks every generation is a false
//! positive if any generation says so, so its rate is at most the sum
//! `p * (1 - r) * (1 + r + r^2 + ...) = p * (1 - r) / (1 - r) = p`, for any
//! number of generations. With the default `r = 1/2` generation `i` gets
//! `p / 2^(i+1)`.

use crate::engine::Growth;
use crate::error::Result;
use crate::generation::Layout;
use crate::metadata::Meta;
use crate::params::BloomParams;

/// The generation to add when the newest fills up, or `Limit` when a limit
/// forbids it. Pure.
pub(crate) fn growth(meta: &Meta) -> Result<Growth> {
    let n0: f64 = meta.param::<u64>("capacity")? as f64;
    let p: f64 = meta.param("error_rate")?;
    let s: f64 = meta.param("growth")?;
    let r: f64 = meta.param("tightening")?;
    let max_gens: u64 = meta.param("max_generations")?;
    let max_bytes: u64 = meta.param("max_bytes")?;
    let max_bits: u64 = meta.param("max_bits")?;
    let max_block_bits: u64 = meta.param("max_block_bits")?;
    let i = meta.gens.len();
    if i as u64 >= max_gens {
        return Ok(Growth::Limit);
    }
    let cap = (n0 * s.powi(i as i32)).ceil();
    let rate = p * (1.0 - r) * r.powi(i as i32);
    if !(cap.is_finite() && cap >= 1.0 && cap < u64::MAX as f64) {
        return Ok(Growth::Limit);
    }
    let Ok(params) = BloomParams::for_capacity_within(cap as u64, rate, max_bits) else {
        return Ok(Growth::Limit);
    };
    let layout = Layout::split(params, max_block_bits);
    let used: u64 = meta.gens.iter().map(|g| g.layout.bytes()).sum();
    if max_bytes > 0 && used.saturating_add(layout.bytes()) > max_bytes {
        return Ok(Growth::Limit);
    }
    Ok(Growth::Next {
        seq: meta.next_seq,
        layout,
        capacity: cap as u64,
    })
}

/// Human words for the limit an expanding filter reached.
pub(crate) fn limit_description(meta: &Meta) -> String {
    let gens = meta.gens.len();
    let max_gens = meta
        .fields
        .get("max_generations")
        .map(String::as_str)
        .unwrap_or("?");
    let max_bytes = meta
        .fields
        .get("max_bytes")
        .map(String::as_str)
        .unwrap_or("0");
    format!("{gens} generations (max_generations = {max_gens}, max_bytes = {max_bytes}); the newest is full")
}
