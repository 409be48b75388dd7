//! A filter's state at a glance: load, then BITCOUNT and STRLEN (or
//! its store's own reading) of every block.

use super::load::{reload, ReloadMachine};
use super::Core;
use crate::error::{Error, Result};
use crate::info::{GenerationInfo, Info, Level, Warning, WarningCode};
use crate::machine::{Machine, Poll};
use crate::metadata::field;
use crate::params;
use crate::request::{Replies, Request};
use crate::store::generation::Generation;
use crate::store::{Held, COUNT_BYTES};
use crate::view::{Role, View};
use redis::Value;
use std::sync::Arc;

enum State {
    Load(ReloadMachine),
    /// The view, the steps still to send (last first), the replies so far.
    Bits(Arc<View>, Vec<Request>, Replies),
}

pub(crate) struct InfoMachine {
    core: Core,
    state: State,
    /// Reads that found the filter changed under them.
    stalls: u32,
}

impl InfoMachine {
    pub fn new(core: Core) -> InfoMachine {
        InfoMachine {
            state: State::Load(reload(&core)),
            core,
            stalls: 0,
        }
    }
}

/// What the recheck found.
#[derive(Debug, PartialEq, Eq)]
enum Still {
    Current,
    Changed,
    Gone,
}

fn still(view: &View, reply: Option<redis::RedisResult<Value>>) -> Result<Still> {
    let v = reply.ok_or_else(|| Error::Internal("the recheck's reply is missing".into()))??;
    let Value::Array(parts) = &v else {
        return Err(crate::error::unexpected("HMGET", &v));
    };
    let parts: Vec<Option<String>> = parts
        .iter()
        .map(|p| match p {
            Value::Nil => None,
            p => Some(crate::proto::as_string(p).unwrap_or_default()),
        })
        .collect();
    Ok(match parts.as_slice() {
        [None, None, None] => Still::Gone,
        [Some(uid), Some(epoch), cleared]
            if *uid == view.uid
                && *epoch == view.epoch.to_string()
                && cleared.as_deref().unwrap_or("0") == view.cleared.to_string() =>
        {
            Still::Current
        }
        _ => Still::Changed,
    })
}

/// The info request, cut into round trips: per block the commands its
/// store reads it with (bitmaps: `BITCOUNT`s over byte ranges, then
/// `STRLEN`; a module: its own reading). A round trip counts at most
/// [`COUNT_BYTES`] bytes of bitmap: a `BITCOUNT` runs at a few GB/s, so a
/// step holds the server for about a millisecond and other clients'
/// commands run between the steps (one pipeline of every block's
/// `BITCOUNT` held a 686 MiB filter's server for 190 to 349 ms).
fn requests(keys: &crate::keys::Keys, view: &View) -> Vec<Request> {
    let mut steps = Vec::new();
    let mut req = Request::new().read_only();
    let mut budget = COUNT_BYTES;
    let mut empty = true;
    for (i, g) in view.gens.iter().enumerate() {
        for b in 0..g.layout.blocks {
            let key = keys.block(&view.uid, g.seq, b);
            for (cmd, cost) in view.store(i).info_commands(&g.layout, &key) {
                if cost > budget && !empty {
                    steps.push(std::mem::replace(&mut req, Request::new().read_only()));
                    budget = COUNT_BYTES;
                }
                budget = budget.saturating_sub(cost);
                req.push(cmd, None);
                empty = false;
            }
        }
    }
    steps.push(req);
    steps
}

/// One generation as read: bits set, bytes held, and the blocks that are
/// not what they should be.
fn read_blocks(
    view: &View,
    i: usize,
    g: &Generation,
    replies: &mut impl Iterator<Item = redis::RedisResult<Value>>,
) -> Result<Held> {
    let mut out = Held::default();
    for b in 0..g.layout.blocks {
        view.store(i).info_block(&g.layout, b, replies, &mut out)?;
    }
    Ok(out)
}

/// Block numbers for a message: `0, 1, 2` (at most 8, then `...`).
fn block_list(blocks: impl Iterator<Item = u32>) -> String {
    let all: Vec<String> = blocks.map(|b| b.to_string()).collect();
    if all.len() > 8 {
        format!("{}, ... ({} blocks)", all[..8].join(", "), all.len())
    } else {
        all.join(", ")
    }
}

