//! The engine of `rotabloom.aio` (python/rotabloom/aio.py): `_AsyncCore`,
//! a filter object's handle driven by the library's async API. The Python
//! classes open and create filters with the blocking classes (on a worker
//! thread, once) and send every call after that through here.

mod deliver;
mod shared;

pub use deliver::install;

use crate::base::Filter;
use crate::info::{self, After};
use crate::items;
use crate::kinds::{not_a, shard_error};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rotabloom::connect::AsyncConnection;
use rotabloom::{Info, Kind, Rotation};
use shared::{spawn, Shared};
use std::sync::Arc;

/// What a batch does with its items.
#[derive(Clone, Copy)]
enum Op {
    Insert,
    Contains,
    CheckAndInsert,
}

/// Runs `op` on `items` (the shards' parts at once on a sharded filter).
async fn batch(
    s: &Shared,
    conn: &AsyncConnection,
    op: Op,
    items: Vec<Vec<u8>>,
) -> rotabloom::Result<Vec<bool>> {
    let h = &s.handle;
    match op {
        Op::Insert => h.insert_many_async(conn, items).await,
        Op::Contains => h.contains_many_async(conn, items).await,
        Op::CheckAndInsert => h.check_and_insert_many_async(conn, items).await,
    }
}

/// An unsharded filter's `info()` dict, made once the GIL is held.
struct InfoDict(Info, Option<chrono::DateTime<chrono::Utc>>);

impl<'py> IntoPyObject<'py> for InfoDict {
    type Target = PyDict;
    type Output = Bound<'py, PyDict>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        info::to_dict(py, &self.0, self.1)
    }
}

/// A rotation call's dict, made once the GIL is held.
struct Rotations {
    sharded: bool,
    name: String,
    each: Vec<(String, Rotation, After)>,
}

impl<'py> IntoPyObject<'py> for Rotations {
    type Target = PyDict;
    type Output = Bound<'py, PyDict>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        info::rotations(py, self.sharded, &self.name, &self.each)
    }
}

/// The async calls on one filter: made from a blocking filter object,
/// whose handle it shares (a rotation seen by one is seen by the other),
/// over a connection of its own. Every method returns an awaitable and
/// starts its call at once; see ``rotabloom.aio`` for what each does.
#[pyclass(module = "rotabloom._rotabloom", name = "_AsyncCore", frozen)]
pub struct AsyncCore {
    shared: Arc<Shared>,
}

impl AsyncCore {
    fn many<'py>(
        &self,
        py: Python<'py>,
        op: Op,
        items: Vec<Vec<u8>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        spawn(py, &self.shared, move |s, conn| async move {
            batch(&s, &conn, op, items).await
        })
    }

    fn one<'py>(&self, py: Python<'py>, op: Op, item: Vec<u8>) -> PyResult<Bound<'py, PyAny>> {
        spawn(py, &self.shared, move |s, conn| async move {
            let answers = batch(&s, &conn, op, vec![item]).await?;
            answers.first().copied().ok_or_else(|| {
                rotabloom::Error::Internal("a batch of one item answered nothing".into())
            })
        })
    }

    fn rotation<'py>(&self, py: Python<'py>, due: bool) -> PyResult<Bound<'py, PyAny>> {
        spawn(py, &self.shared, move |s, conn| async move {
            let f = &s.handle;
            let circular = f.circular().ok_or_else(|| not_a(f, Kind::Circular))?;
            let mut each = Vec::new();
            // Shard 0 first, each by its own compare-and-set, as the
            // blocking class does.
            for j in 0..circular.shard_count() {
                let Some(shard) = circular.shard(j) else {
                    break;
                };
                let mut c = conn.clone();
                let r = match due {
                    true => shard.rotate_if_due_async(&mut c).await,
                    false => shard.rotate_async(&mut c).await,
                };
                let r = r.map_err(|e| shard_error(f, j, e))?;
                let after = After {
                    epoch: shard.epoch(),
                    next_rotation_at: shard.next_rotation_at(),
                };
                each.push((shard.name().to_string(), r, after));
            }
            Ok(Rotations {
                sharded: f.is_sharded(),
                name: f.name().to_string(),
                each,
            })
        })
    }
}

#[pymethods]
impl AsyncCore {
    #[new]
    fn new(filter: &Bound<'_, Filter>) -> AsyncCore {
        let f = filter.get();
        AsyncCore {
            shared: Shared::new(f.handle.clone(), f.link.detached()),
        }
    }

    fn add<'py>(&self, py: Python<'py>, item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.one(py, Op::Insert, items::one(item)?)
    }

    fn contains<'py>(
        &self,
        py: Python<'py>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.one(py, Op::Contains, items::one(item)?)
    }

    fn check_and_insert<'py>(
        &self,
        py: Python<'py>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.one(py, Op::CheckAndInsert, items::one(item)?)
    }

    fn add_many<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.many(py, Op::Insert, items::many(items)?)
    }

    fn contains_many<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.many(py, Op::Contains, items::many(items)?)
    }

    fn check_and_insert_many<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.many(py, Op::CheckAndInsert, items::many(items)?)
    }

    /// Distinct insertions over every shard.
    fn count<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        spawn(py, &self.shared, |s, conn| async move {
            let mut total = 0u64;
            for j in 0..s.handle.shard_count() {
                let Some(f) = s.handle.shard(j) else {
                    break;
                };
                let n = f.count_async(&mut conn.clone()).await;
                total += n.map_err(|e| shard_error(&s.handle, j, e))?;
            }
            Ok(total)
        })
    }

    /// The `info()` dict of an unsharded filter (a sharded one's names
    /// each shard's master, which only the blocking class asks for).
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        spawn(py, &self.shared, |s, mut conn| async move {
            let f = match (s.handle.is_sharded(), s.handle.shard(0)) {
                (false, Some(f)) => f,
                _ => {
                    return Err(rotabloom::Error::Internal(format!(
                        "filter {:?}: the async info is of unsharded filters",
                        s.handle.name()
                    )))
                }
            };
            let i = f.info_async(&mut conn).await?;
            let next = f.circular().and_then(|c| c.next_rotation_at());
            Ok(InfoDict(i, next))
        })
    }

    fn rotate<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.rotation(py, false)
    }

    fn rotate_if_due<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.rotation(py, true)
    }

    /// Waits until no call of this object is running, those whose
    /// awaiter was cancelled included.
    fn drain<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = Arc::clone(&self.shared);
        deliver::awaitable(py, async move {
            s.idle().await;
            Ok(())
        })
    }

    /// Calls started and not yet finished.
    #[getter]
    fn running(&self) -> usize {
        self.shared.running()
    }
}
