//! What an adoption checks before anything moves (docs/LEGACY.md §7), as
//! pure code: the requests it reads with, and its verdicts on the replies.
//!
//! A legacy crawler's parameters are not stored in Redis; they come from
//! its settings, and a wrong one makes the adopted generation answer
//! "absent" for everything it held. So the bitmap is measured first
//! (`TYPE`, `STRLEN`, `BITCOUNT`) and judged against the parameters:
//! what cannot be (a missing key, another type, a string longer than the
//! parameters allow, no bit set, a saturated bitmap) is refused; what is
//! merely improbable (a string far shorter than its set bits would make
//! it, a missing block) is refused unless items known to be in the bitmap
//! are found in it with these parameters.

use super::Legacy;
use crate::error::{Error, Result};
use crate::exec::{Replies, Request};
use crate::generation::Layout;
use crate::hashing::ItemHash;
use crate::metadata::field;
use crate::proto::{as_string, unexpected};
use crate::view::View;
use redis::Value;

/// Odds below which a shape is called improbable: 2^-30, about one in a
/// billion.
const IMPROBABLE_LOG2: f64 = -30.0;

/// The share of new items a legacy bitmap may answer "seen" at most: above
/// it the bitmap is refused as saturated.
pub(crate) const SATURATED: f64 = 0.5;

/// One legacy key as measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub key: String,
    /// Its Redis type (`none` when it does not exist).
    pub ty: String,
    /// Bytes (strings only).
    pub len: u64,
    /// Bits set (strings only).
    pub set: u64,
}

/// `TYPE`, `STRLEN` and `BITCOUNT` of each key, in one round trip.
pub(crate) fn measure_request(keys: &[String]) -> Request {
    let mut req = Request::new().read_only();
    for k in keys {
        req.push(redis::cmd("TYPE").arg(k).clone(), None);
        req.push(redis::cmd("STRLEN").arg(k).clone(), None);
        req.push(redis::cmd("BITCOUNT").arg(k).clone(), None);
    }
    req
}

fn int(what: &str, reply: redis::RedisResult<Value>) -> Result<u64> {
    match reply? {
        Value::Int(i) => {
            u64::try_from(i).map_err(|_| Error::UnexpectedReply(format!("{what}: {i}")))
        }
        v => Err(unexpected(what, &v)),
    }
}

/// The measurement of each key. `STRLEN` and `BITCOUNT` of a key that is
/// not a string fail (WRONGTYPE); its type says why.
pub(crate) fn decode_measure(keys: &[String], replies: Replies) -> Result<Vec<Found>> {
    if replies.len() != 3 * keys.len() {
        return Err(Error::Internal(format!(
            "{} replies to the measurement of {} keys",
            replies.len(),
            keys.len()
        )));
    }
    let mut replies = replies.into_iter();
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let (Some(ty), Some(len), Some(set)) = (replies.next(), replies.next(), replies.next())
        else {
            return Err(Error::Internal("a measurement reply is missing".into()));
        };
        let ty = ty?;
        let ty = as_string(&ty).ok_or_else(|| unexpected("TYPE", &ty))?;
        let (len, set) = match ty.as_str() {
            "string" => (int("STRLEN", len)?, int("BITCOUNT", set)?),
            _ => (0, 0),
        };
        out.push(Found {
            key: key.clone(),
            ty,
            len,
            set,
        });
    }
    Ok(out)
}

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

