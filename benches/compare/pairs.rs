//! Paired rounds (`--pairs N`): one target's sync x2 and async x2 of one
//! operation measured back to back, N rounds, the order flipped every
//! round; what is reported is each round's ratio, async over sync.
//!
//! Why a mode of its own: in the throughput table a target's sync x2 and
//! async x2 rows are measured several targets apart (seconds), and this
//! machine's drift over seconds is larger than the 5% that issue 30 asks
//! the two columns to agree within. A pair measured within a second, many
//! times, puts the drift into the spread of the ratios instead of into one
//! ratio of two medians.

use crate::catalog::Target;
use crate::ctx::Ctx;
use crate::stats::{quantile, si, Summary};
use crate::targets::{Api, Op, R};
use crate::timing::{timed, Shape, Timed};
use serde_json::{json, Value};

/// The operations paired: the writes, whose second round trip issue 30 is
/// about, and the read as the control.
const OPS: [Op; 3] = [Op::Cai, Op::Insert, Op::Contains];

/// One target and operation over every round.
pub struct Pairs {
    pub target: String,
    pub op: Op,
    /// Per round: the sync and the async run.
    pub rounds: Vec<(Timed, Timed)>,
    pub error: Option<String>,
}

/// One side's figure of a round.
type Side = fn(&(Timed, Timed)) -> f64;

impl Pairs {
    /// Each round's ratio async / sync, in round order.
    fn ratios(&self) -> Vec<f64> {
        self.rounds
            .iter()
            .map(|(s, a)| rate(a) / rate(s).max(1e-9))
            .collect()
    }

    /// The ratios' median and quartiles.
    fn spread(&self) -> (f64, f64, f64) {
        let mut r = self.ratios();
        r.sort_by(f64::total_cmp);
        (
            Summary::of(&r).median,
            quantile(&r, 0.25),
            quantile(&r, 0.75),
        )
    }

    /// One side's figure over the rounds.
    fn over(&self, side: Side) -> Summary {
        Summary::of(&self.rounds.iter().map(side).collect::<Vec<_>>())
    }

    pub fn json(&self) -> Value {
        let (median, q1, q3) = self.spread();
        json!({
            "target": self.target,
            "op": self.op.name(),
            "ratio_async_over_sync": {
                "median": median,
                "q1": q1,
                "q3": q3,
                "runs": self.ratios(),
            },
            "sync_items_per_s": self.over(|p| rate(&p.0)).json(),
            "async_items_per_s": self.over(|p| rate(&p.1)).json(),
            "sync_server_busy": self.over(|p| p.0.server_busy).json(),
            "async_server_busy": self.over(|p| p.1.server_busy).json(),
            "error": self.error,
        })
    }

    /// One line of the table: the ratios' median and quartiles, the
    /// rates' medians and the server's CPU share on each side.
    pub fn line(&self) -> String {
        if let Some(er) = &self.error {
            return format!("{:<28} {:<8} error: {er}", self.target, self.op.short());
        }
        let (median, q1, q3) = self.spread();
        let med = |side: Side| self.over(side).median;
        format!(
            "{:<28} {:<8} {:>6.3} [{:.3}, {:.3}] {:>9} {:>9} {:>5.0}% {:>5.0}%",
            self.target,
            self.op.short(),
            median,
            q1,
            q3,
            si(med(|p| rate(&p.0))),
            si(med(|p| rate(&p.1))),
            100.0 * med(|p| p.0.server_busy),
            100.0 * med(|p| p.1.server_busy),
        )
    }
}

fn rate(t: &Timed) -> f64 {
    t.done as f64 / t.secs.max(1e-9)
}

/// Batches of 1,000, two in flight, for `rounds` rounds.
pub fn pairs(ctx: &mut Ctx, targets: &[&Target], rounds: usize) -> Vec<Pairs> {
    let mut out: Vec<Pairs> = targets
        .iter()
        .flat_map(|t| {
            OPS.iter().map(|&op| Pairs {
                target: t.name.clone(),
                op,
                rounds: Vec::new(),
                error: None,
            })
        })
        .collect();
    let shape = Shape {
        batch: 1000,
        inflight: 2,
        cap: ctx.cfg.op_seconds,
    };
    for round in 0..rounds {
        for (ti, t) in targets.iter().enumerate() {
            for (oi, &op) in OPS.iter().enumerate() {
                let row = &mut out[ti * OPS.len() + oi];
                if row.error.is_some() {
                    continue;
                }
                match pair(ctx, t, op, shape, round % 2 == 1) {
                    Ok(p) => row.rounds.push(p),
                    Err(er) => row.error = Some(er),
                }
            }
        }
        eprintln!("  pairs: round {}/{rounds} done", round + 1);
    }
    out
}

/// One round: sync then async (or the reverse), each from a fresh state;
/// `contains` asks for the items its own insert put there.
fn pair(ctx: &mut Ctx, t: &Target, op: Op, shape: Shape, flip: bool) -> R<(Timed, Timed)> {
    let apis = if flip {
        [Api::Async, Api::Sync]
    } else {
        [Api::Sync, Api::Async]
    };
    let items = std::sync::Arc::clone(&ctx.items);
    let mut got = Vec::with_capacity(2);
    for api in apis {
        let h = ctx.reset(t)?;
        let run = match op {
            Op::Contains => {
                let ins = timed(ctx, &h, api, Op::Insert, &items, shape)?;
                timed(ctx, &h, api, op, &items[..ins.done], shape)?
            }
            _ => timed(ctx, &h, api, op, &items, shape)?,
        };
        got.push(run);
    }
    for t in &got {
        answered(op, t)?;
    }
    let (a, b) = (got[0], got[1]);
    Ok(if flip { (b, a) } else { (a, b) })
}

/// The answers' sanity, as the tables check theirs: `contains` of what was
/// inserted says yes to all; writes to a fresh filter call (nearly) all
/// new.
fn answered(op: Op, t: &Timed) -> R<()> {
    let (p, n) = (t.positives, t.done);
    let bad = match op {
        Op::Contains => p != n,
        _ => (p as f64) < 0.99 * n as f64 || p > n,
    };
    if bad || n == 0 {
        return Err(format!(
            "{} answered positive for {p} of {n} items",
            op.name()
        ));
    }
    Ok(())
}

/// The table, headed.
pub fn table(rows: &[Pairs], rounds: usize, cap: f64) -> String {
    let mut s = format!(
        "Paired rounds: async x2 / sync x2 of the same target and operation, measured back to \
         back ({rounds} rounds, order flipped each round, {cap} s per operation, batches of 1000)\n\
         {:<28} {:<8} {:>6} {:<17} {:>9} {:>9} {:>6} {:>6}\n",
        "target", "op", "ratio", "[q1, q3]", "sync/s", "async/s", "srv s", "srv a"
    );
    for r in rows {
        s.push_str(&r.line());
        s.push('\n');
    }
    s
}
