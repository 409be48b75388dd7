//! Adopting bitmaps written by legacy Python crawlers: a frozen, read-only
//! generation 0 of an expanding filter, read with its own hash scheme (see
//! `docs/LEGACY.md`), moved into place without a copy.

use crate::engine::create::create_whole;
use crate::error::{Error, Result};
use crate::exec::{Machine, Poll, Replies, Request};
use crate::generation::Layout;
use crate::keys::Keys;
use crate::proto::create::{Blueprint, Opened};
use crate::view::{Accept, View};

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
    pub(crate) fn layout(&self) -> Result<Layout> {
        let bad =
            |name: &'static str, reason: String| Err(Error::InvalidParameter { name, reason });
        match self {
            Legacy::ScrapyRedisBloomfilter { bit, hashes, .. } => {
                if !(3..=32).contains(bit) {
                    return bad("bit", format!("{bit} is not between 3 and 32"));
                }
                if *hashes == 0 || *hashes > crate::MAX_HASHES {
                    return bad(
                        "hashes",
                        format!("{hashes} is not between 1 and {}", crate::MAX_HASHES),
                    );
                }
                Ok(Layout {
                    bits: 1 << bit,
                    hashes: *hashes,
                    blocks: 1,
                    scheme: crate::Scheme::ScrapyRedisBloomfilter,
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
                    scheme: crate::Scheme::Seed000,
                })
            }
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

/// Adoption: measure the legacy keys (STRLEN, BITCOUNT), then create the
/// filter moving them into place in the same atomic step.
struct AdoptMachine {
    keys: Keys,
    accept: Accept,
    bp: Blueprint,
    legacy: Legacy,
    layout: Layout,
    create: Option<Box<dyn Machine<Output = (View, Opened)> + Send>>,
    sent: bool,
}

/// The adoption of `legacy` as generation 0 of the filter `bp` describes.
pub(crate) fn adopt(
    keys: Keys,
    accept: Accept,
    bp: Blueprint,
    legacy: Legacy,
) -> Result<impl Machine<Output = (View, Opened)> + Send> {
    Ok(AdoptMachine {
        accept,
        layout: legacy.layout()?,
        keys,
        bp,
        legacy,
        create: None,
        sent: false,
    })
}

impl AdoptMachine {
    fn measured(&mut self, replies: Replies) -> Result<Poll<(View, Opened)>> {
        let mut replies = replies.into_iter();
        let block_bits = self.layout.block_bits();
        let mut items = 0f64;
        let mut sources = Vec::new();
        for (b, key) in self.legacy.keys().into_iter().enumerate() {
            let mut int = |what: &str| -> Result<u64> {
                match replies.next() {
                    Some(Ok(redis::Value::Int(i))) => Ok(u64::try_from(i).unwrap_or(0)),
                    Some(Err(e)) => {
                        let e: Error = e.into();
                        if crate::proto::is_wrongtype(&e) {
                            return Err(Error::WrongType {
                                key: key.clone(),
                                found: "not a string".into(),
                                expected: "string",
                            });
                        }
                        Err(e)
                    }
                    Some(Ok(v)) => Err(crate::proto::unexpected(what, &v)),
                    None => Err(Error::Internal(format!("the reply to {what} is missing"))),
                }
            };
            let len = int("STRLEN")?;
            let set = int("BITCOUNT")?;
            if len.saturating_mul(8) > block_bits {
                return Err(Error::InvalidParameter {
                    name: "bit",
                    reason: format!(
                        "{key:?} holds {len} bytes, more than the {block_bits} bits its parameters allow: \
                         check BLOOMFILTER_BIT / the block count"
                    ),
                });
            }
            items += crate::params::estimate_items(block_bits, self.layout.hashes, set);
            sources.push((key, b as u32));
        }
        if sources.is_empty() {
            return Err(Error::InvalidParameter {
                name: "legacy",
                reason: "no keys to adopt".into(),
            });
        }
        let count = if items.is_finite() {
            items.ceil() as u64
        } else {
            u64::MAX / 2
        };
        let mut bp = self.bp.clone();
        bp.gens.insert(0, (self.layout, count.max(1)));
        bp.adopt = sources;
        // The new generation is allocated whole before the filter is
        // listed, as at every creation; the adopted bitmap stays as it was.
        let mut m: Box<dyn Machine<Output = (View, Opened)> + Send> =
            Box::new(create_whole(self.keys.clone(), self.accept, bp));
        let first = m.step(None)?;
        self.create = Some(m);
        Ok(first)
    }
}

impl Machine for AdoptMachine {
    type Output = (View, Opened);

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<(View, Opened)>> {
        if let Some(m) = &mut self.create {
            return m.step(replies);
        }
        if self.sent {
            return self.measured(replies.unwrap_or_default());
        }
        self.sent = true;
        let mut req = Request::new().read_only();
        for k in self.legacy.keys() {
            req.push(redis::cmd("STRLEN").arg(&k).clone(), None);
            req.push(redis::cmd("BITCOUNT").arg(&k).clone(), None);
        }
        Ok(Poll::Send(req))
    }
}
