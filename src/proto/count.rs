//! A filter's count (docs/FORMAT.md §6.6): the metadata's `gen.<seq>.count`
//! of each bitmap generation, and the store's own count of each generation
//! that counts itself (a module's), read with its key's existence so that a
//! lost key is missing data, never a count of 0.

use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::request::{Replies, Request};
use crate::view::View;
use redis::Value;

/// `EXISTS key; <own count>` per generation that counts itself, and those
/// generations (by index); `None` when every count is in the metadata.
pub(crate) fn request(keys: &Keys, view: &View) -> Option<(Request, Vec<usize>)> {
    let mut req = Request::new().read_only();
    let mut gens = Vec::new();
    for (i, g) in view.gens.iter().enumerate() {
        let key = keys.block(&view.uid, g.seq, 0);
        if let Some(cmd) = view.store(i).own_count(&key) {
            req.push(redis::cmd("EXISTS").arg(&key).clone(), None);
            req.push(cmd, None);
            gens.push(i);
        }
    }
    (!gens.is_empty()).then_some((req, gens))
}

/// The filter's count: the metadata's counts, but for `gens`, whose own
/// counts `replies` hold.
pub(crate) fn decode(keys: &Keys, view: &View, gens: &[usize], replies: Replies) -> Result<u64> {
    let mut replies = replies.into_iter();
    let mut own = Vec::with_capacity(gens.len());
    let mut missing = Vec::new();
    for &i in gens {
        let mut next = || {
            replies
                .next()
                .ok_or_else(|| Error::Internal("a count's reply is missing".into()))
        };
        let exists = next()??;
        let count = next()??;
        match (exists, count) {
            (Value::Int(0), _) => {
                let seq = view.gens.get(i).map_or(0, |g| g.seq);
                missing.push(keys.block(&view.uid, seq, 0));
            }
            (Value::Int(1), Value::Int(n)) => {
                own.push((i, u64::try_from(n).unwrap_or_default()));
            }
            (Value::Int(1), other) => {
                return Err(crate::error::unexpected("a generation's own count", &other))
            }
            (other, _) => return Err(crate::error::unexpected("EXISTS", &other)),
        }
    }
    if !missing.is_empty() {
        return Err(Error::MissingData {
            name: view.name.clone(),
            keys: missing,
        });
    }
    Ok(view.gens.iter().enumerate().fold(0u64, |total, (i, g)| {
        let n = own
            .iter()
            .find(|(j, _)| *j == i)
            .map_or(g.count, |(_, n)| *n);
        total.saturating_add(n)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{keys, module_view_of, view_of};

    #[test]
    fn bitmap_counts_are_the_metadatas_and_need_no_request() {
        assert!(request(&keys("t"), &view_of("circular", 3)).is_none());
    }

    #[test]
    fn a_module_generation_is_counted_by_the_module() {
        let view = module_view_of("circular", 2);
        let (req, gens) = request(&keys("t"), &view).unwrap();
        assert_eq!(gens, [0, 1]);
        let key = "rotabloom:{t}:gen:0123456789abcdef-0:0";
        assert_eq!(req.args(0), ["EXISTS", key]);
        assert_eq!(req.args(1), ["BF.CARD", key]);
        let ok = |v: i64| Ok(Value::Int(v));
        let replies = vec![ok(1), ok(7), ok(1), ok(5)];
        assert_eq!(decode(&keys("t"), &view, &gens, replies).unwrap(), 12);
        // A lost key is missing data, not 0 items.
        let replies = vec![ok(1), ok(7), ok(0), ok(0)];
        match decode(&keys("t"), &view, &gens, replies) {
            Err(Error::MissingData { keys, .. }) => {
                assert_eq!(keys, ["rotabloom:{t}:gen:0123456789abcdef-1:0"])
            }
            other => panic!("{other:?}"),
        }
        let replies = vec![ok(1), Ok(Value::Nil), ok(1), ok(5)];
        assert!(decode(&keys("t"), &view, &gens, replies).is_err());
    }
}
