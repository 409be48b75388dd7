//! `rotabloom status`: filters, generations and warnings, as text or JSON.

use crate::any::{self, AnyFilter};
use crate::connect::{self, Ctx, Names};
use crate::errors::{is_redis, report};
use crate::show::{bytes, count, duration, int, rate, rfc3339, rfc3339_checked, time_ms as time};
use crate::term::{self, paint};
use chrono::{DateTime, Utc};
use comfy_table::{presets, CellAlignment, Table};
use rotabloom::connect::Connection;
use rotabloom::{Error, GenerationInfo, Info, Kind, Level, Warning, WarningCode};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

/// The exit code of `status --check` when a filter has an error-level
/// warning.
pub const EXIT_UNHEALTHY: u8 = 4;

/// A filter that could not be read: its name, the error line already
/// printed, and whether a key had the wrong type.
pub struct Failed {
    pub name: String,
    pub error: String,
    pub wrong_type: bool,
    /// A shard of a sharded filter is missing: unhealthy, for `--check`.
    pub missing_shard: bool,
}

/// A filter as `status` and `metrics` see it: its report, or why it
/// cannot be read.
pub enum Seen {
    Report(Box<Report>),
    Failed(Failed),
}

/// Hands `each` the report of every filter in `names` in turn, or what
/// keeps it from being read (a named one that does not exist, corrupt,
/// another format: also reported on standard error); returns the worst
/// exit code among those. One filter at a time, so that what a caller
/// keeps of each (a line of output) is all it holds: 10,000 filters are
/// not 10,000 reports in memory. A filter found in the database and
/// dropped before it was read is left out without a word. Losing Redis
/// ends it.
pub fn each(
    ctx: &Ctx,
    conn: &mut Connection,
    names: &Names,
    server: &Server,
    mut each: impl FnMut(Seen) -> anyhow::Result<()>,
) -> anyhow::Result<u8> {
    let mut worst = 0;
    for name in &names.list {
        let report_of =
            connect::open_sharded_unconverged(conn, name).and_then(|f| report_of(conn, &f, server));
        match report_of {
            Ok(r) => each(Seen::Report(Box::new(r)))?,
            Err(e) if names.vanished(&e) => {}
            Err(e) if is_redis(&e) => return Err(e),
            Err(e) => {
                let (error, code) = report(&e, ctx.secrets());
                worst = worst.max(code);
                let is = |f: fn(&Error) -> bool| {
                    e.chain().any(|c| c.downcast_ref::<Error>().is_some_and(f))
                };
                each(Seen::Failed(Failed {
                    name: name.clone(),
                    error,
                    wrong_type: is(|e| matches!(e, Error::WrongType { .. })),
                    missing_shard: is(|e| matches!(e, Error::ShardMissing { .. })),
                }))?;
            }
        }
    }
    Ok(worst)
}

/// The report of `f`: of the filter, or of the whole and each shard.
fn report_of(
    conn: &mut Connection,
    f: &connect::Sharded,
    server: &Server,
) -> anyhow::Result<Report> {
    let infos = f.info(conn)?;
    let masters = match f.is_sharded() {
        true => f.masters(conn)?,
        false => vec![None],
    };
    let mut lines: Vec<ShardLine> = Vec::with_capacity(infos.len());
    for (j, (info, master)) in infos.into_iter().zip(masters).enumerate() {
        let Some(shard) = f.shard(j as u32) else {
            break;
        };
        lines.push(ShardLine {
            shard: j as u32,
            master,
            report: Report::new(shard, info, server),
        });
    }
    if !f.is_sharded() {
        if let Some(one) = lines.pop() {
            return Ok(one.report);
        }
    }
    let mut report = Report::sharded(f.name(), lines)?;
    report.warnings.extend(crate::disagree::warnings(conn, f)?);
    Ok(report)
}

