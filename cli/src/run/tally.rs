//! What a run of batches did, batch by batch in input order, and the one
//! error line it ends with: a refusal (a full filter, a shard that failed)
//! names the lines refused (see [`Unanswered`]); a batch that failed names
//! the lines whose fate is unknown and how to get their answers.

use crate::run::resilient::GaveUp;
use crate::run::resume::Journal;
use crate::run::unanswered::Unanswered;
use crate::shared::fail::{describe, exit_code, Fail};
use crate::show::values::ranges;
use rotabloom::config::Secrets;
use std::sync::Arc;

/// What a failed batch may have left on the server, by command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writes {
    /// Nothing (`check`): run again from the line named.
    None,
    /// Its lines inserted, nothing printed (`add`, `load`): inserting again
    /// is harmless.
    Inserts,
    /// Its lines inserted and their answers lost (`filter`): a rerun
    /// answers them "seen".
    Answers,
}

/// How the run is told about.
pub struct Words {
    /// "lines" or "items".
    pub unit: &'static str,
    pub writes: Writes,
    pub journal: Option<Arc<Journal>>,
}

impl Words {
    fn one(&self) -> &str {
        self.unit.trim_end_matches('s')
    }
}

/// The results so far, in input order.
#[derive(Default)]
pub struct Tally {
    /// The first batch that failed other than full, in input order: its
    /// error, first line and length.
    failed: Option<(anyhow::Error, u64, u64)>,
    /// Every batch that failed so: maybe applied, not handed on.
    unconfirmed: Vec<(u64, u64)>,
    /// Lines handed on after the first failure.
    later: u64,
    /// Lines the library said it left unanswered (a full filter, a shard
    /// that failed), every other line of their batches handed on.
    left: Unanswered,
    /// Handing on failed (the output is gone, the state file cannot be
    /// written): nothing more is handed on.
    output: Option<anyhow::Error>,
    /// Resumed batches whose records were gone: their ranges, and how many
    /// of their lines were not new (whose answer of the first run is lost).
    lost: Vec<(u64, u64)>,
    unknown: u64,
}

