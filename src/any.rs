//! A filter of any kind, opened by name: the kind stored in Redis decides.

use crate::handle::{Filter, OneKind};
use crate::kinds::{Any, Bloom, Circular, Expanding};
use crate::metadata::Kind;
use crate::view::Accept;

/// What opening by name accepts: any kind this library reads.
pub(crate) const ACCEPT_ANY: Accept = Accept::Any(crate::kinds::ALL);

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
pub type AnyFilter = Filter<Any>;

impl AnyFilter {
    /// The filter's kind, as stored in Redis.
    pub fn kind(&self) -> Kind {
        self.core.view().kind
    }

    /// The typed handle, when the filter is a base filter.
    pub fn bloom(&self) -> Option<crate::bloom::BloomFilter> {
        self.typed::<Bloom>()
    }

    /// The typed handle, when the filter is an expanding filter.
    pub fn expanding(&self) -> Option<crate::expanding::ExpandingFilter> {
        self.typed::<Expanding>()
    }

    /// The typed handle, when the filter is a circular filter.
    pub fn circular(&self) -> Option<crate::circular::CircularFilter> {
        self.typed::<Circular>()
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
    ) -> crate::error::Result<u64> {
        let keys = crate::keys::Keys::new(crate::keys::FilterName::existing(name)?);
        crate::exec::run(conn, crate::engine::trash::leftovers(keys), None)
    }

    #[cfg(feature = "async")]
    /// Async [`remove_leftovers`](Self::remove_leftovers).
    pub async fn remove_leftovers_async<C: redis::aio::ConnectionLike + Send>(
        conn: &mut C,
        name: &str,
    ) -> crate::error::Result<u64> {
        let keys = crate::keys::Keys::new(crate::keys::FilterName::existing(name)?);
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
    ) -> crate::error::Result<bool> {
        let keys = crate::keys::Keys::new(crate::keys::FilterName::existing(name)?);
        crate::exec::run(conn, unreadable_drop(keys), None)
    }

    #[cfg(feature = "async")]
    /// Async [`drop_unreadable`](Self::drop_unreadable).
    pub async fn drop_unreadable_async<C: redis::aio::ConnectionLike + Send>(
        conn: &mut C,
        name: &str,
    ) -> crate::error::Result<bool> {
        let keys = crate::keys::Keys::new(crate::keys::FilterName::existing(name)?);
        crate::exec::run_async(conn, unreadable_drop(keys), None).await
    }

    /// The handle of kind `K`, when the filter is of that kind: what
    /// [`bloom`](Self::bloom), [`expanding`](Self::expanding) and
    /// [`circular`](Self::circular) return.
    ///
    /// ```no_run
    /// use rotabloom::{kinds::Circular, AnyFilter};
    /// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// if let Some(c) = AnyFilter::open(&mut conn, "recrawl")?.typed::<Circular>() {
    ///     c.rotate_if_due(&mut conn)?;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn typed<K: OneKind>(&self) -> Option<Filter<K>> {
        let own = K::accept().0;
        let kind = own.codecs().first()?.kind;
        (self.kind() == kind).then(|| Filter::from_core(self.core.clone()))
    }
}

impl<K: OneKind> From<Filter<K>> for AnyFilter {
    fn from(f: Filter<K>) -> AnyFilter {
        Filter::from_core(f.core)
    }
}

/// The drop of an unreadable filter, then the sweep of its name.
pub(crate) fn unreadable_drop(
    keys: crate::keys::Keys,
) -> impl crate::machine::Machine<Output = bool> + Send {
    use crate::engine::chain::MachineExt;
    let k = keys.clone();
    crate::engine::trash::UnreadableDrop::new(keys)
        .then(move |dropped| Ok(crate::engine::trash::leftovers(k).map(move |_| Ok(dropped))))
}
