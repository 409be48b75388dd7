//! The requests on a root record (docs/FORMAT.md §11.4, §11.8): claim the
//! name, move between states guarded by the creation's uid, record a
//! whole-filter target by compare-and-set, read the record; and the
//! cluster's slot map. Each touches the root's one key only (the shards
//! are created and dropped by the ordinary steps of §8.9). Pure: built
//! here, sent by `exec` (EVALSHA, re-sent in full after NOSCRIPT, WAIT
//! where the handle waits), decoded here.

use super::root::{Root, State, ROOT_FORMAT};
use crate::error::{Error, Result};
use crate::proto::take_one;
use crate::request::{Replies, Request};
use crate::scripts::{ROOT_CLAIM, ROOT_MOVE, ROOT_TARGET};
use redis::Value;
use std::collections::BTreeMap;

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

/// The reply of a one-command request, error replies as errors.
fn one(replies: Replies) -> Result<Value> {
    Ok(take_one(Some(replies))?.and_then(Value::extract_error)?)
}

/// The claim of `root` on `meta`, leased for `lease_ms`.
pub fn claim(meta: &str, root: &Root, lease_ms: u64) -> Request {
    let mut cmd = ROOT_CLAIM.invoke(&[meta]);
    cmd.arg(lease_ms);
    for (f, v) in root.claim_fields() {
        cmd.arg(f).arg(v);
    }
    let mut req = Request::new();
    req.script(&ROOT_CLAIM, cmd);
    req
}

/// The move of the root `meta` of creation `uid` from `from` (any when
/// `None`) to `to` (deleted when `None`); decoded by [`decode_moved`].
pub fn transition(meta: &str, uid: &str, from: Option<State>, to: Option<State>) -> Request {
    let mut cmd = ROOT_MOVE.invoke(&[meta]);
    cmd.arg(uid)
        .arg(from.map_or("", State::as_str))
        .arg(to.map_or("", State::as_str))
        .arg(ROOT_FORMAT);
    let mut req = Request::new();
    req.script(&ROOT_MOVE, cmd);
    req
}

/// Whether a [`transition`] moved the root (else it was gone, another
/// creation's, or in another state).
pub fn decode_moved(meta: &str, replies: Replies) -> Result<bool> {
    match one(replies)? {
        Value::Int(1) => Ok(true),
        Value::Int(0) => Ok(false),
        v => Err(Error::UnexpectedReply(format!("moving {meta}: {v:?}"))),
    }
}

/// What a [`retarget`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retarget {
    /// Recorded.
    Set,
    /// An expected value differs: someone recorded another target first.
    Stale,
    /// The root is gone, another creation's, or not ready.
    Gone,
}

/// The compare-and-set recording a whole-filter target in the ready root
/// `meta` of creation `uid` (§11.8): if every `expect` field has its value
/// (`None`: is absent), every `set` field is written.
pub fn retarget(
    meta: &str,
    uid: &str,
    expect: &[(&str, Option<String>)],
    set: &[(&str, String)],
) -> Request {
    let mut cmd = ROOT_TARGET.invoke(&[meta]);
    cmd.arg(ROOT_FORMAT).arg(uid).arg(expect.len());
    for (f, v) in expect {
        cmd.arg(*f).arg(v.as_deref().unwrap_or(""));
    }
    for (f, v) in set {
        cmd.arg(*f).arg(v);
    }
    let mut req = Request::new();
    req.script(&ROOT_TARGET, cmd);
    req
}

/// Decodes the reply to [`retarget`].
pub fn decode_retarget(meta: &str, replies: Replies) -> Result<Retarget> {
    let v = one(replies)?;
    match text(&v).as_deref() {
        Some("OK") => Ok(Retarget::Set),
        Some("STALE") => Ok(Retarget::Stale),
        Some("GONE") => Ok(Retarget::Gone),
        _ => Err(Error::UnexpectedReply(format!(
            "recording a target in {meta}: {v:?}"
        ))),
    }
}

/// Reads a root record (or a shard's metadata): `HGETALL`, decoded by
/// [`decode_record`].
pub fn read_record(key: &str) -> Request {
    let mut cmd = redis::cmd("HGETALL");
    cmd.arg(key);
    Request::new().read_only().cmd(cmd)
}

/// The cluster's slot ranges and their masters, decoded by
/// `shard::placement`.
pub fn cluster_slots() -> Request {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("SLOTS");
    Request::new().read_only().cmd(cmd)
}

