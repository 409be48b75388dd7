//! Handing a call's outcome to the asyncio future that awaits it, from a
//! thread of the async runtime, in a way that the interpreter's exit
//! waits for.
//!
//! Why not pyo3-async-runtimes' `future_into_py`: its delivery calls
//! `loop.call_soon_threadsafe` on a thread of the runtime's blocking pool,
//! and that call lets go of the GIL while it wakes the loop; the loop may
//! then end the program before the thread takes the GIL back, and at the
//! interpreter's exit that kills the thread mid-call (Python 3.11: "Fatal
//! Python error: PyGILState_Release", or a segmentation fault). The
//! cluster model's asyncio clients met it about once in 50 sequences; a
//! script that opens a sharded filter, awaits four batches and exits met
//! it 3 times in 60 runs. Here each delivery is counted from the moment
//! the outcome is known, and an `atexit` hook waits, without the GIL,
//! until none is in progress.

use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use std::future::Future;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Deliveries begun and not finished, and the hook's wake-up.
static DELIVERING: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

/// One delivery in progress, from the outcome known to the loop told.
struct Delivering;

impl Delivering {
    fn start() -> Delivering {
        let mut n = DELIVERING.0.lock().unwrap_or_else(|e| e.into_inner());
        *n += 1;
        Delivering
    }
}

impl Drop for Delivering {
    fn drop(&mut self) {
        let mut n = DELIVERING.0.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        if *n == 0 {
            DELIVERING.1.notify_all();
        }
    }
}

/// An asyncio future of the running loop, resolved with what `work`
/// returns once it ends. `work` runs on the runtime whatever becomes of
/// the future: cancelling it stops the waiting, not the work (whose
/// outcome is then dropped).
pub fn awaitable<'py, T, F>(py: Python<'py>, work: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let future = event_loop.call_method0("create_future")?;
    let settle = py.import("rotabloom.aio")?.getattr("_settle")?;
    let to = (
        event_loop.unbind(),
        future.clone().unbind(),
        settle.unbind(),
    );
    pyo3_async_runtimes::tokio::get_runtime().spawn(async move {
        let out = work.await;
        let counted = Delivering::start();
        tokio::task::spawn_blocking(move || {
            let _counted = counted;
            let _ = Python::try_attach(move |py| {
                let (event_loop, future, settle) = to;
                let (ok, value) = match out.and_then(|v| v.into_py_any(py)) {
                    Ok(v) => (true, v),
                    Err(e) => (false, e.into_value(py).into_any()),
                };
                // A loop closed meanwhile refuses: nobody awaits any more.
                let _ = event_loop
                    .bind(py)
                    .call_method1("call_soon_threadsafe", (settle, future, ok, value));
            });
        });
    });
    Ok(future)
}

/// The `atexit` hook: returns once no delivery is in progress (at most
/// 10 s), without the GIL, which each of them needs to end.
#[pyfunction]
fn wait_for_deliveries(py: Python<'_>) {
    py.detach(|| {
        let n = DELIVERING.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = DELIVERING
            .1
            .wait_timeout_while(n, Duration::from_secs(10), |n| *n > 0);
    });
}

/// Registers the hook.
pub fn install(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let hook = wrap_pyfunction!(wait_for_deliveries, m)?;
    m.py().import("atexit")?.call_method1("register", (hook,))?;
    Ok(())
}
