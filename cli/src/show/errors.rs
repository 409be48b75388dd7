//! How errors end the program: the one line each prints on standard
//! error, clap's own errors and help, and panics, without credentials.

use super::term::error_line;
use crate::shared::fail::{describe, exit_code};
use rotabloom::config::Secrets;
use std::io::{self, Write};
use std::process::ExitCode;

/// Prints `e` as the one error line; returns its text and exit code, for
/// commands that go on with other filters.
pub fn report(e: &anyhow::Error, secrets: &Secrets) -> (String, u8) {
    let text = describe(e, secrets);
    error_line(&text);
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
            error_line(one_line(&secrets.redact(&e.render().to_string())));
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
        error_line(format!("internal error: {}", secrets.redact(&msg)));
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
