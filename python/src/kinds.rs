//! The class of each kind: its constructor (the filter's settings go
//! through the library's table, keywords.rs, and the creation is
//! create.rs's) and its own operations. The one place the binding lists
//! the kinds is `wrap`.

use crate::base::{Filter, Handle};
use crate::create::create;
use crate::errors::invalid_setting;
use crate::info::{self, After};
use crate::items;
use crate::keywords::Keywords;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::PyClass;
use rotabloom::connect::Connection;
use rotabloom::{AnyFilter, Kind, Legacy, Rotation};

/// The Python object for `f`: the class of its kind.
pub fn wrap(py: Python<'_>, f: Filter) -> PyResult<Bound<'_, PyAny>> {
    fn object<S: PyClass<BaseType = Filter>>(
        py: Python<'_>,
        f: Filter,
        sub: S,
    ) -> PyResult<Bound<'_, PyAny>> {
        Ok(Bound::new(py, PyClassInitializer::from(f).add_subclass(sub))?.into_any())
    }
    match f.kind()? {
        Kind::Bloom => object(py, f, BloomFilter {}),
        Kind::Expanding => object(py, f, ExpandingFilter {}),
        Kind::Circular => object(py, f, CircularFilter {}),
    }
}

/// A Bloom filter of fixed size: one generation, made for ``capacity``
/// items at ``error_rate``. Once it holds ``capacity`` items a write
/// raises ``FullError`` and writes nothing (``when_full="error"``, the
/// default); with ``when_full="warn"`` it writes on, logging one warning,
/// and its false-positive rate rises past ``error_rate``.
///
/// ``BloomFilter(url, name, **settings)`` creates the filter in Redis, or
/// opens it if it exists with the same settings. ``url`` is any form the
/// rotabloom command accepts: ``redis://[:password@]host:port/db``,
/// ``rediss://`` (TLS), ``unix:///path``, ``redis+cluster://h:p,h:p`` and
/// ``redis+sentinel://h:p,h:p/master``.
///
/// Settings take numbers or text as on the command line (``"10M"``,
/// ``"1e6"``, ``"0.1%"``), parsed by the library:
///
/// - ``capacity``: items it is made for (required unless ``bits`` and
///   ``hashes`` are given);
/// - ``error_rate``: false-positive rate at capacity (default 0.01);
/// - ``bits``, ``hashes``: an explicit shape instead of ``capacity`` and
///   ``error_rate``;
/// - ``backend``: ``"bitmap"`` (Redis strings, default) or
///   ``"redisbloom"`` (the RedisBloom module's ``BF.*``);
/// - ``max_bits``: the largest generation allowed, in bits (default
///   2^37);
/// - ``max_block_bits``: bits per Redis string (default 2^26);
/// - ``when_full``, ``wait_replicas``, ``wait_timeout_ms``,
///   ``tls_ca_file``, ``tls_cert_file``, ``tls_key_file``: see ``Filter``.
#[pyclass(module = "rotabloom._rotabloom", extends = Filter, frozen)]
pub struct BloomFilter {}

#[pymethods]
impl BloomFilter {
    #[new]
    #[pyo3(signature = (url, name, **settings))]
    fn new(
        py: Python<'_>,
        url: &str,
        name: &str,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        create(py, Kind::Bloom, BloomFilter {}, url, name, settings)
    }
}

/// A filter that grows: when the newest generation holds its capacity a
/// bigger one is added (``growth`` times as big, ``tightening`` times the
/// error rate), so that the rate over all generations stays below
/// ``error_rate``. Past ``max_generations`` or ``max_bytes`` a write
/// raises ``LimitReachedError``.
///
/// ``ExpandingFilter(url, name, **settings)`` creates or opens it (``url``:
/// see ``BloomFilter``). Settings, numbers or text (``"10M"``,
/// ``"0.1%"``, ``"4GiB"``):
///
/// - ``capacity``: items of the first generation (required);
/// - ``error_rate``: the bound on the false-positive rate (default 0.01);
/// - ``growth``: capacity factor from one generation to the next (1 to 16,
///   default 2);
/// - ``tightening``: error-rate factor from one generation to the next
///   (between 0 and 1, default 0.5);
/// - ``max_generations``: most generations (default 32);
/// - ``max_bytes``: most bytes of all generations (``"4GiB"``; default 0,
///   no limit);
/// - ``backend``, ``max_bits``, ``max_block_bits``: see ``BloomFilter``;
/// - ``when_full``, ``wait_replicas``, ``wait_timeout_ms``,
///   ``tls_ca_file``, ``tls_cert_file``, ``tls_key_file``: see ``Filter``.
///
/// ``ExpandingFilter.adopt_legacy(...)`` takes over a bitmap written by the
/// Python package scrapy-redis-bloomfilter without copying it.
#[pyclass(module = "rotabloom._rotabloom", extends = Filter, frozen)]
pub struct ExpandingFilter {}

