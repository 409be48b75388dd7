//! The base filter: one generation in Redis. Its policy: that generation
//! decides and takes every write; capacity is advisory.

use crate::engine::create;
use crate::error::{Error, Result};
use crate::handle::{
    sealed::{Opens, Sealed},
    Filter, FilterKind, OneKind,
};
use crate::keys::{FilterName, Keys};
use crate::metadata::{field, fmt_f64, Common, Fields, Kind};
use crate::params::{BloomParams, DEFAULT_MAX_BITS, DEFAULT_MAX_BLOCK_BITS};
use crate::proto::create::{Blueprint, Opened};
use crate::store::generation::{Backend, Layout};
use crate::view::{Accept, Codec, Policy, Role, View};
use std::sync::Arc;

/// A Bloom filter kept in Redis: one generation of `m` bits, shared by every
/// process that opens it by name.
///
/// The handle owns no connection: each call borrows one, blocking
/// (`redis::ConnectionLike`: `Connection`, `ClusterConnection`) or async
/// (`redis::aio::ConnectionLike`: `MultiplexedConnection`,
/// `ConnectionManager`, the async cluster connection). Handles are cheap to
/// clone and `Send + Sync`.
///
/// ```no_run
/// use rotabloom::BloomFilter;
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let mut conn = client.get_connection()?;
/// let seen = BloomFilter::builder("crawl")
///     .capacity(100_000_000)
///     .error_rate(0.001)
///     .create_or_open(&mut conn)?;
/// if seen.check_and_insert(&mut conn, "http://example.com/")? {
///     // new: crawl it
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type BloomFilter = Filter<Bloom>;

/// The base filter's kind: [`BloomFilter`] is `Filter<Bloom>`.
#[derive(Debug)]
pub enum Bloom {}

impl Sealed for Bloom {
    fn accept() -> Opens {
        Opens(Accept::One(CODEC))
    }
}

impl FilterKind for Bloom {}

impl OneKind for Bloom {}

impl BloomFilter {
    /// Starts describing a filter called `name`.
    pub fn builder(name: impl Into<String>) -> BloomBuilder {
        BloomBuilder {
            name: name.into(),
            sizing: None,
            max_bits: DEFAULT_MAX_BITS,
            max_block_bits: DEFAULT_MAX_BLOCK_BITS,
            backend: Backend::Bitmap,
            wait: None,
        }
    }

    /// The filter's shape, as last read from Redis.
    pub fn params(&self) -> BloomParams {
        let meta = self.core.view();
        let l = meta.newest().layout;
        // A stored layout was valid when written; fall back to its raw values.
        BloomParams::from_bits_hashes_within(l.bits, l.hashes, u64::MAX).unwrap_or(BloomParams::MIN)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Sizing {
    Capacity { capacity: u64, error_rate: f64 },
    Explicit { bits: u64, hashes: u32 },
}

/// A bloom filter's parameters: how it was sized, where it lives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BloomPolicy {
    sizing: Sizing,
    backend: Backend,
}

impl Policy for BloomPolicy {
    fn kind(&self) -> Kind {
        Kind::Bloom
    }

    fn params(&self) -> Vec<(&'static str, String)> {
        let mut p = match self.sizing {
            Sizing::Capacity {
                capacity,
                error_rate,
            } => vec![
                (field::SIZING, "capacity".to_string()),
                (field::CAPACITY, capacity.to_string()),
                (field::ERROR_RATE, fmt_f64(error_rate)),
            ],
            Sizing::Explicit { bits, hashes } => vec![
                (field::SIZING, "explicit".to_string()),
                (field::BITS, bits.to_string()),
                (field::HASHES, hashes.to_string()),
            ],
        };
        p.push((field::BACKEND, self.backend.as_str().to_string()));
        p
    }

