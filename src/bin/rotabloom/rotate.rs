//! `rotabloom rotate`: circular filters rotated by hand, or as their
//! schedule says (from cron).

use crate::any;
use crate::connect::{self, Ctx};
use crate::errors::{report, usage};
use crate::show::{count, rfc3339};
use crate::Output;
use chrono::{DateTime, Utc};
use rotabloom::connect::Connection;
use rotabloom::Rotation;
use serde_json::{json, Value};
use std::io;

pub fn run(
    ctx: &Ctx,
    names: Vec<String>,
    if_due: bool,
    now: Option<DateTime<Utc>>,
    output: Output,
) -> anyhow::Result<u8> {
    if names.is_empty() && !if_due {
        return Err(usage(
            "rotate: name the filters to rotate now, or use --if-due to rotate every filter that is due",
        ));
    }
    let mut conn = ctx.connect()?;
    let explicit = !names.is_empty();
    let names = connect::names_or_all(&mut conn, names)?;
    let mut out = io::stdout().lock();
    let mut worst = 0u8;
    for name in &names {
        match rotate_one(&mut conn, name, explicit, if_due, now) {
            Ok(Some(said)) => output.print(&mut out, &said.text, &said.json, said.rotated)?,
            Ok(None) => {}
            Err(e) => worst = worst.max(report(&e, ctx.secrets()).1),
        }
    }
    Ok(worst)
}

/// What `rotate` says about one filter.
struct Said {
    text: String,
    json: Value,
    rotated: bool,
}

/// Rotates `name` and says what happened, or `None` for a filter that was
/// not named (`explicit` is false) and is not for rotating.
fn rotate_one(
    conn: &mut Connection,
    name: &str,
    explicit: bool,
    if_due: bool,
    now: Option<DateTime<Utc>>,
) -> anyhow::Result<Option<Said>> {
    let f = connect::open(conn, name)?;
    let Some(c) = f.circular() else {
        if explicit {
            return Err(usage(format!(
                "{name}: a {} filter does not rotate (only circular filters do)",
                f.kind()
            )));
        }
        return Ok(None);
    };
    if if_due && c.schedule().is_none() {
        if explicit {
            return Err(usage(format!(
                "{name}: has no schedule, so it is never due; rotate it without --if-due"
            )));
        }
        return Ok(None);
    }
    let said = match any::rotate(&c, conn, if_due, now)? {
        Rotation::Rotated {
            rotations,
            epoch,
            next_at,
        } => {
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
                    "next_rotation_at": next_at.map(rfc3339),
                }),
                rotated: true,
            }
        }
        Rotation::NotDue { next_at } => Said {
            text: format!("{name}: not due (next {})", rfc3339(next_at)),
            json: json!({
                "name": name,
                "result": "not_due",
                "next_rotation_at": rfc3339(next_at),
            }),
            rotated: false,
        },
        Rotation::Superseded { epoch } => Said {
            text: format!("{name}: not rotated: another process changed it first (epoch {epoch})"),
            json: json!({ "name": name, "result": "superseded", "epoch": epoch }),
            rotated: false,
        },
    };
    Ok(Some(said))
}
