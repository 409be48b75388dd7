//! `status` as a person reads it (text, colour on a terminal) and as
//! `--json` writes it: a filter's report, the server's.

use super::term::{self, paint};
use super::values::{bytes, count, duration, int, rate, rfc3339, rfc3339_checked, time_ms as time};
use crate::shared::report::{Report, Server};
use comfy_table::{presets, CellAlignment, Table};
use rotabloom::{GenerationInfo, Kind, Level, Warning};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A filter's report as text: a head line, then its generations or
/// shards, its next rotation and its warnings.
pub fn text(r: &Report, server: &Server) -> String {
    let i = &r.info;
    let mut out = String::new();
    let mut head = format!("{}: {}", paint(term::BOLD, &i.name), i.kind);
    // The kind's own parameters, as the settings table names them.
    let own = rotabloom::config::settings()
        .iter()
        .filter(|s| s.is_of_some_kinds() && s.accepts(i.kind));
    for setting in own {
        let (k, Some(v)) = (setting.key(), r.field(setting.key())) else {
            continue;
        };
        match setting.value_name() {
            None if v == "1" => {
                let _ = write!(head, ", {k}");
            }
            None => {}
            Some(_) if setting.is_size() => match v.parse::<u64>() {
                Ok(0) => {}
                Ok(n) => {
                    let _ = write!(head, ", {k} {}", bytes(n));
                }
                Err(_) => {
                    let _ = write!(head, ", {k} {v}");
                }
            },
            Some(_) => {
                let _ = write!(head, ", {k} {v}");
            }
        }
    }
    if !r.shards.is_empty() {
        let _ = write!(head, ", {} shards", r.shards.len());
    }
    let _ = writeln!(
        out,
        "{head}, epoch {}, created {}\n  {}, false-positive rate {}, memory {}",
        i.epoch,
        time(i.created_at_ms),
        count(i.count, "item"),
        rate(i.false_positive_rate),
        bytes(i.memory_bytes),
    );
    for line in generation_table(&i.generations)
        .lines()
        .filter(|_| r.shards.is_empty())
    {
        let _ = writeln!(out, " {}", line.trim_end());
    }
    for s in &r.shards {
        let r = &s.report.info;
        let _ = writeln!(
            out,
            "  shard {} {} on {}: {}, epoch {}, false-positive rate {}, memory {}",
            s.shard,
            r.name,
            s.master.as_deref().unwrap_or("this server"),
            count(r.count, "item"),
            r.epoch,
            rate(r.false_positive_rate),
            bytes(r.memory_bytes),
        );
    }
    if let Some(t) = r.next_rotation_at {
        let when = if t > server.now {
            format!("in {}", duration(t - server.now))
        } else {
            format!("due {} ago", duration(server.now - t))
        };
        let _ = writeln!(out, "  next rotation: {} ({when})", rfc3339(t));
    } else if r.rotates {
        let _ = writeln!(out, "  next rotation: none (no schedule; rotate by hand)");
    }
    for w in &r.warnings {
        let _ = writeln!(out, "  {}: {} [{}]", level_word(w.level), w.message, w.code);
    }
    out
}

/// A filter's report as a `status --json` value.
pub fn json(r: &Report) -> serde_json::Result<Value> {
    let i = &r.info;
    let skip = [
        "format",
        "kind",
        "uid",
        "epoch",
        "created_at",
        "next_seq",
        "gens",
    ];
    let parameters: BTreeMap<&str, Value> = i
        .fields
        .iter()
        .filter(|(k, _)| !k.starts_with("gen.") && !skip.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), typed(k, v)))
        .collect();
    let generations: Vec<GenerationJson> = i
        .generations
        .iter()
        .map(|g| GenerationJson {
            seq: g.seq,
            created_at: time(g.created_at_ms),
            items: g.count,
            fill: g.count as f64 / g.capacity.max(1) as f64,
            info: g,
        })
        .collect();
    serde_json::to_value(FilterJson {
        name: &i.name,
        kind: i.kind,
        epoch: i.epoch,
        created_at: time(i.created_at_ms),
        created_at_ms: i.created_at_ms,
        items: i.count,
        capacity: r.capacity(),
        false_positive_rate: i.false_positive_rate,
        memory_bytes: i.memory_bytes,
        next_rotation_at: r.next_rotation_at.and_then(rfc3339_checked),
        parameters,
        generations,
        warnings: &r.warnings,
        shards: (!r.shards.is_empty()).then_some(r.shards.len()),
        shard_filters: r
            .shards
            .iter()
            .map(|s| {
                let mut v = json(&s.report)?;
                if let Some(o) = v.as_object_mut() {
                    o.insert("shard".into(), s.shard.into());
                    o.insert("master".into(), json!(s.master));
                }
                Ok(v)
            })
            .collect::<serde_json::Result<_>>()?,
    })
}

