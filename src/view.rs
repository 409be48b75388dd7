//! A filter as one operation sees it: the validated metadata plus the
//! policy of its kind. The engine asks the policy, never the kind, which
//! generations take part in an operation, what happens when the deciding
//! generation fills up, what to allocate ahead of need, and whether a
//! rotation is owed at `now`.

use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::metadata::{field, Common, Fields, Kind};
use crate::store::generation::{Generation, Layout};
use chrono::{DateTime, Utc};
use std::any::Any;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A generation's part in a data operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Only queried: frozen, so it may be mirrored in memory.
    Query,
    /// Written, and its old bits decide whether an item was new.
    Decide,
    /// Written with what the deciding generation accepted.
    Write,
}

/// A generation to be made: its sequence number, layout and capacity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct NewGen {
    pub seq: u64,
    pub layout: Layout,
    pub capacity: u64,
}

/// What a full deciding generation means.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Growth {
    /// Capacity is advisory: writes go on.
    Unbounded,
    /// Writes stop at capacity; then this generation is appended, or (Err)
    /// nothing more can be written, for the reason given.
    Capped(std::result::Result<NewGen, String>),
}

impl Growth {
    pub fn is_capped(&self) -> bool {
        matches!(self, Growth::Capped(_))
    }

    pub fn next(&self) -> Option<&NewGen> {
        match self {
            Growth::Capped(Ok(g)) => Some(g),
            _ => None,
        }
    }
}

/// One structural change, the only kind there is: drop the `drop` oldest
/// generations, append `add`, move the epoch by `add.len()`, rewrite the
/// fence; compare-and-set on the view's uid, epoch and clear count, and on
/// `expect`; `set` writes further fields in the same step.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Roll {
    pub drop: usize,
    pub add: Vec<NewGen>,
    pub expect: Vec<(&'static str, String)>,
    pub set: Vec<(&'static str, String)>,
    /// How many of `add` (from the first) to allocate before the roll; the
    /// others fill lazily. A module's generation must exist before use,
    /// so those are always all allocated.
    pub allocate: usize,
}

/// What a schedule owes at some instant.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Due {
    /// The filter has no schedule.
    Unscheduled,
    /// This period's rotation is done; the next one is due then.
    Later { next_at: DateTime<Utc> },
    /// `roll` performs the rotations owed.
    Owed {
        roll: Roll,
        rotations: u32,
        next_at: DateTime<Utc>,
    },
}

/// The behaviour of one kind of filter, decoded from its metadata.
pub(crate) trait Policy: fmt::Debug + Send + Sync + 'static {
    fn kind(&self) -> Kind;

    /// The kind's parameters in canonical text form: what create-or-open
    /// compares with what is asked for.
    fn params(&self) -> Vec<(&'static str, String)>;

    /// Each listed generation's part, oldest first.
    fn roles(&self, c: &Common) -> Vec<Role>;

    /// What a full deciding generation means.
    fn growth(&self, _c: &Common) -> Growth {
        Growth::Unbounded
    }

    /// The generation that will be made next, whose blocks may exist ahead
    /// of need.
    fn pending(&self, _c: &Common, growth: &Growth) -> Option<NewGen> {
        growth.next().copied()
    }

    /// With lazy rotation, the instant (ms) from which data operations must
    /// wait for the rotation.
    fn lazy_due_at(&self) -> Option<i64> {
        None
    }

    /// The rotations a schedule owes at `now`.
    fn due(&self, _c: &Common, _now: DateTime<Utc>) -> Result<Due> {
        Ok(Due::Unscheduled)
    }

    fn as_any(&self) -> &dyn Any;
}

/// How one kind decodes its parameters.
#[derive(Clone, Copy)]
pub(crate) struct Codec {
    pub kind: Kind,
    pub decode: fn(&Fields, &Common) -> Result<Arc<dyn Policy>>,
    /// How this kind takes over a full filter of another kind, in place
    /// (`when_full = expand`), if it can.
    pub absorb: Option<Absorb>,
}

/// A kind's in-place takeover of a full filter of kind `from`: `start`
/// gives the machine that converts it (or finds it converted) and returns
/// the new view, giving up after the handle's retry limit.
#[derive(Clone, Copy)]
pub(crate) struct Absorb {
    pub from: Kind,
    pub start: fn(&Keys, u32) -> Box<dyn crate::machine::Machine<Output = View> + Send>,
}

impl fmt::Debug for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Codec({})", self.kind)
    }
}

/// The kinds a handle accepts: its own, or (opening by name) any.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Accept {
    One(Codec),
    Any(&'static [Codec]),
}

