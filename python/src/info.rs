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
pub struct After {
    pub epoch: u64,
    pub next_rotation_at: Option<DateTime<Utc>>,
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
