//! The dump file format, pure: records encoded into bytes and decoded from
//! a reader, each with its CRC-32 (docs/FORMAT.md §10); and the requests a
//! dump and a restore send. No Redis here.

mod range;
mod reader;
mod record;
mod restore;
mod sharded;

use crate::error::{Error, Result};
use crate::request::{Replies, Request};
use redis::Value;

pub(crate) use range::{decode_bytes, read_request, write_request};
pub use reader::Reader;
pub use record::Record;
pub(crate) use restore::{
    decode_publish, decode_refresh, decode_restore_write, publish_request, refresh_request,
    restore_write_request, Published, Wrote,
};
pub use sharded::{Frame, SHARDED_DUMP_VERSION, SHARDED_MAGIC};

/// The first bytes of every dump file. The high first byte and the line
/// end catch a transfer that changed bytes (as PNG's signature does).
pub const MAGIC: [u8; 8] = *b"\x89RBDUMP\n";

/// The version of the dump format this library writes and reads.
pub const DUMP_VERSION: u32 = 1;

/// The most bytes a `D` record carries: one GETRANGE or SETRANGE of this
/// size is a small fraction of a millisecond of the server's time.
pub const CHUNK: u64 = 1 << 20;

fn bad(reason: impl Into<String>) -> Error {
    Error::BadDump {
        reason: reason.into(),
    }
}

/// Whether `key` exists.
pub(crate) fn exists(key: &str) -> Request {
    Request::new()
        .read_only()
        .cmd(redis::cmd("EXISTS").arg(key).clone())
}

/// The length of string `key` (0 when it does not exist).
pub(crate) fn length(key: &str) -> Request {
    Request::new()
        .read_only()
        .cmd(redis::cmd("STRLEN").arg(key).clone())
}

/// Deletes `key`.
pub(crate) fn unlink(key: &str) -> Request {
    Request::new().cmd(redis::cmd("UNLINK").arg(key).clone())
}

/// The integer reply of `EXISTS` or `STRLEN`.
pub(crate) fn decode_int(reply: Option<Replies>, what: &str) -> Result<u64> {
    match super::take_one(reply)?? {
        Value::Int(n) => Ok(u64::try_from(n).unwrap_or(0)),
        v => Err(crate::error::unexpected(what, &v)),
    }
}
