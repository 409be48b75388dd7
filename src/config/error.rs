//! What is wrong with a configuration, and where in its file.

use std::fmt;

/// A position in a configuration file, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    /// Line, from 1.
    pub line: usize,
    /// Column in characters, from 1.
    pub column: usize,
}

impl Location {
    /// The location of byte `offset` of `text`.
    pub fn of_offset(text: &str, offset: usize) -> Location {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Location {
            line,
            column: text[line_start..offset].chars().count() + 1,
        }
    }
}

/// What is wrong with a configuration: one line, naming the file, the
/// position and the key when they are known.
///
/// `Display` gives `FILE:LINE:COLUMN: KEY: MESSAGE` (or the parts that are
/// known). It never contains a password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file, as given to [`Config::load`](super::Config::load) or
    /// [`Config::parse`](super::Config::parse).
    pub file: String,
    /// Where in the file, when known.
    pub location: Option<Location>,
    /// The dotted key (`filter.recrawl.generations`), when known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    /// The message is scrubbed here, once, because it may quote the file
    /// (a TOML parser error shows the offending value, possibly a URL).
    pub(super) fn new(
        file: &str,
        location: Option<Location>,
        key: Option<String>,
        message: String,
    ) -> Self {
        ConfigError {
            file: file.to_string(),
            location,
            key,
            message: crate::redact::redact_urls(&message),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(l) = self.location {
            write!(f, ":{}:{}", l.line, l.column)?;
        }
        if let Some(k) = &self.key {
            write!(f, ": {k}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// A bad filter setting, before it is tied to a file: the setting's key
/// (`None` for the filter as a whole, e.g. its name) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// The setting, as spelled in a configuration file (`error_rate`).
    pub key: Option<&'static str>,
    /// What is wrong.
    pub message: String,
}

impl ParamError {
    pub(super) fn at(key: &'static str, message: impl Into<String>) -> ParamError {
        ParamError {
            key: Some(key),
            message: message.into(),
        }
    }

    pub(super) fn whole(message: impl Into<String>) -> ParamError {
        ParamError {
            key: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.key {
            Some(k) => write!(f, "{k}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ParamError {}

#[cfg(test)]
mod tests {
    use super::Location;

    #[test]
    fn locations() {
        let t = "ab\ncdé\nf";
        assert_eq!(Location::of_offset(t, 0), Location { line: 1, column: 1 });
        assert_eq!(Location::of_offset(t, 3), Location { line: 2, column: 1 });
        assert_eq!(Location::of_offset(t, 7), Location { line: 2, column: 4 });
        assert_eq!(Location::of_offset(t, 9), Location { line: 3, column: 2 });
    }
}
