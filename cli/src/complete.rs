//! Completion of values: filter names asked of the server the words typed
//! so far point to, and the words of --kind, --mode, --backend and
//! --when-full. The shell's script runs `COMPLETE=SHELL rotabloom -- WORDS`
//! (clap_complete's dynamic completion), which answers from here.

use crate::globals::Globals;
use clap::FromArgMatches;
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use rotabloom::WhenFull;
use std::ffi::OsString;
use std::time::Duration;

/// How long completion waits for Redis: a prompt must not hang.
const PATIENCE: Duration = Duration::from_secs(1);

/// The filter names of the database (and of the configuration named on
/// the line), none when Redis cannot be reached in time.
pub fn filter_names() -> ArgValueCandidates {
    ArgValueCandidates::new(|| {
        let words: Vec<OsString> = std::env::args_os()
            .skip_while(|a| a != "--")
            .skip(1)
            .collect();
        names(words)
            .into_iter()
            .map(CompletionCandidate::new)
            .collect()
    })
}

/// The filter names `words` (a command line being typed) can reach.
fn names(words: Vec<OsString>) -> Vec<String> {
    let Ok(m) = crate::help::command()
        .ignore_errors(true)
        .try_get_matches_from(words)
    else {
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
        names.extend(crate::connect::all_names(&mut conn).unwrap_or_default());
    }
    names.sort();
    names.dedup();
    names
}

fn words(list: Vec<&'static str>) -> ArgValueCandidates {
    ArgValueCandidates::new(move || list.iter().map(|w| CompletionCandidate::new(*w)).collect())
}

/// The values of `--when-full`.
pub fn when_full() -> ArgValueCandidates {
    words(
        [WhenFull::Error, WhenFull::Warn, WhenFull::Expand]
            .map(WhenFull::as_str)
            .to_vec(),
    )
}

pub fn delivery() -> ArgValueCandidates {
    words(
        [
            rotabloom::Delivery::ExactlyOnce,
            rotabloom::Delivery::AtLeastOnce,
        ]
        .map(rotabloom::Delivery::as_str)
        .to_vec(),
    )
}

/// The values of the filter setting `key`, when they are words.
pub fn setting_values(key: &str) -> Option<ArgValueCandidates> {
    setting_words(key).map(words)
}

fn setting_words(key: &str) -> Option<Vec<&'static str>> {
    let words = rotabloom::config::settings()
        .iter()
        .find(|s| s.key() == key)?
        .words();
    (!words.is_empty()).then_some(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rotabloom::config::FilterParams;

    #[test]
    fn every_word_offered_is_accepted() {
        for key in ["kind", "mode", "backend", "schedule"] {
            for w in setting_words(key).unwrap() {
                let mut p = FilterParams::default();
                p.set(key, w).unwrap_or_else(|e| panic!("{key} {w}: {e}"));
            }
        }
        for w in ["error", "warn", "expand"] {
            w.parse::<WhenFull>().unwrap();
        }
    }
}
