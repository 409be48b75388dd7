//! Stores of a module that speaks the BF.* dialect (docs/FORMAT.md §6.6,
//! §6.7): one non-scaling module filter per generation, which places items
//! itself, counts them and refuses items past its capacity. What differs
//! between such modules is data ([`Bf`]): RedisBloom ([`redisbloom`]) and
//! valkey-bloom ([`valkey_bloom`]) are one value each. Everything the
//! dialect is, is here: its commands, its pieces of the scripts
//! (`dialect.lua`), its error words, its dump's chain ([`chain`], read by
//! the mirror's [`copy`]) and its allocation.

pub(crate) mod chain;
pub(crate) mod copy;
mod redisbloom;
mod valkey_bloom;

pub(super) use redisbloom::REDISBLOOM;
pub(super) use valkey_bloom::VALKEY_BLOOM;

use super::{Alloc, Held, ScriptShare, Store, TxCommand};
use crate::error::{Error, Result};
use crate::hashing::ItemHash;
use crate::items::Batch;
use crate::store::generation::{Backend, BlockCheck, Layout, Scheme};
use redis::Value;

/// The tag of the dialect in the scripts' arguments (`dialect.lua`).
const TAG: &str = "bf";

/// A module of the BF.* dialect, as what sets it apart.
#[derive(Debug)]
pub(super) struct Bf {
    pub scheme: Scheme,
    pub backend: Backend,
    /// What a server that lacks it must load, as an error says it.
    pub needs: &'static str,
    /// Whether it hands out its filters in chunks (`BF.SCANDUMP`), so a
    /// frozen generation can be mirrored in the client.
    pub scandump: bool,
    /// The largest filter it makes, in bytes, and the setting that says
    /// so: a bigger generation is refused at creation, not on the server.
    pub max_object: Option<(u64, &'static str)>,
}

/// `BF.INFO`'s size and items.
fn bf_info(v: &Value) -> (u64, u64) {
    let key = |k: &Value| match k {
        Value::SimpleString(k) => Some(k.clone()),
        Value::BulkString(k) => Some(String::from_utf8_lossy(k).into_owned()),
        _ => None,
    };
    let int = |v: &Value| match v {
        Value::Int(i) => u64::try_from(*i).unwrap_or(0),
        _ => 0,
    };
    let mut size = 0;
    let mut items = 0;
    let mut visit = |k: &Value, v: &Value| match key(k).as_deref() {
        Some("Size") => size = int(v),
        Some("Number of items inserted") => items = int(v),
        _ => {}
    };
    match v {
        Value::Array(a) => a.chunks(2).for_each(|p| {
            if let [k, v] = p {
                visit(k, v)
            }
        }),
        Value::Map(m) => m.iter().for_each(|(k, v)| visit(k, v)),
        _ => {}
    }
    (size, items)
}

/// Whether a module's error says that a non-scaling filter is full.
fn is_full(message: &str) -> bool {
    message.contains("non scaling filter is full")
}

impl Store for Bf {
    fn scheme(&self) -> Scheme {
        self.scheme
    }

    fn fits(&self, l: &Layout) -> bool {
        l.blocks == 1
    }

    // Its length means nothing: the key must exist, of a module's type.
    fn block_check(&self, _: &Layout) -> BlockCheck {
        BlockCheck::Exists
    }

    fn alloc(&self, l: &Layout, capacity: u64) -> Option<Alloc> {
        Some(Alloc::Reserve(self.zero(l, capacity)))
    }

    fn made_before_listed(&self) -> bool {
        true
    }

    // The rate in the shortest form that reads back exactly (`{:?}`, as
    // the metadata writes floats, docs/FORMAT.md §6.6).
    fn zero(&self, l: &Layout, capacity: u64) -> Vec<String> {
        let rate = l.error_rate_at(capacity);
        vec![TAG.into(), format!("{rate:?}"), capacity.to_string()]
    }

    fn caps_itself(&self) -> bool {
        true
    }

    // The module counts the items it added (BF.CARD), atomically with
    // them, and refuses the first one past capacity: the count rotabloom
    // would keep beside it could only lag behind.
    fn own_count(&self, key: &str) -> Option<redis::Cmd> {
        Some(redis::cmd("BF.CARD").arg(key).clone())
    }

