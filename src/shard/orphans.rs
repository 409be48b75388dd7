//! Shards left of a sharded filter whose root record is gone: a master
//! restarted without persistence took the root, the shards on the other
//! masters stayed, and no root lists them any more. Found by their names
//! on every master (`crate::proto::shard::orphans`), so that `drop` leaves
//! nothing of the filter anywhere.

use super::placement::slot_of;
use super::root_io::{ask, cluster_masters, read_meta};
use super::ShardedFilter;
use crate::error::{Error, Result};
use crate::keys::{FilterName, Keys};
use crate::proto::shard::orphans;
use crate::proto::shard::root::Root;
use std::collections::BTreeSet;

/// The shards of `name` on every master, as rotabloom names them.
fn walk<C: redis::ConnectionLike + ?Sized>(conn: &mut C, name: &str) -> Result<BTreeSet<String>> {
    let masters = cluster_masters(conn)?;
    let probes: Vec<String> = match masters.is_empty() {
        // One server: any key reaches it.
        true => orphans::probe_key(name, |_| true).into_iter().collect(),
        false => masters
            .iter()
            .map(|m| {
                orphans::probe_key(name, |k| m.serves(slot_of(k.as_bytes())))
                    .ok_or_else(|| Error::Internal(format!("no key found for master {}", m.addr)))
            })
            .collect::<Result<_>>()?,
    };
    let pattern = orphans::pattern(name);
    let mut found = BTreeSet::new();
    for probe in &probes {
        let mut cursor = "0".to_string();
        loop {
            let (next, keys) = ask(
                conn,
                orphans::step(probe, &cursor, &pattern),
                None,
                orphans::decode_step,
            )?;
            found.extend(keys.iter().filter_map(|k| orphans::shard_of_key(name, k)));
            if next == "0" {
                break;
            }
            cursor = next;
        }
    }
    Ok(found)
}

impl ShardedFilter<crate::kinds::Any> {
    /// The shards of filter `name` that no root lists: left by a sharded
    /// filter whose root record was lost (its master restarted without
    /// persistence), whether or not another filter has the name since.
    /// Walks every master's keys (SCAN): for cleaning up, not for a hot
    /// path.
    ///
    /// ```no_run
    /// use rotabloom::{kinds::Any, ShardedFilter};
    /// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// for shard in ShardedFilter::<Any>::orphans(&mut conn, "crawl")? {
    ///     println!("left behind: {shard}");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn orphans<C: redis::ConnectionLike + ?Sized>(
        conn: &mut C,
        name: &str,
    ) -> Result<Vec<String>> {
        let meta = Keys::new(FilterName::existing(name)?).meta().to_string();
        let found = match walk(conn, name) {
            Ok(found) => found,
            // A user for some filters may be denied SCAN or CLUSTER SLOTS:
            // then nothing can be found, which is said, not an error.
            Err(Error::PermissionDenied { .. }) => {
                log::warn!(
                    "filter {name:?}: this Redis user may not walk the masters' keys (SCAN, \
                     CLUSTER SLOTS), so shards of it whose root was lost cannot be looked for"
                );
                return Ok(Vec::new());
            }
            Err(e) => return Err(e),
        };
        if found.is_empty() {
            return Ok(Vec::new());
        }
        // Read after the walk: a creation claims its root, shard names
        // included, before it makes any shard, so every shard the walk saw
        // of a live creation is listed here.
        let fields = read_meta(conn, &meta)?;
        let listed: BTreeSet<String> = match Root::is_root(&fields) {
            true => Root::decode(name, &fields)?.shards.into_iter().collect(),
            false => BTreeSet::new(),
        };
        Ok(found.difference(&listed).cloned().collect())
    }

    /// Drops every shard [`orphans`](Self::orphans) finds; returns their
    /// names.
    ///
    /// ```no_run
    /// use rotabloom::{kinds::Any, ShardedFilter};
    /// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let dropped = ShardedFilter::<Any>::drop_orphans(&mut conn, "crawl")?;
    /// println!("{} shards of a lost root dropped", dropped.len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn drop_orphans<C: redis::ConnectionLike + ?Sized>(
        conn: &mut C,
        name: &str,
    ) -> Result<Vec<String>> {
        let lost = Self::orphans(conn, name)?;
        for shard in &lost {
            super::create::drop_shard(conn, shard)?;
        }
        Ok(lost)
    }
}
