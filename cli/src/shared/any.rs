//! What the command line adds to the library's [`AnyFilter`]: creating one
//! from a configured definition, and rotating.

use chrono::{DateTime, Utc};
use rotabloom::config::FilterDef;
use rotabloom::connect::Connection;
use rotabloom::{Opened, Result, WaitReplicas};

pub use rotabloom::AnyFilter;

/// Creates the filter `def` describes, or opens it when it exists with the
/// same parameters; the creation and the handle's writes wait for `wait`.
pub fn create_or_open(
    conn: &mut Connection,
    def: &FilterDef,
    wait: Option<WaitReplicas>,
) -> Result<(AnyFilter, Opened)> {
    def.spec().create_or_open(conn, wait)
}

/// When the next scheduled rotation is due (circular filters with a
/// schedule), as last read from Redis.
pub fn next_rotation_at(f: &AnyFilter) -> Option<DateTime<Utc>> {
    f.circular().and_then(|c| c.next_rotation_at())
}

/// A filter, sharded or not (one shard).
pub type Sharded = rotabloom::ShardedFilter<rotabloom::kinds::Any>;
