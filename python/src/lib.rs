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
    m.add_class::<filters::Filter>()?;
    m.add_class::<filters::BloomFilter>()?;
    m.add_class::<filters::ExpandingFilter>()?;
    m.add_class::<filters::CircularFilter>()?;
    m.add_class::<clock::ManualClock>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
