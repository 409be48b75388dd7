//! Fixtures for the unit tests: views of each kind built from canned
//! metadata, and canned replies.

use crate::keys::{FilterName, Keys};
use crate::metadata::Fields;
use crate::view::{Accept, View};
use std::collections::BTreeMap;

pub(crate) const ALL: &[crate::view::Codec] = &[
    crate::bloom::CODEC,
    crate::expanding::CODEC,
    crate::circular::CODEC,
];

pub(crate) fn keys(name: &str) -> Keys {
    Keys::new(FilterName::new(name).expect("a valid test name"))
}

/// The metadata of a filter of `kind` with `gens` generations of 1000 bits
/// (epoch `epoch`), as `HGETALL` would return it.
pub(crate) fn fields(kind: &str, gens: u64, epoch: u64) -> Fields {
    let mut raw: BTreeMap<String, String> = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        raw.insert(k.to_string(), v);
    };
    put("format", "1".into());
    put("kind", kind.into());
    put("uid", "0123456789abcdef".into());
    put("epoch", epoch.to_string());
    put("created_at", "1700000000000".into());
    let first = epoch;
    put("next_seq", (first + gens).to_string());
    put(
        "gens",
        (first..first + gens)
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(","),
    );
    for s in first..first + gens {
        for (f, v) in [
            ("bits", "1000"),
            ("hashes", "3"),
            ("blocks", "1"),
            ("scheme", "md5-edh"),
            ("capacity", "100"),
            ("count", "0"),
            ("created_at", "1700000000000"),
        ] {
            put(&format!("gen.{s}.{f}"), v.into());
        }
    }
    match kind {
        "bloom" => {
            put("sizing", "capacity".into());
            put("capacity", "100".into());
            put("error_rate", "0.01".into());
        }
        "expanding" => {
            for (f, v) in [
                ("capacity", "100"),
                ("error_rate", "0.01"),
                ("growth", "2.0"),
                ("tightening", "0.5"),
                ("max_generations", "32"),
                ("max_bytes", "0"),
                ("max_bits", "137438953472"),
                ("max_block_bits", "67108864"),
            ] {
                put(f, v.into());
            }
        }
        _ => {
            for (f, v) in [
                ("generations", gens.to_string().as_str()),
                ("mode", "insert-newest-query-all"),
                ("capacity", "100"),
                ("error_rate", "0.01"),
                ("schedule", ""),
                ("lazy", "0"),
                ("period", ""),
                ("due_at", ""),
                ("max_bits", "137438953472"),
                ("max_block_bits", "67108864"),
            ] {
                put(f, v.to_string());
            }
        }
    }
    Fields {
        name: "t".into(),
        raw: raw.into_iter().map(|(k, v)| (k, v.into_bytes())).collect(),
    }
}

pub(crate) fn view_of(kind: &str, gens: u64) -> View {
    View::decode(fields(kind, gens, 0), None, "fence", Accept::Any(ALL)).expect("a valid test view")
}

/// A view of `kind` whose `gens` generations are RedisBloom keys.
pub(crate) fn module_view_of(kind: &str, gens: u64) -> View {
    let mut f = fields(kind, gens, 0);
    for s in 0..gens {
        f.raw
            .insert(format!("gen.{s}.scheme"), b"redisbloom".to_vec());
    }
    f.raw.insert("backend".into(), b"redisbloom".to_vec());
    View::decode(f, None, "fence", Accept::Any(ALL)).expect("a valid test view")
}

pub(crate) fn view_at(kind: &str, gens: u64, epoch: u64) -> View {
    View::decode(fields(kind, gens, epoch), None, "fence", Accept::Any(ALL))
        .expect("a valid test view")
}

/// A server error reply, as the connection would give it.
pub(crate) fn server_error(text: &str) -> redis::RedisError {
    match error_value(text) {
        redis::Value::ServerError(e) => e.into(),
        other => panic!("not an error reply: {other:?}"),
    }
}

/// An error reply as it comes inside an array (`EXEC`'s results).
pub(crate) fn error_value(text: &str) -> redis::Value {
    match redis::parse_redis_value(format!("-{text}\r\n").as_bytes()) {
        Ok(v @ redis::Value::ServerError(_)) => v,
        other => panic!("not an error reply: {other:?}"),
    }
}
