//! A filter as `status` and `metrics` see it: its report (of the whole and
//! each shard of a sharded filter), and what the server says about
//! durability and eviction.

use chrono::{DateTime, Utc};
use rotabloom::connect::Connection;
use rotabloom::{Info, Level, Warning, WarningCode};

/// What the server says about durability and eviction.
pub struct Server {
    /// The server's clock.
    pub now: DateTime<Utc>,
    pub maxmemory_policy: Option<String>,
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

    /// Whether the server keeps its data over a restart (`None`: it does
    /// not say).
    pub fn persistent(&self) -> Option<bool> {
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
    pub rotates: bool,
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
    /// The report of the sharded filter `name` from its shards'.
    pub fn sharded(name: &str, shards: Vec<ShardLine>) -> anyhow::Result<Report> {
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

    /// A metadata field, `None` when empty.
    pub fn field(&self, key: &str) -> Option<&str> {
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
}
