//! Dump and restore: a filter's metadata and bits in a versioned,
//! checksummed file (docs/FORMAT.md §10), read and written in steps of at
//! most 1 MiB so that the server is never held for long, and restorable
//! into another server, under another name, or into a Redis Cluster. Each
//! is one machine, driven by the blocking and the async functions alike.
//!
//! ```no_run
//! let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let mut file = std::fs::File::create("crawl.rbdump")?;
//! rotabloom::dump::dump(&mut conn, "crawl", &mut file)?;
//! let file = std::fs::File::open("crawl.rbdump")?;
//! rotabloom::dump::restore(&mut conn, file, Some("crawl-copy"))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The pure parts are here; the machines that move the bytes are
// `engine::dump`'s.

use crate::any::ACCEPT_ANY;
use crate::engine::dump::copy::CopyMachine;
#[cfg(feature = "async")]
use crate::engine::dump::{restore::RestoreMachine, write::DumpMachine};
use crate::error::{Error, Result};
use crate::exec;
use crate::shard::{dump::ShardedDump, restore::ShardedRestore};
use std::io::{Read, Write};

pub use crate::engine::dump::lease::{DEFAULT_LEASE, MIN_LEASE};
pub use crate::engine::dump::options::RestoreOptions;
pub use crate::engine::dump::summary::Summary;
use crate::engine::dump::{dump_unsharded, restore_unsharded};
pub use crate::proto::dump::{DUMP_VERSION, MAGIC, SHARDED_DUMP_VERSION, SHARDED_MAGIC};

/// Writes filter `name` to `out`: its metadata, then each block of each
/// generation in slices of 1 MiB, one `GETRANGE` per round trip
/// (all-zero slices are left out). Items inserted while the dump runs
/// may or may not be in it; a structural change or a clear meanwhile
/// (rotation, expansion) fails it with
/// [`Error::Contention`](crate::Error::Contention): try again. A filter
/// kept in a module's keys cannot be dumped
/// ([`Error::InvalidParameter`](crate::Error::InvalidParameter)). A
/// sharded filter is dumped whole, every shard's dump in one container
/// (docs/FORMAT.md §11.7, [`SHARDED_MAGIC`]) that [`restore`] turns back
/// into the sharded filter (by the async functions too).
pub fn dump<C: redis::ConnectionLike + ?Sized, W: Write>(
    conn: &mut C,
    name: &str,
    out: &mut W,
) -> Result<Summary> {
    match dump_unsharded(conn, name, out, ACCEPT_ANY) {
        // Nothing written yet: the metadata is read first. A sharded
        // filter is dumped whole, in the container of §11.7.
        Err(e) if is_sharded(&e) => exec::run(conn, ShardedDump::new(name, out)?, None),
        other => other,
    }
}

#[cfg(feature = "async")]
/// Async [`dump`] (the writes to `out` block): the same bytes for the
/// same filter, sharded or not.
pub async fn dump_async<C: redis::aio::ConnectionLike + Send, W: Write + Send>(
    conn: &mut C,
    name: &str,
    out: &mut W,
) -> Result<Summary> {
    match exec::run_async(conn, DumpMachine::new(name, &mut *out, ACCEPT_ANY)?, None).await {
        Err(e) if is_sharded(&e) => exec::run_async(conn, ShardedDump::new(name, out)?, None).await,
        other => other,
    }
}

/// Whether the ordinary dump refused `e` because the name holds a sharded
/// filter's root.
fn is_sharded(e: &Error) -> bool {
    matches!(e, Error::UnsupportedFormat { found, .. } if found == crate::metadata::SHARDED_FORMAT)
}

