//! The atomic steps on a root record (docs/FORMAT.md §11.4): claim the
//! name, move between states guarded by the creation's uid. Each touches
//! the root's one key only; the shards are created and dropped by the
//! ordinary steps of §8.9.

use super::root::{Root, State, ROOT_FORMAT};
use crate::error::{Error, Result};
use redis::Value;
use std::collections::BTreeMap;

/// Writes the whole root with `state creating` unless the key exists;
/// `created_at` and `deadline` from the server's clock.
const CLAIM: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local typ = redis.call('TYPE', KEYS[1])['ok']
if typ == 'hash' then
  return {'exists', tostring(now), redis.call('HGETALL', KEYS[1])}
elseif typ ~= 'none' then
  return {'wrongtype', typ}
end
redis.call('HSET', KEYS[1], 'created_at', tostring(now),
  'deadline', tostring(now + tonumber(ARGV[1])), unpack(ARGV, 2))
return {'claimed', tostring(now)}
"#;

/// Moves a root from state ARGV[2] (any state when empty) to ARGV[3]
/// (deletes it when empty) if its uid is ARGV[1]; 1 if it did, else 0.
const MOVE: &str = r#"
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash'
  or redis.call('HGET', KEYS[1], 'format') ~= ARGV[4]
  or redis.call('HGET', KEYS[1], 'uid') ~= ARGV[1] then
  return 0
end
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'state') ~= ARGV[2] then
  return 0
end
if ARGV[3] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('HSET', KEYS[1], 'state', ARGV[3])
  redis.call('HDEL', KEYS[1], 'deadline')
end
return 1
"#;

/// Sets the kind of the ready root of creation ARGV[1] to ARGV[2] (after
/// every shard was converted); 1 if it did, 0 if the root is gone or
/// another.
const SET_KIND: &str = r#"
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash'
  or redis.call('HGET', KEYS[1], 'format') ~= ARGV[3]
  or redis.call('HGET', KEYS[1], 'uid') ~= ARGV[1]
  or redis.call('HGET', KEYS[1], 'state') ~= 'ready' then
  return 0
end
redis.call('HSET', KEYS[1], 'kind', ARGV[2])
return 1
"#;

/// What the claim step found.
#[derive(Debug, PartialEq)]
pub enum Claim {
    /// The name was free; the root is ours, `creating`.
    Claimed,
    /// A hash exists under the name: its fields, and the server's time.
    Exists {
        now_ms: i64,
        fields: BTreeMap<String, String>,
    },
}

/// `EVAL` of `script` on the one key `key`. Sent as EVAL, not EVALSHA:
/// these steps are rare (create, drop), and EVAL needs no NOSCRIPT retry.
fn eval(script: &str, key: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(script).arg(1).arg(key);
    cmd
}

/// Runs `cmd` on any connection, sized or not.
pub fn query<T: redis::FromRedisValue, C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    cmd: &redis::Cmd,
) -> Result<T> {
    // An error reply (NOPERM, OOM) is the server's error, not a bad reply.
    let v = conn.req_command(cmd)?.extract_error()?;
    redis::from_redis_value(v).map_err(|e| Error::UnexpectedReply(e.to_string()))
}

/// The claim of `root` on `meta`, leased for `lease_ms`.
pub fn claim(meta: &str, root: &Root, lease_ms: u64) -> redis::Cmd {
    let mut inv = eval(CLAIM, meta);
    inv.arg(lease_ms);
    for (f, v) in root.claim_fields() {
        inv.arg(f).arg(v);
    }
    inv
}

/// The move of the root `meta` of creation `uid` from `from` (any when
/// `None`) to `to` (deleted when `None`).
pub fn transition(meta: &str, uid: &str, from: Option<State>, to: Option<State>) -> redis::Cmd {
    let mut inv = eval(MOVE, meta);
    inv.arg(uid)
        .arg(from.map_or("", State::as_str))
        .arg(to.map_or("", State::as_str))
        .arg(ROOT_FORMAT);
    inv
}

/// The step recording `kind` in the ready root `meta` of creation `uid`.
pub fn set_kind(meta: &str, uid: &str, kind: crate::metadata::Kind) -> redis::Cmd {
    let mut inv = eval(SET_KIND, meta);
    inv.arg(uid).arg(kind.as_str()).arg(ROOT_FORMAT);
    inv
}

