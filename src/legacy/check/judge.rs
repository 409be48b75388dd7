//! The verdict on a measurement: what cannot be adopted is refused, what
//! is merely improbable for the parameters becomes a doubt that only
//! items known to be in the bitmap can lift.

use super::measure::Found;
use super::refuse;
use crate::error::{Error, Result};
use crate::legacy::Legacy;
use crate::store::generation::Layout;

/// Odds below which a shape is called improbable: 2^-30, about one in a
/// billion.
const IMPROBABLE_LOG2: f64 = -30.0;

/// The share of new items a legacy bitmap may answer "seen" at most: above
/// it the bitmap is refused as saturated.
pub(crate) const SATURATED: f64 = 0.5;

/// What the measurement says.
#[derive(Debug)]
pub(crate) struct Verdict {
    /// Estimated distinct items the bitmap holds.
    pub items: f64,
    /// The share of new items it would answer "seen".
    pub fpr: f64,
    /// The keys that exist, with their block index: the ones to move.
    pub sources: Vec<(String, u32)>,
    /// A shape improbable for the parameters: refused unless items known
    /// to be in the bitmap are found in it.
    pub doubt: Option<Error>,
}

/// The refusal of a key of another type; a set gets the way out.
fn wrong_type(f: &Found) -> Error {
    if f.ty == "set" {
        return refuse(
            &f.key,
            "it is a Redis set, not a bitmap. scrapy-redis's own RFPDupeFilter keeps its request \
             fingerprints in a set, which holds them exactly and cannot become a Bloom filter's \
             bits; to keep what it has seen, create an expanding filter and load the set's \
             members into it (`redis-cli --raw SMEMBERS KEY | rotabloom load NAME -`), then \
             use rotabloom's Scrapy dupefilter with ROTABLOOM_FINGERPRINT = \"scrapy-redis\" \
             (see \"scrapy-redis's SET dupefilter\" in rotabloom's documentation of legacy \
             filters)"
                .into(),
        );
    }
    Error::WrongType {
        key: f.key.clone(),
        found: f.ty.clone(),
        expected: "string (a legacy Bloom-filter bitmap)",
    }
}

/// The `BLOOMFILTER_BIT` values a bitmap of `len` bytes holding at least
/// `items` items fits: the highest set bit lies in the last byte, so
/// `2^bit > 8 (len - 1)`; and the odds that every item's uniformly placed
/// bit falls in the first `len` bytes, `(8 len / 2^bit)^items`, are at
/// least 2^-30.
fn fitting_bits(len: u64, items: f64) -> (u32, u32) {
    let last = 8 * len.saturating_sub(1);
    let lo = (64 - last.leading_zeros()).max(3);
    let hi = if items > 0.0 {
        ((8.0 * len as f64).log2() - IMPROBABLE_LOG2 / items).floor()
    } else {
        32.0
    };
    (lo, hi.clamp(0.0, 32.0) as u32)
}

fn fits_text((lo, hi): (u32, u32)) -> String {
    match lo.cmp(&hi) {
        std::cmp::Ordering::Greater => "no BLOOMFILTER_BIT (3 to 32) fits it".into(),
        std::cmp::Ordering::Equal => format!("it fits BLOOMFILTER_BIT = {lo} only"),
        std::cmp::Ordering::Less => format!("it fits BLOOMFILTER_BIT = {lo} to {hi}"),
    }
}

/// At least this many distinct items set `set` bits with `k` hash
/// functions each.
fn least_items(set: u64, k: u32) -> f64 {
    set.div_ceil(u64::from(k.max(1))) as f64
}

