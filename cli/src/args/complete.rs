//! Completion of filter names, asked of the server the words typed so far
//! point to (the fixed words of --kind, --when-full, ... are in
//! `show/words.rs`). The shell's script runs `COMPLETE=SHELL rotabloom -- WORDS`
//! (clap_complete's dynamic completion), which answers from here.

use super::globals::Globals;
use crate::run::open::all_names;
use clap::FromArgMatches;
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use std::ffi::OsString;
use std::time::Duration;

/// How long completion waits for Redis: a prompt must not hang.
const PATIENCE: Duration = Duration::from_secs(1);

/// The filter names of the database (and of the configuration named on
/// the line), none when Redis cannot be reached in time. `line` is the
/// command line the words typed so far are read with: the one this
/// completes, which is defined with these candidates.
pub fn filter_names(line: fn() -> clap::Command) -> ArgValueCandidates {
    ArgValueCandidates::new(move || {
        let words: Vec<OsString> = std::env::args_os()
            .skip_while(|a| a != "--")
            .skip(1)
            .collect();
        names(line(), words)
            .into_iter()
            .map(CompletionCandidate::new)
            .collect()
    })
}

/// The filter names `words` (a command line being typed) can reach.
fn names(line: clap::Command, words: Vec<OsString>) -> Vec<String> {
    let Ok(m) = line.ignore_errors(true).try_get_matches_from(words) else {
        return Vec::new();
    };
    let Ok(globals) = Globals::from_arg_matches(&m) else {
        return Vec::new();
    };
    let Ok(ctx) = globals.hasty(PATIENCE).ctx(&m) else {
        return Vec::new();
    };
    let mut names: Vec<String> = ctx
        .config()
        .map(|c| c.filters().iter().map(|f| f.name().to_string()).collect())
        .unwrap_or_default();
    if let Ok(mut conn) = ctx.connect() {
        names.extend(all_names(&mut conn).unwrap_or_default());
    }
    names.sort();
    names.dedup();
    names
}
