//! The filter classes. `Filter` holds the connection and the handle and
//! offers what every kind shares; `BloomFilter`, `ExpandingFilter` and
//! `CircularFilter` add their builder settings and their own operations.

use crate::clock::ManualClock;
use crate::errors::{raise, to_py};
use crate::link::Link;
use crate::{info, items};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::PyClass;
use rotabloom::connect::{Connection, TlsOptions};
use rotabloom::{AnyFilter, Backend, BloomFilter as RBloom, CircularFilter as RCircular};
use rotabloom::{ExpandingFilter as RExpanding, Legacy, Mode};
use std::path::PathBuf;
use std::sync::Arc;

/// The typed handle of each kind.
pub enum Handle {
    Bloom(RBloom),
    Expanding(RExpanding),
    Circular(RCircular),
}

/// What a handle's writes do beyond writing: past a full generation
/// (`when_full`), and which replicas they wait for.
#[derive(Clone, Copy, Default)]
pub struct Writes {
    when_full: rotabloom::WhenFull,
    wait: Option<rotabloom::WaitReplicas>,
}

impl Writes {
    /// The keyword arguments, validated by the library's own parsers.
    fn parse(
        when_full: Option<&str>,
        wait_replicas: Option<u32>,
        wait_timeout_ms: Option<u64>,
    ) -> PyResult<Writes> {
        let when_full = when_full
            .map(str::parse::<rotabloom::WhenFull>)
            .transpose()
            .map_err(|e| to_py(e, None))?
            .unwrap_or_default();
        let timeout = std::time::Duration::from_millis(
            wait_timeout_ms.unwrap_or(rotabloom::DEFAULT_WAIT_TIMEOUT.as_millis() as u64),
        );
        let wait = match (wait_replicas, wait_timeout_ms) {
            (Some(n), _) => {
                Some(rotabloom::WaitReplicas::new(n, timeout).map_err(|e| to_py(e, None))?)
            }
            (None, Some(_)) => {
                return Err(to_py(
                    rotabloom::Error::InvalidParameter {
                        name: "wait_timeout_ms",
                        reason: "goes with wait_replicas".into(),
                    },
                    None,
                ))
            }
            (None, None) => None,
        };
        Ok(Writes { when_full, wait })
    }
}

impl Handle {
    /// The handle with `w` applied.
    fn configured(self, w: Writes) -> Handle {
        match self {
            Handle::Bloom(f) => {
                Handle::Bloom(f.with_when_full(w.when_full).with_wait_replicas(w.wait))
            }
            Handle::Expanding(f) => {
                Handle::Expanding(f.with_when_full(w.when_full).with_wait_replicas(w.wait))
            }
            Handle::Circular(f) => {
                Handle::Circular(f.with_when_full(w.when_full).with_wait_replicas(w.wait))
            }
        }
    }
}

/// Runs `$body` with `$f` bound to the typed handle, whatever its kind.
macro_rules! each {
    ($handle:expr, $f:ident => $body:expr) => {
        match $handle {
            Handle::Bloom($f) => $body,
            Handle::Expanding($f) => $body,
            Handle::Circular($f) => $body,
        }
    };
}

/// A rotabloom filter in Redis (base class of ``BloomFilter``,
/// ``ExpandingFilter`` and ``CircularFilter``).
///
/// Each object keeps one connection, made on first use and made again after
/// a connection failure (the failed call raises ``RedisConnectionError``
/// and is not repeated). Objects may be shared between threads: calls are
/// serialised on the connection and release the GIL while they wait for
/// Redis. Items are ``str`` (encoded as UTF-8) or ``bytes``.
///
/// ``rediss://`` URLs verify the server against the system's trust store,
/// or against the PEM file ``tls_ca_file``; ``tls_cert_file`` and
/// ``tls_key_file`` present a client certificate (keywords of every class
/// and of ``open``).
#[pyclass(module = "rotabloom._rotabloom", subclass, frozen)]
pub struct Filter {
    link: Link,
    handle: Handle,
}

fn invalid(py: Python<'_>, message: String) -> PyErr {
    raise(py, "InvalidParameterError", message, false)
}

