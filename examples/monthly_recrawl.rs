//! Monthly re-crawl: skip a URL for a while after crawling it, then crawl it
//! again once its window is over.
//!
//! A `CircularFilter` keeps N generations and rotates on a schedule; the
//! oldest generation is dropped at each rotation, so what was inserted in a
//! month is forgotten N months later. Here N = 3 with the schedule
//! `monthly:1@00:00`: a URL crawled in January is skipped until 1 April and
//! crawled again then.
//!
//! A `ManualClock` walks through five months in a few milliseconds; a cron
//! job calling `rotate_if_due` is simulated before every crawler decision.
//! In production the filter reads the Redis server's clock instead.
//!
//! Run it with `cargo run --example monthly_recrawl`.

#[path = "../tests/support/harness.rs"]
mod harness;

mod common;

use chrono::{DateTime, TimeZone, Utc};
use rotabloom::{CircularFilter, Info, ManualClock, Mode, Rotation};
use std::sync::Arc;

const ARTICLE: &str = "https://news.example.com/article/42";
const OTHER: &str = "https://news.example.com/article/99";
const SCHEDULE: &str = "monthly:1@00:00";
const N: u32 = 3;

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0)
        .single()
        .expect("valid date")
}

fn describe(r: Rotation) -> String {
    match r {
        Rotation::Rotated { epoch, .. } => format!("rotated -> epoch {epoch}"),
        Rotation::NotDue { next_at } => format!("not due (next {})", next_at.format("%m-%d")),
        Rotation::Superseded { epoch } => format!("superseded (epoch {epoch})"),
    }
}

fn decision(new: Option<bool>) -> &'static str {
    match new {
        None => "",
        Some(true) => "CRAWL (new)",
        Some(false) => "skip (seen)",
    }
}

/// Which generations a query reads and a write touches, oldest first.
fn roles(info: &Info) -> String {
    info.generations
        .iter()
        .map(|g| match (g.queried, g.written) {
            (true, true) => "[read+write]",
            (true, false) => "[read]",
            (false, true) => "[write]",
            (false, false) => "[idle]",
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let redis = harness::external_or_private();
    let private = redis.is_private();
    println!("{}", common::describe_redis(&redis.url(), private));
    let mut conn = redis.connection();

    // The simulated "now"; every clone shows the same time.
    let clock = ManualClock::new(at(2026, 1, 15, 9, 0));
    let name = common::filter_name("recrawl", private);
    let recrawl = CircularFilter::builder(name.as_str())
        .generations(N)
        .mode(Mode::InsertNewestQueryAll)
        .capacity(100_000) // URLs per month
        .error_rate(0.001)
        .schedule(SCHEDULE)
        .clock(Arc::new(clock.clone()))
        .create_or_open(&mut conn)?;
    let info = recrawl.info(&mut conn)?;
    println!(
        "CircularFilter {name:?}: {N} generations, schedule {SCHEDULE:?}, mode {}",
        Mode::InsertNewestQueryAll
    );
    println!(
        "  generations (oldest first): {}, {} each (sized for 1 month)",
        roles(&info),
        common::human_bytes(info.generations[0].memory_bytes as f64)
    );
    println!("  a URL crawled in month M is skipped until the 1st of month M+{N}\n");

    // (when, check ARTICLE?, check OTHER?, expected answers: true = new)
    type Step = (DateTime<Utc>, Option<bool>, Option<bool>);
    let steps: [Step; 10] = [
        (at(2026, 1, 15, 9, 0), Some(true), None),
        (at(2026, 1, 15, 18, 0), Some(false), None),
        (at(2026, 2, 1, 0, 5), None, None),
        (at(2026, 2, 10, 12, 0), Some(false), Some(true)),
        (at(2026, 3, 1, 0, 5), None, None),
        (at(2026, 3, 31, 23, 59), Some(false), Some(false)),
        (at(2026, 4, 1, 0, 5), Some(true), Some(false)),
        (at(2026, 4, 15, 12, 0), Some(false), Some(false)),
        (at(2026, 5, 1, 0, 5), Some(false), Some(true)),
        (at(2026, 5, 1, 10, 0), Some(false), Some(false)),
    ];
    println!("when (UTC)        cron: rotate_if_due        /article/42    /article/99");
    for (when, want_a, want_b) in steps {
        clock.set(when);
        let rotation = recrawl.rotate_if_due(&mut conn)?;
        // The crawler's question for each URL it meets now: "new? then crawl".
        let mut check = |url: &str, want: Option<bool>| -> rotabloom::Result<Option<bool>> {
            want.map(|_| recrawl.check_and_insert(&mut conn, url))
                .transpose()
        };
        let a = check(ARTICLE, want_a)?;
        let b = check(OTHER, want_b)?;
        let row = format!(
            "{:<17} {:<26} {:<14} {}",
            when.format("%Y-%m-%d %H:%M"),
            describe(rotation),
            decision(a),
            decision(b)
        );
        println!("{}", row.trim_end());
        assert_eq!(a, want_a, "{ARTICLE} at {when}");
        assert_eq!(b, want_b, "{OTHER} at {when}");
    }
    assert_eq!(recrawl.epoch(), 4, "one rotation per month boundary");
    println!("-> /article/42, crawled on 15 Jan, was skipped until the 1 Apr rotation dropped");
    println!("   January's generation; /article/99 (10 Feb) came back on 1 May.");

    // The other mode: writes go to every generation, a query reads only the
    // oldest one. Same window; one read per query instead of N, and each
    // generation is sized for N months of URLs.
    println!("\nmode {}:", Mode::InsertAllQueryOldest);
    let clock = ManualClock::new(at(2026, 1, 15, 9, 0));
    let oldest = CircularFilter::builder(common::filter_name("recrawl-oldest", private))
        .generations(N)
        .mode(Mode::InsertAllQueryOldest)
        .capacity(100_000)
        .error_rate(0.001)
        .schedule(SCHEDULE)
        .clock(Arc::new(clock.clone()))
        .create_or_open(&mut conn)?;
    let info = oldest.info(&mut conn)?;
    println!(
        "  generations (oldest first): {}, {} each (sized for {N} months)",
        roles(&info),
        common::human_bytes(info.generations[0].memory_bytes as f64)
    );
    let mut line = Vec::new();
    for (when, want) in [
        (at(2026, 1, 15, 9, 0), true),
        (at(2026, 3, 31, 23, 59), false),
        (at(2026, 4, 1, 0, 5), true),
    ] {
        clock.set(when);
        oldest.rotate_if_due(&mut conn)?;
        let new = oldest.check_and_insert(&mut conn, ARTICLE)?;
        assert_eq!(new, want, "{ARTICLE} at {when} (query-oldest)");
        line.push(format!(
            "{} {}",
            when.format("%m-%d"),
            if new { "CRAWL" } else { "skip" }
        ));
    }
    println!("  /article/42: {}", line.join(", "));

    recrawl.drop(&mut conn)?;
    oldest.drop(&mut conn)?;
    println!("\nok");
    Ok(())
}
