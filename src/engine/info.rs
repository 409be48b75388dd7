//! A filter's state at a glance: load, then BITCOUNT and STRLEN (or
//! BF.INFO) of every block.

use super::load::LoadMachine;
use super::Core;
use crate::error::{Error, Result};
use crate::exec::{Machine, Poll, Replies, Request};
use crate::info::{GenerationInfo, Info};
use crate::params;
use crate::view::{Role, View};
use redis::Value;
use std::sync::Arc;

enum State {
    Load(LoadMachine),
    Bits(Arc<View>),
}

pub(crate) struct InfoMachine {
    core: Core,
    state: State,
}

impl InfoMachine {
    pub fn new(core: Core) -> InfoMachine {
        let load = LoadMachine::new(core.keys.clone(), core.accept);
        InfoMachine {
            core,
            state: State::Load(load),
        }
    }
}

/// (Size in bytes, number of items inserted) from a BF.INFO reply.
fn bf_info(v: &Value) -> (u64, u64) {
    let key = |k: &Value| match k {
        Value::SimpleString(k) => Some(k.clone()),
        Value::BulkString(k) => Some(String::from_utf8_lossy(k).into_owned()),
        _ => None,
    };
    let pairs: Vec<(String, u64)> = match v {
        Value::Array(a) => a
            .chunks(2)
            .filter_map(|p| match p {
                [k, Value::Int(n)] => Some((key(k)?, u64::try_from(*n).ok()?)),
                _ => None,
            })
            .collect(),
        Value::Map(m) => m
            .iter()
            .filter_map(|(k, n)| match n {
                Value::Int(n) => Some((key(k)?, u64::try_from(*n).ok()?)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, n)| *n)
            .unwrap_or(0)
    };
    (get("Size"), get("Number of items inserted"))
}

fn int(r: Option<redis::RedisResult<Value>>, what: &str) -> Result<u64> {
    match r.ok_or_else(|| Error::Internal(format!("the reply to {what} is missing")))?? {
        Value::Int(i) => Ok(u64::try_from(i).unwrap_or(0)),
        v => Err(crate::proto::unexpected(what, &v)),
    }
}

fn request(core: &Core, view: &View) -> Request {
    let mut req = Request::new();
    for g in &view.gens {
        for b in 0..g.layout.blocks {
            let key = core.keys.block(&view.uid, g.seq, b);
            if g.layout.scheme.is_module() {
                req.push(redis::cmd("BF.INFO").arg(&key).clone(), None);
            } else {
                req.push(redis::cmd("BITCOUNT").arg(&key).clone(), None);
                req.push(redis::cmd("STRLEN").arg(&key).clone(), None);
            }
        }
    }
    req
}

fn decode(view: &View, replies: Replies) -> Result<Info> {
    let mut replies = replies.into_iter();
    let mut generations = Vec::new();
    let mut miss = 1.0;
    for (i, g) in view.gens.iter().enumerate() {
        let mut set_bits = 0u64;
        let mut memory_bytes = 0u64;
        if g.layout.scheme.is_module() {
            let v = replies
                .next()
                .ok_or_else(|| Error::Internal("the reply to BF.INFO is missing".into()))??;
            let (size, items) = bf_info(&v);
            memory_bytes = size;
            // No bitmap to count: estimate the bits set from the items.
            let m = g.layout.bits as f64;
            let k = f64::from(g.layout.hashes);
            set_bits = (m * (1.0 - (-k * items as f64 / m).exp())) as u64;
        } else {
            for _ in 0..g.layout.blocks {
                set_bits = set_bits.saturating_add(int(replies.next(), "BITCOUNT")?);
                memory_bytes = memory_bytes.saturating_add(int(replies.next(), "STRLEN")?);
            }
        }
        let role = view.roles.get(i).copied();
        let queried = matches!(role, Some(Role::Query | Role::Decide));
        let written = matches!(role, Some(Role::Decide | Role::Write));
        let fpr = params::current_false_positive_rate(g.layout.bits, g.layout.hashes, set_bits);
        if queried {
            miss *= 1.0 - fpr;
        }
        generations.push(GenerationInfo {
            seq: g.seq,
            bits: g.layout.bits,
            hashes: g.layout.hashes,
            blocks: g.layout.blocks,
            capacity: g.capacity,
            count: g.count,
            created_at_ms: g.created_at_ms,
            set_bits,
            fill_ratio: set_bits as f64 / g.layout.bits as f64,
            false_positive_rate: fpr,
            memory_bytes,
            queried,
            written,
        });
    }
    Ok(Info {
        name: view.name.clone(),
        kind: view.kind,
        epoch: view.epoch,
        created_at_ms: view.created_at_ms,
        count: view.count(),
        memory_bytes: generations.iter().map(|g| g.memory_bytes).sum(),
        generations,
        false_positive_rate: 1.0 - miss,
        fields: view.fields.lossy(),
    })
}

impl Machine for InfoMachine {
    type Output = Info;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Info>> {
        match &mut self.state {
            State::Load(load) => match load.step(replies)? {
                Poll::Send(req) => Ok(Poll::Send(req)),
                Poll::Ready(view) => {
                    let view = self.core.publish(view)?;
                    let req = request(&self.core, &view);
                    self.state = State::Bits(view);
                    Ok(Poll::Send(req))
                }
            },
            State::Bits(view) => decode(view, replies.unwrap_or_default()).map(Poll::Ready),
        }
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
