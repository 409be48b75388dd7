//! A clock Python code moves by hand, for tests and backfills of circular
//! filters.

use chrono::{DateTime, Utc};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rotabloom::Clock;

/// A clock that moves only when told, for circular filters in tests and
/// backfills: ``ManualClock(start)`` with ``start`` in seconds since the
/// Unix epoch (UTC). Pass it as ``clock=`` to a ``CircularFilter``; the
/// filter's schedule then follows it instead of the Redis server's clock.
/// Every filter given the same clock object sees the same time.
#[pyclass(module = "rotabloom._rotabloom", frozen)]
#[derive(Clone)]
pub struct ManualClock {
    pub clock: rotabloom::ManualClock,
}

fn instant(seconds: f64) -> PyResult<DateTime<Utc>> {
    let ms = seconds * 1000.0;
    let bad = || PyValueError::new_err(format!("{seconds} is not a time in seconds since 1970"));
    if !ms.is_finite() || ms.abs() > 8.0e15 {
        return Err(bad());
    }
    DateTime::from_timestamp_millis(ms.round() as i64).ok_or_else(bad)
}

#[pymethods]
impl ManualClock {
    #[new]
    fn new(start: f64) -> PyResult<Self> {
        Ok(ManualClock {
            clock: rotabloom::ManualClock::new(instant(start)?),
        })
    }

    /// Sets the time, in seconds since the Unix epoch.
    fn set(&self, now: f64) -> PyResult<()> {
        self.clock.set(instant(now)?);
        Ok(())
    }

    /// Moves the time forward (or back, if negative) by ``seconds``.
    fn advance(&self, seconds: f64) -> PyResult<()> {
        let now = self.now();
        self.clock.set(instant(now + seconds)?);
        Ok(())
    }

    /// The time, in seconds since the Unix epoch.
    fn now(&self) -> f64 {
        self.clock
            .now()
            .map(|t| t.timestamp_millis() as f64 / 1000.0)
            .unwrap_or(0.0)
    }

    // A copy of a clock is the same clock (clones of the Rust clock share
    // its time too): Scrapy deep-copies settings, which may hold one.
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }

    fn __repr__(&self) -> String {
        match self.clock.now() {
            Some(t) => format!("ManualClock({})", t.to_rfc3339()),
            None => "ManualClock()".into(),
        }
    }
}
