//! `rotabloom create`: filters from the configuration or from flags, the
//! flags (`flags`) being built from the library's table of filter
//! settings; `--dry-run` (`dry_run`) sizes them and creates nothing.

mod dry_run;
pub mod flags;

use crate::shared::any;
use crate::shared::ctx::Ctx;
use crate::shared::fail::usage;
use crate::shared::output::Output;
use crate::show::{values, window};
use chrono::Utc;
use dry_run::dry_run_one;
use flags::{From, SettingFlags};
use rotabloom::config::{settings, FilterDef, FilterParams};
use rotabloom::connect::Connection;
use rotabloom::{AnyFilter, Every, Opened, Schedule};
use serde_json::{json, Value};
use std::io;

pub fn run(
    ctx: &Ctx,
    names: &[String],
    flags: &SettingFlags,
    from: Option<From>,
    dry_run: bool,
    output: Output,
) -> anyhow::Result<u8> {
    // --from needs --every (clap says so): settings given as flags.
    let flagged = !flags.params.keys_set().is_empty();
    let mut params = flags.params.clone();
    if flagged && params.shards.is_none() {
        params.shards = flags.env_shards;
    }
    // Usage errors before Redis is asked anything.
    let defs = if flagged {
        vec![from_flags(ctx, names, &params)?]
    } else {
        declared(ctx, names)?
    };
    let mut conn = ctx.connect()?;
    let defs = match from {
        Some(from) => vec![from_flags(
            ctx,
            names,
            &anchored(&mut conn, names, &params, from)?,
        )?],
        None => defs,
    };
    let mut out = io::stdout().lock();
    if dry_run {
        let mut worst = 0;
        for def in &defs {
            worst = worst.max(dry_run_one(&mut conn, def, output, &mut out)?);
        }
        return Ok(worst);
    }
    for def in &defs {
        if def.shards() > 1 {
            create_sharded(ctx, &mut conn, def, output, &mut out)?;
            continue;
        }
        let (f, how) = create_one(ctx, &mut conn, def, from)?;
        let info = f.info(&mut conn)?;
        let bytes: u64 = info.generations.iter().map(|g| g.bits.div_ceil(8)).sum();
        let shape = format!(
            "{}, {}, {}",
            f.kind(),
            values::count(info.generations.len() as u64, "generation"),
            values::bytes(bytes)
        );
        let (mut text, result) = match how {
            Opened::Created => (format!("{}: created ({shape})", def.name()), "created"),
            Opened::Existing => (
                format!("{}: exists, same parameters ({shape})", def.name()),
                "exists",
            ),
        };
        let mut doc = json!({
            "name": def.name(),
            "result": result,
            "kind": f.kind(),
            "generations": info.generations.len(),
            "memory_bytes": bytes,
        });
        // A window says in dates what its schedule does.
        if let Some(c) = f.circular() {
            let now = rotabloom::server_time(&mut conn)?;
            let n = u32::try_from(info.generations.len()).unwrap_or(u32::MAX);
            let schedule = c.schedule();
            let (lines, fields) =
                window::describe(schedule.as_ref(), n, now, how == Opened::Created);
            text.push_str(&lines);
            if let (Some(doc), Value::Object(fields)) = (doc.as_object_mut(), fields) {
                doc.extend(fields);
            }
        }
        output.print(&mut out, &text, &doc, how == Opened::Created)?;
    }
    Ok(0)
}

/// Creates or opens the sharded filter `def` and says which, with its
/// shape: kind, shards, memory of all of them.
fn create_sharded(
    ctx: &Ctx,
    conn: &mut Connection,
    def: &FilterDef,
    output: Output,
    out: &mut impl io::Write,
) -> anyhow::Result<()> {
    let (f, how) = ctx.create_sharded(conn, def)?;
    let kind = f.kind()?;
    let infos = f.info(conn)?;
    let bytes: u64 = infos
        .iter()
        .flat_map(|i| &i.generations)
        .map(|g| g.bits.div_ceil(8))
        .fold(0, u64::saturating_add);
    let shape = format!(
        "{}, {}, {}",
        kind,
        values::count(u64::from(f.shard_count()), "shard"),
        values::bytes(bytes)
    );
    let (text, result) = match how {
        Opened::Created => (format!("{}: created ({shape})", def.name()), "created"),
        Opened::Existing => (
            format!("{}: exists, same parameters ({shape})", def.name()),
            "exists",
        ),
    };
    let doc = json!({
        "name": def.name(),
        "result": result,
        "kind": kind,
        "shards": f.shard_count(),
        "memory_bytes": bytes,
    });
    output.print(out, &text, &doc, how == Opened::Created)?;
    Ok(())
}

