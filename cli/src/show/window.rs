//! What a circular filter's schedule means in dates: when it rotates
//! first, and until when an item inserted now is remembered. Pure, so
//! that `create` says it and the tests check it with fixed times.

use crate::show::values::{duration, rfc3339, rfc3339_checked};
use chrono::{DateTime, Utc};
use rotabloom::{Every, Schedule};
use serde_json::{json, Value};

/// The dates of a window of `n` generations rotated on `schedule`, seen
/// at `now`.
#[derive(Debug, PartialEq)]
pub struct Window {
    /// The next rotation (the first, for a filter just created).
    pub next: DateTime<Utc>,
    /// When an item inserted now is forgotten: `n` rotations on.
    pub forgotten: DateTime<Utc>,
    /// An interval counted from 1970 (the default): its first period is
    /// only what is left of the current one.
    pub from_epoch: bool,
}

impl Window {
    pub fn new(schedule: &Schedule, n: u32, now: DateTime<Utc>) -> Window {
        let period = schedule.period(now);
        let from_epoch = matches!(schedule.every(), Every::Interval(_))
            && !schedule.to_string().contains(" from ");
        Window {
            next: schedule.next_at(now),
            forgotten: schedule.boundary(period.saturating_add(i64::from(n))),
            from_epoch,
        }
    }
}

/// The lines `create` prints under a circular filter of `n` generations,
/// and the fields of its JSON object. `first`: the filter was just made.
pub fn describe(
    schedule: Option<&Schedule>,
    n: u32,
    now: DateTime<Utc>,
    first: bool,
) -> (String, Value) {
    let kept = format!(
        "every item is kept {} to {n} periods after it is inserted",
        n.saturating_sub(1)
    );
    let Some(s) = schedule else {
        return (
            format!(
                "\n  no schedule: it rotates only when `rotabloom rotate` is run; an item is \
                 forgotten at the {} rotation after it is inserted",
                ordinal(n)
            ),
            json!({ "schedule": null, "next_rotation_at": null, "forgotten_at": null }),
        );
    };
    let w = Window::new(s, n, now);
    let mut text = format!(
        "\n  schedule {s}: {} rotation {} (in {})",
        if first { "first" } else { "next" },
        rfc3339(w.next),
        duration(w.next - now)
    );
    if w.from_epoch {
        text.push_str(
            "; its periods count from 1970-01-01T00:00:00Z (`--every INTERVAL --from now` \
             counts them from the creation)",
        );
    }
    text.push_str(&format!(
        "\n  window: an item inserted now is forgotten at {} ({n} rotations on; {kept})",
        rfc3339(w.forgotten)
    ));
    let doc = json!({
        "schedule": s.to_string(),
        "next_rotation_at": rfc3339_checked(w.next),
        "forgotten_at": rfc3339_checked(w.forgotten),
    });
    (text, doc)
}

/// 1st, 2nd, 3rd, 4th, 11th, 21st...
fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn utc(y: i32, mo: u32, d: u32, h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, 0, 0).unwrap()
    }

    #[test]
    fn an_interval_from_1970_rotates_first_at_its_boundary() {
        // The case that surprised: 30d created on 2026-11-25 rotates
        // first on 2026-12-03, as periods count from 1970.
        let s: Schedule = "30d".parse().unwrap();
        let w = Window::new(&s, 4, utc(2026, 11, 25, 10));
        assert_eq!(w.next, utc(2026, 12, 3, 0));
        assert_eq!(w.forgotten, utc(2027, 3, 3, 0));
        assert!(w.from_epoch);
        let (text, doc) = describe(Some(&s), 4, utc(2026, 11, 25, 10), true);
        assert!(
            text.contains("schedule 30d: first rotation 2026-12-03T00:00:00Z (in 7days 14h)"),
            "{text}"
        );
        assert!(text.contains("count from 1970-01-01T00:00:00Z"), "{text}");
        assert!(
            text.contains("forgotten at 2027-03-03T00:00:00Z (4 rotations on; every item is kept 3 to 4 periods"),
            "{text}"
        );
        assert_eq!(doc["next_rotation_at"], "2026-12-03T00:00:00Z");
        assert_eq!(doc["forgotten_at"], "2027-03-03T00:00:00Z");
    }

    #[test]
    fn an_interval_from_the_creation_has_whole_periods() {
        let created = utc(2026, 11, 25, 10);
        let s = Schedule::with(
            Every::Interval(chrono::Duration::days(30)),
            chrono::FixedOffset::east_opt(0).unwrap(),
            created,
        )
        .unwrap();
        let w = Window::new(&s, 4, created);
        assert_eq!(w.next, utc(2026, 12, 25, 10));
        assert_eq!(w.forgotten, utc(2027, 3, 25, 10));
        assert!(!w.from_epoch);
        let (text, _) = describe(Some(&s), 4, created, true);
        assert!(
            text.contains(
                "schedule 30d from 2026-11-25T10:00:00Z: first rotation 2026-12-25T10:00:00Z"
            ),
            "{text}"
        );
        assert!(!text.contains("1970"), "{text}");
    }

    #[test]
    fn a_calendar_schedule_and_none() {
        let s: Schedule = "monthly".parse().unwrap();
        let w = Window::new(&s, 4, utc(2026, 11, 25, 10));
        assert_eq!(
            (w.next, w.forgotten),
            (utc(2026, 12, 1, 0), utc(2027, 3, 1, 0))
        );
        assert!(!w.from_epoch);
        let (text, doc) = describe(None, 3, utc(2026, 11, 25, 10), true);
        assert!(text.contains("forgotten at the 3rd rotation"), "{text}");
        assert_eq!(doc["next_rotation_at"], Value::Null);
        assert_eq!(ordinal(1), "1st");
        assert_eq!(ordinal(12), "12th");
        assert_eq!(ordinal(22), "22nd");
    }
}
