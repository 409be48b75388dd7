//! A filter's stored parameters as its readers show them: the command
//! line's `status --json` and the Python binding's `info()` both take
//! them from here, so that they agree on which fields are parameters and
//! on the type of each value.

use std::collections::BTreeMap;

/// Metadata fields that are the filter's identity or structure rather
/// than its parameters or state (the generations' `gen.*` fields are left
/// out too).
const NOT_PARAMETERS: &[&str] = &[
    "format",
    "kind",
    "uid",
    "epoch",
    "created_at",
    "next_seq",
    "gens",
];

/// A stored value, typed: `lazy` a boolean, integers and other numbers as
/// numbers, the rest (schedules, modes, backends, sizing) text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Typed<'a> {
    /// `lazy`.
    Bool(bool),
    /// An integer that fits an `i64`.
    Int(i64),
    /// An integer above `i64::MAX`.
    UInt(u64),
    /// Any other finite number written in digits (`0.001`, `1e-3`).
    Float(f64),
    /// Anything else, as stored.
    Text(&'a str),
}

impl<'a> Typed<'a> {
    /// `value`, stored under `key`, typed.
    pub fn of(key: &str, value: &'a str) -> Typed<'a> {
        if key == "lazy" {
            return Typed::Bool(value == "1" || value == "true");
        }
        if let Ok(n) = value.parse::<i64>() {
            return Typed::Int(n);
        }
        if let Ok(n) = value.parse::<u64>() {
            return Typed::UInt(n);
        }
        // Digits only: "inf" or "NaN" stay text.
        let numeric = value
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
        match value.parse::<f64>() {
            Ok(f) if numeric && f.is_finite() => Typed::Float(f),
            _ => Typed::Text(value),
        }
    }
}

/// The parameters and state among a filter's metadata `fields` (see
/// [`Info::fields`](crate::Info::fields)), typed, in key order.
///
/// ```
/// use rotabloom::config::{parameters, Typed};
/// use std::collections::BTreeMap;
/// let fields: BTreeMap<String, String> = [
///     ("uid", "5f1c"), ("capacity", "1000"), ("error_rate", "0.01"),
///     ("lazy", "1"), ("schedule", "7d"), ("gen.0.bits", "9586"),
/// ].into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
/// let p: Vec<_> = parameters(&fields).collect();
/// assert_eq!(p, [
///     ("capacity", Typed::Int(1000)), ("error_rate", Typed::Float(0.01)),
///     ("lazy", Typed::Bool(true)), ("schedule", Typed::Text("7d")),
/// ]);
/// ```
pub fn parameters(fields: &BTreeMap<String, String>) -> impl Iterator<Item = (&str, Typed<'_>)> {
    fields
        .iter()
        .filter(|(k, _)| !k.starts_with("gen.") && !NOT_PARAMETERS.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), Typed::of(k, v)))
}
