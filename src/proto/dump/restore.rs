//! A restore's requests and their replies: each block written under a
//! lease, the leases renewed, and the publication of the metadata and
//! fence that makes the blocks permanent (docs/FORMAT.md §10.3).

use crate::error::unexpected;
use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::proto::as_string;
use crate::request::Request;
use crate::scripts;
use redis::Value;

/// A restore's write into block `key`: `new` allocates it (the key must
/// not exist), else it must still exist; either way its time to live is
/// set to `lease_ms` in the same atomic step (docs/FORMAT.md §10.3).
pub(crate) fn restore_write_request(
    key: &str,
    new: bool,
    offset: u64,
    bytes: &[u8],
    lease_ms: u64,
) -> Request {
    let mut cmd = scripts::RESTORE_WRITE.invoke(&[key]);
    cmd.arg(if new { "NEW" } else { "MORE" })
        .arg(offset)
        .arg(bytes)
        .arg(lease_ms);
    let mut req = Request::new();
    req.script(&scripts::RESTORE_WRITE, cmd);
    req
}

/// What a restore's write did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Wrote {
    /// Written; the block is this long.
    Len(u64),
    /// The block being allocated exists already.
    Exists,
    /// The block written before is gone (expired or evicted).
    Gone,
}

pub(crate) fn decode_restore_write(reply: redis::RedisResult<Value>) -> Result<Wrote> {
    match reply? {
        Value::Int(n) => Ok(Wrote::Len(u64::try_from(n).unwrap_or(0))),
        v => match as_string(&v).as_deref() {
            Some("EXISTS") => Ok(Wrote::Exists),
            Some("GONE") => Ok(Wrote::Gone),
            _ => Err(unexpected("restore-write script", &v)),
        },
    }
}

/// `PEXPIRE key lease_ms` for each block a restore wrote, in one round
/// trip: their lease renewed while the restore goes on.
pub(crate) fn refresh_request(keys: &[String], lease_ms: u64) -> Request {
    let mut req = Request::new();
    for k in keys {
        req.push(redis::cmd("PEXPIRE").arg(k).arg(lease_ms).clone(), None);
    }
    req
}

/// The keys whose `PEXPIRE` found nothing (`0`): they expired or were
/// evicted.
pub(crate) fn decode_refresh(
    keys: &[String],
    replies: Vec<redis::RedisResult<Value>>,
) -> Result<Vec<String>> {
    if replies.len() != keys.len() {
        return Err(Error::Internal(format!(
            "{} replies to {} PEXPIRE",
            replies.len(),
            keys.len()
        )));
    }
    let mut gone = Vec::new();
    for (k, r) in keys.iter().zip(replies) {
        match r? {
            Value::Int(1) => {}
            Value::Int(0) => gone.push(k.clone()),
            v => return Err(unexpected("PEXPIRE", &v)),
        }
    }
    Ok(gone)
}

/// The restore's last step: the metadata and the fence, written if no
/// filter has the name and every block written is still there; the
/// blocks' time to live removed in the same step.
pub(crate) fn publish_request(
    keys: &Keys,
    fence: &str,
    fields: &[(Vec<u8>, Vec<u8>)],
    blocks: &[String],
) -> Request {
    let mut names = vec![keys.meta().to_string(), keys.fence()];
    names.extend(blocks.iter().cloned());
    let mut cmd = scripts::RESTORE.invoke(&names);
    cmd.arg(fence);
    for (k, v) in fields {
        cmd.arg(k.as_slice()).arg(v.as_slice());
    }
    let mut req = Request::new();
    req.script(&scripts::RESTORE, cmd);
    req
}

/// What the publish step did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Published {
    Done,
    /// A filter has the name.
    Exists,
    /// These blocks expired or were evicted before it.
    Gone(Vec<String>),
}

pub(crate) fn decode_publish(name: &str, reply: redis::RedisResult<Value>) -> Result<Published> {
    let v = reply.map_err(|e| Error::from_script(name, e))?;
    if let Value::Array(items) = &v {
        let words: Vec<String> = items.iter().filter_map(as_string).collect();
        if let [first, keys @ ..] = &words[..] {
            if first == "GONE" && words.len() == items.len() {
                return Ok(Published::Gone(keys.to_vec()));
            }
        }
        return Err(unexpected("restore script", &v));
    }
    match as_string(&v).as_deref() {
        Some("OK") => Ok(Published::Done),
        Some("EXISTS") => Ok(Published::Exists),
        _ => Err(unexpected("restore script", &v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_publish_step_says_done_exists_or_gone() {
        assert_eq!(
            decode_publish("f", Ok(Value::SimpleString("OK".into()))).unwrap(),
            Published::Done
        );
        assert_eq!(
            decode_publish("f", Ok(Value::BulkString(b"EXISTS".to_vec()))).unwrap(),
            Published::Exists
        );
        let gone = Value::Array(vec![
            Value::BulkString(b"GONE".to_vec()),
            Value::BulkString(b"k1".to_vec()),
        ]);
        assert_eq!(
            decode_publish("f", Ok(gone)).unwrap(),
            Published::Gone(vec!["k1".into()])
        );
        assert!(decode_publish("f", Ok(Value::Int(1))).is_err());
        assert!(decode_publish("f", Ok(Value::Array(vec![]))).is_err());
    }

    #[test]
    fn a_restore_writes_with_a_lease_and_renews_it() {
        let w = restore_write_request("b", true, 9, b"\0", 60_000);
        let args = w.args(0);
        assert_eq!(args[0], "EVALSHA");
        assert_eq!(args[1], scripts::RESTORE_WRITE.sha());
        assert_eq!(&args[2..], ["1", "b", "NEW", "9", "\0", "60000"]);
        let w = restore_write_request("b", false, 0, b"xy", 5);
        assert_eq!(&w.args(0)[4..], ["MORE", "0", "xy", "5"]);
        assert_eq!(
            decode_restore_write(Ok(Value::Int(10))).unwrap(),
            Wrote::Len(10)
        );
        assert_eq!(
            decode_restore_write(Ok(Value::SimpleString("GONE".into()))).unwrap(),
            Wrote::Gone
        );
        assert_eq!(
            decode_restore_write(Ok(Value::BulkString(b"EXISTS".to_vec()))).unwrap(),
            Wrote::Exists
        );
        assert!(decode_restore_write(Ok(Value::Nil)).is_err());

        let keys = vec!["a".to_string(), "b".to_string()];
        let r = refresh_request(&keys, 1000);
        assert_eq!(
            (r.len(), r.args(1)),
            (2, vec!["PEXPIRE".to_string(), "b".into(), "1000".into()])
        );
        assert_eq!(
            decode_refresh(&keys, vec![Ok(Value::Int(1)), Ok(Value::Int(0))]).unwrap(),
            ["b"]
        );
        assert!(decode_refresh(&keys, vec![Ok(Value::Int(1))]).is_err());

        let p = publish_request(
            &Keys::new(crate::keys::FilterName::new("f").unwrap()),
            "u:0:0",
            &[(b"kind".to_vec(), b"bloom".to_vec())],
            &keys,
        );
        assert_eq!(
            &p.args(0)[2..],
            [
                "4",
                "rotabloom:{f}:meta",
                "rotabloom:{f}:fence",
                "a",
                "b",
                "u:0:0",
                "kind",
                "bloom"
            ]
        );
    }
}
