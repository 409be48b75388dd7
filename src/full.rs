//! What a write does once the generation it fills holds its capacity, for
//! the kinds whose generations are not capped (a base filter; each
//! generation of a circular filter). An expanding filter grows instead, and
//! a base filter may become one.

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// The choice, per handle (builder method, configuration `when_full`,
/// command line `--when-full`).
///
/// The default is [`WhenFull::Error`]: past its capacity a filter keeps
/// answering, but its false-positive rate climbs far above what it was made
/// for (a base filter at 379% of its capacity wrongly calls 73% of new URLs
/// "seen", and the crawler never fetches them). Refusing the write is loud
/// and drops nothing, as RedisBloom's `NONSCALING` filters do; `Warn`
/// keeps a crawl going when the operator prefers that, and says so once;
/// `Expand` keeps it going at the promised error rate, at the cost of
/// memory, as a scaling RedisBloom filter does.
///
/// ```
/// use rotabloom::WhenFull;
/// assert_eq!("warn".parse::<WhenFull>().unwrap(), WhenFull::Warn);
/// assert_eq!("expand".parse::<WhenFull>().unwrap(), WhenFull::Expand);
/// assert_eq!(WhenFull::default(), WhenFull::Error);
/// assert!("grow".parse::<WhenFull>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WhenFull {
    /// Refuse writes with [`Error::Full`] from the first write after the
    /// generation's count reached its capacity. The batch that reaches it
    /// is applied whole, so a generation may end up to one batch per
    /// concurrent writer beyond its capacity.
    #[default]
    Error,
    /// Write on, and warn once per generation (the `log` crate, level
    /// warn; the command line prints it on standard error).
    Warn,
    /// A full base filter becomes an expanding filter in place, as
    /// [`ExpandingBuilder::convert_bloom`](crate::ExpandingBuilder::convert_bloom)
    /// does with its defaults (growth 2, tightening 0.5: the whole filter
    /// stays within twice the base filter's error rate), warns once, and the
    /// write goes on into a new, bigger generation. Exactly one of any
    /// number of concurrent writers converts; the others find it converted.
    ///
    /// It needs a handle that follows a change of kind: an
    /// [`AnyFilter`](crate::AnyFilter) (as the command line uses). A typed
    /// [`BloomFilter`](crate::BloomFilter) handle, or a circular filter's
    /// generation (which cannot grow: its size is its period's), refuses the
    /// write as with `Error`.
    Expand,
}

impl WhenFull {
    /// The spelling in configuration files and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            WhenFull::Error => "error",
            WhenFull::Warn => "warn",
            WhenFull::Expand => "expand",
        }
    }
}

impl fmt::Display for WhenFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WhenFull {
    type Err = Error;
    fn from_str(s: &str) -> Result<WhenFull> {
        match s {
            "error" => Ok(WhenFull::Error),
            "warn" => Ok(WhenFull::Warn),
            "expand" => Ok(WhenFull::Expand),
            other => Err(Error::InvalidParameter {
                name: "when_full",
                reason: format!("{other:?} is not one of error, warn, expand"),
            }),
        }
    }
}
