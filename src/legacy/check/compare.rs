//! Adopting again: the legacy generation an existing filter holds
//! compared with the legacy parameters given now.

use crate::error::{Error, Result};
use crate::legacy::Legacy;
use crate::metadata::field;
use crate::store::generation::Layout;
use crate::view::View;

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
    use super::super::fixtures::{scrapy, seed};
    use super::*;
    use crate::testkit::fields;
    use crate::view::Accept;

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
