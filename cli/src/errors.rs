//! Errors: their exit codes and the one line each prints, without
//! credentials.

use rotabloom::config::{ConfigError, Secrets};
use rotabloom::Error;
use std::io::{self, Write};
use std::process::ExitCode;

/// An error with its exit code decided where it happened.
#[derive(Clone, Debug)]
pub struct Fail {
    pub code: u8,
    pub message: String,
}

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Fail {}

/// A usage error (exit code 2).
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Fail {
        code: 2,
        message: message.into(),
    })
}

/// The exit code of a local file that cannot be read.
pub const EXIT_FILE: u8 = 5;

/// A local file (or standard input) that cannot be read: not a Redis
/// error (exit code 5).
pub fn file_error(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Fail {
        code: EXIT_FILE,
        message: message.into(),
    })
}

/// The exit code of a library error: 2 for what the user asked (bad
/// parameters, names, a missing, existing or different filter, one dropped
/// and created again under a run, a legacy
/// bitmap that does not fit the parameters given for it), 5 for a local
/// dump file, 3 for Redis and the data in it.
fn lib_code(e: &Error) -> u8 {
    match e {
        Error::InvalidParameter { .. }
        | Error::TooLarge { .. }
        | Error::InvalidName { .. }
        | Error::NotFound { .. }
        | Error::Recreated { .. }
        | Error::ParameterMismatch { .. }
        | Error::KindMismatch { .. }
        | Error::AlreadyExists { .. }
        | Error::NotAdoptable { .. } => 2,
        Error::Io { .. } | Error::BadDump { .. } => EXIT_FILE,
        _ => 3,
    }
}

pub fn exit_code(e: &anyhow::Error) -> u8 {
    for cause in e.chain() {
        if let Some(f) = cause.downcast_ref::<Fail>() {
            return f.code;
        }
        if cause.downcast_ref::<ConfigError>().is_some() {
            return 2;
        }
        if let Some(e) = cause.downcast_ref::<Error>() {
            return lib_code(e);
        }
    }
    3
}

/// Whether the connection to Redis itself failed, which ends a command
/// over several filters rather than skipping one.
pub fn is_redis(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| matches!(c.downcast_ref::<Error>(), Some(Error::Redis(_))))
}

/// The error and its causes, each said once (a cause whose text its
/// parent already includes is left out), on one line. The chain ends at
/// the library's error: its message says all its sources would (in words
/// where the `redis` crate's text would not, e.g. a read-only replica).
pub fn describe(e: &anyhow::Error, secrets: &Secrets) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        if cause.downcast_ref::<Error>().is_some() {
            break;
        }
    }
    secrets.redact(&parts.join(": ").replace('\n', " "))
}

/// Prints `e` as the one error line; returns its text and exit code, for
/// commands that go on with other filters.
pub fn report(e: &anyhow::Error, secrets: &Secrets) -> (String, u8) {
    let text = describe(e, secrets);
    crate::term::error_line(&text);
    (text, exit_code(e))
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// How the program ends after `e`. A reader that went away (`| head`) is
/// not an error.
pub fn exit(e: &anyhow::Error, secrets: &Secrets) -> ExitCode {
    if is_broken_pipe(e) {
        return ExitCode::SUCCESS;
    }
    ExitCode::from(report(e, secrets).1)
}

/// How the program ends when its arguments do not parse: help and version
/// go to standard output as clap writes them (in colour on a terminal);
/// no arguments at all print the help on standard error (exit code 2: it
/// was not asked for); an error is one line, like every other, with exit
/// code 2.
pub fn exit_clap(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let secrets = Secrets::default();
    let styled = || secrets.redact(&e.render().ansi().to_string());
    let written = match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let mut out = anstream::stdout().lock();
            out.write_all(styled().as_bytes())
                .and_then(|()| out.flush())
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let mut err = anstream::stderr().lock();
            let _ = err.write_all(styled().as_bytes());
            return ExitCode::from(2);
        }
        _ => {
            crate::term::error_line(one_line(&secrets.redact(&e.render().to_string())));
            return ExitCode::from(2);
        }
    };
    // A reader gone (`rotabloom --help | head`) is no error.
    let _ = written;
    ExitCode::SUCCESS
}

/// clap's message without its usage section, paragraphs joined with `; `.
fn one_line(text: &str) -> String {
    let paragraphs: Vec<String> = text
        .split("\n\n")
        .filter(|p| !p.trim_start().starts_with("Usage:"))
        .map(|p| {
            let words: Vec<&str> = p.split_whitespace().collect();
            words.join(" ")
        })
        .filter(|p| !p.is_empty())
        .map(|p| match p.strip_prefix("For more information, ") {
            Some(hint) => hint.to_string(),
            None => p,
        })
        .collect();
    let joined = paragraphs.join("; ");
    joined
        .strip_prefix("error: ")
        .unwrap_or(&joined)
        .to_string()
}

/// Panics print one scrubbed line too. Installed again once the secrets
/// in use are known.
pub fn install_panic_hook(secrets: Secrets) {
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        crate::term::error_line(format!("internal error: {}", secrets.redact(&msg)));
    }));
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn clap_errors_fit_one_line() {
        let text = "error: the following required arguments were not provided:\n  <NAME>\n\n\
                    Usage: rotabloom add <NAME> [ITEMS]...\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(text),
            "the following required arguments were not provided: <NAME>; try '--help'."
        );
        let text = "error: unrecognized subcommand 'filer'\n\n  tip: a similar subcommand exists: 'filter'\n\n\
                    Usage: rotabloom [OPTIONS] <COMMAND>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(text),
            "unrecognized subcommand 'filer'; tip: a similar subcommand exists: 'filter'; try '--help'."
        );
    }
}
