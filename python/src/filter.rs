//! The base class `Filter`: a connection and the library's own handle on a
//! filter of any kind (`rotabloom::AnyFilter`), with the operations every
//! kind shares. The subclasses (kinds.rs) add their constructors and their
//! own operations.

use crate::errors::{raise, to_py};
use crate::keywords::{Keywords, Writes};
use crate::link::Link;
use crate::{info, items, kinds};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use rotabloom::connect::{Connection, TlsOptions};
use rotabloom::kinds::Any;
use rotabloom::ShardedFilter;

/// The library's handle on a filter of any kind, sharded or not (an
/// unsharded filter is its one shard, used exactly as before).
pub type Handle = ShardedFilter<Any>;

/// A rotabloom filter in Redis (base class of ``BloomFilter``,
/// ``ExpandingFilter`` and ``CircularFilter``).
///
/// Each object keeps one connection, made on first use and made again after
/// a connection failure (the failed call raises ``RedisConnectionError``
/// and is not repeated). Objects may be shared between threads: calls are
/// serialised on the connection and release the GIL while they wait for
/// Redis. Items are ``str`` (encoded as UTF-8) or ``bytes``.
///
/// ``Filter.open(url, name, **keywords)`` opens an existing filter as the
/// class of its kind. Its keywords, which every class's constructor also
/// takes:
///
/// - ``when_full``: what a write does once the generation it fills holds
///   its capacity: ``"error"`` (default: raise ``FullError``, write
///   nothing), ``"warn"`` (write on, log one warning) or ``"expand"`` (an
///   expanding filter adds a generation ahead of its limit);
/// - ``wait_replicas``, ``wait_timeout_ms``: every write waits until that
///   many replicas have it (``WAIT``, at most ``wait_timeout_ms``, default
///   1000), else raises the retryable ``ReplicasTimeoutError``;
/// - ``tls_ca_file``, ``tls_cert_file``, ``tls_key_file``: with a
///   ``rediss://`` URL, PEM files of the certificate authorities to trust
///   instead of the system's, and of a client certificate and its key;
/// - ``clock`` (circular filters): a ``ManualClock`` instead of the Redis
///   server's clock;
/// - ``shards`` (constructors only): split the filter over that many
///   filters ("shards", 2 to 256) spread over the masters of a Redis
///   Cluster (``redis+cluster://`` URL), each sized for its share of
///   ``capacity``; 1, the default, is an ordinary filter. ``open`` finds
///   a sharded filter's shards by its name alone; every call acts on the
///   whole: an item is checked in the one shard its digest picks,
///   ``count`` and ``info`` add the shards up, ``rotate`` and ``drop``
///   act on every shard, ``clear`` empties every shard.
#[pyclass(module = "rotabloom._rotabloom", subclass, frozen)]
pub struct Filter {
    link: Link,
    pub(crate) handle: Handle,
}

/// A link to `url` with `tls`, or the documented exception.
pub fn link(py: Python<'_>, url: &str, tls: TlsOptions) -> PyResult<Link> {
    Link::new(url, tls).map_err(|reason| {
        raise(
            py,
            "InvalidParameterError",
            format!("invalid url or TLS settings: {reason}"),
            false,
        )
    })
}

impl Filter {
    /// Connects to `url` and makes the handle with `make`, without the GIL;
    /// the handle's writes then follow `writes`.
    pub fn establish(
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
            .map_shards(|s| {
                s.with_when_full(writes.when_full)
                    .with_wait_replicas(writes.wait)
            });
        Ok(Filter { link, handle })
    }

    /// The kind of every shard.
    pub fn kind(&self) -> PyResult<rotabloom::Kind> {
        self.handle.kind().map_err(|e| to_py(e, Some(&self.link)))
    }

    fn no_shards(&self) -> rotabloom::Error {
        rotabloom::Error::Internal(format!("filter {:?} has no shards", self.handle.name()))
    }

    /// Runs `op` on the connection without the GIL.
    pub fn run<T: Send>(
        &self,
        py: Python<'_>,
        op: impl FnOnce(&Handle, &mut Connection) -> rotabloom::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| self.link.run(|conn| op(&self.handle, conn)))
            .map_err(|e| to_py(e, Some(&self.link)))
    }
}

