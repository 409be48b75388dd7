//! `rotabloom convert NAME`: a bloom filter into an expanding one, in
//! place.

use super::{label, GrowthFlags, Shown};
use crate::run::open;
use crate::shared::ctx::Ctx;
use crate::shared::fail::usage;
use crate::shared::output::Output;
use std::io;

/// `rotabloom convert NAME`: a bloom filter becomes generation 0 of an
/// expanding filter, in place; a sharded one records the kind in its root,
/// then converts shard by shard (docs/FORMAT.md §11.8: run it again after
/// a failure to finish it).
pub fn run(ctx: &Ctx, name: &str, growth: &GrowthFlags, output: Output) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    // Opened first for the hint when it does not exist, and to say
    // whether this run converted it.
    // Unconverged: this run is what finishes an interrupted conversion.
    let before = open::open_sharded_unconverged(&mut conn, name)?;
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