/// The end of a run some of whose lines were refused (exit code 3): every
/// other line was handled, so `add` and `load` still say what they
/// inserted.
#[derive(Debug)]
pub struct Refusal(String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// Whether the run ended refused by a full filter, and nothing else.
pub fn is_refusal(e: &anyhow::Error) -> bool {
    e.downcast_ref::<Refusal>().is_some()
}

impl Tally {
    /// Whether the run must stop reading.
    /// Whether a batch failed (or the output did): nothing more is sent.
    pub fn failing(&self) -> bool {
        self.failed.is_some() || self.output.is_some()
    }

    pub fn stopping(&self) -> bool {
        self.failed.is_some() || !self.left.is_empty() || self.output.is_some()
    }

    /// Takes the result of the batch of `lines` after `first` lines (the
    /// next in input order); `hand_on` gets the lines handled and their
    /// answers, in input order (all of them, or all but those refused).
    /// `lost`: a resumed batch whose record was gone.
    pub fn take(
        &mut self,
        first: u64,
        lines: &[Vec<u8>],
        lost: bool,
        result: anyhow::Result<Vec<bool>>,
        words: &Words,
        hand_on: impl FnOnce(&[Vec<u8>], Vec<bool>) -> anyhow::Result<()>,
    ) {
        let (all, len) = (lines, lines.len() as u64);
        let (lines, answers, left): (std::borrow::Cow<[Vec<u8>]>, _, _) = match result {
            Ok(a) => (lines.into(), a, Vec::new()),
            Err(e) => match self.left.take(first, lines.len(), &e) {
                Some(split) => {
                    let (kept, answers) = lines
                        .iter()
                        .zip(&split.answers)
                        .filter_map(|(l, a)| a.map(|a| (l.clone(), a)))
                        .unzip::<_, _, Vec<_>, Vec<_>>();
                    (kept.into(), answers, split.left)
                }
                None => {
                    self.unconfirmed.push((first, len));
                    if self.failed.is_none() {
                        self.failed = Some((e, first, len));
                    }
                    return;
                }
            },
        };
        if self.output.is_some() {
            return;
        }
        let n = answers.len().min(lines.len());
        if lost && words.writes == Writes::Answers {
            self.lost.push((first, len));
            self.unknown += answers.iter().filter(|&&new| !new).count() as u64;
        }
        let handed = hand_on(&lines, answers).and_then(|()| match &words.journal {
            Some(j) => j.handed_on(first, all, &left),
            None => Ok(()),
        });
        match handed {
            Ok(()) if self.failed.is_some() => self.later += n as u64,
            Ok(()) => {}
            Err(e) => self.output = Some(e),
        }
    }

    /// The run's end: `Ok` when every line was handled, else its one
    /// error. `left`: whether the state file still lists batches;
    /// `unread_after`: the lines read, when the input did not end.
    pub fn verdict(
        self,
        words: &Words,
        left: bool,
        unread_after: Option<u64>,
    ) -> anyhow::Result<()> {
        if let Some(e) = self.output {
            return Err(e);
        }
        let resume = match (&words.journal, left) {
            (Some(j), true) => Some(j.resume_command().to_string()),
            _ => None,
        };
        let refused = (!self.left.is_empty()).then(|| {
            self.left
                .message(words.unit, resume.as_deref(), unread_after)
        });
        if let Some((e, first, len)) = self.failed {
            let code = exit_code(&e);
            let mut message = describe(&e, &Secrets::default());
            let gave_up = e.chain().any(|c| c.downcast_ref::<GaveUp>().is_some());
            let (unit, one) = (words.unit, words.one());
            message += &format!("; {first} {unit} were done");
            match (&resume, words.writes) {
                (Some(cmd), _) => {
                    let window = words
                        .journal
                        .as_ref()
                        .map(|j| humantime::format_duration(j.window()).to_string())
                        .unwrap_or_default();
                    message += &format!(
                        ", {unit} {} are not confirmed{}: resume with `{cmd}`, fed the same input{}",
                        ranges(&self.unconfirmed),
                        if gave_up {
                            format!(" (the server keeps their answers for {window})")
                        } else {
                            String::new()
                        },
                        if gave_up { " (and the same options), within that time" } else { "" },
                    );
                }
                // Refused before anything was written (a re-created
                // filter, say): nothing to lose, only to send again.
                (None, Writes::Answers) if refused_whole(&e) => {
                    message += &format!(
                        ", the next {len} were not applied (run again from {one} {})",
                        first + 1,
                    );
                }
                (None, Writes::Answers) => {
                    message += &format!(
                        ", the next {len} are not confirmed (run again from {one} {}); {unit} {} may have been applied without being printed, and a rerun answers them seen: run with --state FILE to be able to resume with their answers",
                        first + 1,
                        ranges(&self.unconfirmed),
                    );
                }
                (None, Writes::Inserts) => {
                    message += &format!(
                        ", the next {len} are not confirmed (run again from {one} {}: inserting again is harmless)",
                        first + 1
                    );
                }
                (None, Writes::None) => {
                    message += &format!(
                        ", the next {len} are not confirmed (run again from {one} {})",
                        first + 1
                    );
                }
            }
            if self.later > 0 {
                message += &format!("; {} {unit} after those were done too", self.later);
            }
            if let Some(r) = refused {
                message += &format!("; and {r}");
            }
            return Err(anyhow::Error::new(Fail { code, message }));
        }
        if let Some(r) = refused {
            return Err(anyhow::Error::new(Refusal(r)));
        }
        if !self.lost.is_empty() {
            let window = words
                .journal
                .as_ref()
                .map(|j| humantime::format_duration(j.window()).to_string())
                .unwrap_or_default();
            return Err(anyhow::Error::new(Fail {
                code: 3,
                message: format!(
                    "the server no longer held the answers of {} {} of the interrupted run (they are kept {window}): the new ones now were printed, but {} not new now may have been new then, and were never printed",
                    words.unit,
                    ranges(&self.lost),
                    self.unknown,
                ),
            }));
        }
        Ok(())
    }
}

/// Whether the server refused the failed batch before writing any of it
/// ([`rotabloom::Fate::Refused`]).
fn refused_whole(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<rotabloom::Error>())
        .any(|r| rotabloom::Fate::of(r) == rotabloom::Fate::Refused)
}

#[cfg(test)]
mod tests;
