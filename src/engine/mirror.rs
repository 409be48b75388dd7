//! Filling the mirror of frozen generations: one request per round trip,
//! as each generation's store copies it (`store::mirror`).

use super::Core;
use crate::error::{Error, Result};
use crate::machine::{Machine, Poll};
use crate::proto::take_one;
use crate::request::{Replies, Request};
use crate::store::generation::Generation;
use crate::store::mirror::{CopyStep, MirrorCopy};
use crate::view::{Role, View};
use std::sync::Arc;

/// Copies the query-only generations that are not mirrored yet and fit the
/// budget. Sends nothing when the mirror is complete or disabled. A
/// generation whose data is not all there (a block or key gone, as after a
/// rotation that dropped it under this view) is left unmirrored: the
/// server then answers for it, and its checks say whether data was lost.
pub(crate) struct FillMachine {
    core: Core,
    view: Arc<View>,
    todo: Vec<Generation>,
    /// The copy under way, and its generation's seq.
    current: Option<(u64, Box<dyn MirrorCopy>)>,
    /// Whether `current` waits for the reply to its last request.
    sent: bool,
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
                if cache.get(&view, gen.seq).is_none() {
                    // A module's key may round its bits up: the
                    // header says exactly, and `insert` enforces the cap.
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
            sent: false,
        }
    }

    fn next_request(&mut self) -> Option<Request> {
        loop {
            let (seq, mut copy) = match self.current.take() {
                Some(c) => c,
                None => {
                    let gen = self.todo.pop()?;
                    let (keys, uid) = (&self.core.keys, &self.view.uid);
                    let key = |b: u32| keys.block(uid, gen.seq, b);
                    match gen.layout.store().mirror(&gen, &key) {
                        Some(copy) => (gen.seq, copy),
                        None => continue,
                    }
                }
            };
            match copy.next() {
                CopyStep::Send(req) => {
                    self.current = Some((seq, copy));
                    return Some(req);
                }
                CopyStep::Done(bits) => {
                    if let Some(cache) = &self.core.cache {
                        cache.insert(&self.view, seq, bits);
                    }
                }
                // Not mirrored (see the type's docs).
                CopyStep::Gone => {}
            }
        }
    }
}

