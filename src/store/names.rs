//! The names of the stores: the schemes a generation's metadata names and
//! the backends a filter is created on (docs/FORMAT.md §6.4, §6.6, §6.7).
//! They are public types of the library, re-exported by `generation`; a
//! new backend adds its names here, beside its store.

/// How a generation maps items to bits. Stored in the metadata as
/// `gen.<seq>.scheme`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scheme {
    /// Format version 1: MD5, enhanced double hashing, per-item block.
    Md5Edh,
    /// A bitmap adopted from the PyPI package `scrapy-redis-bloomfilter`:
    /// `k` polynomial hashes with multipliers `1..=k` over the item's code
    /// points, modulo `2^bit` (see `docs/LEGACY.md`). Read-only.
    ScrapyRedisBloomfilter,
    /// A bitmap adopted from seed 000's layout: MD5 hex digest, seeds
    /// 5, 7, 11, 13, 31, 37, 61, blocks of 2^31 bits chosen by the first two
    /// hex digits modulo the block count. Read-only.
    Seed000,
    /// A non-scaling RedisBloom filter (`BF.RESERVE ... NONSCALING`) in one
    /// key, which hashes the items itself; needs the RedisBloom module.
    /// `bits`/`hashes` record rotabloom's sizing of the same capacity and
    /// rate, for estimates.
    RedisBloom,
    /// The same, in a valkey-bloom key (Valkey's bloom module).
    ValkeyBloom,
}

impl Scheme {
    /// Every scheme.
    pub const ALL: &'static [Scheme] = &[
        Scheme::Md5Edh,
        Scheme::ScrapyRedisBloomfilter,
        Scheme::Seed000,
        Scheme::RedisBloom,
        Scheme::ValkeyBloom,
    ];

    /// The name used in the metadata hash.
    ///
    /// ```
    /// assert_eq!(rotabloom::Scheme::ValkeyBloom.as_str(), "valkey-bloom");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Md5Edh => "md5-edh",
            Scheme::ScrapyRedisBloomfilter => "scrapy-redis-bloomfilter",
            Scheme::Seed000 => "seed000",
            Scheme::RedisBloom => "redisbloom",
            Scheme::ValkeyBloom => "valkey-bloom",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Scheme> {
        Scheme::ALL.iter().copied().find(|x| x.as_str() == s)
    }
}

/// Where a filter keeps its generations, chosen at creation and recorded
/// in the metadata (`backend`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Redis strings used as bitmaps (format version 1); needs nothing but
    /// Redis or Valkey.
    #[default]
    Bitmap,
    /// One non-scaling RedisBloom key per generation (`BF.RESERVE ...
    /// NONSCALING`, `BF.INSERT`, `BF.MEXISTS`); needs the RedisBloom module
    /// (Redis Stack, built into Redis 8). rotabloom still does the
    /// rotation, both circular modes and the metadata.
    RedisBloom,
    /// The same with Valkey's bloom module, valkey-bloom (same commands,
    /// no `BF.SCANDUMP`: no mirror and no dump of its generations; a
    /// generation above its 128 MiB object limit is refused).
    ValkeyBloom,
}

impl Backend {
    /// Every backend, the default first.
    pub const ALL: &'static [Backend] =
        &[Backend::Bitmap, Backend::RedisBloom, Backend::ValkeyBloom];

    /// The name stored in the metadata.
    ///
    /// ```
    /// assert_eq!(rotabloom::Backend::ValkeyBloom.as_str(), "valkey-bloom");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Bitmap => "bitmap",
            Backend::RedisBloom => "redisbloom",
            Backend::ValkeyBloom => "valkey-bloom",
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = crate::error::Error;
    fn from_str(s: &str) -> crate::error::Result<Backend> {
        crate::words::parse(s)
    }
}

impl crate::words::Choice for Backend {
    const SETTING: &'static str = "backend";
    const ALL: &'static [Backend] = Backend::ALL;
    fn name(self) -> &'static str {
        self.as_str()
    }
    fn aliases(self) -> &'static [&'static str] {
        match self {
            Backend::Bitmap => &[],
            Backend::RedisBloom => &["bf"],
            Backend::ValkeyBloom => &["valkey"],
        }
    }
}
