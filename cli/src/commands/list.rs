//! `rotabloom list`: the filters in the database, one name per line.

use crate::run::open;
use crate::shared::ctx::Ctx;
use crate::shared::fail::is_redis;
use crate::show::errors::report;
use serde_json::json;
use std::io::{self, Write};

pub fn run(ctx: &Ctx, json: bool) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    let names = open::names_or_all(&mut conn, Vec::new())?;
    let mut out = io::stdout().lock();
    if !json {
        // Names only, for `xargs` and loops; `status` has the rest.
        for name in &names.list {
            writeln!(out, "{name}")?;
        }
        out.flush()?;
        return Ok(0);
    }
    let mut worst = 0;
    let mut filters = Vec::new();
    for name in &names.list {
        match open::open_sharded(&mut conn, name).and_then(|f| Ok((f.kind()?, f))) {
            Ok((kind, f)) => {
                let mut doc = json!({ "name": name, "kind": kind });
                if f.is_sharded() {
                    doc["shards"] = f.shard_count().into();
                }
                filters.push(doc)
            }
            // Dropped since the SCAN: not listed.
            Err(e) if names.vanished(&e) => {}
            Err(e) if is_redis(&e) => return Err(e),
            Err(e) => {
                let (text, code) = report(&e, ctx.secrets());
                worst = worst.max(code);
                filters.push(json!({ "name": name, "error": text }));
            }
        }
    }
    writeln!(out, "{}", json!({ "filters": filters }))?;
    out.flush()?;
    Ok(worst)
}
