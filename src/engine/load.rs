//! Loading a view (one round trip), and opening a handle on it.

use super::alloc::ModuleMachine;
use super::chain::MachineExt;
use super::Core;
use crate::error::Result;
use crate::keys::Keys;
use crate::machine::{Machine, Poll};
use crate::proto::{load, take_one};
use crate::request::Replies;
use crate::view::{Accept, View};

/// Reads the metadata hash and the fence into a validated view.
pub(crate) struct LoadMachine {
    keys: Keys,
    accept: Accept,
    sent: bool,
}

impl LoadMachine {
    pub fn new(keys: Keys, accept: Accept) -> LoadMachine {
        LoadMachine {
            keys,
            accept,
            sent: false,
        }
    }
}

impl Machine for LoadMachine {
    type Output = View;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<View>> {
        if !self.sent {
            self.sent = true;
            return Ok(Poll::Send(load::request(&self.keys)));
        }
        load::decode(&self.keys, self.accept, take_one(replies)?).map(Poll::Ready)
    }
}

/// Opens an existing filter: load, then (a filter whose store needs a module) check
/// that the module is there.
pub(crate) fn open(name: &str, accept: Accept) -> Result<impl Machine<Output = Core>> {
    let keys = Keys::new(crate::keys::FilterName::existing(name)?);
    Ok(LoadMachine::new(keys.clone(), accept).then(move |view| {
        let probe = ModuleMachine::probe(&keys, &view);
        Ok(probe.map(move |()| Ok(Core::new(keys, view, accept))))
    }))
}

/// Reloads a handle's view and publishes it: the filter of the instance
/// the handle opened, or an error.
pub(crate) fn reload(core: &Core) -> ReloadMachine {
    ReloadMachine {
        core: core.clone(),
        sent: false,
    }
}

/// See [`reload`].
pub(crate) struct ReloadMachine {
    core: Core,
    sent: bool,
}

impl Machine for ReloadMachine {
    type Output = std::sync::Arc<View>;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Self::Output>> {
        if !self.sent {
            self.sent = true;
            return Ok(Poll::Send(load::request(&self.core.keys)));
        }
        self.core.reloaded(take_one(replies)?).map(Poll::Ready)
    }
}