pub fn run(ctx: &Ctx, names: Vec<String>, json: bool, check: bool) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    let names = connect::names_or_all(&mut conn, names)?;
    let server = Server::read(&mut conn)?;
    let warnings = server.warnings();
    let mut unhealthy = warnings.iter().any(|w| w.level == Level::Error);
    let (mut missing_shard, mut any) = (false, false);
    // Whether an element of the JSON `filters` array was written.
    let mut written = false;
    // The filters that cannot be read come after the others, as one
    // small value each.
    let mut failed: Vec<Value> = Vec::new();
    // Colour on a terminal only (and as --color says).
    let mut out = anstream::stdout().lock();
    if json {
        // One object on one line, as every command's JSON (`jq .` to
        // read), written a filter at a time; its keys in serde_json's
        // order, as one `json!` would give them.
        out.write_all(b"{\"filters\":[")?;
    }
    let worst = each(ctx, &mut conn, &names, &server, |seen| {
        match seen {
            Seen::Report(r) => {
                unhealthy |= r.warnings.iter().any(|w| w.level == Level::Error);
                if json {
                    if written {
                        out.write_all(b",")?;
                    }
                    written = true;
                    serde_json::to_writer(&mut out, &r.json()?)?;
                } else {
                    out.write_all(r.text(&server).as_bytes())?;
                }
            }
            Seen::Failed(f) => {
                missing_shard |= f.missing_shard;
                let warnings: Vec<Warning> = f
                    .wrong_type
                    .then(|| Warning::new(WarningCode::WrongKeyType, Level::Error, f.error.clone()))
                    .into_iter()
                    .collect();
                failed.push(json!({ "name": f.name, "error": f.error, "warnings": warnings }));
            }
        }
        any = true;
        Ok(())
    })?;
    if json {
        for f in &failed {
            if written {
                out.write_all(b",")?;
            }
            written = true;
            serde_json::to_writer(&mut out, f)?;
        }
        writeln!(
            out,
            "],\"server\":{},\"warnings\":{}}}",
            server_json(&server),
            serde_json::to_string(&warnings)?
        )?;
    } else {
        if !any {
            writeln!(out, "no filters")?;
        }
        for w in &warnings {
            writeln!(
                out,
                "{}: server: {} [{}]",
                level_word(w.level),
                w.message,
                w.code
            )?;
        }
    }
    out.flush()?;
    if check && ((worst == 0 && unhealthy) || missing_shard) {
        return Ok(EXIT_UNHEALTHY);
    }
    Ok(worst)
}

fn level_word(level: Level) -> String {
    match level {
        Level::Error => paint(term::ERROR, "error"),
        Level::Warn => paint(term::WARNING, "warning"),
        _ => paint(term::NOTE, "note"),
    }
}

/// What the server says about durability and eviction.
pub struct Server {
    /// The server's clock.
    pub now: DateTime<Utc>,
    maxmemory_policy: Option<String>,
    save: Option<String>,
    appendonly: Option<String>,
}

/// A server setting, or `None` where CONFIG is disabled or renamed.
pub fn config_get(conn: &mut Connection, key: &str) -> Option<String> {
    // CONFIG may be disabled or renamed (managed Redis): then say nothing.
    let pairs: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(key).query(conn).ok()?;
    pairs.get(1).cloned()
}

impl Server {
    pub fn read(conn: &mut Connection) -> rotabloom::Result<Server> {
        let now = rotabloom::server_time(conn)?;
        Ok(Server {
            now,
            maxmemory_policy: config_get(conn, "maxmemory-policy"),
            save: config_get(conn, "save"),
            appendonly: config_get(conn, "appendonly"),
        })
    }

    fn persistent(&self) -> Option<bool> {
        match (&self.save, &self.appendonly) {
            (Some(save), Some(aof)) => Some(!save.trim().is_empty() || aof == "yes"),
            _ => None,
        }
    }

    pub fn warnings(&self) -> Vec<Warning> {
        let mut w = Vec::new();
        if let Some(p) = &self.maxmemory_policy {
            if p != "noeviction" && !p.starts_with("volatile-") {
                w.push(Warning::new(
                    WarningCode::EvictionPolicy,
                    Level::Warn,
                    format!(
                        "maxmemory-policy is {p}: Redis may evict filter keys when it runs out of memory \
                         (use noeviction, or a volatile-* policy: filter keys have no TTL)"
                    ),
                ));
            }
        }
        if self.persistence_off() {
            w.push(Warning::new(
                WarningCode::NoPersistence,
                Level::Warn,
                "no persistence (save is empty and appendonly is no): every filter is lost when Redis restarts",
            ));
        }
        w
    }

    fn persistence_off(&self) -> bool {
        self.persistent() == Some(false)
    }
}

/// One filter's report.
pub struct Report {
    /// A sharded filter's: the totals over its shards (count, memory, the
    /// worst false-positive rate), no generations.
    pub info: Info,
    /// Whether the filter rotates (by hand when it has no schedule).
    rotates: bool,
    pub next_rotation_at: Option<DateTime<Utc>>,
    /// The library's warnings, then an overdue rotation (a sharded
    /// filter's: its shards', each saying which).
    pub warnings: Vec<Warning>,
    /// A sharded filter's shards; empty for an unsharded filter.
    pub shards: Vec<ShardLine>,
}

/// One shard of a sharded filter in its report.
pub struct ShardLine {
    pub shard: u32,
    /// `host:port` of the master serving it, in a cluster.
    pub master: Option<String>,
    pub report: Report,
}

