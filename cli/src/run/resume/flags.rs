//! `--state FILE`, `--resume FILE` and `--retry-window`: the flags of the
//! writers that can be resumed, and the journal they ask for.

use super::Journal;
use crate::shared::fail::usage;
use std::path::PathBuf;
use std::time::Duration;

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
            return Err(usage(format!(
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
