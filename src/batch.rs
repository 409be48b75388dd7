//! Writes that stay exactly once when a reply is lost: a batch with a
//! token, whose answers the server keeps for a while, so that running it
//! again after a dropped connection returns them instead of "seen".

mod delivery;
mod token;

pub use delivery::Delivery;
use token::check_token;

use crate::engine::Core;
use crate::error::{Error, Result};
use crate::items::Items;
use crate::proto::script::{DataOp, Record};
use std::sync::Arc;
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
/// Exactly once (the default), it always takes the atomic data script (the
/// guarded transaction's answers exist only in its reply), which costs
/// more server time per item than the transaction; see docs/BENCHMARKS.md
/// and [`Delivery`] below.
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
///
/// ## Delivery
///
/// By default ([`Delivery::ExactlyOnce`]) the server keeps the answers as
/// above. With [`with_delivery`](Self::with_delivery)`(Delivery::AtLeastOnce)`
/// it keeps nothing: the batch goes as pipelined guarded transactions
/// (faster, see docs/BENCHMARKS.md), and a run after a lost reply cannot
/// know which of its items the lost one applied. It writes them again
/// (so the filter holds every item), answers every item of a
/// check-and-insert **new** (an item may then be reported new twice, never
/// lost), and says how many answers it could not know:
/// [`unknown`](Self::unknown).
///
/// ```no_run
/// use rotabloom::{BloomFilter, Delivery};
/// # fn demo(f: &BloomFilter, client: &redis::Client) -> rotabloom::Result<()> {
/// let mut batch = f
///     .idempotent_batch(["http://a/", "http://b/"])
///     .with_delivery(Delivery::AtLeastOnce);
/// let new = loop {
///     match client.get_connection().map_err(rotabloom::Error::from)
///         .and_then(|mut c| batch.check_and_insert(&mut c)) {
///         Ok(new) => break new,
///         Err(e) if e.is_retryable() => continue,
///         Err(e) => return Err(e),
///     }
/// };
/// if batch.unknown() > 0 {
///     eprintln!("{} answers lost with a reply: reported new", batch.unknown());
/// }
/// # let _ = new; Ok(()) }
/// ```
#[derive(Debug)]
pub struct IdempotentBatch {
    core: Core,
    /// Shared with each run's machine, which must not borrow the batch
    /// that the caller runs it from again: no copy per run.
    items: Arc<Items>,
    token: String,
    window: Duration,
    /// The operation of the first call: a batch is one write, so another
    /// operation on it would read the first one's answers.
    op: Option<DataOp>,
    delivery: Delivery,
    /// At least once: a call failed after it may have been applied.
    lost: bool,
    /// Answers the batch could not know (see [`IdempotentBatch::unknown`]).
    unknown: usize,
}