    fn roles(&self, _: &Common) -> Vec<Role> {
        vec![Role::Decide]
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The backend field (absent: bitmap, as written before it existed), and
/// the generations' schemes it implies.
pub(crate) fn backend_of(f: &Fields, c: &Common) -> Result<Backend> {
    let backend = match f.opt_str(field::BACKEND)? {
        None => Backend::Bitmap,
        Some(_) => f.parsed::<Backend>(field::BACKEND)?,
    };
    let scheme = backend.scheme();
    View::check_schemes(f, c, |_, g| g.layout.scheme == scheme)?;
    Ok(backend)
}

fn decode(f: &Fields, c: &Common) -> Result<Arc<dyn Policy>> {
    if c.gens.len() != 1 {
        return Err(f.corrupt(
            field::GENS,
            format!(
                "a bloom filter lists exactly one generation, not {}",
                c.gens.len()
            ),
        ));
    }
    let sizing = match f.str(field::SIZING)? {
        "capacity" => Sizing::Capacity {
            capacity: f.u64_in(field::CAPACITY, 1, u64::MAX)?,
            error_rate: f.rate(field::ERROR_RATE)?,
        },
        "explicit" => Sizing::Explicit {
            bits: f.u64_in(field::BITS, crate::params::MIN_BITS, u64::MAX)?,
            hashes: f.u64_in(field::HASHES, 1, u64::from(crate::params::MAX_HASHES))? as u32,
        },
        other => {
            return Err(f.corrupt(
                field::SIZING,
                format!("{other:.40?} is not capacity or explicit"),
            ))
        }
    };
    Ok(Arc::new(BloomPolicy {
        sizing,
        backend: backend_of(f, c)?,
    }))
}

/// How bloom filters are read from their metadata.
pub(crate) const CODEC: Codec = Codec {
    kind: Kind::Bloom,
    decode,
    absorb: None,
};

/// Describes a [`BloomFilter`]; nothing is checked until
/// [`spec`](Self::spec) or `create_or_open`, which report bad values as
/// typed errors.
#[derive(Clone, Debug)]
#[must_use]
pub struct BloomBuilder {
    name: String,
    sizing: Option<Sizing>,
    max_bits: u64,
    max_block_bits: u64,
    backend: crate::store::generation::Backend,
    wait: Option<crate::wait::WaitReplicas>,
}

impl BloomBuilder {
    /// Makes the creation and every write of the handle wait for
    /// replicas (see [`WaitReplicas`](crate::WaitReplicas)).
    pub fn wait_replicas(mut self, wait: crate::wait::WaitReplicas) -> Self {
        self.wait = Some(wait);
        self
    }

    /// Where the generation is kept (default [`Backend::Bitmap`](crate::Backend::Bitmap)).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Items the filter is sized for (n). Use with [`error_rate`](Self::error_rate).
    pub fn capacity(mut self, capacity: u64) -> Self {
        let error_rate = match self.sizing {
            Some(Sizing::Capacity { error_rate, .. }) => error_rate,
            _ => 0.01,
        };
        self.sizing = Some(Sizing::Capacity {
            capacity,
            error_rate,
        });
        self
    }

    /// False-positive rate at capacity (p). Default 0.01.
    pub fn error_rate(mut self, error_rate: f64) -> Self {
        let capacity = match self.sizing {
            Some(Sizing::Capacity { capacity, .. }) => capacity,
            _ => 0,
        };
        self.sizing = Some(Sizing::Capacity {
            capacity,
            error_rate,
        });
        self
    }

    /// An explicit shape instead of capacity and error rate, as the seeds'
    /// `BLOOMFILTER_BIT` (`bits = 1 << BIT`) and `BLOOMFILTER_HASH_NUMBER`.
    pub fn bits_hashes(mut self, bits: u64, hashes: u32) -> Self {
        self.sizing = Some(Sizing::Explicit { bits, hashes });
        self
    }

    /// Refuse shapes above this many bits (default 2^37, 16 GiB).
    pub fn max_bits(mut self, max_bits: u64) -> Self {
        self.max_bits = max_bits;
        self
    }

    /// Split the bitmap into blocks of at most this many bits (default 2^26,
    /// 8 MiB; at most 2^32, one Redis string). Blocks are allocated one per
    /// command when the filter is created, so bigger blocks mean longer
    /// pauses of the server then; the format records the split.
    pub fn max_block_bits(mut self, max_block_bits: u64) -> Self {
        self.max_block_bits = max_block_bits;
        self
    }

    /// The builder of the shard `name` of `shards`, and the whole
    /// filter's capacity.
    pub(crate) fn for_shard(&self, name: &str, shards: u32) -> Result<(Self, u64)> {
        match self.sizing {
            Some(Sizing::Explicit { .. }) => Err(Error::InvalidParameter {
                name: "shards",
                reason: "a shape given in bits and hashes cannot be divided between shards; give a capacity".into(),
            }),
            Some(Sizing::Capacity { capacity, error_rate }) => {
                let mut b = self.clone();
                b.name = name.to_string();
                b.sizing = Some(Sizing::Capacity {
                    capacity: crate::params::shard_capacity(capacity, shards),
                    error_rate,
                });
                Ok((b, capacity))
            }
            None => Ok((self.clone(), 0)),
        }
    }

    /// The filter's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Validates the description.
    pub fn spec(&self) -> Result<BloomSpec> {
        let name = FilterName::new(&self.name)?;
        let sizing = self.sizing.unwrap_or(Sizing::Capacity {
            capacity: 0,
            error_rate: 0.01,
        });
        let (params, capacity) = match sizing {
            Sizing::Capacity {
                capacity,
                error_rate,
            } => (
                BloomParams::for_capacity_within(capacity, error_rate, self.max_bits)?,
                capacity,
            ),
            Sizing::Explicit { bits, hashes } => {
                let p = BloomParams::from_bits_hashes_within(bits, hashes, self.max_bits)?;
                // The load at which k is optimal for m.
                let cap = ((bits as f64) * std::f64::consts::LN_2 / f64::from(hashes))
                    .floor()
                    .max(1.0) as u64;
                (p, cap)
            }
        };
        let policy = BloomPolicy {
            sizing,
            backend: self.backend,
        };
        Ok(BloomSpec {
            name,
            layout: self.backend.layout(params, self.max_block_bits)?,
            params: policy.params(),
            capacity,
            wait: self.wait,
        })
    }
}

/// A validated [`BloomBuilder`].
#[derive(Clone, Debug, PartialEq)]
pub struct BloomSpec {
    name: FilterName,
    layout: Layout,
    params: Vec<(&'static str, String)>,
    capacity: u64,
    wait: Option<crate::wait::WaitReplicas>,
}

impl BloomSpec {
    /// The same spec, its creation and the handle's writes waiting for
    /// replicas (see [`WaitReplicas`](crate::WaitReplicas)).
    pub fn with_wait_replicas(mut self, wait: Option<crate::wait::WaitReplicas>) -> Self {
        self.wait = wait;
        self
    }

    /// The generation's layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The generations a creation makes, each a layout and a capacity: what
    /// `create --dry-run` shows.
    pub fn initial_generations(&self) -> Vec<(Layout, u64)> {
        vec![(self.layout, self.capacity)]
    }
}

// Sealed (`creates::sealed`): the machine it names is the crate's own.
#[allow(private_interfaces)]
impl crate::creates::Creates for BloomSpec {
    type Kind = Bloom;

    fn wait(&self) -> Option<crate::wait::WaitReplicas> {
        self.wait
    }

    fn machine(&self) -> impl crate::machine::Machine<Output = (BloomFilter, Opened)> + Send {
        use crate::engine::chain::MachineExt;
        let bp = Blueprint {
            uid: crate::uid::new_uid(),
            adopt: Vec::new(),
            kind: Kind::Bloom,
            params: self.params.clone(),
            extra: Vec::new(),
            gens: vec![(self.layout, self.capacity)],
            leased: Vec::new(),
        };
        let wait = self.wait;
        create::create_or_open(Keys::new(self.name.clone()), Accept::One(CODEC), bp).map(
            move |(mut core, how)| {
                core.wait = wait;
                Ok((BloomFilter::from_core(core), how))
            },
        )
    }
}

impl BloomSpec {
    /// Creates or opens; also says which happened.
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<(BloomFilter, Opened)> {
        crate::creates::run(self, conn)
    }

    #[cfg(feature = "async")]
    /// Async [`create_or_open`](Self::create_or_open).
    pub async fn create_or_open_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<(BloomFilter, Opened)> {
        crate::creates::run_async(self, conn).await
    }
}