    fn hashed(&self) -> bool {
        false
    }

    fn args_per_item(&self, _: &Layout) -> usize {
        1
    }

    fn script_share<'a>(&self, _: &Layout, batch: Batch<'a>, items: &[usize]) -> ScriptShare<'a> {
        ScriptShare::items(
            items
                .iter()
                .map(|&i| batch.item(i).unwrap_or_default())
                .collect(),
        )
    }

    fn tx_commands(
        &self,
        _: &Layout,
        key: &dyn Fn(u32) -> String,
        batch: Batch<'_>,
        items: &[(usize, usize)],
        set: bool,
        per_command: usize,
    ) -> Vec<TxCommand> {
        let key = key(0);
        items
            .chunks(per_command.max(1))
            .map(|chunk| {
                let mut cmd = if set {
                    let mut c = redis::cmd("BF.INSERT");
                    c.arg(&key).arg("NOCREATE").arg("ITEMS");
                    c
                } else {
                    let mut c = redis::cmd("BF.MEXISTS");
                    c.arg(&key);
                    c
                };
                for &(_, i) in chunk {
                    cmd.arg(batch.item(i).unwrap_or_default());
                }
                TxCommand {
                    cmd,
                    positions: chunk.iter().map(|(p, _)| *p).collect(),
                }
            })
            .collect()
    }

    fn tx_answers(&self, _: &Layout, set: bool, items: usize, reply: &Value) -> Result<Vec<bool>> {
        let Value::Array(bits) = reply else {
            return Err(crate::error::unexpected("BF.INSERT", reply));
        };
        let took = bits
            .iter()
            .take_while(|v| matches!(v, Value::Int(_)))
            .count();
        // A non-scaling module filter at its capacity ends its reply with
        // an error at the first item it refuses, having taken none after
        // it: the answers stop there (the caller reports the rest
        // refused). Anything else short is not a reply it gives.
        let refused = set
            && took < items
            && bits.len() == took + 1
            && matches!(bits.get(took), Some(Value::ServerError(e)) if is_full(e.details().unwrap_or_default()));
        if (took != items || bits.len() != items) && !refused {
            return Err(Error::UnexpectedReply(format!(
                "{}: {} replies, {took} of them answers, for {items} items",
                if set { "BF.INSERT" } else { "BF.MEXISTS" },
                bits.len()
            )));
        }
        // BF.INSERT: 1 added (not all set before); BF.MEXISTS: 1 present.
        Ok(bits
            .iter()
            .take(took)
            .map(|v| matches!(v, Value::Int(1)) != set)
            .collect())
    }

    fn info_commands(&self, _: &Layout, key: &str) -> Vec<(redis::Cmd, u64)> {
        vec![(redis::cmd("BF.INFO").arg(key).clone(), 0)]
    }

    fn info_block(
        &self,
        l: &Layout,
        block: u32,
        replies: &mut dyn Iterator<Item = redis::RedisResult<Value>>,
        out: &mut Held,
    ) -> Result<()> {
        match replies.next() {
            // BF.INFO of a key that does not exist.
            Some(Err(e)) if e.to_string().contains("not found") => {
                out.short.push((block, 0));
                out.gone = true;
            }
            Some(Ok(v)) => {
                let (size, items) = bf_info(&v);
                out.memory_bytes = out.memory_bytes.saturating_add(size);
                out.items = Some(out.items.unwrap_or(0).saturating_add(items));
                // No bitmap to count: estimate the bits set from the items.
                let m = l.bits as f64;
                let k = f64::from(l.hashes);
                out.set_bits = out
                    .set_bits
                    .saturating_add((m * (1.0 - (-k * items as f64 / m).exp())) as u64);
            }
            Some(Err(e)) => return Err(e.into()),
            None => return Err(Error::Internal("the reply to BF.INFO is missing".into())),
        }
        Ok(())
    }

    // Without BF.SCANDUMP the server answers for every generation.
    fn mirror(
        &self,
        _: &crate::store::generation::Generation,
        key: &dyn Fn(u32) -> String,
    ) -> Option<Box<dyn super::mirror::MirrorCopy>> {
        self.scandump
            .then(|| Box::new(copy::DumpCopy::new(key(0))) as Box<dyn super::mirror::MirrorCopy>)
    }

    fn locate(
        &self,
        _: &Layout,
        _: &ItemHash,
        _: Option<&[u8]>,
    ) -> Option<(u32, crate::store::generation::ItemPositions)> {
        None
    }

    fn backend(&self) -> Option<Backend> {
        Some(self.backend)
    }

    // One key, however big: the module splits nothing, and refuses what
    // passes its object limit.
    fn new_layout(&self, params: crate::params::BloomParams, _: u64) -> Result<Layout> {
        let l = Layout {
            bits: params.bits(),
            hashes: params.hashes(),
            blocks: 1,
            scheme: self.scheme,
        };
        match self.max_object {
            Some((max, setting)) if l.bytes() > max => Err(Error::InvalidParameter {
                name: "backend",
                reason: format!(
                    "{} keeps a generation in one object of at most {} MiB ({setting}), \
                     and this one needs {:.1} MiB: lower the capacity, raise the error \
                     rate, or use the bitmap backend",
                    self.backend.as_str(),
                    max >> 20,
                    l.bytes() as f64 / f64::from(1u32 << 20)
                ),
            }),
            _ => Ok(l),
        }
    }

    fn lacks(&self, e: &Error) -> Option<&'static str> {
        let t = match e {
            Error::Redis(r) => r.inner().to_string().to_ascii_lowercase(),
            _ => return None,
        };
        (t.contains("unknown command") && t.contains("bf.")).then_some(self.needs)
    }

    fn undumpable(&self) -> Option<&'static str> {
        Some(
            "its generations are module keys, which a dump cannot read in slices; \
             the module's own BF.SCANDUMP and BF.LOADCHUNK (RedisBloom) copy one key",
        )
    }

    fn presence_probe(&self, key: &str) -> Option<redis::Cmd> {
        Some(redis::cmd("BF.EXISTS").arg(key).arg("").clone())
    }
}