/// Restores a dump read from `input` as filter `name` (default: the
/// dumped filter's name), under a fresh instance id: every block first,
/// one write of at most 1 MiB per round trip, each block with a time to
/// live (the lease, [`DEFAULT_LEASE`]) renewed as the restore goes on;
/// then the metadata and fence in one atomic step that makes the blocks
/// permanent, so no reader ever sees a half-restored filter, and a
/// restore that dies leaves nothing that outlives its lease
/// (docs/FORMAT.md §10.3). A filter of that name is never overwritten
/// ([`Error::AlreadyExists`](crate::Error::AlreadyExists)); a damaged or
/// truncated file, or bytes after its end record, are
/// [`Error::BadDump`](crate::Error::BadDump); a write the server refuses
/// for memory is [`Error::OutOfMemory`](crate::Error::OutOfMemory).
/// Before it reports an error, it deletes what it wrote (when the
/// connection itself fails, the blocks expire with their lease). See
/// [`restore_with`] to cancel it.
pub fn restore<C: redis::ConnectionLike + ?Sized, R: Read>(
    conn: &mut C,
    input: R,
    name: Option<&str>,
) -> Result<Summary> {
    restore_with(conn, input, RestoreOptions::new().name(name))
}

/// [`restore`] with options: a flag that cancels it between two round
/// trips ([`Error::Cancelled`](crate::Error::Cancelled), after deleting
/// what it wrote), and the lease of its blocks.
///
/// ```no_run
/// use std::sync::atomic::AtomicBool;
/// use rotabloom::dump::{restore_with, RestoreOptions};
/// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let stop = AtomicBool::new(false); // set from another thread to cancel
/// let file = std::fs::File::open("crawl.rbdump")?;
/// let options = RestoreOptions::new().name(Some("crawl-copy")).cancel_on(&stop);
/// restore_with(&mut conn, file, options)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn restore_with<C: redis::ConnectionLike + ?Sized, R: Read>(
    conn: &mut C,
    input: R,
    options: RestoreOptions<'_>,
) -> Result<Summary> {
    let (magic, mut input) = signature(input)?;
    if magic == SHARDED_MAGIC {
        return exec::run(conn, ShardedRestore::new(input, options)?, None);
    }
    restore_unsharded(conn, &mut input, options, ACCEPT_ANY)
}

/// The first 8 bytes of `input` (fewer if it is shorter), and the input
/// whole again, for the reader the signature picks.
fn signature<R: Read>(mut input: R) -> Result<([u8; 8], impl Read)> {
    let mut magic = [0u8; 8];
    let mut got = 0;
    while got < magic.len() {
        match input.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(Error::Io {
                    what: "reading the dump".into(),
                    source,
                })
            }
        }
    }
    let head = std::io::Cursor::new(magic[..got].to_vec());
    Ok((magic, head.chain(input)))
}

#[cfg(feature = "async")]
/// Async [`restore`] (the reads from `input` block).
pub async fn restore_async<C: redis::aio::ConnectionLike + Send, R: Read + Send>(
    conn: &mut C,
    input: R,
    name: Option<&str>,
) -> Result<Summary> {
    restore_with_async(conn, input, RestoreOptions::new().name(name)).await
}

#[cfg(feature = "async")]
/// Async [`restore_with`] (the reads from `input` block).
pub async fn restore_with_async<C: redis::aio::ConnectionLike + Send, R: Read + Send>(
    conn: &mut C,
    input: R,
    options: RestoreOptions<'_>,
) -> Result<Summary> {
    let (magic, input) = signature(input)?;
    if magic == SHARDED_MAGIC {
        return exec::run_async(conn, ShardedRestore::new(input, options)?, None).await;
    }
    exec::run_async(conn, RestoreMachine::new(input, options, ACCEPT_ANY)?, None).await
}

/// Copies the string at `from` to `to` (which must not exist), 1 MiB per
/// round trip, all-zero slices skipped; returns its length (0: `from` does
/// not exist, and nothing is written). Across cluster slots too: e.g. a
/// legacy bitmap into a filter's slot before
/// [`adopt_legacy`](crate::ExpandingBuilder::adopt_legacy), whose
/// `RENAME` cannot cross slots. Writes to `from` meanwhile may or may not
/// be copied.
pub fn copy_string<C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    from: &str,
    to: &str,
) -> Result<u64> {
    exec::run(conn, CopyMachine::new(from, to), None)
}

#[cfg(feature = "async")]
/// Async [`copy_string`].
pub async fn copy_string_async<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
    from: &str,
    to: &str,
) -> Result<u64> {
    exec::run_async(conn, CopyMachine::new(from, to), None).await
}
