//! The server's clock: the one request that reads it, and its reply.

use crate::error::{Error, Result};
use crate::request::Request;
use chrono::{DateTime, TimeZone, Utc};

/// `TIME`.
pub(crate) fn request() -> Request {
    Request::new().read_only().cmd(redis::cmd("TIME"))
}

/// The reply to `TIME`: seconds and microseconds.
pub(crate) fn decode(reply: redis::RedisResult<redis::Value>) -> Result<DateTime<Utc>> {
    let (secs, micros): (i64, i64) = redis::from_redis_value(reply?)
        .map_err(|e| Error::UnexpectedReply(format!("TIME: {e}")))?;
    Utc.timestamp_opt(secs, (micros.clamp(0, 999_999) * 1000) as u32)
        .single()
        .ok_or_else(|| Error::UnexpectedReply("TIME out of range".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    #[test]
    fn the_reply_is_seconds_and_microseconds() {
        let t = decode(Ok(Value::Array(vec![
            Value::BulkString(b"1767225600".to_vec()),
            Value::BulkString(b"250000".to_vec()),
        ])))
        .unwrap();
        assert_eq!(t.timestamp_millis(), 1_767_225_600_250);
        assert!(decode(Ok(Value::Int(1))).is_err());
    }
}
