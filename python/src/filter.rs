//! The Python methods of the base class `Filter` (base.rs): the
//! operations every kind shares, and `Filter.open`, which answers with the
//! class of the stored kind (kinds.rs).

use crate::base::{Filter, Handle};
use crate::errors::{raise, to_py};
use crate::keywords::Keywords;
use crate::{info, items, kinds};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};

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

    /// ``check_and_insert`` for every item of an iterable: atomic per item
    /// (a repeated item is new at most once) and per shard, not for the
    /// whole batch. When a shard fails (full, missing, its reply lost) the
    /// others' answers are kept: ``PartialError`` carries every answer
    /// given and names the refused and unknown items.
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