#[pymethods]
impl ExpandingFilter {
    #[new]
    #[pyo3(signature = (url, name, **settings))]
    fn new(
        py: Python<'_>,
        url: &str,
        name: &str,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        create(py, Kind::Expanding, ExpandingFilter {}, url, name, settings)
    }

    /// Creates the filter ``name`` with the scrapy-redis-bloomfilter bitmap
    /// at ``legacy_key`` as its frozen first generation, moved into place
    /// (no copy) in one atomic step; new items go to new generations made
    /// by ``settings`` (those of ``ExpandingFilter``). ``bit`` and
    /// ``hashes`` are that package's ``BLOOMFILTER_BIT`` and
    /// ``BLOOMFILTER_HASH_NUMBER``. ``verify``: items known to be in the
    /// bitmap (its crawler's request fingerprints), each looked up before
    /// anything moves. A bitmap that does not fit its parameters raises
    /// ``NotAdoptableError`` and nothing moves. Calling it again once
    /// adopted just opens the filter. The old package hashed
    /// 40-hex-digit request fingerprints: query with those.
    #[staticmethod]
    #[pyo3(signature = (url, name, legacy_key, *, bit=30, hashes=6, verify=None, **settings))]
    #[allow(clippy::too_many_arguments)]
    fn adopt_legacy<'py>(
        py: Python<'py>,
        url: &str,
        name: &str,
        legacy_key: &str,
        bit: u32,
        hashes: u32,
        verify: Option<&Bound<'py, PyAny>>,
        settings: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let kw = Keywords::parse(
            "ExpandingFilter.adopt_legacy",
            Some(Kind::Expanding),
            settings,
        )?;
        // As at a creation, only the handle's writes wait for replicas.
        let b = kw
            .params
            .expanding_builder(name)
            .map_err(|e| invalid_setting(py, &e))?;
        let legacy = Legacy::ScrapyRedisBloomfilter {
            key: legacy_key.to_string(),
            bit,
            hashes,
        };
        let adoption = match verify {
            Some(known) => legacy.verify(items::many(known)?),
            None => legacy.into(),
        };
        let f = Filter::establish(py, url, kw.tls, kw.writes, move |c| {
            b.adopt_legacy(c, adoption)
                .map(|f| Handle::single(AnyFilter::from(f)))
        })?;
        wrap(py, f)
    }

    /// Adds a generation now, ahead of need; False when another process
    /// changed the filter first, or the limit allows no more. A sharded
    /// filter adds one to every shard: True when every shard did.
    fn expand(slf: &Bound<'_, Self>) -> PyResult<bool> {
        slf.as_super()
            .get()
            .run(slf.py(), |f, c| match f.expanding() {
                Some(e) => e.expand(c).map(|each| each.iter().all(|&b| b)),
                None => Err(not_a(f, Kind::Expanding)),
            })
    }
}

/// A Bloom filter over a sliding window: ``generations`` generations
/// rotated on a ``schedule``, so that items are forgotten after a while
/// (a re-crawl window).
///
/// ``CircularFilter(url, name, **settings)`` creates or opens it (``url``:
/// see ``BloomFilter``). Settings, numbers or text (``"10M"``,
/// ``"0.1%"``):
///
/// - ``generations``: the window, in periods (2 to 256; required);
/// - ``capacity``: distinct items expected per period (required). A
///   generation holding its capacity refuses writes with ``FullError``
///   (``when_full="error"``, the default) until the next rotation;
///   ``when_full="warn"`` writes on, with one warning;
/// - ``error_rate``: false-positive rate of a query over the window
///   (default 0.01);
/// - ``schedule``: ``"30d"``, ``"12h"``, ``"daily@03:00"``,
///   ``"weekly:mon@03:00"``, ``"monthly:1@00:00"``...; an item inserted
///   during one period is reported present until ``generations``
///   rotations later: with a fixed interval P, at least
///   (generations-1)·P and less than generations·P after its insertion.
///   Without one, only ``rotate()`` rotates;
/// - ``mode``: ``"insert-newest-query-all"`` (default: cheap writes) or
///   ``"insert-all-query-oldest"`` (cheap reads); same windows;
/// - ``lazy``: let ordinary calls perform a rotation that has come due, so
///   nothing else (cron, ``rotate_if_due``) is needed (default False);
/// - ``clock``: a ``ManualClock`` instead of the Redis server's clock;
/// - ``backend``, ``max_bits``, ``max_block_bits``: see ``BloomFilter``;
/// - ``when_full``, ``wait_replicas``, ``wait_timeout_ms``,
///   ``tls_ca_file``, ``tls_cert_file``, ``tls_key_file``: see ``Filter``.
///
/// ``rotate_if_due()`` performs exactly the rotations the schedule owes,
/// however many processes call it; ``rotate()`` rotates once now.
#[pyclass(module = "rotabloom._rotabloom", extends = Filter, frozen)]
pub struct CircularFilter {}

