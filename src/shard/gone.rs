//! A missing shard said as what it is. A shard's keys are gone because
//! the shard was lost (damage: [`Error::ShardMissing`]), or because the
//! whole filter was dropped, or dropped and created again, under the
//! handle ([`Error::NotFound`], [`Error::Recreated`]): only the root
//! record tells which, so it is read once when a shard is missing. The
//! reading of the record is pure ([`meaning`]); the drivers only fetch it.

use super::root_io::read_meta;
use crate::error::{Error, Result};
use crate::keys::{FilterName, Keys};
use crate::proto::shard::root::{Root, State};
use std::collections::BTreeMap;

/// Each shard's result, by shard index.
type Results<T> = Vec<(usize, Result<T>)>;

/// What became of the whole filter, when a shard of it is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Gone {
    /// Dropped (or being dropped), nothing made in its place.
    Dropped,
    /// Dropped, and another filter created under the name.
    Recreated,
}

impl Gone {
    fn error(self, name: &str) -> Error {
        let name = name.to_string();
        match self {
            Gone::Dropped => Error::NotFound { name },
            Gone::Recreated => Error::Recreated { name },
        }
    }
}

/// What a missing shard of `root` means, given the record under its name
/// now (`now`, empty when there is none): `None` when the filter is still
/// the one the handle opened (then the shard itself was lost).
pub(super) fn meaning(root: &Root, now: &BTreeMap<String, String>) -> Option<Gone> {
    if now.is_empty() {
        return Some(Gone::Dropped);
    }
    if !Root::is_root(now) {
        // An unsharded filter under the name now.
        return Some(Gone::Recreated);
    }
    match Root::decode(&root.name, now) {
        Ok(r) if r.uid != root.uid => Some(Gone::Recreated),
        Ok(r) if r.state == State::Dropping => Some(Gone::Dropped),
        // The same filter; or a record that cannot be read, which the
        // missing shard's own error reports better than a guess.
        _ => None,
    }
}

/// Whether some shard's result is a missing shard.
fn any_missing<T>(results: &Results<T>) -> bool {
    results
        .iter()
        .any(|(_, r)| matches!(r, Err(Error::ShardMissing { .. })))
}

/// `results` with every missing shard said as `gone`.
fn relabel<T>(name: &str, results: Results<T>, gone: Option<Gone>) -> Results<T> {
    let Some(gone) = gone else {
        return results;
    };
    results
        .into_iter()
        .map(|(j, r)| match r {
            Err(Error::ShardMissing { .. }) => (j, Err(gone.error(name))),
            other => (j, other),
        })
        .collect()
}

/// The root and its metadata key, when `results` name a missing shard:
/// the record to read before saying which (sync and async alike).
fn to_read<'r, T>(root: Option<&'r Root>, results: &Results<T>) -> Option<(&'r Root, String)> {
    let root = root.filter(|_| any_missing(results))?;
    let name = FilterName::existing(&root.name).ok()?;
    Some((root, Keys::new(name).meta().to_string()))
}

/// `results`, a missing shard said as what it is (see the module). The
/// record is read only when some shard is missing; if it cannot be read,
/// the shard's own error stands.
pub(super) fn explain<C, T>(conn: &mut C, root: Option<&Root>, results: Results<T>) -> Results<T>
where
    C: redis::ConnectionLike + ?Sized,
{
    let Some((root, meta)) = to_read(root, &results) else {
        return results;
    };
    match read_meta(conn, &meta) {
        Ok(now) => relabel(&root.name, results, meaning(root, &now)),
        Err(_) => results,
    }
}

#[cfg(feature = "async")]
/// Async [`explain`].
pub(super) async fn explain_async<C, T>(
    conn: &mut C,
    root: Option<&Root>,
    results: Results<T>,
) -> Results<T>
where
    C: redis::aio::ConnectionLike + Send,
{
    let Some((root, meta)) = to_read(root, &results) else {
        return results;
    };
    match super::root_io::read_meta_async(conn, &meta).await {
        Ok(now) => relabel(&root.name, results, meaning(root, &now)),
        Err(_) => results,
    }
}

#[cfg(test)]
mod tests;
