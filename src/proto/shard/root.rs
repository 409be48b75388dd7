//! The root record of a sharded filter (docs/FORMAT.md §11.1): what it
//! holds, how it is written and how it is read back. Pure: the hash comes
//! in as field/value pairs and goes out as such.

use crate::error::{Error, Result};
use crate::keys::FilterName;
use crate::metadata::text::{parse_i64, parse_u64};
use crate::metadata::Kind;
#[cfg(test)]
use crate::params::shard_capacity;
use std::collections::BTreeMap;

/// The `format` value of a root record (defined with the format version,
/// which every reader checks first).
pub const ROOT_FORMAT: &str = crate::metadata::SHARDED_FORMAT;
/// The fewest shards a root records (one shard is an ordinary filter).
pub const MIN_SHARDS: u32 = 2;
/// The most shards a filter may have.
pub const MAX_SHARDS: u32 = 256;
/// Bytes a shard name adds to the root's (`:shard:255:0a1b2c3d`, 19 bytes), so the
/// root's name is at most 200 minus this.
const SHARD_SUFFIX_MAX: usize = 19;

/// Where a sharded filter is in its life (§11.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Claimed; shards being created. Not usable.
    Creating,
    /// Every shard exists.
    Ready,
    /// Shards being dropped. Not usable.
    Dropping,
}

impl State {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Creating => "creating",
            State::Ready => "ready",
            State::Dropping => "dropping",
        }
    }

    fn parse(s: &str) -> Option<State> {
        match s {
            "creating" => Some(State::Creating),
            "ready" => Some(State::Ready),
            "dropping" => Some(State::Dropping),
            _ => None,
        }
    }
}

/// A decoded root record.
#[derive(Clone, Debug, PartialEq)]
pub struct Root {
    /// The filter's name (the root's hash tag).
    pub name: String,
    /// This creation's id.
    pub uid: String,
    /// Shard names, shard 0 first.
    pub shards: Vec<String>,
    /// The kind of every shard.
    pub kind: Kind,
    /// The capacity asked for the whole filter.
    pub capacity: u64,
    /// Its life stage.
    pub state: State,
    /// While creating: server ms after which the creation is abandoned.
    pub deadline: Option<i64>,
    /// Server ms of the creation (absent before the claim step wrote it).
    pub created_at: Option<i64>,
    /// What every shard must have (§11.8).
    pub targets: super::target::Targets,
}

/// The name of shard `j` of `root` with placement tag `tag` (§11.2).
pub fn shard_name(root: &str, j: u32, tag: u32) -> String {
    format!("{root}:shard:{j}:{tag:08x}")
}

/// Checks that `name` can be the root of `shards` shards: a valid filter
/// name short enough for its shards' names, and a shard count in range.
pub fn check_root(name: &str, shards: u32) -> Result<FilterName> {
    let n = FilterName::new(name)?;
    if !(MIN_SHARDS..=MAX_SHARDS).contains(&shards) {
        return Err(Error::InvalidParameter {
            name: "shards",
            reason: format!(
                "{shards} is not between {MIN_SHARDS} and {MAX_SHARDS} (1 is an unsharded filter)"
            ),
        });
    }
    if name.len() + SHARD_SUFFIX_MAX > 200 {
        return Err(Error::InvalidName {
            name: name.to_string(),
            reason: "a sharded filter's name is at most 181 bytes (its shards' names add 19)",
        });
    }
    Ok(n)
}

impl Root {
    /// The fields the claim step writes; `created_at` and `deadline` come
    /// from the server's clock in the same step, so they are not here.
    pub fn claim_fields(&self) -> Vec<(String, String)> {
        let mut out = vec![
            ("format".to_string(), ROOT_FORMAT.to_string()),
            ("uid".to_string(), self.uid.clone()),
            ("shards".to_string(), self.shards.len().to_string()),
            ("kind".to_string(), self.kind.as_str().to_string()),
            ("capacity".to_string(), self.capacity.to_string()),
            ("state".to_string(), State::Creating.as_str().to_string()),
        ];
        for (j, s) in self.shards.iter().enumerate() {
            out.push((format!("shard.{j}"), s.clone()));
        }
        out
    }

