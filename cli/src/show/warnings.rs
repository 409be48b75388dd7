//! The library's warnings (the `log` crate) on standard error, in the
//! command line's one-line form. Hand-written: a logger that prints one
//! prefixed line per warning is a dozen lines, and env_logger's format and
//! filters are not what a command line's users expect on stderr.

use log::{Level, LevelFilter, Log, Metadata, Record};

struct Stderr;

impl Log for Stderr {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= Level::Warn && m.target().starts_with("rotabloom")
    }

    fn log(&self, r: &Record<'_>) {
        if self.enabled(r.metadata()) {
            match r.level() {
                Level::Error => crate::show::term::error_line(format!(
                    "{}: {}",
                    crate::show::term::paint(crate::show::term::ERROR, "error"),
                    r.args()
                )),
                _ => crate::show::term::warning_line(r.args()),
            }
        }
    }

    fn flush(&self) {}
}

/// Sends the library's warnings to standard error.
pub fn install() {
    static LOGGER: Stderr = Stderr;
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(LevelFilter::Warn);
    }
}
