//! Latency of single sequential calls.

use crate::catalog::{all_targets, Spec, Target};
use crate::ctx::{e, Ctx};
use crate::stats::{quantile, Summary};
use crate::targets::{Op, R};
use redis::Connection;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Instant;

// Latency

/// The calls timed, in the report's order (`bf_add` only with RedisBloom).
pub const KINDS: [&str; 6] = [
    "ping",
    "check_and_insert",
    "raw_bitfield",
    "contains",
    "raw_bitfield_ro",
    "bf_add",
];

pub fn latency(ctx: &mut Ctx, with_rb: bool) -> R<Value> {
    let bloom = all_targets(false)
        .into_iter()
        .find(|t| matches!(t.spec, Spec::Bloom))
        .ok_or("no bloom target")?;
    let mut bloom = bloom;
    ctx.build_template(&mut bloom)?;
    ctx.flush1()?;
    let h = ctx.prepare(&bloom)?;
    let raw_t = Target::bare("raw-bitfield", Spec::Raw);
    let raw = ctx.prepare(&raw_t)?;
    let rb = if with_rb {
        Some(ctx.prepare(&Target::bare("redisbloom", Spec::RedisBloom))?)
    } else {
        None
    };
    let mut conn = ctx.client1.get_connection().map_err(e)?;
    let calls = ctx.cfg.latency_calls;
    let kinds: Vec<&str> = KINDS
        .iter()
        .copied()
        .filter(|k| rb.is_some() || *k != "bf_add")
        .collect();
    let mut per_kind: BTreeMap<&str, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let one = |conn: &mut Connection, kind: &str, item: &str| -> R<()> {
        match kind {
            "ping" => redis::cmd("PING")
                .query::<String>(conn)
                .map(|_| ())
                .map_err(e),
            "check_and_insert" => h.sync(conn, Op::Cai, &[item.to_string()]).map(|_| ()),
            "raw_bitfield" => raw.sync(conn, Op::Cai, &[item.to_string()]).map(|_| ()),
            "contains" => h.sync(conn, Op::Contains, &[item.to_string()]).map(|_| ()),
            "raw_bitfield_ro" => raw
                .sync(conn, Op::Contains, &[item.to_string()])
                .map(|_| ()),
            _ => rb
                .as_ref()
                .map(|r| r.sync(conn, Op::Cai, &[item.to_string()]).map(|_| ()))
                .unwrap_or(Ok(())),
        }
    };
    // Warm-up: connection, script cache, branch predictors.
    for kind in &kinds {
        for i in 0..500 {
            one(&mut conn, kind, &format!("https://example.com/warm/{i}"))?;
        }
    }
    for run in 0..ctx.cfg.runs {
        for kind in &kinds {
            let items: Vec<String> = (0..calls)
                .map(|i| format!("https://example.com/latency/{kind}/{run}/{i}"))
                .collect();
            let mut samples = Vec::with_capacity(calls);
            for it in &items {
                let t0 = Instant::now();
                one(&mut conn, kind, it)?;
                samples.push(t0.elapsed().as_secs_f64());
            }
            samples.sort_by(|a, b| a.total_cmp(b));
            let entry = per_kind.entry(*kind).or_default();
            entry.0.push(quantile(&samples, 0.50));
            entry.1.push(quantile(&samples, 0.99));
        }
    }
    let mut out = serde_json::Map::new();
    for (kind, (p50, p99)) in &per_kind {
        out.insert(
            kind.to_string(),
            json!({"p50_s": Summary::of(p50).json(), "p99_s": Summary::of(p99).json()}),
        );
    }
    let ping = Summary::of(&per_kind["ping"].0).median;
    let cai = Summary::of(&per_kind["check_and_insert"].0).median;
    out.insert("calls_per_run".into(), json!(calls));
    out.insert("cai_p50_over_ping_p50".into(), json!(cai / ping));
    Ok(Value::Object(out))
}
