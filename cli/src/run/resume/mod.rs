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
//! leaves it readable. The flags that ask for it are in `flags`.

pub mod flags;

use crate::run::statefile::{replay, Entry, Log, State};
use crate::shared::fail::{file_error, usage};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
mod tests;