/// Judges the measurement of `legacy` (with its `layout`): an error for
/// what cannot be adopted, a doubt for what is improbable.
pub(crate) fn judge(legacy: &Legacy, layout: &Layout, found: &[Found]) -> Result<Verdict> {
    let source = legacy.source();
    let m = layout.block_bits();
    let k = layout.hashes;
    if let Some(f) = found.iter().find(|f| f.ty != "string" && f.ty != "none") {
        return Err(wrong_type(f));
    }
    let present: Vec<(u32, &Found)> = (0u32..)
        .zip(found)
        .filter(|(_, f)| f.ty == "string")
        .collect();
    if present.is_empty() {
        return Err(refuse(
            source,
            match legacy {
                Legacy::ScrapyRedisBloomfilter { .. } => {
                    "there is no such key: check its name (scrapy-redis-bloomfilter 0.8 names it \
                     SPIDER:bloomfilter, older versions SPIDER:dupefilter) and that the crawler \
                     kept it (SCHEDULER_PERSIST = True; otherwise it deletes the key when it \
                     stops)"
                        .to_string()
                }
                Legacy::Seed000 { prefix, blocks } => format!(
                    "none of the keys {prefix}0 to {prefix}{} exists: check the prefix and \
                     blockNum",
                    blocks.saturating_sub(1)
                ),
            },
        ));
    }
    for (_, f) in &present {
        if f.len.saturating_mul(8) > m {
            return Err(match legacy {
                Legacy::ScrapyRedisBloomfilter { bit, .. } => Error::InvalidParameter {
                    name: "bit",
                    reason: format!(
                        "{:?} is {} bytes, longer than a bitmap of BLOOMFILTER_BIT = {bit} \
                         ({} bytes) can be; {}",
                        f.key,
                        f.len,
                        m / 8,
                        fits_text(fitting_bits(f.len, least_items(f.set, k)))
                    ),
                },
                Legacy::Seed000 { .. } => refuse(
                    &f.key,
                    format!(
                        "it is {} bytes, longer than seed 000's blocks of 2^31 bits ({} bytes) \
                         can be: not a seed-000 block",
                        f.len,
                        m / 8
                    ),
                ),
            });
        }
    }
    let set: u64 = present.iter().map(|(_, f)| f.set).sum();
    if set == 0 {
        let bytes: u64 = present.iter().map(|(_, f)| f.len).sum();
        return Err(refuse(
            source,
            format!(
                "no bit is set in its {bytes} bytes: it holds no item, there is nothing to \
                 adopt (create the filter instead, or check the key)"
            ),
        ));
    }
    // Items choose a block uniformly, so the share answered "seen" is the
    // mean of the blocks' rates; a missing block answers "absent".
    let blocks = f64::from(layout.blocks.max(1));
    let fpr = present
        .iter()
        .map(|(_, f)| (f.set as f64 / m as f64).powi(k as i32))
        .sum::<f64>()
        / blocks;
    if fpr >= SATURATED {
        return Err(refuse(
            source,
            format!(
                "{set} of its {} bits are set: with {k} hash functions it would answer \"seen\" \
                 for {:.0}% of all new items (saturated, or the hash count is too small)",
                m * u64::from(layout.blocks),
                fpr * 100.0
            ),
        ));
    }
    let items = present
        .iter()
        .map(|(_, f)| crate::params::estimate_items(m, k, f.set))
        .sum();
    Ok(Verdict {
        items,
        fpr,
        sources: present.iter().map(|(b, f)| (f.key.clone(), *b)).collect(),
        doubt: doubt(legacy, layout, found),
    })
}

