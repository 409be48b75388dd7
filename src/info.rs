//! A filter's state at a glance: parameters, fill, error rates, memory.

use crate::engine::{decode_meta, hgetall, roles, take_one, Core, Role};
use crate::error::{Error, Result};
use crate::exec::{Machine, Poll, Replies, Request};
use crate::metadata::{Kind, Meta};
use crate::params;
use redis::Value;

/// One generation's state.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GenerationInfo {
    /// Sequence number (unique within the filter instance).
    pub seq: u64,
    /// Bits (m).
    pub bits: u64,
    /// Hash functions (k).
    pub hashes: u32,
    /// Redis strings holding it.
    pub blocks: u32,
    /// Items it was sized for.
    pub capacity: u64,
    /// Distinct items inserted.
    pub count: u64,
    /// Creation time, ms since the Unix epoch (server clock).
    pub created_at_ms: i64,
    /// Bits set (BITCOUNT).
    pub set_bits: u64,
    /// `set_bits / bits`.
    pub fill_ratio: f64,
    /// False-positive rate now, from the fill ratio: `fill^k`.
    pub false_positive_rate: f64,
    /// Bytes Redis holds for it now (STRLEN of its blocks).
    pub memory_bytes: u64,
    /// Whether queries consult it.
    pub queried: bool,
    /// Whether writes go to it.
    pub written: bool,
}

/// A filter's state; see [`BloomFilter::info`](crate::BloomFilter::info).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Info {
    /// Filter name.
    pub name: String,
    /// Kind.
    pub kind: Kind,
    /// Structural changes so far (rotations of a circular filter,
    /// expansions of an expanding one).
    pub epoch: u64,
    /// Creation time, ms since the Unix epoch (server clock).
    pub created_at_ms: i64,
    /// Distinct insertions over all generations.
    pub count: u64,
    /// Generations, oldest first.
    pub generations: Vec<GenerationInfo>,
    /// False-positive rate of a query now: `1 - Π(1 - f_i)` over the
    /// generations a query consults.
    pub false_positive_rate: f64,
    /// Bytes Redis holds for all generations.
    pub memory_bytes: u64,
    /// Every metadata field, as stored.
    pub fields: std::collections::BTreeMap<String, String>,
}

enum State {
    Idle,
    Meta,
    Bits(Meta),
}

pub(crate) struct InfoMachine {
    core: Core,
    state: State,
}

impl InfoMachine {
    pub fn new(core: Core) -> InfoMachine {
        InfoMachine {
            core,
            state: State::Idle,
        }
    }
}

/// (Size in bytes, number of items inserted) from a BF.INFO reply.
fn bf_info(v: &Value) -> (u64, u64) {
    let pairs: Vec<(String, u64)> = match v {
        Value::Array(a) => a
            .chunks(2)
            .filter_map(|p| match p {
                [Value::SimpleString(k), Value::Int(n)] => Some((k.clone(), *n as u64)),
                [Value::BulkString(k), Value::Int(n)] => {
                    Some((String::from_utf8_lossy(k).into_owned(), *n as u64))
                }
                _ => None,
            })
            .collect(),
        Value::Map(m) => m
            .iter()
            .filter_map(|(k, n)| match (k, n) {
                (Value::SimpleString(k), Value::Int(n)) => Some((k.clone(), *n as u64)),
                (Value::BulkString(k), Value::Int(n)) => {
                    Some((String::from_utf8_lossy(k).into_owned(), *n as u64))
                }
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

fn int(r: redis::RedisResult<Value>) -> Result<u64> {
    match r? {
        Value::Int(i) => Ok(u64::try_from(i).unwrap_or(0)),
        v => Err(Error::UnexpectedReply(format!(
            "expected an integer, got {v:?}"
        ))),
    }
}

impl Machine for InfoMachine {
    type Output = Info;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Info>> {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Idle => {
                self.state = State::Meta;
                Ok(Poll::Send(hgetall(&self.core.keys)))
            }
            State::Meta => {
                let meta = decode_meta(self.core.name(), take_one(replies)?)?;
                self.core.accept(meta.clone())?;
                let mut req = Request::new();
                for g in &meta.gens {
                    for b in 0..g.layout.blocks {
                        let key = self.core.keys.block(&meta.uid, g.seq, b);
                        if g.layout.scheme.is_module() {
                            req.push(redis::cmd("BF.INFO").arg(&key).clone(), None);
                        } else {
                            req.push(redis::cmd("BITCOUNT").arg(&key).clone(), None);
                            req.push(redis::cmd("STRLEN").arg(&key).clone(), None);
                        }
                    }
                }
                self.state = State::Bits(meta);
                Ok(Poll::Send(req))
            }
            State::Bits(meta) => {
                let mut replies = replies.unwrap_or_default().into_iter();
                let roles = roles(&meta)?;
                let mut generations = Vec::new();
                let mut miss = 1.0;
                for (i, g) in meta.gens.iter().enumerate() {
                    let mut set_bits = 0;
                    let mut memory_bytes = 0;
                    if g.layout.scheme.is_module() {
                        let v = replies
                            .next()
                            .ok_or_else(|| Error::UnexpectedReply("BF.INFO missing".into()))??;
                        let (size, items) = bf_info(&v);
                        memory_bytes = size;
                        // No bitmap to count: estimate the bits set from the items.
                        let m = g.layout.bits as f64;
                        let k = f64::from(g.layout.hashes);
                        set_bits = (m * (1.0 - (-k * items as f64 / m).exp())) as u64;
                    }
                    for _ in 0..g.layout.blocks * u32::from(!g.layout.scheme.is_module()) {
                        let b = replies
                            .next()
                            .ok_or_else(|| Error::UnexpectedReply("BITCOUNT missing".into()))?;
                        let s = replies
                            .next()
                            .ok_or_else(|| Error::UnexpectedReply("STRLEN missing".into()))?;
                        set_bits += int(b)?;
                        memory_bytes += int(s)?;
                    }
                    let role = roles.iter().find(|(j, _)| *j == i).map(|(_, r)| *r);
                    let queried = matches!(role, Some(Role::Query | Role::Decide));
                    let written = matches!(role, Some(Role::Decide | Role::Write));
                    let fpr = params::current_false_positive_rate(
                        g.layout.bits,
                        g.layout.hashes,
                        set_bits,
                    );
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
                Ok(Poll::Ready(Info {
                    name: meta.name.clone(),
                    kind: meta.kind,
                    epoch: meta.epoch,
                    created_at_ms: meta.created_at_ms,
                    count: meta.count(),
                    memory_bytes: generations.iter().map(|g| g.memory_bytes).sum(),
                    generations,
                    false_positive_rate: 1.0 - miss,
                    fields: meta.fields.clone(),
                }))
            }
        }
    }
}