fn block_warnings(g: &Generation, read: &Held, warnings: &mut Vec<Warning>) {
    if read.short.is_empty() {
        return;
    }
    let missing = read.short.iter().filter(|(_, len)| *len == 0).count();
    // A missing block of a generation that holds items lost them; a short
    // one lost what lay past its end; a store that makes its blocks with
    // the generation lost them whatever the count (which it kept there).
    let level = if g.count > 0 || missing < read.short.len() || read.gone {
        Level::Error
    } else {
        Level::Warn
    };
    let what = if missing == read.short.len() {
        "missing"
    } else {
        "missing or shorter than its full size"
    };
    let held = match read.gone {
        true => "items unknown: the count was kept in it".to_string(),
        false => format!("{} items", g.count),
    };
    warnings.push(Warning::new(
        WarningCode::MissingBlock,
        level,
        format!(
            "generation {} ({held}): block {} {what} (evicted or deleted?): queries now miss items it held",
            g.seq,
            block_list(read.short.iter().map(|(b, _)| *b)),
        ),
    ));
}

/// Capacity, target rate and limit warnings of the whole filter.
fn fill_warnings(view: &View, info: &Info, warnings: &mut Vec<Warning>) {
    super::fullness::capacity_warnings(&view.growth, &info.generations, warnings);
    let target = info
        .fields
        .get(field::ERROR_RATE)
        .and_then(|t| t.parse::<f64>().ok())
        .filter(|t| *t > 0.0 && *t < 1.0);
    if let Some(target) = target {
        // Some slack: the estimate from the bits set wobbles around the
        // rate expected at capacity.
        if info.false_positive_rate > target * 1.1 {
            warnings.push(Warning::new(
                WarningCode::FalsePositiveRateAboveTarget,
                Level::Error,
                format!(
                    "false-positive rate now {:.3e}, above the target error_rate {target}",
                    info.false_positive_rate
                ),
            ));
        }
    }
}

fn decode(view: &View, replies: Replies) -> Result<Info> {
    let mut replies = replies.into_iter();
    let mut generations = Vec::new();
    let mut warnings = Vec::new();
    let mut miss = 1.0;
    for (i, g) in view.gens.iter().enumerate() {
        let read = read_blocks(view, i, g, &mut replies)?;
        // A store that counts itself (a module, FORMAT.md §6.6) says how
        // many items it holds; the metadata keeps no count for it.
        let g = &Generation {
            count: read.items.unwrap_or(g.count),
            ..g.clone()
        };
        block_warnings(g, &read, &mut warnings);
        let role = view.roles.get(i).copied();
        let queried = matches!(role, Some(Role::Query | Role::Decide));
        let written = matches!(role, Some(Role::Decide | Role::Write));
        let fpr =
            params::current_false_positive_rate(g.layout.bits, g.layout.hashes, read.set_bits);
        if queried {
            miss *= 1.0 - fpr;
        }
        generations.push(GenerationInfo {
            seq: g.seq,
            bits: g.layout.bits,
            hashes: g.layout.hashes,
            blocks: g.layout.blocks,
            capacity: g.capacity,
            count: g.count,
            created_at_ms: g.created_at_ms,
            set_bits: read.set_bits,
            fill_ratio: read.set_bits as f64 / g.layout.bits as f64,
            false_positive_rate: fpr,
            memory_bytes: read.memory_bytes,
            queried,
            written,
        });
    }
    let mut info = Info {
        name: view.name.clone(),
        kind: view.kind,
        epoch: view.epoch,
        created_at_ms: view.created_at_ms,
        count: generations
            .iter()
            .fold(0u64, |a, g| a.saturating_add(g.count)),
        memory_bytes: generations.iter().map(|g| g.memory_bytes).sum(),
        generations,
        false_positive_rate: 1.0 - miss,
        fields: view.fields.lossy(),
        warnings: Vec::new(),
    };
    fill_warnings(view, &info, &mut warnings);
    info.warnings = warnings;
    Ok(info)
}

