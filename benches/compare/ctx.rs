//! The bench's server, clients and runtime, and each target's starting state.

use crate::catalog::{mode_slug, per_period, window_rate, Spec, Target};
use crate::cfg::Cfg;
use crate::targets::{Handle, R};
use redis::aio::MultiplexedConnection;
use redis::Connection;
use rotabloom::{BloomFilter, CircularFilter, ExpandingFilter, Layout, Mode};
use std::sync::Arc;
use std::time::Instant;

// The bench context: server, clients, runtime

pub struct Ctx {
    pub cfg: Cfg,
    /// Working database (1); `c0` is on the template database (0).
    pub client1: redis::Client,
    pub url1: String,
    pub c0: Connection,
    pub c1: Connection,
    pub rt: tokio::runtime::Runtime,
    pub raw_layout: Layout,
    pub items: Arc<Vec<String>>,
    pub warmup: Vec<String>,
}

pub fn e<T: std::fmt::Display>(x: T) -> String {
    x.to_string()
}

impl Ctx {
    pub fn flush1(&mut self) -> R<()> {
        redis::cmd("FLUSHDB")
            .arg("SYNC")
            .query::<()>(&mut self.c1)
            .map_err(e)
    }

    pub fn raw_keys(&self) -> Vec<String> {
        (0..self.raw_layout.blocks)
            .map(|b| format!("raw:{{bench}}:{b}"))
            .collect()
    }

