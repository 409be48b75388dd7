//! The lines a batch left unanswered when the library said which it
//! answered (a full filter's prefix, a sharded filter's shard that
//! failed): gathered over the run by shard and cause, with their line
//! numbers, for the one error line the run ends with.

use crate::show::values::ranges;
use rotabloom::{Error, Fate};

/// Lines one shard left for one cause, over the run.
struct Group {
    /// The shard (None: the filter is not sharded, or the whole batch).
    shard: Option<u32>,
    fate: Fate,
    /// The cause, in the library's words.
    why: String,
    /// The cause is a full generation.
    full: bool,
    /// The lines, 0-based.
    lines: Vec<u64>,
}

/// The lines left unanswered so far.
#[derive(Default)]
pub struct Unanswered {
    groups: Vec<Group>,
    /// Only a full filter, not sharded, refused: its figures (the message
    /// says them as it always did).
    full: Option<(String, u64, u64)>,
    sharded: bool,
}

/// A failed batch's answers, when the library gave some: each line's
/// answer (None: left), and the left lines (indices) with whether they
/// may have been written.
pub struct Split {
    pub answers: Vec<Option<bool>>,
    pub left: Vec<(usize, bool)>,
}

fn the_lib(e: &anyhow::Error) -> Option<&Error> {
    e.chain().find_map(|c| c.downcast_ref::<Error>())
}

impl Unanswered {
    /// Whether any line was left.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Takes a failed batch of `len` lines after `first`: its answers and
    /// left lines when the library said which it answered, else None.
    pub fn take(&mut self, first: u64, len: usize, e: &anyhow::Error) -> Option<Split> {
        match the_lib(e)? {
            Error::Full {
                name,
                capacity,
                count,
                answered,
            } => {
                let n = answered.len().min(len);
                let mut answers: Vec<Option<bool>> = answered.iter().map(|&a| Some(a)).collect();
                answers.resize(len, None);
                if self.full.is_none() {
                    self.full = Some((name.clone(), *capacity, *count));
                }
                let why = format!("filter {name:?} is full: its generation holds {count} items of the {capacity} it was made for");
                let lines = (n..len).map(|i| first + i as u64).collect();
                self.add(None, Fate::Refused, (why, true), lines);
                let left = (n..len).map(|i| (i, false)).collect();
                Some(Split { answers, left })
            }
            Error::Partial(p) if p.answers.len() == len => {
                self.sharded |= p.failures.iter().any(|f| f.shard > 0);
                let mut left = Vec::new();
                for f in &p.failures {
                    let why = match &f.error {
                        Error::Full { name, capacity, count, .. } => (format!("filter {name:?} is full: its generation holds {count} items of the {capacity} it was made for"), true),
                        e => (e.to_string(), false),
                    };
                    let lines = f.items.iter().map(|&i| first + i as u64).collect();
                    self.add(Some(f.shard), f.fate, why, lines);
                    left.extend(f.items.iter().map(|&i| (i, f.fate != Fate::Refused)));
                }
                left.sort_unstable();
                Some(Split {
                    answers: p.answers.clone(),
                    left,
                })
            }
            _ => None,
        }
    }

    fn add(
        &mut self,
        shard: Option<u32>,
        fate: Fate,
        (why, full): (String, bool),
        lines: Vec<u64>,
    ) {
        if lines.is_empty() {
            return;
        }
        match self
            .groups
            .iter_mut()
            .find(|g| g.shard == shard && g.fate == fate && g.why == why)
        {
            Some(g) => g.lines.extend(lines),
            None => self.groups.push(Group {
                shard,
                fate,
                why,
                full,
                lines,
            }),
        }
    }

    /// The first line left (0-based) and how many were.
    fn span(&self) -> (u64, u64) {
        let first = self
            .groups
            .iter()
            .flat_map(|g| g.lines.iter().copied())
            .min();
        let n = self.groups.iter().map(|g| g.lines.len() as u64).sum();
        (first.unwrap_or(0), n)
    }

    /// The message: what was left, by whom and why, and what a rerun
    /// does. `unit` is "lines" or "items"; `resume` the command that
    /// resumes the run, if a state file lists what is left; `unread_after`
    /// the lines read, when the input did not end.
    pub fn message(&self, unit: &str, resume: Option<&str>, unread_after: Option<u64>) -> String {
        let one = unit.trim_end_matches('s');
        let (first, n) = self.span();
        let when = match self.groups.iter().all(|g| g.full) {
            true => "once it has room",
            false => "once the cause is gone",
        };
        let again = match resume {
            Some(cmd) => format!("resume with `{cmd}`, fed the same input, {when}"),
            None => format!("run again from {one} {} {when}", first + 1),
        };
        // The reader stops at the refusal: a stream may never end.
        let unread = match unread_after {
            Some(n) => format!(", and the input after {one} {n} was not read"),
            None => String::new(),
        };
        let advice = "or rotate it, convert it to an expanding filter, make a bigger one, or set when_full = warn";
        let only_full = self.groups.iter().all(|g| g.full && g.shard.is_none());
        if let (Some((name, capacity, count)), true) = (&self.full, only_full) {
            return format!(
                "filter {name:?} is full: its generation holds {count} items of the {capacity} it was made for, and more would raise its false-positive rate above its target; {n} {unit} refused, the first at {one} {}, none of them inserted{unread} ({again}; {advice})",
                first + 1,
            );
        }
        let mut parts = Vec::new();
        for g in &self.groups {
            let by = match g.shard {
                Some(s) if self.sharded => format!(" by shard {s}"),
                _ => String::new(),
            };
            let fate = match g.fate {
                Fate::Refused => "refused (not inserted)",
                _ => "unknown (inserted or not: the reply was lost; a rerun may answer them seen)",
            };
            let mut lines = g.lines.clone();
            lines.sort_unstable();
            let pairs: Vec<(u64, u64)> = lines.iter().map(|&l| (l, 1)).collect();
            parts.push(format!(
                "{} {unit} {fate}{by} ({}): {unit} {}",
                g.lines.len(),
                g.why,
                ranges(&pairs)
            ));
        }
        format!(
            "{n} {unit} were not answered, every other one was: {}{unread} ({again}: the {unit} answered since answer seen; {advice})",
            parts.join("; ")
        )
    }
}