/// A warning's level, in its colour.
pub fn level_word(level: Level) -> String {
    match level {
        Level::Error => paint(term::ERROR, "error"),
        Level::Warn => paint(term::WARNING, "warning"),
        _ => paint(term::NOTE, "note"),
    }
}

/// The generations, one row each, columns aligned.
fn generation_table(generations: &[GenerationInfo]) -> Table {
    let mut table = Table::new();
    table.load_style(presets::NOTHING);
    table.set_header(vec![
        "gen", "created", "items", "capacity", "fill", "bits set", "fp rate", "memory", "role",
    ]);
    for g in generations {
        let role = match (g.queried, g.written) {
            (true, true) => "read+write",
            (true, false) => "read",
            (false, true) => "write",
            (false, false) => "-",
        };
        table.add_row(vec![
            g.seq.to_string(),
            time(g.created_at_ms),
            int(g.count),
            int(g.capacity),
            format!("{:.1}%", g.count as f64 * 100.0 / g.capacity.max(1) as f64),
            format!("{:.1}%", g.fill_ratio * 100.0),
            rate(g.false_positive_rate),
            bytes(g.memory_bytes),
            role.to_string(),
        ]);
    }
    for i in [0, 2, 3, 4, 5, 6, 7] {
        if let Some(c) = table.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

/// A filter in `status --json` (schema in docs/CLI.md).
#[derive(Serialize)]
struct FilterJson<'a> {
    name: &'a str,
    kind: Kind,
    epoch: u64,
    created_at: String,
    created_at_ms: i64,
    items: u64,
    capacity: u64,
    false_positive_rate: f64,
    memory_bytes: u64,
    next_rotation_at: Option<String>,
    parameters: BTreeMap<&'a str, Value>,
    generations: Vec<GenerationJson<'a>>,
    warnings: &'a [Warning],
    /// A sharded filter's number of shards.
    #[serde(skip_serializing_if = "Option::is_none")]
    shards: Option<usize>,
    /// A sharded filter's shards, each as a filter with `shard` and
    /// `master`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    shard_filters: Vec<Value>,
}

/// A generation in `status --json`: the library's fields, and a few
/// more for people.
#[derive(Serialize)]
struct GenerationJson<'a> {
    seq: u64,
    created_at: String,
    items: u64,
    fill: f64,
    #[serde(flatten)]
    info: &'a GenerationInfo,
}

/// A metadata field as JSON: `lazy` a boolean, numbers numbers, the rest
/// strings (schedules, modes, backends).
fn typed(key: &str, value: &str) -> Value {
    if key == "lazy" {
        return Value::Bool(value == "1" || value == "true");
    }
    if let Ok(n) = value.parse::<u64>() {
        return n.into();
    }
    if let Ok(n) = value.parse::<i64>() {
        return n.into();
    }
    let numeric = value
        .bytes()
        .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
    match value.parse::<f64>() {
        Ok(f) if numeric && f.is_finite() => json!(f),
        _ => Value::String(value.to_string()),
    }
}

/// What `status --json` says of the server.
pub fn server_json(server: &Server) -> Value {
    json!({
        "time": rfc3339(server.now),
        "maxmemory_policy": server.maxmemory_policy,
        "persistence": server.persistent(),
    })
}
