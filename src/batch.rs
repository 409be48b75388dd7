//! Writes that stay exactly once when a reply is lost: a batch with a
//! token, whose answers the server keeps for a while, so that running it
//! again after a dropped connection returns them instead of "seen".

use crate::engine::Core;
use crate::error::{Error, Result};
use crate::proto::script::{DataOp, Record};
use std::time::Duration;

/// How long the server keeps a batch's answers by default: a retry must
/// come within this window (reconnecting, a failover, a restart).
pub const DEFAULT_RETRY_WINDOW: Duration = Duration::from_secs(300);

/// A batch of items for one write (check-and-insert or insert) that can be
/// run again after a retryable error, on a new connection, and answers
/// exactly as if the first run had succeeded.
///
/// A plain [`check_and_insert_many`](crate::BloomFilter::check_and_insert_many)
/// whose reply is lost (the connection drops, the server is killed) leaves
/// the caller not knowing which items it applied: run again, those answer
/// "seen" and are lost to the crawler. An `IdempotentBatch` carries a random
/// token; each of its calls keeps its answers on the server under that
/// token (one byte per item, in the filter's hash slot, for
/// [`DEFAULT_RETRY_WINDOW`]), atomically with the bits, and a call that
/// finds answers there returns them instead of writing again. So: on an
/// error with [`is_retryable`](Error::is_retryable), reconnect and call the
/// same method on the same batch again.
///
/// It always takes the atomic data script (the guarded transaction's
/// answers exist only in its reply), which costs more server time per item
/// than the transaction; see docs/BENCHMARKS.md.
///
/// ```no_run
/// use rotabloom::BloomFilter;
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let f = BloomFilter::builder("crawl").capacity(1_000_000).error_rate(0.001)
///     .create_or_open(&mut client.get_connection()?)?;
/// let mut batch = f.idempotent_batch(["http://a/", "http://b/"]);
/// let new = loop {
///     match client.get_connection().map_err(rotabloom::Error::from)
///         .and_then(|mut c| batch.check_and_insert(&mut c)) {
///         Ok(new) => break new,
///         Err(e) if e.is_retryable() => continue, // back off in real code
///         Err(e) => return Err(e.into()),
///     }
/// };
/// # let _ = new;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct IdempotentBatch {
    core: Core,
    items: Vec<Vec<u8>>,
    token: String,
    window: Duration,
    /// The operation of the first call: a batch is one write, so another
    /// operation on it would read the first one's answers.
    op: Option<DataOp>,
}

impl IdempotentBatch {
    pub(crate) fn new<I>(core: Core, items: I) -> IdempotentBatch
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        IdempotentBatch {
            core,
            items: items.into_iter().map(|i| i.as_ref().to_vec()).collect(),
            token: crate::uid::new_uid(),
            window: DEFAULT_RETRY_WINDOW,
            op: None,
        }
    }

    /// How long the server keeps the answers (default
    /// [`DEFAULT_RETRY_WINDOW`], at least one millisecond): a retry later
    /// than this would write again and answer "seen". Memory on the server:
    /// one byte per item for this long.
    pub fn with_retry_window(mut self, window: Duration) -> IdempotentBatch {
        self.window = window.max(Duration::from_millis(1));
        self
    }

    /// The batch's token (16 hex digits), as its record key names it.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// How many items the batch holds.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the batch holds no item.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The items, in order.
    pub fn items(&self) -> impl Iterator<Item = &[u8]> {
        self.items.iter().map(Vec::as_slice)
    }

    fn machine(&mut self, op: DataOp) -> Result<impl crate::exec::Machine<Output = Vec<bool>>> {
        match self.op {
            Some(first) if first != op => {
                return Err(Error::InvalidParameter {
                    name: "batch",
                    reason: format!(
                        "this batch was used for {first:?}; a batch is one write, make another for {op:?}"
                    ),
                })
            }
            _ => self.op = Some(op),
        }
        let record = Record {
            key: self.core.keys.record(&self.token),
            ttl_ms: u64::try_from(self.window.as_millis()).unwrap_or(u64::MAX),
        };
        // A copy per run: the machine must not borrow the batch that the
        // caller runs it from again.
        Ok(crate::engine::operation::data(
            &self.core,
            op,
            self.items.clone(),
            Some(record),
        ))
    }

    /// Check-and-insert of every item: true for the new ones, in order.
    /// Run again after a retryable error, it answers as the first run did.
    pub fn check_and_insert<C: redis::ConnectionLike + ?Sized>(
        &mut self,
        conn: &mut C,
    ) -> Result<Vec<bool>> {
        let m = self.machine(DataOp::CheckAdd)?;
        self.core.run(conn, m)
    }

    #[cfg(feature = "async")]
    /// Async [`check_and_insert`](Self::check_and_insert).
    pub async fn check_and_insert_async<C: redis::aio::ConnectionLike + Send>(
        &mut self,
        conn: &mut C,
    ) -> Result<Vec<bool>> {
        let m = self.machine(DataOp::CheckAdd)?;
        self.core.run_async(conn, m).await
    }

    /// Insert of every item: true where the filter changed, in order; the
    /// counts of the filter grow once however often it is run.
    pub fn insert<C: redis::ConnectionLike + ?Sized>(&mut self, conn: &mut C) -> Result<Vec<bool>> {
        let m = self.machine(DataOp::Add)?;
        self.core.run(conn, m)
    }

    #[cfg(feature = "async")]
    /// Async [`insert`](Self::insert).
    pub async fn insert_async<C: redis::aio::ConnectionLike + Send>(
        &mut self,
        conn: &mut C,
    ) -> Result<Vec<bool>> {
        let m = self.machine(DataOp::Add)?;
        self.core.run_async(conn, m).await
    }
}