/// The TLS keywords: a CA bundle instead of the system's trust store, a
/// client certificate and its key (mutual TLS). The library checks them
/// (files readable, PEM, certificate and key together, a `rediss://` URL).
fn tls_options(
    ca_file: Option<PathBuf>,
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
) -> TlsOptions {
    TlsOptions {
        ca_file,
        cert_file,
        key_file,
        insecure: false,
    }
}

/// A link to `url` with `tls`, or the documented exception.
fn link(py: Python<'_>, url: &str, tls: TlsOptions) -> PyResult<Link> {
    Link::new(url, tls)
        .map_err(|reason| invalid(py, format!("invalid url or TLS settings: {reason}")))
}

impl Filter {
    /// Connects to `url` and makes the handle with `make`, without the GIL.
    fn establish(
        py: Python<'_>,
        url: &str,
        tls: TlsOptions,
        writes: Writes,
        make: impl FnOnce(&mut Connection) -> rotabloom::Result<Handle> + Send,
    ) -> PyResult<Filter> {
        let link = link(py, url, tls)?;
        let handle = py
            .detach(|| link.run(make))
            .map_err(|e| to_py(e, Some(&link)))?
            .configured(writes);
        Ok(Filter { link, handle })
    }

    /// Runs `op` on the connection without the GIL.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        op: impl FnOnce(&Handle, &mut Connection) -> rotabloom::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| self.link.run(|conn| op(&self.handle, conn)))
            .map_err(|e| to_py(e, Some(&self.link)))
    }

    fn circular(&self) -> Option<&RCircular> {
        match &self.handle {
            Handle::Circular(f) => Some(f),
            _ => None,
        }
    }

    /// The Python object for this filter: the subclass of its kind.
    fn into_object(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        fn object<S: PyClass<BaseType = Filter>>(
            py: Python<'_>,
            f: Filter,
            sub: S,
        ) -> PyResult<Bound<'_, PyAny>> {
            Ok(Bound::new(py, PyClassInitializer::from(f).add_subclass(sub))?.into_any())
        }
        match &self.handle {
            Handle::Bloom(_) => object(py, self, BloomFilter {}),
            Handle::Expanding(_) => object(py, self, ExpandingFilter {}),
            Handle::Circular(_) => object(py, self, CircularFilter {}),
        }
    }
}

