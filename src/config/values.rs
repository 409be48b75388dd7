//! Values as people write them in a configuration file or on a command
//! line: sizes with units, counts with separators or suffixes, numbers or
//! percentages, kind names.

use crate::Kind;

/// Parses a kind name (`bloom`, `expanding`, `circular`).
pub fn parse_kind(s: &str) -> Result<Kind, String> {
    s.parse::<Kind>()
        .map_err(|_| format!("{s:?} is not a kind (bloom, expanding or circular)"))
}

/// Parses a size in bytes: a plain number, or a number with a unit
/// `B`, `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024) or `kB`, `MB`, `GB`,
/// `TB` (powers of 1000). Spaces between the number and the unit are
/// allowed; units are case-insensitive.
///
/// ```
/// use rotabloom::config::parse_bytes;
/// assert_eq!(parse_bytes("4GiB"), Ok(4 << 30));
/// assert_eq!(parse_bytes("1.5 MiB"), Ok(1_572_864));
/// assert_eq!(parse_bytes("2GB"), Ok(2_000_000_000));
/// assert_eq!(parse_bytes("1024"), Ok(1024));
/// assert!(parse_bytes("4 gigs").is_err());
/// ```
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num = num.replace('_', "");
    let bad = || format!("{s:?} is not a size like 4GiB, 512MiB or 1048576");
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(bad()),
    };
    if num.is_empty() {
        return Err(bad());
    }
    if let Ok(n) = num.parse::<u64>() {
        return n
            .checked_mul(mult)
            .ok_or_else(|| format!("{s:?} is too large"));
    }
    let f: f64 = num.parse().map_err(|_| bad())?;
    let v = (f * mult as f64).round();
    if !(v.is_finite() && v >= 0.0 && v < u64::MAX as f64) {
        return Err(format!("{s:?} is too large"));
    }
    Ok(v as u64)
}

/// Parses a count as people write it: `1000000`, `1_000_000`,
/// `1,000,000`, `1e6`, `10M`, `2.5k`, `1G` (k, M, G, T: powers of 1000).
///
/// ```
/// use rotabloom::config::parse_count;
/// assert_eq!(parse_count("10M"), Ok(10_000_000));
/// assert_eq!(parse_count("1e6"), Ok(1_000_000));
/// assert_eq!(parse_count("1_000_000"), Ok(1_000_000));
/// assert_eq!(parse_count("2.5k"), Ok(2500));
/// assert!(parse_count("1.5").is_err());
/// assert!(parse_count("-3").is_err());
/// ```
pub fn parse_count(s: &str) -> Result<u64, String> {
    let bad = || format!("{s:?} is not a whole number");
    let t: String = s
        .trim()
        .chars()
        .filter(|c| *c != '_' && *c != ',')
        .collect();
    if let Ok(n) = t.parse::<u64>() {
        return Ok(n);
    }
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() && !c.eq_ignore_ascii_case(&'e') => {
            let mult: f64 = match c {
                'k' | 'K' => 1e3,
                'm' | 'M' => 1e6,
                'g' | 'G' => 1e9,
                't' | 'T' => 1e12,
                _ => return Err(bad()),
            };
            (&t[..i], mult)
        }
        _ => (t.as_str(), 1.0),
    };
    let plain = !num.is_empty()
        && num
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b'e' || b == b'E' || b == b'+');
    let f: f64 = if plain {
        num.parse().map_err(|_| bad())?
    } else {
        return Err(bad());
    };
    let v = f * mult;
    if !v.is_finite() || v >= u64::MAX as f64 {
        return Err(format!("{s:?} is too large"));
    }
    if v.fract() != 0.0 {
        return Err(bad());
    }
    Ok(v as u64)
}

/// Parses a number, or a percentage: `0.001`, `1e-3`, `0.1%`.
///
/// ```
/// use rotabloom::config::parse_number;
/// assert_eq!(parse_number("0.1%"), Ok(0.001));
/// assert_eq!(parse_number("1e-3"), Ok(0.001));
/// assert!(parse_number("%").is_err());
/// ```
pub fn parse_number(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let bad = || format!("{s:?} is not a number");
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim_end(), 100.0),
        None => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| bad())?;
    if !v.is_finite() {
        return Err(bad());
    }
    Ok(v / scale)
}
