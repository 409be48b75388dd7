//! A batch split by shard, its parts sent at once, the answers put back in
//! input order. Splitting and merging are pure (`split`, `merge`); the
//! sending is one scoped thread per connection (blocking) or one future
//! per shard (async).

use super::ShardedFilter;
use crate::error::{Error, Result};
use crate::handle::{Filter, FilterKind};
use crate::hashing::ItemHash;
use crate::items::Items;

/// Shards' answers: the shard, and its part's answers in order.
type Answers = Vec<(usize, Vec<bool>)>;

/// The batch operations a sharded filter fans out.
#[derive(Clone, Copy, Debug)]
pub(super) enum Op {
    Insert,
    Contains,
    CheckAndInsert,
}

/// The indices of `items` each of `shards` shards holds, in input order.
pub(super) fn split(items: &Items, shards: u32) -> Vec<Vec<usize>> {
    let mut parts = vec![Vec::new(); shards.max(1) as usize];
    for i in 0..items.len() {
        let item = items.get(i).unwrap_or_default();
        parts[ItemHash::of(item).shard(shards) as usize].push(i);
    }
    parts
}

/// Puts each shard's answers back at its items' places.
pub(super) fn merge(
    len: usize,
    parts: &[Vec<usize>],
    answers: Vec<(usize, Vec<bool>)>,
) -> Result<Vec<bool>> {
    let mut out = vec![false; len];
    let mut seen = 0;
    for (j, ans) in answers {
        let idx = &parts[j];
        if ans.len() != idx.len() {
            return Err(Error::Internal(format!(
                "shard {j} answered {} items of {}",
                ans.len(),
                idx.len()
            )));
        }
        for (&i, a) in idx.iter().zip(ans) {
            out[i] = a;
        }
        seen += idx.len();
    }
    if seen != len {
        return Err(Error::Internal(format!("{seen} answers for {len} items")));
    }
    Ok(out)
}

fn run<K: FilterKind, C: redis::ConnectionLike>(
    f: &Filter<K>,
    conn: &mut C,
    op: Op,
    items: Vec<&[u8]>,
) -> Result<Vec<bool>> {
    match op {
        Op::Insert => f.insert_many(conn, items),
        Op::Contains => f.contains_many(conn, items),
        Op::CheckAndInsert => f.check_and_insert_many(conn, items),
    }
}

impl<K: FilterKind> ShardedFilter<K> {
    /// The parts of shard `j`.
    fn part<'a>(items: &'a Items, idx: &[usize]) -> Vec<&'a [u8]> {
        idx.iter()
            .map(|&i| items.get(i).unwrap_or_default())
            .collect()
    }

    /// Sends the batch: shard `j`'s part on `conns[j % conns.len()]`, one
    /// thread per connection in use.
    pub(super) fn fan<C, I>(&self, conns: &mut [C], op: Op, items: I) -> Result<Vec<bool>>
    where
        C: redis::ConnectionLike + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let items = Items::collect(items);
        let s = self.shards.len();
        let n = conns.len().min(s);
        let Some(first) = conns.first_mut() else {
            return Err(Error::InvalidParameter {
                name: "connections",
                reason: "no connection given".into(),
            });
        };
        if s == 1 {
            let all = Self::part(&items, &(0..items.len()).collect::<Vec<_>>());
            return run(&self.shards[0], first, op, all);
        }
        let parts = split(&items, s as u32);
        // One connection's shards, in turn.
        let serve = |c: usize, conn: &mut C| -> Result<Answers> {
            let mut out = Vec::new();
            for j in (c..s).step_by(n) {
                if parts[j].is_empty() {
                    continue;
                }
                let ans = run(&self.shards[j], conn, op, Self::part(&items, &parts[j]))
                    .map_err(|e| self.shard_error(j, e))?;
                out.push((j, ans));
            }
            Ok(out)
        };
        let answers: Vec<Result<Answers>> = if n == 1 {
            vec![serve(0, first)]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = conns
                    .iter_mut()
                    .take(n)
                    .enumerate()
                    .map(|(c, conn)| {
                        let serve = &serve;
                        scope.spawn(move || serve(c, conn))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(Error::Internal("a shard's sending thread panicked".into()))
                        })
                    })
                    .collect()
            })
        };
        let mut all = Vec::with_capacity(s);
        for a in answers {
            all.extend(a?);
        }
        merge(items.len(), &parts, all)
    }
}