#[pymethods]
impl Filter {
    /// Opens an existing filter by name. ``Filter.open`` returns the class
    /// of whatever kind is stored; ``CircularFilter.open`` (and the other
    /// kinds) raise ``KindMismatchError`` for another kind and
    /// ``NotFoundError`` when there is no such filter.
    #[classmethod]
    #[pyo3(signature = (url, name, *, when_full=None, wait_replicas=None, wait_timeout_ms=None, tls_ca_file=None, tls_cert_file=None, tls_key_file=None))]
    #[allow(clippy::too_many_arguments)]
    fn open<'py>(
        cls: &Bound<'py, PyType>,
        url: &str,
        name: &str,
        when_full: Option<&str>,
        wait_replicas: Option<u32>,
        wait_timeout_ms: Option<u64>,
        tls_ca_file: Option<PathBuf>,
        tls_cert_file: Option<PathBuf>,
        tls_key_file: Option<PathBuf>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = cls.py();
        let name = name.to_string();
        let writes = Writes::parse(when_full, wait_replicas, wait_timeout_ms)?;
        let tls = tls_options(tls_ca_file, tls_cert_file, tls_key_file);
        let f = Filter::establish(py, url, tls, writes, move |conn| {
            let any = AnyFilter::open(conn, &name)?;
            any.circular()
                .map(Handle::Circular)
                .or_else(|| any.expanding().map(Handle::Expanding))
                .or_else(|| any.bloom().map(Handle::Bloom))
                .ok_or_else(|| rotabloom::Error::Internal(format!("unknown kind {}", any.kind())))
        })?;
        let kind = f.kind();
        let obj = f.into_object(py)?;
        if !obj.is_instance(cls)? {
            let wanted = cls.name()?.to_string();
            return Err(raise(
                py,
                "KindMismatchError",
                format!(
                    "filter {:?} is of kind {kind}, not a {wanted}",
                    obj.getattr("name")?.to_string()
                ),
                false,
            ));
        }
        Ok(obj)
    }

    /// Creates the filter, or opens it when it exists with the same
    /// settings (another kind or setting raises ``KindMismatchError`` or
    /// ``ParameterMismatchError``, never a silent reuse). The same as
    /// calling the class.
    #[classmethod]
    #[pyo3(signature = (*args, **kwargs))]
    fn create_or_open<'py>(
        cls: &Bound<'py, PyType>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        cls.call(args, kwargs)
    }

    /// The filter's name.
    #[getter]
    fn name(&self) -> String {
        each!(&self.handle, f => f.name().to_string())
    }

    /// ``bloom``, ``expanding`` or ``circular``.
    #[getter]
    fn kind(&self) -> String {
        match &self.handle {
            Handle::Bloom(_) => "bloom",
            Handle::Expanding(_) => "expanding",
            Handle::Circular(_) => "circular",
        }
        .to_string()
    }

    /// The Redis URL, without its password.
    #[getter]
    fn url(&self) -> String {
        self.link.shown()
    }

    /// Inserts ``item``; True when it was not there before (its bits were
    /// not all set).
    fn add(&self, py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        let item = items::one(item)?;
        self.run(py, move |h, c| each!(h, f => f.insert(c, &item)))
    }

    /// Whether ``item`` may have been inserted (false positives possible,
    /// false negatives never).
    fn contains(&self, py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        let item = items::one(item)?;
        self.run(py, move |h, c| each!(h, f => f.contains(c, &item)))
    }

    fn __contains__(&self, py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.contains(py, item)
    }

    /// Atomically: True when ``item`` was new (and is now inserted), False
    /// when it was seen. Of any number of concurrent calls with the same
    /// new item, exactly one returns True.
    fn check_and_insert(&self, py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        let item = items::one(item)?;
        self.run(py, move |h, c| each!(h, f => f.check_and_insert(c, &item)))
    }

    /// ``add`` for every item of an iterable, in one round trip; a list of
    /// booleans in the same order.
    fn add_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
        let items = items::many(items)?;
        self.run(py, move |h, c| each!(h, f => f.insert_many(c, &items)))
    }

    /// ``contains`` for every item of an iterable, in one round trip.
    fn contains_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
        let items = items::many(items)?;
        self.run(py, move |h, c| each!(h, f => f.contains_many(c, &items)))
    }

    /// ``check_and_insert`` for every item of an iterable, atomically: a
    /// repeated item is new at most once.
    fn check_and_insert_many(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<bool>> {
        let items = items::many(items)?;
        self.run(
            py,
            move |h, c| each!(h, f => f.check_and_insert_many(c, &items)),
        )
    }

    /// Distinct insertions so far, over all generations.
    fn count(&self, py: Python<'_>) -> PyResult<u64> {
        self.run(py, |h, c| each!(h, f => f.count(c)))
    }

    /// The filter's state as a dict: ``name``, ``kind``, ``epoch``,
    /// ``created_at`` (seconds since 1970), ``count``,
    /// ``false_positive_rate``, ``memory_bytes``, ``generations`` (dicts,
    /// oldest first), ``warnings`` (dicts with ``code``, ``level``,
    /// ``message``) and ``fields`` (the stored metadata).
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let i = self.run(py, |h, c| each!(h, f => f.info(c)))?;
        info::to_dict(py, &i)
    }

    /// Empties the filter, keeping its settings.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |h, c| each!(h, f => f.clear(c)))
    }

    /// Deletes the filter and its data; True if it existed.
    fn drop(&self, py: Python<'_>) -> PyResult<bool> {
        self.run(py, |h, c| each!(h, f => f.drop(c)))
    }

    fn __repr__(&self) -> String {
        format!(
            "<rotabloom.{} {:?} at {}>",
            self.class_name(),
            self.name(),
            self.link.shown()
        )
    }
}

impl Filter {
    fn class_name(&self) -> &'static str {
        match &self.handle {
            Handle::Bloom(_) => "BloomFilter",
            Handle::Expanding(_) => "ExpandingFilter",
            Handle::Circular(_) => "CircularFilter",
        }
    }
}

fn backend(name: Option<&str>) -> PyResult<Option<Backend>> {
    name.map(|b| b.parse::<Backend>().map_err(|e| to_py(e, None)))
        .transpose()
}

