//! `--state FILE` and `--resume FILE`: a run of `filter`, `add` or `load`
//! that gives up can be taken up again without losing the answers of the
//! batches it had sent but not handed on.
//!
//! Each batch is an idempotent batch whose answers the server keeps under
//! its token for the retry window. The state file lists, before a batch is
//! sent, its first line, its length, a digest of its lines and (once a
//! worker sends it) its token; a batch leaves the list once its answers are
//! handed on. A resumed run skips the lines handed on, runs the listed
//! batches again under their tokens (the server then returns the answers
//! it gave the first time) and goes on from there.
//!
//! The file's format is `statefile`'s: a process killed at any point
//! leaves it readable.

use crate::run::statefile::{replay, Entry, Log, State};
use crate::shared::fail::{file_error, usage};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The flags of the writers that can be resumed.
#[derive(clap::Args, Debug, Clone)]
pub struct StateFlags {
    /// Keep the batches not yet handed on in FILE, so that a run that
    /// gives up can be resumed with --resume FILE and get their answers
    /// (the file must not exist; it is removed when the run completes).
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    state: Option<PathBuf>,
    /// Take up the run that gave up with --state FILE (or --resume FILE),
    /// fed the same input: skips what it handed on, answers its unconfirmed
    /// batches as the server answered them then, and goes on.
    #[arg(long, value_name = "FILE")]
    resume: Option<PathBuf>,
    /// How long the server keeps each batch's answers for a retry or a
    /// --resume (one byte per line for that long), e.g. 300s, 1h.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_window)]
    retry_window: Duration,
}

fn parse_window(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e}"))?;
    if d < Duration::from_secs(1) {
        return Err(format!("{s:?}: at least 1s"));
    }
    Ok(d)
}

impl StateFlags {
    /// How long records are kept.
    pub fn window(&self) -> Duration {
        self.retry_window
    }

    /// The journal the flags ask for: none, a new one, or the one to
    /// resume. `command` is the subcommand (`filter`, `add`, `load`);
    /// `resume` renders the command that resumes from a given file.
    pub fn journal(
        &self,
        delivery: rotabloom::Delivery,
        command: &str,
        filter: &str,
        resume: impl Fn(&str) -> String,
    ) -> anyhow::Result<Option<Journal>> {
        // A resumed run gets its answers from the server's records, which
        // only exactly-once batches leave.
        if delivery != rotabloom::Delivery::ExactlyOnce
            && (self.state.is_some() || self.resume.is_some())
        {
            return Err(crate::shared::fail::usage(format!(
                "--state and --resume need --delivery exactly-once (the server keeps no answers {delivery})"
            )));
        }
        let window_ms = u64::try_from(self.retry_window.as_millis()).unwrap_or(u64::MAX);
        match (&self.state, &self.resume) {
            (Some(path), _) => Journal::start(path, command, filter, window_ms, resume).map(Some),
            (None, Some(path)) => {
                Journal::reopen(path, command, filter, window_ms, resume).map(Some)
            }
            (None, None) => Ok(None),
        }
    }
}

const VERSION: u32 = 1;

/// The digest of a batch's lines.
pub fn digest(lines: &[Vec<u8>]) -> String {
    use md5::{Digest, Md5};
    let mut h = Md5::new();
    for l in lines {
        h.update((l.len() as u64).to_le_bytes());
        h.update(l);
    }
    h.finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The state file of one run, shared by the reader, the workers and the
/// thread that hands answers on.
pub struct Journal {
    path: PathBuf,
    state: Mutex<(State, Log)>,
    /// The command that resumes this run.
    resume: String,
    /// The retry window of the batches of this run.
    window_ms: u64,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("path", &self.path).finish()
    }
}

/// What a resumed run does with the batches of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The batches to run again, in input order.
    pub batches: Vec<Entry>,
    /// Where the first run stopped cutting batches.
    pub read: u64,
}