impl Machine for InfoMachine {
    type Output = Info;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Info>> {
        match &mut self.state {
            State::Load(load) => match load.step(replies)? {
                Poll::Send(req) => Ok(Poll::Send(req)),
                Poll::Ready(view) => {
                    let mut steps = requests(&self.core.keys, &view);
                    if let Some(last) = steps.last_mut() {
                        last.push(crate::proto::whole::recheck(&self.core.keys), None);
                    }
                    steps.reverse();
                    self.state = State::Bits(view, steps, Vec::new());
                    self.step(None)
                }
            },
            State::Bits(view, steps, got) => {
                got.extend(replies.unwrap_or_default());
                if let Some(req) = steps.pop() {
                    return Ok(Poll::Send(req));
                }
                let mut got = std::mem::take(got);
                match still(view, got.pop())? {
                    Still::Current => decode(view, got).map(Poll::Ready),
                    Still::Gone => Err(Error::NotFound {
                        name: self.core.name().to_string(),
                    }),
                    Still::Changed => {
                        self.stalls += 1;
                        if self.stalls > self.core.max_retries {
                            return Err(self.core.contention(self.stalls));
                        }
                        self.state = State::Load(reload(&self.core));
                        self.step(None)
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::COUNT_BYTES;

    #[test]
    fn the_recheck_tells_a_current_view_from_a_changed_or_dropped_filter() {
        use super::{still, Still};
        use redis::Value;
        let view = crate::testkit::view_of("bloom", 1);
        let reply = |parts: Vec<Option<String>>| {
            Some(Ok(Value::Array(
                parts
                    .into_iter()
                    .map(|p| p.map_or(Value::Nil, |s| Value::BulkString(s.into_bytes())))
                    .collect(),
            )))
        };
        let (uid, epoch) = (Some(view.uid.clone()), Some(view.epoch.to_string()));
        let cleared = Some(view.cleared.to_string());
        assert_eq!(
            still(
                &view,
                reply(vec![uid.clone(), epoch.clone(), cleared.clone()])
            )
            .unwrap(),
            Still::Current
        );
        assert_eq!(
            still(&view, reply(vec![None, None, None])).unwrap(),
            Still::Gone
        );
        let later = Some((view.epoch + 1).to_string());
        assert_eq!(
            still(&view, reply(vec![uid.clone(), later, cleared])).unwrap(),
            Still::Changed
        );
        let other = Some("0000000000000000".to_string());
        assert_eq!(
            still(&view, reply(vec![other, epoch, None])).unwrap(),
            Still::Changed
        );
    }

    #[test]
    fn a_missing_block_is_an_error_when_items_or_the_count_were_in_it() {
        use super::{block_warnings, Held};
        use crate::info::Level;
        let view = crate::testkit::view_of("bloom", 1);
        let mut g = view.gens[0].clone();
        let level = |g: &crate::store::generation::Generation, gone: bool| {
            let read = Held {
                short: vec![(0, 0)],
                gone,
                ..Held::default()
            };
            let mut w = Vec::new();
            block_warnings(g, &read, &mut w);
            (w[0].level, w[0].message.clone())
        };
        g.count = 0;
        // A bitmap block is made by the first write: none yet, no loss.
        assert_eq!(level(&g, false).0, Level::Warn);
        // A module's key is made with the generation and holds its count.
        let (l, message) = level(&g, true);
        assert_eq!(l, Level::Error);
        assert!(message.contains("items unknown"), "{message}");
        g.count = 3;
        assert_eq!(level(&g, false).0, Level::Error);
    }

    #[test]
    fn no_step_counts_more_than_its_budget() {
        use crate::testkit::{fields, keys, ALL};
        // Generation 0: 3 blocks of 8 MiB; generation 1: 1 block of 1 MiB.
        let mut f = fields("circular", 2, 0);
        for (k, v) in [
            ("gen.0.bits", (3u64 << 26).to_string()),
            ("gen.0.blocks", "3".into()),
            ("gen.1.bits", (1u64 << 23).to_string()),
        ] {
            f.raw.insert(k.into(), v.into_bytes());
        }
        let view = crate::view::View::decode(f, None, "fence", crate::view::Accept::Any(ALL))
            .expect("a valid view");
        let steps = super::requests(&keys("t"), &view);
        let mut counted = 0u64;
        for (i, step) in steps.iter().enumerate() {
            let mut bytes = 0u64;
            for c in 0..step.len() {
                let args = step.args(c);
                if args[0] == "BITCOUNT" {
                    let (start, end): (u64, u64) =
                        (args[2].parse().unwrap(), args[3].parse().unwrap());
                    bytes += end + 1 - start;
                }
            }
            assert!(bytes <= COUNT_BYTES, "step {i} counts {bytes} bytes");
            counted += bytes;
        }
        assert_eq!(counted, (3 << 23) + (1 << 20), "every byte once");
        assert_eq!(steps.len(), 7, "6 of 4 MiB, then the small block");
    }
}
