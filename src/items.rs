//! The items of one operation, kept whole for as long as it runs.
//!
//! An operation may meet several snapshots of a filter (a reload after a
//! rotation, a re-created filter, a conversion), and which of them needs the
//! items' own bytes (a RedisBloom generation, an adopted legacy bitmap)
//! rather than their MD5 cannot be known from the first. So every item is
//! kept, in one buffer: one copy per item into a growing vector costs far
//! less than hashing it, and no later snapshot can find an item missing.
//!
//! That copy is the only one before a request's arguments: the buffer is
//! shared (an `Arc`) by every run of the operation, not copied for each.
//! Its MD5s are kept beside it, made at most once: with the items when
//! they are placed by them (a sharded filter's shards), else by the first
//! snapshot that places bits by them.

use crate::hashing::ItemHash;
use std::sync::OnceLock;

/// Items in input order, in one contiguous buffer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Items {
    bytes: Vec<u8>,
    /// The end of each item in `bytes`.
    ends: Vec<usize>,
    /// Every item's MD5, or none yet.
    hashes: OnceLock<Vec<ItemHash>>,
}

impl Items {
    /// Copies `items` in.
    pub fn collect<I>(items: I) -> Items
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let mut out = Items::default();
        for item in items {
            out.push(item.as_ref());
        }
        out
    }

    /// Copies `item` in, after the others.
    pub fn push(&mut self, item: &[u8]) {
        self.bytes.extend_from_slice(item);
        self.ends.push(self.bytes.len());
    }

    /// The items with `hashes`, one per item in order, as their MD5s.
    pub fn with_hashes(self, hashes: Vec<ItemHash>) -> Items {
        Items {
            hashes: OnceLock::from(hashes),
            ..self
        }
    }

    /// Every item's MD5, made now unless it was before.
    pub fn hash_all(&self) {
        self.hashes
            .get_or_init(|| self.iter().map(ItemHash::of).collect());
    }

    /// The items' MD5s if they were made (every one), else none.
    pub fn hashes(&self) -> &[ItemHash] {
        self.hashes.get().map_or(&[], Vec::as_slice)
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Item `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)?;
        let start = match i {
            0 => 0,
            _ => *self.ends.get(i - 1)?,
        };
        self.bytes.get(start..end)
    }

    /// Every item, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).filter_map(move |i| self.get(i))
    }
}

/// The items of one operation and their hashes. The items are always
/// there; the hashes (all of them or none) whenever a generation of the
/// snapshot the request is built from places items by their hash, and
/// earlier when they were made with the items (a sharded filter's).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Batch<'a> {
    pub hashes: &'a [ItemHash],
    pub items: &'a Items,
}

impl<'a> Batch<'a> {
    pub fn item(&self, i: usize) -> Option<&'a [u8]> {
        self.items.get(i)
    }

    pub fn hash(&self, i: usize) -> Option<&'a ItemHash> {
        self.hashes.get(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_back_as_given_empty_ones_included() {
        let given: Vec<&[u8]> = vec![b"a", b"", b"bcd", b""];
        let items = Items::collect(&given);
        assert_eq!(items.len(), 4);
        assert_eq!(items.iter().collect::<Vec<_>>(), given);
        assert_eq!(items.get(2), Some(&b"bcd"[..]));
        assert_eq!(items.get(4), None);
        assert_eq!(Items::collect(Vec::<&[u8]>::new()).len(), 0);
    }

    #[test]
    fn hashes_are_made_once_and_kept() {
        let items = Items::collect(["a", "b"]);
        assert!(items.hashes().is_empty());
        items.hash_all();
        let made = items.hashes().to_vec();
        assert_eq!(made, vec![ItemHash::of("a"), ItemHash::of("b")]);
        let given = Items::collect(["a"]).with_hashes(vec![ItemHash::of("z")]);
        given.hash_all();
        assert_eq!(given.hashes(), &[ItemHash::of("z")]);
    }
}
