//! Facts about the machine and the server, for the record.

use crate::harness;
use serde_json::{json, Value};

// Environment facts

pub fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

pub fn status_field(pid: &str, field: &str) -> String {
    read(&format!("/proc/{pid}/status"))
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!("{field}:"))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| "?".into())
}

pub fn info_field(info: &str, field: &str) -> String {
    info.lines()
        .find_map(|l| {
            l.strip_prefix(&format!("{field}:"))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// A reply as JSON (for MODULE LIST): strings, numbers, arrays, maps.
pub fn value_json(v: &redis::Value) -> Value {
    use redis::Value as V;
    match v {
        V::BulkString(b) => json!(String::from_utf8_lossy(b)),
        V::SimpleString(t) => json!(t),
        V::Int(i) => json!(i),
        V::Double(d) => json!(d),
        V::Okay => json!("OK"),
        V::Array(a) | V::Set(a) => {
            // RESP2 flat field/value lists (MODULE LIST entries) as objects.
            let keyed = a.len() % 2 == 0
                && a.iter()
                    .step_by(2)
                    .all(|k| matches!(k, V::BulkString(_) | V::SimpleString(_)));
            if keyed && !a.is_empty() {
                let mut m = serde_json::Map::new();
                for kv in a.chunks(2) {
                    let k = match value_json(&kv[0]) {
                        Value::String(k) => k,
                        other => other.to_string(),
                    };
                    m.insert(k, value_json(&kv[1]));
                }
                Value::Object(m)
            } else {
                Value::Array(a.iter().map(value_json).collect())
            }
        }
        V::Map(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let k = match value_json(k) {
                        Value::String(k) => k,
                        other => other.to_string(),
                    };
                    (k, value_json(v))
                })
                .collect(),
        ),
        V::Nil => Value::Null,
        other => json!(format!("{other:?}")),
    }
}

/// The 1, 5 and 15 minute load averages: other work on the machine makes
/// the numbers noisy.
pub fn loadavg() -> String {
    read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The redis-server binary as invoked: INFO's `executable` when it names a
/// file (it is relative to the server's directory when the binary was found
/// on PATH), else `$BENCH_REDIS_BIN`, else `redis-server` looked up on PATH.
pub fn server_binary(info_exe: &str) -> String {
    if std::path::Path::new(info_exe).is_file() {
        return info_exe.to_string();
    }
    if let Ok(b) = std::env::var("BENCH_REDIS_BIN") {
        if !b.is_empty() {
            return b;
        }
    }
    let name = harness::redis_server_bin();
    if name.components().count() > 1 {
        return name.display().to_string();
    }
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(&name))
                .find(|p| p.is_file())
        })
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| info_exe.to_string())
}

pub fn machine() -> Value {
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "?".into());
    let cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let mem_kb: u64 = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    json!({
        "cpu_model": model,
        "logical_cpus": cpus,
        "memory_gib": (mem_kb as f64 / 1048576.0 * 10.0).round() / 10.0,
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "client_cpus_allowed": status_field("self", "Cpus_allowed_list"),
        "loadavg_at_start": loadavg(),
    })
}
