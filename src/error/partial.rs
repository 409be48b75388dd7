//! A batch that was partly answered: every answer it got, and the items
//! it could not answer, each failed part named with its error.

use super::Error;
use std::fmt;

/// What a batch did when part of it failed ([`Error::Partial`]): a
/// sharded filter's batch of which some shards answered and others
/// failed, or a long batch (several atomic steps) of which a later step
/// failed. Each step is atomic, and so is each item: an item has its
/// answer in [`answers`](Self::answers), or is named by exactly one
/// [`ShardFailure`], refused (surely not written) or unknown (written or
/// not: its reply was lost).
///
/// ```
/// use rotabloom::{Error, Fate, Partial, ShardFailure};
/// let e = Error::Partial(Box::new(Partial::new(
///     "crawl",
///     vec![Some(true), None, Some(false)],
///     vec![ShardFailure::new(1, vec![1], Error::NotFound { name: "crawl-1".into() })],
/// )));
/// let Error::Partial(p) = &e else { unreachable!() };
/// assert_eq!(p.refused(), vec![1]);
/// assert!(p.unknown().is_empty());
/// assert_eq!(p.failures[0].fate, Fate::Refused);
/// assert!(!e.is_retryable());
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Partial {
    /// The filter's name.
    pub name: String,
    /// Each item's answer, in input order: `None` for the items a failure
    /// names.
    pub answers: Vec<Option<bool>>,
    /// The parts that failed, by shard (0 for a filter that is not
    /// sharded), each item of the batch in at most one.
    pub failures: Vec<ShardFailure>,
}

/// One failed part of a batch: its shard, the input items (indices) it
/// left without an answer, whether they were written, and why.
#[derive(Debug)]
#[non_exhaustive]
pub struct ShardFailure {
    /// The shard (0 for a filter that is not sharded).
    pub shard: u32,
    /// The indices of the batch's items left without an answer, ascending.
    pub items: Vec<usize>,
    /// Whether they were written.
    pub fate: Fate,
    /// Why: the shard's error.
    pub error: Error,
}

/// Whether the items a failure names were written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fate {
    /// Surely not written: the server refused them (a full generation, a
    /// missing shard, memory...). Sending them again once the cause is
    /// gone answers them.
    Refused,
    /// Written or not: the reply was lost. An idempotent batch run again
    /// answers them as the lost run did; a plain call run again may answer
    /// them seen.
    Unknown,
}

impl Fate {
    /// The fate of the items a failed step with error `e` leaves: refused
    /// where the error says nothing of the step was applied, else unknown.
    pub fn of(e: &Error) -> Fate {
        match e {
            Error::Full { .. }
            | Error::LimitReached { .. }
            | Error::MemoryFull { .. }
            | Error::OutOfMemory { .. }
            | Error::NotFound { .. }
            | Error::Recreated { .. }
            | Error::ShardMissing { .. }
            | Error::ShardedBusy { .. }
            | Error::MissingData { .. }
            | Error::KindMismatch { .. }
            | Error::ParameterMismatch { .. }
            | Error::UnsupportedFormat { .. }
            | Error::CorruptMetadata { .. }
            | Error::WrongType { .. }
            | Error::ModuleMissing { .. }
            | Error::PermissionDenied { .. }
            | Error::InvalidParameter { .. } => Fate::Refused,
            // A cluster's redirection (MOVED, ASK): the node did not run
            // the command, it names the one that serves the slot now.
            Error::Redis(e) if e.inner().redirect_node().is_some() => Fate::Refused,
            _ => Fate::Unknown,
        }
    }
}

impl ShardFailure {
    /// Shard `shard`'s failure with `error`, leaving `items`; its fate is
    /// [`Fate::of`] the error.
    pub fn new(shard: u32, items: Vec<usize>, error: Error) -> ShardFailure {
        ShardFailure {
            shard,
            fate: Fate::of(&error),
            items,
            error,
        }
    }
}

impl Partial {
    /// A partial outcome of filter `name`'s batch.
    pub fn new(
        name: impl Into<String>,
        answers: Vec<Option<bool>>,
        failures: Vec<ShardFailure>,
    ) -> Partial {
        Partial {
            name: name.into(),
            answers,
            failures,
        }
    }

    fn with(&self, fate: Fate) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .failures
            .iter()
            .filter(|f| f.fate == fate)
            .flat_map(|f| f.items.iter().copied())
            .collect();
        out.sort_unstable();
        out
    }

    /// The items surely not written, ascending.
    pub fn refused(&self) -> Vec<usize> {
        self.with(Fate::Refused)
    }

    /// The items whose reply was lost, ascending.
    pub fn unknown(&self) -> Vec<usize> {
        self.with(Fate::Unknown)
    }

    /// Whether running the batch again may answer more: a failure's error
    /// is retryable (through an idempotent batch, the answered parts
    /// answer again from their records).
    pub fn is_retryable(&self) -> bool {
        self.failures.iter().any(|f| f.error.is_retryable())
    }
}

impl fmt::Display for Partial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let answered = self.answers.iter().filter(|a| a.is_some()).count();
        write!(
            f,
            "filter {:?}: {answered} of {} items answered",
            self.name,
            self.answers.len()
        )?;
        for s in &self.failures {
            let fate = match s.fate {
                Fate::Refused => "refused (not written)",
                Fate::Unknown => "unknown (written or not: the reply was lost)",
            };
            write!(f, "; shard {}: {} items {fate}: ", s.shard, s.items.len())?;
            match &s.error {
                // Its own figures only: the prefix it names is of the
                // shard's part, not of this batch.
                Error::Full {
                    name,
                    capacity,
                    count,
                    ..
                } => write!(
                    f,
                    "filter {name:?} is full: its generation holds {count} items of the {capacity} it was made for"
                )?,
                e => write!(f, "{e}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::{ErrorKind, ServerErrorKind};

    #[test]
    fn a_redirection_was_not_run_and_a_lost_reply_may_have_been() {
        let moved = |kind| {
            Error::from(redis::RedisError::from((
                ErrorKind::Server(kind),
                "redirected",
                "3999 127.0.0.1:6381".to_string(),
            )))
        };
        assert_eq!(Fate::of(&moved(ServerErrorKind::Moved)), Fate::Refused);
        assert_eq!(Fate::of(&moved(ServerErrorKind::Ask)), Fate::Refused);
        let reset = Error::from(redis::RedisError::from(std::io::Error::from(
            std::io::ErrorKind::ConnectionReset,
        )));
        assert_eq!(Fate::of(&reset), Fate::Unknown);
        let recreated = Error::Recreated { name: "f".into() };
        assert_eq!(Fate::of(&recreated), Fate::Refused);
    }
}
