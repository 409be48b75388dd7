//! Converting a filter in place into another kind (a full base filter into
//! generation 0 of an expanding filter) is a roll that adds and drops no
//! generation: it expects the old `kind` and sets the new one with the new
//! kind's parameters, and, as every roll, bumps the epoch (by 1) so that
//! handles of the old kind find their view stale. The kind supplies only
//! the [`Plan`]; loading, fencing, retrying and settling are the roll's.

use super::chain::MachineExt;
use super::load::LoadMachine;
use super::roll::{Decide, RollMachine, Step};
use super::Core;
use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::machine::Machine;
use crate::metadata::{field, Kind};
use crate::view::{Accept, Codec, Roll, View};
use chrono::{DateTime, Utc};

/// What a filter calls for, as a kind's plan sees it.
pub(crate) enum Conversion {
    /// It already is what the conversion makes.
    Done,
    /// It is of kind `from`: it becomes a filter of `to`'s kind with
    /// these parameters.
    Set {
        from: Kind,
        to: Codec,
        fields: Vec<(&'static str, String)>,
    },
}

/// A kind's policy for converting a filter into it.
pub(crate) trait Plan: Send {
    fn plan(&mut self, view: &View) -> Result<Conversion>;
}

/// Converts the filter under `keys`, reading it as one of `accept` (the
/// kind it is converted from and the kind it becomes), giving up after
/// `max_retries` reloads that found it changed and still to convert.
pub(crate) fn convert<P: Plan>(
    keys: Keys,
    accept: Accept,
    plan: P,
    max_retries: u32,
) -> impl Machine<Output = View> + Send {
    LoadMachine::new(keys.clone(), accept).then(move |view| {
        // A core of its own: the handle that asks may read only the old
        // kind, and the conversion reads both.
        let mut core = Core::new(keys, view, accept);
        core.max_retries = max_retries;
        Ok(RollMachine::new(core, Convert { plan }))
    })
}

/// The roll's decision for a conversion: what the plan asks for.
pub(crate) struct Convert<P> {
    plan: P,
}

impl<P: Plan> Decide for Convert<P> {
    type Output = View;

    fn decide(&mut self, view: &View, _: Option<DateTime<Utc>>) -> Result<Step<View>> {
        let (from, to, fields) = match self.plan.plan(view)? {
            Conversion::Done => return Ok(Step::Done(view.clone())),
            Conversion::Set { from, to, fields } => (from, to, fields),
        };
        let mut set = vec![(field::KIND, to.kind.as_str().to_string())];
        set.extend(fields);
        readable_after(view, to, &set)?;
        Ok(Step::Roll(Roll {
            drop: 0,
            add: Vec::new(),
            expect: vec![(field::KIND, from.as_str().to_string())],
            set,
            allocate: 0,
        }))
    }

