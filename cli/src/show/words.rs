//! The fixed words the command line offers as values (for completion and
//! help): --when-full, --delivery, and every filter setting whose values
//! are words (kind, mode, backend, schedule), read from the library's
//! table of settings.

use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use rotabloom::WhenFull;

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