impl IdempotentBatch {
    pub(crate) fn new(core: Core, items: Items) -> IdempotentBatch {
        IdempotentBatch {
            core,
            items: Arc::new(items),
            token: crate::uid::new_uid(),
            window: DEFAULT_RETRY_WINDOW,
            op: None,
            delivery: Delivery::default(),
            lost: false,
            unknown: 0,
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

    /// The same batch under `token` instead of its random one: the record
    /// of an earlier run that used `token` (in this process or another) then
    /// answers for it, so a process that kept the token of a batch it could
    /// not confirm can get that batch's answers after a restart, within
    /// the retry window.
    ///
    /// The token is 1 to 64 ASCII letters, digits, `-` or `_`. It must
    /// name this batch's items, in this order, and no other batch of the
    /// filter within the retry window: a record is read by position, so
    /// another batch under the same token would get this one's answers.
    ///
    /// ```
    /// # fn demo(f: &rotabloom::BloomFilter) -> rotabloom::Result<()> {
    /// let first = f.idempotent_batch(["a", "b"]);
    /// let kept = first.token().to_string(); // written down before sending
    /// // ... the process gives up, a new one starts ...
    /// let again = f.idempotent_batch(["a", "b"]).with_token(&kept)?;
    /// assert_eq!(again.token(), kept);
    /// assert!(f.idempotent_batch(["a"]).with_token("no spaces").is_err());
    /// # Ok(()) }
    /// ```
    pub fn with_token(mut self, token: &str) -> Result<IdempotentBatch> {
        check_token(token)?;
        self.token = token.to_string();
        Ok(self)
    }

    /// The batch with `delivery` (default [`Delivery::ExactlyOnce`]).
    pub fn with_delivery(mut self, delivery: Delivery) -> IdempotentBatch {
        self.delivery = delivery;
        self
    }

    /// How the batch's answers survive a lost reply.
    pub fn delivery(&self) -> Delivery {
        self.delivery
    }

    /// At least once: how many items of the last successful run had their
    /// answers lost with an earlier run's reply (all of the batch's items
    /// when a run failed with a retryable error before it: which of them
    /// that run applied is not known). A run refused by a full filter
    /// after such a loss ([`Error::Full`]) answers the items before the
    /// refused one as a success would (new, for a check-and-insert) and
    /// counts them here. Always 0 exactly once.
    pub fn unknown(&self) -> usize {
        self.unknown
    }

    /// The batch's token (16 hex digits unless given with
    /// [`with_token`](Self::with_token)), as its record key names it.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// How long the server keeps the answers (see
    /// [`with_retry_window`](Self::with_retry_window)).
    pub fn retry_window(&self) -> Duration {
        self.window
    }

    /// The handle's options the batch runs with.
    pub(crate) fn core(&self) -> &Core {
        &self.core
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
        self.items.iter()
    }

    /// The machine of one run of the batch for `op`; its result goes
    /// through [`settle`](Self::settle).
    pub(crate) fn machine(
        &mut self,
        op: DataOp,
    ) -> Result<impl crate::machine::Machine<Output = Vec<bool>> + Send> {
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
        let record = match self.delivery {
            Delivery::ExactlyOnce => Some(Record {
                key: self.core.keys.record(&self.token),
                ttl_ms: u64::try_from(self.window.as_millis()).unwrap_or(u64::MAX),
            }),
            Delivery::AtLeastOnce => None,
        };
        Ok(crate::engine::operation::data(
            &self.core,
            op,
            Arc::clone(&self.items),
            record,
        ))
    }

    /// A run's result, as the delivery makes it: at least once, a run that
    /// may have been applied and whose reply was lost makes the next one
    /// answer every item new (check-and-insert) and count them unknown.
    pub(crate) fn settle(&mut self, op: DataOp, result: Result<Vec<bool>>) -> Result<Vec<bool>> {
        if self.delivery != Delivery::AtLeastOnce {
            return result;
        }
        match result {
            // A refusal's answers (those before the refused item) after a
            // lost run are no more known than a success's: that run may
            // have applied them, so they would read "seen" and a new item
            // would be dropped. The run stays lost for a call again.
            Err(Error::Full {
                name,
                capacity,
                count,
                mut answered,
            }) if self.lost => {
                self.unknown = answered.len();
                if op == DataOp::CheckAdd {
                    answered.iter_mut().for_each(|a| *a = true);
                }
                Err(Error::Full {
                    name,
                    capacity,
                    count,
                    answered,
                })
            }
            // The same for a long batch's steps answered before a later
            // one failed.
            Err(Error::Partial(mut p)) => {
                if self.lost {
                    self.unknown = p.answers.iter().flatten().count();
                    if op == DataOp::CheckAdd {
                        p.answers.iter_mut().flatten().for_each(|a| *a = true);
                    }
                }
                self.lost |= p.is_retryable();
                Err(Error::Partial(p))
            }
            Err(e) => {
                self.lost |= e.is_retryable();
                Err(e)
            }
            Ok(mut answers) => {
                self.unknown = 0;
                if std::mem::take(&mut self.lost) {
                    self.unknown = answers.len();
                    if op == DataOp::CheckAdd {
                        answers.iter_mut().for_each(|a| *a = true);
                    }
                }
                Ok(answers)
            }
        }
    }

    /// Check-and-insert of every item: true for the new ones, in order.
    /// Run again after a retryable error, it answers as the first run did.
    pub fn check_and_insert<C: redis::ConnectionLike + ?Sized>(
        &mut self,
        conn: &mut C,
    ) -> Result<Vec<bool>> {
        let m = self.machine(DataOp::CheckAdd)?;
        let r = self.core.run(conn, m);
        self.settle(DataOp::CheckAdd, r)
    }

    #[cfg(feature = "async")]
    /// Async [`check_and_insert`](Self::check_and_insert).
    pub async fn check_and_insert_async<C: redis::aio::ConnectionLike + Send>(
        &mut self,
        conn: &mut C,
    ) -> Result<Vec<bool>> {
        let m = self.machine(DataOp::CheckAdd)?;
        let r = self.core.run_async(conn, m).await;
        self.settle(DataOp::CheckAdd, r)
    }

    /// Insert of every item: true where the filter changed, in order; the
    /// counts of the filter grow once however often it is run.
    pub fn insert<C: redis::ConnectionLike + ?Sized>(&mut self, conn: &mut C) -> Result<Vec<bool>> {
        let m = self.machine(DataOp::Add)?;
        let r = self.core.run(conn, m);
        self.settle(DataOp::Add, r)
    }

    #[cfg(feature = "async")]
    /// Async [`insert`](Self::insert).
    pub async fn insert_async<C: redis::aio::ConnectionLike + Send>(
        &mut self,
        conn: &mut C,
    ) -> Result<Vec<bool>> {
        let m = self.machine(DataOp::Add)?;
        let r = self.core.run_async(conn, m).await;
        self.settle(DataOp::Add, r)
    }
}