/// The first improbable thing about the shape of the bitmap, if any.
fn doubt(legacy: &Legacy, layout: &Layout, found: &[Found]) -> Option<Error> {
    let m = layout.block_bits();
    let k = layout.hashes;
    match legacy {
        // The first hash is the sum of the code points, which never leaves
        // the first few thousand bits; the others place each item's bits
        // uniformly. With one hash the length says nothing.
        Legacy::ScrapyRedisBloomfilter { bit, .. } if k >= 2 => {
            let f = found.first()?;
            let (lo, hi) = fitting_bits(f.len, least_items(f.set, k));
            (*bit > hi).then(|| Error::InvalidParameter {
                name: "bit",
                reason: format!(
                    "{:?} is {} bytes with {} bits set; a bitmap of BLOOMFILTER_BIT = {bit} \
                     would have them spread over {} bytes, and the odds that all of them lie \
                     in the first {} are below one in a billion: {}. If {bit} is right, verify \
                     it with items known to be in the bitmap",
                    f.key,
                    f.len,
                    f.set,
                    m / 8,
                    f.len,
                    fits_text((lo, hi))
                ),
            })
        }
        Legacy::ScrapyRedisBloomfilter { .. } => None,
        Legacy::Seed000 { blocks, .. } => {
            for f in found.iter().filter(|f| f.set > 0) {
                let c = (8.0 * f.len as f64 / m as f64).min(1.0);
                if least_items(f.set, k) * c.log2() < IMPROBABLE_LOG2 {
                    return Some(refuse(
                        &f.key,
                        format!(
                            "it is {} bytes with {} bits set; seed 000 spreads them over its \
                             blocks of 2^31 bits ({} bytes), and the odds that all of them lie \
                             in the first {} are below one in a billion (a copy with a smaller \
                             bit_size?). If it is seed 000's layout, verify it with items known \
                             to be in the bitmap",
                            f.len,
                            f.set,
                            m / 8,
                            f.len
                        ),
                    ));
                }
            }
            // Each item goes to block `md5[0] mod blockNum`: a block no
            // item went to is improbable once the others hold many.
            let items: f64 = found.iter().map(|f| least_items(f.set, k)).sum();
            let share = f64::from(256 / (*blocks).max(1)) / 256.0;
            let empty = found.iter().find(|f| f.set == 0)?;
            (items * (1.0 - share).log2() < IMPROBABLE_LOG2).then(|| Error::InvalidParameter {
                name: "blocks",
                reason: format!(
                    "{:?} {} although the other blocks hold at least {items} items, and with \
                     blockNum = {blocks} about one item in {blocks} goes to each block: check \
                     blockNum and the prefix, or verify them with items known to be in the \
                     bitmap",
                    empty.key,
                    match empty.ty.as_str() {
                        "none" => "does not exist",
                        _ => "holds no set bit",
                    }
                ),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{other, scrapy, seed, string};
    use super::*;

    fn reason(e: Error) -> String {
        match e {
            Error::NotAdoptable { reason, .. } | Error::InvalidParameter { reason, .. } => reason,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_cannot_be_adopted_is_refused() {
        let (l, layout) = scrapy(20, 6);
        let e = judge(&l, &layout, &[other("spider:bloomfilter", "none")]).unwrap_err();
        assert!(matches!(&e, Error::NotAdoptable { key, .. } if key == "spider:bloomfilter"));
        assert!(e.to_string().contains("no such key"), "{e}");
        let e = judge(&l, &layout, &[other("spider:bloomfilter", "set")]).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("is a Redis set"), "{text}");
        assert!(text.contains("rotabloom load NAME -"), "{text}");
        assert!(text.contains("ROTABLOOM_FINGERPRINT"), "{text}");
        let e = judge(&l, &layout, &[other("spider:bloomfilter", "list")]).unwrap_err();
        assert!(
            matches!(&e, Error::WrongType { found, .. } if found == "list"),
            "{e}"
        );
        assert!(e.to_string().contains("holds a Redis list"), "{e}");
        // 2^20 bits are 131072 bytes; this is a bitmap of 2^21 bits.
        let e = judge(&l, &layout, &[string("spider:bloomfilter", 262_144, 5000)]).unwrap_err();
        assert!(matches!(e, Error::InvalidParameter { name: "bit", .. }));
        assert!(reason(e).ends_with("it fits BLOOMFILTER_BIT = 21 only"));
        let e = judge(&l, &layout, &[string("spider:bloomfilter", 131_073, 5000)]).unwrap_err();
        assert!(reason(e).starts_with("\"spider:bloomfilter\" is 131073 bytes, longer than a bitmap of BLOOMFILTER_BIT = 20 (131072 bytes) can be"));
        let e = judge(&l, &layout, &[string("spider:bloomfilter", 131_072, 0)]).unwrap_err();
        assert!(reason(e).starts_with("no bit is set in its 131072 bytes"));
        let e = judge(
            &l,
            &layout,
            &[string("spider:bloomfilter", 131_072, 1_000_000)],
        )
        .unwrap_err();
        assert!(reason(e).contains("for 75% of all new items"));
        // A bitmap that fits is adopted, with its estimate.
        let v = judge(&l, &layout, &[string("spider:bloomfilter", 131_072, 6000)]).unwrap();
        assert!(v.doubt.is_none());
        assert!((v.items - 1003.0).abs() < 1.0, "{}", v.items);
        assert!(v.fpr > 0.0 && v.fpr < 1e-8, "{}", v.fpr);
        assert_eq!(v.sources, vec![("spider:bloomfilter".to_string(), 0)]);
    }

    #[test]
    fn a_bitmap_far_shorter_than_its_bit_says_is_doubted() {
        // 5,000 fingerprints written with BLOOMFILTER_BIT = 24 set about
        // 27,000 bits of a 2 MiB string.
        let (l, layout) = scrapy(30, 6);
        let found = [string("spider:bloomfilter", 1 << 21, 27_000)];
        let v = judge(&l, &layout, &found).unwrap();
        let doubt = reason(v.doubt.unwrap());
        assert!(doubt.ends_with("it fits BLOOMFILTER_BIT = 24 only. If 30 is right, verify it with items known to be in the bitmap"), "{doubt}");
        let (l, layout) = scrapy(24, 6);
        assert!(judge(&l, &layout, &found).unwrap().doubt.is_none());
        // A few items say little: 6 bits in 1000 bytes fit any bit.
        let (l, layout) = scrapy(30, 6);
        let few = [string("spider:bloomfilter", 1000, 6)];
        assert!(judge(&l, &layout, &few).unwrap().doubt.is_none());
        // One hash function is the sum of code points: no doubt at all.
        let (l, layout) = scrapy(30, 1);
        assert!(judge(&l, &layout, &found).unwrap().doubt.is_none());
    }

    #[test]
    fn fitting_bits_brackets_the_length() {
        // A bitmap of 2^b bits with many items is 2^(b-3) bytes.
        for b in 3..=32 {
            assert_eq!(fitting_bits(1 << (b - 3), 1e6), (b, b), "{b}");
        }
        assert_eq!(fitting_bits(1 << 21, 1.0), (24, 32));
        assert_eq!(fitting_bits(1 << 21, 10.0), (24, 27));
        assert_eq!(fitting_bits(1, 1e6), (3, 3));
        // 3 bytes with many items: the last byte says bit >= 5, the
        // items say 4.
        assert_eq!(
            fits_text(fitting_bits(3, 1e6)),
            "no BLOOMFILTER_BIT (3 to 32) fits it"
        );
    }

    #[test]
    fn seed000_blocks_are_judged_one_by_one() {
        let (l, layout) = seed(2);
        let found = [string("bf0", 1 << 28, 70_000), other("bf1", "none")];
        let v = judge(&l, &layout, &found).unwrap();
        assert_eq!(v.sources, vec![("bf0".to_string(), 0)]);
        let doubt = v.doubt.unwrap();
        assert!(matches!(
            doubt,
            Error::InvalidParameter { name: "blocks", .. }
        ));
        assert!(reason(doubt).starts_with("\"bf1\" does not exist although"));
        // One item in block 0: block 1 may well be empty.
        let found = [string("bf0", 1544, 7), other("bf1", "none")];
        assert!(judge(&l, &layout, &found).unwrap().doubt.is_none());
        let e = judge(&l, &layout, &[other("bf0", "none"), other("bf1", "none")]).unwrap_err();
        assert!(
            e.to_string().contains("none of the keys bf0 to bf1 exists"),
            "{e}"
        );
        let e = judge(
            &l,
            &layout,
            &[string("bf0", (1 << 28) + 1, 7), other("bf1", "none")],
        )
        .unwrap_err();
        assert!(
            matches!(&e, Error::NotAdoptable { key, .. } if key == "bf0"),
            "{e}"
        );
        // 70,000 bits in 2 MiB of a 256 MiB block.
        let found = [
            string("bf0", 1 << 21, 70_000),
            string("bf1", 1 << 28, 70_000),
        ];
        let doubt = judge(&l, &layout, &found).unwrap().doubt.unwrap();
        assert!(matches!(&doubt, Error::NotAdoptable { key, .. } if key == "bf0"));
    }
}