/// What became of a batch sent by the run that gave up, judged from
/// whether its record is still on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// The record is there (now kept for another window): run again under
    /// its token, the batch answers as it did.
    Kept,
    /// No record, and one would still be there had the batch been
    /// applied: it was not; run it again.
    NotApplied,
    /// No record, and it may have expired: whatever the batch had applied
    /// answers "seen" now.
    Lost,
}

/// How far before a record's expiry a missing record is taken as expired
/// rather than never written: clocks drift, and the server counts from
/// when it ran the batch, the file from just before it was sent.
fn margin(window_ms: u64) -> u64 {
    (window_ms / 10).min(30_000)
}

/// The fate of `e` when its record was found (`kept`) or not at `now_ms`.
pub fn fate(e: &Entry, kept: bool, now_ms: u64) -> Fate {
    match (kept, e.sent_ms) {
        (true, _) => Fate::Kept,
        // Never sent: no question of a record.
        (false, None) => Fate::NotApplied,
        (false, Some(sent)) => {
            let sure_until = sent
                .saturating_add(e.window_ms)
                .saturating_sub(margin(e.window_ms));
            if now_ms < sure_until {
                Fate::NotApplied
            } else {
                Fate::Lost
            }
        }
    }
}

impl Journal {
    fn start(
        path: &Path,
        command: &str,
        filter: &str,
        window_ms: u64,
        resume: impl Fn(&str) -> String,
    ) -> anyhow::Result<Journal> {
        if path.exists() {
            return Err(usage(format!(
                "--state {}: the file exists; it may hold the batches of a run that gave up: \
                 resume that run with --resume {}, or remove the file",
                path.display(),
                path.display()
            )));
        }
        let state = State {
            version: VERSION,
            command: command.to_string(),
            filter: filter.to_string(),
            read: 0,
            batches: Vec::new(),
        };
        let log = Log::create(path, &state)
            .map_err(|e| file_error(format!("--state {}: cannot write it: {e}", path.display())))?;
        Ok(Journal {
            path: path.to_path_buf(),
            state: Mutex::new((state, log)),
            resume: resume(&path.display().to_string()),
            window_ms,
        })
    }

    fn reopen(
        path: &Path,
        command: &str,
        filter: &str,
        window_ms: u64,
        resume: impl Fn(&str) -> String,
    ) -> anyhow::Result<Journal> {
        let bad = |why: String| file_error(format!("--resume {}: {why}", path.display()));
        let text = std::fs::read(path).map_err(|e| {
            bad(match e.kind() {
                std::io::ErrorKind::NotFound => "no such file".to_string(),
                _ => e.to_string(),
            })
        })?;
        let state =
            replay(&text).map_err(|e| bad(format!("not a state file of rotabloom ({e})")))?;
        if state.version != VERSION {
            return Err(bad(format!(
                "state file version {} (this rotabloom reads {VERSION})",
                state.version
            )));
        }
        if state.command != command || state.filter != filter {
            return Err(usage(format!(
                "--resume {}: the file is of `{} {}`, not of `{command} {filter}`",
                path.display(),
                state.command,
                state.filter
            )));
        }
        let log = Log::create(path, &state).map_err(|e| bad(format!("cannot write it: {e}")))?;
        Ok(Journal {
            path: path.to_path_buf(),
            state: Mutex::new((state, log)),
            resume: resume(&path.display().to_string()),
            window_ms,
        })
    }

    /// The retry window for this run's batches.
    pub fn window(&self) -> Duration {
        Duration::from_millis(self.window_ms)
    }

    /// The command that resumes this run (shell words).
    pub fn resume_command(&self) -> &str {
        &self.resume
    }

    /// What a resumed run does: the batches to run again and where the
    /// first run stopped.
    pub fn plan(&self) -> Plan {
        self.with(|s| Plan {
            batches: s.batches.clone(),
            read: s.read,
        })
    }

