//! A batch's items split by shard, and the shards' results put back in
//! input order: every answer a shard gave is kept whatever another shard
//! did, and every item no shard answered is named with its shard's error
//! (pure: no I/O).

use crate::error::{Error, Partial, Result, ShardFailure};
use crate::hashing::ItemHash;
use crate::items::Items;

/// A batch's items placed on its shards.
pub(super) struct Split {
    /// Each shard's items, with the MD5s that placed them.
    pub items: Vec<Items>,
    /// The batch indices of each shard's items, in input order.
    pub parts: Vec<Vec<usize>>,
    /// How many items the batch holds.
    pub len: usize,
}

/// `items` placed on `shards` shards by their MD5 (docs/FORMAT.md §11.3),
/// each copied once into its shard's items with that MD5, which its
/// shard's data machine then uses for its bits rather than hashing again.
/// One shard holds every item unhashed (any MD5 places an item there), so
/// that its machine hashes only for a generation that places bits by them.
pub(super) fn split<I>(items: I, shards: u32) -> Split
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    let n = shards.max(1) as usize;
    let mut out = Split {
        items: vec![Items::default(); n],
        parts: vec![Vec::new(); n],
        len: 0,
    };
    let mut hashes = vec![Vec::new(); n];
    for item in items {
        let item = item.as_ref();
        let j = match n {
            1 => 0,
            _ => {
                let h = ItemHash::of(item);
                let j = h.shard(shards) as usize;
                hashes[j].push(h);
                j
            }
        };
        out.items[j].push(item);
        out.parts[j].push(out.len);
        out.len += 1;
    }
    if n > 1 {
        let placed = out.items.into_iter().zip(hashes);
        out.items = placed.map(|(i, h)| i.with_hashes(h)).collect();
    }
    out
}

/// What one shard's result leaves: its part's answers (by position in the
/// part) and its failures (positions in the part).
fn unpack(part_len: usize, result: Result<Vec<bool>>) -> (Vec<Option<bool>>, Vec<ShardFailure>) {
    let mut answers = vec![None; part_len];
    let failures = match result {
        Ok(a) if a.len() == part_len => {
            answers = a.into_iter().map(Some).collect();
            Vec::new()
        }
        Ok(a) => {
            let e = Error::Internal(format!("a shard answered {} items of {part_len}", a.len()));
            vec![ShardFailure::new(0, (0..part_len).collect(), e)]
        }
        // A full generation answered a prefix of the part, refused the rest.
        Err(Error::Full {
            name,
            capacity,
            count,
            answered,
        }) => {
            let n = answered.len().min(part_len);
            for (slot, a) in answers.iter_mut().zip(answered) {
                *slot = Some(a);
            }
            let full = Error::Full {
                name,
                capacity,
                count,
                answered: Vec::new(),
            };
            vec![ShardFailure::new(0, (n..part_len).collect(), full)]
        }
        // A long part: its earlier steps answered.
        Err(Error::Partial(p)) if p.answers.len() == part_len => {
            answers = p.answers;
            p.failures
        }
        Err(e) => vec![ShardFailure::new(0, (0..part_len).collect(), e)],
    };
    (answers, failures)
}

/// Every shard's result put back at its items' places: the answers when
/// every item has one; else, when one shard held the whole batch, its
/// error as it is; else [`Error::Partial`], every answer given kept and
/// each failed shard's items named. `results` holds a result for each
/// shard with items (one missing is a failure of its own).
pub(super) fn gather(
    name: &str,
    len: usize,
    parts: &[Vec<usize>],
    results: Vec<(usize, Result<Vec<bool>>)>,
) -> Result<Vec<bool>> {
    let mut answers: Vec<Option<bool>> = vec![None; len];
    let mut failures: Vec<ShardFailure> = Vec::new();
    let mut given = vec![false; parts.len()];
    let mut results: Vec<_> = results
        .into_iter()
        .filter(|(j, _)| *j < parts.len() && !std::mem::replace(&mut given[*j], true))
        .collect();
    for (j, idx) in parts.iter().enumerate() {
        if !idx.is_empty() && !given[j] {
            let e = Error::Internal(format!("shard {j} gave no result"));
            results.push((j, Err(e)));
        }
    }
    results.sort_by_key(|(j, _)| *j);
    for (j, result) in results {
        let idx = &parts[j];
        // One shard held every item: its error needs no mapping.
        if idx.len() == len && result.is_err() {
            return result;
        }
        let (part_answers, part_failures) = unpack(idx.len(), result);
        for (&i, a) in idx.iter().zip(part_answers) {
            answers[i] = a;
        }
        for mut f in part_failures {
            f.shard = j as u32;
            f.items = f
                .items
                .iter()
                .filter_map(|&k| idx.get(k).copied())
                .collect();
            failures.push(f);
        }
    }
    if failures.is_empty() {
        if let Some(answers) = answers.iter().copied().collect::<Option<Vec<bool>>>() {
            return Ok(answers);
        }
        return Err(Error::Internal(format!(
            "{} of {len} items have no answer",
            answers.iter().filter(|a| a.is_none()).count()
        )));
    }
    // The whole filter gone under the handle, before any shard answered:
    // that, not a partial answer of none.
    let whole = |e: &Error| matches!(e, Error::NotFound { .. } | Error::Recreated { .. });
    if answers.iter().all(Option::is_none) && failures.iter().all(|f| whole(&f.error)) {
        let mut failures = failures;
        if !failures.is_empty() {
            return Err(failures.swap_remove(0).error);
        }
        return Err(Error::Internal(format!("{len} items have no answer")));
    }
    Err(Error::Partial(Box::new(Partial::new(
        name, answers, failures,
    ))))
}

#[cfg(test)]
mod tests;
