//! The machinery of a run over items (`filter`, `check`, `add`, `load`):
//! the reader of lines, the batches in flight and their tally, what each
//! run does to a batch and where its answers go, the state file a run
//! resumes from, the writers that survive a lost connection, interrupts
//! and stops; and finding the filters a command works on.

pub mod alloc;
pub mod insert;
pub mod interrupt;
pub mod lines;
pub mod open;
pub mod outfile;
pub mod pipeline;
pub mod print;
pub mod resilient;
pub mod resume;
pub mod statefile;
pub mod stop;
pub mod tally;
pub mod tasks;
pub mod unanswered;
pub mod writer;
