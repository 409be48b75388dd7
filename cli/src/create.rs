//! `rotabloom create`: filters from the configuration or from flags, the
//! flags being built from the library's table of filter settings.

use crate::any;
use crate::connect::Ctx;
use crate::errors::usage;
use crate::show;
use crate::status;
use crate::window;
use crate::Output;
use chrono::{DateTime, Utc};
use clap::{Arg, ArgAction, ArgMatches};
use rotabloom::config::{settings, FilterDef, FilterParams, Setting};
use rotabloom::connect::Connection;
use rotabloom::{AnyFilter, Every, Opened, Schedule};
use serde_json::{json, Value};
use std::io;

/// The filter settings given as flags: one flag per setting of
/// [`settings`], so a setting added to the library's table is a flag here
/// with no change to this file.
#[derive(Debug, Default)]
pub struct SettingFlags(FilterParams, Option<String>);

impl clap::Args for SettingFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        settings().iter().fold(cmd, |cmd, s| cmd.arg(flag(s)))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// The flag of setting `s`. Its value is checked as clap reads it, so a
/// malformed one is a usage error before anything else happens; whether
/// it fits the kind is checked with the whole filter.
fn flag(s: &'static Setting) -> Arg {
    let mut arg = Arg::new(s.key())
        .long(s.flag())
        .help(help(s))
        .help_heading("Filter settings");
    if let Some(values) = crate::words::setting_values(s.key()) {
        arg = arg.add(values);
    }
    // A flag named otherwise than its key (`--every`) also takes the
    // key's spelling (`--schedule`), as in the configuration.
    if s.flag() != s.key() && !s.key().contains('_') {
        arg = arg.visible_alias(s.key());
    }
    if s.key() == "shards" {
        arg = arg.env("ROTABLOOM_SHARDS");
    }
    match s.value_name() {
        None => arg.action(ArgAction::SetTrue),
        Some(name) => arg.value_name(name).value_parser(move |text: &str| {
            FilterParams::default()
                .set(s.key(), text)
                .map(|()| text.to_string())
                .map_err(|e| e.message)
        }),
    }
}

/// The setting's help, led by the kinds that take it unless all do.
fn help(s: &Setting) -> String {
    if !s.is_of_some_kinds() {
        return s.help().to_string();
    }
    let kinds: Vec<&str> = s.kinds().iter().map(|k| k.as_str()).collect();
    format!(
        "{}: {}",
        first_char(&kinds.join(", "), char::to_ascii_uppercase),
        first_char(s.help(), char::to_ascii_lowercase)
    )
}

/// `text` with its first character put in `case`.
fn first_char(text: &str, case: fn(&char) -> char) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| case(&c))
        .into_iter()
        .chain(chars)
        .collect()
}

impl clap::FromArgMatches for SettingFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut params = FilterParams::default();
        let mut env_shards = None;
        let invalid = |e: &dyn std::fmt::Display| {
            clap::Error::raw(clap::error::ErrorKind::InvalidValue, e.to_string())
        };
        for s in settings() {
            let value = match s.value_name() {
                None => m
                    .try_get_one::<bool>(s.key())
                    .map_err(|e| invalid(&e))?
                    .copied()
                    .unwrap_or(false)
                    .then(|| "true".to_string()),
                Some(_) => m
                    .try_get_one::<String>(s.key())
                    .map_err(|e| invalid(&e))?
                    .cloned(),
            };
            // `ROTABLOOM_SHARDS` is a default for filters described by
            // flags, not a flag: `create` of configured filters ignores it.
            let from_env = m.value_source(s.key()) == Some(clap::parser::ValueSource::EnvVariable);
            if let Some(v) = value.filter(|_| !from_env) {
                params.set(s.key(), &v).map_err(|e| invalid(&e))?;
            }
            if let (true, Some(v)) = (from_env, m.try_get_one::<String>(s.key()).ok().flatten()) {
                env_shards = Some(v.clone());
            }
        }
        Ok(SettingFlags(params, env_shards))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// `--from WHEN`: where an interval schedule counts its periods from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum From {
    /// The creation, by the Redis server's clock.
    Now,
    At(DateTime<Utc>),
}

pub fn parse_from(s: &str) -> Result<From, String> {
    if s.trim() == "now" {
        return Ok(From::Now);
    }
    DateTime::parse_from_rfc3339(s.trim())
        .map(|t| From::At(t.with_timezone(&Utc)))
        .map_err(|e| {
            format!("{s:?} is not `now` nor an RFC 3339 time like 2026-05-01T00:00:00Z ({e})")
        })
}

