//! The mirror of a RedisBloom generation: copied with the module's own
//! `BF.SCANDUMP`, read as the module reads its chain of links.

use super::chain::{Chain, ModuleHash};
use crate::error::{Error, Result};
use crate::request::Request;
use crate::store::mirror::{CopyStep, FrozenBits, Item, Memo, MirrorCopy, Probe};
use redis::{RedisResult, Value};

/// The item's hash values for `chain`'s option, shared by every
/// generation the item is checked against.
fn hash(chain: &Chain, memo: &mut Memo, item: Option<&[u8]>) -> ModuleHash {
    ModuleHash::from(memo.own_hash(chain.force64(), || {
        chain.hash(item.unwrap_or_default()).into()
    }))
}

/// A RedisBloom generation, as `BF.SCANDUMP` gave it.
#[derive(Debug)]
pub(crate) struct ChainBits(pub(crate) Chain);

impl FrozenBits for ChainBits {
    fn bytes(&self) -> u64 {
        self.0.bytes()
    }

    /// The module's test; it needs the item itself, not its hash.
    fn contains(&self, memo: &mut Memo, (_, item): Item<'_>) -> bool {
        self.0.contains_hash(hash(&self.0, memo, item))
    }

    fn probe(&self, memo: &mut Memo, (_, item): Item<'_>, i: u32) -> Probe {
        let h = hash(&self.0, memo, item);
        match self.0.probe(h, u64::from(i)) {
            Some(Ok(x)) => Probe::At {
                part: 0,
                byte: x / 8,
                mask: 1 << (x % 8),
            },
            Some(Err(set)) => Probe::Known(set),
            None => Probe::Unprobed,
        }
    }

    // Probes come only from a chain of one link (`Chain::probe`).
    fn byte(&self, _: u32, byte: u64) -> Option<u8> {
        self.0.first_link_bits()?.get(byte as usize).copied()
    }
}

/// A RedisBloom generation being copied: the chain once its header came,
/// and the iterator BF.SCANDUMP returned last (0 before the header). Its
/// chunks are the module's choice: at most 10 MiB in RedisBloom 2.x.
pub(crate) struct DumpCopy {
    key: String,
    chain: Option<Chain>,
    iter: i64,
    gone: bool,
}

impl DumpCopy {
    /// The copy of the generation in key `key`.
    pub(crate) fn new(key: String) -> DumpCopy {
        DumpCopy {
            key,
            chain: None,
            iter: 0,
            gone: false,
        }
    }
}

/// The chunk of a RedisBloom key's dump after iterator `iter` (0: its
/// header).
fn scan_dump(key: &str, iter: i64) -> Request {
    Request::new()
        .read_only()
        .cmd(redis::cmd("BF.SCANDUMP").arg(key).arg(iter).clone())
}

/// Whether BF.SCANDUMP failed because the key is gone.
fn is_not_found(e: &redis::RedisError) -> bool {
    e.to_string().to_ascii_lowercase().contains("not found")
}

impl MirrorCopy for DumpCopy {
    fn next(&mut self) -> CopyStep {
        if self.gone {
            return CopyStep::Gone;
        }
        match (self.iter, self.chain.take()) {
            (0, Some(chain)) => CopyStep::Done(Box::new(ChainBits(chain))),
            (iter, chain) => {
                self.chain = chain;
                CopyStep::Send(scan_dump(&self.key, iter))
            }
        }
    }

    /// Takes a BF.SCANDUMP reply: `[next iterator, header or chunk]`.
    fn take(&mut self, reply: RedisResult<Value>) -> Result<()> {
        let reply = match reply {
            Ok(v) => v,
            Err(e) if is_not_found(&e) => {
                self.gone = true;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let bad = |v: &Value| crate::error::unexpected("BF.SCANDUMP", v);
        let (next, data) = match &reply {
            Value::Array(a) if a.len() == 2 => match (&a[0], &a[1]) {
                (Value::Int(i), Value::BulkString(b)) => (*i, b.as_slice()),
                (Value::Int(i), Value::Nil) => (*i, &[][..]),
                _ => return Err(bad(&reply)),
            },
            _ => return Err(bad(&reply)),
        };
        let chain = match self.chain.take() {
            None => Chain::from_header(data)?,
            Some(mut c) => {
                c.push_chunk(data)?;
                c
            }
        };
        if next == 0 && !chain.is_complete() {
            return Err(Error::UnexpectedReply(format!(
                "BF.SCANDUMP ended before the filter's {} bytes",
                chain.bytes()
            )));
        }
        self.chain = Some(chain);
        self.iter = next;
        Ok(())
    }
}
