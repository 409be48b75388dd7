//! The library's `log` records as Python `logging` records (pyo3-log;
//! logger names follow the Rust modules: "rotabloom.engine" and so on), so
//! that a crawler's log shows them, until the interpreter begins to exit.
//!
//! Why not pyo3-log alone: the async runtime's worker threads log too
//! (the redis crate's cluster connection, as it closes), and a record
//! logged by one once Python is finalizing would attach that thread to a
//! dying interpreter, which aborts the process at exit: the hazard that
//! `aio::deliver` removes for the calls' outcomes (where the cluster
//! model's asyncio clients met it), removed here for log records. An
//! `atexit` hook, which runs before finalization, ends the forwarding; a
//! record that races it is dropped rather than attach
//! (`Python::try_attach`).

use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the `atexit` hook: no record reaches Python after it.
static EXITING: AtomicBool = AtomicBool::new(false);

/// pyo3-log's logger, until the interpreter exits.
struct UntilExit(pyo3_log::Logger);

impl log::Log for UntilExit {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        !EXITING.load(Ordering::Acquire) && self.0.enabled(metadata)
    }

    fn log(&self, record: &log::Record) {
        if EXITING.load(Ordering::Acquire) {
            return;
        }
        let _ = Python::try_attach(|_| self.0.log(record));
    }

    fn flush(&self) {
        self.0.flush()
    }
}

/// The interpreter is exiting: records stay in Rust from now on.
#[pyfunction]
fn stop_logging() {
    EXITING.store(true, Ordering::Release);
}

/// Whether the interpreter has begun to exit (the `atexit` hook ran).
pub fn exiting() -> bool {
    EXITING.load(Ordering::Acquire)
}

/// Installs the logger (once per process: a second import, in a
/// sub-interpreter, keeps the first's) and the hook that stops it.
pub fn install(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let logger = pyo3_log::Logger::new(py, pyo3_log::Caching::LoggersAndLevels)?;
    if log::set_boxed_logger(Box::new(UntilExit(logger))).is_ok() {
        // pyo3-log's own default: records up to debug are offered to
        // Python, whose logging configuration then decides.
        log::set_max_level(log::LevelFilter::Debug);
    }
    let stop = wrap_pyfunction!(stop_logging, m)?;
    py.import("atexit")?.call_method1("register", (stop,))?;
    Ok(())
}
