//! Reading a schedule as people write it (`30d`, `daily@03:00+02:00`,
//! `monthly:1@00:00`): the text edge, validated into a [`Schedule`].

use super::*;

/// The last day of month `m` of year `y`, if that month is representable.
pub(super) fn last_day(y: i32, m: u32) -> Option<u32> {
    (28..=31)
        .rev()
        .find(|&d| NaiveDate::from_ymd_opt(y, m, d).is_some())
}

pub(super) fn parse_time(s: &str) -> Result<NaiveTime> {
    NaiveTime::parse_from_str(s, "%H:%M")
        .or_else(|_| NaiveTime::parse_from_str(s, "%H:%M:%S"))
        .map_err(|_| invalid(format!("{s:?} is not a time of day like 03:00")))
}

pub(super) fn parse_weekday(s: &str) -> Result<Weekday> {
    s.parse::<Weekday>()
        .map_err(|_| invalid(format!("{s:?} is not a weekday like mon")))
}

/// Splits a trailing `Z` or `±HH:MM` offset off a calendar schedule.
pub(super) fn split_offset(s: &str) -> Result<(&str, FixedOffset)> {
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
