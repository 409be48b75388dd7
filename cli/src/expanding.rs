//! The commands of expanding filters: `expand`, `convert` (a bloom filter
//! into an expanding one) and `adopt` (a legacy crawler's bitmap as the
//! frozen first generation of a new expanding filter).

use crate::connect::{self, Ctx};
use crate::errors::{file_error, usage};
use crate::lines::{Batches, Items};
use crate::show::count;
use crate::Output;
use clap::Args;
use rotabloom::config::{parse_bytes, parse_count, parse_number};
use rotabloom::connect::Connection;
use rotabloom::{AnyFilter, ExpandingBuilder, ExpandingFilter, Legacy, ShardedFilter};
use serde_json::json;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

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
    fn builder(&self, name: &str) -> ExpandingBuilder {
        ExpandingFilter::builder(name)
            .growth(self.growth)
            .tightening(self.tightening)
            .max_generations(self.max_generations)
            .max_bytes(self.max_bytes)
    }
}

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

/// `3 generations`.
fn shape(f: &ExpandingFilter) -> String {
    count(f.generations().len() as u64, "generation")
}

fn open_expanding(
    conn: &mut Connection,
    name: &str,
) -> anyhow::Result<ShardedFilter<rotabloom::kinds::Expanding>> {
    // Unconverged: `expand` is what finishes an interrupted expansion.
    let f = connect::open_sharded_unconverged(conn, name)?;
    f.expanding().ok_or_else(|| {
        let kind = f.kind().map_or("no", |k| k.with_article());
        usage(format!(
            "{name}: {kind} filter does not expand (only expanding filters do; \
             `rotabloom convert` turns a bloom filter into one)"
        ))
    })
}

/// How `name`'s shard `j` is called in what is printed.
fn label(f: &ShardedFilter<impl rotabloom::FilterKind>, name: &str, j: u32) -> String {
    match f.is_sharded() {
        true => format!("{name} shard {j}"),
        false => name.to_string(),
    }
}

/// `rotabloom expand NAME`: freezes the newest generation and adds the
/// next one now; of a sharded filter, as one change (docs/FORMAT.md
/// §11.8): every shard's target recorded in the root, then every shard
/// grown to it, one line each. A failure on a shard names the shards
/// grown and not; a rerun grows only those not.
pub fn expand(ctx: &Ctx, name: &str, output: Output) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    let f = open_expanding(&mut conn, name)?;
    let grown = f.expand(&mut conn)?;
    let mut out = io::stdout();
    for (j, expanded) in (0..f.shard_count()).zip(grown) {
        let Some(shard) = f.shard(j) else { break };
        let label = label(&f, name, j);
        let yes = ("expanded", "expanded");
        let no = (
            "not expanded: another process changed it first",
            "superseded",
        );
        let shown = Shown::new(name, &label, shard, if expanded { yes } else { no });
        shown.print(output, &mut out, &f, j, shard, expanded)?;
    }
    Ok(0)
}

/// What `expand` or `convert` says of one shard (or of the filter).
struct Shown<'a> {
    name: &'a str,
    text: String,
    result: &'static str,
}

impl<'a> Shown<'a> {
    /// `LABEL: WHAT (N generations)`, and `result` in JSON.
    fn new(
        name: &'a str,
        label: &str,
        shard: &ExpandingFilter,
        (what, result): (&str, &'static str),
    ) -> Shown<'a> {
        let text = format!("{label}: {what} ({})", shape(shard));
        Shown { name, text, result }
    }

