//! Reading the TOML text: its raw structure, the `[defaults]` section,
//! and each filter section's keys put into [`FilterParams`] through the
//! settings table (where each key is written: `locate`).
//!
//! Filter sections are read as plain tables of spanned values rather than
//! typed structures, so that the table, not a struct mirroring it, decides
//! which keys exist and what type each takes.

use super::error::{ConfigError, Location};
use super::locate::{key_at, key_location};
use super::settings::{setting, settings, FilterParams};
use super::slot::Slot;
use super::url::{RedisSetting, RedisUrl};
use super::validate::Locations;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::{Spanned, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub defaults: Option<RawDefaults>,
    #[serde(default)]
    pub filter: BTreeMap<String, Spanned<RawFilter>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDefaults {
    redis_url: Option<Spanned<String>>,
    redis_url_env: Option<Spanned<String>>,
    cluster_nodes: Option<Spanned<Vec<String>>>,
    sentinels: Option<Spanned<Vec<String>>>,
    sentinel_master: Option<Spanned<String>>,
    tls: Option<Spanned<bool>>,
    tls_ca_file: Option<Spanned<String>>,
    tls_cert_file: Option<Spanned<String>>,
    tls_key_file: Option<Spanned<String>>,
    tls_insecure: Option<Spanned<bool>>,
    wait_replicas: Option<Spanned<i64>>,
    wait_timeout_ms: Option<Spanned<i64>>,
    when_full: Option<Spanned<String>>,
}

/// The `[defaults]` TLS keys, file names as written.
#[derive(Clone, Debug, Default)]
pub(super) struct RawTls {
    pub ca_file: Option<String>,
    pub cert_file: Option<String>,
    pub key_file: Option<String>,
    pub insecure: bool,
}

impl RawDefaults {
    /// `when_full`, validated; taken out of `self`.
    pub(super) fn take_when_full(
        &mut self,
        text: &str,
        file: &str,
    ) -> Result<Option<crate::full::WhenFull>, ConfigError> {
        let Some(w) = self.when_full.take() else {
            return Ok(None);
        };
        w.get_ref().parse().map(Some).map_err(|e| {
            let reason = match e {
                crate::error::Error::InvalidParameter { reason, .. } => reason,
                other => other.to_string(),
            };
            let loc = key_location(text, "when_full", &w.span());
            ConfigError::new(file, Some(loc), Some("defaults.when_full".into()), reason)
        })
    }

    /// `wait_replicas` and `wait_timeout_ms`, validated; taken out of
    /// `self`.
    pub(super) fn take_wait(
        &mut self,
        text: &str,
        file: &str,
    ) -> Result<Option<crate::wait::WaitReplicas>, ConfigError> {
        let replicas = self.wait_replicas.take();
        let timeout = self.wait_timeout_ms.take();
        let err = |span: std::ops::Range<usize>, key: &str, message: String| {
            let loc = key_location(text, key, &span);
            ConfigError::new(file, Some(loc), Some(format!("defaults.{key}")), message)
        };
        let Some(r) = replicas else {
            return match timeout {
                Some(t) => Err(err(
                    t.span(),
                    "wait_timeout_ms",
                    "wait_timeout_ms goes with wait_replicas".into(),
                )),
                None => Ok(None),
            };
        };
        let n = u32::try_from(*r.get_ref()).map_err(|_| {
            err(
                r.span(),
                "wait_replicas",
                format!("{} is not a number of replicas", r.get_ref()),
            )
        })?;
        let ms = match &timeout {
            Some(t) => u64::try_from(*t.get_ref()).map_err(|_| {
                err(
                    t.span(),
                    "wait_timeout_ms",
                    format!("{} is not a number of milliseconds", t.get_ref()),
                )
            })?,
            None => crate::wait::DEFAULT_WAIT_TIMEOUT.as_millis() as u64,
        };
        crate::wait::WaitReplicas::new(n, std::time::Duration::from_millis(ms))
            .map_err(|e| {
                let (span, key) = match (&e, &timeout) {
                    (
                        crate::error::Error::InvalidParameter {
                            name: "wait_timeout_ms",
                            ..
                        },
                        Some(t),
                    ) => (t.span(), "wait_timeout_ms"),
                    _ => (r.span(), "wait_replicas"),
                };
                let reason = match e {
                    crate::error::Error::InvalidParameter { reason, .. } => reason,
                    other => other.to_string(),
                };
                err(span, key, reason)
            })
            .map(Some)
    }

    /// The TLS keys; taken out of `self`.
    pub(super) fn take_tls(&mut self) -> RawTls {
        RawTls {
            ca_file: self.tls_ca_file.take().map(Spanned::into_inner),
            cert_file: self.tls_cert_file.take().map(Spanned::into_inner),
            key_file: self.tls_key_file.take().map(Spanned::into_inner),
            insecure: self.tls_insecure.take().is_some_and(Spanned::into_inner),
        }
    }
}

/// A filter section: each key and its value, with where they are.
pub(super) type RawFilter = BTreeMap<Spanned<String>, Spanned<Value>>;

/// Where the configuration says Redis is, where it says so, and the key.
pub(super) type RedisAt = (RedisSetting, Location, &'static str);

/// Parses the TOML `text` of `file`.
pub(super) fn read(text: &str, file: &str) -> Result<RawFile, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let (loc, key) = match e.span() {
            Some(span) => (
                Some(Location::of_offset(text, span.start)),
                key_at(text, span.start),
            ),
            None => (None, None),
        };
        let message = e.message().trim().replace('\n', "; ");
        ConfigError::new(file, loc, key, message)
    })
}