pub fn run(
    ctx: &Ctx,
    names: &[String],
    flags: &SettingFlags,
    from: Option<From>,
    dry_run: bool,
    output: Output,
) -> anyhow::Result<u8> {
    // --from needs --every (clap says so): settings given as flags.
    let flagged = !flags.0.keys_set().is_empty();
    let mut params = flags.0.clone();
    if let (true, None, Some(v)) = (flagged, params.shards, &flags.1) {
        params
            .set("shards", v)
            .map_err(|e| usage(format!("$ROTABLOOM_SHARDS: {}", e.message)))?;
    }
    let flags = SettingFlags(params, None);
    // Usage errors before Redis is asked anything.
    let defs = if flagged {
        vec![from_flags(ctx, names, &flags.0)?]
    } else {
        declared(ctx, names)?
    };
    let mut conn = ctx.connect()?;
    let defs = match from {
        Some(from) => vec![from_flags(
            ctx,
            names,
            &anchored(&mut conn, names, &flags.0, from)?,
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
            show::count(info.generations.len() as u64, "generation"),
            show::bytes(bytes)
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
        show::count(u64::from(f.shard_count()), "shard"),
        show::bytes(bytes)
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

/// The exit code of `create --dry-run` when a filter would not fit.
pub const EXIT_WOULD_NOT_FIT: u8 = 1;

/// What the server has room for: `maxmemory` (0: no limit) and the
/// memory in use, when the server says.
struct Room {
    maxmemory: Option<u64>,
    used: Option<u64>,
}

impl Room {
    fn read(conn: &mut Connection) -> Room {
        let maxmemory = status::config_get(conn, "maxmemory").and_then(|v| v.parse().ok());
        let info: Option<String> = redis::cmd("INFO").arg("memory").query(conn).ok();
        let used = info.as_deref().and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("used_memory:"))
                .and_then(|v| v.trim().parse().ok())
        });
        Room { maxmemory, used }
    }

    /// Whether `bytes` more fit under maxmemory (`None`: unknown).
    fn fits(&self, bytes: u64) -> Option<bool> {
        match (self.maxmemory?, self.used) {
            (0, _) => Some(true),
            (max, Some(used)) => Some(used.saturating_add(bytes) <= max),
            (max, None) => Some(bytes <= max),
        }
    }

    fn describe(&self, bytes: u64) -> String {
        match (self.maxmemory, self.used, self.fits(bytes)) {
            (None, _, _) => "the server's maxmemory is unknown (CONFIG GET refused)".into(),
            (Some(0), _, _) => {
                "fits: the server has no maxmemory (only the machine's memory limits it)".into()
            }
            (Some(max), used, Some(fits)) => format!(
                "{}: maxmemory {}, {} in use, {} free",
                if fits { "fits" } else { "does not fit" },
                show::bytes(max),
                used.map_or("?".into(), show::bytes),
                used.map_or("?".into(), |u| show::bytes(max.saturating_sub(u))),
            ),
            (Some(_), _, None) => "unknown".into(),
        }
    }
}

/// `create --dry-run`: the generations `def` would make, and whether they
/// fit the server's `maxmemory`; nothing is written.
fn dry_run_one(
    conn: &mut Connection,
    def: &FilterDef,
    output: Output,
    out: &mut impl io::Write,
) -> anyhow::Result<u8> {
    let shards = def.shards();
    // Every shard is alike: one shard's sizing, then the whole's.
    let one = match shards {
        1 => def.spec().clone(),
        _ => def
            .shard(def.name())
            .map_err(|e| usage(e.message))?
            .spec()
            .clone(),
    };
    let gens = one.initial_generations();
    let per_shard: u64 = gens
        .iter()
        .map(|(l, _)| l.bytes())
        .fold(0, u64::saturating_add);
    let total = per_shard.saturating_mul(u64::from(shards));
    let exists = crate::connect::Sharded::open(conn, def.name()).is_ok();
    let room = Room::read(conn);
    // A sharded filter spreads over masters this connection does not
    // see one by one: its room is not judged from one server's.
    let fits = match shards {
        1 => room.fits(total),
        _ => None,
    };
    let mut text = match shards {
        1 => format!(
            "{}: would create {} ({}, {})",
            def.name(),
            def.kind(),
            show::count(gens.len() as u64, "generation"),
            show::bytes(total)
        ),
        _ => format!(
            "{}: would create {} ({}, each {} of {}; {} in all)",
            def.name(),
            def.kind(),
            show::count(u64::from(shards), "shard"),
            show::count(gens.len() as u64, "generation"),
            show::bytes(per_shard),
            show::bytes(total)
        ),
    };
    if exists {
        text.push_str(" (a filter of this name exists already: create would open it)");
    }
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::NOTHING);
    table.set_header(vec!["gen", "capacity", "bits", "hashes", "blocks", "bytes"]);
    for (i, (l, capacity)) in gens.iter().enumerate() {
        table.add_row(vec![
            i.to_string(),
            show::int(*capacity),
            show::int(l.bits),
            l.hashes.to_string(),
            l.blocks.to_string(),
            show::bytes(l.bytes()),
        ]);
    }
    for line in table.to_string().lines() {
        text.push_str(&format!("\n {}", line.trim_end()));
    }
    match shards {
        1 => text.push_str(&format!("\n  {}", room.describe(total))),
        _ => text.push_str(&format!(
            "\n  each shard: the table above, for {} items; room on each master is not checked",
            show::int(
                def.shard(def.name())
                    .ok()
                    .and_then(|d| d.params().capacity)
                    .unwrap_or(0)
            )
        )),
    }
    let mut doc = json!({
        "name": def.name(),
        "result": "dry_run",
        "kind": def.kind(),
        "exists": exists,
        "generations": gens.iter().map(|(l, capacity)| json!({
            "capacity": capacity,
            "bits": l.bits,
            "hashes": l.hashes,
            "blocks": l.blocks,
            "bytes": l.bytes(),
        })).collect::<Vec<_>>(),
        "bytes": total,
        "maxmemory": room.maxmemory,
        "used_memory": room.used,
        "fits": fits,
    });
    if shards > 1 {
        doc["shards"] = shards.into();
        doc["shard_bytes"] = per_shard.into();
    }
    output.print(out, &text, &doc, true)?;
    Ok(if fits == Some(false) && !exists {
        EXIT_WOULD_NOT_FIT
    } else {
        0
    })
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
