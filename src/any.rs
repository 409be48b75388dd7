//! A filter of any kind, opened by name: the kind stored in Redis decides.

use crate::metadata::Kind;
use crate::ops::impl_filter_ops;
use crate::view::{Accept, Codec};
use crate::{BloomFilter, CircularFilter, ExpandingFilter};

/// Every kind this library reads.
const ALL: &[Codec] = &[
    crate::bloom::CODEC,
    crate::expanding::CODEC,
    crate::circular::CODEC,
];

/// What opening by name accepts: any kind this library reads.
pub(crate) const ACCEPT_ANY: Accept = Accept::Any(ALL);

/// A handle on a filter of whatever kind it is: the data operations every
/// kind shares, and the typed handle for the rest. Opening it reads the
/// metadata once, in one round trip.
///
/// ```no_run
/// use rotabloom::{AnyFilter, Kind};
/// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let f = AnyFilter::open(&mut conn, "crawl")?;
/// let new = f.check_and_insert_many(&mut conn, ["http://a/", "http://b/"])?;
/// if let Some(c) = f.circular() {
///     c.rotate_if_due(&mut conn)?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct AnyFilter {
    core: crate::engine::Core,
}

impl_filter_ops!(
    AnyFilter,
    Accept::Any(ALL),
    "# let mut conn = redis::Client::open(\"redis://127.0.0.1/\")?.get_connection()?;\nlet f = rotabloom::AnyFilter::open(&mut conn, \"crawl\")?;"
);

impl AnyFilter {
    /// The filter's kind, as stored in Redis.
    pub fn kind(&self) -> Kind {
        self.core.view().kind
    }

    /// The typed handle, when the filter is a base filter.
    pub fn bloom(&self) -> Option<BloomFilter> {
        self.typed(Kind::Bloom, crate::bloom::CODEC)
            .map(BloomFilter::from_core)
    }

    /// The typed handle, when the filter is an expanding filter.
    pub fn expanding(&self) -> Option<ExpandingFilter> {
        self.typed(Kind::Expanding, crate::expanding::CODEC)
            .map(ExpandingFilter::from_core)
    }

    /// The typed handle, when the filter is a circular filter.
    pub fn circular(&self) -> Option<CircularFilter> {
        self.typed(Kind::Circular, crate::circular::CODEC)
            .map(CircularFilter::from_core)
    }

    /// Removes the keys left under filter `name` when no filter of that
    /// name exists: the blocks a drop interrupted after its first step left
    /// in the trash list, and every other key matching
    /// [`Keys::pattern`](crate::Keys::pattern) (records of idempotent
    /// batches), but blocks with a time to live, which belong to a
    /// creation or a restore in progress and expire on their own if it
    /// never finishes. Returns how many
    /// keys it removed; 0 means nothing was left. A drop does the same as
    /// its last steps: this is for a name whose drop was interrupted,
    /// when there is no handle to drop any more.
    ///
    /// When a filter of that name exists, nothing of it is touched but the
    /// blocks in its trash list (generations its rotations dropped), which
    /// any rotation deletes too.
    ///
    /// ```no_run
    /// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let removed = rotabloom::AnyFilter::remove_leftovers(&mut conn, "crawl")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_leftovers<C: redis::ConnectionLike + ?Sized>(
        conn: &mut C,
        name: &str,
    ) -> crate::Result<u64> {
        let keys = crate::Keys::new(crate::FilterName::existing(name)?);
        crate::exec::run(conn, crate::engine::trash::leftovers(keys), None)
    }

    #[cfg(feature = "async")]
    /// Async [`remove_leftovers`](Self::remove_leftovers).
    pub async fn remove_leftovers_async<C: redis::aio::ConnectionLike + Send>(
        conn: &mut C,
        name: &str,
    ) -> crate::Result<u64> {
        let keys = crate::Keys::new(crate::FilterName::existing(name)?);
        crate::exec::run_async(conn, crate::engine::trash::leftovers(keys), None).await
    }

    /// Drops filter `name` whose metadata cannot be read, so that no
    /// handle can be opened on it: a corrupt field
    /// ([`Error::CorruptMetadata`](crate::Error::CorruptMetadata)), another
    /// format version. Its metadata and fence go in one step (if its uid is
    /// still the one read just before), then every other key under the
    /// name, as [`remove_leftovers`](Self::remove_leftovers) does. Returns
    /// whether this call removed the metadata. A filter that can be read
    /// is dropped by its handle's `drop`, which checks what it deletes
    /// against its view: prefer that.
    ///
    /// ```no_run
    /// use rotabloom::{AnyFilter, Error};
    /// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// match AnyFilter::open(&mut conn, "crawl") {
    ///     Ok(f) => { f.drop(&mut conn)?; }
    ///     Err(Error::CorruptMetadata { .. }) => {
    ///         AnyFilter::drop_unreadable(&mut conn, "crawl")?;
    ///     }
    ///     Err(e) => return Err(e.into()),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn drop_unreadable<C: redis::ConnectionLike + ?Sized>(
        conn: &mut C,
        name: &str,
    ) -> crate::Result<bool> {
        let keys = crate::Keys::new(crate::FilterName::existing(name)?);
        crate::exec::run(conn, unreadable_drop(keys), None)
    }

    #[cfg(feature = "async")]
    /// Async [`drop_unreadable`](Self::drop_unreadable).
    pub async fn drop_unreadable_async<C: redis::aio::ConnectionLike + Send>(
        conn: &mut C,
        name: &str,
    ) -> crate::Result<bool> {
        let keys = crate::Keys::new(crate::FilterName::existing(name)?);
        crate::exec::run_async(conn, unreadable_drop(keys), None).await
    }

    fn typed(&self, kind: Kind, codec: Codec) -> Option<crate::engine::Core> {
        (self.kind() == kind).then(|| {
            let mut core = self.core.clone();
            core.accept = Accept::One(codec);
            core
        })
    }
}

macro_rules! from_typed {
    ($ty:ident) => {
        impl From<$ty> for AnyFilter {
            fn from(f: $ty) -> AnyFilter {
                let mut core = f.core;
                core.accept = Accept::Any(ALL);
                AnyFilter { core }
            }
        }
    };
}

from_typed!(BloomFilter);
from_typed!(ExpandingFilter);
from_typed!(CircularFilter);

/// The drop of an unreadable filter, then the sweep of its name.
fn unreadable_drop(keys: crate::Keys) -> impl crate::exec::Machine<Output = bool> + Send {
    use crate::engine::chain::MachineExt;
    let k = keys.clone();
    crate::engine::trash::UnreadableDrop::new(keys)
        .then(move |dropped| Ok(crate::engine::trash::leftovers(k).map(move |_| Ok(dropped))))
}