/// Sets `$builder.$setting(v)` for each keyword argument given, leaving the
/// library's default for the others.
macro_rules! settings {
    ($builder:ident, $($setting:ident),*) => {
        $(if let Some(v) = $setting {
            $builder = $builder.$setting(v);
        })*
    };
}

/// A Bloom filter of fixed size: one generation. Its capacity is advisory:
/// past it the false-positive rate rises.
///
/// ``BloomFilter(url, name, *, capacity, error_rate=0.01)`` creates the
/// filter in Redis or opens it if it exists with the same settings. ``url``
/// is any form the rotabloom command accepts: ``redis://[:password@]host:
/// port/db``, ``rediss://`` (TLS), ``unix:///path``,
/// ``redis+cluster://h:p,h:p`` and ``redis+sentinel://h:p,h:p/master``.
/// Instead of ``capacity``/``error_rate``, an explicit shape: ``bits`` and
/// ``hashes``.
#[pyclass(module = "rotabloom._rotabloom", extends = Filter, frozen)]
pub struct BloomFilter {}

#[pymethods]
impl BloomFilter {
    #[new]
    #[pyo3(signature = (url, name, *, capacity=None, error_rate=None, bits=None, hashes=None, max_bits=None, max_block_bits=None, backend=None, when_full=None, wait_replicas=None, wait_timeout_ms=None, tls_ca_file=None, tls_cert_file=None, tls_key_file=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        url: &str,
        name: &str,
        capacity: Option<u64>,
        error_rate: Option<f64>,
        bits: Option<u64>,
        hashes: Option<u32>,
        max_bits: Option<u64>,
        max_block_bits: Option<u64>,
        backend: Option<&str>,
        when_full: Option<&str>,
        wait_replicas: Option<u32>,
        wait_timeout_ms: Option<u64>,
        tls_ca_file: Option<PathBuf>,
        tls_cert_file: Option<PathBuf>,
        tls_key_file: Option<PathBuf>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let writes = Writes::parse(when_full, wait_replicas, wait_timeout_ms)?;
        let tls = tls_options(tls_ca_file, tls_cert_file, tls_key_file);
        let mut b = RBloom::builder(name);
        let backend = self::backend(backend)?;
        settings!(b, capacity, error_rate, max_bits, max_block_bits, backend);
        match (bits, hashes) {
            (Some(bits), Some(hashes)) => b = b.bits_hashes(bits, hashes),
            (None, None) => {}
            _ => return Err(invalid(py, "bits and hashes go together".into())),
        }
        let f = Filter::establish(py, url, tls, writes, move |c| {
            b.create_or_open(c).map(Handle::Bloom)
        })?;
        Ok(PyClassInitializer::from(f).add_subclass(BloomFilter {}))
    }
}

/// A filter that grows: when the newest generation reaches its capacity a
/// bigger one is added (``growth`` times as big, ``tightening`` times the
/// error rate), so the overall rate stays below ``error_rate``.
///
/// ``ExpandingFilter(url, name, *, capacity, error_rate=0.01, growth=2.0,
/// tightening=0.5, max_generations=..., max_bytes=...)``; past
/// ``max_generations`` or ``max_bytes`` inserts raise ``LimitReachedError``.
/// ``ExpandingFilter.adopt_legacy(...)`` takes over a bitmap written by the
/// Python package scrapy-redis-bloomfilter without copying it.
#[pyclass(module = "rotabloom._rotabloom", extends = Filter, frozen)]
pub struct ExpandingFilter {}

