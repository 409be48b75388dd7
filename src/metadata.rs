//! The metadata hash: encoding and decoding, pure. `docs/FORMAT.md` lists
//! every field; this module is the only code that knows their spelling.

use crate::error::{Error, Result};
use crate::generation::{Generation, Layout, Scheme};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// The format version this library writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Field names of the metadata hash.
pub(crate) mod field {
    pub const FORMAT: &str = "format";
    pub const KIND: &str = "kind";
    pub const UID: &str = "uid";
    pub const EPOCH: &str = "epoch";
    pub const CREATED_AT: &str = "created_at";
    pub const NEXT_SEQ: &str = "next_seq";
    pub const GENS: &str = "gens";

    pub fn gen(seq: u64, what: &str) -> String {
        format!("gen.{seq}.{what}")
    }
    pub const G_BITS: &str = "bits";
    pub const G_HASHES: &str = "hashes";
    pub const G_BLOCKS: &str = "blocks";
    pub const G_SCHEME: &str = "scheme";
    pub const G_CAPACITY: &str = "capacity";
    pub const G_COUNT: &str = "count";
    pub const G_CREATED_AT: &str = "created_at";
}

/// The three kinds of filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    /// The name stored in the metadata hash.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Bloom => "bloom",
            Kind::Expanding => "expanding",
            Kind::Circular => "circular",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Kind {
    type Err = ();
    fn from_str(s: &str) -> std::result::Result<Kind, ()> {
        match s {
            "bloom" => Ok(Kind::Bloom),
            "expanding" => Ok(Kind::Expanding),
            "circular" => Ok(Kind::Circular),
            _ => Err(()),
        }
    }
}

/// A decoded metadata hash: the client's view of a filter. Every operation
/// carries the view's `uid` and `epoch`; the server refuses it (and the
/// client reloads) if either has changed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Meta {
    pub name: String,
    pub kind: Kind,
    pub uid: String,
    pub epoch: u64,
    pub created_at_ms: i64,
    pub next_seq: u64,
    /// Oldest first.
    pub gens: Vec<Generation>,
    /// Every field, for the kind-specific parameters.
    pub fields: BTreeMap<String, String>,
}

impl Meta {
    /// Decodes the pairs of `HGETALL`.
    pub fn decode(name: &str, fields: BTreeMap<String, String>) -> Result<Meta> {
        let corrupt = |field: &str, reason: String| Error::CorruptMetadata {
            name: name.to_string(),
            field: field.to_string(),
            reason,
        };
        let get = |f: &str| -> Result<&str> {
            fields
                .get(f)
                .map(String::as_str)
                .ok_or_else(|| corrupt(f, "missing".into()))
        };
        let format = get(field::FORMAT)?;
        if format != FORMAT_VERSION.to_string() {
            return Err(Error::UnsupportedFormat {
                name: name.to_string(),
                found: format.to_string(),
                supported: FORMAT_VERSION,
            });
        }
        fn num<T: FromStr>(v: &str, f: &str, corrupt: &dyn Fn(&str, String) -> Error) -> Result<T> {
            v.parse()
                .map_err(|_| corrupt(f, format!("{v:?} is not a valid number")))
        }
        let kind_s = get(field::KIND)?;
        let kind = kind_s
            .parse::<Kind>()
            .map_err(|_| corrupt(field::KIND, format!("unknown kind {kind_s:?}")))?;
        let uid = get(field::UID)?.to_string();
        let epoch = num(get(field::EPOCH)?, field::EPOCH, &corrupt)?;
        let created_at_ms = num(get(field::CREATED_AT)?, field::CREATED_AT, &corrupt)?;
        let next_seq = num(get(field::NEXT_SEQ)?, field::NEXT_SEQ, &corrupt)?;
        let mut gens = Vec::new();
        let list = get(field::GENS)?;
        for s in list.split(',').filter(|s| !s.is_empty()) {
            let seq: u64 = num(s, field::GENS, &corrupt)?;
            let g = |what: &str| -> Result<&str> {
                let f = field::gen(seq, what);
                fields
                    .get(&f)
                    .map(String::as_str)
                    .ok_or_else(|| corrupt(&f, "missing".into()))
            };
            let gnum =
                |what: &str| -> Result<u64> { num(g(what)?, &field::gen(seq, what), &corrupt) };
            let scheme_s = g(field::G_SCHEME)?;
            let scheme = Scheme::parse(scheme_s).ok_or_else(|| {
                corrupt(
                    &field::gen(seq, field::G_SCHEME),
                    format!("unknown scheme {scheme_s:?}"),
                )
            })?;
            let bits = gnum(field::G_BITS)?;
            let hashes = gnum(field::G_HASHES)?;
            let blocks = gnum(field::G_BLOCKS)?;
            if bits == 0 || hashes == 0 || hashes > u64::from(crate::params::MAX_HASHES) {
                return Err(corrupt(
                    &field::gen(seq, field::G_BITS),
                    "bits or hashes out of range".into(),
                ));
            }
            if blocks == 0 || blocks > u64::from(u32::MAX) || bits % blocks != 0 {
                return Err(corrupt(
                    &field::gen(seq, field::G_BLOCKS),
                    format!("{blocks} blocks cannot split {bits} bits"),
                ));
            }
            gens.push(Generation {
                seq,
                layout: Layout {
                    bits,
                    hashes: hashes as u32,
                    blocks: blocks as u32,
                    scheme,
                },
                capacity: gnum(field::G_CAPACITY)?,
                count: match fields.get(&field::gen(seq, field::G_COUNT)) {
                    // HINCRBY creates the field lazily.
                    None => 0,
                    Some(v) => num(v, &field::gen(seq, field::G_COUNT), &corrupt)?,
                },
                created_at_ms: num(
                    g(field::G_CREATED_AT)?,
                    &field::gen(seq, field::G_CREATED_AT),
                    &corrupt,
                )?,
            });
        }
        if gens.is_empty() {
            return Err(corrupt(field::GENS, "no generations".into()));
        }
        Ok(Meta {
            name: name.to_string(),
            kind,
            uid,
            epoch,
            created_at_ms,
            next_seq,
            gens,
            fields,
        })
    }

