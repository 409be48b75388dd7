//! `rotabloom completions SHELL` and `rotabloom man`: the command line
//! described for shells and `man`, from the same definition clap parses.

use crate::shared::fail::{file_error, usage};
use clap_complete::env::{Bash, Elvish, EnvCompleter, Fish, Powershell, Zsh};
use clap_complete::Shell;
use std::io::{self, Write};
use std::path::Path;

/// Writes the completion script for `shell` to standard output: the one
/// `COMPLETE=SHELL rotabloom` prints, which calls rotabloom back to
/// complete, so that filter names can be asked of the server.
pub fn completions(shell: Shell) -> anyhow::Result<u8> {
    let completer: &dyn EnvCompleter = match shell {
        Shell::Bash => &Bash,
        Shell::Elvish => &Elvish,
        Shell::Fish => &Fish,
        Shell::PowerShell => &Powershell,
        Shell::Zsh => &Zsh,
        other => return Err(usage(format!("completions: no script for {other}"))),
    };
    // The script calls the program by the name it was run as, found on
    // $PATH, as `COMPLETE=... rotabloom` does.
    let mut buf = Vec::new();
    completer.write_registration("COMPLETE", "rotabloom", "rotabloom", "rotabloom", &mut buf)?;
    write_out(&buf)
}

/// Writes a manual page (roff) of `cmd`, the command line as documented,
/// to standard output: rotabloom's, or `command`'s; or with `dir`, every
/// page into it.
pub fn man(cmd: &clap::Command, command: Option<&str>, dir: Option<&Path>) -> anyhow::Result<u8> {
    if let Some(dir) = dir {
        let cannot =
            |e: io::Error| file_error(format!("man: cannot write into {}: {e}", dir.display()));
        for page in std::iter::once(cmd).chain(cmd.get_subcommands()) {
            page_of(page).generate_to(dir).map_err(cannot)?;
        }
        return Ok(0);
    }
    let page = match command {
        None => cmd,
        Some(name) => cmd.find_subcommand(name).ok_or_else(|| {
            let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
            usage(format!(
                "man: no command {name:?}{}; the commands are {}",
                crate::show::suggest::did_you_mean(name, names.iter().copied())
                    .map(|s| format!(" (did you mean {s:?}?)"))
                    .unwrap_or_default(),
                names.join(", ")
            ))
        })?,
    };
    let mut buf = Vec::new();
    page_of(page).render(&mut buf)?;
    write_out(&buf)
}

/// The page of `cmd` (rotabloom or one of its commands), its footer naming
/// the program and its version.
fn page_of(cmd: &clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd.clone()).source(format!("rotabloom {}", env!("CARGO_PKG_VERSION")))
}

fn write_out(buf: &[u8]) -> anyhow::Result<u8> {
    let mut out = io::stdout().lock();
    out.write_all(buf)?;
    out.flush()?;
    Ok(0)
}
