//! rotabloom's errors as Python exceptions. The classes live in
//! `rotabloom/errors.py` so that they can also derive from Python's own
//! (`ValueError`, `ConnectionError`, ...), which extension-defined
//! exceptions cannot.

use crate::link::{connection_failed, Link};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use rotabloom::Error;

/// The name in `rotabloom.errors` of the class raised for `e`.
fn class_of(e: &Error) -> &'static str {
    match e {
        Error::InvalidParameter { .. } | Error::TooLarge { .. } | Error::InvalidName { .. } => {
            "InvalidParameterError"
        }
        Error::NotFound { .. } => "NotFoundError",
        Error::ParameterMismatch { .. } => "ParameterMismatchError",
        Error::KindMismatch { .. } => "KindMismatchError",
        Error::UnsupportedFormat { .. } => "UnsupportedFormatError",
        Error::WrongType { .. } => "WrongTypeError",
        Error::CorruptMetadata { .. } => "CorruptMetadataError",
        Error::MissingData { .. } => "MissingDataError",
        Error::Contention { .. } => "ContentionError",
        Error::LimitReached { .. } => "LimitReachedError",
        Error::ModuleMissing { .. } => "ModuleMissingError",
        Error::Full { .. } => "FullError",
        Error::ReplicasTimeout { .. } => "ReplicasTimeoutError",
        Error::OutOfMemory { .. } | Error::MemoryFull { .. } => "OutOfMemoryError",
        Error::PermissionDenied { .. } => "PermissionDeniedError",
        Error::Connect { .. } | Error::TimedOut { .. } => "RedisConnectionError",
        Error::Redis(r) if connection_failed(r.inner()) => "RedisConnectionError",
        Error::Redis(_) | Error::UnexpectedReply(_) => "RedisError",
        _ => "RotabloomError",
    }
}

/// The Python exception for `e`, its message scrubbed of `link`'s passwords.
pub fn to_py(e: Error, link: Option<&Link>) -> PyErr {
    let message = match link {
        Some(link) => link.redact(&e.to_string()),
        None => rotabloom::redact_urls(&e.to_string()),
    };
    let class = class_of(&e);
    // A failed connection is worth another try even where the library,
    // which cannot know the caller's patience, does not say so.
    let retryable = e.is_retryable() || class == "RedisConnectionError";
    Python::attach(|py| raise(py, class, message, retryable))
}

/// An instance of `rotabloom.errors.<class>` carrying `message`.
pub fn raise(py: Python<'_>, class: &str, message: String, retryable: bool) -> PyErr {
    let made = py
        .import("rotabloom.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|cls| cls.call1((message.clone(),)))
        .and_then(|exc| {
            exc.setattr("retryable", retryable)?;
            Ok(exc)
        });
    match made {
        Ok(exc) => PyErr::from_value(exc),
        // Only a broken installation lacks the module.
        Err(_) => PyRuntimeError::new_err(message),
    }
}