/// A reply's text (a bulk or simple string).
pub(crate) fn text(v: &Value) -> Option<String> {
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
pub fn decode_record(key: &str, replies: Replies) -> Result<BTreeMap<String, String>> {
    let v = match take_one(Some(replies))?.and_then(Value::extract_error) {
        Ok(v) => v,
        Err(e) if e.code() == Some("WRONGTYPE") => return Ok(BTreeMap::new()),
        Err(e) => return Err(e.into()),
    };
    hash_fields(&v).ok_or_else(|| Error::UnexpectedReply(format!("HGETALL {key}: {v:?}")))
}

/// Decodes the claim step's reply.
pub fn decode_claim(meta: &str, replies: Replies) -> Result<Claim> {
    let v = &one(replies)?;
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

    fn r(v: Value) -> Replies {
        vec![Ok(v)]
    }

    #[test]
    fn root_requests_call_their_scripts_by_sha_with_the_roots_key_alone() {
        let m = "rotabloom:{x}:meta";
        let req = transition(m, "0123456789abcdef", Some(State::Ready), None);
        assert_eq!(
            req.args(0),
            [
                "EVALSHA",
                ROOT_MOVE.sha(),
                "1",
                m,
                "0123456789abcdef",
                "ready",
                "",
                ROOT_FORMAT
            ]
        );
        assert!(req.writes());
        let req = retarget(
            m,
            "u",
            &[("target.epoch", Some("3".into())), ("target.period", None)],
            &[("target.epoch", "4".into())],
        );
        assert_eq!(
            &req.args(0)[2..],
            [
                "1",
                m,
                ROOT_FORMAT,
                "u",
                "2",
                "target.epoch",
                "3",
                "target.period",
                "",
                "target.epoch",
                "4"
            ]
        );
        assert_eq!(req.args(0)[1], ROOT_TARGET.sha());
        assert!(!read_record(m).writes());
        assert_eq!(cluster_slots().args(0), ["CLUSTER", "SLOTS"]);
    }

    #[test]
    fn retarget_and_move_replies_decode_and_error_replies_stay_errors() {
        let m = "rotabloom:{x}:meta";
        let st = |s: &str| r(Value::SimpleString(s.into()));
        assert_eq!(decode_retarget(m, st("OK")).unwrap(), Retarget::Set);
        assert_eq!(
            decode_retarget(m, r(bulk("STALE"))).unwrap(),
            Retarget::Stale
        );
        assert_eq!(decode_retarget(m, st("GONE")).unwrap(), Retarget::Gone);
        assert!(matches!(
            decode_retarget(m, st("MAYBE")),
            Err(Error::UnexpectedReply(_))
        ));
        let oom = redis::make_extension_error("OOM".into(), Some("no memory".into()));
        // An error reply (a master out of memory) is an error, never "stale".
        assert!(decode_retarget(m, vec![Err(oom)]).is_err());
        assert!(decode_moved(m, r(Value::Int(1))).unwrap());
        assert!(!decode_moved(m, r(Value::Int(0))).unwrap());
        assert!(decode_moved(m, r(bulk("1"))).is_err());
    }

    #[test]
    fn claim_replies_decode() {
        let m = "rotabloom:{x}:meta";
        let claimed = Value::Array(vec![bulk("claimed"), bulk("17")]);
        assert_eq!(decode_claim(m, r(claimed)).unwrap(), Claim::Claimed);
        let exists = Value::Array(vec![
            bulk("exists"),
            bulk("1700"),
            Value::Array(vec![bulk("format"), bulk("1"), bulk("kind"), bulk("bloom")]),
        ]);
        match decode_claim(m, r(exists)).unwrap() {
            Claim::Exists { now_ms, fields } => {
                assert_eq!(now_ms, 1700);
                assert_eq!(fields["kind"], "bloom");
            }
            other => panic!("{other:?}"),
        }
        let wrong = Value::Array(vec![bulk("wrongtype"), bulk("string")]);
        assert!(matches!(
            decode_claim(m, r(wrong)),
            Err(Error::WrongType { found, .. }) if found == "string"
        ));
        assert!(matches!(
            decode_claim(m, r(Value::Int(1))),
            Err(Error::UnexpectedReply(_))
        ));
        let odd = Value::Array(vec![
            bulk("exists"),
            bulk("1"),
            Value::Array(vec![bulk("a")]),
        ]);
        assert!(decode_claim(m, r(odd)).is_err());
    }

    #[test]
    fn a_record_reads_as_its_fields_nothing_when_not_a_hash_and_loud_otherwise() {
        let map = Value::Array(vec![bulk("format"), bulk("sharded-1")]);
        let f = decode_record("m", r(map)).unwrap();
        assert_eq!(f.get("format").map(String::as_str), Some("sharded-1"));
        let wrong = redis::make_extension_error("WRONGTYPE".into(), Some("not a hash".into()));
        assert!(decode_record("m", vec![Err(wrong)]).unwrap().is_empty());
        assert!(matches!(
            decode_record("m", r(Value::Int(3))),
            Err(Error::UnexpectedReply(_))
        ));
    }
}
