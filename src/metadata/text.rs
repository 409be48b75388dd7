//! Strict reading of the metadata hash's values. Format version 1 writes
//! every value in one canonical form (docs/FORMAT.md §6); a reader that
//! accepted others (`+0`, `0100`, `1e3`) would compare strings that the
//! scripts then see as different, and report contention instead of the
//! corruption it is.

use crate::error::Error;
use std::collections::BTreeMap;

/// An unsigned integer in canonical form: `0` or no leading zero, no sign.
pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    let canonical = s == "0" || (s.starts_with(|c: char| ('1'..='9').contains(&c)));
    if !canonical || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A signed integer in canonical form: an unsigned one, or `-` and a
/// non-zero unsigned one.
pub(crate) fn parse_i64(s: &str) -> Option<i64> {
    match s.strip_prefix('-') {
        Some(rest) if rest != "0" => {
            parse_u64(rest)?;
            s.parse().ok()
        }
        Some(_) => None,
        None => i64::try_from(parse_u64(s)?).ok(),
    }
}

/// Formats an `f64` parameter canonically (shortest exact form), so stored
/// and requested values compare as strings.
pub(crate) fn fmt_f64(v: f64) -> String {
    format!("{v:?}")
}

/// A finite float in the canonical form [`fmt_f64`] writes.
pub(crate) fn parse_f64(s: &str) -> Option<f64> {
    let v: f64 = s.parse().ok()?;
    (v.is_finite() && fmt_f64(v) == s).then_some(v)
}

/// The raw pairs of a metadata hash, and the name of the filter they
/// belong to, for error messages.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Fields {
    pub name: String,
    pub raw: BTreeMap<String, Vec<u8>>,
}

/// The longest stored value quoted in an error message.
const QUOTE: usize = 40;

fn quote(v: &[u8]) -> String {
    let s = String::from_utf8_lossy(v);
    let mut q: String = s.chars().take(QUOTE).collect();
    if s.chars().count() > QUOTE {
        q.push('…');
    }
    format!("{q:?}")
}

impl Fields {
    pub fn corrupt(&self, field: &str, reason: impl Into<String>) -> Error {
        Error::CorruptMetadata {
            name: self.name.clone(),
            field: field.to_string(),
            reason: reason.into(),
        }
    }

    /// The value, `None` when absent; not UTF-8 is corrupt.
    pub fn opt_str(&self, f: &str) -> Result<Option<&str>, Error> {
        match self.raw.get(f) {
            None => Ok(None),
            Some(v) => std::str::from_utf8(v)
                .map(Some)
                .map_err(|_| self.corrupt(f, format!("{} is not UTF-8", quote(v)))),
        }
    }

    pub fn str(&self, f: &str) -> Result<&str, Error> {
        self.opt_str(f)?.ok_or_else(|| self.corrupt(f, "missing"))
    }

    fn typed<T>(
        &self,
        f: &str,
        what: &str,
        parse: fn(&str) -> Option<T>,
    ) -> Result<Option<T>, Error> {
        match self.opt_str(f)? {
            None => Ok(None),
            Some(s) => parse(s)
                .map(Some)
                .ok_or_else(|| self.corrupt(f, format!("{} is not {what}", quote(s.as_bytes())))),
        }
    }

    pub fn opt_u64(&self, f: &str) -> Result<Option<u64>, Error> {
        self.typed(f, "an unsigned integer in canonical form", parse_u64)
    }

    pub fn u64(&self, f: &str) -> Result<u64, Error> {
        self.opt_u64(f)?.ok_or_else(|| self.corrupt(f, "missing"))
    }

    pub fn i64(&self, f: &str) -> Result<i64, Error> {
        self.typed(f, "an integer in canonical form", parse_i64)?
            .ok_or_else(|| self.corrupt(f, "missing"))
    }

    pub fn f64(&self, f: &str) -> Result<f64, Error> {
        self.typed(f, "a number in canonical form", parse_f64)?
            .ok_or_else(|| self.corrupt(f, "missing"))
    }

    /// An unsigned field that must lie in `lo..=hi`.
    pub fn u64_in(&self, f: &str, lo: u64, hi: u64) -> Result<u64, Error> {
        let v = self.u64(f)?;
        if !(lo..=hi).contains(&v) {
            return Err(self.corrupt(f, format!("{v} is not between {lo} and {hi}")));
        }
        Ok(v)
    }

    /// A rate strictly between 0 and 1.
    pub fn rate(&self, f: &str) -> Result<f64, Error> {
        let v = self.f64(f)?;
        if !(v > 0.0 && v < 1.0) {
            return Err(self.corrupt(f, format!("{v} is not strictly between 0 and 1")));
        }
        Ok(v)
    }

    /// A value parsed by the type's own `FromStr`, which must also print
    /// back to the same text (so it compares as stored).
    pub fn parsed<T: std::str::FromStr>(&self, f: &str) -> Result<T, Error> {
        let s = self.str(f)?;
        s.parse()
            .map_err(|_| self.corrupt(f, format!("{} is not valid here", quote(s.as_bytes()))))
    }

    /// Lossy text of every field, for display.
    pub fn lossy(&self) -> BTreeMap<String, String> {
        self.raw
            .iter()
            .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_read_only_in_canonical_form() {
        for (s, v) in [
            ("0", Some(0)),
            ("7", Some(7)),
            ("18446744073709551615", Some(u64::MAX)),
        ] {
            assert_eq!(parse_u64(s), v, "{s}");
        }
        for s in [
            "",
            "+0",
            "0100",
            " 1",
            "1 ",
            "-1",
            "1.5",
            "1e3",
            "18446744073709551616",
            "٣",
        ] {
            assert_eq!(parse_u64(s), None, "{s:?}");
        }
        assert_eq!(parse_i64("-1"), Some(-1));
        assert_eq!(parse_i64("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64("9223372036854775807"), Some(i64::MAX));
        for s in ["-0", "+1", "-01", "9223372036854775808", "--1", "-"] {
            assert_eq!(parse_i64(s), None, "{s:?}");
        }
    }

    #[test]
    fn floats_round_trip_canonically() {
        assert_eq!(fmt_f64(0.001), "0.001");
        assert_eq!(fmt_f64(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(fmt_f64(2.0), "2.0");
        assert_eq!(parse_f64("0.001"), Some(0.001));
        assert_eq!(parse_f64("1e-5"), Some(1e-5));
        for s in ["1e-3", "2", ".5", "0.0010", "NaN", "inf", "+0.5", " 0.5"] {
            assert_eq!(parse_f64(s), None, "{s:?}");
        }
    }
}
