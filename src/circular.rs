//! The circular filter: N generations rotated on a schedule.

use crate::error::{Error, Result};
use crate::metadata::Meta;
use std::fmt;
use std::str::FromStr;

/// Where a circular filter writes and what it reads (seed 003's two modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Writes go to the newest generation; queries check all N. Cheap writes.
    InsertNewestQueryAll,
    /// Writes go to all N generations; queries check only the oldest, which
    /// holds everything inserted since it was created. Cheap reads.
    InsertAllQueryOldest,
}

impl Mode {
    /// The name stored in the metadata (`mode` field).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::InsertNewestQueryAll => "insert-newest-query-all",
            Mode::InsertAllQueryOldest => "insert-all-query-oldest",
        }
    }

    pub(crate) fn from_meta(meta: &Meta) -> Result<Mode> {
        meta.param::<Mode>("mode")
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Mode> {
        match s {
            "insert-newest-query-all" | "query-all" => Ok(Mode::InsertNewestQueryAll),
            "insert-all-query-oldest" | "query-oldest" => Ok(Mode::InsertAllQueryOldest),
            _ => Err(Error::InvalidParameter {
                name: "mode",
                reason: format!("{s:?} is not insert-newest-query-all or insert-all-query-oldest"),
            }),
        }
    }
}
