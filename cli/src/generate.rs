//! `rotabloom completions SHELL` and `rotabloom man`: the command line
//! described for shells and `man`, from the same definition clap parses.

use clap::CommandFactory;
use clap_complete::Shell;
use std::io::{self, Write};

/// Writes the completion script for `shell` to standard output.
pub fn completions(shell: Shell) -> anyhow::Result<u8> {
    let mut cmd = crate::Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "rotabloom", &mut buf);
    write_out(&buf)
}

/// Writes the manual page (roff) to standard output.
pub fn man() -> anyhow::Result<u8> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(crate::Cli::command()).render(&mut buf)?;
    write_out(&buf)
}

fn write_out(buf: &[u8]) -> anyhow::Result<u8> {
    let mut out = io::stdout().lock();
    out.write_all(buf)?;
    out.flush()?;
    Ok(0)
}