    /// Records the fates of the resumed batches: a kept record was given
    /// another window from `now`; a lost one is marked.
    pub fn judged(&self, fates: &[(u64, Fate)], now: u64) -> anyhow::Result<()> {
        self.update(|s| {
            for (first, fate) in fates {
                if let Some(e) = s.batches.iter_mut().find(|e| e.first == *first) {
                    match fate {
                        Fate::Kept => e.sent_ms = Some(now),
                        Fate::NotApplied => {}
                        Fate::Lost => e.lost = true,
                    }
                }
            }
        })
    }

    /// A batch cut from the input, before it goes to a worker.
    pub fn queued(&self, first: u64, lines: &[Vec<u8>]) -> anyhow::Result<()> {
        let entry = Entry {
            first,
            len: lines.len() as u64,
            digest: digest(lines),
            token: None,
            sent_ms: None,
            window_ms: self.window_ms,
            lost: false,
        };
        self.update(|s| {
            s.read = s.read.max(first + entry.len);
            s.batches.push(entry);
        })
    }

    /// The batch at `first` goes out under `token`: recorded before it is
    /// sent, so that a run killed at any point knows which record holds
    /// what the server did with it.
    pub fn sending(&self, first: u64, token: &str, window: Duration) -> anyhow::Result<()> {
        let now = now_ms();
        self.update(|s| {
            if let Some(e) = s.batches.iter_mut().find(|e| e.first == first) {
                if e.token.as_deref() != Some(token) || e.sent_ms.is_none() {
                    e.token = Some(token.to_string());
                    e.sent_ms = Some(now);
                    e.window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
                }
            }
        })
    }

    /// The batch at `first` (its `lines`) was handed on, all of it or all
    /// but `left` (indices, ascending, each with whether it may have been
    /// written): each run of those stays, as a batch never sent (one that
    /// may have been written as lost: its answer is unknown).
    pub fn handed_on(
        &self,
        first: u64,
        lines: &[Vec<u8>],
        left: &[(usize, bool)],
    ) -> anyhow::Result<()> {
        self.update(|s| {
            let Some(i) = s.batches.iter().position(|e| e.first == first) else {
                return;
            };
            let window_ms = s.batches.remove(i).window_ms;
            let mut runs: Vec<(usize, usize, bool)> = Vec::new();
            for &(k, lost) in left.iter().filter(|(k, _)| *k < lines.len()) {
                match runs.last_mut() {
                    Some((a, b, l)) if *b == k && *l == lost => *b = k + 1,
                    _ => runs.push((k, k + 1, lost)),
                }
            }
            let rest = runs.into_iter().map(|(a, b, lost)| Entry {
                first: first + a as u64,
                len: (b - a) as u64,
                digest: digest(&lines[a..b]),
                token: None,
                sent_ms: None,
                window_ms,
                lost,
            });
            s.batches.splice(i..i, rest);
        })
    }

    /// The end of the run: the file is removed when nothing is left to
    /// resume, else written to disk for good. Returns whether batches are
    /// left.
    pub fn finish(&self) -> anyhow::Result<bool> {
        let mut g = self.lock();
        let (state, log) = &mut *g;
        let left = !state.batches.is_empty();
        if left {
            log.settle(state).map_err(|e| self.cannot_write(e))?;
        } else {
            match std::fs::remove_file(&self.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(file_error(format!(
                        "cannot remove {}: {e}",
                        self.path.display()
                    )))
                }
            }
        }
        Ok(left)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (State, Log)> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        f(&self.lock().0)
    }

    /// Changes the state and writes the change, under the lock, so that
    /// the file follows the changes in order.
    fn update(&self, f: impl FnOnce(&mut State)) -> anyhow::Result<()> {
        let mut g = self.lock();
        let (state, log) = &mut *g;
        let before = state.clone();
        f(state);
        log.append(&before, state).map_err(|e| self.cannot_write(e))
    }

    fn cannot_write(&self, e: std::io::Error) -> anyhow::Error {
        file_error(format!(
            "cannot write the state file {}: {e}",
            self.path.display()
        ))
    }
}