impl Report {
    fn new(filter: &AnyFilter, info: Info, server: &Server) -> Report {
        let next_rotation_at = any::next_rotation_at(filter);
        let mut warnings = info.warnings.clone();
        if let Some(due) = next_rotation_at {
            if due + chrono::Duration::minutes(5) < server.now {
                // A lazy filter rotates on its next operation.
                let lazy = info.fields.get("lazy").is_some_and(|v| v == "1");
                warnings.push(Warning::new(
                    WarningCode::RotationOverdue,
                    if lazy { Level::Warn } else { Level::Error },
                    format!(
                        "rotation overdue since {} ({} ago): run `rotabloom rotate --if-due` from cron, or set lazy = true",
                        rfc3339(due),
                        duration(server.now - due)
                    ),
                ));
            }
        }
        Report {
            info,
            rotates: filter.circular().is_some(),
            next_rotation_at,
            warnings,
            shards: Vec::new(),
        }
    }

    /// The report of the sharded filter `name` from its shards'.
    fn sharded(name: &str, shards: Vec<ShardLine>) -> anyhow::Result<Report> {
        let Some(first) = shards.first() else {
            anyhow::bail!("sharded filter {name:?} has no shards");
        };
        let mut info = first.report.info.clone();
        info.name = name.to_string();
        info.generations = Vec::new();
        info.warnings = Vec::new();
        info.count = shards
            .iter()
            .map(|s| s.report.info.count)
            .fold(0, u64::saturating_add);
        info.memory_bytes = shards
            .iter()
            .map(|s| s.report.info.memory_bytes)
            .fold(0, u64::saturating_add);
        // Each item is checked in one shard: the worst shard bounds them.
        info.false_positive_rate = shards
            .iter()
            .map(|s| s.report.info.false_positive_rate)
            .fold(0.0, f64::max);
        let warnings = shards
            .iter()
            .flat_map(|s| {
                s.report.warnings.iter().map(move |w| {
                    let mut w = w.clone();
                    w.message =
                        format!("shard {} ({}): {}", s.shard, s.report.info.name, w.message);
                    w
                })
            })
            .collect();
        let next_rotation_at = shards
            .iter()
            .filter_map(|s| s.report.next_rotation_at)
            .min();
        Ok(Report {
            info,
            rotates: shards.iter().any(|s| s.report.rotates),
            next_rotation_at,
            warnings,
            shards,
        })
    }

    fn field(&self, key: &str) -> Option<&str> {
        self.info
            .fields
            .get(key)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    pub fn capacity(&self) -> u64 {
        if !self.shards.is_empty() {
            return self
                .shards
                .iter()
                .map(|s| s.report.capacity())
                .fold(0, u64::saturating_add);
        }
        self.info
            .generations
            .iter()
            .fold(0u64, |a, g| a.saturating_add(g.capacity))
    }

    fn text(&self, server: &Server) -> String {
        let i = &self.info;
        let mut out = String::new();
        let mut head = format!("{}: {}", paint(term::BOLD, &i.name), i.kind);
        // The kind's own parameters, as the settings table names them.
        let own = rotabloom::config::settings()
            .iter()
            .filter(|s| s.is_of_some_kinds() && s.accepts(i.kind));
        for setting in own {
            let (k, Some(v)) = (setting.key(), self.field(setting.key())) else {
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
        if !self.shards.is_empty() {
            let _ = write!(head, ", {} shards", self.shards.len());
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
            .filter(|_| self.shards.is_empty())
        {
            let _ = writeln!(out, " {}", line.trim_end());
        }
        for s in &self.shards {
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
        if let Some(t) = self.next_rotation_at {
            let when = if t > server.now {
                format!("in {}", duration(t - server.now))
            } else {
                format!("due {} ago", duration(server.now - t))
            };
            let _ = writeln!(out, "  next rotation: {} ({when})", rfc3339(t));
        } else if self.rotates {
            let _ = writeln!(out, "  next rotation: none (no schedule; rotate by hand)");
        }
        for w in &self.warnings {
            let _ = writeln!(out, "  {}: {} [{}]", level_word(w.level), w.message, w.code);
        }
        out
    }

    fn json(&self) -> serde_json::Result<Value> {
        let i = &self.info;
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
            capacity: self.capacity(),
            false_positive_rate: i.false_positive_rate,
            memory_bytes: i.memory_bytes,
            next_rotation_at: self.next_rotation_at.and_then(rfc3339_checked),
            parameters,
            generations,
            warnings: &self.warnings,
            shards: (!self.shards.is_empty()).then_some(self.shards.len()),
            shard_filters: self
                .shards
                .iter()
                .map(|s| {
                    let mut v = s.report.json()?;
                    if let Some(o) = v.as_object_mut() {
                        o.insert("shard".into(), s.shard.into());
                        o.insert("master".into(), json!(s.master));
                    }
                    Ok(v)
                })
                .collect::<serde_json::Result<_>>()?,
        })
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

fn server_json(server: &Server) -> Value {
    json!({
        "time": rfc3339(server.now),
        "maxmemory_policy": server.maxmemory_policy,
        "persistence": server.persistent(),
    })
}