impl Accept {
    /// The codecs accepted.
    pub fn codecs(&self) -> &[Codec] {
        match self {
            Accept::One(c) => std::slice::from_ref(c),
            Accept::Any(all) => all,
        }
    }

    fn codec(&self, name: &str, kind: Kind) -> Result<Codec> {
        let found = match self {
            Accept::One(c) => (c.kind == kind).then_some(*c),
            Accept::Any(all) => all.iter().copied().find(|c| c.kind == kind),
        };
        found.ok_or_else(|| Error::KindMismatch {
            name: name.to_string(),
            expected: match self {
                Accept::One(c) => c.kind.as_str(),
                Accept::Any(_) => "known",
            },
            found: kind.as_str().to_string(),
        })
    }
}

/// A validated snapshot of a filter. Every operation keeps the one it built
/// its request from and decodes the reply against it.
#[derive(Clone, Debug)]
pub(crate) struct View {
    common: Common,
    pub policy: Arc<dyn Policy>,
    /// Per generation, its part in data operations.
    pub roles: Vec<Role>,
    /// Per generation, its backend's policy, chosen from its scheme once,
    /// here.
    stores: Vec<&'static dyn crate::store::Store>,
    pub growth: Growth,
    /// The raw fields, for display only.
    pub fields: Fields,
}

impl Deref for View {
    type Target = Common;
    fn deref(&self) -> &Common {
        &self.common
    }
}

impl View {
    /// Decodes a metadata hash and the fence read with it.
    pub fn decode(
        fields: Fields,
        fence: Option<&[u8]>,
        fence_key: &str,
        accept: Accept,
    ) -> Result<View> {
        let common = Common::decode(&fields)?;
        let codec = accept.codec(&fields.name, common.kind)?;
        let policy = (codec.decode)(&fields, &common)?;
        if policy.kind() != common.kind {
            return Err(Error::Internal(format!(
                "the {} codec decoded a {} policy",
                common.kind,
                policy.kind()
            )));
        }
        let roles = policy.roles(&common);
        if roles.len() != common.gens.len() {
            return Err(Error::Internal(format!(
                "{} roles for {} generations",
                roles.len(),
                common.gens.len()
            )));
        }
        if let Some(fence) = fence {
            let want = common.token();
            if fence != want.as_bytes() {
                return Err(fields.corrupt(
                    "fence",
                    format!(
                        "{fence_key} holds {:.60?}, but the metadata says {want}",
                        String::from_utf8_lossy(fence)
                    ),
                ));
            }
        }
        let growth = policy.growth(&common);
        let stores = common.gens.iter().map(|g| g.layout.store()).collect();
        Ok(View {
            common,
            policy,
            roles,
            stores,
            growth,
            fields,
        })
    }

    /// Generation `g`'s backend policy.
    pub(crate) fn store(&self, g: usize) -> &'static dyn crate::store::Store {
        self.stores
            .get(g)
            .copied()
            .unwrap_or_else(crate::store::bitmap)
    }

    /// The generations with a role, by index into `gens`.
    pub fn with_role(&self, role: Role) -> impl Iterator<Item = usize> + '_ {
        self.roles
            .iter()
            .enumerate()
            .filter(move |(_, r)| **r == role)
            .map(|(i, _)| i)
    }

    pub fn pending(&self) -> Option<NewGen> {
        self.policy.pending(&self.common, &self.growth)
    }

    /// Checks that the stored parameters equal the requested ones; the first
    /// difference is an error naming the field.
    pub fn check_params(&self, requested: &[(&'static str, String)]) -> Result<()> {
        let stored = self.policy.params();
        for (f, want) in requested {
            let have = stored
                .iter()
                .find(|(k, _)| k == f)
                .map(|(_, v)| v.as_str())
                .unwrap_or("(unset)");
            if have != want {
                return Err(Error::ParameterMismatch {
                    name: self.name.clone(),
                    field: (*f).to_string(),
                    stored: have.to_string(),
                    requested: want.clone(),
                });
            }
        }
        Ok(())
    }

    /// Checks that generation `g`'s scheme is one of `allowed`.
    pub(crate) fn check_schemes(
        f: &Fields,
        c: &Common,
        allowed: impl Fn(usize, &Generation) -> bool,
    ) -> Result<()> {
        for (i, g) in c.gens.iter().enumerate() {
            if !allowed(i, g) {
                return Err(f.corrupt(
                    &field::gen(g.seq, field::G_SCHEME),
                    format!(
                        "{} is not allowed at position {i} of {} filter",
                        g.layout.scheme.as_str(),
                        c.kind.with_article()
                    ),
                ));
            }
        }
        Ok(())
    }
}
