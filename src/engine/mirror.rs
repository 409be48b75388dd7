//! Filling the mirror of frozen generations: one GETRANGE per round trip.

use super::Core;
use crate::error::{Error, Result};
use crate::exec::{Machine, Poll, Replies, Request};
use crate::generation::Generation;
use crate::proto::take_one;
use crate::view::{Role, View};
use std::sync::Arc;

/// Bytes per GETRANGE when mirroring a block: copies stay short for the
/// server even for a legacy 256 MiB block.
const CHUNK: u64 = 4 << 20;

/// Copies the query-only generations that are not mirrored yet and fit the
/// budget. Sends nothing when the mirror is complete or disabled.
pub(crate) struct FillMachine {
    core: Core,
    view: Arc<View>,
    todo: Vec<Generation>,
    /// The generation being copied, its finished blocks, and the current
    /// block's bytes so far.
    current: Option<(Generation, Vec<Vec<u8>>, Vec<u8>)>,
}

impl FillMachine {
    pub fn new(core: Core) -> FillMachine {
        let view = core.view();
        let mut todo = Vec::new();
        if let Some(cache) = &core.cache {
            let mut budget = 0u64;
            for g in view.with_role(Role::Query) {
                let Some(gen) = view.gens.get(g) else {
                    continue;
                };
                // A RedisBloom generation's bits are the module's business.
                if !gen.layout.scheme.is_module() && cache.get(&view, gen.seq).is_none() {
                    budget = budget.saturating_add(gen.layout.bytes());
                    if cache.fits(budget) {
                        todo.push(gen.clone());
                    }
                }
            }
        }
        FillMachine {
            core,
            view,
            todo,
            current: None,
        }
    }

    fn next_request(&mut self) -> Option<Request> {
        loop {
            let (gen, done, bytes) = match self.current.take() {
                Some(c) => c,
                None => (self.todo.pop()?, Vec::new(), Vec::new()),
            };
            let block = done.len() as u32;
            if block >= gen.layout.blocks {
                if let Some(cache) = &self.core.cache {
                    cache.insert(&self.view, gen, done);
                }
                continue;
            }
            let size = gen.layout.block_bits().div_ceil(8);
            let start = bytes.len() as u64;
            let key = self.core.keys.block(&self.view.uid, gen.seq, block);
            let req = Request::new().read_only().cmd(
                redis::cmd("GETRANGE")
                    .arg(key)
                    .arg(start)
                    .arg(start.saturating_add(CHUNK).min(size).saturating_sub(1))
                    .clone(),
            );
            self.current = Some((gen, done, bytes));
            return Some(req);
        }
    }
}

impl Machine for FillMachine {
    type Output = ();

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<()>> {
        if replies.is_some() {
            let chunk = match take_one(replies)?? {
                redis::Value::BulkString(b) => b,
                redis::Value::Nil => Vec::new(),
                v => return Err(crate::proto::unexpected("GETRANGE", &v)),
            };
            let Some((gen, mut done, mut bytes)) = self.current.take() else {
                return Err(Error::Internal("a GETRANGE reply without a block".into()));
            };
            let size = gen.layout.block_bits().div_ceil(8);
            let left = size.saturating_sub(bytes.len() as u64);
            let short = (chunk.len() as u64) < CHUNK.min(left);
            bytes.extend_from_slice(&chunk);
            // A short read is the end of the string: the rest reads 0,
            // and `Frozen::contains` treats missing bytes as 0.
            if short || bytes.len() as u64 >= size {
                done.push(bytes);
                self.current = Some((gen, done, Vec::new()));
            } else {
                self.current = Some((gen, done, bytes));
            }
        }
        Ok(match self.next_request() {
            Some(req) => Poll::Send(req),
            None => Poll::Ready(()),
        })
    }
}

#[cfg(test)]
mod tests {
    //! The fill driven with canned GETRANGE replies: no server.
    use super::*;
    use crate::cache::FrozenCache;
    use crate::testkit::{keys, view_of, ALL};
    use crate::view::Accept;
    use redis::Value;

    #[test]
    fn the_frozen_generations_are_copied_once_in_chunks() {
        let mut core = Core::new(
            keys("t"),
            view_of("expanding", 3),
            Accept::Any(ALL),
            Vec::new(),
        );
        core.cache = Some(Arc::new(FrozenCache::new(1 << 20)));
        let view = core.view();
        let mut m = FillMachine::new(core.clone());
        let mut copied = Vec::new();
        let mut replies = None;
        loop {
            match m.step(replies.take()).unwrap() {
                Poll::Ready(()) => break,
                Poll::Send(req) => {
                    let args = req.args(0);
                    assert_eq!(
                        (args[0].as_str(), args[2].as_str(), args[3].as_str()),
                        ("GETRANGE", "0", "124")
                    );
                    copied.push(args[1].clone());
                    // A generation of 1000 bits is 125 bytes: all ones.
                    replies = Some(vec![Ok(Value::BulkString(vec![0xff; 125]))]);
                }
            }
        }
        // Only the two frozen (query-only) generations, not the newest.
        copied.sort();
        assert_eq!(
            copied,
            [
                "rotabloom:{t}:gen:0123456789abcdef-0:0",
                "rotabloom:{t}:gen:0123456789abcdef-1:0"
            ]
        );
        let cache = core.cache.as_ref().unwrap();
        for seq in [0, 1] {
            let frozen = cache.get(&view, seq).expect("mirrored");
            assert!(
                frozen.contains(&crate::ItemHash::of("any"), None),
                "all bits set"
            );
        }
        assert!(cache.get(&view, 2).is_none());
        // Complete: a second fill sends nothing.
        assert!(matches!(
            FillMachine::new(core).step(None).unwrap(),
            Poll::Ready(())
        ));
    }

    #[test]
    fn a_short_read_ends_the_block_and_missing_bytes_read_zero() {
        let mut core = Core::new(
            keys("t"),
            view_of("expanding", 2),
            Accept::Any(ALL),
            Vec::new(),
        );
        core.cache = Some(Arc::new(FrozenCache::new(1 << 20)));
        let view = core.view();
        let mut m = FillMachine::new(core.clone());
        assert!(matches!(m.step(None).unwrap(), Poll::Send(_)));
        assert!(matches!(
            m.step(Some(vec![Ok(Value::BulkString(vec![]))])).unwrap(),
            Poll::Ready(())
        ));
        let frozen = core
            .cache
            .as_ref()
            .unwrap()
            .get(&view, 0)
            .expect("mirrored");
        assert!(!frozen.contains(&crate::ItemHash::of("any"), None));
        // An unexpected reply is an error, not a panic.
        let mut m = FillMachine::new(Core::new(
            keys("u"),
            view_of("expanding", 2),
            Accept::Any(ALL),
            Vec::new(),
        ));
        assert!(
            matches!(m.step(None).unwrap(), Poll::Ready(())),
            "no cache, nothing to fill"
        );
    }
}
