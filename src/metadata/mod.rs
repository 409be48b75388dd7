//! The metadata hash as an input edge: decoding validates and types every
//! field common to all kinds once (docs/FORMAT.md §6.4); each kind's codec
//! does the same for its parameters (see `view`). Nothing downstream parses
//! a stored string again.

pub(crate) mod field;
pub(crate) mod text;

use crate::error::{Error, Result};
use crate::store::generation::{Generation, Layout, Scheme};
use std::fmt;
use std::str::FromStr;
pub(crate) use text::{fmt_f64, Fields};

/// The format version this library writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The `format` value of a sharded filter's root record (docs/FORMAT.md
/// §11): not `1`, so that a reader of format version 1 alone refuses a
/// sharded filter instead of answering.
pub(crate) const SHARDED_FORMAT: &str = "sharded-1";

/// The most generations any filter lists (an expanding filter's limit plus
/// an adopted legacy generation).
pub(crate) const MAX_LISTED: usize = 1025;

/// The three kinds of filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "lowercase")
)]
pub enum Kind {
    /// One generation: [`BloomFilter`](crate::BloomFilter).
    Bloom,
    /// Frozen generations plus a growing newest one:
    /// [`ExpandingFilter`](crate::ExpandingFilter).
    Expanding,
    /// N generations rotated on a schedule:
    /// [`CircularFilter`](crate::CircularFilter).
    Circular,
}

impl Kind {
    /// Every kind, in the order they are listed to users: the one list the
    /// configuration table, the command line's help and completion and the
    /// error messages read, so a new kind is named here and nowhere else
    /// outside its own module (see [`kinds`](crate::kinds)).
    ///
    /// ```
    /// use rotabloom::Kind;
    /// let names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    /// assert_eq!(names, ["bloom", "expanding", "circular"]);
    /// ```
    pub const ALL: &'static [Kind] = &[Kind::Bloom, Kind::Expanding, Kind::Circular];

    /// The kinds' names as a phrase for messages: "bloom, expanding or
    /// circular".
    pub fn choices() -> String {
        crate::words::choices::<Kind>()
    }

    /// The name stored in the metadata hash.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Bloom => "bloom",
            Kind::Expanding => "expanding",
            Kind::Circular => "circular",
        }
    }

    /// "a bloom" / "an expanding" / "a circular", for messages.
    pub fn with_article(self) -> &'static str {
        match self {
            Kind::Bloom => "a bloom",
            Kind::Expanding => "an expanding",
            Kind::Circular => "a circular",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Kind {
    type Err = Error;

    /// ```
    /// use rotabloom::Kind;
    /// assert_eq!("circular".parse::<Kind>().unwrap(), Kind::Circular);
    /// assert!("ring".parse::<Kind>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Kind> {
        crate::words::parse(s)
    }
}

impl crate::words::Choice for Kind {
    const SETTING: &'static str = "kind";
    const ALL: &'static [Kind] = Kind::ALL;
    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// What every kind's metadata holds, decoded and validated.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Common {
    pub name: String,
    pub kind: Kind,
    pub uid: String,
    pub epoch: u64,
    pub cleared: u64,
    pub created_at_ms: i64,
    pub next_seq: u64,
    /// Oldest first; never empty.
    pub gens: Vec<Generation>,
}

