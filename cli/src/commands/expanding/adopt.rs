//! `rotabloom adopt NAME`: a legacy crawler's bitmap as the frozen first
//! generation of a new expanding filter.

use super::slot::{into_slot, unlink};
use super::{shape, GrowthFlags};
use crate::run::lines::{Batches, Items};
use crate::shared::ctx::Ctx;
use crate::shared::fail::{file_error, usage};
use crate::shared::output::Output;
use crate::show::values::{count, int};
use clap::Args;
use rotabloom::config::{parse_count, parse_number};
use rotabloom::{AnyFilter, Legacy};
use serde_json::json;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The bitmap `adopt` takes over, as the legacy Python code wrote it.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct LegacySource {
    /// The key of a `scrapy-redis-bloomfilter` bitmap, e.g.
    /// myspider:bloomfilter.
    #[arg(long, value_name = "KEY")]
    scrapy_redis_bloomfilter: Option<String>,
    /// The key prefix of the bitmaps of the 2016 blog code (MD5 and
    /// SimpleHash; `bloomfilter` in the post): keys PREFIX0, PREFIX1, ...
    #[arg(long, value_name = "PREFIX")]
    seed000: Option<String>,
}

/// `rotabloom adopt`'s arguments.
#[derive(Args, Debug, Clone)]
pub struct AdoptArgs {
    /// The new expanding filter.
    name: String,
    #[command(flatten)]
    source: LegacySource,
    /// scrapy-redis-bloomfilter's BLOOMFILTER_BIT: the bitmap has 2^BIT
    /// bits.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(3..=32))]
    bit: u32,
    /// scrapy-redis-bloomfilter's BLOOMFILTER_HASH_NUMBER.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=64))]
    hash_number: u32,
    /// The 2016 blog code's blockNum: how many keys of 2^31 bits.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    block_num: u32,
    /// A file of items known to be in the legacy bitmap, one per line
    /// (request fingerprints for scrapy-redis-bloomfilter; `-`: standard
    /// input): each must be found with the given parameters before
    /// anything moves.
    #[arg(long, value_name = "FILE")]
    verify: Option<PathBuf>,
    /// Items of the first new generation (10M, 1e6 and 1_000_000 work).
    #[arg(long, value_parser = parse_count)]
    capacity: u64,
    /// Bound on the false-positive rate of the new generations (0.001 or
    /// 0.1%).
    #[arg(long, default_value = "0.01", value_parser = parse_number)]
    error_rate: f64,
    #[command(flatten)]
    growth: GrowthFlags,
    #[command(flatten)]
    output: Output,
}

/// `rotabloom adopt NAME --scrapy-redis-bloomfilter KEY | --seed000 PREFIX`.
pub fn run(ctx: &Ctx, a: &AdoptArgs) -> anyhow::Result<u8> {
    let legacy = match (&a.source.scrapy_redis_bloomfilter, &a.source.seed000) {
        (Some(key), _) => Legacy::ScrapyRedisBloomfilter {
            key: key.clone(),
            bit: a.bit,
            hashes: a.hash_number,
        },
        (None, Some(prefix)) => Legacy::Seed000 {
            prefix: prefix.clone(),
            blocks: a.block_num,
        },
        (None, None) => {
            return Err(usage(
                "adopt: give --scrapy-redis-bloomfilter KEY or --seed000 PREFIX",
            ))
        }
    };
    let known = match &a.verify {
        Some(file) => Some(known_items(file)?),
        None => None,
    };
    let mut conn = ctx.connect()?;
    if rotabloom::ShardedFilter::<rotabloom::kinds::Any>::has_root(&mut conn, &a.name)? {
        // The legacy bits sit where the legacy hashes put them; a sharded
        // filter finds each item in the shard its digest picks.
        return Err(usage(format!(
            "{}: is a sharded filter; a legacy bitmap cannot be adopted into one (its bits \
             cannot be re-routed to the shards item by item): adopt it under a new name, \
             unsharded",
            a.name
        )));
    }
    // Adopting again opens the filter: say so rather than "adopted".
    let existed = AnyFilter::open(&mut conn, &a.name).is_ok();
    let (legacy, copies) = into_slot(&mut conn, &a.name, legacy, !existed)?;
    let checked = known.as_ref().map_or(0, Vec::len);
    let adoption = match known {
        Some(items) => legacy.verify(items),
        None => legacy.into(),
    };
    let adopted = a
        .growth
        .builder(&a.name)
        .capacity(a.capacity)
        .error_rate(a.error_rate)
        .adopt_legacy(&mut conn, adoption);
    let f = match adopted {
        Ok(f) => f,
        Err(e) => {
            unlink(&mut conn, &copies);
            return Err(e.into());
        }
    };
    let gens = f.generations();
    let estimate = gens.first().map_or(0, |g| g.capacity);
    let found = match checked {
        0 => String::new(),
        n => format!(", all {} known items found", int(n as u64)),
    };
    let (text, result) = if existed {
        (
            format!(
                "{}: exists, same parameters (expanding, {}{found})",
                a.name,
                shape(&f)
            ),
            "exists",
        )
    } else {
        (
            format!(
                "{}: adopted (expanding, {}; the legacy bitmap holds about {}{found}){}",
                a.name,
                shape(&f),
                count(estimate, "item"),
                if copies.is_empty() {
                    ""
                } else {
                    "; copied from another cluster slot, the legacy keys are left as they were"
                }
            ),
            "adopted",
        )
    };
    let doc = json!({
        "name": a.name,
        "result": result,
        "generations": gens.len(),
        "legacy_items_estimate": estimate,
        "verified": checked,
        "copied": !copies.is_empty(),
    });
    a.output.print(&mut io::stdout(), &text, &doc, !existed)?;
    Ok(0)
}

/// The items of `--verify FILE`, one per line (`-`: standard input);
/// empty lines are left out, as the legacy code never reports an empty
/// item present.
fn known_items(file: &Path) -> anyhow::Result<Vec<Vec<u8>>> {
    let cannot = |why: String| file_error(format!("cannot read {}: {why}", file.display()));
    let reader: Box<dyn Read> = if file.as_os_str() == "-" {
        Box::new(io::stdin())
    } else {
        if file.is_dir() {
            return Err(cannot("it is a directory".into()));
        }
        Box::new(std::fs::File::open(file).map_err(|e| {
            cannot(match e.kind() {
                io::ErrorKind::NotFound => "no such file".to_string(),
                _ => e.to_string(),
            })
        })?)
    };
    let mut lines = Batches::new(reader);
    let mut items = Vec::new();
    let mut batch = Vec::new();
    while lines
        .next_batch(&mut batch, 1 << 16)
        .map_err(|e| cannot(e.to_string()))?
    {
        items.extend(batch.drain(..).filter(|i| !i.is_empty()));
    }
    if items.is_empty() {
        return Err(usage(format!(
            "--verify {}: no items in it: give items known to be in the legacy bitmap",
            file.display()
        )));
    }
    Ok(items)
}
