//! Where the answers of `filter` and `check` go: the lines they keep,
//! written to standard output in input order.

use crate::run::lines::write_kept;
use crate::run::pipeline::Sink;
use std::io::{self, BufWriter, StdoutLock};

/// A [`Sink`] that prints the lines answered `true` (or, flipped, those
/// answered `false`) and counts them.
pub struct Print {
    out: BufWriter<StdoutLock<'static>>,
    /// Prints the lines answered `false` instead (`check --absent`).
    flip: bool,
    /// Lines printed so far.
    pub printed: usize,
}

impl Print {
    pub fn stdout(flip: bool) -> Print {
        Print {
            out: BufWriter::with_capacity(1 << 16, io::stdout().lock()),
            flip,
            printed: 0,
        }
    }
}

impl Sink for Print {
    fn take(&mut self, lines: &[Vec<u8>], answers: Vec<bool>, _read: u64) -> anyhow::Result<()> {
        let keep = answers.into_iter().map(|a| a != self.flip);
        self.printed += write_kept(&mut self.out, lines, keep)?;
        Ok(())
    }
}
