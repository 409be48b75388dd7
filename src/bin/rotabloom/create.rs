//! `rotabloom create`: filters from the configuration or from flags, the
//! flags being built from the library's table of filter settings.

use crate::any;
use crate::connect::Ctx;
use crate::errors::usage;
use crate::show;
use crate::Output;
use clap::{Arg, ArgAction, ArgMatches};
use rotabloom::config::{settings, FilterDef, FilterParams, Setting};
use rotabloom::{Kind, Opened};
use serde_json::json;
use std::io;

/// The filter settings given as flags: one flag per setting of
/// [`settings`], so a setting added to the library's table is a flag here
/// with no change to this file.
#[derive(Debug, Default)]
pub struct SettingFlags(FilterParams);

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
    // A flag named otherwise than its key (`--every`) also takes the
    // key's spelling (`--schedule`), as in the configuration.
    if s.flag() != s.key() && !s.key().contains('_') {
        arg = arg.visible_alias(s.key());
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
    let all = [Kind::Bloom, Kind::Expanding, Kind::Circular];
    if all.iter().all(|k| s.accepts(*k)) {
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
            if let Some(v) = value {
                params.set(s.key(), &v).map_err(|e| invalid(&e))?;
            }
        }
        Ok(SettingFlags(params))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

pub fn run(
    ctx: &Ctx,
    names: &[String],
    flags: &SettingFlags,
    output: Output,
) -> anyhow::Result<u8> {
    let defs = if flags.0.keys_set().is_empty() {
        declared(ctx, names)?
    } else {
        vec![from_flags(ctx, names, &flags.0)?]
    };
    let mut conn = ctx.connect()?;
    let mut out = io::stdout().lock();
    for def in &defs {
        let (f, how) = any::create_or_open(&mut conn, def, ctx.wait())
            .map_err(|e| ctx.create_error(def.name(), e))?;
        let info = f.info(&mut conn)?;
        let bytes: u64 = info.generations.iter().map(|g| g.bits.div_ceil(8)).sum();
        let shape = format!(
            "{}, {}, {}",
            f.kind(),
            show::count(info.generations.len() as u64, "generation"),
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
            "kind": f.kind(),
            "generations": info.generations.len(),
            "memory_bytes": bytes,
        });
        output.print(&mut out, &text, &doc, how == Opened::Created)?;
    }
    Ok(0)
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
            return Err(usage(format!("create: {} declares no filter", c.file())));
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