impl Machine for FillMachine {
    type Output = ();

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<()>> {
        if replies.is_some() {
            let reply = take_one(replies)?;
            match &mut self.current {
                Some((_, copy)) if self.sent => copy.take(reply)?,
                _ => return Err(Error::Internal("a mirror reply without a copy".into())),
            }
        }
        let next = self.next_request();
        self.sent = next.is_some();
        Ok(match next {
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
    use crate::store::mirror::Memo;
    use crate::testkit::{keys, view_of, ALL};
    use crate::view::Accept;
    use redis::Value;

    #[test]
    fn the_frozen_generations_are_copied_once_in_chunks() {
        let mut core = Core::new(keys("t"), view_of("expanding", 3), Accept::Any(ALL));
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
                frozen.contains(
                    &mut Memo::default(),
                    (Some(&crate::hashing::ItemHash::of("any")), None)
                ),
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
    fn a_short_read_of_an_allocated_block_is_a_block_gone_and_not_mirrored() {
        let mut core = Core::new(keys("t"), view_of("expanding", 2), Accept::Any(ALL));
        core.cache = Some(Arc::new(FrozenCache::new(1 << 20)));
        let view = core.view();
        let mut m = FillMachine::new(core.clone());
        assert!(matches!(m.step(None).unwrap(), Poll::Send(_)));
        assert!(matches!(
            m.step(Some(vec![Ok(Value::BulkString(vec![]))])).unwrap(),
            Poll::Ready(())
        ));
        let cache = core.cache.as_ref().unwrap();
        assert!(cache.get(&view, 0).is_none(), "left to the server");
        // No cache, nothing to fill.
        let mut m = FillMachine::new(Core::new(
            keys("u"),
            view_of("expanding", 2),
            Accept::Any(ALL),
        ));
        assert!(matches!(m.step(None).unwrap(), Poll::Ready(())));
    }

    /// A view of an expanding filter of `gens` RedisBloom generations.
    fn module_view(gens: u64) -> crate::view::View {
        let mut f = crate::testkit::fields("expanding", gens, 0);
        f.raw.insert("backend".into(), b"redisbloom".to_vec());
        for s in 0..gens {
            f.raw
                .insert(format!("gen.{s}.scheme"), b"redisbloom".to_vec());
        }
        crate::view::View::decode(f, None, "fence", Accept::Any(ALL)).unwrap()
    }

    /// A dump header of one link of `bytes` bytes, FORCE64, 3 hashes.
    fn header(bytes: u64) -> Vec<u8> {
        crate::store::bf::chain::dump_header(&[(bytes, 3, 0)], 4 | 8)
    }

    fn dump_reply(iter: i64, data: &[u8]) -> Replies {
        vec![Ok(Value::Array(vec![
            Value::Int(iter),
            Value::BulkString(data.to_vec()),
        ]))]
    }

    #[test]
    fn a_redisbloom_generation_is_copied_with_scandump() {
        let mut core = Core::new(keys("t"), module_view(2), Accept::Any(ALL));
        core.cache = Some(Arc::new(FrozenCache::new(1 << 20)));
        let view = core.view();
        let mut m = FillMachine::new(core.clone());
        let mut sent = Vec::new();
        let mut replies = None;
        let mut script = vec![
            dump_reply(1, &header(16)),
            dump_reply(9, &[0xff; 8]),
            dump_reply(17, &[0xff; 8]),
            dump_reply(0, &[]),
        ]
        .into_iter();
        loop {
            match m.step(replies.take()).unwrap() {
                Poll::Ready(()) => break,
                Poll::Send(req) => {
                    sent.push(req.args(0).join(" "));
                    replies = script.next();
                }
            }
        }
        assert_eq!(
            sent,
            [
                "BF.SCANDUMP rotabloom:{t}:gen:0123456789abcdef-0:0 0",
                "BF.SCANDUMP rotabloom:{t}:gen:0123456789abcdef-0:0 1",
                "BF.SCANDUMP rotabloom:{t}:gen:0123456789abcdef-0:0 9",
                "BF.SCANDUMP rotabloom:{t}:gen:0123456789abcdef-0:0 17",
            ]
        );
        let frozen = core
            .cache
            .as_ref()
            .unwrap()
            .get(&view, 0)
            .expect("mirrored");
        let h = crate::hashing::ItemHash::of("x");
        assert!(
            frozen.contains(&mut Memo::default(), (Some(&h), Some(b"x"))),
            "all bits set"
        );
    }

    #[test]
    fn a_redisbloom_key_gone_is_not_mirrored_and_a_short_dump_is_an_error() {
        let mut core = Core::new(keys("t"), module_view(2), Accept::Any(ALL));
        core.cache = Some(Arc::new(FrozenCache::new(1 << 20)));
        let view = core.view();
        let mut m = FillMachine::new(core.clone());
        assert!(matches!(m.step(None).unwrap(), Poll::Send(_)));
        let gone = vec![Err(crate::testkit::server_error("ERR not found"))];
        assert!(matches!(m.step(Some(gone)).unwrap(), Poll::Ready(())));
        assert!(core.cache.as_ref().unwrap().get(&view, 0).is_none());

        let mut m = FillMachine::new(core.clone());
        assert!(matches!(m.step(None).unwrap(), Poll::Send(_)));
        assert!(matches!(
            m.step(Some(dump_reply(1, &header(16)))).unwrap(),
            Poll::Send(_)
        ));
        assert!(matches!(
            m.step(Some(dump_reply(0, &[0; 8]))),
            Err(Error::UnexpectedReply(_))
        ));
        let mut m = FillMachine::new(core);
        assert!(matches!(m.step(None).unwrap(), Poll::Send(_)));
        assert!(matches!(
            m.step(Some(vec![Ok(Value::Int(3))])),
            Err(Error::UnexpectedReply(_))
        ));
    }
}