#[pymethods]
impl ExpandingFilter {
    #[new]
    #[pyo3(signature = (url, name, *, capacity=None, error_rate=None, growth=None, tightening=None, max_generations=None, max_bytes=None, max_bits=None, max_block_bits=None, when_full=None, wait_replicas=None, wait_timeout_ms=None, tls_ca_file=None, tls_cert_file=None, tls_key_file=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        url: &str,
        name: &str,
        capacity: Option<u64>,
        error_rate: Option<f64>,
        growth: Option<f64>,
        tightening: Option<f64>,
        max_generations: Option<u32>,
        max_bytes: Option<u64>,
        max_bits: Option<u64>,
        max_block_bits: Option<u64>,
        when_full: Option<&str>,
        wait_replicas: Option<u32>,
        wait_timeout_ms: Option<u64>,
        tls_ca_file: Option<PathBuf>,
        tls_cert_file: Option<PathBuf>,
        tls_key_file: Option<PathBuf>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let writes = Writes::parse(when_full, wait_replicas, wait_timeout_ms)?;
        let tls = tls_options(tls_ca_file, tls_cert_file, tls_key_file);
        let mut b = RExpanding::builder(name);
        settings!(
            b,
            capacity,
            error_rate,
            growth,
            tightening,
            max_generations,
            max_bytes,
            max_bits,
            max_block_bits
        );
        let f = Filter::establish(py, url, tls, writes, move |c| {
            b.create_or_open(c).map(Handle::Expanding)
        })?;
        Ok(PyClassInitializer::from(f).add_subclass(ExpandingFilter {}))
    }

    /// Creates the filter ``name`` with the scrapy-redis-bloomfilter bitmap
    /// at ``legacy_key`` as its frozen first generation, moved into place
    /// (no copy) in one atomic step; new items go to new generations sized
    /// by ``capacity`` and ``error_rate``. ``bit`` and ``hashes`` are that
    /// package's ``BLOOMFILTER_BIT`` and ``BLOOMFILTER_HASH_NUMBER``.
    /// Calling it again once adopted just opens the filter. The old
    /// package hashed 40-hex-digit request fingerprints: query with those.
    #[staticmethod]
    #[pyo3(signature = (url, name, legacy_key, *, bit=30, hashes=6, capacity=None, error_rate=None, growth=None, max_generations=None, tls_ca_file=None, tls_cert_file=None, tls_key_file=None))]
    #[allow(clippy::too_many_arguments)]
    fn adopt_legacy<'py>(
        py: Python<'py>,
        url: &str,
        name: &str,
        legacy_key: &str,
        bit: u32,
        hashes: u32,
        capacity: Option<u64>,
        error_rate: Option<f64>,
        growth: Option<f64>,
        max_generations: Option<u32>,
        tls_ca_file: Option<PathBuf>,
        tls_cert_file: Option<PathBuf>,
        tls_key_file: Option<PathBuf>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let tls = tls_options(tls_ca_file, tls_cert_file, tls_key_file);
        let mut b = RExpanding::builder(name);
        settings!(b, capacity, error_rate, growth, max_generations);
        let legacy = Legacy::ScrapyRedisBloomfilter {
            key: legacy_key.to_string(),
            bit,
            hashes,
        };
        let f = Filter::establish(py, url, tls, Writes::default(), move |c| {
            b.adopt_legacy(c, legacy).map(Handle::Expanding)
        })?;
        f.into_object(py)
    }

    /// Adds a generation now, ahead of need; False when the limit allows
    /// no more.
    fn expand(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let base = slf.as_super().get();
        base.run(slf.py(), |h, c| match h {
            Handle::Expanding(f) => f.expand(c),
            _ => Err(rotabloom::Error::Internal("not an expanding filter".into())),
        })
    }
}

/// A Bloom filter over a sliding window: ``generations`` generations
/// rotated on a ``schedule``, so that items are forgotten after a while
/// (a re-crawl window).
///
/// ``CircularFilter(url, name, *, generations, capacity, error_rate=0.01,
/// schedule=None, mode="insert-newest-query-all", lazy=False, clock=None)``
///
/// - ``capacity``: distinct items expected per period;
/// - ``schedule``: ``"30d"``, ``"12h"``, ``"daily@03:00"``,
///   ``"weekly:mon@03:00"``, ``"monthly:1@00:00"``...; an item inserted
///   during one period is reported present until ``generations`` rotations
///   later: with a fixed interval P, at least (generations-1)·P and less
///   than generations·P after its insertion;
/// - ``mode``: ``insert-newest-query-all`` (cheap writes) or
///   ``insert-all-query-oldest`` (cheap reads); same windows;
/// - ``lazy``: let ordinary calls perform a rotation that has come due, so
///   nothing else (cron, ``rotate_if_due``) is needed;
/// - ``clock``: a ``ManualClock`` instead of the Redis server's clock.
///
/// ``rotate_if_due()`` performs exactly the rotations the schedule owes,
/// however many processes call it; ``rotate()`` rotates once now.
#[pyclass(module = "rotabloom._rotabloom", extends = Filter, frozen)]
pub struct CircularFilter {}

