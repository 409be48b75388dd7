//! Cron-triggered rotation on many hosts: exactly one rotation per period.
//!
//! Every crawler host runs the same cron job (`rotate --if-due`) every five
//! minutes, so around each month boundary several hosts ask to rotate at
//! the same moment, and their clocks disagree by a few minutes. Rotation is
//! a compare-and-set on the filter's epoch and period inside Redis: the
//! first host whose clock has passed the boundary rotates, every other call
//! in that period is a no-op.
//!
//! Five threads play the hosts, each with its own connection and its own
//! `ManualClock`, skewed by -4 to +3 minutes. (In production leave the
//! clock alone: by default a filter reads the Redis server's `TIME`, so all
//! hosts agree on the period.)
//!
//! Run it with `cargo run --example cron_rotation`.

#[path = "../tests/support/harness.rs"]
mod harness;

mod common;

use chrono::{DateTime, Duration, TimeZone, Utc};
use rotabloom::{CircularFilter, ManualClock, Mode, Rotation, Schedule};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;

const SCHEDULE: &str = "monthly:1@00:00";
/// Each host's clock error, in minutes.
const HOSTS: [(&str, i64); 5] = [
    ("host-a", -4),
    ("host-b", -2),
    ("host-c", 0),
    ("host-d", 1),
    ("host-e", 3),
];

const CRONTAB: &str = "\
# crontab -e   (on every crawler host; harmless when several hosts run it)
# REDIS_URL=redis://:PASSWORD@redis.internal:6379/0   (if the config reads it)
*/5 * * * * rotabloom --config /etc/rotabloom.toml rotate --if-due recrawl";

const SYSTEMD: &str = "\
# /etc/systemd/system/rotabloom-rotate.service
[Unit]
Description=Rotate the rotabloom filter \"recrawl\" when its period has ended
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
# REDIS_URL=... for a config with redis_url_env = \"REDIS_URL\"
EnvironmentFile=-/etc/rotabloom.env
ExecStart=/usr/local/bin/rotabloom --config /etc/rotabloom.toml rotate --if-due recrawl

# /etc/systemd/system/rotabloom-rotate.timer
[Unit]
Description=Run rotabloom-rotate.service every 5 minutes

[Timer]
OnCalendar=*:0/5
Persistent=true

[Install]
WantedBy=timers.target

# then: systemctl daemon-reload && systemctl enable --now rotabloom-rotate.timer";

