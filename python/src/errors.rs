//! rotabloom's errors as Python exceptions. The classes live in
//! `rotabloom/errors.py` so that they can also derive from Python's own
//! (`ValueError`, `ConnectionError`, ...), which extension-defined
//! exceptions cannot.

use crate::link::{connection_failed, Link};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use rotabloom::config::ParamError;
use rotabloom::Error;

/// Every class `class_of` names (`rotabloom.errors` must define each: a
/// test compares the two).
pub const CLASSES: &[&str] = &[
    "InvalidParameterError",
    "NotFoundError",
    "RecreatedError",
    "ParameterMismatchError",
    "KindMismatchError",
    "UnsupportedFormatError",
    "WrongTypeError",
    "NotAdoptableError",
    "CorruptMetadataError",
    "MissingDataError",
    "ContentionError",
    "LimitReachedError",
    "ModuleMissingError",
    "FullError",
    "ReplicasTimeoutError",
    "OutOfMemoryError",
    "PermissionDeniedError",
    "RedisConnectionError",
    "RedisError",
    "AlreadyExistsError",
    "BadDumpError",
    "FileAccessError",
    "RestoreCancelledError",
    "RestoreExpiredError",
    "InternalError",
    "PartialError",
    "RotabloomError",
];

/// The name in `rotabloom.errors` of the class raised for `e`.
fn class_of(e: &Error) -> &'static str {
    match e {
        Error::InvalidParameter { .. } | Error::TooLarge { .. } | Error::InvalidName { .. } => {
            "InvalidParameterError"
        }
        Error::NotFound { .. } => "NotFoundError",
        Error::Recreated { .. } => "RecreatedError",
        Error::ParameterMismatch { .. } => "ParameterMismatchError",
        Error::KindMismatch { .. } => "KindMismatchError",
        Error::UnsupportedFormat { .. } => "UnsupportedFormatError",
        Error::WrongType { .. } => "WrongTypeError",
        Error::NotAdoptable { .. } => "NotAdoptableError",
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
        Error::AlreadyExists { .. } => "AlreadyExistsError",
        Error::BadDump { .. } => "BadDumpError",
        Error::Io { .. } => "FileAccessError",
        Error::Cancelled { .. } => "RestoreCancelledError",
        Error::RestoreExpired { .. } => "RestoreExpiredError",
        Error::Internal(_) => "InternalError",
        Error::Partial(_) => "PartialError",
        // A variant newer than this binding: still a RotabloomError.
        _ => "RotabloomError",
    }
}

/// The attributes an exception carries besides its message, so that a
/// caller need not parse it: what differs in a mismatch, which key cannot
/// be adopted, which setting is invalid.
fn attributes(e: &Error) -> Vec<(&'static str, String)> {
    match e {
        Error::ParameterMismatch {
            field,
            stored,
            requested,
            ..
        } => vec![
            ("field", field.clone()),
            ("stored", stored.clone()),
            ("requested", requested.clone()),
        ],
        Error::InvalidParameter { name, .. } => vec![("setting", (*name).to_string())],
        Error::NotAdoptable { key, .. } => vec![("key", key.clone())],
        _ => Vec::new(),
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
    let attrs = attributes(&e);
    // Made on a worker thread of the async runtime too: never attached to
    // an interpreter that is exiting (see `crate::logs`), where a plain
    // error, made without it, is all anyone could still see.
    let fallback = PyRuntimeError::new_err(message.clone());
    if crate::logs::exiting() {
        return fallback;
    }
    Python::try_attach(|py| {
        let err = raise_with(py, class, message, retryable, &attrs);
        match &e {
            Error::Partial(p) => with_outcome(py, err, p),
            Error::Full { answered, .. } => with_answered(py, err, answered),
            _ => err,
        }
    })
    .unwrap_or(fallback)
}

/// A partial outcome's answers and failures on its exception, so that a
/// caller acts on every answer given and names the rest.
fn with_outcome(py: Python<'_>, err: PyErr, p: &rotabloom::Partial) -> PyErr {
    let exc = err.value(py);
    let failures: Vec<_> = p
        .failures
        .iter()
        .map(|f| {
            let fate = match f.fate {
                rotabloom::Fate::Refused => "refused",
                _ => "unknown",
            };
            (
                f.shard,
                f.items.clone(),
                fate,
                class_of(&f.error),
                f.error.to_string(),
            )
        })
        .collect();
    let set = exc
        .setattr("answers", p.answers.clone())
        .and_then(|()| exc.setattr("refused", p.refused()))
        .and_then(|()| exc.setattr("unknown", p.unknown()))
        .and_then(|()| exc.setattr("failures", failures));
    match set {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// A full filter's answers to the items it handled before its generation
/// filled (a prefix of the call's items): written, and answered, though
/// the call failed.
fn with_answered(py: Python<'_>, err: PyErr, answered: &[bool]) -> PyErr {
    match err.value(py).setattr("answered", answered.to_vec()) {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// `InvalidParameterError` for a setting the library's table refused; its
/// `setting` attribute names the key (`capacity`), so that callers with
/// names of their own (Scrapy's `ROTABLOOM_CAPACITY`) can say theirs.
pub fn invalid_setting(py: Python<'_>, e: &ParamError) -> PyErr {
    let attrs: Vec<(&str, String)> = e
        .key
        .map(|k| ("setting", k.to_string()))
        .into_iter()
        .collect();
    raise_with(py, "InvalidParameterError", e.to_string(), false, &attrs)
}

/// An instance of `rotabloom.errors.<class>` carrying `message`.
pub fn raise(py: Python<'_>, class: &str, message: String, retryable: bool) -> PyErr {
    raise_with(py, class, message, retryable, &[])
}

fn raise_with(
    py: Python<'_>,
    class: &str,
    message: String,
    retryable: bool,
    attrs: &[(&str, String)],
) -> PyErr {
    let made = py
        .import("rotabloom.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|cls| cls.call1((message.clone(),)))
        .and_then(|exc| {
            exc.setattr("retryable", retryable)?;
            for (name, value) in attrs {
                exc.setattr(*name, value)?;
            }
            Ok(exc)
        });
    match made {
        Ok(exc) => PyErr::from_value(exc),
        // Only a broken installation lacks the module.
        Err(_) => PyRuntimeError::new_err(message),
    }
}