/// The `[defaults]` section: at most one of `redis_url` and
/// `redis_url_env`.
pub(super) fn defaults(
    text: &str,
    file: &str,
    raw: RawDefaults,
) -> Result<Option<RedisAt>, ConfigError> {
    let at = |s: &Spanned<String>, key: &'static str| key_location(text, key, &s.span());
    let err = |loc: Location, key: &str, message: String| {
        ConfigError::new(file, Some(loc), Some(format!("defaults.{key}")), message)
    };
    // `cluster_nodes` and `sentinels` + `sentinel_master` are spelled as
    // the URL they stand for, which validates them.
    let scheme = |kind: &str| {
        let tls = raw.tls.as_ref().is_some_and(|t| *t.get_ref());
        format!("{}+{kind}://", if tls { "rediss" } else { "redis" })
    };
    let mut given: Vec<(&'static str, Location, Result<String, String>)> = Vec::new();
    if let Some(u) = &raw.redis_url {
        given.push(("redis_url", at(u, "redis_url"), Ok(u.get_ref().clone())));
    }
    if let Some(v) = &raw.redis_url_env {
        given.push((
            "redis_url_env",
            at(v, "redis_url_env"),
            Err(v.get_ref().clone()),
        ));
    }
    if let Some(n) = &raw.cluster_nodes {
        let loc = key_location(text, "cluster_nodes", &n.span());
        let url = format!("{}{}", scheme("cluster"), n.get_ref().join(","));
        given.push(("cluster_nodes", loc, Ok(url)));
    }
    match (&raw.sentinels, &raw.sentinel_master) {
        (Some(n), Some(m)) => {
            let loc = key_location(text, "sentinels", &n.span());
            let url = format!(
                "{}{}/{}",
                scheme("sentinel"),
                n.get_ref().join(","),
                m.get_ref()
            );
            given.push(("sentinels", loc, Ok(url)));
        }
        (Some(n), None) => {
            let loc = key_location(text, "sentinels", &n.span());
            return Err(err(
                loc,
                "sentinels",
                "sentinels needs sentinel_master".into(),
            ));
        }
        (None, Some(m)) => {
            return Err(err(
                at(m, "sentinel_master"),
                "sentinel_master",
                "sentinel_master needs sentinels".into(),
            ))
        }
        (None, None) => {}
    }
    if let Some(t) = &raw.tls {
        if !given
            .iter()
            .any(|(k, _, _)| matches!(*k, "cluster_nodes" | "sentinels"))
        {
            let loc = key_location(text, "tls", &t.span());
            return Err(err(
                loc,
                "tls",
                "tls goes with cluster_nodes or sentinels (a URL says rediss:// itself)".into(),
            ));
        }
    }
    if let [(first, loc, _), (second, _, _), ..] = given.as_slice() {
        return Err(err(
            *loc,
            first,
            format!("set either {first} or {second}, not both"),
        ));
    }
    match given.pop() {
        Some((key, loc, Ok(url))) => {
            let url = RedisUrl::new(url).map_err(|m| err(loc, key, m))?;
            Ok(Some((RedisSetting::Url(url), loc, key)))
        }
        Some((key, loc, Err(var))) => {
            let setting = RedisSetting::env(var).map_err(|m| err(loc, key, m))?;
            Ok(Some((setting, loc, key)))
        }
        None => Ok(None),
    }
}

/// A key of a filter section that cannot be used: where, which key (as
/// written), and why.
pub(super) type KeyError = (Location, String, String);

/// Puts the keys of a filter section into [`FilterParams`], in file order
/// so that the first mistake in the file is the one reported, and records
/// where each key is.
pub(super) fn lower(text: &str, raw: RawFilter) -> Result<(FilterParams, Locations), KeyError> {
    let mut entries: Vec<_> = raw.into_iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    let mut params = FilterParams::default();
    let mut locations = Locations::new();
    for (key, value) in entries {
        let key_at = Location::of_offset(text, key.span().start);
        let Some(s) = setting(key.get_ref()) else {
            let expected: Vec<String> = settings()
                .iter()
                .map(|s| format!("`{}`", s.key()))
                .collect();
            let message = format!(
                "unknown field `{}`, expected one of {}",
                key.get_ref(),
                expected.join(", ")
            );
            return Err((key_at, key.into_inner(), message));
        };
        let value_at = Location::of_offset(text, value.span().start);
        match store(s.slot(&mut params), value.get_ref()) {
            Ok(()) => {}
            Err(Bad::Type(m)) => return Err((value_at, s.key().to_string(), m)),
            Err(Bad::Value(m)) => return Err((key_at, s.key().to_string(), m)),
        }
        locations.insert(s.key(), key_at);
    }
    Ok((params, locations))
}

/// Why a TOML value does not fit a setting: its type, reported where the
/// value is (as the TOML parser reports type errors), or the value itself,
/// reported at its key.
enum Bad {
    Type(String),
    Value(String),
}

fn store(slot: Slot<'_>, value: &Value) -> Result<(), Bad> {
    let wrong = |expected: &str| {
        Bad::Type(format!(
            "invalid type: {}, expected {expected}",
            unexpected(value)
        ))
    };
    match (slot, value) {
        (Slot::Count(v), Value::Integer(i)) => *v = Some(non_negative(*i).map_err(Bad::Value)?),
        (Slot::Small(v), Value::Integer(i)) => *v = Some(small(*i).map_err(Bad::Value)?),
        (Slot::Number(v), Value::Float(f)) => *v = Some(*f),
        (Slot::Number(v), Value::Integer(i)) => *v = Some(*i as f64),
        // Strings as on the command line: "10M", "1e6", "0.1%".
        (slot @ (Slot::Count(_) | Slot::Small(_) | Slot::Number(_)), Value::String(s)) => {
            slot.set_text(s).map_err(Bad::Value)?
        }
        (Slot::Count(_) | Slot::Small(_), _) => {
            return Err(wrong("an integer (or a string like \"10M\")"))
        }
        (Slot::Number(_), _) => return Err(wrong("a number (or a string like \"0.1%\")")),
        (Slot::Switch(v), Value::Boolean(b)) => *v = Some(*b),
        (Slot::Switch(_), _) => return Err(wrong("true or false")),
        (Slot::Bytes(v), Value::Integer(i)) => *v = Some(non_negative(*i).map_err(Bad::Value)?),
        (slot @ Slot::Bytes(_), Value::String(s)) | (slot @ Slot::Word(_), Value::String(s)) => {
            slot.set_text(s).map_err(Bad::Value)?
        }
        (Slot::Bytes(_), _) => return Err(wrong("an integer or a string like \"4GiB\"")),
        (Slot::Word(_), _) => return Err(wrong("a string")),
    }
    Ok(())
}

/// A TOML value as serde names an unexpected one (`string "many"`).
fn unexpected(value: &Value) -> String {
    match value {
        Value::String(s) => format!("string {s:?}"),
        Value::Integer(i) => format!("integer `{i}`"),
        Value::Float(f) => format!("floating point `{f}`"),
        Value::Boolean(b) => format!("boolean `{b}`"),
        Value::Datetime(_) => "datetime".to_string(),
        Value::Array(_) => "sequence".to_string(),
        Value::Table(_) => "map".to_string(),
    }
}

fn non_negative(v: i64) -> Result<u64, String> {
    u64::try_from(v).map_err(|_| format!("{v} is negative"))
}

fn small(v: i64) -> Result<u32, String> {
    if v < 0 {
        return Err(format!("{v} is negative"));
    }
    u32::try_from(v).map_err(|_| format!("{v} is too large"))
}