#[pymethods]
impl Filter {
    /// Opens an existing filter by name. ``Filter.open`` returns the class
    /// of whatever kind is stored; ``CircularFilter.open`` (and the other
    /// kinds) raise ``KindMismatchError`` for another kind and
    /// ``NotFoundError`` when there is no such filter. Keywords: see
    /// ``Filter``.
    #[classmethod]
    #[pyo3(signature = (url, name, **keywords))]
    fn open<'py>(
        cls: &Bound<'py, PyType>,
        url: &str,
        name: &str,
        keywords: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = cls.py();
        let wanted = cls.name()?.to_string();
        let kw = Keywords::parse(&format!("{wanted}.open"), None, keywords)?;
        let name = name.to_string();
        let clock = kw.clock;
        let f = Filter::establish(py, url, kw.tls, kw.writes, move |conn| {
            let any = Handle::open(conn, &name)?;
            let kind = any.kind()?;
            match clock {
                None => Ok(any),
                Some(clock) if kind == rotabloom::Kind::Circular => {
                    Ok(any.map_shards(|s| match s.circular() {
                        Some(c) => c.with_clock(clock.clone()).into(),
                        None => s,
                    }))
                }
                Some(_) => Err(rotabloom::Error::InvalidParameter {
                    name: "clock",
                    reason: format!(
                        "filter {name:?} is {}, and only circular filters have a clock",
                        kind.with_article()
                    ),
                }),
            }
        })?;
        let kind = f.kind()?;
        let shown = f.handle.name().to_string();
        let obj = kinds::wrap(py, f)?;
        if !obj.is_instance(cls)? {
            return Err(raise(
                py,
                "KindMismatchError",
                format!("filter {shown:?} is of kind {kind}, not a {wanted}"),
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
        self.handle.name().to_string()
    }

    /// ``bloom``, ``expanding`` or ``circular``.
    #[getter]
    #[pyo3(name = "kind")]
    fn kind_name(&self) -> PyResult<&'static str> {
        Ok(self.kind()?.as_str())
    }

    /// The number of shards: 1 for an ordinary filter, S for one split
    /// over a Redis Cluster's masters.
    #[getter]
    fn shards(&self) -> u32 {
        self.handle.shard_count()
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
        self.run(py, move |f, c| f.insert(c, &item))
    }

    /// Whether ``item`` may have been inserted (false positives possible,
    /// false negatives never).
    fn contains(&self, py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        let item = items::one(item)?;
        self.run(py, move |f, c| f.contains(c, &item))
    }

    fn __contains__(&self, py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.contains(py, item)
    }

    /// Atomically: True when ``item`` was new (and is now inserted), False
    /// when it was seen. Of any number of concurrent calls with the same
    /// new item, exactly one returns True.
    fn check_and_insert(&self, py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        let item = items::one(item)?;
        self.run(py, move |f, c| f.check_and_insert(c, &item))
    }

    /// ``add`` for every item of an iterable, in one round trip; a list of
    /// booleans in the same order.
    fn add_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
        let items = items::many(items)?;
        self.run(py, move |f, c| f.insert_many(c, &items))
    }

    /// ``contains`` for every item of an iterable, in one round trip.
    fn contains_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
        let items = items::many(items)?;
        self.run(py, move |f, c| f.contains_many(c, &items))
    }

    /// ``check_and_insert`` for every item of an iterable, atomically: a
    /// repeated item is new at most once.
    fn check_and_insert_many(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<bool>> {
        let items = items::many(items)?;
        self.run(py, move |f, c| f.check_and_insert_many(c, &items))
    }

    /// Distinct insertions so far, over all generations and shards
    /// (``info()["items"]``).
    fn count(&self, py: Python<'_>) -> PyResult<u64> {
        self.run(py, |f, c| f.count(c))
    }

    /// The filter's state as a dict, with the keys and value styles of
    /// ``rotabloom status --json`` (``FilterInfo`` in the type stubs):
    /// ``name``, ``kind``, ``epoch``, ``created_at`` (RFC 3339) and
    /// ``created_at_ms``, ``items``, ``capacity`` (of all generations),
    /// ``false_positive_rate``, ``memory_bytes``, ``next_rotation_at``
    /// (RFC 3339 or None), ``parameters`` (as stored, typed),
    /// ``generations`` (dicts, oldest first) and ``warnings`` (dicts with
    /// ``code``, ``level``, ``message``). A sharded filter's dict, as
    /// ``status --json`` has it, holds the totals (``items``,
    /// ``capacity``, ``memory_bytes`` summed; ``false_positive_rate`` of
    /// the worst shard; the earliest ``next_rotation_at``; no
    /// ``generations``; each shard's warnings, naming it), ``shards`` (S)
    /// and ``shard_filters``: each shard's own dict with ``shard`` (its
    /// number) and ``master`` (``host:port`` of the master holding it).
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (infos, nexts, masters) = self.run(py, |f, c| {
            let infos = f.info(c)?;
            let nexts: Vec<_> = (0..f.shard_count())
                .map(|j| {
                    f.shard(j)
                        .and_then(|s| s.circular())
                        .and_then(|c| c.next_rotation_at())
                })
                .collect();
            let masters = match f.is_sharded() {
                true => f.masters(c)?,
                false => Vec::new(),
            };
            Ok((infos, nexts, masters))
        })?;
        match self.handle.is_sharded() {
            false => match infos.first() {
                Some(i) => info::to_dict(py, i, nexts.first().copied().flatten()),
                None => Err(to_py(self.no_shards(), Some(&self.link))),
            },
            true => info::sharded(py, self.handle.name(), &infos, &nexts, &masters),
        }
    }

    /// Empties the filter, keeping its settings.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |f, c| f.clear(c))
    }

    /// Deletes the filter and its data; True if it existed.
    fn drop(&self, py: Python<'_>) -> PyResult<bool> {
        self.run(py, |f, c| f.drop(c))
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let class = slf.get_type().name()?;
        let f = slf.get();
        Ok(format!(
            "<rotabloom.{class} {:?} at {}>",
            f.handle.name(),
            f.link.shown()
        ))
    }
}
