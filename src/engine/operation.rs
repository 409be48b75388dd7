//! A data operation whole: the mirror filled first (when enabled), the
//! data machine, then allocation ahead of need. Shared by the filter
//! handles' methods and idempotent batches.

use super::alloc::PreallocMachine;
use super::chain::{Ask, BestEffort, MachineExt, Ready};
use super::data::DataMachine;
use super::info::InfoMachine;
use super::mirror::FillMachine;
use super::probe::probed;
use super::whole::{Which, WholeMachine};
use super::Core;
use crate::error::Error;
use crate::items::Items;
use crate::machine::Machine;
use crate::proto::count;
use crate::proto::script::{DataOp, Record};
use std::sync::Arc;

/// A handle's batch call: `items` copied in, the data operation whole
/// (see [`data`]), no record kept.
pub(crate) fn many<I>(core: &Core, op: DataOp, items: I) -> impl Machine<Output = Vec<bool>> + Send
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    data(core, op, Arc::new(Items::collect(items)), None)
}

/// Mirror fill (when enabled), the data operation on `items` (keeping its
/// answers in `record`, if given), then allocation ahead of need (best
/// effort: the writes allocate what they need anyway).
pub(crate) fn data(
    core: &Core,
    op: DataOp,
    items: Arc<Items>,
    record: Option<Record>,
) -> impl Machine<Output = Vec<bool>> + Send {
    let data = DataMachine::new(core.clone(), op, items);
    let data = match record {
        Some(r) => data.with_record(r),
        None => data,
    };
    let keys = core.keys.clone();
    let fill = FillMachine::new(core.clone()).then(move |()| {
        Ok(data.then(move |(out, ahead)| {
            let alloc: Box<dyn Machine<Output = ()> + Send> = match ahead {
                Some((gen, view)) => {
                    Box::new(BestEffort(PreallocMachine::new(&keys, &view, &[gen])))
                }
                None => Box::new(Ready(Some(()))),
            };
            Ok(alloc.map(move |()| Ok(out)))
        }))
    });
    probed(core, fill)
}

/// One item's answer.
pub(crate) fn one(
    core: &Core,
    op: DataOp,
    item: impl AsRef<[u8]>,
) -> impl Machine<Output = bool> + Send {
    many(core, op, [item]).map(|out| {
        out.first()
            .copied()
            .ok_or_else(|| Error::Internal("no answer for one item".into()))
    })
}

/// Distinct insertions, from a fresh view.
/// A generation that counts itself (a module) is asked its count.
pub(crate) fn count(core: &Core) -> impl Machine<Output = u64> + Send {
    let keys = core.keys.clone();
    super::load::reload(core).then(move |v| {
        let m: Box<dyn Machine<Output = u64> + Send> = match count::request(&keys, &v) {
            Some((req, gens)) => Box::new(Ask::new(req, move |replies| {
                count::decode(&keys, &v, &gens, replies)
            })),
            None => Box::new(Ready(Some(v.count()))),
        };
        Ok(m)
    })
}

/// Every generation emptied; a filter gone is [`Error::NotFound`].
pub(crate) fn clear(core: &Core) -> impl Machine<Output = ()> + Send {
    cleared(core, WholeMachine::new(core.clone(), Which::Clear))
}

/// A clear up to the count `n` (see [`WholeMachine::clear_to`]).
pub(crate) fn clear_to(core: &Core, n: u64) -> impl Machine<Output = ()> + Send {
    cleared(core, WholeMachine::clear_to(core.clone(), n))
}

/// A clear whose filter must be there.
fn cleared(core: &Core, m: WholeMachine) -> impl Machine<Output = ()> + Send {
    let name = core.name().to_string();
    let m = m.map(move |there| match there {
        true => Ok(()),
        false => Err(Error::NotFound { name }),
    });
    probed(core, m)
}

/// The drop script, then what it leaves: the blocks in the trash and
/// every key still under the name (records of idempotent batches...).
/// The leftovers are removed even when the filter was gone already: a
/// drop interrupted after its script is finished by the next one.
pub(crate) fn drop_filter(core: &Core) -> impl Machine<Output = bool> + Send {
    let keys = core.keys.clone();
    let m = WholeMachine::new(core.clone(), Which::Drop)
        .then(move |there| Ok(super::trash::leftovers(keys).map(move |_| Ok(there))));
    probed(core, m)
}

/// Parameters, fill and warnings of every generation.
pub(crate) fn info(core: &Core) -> impl Machine<Output = crate::info::Info> + Send {
    probed(core, InfoMachine::new(core.clone()))
}
