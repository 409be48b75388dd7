//! The wire protocol, pure: every request rotabloom sends is built here from
//! a view and the operation's input, and every reply decoded here, against
//! the same view. No I/O and no shared state: the machines in `engine`
//! decide what to send next; `exec` sends it. Unit-tested with canned
//! replies. A sharded filter's root record and its requests are here too
//! (`shard`); the sharded layer (`crate::shard`) only sends them.
//!
//! Three other pure places build commands, each for what only it knows:
//! a backend's own commands (`store::*`, chosen per generation), the
//! reads of a legacy layout (`legacy::check`), and the `WAIT` a write
//! owes (`wait`). The connection layer (`connect`) sends its own PING,
//! CLUSTER NODES and SCAN, which are about the connection, not a filter.

pub(crate) mod alloc;
pub(crate) mod count;
pub(crate) mod create;
pub(crate) mod dump;
pub(crate) mod load;
pub(crate) mod probe;
pub(crate) mod roll;
pub(crate) mod script;
pub(crate) mod shard;
pub(crate) mod time;
pub(crate) mod trash;
pub(crate) mod txn;
pub(crate) mod whole;

use crate::error::unexpected;
use crate::error::{Error, Result};
use crate::request::Replies;
use redis::Value;
use std::collections::BTreeMap;

/// The only reply of a one-command request.
pub(crate) fn take_one(replies: Option<Replies>) -> Result<redis::RedisResult<Value>> {
    replies
        .and_then(|r| r.into_iter().next())
        .ok_or_else(|| Error::Internal("a request's reply is missing".into()))
}

pub(crate) fn as_string(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Okay => Some("OK".into()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

/// Field/value pairs of an `HGETALL` (RESP2 array or RESP3 map), values
/// kept as bytes: their validation is the decoder's.
pub(crate) fn pairs(v: Value) -> Result<BTreeMap<String, Vec<u8>>> {
    let bytes = |v: Value| -> Result<Vec<u8>> {
        match v {
            Value::BulkString(b) => Ok(b),
            Value::SimpleString(s) => Ok(s.into_bytes()),
            other => Err(unexpected("metadata hash entry", &other)),
        }
    };
    let list: Vec<(Value, Value)> = match v {
        Value::Array(items) => {
            if items.len() % 2 != 0 {
                return Err(Error::UnexpectedReply(
                    "metadata hash: odd number of values".into(),
                ));
            }
            let mut it = items.into_iter();
            let mut out = Vec::new();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                out.push((k, v));
            }
            out
        }
        Value::Map(m) => m,
        other => return Err(unexpected("metadata hash", &other)),
    };
    list.into_iter()
        .map(|(k, v)| Ok((String::from_utf8_lossy(&bytes(k)?).into_owned(), bytes(v)?)))
        .collect()
}

/// Whether a Redis error is WRONGTYPE.
pub(crate) fn is_wrongtype(e: &Error) -> bool {
    matches!(e, Error::Redis(r) if r.inner().code() == Some("WRONGTYPE")
        || r.inner().to_string().contains("WRONGTYPE"))
}

/// A script's `KEY FOUND NEEDED`: a block of the filter holds another
/// Redis type (damaged data, said so, never read as zeros).
pub(crate) fn wrong_block_type(words: &str) -> Error {
    let mut parts = words.rsplitn(3, ' ');
    let needed = parts.next().unwrap_or_default();
    let found = parts.next().unwrap_or("other type");
    let key = parts.next().unwrap_or(words);
    Error::WrongType {
        key: key.to_string(),
        found: found.to_string(),
        expected: match needed {
            "module" => "bloom module's key (a module backend's generation)",
            _ => "string (a bitmap block)",
        },
    }
}

/// The server's milliseconds since the epoch, or the caller's clock.
pub(crate) fn now_arg(now: Option<chrono::DateTime<chrono::Utc>>) -> String {
    now.map(|t| t.timestamp_millis().to_string())
        .unwrap_or_default()
}
