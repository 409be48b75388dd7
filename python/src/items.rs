//! Items from Python: `str` (as UTF-8) or `bytes`, nothing else, so that a
//! number or `None` never turns silently into some text.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// One item's bytes.
pub fn one(item: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = item.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(s) = item.cast::<PyString>() {
        return Ok(s.to_cow()?.as_bytes().to_vec());
    }
    Err(PyTypeError::new_err(format!(
        "rotabloom items are str or bytes, not {}",
        type_name(item)
    )))
}

/// The name of `value`'s type, for messages.
pub fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Every item of an iterable, read before any is sent so that a bad one
/// leaves the filter unchanged.
pub fn many(items: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<u8>>> {
    if items.is_instance_of::<PyString>() || items.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(
            "pass an iterable of items (a str or bytes would be split into characters)",
        ));
    }
    items.try_iter()?.map(|item| one(&item?)).collect()
}