#[cfg(feature = "async")]
impl<K: FilterKind> ShardedFilter<K> {
    /// Sends every shard's part at once, each on its own clone of `conn`
    /// (a multiplexed or cluster connection: clones share its pipeline).
    async fn fan_async<C, I>(&self, conn: &C, op: Op, items: I) -> Result<Vec<bool>>
    where
        C: redis::aio::ConnectionLike + Clone + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let items = Items::collect(items);
        let s = self.shards.len() as u32;
        let parts = split(&items, s);
        let futures = parts
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty())
            .map(|(j, idx)| {
                let mut conn = conn.clone();
                let part = Self::part(&items, idx);
                let f = &self.shards[j];
                async move {
                    let ans = match op {
                        Op::Insert => f.insert_many_async(&mut conn, part).await,
                        Op::Contains => f.contains_many_async(&mut conn, part).await,
                        Op::CheckAndInsert => f.check_and_insert_many_async(&mut conn, part).await,
                    };
                    ans.map(|a| (j, a)).map_err(|e| self.shard_error(j, e))
                }
            });
        let answers = futures_util::future::try_join_all(futures).await?;
        merge(items.len(), &parts, answers)
    }

    /// Async [`insert_many`](Self::insert_many), every shard's part at once.
    pub async fn insert_many_async<C, I>(&self, conn: &C, items: I) -> Result<Vec<bool>>
    where
        C: redis::aio::ConnectionLike + Clone + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.fan_async(conn, Op::Insert, items).await
    }

    /// Async [`contains_many`](Self::contains_many), every shard's part at
    /// once.
    pub async fn contains_many_async<C, I>(&self, conn: &C, items: I) -> Result<Vec<bool>>
    where
        C: redis::aio::ConnectionLike + Clone + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.fan_async(conn, Op::Contains, items).await
    }

    /// Async [`check_and_insert_many`](Self::check_and_insert_many), every
    /// shard's part at once.
    pub async fn check_and_insert_many_async<C, I>(&self, conn: &C, items: I) -> Result<Vec<bool>>
    where
        C: redis::aio::ConnectionLike + Clone + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.fan_async(conn, Op::CheckAndInsert, items).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_splits_by_route_and_merges_in_order() {
        let words = ["", "a", "http://example.com/", "0", "2", "x", "y"];
        let items = Items::collect(words);
        let parts = split(&items, 6);
        // §11.3's golden routes: "" -> 1, "a" -> 1, example -> 2, "0" -> 0, "2" -> 2.
        assert!(parts[1].starts_with(&[0, 1]));
        assert!(parts[2].starts_with(&[2, 4]));
        assert!(parts[0].starts_with(&[3]));
        assert_eq!(parts.iter().map(Vec::len).sum::<usize>(), words.len());
        // Each shard answers "is my item's index even": the merge puts the
        // answers back where the items were.
        let answers = parts
            .iter()
            .enumerate()
            .map(|(j, idx)| (j, idx.iter().map(|i| i % 2 == 0).collect()))
            .collect();
        let merged = merge(words.len(), &parts, answers).unwrap();
        let want: Vec<bool> = (0..words.len()).map(|i| i % 2 == 0).collect();
        assert_eq!(merged, want);
    }

    #[test]
    fn a_short_answer_is_an_error() {
        let items = Items::collect(["a", "b", "c"]);
        let parts = split(&items, 2);
        let mut answers: Vec<(usize, Vec<bool>)> = parts
            .iter()
            .enumerate()
            .map(|(j, p)| (j, vec![true; p.len()]))
            .collect();
        answers[0].1.push(true);
        assert!(merge(3, &parts, answers).is_err());
        assert!(merge(3, &parts, vec![]).is_err());
    }
}
