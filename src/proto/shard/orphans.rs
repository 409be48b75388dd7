//! Finding the shards of a sharded filter whose root record is gone (the
//! master that served it lost its data): every master is walked for keys
//! named as shards of the name are (docs/FORMAT.md §11.2, §11.4), one SCAN
//! step per request, run by a script routed to that master by a key of a
//! slot it serves. Pure: built and decoded here, sent by `crate::shard`.

use super::script::text;
use crate::error::{Error, Result};
use crate::keys::{glob_escaped, KEY_PREFIX};
use crate::proto::take_one;
use crate::request::{Replies, Request};
use crate::scripts::FIND_SHARDS;
use redis::Value;

/// Keys a SCAN step looks at.
const COUNT: u32 = 1000;

/// Tries to find a routing key for a master: one in M tries lands on it
/// on average, so this bound is never met by a master that serves a slot.
const MAX_TRIES: u32 = 1_000_000;

/// The pattern of every shard's metadata key of filter `name`.
pub fn pattern(name: &str) -> String {
    format!("{KEY_PREFIX}:{{{}:shard:*}}:meta", glob_escaped(name))
}

/// A key that `lands` on the master to walk (a cluster's: the key's slot
/// is one it serves): it routes a step of the walk there and is never
/// read or written.
pub fn probe_key(name: &str, lands: impl Fn(&str) -> bool) -> Option<String> {
    (0..MAX_TRIES)
        .map(|t| format!("{KEY_PREFIX}:{{{name}:probe:{t}}}:none"))
        .find(|k| lands(k))
}

/// One SCAN step from `cursor` on the node of `probe`.
pub fn step(probe: &str, cursor: &str, pattern: &str) -> Request {
    let mut cmd = FIND_SHARDS.invoke(&[probe]);
    cmd.arg(cursor).arg(pattern).arg(COUNT);
    let mut req = Request::new().read_only();
    req.script(&FIND_SHARDS, cmd);
    req
}

/// The reply of a [`step`]: the next cursor ("0": done) and the keys.
pub fn decode_step(replies: Replies) -> Result<(String, Vec<String>)> {
    let v = take_one(Some(replies))?.and_then(Value::extract_error)?;
    let bad = || Error::UnexpectedReply(format!("SCAN for shards: {v:?}"));
    let Value::Array(parts) = &v else {
        return Err(bad());
    };
    match parts.as_slice() {
        [cursor, Value::Array(keys)] => {
            let cursor = text(cursor).ok_or_else(bad)?;
            // A key that is not text cannot be a shard's: skipped.
            Ok((cursor, keys.iter().filter_map(text).collect()))
        }
        _ => Err(bad()),
    }
}

/// The shard name in `key` when it is the metadata key of a shard of
/// `name` exactly as rotabloom names them (`NAME:shard:J:TAG`, `J`
/// decimal, `TAG` 8 lowercase hex digits): a filter the user named
/// `NAME:shard:x` is not taken for one.
pub fn shard_of_key(name: &str, key: &str) -> Option<String> {
    let inner = key
        .strip_prefix(KEY_PREFIX)?
        .strip_prefix(":{")?
        .strip_suffix("}:meta")?;
    let rest = inner.strip_prefix(name)?.strip_prefix(":shard:")?;
    let (j, tag) = rest.split_once(':')?;
    let decimal = !j.is_empty() && j.bytes().all(|b| b.is_ascii_digit());
    let hex = tag.len() == 8 && tag.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    (decimal && hex).then(|| inner.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_made_as_shards_of_the_name_are_shards() {
        let k = |inner: &str| format!("rotabloom:{{{inner}}}:meta");
        assert_eq!(
            shard_of_key("crawl", &k("crawl:shard:3:0a1b2c3d")).as_deref(),
            Some("crawl:shard:3:0a1b2c3d")
        );
        for other in [
            "crawl:shard:x:0a1b2c3d",
            "crawl:shard:3:0A1B2C3D",
            "crawl:shard:3:0a1b2c",
            "crawl2:shard:3:0a1b2c3d",
            "crawl:shard:3:0a1b2c3d:x",
        ] {
            assert_eq!(shard_of_key("crawl", &k(other)), None, "{other}");
        }
        assert_eq!(
            shard_of_key("crawl", "rotabloom:{crawl:shard:3:0a1b2c3d}:fence"),
            None
        );
    }

    #[test]
    fn the_pattern_escapes_the_name() {
        assert_eq!(pattern("a*b"), r"rotabloom:{a\*b:shard:*}:meta");
    }

    #[test]
    fn a_probe_key_lands_where_asked() {
        let k = probe_key("crawl", |k| k.ends_with("7}:none")).unwrap();
        assert_eq!(k, "rotabloom:{crawl:probe:7}:none");
        assert!(probe_key("crawl", |_| true).is_some());
    }

    #[test]
    fn a_step_reply_decodes_and_errors_stay_loud() {
        let reply = Value::Array(vec![
            Value::BulkString(b"17".to_vec()),
            Value::Array(vec![Value::BulkString(b"k".to_vec())]),
        ]);
        assert_eq!(
            decode_step(vec![Ok(reply)]).unwrap(),
            ("17".to_string(), vec!["k".to_string()])
        );
        assert!(decode_step(vec![Ok(Value::Int(1))]).is_err());
        let denied = redis::make_extension_error("NOPERM".into(), Some("no".into()));
        assert!(decode_step(vec![Err(denied)]).is_err());
    }
}
