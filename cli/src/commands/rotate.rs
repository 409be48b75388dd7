//! `rotabloom rotate`: circular filters rotated by hand, or as their
//! schedule says (from cron).

use crate::run::open;
use crate::shared::ctx::Ctx;
use crate::shared::fail::usage;
use crate::shared::output::Output;
use crate::show::errors::report;
use crate::show::values::{count, rfc3339, rfc3339_checked, time_ms, writable};
use chrono::{DateTime, TimeDelta, Utc};
use rotabloom::connect::Connection;
use rotabloom::{CircularFilter, Rotation};
use serde_json::{json, Value};
use std::io;

/// How far `--now` may be ahead of the server's clock without `--force`:
/// enough for clocks a little apart, far less than any period.
const FUTURE_TOLERANCE: TimeDelta = TimeDelta::seconds(60);

pub fn run(
    ctx: &Ctx,
    names: Vec<String>,
    if_due: bool,
    now: Option<DateTime<Utc>>,
    force: bool,
    output: Output,
) -> anyhow::Result<u8> {
    if names.is_empty() && !if_due {
        return Err(usage(
            "rotate: name the filters to rotate now, or use --if-due to rotate every filter that is due",
        ));
    }
    let mut conn = ctx.connect()?;
    // The clock is read once, here: every filter of the run is judged due
    // or not at the same instant.
    let asked = match (if_due, now) {
        (false, _) => Asked::Now,
        (true, Some(now)) => {
            if !force {
                refuse_future(&mut conn, now)?;
            }
            Asked::DueAt(now)
        }
        (true, None) => Asked::DueAt(rotabloom::server_time(&mut conn)?),
    };
    let names = open::names_or_all(&mut conn, names)?;
    let mut out = io::stdout().lock();
    let mut worst = 0u8;
    for name in &names.list {
        match rotate_all(ctx, &mut conn, name, names.named, asked) {
            Ok(said) => {
                for said in said {
                    output.print(&mut out, &said.text, &said.json, said.rotated)?;
                }
            }
            // Dropped since the SCAN: nothing to rotate.
            Err(e) if names.vanished(&e) => {}
            Err(e) => worst = worst.max(report(&e, ctx.secrets()).1),
        }
    }
    Ok(worst)
}

/// A `--now` ahead of the server's clock marks the periods up to it as
/// rotated: the real cron then rotates nothing until that time comes.
/// Refused unless `--force`.
fn refuse_future(conn: &mut Connection, now: DateTime<Utc>) -> anyhow::Result<()> {
    let server = rotabloom::server_time(conn)?;
    if now - server <= FUTURE_TOLERANCE {
        return Ok(());
    }
    Err(usage(format!(
        "rotate: --now {} is {} ahead of the Redis server's clock ({}): the schedule would count \
         those periods as rotated and cron would not rotate until then; add --force if that is meant",
        rfc3339(now),
        crate::show::values::duration(now - server),
        rfc3339(server)
    )))
}

/// The rotation asked for.
#[derive(Clone, Copy)]
enum Asked {
    /// One, now, whatever the schedule says.
    Now,
    /// Those the schedule owes at this instant.
    DueAt(DateTime<Utc>),
}

/// What `rotate` says about one filter.
struct Said {
    text: String,
    json: Value,
    rotated: bool,
}

/// Rotates `name` and says what happened, one line per shard. A sharded
/// filter turns as one (docs/FORMAT.md §11.8): its root's target moves
/// once, then every shard rotates to it; a run that finds an earlier
/// rotation unfinished finishes it.
fn rotate_all(
    ctx: &Ctx,
    conn: &mut Connection,
    name: &str,
    explicit: bool,
    asked: Asked,
) -> anyhow::Result<Vec<Said>> {
    // Unconverged: this run is what finishes an interrupted rotation.
    let f = open::open_sharded_unconverged(conn, name)?.map_shards(|s| ctx.writer(s));
    let Some(first) = f.shard(0) else {
        return Ok(Vec::new());
    };
    let label = |j: u32| match f.is_sharded() {
        true => format!("{name} shard {j}"),
        false => name.to_string(),
    };
    if rotatable(first, &label(0), explicit, asked)?.is_none() {
        return Ok(Vec::new());
    }
    let Some(c) = f.circular() else {
        return Ok(Vec::new());
    };
    let shards: Vec<CircularFilter> = (0..c.shard_count())
        .filter_map(|j| c.shard(j).cloned())
        .collect();
    let before: Vec<_> = shards.iter().map(|s| s.generations()).collect();
    let rotations = match asked {
        Asked::Now => c.rotate(conn)?,
        Asked::DueAt(now) => c.rotate_if_due_at(conn, now)?,
    };
    Ok(rotations
        .into_iter()
        .zip(shards.iter().zip(&before))
        .enumerate()
        .map(|(j, (r, (s, b)))| said(&label(j as u32), s, b, r, asked))
        .collect())
}