/// `words` as one shell command line, quoted where needed.
pub fn shell_words(words: &[&str]) -> String {
    // Arguments cannot hold NUL, the only thing quoting refuses.
    shlex::try_join(words.iter().copied()).unwrap_or_else(|_| words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(sent: Option<u64>) -> Entry {
        Entry {
            first: 0,
            len: 10,
            digest: digest(&[b"a".to_vec()]),
            token: sent.map(|_| "t".into()),
            sent_ms: sent,
            window_ms: 300_000,
            lost: false,
        }
    }

    #[test]
    fn a_missing_record_is_lost_only_once_it_may_have_expired() {
        let e = entry(Some(1_000_000));
        assert_eq!(fate(&e, true, 9_000_000), Fate::Kept);
        assert_eq!(fate(&e, false, 1_000_500), Fate::NotApplied);
        // 30 s of margin before the 300 s window ends.
        assert_eq!(fate(&e, false, 1_269_999), Fate::NotApplied);
        assert_eq!(fate(&e, false, 1_270_000), Fate::Lost);
        assert_eq!(fate(&entry(None), false, u64::MAX), Fate::NotApplied);
    }

    #[test]
    fn digests_tell_lines_apart() {
        let a = digest(&[b"ab".to_vec(), b"c".to_vec()]);
        assert_eq!(a.len(), 32);
        assert_ne!(a, digest(&[b"a".to_vec(), b"bc".to_vec()]));
        assert_eq!(a, digest(&[b"ab".to_vec(), b"c".to_vec()]));
    }

    #[test]
    fn the_file_follows_the_batches_and_goes_when_none_is_left() {
        let dir = std::env::temp_dir().join(format!("rb-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.json");
        let _ = std::fs::remove_file(&path);
        let cmd = |f: &str| format!("rotabloom filter f --resume {f}");
        let j = Journal::start(&path, "filter", "f", 300_000, cmd).unwrap();
        let lines: Vec<Vec<u8>> = (0..4).map(|i| vec![b'a' + i]).collect();
        j.queued(0, &lines[..2]).unwrap();
        j.queued(2, &lines[2..]).unwrap();
        j.sending(0, "tok0", Duration::from_secs(300)).unwrap();
        // Of the batch at 2, its second line was refused: it stays.
        j.handed_on(2, &lines[2..], &[(1, false)]).unwrap();
        // Another process reads what this one wrote.
        let again = Journal::reopen(&path, "filter", "f", 1, cmd).unwrap();
        let plan = again.plan();
        assert_eq!(plan.read, 4);
        assert_eq!(plan.batches.len(), 2);
        assert_eq!(plan.batches[0].token.as_deref(), Some("tok0"));
        assert_eq!((plan.batches[1].first, plan.batches[1].len), (3, 1));
        assert_eq!(plan.batches[1].digest, digest(&lines[3..]));
        assert!(Journal::start(&path, "filter", "f", 1, cmd).is_err());
        assert!(Journal::reopen(&path, "add", "f", 1, cmd).is_err());
        assert!(Journal::reopen(&path, "filter", "g", 1, cmd).is_err());
        assert!(j.finish().unwrap());
        assert!(path.exists());
        j.handed_on(0, &lines[..2], &[]).unwrap();
        j.handed_on(3, &lines[3..], &[]).unwrap();
        assert!(!j.finish().unwrap());
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        let words = [
            "rotabloom",
            "filter",
            "crawl:dupes",
            "--resume",
            "/tmp/a b's.json",
        ];
        let line = shell_words(&words);
        assert!(
            line.starts_with("rotabloom filter crawl:dupes --resume "),
            "{line}"
        );
        assert_eq!(shlex::split(&line).unwrap(), words);
    }
}
