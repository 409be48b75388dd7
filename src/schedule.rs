//! Rotation schedules: pure functions from `now` to a period number.
//!
//! A schedule cuts time into periods. Period `k` starts at `boundary(k)`;
//! `period(now)` is the `k` with `boundary(k) <= now < boundary(k + 1)`.
//! Period numbers are absolute (they do not depend on when a filter was
//! created), so every host computes the same number for the same instant.

use crate::error::{Error, Result};
use chrono::{
    DateTime, Datelike, Duration, FixedOffset, NaiveDate, NaiveTime, Offset, Timelike, Utc, Weekday,
};
use std::fmt;
use std::str::FromStr;

/// How often a circular filter rotates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Every {
    /// A fixed interval, counted from the schedule's origin.
    Interval(Duration),
    /// Every hour at this minute.
    Hourly {
        /// Minute of the hour, 0..60.
        minute: u32,
    },
    /// Every day at this time.
    Daily {
        /// Time of day.
        at: NaiveTime,
    },
    /// Every week on this weekday at this time.
    Weekly {
        /// Day of the week.
        day: Weekday,
        /// Time of day.
        at: NaiveTime,
    },
    /// Every month on this day at this time. Days 29 to 31 fall on the last
    /// day of shorter months.
    Monthly {
        /// Day of the month, 1..=31.
        day: u32,
        /// Time of day.
        at: NaiveTime,
    },
}

/// A validated rotation schedule: what, in which UTC offset, and (for
/// intervals) from which origin.
///
/// Text form (also used in config files and the metadata hash):
///
/// | text | meaning |
/// |---|---|
/// | `6h`, `90m`, `7d`, `30d`, `2w` | fixed interval from the origin (default 1970-01-01T00:00:00Z) |
/// | `6h from 2026-01-01T00:00:00Z` | fixed interval from an explicit origin |
/// | `hourly`, `hourly:15` | every hour at minute 0 (15) |
/// | `daily@03:00` | every day at 03:00 |
/// | `weekly:mon@03:00` | every Monday at 03:00 |
/// | `monthly:1@00:00` | the first of every month at midnight |
/// | `daily`, `weekly`, `monthly` | short for `daily@00:00`, `weekly:mon@00:00`, `monthly:1@00:00` |
///
/// Calendar schedules take an optional UTC offset: `daily@03:00+08:00`.
///
/// ```
/// use rotabloom::Schedule;
/// use chrono::{TimeZone, Utc};
/// let s: Schedule = "monthly:31@00:00".parse().unwrap();
/// // Day 31 falls on the last day of shorter months, 29 February in 2024.
/// let feb = s.boundary(s.period(Utc.with_ymd_and_hms(2024, 3, 10, 0, 0, 0).unwrap()));
/// assert_eq!(feb, Utc.with_ymd_and_hms(2024, 2, 29, 0, 0, 0).unwrap());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    every: Every,
    offset: FixedOffset,
    origin: DateTime<Utc>,
}

fn invalid(reason: String) -> Error {
    Error::InvalidParameter {
        name: "schedule",
        reason,
    }
}

const UNIX: DateTime<Utc> = DateTime::UNIX_EPOCH;

impl Schedule {
    /// A schedule in UTC; intervals count from the Unix epoch.
    pub fn new(every: Every) -> Result<Schedule> {
        Schedule::with(every, utc_offset(), UNIX)
    }

    /// A schedule with an explicit UTC offset and interval origin.
    pub fn with(every: Every, offset: FixedOffset, origin: DateTime<Utc>) -> Result<Schedule> {
        match every {
            Every::Interval(d) if d < Duration::seconds(1) => {
                return Err(invalid("an interval must be at least one second".into()))
            }
            Every::Interval(d) if d > Duration::days(3660) => {
                return Err(invalid("an interval must be at most ten years".into()))
            }
            Every::Hourly { minute } if minute >= 60 => {
                return Err(invalid(format!("minute {minute} is not 0..59")))
            }
            Every::Monthly { day, .. } if !(1..=31).contains(&day) => {
                return Err(invalid(format!("day {day} is not 1..31")))
            }
            _ => {}
        }
        // A schedule is stored as text, its origin in RFC 3339, whose
        // years have four digits.
        if !(0..=9999).contains(&origin.year()) {
            return Err(invalid(format!(
                "the origin's year {} is not 0 to 9999, which RFC 3339 writes",
                origin.year()
            )));
        }
        // The text form keeps whole seconds; so does the schedule, or a
        // stored schedule would not be the one created.
        let origin = origin.with_nanosecond(0).unwrap_or(origin);
        Ok(Schedule {
            every,
            offset,
            origin,
        })
    }

