//! Adopting bitmaps written by legacy Python crawlers: a frozen, read-only
//! generation 0 of an expanding filter, read with its own hash scheme (see
//! `docs/LEGACY.md`), moved into place without a copy once it has been
//! checked. What a legacy bitmap is, and the pure checks of one
//! (`check`); the adoption's machine is `engine::adopt`.

pub(crate) mod check;

use crate::error::{Error, Result};
use crate::store::generation::Layout;

/// A bitmap written by a legacy Python crawler, adopted as a frozen,
/// read-only generation read with its own hash scheme (see
/// `docs/LEGACY.md`). New items go to new-format generations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Legacy {
    /// The PyPI package `scrapy-redis-bloomfilter`: one key of `2^bit` bits
    /// (`BLOOMFILTER_BIT`, default 30) and `hashes` functions
    /// (`BLOOMFILTER_HASH_NUMBER`, default 6). Its dupefilter hashes request
    /// fingerprints (40 hex digits): query with those.
    ScrapyRedisBloomfilter {
        /// The bitmap's key, e.g. `myspider:bloomfilter`.
        key: String,
        /// `BLOOMFILTER_BIT`.
        bit: u32,
        /// `BLOOMFILTER_HASH_NUMBER`.
        hashes: u32,
    },
    /// Seed 000's layout: keys `PREFIX0`, `PREFIX1`, ... of 2^31 bits
    /// (`blockNum` of them), MD5 hex digest, seeds 5, 7, 11, 13, 31, 37, 61.
    Seed000 {
        /// The key prefix (`key` in the seed, default `bloomfilter`).
        prefix: String,
        /// `blockNum`.
        blocks: u32,
    },
}

impl Legacy {
    /// The key (or key prefix) a message names.
    pub(crate) fn key(&self) -> &str {
        match self {
            Legacy::ScrapyRedisBloomfilter { key, .. } => key,
            Legacy::Seed000 { prefix, .. } => prefix,
        }
    }

    pub(crate) fn layout(&self) -> Result<Layout> {
        let bad =
            |name: &'static str, reason: String| Err(Error::InvalidParameter { name, reason });
        match self {
            Legacy::ScrapyRedisBloomfilter { bit, hashes, .. } => {
                if !(3..=32).contains(bit) {
                    return bad("bit", format!("{bit} is not between 3 and 32"));
                }
                if *hashes == 0 || *hashes > crate::params::MAX_HASHES {
                    return bad(
                        "hashes",
                        format!(
                            "{hashes} is not between 1 and {}",
                            crate::params::MAX_HASHES
                        ),
                    );
                }
                Ok(Layout {
                    bits: 1 << bit,
                    hashes: *hashes,
                    blocks: 1,
                    scheme: crate::store::generation::Scheme::ScrapyRedisBloomfilter,
                })
            }
            Legacy::Seed000 { blocks, .. } => {
                if !(1..=256).contains(blocks) {
                    return bad("blocks", format!("{blocks} is not between 1 and 256"));
                }
                Ok(Layout {
                    bits: u64::from(*blocks) << 31,
                    hashes: 7,
                    blocks: *blocks,
                    scheme: crate::store::generation::Scheme::Seed000,
                })
            }
        }
    }

    /// The key (scrapy-redis-bloomfilter) or key prefix (seed 000) it
    /// is read from, as the metadata records it (`legacy_source`).
    pub fn source(&self) -> &str {
        match self {
            Legacy::ScrapyRedisBloomfilter { key, .. } => key,
            Legacy::Seed000 { prefix, .. } => prefix,
        }
    }

    /// The same bitmap, to be adopted only if every one of `known` (items
    /// its crawler stored: request fingerprints for
    /// scrapy-redis-bloomfilter's dupefilter) is found in it with these
    /// parameters, read where the legacy code put them before anything
    /// moves. A passing check also lifts the doubts the bitmap's shape may
    /// raise (see [`Error::NotAdoptable`]). Empty items are skipped: the
    /// legacy code never reports one present.
    ///
    /// ```no_run
    /// use rotabloom::{ExpandingFilter, Legacy};
    /// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let known = ["8e7f80913230debca7264dfb3c055dcda5aaf9f8"];
    /// let legacy = Legacy::ScrapyRedisBloomfilter {
    ///     key: "myspider:bloomfilter".into(), bit: 30, hashes: 6,
    /// };
    /// let f = ExpandingFilter::builder("myspider")
    ///     .capacity(10_000_000)
    ///     .adopt_legacy(&mut conn, legacy.verify(known))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn verify<I, T>(self, known: I) -> Adoption
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        Adoption {
            legacy: self,
            known: known
                .into_iter()
                .map(|i| i.as_ref().to_vec())
                .filter(|i| !i.is_empty())
                .collect(),
        }
    }

    pub(crate) fn keys(&self) -> Vec<String> {
        match self {
            Legacy::ScrapyRedisBloomfilter { key, .. } => vec![key.clone()],
            Legacy::Seed000 { prefix, blocks } => {
                (0..*blocks).map(|b| format!("{prefix}{b}")).collect()
            }
        }
    }
}

/// What [`adopt_legacy`](crate::ExpandingBuilder::adopt_legacy) takes: a
/// [`Legacy`] bitmap, and items known to be in it
/// ([`Legacy::verify`]). A `Legacy` alone converts into one that checks
/// no items.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adoption {
    pub(crate) legacy: Legacy,
    pub(crate) known: Vec<Vec<u8>>,
}

impl Adoption {
    /// The bitmap to adopt.
    pub fn legacy(&self) -> &Legacy {
        &self.legacy
    }

    /// How many items are checked before anything moves.
    pub fn known(&self) -> usize {
        self.known.len()
    }
}

impl From<Legacy> for Adoption {
    fn from(legacy: Legacy) -> Adoption {
        Adoption {
            legacy,
            known: Vec::new(),
        }
    }
}
