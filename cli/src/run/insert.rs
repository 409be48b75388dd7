//! What `add` and `load` do with the batches the pipeline reads: insert
//! them, in input order, and count what was new; and what an
//! at-least-once run says of the answers it lost.

use crate::run::lines::Items;
use crate::run::pipeline::{ordered, Run, Sink};
use crate::run::tasks::Insert;
use crate::show::progress::Progress;

/// What `add` and `load` inserted so far: items, and those new to the
/// filter; the others were present already (or false positives).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Inserted {
    pub items: u64,
    pub new: u64,
    /// At least once: items whose answers were lost with a reply (inserted
    /// again; counted in `new` or `present` by the second answer).
    pub unknown: u64,
    /// New and present say so of the current period only: a circular
    /// filter that writes its newest generation and queries all writes an
    /// item again that only older periods hold (so the window keeps it
    /// longer), and counts it new.
    pub per_period: bool,
}

impl Inserted {
    pub fn present(&self) -> u64 {
        self.items - self.new
    }

    /// `1 new, 2 already present` (`, 3 of them unknown: ...`).
    pub fn says(&self) -> String {
        let (new, present) = match self.per_period {
            true => ("new to the current period", "already in it"),
            false => ("new", "already present"),
        };
        let unknown = match self.unknown {
            0 => String::new(),
            n => format!(
                " ({} of them answered again after a lost reply: inserted, maybe counted new once too often)",
                crate::show::values::int(n)
            ),
        };
        format!(
            "{} {new}, {} {present}{unknown}",
            crate::show::values::int(self.new),
            crate::show::values::int(self.present())
        )
    }
}

/// The running [`Inserted`] total of `add` and `load`, as a pipeline
/// [`Sink`]: what `task` inserted so far, shown on `progress` (`load`)
/// batch by batch; a batch refused by a full filter counts the items it
/// took before it refused.
struct Totals<'a> {
    task: &'a Insert<'a>,
    progress: Option<&'a mut Progress>,
    total: Inserted,
}

impl Sink for Totals<'_> {
    fn take(&mut self, _: &[Vec<u8>], changed: Vec<bool>, read: u64) -> anyhow::Result<()> {
        let total = &mut self.total;
        total.items += changed.len() as u64;
        total.new += changed.iter().filter(|&&c| c).count() as u64;
        total.per_period = self.task.per_period();
        // A batch's count is in before its answers are handed on.
        total.unknown = self.task.unknown();
        if let Some(progress) = &mut self.progress {
            progress.update(total.items, read);
        }
        Ok(())
    }
}

/// Inserts every item of `items` into filter `name` (`add`, `load`), in
/// idempotent batches, with `progress` shown as it goes: what was
/// inserted (also when the run failed: the batches before), and how the
/// run ended. A batch sent again after a lost connection is answered as
/// it was the first time, so `new` counts each item once.
pub fn insert_all(
    ctx: &crate::shared::ctx::Ctx,
    name: &str,
    items: impl Items + Send + 'static,
    run: Run<'_>,
    progress: Option<&mut Progress>,
) -> (Inserted, anyhow::Result<()>) {
    let task = Insert::new(name, ctx.delivery);
    let mut totals = Totals {
        task: &task,
        progress,
        total: Inserted::default(),
    };
    let done = ordered(ctx, items, run, &task, &mut totals);
    // Said even when the run failed later: those items were inserted.
    said_unknown(task.unknown(), "items");
    (totals.total, done)
}

/// The exit code of a run whose batches all succeeded but `unknown` lines
/// had their answers lost with a reply (at least once; docs/CLI.md).
pub const EXIT_UNKNOWN: u8 = 6;

/// The warning of an at-least-once run that lost answers, if it did; the
/// exit code it ends with.
pub fn said_unknown(unknown: u64, unit: &str) -> u8 {
    if unknown == 0 {
        return 0;
    }
    crate::show::term::warning_line(format_args!(
        "the answers of {} {unit} were lost with a reply (--delivery at-least-once): they were inserted again and taken as new",
        crate::show::values::int(unknown)
    ));
    EXIT_UNKNOWN
}

#[cfg(test)]
mod inserted_tests {
    use super::Inserted;

    #[test]
    fn says_new_and_present() {
        let i = Inserted {
            items: 3,
            new: 0,
            per_period: false,
            unknown: 0,
        };
        assert_eq!(i.says(), "0 new, 3 already present");
        let i = Inserted {
            items: 1_234_567,
            new: 1_000_000,
            per_period: false,
            unknown: 0,
        };
        assert_eq!(i.says(), "1,000,000 new, 234,567 already present");
        let i = Inserted {
            items: 2,
            new: 1,
            per_period: true,
            unknown: 0,
        };
        assert_eq!(i.says(), "1 new to the current period, 1 already in it");
    }
}
