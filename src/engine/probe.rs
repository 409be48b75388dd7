//! Naming the key behind a WRONGTYPE error, for every operation: when the
//! wrapped machine fails with one, `TYPE` of each of the filter's keys
//! tells which holds what, and the error says so.

use super::Core;
use crate::error::{Error, Result};
use crate::machine::{Machine, Poll};
use crate::proto::{is_wrongtype, probe, whole};
use crate::request::Replies;
use crate::view::View;
use std::sync::Arc;

/// The keys being probed, with the type each should have, and the error.
type Probing = (Vec<(String, &'static str)>, Box<Error>);

pub(crate) struct Probed<M> {
    inner: M,
    core: Core,
    /// The view the operation started from: its blocks are the ones it
    /// touched, whatever other handles published since.
    view: Arc<View>,
    probing: Option<Probing>,
}

pub(crate) fn probed<M: Machine>(core: &Core, inner: M) -> Probed<M> {
    Probed {
        inner,
        core: core.clone(),
        view: core.view(),
        probing: None,
    }
}

impl<M: Machine> Machine for Probed<M> {
    type Output = M::Output;

    fn allow_transactions(&mut self, yes: bool) {
        self.inner.allow_transactions(yes);
    }

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<M::Output>> {
        if let Some((keys, original)) = self.probing.take() {
            return Err(probe::verdict(&keys, replies, *original));
        }
        match self.inner.step(replies) {
            Err(e) if is_wrongtype(&e) => {
                let mut keys = vec![
                    (self.core.keys.meta().to_string(), "hash"),
                    (self.core.keys.fence(), "string"),
                ];
                // The operation's own blocks, and those of a view it
                // reloaded on the way (published to the handle), once each.
                let latest = self.core.view();
                let mut blocks = whole::block_keys(&self.core.keys, &self.view);
                if !Arc::ptr_eq(&latest, &self.view) {
                    for k in whole::block_keys(&self.core.keys, &latest) {
                        if !blocks.contains(&k) {
                            blocks.push(k);
                        }
                    }
                }
                keys.extend(blocks.into_iter().map(|k| (k, "string")));
                let req = probe::request(&keys);
                self.probing = Some((keys, Box::new(e)));
                Ok(Poll::Send(req))
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    //! The probe after a WRONGTYPE, with canned replies: no server.
    use super::*;
    use crate::testkit::{keys, view_of, ALL};
    use crate::view::Accept;

    /// Publishes `newer` to the handle, then fails as a WRONGTYPE reply.
    struct Moves(Core, Option<View>);

    impl Machine for Moves {
        type Output = ();
        fn step(&mut self, _: Option<Replies>) -> Result<Poll<()>> {
            if let Some(v) = self.1.take() {
                self.0.publish(v)?;
            }
            Err(redis::make_extension_error(
                "WRONGTYPE".into(),
                Some("Operation against a key holding the wrong kind of value".into()),
            )
            .into())
        }
    }

    #[test]
    fn the_probe_asks_the_type_of_the_operations_blocks_not_only_the_latest() {
        let core = Core::new(keys("t"), view_of("expanding", 3), Accept::Any(ALL));
        let mut m = probed(&core, Moves(core.clone(), Some(view_of("expanding", 1))));
        let Poll::Send(req) = m.step(None).unwrap() else {
            panic!("no probe sent");
        };
        let asked: Vec<String> = (0..req.len()).map(|i| req.args(i)[1].clone()).collect();
        // Metadata, fence, and each of the three generations the operation
        // started from, although the handle now knows one.
        assert_eq!(asked.len(), 5, "{asked:?}");
        for seq in 0..3 {
            let block = format!("rotabloom:{{t}}:gen:0123456789abcdef-{seq}:0");
            assert!(asked.contains(&block), "{block} not probed: {asked:?}");
        }
    }
}