    /// What the schedule does.
    pub fn every(&self) -> Every {
        self.every
    }

    /// The period `now` falls in: the `k` with
    /// `boundary(k) <= now < boundary(k + 1)`, where a boundary too early to
    /// be represented counts as before every instant and one too late as
    /// after every instant. Defined for every `now` chrono can represent.
    pub fn period(&self, now: DateTime<Utc>) -> i64 {
        // Whether period `k` has begun at `now`. Monotonic in `k`: false
        // from some `k` on, true below it.
        let begun = |k: i64| match self.checked_boundary(k) {
            Some(b) => b <= now,
            None => k < 0,
        };
        // Start from an estimate (exact or one or two periods off), gallop
        // outwards until the answer is bracketed, then bisect: a handful of
        // boundaries in the usual case, about 130 at worst.
        let guess = self.estimate(now);
        let (mut lo, mut hi) = if begun(guess) {
            (guess, guess.saturating_add(1))
        } else {
            (guess.saturating_sub(1), guess)
        };
        let mut step: i64 = 1;
        while begun(hi) {
            if hi == i64::MAX {
                return hi;
            }
            lo = hi;
            hi = hi.saturating_add(step);
            step = step.saturating_mul(2);
        }
        while !begun(lo) {
            if lo == i64::MIN {
                return lo;
            }
            hi = lo;
            lo = lo.saturating_sub(step);
            step = step.saturating_mul(2);
        }
        // begun(lo) and !begun(hi), so lo < hi.
        while lo.abs_diff(hi) > 1 {
            let mid = lo.midpoint(hi);
            if begun(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// When period `k` starts, saturated: [`DateTime::<Utc>::MIN_UTC`] for a
    /// boundary too early to be represented, [`DateTime::<Utc>::MAX_UTC`]
    /// for one too late (see [`checked_boundary`](Schedule::checked_boundary)).
    /// Never panics, whatever `k`.
    pub fn boundary(&self, k: i64) -> DateTime<Utc> {
        self.checked_boundary(k).unwrap_or(if k < 0 {
            DateTime::<Utc>::MIN_UTC
        } else {
            DateTime::<Utc>::MAX_UTC
        })
    }

    /// When period `k` starts, or `None` when that instant (or, for a
    /// calendar schedule, the local date and time that define it) lies
    /// outside the range chrono can represent. Never panics, whatever `k`;
    /// strictly increasing in `k` where it returns `Some`, and `Some` for a
    /// contiguous range of `k` that includes 0.
    ///
    /// Period numbers stored in Redis may be anything; this is the total
    /// form to use on them.
    ///
    /// ```
    /// use rotabloom::Schedule;
    /// use chrono::{DateTime, TimeZone, Utc};
    /// let s: Schedule = "monthly:1@00:00".parse().unwrap();
    /// // Period 673 is February 2026 (months since January 1970).
    /// assert_eq!(
    ///     s.checked_boundary(673),
    ///     Some(Utc.with_ymd_and_hms(2026, 2, 1, 0, 0, 0).unwrap())
    /// );
    /// // Far beyond the year 262142: not representable.
    /// assert_eq!(s.checked_boundary(i64::MAX), None);
    /// assert_eq!(s.checked_boundary(i64::MIN), None);
    /// // boundary() saturates instead.
    /// assert_eq!(s.boundary(i64::MAX), DateTime::<Utc>::MAX_UTC);
    /// assert_eq!(s.boundary(i64::MIN), DateTime::<Utc>::MIN_UTC);
    /// ```
    pub fn checked_boundary(&self, k: i64) -> Option<DateTime<Utc>> {
        let epoch_day = UNIX.date_naive();
        match self.every {
            Every::Interval(d) => {
                // In seconds and i64: a 1 s interval from 1970 passes 2^31
                // periods in 2038.
                let secs = d.num_seconds().checked_mul(k)?;
                self.origin.checked_add_signed(Duration::try_seconds(secs)?)
            }
            Every::Hourly { minute } => {
                // One sum in seconds, so that only the result has to be
                // representable.
                let secs = k
                    .checked_mul(3600)?
                    .checked_add(i64::from(minute).checked_mul(60)?)?;
                self.local(epoch_day, NaiveTime::MIN)?
                    .checked_add_signed(Duration::try_seconds(secs)?)
            }
            Every::Daily { at } => {
                self.local(epoch_day.checked_add_signed(Duration::try_days(k)?)?, at)
            }
            Every::Weekly { day, at } => {
                // Week 0 starts on the first `day` on or after 1970-01-01.
                let first = epoch_day
                    .iter_days()
                    .take(7)
                    .position(|d| d.weekday() == day)?;
                let days = k.checked_mul(7)?.checked_add(i64::try_from(first).ok()?)?;
                self.local(epoch_day.checked_add_signed(Duration::try_days(days)?)?, at)
            }
            Every::Monthly { day, at } => {
                let months = k.checked_add(1970 * 12)?;
                let y = i32::try_from(months.div_euclid(12)).ok()?;
                let m = u32::try_from(months.rem_euclid(12)).ok()?.checked_add(1)?;
                let date = NaiveDate::from_ymd_opt(y, m, day.min(last_day(y, m)?))?;
                self.local(date, at)
            }
        }
    }

    /// The instant the local wall clock shows `date` at `at`, if it can be
    /// represented. A fixed offset has no gaps or folds.
    fn local(&self, date: NaiveDate, at: NaiveTime) -> Option<DateTime<Utc>> {
        date.and_time(at)
            .checked_sub_offset(self.offset)
            .map(|naive| naive.and_utc())
    }

    /// When the period after the one `now` is in starts
    /// ([`DateTime::<Utc>::MAX_UTC`] if that cannot be represented).
    pub fn next_at(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        self.period(now)
            .checked_add(1)
            .map_or(DateTime::<Utc>::MAX_UTC, |k| self.boundary(k))
    }

    /// A period number near the answer of `period(now)`; `period` corrects it.
    fn estimate(&self, now: DateTime<Utc>) -> i64 {
        let secs = now
            .timestamp()
            .saturating_add(i64::from(self.offset.local_minus_utc()));
        match self.every {
            Every::Interval(d) => now
                .signed_duration_since(self.origin)
                .num_seconds()
                .div_euclid(d.num_seconds().max(1)),
            Every::Hourly { .. } => secs.div_euclid(3600),
            Every::Daily { .. } => secs.div_euclid(86_400),
            Every::Weekly { .. } => secs.div_euclid(7 * 86_400),
            Every::Monthly { .. } => {
                // Within a day of `now` if the local time is out of range.
                let local = DateTime::from_timestamp(secs, 0).unwrap_or(now);
                i64::from(local.year())
                    .saturating_sub(1970)
                    .saturating_mul(12)
                    .saturating_add(i64::from(local.month0()))
            }
        }
    }
}

/// The last day of month `m` of year `y`, if that month is representable.
fn last_day(y: i32, m: u32) -> Option<u32> {
    (28..=31)
        .rev()
        .find(|&d| NaiveDate::from_ymd_opt(y, m, d).is_some())
}

fn parse_time(s: &str) -> Result<NaiveTime> {
    NaiveTime::parse_from_str(s, "%H:%M")
        .or_else(|_| NaiveTime::parse_from_str(s, "%H:%M:%S"))
        .map_err(|_| invalid(format!("{s:?} is not a time of day like 03:00")))
}

fn parse_weekday(s: &str) -> Result<Weekday> {
    s.parse::<Weekday>()
        .map_err(|_| invalid(format!("{s:?} is not a weekday like mon")))
}

/// Splits a trailing `Z` or `±HH:MM` offset off a calendar schedule.
fn split_offset(s: &str) -> Result<(&str, FixedOffset)> {
    let utc = utc_offset();
    if let Some(rest) = s.strip_suffix('Z') {
        return Ok((rest, utc));
    }
    // Only ASCII can be an offset; a split inside a character would panic.
    if s.len() > 6 && s.is_char_boundary(s.len() - 6) {
        let (head, tail) = s.split_at(s.len() - 6);
        let b = tail.as_bytes();
        if (b[0] == b'+' || b[0] == b'-') && b[3] == b':' {
            let h: i32 = tail[1..3]
                .parse()
                .map_err(|_| invalid(format!("bad offset {tail:?}")))?;
            let m: i32 = tail[4..6]
                .parse()
                .map_err(|_| invalid(format!("bad offset {tail:?}")))?;
            let secs = (h * 3600 + m * 60) * if b[0] == b'-' { -1 } else { 1 };
            let off = FixedOffset::east_opt(secs)
                .ok_or_else(|| invalid(format!("bad offset {tail:?}")))?;
            return Ok((head, off));
        }
    }
    Ok((s, utc))
}

/// Parses `30d`, `6h`, `90m`, `45s`, `2w`.
pub(crate) fn parse_interval(s: &str) -> Result<Duration> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: i64 = num
        .parse()
        .map_err(|_| invalid(format!("{s:?} is not an interval like 30d or 6h")))?;
    let d = match unit {
        "s" => Duration::try_seconds(n),
        "m" => Duration::try_minutes(n),
        "h" => Duration::try_hours(n),
        "d" => Duration::try_days(n),
        "w" => Duration::try_weeks(n),
        _ => None,
    };
    d.ok_or_else(|| {
        invalid(format!(
            "{s:?} is not an interval like 30d or 6h (units s, m, h, d, w)"
        ))
    })
}

impl FromStr for Schedule {
    type Err = Error;

    fn from_str(text: &str) -> Result<Schedule> {
        let s = text.trim();
        if s.starts_with(|c: char| c.is_ascii_digit()) {
            let (interval, origin) = match s.split_once(" from ") {
                Some((i, o)) => (
                    i,
                    DateTime::parse_from_rfc3339(o.trim())
                        .map_err(|_| invalid(format!("{o:?} is not an RFC 3339 time")))?
                        .with_timezone(&Utc),
                ),
                None => (s, UNIX),
            };
            let utc = utc_offset();
            return Schedule::with(Every::Interval(parse_interval(interval)?), utc, origin);
        }
        let (s, offset) = split_offset(s)?;
        let (what, at) = match s.split_once('@') {
            Some((w, t)) => (w, Some(parse_time(t)?)),
            None => (s, None),
        };
        let at0 = at.unwrap_or(NaiveTime::MIN);
        let (kind, arg) = match what.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (what, None),
        };
        let every = match (kind, arg) {
            ("hourly", None) if at.is_none() => Every::Hourly { minute: 0 },
            ("hourly", Some(m)) if at.is_none() => Every::Hourly {
                minute: m.parse().map_err(|_| invalid(format!("{m:?} is not a minute")))?,
            },
            ("daily", None) => Every::Daily { at: at0 },
            ("weekly", Some(d)) => Every::Weekly {
                day: parse_weekday(d)?,
                at: at0,
            },
            ("weekly", None) => Every::Weekly {
                day: Weekday::Mon,
                at: at0,
            },
            ("monthly", None) => Every::Monthly { day: 1, at: at0 },
            ("monthly", Some(d)) => Every::Monthly {
                day: d.parse().map_err(|_| invalid(format!("{d:?} is not a day of the month")))?,
                at: at0,
            },
            _ => {
                return Err(invalid(format!(
                    "{text:?} is not a schedule (try 30d, 6h, hourly, daily@03:00, weekly:mon@03:00, monthly:1@00:00)"
                )))
            }
        };
        Schedule::with(every, offset, UNIX)
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let off = self.offset.local_minus_utc();
        let off = if off == 0 {
            String::new()
        } else {
            let sign = if off < 0 { '-' } else { '+' };
            format!("{sign}{:02}:{:02}", off.abs() / 3600, off.abs() % 3600 / 60)
        };
        let t = |at: NaiveTime| {
            if at.second() == 0 {
                at.format("%H:%M").to_string()
            } else {
                at.format("%H:%M:%S").to_string()
            }
        };
        match self.every {
            Every::Interval(d) => {
                let secs = d.num_seconds();
                let unit = [(86_400, "d"), (3600, "h"), (60, "m"), (1, "s")]
                    .into_iter()
                    .find(|(u, _)| secs % u == 0)
                    .unwrap_or((1, "s"));
                write!(f, "{}{}", secs / unit.0, unit.1)?;
                if self.origin != UNIX {
                    write!(
                        f,
                        " from {}",
                        self.origin
                            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    )?;
                }
                Ok(())
            }
            Every::Hourly { minute } => write!(f, "hourly:{minute}{off}"),
            Every::Daily { at } => write!(f, "daily@{}{off}", t(at)),
            Every::Weekly { day, at } => write!(
                f,
                "weekly:{}@{}{off}",
                format!("{day:?}").to_lowercase(),
                t(at)
            ),
            Every::Monthly { day, at } => write!(f, "monthly:{day}@{}{off}", t(at)),
        }
    }
}

fn utc_offset() -> FixedOffset {
    Utc.fix()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    fn check_consistent(s: &Schedule, now: DateTime<Utc>) {
        let k = s.period(now);
        assert!(
            s.boundary(k) <= now && now < s.boundary(k + 1),
            "{s} at {now}"
        );
    }

    #[test]
    fn parses_and_prints_round_trip() {
        for text in [
            "30d",
            "6h",
            "90m",
            "14d",
            "6h from 2026-01-01T00:00:00Z",
            "hourly:0",
            "hourly:15",
            "daily@03:00",
            "daily@03:00+08:00",
            "weekly:mon@03:00",
            "weekly:sun@23:30-05:00",
            "monthly:1@00:00",
            "monthly:31@12:00+05:30",
        ] {
            let s: Schedule = text.parse().unwrap();
            assert_eq!(s.to_string(), text);
            assert_eq!(s.to_string().parse::<Schedule>().unwrap(), s);
        }
        assert_eq!(
            "hourly".parse::<Schedule>().unwrap().to_string(),
            "hourly:0"
        );
        for (short, long) in [
            ("daily", "daily@00:00"),
            ("weekly", "weekly:mon@00:00"),
            ("monthly", "monthly:1@00:00"),
            ("weekly@03:00", "weekly:mon@03:00"),
            ("monthly@06:30+02:00", "monthly:1@06:30+02:00"),
        ] {
            let s: Schedule = short.parse().unwrap();
            assert_eq!(s.to_string(), long);
            assert_eq!(s, long.parse::<Schedule>().unwrap());
        }
    }

    #[test]
    fn rejects_bad_schedules() {
        for text in [
            "",
            "0d",
            "5x",
            "daily@25:00",
            "weekly:funday@01:00",
            "monthly:0@00:00",
            "monthly:32",
            "hourly:60",
            "yearly",
            "6h from yesterday",
            "daily@03:00+99:00",
        ] {
            assert!(text.parse::<Schedule>().is_err(), "{text:?} parsed");
        }
    }

    #[test]
    fn no_input_makes_the_parser_panic() {
        // Every string of up to 4 pieces from a small alphabet of valid and
        // hostile fragments, including multi-byte characters at the places
        // the parser splits.
        let pieces = [
            "",
            "daily",
            "@",
            "03:00",
            "+08:00",
            "-05:30",
            "Z",
            "é",
            "日",
            ":",
            "monthly",
            "weekly",
            "mon",
            "31",
            "6h",
            " from ",
            "2026-01-01T00:00:00Z",
            "99",
            "h",
            "d",
        ];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    for d in ["", "é", "+08:00", "日本"] {
                        let text = format!("{a}{b}{c}{d}");
                        let _ = text.parse::<Schedule>();
                    }
                }
            }
        }
    }

    #[test]
    fn monthly_at_month_ends_and_leap_days() {
        let s: Schedule = "monthly:31@00:00".parse().unwrap();
        assert_eq!(s.next_at(utc(2024, 1, 31, 0, 0)), utc(2024, 2, 29, 0, 0));
        assert_eq!(s.next_at(utc(2024, 2, 29, 0, 0)), utc(2024, 3, 31, 0, 0));
        assert_eq!(s.next_at(utc(2023, 2, 1, 0, 0)), utc(2023, 2, 28, 0, 0));
        assert_eq!(s.next_at(utc(2024, 4, 15, 0, 0)), utc(2024, 4, 30, 0, 0));
        let s: Schedule = "monthly:29@00:00".parse().unwrap();
        assert_eq!(s.next_at(utc(2023, 2, 1, 0, 0)), utc(2023, 2, 28, 0, 0));
        assert_eq!(s.next_at(utc(2024, 2, 1, 0, 0)), utc(2024, 2, 29, 0, 0));
        // One period per month, across years.
        let s: Schedule = "monthly:1@00:00".parse().unwrap();
        assert_eq!(
            s.period(utc(2025, 1, 1, 0, 0)) - s.period(utc(2024, 12, 31, 23, 59)),
            1
        );
        assert_eq!(
            s.period(utc(2026, 1, 1, 0, 0)) - s.period(utc(2024, 1, 1, 0, 0)),
            24
        );
        for d in 0..800 {
            check_consistent(&s, utc(2024, 1, 1, 0, 0) + Duration::hours(11 * d));
        }
    }

    #[test]
    fn offsets_move_the_boundaries() {
        let s: Schedule = "daily@03:00+08:00".parse().unwrap();
        // 03:00 in UTC+8 is 19:00 UTC the day before.
        assert_eq!(s.next_at(utc(2026, 3, 1, 12, 0)), utc(2026, 3, 1, 19, 0));
        let s: Schedule = "monthly:1@00:00-05:00".parse().unwrap();
        assert_eq!(s.next_at(utc(2026, 1, 15, 0, 0)), utc(2026, 2, 1, 5, 0));
        // Just before local midnight on the last day, still January there.
        assert_eq!(s.next_at(utc(2026, 2, 1, 4, 59)), utc(2026, 2, 1, 5, 0));
        for d in 0..500 {
            check_consistent(&s, utc(2025, 11, 1, 0, 0) + Duration::minutes(1447 * d));
        }
    }

    #[test]
    fn weekly_hourly_and_intervals() {
        let s: Schedule = "weekly:mon@03:00".parse().unwrap();
        let b = s.next_at(utc(2026, 11, 22, 12, 0)); // a Sunday
        assert_eq!(b, utc(2026, 11, 23, 3, 0));
        assert_eq!(b.weekday(), Weekday::Mon);
        let s: Schedule = "hourly:15".parse().unwrap();
        assert_eq!(s.next_at(utc(2026, 1, 1, 10, 15)), utc(2026, 1, 1, 11, 15));
        let s: Schedule = "6h from 2026-01-01T01:00:00Z".parse().unwrap();
        assert_eq!(s.next_at(utc(2026, 1, 1, 0, 0)), utc(2026, 1, 1, 1, 0));
        assert_eq!(s.next_at(utc(2026, 1, 1, 1, 0)), utc(2026, 1, 1, 7, 0));
        assert_eq!(s.period(utc(2026, 1, 1, 0, 59)), -1);
        // Past 2^31 periods (a 1 s interval from 1970 in 2038).
        let s: Schedule = "1s".parse().unwrap();
        check_consistent(&s, utc(2040, 6, 1, 12, 0));
        assert!(s.period(utc(2040, 6, 1, 12, 0)) > i64::from(i32::MAX));
        // Fractions of a second in an origin are dropped, as in the text form.
        let s: Schedule = "1h from 2026-01-01T00:00:00.75Z".parse().unwrap();
        assert_eq!(s.to_string().parse::<Schedule>().unwrap(), s);
        for s in ["weekly:fri@23:59", "hourly:59", "7d", "30d", "45s"] {
            let s: Schedule = s.parse().unwrap();
            for d in 0..300 {
                check_consistent(&s, utc(2025, 12, 25, 0, 0) + Duration::minutes(997 * d));
            }
        }
    }

    /// Every kind of schedule, with extreme offsets and origins.
    fn every_kind() -> Vec<Schedule> {
        let mut all: Vec<Schedule> = [
            "1s",
            "45s",
            "90m",
            "6h",
            "30d",
            "3660d",
            "6h from 2026-01-01T01:00:00Z",
            "hourly:0",
            "hourly:59+23:59",
            "hourly:15-23:59",
            "daily@00:00",
            "daily@23:59:59+23:59",
            "daily@00:00-23:59",
            "weekly:mon@03:00",
            "weekly:thu@00:00+23:59",
            "weekly:sun@23:59:59-23:59",
            "monthly:1@00:00",
            "monthly:31@23:59:59+23:59",
            "monthly:29@00:00-23:59",
            "monthly:15@12:00+05:30",
        ]
        .iter()
        .map(|t| t.parse().unwrap())
        .collect();
        let utc = utc_offset();
        for (secs, origin) in [
            (1, DateTime::<Utc>::MIN_UTC),
            (1, DateTime::<Utc>::MAX_UTC),
            (3660 * 86_400, DateTime::<Utc>::MIN_UTC),
            (3660 * 86_400, DateTime::<Utc>::MAX_UTC),
        ] {
            // Past what `with` accepts (RFC 3339's years), but the
            // arithmetic holds for every origin chrono can represent.
            let every = Every::Interval(Duration::seconds(secs));
            assert!(Schedule::with(every, utc, origin).is_err());
            all.push(Schedule {
                every,
                offset: utc,
                origin,
            });
        }
        all
    }

    const EXTREME_KS: [i64; 21] = [
        i64::MIN,
        i64::MIN + 1,
        i64::MIN / 2,
        -(1 << 40),
        -(1 << 31) - 1,
        -(1 << 31),
        -1_000_000,
        -24_000,
        -1,
        0,
        1,
        24_000,
        1_000_000,
        1 << 31,
        (1 << 31) + 1,
        1 << 32,
        1 << 40,
        1 << 62,
        i64::MAX / 2,
        i64::MAX - 1,
        i64::MAX,
    ];

    #[test]
    fn no_period_number_makes_boundary_panic() {
        let (min, max) = (DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC);
        for s in every_kind() {
            // The table, plus the numbers around the ends of the range.
            let mut ks = EXTREME_KS.to_vec();
            for edge in [s.period(min), s.period(max)] {
                ks.extend((-3..=3).map(|d| edge.saturating_add(d)));
            }
            ks.sort_unstable();
            ks.dedup();
            assert!(s.checked_boundary(0).is_some(), "{s}: period 0");
            let mut last: Option<DateTime<Utc>> = None;
            let mut ended = false;
            for k in ks {
                let checked = s.checked_boundary(k);
                let saturated = s.boundary(k);
                match checked {
                    Some(b) => {
                        assert_eq!(saturated, b, "{s}: boundary({k})");
                        assert!(!ended, "{s}: Some at {k} after None above 0");
                        if let Some(prev) = last {
                            assert!(prev < b, "{s}: not increasing at {k}: {prev} then {b}");
                        }
                        last = Some(b);
                    }
                    None if k < 0 => {
                        assert_eq!(saturated, min, "{s}: boundary({k})");
                        assert!(last.is_none(), "{s}: None at {k} after Some");
                    }
                    None => {
                        assert_eq!(saturated, max, "{s}: boundary({k})");
                        ended = true;
                    }
                }
            }
            assert!(ended, "{s}: i64::MAX has a boundary");
        }
    }

    #[test]
    fn period_is_total_at_extreme_instants() {
        let (min, max) = (DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC);
        let nows = [
            min,
            min + Duration::nanoseconds(1),
            min + Duration::seconds(1),
            min + Duration::days(2),
            UNIX - Duration::nanoseconds(1),
            UNIX,
            utc(2026, 11, 22, 12, 0),
            max - Duration::days(2),
            max - Duration::seconds(1),
            max - Duration::nanoseconds(1),
            max,
        ];
        for s in every_kind() {
            let mut prev = i64::MIN;
            for now in nows {
                let k = s.period(now);
                assert!(k >= prev, "{s}: period({now}) = {k} went back");
                prev = k;
                // boundary(k) <= now < boundary(k + 1), an unrepresentable
                // boundary counting as before (below 0) or after (above 0).
                match s.checked_boundary(k) {
                    Some(b) => assert!(b <= now, "{s}: period({now}) = {k} starts at {b}"),
                    None => assert!(k < 0, "{s}: period({now}) = {k} has no start"),
                }
                let next = k.checked_add(1).and_then(|k1| s.checked_boundary(k1));
                match next {
                    Some(b) => assert!(now < b, "{s}: period({now}) = {k} ends at {b}"),
                    None => assert!(k >= 0, "{s}: period({now}) = {k} has no end"),
                }
                assert_eq!(s.next_at(now), next.unwrap_or(max), "{s}: next_at({now})");
            }
        }
    }

    #[test]
    fn period_is_consistent_across_the_whole_range() {
        // Instants spread over all of chrono's range, where the estimate is
        // furthest from anything the other tests use.
        let lo = DateTime::<Utc>::MIN_UTC.timestamp();
        let hi = DateTime::<Utc>::MAX_UTC.timestamp();
        let step = (hi - lo) / 997;
        for s in every_kind() {
            for i in 1..997 {
                let now = DateTime::from_timestamp(lo + i * step + i, 0).unwrap();
                let k = s.period(now);
                let (a, b) = (s.checked_boundary(k), s.checked_boundary(k + 1));
                assert!(
                    a.is_some_and(|a| a <= now) && b.is_some_and(|b| now < b),
                    "{s} at {now}: {a:?} {b:?}"
                );
            }
        }
    }
}
