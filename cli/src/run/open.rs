//! Finding filters by name and opening them: a hint for a name that does
//! not exist, the names in the database, and the filter a write goes to
//! (created from the configuration when it declares it).

use crate::shared::any::{self, AnyFilter, Sharded};
use crate::shared::ctx::Ctx;
use crate::show::suggest::did_you_mean;
use rotabloom::config::FilterDef;
use rotabloom::connect::Connection;
use rotabloom::{Error, FilterName, Keys, KEY_PREFIX};
use std::collections::BTreeSet;

impl Ctx {
    /// An error from creating `name` from the configuration: a parameter
    /// that differs from Redis is a configuration error at that key.
    pub fn create_error(&self, name: &str, e: Error) -> anyhow::Error {
        let key = match &e {
            Error::ParameterMismatch { field, .. } => Some(field.clone()),
            Error::KindMismatch { .. } => Some("kind".to_string()),
            _ => None,
        };
        match (key, self.config()) {
            (Some(key), Some(c)) if c.filter(name).is_some() => {
                anyhow::Error::new(c.error_at(name, &key, e.to_string()))
            }
            _ => anyhow::Error::new(e),
        }
    }

    /// For commands that write: create the filter from the configuration if
    /// it declares it (checking its parameters), else open it, sharded or
    /// not; its writes wait for the replicas asked for.
    pub fn open_for_write(&self, conn: &mut Connection, name: &str) -> anyhow::Result<Sharded> {
        let f = match self.def(name) {
            Some(def) if def.shards() > 1 => self.create_sharded(conn, def)?.0,
            Some(def) => match any::create_or_open(conn, def, self.wait()) {
                Ok((f, _)) => Sharded::single(f),
                // With `when_full = expand`, a base filter of the
                // configuration becomes an expanding one when it is full:
                // that is the filter the configuration made, grown.
                Err(rotabloom::Error::KindMismatch {
                    expected: "bloom",
                    found,
                    ..
                }) if found == "expanding" && self.when_full() == rotabloom::WhenFull::Expand => {
                    open_sharded(conn, name)?
                }
                Err(e) => return Err(self.create_error(name, e)),
            },
            None => open_sharded(conn, name)?,
        };
        Ok(f.map_shards(|s| self.writer(s)))
    }

    /// Creates the sharded filter `def` describes, each shard from its
    /// definition with the capacity divided, or opens it.
    pub fn create_sharded(
        &self,
        conn: &mut Connection,
        def: &FilterDef,
    ) -> anyhow::Result<(Sharded, rotabloom::Opened)> {
        Sharded::create_or_open_with(conn, &def.shard_plan(), |c, sub| {
            let shard = def.shard(sub).map_err(|e| Error::InvalidParameter {
                name: "shards",
                reason: e.message,
            })?;
            any::create_or_open(c, &shard, self.wait())
        })
        .map_err(|e| self.create_error(def.name(), e))
    }
}

/// Opens an existing filter, with a hint when it does not exist (the
/// library's [`Error::NotFound`] stays in the chain: see [`is_gone`]). A
/// sharded filter is refused loudly: the commands that take one open it
/// with [`open_sharded`].
pub fn open(conn: &mut Connection, name: &str) -> anyhow::Result<AnyFilter> {
    match AnyFilter::open(conn, name) {
        Ok(f) => Ok(f),
        Err(e @ Error::NotFound { .. }) => Err(not_found(conn, name, e)),
        Err(e @ Error::UnsupportedFormat { .. }) if is_sharded(&e) => Err(anyhow::Error::new(e)
            .context(format!(
                "filter {name:?} is sharded: this command does not support sharded filters yet \
                 (create, status, list, drop, filter, add, load, check, rotate, expand, convert, dump and restore do)"
            ))),
        Err(e) => Err(e.into()),
    }
}

/// Whether `e` is the refusal of a sharded filter's root record.
fn is_sharded(e: &Error) -> bool {
    matches!(e, Error::UnsupportedFormat { found, .. } if found == rotabloom::SHARDED_FORMAT)
}

/// Opens an existing filter, sharded or not, with a hint when it does not
/// exist.
pub fn open_sharded(conn: &mut Connection, name: &str) -> anyhow::Result<Sharded> {
    let opened = Sharded::open(conn, name);
    or_hint(conn, name, opened)
}

/// [`open_sharded`] whatever its shards say (docs/FORMAT.md §11.8): for
/// the commands that finish an interrupted whole-filter change or report
/// it (rotate, clear, expand, convert, status, drop).
pub fn open_sharded_unconverged(conn: &mut Connection, name: &str) -> anyhow::Result<Sharded> {
    let opened = Sharded::open_unconverged(conn, name);
    or_hint(conn, name, opened)
}