/// Reads a root record (or a shard's metadata): `HGETALL`, decoded by
/// [`hash_fields`].
pub fn read_record(key: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("HGETALL");
    cmd.arg(key);
    cmd
}

/// The cluster's slot ranges and their masters, decoded by
/// `shard::placement`.
pub fn cluster_slots() -> redis::Cmd {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("SLOTS");
    cmd
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

/// Field/value pairs of an `HGETALL` reply (RESP2 array or RESP3 map).
pub fn hash_fields(v: &Value) -> Option<BTreeMap<String, String>> {
    match v {
        Value::Array(items) if items.len() % 2 == 0 => items
            .chunks(2)
            .map(|p| Some((text(&p[0])?, text(&p[1])?)))
            .collect(),
        Value::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| Some((text(k)?, text(v)?)))
            .collect(),
        _ => None,
    }
}

/// Decodes the reply to [`read_record`] of `key`: its fields; none when
/// the key does not exist or holds another type (no root: the ordinary
/// open says what it is).
pub fn decode_record(
    key: &str,
    reply: redis::RedisResult<Value>,
) -> Result<BTreeMap<String, String>> {
    let v = match reply.and_then(Value::extract_error) {
        Ok(v) => v,
        Err(e) if e.code() == Some("WRONGTYPE") => return Ok(BTreeMap::new()),
        Err(e) => return Err(e.into()),
    };
    hash_fields(&v).ok_or_else(|| Error::UnexpectedReply(format!("HGETALL {key}: {v:?}")))
}

/// Decodes the claim step's reply.
pub fn decode_claim(meta: &str, v: &Value) -> Result<Claim> {
    let bad = || Error::UnexpectedReply(format!("claiming {meta}: {v:?}"));
    let Value::Array(parts) = v else {
        return Err(bad());
    };
    match parts.first().and_then(text).as_deref() {
        Some("claimed") => Ok(Claim::Claimed),
        Some("exists") => {
            let now_ms = parts
                .get(1)
                .and_then(text)
                .and_then(|t| t.parse().ok())
                .ok_or_else(bad)?;
            let fields = parts.get(2).and_then(hash_fields).ok_or_else(bad)?;
            Ok(Claim::Exists { now_ms, fields })
        }
        Some("wrongtype") => Err(Error::WrongType {
            key: meta.to_string(),
            found: parts.get(1).and_then(text).unwrap_or_default(),
            expected: "hash",
        }),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn claim_replies_decode() {
        let m = "rotabloom:{x}:meta";
        let claimed = Value::Array(vec![bulk("claimed"), bulk("17")]);
        assert_eq!(decode_claim(m, &claimed).unwrap(), Claim::Claimed);
        let exists = Value::Array(vec![
            bulk("exists"),
            bulk("1700"),
            Value::Array(vec![bulk("format"), bulk("1"), bulk("kind"), bulk("bloom")]),
        ]);
        match decode_claim(m, &exists).unwrap() {
            Claim::Exists { now_ms, fields } => {
                assert_eq!(now_ms, 1700);
                assert_eq!(fields["kind"], "bloom");
            }
            other => panic!("{other:?}"),
        }
        let wrong = Value::Array(vec![bulk("wrongtype"), bulk("string")]);
        assert!(matches!(
            decode_claim(m, &wrong),
            Err(Error::WrongType { found, .. }) if found == "string"
        ));
        assert!(matches!(
            decode_claim(m, &Value::Int(1)),
            Err(Error::UnexpectedReply(_))
        ));
        let odd = Value::Array(vec![
            bulk("exists"),
            bulk("1"),
            Value::Array(vec![bulk("a")]),
        ]);
        assert!(decode_claim(m, &odd).is_err());
    }

    #[test]
    fn a_record_reads_as_its_fields_nothing_when_not_a_hash_and_loud_otherwise() {
        let map = Value::Array(vec![bulk("format"), bulk("sharded-1")]);
        let f = decode_record("m", Ok(map)).unwrap();
        assert_eq!(f.get("format").map(String::as_str), Some("sharded-1"));
        let wrong = redis::make_extension_error("WRONGTYPE".into(), Some("not a hash".into()));
        assert!(decode_record("m", Err(wrong)).unwrap().is_empty());
        assert!(matches!(
            decode_record("m", Ok(Value::Int(3))),
            Err(Error::UnexpectedReply(_))
        ));
    }
}
