//! The `rotabloom._rotabloom` extension module: rotabloom's filters for
//! Python. The package `rotabloom` (python/rotabloom) re-exports it.

mod clock;
mod errors;
mod filters;
mod info;
mod items;
mod link;

use pyo3::prelude::*;

#[pymodule]
fn _rotabloom(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The library's `log` records become Python `logging` records (logger
    // names follow the Rust modules: "rotabloom.engine" and so on), so a
    // crawler's log shows them. A second import in the same process (a
    // sub-interpreter) keeps the logger set by the first.
    let _ = pyo3_log::try_init();
    m.add_class::<filters::Filter>()?;
    m.add_class::<filters::BloomFilter>()?;
    m.add_class::<filters::ExpandingFilter>()?;
    m.add_class::<filters::CircularFilter>()?;
    m.add_class::<clock::ManualClock>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
