//! What benches/compare/ measures: rotabloom's three filter kinds and the
//! baselines (raw pipelined BITFIELD without the library, RedisBloom, and a
//! window of RedisBloom keys built by hand), behind one interface: run one
//! batch of one operation, sync or async, and count the positive answers.
#![allow(dead_code)]

use redis::aio::MultiplexedConnection;
use redis::Connection;
use rotabloom::{BloomFilter, CircularFilter, ExpandingFilter, ItemHash, Layout};
use std::sync::Arc;

pub type R<T> = Result<T, String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A data operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Insert,
    Contains,
    Cai,
}

impl Op {
    pub const ALL: [Op; 3] = [Op::Insert, Op::Contains, Op::Cai];

    pub fn name(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::Contains => "contains",
            Op::Cai => "check_and_insert",
        }
    }

    pub fn short(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::Contains => "contains",
            Op::Cai => "cai",
        }
    }
}

/// Blocking or async client API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Sync,
    Async,
}

impl Api {
    pub fn name(self) -> &'static str {
        match self {
            Api::Sync => "sync",
            Api::Async => "async",
        }
    }
}

/// A ready-to-use handle on one measured thing, in the working database.
/// Positive answers: `insert` = the write changed the filter, `contains` =
/// present, `check_and_insert` = new.
#[derive(Clone)]
pub enum Handle {
    Bloom(BloomFilter),
    Expanding(ExpandingFilter),
    Circular(CircularFilter),
    /// One `BITFIELD key SET u1 pos 1 ...` (k SETs; `BITFIELD_RO ... GET`
    /// for contains) per item, pipelined per batch; positions from
    /// rotabloom's format-1 hashing (MD5 halves, enhanced double hashing,
    /// per-item block), on the same block layout as the base filter.
    Raw {
        keys: Arc<Vec<String>>,
        layout: Layout,
    },
    /// RedisBloom keys, oldest first. One key: `BF.MADD` / `BF.MEXISTS`
    /// (`BF.ADD` / `BF.EXISTS` for single items). Several keys: a window
    /// built by hand, one pipeline per batch:
    ///
    /// * query-all (`query_oldest == false`): insert = `BF.MADD` on the
    ///   newest; contains = `BF.MEXISTS` on every key; check_and_insert =
    ///   `BF.MEXISTS` on every older key and `BF.MADD` on the newest (new =
    ///   in no older key and added to the newest; the newest also takes
    ///   items an older key holds, which only saves RedisBloom a second
    ///   round trip);
    /// * query-oldest: insert and check_and_insert = `BF.MADD` on every key
    ///   (new = added to the oldest); contains = `BF.MEXISTS` on the oldest.
    RedisBloom {
        keys: Arc<Vec<String>>,
        query_oldest: bool,
    },
}

macro_rules! with_filter {
    ($h:expr, $f:ident => $body:expr) => {
        match $h {
            Handle::Bloom($f) => $body,
            Handle::Expanding($f) => $body,
            Handle::Circular($f) => $body,
            _ => unreachable!(),
        }
    };
}

fn count(v: &[bool]) -> usize {
    v.iter().filter(|b| **b).count()
}

/// The BITFIELD command of one item.
pub fn raw_cmd(keys: &[String], layout: &Layout, op: Op, item: &str) -> redis::Cmd {
    let h = ItemHash::of(item);
    let block = h.block(layout.blocks) as usize;
    let ro = op == Op::Contains;
    let mut c = redis::cmd(if ro { "BITFIELD_RO" } else { "BITFIELD" });
    c.arg(&keys[block]);
    for p in h.positions(layout.block_bits(), layout.hashes) {
        if ro {
            c.arg("GET").arg("u1").arg(p);
        } else {
            c.arg("SET").arg("u1").arg(p).arg(1);
        }
    }
    c
}

fn raw_pipe(keys: &[String], layout: &Layout, op: Op, items: &[String]) -> redis::Pipeline {
    let mut p = redis::pipe();
    for it in items {
        p.add_command(raw_cmd(keys, layout, op, it));
    }
    p
}

/// Positive answers from the old bits BITFIELD returned for each item.
fn raw_count(op: Op, replies: &[Vec<i64>]) -> usize {
    replies
        .iter()
        .filter(|bits| match op {
            // contains: every bit set. insert / cai: some bit was 0 (new).
            Op::Contains => bits.iter().all(|&b| b == 1),
            _ => bits.contains(&0),
        })
        .count()
}

fn rb_pipe(keys: &[String], query_oldest: bool, op: Op, items: &[String]) -> redis::Pipeline {
    let mut p = redis::pipe();
    let (newest, older) = keys.split_last().expect("at least one key");
    let multi = |cmd: &str, key: &str| {
        let mut c = redis::cmd(cmd);
        c.arg(key);
        for it in items {
            c.arg(it.as_str());
        }
        c
    };
    if query_oldest {
        match op {
            Op::Contains => {
                p.add_command(multi("BF.MEXISTS", &keys[0]));
            }
            _ => {
                for k in keys.iter() {
                    p.add_command(multi("BF.MADD", k));
                }
            }
        }
        return p;
    }
    match op {
        Op::Insert => {
            p.add_command(multi("BF.MADD", newest));
        }
        Op::Contains => {
            for k in keys.iter() {
                p.add_command(multi("BF.MEXISTS", k));
            }
        }
        Op::Cai => {
            for k in older {
                p.add_command(multi("BF.MEXISTS", k));
            }
            p.add_command(multi("BF.MADD", newest));
        }
    }
    p
}