    /// Whether a metadata hash is a root record (rather than an ordinary
    /// filter's metadata, or something else).
    pub fn is_root(fields: &BTreeMap<String, String>) -> bool {
        fields.get("format").map(String::as_str) == Some(ROOT_FORMAT)
    }

    /// Reads a root record, refusing anything §11.1 does not allow.
    pub fn decode(name: &str, fields: &BTreeMap<String, String>) -> Result<Root> {
        let corrupt = |field: &str, reason: String| Error::CorruptMetadata {
            name: name.to_string(),
            field: field.to_string(),
            reason,
        };
        let get = |field: &str| {
            fields
                .get(field)
                .map(String::as_str)
                .ok_or_else(|| corrupt(field, "missing from the root record".into()))
        };
        let format = get("format")?;
        if format != ROOT_FORMAT {
            return Err(corrupt(
                "format",
                format!("{format:.40?} is not {ROOT_FORMAT}"),
            ));
        }
        let uid = get("uid")?;
        if uid.len() != 16 || !uid.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(corrupt(
                "uid",
                format!("{uid:.40?} is not 16 lowercase hex digits"),
            ));
        }
        let count = get("shards")?;
        let s = parse_u64(count)
            .filter(|&s| (u64::from(MIN_SHARDS)..=u64::from(MAX_SHARDS)).contains(&s))
            .ok_or_else(|| {
                corrupt(
                    "shards",
                    format!("{count:.40?} is not between {MIN_SHARDS} and {MAX_SHARDS}"),
                )
            })?;
        let k = get("kind")?;
        let kind: Kind = k
            .parse()
            .map_err(|_| corrupt("kind", format!("{k:.40?} is not a kind")))?;
        let cap = get("capacity")?;
        let capacity = parse_u64(cap)
            .ok_or_else(|| corrupt("capacity", format!("{cap:.40?} is not an integer")))?;
        let st = get("state")?;
        let state = State::parse(st)
            .ok_or_else(|| corrupt("state", format!("{st:.40?} is not a state")))?;
        let time = |field: &str| -> Result<Option<i64>> {
            fields
                .get(field)
                .map(|v| {
                    parse_i64(v)
                        .ok_or_else(|| corrupt(field, format!("{v:.40?} is not an integer")))
                })
                .transpose()
        };
        let deadline = time("deadline")?;
        let created_at = time("created_at")?;
        if state == State::Creating && deadline.is_none() {
            return Err(corrupt("deadline", "missing while creating".into()));
        }
        let mut shards = Vec::with_capacity(s as usize);
        for j in 0..s {
            let field = format!("shard.{j}");
            let sub = get(&field)?;
            FilterName::existing(sub).map_err(|e| corrupt(&field, e.to_string()))?;
            if sub == name {
                return Err(corrupt(&field, "names the root itself".into()));
            }
            if shards.iter().any(|x: &String| x == sub) {
                return Err(corrupt(&field, format!("{sub:?} is listed twice")));
            }
            shards.push(sub.to_string());
        }
        if let Some(extra) = fields.keys().find(|k| {
            k.strip_prefix("shard.")
                .is_some_and(|j| parse_u64(j).is_none_or(|j| j >= s))
        }) {
            return Err(corrupt(extra, format!("outside shards 0..{s}")));
        }
        let targets = super::target::Targets::decode(fields)
            .map_err(|f| corrupt(f, "not a canonical integer".into()))?;
        Ok(Root {
            name: name.to_string(),
            uid: uid.to_string(),
            shards,
            kind,
            capacity,
            state,
            deadline,
            created_at,
            targets,
        })
    }
}

