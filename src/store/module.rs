//! A RedisBloom generation (docs/FORMAT.md §6.6): one non-scaling module
//! filter per generation, which places items itself and refuses items past
//! its capacity. Needs the RedisBloom module (or a compatible one with
//! `BF.RESERVE`, `BF.INSERT`, `BF.MEXISTS`, `BF.INFO`, `BF.SCANDUMP`).

use super::{Alloc, Held, ScriptShare, Store, TxCommand};
use crate::error::{Error, Result};
use crate::generation::{BlockCheck, Layout, Scheme};
use crate::hashing::ItemHash;
use crate::items::Batch;
use redis::Value;

#[derive(Debug)]
pub(super) struct RedisBloom;

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

impl Store for RedisBloom {
    fn scheme(&self) -> Scheme {
        Scheme::RedisBloom
    }

    fn fits(&self, l: &Layout) -> bool {
        l.blocks == 1
    }

    // Its length means nothing: the key must exist, of a module's type.
    fn block_check(&self, _: &Layout) -> BlockCheck {
        BlockCheck::Exists
    }

    fn alloc(&self, l: &Layout, capacity: u64) -> Option<Alloc> {
        Some(Alloc::Module {
            error_rate: l.error_rate_at(capacity),
            capacity,
        })
    }

    fn made_before_listed(&self) -> bool {
        true
    }

    fn zero(&self, l: &Layout, capacity: u64) -> Vec<String> {
        vec![
            "bf".into(),
            crate::metadata::fmt_f64(l.error_rate_at(capacity)),
            capacity.to_string(),
        ]
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

    fn dumpable(&self) -> bool {
        false
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

    fn mirror(
        &self,
        _: &crate::generation::Generation,
        key: &dyn Fn(u32) -> String,
    ) -> Option<Box<dyn super::mirror::MirrorCopy>> {
        Some(Box::new(super::mirror::chain::DumpCopy::new(key(0))))
    }

    fn locate(
        &self,
        _: &Layout,
        _: &ItemHash,
        _: Option<&[u8]>,
    ) -> Option<(u32, crate::generation::ItemPositions)> {
        None
    }

    fn backend(&self) -> Option<crate::generation::Backend> {
        Some(crate::generation::Backend::RedisBloom)
    }

    // One key, however big: the module splits nothing.
    fn new_layout(&self, params: crate::params::BloomParams, _: u64) -> Layout {
        Layout {
            bits: params.bits(),
            hashes: params.hashes(),
            blocks: 1,
            scheme: Scheme::RedisBloom,
        }
    }

    fn presence_probe(&self, key: &str) -> Option<redis::Cmd> {
        Some(redis::cmd("BF.EXISTS").arg(key).arg("").clone())
    }
}

#[cfg(test)]
mod tests {
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