    pub fn rb_keys(spec: &Spec) -> Vec<String> {
        match spec {
            Spec::RedisBloom => vec!["rb:bloom".into()],
            Spec::RbWindow { n, mode } => (0..*n)
                .map(|i| format!("rb:w{n}:{}:{i}", mode_slug(*mode)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Builds the template of a rotabloom filter in database 0.
    pub fn build_template(&mut self, t: &mut Target) -> R<()> {
        let cfg = &self.cfg;
        let c0 = &mut self.c0;
        match &t.spec {
            Spec::Bloom => {
                BloomFilter::builder(&t.name)
                    .capacity(cfg.capacity)
                    .error_rate(cfg.p)
                    .create_or_open(c0)
                    .map_err(e)?;
            }
            Spec::Expanding => {
                let f = ExpandingFilter::builder(&t.name)
                    .capacity(cfg.exp_n0)
                    .error_rate(cfg.p)
                    .create_or_open(c0)
                    .map_err(e)?;
                let start = Instant::now();
                prefill(&f, c0, 0, cfg.exp_prefill)?;
                let gens = f.generations();
                eprintln!(
                    "  expanding: pre-filled {} items in {:.1}s -> {} generations ({} expansions)",
                    cfg.exp_prefill,
                    start.elapsed().as_secs_f64(),
                    gens.len(),
                    gens.len().saturating_sub(1)
                );
            }
            Spec::Circular { n, mode } => {
                CircularFilter::builder(&t.name)
                    .generations(*n)
                    .mode(*mode)
                    .capacity(per_period(cfg, *n))
                    .error_rate(cfg.p)
                    .create_or_open(c0)
                    .map_err(e)?;
            }
            _ => return Ok(()),
        }
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("rotabloom:{{{}}}:*", t.name))
            .query(c0)
            .map_err(e)?;
        // Keys with a time to live (a round's reservations, which lapse on
        // their own) are no part of the filter's state: copied later they
        // may be gone.
        let mut lasting = Vec::with_capacity(keys.len());
        for k in keys {
            let ttl: i64 = redis::cmd("PTTL").arg(&k).query(c0).map_err(e)?;
            if ttl == -1 {
                lasting.push(k);
            }
        }
        lasting.sort();
        t.template_keys = lasting;
        Ok(())
    }

    /// Puts `t` into database 1 in its starting state (without flushing
    /// anything else) and returns a fresh handle on it.
    pub fn prepare(&mut self, t: &Target) -> R<Handle> {
        match &t.spec {
            Spec::Bloom | Spec::Expanding | Spec::Circular { .. } => {
                let mut pipe = redis::pipe();
                for k in &t.template_keys {
                    pipe.cmd("COPY")
                        .arg(k)
                        .arg(k)
                        .arg("DB")
                        .arg(1)
                        .arg("REPLACE");
                }
                let copied: Vec<i64> = pipe.query(&mut self.c0).map_err(e)?;
                if copied.iter().any(|&c| c != 1) {
                    return Err(format!("COPY of {} failed: {copied:?}", t.name));
                }
                let c1 = &mut self.c1;
                // Frozen generations are mirrored in the client (issue 6,
                // part 3); the mirror is filled here, before timing.
                Ok(match &t.spec {
                    Spec::Bloom => Handle::Bloom(BloomFilter::open(c1, &t.name).map_err(e)?),
                    Spec::Expanding => {
                        let f = ExpandingFilter::open(c1, &t.name)
                            .map_err(e)?
                            .with_frozen_cache(1 << 30);
                        f.contains(c1, "warm-up").map_err(e)?;
                        Handle::Expanding(f)
                    }
                    _ => {
                        let f = CircularFilter::open(c1, &t.name)
                            .map_err(e)?
                            .with_frozen_cache(1 << 30);
                        f.contains(c1, "warm-up").map_err(e)?;
                        Handle::Circular(f)
                    }
                })
            }
            Spec::BloomOnRb | Spec::ExpandingOnRb | Spec::CircularOnRb { .. } => {
                // Module keys cannot be COPYed: made afresh for every run.
                let cfg = &self.cfg;
                let c1 = &mut self.c1;
                let keys: Vec<String> = redis::cmd("KEYS")
                    .arg(format!("rotabloom:{{{}}}:*", t.name))
                    .query(c1)
                    .map_err(e)?;
                if !keys.is_empty() {
                    redis::cmd("DEL").arg(&keys).query::<()>(c1).map_err(e)?;
                }
                let rb = rotabloom::Backend::RedisBloom;
                Ok(match t.spec {
                    Spec::CircularOnRb { n, mode } => {
                        CircularFilter::builder(&t.name)
                            .generations(n)
                            .mode(mode)
                            .capacity(per_period(cfg, n))
                            .error_rate(cfg.p)
                            .backend(rb)
                            .create_or_open(c1)
                            .map_err(e)?;
                        let f = CircularFilter::open(c1, &t.name)
                            .map_err(e)?
                            .with_frozen_cache(1 << 30);
                        f.contains(c1, "warm-up").map_err(e)?;
                        Handle::Circular(f)
                    }
                    Spec::ExpandingOnRb => {
                        // Small generations, so that making it afresh for
                        // every run stays quick: n0, then 2, 4 and 8 n0.
                        let n0 = cfg.exp_n0.min(10_000);
                        let f = ExpandingFilter::builder(&t.name)
                            .capacity(n0)
                            .error_rate(cfg.p)
                            .backend(rb)
                            .create_or_open(c1)
                            .map_err(e)?;
                        prefill(&f, c1, 0, (n0 as usize) * 12)?;
                        let f = ExpandingFilter::open(c1, &t.name)
                            .map_err(e)?
                            .with_frozen_cache(1 << 30);
                        f.contains(c1, "warm-up").map_err(e)?;
                        if f.generations().len() < 4 {
                            return Err(format!(
                                "{}: {} generations, not 4",
                                t.name,
                                f.generations().len()
                            ));
                        }
                        Handle::Expanding(f)
                    }
                    _ => Handle::Bloom(
                        BloomFilter::builder(&t.name)
                            .capacity(cfg.capacity)
                            .error_rate(cfg.p)
                            .backend(rb)
                            .create_or_open(c1)
                            .map_err(e)?,
                    ),
                })
            }
            Spec::Raw => {
                let keys = self.raw_keys();
                let bytes = self.raw_layout.block_bits().div_ceil(8);
                for k in &keys {
                    redis::cmd("SETRANGE")
                        .arg(k)
                        .arg(bytes - 1)
                        .arg(&b"\0"[..])
                        .query::<i64>(&mut self.c1)
                        .map_err(e)?;
                }
                Ok(Handle::Raw {
                    keys: Arc::new(keys),
                    layout: self.raw_layout,
                })
            }
            Spec::RedisBloom | Spec::RbWindow { .. } => {
                let keys = Self::rb_keys(&t.spec);
                // Sized as the circular filter's generations.
                let (rate, cap) = match t.spec {
                    Spec::RbWindow {
                        n,
                        mode: Mode::InsertNewestQueryAll,
                    } => (window_rate(self.cfg.p, n), per_period(&self.cfg, n)),
                    Spec::RbWindow {
                        n,
                        mode: Mode::InsertAllQueryOldest,
                    } => (self.cfg.p, per_period(&self.cfg, n) * u64::from(n)),
                    _ => (self.cfg.p, self.cfg.capacity),
                };
                for k in &keys {
                    redis::cmd("BF.RESERVE")
                        .arg(k)
                        .arg(rate)
                        .arg(cap)
                        .arg("NONSCALING")
                        .query::<()>(&mut self.c1)
                        .map_err(e)?;
                }
                Ok(Handle::RedisBloom {
                    keys: Arc::new(keys),
                    query_oldest: matches!(
                        t.spec,
                        Spec::RbWindow {
                            mode: Mode::InsertAllQueryOldest,
                            ..
                        }
                    ),
                })
            }
        }
    }

    /// Flushes database 1 and prepares `t` there.
    pub fn reset(&mut self, t: &Target) -> R<Handle> {
        self.flush1()?;
        self.prepare(t)
    }

    pub fn sync_conns(&self, n: usize) -> R<Vec<Connection>> {
        (0..n)
            .map(|_| self.client1.get_connection().map_err(e))
            .collect()
    }

    pub fn async_conn(&self) -> R<MultiplexedConnection> {
        let cfg = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        self.rt
            .block_on(
                self.client1
                    .get_multiplexed_async_connection_with_config(&cfg),
            )
            .map_err(e)
    }
}

/// Inserts the items `prefill/from..to`, 10,000 per call.
pub fn prefill(f: &ExpandingFilter, c: &mut Connection, mut from: usize, to: usize) -> R<()> {
    while from < to {
        let end = (from + 10_000).min(to);
        let chunk: Vec<String> = (from..end)
            .map(|i| format!("https://example.com/prefill/{i}"))
            .collect();
        f.insert_many(c, &chunk).map_err(e)?;
        from = end;
    }
    Ok(())
}
