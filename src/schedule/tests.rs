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
