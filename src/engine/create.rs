//! Create-or-open: reserve RedisBloom generations (if any), run the create
//! script, give back a lost race's reservations, allocate the new filter's
//! blocks.

use super::alloc::{ModuleMachine, PreallocMachine};
use super::chain::{MachineExt, MapErr, Ready};
use super::whole::{Which, WholeMachine};
use super::Core;
use crate::error::Result;
use crate::exec::{Machine, Poll, Replies};
use crate::keys::Keys;
use crate::proto::alloc::blocks_of;
use crate::proto::create::{self, Blueprint, Opened};
use crate::proto::take_one;
use crate::view::{Accept, NewGen, View};

/// The create script alone.
pub(crate) struct CreateMachine {
    keys: Keys,
    accept: Accept,
    bp: Blueprint,
    sent: bool,
}

impl CreateMachine {
    pub fn new(keys: Keys, accept: Accept, bp: Blueprint) -> CreateMachine {
        CreateMachine {
            keys,
            accept,
            bp,
            sent: false,
        }
    }
}

impl Machine for CreateMachine {
    type Output = (View, Opened);

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<(View, Opened)>> {
        if !self.sent {
            self.sent = true;
            return Ok(Poll::Send(create::request(&self.keys, &self.bp)));
        }
        create::decode(&self.keys, self.accept, &self.bp, take_one(replies)?).map(Poll::Ready)
    }
}

fn initial(bp: &Blueprint) -> Vec<NewGen> {
    bp.gens
        .iter()
        .enumerate()
        .map(|(seq, (layout, capacity))| NewGen {
            seq: seq as u64,
            layout: *layout,
            capacity: *capacity,
        })
        .collect()
}

/// Every block of every generation rotabloom made in a new filter (not an
/// adopted legacy one, which keeps what its crawler wrote), or the filter
/// dropped again and the error (a refusal for memory said so, with the size
/// asked).
pub(crate) fn allocate_all(core: &Core) -> impl Machine<Output = ()> + Send {
    let view = core.view();
    let gens: Vec<NewGen> = view
        .gens
        .iter()
        .filter(|g| g.layout.scheme.always_allocated())
        .map(|g| NewGen {
            seq: g.seq,
            layout: g.layout,
            capacity: g.capacity,
        })
        .collect();
    let bytes: u64 = gens
        .iter()
        .map(|g| g.layout.bytes())
        .fold(0, u64::saturating_add);
    let name = core.name().to_string();
    let alloc = MapErr::new(PreallocMachine::new(&core.keys, &view, &gens), move |e| {
        out_of_memory(&name, bytes, e)
    });
    alloc.or_undo(WholeMachine::new(core.clone(), Which::Drop))
}

/// A refusal for memory as [`Error::OutOfMemory`](crate::Error::OutOfMemory),
/// other errors as they are.
pub(crate) fn out_of_memory(name: &str, bytes: u64, e: crate::Error) -> crate::Error {
    match &e {
        crate::Error::Redis(r) if r.inner().code() == Some("OOM") => crate::Error::OutOfMemory {
            name: name.to_string(),
            bytes,
            message: r.inner().detail().unwrap_or("out of memory").to_string(),
        },
        _ => e,
    }
}

/// The whole create-or-open.
pub(crate) fn create_or_open(
    keys: Keys,
    accept: Accept,
    bp: Blueprint,
) -> impl Machine<Output = (Core, Opened)> {
    let blocks = blocks_of(&keys, &bp.uid, &initial(&bp));
    let expect = bp.params.clone();
    let k = keys.clone();
    ModuleMachine::reserve(&keys, &blocks).then(move |()| {
        Ok(
            CreateMachine::new(k.clone(), accept, bp).then(move |(view, how)| {
                // A lost race: the generations reserved for this attempt's uid
                // are not part of the filter. A won one: allocate every block
                // now, or remove the filter again: a block missing later is
                // lost data, never a block not made yet.
                let core = Core::new(k.clone(), view, accept, expect);
                let follow_up: Box<dyn Machine<Output = ()> + Send> = match how {
                    Opened::Existing => Box::new(ModuleMachine::undo(&k, &blocks)),
                    Opened::Created => Box::new(allocate_all(&core)),
                };
                Ok(follow_up.then(move |()| Ok(Ready(Some((core, how))))))
            }),
        )
    })
}
