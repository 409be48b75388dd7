//! The commands of expanding filters: `expand`, `convert` (a bloom filter
//! into an expanding one) and `adopt` (a legacy crawler's bitmap as the
//! frozen first generation of a new expanding filter); here, what they
//! share: how a filter grows, and the line said of each shard.

pub mod adopt;
pub mod convert;
pub mod expand;
mod slot;

use crate::shared::output::Output;
use crate::show::values::count;
use clap::Args;
use rotabloom::config::{parse_bytes, parse_number};
use rotabloom::{ExpandingBuilder, ExpandingFilter, ShardedFilter};
use serde_json::json;
use std::io;

/// How an expanding filter grows: the flags of `convert` and `adopt`,
/// with the library's defaults.
#[derive(Args, Debug, Clone)]
pub struct GrowthFlags {
    /// Capacity factor from one generation to the next (1 to 16).
    #[arg(long, default_value = "2", value_parser = parse_number)]
    growth: f64,
    /// Error-rate factor from one generation to the next (0 < r < 1).
    #[arg(long, default_value = "0.5", value_parser = parse_number)]
    tightening: f64,
    /// Most generations (1 to 1024).
    #[arg(long, default_value = "32", value_parser = clap::value_parser!(u32).range(1..=1024))]
    max_generations: u32,
    /// Most bytes of all generations together, e.g. 4GiB (0: no limit).
    #[arg(long, default_value = "0", value_parser = parse_bytes)]
    max_bytes: u64,
}

impl GrowthFlags {
    pub fn builder(&self, name: &str) -> ExpandingBuilder {
        ExpandingFilter::builder(name)
            .growth(self.growth)
            .tightening(self.tightening)
            .max_generations(self.max_generations)
            .max_bytes(self.max_bytes)
    }
}

/// `3 generations`.
pub fn shape(f: &ExpandingFilter) -> String {
    count(f.generations().len() as u64, "generation")
}

/// How `name`'s shard `j` is called in what is printed.
pub fn label(f: &ShardedFilter<impl rotabloom::FilterKind>, name: &str, j: u32) -> String {
    match f.is_sharded() {
        true => format!("{name} shard {j}"),
        false => name.to_string(),
    }
}

/// What `expand` or `convert` says of one shard (or of the filter).
pub struct Shown<'a> {
    name: &'a str,
    text: String,
    result: &'static str,
}

impl<'a> Shown<'a> {
    /// `LABEL: WHAT (N generations)`, and `result` in JSON.
    pub fn new(
        name: &'a str,
        label: &str,
        shard: &ExpandingFilter,
        (what, result): (&str, &'static str),
    ) -> Shown<'a> {
        let text = format!("{label}: {what} ({})", shape(shard));
        Shown { name, text, result }
    }

    /// Prints the line, and its JSON with `shard` for a sharded filter.
    pub fn print<K: rotabloom::FilterKind>(
        self,
        output: Output,
        out: &mut impl io::Write,
        f: &ShardedFilter<K>,
        j: u32,
        shard: &ExpandingFilter,
        changed: bool,
    ) -> anyhow::Result<()> {
        let gens = shard.generations().len();
        let mut doc = json!({ "name": self.name, "result": self.result, "generations": gens });
        if f.is_sharded() {
            doc["shard"] = j.into();
        }
        output.print(out, &self.text, &doc, changed)?;
        Ok(())
    }
}