/// The error for a handle of another kind than the class says: a bug.
pub(crate) fn not_a(f: &Handle, kind: Kind) -> rotabloom::Error {
    let found = f.kind().map_or("no", |k| k.with_article());
    rotabloom::Error::Internal(format!(
        "filter {:?} is {found}, its object {}",
        f.name(),
        kind.with_article()
    ))
}

/// Runs a rotation call on every shard of the circular handle (shard 0
/// first, each by its own compare-and-set) and makes its dict: the
/// rotation's own for an unsharded filter, the whole's for a sharded one.
fn rotation<'py>(
    slf: &Bound<'py, CircularFilter>,
    op: impl Fn(&rotabloom::CircularFilter, &mut Connection) -> rotabloom::Result<Rotation> + Send,
) -> PyResult<Bound<'py, PyDict>> {
    let (name, each) = slf.as_super().get().run(slf.py(), move |f, c| {
        let circular = f.circular().ok_or_else(|| not_a(f, Kind::Circular))?;
        let mut each = Vec::new();
        for j in 0..circular.shard_count() {
            let Some(shard) = circular.shard(j) else {
                break;
            };
            let r = op(shard, c).map_err(|e| shard_error(f, j, e))?;
            let after = After {
                epoch: shard.epoch(),
                next_rotation_at: shard.next_rotation_at(),
            };
            each.push((shard.name().to_string(), r, after));
        }
        Ok((f.name().to_string(), each))
    })?;
    let sharded = slf.as_super().get().handle.is_sharded();
    info::rotations(slf.py(), sharded, &name, &each)
}

/// Shard `j`'s error, a missing shard named as such (as the library's own
/// calls on the whole do).
pub(crate) fn shard_error(f: &Handle, j: u32, e: rotabloom::Error) -> rotabloom::Error {
    match e {
        rotabloom::Error::NotFound { .. } if f.is_sharded() => rotabloom::Error::ShardMissing {
            name: f.name().to_string(),
            shard: j,
            shard_name: f
                .shard(j)
                .map_or_else(String::new, |s| s.name().to_string()),
        },
        other => other,
    }
}

#[pymethods]
impl CircularFilter {
    #[new]
    #[pyo3(signature = (url, name, **settings))]
    fn new(
        py: Python<'_>,
        url: &str,
        name: &str,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        create(py, Kind::Circular, CircularFilter {}, url, name, settings)
    }

    /// Rotates once now (drops the oldest generation, starts a new one),
    /// unless another process changed the filter since this object last
    /// saw it. Returns a dict with the keys of ``rotabloom rotate --json``
    /// (``RotationResult``): ``name``, ``result`` (``rotated`` or
    /// ``superseded``), ``rotations``, ``epoch``, ``next_rotation_at``.
    fn rotate<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        rotation(slf, |f, c| f.rotate(c))
    }

    /// Performs the rotations owed by the schedule now (by the filter's
    /// clock): none if this period's is done, at most ``generations`` after
    /// missed runs. Safe to call from every process as often as you like.
    /// Returns a dict as ``rotate`` does (``result`` may be ``not_due``).
    fn rotate_if_due<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        rotation(slf, |f, c| f.rotate_if_due(c))
    }

    /// Rotations so far, as last read from Redis (of a sharded filter:
    /// the fewest of any shard).
    #[getter]
    fn epoch(slf: &Bound<'_, Self>) -> u64 {
        let f = &slf.as_super().get().handle;
        shards(f)
            .filter_map(|s| s.circular())
            .map(|c| c.epoch())
            .min()
            .unwrap_or(0)
    }

    /// The schedule in its text form, or None.
    #[getter]
    fn schedule(slf: &Bound<'_, Self>) -> Option<String> {
        let c = slf.as_super().get().handle.shard(0)?.circular()?;
        c.schedule().map(|s| s.to_string())
    }

    /// When the next scheduled rotation is due (RFC 3339, as in
    /// ``info()``), as last read from Redis (of a sharded filter: the
    /// earliest of any shard); None without a schedule.
    #[getter]
    fn next_rotation_at(slf: &Bound<'_, Self>) -> Option<String> {
        let f = &slf.as_super().get().handle;
        shards(f)
            .filter_map(|s| s.circular()?.next_rotation_at())
            .min()
            .map(info::rfc3339)
    }
}

/// Every shard's handle, shard 0 first.
fn shards(f: &Handle) -> impl Iterator<Item = &AnyFilter> {
    (0..f.shard_count()).filter_map(|j| f.shard(j))
}