impl Common {
    /// Decodes and checks the fields every kind has (§6.1, §6.2, §6.4).
    pub fn decode(f: &Fields) -> Result<Common> {
        // Any other version, readable or not, is one this library does not
        // know: refused as such, not as corruption.
        let format = f
            .raw
            .get(field::FORMAT)
            .ok_or_else(|| f.corrupt(field::FORMAT, "missing"))?;
        if format.as_slice() != FORMAT_VERSION.to_string().as_bytes() {
            return Err(Error::UnsupportedFormat {
                name: f.name.clone(),
                found: String::from_utf8_lossy(format).chars().take(40).collect(),
                supported: FORMAT_VERSION,
            });
        }
        let kind_s = f.str(field::KIND)?;
        let kind = kind_s
            .parse::<Kind>()
            .map_err(|_| f.corrupt(field::KIND, format!("unknown kind {kind_s:?}")))?;
        let uid = f.str(field::UID)?;
        if uid.len() != 16 || !uid.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(f.corrupt(field::UID, "not 16 lowercase hex digits"));
        }
        let epoch = f.u64(field::EPOCH)?;
        let cleared = f.opt_u64(field::CLEARED)?.unwrap_or(0);
        let created_at_ms = f.i64(field::CREATED_AT)?;
        let next_seq = f.u64(field::NEXT_SEQ)?;
        let list = f.str(field::GENS)?;
        let mut gens: Vec<Generation> = Vec::new();
        for item in list.split(',') {
            let seq = text::parse_u64(item).ok_or_else(|| {
                f.corrupt(
                    field::GENS,
                    format!("{list:.40?} is not a comma-separated list of sequence numbers"),
                )
            })?;
            if gens.last().is_some_and(|g| g.seq >= seq) {
                return Err(f.corrupt(field::GENS, "sequence numbers do not increase"));
            }
            if seq >= next_seq {
                return Err(f.corrupt(
                    field::GENS,
                    format!("lists {seq}, not below next_seq {next_seq}"),
                ));
            }
            if gens.len() >= MAX_LISTED {
                return Err(f.corrupt(
                    field::GENS,
                    format!("lists more than {MAX_LISTED} generations"),
                ));
            }
            gens.push(decode_generation(f, seq)?);
        }
        Ok(Common {
            name: f.name.clone(),
            kind,
            uid: uid.to_string(),
            epoch,
            cleared,
            created_at_ms,
            next_seq,
            gens,
        })
    }

    /// The fence token of this view: `UID:EPOCH:CLEARED`.
    pub fn token(&self) -> String {
        format!("{}:{}:{}", self.uid, self.epoch, self.cleared)
    }

    /// The newest generation.
    pub fn newest(&self) -> &Generation {
        // decode() refuses an empty list; `gens` is never emptied after.
        self.gens
            .last()
            .unwrap_or_else(|| unreachable!("a view lists a generation"))
    }

    /// Total distinct insertions over all generations.
    pub fn count(&self) -> u64 {
        self.gens
            .iter()
            .fold(0u64, |a, g| a.saturating_add(g.count))
    }
}

/// One listed generation's fields, with the invariants of its scheme.
fn decode_generation(f: &Fields, seq: u64) -> Result<Generation> {
    let name = |what: &str| field::gen(seq, what);
    let scheme_f = name(field::G_SCHEME);
    let scheme_s = f.str(&scheme_f)?;
    let scheme = Scheme::parse(scheme_s)
        .ok_or_else(|| f.corrupt(&scheme_f, format!("unknown scheme {scheme_s:.40?}")))?;
    let bits = f.u64(&name(field::G_BITS))?;
    let hashes = f.u64_in(
        &name(field::G_HASHES),
        1,
        u64::from(crate::params::MAX_HASHES),
    )? as u32;
    let blocks_f = name(field::G_BLOCKS);
    let blocks = f.u64_in(&blocks_f, 1, u64::from(u32::MAX))?;
    if bits % blocks != 0 {
        return Err(f.corrupt(
            &blocks_f,
            format!("{blocks} blocks cannot split {bits} bits"),
        ));
    }
    let block_bits = bits / blocks;
    if !(crate::params::MIN_BITS..=crate::params::MAX_BLOCK_BITS).contains(&block_bits) {
        return Err(f.corrupt(
            &name(field::G_BITS),
            format!("blocks of {block_bits} bits are not between 8 and 2^32"),
        ));
    }
    let layout = Layout {
        bits,
        hashes,
        blocks: blocks as u32,
        scheme,
    };
    if !layout.store().fits(&layout) {
        return Err(f.corrupt(
            &scheme_f,
            format!(
                "{scheme_s} cannot have {blocks} blocks of {block_bits} bits and {hashes} hashes"
            ),
        ));
    }
    Ok(Generation {
        seq,
        layout,
        capacity: f.u64_in(&name(field::G_CAPACITY), 1, u64::MAX)?,
        count: f.opt_u64(&name(field::G_COUNT))?.unwrap_or(0),
        created_at_ms: f.i64(&name(field::G_CREATED_AT))?,
    })
}

