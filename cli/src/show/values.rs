//! How values are written for people, one way everywhere (docs/CLI.md,
//! "Output"): counts with thousands separators, rates and speeds to three
//! significant digits, sizes by humansize (binary units), spans of time by
//! humantime, instants in RFC 3339, line ranges 1-based. JSON carries the
//! raw numbers.

use chrono::{DateTime, Datelike, SecondsFormat, TimeZone, Utc};

/// 1234567 -> "1,234,567".
pub fn int(n: u64) -> String {
    indicatif::HumanCount(n).to_string()
}

/// A probability (a false-positive rate) to three significant digits:
/// `0.0185`, `0.500`, and below 0.001 in scientific notation, `9.30e-13`.
pub fn rate(p: f64) -> String {
    if p == 0.0 || !p.is_finite() {
        return format!("{p}");
    }
    if p.abs() >= 1e-3 {
        let decimals = (2 - p.abs().log10().floor() as i32).max(0) as usize;
        format!("{p:.decimals$}")
    } else {
        format!("{p:.2e}")
    }
}

/// Items per second, to three significant digits: `10,000`, `1,230,000`,
/// `12.3`.
pub fn speed(per_second: f64) -> String {
    if !per_second.is_finite() || per_second <= 0.0 {
        return "0".into();
    }
    let magnitude = per_second.log10().floor() as i32;
    if magnitude >= 2 {
        let unit = 10f64.powi(magnitude - 2);
        int(((per_second / unit).round() * unit) as u64)
    } else {
        let decimals = (2 - magnitude) as usize;
        format!("{per_second:.decimals$}")
    }
}

/// A time taken: `2.5s` under a minute, else to the second (`3m 12s`).
pub fn elapsed(d: std::time::Duration) -> String {
    if d.as_secs() < 60 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        humantime::format_duration(std::time::Duration::from_secs(d.as_secs())).to_string()
    }
}

/// 1536 -> "1.5 KiB".
pub fn bytes(n: u64) -> String {
    use humansize::{FormatSizeOptions, BINARY};
    humansize::format_size(n, FormatSizeOptions::from(BINARY).decimal_places(1))
}

/// A span of time for people, to the minute past an hour, to the second
/// below: `3days 4h 12m`, `5m 7s`.
pub fn duration(d: chrono::TimeDelta) -> String {
    let s = d.num_seconds().max(0) as u64;
    let rounded = if s >= 3600 { s - s % 60 } else { s };
    humantime::format_duration(std::time::Duration::from_secs(rounded)).to_string()
}

/// Whether RFC 3339 can write `t`: its years have four digits (0000 to
/// 9999); chrono writes others as `+10000-...`, which no RFC 3339 parser
/// reads.
pub fn writable(t: DateTime<Utc>) -> bool {
    (0..=9999).contains(&t.year())
}

/// `t` in RFC 3339, or `None` when it cannot be written so (JSON then
/// says `null`).
pub fn rfc3339_checked(t: DateTime<Utc>) -> Option<String> {
    writable(t).then(|| t.to_rfc3339_opts(SecondsFormat::Secs, true))
}

/// `2026-05-01T00:00:00Z`; for people, a time past year 9999 is
/// `after year 9999` (never `+10006-...`).
pub fn rfc3339(t: DateTime<Utc>) -> String {
    rfc3339_checked(t).unwrap_or_else(|| {
        if t.year() > 9999 {
            "after year 9999"
        } else {
            "before year 0"
        }
        .to_string()
    })
}

/// A time in ms since the Unix epoch, as RFC 3339 (the number itself when
/// RFC 3339 cannot write it: it comes from Redis).
pub fn time_ms(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .and_then(rfc3339_checked)
        .unwrap_or_else(|| ms.to_string())
}

/// `1 item`, `3 items`, `1,000 items`.
pub fn count(n: u64, noun: &str) -> String {
    format!("{} {noun}{}", int(n), if n == 1 { "" } else { "s" })
}

/// Lines `first + 1` to `first + len`, as a message says them.
pub fn range(first: u64, len: u64) -> String {
    match len {
        1 => format!("{}", first + 1),
        _ => format!("{}-{}", first + 1, first + len),
    }
}

/// Line ranges, 1-based, for a message.
pub fn ranges(r: &[(u64, u64)]) -> String {
    let mut sorted = r.to_vec();
    sorted.sort_unstable();
    // Adjacent batches read as one range.
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (first, len) in sorted {
        match merged.last_mut() {
            Some((f, l)) if *f + *l == first => *l += len,
            _ => merged.push((first, len)),
        }
    }
    merged
        .iter()
        .map(|&(f, l)| range(f, l))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_counts() {
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(12), "12 B");
        assert_eq!(bytes(539_230_208), "514.2 MiB");
        assert_eq!(duration(chrono::TimeDelta::seconds(307)), "5m 7s");
        assert_eq!(
            duration(chrono::TimeDelta::seconds(
                3 * 86_400 + 4 * 3600 + 12 * 60 + 9
            )),
            "3days 4h 12m"
        );
        assert_eq!(duration(chrono::TimeDelta::seconds(-5)), "0s");
        assert_eq!(count(1, "item"), "1 item");
        assert_eq!(count(0, "item"), "0 items");
        assert_eq!(count(12_345, "item"), "12,345 items");
        assert_eq!(int(1_495_328), "1,495,328");
        assert_eq!(rate(0.018512), "0.0185");
        assert_eq!(rate(0.5), "0.500");
        assert_eq!(rate(0.001), "0.00100");
        assert_eq!(rate(9.3e-13), "9.30e-13");
        assert_eq!(rate(0.0), "0");
        assert_eq!(speed(123_456.7), "123,000");
        assert_eq!(speed(10_000.0), "10,000");
        assert_eq!(speed(12.345), "12.3");
        assert_eq!(speed(0.5), "0.500");
        assert_eq!(elapsed(std::time::Duration::from_millis(2_540)), "2.5s");
        assert_eq!(elapsed(std::time::Duration::from_secs(192)), "3m 12s");
        assert_eq!(time_ms(0), "1970-01-01T00:00:00Z");
        assert_eq!(time_ms(i64::MAX), i64::MAX.to_string());
        // Year 10000 is within chrono's range, not RFC 3339's.
        let far = Utc.with_ymd_and_hms(10_006, 8, 20, 0, 0, 0).unwrap();
        assert_eq!(
            time_ms(far.timestamp_millis()),
            far.timestamp_millis().to_string()
        );
        assert_eq!(rfc3339_checked(far), None);
        assert_eq!(rfc3339(far), "after year 9999");
        let last = Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).unwrap();
        assert_eq!(rfc3339(last), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn adjacent_ranges_merge() {
        assert_eq!(ranges(&[(20, 10), (0, 10), (10, 10), (40, 1)]), "1-30, 41");
    }
}
