//! How a command that changes filters reports what it did: text or JSON,
//! and what `--quiet` leaves out.

use clap::Args;

/// How a command that changes filters reports what it did.
#[derive(Args, Debug, Clone, Copy)]
pub struct Output {
    /// Print one JSON object per line instead of text (fields: the CLI
    /// reference named in `rotabloom --help`).
    #[arg(long)]
    pub json: bool,
    /// Print only lines about a change (a filter created, rotated,
    /// cleared, converted...: nothing for add, load or "not due"), and no
    /// progress; errors are still printed.
    #[arg(long, short = 'q', conflicts_with = "json")]
    pub quiet: bool,
}

impl Output {
    /// Prints `text` or `json`, as asked; `changed` says whether `--quiet`
    /// still prints it.
    pub fn print(
        &self,
        out: &mut impl std::io::Write,
        text: &str,
        json: &serde_json::Value,
        changed: bool,
    ) -> std::io::Result<()> {
        if self.json {
            writeln!(out, "{json}")?;
        } else if !self.quiet || changed {
            writeln!(out, "{text}")?;
        }
        out.flush()
    }
}
