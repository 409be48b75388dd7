//! The `rotabloom._rotabloom` extension module: rotabloom's filters for
//! Python. The package `rotabloom` (python/rotabloom) re-exports it.

mod aio;
mod base;
mod clock;
mod create;
mod errors;
mod filter;
mod info;
mod items;
mod keywords;
mod kinds;
mod link;
mod logs;

use pyo3::prelude::*;
use rotabloom::Kind;

/// Every keyword the constructor of the class of ``kind`` (``"bloom"``,
/// ``"expanding"``, ``"circular"``) takes: the library's settings of that
/// kind, then the handle's.
#[pyfunction]
#[pyo3(name = "keywords")]
fn kind_keywords(kind: &str) -> PyResult<Vec<&'static str>> {
    Ok(keywords::keywords(parse_kind(kind)?))
}

/// Checks, without connecting, what creating the filter ``name`` of
/// ``kind`` at ``url`` with these keywords would check before it connects
/// (every setting, the URL and the TLS files); raises what the
/// constructor would raise.
#[pyfunction]
#[pyo3(signature = (kind, url, name, **settings))]
fn check_settings(
    py: Python<'_>,
    kind: &str,
    url: &str,
    name: &str,
    settings: Option<&Bound<'_, pyo3::types::PyDict>>,
) -> PyResult<()> {
    let kind = parse_kind(kind)?;
    let kw = keywords::Keywords::parse("check_settings", Some(kind), settings)?;
    create::spec(py, &kw, name)?;
    base::link(py, url, kw.tls).map(|_| ())
}

fn parse_kind(kind: &str) -> PyResult<Kind> {
    kind.parse()
        .map_err(|_| pyo3::exceptions::PyValueError::new_err(format!("no kind {kind:?}")))
}

/// The exception classes of ``rotabloom.errors`` the binding raises.
#[pyfunction]
fn error_classes() -> Vec<&'static str> {
    errors::CLASSES.to_vec()
}

#[pymodule]
fn _rotabloom(m: &Bound<'_, PyModule>) -> PyResult<()> {
    logs::install(m)?;
    aio::install(m)?;
    m.add_class::<base::Filter>()?;
    m.add_class::<kinds::BloomFilter>()?;
    m.add_class::<kinds::ExpandingFilter>()?;
    m.add_class::<kinds::CircularFilter>()?;
    m.add_class::<clock::ManualClock>()?;
    m.add_class::<aio::AsyncCore>()?;
    m.add_function(wrap_pyfunction!(kind_keywords, m)?)?;
    m.add_function(wrap_pyfunction!(error_classes, m)?)?;
    m.add_function(wrap_pyfunction!(check_settings, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
