//! The verification with items known to be in the bitmap: their bits
//! read where the legacy code put them, and the refusal that names the
//! first one absent.

use super::{int, refuse};
use crate::error::{Error, Result};
use crate::hashing::ItemHash;
use crate::legacy::Legacy;
use crate::request::{Replies, Request};
use crate::store::generation::Layout;

/// How many known items one verification round reads (a `GETBIT` per
/// hash function each).
pub(crate) const VERIFY_COMMANDS: usize = 4096;

/// Items per verification round with `k` hash functions.
pub(crate) fn verify_chunk(k: u32) -> usize {
    (VERIFY_COMMANDS / (k.max(1) as usize)).max(1)
}

/// The `GETBIT`s that read `items`' bits where the legacy code put them:
/// block `b` of the layout is `keys[b]`. `GETBIT` rather than `BITFIELD
/// GET`: it is a read, allowed under maxmemory and on replicas.
pub(crate) fn verify_request(layout: &Layout, keys: &[String], items: &[Vec<u8>]) -> Request {
    let mut req = Request::new().read_only();
    for item in items {
        let (block, positions) = layout.locate(&ItemHash::of(item), Some(item));
        let key = keys.get(block as usize).map_or("", String::as_str);
        for p in positions {
            req.push(redis::cmd("GETBIT").arg(key).arg(p).clone(), None);
        }
    }
    req
}

/// Whether each of `items` is present: every one of its bits set.
pub(crate) fn decode_verify(
    layout: &Layout,
    items: &[Vec<u8>],
    replies: Replies,
) -> Result<Vec<bool>> {
    let k = layout.hashes as usize;
    if replies.len() != k * items.len() {
        return Err(Error::Internal(format!(
            "{} replies to {} GETBITs",
            replies.len(),
            k * items.len()
        )));
    }
    let mut replies = replies.into_iter();
    let mut out = Vec::with_capacity(items.len());
    for _ in items {
        let mut all = true;
        for r in replies.by_ref().take(k) {
            all &= int("GETBIT", r)? == 1;
        }
        out.push(all);
    }
    Ok(out)
}

/// The refusal when `absent` of `total` known items are not in the bitmap.
pub(crate) fn unverified(
    legacy: &Legacy,
    absent: u64,
    total: u64,
    first: &[u8],
    doubt: Option<&Error>,
) -> Error {
    let text = String::from_utf8_lossy(first);
    let mut shown: String = text.chars().take(100).collect();
    if text.chars().count() > 100 {
        shown.push('…');
    }
    let check = match legacy {
        Legacy::ScrapyRedisBloomfilter { .. } => {
            "check BLOOMFILTER_BIT and BLOOMFILTER_HASH_NUMBER, and that the items are what \
             the crawler stored (its dupefilter stores 40-hex-digit request fingerprints, not \
             URLs)"
        }
        Legacy::Seed000 { .. } => {
            "check blockNum and the prefix, and that the items are the crawler's"
        }
    };
    let also = doubt.map(|d| format!("; also: {d}")).unwrap_or_default();
    refuse(
        legacy.source(),
        format!(
            "{absent} of the {total} items known to be in it are absent with these parameters \
             (the first: {shown:?}): {check}{also}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{scrapy, seed};
    use super::*;
    use redis::Value;

    #[test]
    fn known_items_are_read_where_the_legacy_code_put_them() {
        // Vector A2 of docs/LEGACY.md.
        let (_, layout) = scrapy(30, 6);
        let items = vec![
            b"8e7f80913230debca7264dfb3c055dcda5aaf9f8".to_vec(),
            b"other".to_vec(),
        ];
        let req = verify_request(&layout, &["k".to_string()], &items);
        assert_eq!(req.len(), 12);
        assert!(!req.writes());
        let first: Vec<String> = (0..6).map(|i| req.args(i)[2].clone()).collect();
        assert_eq!(
            first,
            [
                "2994",
                "125716232",
                "402029358",
                "982356960",
                "384790866",
                "796765408"
            ]
        );
        assert_eq!(req.args(0)[..2], ["GETBIT", "k"]);
        let mut replies: Replies = (0..12).map(|_| Ok(Value::Int(1))).collect();
        replies[8] = Ok(Value::Int(0));
        assert_eq!(
            decode_verify(&layout, &items, replies).unwrap(),
            [true, false]
        );
        assert!(decode_verify(&layout, &items, vec![]).is_err());
        // Seed 000: vector B3, block 1 of 3.
        let (_, layout) = seed(3);
        let keys: Vec<String> = (0..3).map(|b| format!("crawler:bf:{b}")).collect();
        let req = verify_request(
            &layout,
            &keys,
            &[b"8e7f80913230debca7264dfb3c055dcda5aaf9f8".to_vec()],
        );
        assert_eq!(req.args(0), ["GETBIT", "crawler:bf:1", "811444374"]);
        assert_eq!(verify_chunk(6), 682);
    }

    #[test]
    fn an_absent_known_item_is_named() {
        let (l, _) = scrapy(30, 6);
        let e = unverified(&l, 1, 5000, b"https://example.com/", None);
        let text = e.to_string();
        assert!(text.starts_with("cannot adopt \"spider:bloomfilter\": 1 of the 5000 items known to be in it are absent with these parameters (the first: \"https://example.com/\")"), "{text}");
        assert!(text.contains("40-hex-digit request fingerprints"), "{text}");
        let long = vec![b'x'; 300];
        let text = unverified(&l, 2, 2, &long, None).to_string();
        assert!(
            text.contains(&format!("\"{}…\"", "x".repeat(100))),
            "{text}"
        );
    }
}