/// A 2-shard root record of filter `crawl` (for tests).
#[cfg(test)]
pub(crate) fn canned_record(kind: &str, uid: &str, state: &str) -> BTreeMap<String, String> {
    [
        ("format", "sharded-1"),
        ("uid", uid),
        ("shards", "2"),
        ("kind", kind),
        ("capacity", "1000"),
        ("state", state),
        ("created_at", "1700000000000"),
        ("shard.0", "crawl:shard:0:0a1b2c3d"),
        ("shard.1", "crawl:shard:1:00000007"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canned() -> BTreeMap<String, String> {
        canned_record("circular", "0123456789abcdef", "ready")
    }

    #[test]
    fn a_canned_root_decodes() {
        let r = Root::decode("crawl", &canned()).unwrap();
        assert_eq!(
            r.shards,
            ["crawl:shard:0:0a1b2c3d", "crawl:shard:1:00000007"]
        );
        assert_eq!(
            (r.kind, r.capacity, r.state),
            (Kind::Circular, 1000, State::Ready)
        );
        assert_eq!((r.deadline, r.created_at), (None, Some(1_700_000_000_000)));
        assert!(Root::is_root(&canned()));
    }

    #[test]
    fn claim_fields_decode_back() {
        let r = Root::decode("crawl", &canned()).unwrap();
        let mut f: BTreeMap<String, String> = r.claim_fields().into_iter().collect();
        f.insert("deadline".into(), "5".into());
        let back = Root::decode("crawl", &f).unwrap();
        assert_eq!(back.state, State::Creating);
        assert_eq!(back.shards, r.shards);
        assert_eq!(back.uid, r.uid);
    }

    #[test]
    fn shards_have_headroom_for_their_binomial_share() {
        assert_eq!(shard_capacity(60_000_000, 6), 10_000_000 + 18_974);
        assert_eq!(shard_capacity(20_000, 6), 3_334 + 347);
        assert_eq!(shard_capacity(0, 6), 0);
        // No overflow at the top of the range.
        assert!(shard_capacity(u64::MAX, 2) > u64::MAX / 2);
        assert_eq!(shard_capacity(7, 1), 7);
    }

    #[test]
    fn shard_names_carry_index_and_tag() {
        assert_eq!(
            shard_name("crawl", 3, 0x0a1b_2c3d),
            "crawl:shard:3:0a1b2c3d"
        );
        assert_eq!(shard_name("c", 255, u32::MAX).len(), 1 + SHARD_SUFFIX_MAX);
    }

    #[test]
    fn bad_roots_are_refused_naming_the_field() {
        let cases: &[(&str, Option<&str>)] = &[
            ("format", Some("1")),
            ("uid", Some("0123")),
            ("shards", Some("1")),
            ("shards", Some("02")),
            ("shards", Some("3")),
            ("shard.1", None),
            ("shard.1", Some("crawl:shard:0:0a1b2c3d")),
            ("shard.1", Some("crawl")),
            ("shard.1", Some("has space")),
            ("kind", Some("cuckoo")),
            ("state", Some("done")),
            ("shard.2", Some("x")),
            ("capacity", Some("-1")),
            ("target.epoch", Some("01")),
            ("target.cleared", Some("x")),
        ];
        for (field, value) in cases {
            let mut f = canned();
            match value {
                Some(v) => f.insert(field.to_string(), v.to_string()),
                None => f.remove(*field),
            };
            match Root::decode("crawl", &f) {
                Err(Error::CorruptMetadata { field: got, .. }) => {
                    let want = if *field == "shards" && *value == Some("3") {
                        "shard.2"
                    } else {
                        field
                    };
                    assert_eq!(got, want, "{field} = {value:?}");
                }
                other => panic!("{field} = {value:?}: {other:?}"),
            }
        }
        let mut f = canned();
        f.insert("state".into(), "creating".into());
        assert!(
            Root::decode("crawl", &f).is_err(),
            "creating needs a deadline"
        );
    }

    #[test]
    fn roots_are_checked_before_creation() {
        assert!(check_root("crawl", 6).is_ok());
        assert!(check_root("crawl", 1).is_err());
        assert!(check_root("crawl", 257).is_err());
        assert!(check_root(&"n".repeat(182), 2).is_err());
        assert!(check_root(&"n".repeat(181), 2).is_ok());
        assert!(check_root("a{b}", 2).is_err());
    }
}
