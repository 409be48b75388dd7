//! The base class `Filter` itself: a connection and the library's own
//! handle on a filter of any kind, sharded or not, and how a call reaches
//! Redis without the GIL. Its Python methods are in filter.rs; the
//! subclasses (kinds.rs) add their constructors and their own operations.

use crate::errors::{raise, to_py};
use crate::keywords::Writes;
use crate::link::Link;
use pyo3::prelude::*;
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
    pub(crate) link: Link,
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

    pub(crate) fn no_shards(&self) -> rotabloom::Error {
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
