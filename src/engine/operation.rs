//! A data operation whole: the mirror filled first (when enabled), the
//! data machine, then allocation ahead of need. Shared by the filter
//! handles' methods and idempotent batches.

use super::alloc::PreallocMachine;
use super::chain::{BestEffort, MachineExt, Ready};
use super::data::DataMachine;
use super::mirror::FillMachine;
use super::probe::probed;
use super::Core;
use crate::exec::Machine;
use crate::proto::script::{DataOp, Record};

/// Mirror fill (when enabled), the data operation (keeping its answers in
/// `record`, if given), then allocation ahead of need (best effort: the
/// writes allocate what they need anyway).
pub(crate) fn data<I>(
    core: &Core,
    op: DataOp,
    items: I,
    record: Option<Record>,
) -> impl Machine<Output = Vec<bool>> + Send
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
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