fn rb_count(op: Op, query_oldest: bool, n: usize, replies: &[Vec<i64>]) -> usize {
    if query_oldest {
        // The oldest key's reply decides, whatever the op.
        return (0..n).filter(|&i| replies[0][i] == 1).count();
    }
    (0..n)
        .filter(|&i| match op {
            Op::Insert => replies[0][i] == 1,
            Op::Contains => replies.iter().any(|r| r[i] == 1),
            Op::Cai => {
                let (added, older) = replies.split_last().expect("replies");
                added[i] == 1 && older.iter().all(|r| r[i] == 0)
            }
        })
        .count()
}

/// A single-key RedisBloom command for one item (`BF.ADD` / `BF.EXISTS`).
fn rb_single(key: &str, op: Op, item: &str) -> redis::Cmd {
    let mut c = redis::cmd(if op == Op::Contains {
        "BF.EXISTS"
    } else {
        "BF.ADD"
    });
    c.arg(key).arg(item);
    c
}

impl Handle {
    /// Runs `op` on one batch over a blocking connection.
    pub fn sync(&self, conn: &mut Connection, op: Op, items: &[String]) -> R<usize> {
        match self {
            Handle::Raw { keys, layout } => {
                if items.len() == 1 {
                    let v: Vec<i64> = raw_cmd(keys, layout, op, &items[0])
                        .query(conn)
                        .map_err(err)?;
                    return Ok(raw_count(op, &[v]));
                }
                let v: Vec<Vec<i64>> =
                    raw_pipe(keys, layout, op, items).query(conn).map_err(err)?;
                Ok(raw_count(op, &v))
            }
            Handle::RedisBloom { keys, query_oldest } => {
                if items.len() == 1 && keys.len() == 1 {
                    let v: i64 = rb_single(&keys[0], op, &items[0])
                        .query(conn)
                        .map_err(err)?;
                    return Ok(usize::from(v == 1));
                }
                let v: Vec<Vec<i64>> = rb_pipe(keys, *query_oldest, op, items)
                    .query(conn)
                    .map_err(err)?;
                Ok(rb_count(op, *query_oldest, items.len(), &v))
            }
            _ => with_filter!(self, f => {
                if items.len() == 1 {
                    let it = &items[0];
                    let r = match op {
                        Op::Insert => f.insert(conn, it),
                        Op::Contains => f.contains(conn, it),
                        Op::Cai => f.check_and_insert(conn, it),
                    }
                    .map_err(err)?;
                    Ok(usize::from(r))
                } else {
                    let v = match op {
                        Op::Insert => f.insert_many(conn, items.iter()),
                        Op::Contains => f.contains_many(conn, items.iter()),
                        Op::Cai => f.check_and_insert_many(conn, items.iter()),
                    }
                    .map_err(err)?;
                    Ok(count(&v))
                }
            }),
        }
    }

    /// Runs `op` on one batch over an async (multiplexed) connection.
    pub async fn run_async(
        &self,
        conn: &mut MultiplexedConnection,
        op: Op,
        items: &[String],
    ) -> R<usize> {
        match self {
            Handle::Raw { keys, layout } => {
                if items.len() == 1 {
                    let v: Vec<i64> = raw_cmd(keys, layout, op, &items[0])
                        .query_async(conn)
                        .await
                        .map_err(err)?;
                    return Ok(raw_count(op, &[v]));
                }
                let v: Vec<Vec<i64>> = raw_pipe(keys, layout, op, items)
                    .query_async(conn)
                    .await
                    .map_err(err)?;
                Ok(raw_count(op, &v))
            }
            Handle::RedisBloom { keys, query_oldest } => {
                if items.len() == 1 && keys.len() == 1 {
                    let v: i64 = rb_single(&keys[0], op, &items[0])
                        .query_async(conn)
                        .await
                        .map_err(err)?;
                    return Ok(usize::from(v == 1));
                }
                let v: Vec<Vec<i64>> = rb_pipe(keys, *query_oldest, op, items)
                    .query_async(conn)
                    .await
                    .map_err(err)?;
                Ok(rb_count(op, *query_oldest, items.len(), &v))
            }
            _ => with_filter!(self, f => {
                if items.len() == 1 {
                    let it = &items[0];
                    let r = match op {
                        Op::Insert => f.insert_async(conn, it).await,
                        Op::Contains => f.contains_async(conn, it).await,
                        Op::Cai => f.check_and_insert_async(conn, it).await,
                    }
                    .map_err(err)?;
                    Ok(usize::from(r))
                } else {
                    let v = match op {
                        Op::Insert => f.insert_many_async(conn, items.iter()).await,
                        Op::Contains => f.contains_many_async(conn, items.iter()).await,
                        Op::Cai => f.check_and_insert_many_async(conn, items.iter()).await,
                    }
                    .map_err(err)?;
                    Ok(count(&v))
                }
            }),
        }
    }
}
