//! `create`'s flags: one per filter setting, built from the library's
//! table of settings; and `--from`.

use crate::show::words::setting_values;
use chrono::{DateTime, Utc};
use clap::{Arg, ArgAction, ArgMatches};
use rotabloom::config::{settings, FilterParams, Setting};

/// The filter settings given as flags: one flag per setting of
/// [`settings`], so a setting added to the library's table is a flag here
/// with no change to this file.
#[derive(Debug, Default)]
pub struct SettingFlags {
    /// The settings given as flags.
    pub params: FilterParams,
    /// `$ROTABLOOM_SHARDS`: a default for filters described by flags, not
    /// a flag, so that `create` of configured filters ignores it.
    pub env_shards: Option<u32>,
}

/// The setting `$ROTABLOOM_SHARDS` also gives.
const SHARDS: &str = "shards";

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
    if let Some(values) = setting_values(s.key()) {
        arg = arg.add(values);
    }
    // A flag named otherwise than its key (`--every`) also takes the
    // key's spelling (`--schedule`), as in the configuration.
    if s.flag() != s.key() && !s.key().contains('_') {
        arg = arg.visible_alias(s.key());
    }
    if s.key() == SHARDS {
        arg = arg.env("ROTABLOOM_SHARDS");
    }
    match s.value_name() {
        None => arg.action(ArgAction::SetTrue),
        Some(name) if s.key() == SHARDS => arg.value_name(name).value_parser(shards),
        // Parsed once, here, into parameters that hold this setting alone,
        // which the flags' parameters then take (`from_arg_matches`).
        Some(name) => arg.value_name(name).value_parser(move |text: &str| {
            let mut p = FilterParams::default();
            p.set(s.key(), text).map(|()| p).map_err(|e| e.message)
        }),
    }
}

/// `--shards S` or `$ROTABLOOM_SHARDS`, read once into the number the
/// filter takes, as the library reads the setting. Whether it is in range
/// is checked once, by the library with the whole filter
/// ([`FilterParams::validate`]), whose message names the filter.
fn shards(text: &str) -> Result<u32, String> {
    let mut p = FilterParams::default();
    p.set(SHARDS, text).map_err(|e| e.message)?;
    p.shards
        .ok_or_else(|| format!("{text:?} is no number of shards"))
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
        let mut flags = SettingFlags::default();
        let invalid = |e: &dyn std::fmt::Display| {
            clap::Error::raw(clap::error::ErrorKind::InvalidValue, e.to_string())
        };
        for s in settings() {
            if s.key() == SHARDS {
                let shards = m.try_get_one::<u32>(SHARDS).map_err(|e| invalid(&e))?;
                match m.value_source(SHARDS) {
                    Some(clap::parser::ValueSource::EnvVariable) => {
                        flags.env_shards = shards.copied()
                    }
                    _ => flags.params.shards = shards.copied(),
                }
                continue;
            }
            match s.value_name() {
                // A switch given: its setting is on (no text to read).
                None => {
                    let on = m.try_get_one::<bool>(s.key()).map_err(|e| invalid(&e))?;
                    if on.copied().unwrap_or(false) {
                        flags.params.set(s.key(), "true").map_err(|e| invalid(&e))?;
                    }
                }
                Some(_) => {
                    let given = m
                        .try_get_one::<FilterParams>(s.key())
                        .map_err(|e| invalid(&e))?;
                    if let Some(p) = given {
                        flags.params.merge(p.clone());
                    }
                }
            }
        }
        Ok(flags)
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