fn or_hint(
    conn: &mut Connection,
    name: &str,
    opened: rotabloom::Result<Sharded>,
) -> anyhow::Result<Sharded> {
    match opened {
        Ok(f) => Ok(f),
        Err(e @ Error::NotFound { .. }) => Err(not_found(conn, name, e)),
        Err(e) => Err(e.into()),
    }
}

/// "Does not exist", with the filters there are for a name mistyped; a
/// SCAN that fails (an ACL without it) only loses the suggestion.
fn not_found(conn: &mut Connection, name: &str, e: Error) -> anyhow::Error {
    let names = all_names(conn).unwrap_or_default();
    let hint = match did_you_mean(name, names.iter().map(String::as_str)) {
        Some(near) => format!("did you mean {near:?}? else create it with `rotabloom create`"),
        None => "create it with `rotabloom create`".to_string(),
    };
    anyhow::Error::new(e).context(format!("filter {name:?} does not exist ({hint})"))
}

/// Whether `e` says that the filter does not exist (any more).
pub fn is_gone(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| matches!(c.downcast_ref::<Error>(), Some(Error::NotFound { .. })))
}

/// The filters a command goes over: named on its command line, or every
/// filter found in the database.
pub struct Names {
    pub list: Vec<String>,
    /// Whether the user named them.
    pub named: bool,
}

impl Names {
    /// Whether the error of one filter is no error at all: a filter found
    /// in the database that was dropped before the command got to it is
    /// simply not there, and one dropped and created again between its
    /// open and its read is another filter than the one listed (the next
    /// run sees it). A filter the user named must exist.
    pub fn vanished(&self, e: &anyhow::Error) -> bool {
        let replaced = e
            .chain()
            .any(|c| matches!(c.downcast_ref::<Error>(), Some(Error::Recreated { .. })));
        !self.named && (is_gone(e) || replaced)
    }
}

/// The named filters, or every filter in the database when none is named.
pub fn names_or_all(conn: &mut Connection, names: Vec<String>) -> anyhow::Result<Names> {
    if !names.is_empty() {
        return Ok(Names {
            list: names,
            named: true,
        });
    }
    Ok(Names {
        list: all_names(conn)?,
        named: false,
    })
}

/// Every filter name in the database (every primary of a cluster): SCAN
/// for `rotabloom:{*}:meta`. In a
/// SCAN pattern only `*`, `?`, `[`, `]` and `\` are special, so the braces
/// of the hash tag match themselves. The library's `Keys` gives the keys of
/// one named filter only, so the pattern and the name's place in a key are
/// spelled here.
pub fn all_names(conn: &mut Connection) -> rotabloom::Result<Vec<String>> {
    let prefix = format!("{KEY_PREFIX}:{{");
    let suffix = "}:meta";
    let pattern = format!("{prefix}*{suffix}");
    let mut names = BTreeSet::new();
    let keys = conn.scan_match(&pattern)?;
    for key in keys {
        let Ok(key) = String::from_utf8(key) else {
            continue;
        };
        let name = key
            .strip_prefix(&prefix)
            .and_then(|k| k.strip_suffix(suffix))
            .and_then(|n| FilterName::existing(n).ok());
        // A key the pattern matches by accident (`rotabloom:{a}:b}:meta`)
        // is not the meta key of the name read from it.
        if let Some(name) = name.filter(|n| Keys::new(n.clone()).meta() == key) {
            names.insert(name.to_string());
        }
    }
    // A sharded filter's shards are part of it, not filters of their own.
    let shards: Vec<String> = names
        .iter()
        .filter(|n| shard_root(n).is_some_and(|root| names.contains(root)))
        .cloned()
        .collect();
    for s in shards {
        names.remove(&s);
    }
    Ok(names.into_iter().collect())
}

/// The root's name of a name shaped like a shard's (`ROOT:shard:J:TAG`,
/// docs/FORMAT.md §11.2).
fn shard_root(name: &str) -> Option<&str> {
    let (rest, tag) = name.rsplit_once(':')?;
    let (rest, j) = rest.rsplit_once(':')?;
    let root = rest.strip_suffix(":shard")?;
    let hex = tag.len() == 8 && tag.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    (hex && !j.is_empty() && j.bytes().all(|b| b.is_ascii_digit())).then_some(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_names_point_at_their_root() {
        assert_eq!(shard_root("crawl:shard:3:0a1b2c3d"), Some("crawl"));
        assert_eq!(shard_root("a:b:shard:12:00000000"), Some("a:b"));
        assert_eq!(shard_root("crawl:shard:x:0a1b2c3d"), None);
        assert_eq!(shard_root("crawl:shard:3:0A1B2C3D"), None);
        assert_eq!(shard_root("crawl"), None);
    }
}