/// What one host's cron run did.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// This host rotated.
    Rotated,
    /// Its clock says the period has not ended yet.
    Early,
    /// The period has ended by its clock, but another host already rotated.
    Done,
}

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0)
        .single()
        .expect("valid date")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let redis = harness::external_or_private();
    let private = redis.is_private();
    println!("{}", common::describe_redis(&redis.url(), private));
    let mut conn = redis.connection();

    let created = at(2026, 1, 15, 12, 0);
    let name = common::filter_name("recrawl", private);
    let filter = CircularFilter::builder(name.as_str())
        .generations(3)
        .mode(Mode::InsertNewestQueryAll)
        .capacity(100_000)
        .error_rate(0.001)
        .schedule(SCHEDULE)
        .clock(Arc::new(ManualClock::new(created)))
        .create_or_open(&mut conn)?;
    println!("CircularFilter {name:?}, schedule {SCHEDULE:?}, created {created}");

    // Cron fires every five minutes; look at the runs around three month
    // boundaries: five minutes before, at, and five minutes after each.
    let schedule: Schedule = SCHEDULE.parse()?;
    let first = schedule.period(created) + 1;
    let boundaries: Vec<DateTime<Utc>> = (first..first + 3).map(|k| schedule.boundary(k)).collect();
    let ticks: Arc<Vec<DateTime<Utc>>> = Arc::new(
        boundaries
            .iter()
            .flat_map(|&b| [-5, 0, 5].map(|m| b + Duration::minutes(m)))
            .collect(),
    );

    let barrier = Arc::new(Barrier::new(HOSTS.len()));
    let (tx, rx) = mpsc::channel();
    let threads: Vec<_> = HOSTS
        .iter()
        .enumerate()
        .map(|(h, &(_, skew))| {
            let (client, name, ticks, barrier, tx) = (
                redis.client(),
                name.clone(),
                ticks.clone(),
                barrier.clone(),
                tx.clone(),
            );
            thread::spawn(move || {
                let clock = ManualClock::new(ticks[0]);
                // Each host opens the filter by name, with its own clock.
                let mut host =
                    client
                        .get_connection()
                        .map_err(|e| e.to_string())
                        .and_then(|mut c| match CircularFilter::open(&mut c, &name) {
                            Ok(f) => Ok((c, f.with_clock(Arc::new(clock.clone())))),
                            Err(e) => Err(e.to_string()),
                        });
                for (i, &tick) in ticks.iter().enumerate() {
                    clock.set(tick + Duration::minutes(skew));
                    // Every host fires at the same instant (errors are
                    // reported, not panicked on, so no host skips a barrier).
                    barrier.wait();
                    let result = match &mut host {
                        Ok((conn, f)) => f.rotate_if_due(conn).map_err(|e| e.to_string()),
                        Err(e) => Err(e.clone()),
                    };
                    let _ = tx.send((i, h, result));
                }
            })
        })
        .collect();
    drop(tx);

    let mut grid = vec![vec![None; HOSTS.len()]; ticks.len()];
    for (i, h, result) in rx {
        let own_now = ticks[i] + Duration::minutes(HOSTS[h].1);
        let boundary = boundaries[i / 3];
        let outcome = match result? {
            Rotation::Rotated { rotations, .. } => {
                assert_eq!(rotations, 1, "one period passed");
                // Nobody rotates before its own clock reaches the boundary.
                assert!(own_now >= boundary, "{} rotated early", HOSTS[h].0);
                Outcome::Rotated
            }
            Rotation::NotDue { .. } if own_now < boundary => Outcome::Early,
            Rotation::NotDue { .. } => Outcome::Done,
            Rotation::Superseded { .. } => unreachable!("rotate_if_due never supersedes"),
        };
        grid[i][h] = Some(outcome);
    }
    for t in threads {
        t.join().expect("host thread");
    }

    println!("\ncron runs on 5 hosts (clock error in brackets); \"wait\" = its clock says the");
    println!("month is not over yet, \"done\" = another host already rotated:\n");
    let header: Vec<String> = HOSTS.iter().map(|(n, s)| format!("{n}({s:+}m)")).collect();
    println!("{:<13} {}", "true time", header.join(" "));
    for (i, row) in grid.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .map(|o| {
                let s = match o {
                    Some(Outcome::Rotated) => "ROTATED",
                    Some(Outcome::Early) => "wait",
                    Some(Outcome::Done) => "done",
                    None => "?",
                };
                format!("{s:<11}")
            })
            .collect();
        println!(
            "{:<13} {}",
            ticks[i].format("%m-%d %H:%M"),
            cells.join(" ").trim_end()
        );
        if i % 3 == 2 {
            println!();
        }
    }

    // Exactly one rotation per period, whoever did it.
    for (b, boundary) in boundaries.iter().enumerate() {
        let rotated = grid[b * 3..b * 3 + 3]
            .iter()
            .flatten()
            .filter(|o| **o == Some(Outcome::Rotated))
            .count();
        assert_eq!(rotated, 1, "rotations for the period starting {boundary}");
    }
    let epoch = CircularFilter::open(&mut conn, &name)?.epoch();
    assert_eq!(epoch, 3, "three periods, three rotations");
    println!(
        "{} calls, 3 boundaries, 3 rotations (epoch {epoch})",
        5 * ticks.len()
    );

    println!("\nWhat an operator installs on each host, either a crontab line:\n\n{CRONTAB}\n");
    println!("or a systemd timer and service:\n\n{SYSTEMD}");

    filter.drop(&mut conn)?;
    println!("\nok");
    Ok(())
}
