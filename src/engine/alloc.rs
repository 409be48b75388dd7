//! Allocation ahead of need, and a module backend's reservations.

use crate::error::Result;
use crate::keys::Keys;
use crate::machine::{Machine, Poll};
use crate::proto::alloc::{blocks_of, prealloc_request, Block};
use crate::proto::{as_string, take_one};
use crate::request::{Replies, Request};
use crate::store::Store;
use crate::view::{NewGen, View};

/// Grows blocks to their full size, one call per round trip, so Redis never
/// allocates a large string inside a data script and other clients' commands
/// run between the allocations. Stops when the view it was built from is no
/// longer current (the filter moved on).
pub(crate) struct PreallocMachine {
    keys: Keys,
    uid: String,
    epoch: u64,
    blocks: std::vec::IntoIter<Block>,
}

impl PreallocMachine {
    pub fn new(keys: &Keys, view: &View, gens: &[NewGen]) -> PreallocMachine {
        PreallocMachine {
            keys: keys.clone(),
            uid: view.uid.clone(),
            epoch: view.epoch,
            blocks: blocks_of(keys, &view.uid, gens).into_iter(),
        }
    }
}

impl Machine for PreallocMachine {
    type Output = ();

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<()>> {
        if replies.is_some() && as_string(&take_one(replies)??).as_deref() == Some("STALE") {
            return Ok(Poll::Ready(()));
        }
        match self.blocks.next() {
            None => Ok(Poll::Ready(())),
            Some(b) => Ok(Poll::Send(prealloc_request(
                &self.keys, &self.uid, self.epoch, &b,
            ))),
        }
    }
}

/// Sends a fixed list of commands in one round trip (nothing when the list
/// is empty); an error that one of `stores` reads as its module missing
/// is [`Error::ModuleMissing`].
#[derive(Clone)]
pub(crate) struct ModuleMachine {
    name: String,
    cmds: Vec<redis::Cmd>,
    stores: Vec<&'static dyn Store>,
    sent: bool,
}

impl ModuleMachine {
    fn new(keys: &Keys, cmds: Vec<redis::Cmd>, stores: Vec<&'static dyn Store>) -> ModuleMachine {
        ModuleMachine {
            name: keys.name().to_string(),
            cmds,
            stores,
            sent: false,
        }
    }

    /// Deletes the given blocks (a creation that lost its race or failed).
    pub fn unlink(keys: &Keys, blocks: &[Block]) -> ModuleMachine {
        ModuleMachine::new(keys, crate::proto::alloc::unlink(blocks), Vec::new())
    }

    /// Checks that a filter whose generations need a module has it.
    pub fn probe(keys: &Keys, view: &View) -> ModuleMachine {
        let probe = view.gens.iter().find_map(|g| {
            let store = g.layout.store();
            store
                .presence_probe(&keys.block(&view.uid, g.seq, 0))
                .map(|cmd| (cmd, store))
        });
        match probe {
            Some((cmd, store)) => ModuleMachine::new(keys, vec![cmd], vec![store]),
            None => ModuleMachine::new(keys, Vec::new(), Vec::new()),
        }
    }
}

impl Machine for ModuleMachine {
    type Output = ();

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<()>> {
        if !self.sent {
            self.sent = true;
            if self.cmds.is_empty() {
                return Ok(Poll::Ready(()));
            }
            let mut req = Request::new();
            for c in self.cmds.drain(..) {
                req.push(c, None);
            }
            return Ok(Poll::Send(req));
        }
        for r in replies.unwrap_or_default() {
            if let Err(e) = r {
                let stores = self.stores.iter().copied();
                return Err(crate::store::missing_module(&self.name, stores, e.into()));
            }
        }
        Ok(Poll::Ready(()))
    }
}