    /// Converted by this call or another, or changed meanwhile: the plan
    /// says whether anything is left to do.
    fn settle(&mut self, view: &View, _: bool) -> Result<Option<View>> {
        Ok(match self.plan.plan(view)? {
            Conversion::Done => Some(view.clone()),
            Conversion::Set { .. } => None,
        })
    }
}

/// What the filter will say once `set` is written must read back as `to`'s
/// kind: checked before anything is written, so a conversion never leaves
/// a filter nobody can open.
fn readable_after(view: &View, to: Codec, set: &[(&'static str, String)]) -> Result<()> {
    let mut after = view.fields.clone();
    for (f, v) in set {
        after.raw.insert((*f).into(), v.clone().into_bytes());
    }
    View::decode(after, None, "", Accept::One(to)).map_err(|e| {
        Error::Internal(format!(
            "converting filter {:?} would leave metadata that cannot be read ({e}); nothing was written",
            view.name
        ))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Poll;
    use crate::request::{Replies, Request};
    use crate::testkit::{fields, keys};
    use redis::Value;

    /// Converts a base filter into an expanding one with `fields`.
    struct ToExpanding(Vec<(&'static str, String)>);

    impl Plan for ToExpanding {
        fn plan(&mut self, view: &View) -> Result<Conversion> {
            if view.kind == Kind::Expanding {
                return Ok(Conversion::Done);
            }
            Ok(Conversion::Set {
                from: Kind::Bloom,
                to: crate::expanding::CODEC,
                fields: self.0.clone(),
            })
        }
    }

    /// The parameters an expanding filter has beyond a base one's, with
    /// the test fixture's values.
    fn expanding_params() -> Vec<(&'static str, String)> {
        let raw = fields("expanding", 1, 0).raw;
        [
            "growth",
            "tightening",
            "max_generations",
            "max_bytes",
            "max_bits",
            "max_block_bits",
        ]
        .into_iter()
        .map(|f| (f, String::from_utf8_lossy(&raw[f]).into_owned()))
        .collect()
    }

    /// The load script's reply for a one-generation filter of `kind`.
    fn loaded(kind: &str, epoch: u64) -> Option<Replies> {
        let hash = fields(kind, 1, epoch)
            .raw
            .into_iter()
            .flat_map(|(k, v)| [Value::BulkString(k.into_bytes()), Value::BulkString(v)])
            .collect();
        Some(vec![Ok(Value::Array(vec![
            Value::BulkString(b"hash".to_vec()),
            Value::Array(hash),
            Value::Nil,
        ]))])
    }

    fn word(w: &str) -> Option<Replies> {
        Some(vec![Ok(Value::BulkString(w.as_bytes().to_vec()))])
    }

    fn sent<T>(p: Result<Poll<T>>) -> Request {
        match p {
            Ok(Poll::Send(req)) => req,
            Ok(Poll::Ready(_)) => panic!("expected a request, the machine was done"),
            Err(e) => panic!("expected a request: {e}"),
        }
    }

    fn machine(max_retries: u32) -> impl Machine<Output = View> {
        convert(
            keys("t"),
            Accept::Any(crate::testkit::ALL),
            ToExpanding(expanding_params()),
            max_retries,
        )
    }

    #[test]
    fn a_conversion_is_a_roll_that_expects_the_old_kind_and_bumps_the_epoch_by_one() {
        let mut m = machine(3);
        sent(m.step(None));
        let roll = sent(m.step(loaded("bloom", 4)));
        let args = roll.args(0);
        assert_eq!(args[0], "EVALSHA");
        assert_eq!(args[1], crate::scripts::ROLL.sha());
        // meta, fence, trash and no block key; uid, epoch, cleared, then
        // the new epoch, gens and next_seq unchanged.
        assert_eq!(args[2], "3");
        assert_eq!(&args[6..12], ["0123456789abcdef", "4", "0", "5", "4", "5"]);
        // Expects kind bloom; drops and adds nothing.
        assert_eq!(&args[12..17], ["1", "kind", "bloom", "0", "0"]);
        // Sets the kind first, then the plan's fields.
        let params = expanding_params();
        assert_eq!(args[17], (1 + params.len()).to_string());
        assert_eq!(&args[18..20], ["kind", "expanding"]);
        let set: Vec<String> = params
            .iter()
            .flat_map(|(f, v)| [f.to_string(), v.clone()])
            .collect();
        assert_eq!(&args[20..], set.as_slice());
    }

    #[test]
    fn a_stale_conversion_reloads_and_converts_again() {
        let mut m = machine(3);
        sent(m.step(None));
        sent(m.step(loaded("bloom", 4)));
        // Another writer changed the filter meanwhile (its epoch moved).
        let reload = sent(m.step(word("STALE")));
        assert_eq!(reload.args(0)[1], crate::scripts::LOAD.sha());
        let again = sent(m.step(loaded("bloom", 5)));
        assert_eq!(again.args(0)[7], "5");
        assert_eq!(again.args(0)[9], "6");
        // Converted: the dropped blocks' list is emptied (nothing there),
        // then the filter reloaded and found converted.
        let trash = sent(m.step(word("OK")));
        assert_eq!(trash.args(0)[0], "LINDEX");
        sent(m.step(Some(vec![Ok(Value::Nil)])));
        match m.step(loaded("expanding", 6)) {
            Ok(Poll::Ready(view)) => {
                assert_eq!(view.kind, Kind::Expanding);
                assert_eq!(view.epoch, 6);
            }
            _ => panic!("expected the converted view"),
        }
    }

    #[test]
    fn a_filter_that_keeps_changing_is_contention_after_max_retries() {
        let mut m = machine(2);
        sent(m.step(None));
        sent(m.step(loaded("bloom", 0)));
        let mut epoch = 0;
        let err = loop {
            sent(m.step(word("STALE")));
            epoch += 1;
            match m.step(loaded("bloom", epoch)) {
                Ok(Poll::Send(_)) => assert!(epoch <= 2, "still rolling after {epoch} reloads"),
                Ok(Poll::Ready(_)) => panic!("a filter never converted was reported converted"),
                Err(e) => break e,
            }
        };
        assert_eq!(epoch, 3);
        assert!(
            matches!(err, Error::Contention { retries: 3, ref name } if name == "t"),
            "{err:?}"
        );
    }

    #[test]
    fn a_filter_already_converted_is_opened_without_writing() {
        let mut m = machine(0);
        sent(m.step(None));
        assert!(matches!(
            m.step(loaded("expanding", 2)),
            Ok(Poll::Ready(v)) if v.kind == Kind::Expanding
        ));
    }

    #[test]
    fn a_plan_that_would_leave_unreadable_metadata_writes_nothing() {
        let mut params = expanding_params();
        params.retain(|(f, _)| *f != "growth");
        let mut m = convert(
            keys("t"),
            Accept::Any(crate::testkit::ALL),
            ToExpanding(params),
            3,
        );
        sent(m.step(None));
        assert!(matches!(
            m.step(loaded("bloom", 0)),
            Err(Error::Internal(ref e)) if e.contains("nothing was written")
        ));
    }
}
