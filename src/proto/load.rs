//! Loading a view: the metadata hash and the fence, read atomically.

use super::pairs;
use crate::error::unexpected;
use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::metadata::Fields;
use crate::request::Request;
use crate::scripts;
use crate::view::{Accept, View};
use redis::Value;

pub(crate) fn request(keys: &Keys) -> Request {
    let mut req = Request::new().read_only();
    req.script(
        &scripts::LOAD,
        scripts::LOAD.invoke(&[keys.meta().to_string(), keys.fence()]),
    );
    req
}

/// Decodes the load script's reply, or a create script's body (the same
/// hash and fence), into a validated view.
pub(crate) fn decode(
    keys: &Keys,
    accept: Accept,
    reply: redis::RedisResult<Value>,
) -> Result<View> {
    let v = reply?;
    let Value::Array(parts) = v else {
        return Err(unexpected("load script", &v));
    };
    let mut parts = parts.into_iter();
    let (Some(ty), Some(hash), Some(fence)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(Error::UnexpectedReply("load script: wrong arity".into()));
    };
    let ty = super::as_string(&ty).unwrap_or_default();
    match ty.as_str() {
        "hash" => {}
        "none" => {
            return Err(Error::NotFound {
                name: keys.name().to_string(),
            })
        }
        other => {
            let (key, found, expected) = match other.strip_prefix("fence:") {
                Some(t) => (keys.fence(), t, "string"),
                None => (keys.meta().to_string(), other, "hash"),
            };
            return Err(Error::WrongType {
                key,
                found: found.to_string(),
                expected,
            });
        }
    }
    decode_hash(keys, accept, hash, fence)
}

/// The `uid` field of the hash in a load script's reply, if it has one.
pub(crate) fn uid_of(reply: &redis::RedisResult<Value>) -> Option<String> {
    let Ok(Value::Array(parts)) = reply else {
        return None;
    };
    let Some(Value::Array(hash)) = parts.get(1) else {
        return None;
    };
    hash.chunks(2).find_map(|kv| match kv {
        [k, v] if super::as_string(k).as_deref() == Some("uid") => super::as_string(v),
        _ => None,
    })
}

/// A hash and a fence, as the load and create scripts return them.
pub(crate) fn decode_hash(keys: &Keys, accept: Accept, hash: Value, fence: Value) -> Result<View> {
    let raw = pairs(hash)?;
    if raw.is_empty() {
        return Err(Error::NotFound {
            name: keys.name().to_string(),
        });
    }
    let fence = match fence {
        Value::Nil => None,
        Value::BulkString(b) => Some(b),
        other => return Err(unexpected("fence", &other)),
    };
    let fields = Fields {
        name: keys.name().to_string(),
        raw,
    };
    View::decode(fields, fence.as_deref(), &keys.fence(), accept)
}
