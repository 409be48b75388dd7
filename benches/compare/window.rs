//! Windows' memory against the literature: bits per window item of
//! `CircularFilter` in both modes, N = 2, 4 and 12, p = 0.01 and 0.001,
//! read from real filters (every generation made, by N - 1 rotations), with
//! each one's forgetting precision; beside the Age-Partitioned Bloom
//! Filter's published figures and a two-generation sliding filter's.
//!
//! A window here is what a user asks for: every item remembered for at
//! least W. A circular filter of N generations rotated every P remembers
//! an item between (N-1)P and NP (README, "The window"), so W = (N-1)P and
//! an item may still answer present up to N/(N-1) W. Its bits are divided
//! by the items of W at full load, (N-1) periods' worth ("per W item"),
//! and, as the throughput tables do, by the N periods' worth it holds.

use crate::ctx::{e, Ctx};
use crate::targets::R;
use rotabloom::{CircularFilter, Mode};
use serde_json::{json, Value};

/// Items per period of the measured filters: the figures are per item, and
/// do not depend on it beyond rounding.
const PER_PERIOD: u64 = 100_000;

/// The dcrd APBF's measured sizes (its README, "Memory Usage": 10,000
/// items take 27.19 KiB at 1% and 40.34 KiB at 0.1%), in bits per item
/// guaranteed; its rule of thumb is 1.3 n (-log10 p) bytes.
fn apbf_bits(p: f64) -> f64 {
    if (p - 0.01).abs() < 1e-12 {
        27.19 * 1024.0 * 8.0 / 10_000.0
    } else if (p - 0.001).abs() < 1e-12 {
        40.34 * 1024.0 * 8.0 / 10_000.0
    } else {
        1.3 * 8.0 * -p.log10()
    }
}

pub fn window_memory(ctx: &mut Ctx) -> R<Value> {
    let mut rows = Vec::new();
    for p in [0.01, 0.001] {
        for mode in [Mode::InsertNewestQueryAll, Mode::InsertAllQueryOldest] {
            for n in [2u32, 4, 12] {
                ctx.flush1()?;
                let f = CircularFilter::builder("window")
                    .generations(n)
                    .mode(mode)
                    .capacity(PER_PERIOD)
                    .error_rate(p)
                    .create_or_open(&mut ctx.c1)
                    .map_err(e)?;
                for _ in 1..n {
                    f.rotate(&mut ctx.c1).map_err(e)?;
                }
                let info = f.info(&mut ctx.c1).map_err(e)?;
                let bits: u64 = info.generations.iter().map(|g| g.bits).sum();
                let held = (PER_PERIOD * u64::from(n)) as f64;
                let window = (PER_PERIOD * u64::from(n - 1)) as f64;
                let row = json!({
                    "filter": format!("rotabloom circular, {}", mode.as_str()),
                    "n": n,
                    "p": p,
                    "generations": info.generations.len(),
                    "bits": bits,
                    "memory_bytes": info.memory_bytes,
                    "bits_per_window_item": bits as f64 / window,
                    "bits_per_held_item": bits as f64 / held,
                    "remembered": format!("W to {:.3} W", f64::from(n) / f64::from(n - 1)),
                    "overshoot": 1.0 / f64::from(n - 1),
                });
                eprintln!(
                    "  window memory: {:<24} N = {n:>2}, p = {p}: {:>6.1} bits per W item ({:.1} per item held); remembered W to {:.3} W",
                    mode.as_str(),
                    row["bits_per_window_item"].as_f64().unwrap_or(f64::NAN),
                    row["bits_per_held_item"].as_f64().unwrap_or(f64::NAN),
                    f64::from(n) / f64::from(n - 1),
                );
                rows.push(row);
            }
        }
        rows.push(json!({
            "filter": "Age-Partitioned Bloom Filter (Shtul, Baquero, Almeida 2020; dcrd's measured sizes)",
            "p": p,
            "bits_per_window_item": apbf_bits(p),
            "remembered": "W to (1 + 1/(l+1)) W, in items, not time (slices of W/(l+1) items; l from p)",
        }));
    }
    let _ = ctx.flush1();
    Ok(json!({
        "per_period": PER_PERIOD,
        "rows": rows,
        "two_generation_sliding": "an item remembered between W/2 and W is the circular filter with N = 2 (W its guaranteed half): the N = 2 insert-newest-query-all rows",
    }))
}
