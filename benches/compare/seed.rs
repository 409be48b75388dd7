//! The seeds' package, measured by scripts/bench/seed_bench.py.

use crate::ctx::{e, Ctx};
use crate::targets::R;
use serde_json::Value;
use std::process::Command;

// The seeds' package

pub fn seed_bench(ctx: &mut Ctx) -> R<Value> {
    let (Some(py), Some(script)) = (ctx.cfg.python.clone(), ctx.cfg.seed_script.clone()) else {
        return Err("no --python / --seed-script: seeds' package not measured".into());
    };
    ctx.flush1()?;
    let out = Command::new(&py)
        .arg(&script)
        .args(["--url", &ctx.url1])
        .args(["--items", &ctx.cfg.seed_items.to_string()])
        .args(["--runs", &ctx.cfg.runs.to_string()])
        .output()
        .map_err(|er| format!("cannot run {}: {er}", py.display()))?;
    if !out.status.success() {
        return Err(format!(
            "seed_bench.py failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| format!("no JSON from seed_bench.py: {text}"))?;
    let v: Value = serde_json::from_str(line).map_err(e)?;
    if let Some(er) = v.get("error") {
        return Err(format!("seed_bench.py: {er}"));
    }
    ctx.flush1()?;
    Ok(v)
}

pub fn nums(v: &Value, field: &str) -> Vec<f64> {
    v.get(field)
        .and_then(|a| a.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
        .unwrap_or_default()
}