/// Creates or opens `def`. A schedule counted from now is no mismatch
/// with a filter made so a moment ago by another process: that filter is
/// opened (its origin is then the one kept).
fn create_one(
    ctx: &Ctx,
    conn: &mut Connection,
    def: &FilterDef,
    from: Option<From>,
) -> anyhow::Result<(AnyFilter, Opened)> {
    match any::create_or_open(conn, def, ctx.wait()) {
        Err(rotabloom::Error::ParameterMismatch { field, .. })
            if field == "schedule" && from == Some(From::Now) =>
        {
            let params = anchored(conn, &[def.name().to_string()], def.params(), From::Now)?;
            let def = params.validate(def.name()).map_err(|e| usage(e.message))?;
            any::create_or_open(conn, &def, ctx.wait()).map_err(|e| ctx.create_error(def.name(), e))
        }
        other => other.map_err(|e| ctx.create_error(def.name(), e)),
    }
}

/// `params` with its interval schedule counted from `from`. `now` is the
/// Redis server's clock, as for the creation itself; a filter of that name
/// that exists with the same interval keeps its origin, so that the same
/// command run again opens it (`exists, same parameters`).
fn anchored(
    conn: &mut Connection,
    names: &[String],
    params: &FilterParams,
    from: From,
) -> anyhow::Result<FilterParams> {
    let Some(schedule) = params.schedule else {
        return Err(usage("create: --from needs --every INTERVAL"));
    };
    let Every::Interval(every) = schedule.every() else {
        return Err(usage(format!(
            "create: --from counts the periods of an interval (30d, 6h...); {schedule} is a \
             calendar schedule, whose periods are the calendar's"
        )));
    };
    if schedule.to_string().contains(" from ") {
        return Err(usage(format!(
            "create: --every {schedule} already says where its periods start; drop --from"
        )));
    }
    let origin = match from {
        From::At(t) => t,
        From::Now => {
            let existing = match names {
                [name] => AnyFilter::open(conn, name)
                    .ok()
                    .and_then(|f| f.circular().and_then(|c| c.schedule())),
                _ => None,
            };
            match existing {
                Some(s) if s.every() == schedule.every() => {
                    let mut p = params.clone();
                    p.schedule = Some(s);
                    return Ok(p);
                }
                _ => rotabloom::server_time(conn)?,
            }
        }
    };
    let utc = chrono::Offset::fix(&Utc);
    let mut p = params.clone();
    p.schedule = Some(
        Schedule::with(Every::Interval(every), utc, origin)
            .map_err(|e| usage(format!("create: --from: {e}")))?,
    );
    Ok(p)
}

/// The one filter the flags describe.
fn from_flags(ctx: &Ctx, names: &[String], params: &FilterParams) -> anyhow::Result<FilterDef> {
    let [name] = names else {
        return Err(usage(
            "create: settings given as flags describe one filter: give exactly one NAME",
        ));
    };
    if let (Some(c), Some(_)) = (ctx.config(), ctx.def(name)) {
        return Err(usage(format!(
            "create: {name:?} is declared in {}; give either its section or flags, not both",
            c.file()
        )));
    }
    params.validate(name).map_err(
        |e| match settings().iter().find(|s| Some(s.key()) == e.key) {
            Some(s) => usage(format!("create {name}: --{}: {}", s.flag(), e.message)),
            None => usage(format!("create: {}", e.message)),
        },
    )
}

/// The filters of the configuration: those named, or all.
fn declared(ctx: &Ctx, names: &[String]) -> anyhow::Result<Vec<FilterDef>> {
    let Some(c) = ctx.config() else {
        return Err(usage(match names.first() {
            None => {
                "create: give a NAME and its settings (--kind, --capacity, ...), or --config FILE"
                    .to_string()
            }
            Some(name) => format!(
                "create {name}: give its settings (--kind, --capacity, ...) or --config FILE"
            ),
        }));
    };
    if names.is_empty() {
        if c.filters().is_empty() {
            return Err(usage(format!(
                "create: {} declares no filter: add a [filter.NAME] section, or give NAME and --kind",
                c.file()
            )));
        }
        return Ok(c.filters().to_vec());
    }
    names
        .iter()
        .map(|name| {
            c.filter(name).cloned().ok_or_else(|| {
                usage(format!(
                    "create: {} declares no filter {name:?}; declare it, or give --kind and its settings",
                    c.file()
                ))
            })
        })
        .collect()
}
