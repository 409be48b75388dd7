//! Opening a filter that may be sharded: the ordinary open first, so an
//! unsharded filter costs what it did; a root record found instead is
//! read, checked ready, and each of its shards opened. The check of the
//! root's state (`ready_root`, `busy`) is here, where a handle is first
//! made; the steps that read the root again (a dump, a whole-filter
//! change, a creation that meets another) use it from here.

use super::root_io::read_meta;
use super::{missing, ShardedFilter};
use crate::error::{Error, Result};
use crate::handle::{Filter, FilterKind};
use crate::keys::{FilterName, Keys};
use crate::proto::shard::root::{self, Root, State};
use std::sync::Arc;

/// Whether an ordinary open refused `e` because the name holds a root.
fn is_root(e: &Error) -> bool {
    matches!(e, Error::UnsupportedFormat { found, .. } if found == root::ROOT_FORMAT)
}

/// The root record in `fields`, if it is ready to use.
pub(super) fn ready_root(
    name: &str,
    fields: &std::collections::BTreeMap<String, String>,
) -> Result<Root> {
    if !Root::is_root(fields) {
        // Changed since the ordinary open saw a root: gone, or re-made.
        return Err(Error::NotFound {
            name: name.to_string(),
        });
    }
    let root = Root::decode(name, fields)?;
    if root.state != State::Ready {
        return Err(busy(name, root.state));
    }
    Ok(root)
}

/// The error for a root that cannot be used in its state.
pub(super) fn busy(name: &str, state: State) -> Error {
    Error::ShardedBusy {
        name: name.to_string(),
        state: match state {
            State::Dropping => "dropped",
            _ => "created",
        },
    }
}

impl<K: FilterKind> ShardedFilter<K> {
    /// Opens the filter `name`, sharded or not: a sharded one's shards are
    /// opened too, and a missing shard is
    /// [`Error::ShardMissing`](crate::Error::ShardMissing); shards that
    /// disagree with the root (a whole-filter change that did not reach
    /// them, docs/FORMAT.md §11.8) are
    /// [`Error::ShardsDisagree`](crate::Error::ShardsDisagree). One round
    /// trip, plus one per shard.
    pub fn open<C: redis::ConnectionLike + ?Sized>(conn: &mut C, name: &str) -> Result<Self> {
        Self::open_unconverged(conn, name)?.checked(conn)
    }

    /// [`open`](Self::open) whatever its shards say: for the whole-filter
    /// changes that finish an interrupted one (`rotate`, `clear`,
    /// `convert_bloom`), for [`disagreements`](Self::disagreements),
    /// status and drop.
    pub fn open_unconverged<C: redis::ConnectionLike + ?Sized>(
        conn: &mut C,
        name: &str,
    ) -> Result<Self> {
        // The ordinary open first: an unsharded filter costs what it did.
        match Filter::<K>::open(conn, name) {
            Err(e) if is_root(&e) => {}
            other => return other.map(Self::single),
        }
        let keys = Keys::new(FilterName::existing(name)?);
        let root = ready_root(name, &read_meta(conn, keys.meta())?)?;
        let mut shards = Vec::with_capacity(root.shards.len());
        for (j, sub) in root.shards.iter().enumerate() {
            let f = Filter::<K>::open(conn, sub).map_err(|e| missing(&root, j, e))?;
            shards.push(f);
        }
        Ok(Self::from_parts(
            name.to_string(),
            Some(Arc::new(root)),
            shards,
        ))
    }

    #[cfg(feature = "async")]
    /// Async [`open`](Self::open).
    pub async fn open_async<C: redis::aio::ConnectionLike + Send>(
        conn: &mut C,
        name: &str,
    ) -> Result<Self> {
        match Filter::<K>::open_async(conn, name).await {
            Err(e) if is_root(&e) => {}
            other => return other.map(Self::single),
        }
        let keys = Keys::new(FilterName::existing(name)?);
        let fields = super::root_io::read_meta_async(conn, keys.meta()).await?;
        let root = ready_root(name, &fields)?;
        let mut shards = Vec::with_capacity(root.shards.len());
        for (j, sub) in root.shards.iter().enumerate() {
            let f = Filter::<K>::open_async(conn, sub)
                .await
                .map_err(|e| missing(&root, j, e))?;
            shards.push(f);
        }
        let f = Self::from_parts(name.to_string(), Some(Arc::new(root)), shards);
        let found = f.found();
        match found.is_empty() {
            true => Ok(f),
            // Shards behind are brought forward by the blocking open only.
            false => Err(f.disagree(&found, " (an async open does not bring them forward)")),
        }
    }
}
