//! `rotabloom expand NAME`: the next generation now.

use super::{label, Shown};
use crate::run::open;
use crate::shared::ctx::Ctx;
use crate::shared::fail::usage;
use crate::shared::output::Output;
use rotabloom::connect::Connection;
use rotabloom::ShardedFilter;
use std::io;

fn open_expanding(
    conn: &mut Connection,
    name: &str,
) -> anyhow::Result<ShardedFilter<rotabloom::kinds::Expanding>> {
    // Unconverged: `expand` is what finishes an interrupted expansion.
    let f = open::open_sharded_unconverged(conn, name)?;
    f.expanding().ok_or_else(|| {
        let kind = f.kind().map_or("no", |k| k.with_article());
        usage(format!(
            "{name}: {kind} filter does not expand (only expanding filters do; \
             `rotabloom convert` turns a bloom filter into one)"
        ))
    })
}

/// `rotabloom expand NAME`: freezes the newest generation and adds the
/// next one now; of a sharded filter, as one change (docs/FORMAT.md
/// §11.8): every shard's target recorded in the root, then every shard
/// grown to it, one line each. A failure on a shard names the shards
/// grown and not; a rerun grows only those not.
pub fn run(ctx: &Ctx, name: &str, output: Output) -> anyhow::Result<u8> {
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
