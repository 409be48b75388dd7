//! Create-or-open: reserve RedisBloom generations (if any), run the create
//! script, give back a lost race's reservations, allocate the new filter's
//! blocks.

use super::alloc::{ModuleMachine, PreallocMachine};
use super::chain::{BestEffort, MachineExt, Ready};
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
                // are not part of the filter. A won one: allocate its blocks
                // now, best effort, as every allocation ahead of need.
                let follow_up: Box<dyn Machine<Output = ()> + Send> = match how {
                    Opened::Existing => Box::new(ModuleMachine::undo(&k, &blocks)),
                    Opened::Created => Box::new(BestEffort(PreallocMachine::new(
                        &k,
                        &view,
                        &view
                            .gens
                            .iter()
                            .map(|g| NewGen {
                                seq: g.seq,
                                layout: g.layout,
                                capacity: g.capacity,
                            })
                            .collect::<Vec<_>>(),
                    ))),
                };
                Ok(follow_up
                    .then(move |()| Ok(Ready(Some((Core::new(k, view, accept, expect), how))))))
            }),
        )
    })
}
