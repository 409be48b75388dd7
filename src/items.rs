//! The items of one operation, kept whole for as long as it runs.
//!
//! An operation may meet several snapshots of a filter (a reload after a
//! rotation, a re-created filter, a conversion), and which of them needs the
//! items' own bytes (a RedisBloom generation, an adopted legacy bitmap)
//! rather than their MD5 cannot be known from the first. So every item is
//! kept, in one buffer: one copy per item into a growing vector costs far
//! less than hashing it, and no later snapshot can find an item missing.

/// Items in input order, in one contiguous buffer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Items {
    bytes: Vec<u8>,
    /// The end of each item in `bytes`.
    ends: Vec<usize>,
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
            out.bytes.extend_from_slice(item.as_ref());
            out.ends.push(out.bytes.len());
        }
        out
    }

    pub fn len(&self) -> usize {
        self.ends.len()
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
/// there; the hashes are when a generation of the snapshot the request is
/// built from places items by their hash (all of them or none).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Batch<'a> {
    pub hashes: &'a [crate::hashing::ItemHash],
    pub items: &'a Items,
}

impl<'a> Batch<'a> {
    pub fn item(&self, i: usize) -> Option<&'a [u8]> {
        self.items.get(i)
    }

    pub fn hash(&self, i: usize) -> Option<&'a crate::hashing::ItemHash> {
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
}