    /// A kind-specific parameter, parsed.
    pub fn param<T: FromStr>(&self, f: &str) -> Result<T> {
        let v = self.fields.get(f).ok_or_else(|| Error::CorruptMetadata {
            name: self.name.clone(),
            field: f.to_string(),
            reason: "missing".into(),
        })?;
        v.parse().map_err(|_| Error::CorruptMetadata {
            name: self.name.clone(),
            field: f.to_string(),
            reason: format!("{v:?} cannot be parsed"),
        })
    }

    /// How many times the filter was cleared.
    pub fn cleared(&self) -> u64 {
        self.fields
            .get("cleared")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// The fence token of this view: `UID:EPOCH:CLEARED`.
    pub fn token(&self) -> String {
        format!("{}:{}:{}", self.uid, self.epoch, self.cleared())
    }

    /// The newest generation.
    pub fn newest(&self) -> &Generation {
        // decode() guarantees at least one generation.
        &self.gens[self.gens.len() - 1]
    }

    /// Total distinct insertions over all generations.
    pub fn count(&self) -> u64 {
        self.gens.iter().map(|g| g.count).sum()
    }

    /// Checks that the stored parameters equal the requested ones; the first
    /// difference is an error naming the field.
    pub fn check_params(&self, requested: &[(&'static str, String)]) -> Result<()> {
        for (f, want) in requested {
            let stored = self.fields.get(*f).map(String::as_str).unwrap_or("(unset)");
            if stored != want {
                return Err(Error::ParameterMismatch {
                    name: self.name.clone(),
                    field: (*f).to_string(),
                    stored: stored.to_string(),
                    requested: want.clone(),
                });
            }
        }
        Ok(())
    }

    /// Checks that the filter is of the expected kind.
    pub fn check_kind(&self, expected: Kind) -> Result<()> {
        if self.kind != expected {
            return Err(Error::KindMismatch {
                name: self.name.clone(),
                expected: expected.as_str(),
                found: self.kind.as_str().to_string(),
            });
        }
        Ok(())
    }
}

/// The fields describing a new generation, all but its creation time (which
/// the creating script takes from the server's clock).
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

/// Formats an `f64` parameter canonically (shortest exact form), so stored
/// and requested values compare as strings.
pub(crate) fn fmt_f64(v: f64) -> String {
    format!("{v:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::BloomParams;

    fn sample() -> BTreeMap<String, String> {
        let layout = Layout::split(BloomParams::from_bits_hashes(1000, 3).unwrap(), 1 << 32);
        let mut f: BTreeMap<String, String> = [
            ("format", "1"),
            ("kind", "bloom"),
            ("uid", "abc"),
            ("epoch", "0"),
            ("created_at", "1700000000000"),
            ("next_seq", "1"),
            ("gens", "0"),
            ("capacity", "100"),
            ("gen.0.created_at", "1700000000000"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        f.extend(generation_fields(0, &layout, 100));
        f
    }

    #[test]
    fn decodes_a_valid_hash() {
        let m = Meta::decode("t", sample()).unwrap();
        assert_eq!(m.kind, Kind::Bloom);
        assert_eq!(m.gens.len(), 1);
        assert_eq!(m.newest().layout.bits, 1000);
        assert_eq!(m.count(), 0);
        m.check_params(&[("capacity", "100".into())]).unwrap();
        let e = m.check_params(&[("capacity", "200".into())]).unwrap_err();
        assert!(matches!(e, Error::ParameterMismatch { ref field, .. } if field == "capacity"));
        assert!(matches!(
            m.check_kind(Kind::Circular),
            Err(Error::KindMismatch { .. })
        ));
    }

    #[test]
    fn rejects_other_formats_and_corruption() {
        let mut f = sample();
        f.insert("format".into(), "2".into());
        assert!(matches!(
            Meta::decode("t", f),
            Err(Error::UnsupportedFormat { .. })
        ));
        let mut f = sample();
        f.insert("gen.0.bits".into(), "x".into());
        assert!(matches!(
            Meta::decode("t", f),
            Err(Error::CorruptMetadata { .. })
        ));
        let mut f = sample();
        f.insert("gen.0.blocks".into(), "3".into());
        assert!(matches!(
            Meta::decode("t", f),
            Err(Error::CorruptMetadata { .. })
        ));
        let mut f = sample();
        f.remove("uid");
        assert!(matches!(
            Meta::decode("t", f),
            Err(Error::CorruptMetadata { .. })
        ));
        let mut f = sample();
        f.insert("gens".into(), "".into());
        assert!(matches!(
            Meta::decode("t", f),
            Err(Error::CorruptMetadata { .. })
        ));
    }

    #[test]
    fn floats_round_trip_canonically() {
        assert_eq!(fmt_f64(0.001), "0.001");
        assert_eq!(fmt_f64(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(fmt_f64(2.0), "2.0");
    }
}
