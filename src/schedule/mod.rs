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

mod parse;
#[cfg(test)]
mod tests;

use parse::*;
