//! The values of flags that no library type parses: a timeout in
//! seconds, and an instant.

use chrono::{DateTime, Utc};
use std::time::Duration;

/// A timeout in seconds, like `10` or `0.5`: at least a millisecond, at
/// most a day.
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds like 10 or 0.5"))?;
    if !(0.001..=86_400.0).contains(&secs) {
        return Err(format!("{s:?}: a timeout is 0.001 to 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

pub fn parse_now(s: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| format!("{s:?} is not an RFC 3339 time like 2026-05-01T00:00:00Z ({e})"))
}
