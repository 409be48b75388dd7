//! The throughput table: every target, group and operation, runs
//! interleaved.

use crate::catalog::Target;
use crate::cfg::Cfg;
use crate::ctx::Ctx;
use crate::stats::Summary;
use crate::targets::{Api, Op, R};
use crate::timing::{timed, Shape, Timed};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// One row of the throughput table.
#[derive(Clone)]
pub struct Row {
    pub target: String,
    pub op: Op,
    pub batch: usize,
    pub api: Api,
    pub inflight: usize,
    /// Items offered per run (the cap may stop a run earlier).
    pub items: usize,
    /// Items processed, per run.
    pub done: Vec<usize>,
    /// Server CPU share, per run.
    pub busy: Vec<f64>,
    /// Client CPU share, per run.
    pub cbusy: Vec<f64>,
    pub rates: Vec<f64>,
    pub positives: Vec<usize>,
    pub error: Option<String>,
}

impl Row {
    pub fn summary(&self) -> Summary {
        Summary::of(&self.rates)
    }

    /// Sanity check of the answers: after inserting N fresh items, contains
    /// must say yes to all N (no false negatives); insert and
    /// check_and_insert on a fresh filter must call (nearly) all of them new.
    pub fn check(&self) -> Option<String> {
        for (&p, &n) in self.positives.iter().zip(&self.done) {
            let bad = match self.op {
                Op::Contains => p != n,
                _ => (p as f64) < 0.99 * n as f64 || p > n,
            };
            if bad {
                return Some(format!(
                    "{} answered positive for {p} of {n} items",
                    self.op.name()
                ));
            }
        }
        None
    }
}

#[derive(Clone, Copy)]
pub struct Group {
    pub batch: usize,
    pub api: Api,
    pub inflight: usize,
}

pub fn groups(cfg: &Cfg) -> Vec<Group> {
    let mut g = Vec::new();
    // Quick mode measures what the targets compare: batches of 1000.
    let sizes: &[usize] = if cfg.quick && !cfg.smoke {
        &[1000]
    } else {
        &[1, 100, 1000]
    };
    for &batch in sizes {
        for api in [Api::Sync, Api::Async] {
            g.push(Group {
                batch,
                api,
                inflight: 1,
            });
        }
    }
    if cfg.x2 {
        for api in [Api::Sync, Api::Async] {
            g.push(Group {
                batch: 1000,
                api,
                inflight: 2,
            });
        }
    }
    g
}

/// One run of one group: insert + contains (of the items insert got to) on
/// one fresh state, then check_and_insert on another.
pub fn run_group(ctx: &mut Ctx, t: &Target, g: Group) -> R<Vec<(Op, Timed)>> {
    let items = Arc::clone(&ctx.items);
    let n = if g.batch == 1 {
        ctx.cfg.items_single
    } else {
        ctx.cfg.items
    };
    let items = &items[..n];
    let mut out = Vec::new();
    let shape = Shape {
        batch: g.batch,
        inflight: g.inflight,
        cap: ctx.cfg.op_seconds,
    };
    let h = ctx.reset(t)?;
    let ins = timed(ctx, &h, g.api, Op::Insert, items, shape)?;
    out.push((Op::Insert, ins));
    let has = timed(ctx, &h, g.api, Op::Contains, &items[..ins.done], shape)?;
    out.push((Op::Contains, has));
    let h = ctx.reset(t)?;
    let cai = timed(ctx, &h, g.api, Op::Cai, items, shape)?;
    out.push((Op::Cai, cai));
    Ok(out)
}

pub fn throughput(ctx: &mut Ctx, targets: &[Target]) -> Vec<Row> {
    let gs = groups(&ctx.cfg);
    let mut rows: BTreeMap<(usize, usize), Row> = BTreeMap::new();
    let op_ix = |op: Op| Op::ALL.iter().position(|o| *o == op).unwrap_or(0);
    let runs = ctx.cfg.runs;
    for run in 0..runs {
        let start = Instant::now();
        // Rows that are compared (same group, different targets) are
        // measured back to back, so a change in the machine's load hits them
        // alike; odd runs go through the targets in reverse order.
        let mut order: Vec<usize> = (0..targets.len()).collect();
        if run % 2 == 1 {
            order.reverse();
        }
        for (gi, g) in gs.iter().enumerate() {
            for &ti in &order {
                let t = &targets[ti];
                let n = if g.batch == 1 {
                    ctx.cfg.items_single
                } else {
                    ctx.cfg.items
                };
                let res = run_group(ctx, t, *g);
                for op in Op::ALL {
                    let row = rows.entry((ti, gi * 3 + op_ix(op))).or_insert_with(|| Row {
                        target: t.name.clone(),
                        op,
                        batch: g.batch,
                        api: g.api,
                        inflight: g.inflight,
                        items: n,
                        done: Vec::new(),
                        busy: Vec::new(),
                        cbusy: Vec::new(),
                        rates: Vec::new(),
                        positives: Vec::new(),
                        error: None,
                    });
                    match &res {
                        Ok(v) => {
                            if let Some((_, r)) = v.iter().find(|(o, _)| *o == op) {
                                row.rates.push(r.done as f64 / r.secs);
                                row.done.push(r.done);
                                row.busy.push(r.server_busy);
                                row.cbusy.push(r.client_busy);
                                row.positives.push(r.positives);
                            }
                        }
                        Err(er) => {
                            row.error.get_or_insert_with(|| er.clone());
                        }
                    }
                }
                if let Err(er) = &res {
                    eprintln!(
                        "  ! {} batch {} {} x{}: {er}",
                        t.name,
                        g.batch,
                        g.api.name(),
                        g.inflight
                    );
                }
            }
            eprintln!(
                "  run {}/{runs}: batch {} {} x{} done ({:.0}s into the run)",
                run + 1,
                g.batch,
                g.api.name(),
                g.inflight,
                start.elapsed().as_secs_f64()
            );
        }
    }
    rows.into_values().collect()
}
