//! Colour where a person reads: errors and warnings on standard error,
//! help, and `status`, on a terminal. `--color auto|always|never` decides,
//! else `NO_COLOR` (off) and `CLICOLOR_FORCE` (on) as anstream reads them;
//! on auto, never into a pipe or a file. clap prints its help and errors
//! through the same switch.

use anstyle::{AnsiColor, Effects, Style};
use std::ffi::OsString;
use std::fmt::Display;

/// Headings of help, and the filter's name in `status`.
pub const HEADER: Style = AnsiColor::Green.on_default().effects(Effects::BOLD);
/// Comments in examples.
pub const COMMENT: Style = Style::new().effects(Effects::DIMMED);
pub const ERROR: Style = AnsiColor::Red.on_default().effects(Effects::BOLD);
pub const WARNING: Style = AnsiColor::Yellow.on_default().effects(Effects::BOLD);
pub const NOTE: Style = AnsiColor::Cyan.on_default().effects(Effects::BOLD);
pub const BOLD: Style = Style::new().effects(Effects::BOLD);

/// clap's help and errors in the same colours.
pub fn styles() -> clap::builder::Styles {
    clap::builder::Styles::styled()
        .header(HEADER)
        .usage(HEADER)
        .literal(AnsiColor::Cyan.on_default().effects(Effects::BOLD))
        .placeholder(AnsiColor::Cyan.on_default())
        .error(ERROR)
        .valid(AnsiColor::Green.on_default())
        .invalid(WARNING)
}

/// What `--color` asks for among `args`, the last one winning (as clap
/// reads a flag given twice); `None` when it is not given, or not before
/// a `--`. Read before clap parses, since clap prints its own help and
/// errors in colour or not.
pub fn asked(args: impl IntoIterator<Item = OsString>) -> Option<anstream::ColorChoice> {
    let mut choice = None;
    let mut args = args.into_iter().skip(1);
    while let Some(arg) = args.next() {
        let value = match arg.to_str() {
            Some("--") => break,
            Some("--color") => args.next(),
            Some(a) => match a.strip_prefix("--color=") {
                Some(v) => Some(OsString::from(v)),
                None => continue,
            },
            None => continue,
        };
        choice = match value.as_ref().and_then(|v| v.to_str()) {
            Some("always") => Some(anstream::ColorChoice::Always),
            Some("never") => Some(anstream::ColorChoice::Never),
            Some("auto") => Some(anstream::ColorChoice::Auto),
            // clap refuses it, in its own words.
            _ => choice,
        };
    }
    choice
}

/// Applies `--color` from the command line to everything printed after.
pub fn init(args: impl IntoIterator<Item = OsString>) {
    if let Some(choice) = asked(args) {
        choice.write_global();
    }
}

/// Prints the one line of an error: `rotabloom: MESSAGE`.
pub fn error_line(message: impl Display) {
    anstream::eprintln!("{ERROR}rotabloom:{ERROR:#} {message}");
}

/// Prints a warning: `rotabloom: warning: MESSAGE`.
pub fn warning_line(message: impl Display) {
    anstream::eprintln!("rotabloom: {WARNING}warning:{WARNING:#} {message}");
}

/// `word` in `style`, for text printed through anstream (which strips it
/// where colour is off).
pub fn paint(style: Style, word: impl Display) -> String {
    format!("{style}{word}{style:#}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use anstream::ColorChoice::{Always, Auto, Never};

    fn args(words: &[&str]) -> Vec<OsString> {
        std::iter::once("rotabloom")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn color_flag_is_read_before_clap() {
        assert_eq!(asked(args(&["status"])), None);
        assert_eq!(asked(args(&["--color", "never", "status"])), Some(Never));
        assert_eq!(asked(args(&["status", "--color=always"])), Some(Always));
        assert_eq!(
            asked(args(&["--color", "never", "status", "--color", "auto"])),
            Some(Auto)
        );
        // An item after `--` is an item, and a bad value is clap's to refuse.
        assert_eq!(asked(args(&["add", "f", "--", "--color=always"])), None);
        assert_eq!(asked(args(&["--color", "pink", "status"])), None);
    }
}
