//! Naming the key behind a WRONGTYPE error: `TYPE` of each key the failed
//! request used, checked against what rotabloom needs there.

use crate::error::Error;
use crate::request::{Replies, Request};

pub(crate) fn request(keys: &[(String, &'static str)]) -> Request {
    let mut req = Request::new().read_only();
    for (k, _) in keys {
        req.push(redis::cmd("TYPE").arg(k).clone(), None);
    }
    req
}

/// The error naming the first key of an unexpected type, or `original`
/// when all look right (the key was changed back meanwhile).
pub(crate) fn verdict(
    keys: &[(String, &'static str)],
    replies: Option<Replies>,
    original: Error,
) -> Error {
    let replies = replies.unwrap_or_default();
    for ((key, expected), r) in keys.iter().zip(replies) {
        if let Some(t) = r.ok().as_ref().and_then(super::as_string) {
            if t != "none" && t != *expected {
                return Error::WrongType {
                    key: key.clone(),
                    found: t,
                    expected,
                };
            }
        }
    }
    original
}
