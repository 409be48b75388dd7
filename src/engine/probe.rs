//! Naming the key behind a WRONGTYPE error, for every operation: when the
//! wrapped machine fails with one, `TYPE` of each of the filter's keys
//! tells which holds what, and the error says so.

use super::Core;
use crate::engine::machine::{Machine, Poll};
use crate::error::{Error, Result};
use crate::proto::request::Replies;
use crate::proto::{is_wrongtype, probe, whole};

/// The keys being probed, with the type each should have, and the error.
type Probing = (Vec<(String, &'static str)>, Box<Error>);

pub(crate) struct Probed<M> {
    inner: M,
    core: Core,
    probing: Option<Probing>,
}

pub(crate) fn probed<M: Machine>(core: &Core, inner: M) -> Probed<M> {
    Probed {
        inner,
        core: core.clone(),
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
                let view = self.core.view();
                let mut keys = vec![
                    (self.core.keys.meta().to_string(), "hash"),
                    (self.core.keys.fence(), "string"),
                ];
                keys.extend(
                    whole::block_keys(&self.core.keys, &view)
                        .into_iter()
                        .map(|k| (k, "string")),
                );
                let req = probe::request(&keys);
                self.probing = Some((keys, Box::new(e)));
                Ok(Poll::Send(req))
            }
            other => other,
        }
    }
}
