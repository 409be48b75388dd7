//! A sharded filter whose shards disagree with its root (docs/FORMAT.md
//! §11.8) as `status` reports it: an error naming each shard, so that
//! `status --check` exits 4 until the interrupted change is run again.

use crate::shared::any::Sharded;
use rotabloom::connect::Connection;
use rotabloom::{Level, ShardOff, Warning, WarningCode};

/// One error-level warning per shard that disagrees with the root of `f`
/// as read now; none for an unsharded filter or one whose shards agree.
pub fn warnings(conn: &mut Connection, f: &Sharded) -> rotabloom::Result<Vec<Warning>> {
    Ok(f.disagreements(conn)?
        .into_iter()
        .map(|d| {
            let fix = match d.off {
                ShardOff::Behind => {
                    "a whole-filter change did not reach it: run it again \
                     (rotate, clear or convert) to finish it"
                }
                ShardOff::Ahead | ShardOff::OtherKind => {
                    "it changed outside the root (used on its own, or by a client \
                     that does not keep targets): see docs/FORMAT.md §11.8"
                }
            };
            let name = f.shard(d.shard).map(|s| s.name()).unwrap_or_default();
            Warning::new(
                WarningCode::ShardsDisagree,
                Level::Error,
                format!("shard {} ({name}) {}: {fix}", d.shard, d.detail),
            )
        })
        .collect())
}
