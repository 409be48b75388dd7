use super::*;

/// Where a circular filter writes and what it reads (seed 003's two modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Writes go to the newest generation; queries check all N. Cheap
    /// writes. Each generation holds one period of items at rate
    /// `1 - (1 - p)^(1/N)`, so a query over N of them has rate `p`.
    InsertNewestQueryAll,
    /// Writes go to all N generations; queries check only the oldest, which
    /// holds everything inserted since it was created. Cheap reads. Each
    /// generation holds N periods of items at rate `p`.
    InsertAllQueryOldest,
}

impl Mode {
    /// Both modes, the default first.
    pub const ALL: &'static [Mode] = &[Mode::InsertNewestQueryAll, Mode::InsertAllQueryOldest];

    /// The name stored in the metadata (`mode` field).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::InsertNewestQueryAll => "insert-newest-query-all",
            Mode::InsertAllQueryOldest => "insert-all-query-oldest",
        }
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
        crate::words::parse(s)
    }
}

impl crate::words::Choice for Mode {
    const SETTING: &'static str = "mode";
    const ALL: &'static [Mode] = Mode::ALL;
    fn name(self) -> &'static str {
        self.as_str()
    }
    fn aliases(self) -> &'static [&'static str] {
        match self {
            Mode::InsertNewestQueryAll => &["query-all"],
            Mode::InsertAllQueryOldest => &["query-oldest"],
        }
    }
}
