//! The keyword arguments of the filter classes, read through the library's
//! own table of settings (`rotabloom::config::settings()`) and its parsers,
//! so that Python takes every setting the command line and configuration
//! files take, spelled and parsed the same way: `capacity="10M"`,
//! `error_rate="0.1%"`, `max_bytes="4GiB"`, or plain numbers.

use crate::clock::ManualClock;
use crate::errors::{invalid_setting, to_py};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};
use rotabloom::config::{parse_count, settings, FilterParams};
use rotabloom::connect::TlsOptions;
use rotabloom::{Clock, Kind, WaitReplicas, WhenFull};
use std::path::PathBuf;
use std::sync::Arc;

/// What a handle's writes do beyond writing: past a full generation
/// (`when_full`), and which replicas they wait for.
#[derive(Clone, Copy, Default)]
pub struct Writes {
    pub when_full: WhenFull,
    pub wait: Option<WaitReplicas>,
}

/// Keywords of every class (and of `open`), besides the filter's settings.
const HANDLE: &[&str] = &[
    "when_full",
    "wait_replicas",
    "wait_timeout_ms",
    "tls_ca_file",
    "tls_cert_file",
    "tls_key_file",
];

/// The keyword of circular filters that is no stored setting.
const CLOCK: &str = "clock";

/// Every keyword the constructor of `kind`'s class takes, in the order of
/// the library's table, then the handle's.
pub fn keywords(kind: Kind) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = settings()
        .iter()
        .filter(|s| s.key() != "kind" && s.accepts(kind))
        .map(|s| s.key())
        .collect();
    if kind == Kind::Circular {
        out.push(CLOCK);
    }
    out.extend_from_slice(HANDLE);
    out
}

/// The keyword arguments of one call, checked.
#[derive(Default)]
pub struct Keywords {
    /// The filter's settings, as the library's table reads them.
    pub params: FilterParams,
    pub writes: Writes,
    pub tls: TlsOptions,
    pub clock: Option<Arc<dyn Clock>>,
}

impl Keywords {
    /// Reads `kwargs` for `class`: a filter of `kind` when it creates one,
    /// `None` when it only opens (then no filter setting is taken). A
    /// keyword the class does not take is a `TypeError`, as Python's own;
    /// `None` is a keyword left out.
    pub fn parse(
        class: &str,
        kind: Option<Kind>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Keywords> {
        let mut k = Keywords::default();
        let mut wait_replicas = None;
        let mut wait_timeout_ms = None;
        for (key, value) in kwargs.into_iter().flatten() {
            let key: String = key.extract()?;
            if value.is_none() {
                continue;
            }
            let key = key.as_str();
            match key {
                "when_full" => {
                    k.writes.when_full = text(key, &value)?.parse().map_err(|e| to_py(e, None))?
                }
                "wait_replicas" => wait_replicas = Some(whole("wait_replicas", &value)?),
                "wait_timeout_ms" => wait_timeout_ms = Some(whole("wait_timeout_ms", &value)?),
                "tls_ca_file" => k.tls.ca_file = Some(value.extract::<PathBuf>()?),
                "tls_cert_file" => k.tls.cert_file = Some(value.extract::<PathBuf>()?),
                "tls_key_file" => k.tls.key_file = Some(value.extract::<PathBuf>()?),
                CLOCK if kind.is_none_or(|k| k == Kind::Circular) => {
                    let clock = value.cast::<ManualClock>()?.get().clock.clone();
                    k.clock = Some(Arc::new(clock));
                }
                _ => {
                    let setting = settings()
                        .iter()
                        .find(|s| s.key() == key && s.key() != "kind")
                        .filter(|s| kind.is_some_and(|kind| s.accepts(kind)));
                    let Some(setting) = setting else {
                        return Err(unexpected(class, kind, key));
                    };
                    k.params
                        .set(setting.key(), &text(key, &value)?)
                        .map_err(|e| invalid_setting(value.py(), &e))?;
                }
            }
        }
        k.params.kind = kind;
        k.writes.wait = wait(wait_replicas, wait_timeout_ms)?;
        Ok(k)
    }
}

/// `wait_replicas` and its timeout, checked by the library.
fn wait(replicas: Option<u64>, timeout_ms: Option<u64>) -> PyResult<Option<WaitReplicas>> {
    let bad = |name: &'static str, reason: String| {
        to_py(rotabloom::Error::InvalidParameter { name, reason }, None)
    };
    let Some(replicas) = replicas else {
        return match timeout_ms {
            Some(_) => Err(bad("wait_timeout_ms", "goes with wait_replicas".into())),
            None => Ok(None),
        };
    };
    let replicas = u32::try_from(replicas)
        .map_err(|_| bad("wait_replicas", format!("{replicas} is too large")))?;
    let timeout = timeout_ms.map_or(
        rotabloom::DEFAULT_WAIT_TIMEOUT,
        std::time::Duration::from_millis,
    );
    WaitReplicas::new(replicas, timeout)
        .map(Some)
        .map_err(|e| to_py(e, None))
}

/// A keyword's value as text, the way a person writes it on a command line
/// or in a settings file: a `str` as is, `True`/`False` as `true`/`false`,
/// a number as Python prints it. The library's parsers take it from there.
fn text(key: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(if b.is_true() { "true" } else { "false" }.into());
    }
    if value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>() {
        return Ok(value.str()?.to_cow()?.into_owned());
    }
    Err(PyTypeError::new_err(format!(
        "{key} is a str or a number, not {}",
        crate::items::type_name(value)
    )))
}

/// A whole number keyword (`wait_timeout_ms=250`, `"1k"`).
fn whole(key: &'static str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    let t = text(key, value)?;
    parse_count(&t).map_err(|reason| {
        to_py(
            rotabloom::Error::InvalidParameter { name: key, reason },
            None,
        )
    })
}

/// Python's own error for a keyword the call does not take, listing the
/// ones it does.
fn unexpected(class: &str, kind: Option<Kind>, key: &str) -> PyErr {
    let known = match kind {
        Some(kind) => keywords(kind),
        None => {
            let mut k = HANDLE.to_vec();
            k.push(CLOCK);
            k
        }
    };
    let elsewhere = settings().iter().any(|s| s.key() == key);
    let why = match (kind, elsewhere) {
        (Some(kind), true) => format!(" (not a setting of {} filter)", kind.with_article()),
        (None, true) => {
            " (settings are given when a filter is created, not when it is opened)".into()
        }
        _ => String::new(),
    };
    PyTypeError::new_err(format!(
        "{class}() got an unexpected keyword argument {key:?}{why}; it takes: {}",
        known.join(", ")
    ))
}
