//! Bits per item of every target, against the optimum.

use crate::catalog::{per_period, Spec, Target};
use crate::ctx::{e, Ctx};
use crate::targets::R;
use rotabloom::{BloomFilter, CircularFilter, ExpandingFilter, Mode};
use serde_json::{json, Value};
use std::collections::BTreeMap;

// Bits per item

pub fn bits_per_item(ctx: &mut Ctx, targets: &[Target]) -> Vec<Value> {
    let opt = rotabloom::optimal_bits_per_item(ctx.cfg.p);
    let mut out = Vec::new();
    let mut push = |name: &str, bits: f64, cap: f64, memory_bytes: f64, note: String| {
        let bpi = bits / cap;
        out.push(json!({
            "target": name,
            "bits": bits,
            "capacity": cap,
            "bits_per_item": bpi,
            "memory_bits_per_item": memory_bytes * 8.0 / cap,
            "optimum": opt,
            "vs_optimum": bpi / opt,
            "note": note,
        }));
    };
    for t in targets {
        let res: R<()> = (|| {
            match &t.spec {
                Spec::Bloom | Spec::Expanding | Spec::Circular { .. } => {
                    let c0 = &mut ctx.c0;
                    let info = match &t.spec {
                        Spec::Bloom => BloomFilter::open(c0, &t.name).and_then(|f| f.info(c0)),
                        Spec::Expanding => {
                            ExpandingFilter::open(c0, &t.name).and_then(|f| f.info(c0))
                        }
                        _ => CircularFilter::open(c0, &t.name).and_then(|f| f.info(c0)),
                    }
                    .map_err(e)?;
                    let bits: u64 = info.generations.iter().map(|g| g.bits).sum();
                    let gens = info.generations.len();
                    let (cap, note) = match &t.spec {
                        Spec::Circular { n, mode } => {
                            let window = per_period(&ctx.cfg, *n) * u64::from(*n);
                            (
                                window,
                                format!(
                                    "{n} generations; capacity = the window's items ({} per period x {n}); {}",
                                    per_period(&ctx.cfg, *n),
                                    match mode {
                                        Mode::InsertNewestQueryAll =>
                                            "each generation at p' = 1-(1-p)^(1/N)",
                                        Mode::InsertAllQueryOldest =>
                                            "every generation holds the whole window at p",
                                    }
                                ),
                            )
                        }
                        Spec::Expanding => (
                            info.generations.iter().map(|g| g.capacity).sum(),
                            format!(
                                "{gens} generations (n0 = {}, growth 2, tightening 1/2); capacity = sum over generations",
                                ctx.cfg.exp_n0
                            ),
                        ),
                        _ => (
                            info.generations.iter().map(|g| g.capacity).sum(),
                            format!("k = {}", info.generations[0].hashes),
                        ),
                    };
                    push(
                        &t.name,
                        bits as f64,
                        cap as f64,
                        info.memory_bytes as f64,
                        note,
                    );
                }
                Spec::Raw => {
                    let l = ctx.raw_layout;
                    push(
                        &t.name,
                        l.bits as f64,
                        ctx.cfg.capacity as f64,
                        l.bytes() as f64,
                        "the base filter's layout".into(),
                    );
                }
                // Module keys, as the "redisbloom" rows.
                Spec::BloomOnRb | Spec::ExpandingOnRb | Spec::CircularOnRb { .. } => {}
                Spec::RedisBloom | Spec::RbWindow { .. } => {
                    ctx.flush1()?;
                    ctx.prepare(t)?;
                    let mut size = 0.0;
                    let mut cap = 0.0;
                    for k in Ctx::rb_keys(&t.spec) {
                        let info: BTreeMap<String, redis::Value> = {
                            let flat: Vec<redis::Value> = redis::cmd("BF.INFO")
                                .arg(&k)
                                .query(&mut ctx.c1)
                                .map_err(e)?;
                            flat.chunks(2)
                                .filter_map(|kv| {
                                    let name: String =
                                        redis::from_redis_value(kv[0].clone()).ok()?;
                                    Some((name, kv.get(1)?.clone()))
                                })
                                .collect()
                        };
                        let num = |f: &str| -> f64 {
                            info.get(f)
                                .and_then(|v| redis::from_redis_value::<i64>(v.clone()).ok())
                                .unwrap_or(0) as f64
                        };
                        size += num("Size");
                        cap += num("Capacity");
                    }
                    let (cap, note) = match t.spec {
                        Spec::RbWindow { n, mode } => (
                            (per_period(&ctx.cfg, n) * u64::from(n)) as f64,
                            format!(
                                "BF.INFO Size (bytes, with headers) x 8 / the window's items ({} per period x {n}); {}",
                                per_period(&ctx.cfg, n),
                                match mode {
                                    Mode::InsertNewestQueryAll => "keys at p' = 1-(1-p)^(1/N)",
                                    Mode::InsertAllQueryOldest => "every key holds the whole window at p",
                                }
                            ),
                        ),
                        _ => (cap, "BF.INFO Size (bytes, with headers) x 8 / Capacity".into()),
                    };
                    push(&t.name, size * 8.0, cap, size, note);
                }
            }
            Ok(())
        })();
        if let Err(er) = res {
            eprintln!("  ! bits per item of {}: {er}", t.name);
        }
    }
    out
}
