//! The commands, one module each (the commands of expanding filters
//! together, `completions` and `man` together); `main` hands each its
//! parsed flags.

pub mod add;
pub mod check;
pub mod create;
pub mod drop;
pub mod dump;
pub mod expanding;
pub mod filter;
pub mod generate;
pub mod list;
pub mod load;
pub mod metrics;
pub mod rotate;
pub mod status;
