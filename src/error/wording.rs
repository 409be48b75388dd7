//! Parts of [`Error`](super::Error)'s messages worked out from a
//! variant's fields, which the `#[error]` strings of the variants call.

/// The end of [`Error::Full`](super::Error::Full)'s message: what of the call was applied.
pub(super) fn refused_from(answered: &[bool]) -> String {
    match answered.len() {
        0 => "nothing was written".to_string(),
        n => format!("the first {n} items of the call were handled, the rest refused from item {n} (counting from 0) on"),
    }
}

/// `d` in seconds for a message: `10 s`, `0.5 s`.
pub(super) fn seconds(d: &std::time::Duration) -> String {
    format!("{} s", d.as_secs_f64())
}