#[pymethods]
impl CircularFilter {
    #[new]
    #[pyo3(signature = (url, name, *, generations=None, capacity=None, error_rate=None, schedule=None, mode=None, lazy=None, clock=None, max_bits=None, max_block_bits=None, backend=None, when_full=None, wait_replicas=None, wait_timeout_ms=None, tls_ca_file=None, tls_cert_file=None, tls_key_file=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        url: &str,
        name: &str,
        generations: Option<u32>,
        capacity: Option<u64>,
        error_rate: Option<f64>,
        schedule: Option<String>,
        mode: Option<&str>,
        lazy: Option<bool>,
        clock: Option<PyRef<'_, ManualClock>>,
        max_bits: Option<u64>,
        max_block_bits: Option<u64>,
        backend: Option<&str>,
        when_full: Option<&str>,
        wait_replicas: Option<u32>,
        wait_timeout_ms: Option<u64>,
        tls_ca_file: Option<PathBuf>,
        tls_cert_file: Option<PathBuf>,
        tls_key_file: Option<PathBuf>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let writes = Writes::parse(when_full, wait_replicas, wait_timeout_ms)?;
        let tls = tls_options(tls_ca_file, tls_cert_file, tls_key_file);
        let mut b = RCircular::builder(name);
        let mode = mode
            .map(|m| m.parse::<Mode>())
            .transpose()
            .map_err(|e| to_py(e, None))?;
        let backend = self::backend(backend)?;
        settings!(
            b,
            generations,
            capacity,
            error_rate,
            schedule,
            mode,
            lazy,
            max_bits,
            max_block_bits,
            backend
        );
        let clock: Option<Arc<dyn rotabloom::Clock>> =
            clock.map(|c| Arc::new(c.clock.clone()) as Arc<dyn rotabloom::Clock>);
        if let Some(clock) = clock {
            b = b.clock(clock);
        }
        let f = Filter::establish(py, url, tls, writes, move |c| {
            b.create_or_open(c).map(Handle::Circular)
        })?;
        Ok(PyClassInitializer::from(f).add_subclass(CircularFilter {}))
    }

    /// Rotates once now (drops the oldest generation, starts a new one),
    /// unless another process changed the filter since this object last
    /// saw it. Returns a dict: ``status`` (``rotated`` or ``superseded``),
    /// ``rotations``, ``epoch``, ``next_at``.
    fn rotate<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let r = with_circular(slf, |f, c| f.rotate(c))?;
        info::rotation(slf.py(), &r)
    }

    /// Performs the rotations owed by the schedule now (by the filter's
    /// clock): none if this period's is done, at most ``generations`` after
    /// missed runs. Safe to call from every process as often as you like.
    /// Returns a dict as ``rotate`` does (``status`` may be ``not_due``).
    fn rotate_if_due<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let r = with_circular(slf, |f, c| f.rotate_if_due(c))?;
        info::rotation(slf.py(), &r)
    }

    /// Rotations so far, as last read from Redis.
    #[getter]
    fn epoch(slf: &Bound<'_, Self>) -> u64 {
        slf.as_super().get().circular().map_or(0, |f| f.epoch())
    }

    /// The schedule in its text form, or None.
    #[getter]
    fn schedule(slf: &Bound<'_, Self>) -> Option<String> {
        slf.as_super()
            .get()
            .circular()
            .and_then(|f| f.schedule())
            .map(|s| s.to_string())
    }

    /// When the next rotation is due (seconds since 1970), as last read.
    #[getter]
    fn next_rotation_at(slf: &Bound<'_, Self>) -> Option<f64> {
        slf.as_super()
            .get()
            .circular()
            .and_then(|f| f.next_rotation_at())
            .map(|t| t.timestamp_millis() as f64 / 1000.0)
    }
}

fn with_circular<T: Send>(
    slf: &Bound<'_, CircularFilter>,
    op: impl FnOnce(&RCircular, &mut Connection) -> rotabloom::Result<T> + Send,
) -> PyResult<T> {
    slf.as_super().get().run(slf.py(), |h, c| match h {
        Handle::Circular(f) => op(f, c),
        _ => Err(rotabloom::Error::Internal("not a circular filter".into())),
    })
}
