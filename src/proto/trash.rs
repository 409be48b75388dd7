//! The requests that empty a filter's trash list (see `engine::trash`).

use crate::keys::Keys;
use crate::request::Request;

/// Deletes block `delete` (if any) and its entry in the trash list, then
/// reads the list's last entry.
pub(crate) fn peek(keys: &Keys, delete: Option<&str>) -> Request {
    let trash = keys.trash();
    let mut req = Request::new();
    if let Some(key) = delete {
        // Removing the entry by value, not by position, lets several
        // clients empty the list at once: each deletes what it saw.
        req = req
            .cmd(redis::cmd("DEL").arg(key).clone())
            .cmd(redis::cmd("LREM").arg(&trash).arg(1).arg(key).clone());
    } else {
        req = req.read_only();
    }
    req.cmd(redis::cmd("LINDEX").arg(&trash).arg(-1).clone())
}

/// The uid the metadata names, even when nothing else of it reads.
pub(crate) fn uid(keys: &Keys) -> Request {
    let mut cmd = redis::cmd("HGET");
    cmd.arg(keys.meta()).arg(crate::metadata::field::UID);
    Request::new().read_only().cmd(cmd)
}
