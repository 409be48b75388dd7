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
mod tests {
    use super::*;

    fn lines(from: u64, n: u64) -> Vec<Vec<u8>> {
        (from..from + n)
            .map(|i| i.to_string().into_bytes())
            .collect()
    }

    fn full(answered: Vec<bool>) -> anyhow::Error {
        anyhow::Error::new(rotabloom::Error::Full {
            name: "small".into(),
            capacity: 100,
            count: 100,
            answered,
        })
    }

    fn words(writes: Writes) -> Words {
        Words {
            unit: "lines",
            writes,
            journal: None,
        }
    }

    /// Feeds `batches` (first line, length, result) in order; returns the
    /// lines handed on and the verdict's message and code.
    fn run(
        writes: Writes,
        batches: Vec<(u64, u64, anyhow::Result<Vec<bool>>)>,
    ) -> (Vec<String>, Option<(String, u8)>) {
        let w = words(writes);
        let mut t = Tally::default();
        let mut out = Vec::new();
        for (first, n, result) in batches {
            let l = lines(first, n);
            t.take(first, &l, false, result, &w, |l, a| {
                for (line, new) in l.iter().zip(a) {
                    if new {
                        out.push(String::from_utf8(line.clone()).unwrap());
                    }
                }
                Ok(())
            });
        }
        let v = t
            .verdict(&w, false, Some(40))
            .err()
            .map(|e| (e.to_string(), exit_code(&e)));
        (out, v)
    }

    #[test]
    fn a_refusal_prints_what_was_inserted_and_names_the_first_line_refused() {
        // Batch 2 (lines 11-20) fills the filter after 4 of its lines;
        // batch 3, in flight with it, got in before it filled (2 lines) and
        // batch 4 found it full.
        let (out, v) = run(
            Writes::Answers,
            vec![
                (0, 10, Ok(vec![true; 10])),
                (10, 10, Err(full(vec![true, false, true, true]))),
                (20, 10, Err(full(vec![true, true]))),
                (30, 10, Err(full(vec![]))),
            ],
        );
        let mut want: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        want.extend(["10", "12", "13", "20", "21"].map(String::from));
        assert_eq!(out, want);
        let (message, code) = v.unwrap();
        assert_eq!(code, 3);
        assert!(
            message.contains("holds 100 items of the 100")
                && message
                    .contains("24 lines refused, the first at line 15, none of them inserted")
                && message.contains("run again from line 15 once it has room"),
            "{message}"
        );
    }

    #[test]
    fn a_shard_that_failed_leaves_every_other_answer_printed_and_its_lines_named() {
        // Lines 11-16: shard 1 (lines 12, 14, 16) is full after one, shard
        // 2 (line 13) is missing.
        let full = rotabloom::Error::Full {
            name: "f-1".into(),
            capacity: 5,
            count: 5,
            answered: vec![],
        };
        let gone = rotabloom::Error::NotFound { name: "f-2".into() };
        let p = rotabloom::Partial::new(
            "f",
            vec![Some(true), Some(true), None, Some(false), None, None],
            vec![
                rotabloom::ShardFailure::new(1, vec![4, 5], full),
                rotabloom::ShardFailure::new(2, vec![2], gone),
            ],
        );
        let partial = anyhow::Error::new(rotabloom::Error::Partial(Box::new(p)));
        let (out, v) = run(
            Writes::Answers,
            vec![(0, 10, Ok(vec![true; 10])), (10, 6, Err(partial))],
        );
        let mut want: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        want.extend(["10", "11"].map(String::from));
        assert_eq!(out, want);
        let (message, code) = v.unwrap();
        assert_eq!(code, 3);
        assert!(
            message.starts_with("3 lines were not answered, every other one was")
                && message
                    .contains("2 lines refused (not inserted) by shard 1 (filter \"f-1\" is full")
                && message.contains("lines 15-16")
                && message.contains("1 lines refused (not inserted) by shard 2")
                && message.contains("lines 13")
                && message.contains("run again from line 13 once the cause is gone"),
            "{message}"
        );
    }

    #[test]
    fn a_batch_that_gave_up_names_the_lines_that_may_be_applied() {
        let gave_up = || {
            anyhow::Error::new(GaveUp {
                message: "redis://h:1: gave up after 2 reconnection attempts: refused".into(),
            })
        };
        let (out, v) = run(
            Writes::Answers,
            vec![
                (0, 10, Ok(vec![true; 10])),
                (10, 10, Err(gave_up())),
                (20, 10, Ok(vec![true; 10])),
                (30, 10, Err(gave_up())),
            ],
        );
        assert_eq!(out.len(), 20, "later answers are printed: {out:?}");
        let (message, code) = v.unwrap();
        assert_eq!(code, 3);
        assert!(
            message.contains("gave up after 2 reconnection attempts")
                && message.contains(
                    "10 lines were done, the next 10 are not confirmed (run again from line 11)"
                )
                && message
                    .contains("lines 11-20, 31-40 may have been applied without being printed")
                && message.contains("--state FILE")
                && message.contains("10 lines after those were done too"),
            "{message}"
        );
        let (_, v) = run(Writes::None, vec![(0, 5, Err(gave_up()))]);
        assert!(v
            .unwrap()
            .0
            .ends_with("0 lines were done, the next 5 are not confirmed (run again from line 1)"));
    }

    #[test]
    fn other_errors_keep_their_exit_code() {
        let gone = anyhow::Error::new(rotabloom::Error::NotFound { name: "f".into() });
        let (_, v) = run(Writes::Inserts, vec![(0, 3, Err(gone))]);
        let (message, code) = v.unwrap();
        assert_eq!(code, 2, "{message}");
        assert!(message.contains("inserting again is harmless"), "{message}");
    }
}
