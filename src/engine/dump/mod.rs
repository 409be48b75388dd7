//! The machines of a dump, a restore and a string copy, with what they
//! share (options, lease, slices, summary) and the blocking runs of an
//! ordinary filter's dump and restore, which a sharded dump runs once per
//! shard. `crate::dump` has the public functions; the file format and the
//! requests are `proto::dump`'s.

pub(crate) mod copy;
pub(crate) mod lease;
pub(crate) mod options;
pub(crate) mod restore;
pub(crate) mod slices;
pub(crate) mod summary;
pub(crate) mod write;

use crate::error::Result;
use crate::exec;
use crate::view::Accept;
use options::RestoreOptions;
use restore::RestoreMachine;
use std::io::{Read, Write};
use summary::Summary;
use write::DumpMachine;

/// [`dump`](crate::dump::dump) of an ordinary filter (a shard's, in a sharded dump).
pub(crate) fn dump_unsharded<C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    name: &str,
    out: &mut dyn Write,
    accept: Accept,
) -> Result<Summary> {
    exec::run(conn, DumpMachine::new(name, out, accept)?, None)
}

/// [`restore_with`](crate::dump::restore_with) of an ordinary filter's dump (a shard's, in a sharded
/// dump).
pub(crate) fn restore_unsharded<C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    input: &mut dyn Read,
    options: RestoreOptions<'_>,
    accept: Accept,
) -> Result<Summary> {
    exec::run(conn, RestoreMachine::new(input, options, accept)?, None)
}
