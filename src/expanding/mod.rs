//! The expanding filter: frozen generations plus a newest one that takes the
//! writes; when the newest reaches its capacity a bigger one is added, in
//! the same atomic step as the write that filled it.
//!
//! Generation `i` holds `n0 * s^i` items at false-positive rate
//! `p * (1 - r) * r^i` (growth `s`, tightening `r`). A query checks every
//! generation and is a false positive if any of them says so, so its rate is
//! at most the sum `p (1 - r) (1 + r + r^2 + ...) = p`, however many
//! generations there are. With the default `r = 1/2`, generation `i` gets
//! `p / 2^(i+1)`.

use crate::engine::chain::MachineExt;
use crate::engine::convert::{convert, Conversion, Plan};
use crate::engine::probe::probed;
use crate::engine::roll::{Grow, RollMachine};
use crate::engine::{create, Core};
use crate::error::{Error, Result};
use crate::handle::{
    sealed::{Opens, Sealed},
    Filter, FilterKind, OneKind,
};
use crate::keys::{FilterName, Keys};
use crate::machine::Machine;
use crate::metadata::{field, fmt_f64, Common, Fields, Kind};
use crate::params::{BloomParams, ErrorRate, DEFAULT_MAX_BITS, DEFAULT_MAX_BLOCK_BITS};
use crate::proto::create::{Blueprint, Opened};
use crate::store::generation::{Backend, Layout};
use crate::view::{Absorb, Accept, Codec, Growth, NewGen, Policy, Role, View};
use std::sync::Arc;

use crate::legacy::Adoption;

// The handle and its kind are here; what builds one, what its metadata
// means and how a base filter becomes one each have their file.
mod builder;
mod convert;
mod policy;

use builder::CONVERTIBLE;
pub use builder::{ExpandingBuilder, ExpandingSpec};
use convert::{absorb_full, ToExpanding};
pub(crate) use policy::{ExpandingPolicy, CODEC};

/// The most generations a filter may be configured for.
pub const MAX_GENERATIONS: u32 = 1024;

/// A Bloom filter that grows without a rebuild: old generations are frozen,
/// new writes go to a bigger one, reads check all of them, and the total
/// false-positive rate stays at most the configured `p`.
///
/// Growth `s` trades memory for the number of generations: with `s = 2`
/// each generation is twice the previous one, so after `g` generations the
/// filter holds `n0 (2^g - 1)` items and a query checks `g` generations
/// (`log2` of the growth factor). Tightening `r` trades the newer
/// generations' size for the older ones': a smaller `r` gives the first
/// generation more of the error budget (`p (1 - r)`) and every later one
/// less, which costs about `log2(1/r) / ln 2` extra bits per item for each
/// step.
///
/// ```no_run
/// use rotabloom::ExpandingFilter;
/// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let f = ExpandingFilter::builder("crawl")
///     .capacity(1_000_000)      // n0, the first generation
///     .error_rate(0.001)        // bound on the whole filter
///     .create_or_open(&mut conn)?;
/// f.check_and_insert(&mut conn, "http://example.com/")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type ExpandingFilter = Filter<Expanding>;

/// The expanding filter's kind: [`ExpandingFilter`] is `Filter<Expanding>`.
#[derive(Debug)]
pub enum Expanding {}

impl Sealed for Expanding {
    fn accept() -> Opens {
        Opens(Accept::One(CODEC))
    }
}

impl FilterKind for Expanding {}

impl OneKind for Expanding {}

impl ExpandingFilter {
    /// Starts describing an expanding filter called `name`.
    pub fn builder(name: impl Into<String>) -> ExpandingBuilder {
        ExpandingBuilder {
            name: name.into(),
            capacity: 0,
            error_rate: 0.01,
            growth: 2.0,
            tightening: 0.5,
            max_generations: 32,
            max_bytes: 0,
            max_bits: DEFAULT_MAX_BITS,
            max_block_bits: DEFAULT_MAX_BLOCK_BITS,
            backend: None,
            wait: None,
        }
    }

    /// Freezes the newest generation now and adds the next one, if the
    /// filter has not changed since this handle last saw it (compare-and-set
    /// on the epoch). Returns `true` if this call expanded, `false` if
    /// another process changed the filter first (the handle then holds the
    /// new state). Of many concurrent calls with the same view, one expands.
    pub fn expand<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Result<bool> {
        self.core.run(
            conn,
            probed(&self.core, RollMachine::new(self.core.clone(), Grow)),
        )
    }

    /// Appends a generation unless the epoch has reached `floor`: how a
    /// shard converges to its root's expansion target (docs/FORMAT.md
    /// §11.8), once however many runs do it.
    pub(crate) fn expand_to<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        floor: u64,
    ) -> Result<bool> {
        let m = RollMachine::new(self.core.clone(), crate::engine::roll::GrowTo(floor));
        self.core.run(conn, probed(&self.core, m))
    }

    #[cfg(feature = "async")]
    /// Async [`expand`](Self::expand).
    pub async fn expand_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<bool> {
        self.core
            .run_async(
                conn,
                probed(&self.core, RollMachine::new(self.core.clone(), Grow)),
            )
            .await
    }
}
