//! The choice of how a batch's answers survive a lost reply, as a value
//! callers name, print and parse (a command-line flag, a Python argument):
//! apart from the batch that acts on it.

use crate::error::{Error, Result};

/// How a batch's answers survive a lost reply.
///
/// ```
/// use rotabloom::Delivery;
/// assert_eq!(Delivery::default(), Delivery::ExactlyOnce);
/// assert_eq!("at-least-once".parse::<Delivery>().unwrap(), Delivery::AtLeastOnce);
/// assert_eq!(Delivery::AtLeastOnce.as_str(), "at-least-once");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Delivery {
    /// The server keeps each answer with the bits, in the same atomic
    /// step, for the retry window: a run again after a lost reply answers
    /// exactly as the lost one did. Costs the atomic script per call.
    #[default]
    ExactlyOnce,
    /// Nothing is kept: pipelined guarded transactions. After a lost reply
    /// the items are written again and, for a check-and-insert, answered
    /// new; [`IdempotentBatch::unknown`](crate::IdempotentBatch::unknown)
    /// counts them.
    AtLeastOnce,
}

impl Delivery {
    /// `exactly-once` or `at-least-once`.
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::ExactlyOnce => "exactly-once",
            Delivery::AtLeastOnce => "at-least-once",
        }
    }
}

impl std::fmt::Display for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Delivery {
    type Err = Error;
    fn from_str(s: &str) -> Result<Delivery> {
        match s {
            "exactly-once" => Ok(Delivery::ExactlyOnce),
            "at-least-once" => Ok(Delivery::AtLeastOnce),
            other => Err(Error::InvalidParameter {
                name: "delivery",
                reason: format!("{other:?} is not exactly-once or at-least-once"),
            }),
        }
    }
}