#[cfg(test)]
mod tests {
    use super::{Store, REDISBLOOM, VALKEY_BLOOM};
    use crate::params::BloomParams;

    #[test]
    fn the_two_modules_differ_only_in_their_data() {
        // 100 million items at 0.1%: 171 MiB in one object.
        let big = BloomParams::for_capacity(100_000_000, 0.001).unwrap();
        assert_eq!(REDISBLOOM.new_layout(big, 0).unwrap().blocks, 1);
        let e = VALKEY_BLOOM.new_layout(big, 0).unwrap_err();
        assert!(e.to_string().contains("128 MiB"), "{e}");
        let small = BloomParams::for_capacity(1_000, 0.01).unwrap();
        let l = VALKEY_BLOOM.new_layout(small, 0).unwrap();
        assert_eq!(l.scheme, crate::store::generation::Scheme::ValkeyBloom);
        let g = crate::store::generation::Generation {
            seq: 0,
            layout: l,
            capacity: 1_000,
            count: 0,
            created_at_ms: 0,
        };
        let key = |_| "k".to_string();
        assert!(REDISBLOOM.mirror(&g, &key).is_some());
        assert!(VALKEY_BLOOM.mirror(&g, &key).is_none(), "no BF.SCANDUMP");
        // The same dialect: the same words for a missing module.
        let unknown: crate::error::Error =
            crate::testkit::server_error("ERR unknown command 'BF.RESERVE'").into();
        assert!(VALKEY_BLOOM
            .lacks(&unknown)
            .unwrap()
            .contains("valkey-bloom"));
        assert!(REDISBLOOM.lacks(&unknown).unwrap().contains("RedisBloom"));
        let other: crate::error::Error = crate::testkit::server_error("ERR other").into();
        assert!(VALKEY_BLOOM.lacks(&other).is_none());
    }

    #[test]
    fn bf_info_reads_both_encodings() {
        use redis::Value;
        let a = Value::Array(vec![
            Value::SimpleString("Size".into()),
            Value::Int(100),
            Value::BulkString(b"Number of items inserted".to_vec()),
            Value::Int(7),
        ]);
        assert_eq!(super::bf_info(&a), (100, 7));
        let m = Value::Map(vec![(Value::SimpleString("Size".into()), Value::Int(-1))]);
        assert_eq!(super::bf_info(&m), (0, 0));
    }
}
