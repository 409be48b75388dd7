//! The commands, one module each, `main` handing each its parsed flags;
//! those that share their code share a module: `drop` and `clear`, `dump`
//! and `restore`, `completions` and `man` (`generate`). `expanding` holds
//! `expand`, `convert` and `adopt`, one module each.

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
