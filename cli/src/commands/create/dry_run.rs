//! `create --dry-run`: the generations a filter would make, and whether
//! they fit the server's `maxmemory`; nothing is written.

use crate::shared::any::Sharded;
use crate::shared::fail::usage;
use crate::shared::output::Output;
use crate::shared::report::config_get;
use crate::show::values;
use rotabloom::config::FilterDef;
use rotabloom::connect::Connection;
use serde_json::json;
use std::io;

/// The exit code of `create --dry-run` when a filter would not fit.
pub const EXIT_WOULD_NOT_FIT: u8 = 1;

/// What the server has room for: `maxmemory` (0: no limit) and the
/// memory in use, when the server says.
struct Room {
    maxmemory: Option<u64>,
    used: Option<u64>,
}

impl Room {
    fn read(conn: &mut Connection) -> Room {
        let maxmemory = config_get(conn, "maxmemory").and_then(|v| v.parse().ok());
        let info: Option<String> = redis::cmd("INFO").arg("memory").query(conn).ok();
        let used = info.as_deref().and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("used_memory:"))
                .and_then(|v| v.trim().parse().ok())
        });
        Room { maxmemory, used }
    }

    /// Whether `bytes` more fit under maxmemory (`None`: unknown).
    fn fits(&self, bytes: u64) -> Option<bool> {
        match (self.maxmemory?, self.used) {
            (0, _) => Some(true),
            (max, Some(used)) => Some(used.saturating_add(bytes) <= max),
            (max, None) => Some(bytes <= max),
        }
    }

    fn describe(&self, bytes: u64) -> String {
        match (self.maxmemory, self.used, self.fits(bytes)) {
            (None, _, _) => "the server's maxmemory is unknown (CONFIG GET refused)".into(),
            (Some(0), _, _) => {
                "fits: the server has no maxmemory (only the machine's memory limits it)".into()
            }
            (Some(max), used, Some(fits)) => format!(
                "{}: maxmemory {}, {} in use, {} free",
                if fits { "fits" } else { "does not fit" },
                values::bytes(max),
                used.map_or("?".into(), values::bytes),
                used.map_or("?".into(), |u| values::bytes(max.saturating_sub(u))),
            ),
            (Some(_), _, None) => "unknown".into(),
        }
    }
}

/// `create --dry-run`: the generations `def` would make, and whether they
/// fit the server's `maxmemory`; nothing is written.
pub fn dry_run_one(
    conn: &mut Connection,
    def: &FilterDef,
    output: Output,
    out: &mut impl io::Write,
) -> anyhow::Result<u8> {
    let shards = def.shards();
    // Every shard is alike: one shard's sizing, then the whole's.
    let one = match shards {
        1 => def.spec().clone(),
        _ => def
            .shard(def.name())
            .map_err(|e| usage(e.message))?
            .spec()
            .clone(),
    };
    let gens = one.initial_generations();
    let per_shard: u64 = gens
        .iter()
        .map(|(l, _)| l.bytes())
        .fold(0, u64::saturating_add);
    let total = per_shard.saturating_mul(u64::from(shards));
    let exists = Sharded::open(conn, def.name()).is_ok();
    let room = Room::read(conn);
    // A sharded filter spreads over masters this connection does not
    // see one by one: its room is not judged from one server's.
    let fits = match shards {
        1 => room.fits(total),
        _ => None,
    };
    let mut text = match shards {
        1 => format!(
            "{}: would create {} ({}, {})",
            def.name(),
            def.kind(),
            values::count(gens.len() as u64, "generation"),
            values::bytes(total)
        ),
        _ => format!(
            "{}: would create {} ({}, each {} of {}; {} in all)",
            def.name(),
            def.kind(),
            values::count(u64::from(shards), "shard"),
            values::count(gens.len() as u64, "generation"),
            values::bytes(per_shard),
            values::bytes(total)
        ),
    };
    if exists {
        text.push_str(" (a filter of this name exists already: create would open it)");
    }
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::NOTHING);
    table.set_header(vec!["gen", "capacity", "bits", "hashes", "blocks", "bytes"]);
    for (i, (l, capacity)) in gens.iter().enumerate() {
        table.add_row(vec![
            i.to_string(),
            values::int(*capacity),
            values::int(l.bits),
            l.hashes.to_string(),
            l.blocks.to_string(),
            values::bytes(l.bytes()),
        ]);
    }
    for line in table.to_string().lines() {
        text.push_str(&format!("\n {}", line.trim_end()));
    }
    match shards {
        1 => text.push_str(&format!("\n  {}", room.describe(total))),
        _ => text.push_str(&format!(
            "\n  each shard: the table above, for {} items; room on each master is not checked",
            values::int(
                def.shard(def.name())
                    .ok()
                    .and_then(|d| d.params().capacity)
                    .unwrap_or(0)
            )
        )),
    }
    let mut doc = json!({
        "name": def.name(),
        "result": "dry_run",
        "kind": def.kind(),
        "exists": exists,
        "generations": gens.iter().map(|(l, capacity)| json!({
            "capacity": capacity,
            "bits": l.bits,
            "hashes": l.hashes,
            "blocks": l.blocks,
            "bytes": l.bytes(),
        })).collect::<Vec<_>>(),
        "bytes": total,
        "maxmemory": room.maxmemory,
        "used_memory": room.used,
        "fits": fits,
    });
    if shards > 1 {
        doc["shards"] = shards.into();
        doc["shard_bytes"] = per_shard.into();
    }
    output.print(out, &text, &doc, true)?;
    Ok(if fits == Some(false) && !exists {
        EXIT_WOULD_NOT_FIT
    } else {
        0
    })
}
