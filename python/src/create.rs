//! Making the filter a class's constructor names: its keywords validated
//! into the library's spec (each shard's, for a sharded filter, all checked
//! before anything is written), then the filter created, or opened when it
//! exists with the same settings. Apart from the classes, which only pass
//! their kind and keywords, and used as well by `check_settings`, which
//! validates without connecting.

use crate::base::{Filter, Handle};
use crate::errors::{invalid_setting, to_py};
use crate::keywords::Keywords;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::PyClass;
use rotabloom::config::{FilterDef, FilterSpec};
use rotabloom::{Clock, Kind};
use std::sync::Arc;

/// The validated spec `kw` describes for the filter `name`.
pub fn spec(py: Python<'_>, kw: &Keywords, name: &str) -> PyResult<FilterSpec> {
    match &kw.clock {
        // Only the builder takes a clock; the creation needs it (the
        // schedule starts in the clock's period).
        Some(clock) => kw
            .params
            .circular_builder(name)
            .map_err(|e| invalid_setting(py, &e))?
            .clock(clock.clone())
            .spec()
            .map(|s| FilterSpec::Circular(Box::new(s)))
            .map_err(|e| to_py(e, None)),
        None => kw
            .params
            .validate(name)
            .map(|def| def.spec().clone())
            .map_err(|e| invalid_setting(py, &e)),
    }
}

/// Creates or opens the filter `name` of `kind` with the keyword arguments
/// given to the class `S`.
pub fn create<S: PyClass<BaseType = Filter>>(
    py: Python<'_>,
    kind: Kind,
    sub: S,
    url: &str,
    name: &str,
    settings: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyClassInitializer<S>> {
    let kw = Keywords::parse(S::NAME, Some(kind), settings)?;
    // The creation does not wait for replicas, the handle's writes do: a
    // creation that waits and times out leaves its first generation's
    // blocks behind, unlisted, and no filter (the library's to fix).
    let f = if kw.params.shards.unwrap_or(1) > 1 {
        let def = kw
            .params
            .validate(name)
            .map_err(|e| invalid_setting(py, &e))?;
        // Every shard's settings are checked before anything is written.
        let clock = kw.clock.clone();
        shard_spec(&def, clock.clone(), name).map_err(|e| to_py(e, None))?;
        Filter::establish(py, url, kw.tls, kw.writes, move |c| {
            Handle::create_or_open_with(c, &def.shard_plan(), |c, sub| {
                shard_spec(&def, clock.clone(), sub)?.create_or_open(c, None)
            })
            .map(|(f, _)| f)
        })?
    } else {
        let spec = spec(py, &kw, name)?;
        Filter::establish(py, url, kw.tls, kw.writes, move |c| {
            spec.create_or_open(c, None).map(|(f, _)| Handle::single(f))
        })?
    };
    Ok(PyClassInitializer::from(f).add_subclass(sub))
}

/// The spec of the shard `name` of the sharded filter `def`: its settings
/// with the capacity divided, and the clock given to the constructor.
fn shard_spec(
    def: &FilterDef,
    clock: Option<Arc<dyn Clock>>,
    name: &str,
) -> rotabloom::Result<FilterSpec> {
    let invalid = |e: rotabloom::config::ParamError| rotabloom::Error::InvalidParameter {
        name: "shards",
        reason: e.message,
    };
    let shard = def.shard(name).map_err(invalid)?;
    match clock {
        None => Ok(shard.spec().clone()),
        Some(clock) => shard
            .params()
            .circular_builder(name)
            .map_err(invalid)?
            .clock(clock)
            .spec()
            .map(|s| FilterSpec::Circular(Box::new(s))),
    }
}
