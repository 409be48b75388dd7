//! Every way a call can fail: the variants of [`Error`], each with its
//! fields and its message (the rest of the error module acts on them).

use super::wording::{refused_from, seconds};
use super::{Partial, RedisError};

/// Everything that can go wrong in rotabloom.
///
/// Expected outcomes (an item already present, a rotation that is not due yet)
/// are values, not errors. Errors are either the caller's input, a filter that
/// disagrees with what the caller asked for, or Redis.
///
/// No variant ever carries a password: connection details are never part of
/// an error message.
///
/// ```
/// use rotabloom::{BloomParams, Error};
/// let err = BloomParams::for_capacity(0, 0.01).unwrap_err();
/// assert!(matches!(err, Error::InvalidParameter { name: "capacity", .. }));
/// assert!(!err.is_retryable());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is out of its valid range (for example a false-positive
    /// rate outside (0, 1), a capacity of 0, or a hash count of 0).
    #[error("invalid {name}: {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// Why it was rejected.
        reason: String,
    },

    /// A generation would need more bits than the configured maximum.
    #[error("a generation of {bits} bits exceeds the configured maximum of {max} bits")]
    TooLarge {
        /// Bits requested.
        bits: u64,
        /// The configured maximum.
        max: u64,
    },

    /// A filter name that cannot be used in a Redis key.
    #[error("invalid filter name {name:?}: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// Why it was rejected.
        reason: &'static str,
    },

    /// The filter does not exist (no metadata hash in Redis).
    #[error("filter {name:?} does not exist")]
    NotFound {
        /// The filter's name.
        name: String,
    },

    /// The filter this handle opened was dropped and another created
    /// under its name since (sharded or not): the handle refuses it, so no
    /// write lands in a dead instance or, unasked, in the new one. Open it
    /// again to use the new filter.
    #[error("filter {name:?} was dropped and created again (another instance) since this handle opened it; open it again")]
    Recreated {
        /// The filter's name.
        name: String,
    },

    /// The filter exists, but was created with a different value for a
    /// parameter. rotabloom never reuses or overwrites a filter silently.
    #[error("filter {name:?} exists with {field} = {stored}, but {requested} was requested")]
    ParameterMismatch {
        /// The filter's name.
        name: String,
        /// The metadata field that differs.
        field: String,
        /// The value stored in Redis.
        stored: String,
        /// The value asked for.
        requested: String,
    },

    /// The filter exists but is of another kind.
    #[error("filter {name:?} is of kind {found}, not {expected}")]
    KindMismatch {
        /// The filter's name.
        name: String,
        /// The kind the caller asked for.
        expected: &'static str,
        /// The kind stored in Redis.
        found: String,
    },

    /// The filter was written in a format version this library cannot read.
    #[error("filter {name:?} uses format version {found}; this library reads version {supported}")]
    UnsupportedFormat {
        /// The filter's name.
        name: String,
        /// The version found in the metadata.
        found: String,
        /// The version this library implements.
        supported: u32,
    },

    /// A key exists with a Redis type the filter cannot use.
    #[error("key {key:?} holds a Redis {found}, but rotabloom needs a {expected} there")]
    WrongType {
        /// The key.
        key: String,
        /// Its type in Redis.
        found: String,
        /// The type rotabloom needs.
        expected: &'static str,
    },

    /// A legacy bitmap (see [`Legacy`](crate::Legacy)) cannot be adopted
    /// as it is: the key is missing, empty, saturated or not a bitmap, its
    /// shape does not fit the legacy parameters, or items known to be in it
    /// are absent. Checked before anything moves: nothing was changed, the
    /// legacy keys are where they were.
    #[error("cannot adopt {key:?}: {reason}; nothing was changed")]
    NotAdoptable {
        /// The legacy key (or key prefix).
        key: String,
        /// Why, and what to check.
        reason: String,
    },

    /// The metadata hash is present but cannot be decoded.
    #[error("corrupt metadata for filter {name:?}: field {field}: {reason}")]
    CorruptMetadata {
        /// The filter's name.
        name: String,
        /// The field that could not be read.
        field: String,
        /// What is wrong with it.
        reason: String,
    },

    /// Redis answered something the protocol of this library does not allow.
    #[error("unexpected reply from Redis: {0}")]
    UnexpectedReply(String),

    /// The filter kept changing under this operation (other processes
    /// expanding, rotating or re-creating it) more times than the retry limit.
    #[error("filter {name:?} changed {retries} times during one operation; giving up")]
    Contention {
        /// The filter's name.
        name: String,
        /// How many times the operation was retried.
        retries: u32,
    },

    /// The generation a write fills holds its capacity, and the handle's
    /// [`WhenFull`](crate::WhenFull) is `Error` (the default). Capacity is
    /// enforced item by item inside the atomic step: the first
    /// `answered.len()` items of the call were handled (inserted, or found
    /// present) and `answered` holds their answers, in input order; no
    /// item from index `answered.len()` on was written.
    #[error("filter {name:?} is full: its generation holds {count} items of the {capacity} it was made for, and more would raise its false-positive rate above its target; {} (rotate it, convert it to an expanding filter, make a bigger one, or set when_full = warn)", refused_from(answered))]
    Full {
        /// The filter's name.
        name: String,
        /// What the generation was made for.
        capacity: u64,
        /// What it holds.
        count: u64,
        /// The answers of the items handled before the generation filled
        /// (a prefix of the call's items); empty when nothing was written.
        answered: Vec<bool>,
    },

    /// An [`ExpandingFilter`](crate::ExpandingFilter) reached its configured
    /// limit on generations or memory.
    #[error("filter {name:?} reached its limit: {limit}")]
    LimitReached {
        /// The filter's name.
        name: String,
        /// Which limit.
        limit: String,
    },

    /// The filter keeps its generations in a module's keys, but the server lacks it.
    #[error("filter {name:?} keeps its generations in a module's keys, but the server lacks {needs}: load it, or use the bitmap backend")]
    ModuleMissing {
        /// The filter's name.
        name: String,
        /// The module, as its backend words it.
        needs: &'static str,
    },

    /// Block keys of listed generations are gone (evicted, deleted): the
    /// filter would answer "absent" for what it holds, so a call that reads
    /// or writes such a block answers nothing (a batch of 16 items or more
    /// checks every block of the generations it uses; a smaller call, the
    /// blocks its items use). Every block is allocated when its generation
    /// is made, so a missing one is always lost data; `info` reports it as
    /// a `missing_block` warning.
    #[error("filter {name:?} has lost data: {} of its block keys are missing ({}): evicted or deleted? No answer is given; restore the filter or drop and re-create it", keys.len(), keys.iter().take(3).cloned().collect::<Vec<_>>().join(", "))]
    MissingData {
        /// The filter's name.
        name: String,
        /// The missing keys.
        keys: Vec<String>,
    },

    /// The server refused to allocate memory for the filter (`maxmemory`
    /// with `noeviction`, or the machine's memory). Nothing of the refused
    /// step is left behind.
    #[error("filter {name:?}: the Redis server refused {bytes} bytes of memory (maxmemory reached?): {message}")]
    OutOfMemory {
        /// The filter's name.
        name: String,
        /// The bytes asked for.
        bytes: u64,
        /// The server's words.
        message: String,
    },

    /// The server refused a write because its memory is full (used memory
    /// above `maxmemory`, with a policy that does not evict the filter's
    /// keys). Nothing of the refused step was applied: a script fails at
    /// its first write, a transaction is refused before it runs. Reads
    /// keep working.
    #[error("filter {name:?}: the Redis server refused the write: used memory is above maxmemory and nothing can be evicted; nothing of it was applied (free memory, raise maxmemory, or drop filters): {message}")]
    MemoryFull {
        /// The filter's name.
        name: String,
        /// The server's words.
        message: String,
    },

    /// The Redis user may not run a command rotabloom needs (ACL), or may
    /// not touch one of the filter's keys. Nothing was written by the
    /// command refused.
    #[error("permission denied by the Redis server: {message}")]
    PermissionDenied {
        /// The server's words, naming the command or key.
        message: String,
    },

    /// rotabloom broke one of its own invariants: a bug, never a problem
    /// of the data in Redis.
    #[error("internal error (a bug in rotabloom, please report it): {0}")]
    Internal(String),

    /// Opening a connection failed: the server refused it, TLS or a
    /// certificate failed, the credentials were refused, the Sentinels did
    /// not name a primary, the cluster is down... `target` is the URL
    /// without credentials, `reason` is scrubbed of the passwords in use.
    #[error("cannot connect to {target}: {reason}")]
    Connect {
        /// Where, without credentials.
        target: String,
        /// Why, on one line.
        reason: String,
    },

    /// The server did not answer in time: a server that accepts
    /// connections and never answers (a hung process, a firewall that
    /// drops packets, a port that is not Redis's). `after` is the timeout
    /// that ran out
    /// ([`Target::with_timeouts`](crate::connect::Target::with_timeouts)
    /// sets it). Retryable: a server that is slow now may answer later.
    #[error(
        "cannot connect to {target}: timed out: the server did not answer within {}",
        seconds(after)
    )]
    TimedOut {
        /// Where, without credentials.
        target: String,
        /// How long rotabloom waited.
        after: std::time::Duration,
    },

    /// Fewer replicas than asked for
    /// ([`WaitReplicas`](crate::WaitReplicas)) acknowledged a write in
    /// time. The write stays on the primary (WAIT undoes nothing), but a
    /// failover now could lose it. Retryable: the same call again (for
    /// check-and-insert, through an [`IdempotentBatch`](crate::IdempotentBatch)
    /// so the answers are not lost) waits again.
    #[error("only {acked} of {wanted} replicas acknowledged the write within {timeout_ms} ms (it is on the primary, but a failover could lose it)")]
    ReplicasTimeout {
        /// Replicas that acknowledged.
        acked: u32,
        /// Replicas asked for.
        wanted: u32,
        /// How long the server waited, in milliseconds.
        timeout_ms: u64,
    },

    /// A dump file (see [`dump`](crate::dump)) is not one this library
    /// wrote or can read: bad magic, version or checksum, truncated, or
    /// holding a filter that does not add up.
    #[error("not a valid rotabloom dump: {reason}")]
    BadDump {
        /// What is wrong with it.
        reason: String,
    },

    /// Reading or writing the local side of a dump or restore failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being read or written.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// A filter of that name exists already: a restore never overwrites
    /// one. Nothing was written.
    #[error("filter {name:?} already exists: drop it first, or restore under another name")]
    AlreadyExists {
        /// The filter's name.
        name: String,
    },

    /// A restore was cancelled through its flag
    /// ([`RestoreOptions::cancel_on`](crate::dump::RestoreOptions::cancel_on);
    /// the CLI sets it on SIGINT, SIGTERM and SIGHUP) before it published
    /// the filter. Nothing was restored, and the blocks it had written
    /// were deleted.
    #[error("the restore of filter {name:?} was interrupted: nothing was restored, and the blocks it had written are deleted")]
    Cancelled {
        /// The name it was restoring.
        name: String,
    },

    /// Blocks a restore had written vanished before it published the
    /// filter: they expired after the restore paused longer than its
    /// lease ([`RestoreOptions::lease`](crate::dump::RestoreOptions::lease);
    /// a stalled input), or a `volatile-*` maxmemory policy evicted them.
    /// Nothing was restored; the rest of its blocks were deleted.
    #[error("the restore of filter {name:?} lost {} of the blocks it had written before it could finish ({}): they expired after a pause longer than its lease of {lease_secs} s, or a volatile-* maxmemory policy evicted them; nothing was restored", keys.len(), keys.iter().take(3).cloned().collect::<Vec<_>>().join(", "))]
    RestoreExpired {
        /// The name it was restoring.
        name: String,
        /// The vanished block keys.
        keys: Vec<String>,
        /// The lease, in seconds.
        lease_secs: u64,
    },

    /// A shard of a sharded filter is missing: the root record lists it,
    /// its metadata hash does not exist. Its items cannot be answered (an
    /// answer would be "absent" for items that may have been inserted).
    #[error("filter {name:?}: shard {shard} ({shard_name:?}) is missing: its keys are gone; the items routed to it cannot be answered (restore it, or drop the whole filter)")]
    ShardMissing {
        /// The sharded filter's name.
        name: String,
        /// The shard's number.
        shard: u32,
        /// The shard's own filter name.
        shard_name: String,
    },

    /// Shards of a sharded filter disagree with the whole-filter targets
    /// of its root (docs/FORMAT.md §11.8): a rotation, clear or conversion
    /// recorded there has not reached them (refused by a shard's master),
    /// or they changed outside the root. Not retryable as such: running
    /// the change again finishes it, doing no shard's part twice; `shards`
    /// are the shards concerned.
    #[error("filter {name:?}: {what}")]
    ShardsDisagree {
        /// The sharded filter's name.
        name: String,
        /// The shards concerned, ascending.
        shards: Vec<u32>,
        /// What was done and what is left, in words.
        what: String,
    },

    /// A sharded filter is being created or dropped (docs/FORMAT.md
    /// §11.4), or a creation or drop died half-way: it cannot be used.
    /// A creation abandoned past its deadline is cleaned by the next
    /// create; `drop` finishes a drop.
    #[error("sharded filter {name:?} is being {state}: it cannot be used until that finishes (an abandoned creation is removed by the next create after its deadline, an abandoned drop by drop)")]
    ShardedBusy {
        /// The sharded filter's name.
        name: String,
        /// `created` or `dropped`.
        state: &'static str,
    },

    /// A batch of a sharded filter of which some shards answered and
    /// others failed: every answer given is kept, and each failed shard's
    /// items are named, refused or unknown, with its error; see
    /// [`Partial`]. Retryable when a failed shard's error is.
    #[error("{0}")]
    Partial(Box<Partial>),

    /// An error from Redis or the connection to it. Its message says the
    /// cause in words where it is a common one (authentication, a
    /// read-only replica, not a Redis server, a timeout), else it is the
    /// `redis` crate's, after `redis: `.
    #[error("{0}")]
    Redis(#[source] RedisError),
}
