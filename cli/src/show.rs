//! How values are written for people: sizes, times, counts.

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};

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

/// `2026-05-01T00:00:00Z`.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A time in ms since the Unix epoch, as RFC 3339 (the number itself when
/// it is out of chrono's range: it comes from Redis).
pub fn time_ms(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .map_or_else(|| ms.to_string(), rfc3339)
}

/// `1 item`, `3 items`.
pub fn count(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
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
        assert_eq!(time_ms(0), "1970-01-01T00:00:00Z");
        assert_eq!(time_ms(i64::MAX), i64::MAX.to_string());
    }
}