/// The fields describing a new generation, all but its creation time (which
/// the writing script takes from the server's clock).
pub(crate) fn generation_fields(seq: u64, layout: &Layout, capacity: u64) -> Vec<(String, String)> {
    vec![
        (field::gen(seq, field::G_BITS), layout.bits.to_string()),
        (field::gen(seq, field::G_HASHES), layout.hashes.to_string()),
        (field::gen(seq, field::G_BLOCKS), layout.blocks.to_string()),
        (
            field::gen(seq, field::G_SCHEME),
            layout.scheme.as_str().to_string(),
        ),
        (field::gen(seq, field::G_CAPACITY), capacity.to_string()),
        (field::gen(seq, field::G_COUNT), "0".to_string()),
    ]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::params::BloomParams;
    use std::collections::BTreeMap;

    #[test]
    fn every_kind_is_listed_once_and_reads_back_from_its_name() {
        // The match has no wildcard: a new variant fails to compile here
        // until it is listed.
        let listed = |k: Kind| match k {
            Kind::Bloom | Kind::Expanding | Kind::Circular => Kind::ALL.contains(&k),
        };
        for k in Kind::ALL {
            assert!(listed(*k));
            assert_eq!(k.as_str().parse::<Kind>().unwrap(), *k);
            assert_eq!(Kind::ALL.iter().filter(|o| *o == k).count(), 1);
        }
        assert_eq!(Kind::choices(), "bloom, expanding or circular");
    }

    /// A valid bloom filter's hash, as `HGETALL` pairs.
    pub(crate) fn sample() -> Fields {
        let layout = Layout::split(BloomParams::from_bits_hashes(1000, 3).unwrap(), 1 << 32);
        let mut raw: BTreeMap<String, Vec<u8>> = [
            ("format", "1"),
            ("kind", "bloom"),
            ("uid", "0123456789abcdef"),
            ("epoch", "0"),
            ("created_at", "1700000000000"),
            ("next_seq", "1"),
            ("gens", "0"),
            ("sizing", "capacity"),
            ("capacity", "100"),
            ("error_rate", "0.01"),
            ("gen.0.created_at", "1700000000000"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.as_bytes().to_vec()))
        .collect();
        for (k, v) in generation_fields(0, &layout, 100) {
            raw.insert(k, v.into_bytes());
        }
        Fields {
            name: "t".into(),
            raw,
        }
    }

    fn with(f: &Fields, k: &str, v: &str) -> Fields {
        let mut f = f.clone();
        f.raw.insert(k.into(), v.as_bytes().to_vec());
        f
    }

    fn corrupt_field(r: Result<Common>) -> String {
        match r {
            Err(Error::CorruptMetadata { field, .. }) => field,
            other => panic!("expected corrupt metadata, got {other:?}"),
        }
    }

    #[test]
    fn decodes_a_valid_hash() {
        let c = Common::decode(&sample()).unwrap();
        assert_eq!(c.kind, Kind::Bloom);
        assert_eq!(c.gens.len(), 1);
        assert_eq!(c.newest().layout.bits, 1000);
        assert_eq!(c.token(), "0123456789abcdef:0:0");
    }

    #[test]
    fn refuses_other_formats_and_every_corruption_by_name() {
        let s = sample();
        assert!(matches!(
            Common::decode(&with(&s, "format", "2")),
            Err(Error::UnsupportedFormat { .. })
        ));
        for (k, v, named) in [
            ("gen.0.bits", "x", "gen.0.bits"),
            ("gen.0.blocks", "3", "gen.0.blocks"),
            ("gen.0.hashes", "0", "gen.0.hashes"),
            ("gen.0.capacity", "0", "gen.0.capacity"),
            ("gen.0.scheme", "seed000", "gen.0.scheme"),
            ("gen.0.count", "+1", "gen.0.count"),
            ("epoch", "+0", "epoch"),
            ("epoch", "0100", "epoch"),
            ("cleared", "abc", "cleared"),
            ("uid", "a}b{", "uid"),
            ("kind", "ring", "kind"),
            ("gens", "", "gens"),
            ("gens", "0,,1", "gens"),
            ("gens", "0,0", "gens"),
            ("gens", "1", "gens"),
            ("next_seq", "-1", "next_seq"),
            ("created_at", "1e3", "created_at"),
        ] {
            assert_eq!(
                corrupt_field(Common::decode(&with(&s, k, v))),
                named,
                "{k}={v}"
            );
        }
        let mut f = sample();
        f.raw.remove("uid");
        assert_eq!(corrupt_field(Common::decode(&f)), "uid");
        let mut f = sample();
        f.raw.insert("epoch".into(), vec![0xff, 0xfe]);
        assert_eq!(corrupt_field(Common::decode(&f)), "epoch");
    }
}
