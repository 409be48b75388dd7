//! The reads and writes of a string key's slices: `GETRANGE` for a dump
//! and a copy, `SETRANGE` for a copy.

use crate::error::unexpected;
use crate::error::Result;
use crate::request::Request;
use redis::Value;

/// `GETRANGE` of `len` bytes of `key` from `offset`.
pub(crate) fn read_request(key: &str, offset: u64, len: u64) -> Request {
    Request::new().cmd(
        redis::cmd("GETRANGE")
            .arg(key)
            .arg(offset)
            .arg(offset + len.max(1) - 1)
            .clone(),
    )
}

/// The bytes of a GETRANGE reply.
pub(crate) fn decode_bytes(v: Value) -> Result<Vec<u8>> {
    match v {
        Value::BulkString(b) => Ok(b),
        Value::Nil => Ok(Vec::new()),
        other => Err(unexpected("GETRANGE", &other)),
    }
}

/// `SETRANGE key offset bytes`.
pub(crate) fn write_request(key: &str, offset: u64, bytes: &[u8]) -> Request {
    Request::new().cmd(
        redis::cmd("SETRANGE")
            .arg(key)
            .arg(offset)
            .arg(bytes)
            .clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies() {
        let r = read_request("k", 0, 4);
        assert_eq!(r.args(0), ["GETRANGE", "k", "0", "3"]);
        let w = write_request("k", 5, b"ab");
        assert_eq!(w.args(0), ["SETRANGE", "k", "5", "ab"]);
        assert_eq!(decode_bytes(Value::Nil).unwrap(), Vec::<u8>::new());
    }
}
