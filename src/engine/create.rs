//! Create-or-open: allocate the new instance's blocks (bitmaps and
//! module generations alike), run the create script, give back a lost
//! race's or a failure's blocks.

use super::alloc::ModuleMachine;
use super::chain::{MachineExt, MapErr, Ready};
use super::Core;
use crate::error::Result;
use crate::keys::Keys;
use crate::machine::{Machine, Poll};
use crate::proto::alloc::{blocks_of, Block};
use crate::proto::create::{self, Blueprint, Opened};
use crate::proto::take_one;
use crate::request::Replies;
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
        .filter(|(_, (layout, capacity))| layout.store().alloc(layout, *capacity).is_some())
        .map(|(seq, (layout, capacity))| NewGen {
            seq: seq as u64,
            layout: *layout,
            capacity: *capacity,
        })
        .collect()
}

/// Allocates the blocks of a new instance before the create script lists
/// them, one command per round trip (other clients' commands run between
/// them), each with a lease that the create script ends. The keys carry
/// this attempt's fresh uid, which no other client knows until the create
/// script publishes it, so no compare-and-set is needed; a filter is never
/// visible with a block not made yet; and an attempt that dies halfway
/// leaves nothing that outlives its lease.
struct AllocNew {
    blocks: std::vec::IntoIter<Block>,
    sent: bool,
}

impl Machine for AllocNew {
    type Output = ();

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<()>> {
        if self.sent {
            let reply = take_one(replies)??;
            if crate::proto::as_string(&reply).as_deref() == Some("EXISTS") {
                // A key of a uid nobody published: not this attempt's to
                // write over.
                return Err(crate::error::Error::Internal(
                    "a block key of a new filter instance exists already".into(),
                ));
            }
        }
        let Some(b) = self.blocks.next() else {
            return Ok(Poll::Ready(()));
        };
        self.sent = true;
        Ok(Poll::Send(crate::proto::alloc::alloc_new_request(&b)))
    }
}

/// Deletes what `AllocNew` made (all of it: a lost race or a failure).
fn undo(keys: &Keys, blocks: &[Block]) -> ModuleMachine {
    ModuleMachine::unlink(keys, blocks)
}

/// A refusal for memory as [`Error::OutOfMemory`](crate::Error::OutOfMemory),
/// other errors as they are.
pub(crate) fn out_of_memory(name: &str, bytes: u64, e: crate::error::Error) -> crate::error::Error {
    match &e {
        crate::error::Error::Redis(r) if r.inner().code() == Some("OOM") => {
            crate::error::Error::OutOfMemory {
                name: name.to_string(),
                bytes,
                message: r.inner().detail().unwrap_or("out of memory").to_string(),
            }
        }
        _ => e,
    }
}

/// Creates the filter whole (every block of every generation rotabloom
/// makes exists before the metadata lists it), or opens the existing one;
/// a failure or a lost race leaves nothing of this attempt behind.
pub(crate) fn create_whole(
    keys: Keys,
    accept: Accept,
    bp: Blueprint,
) -> impl Machine<Output = (View, Opened)> + Send {
    let blocks = blocks_of(&keys, &bp.uid, &initial(&bp));
    let bytes: u64 = initial(&bp)
        .iter()
        .map(|g| g.layout.bytes())
        .fold(0, u64::saturating_add);
    let name = keys.name().to_string();
    let stores: Vec<_> = initial(&bp).iter().map(|g| g.layout.store()).collect();
    let k = keys.clone();
    let alloc = MapErr::new(
        AllocNew {
            blocks: blocks.clone().into_iter(),
            sent: false,
        },
        move |e| {
            let stores = stores.iter().copied();
            out_of_memory(&name, bytes, crate::store::missing_module(&name, stores, e))
        },
    );
    let mut bp = bp;
    bp.leased = blocks.iter().map(|b| b.key.clone()).collect();
    let made = alloc.then(move |()| Ok(CreateMachine::new(k, accept, bp)));
    let gone = blocks.clone();
    let undo_keys = keys.clone();
    made.or_undo(undo(&keys, &blocks)).then(move |(view, how)| {
        // A lost race: the blocks made for this attempt's uid are not part
        // of the filter.
        let after: Box<dyn Machine<Output = ()> + Send> = match how {
            Opened::Existing => Box::new(undo(&undo_keys, &gone)),
            Opened::Created => Box::new(Ready(Some(()))),
        };
        Ok(after.map(move |()| Ok((view, how))))
    })
}

/// The whole create-or-open.
pub(crate) fn create_or_open(
    keys: Keys,
    accept: Accept,
    bp: Blueprint,
) -> impl Machine<Output = (Core, Opened)> + Send {
    let k = keys.clone();
    create_whole(keys, accept, bp).map(move |(view, how)| Ok((Core::new(k, view, accept), how)))
}
