//! What every async call on one filter object shares: the library's
//! handle, one multiplexed connection (made on first use, made again after
//! it broke), and the count of calls still running. `spawn` is the one way
//! a call reaches Redis.

use crate::base::Handle;
use crate::errors::to_py;
use crate::link::{broken, Link};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use rotabloom::connect::AsyncConnection;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{Mutex, Notify};

/// The state of one `rotabloom.aio` filter object.
pub struct Shared {
    pub handle: Handle,
    pub link: Link,
    conn: Mutex<Option<AsyncConnection>>,
    running: AtomicUsize,
    idle: Notify,
}

impl Shared {
    pub fn new(handle: Handle, link: Link) -> Arc<Shared> {
        Arc::new(Shared {
            handle,
            link,
            conn: Mutex::new(None),
            running: AtomicUsize::new(0),
            idle: Notify::new(),
        })
    }

    /// The connection, made now if there is none. A multiplexed connection
    /// matches each reply to its request, so every call shares one.
    async fn conn(&self) -> rotabloom::Result<AsyncConnection> {
        let mut guard = self.conn.lock().await;
        if let Some(conn) = guard.as_ref() {
            return Ok(conn.clone());
        }
        let conn = self.link.target().connect_async().await?;
        *guard = Some(conn.clone());
        Ok(conn)
    }

    /// Calls started and not yet finished.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }

    /// Returns once no call is running (those whose awaiter was cancelled
    /// included).
    pub async fn idle(&self) {
        loop {
            let woken = self.idle.notified();
            tokio::pin!(woken);
            // Registered before the count is read, so a call that ends in
            // between still wakes it.
            woken.as_mut().enable();
            if self.running.load(Ordering::Acquire) == 0 {
                return;
            }
            woken.await;
        }
    }
}

/// One running call, counted from the moment it is made until its task
/// ends (even by a panic).
struct Running(Arc<Shared>);

impl Running {
    fn start(shared: &Arc<Shared>) -> Running {
        shared.running.fetch_add(1, Ordering::AcqRel);
        Running(Arc::clone(shared))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Starts `op` now, as a task of its own on the runtime, and returns an
/// awaitable of its answer. Cancelling the awaitable stops the waiting,
/// not the call: the call runs to its end, so a batch is never cut between
/// its round trips and no reply is left for a later call to read; its
/// answer, or error, is then dropped.
pub fn spawn<'py, T, F, Fut>(
    py: Python<'py>,
    shared: &Arc<Shared>,
    op: F,
) -> PyResult<Bound<'py, PyAny>>
where
    F: FnOnce(Arc<Shared>, AsyncConnection) -> Fut + Send + 'static,
    Fut: Future<Output = rotabloom::Result<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let running = Running::start(shared);
    let task = pyo3_async_runtimes::tokio::get_runtime().spawn(async move {
        let s = Arc::clone(&running.0);
        let out = match s.conn().await {
            Ok(conn) => op(Arc::clone(&s), conn).await,
            Err(e) => Err(e),
        };
        if let Err(e) = &out {
            if broken(e) {
                // The next call connects again; this one is not repeated,
                // since a write may have reached the server.
                *s.conn.lock().await = None;
            }
        }
        drop(running);
        out.map_err(|e| to_py(e, Some(&s.link)))
    });
    super::deliver::awaitable(py, async move {
        match task.await {
            Ok(out) => out,
            Err(e) => Err(PyRuntimeError::new_err(format!(
                "a rotabloom call's task failed: {e}"
            ))),
        }
    })
}
