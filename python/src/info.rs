//! A filter's `Info` and a rotation's outcome as plain dicts, with the
//! field names and value styles of the command line's JSON (`status
//! --json`, `rotate --json`; docs/CLI.md): `items`, `capacity`,
//! `created_at` as RFC 3339 (and `created_at_ms`), `result`,
//! `next_rotation_at`. The keys are typed in `rotabloom/_rotabloom.pyi`
//! (`FilterInfo`, `GenerationInfo`, `RotationResult`).

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::IntoPyObjectExt;
use rotabloom::config::Typed;
use rotabloom::{GenerationInfo, Info, Rotation};

/// A time as the command line prints it: RFC 3339, UTC, whole seconds.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A time from Redis in ms since the Unix epoch, as RFC 3339 (the number
/// itself when it is out of range, as the command line does).
fn time_ms(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .map_or_else(|| ms.to_string(), rfc3339)
}

fn generation<'py>(py: Python<'py>, g: &GenerationInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("seq", g.seq)?;
    d.set_item("created_at", time_ms(g.created_at_ms))?;
    d.set_item("created_at_ms", g.created_at_ms)?;
    d.set_item("items", g.count)?;
    d.set_item("capacity", g.capacity)?;
    d.set_item("fill", g.count as f64 / g.capacity.max(1) as f64)?;
    d.set_item("bits", g.bits)?;
    d.set_item("hashes", g.hashes)?;
    d.set_item("blocks", g.blocks)?;
    d.set_item("set_bits", g.set_bits)?;
    d.set_item("fill_ratio", g.fill_ratio)?;
    d.set_item("false_positive_rate", g.false_positive_rate)?;
    d.set_item("memory_bytes", g.memory_bytes)?;
    d.set_item("queried", g.queried)?;
    d.set_item("written", g.written)?;
    Ok(d)
}

/// A stored parameter as a Python value.
fn typed<'py>(py: Python<'py>, value: Typed<'_>) -> PyResult<Bound<'py, PyAny>> {
    match value {
        Typed::Bool(b) => b.into_bound_py_any(py),
        Typed::Int(n) => n.into_bound_py_any(py),
        Typed::UInt(n) => n.into_bound_py_any(py),
        Typed::Float(f) => f.into_bound_py_any(py),
        Typed::Text(t) => t.into_bound_py_any(py),
    }
}

/// `info` as a dict; `next_rotation_at` is a circular filter's next
/// scheduled rotation.
pub fn to_dict<'py>(
    py: Python<'py>,
    info: &Info,
    next_rotation_at: Option<DateTime<Utc>>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &info.name)?;
    d.set_item("kind", info.kind.as_str())?;
    d.set_item("epoch", info.epoch)?;
    d.set_item("created_at", time_ms(info.created_at_ms))?;
    d.set_item("created_at_ms", info.created_at_ms)?;
    d.set_item("items", info.count)?;
    let capacity = info
        .generations
        .iter()
        .fold(0u64, |a, g| a.saturating_add(g.capacity));
    d.set_item("capacity", capacity)?;
    d.set_item("false_positive_rate", info.false_positive_rate)?;
    d.set_item("memory_bytes", info.memory_bytes)?;
    d.set_item("next_rotation_at", next_rotation_at.map(rfc3339))?;
    let parameters = PyDict::new(py);
    for (k, v) in rotabloom::config::parameters(&info.fields) {
        parameters.set_item(k, typed(py, v)?)?;
    }
    d.set_item("parameters", parameters)?;
    let gens = PyList::empty(py);
    for g in &info.generations {
        gens.append(generation(py, g)?)?;
    }
    d.set_item("generations", gens)?;
    let warnings = PyList::empty(py);
    for w in &info.warnings {
        let wd = PyDict::new(py);
        wd.set_item("code", w.code.as_str())?;
        wd.set_item("level", w.level.as_str())?;
        wd.set_item("message", &w.message)?;
        warnings.append(wd)?;
    }
    d.set_item("warnings", warnings)?;
    Ok(d)
}

/// Where a circular filter stands after a rotation call, for the keys the
/// outcome itself does not carry.
#[derive(Clone, Copy)]
pub struct After {
    pub epoch: u64,
    pub next_rotation_at: Option<DateTime<Utc>>,
}

/// The dict of a rotation call on every shard (`each`: the shard's name,
/// its outcome, its state after): the rotation's own for an unsharded
/// filter, the whole's for a sharded one.
pub fn rotations<'py>(
    py: Python<'py>,
    sharded: bool,
    name: &str,
    each: &[(String, Rotation, After)],
) -> PyResult<Bound<'py, PyDict>> {
    let mut dicts = each
        .iter()
        .map(|(shard, r, after)| rotation(py, shard, r, *after))
        .collect::<PyResult<Vec<_>>>()?;
    if !sharded && dicts.len() == 1 {
        if let Some(one) = dicts.pop() {
            return Ok(one);
        }
    }
    sharded_rotation(py, name, dicts)
}