/// `f` as a circular filter to rotate as asked, or `None` for a filter
/// that was not named (`explicit` is false) and is not for rotating.
fn rotatable(
    f: &rotabloom::AnyFilter,
    name: &str,
    explicit: bool,
    asked: Asked,
) -> anyhow::Result<Option<CircularFilter>> {
    let Some(c) = f.circular() else {
        if explicit {
            return Err(usage(format!(
                "{name}: {} filter does not rotate (only circular filters do)",
                f.kind().with_article()
            )));
        }
        return Ok(None);
    };
    if matches!(asked, Asked::DueAt(_)) && c.schedule().is_none() {
        if explicit {
            return Err(usage(format!(
                "{name}: has no schedule, so it is never due; rotate it without --if-due"
            )));
        }
        return Ok(None);
    }
    // A time the schedule's next rotation after it cannot be written in
    // RFC 3339 would leave the filter saying `+10006-...` for ever.
    if let (Asked::DueAt(now), Some(schedule)) = (asked, c.schedule()) {
        let next = schedule.next_at(now);
        if !writable(next) {
            return Err(usage(format!(
                "{name}: --now {}: the schedule's next rotation after it falls after year 9999, \
                 which RFC 3339 cannot write; give an earlier --now",
                rfc3339(now)
            )));
        }
    }
    Ok(Some(c))
}

/// What one filter's (or shard's) `rotation` says.
fn said(
    name: &str,
    c: &CircularFilter,
    before: &[rotabloom::Generation],
    rotation: Rotation,
    asked: Asked,
) -> Said {
    match rotation {
        Rotation::Rotated {
            rotations,
            epoch,
            next_at,
        } if matches!(asked, Asked::DueAt(_)) => {
            let next = next_at
                .map(|t| format!(", next {}", rfc3339(t)))
                .unwrap_or_default();
            Said {
                text: format!(
                    "{name}: rotated ({}, epoch {epoch}{next})",
                    count(rotations.into(), "rotation")
                ),
                json: json!({
                    "name": name,
                    "result": "rotated",
                    "rotations": rotations,
                    "epoch": epoch,
                    "next_rotation_at": next_at.and_then(rfc3339_checked),
                }),
                rotated: true,
            }
        }
        Rotation::Rotated { epoch, .. } => by_hand(name, c, before, epoch),
        Rotation::NotDue { next_at } => Said {
            text: format!("{name}: not due (next {})", rfc3339(next_at)),
            // Every key of every outcome, as the Python package's
            // rotation results have them.
            json: json!({
                "name": name,
                "result": "not_due",
                "rotations": 0,
                "epoch": c.epoch(),
                "next_rotation_at": rfc3339_checked(next_at),
            }),
            rotated: false,
        },
        Rotation::Superseded { epoch } => Said {
            text: format!("{name}: not rotated: another process changed it first (epoch {epoch})"),
            json: json!({
                "name": name,
                "result": "superseded",
                "rotations": 0,
                "epoch": epoch,
                "next_rotation_at": c.next_rotation_at().and_then(rfc3339_checked),
            }),
            rotated: false,
        },
    }
}

/// A rotation by hand: which generation it forgot, where the window
/// starts now, and the next scheduled rotation, which it does not move.
fn by_hand(name: &str, c: &CircularFilter, before: &[rotabloom::Generation], epoch: u64) -> Said {
    let after = c.generations();
    let forgotten = before.first();
    let starts = after.first().map(|g| time_ms(g.created_at_ms));
    let next = c.next_rotation_at();
    let mut text = format!("{name}: rotated by hand (epoch {epoch})");
    if let Some(g) = forgotten {
        text.push_str(&format!(
            ": forgot generation {} (created {}, {}); the window now starts at {}",
            g.seq,
            time_ms(g.created_at_ms),
            count(g.count, "item"),
            starts.as_deref().unwrap_or("?")
        ));
    }
    match next {
        Some(t) => text.push_str(&format!(
            "; next scheduled rotation {} (unchanged: the window is one period shorter until then)",
            rfc3339(t)
        )),
        None => text.push_str("; no schedule"),
    }
    Said {
        text,
        json: json!({
            "name": name,
            "result": "rotated",
            "rotations": 1,
            "epoch": epoch,
            "manual": true,
            "forgotten": forgotten.map(|g| json!({
                "seq": g.seq,
                "created_at": time_ms(g.created_at_ms),
                "items": g.count,
            })),
            "window_starts_at": starts,
            "next_rotation_at": next.and_then(rfc3339_checked),
        }),
        rotated: true,
    }
}