fn refuse(key: &str, reason: String) -> Error {
    Error::NotAdoptable {
        key: key.to_string(),
        reason,
    }
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

/// Compares the legacy generation of an existing filter with `legacy`:
/// scheme, source, blocks, bits and hashes must all be the same. A source
/// not recorded (filters adopted before it was) is not compared.
pub(crate) fn compare(view: &View, legacy: &Legacy, layout: &Layout) -> Result<()> {
    let Some(g) = view.gens.first() else {
        return Err(Error::Internal(
            "an adopted filter without generations".into(),
        ));
    };
    let have = &g.layout;
    let bits = |l: &Layout| match legacy {
        Legacy::ScrapyRedisBloomfilter { .. } if l.bits.is_power_of_two() => {
            format!("{} (BLOOMFILTER_BIT = {})", l.bits, l.bits.trailing_zeros())
        }
        _ => l.bits.to_string(),
    };
    let recorded = view
        .fields
        .raw
        .get(field::LEGACY_SOURCE)
        .map(|v| String::from_utf8_lossy(v).into_owned());
    let pairs = [
        (
            field::gen(g.seq, field::G_SCHEME),
            have.scheme.as_str().to_string(),
            layout.scheme.as_str().to_string(),
        ),
        (
            field::LEGACY_SOURCE.to_string(),
            recorded.unwrap_or_else(|| legacy.source().to_string()),
            legacy.source().to_string(),
        ),
        (
            field::gen(g.seq, field::G_BLOCKS),
            have.blocks.to_string(),
            layout.blocks.to_string(),
        ),
        (field::gen(g.seq, field::G_BITS), bits(have), bits(layout)),
        (
            field::gen(g.seq, field::G_HASHES),
            have.hashes.to_string(),
            layout.hashes.to_string(),
        ),
    ];
    for (field, stored, requested) in pairs {
        if stored != requested {
            return Err(Error::ParameterMismatch {
                name: view.name.clone(),
                field,
                stored,
                requested,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{fields, server_error};
    use crate::view::Accept;

    fn scrapy(bit: u32, hashes: u32) -> (Legacy, Layout) {
        let l = Legacy::ScrapyRedisBloomfilter {
            key: "spider:bloomfilter".into(),
            bit,
            hashes,
        };
        let layout = l.layout().unwrap();
        (l, layout)
    }

    fn seed(blocks: u32) -> (Legacy, Layout) {
        let l = Legacy::Seed000 {
            prefix: "bf".into(),
            blocks,
        };
        let layout = l.layout().unwrap();
        (l, layout)
    }

    fn string(key: &str, len: u64, set: u64) -> Found {
        Found {
            key: key.into(),
            ty: "string".into(),
            len,
            set,
        }
    }

    fn other(key: &str, ty: &str) -> Found {
        Found {
            key: key.into(),
            ty: ty.into(),
            len: 0,
            set: 0,
        }
    }

    fn reason(e: Error) -> String {
        match e {
            Error::NotAdoptable { reason, .. } | Error::InvalidParameter { reason, .. } => reason,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_measurement_names_each_keys_type() {
        let keys = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let req = measure_request(&keys);
        assert_eq!(req.len(), 9);
        assert_eq!(req.args(0), ["TYPE", "a"]);
        assert_eq!(req.args(8), ["BITCOUNT", "c"]);
        assert!(!req.writes());
        let wrongtype = || Err(server_error("WRONGTYPE Operation against a key"));
        let replies = vec![
            Ok(Value::SimpleString("string".into())),
            Ok(Value::Int(1000)),
            Ok(Value::Int(42)),
            Ok(Value::SimpleString("set".into())),
            wrongtype(),
            wrongtype(),
            Ok(Value::SimpleString("none".into())),
            Ok(Value::Int(0)),
            Ok(Value::Int(0)),
        ];
        let found = decode_measure(&keys, replies).unwrap();
        assert_eq!(found[0], string("a", 1000, 42));
        assert_eq!(found[1], other("b", "set"));
        assert_eq!(found[2], other("c", "none"));
        assert!(decode_measure(&keys, vec![]).is_err());
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

    /// An adopted filter's view: gen 0 the legacy bitmap.
    fn adopted(source: Option<&str>) -> View {
        let mut f = fields("expanding", 2, 0);
        for (k, v) in [
            ("gen.0.scheme", "scrapy-redis-bloomfilter"),
            ("gen.0.bits", "16777216"),
            ("gen.0.hashes", "6"),
            ("legacy_gens", "1"),
        ] {
            f.raw.insert(k.into(), v.as_bytes().to_vec());
        }
        if let Some(s) = source {
            f.raw.insert("legacy_source".into(), s.as_bytes().to_vec());
        }
        View::decode(f, None, "fence", Accept::Any(crate::testkit::ALL)).unwrap()
    }

    #[test]
    fn adopting_again_compares_every_legacy_parameter() {
        let view = adopted(Some("spider:bloomfilter"));
        let (l, layout) = scrapy(24, 6);
        compare(&view, &l, &layout).unwrap();
        let mismatch = |l: Legacy| {
            let layout = l.layout().unwrap();
            match compare(&view, &l, &layout).unwrap_err() {
                Error::ParameterMismatch {
                    field,
                    stored,
                    requested,
                    ..
                } => (field, stored, requested),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(
            mismatch(scrapy(30, 6).0),
            (
                "gen.0.bits".to_string(),
                "16777216 (BLOOMFILTER_BIT = 24)".to_string(),
                "1073741824 (BLOOMFILTER_BIT = 30)".to_string()
            )
        );
        assert_eq!(mismatch(scrapy(24, 5).0).0, "gen.0.hashes");
        assert_eq!(
            mismatch(Legacy::ScrapyRedisBloomfilter {
                key: "other".into(),
                bit: 24,
                hashes: 6
            })
            .0,
            "legacy_source"
        );
        assert_eq!(mismatch(seed(1).0).0, "gen.0.scheme");
        // Filters adopted before the source was recorded: not compared.
        let old = adopted(None);
        let other = Legacy::ScrapyRedisBloomfilter {
            key: "other".into(),
            bit: 24,
            hashes: 6,
        };
        compare(&old, &other, &layout).unwrap();
    }
}
