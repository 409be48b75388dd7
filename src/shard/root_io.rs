//! The root record's requests and the cluster's slot map, run by `exec`
//! like every other request: the blocking and async drivers, NOSCRIPT
//! re-sends and WAIT apply to them. The requests and their decoders are
//! pure (`crate::proto::shard::script`); this file only drives them.

use super::placement::{self, Master};
use crate::engine::chain::Ask;
use crate::error::{Error, Result};
use crate::proto::shard::script;
use crate::request::{Replies, Request};
use crate::wait::WaitReplicas;
use std::collections::BTreeMap;

/// Sends `req` on a blocking connection and decodes its replies.
pub(super) fn ask<C, T>(
    conn: &mut C,
    req: Request,
    wait: Option<WaitReplicas>,
    decode: impl FnOnce(Replies) -> Result<T>,
) -> Result<T>
where
    C: redis::ConnectionLike + ?Sized,
{
    crate::exec::run(conn, Ask::new(req, decode), wait)
}

#[cfg(feature = "async")]
/// Async [`ask`].
pub(super) async fn ask_async<C, T>(
    conn: &mut C,
    req: Request,
    wait: Option<WaitReplicas>,
    decode: impl FnOnce(Replies) -> Result<T>,
) -> Result<T>
where
    C: redis::aio::ConnectionLike + Send,
{
    crate::exec::run_async(conn, Ask::new(req, decode), wait).await
}

/// The hash under `meta`: its fields (empty when it does not exist or is
/// not a hash).
pub(super) fn read_meta<C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    meta: &str,
) -> Result<BTreeMap<String, String>> {
    ask(conn, script::read_record(meta), None, |r| {
        script::decode_record(meta, r)
    })
}

#[cfg(feature = "async")]
/// Async [`read_meta`].
pub(super) async fn read_meta_async<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
    meta: &str,
) -> Result<BTreeMap<String, String>> {
    let decode = |r| script::decode_record(meta, r);
    ask_async(conn, script::read_record(meta), None, decode).await
}

/// The masters of the cluster behind `conn`, sorted by id; none when it is
/// not a cluster.
pub(crate) fn cluster_masters<C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
) -> Result<Vec<Master>> {
    ask(conn, script::cluster_slots(), None, decode_masters)
}

/// Decodes the reply to `CLUSTER SLOTS`: the masters, none when the server
/// is not a cluster.
pub(crate) fn decode_masters(replies: Replies) -> Result<Vec<Master>> {
    let reply = crate::proto::take_one(Some(replies))?;
    match reply.and_then(redis::Value::extract_error) {
        Ok(v) => placement::masters_from_slots(&v)
            .ok_or_else(|| Error::UnexpectedReply(format!("CLUSTER SLOTS: {v:?}"))),
        // A single server: "ERR This instance has cluster support disabled".
        Err(e) if e.to_string().contains("cluster support disabled") => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_server_has_no_masters_and_other_errors_stay_loud() {
        let off = redis::make_extension_error(
            "ERR".into(),
            Some("This instance has cluster support disabled".into()),
        );
        assert!(decode_masters(vec![Err(off)]).unwrap().is_empty());
        let denied = redis::make_extension_error("NOPERM".into(), Some("no".into()));
        assert!(decode_masters(vec![Err(denied)]).is_err());
        assert!(matches!(
            decode_masters(vec![Ok(redis::Value::Int(1))]),
            Err(Error::UnexpectedReply(_))
        ));
    }
}