    /// Prints the line, and its JSON with `shard` for a sharded filter.
    fn print<K: rotabloom::FilterKind>(
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

/// `rotabloom convert NAME`: a bloom filter becomes generation 0 of an
/// expanding filter, in place; a sharded one records the kind in its root,
/// then converts shard by shard (docs/FORMAT.md §11.8: run it again after
/// a failure to finish it).
pub fn convert(ctx: &Ctx, name: &str, growth: &GrowthFlags, output: Output) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    // Opened first for the hint when it does not exist, and to say
    // whether this run converted it.
    // Unconverged: this run is what finishes an interrupted conversion.
    let before = connect::open_sharded_unconverged(&mut conn, name)?;
    if before.circular().is_some() {
        return Err(usage(format!(
            "{name}: a circular filter cannot be converted (only a bloom filter can)"
        )));
    }
    let mut out = io::stdout();
    let mut lines = Vec::new();
    let converted = before.convert_bloom(&mut conn, &growth.builder(name), |j, converted| {
        lines.push((j, converted));
    });
    // A failure on a shard names the shards converted and not
    // (Error::ShardsDisagree); the root holds the target, and a rerun
    // converts the rest.
    let f = converted?;
    for (j, converted) in lines {
        let Some(shard) = f.shard(j) else { break };
        let label = label(&f, name, j);
        let yes = ("converted to expanding", "converted");
        let no = ("already expanding, same parameters", "exists");
        let shown = Shown::new(name, &label, shard, if converted { yes } else { no });
        shown.print(output, &mut out, &f, j, shard, converted)?;
    }
    Ok(0)
}

/// `rotabloom adopt NAME --scrapy-redis-bloomfilter KEY | --seed000 PREFIX`.
pub fn adopt(ctx: &Ctx, a: &AdoptArgs) -> anyhow::Result<u8> {
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
        n => format!(", all {} known items found", crate::show::int(n as u64)),
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

/// The keys a legacy layout reads.
fn sources(legacy: &Legacy) -> Vec<String> {
    match legacy {
        Legacy::ScrapyRedisBloomfilter { key, .. } => vec![key.clone()],
        Legacy::Seed000 { prefix, blocks } => {
            (0..*blocks).map(|b| format!("{prefix}{b}")).collect()
        }
    }
}

fn keyslot(conn: &mut Connection, key: &str) -> anyhow::Result<i64> {
    Ok(redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(conn)
        .map_err(rotabloom::Error::from)?)
}

/// Copies each of `from` to `PREFIX<index>`; returns the copies made (a
/// missing key is not copied). On a failure the copies are deleted.
fn copy_all(conn: &mut Connection, from: &[String], prefix: &str) -> anyhow::Result<Vec<String>> {
    let mut copies = Vec::new();
    for (b, k) in from.iter().enumerate() {
        let to = format!("{prefix}{b}");
        match rotabloom::dump::copy_string(conn, k, &to) {
            Ok(0) => {}
            Ok(_) => copies.push(to),
            Err(e) => {
                copies.push(to);
                unlink(conn, &copies);
                return Err(e.into());
            }
        }
    }
    Ok(copies)
}

/// Whether the legacy keys are worth copying: strings, at least one.
fn copyable(conn: &mut Connection, keys: &[String]) -> anyhow::Result<bool> {
    let mut strings = 0;
    for k in keys {
        let ty: String = redis::cmd("TYPE")
            .arg(k)
            .query(conn)
            .map_err(rotabloom::Error::from)?;
        match ty.as_str() {
            "string" => strings += 1,
            "none" => {}
            _ => return Ok(false),
        }
    }
    Ok(strings > 0)
}

fn unlink(conn: &mut Connection, keys: &[String]) {
    for k in keys {
        let _ = redis::cmd("UNLINK").arg(k).exec(conn);
    }
}

/// Whether `conn` is to a Redis Cluster (never, built without `cluster`).
fn is_cluster(conn: &Connection) -> bool {
    #[cfg(feature = "cluster")]
    return matches!(conn, Connection::Cluster(_));
    #[cfg(not(feature = "cluster"))]
    return {
        let _ = conn;
        false
    };
}

/// In a cluster, adoption renames the legacy keys into the filter's slot,
/// which `RENAME` cannot do across slots: keys elsewhere are first copied
/// (1 MiB per step) to `rotabloom-import:{NAME}:B`, in the filter's slot,
/// and those are adopted; the originals stay. Returns the layout to adopt
/// and the copies made. Without `copy` (the filter exists: adopting again
/// compares) only the names are mapped, as the first adoption recorded
/// them. Keys that are missing, or not strings, are not copied: the
/// library refuses them by their own names.
fn into_slot(
    conn: &mut Connection,
    name: &str,
    legacy: Legacy,
    copy: bool,
) -> anyhow::Result<(Legacy, Vec<String>)> {
    if !is_cluster(conn) {
        return Ok((legacy, Vec::new()));
    }
    let home = keyslot(conn, &format!("{{{name}}}"))?;
    let from = sources(&legacy);
    let mut elsewhere = false;
    for k in &from {
        elsewhere |= keyslot(conn, k)? != home;
    }
    if !elsewhere {
        return Ok((legacy, Vec::new()));
    }
    let prefix = format!("rotabloom-import:{{{name}}}:");
    let copies = match copy {
        true if !copyable(conn, &from)? => return Ok((legacy, Vec::new())),
        true => copy_all(conn, &from, &prefix)?,
        false => Vec::new(),
    };
    let legacy = match legacy {
        Legacy::ScrapyRedisBloomfilter { bit, hashes, .. } => Legacy::ScrapyRedisBloomfilter {
            key: format!("{prefix}0"),
            bit,
            hashes,
        },
        Legacy::Seed000 { blocks, .. } => Legacy::Seed000 { prefix, blocks },
    };
    Ok((legacy, copies))
}
