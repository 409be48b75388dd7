//! A filter's `Info` as a plain dict: numbers as numbers, times as seconds
//! since the Unix epoch, so that it prints, compares and serialises as is.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rotabloom::{GenerationInfo, Info, Rotation};

fn seconds(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

fn generation<'py>(py: Python<'py>, g: &GenerationInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("seq", g.seq)?;
    d.set_item("bits", g.bits)?;
    d.set_item("hashes", g.hashes)?;
    d.set_item("blocks", g.blocks)?;
    d.set_item("capacity", g.capacity)?;
    d.set_item("count", g.count)?;
    d.set_item("created_at", seconds(g.created_at_ms))?;
    d.set_item("set_bits", g.set_bits)?;
    d.set_item("fill_ratio", g.fill_ratio)?;
    d.set_item("false_positive_rate", g.false_positive_rate)?;
    d.set_item("memory_bytes", g.memory_bytes)?;
    d.set_item("queried", g.queried)?;
    d.set_item("written", g.written)?;
    Ok(d)
}

/// `info` as a dict (the keys are listed in `rotabloom/_rotabloom.pyi`).
pub fn to_dict<'py>(py: Python<'py>, info: &Info) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &info.name)?;
    d.set_item("kind", info.kind.to_string())?;
    d.set_item("epoch", info.epoch)?;
    d.set_item("created_at", seconds(info.created_at_ms))?;
    d.set_item("count", info.count)?;
    d.set_item("false_positive_rate", info.false_positive_rate)?;
    d.set_item("memory_bytes", info.memory_bytes)?;
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
    d.set_item("fields", info.fields.clone())?;
    Ok(d)
}

/// A rotation's outcome as a dict: `status` is `rotated`, `not_due` or
/// `superseded`.
pub fn rotation<'py>(py: Python<'py>, r: &Rotation) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let next = |t: &Option<chrono::DateTime<chrono::Utc>>| t.map(|t| seconds(t.timestamp_millis()));
    match r {
        Rotation::Rotated {
            rotations,
            epoch,
            next_at,
        } => {
            d.set_item("status", "rotated")?;
            d.set_item("rotations", rotations)?;
            d.set_item("epoch", epoch)?;
            d.set_item("next_at", next(next_at))?;
        }
        Rotation::NotDue { next_at } => {
            d.set_item("status", "not_due")?;
            d.set_item("rotations", 0)?;
            d.set_item("next_at", next(&Some(*next_at)))?;
        }
        Rotation::Superseded { epoch } => {
            d.set_item("status", "superseded")?;
            d.set_item("rotations", 0)?;
            d.set_item("epoch", epoch)?;
        }
    }
    Ok(d)
}