/// A rotation's outcome as a dict with every key always present: `result`
/// is `rotated`, `not_due` or `superseded`; `rotations` is 0 unless it
/// rotated.
pub fn rotation<'py>(
    py: Python<'py>,
    name: &str,
    r: &Rotation,
    after: After,
) -> PyResult<Bound<'py, PyDict>> {
    let (result, rotations, epoch, next) = match r {
        Rotation::Rotated {
            rotations,
            epoch,
            next_at,
        } => ("rotated", u64::from(*rotations), *epoch, *next_at),
        Rotation::NotDue { next_at } => ("not_due", 0, after.epoch, Some(*next_at)),
        Rotation::Superseded { epoch } => ("superseded", 0, *epoch, after.next_rotation_at),
    };
    let d = PyDict::new(py);
    d.set_item("name", name)?;
    d.set_item("result", result)?;
    d.set_item("rotations", rotations)?;
    d.set_item("epoch", epoch)?;
    d.set_item("next_rotation_at", next.map(rfc3339))?;
    Ok(d)
}

/// A sharded filter's `info()`: the totals, as `status --json` gives them,
/// with `shards` and `shard_filters` (each shard's own dict, its `shard`
/// and its `master`). `infos`, `nexts` and `masters` are per shard, shard
/// 0 first (`masters` may be empty outside a cluster).
pub fn sharded<'py>(
    py: Python<'py>,
    name: &str,
    infos: &[Info],
    nexts: &[Option<DateTime<Utc>>],
    masters: &[Option<String>],
) -> PyResult<Bound<'py, PyDict>> {
    let Some(first) = infos.first() else {
        return Err(crate::errors::to_py(
            rotabloom::Error::Internal(format!("sharded filter {name:?} has no shards")),
            None,
        ));
    };
    let next = nexts.iter().flatten().min().copied();
    let d = to_dict(py, first, next)?;
    let (mut items, mut capacity, mut memory, mut rate) = (0u64, 0u64, 0u64, 0f64);
    let warnings = PyList::empty(py);
    let shards = PyList::empty(py);
    for (j, i) in infos.iter().enumerate() {
        let one = to_dict(py, i, nexts.get(j).copied().flatten())?;
        items = items.saturating_add(i.count);
        capacity =
            capacity.saturating_add(one.get_item("capacity")?.map_or(Ok(0), |c| c.extract())?);
        memory = memory.saturating_add(i.memory_bytes);
        // Each item is checked in one shard: the worst shard bounds them.
        rate = rate.max(i.false_positive_rate);
        for w in &i.warnings {
            let wd = PyDict::new(py);
            wd.set_item("code", w.code.as_str())?;
            wd.set_item("level", w.level.as_str())?;
            wd.set_item("message", format!("shard {j} ({}): {}", i.name, w.message))?;
            warnings.append(wd)?;
        }
        one.set_item("shard", j)?;
        one.set_item("master", masters.get(j).cloned().flatten())?;
        shards.append(one)?;
    }
    d.set_item("name", name)?;
    d.set_item("items", items)?;
    d.set_item("capacity", capacity)?;
    d.set_item("memory_bytes", memory)?;
    d.set_item("false_positive_rate", rate)?;
    d.set_item("generations", PyList::empty(py))?;
    d.set_item("warnings", warnings)?;
    d.set_item("shards", infos.len())?;
    d.set_item("shard_filters", shards)?;
    Ok(d)
}

/// A rotation of every shard of a sharded filter as one dict: `result` is
/// the shards' common result (`partial` when they differ: some shards
/// were rotated by another process first), `rotations`, `epoch` and
/// `next_rotation_at` the least over the shards, `shard_results` their
/// results, each shard's own dict.
pub fn sharded_rotation<'py>(
    py: Python<'py>,
    name: &str,
    each: Vec<Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", name)?;
    let mut result: Option<String> = None;
    let (mut rotations, mut epoch, mut next): (Option<u64>, Option<u64>, Option<String>) =
        (None, None, None);
    for one in &each {
        let r: String = one
            .get_item("result")?
            .map_or(Ok(String::new()), |v| v.extract())?;
        result = match result {
            None => Some(r),
            Some(prev) if prev == r => Some(prev),
            Some(_) => Some("partial".to_string()),
        };
        let n: u64 = one.get_item("rotations")?.map_or(Ok(0), |v| v.extract())?;
        rotations = Some(rotations.map_or(n, |m| m.min(n)));
        let e: u64 = one.get_item("epoch")?.map_or(Ok(0), |v| v.extract())?;
        epoch = Some(epoch.map_or(e, |m| m.min(e)));
        // RFC 3339 in UTC, whole seconds: the text orders as the time.
        let t: Option<String> = one
            .get_item("next_rotation_at")?
            .map_or(Ok(None), |v| v.extract())?;
        next = match (next, t) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    d.set_item("result", result)?;
    d.set_item("rotations", rotations.unwrap_or(0))?;
    d.set_item("epoch", epoch.unwrap_or(0))?;
    d.set_item("next_rotation_at", next)?;
    d.set_item("shard_results", PyList::new(py, each)?)?;
    Ok(d)
}
