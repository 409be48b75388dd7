//! Creating and dropping a sharded filter (docs/FORMAT.md §11.4): claim
//! the name, create the shards, publish; undo everything on a failure;
//! clean a creation abandoned past its deadline.

use super::build::ShardableBuilder;
use super::placement::{self, Master};
use super::root_io::{ask, cluster_masters};
use super::ShardedFilter;
use crate::error::{Error, Result};
use crate::handle::{Filter, FilterKind};
use crate::keys::{FilterName, Keys};
use crate::proto::create::Opened;
use crate::proto::shard::root::{check_root, Root, State};
use crate::proto::shard::script::{self, Claim};
use std::sync::Arc;
use std::time::Duration;

/// How long a creation may take before another creator may clean it up.
pub const DEFAULT_CREATE_LEASE: Duration = Duration::from_secs(600);

/// A kind's builder with a number of shards: see
/// [`BloomBuilder::shards`](crate::BloomBuilder::shards).
#[derive(Clone, Debug)]
#[must_use]
pub struct ShardedBuilder<B> {
    builder: B,
    shards: u32,
    lease: Duration,
}

fn random_tag() -> u32 {
    getrandom::u32().unwrap_or_else(|_| {
        u32::from_str_radix(&crate::uid::new_uid()[..8], 16).unwrap_or_default()
    })
}

fn mismatch(name: &str, field: &str, stored: impl ToString, requested: impl ToString) -> Error {
    Error::ParameterMismatch {
        name: name.to_string(),
        field: field.to_string(),
        stored: stored.to_string(),
        requested: requested.to_string(),
    }
}

/// Drops every listed shard: a readable one as a filter; one whose
/// metadata is unreadable or gone by what is left under its name (its
/// fence and blocks survive a deleted metadata hash, and nothing else
/// would ever find them).
fn drop_shards<C: redis::ConnectionLike + ?Sized>(conn: &mut C, root: &Root) -> Result<()> {
    for sub in &root.shards {
        drop_shard(conn, sub)?;
    }
    Ok(())
}

/// Drops shard `name`, readable or not (see [`drop_shards`]).
pub(crate) fn drop_shard<C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    name: &str,
) -> Result<()> {
    match crate::any::AnyFilter::open(conn, name) {
        Ok(f) => f.drop(conn).map(|_| ()),
        Err(_) => crate::any::AnyFilter::drop_unreadable(conn, name).map(|_| ()),
    }
}

/// Drops a sharded filter: marks the root `dropping`, drops the shards,
/// deletes the root. A drop that died half-way is finished.
pub(crate) fn drop_root<C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    root: &Root,
) -> Result<bool> {
    let meta = Keys::new(FilterName::existing(&root.name)?)
        .meta()
        .to_string();
    let moved = |r| script::decode_moved(&meta, r);
    let mark = script::transition(&meta, &root.uid, None, Some(State::Dropping));
    if !ask(conn, mark, None, moved)? {
        return Ok(false);
    }
    drop_shards(conn, root)?;
    let delete = script::transition(&meta, &root.uid, Some(State::Dropping), None);
    ask(conn, delete, None, moved)?;
    Ok(true)
}

/// What a sharded creation makes, whatever describes its shards: see
/// [`ShardedFilter::create_or_open_with`].
#[derive(Clone, Debug)]
pub struct ShardPlan {
    /// The filter's name.
    pub name: String,
    /// Number of shards, 2 to [`MAX_SHARDS`](crate::MAX_SHARDS).
    pub shards: u32,
    /// The kind of every shard.
    pub kind: crate::metadata::Kind,
    /// The whole filter's capacity (recorded in the root, compared when
    /// the filter exists).
    pub capacity: u64,
    /// How long the creation may take before the next creator counts it
    /// as abandoned and cleans it up.
    pub lease: Duration,
}

impl ShardPlan {
    /// A new root of the plan, `creating`, its shards placed on `masters`.
    pub(crate) fn root(&self, masters: &[Master]) -> Root {
        Root {
            name: self.name.clone(),
            uid: crate::uid::new_uid(),
            shards: placement::place(&self.name, self.shards, masters, random_tag),
            kind: self.kind,
            capacity: self.capacity,
            state: State::Creating,
            deadline: None,
            created_at: None,
            targets: Default::default(),
        }
    }

    /// The claim of `root` on `meta`, for the plan's lease.
    pub(crate) fn claim(&self, meta: &str, root: &Root) -> crate::request::Request {
        let lease_ms = u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX);
        script::claim(meta, root, lease_ms)
    }
}

impl<B: ShardableBuilder> ShardedBuilder<B> {
    pub(crate) fn new(builder: B, shards: u32) -> Self {
        ShardedBuilder {
            builder,
            shards,
            lease: DEFAULT_CREATE_LEASE,
        }
    }

    /// How long a creation may take before the next creator counts it as
    /// abandoned and cleans it up (default 10 minutes).
    pub fn create_lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Creates the filter, or opens it when it exists with the same kind,
    /// shard count and parameters. All or nothing: a failure while the
    /// shards are created (a master out of memory) drops the ones made
    /// and the root, and returns the error.
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        self,
        conn: &mut C,
    ) -> Result<ShardedFilter<B::Kind>> {
        if self.shards == 1 {
            return self
                .builder
                .create(conn)
                .map(|(f, _)| ShardedFilter::single(f));
        }
        // Refuse bad parameters before anything is written.
        let name = self.builder.filter_name().to_string();
        let (_, capacity) = self.builder.shard_builder(&name, self.shards)?;
        let plan = ShardPlan {
            name,
            shards: self.shards,
            kind: B::KIND,
            capacity,
            lease: self.lease,
        };
        let builder = &self.builder;
        ShardedFilter::create_or_open_with(conn, &plan, |conn, sub| {
            builder
                .shard_builder(sub, plan.shards)
                .and_then(|(b, _)| b.create(conn))
        })
        .map(|(f, _)| f)
    }
}

impl<K: FilterKind> ShardedFilter<K> {
    /// Creates the sharded filter `plan` describes, each shard by `make`
    /// (given a connection and the shard's name, it creates or opens that
    /// filter, sized for `ceil(capacity / shards)` items), or opens it
    /// when it exists with the same kind, shard count and capacity, every
    /// shard passed to `make` to compare its parameters. All or nothing,
    /// as [`ShardedBuilder::create_or_open`]. For code that describes
    /// filters its own way (a configuration file); builders have
    /// [`shards`](crate::BloomBuilder::shards). Also says whether this
    /// call created it.
    pub fn create_or_open_with<C, F>(
        conn: &mut C,
        plan: &ShardPlan,
        mut make: F,
    ) -> Result<(Self, Opened)>
    where
        C: redis::ConnectionLike + ?Sized,
        F: FnMut(&mut C, &str) -> Result<(Filter<K>, Opened)>,
    {
        let name = plan.name.clone();
        let fname = check_root(&name, plan.shards)?;
        let meta = Keys::new(fname).meta().to_string();
        for _attempt in 0..3 {
            let root = plan.root(&cluster_masters(conn)?);
            let claim = plan.claim(&meta, &root);
            match ask(conn, claim, None, |r| script::decode_claim(&meta, r))? {
                Claim::Claimed => {
                    return build(conn, &meta, root, &mut make).map(|f| (f, Opened::Created))
                }
                Claim::Exists { now_ms, fields } => {
                    if !Root::is_root(&fields) {
                        return Err(mismatch(&name, "shards", 1, plan.shards));
                    }
                    let found = Root::decode(&name, &fields)?;
                    match found.state {
                        State::Ready => {
                            return open_existing(conn, plan, found, &mut make)
                                .map(|f| (f, Opened::Existing))
                        }
                        State::Creating if found.deadline.is_some_and(|d| now_ms > d) => {
                            // Abandoned: §11.4 says the next creator cleans.
                            drop_shards(conn, &found)?;
                            let undo =
                                script::transition(&meta, &found.uid, Some(State::Creating), None);
                            ask(conn, undo, None, |r| script::decode_moved(&meta, r))?;
                        }
                        state => return Err(super::open::busy(&name, state)),
                    }
                }
            }
        }
        Err(Error::Contention { name, retries: 3 })
    }
}

/// Creates the shards of a claimed root, then publishes it; undoes
/// everything on a failure.
fn build<C, K, F>(conn: &mut C, meta: &str, root: Root, make: &mut F) -> Result<ShardedFilter<K>>
where
    C: redis::ConnectionLike + ?Sized,
    K: FilterKind,
    F: FnMut(&mut C, &str) -> Result<(Filter<K>, Opened)>,
{
    let mut made = Vec::with_capacity(root.shards.len());
    let mut failure = None;
    for sub in &root.shards {
        match make(conn, sub) {
            Ok((f, Opened::Created)) => made.push(f),
            // A random tag met a filter of that name: not ours.
            Ok((_, Opened::Existing)) => {
                failure = Some(Error::AlreadyExists { name: sub.clone() });
                break;
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    if failure.is_none() {
        let publish =
            script::transition(meta, &root.uid, Some(State::Creating), Some(State::Ready));
        if ask(conn, publish, None, |r| script::decode_moved(meta, r))? {
            return Ok(ShardedFilter::from_parts(
                root.name.clone(),
                Some(Arc::new(Root {
                    state: State::Ready,
                    ..root
                })),
                made,
            ));
        }
        // Our lease ran out and another creator cleaned up.
        failure = Some(Error::Contention {
            name: root.name.clone(),
            retries: 0,
        });
    }
    for f in &made {
        f.drop(conn)?;
    }
    let undo = script::transition(meta, &root.uid, Some(State::Creating), None);
    ask(conn, undo, None, |r| script::decode_moved(meta, r))?;
    Err(failure.unwrap_or_else(|| Error::Internal("sharded create failed".into())))
}

/// Opens an existing sharded filter after checking that it is the one
/// asked for: kind, shard count, capacity, and every shard's parameters
/// (`make` creates-or-opens each, comparing them).
fn open_existing<C, K, F>(
    conn: &mut C,
    plan: &ShardPlan,
    found: Root,
    make: &mut F,
) -> Result<ShardedFilter<K>>
where
    C: redis::ConnectionLike + ?Sized,
    K: FilterKind,
    F: FnMut(&mut C, &str) -> Result<(Filter<K>, Opened)>,
{
    let name = found.name.clone();
    if found.kind != plan.kind {
        return Err(Error::KindMismatch {
            name,
            expected: plan.kind.as_str(),
            found: found.kind.as_str().to_string(),
        });
    }
    if found.shards.len() != plan.shards as usize {
        return Err(mismatch(&name, "shards", found.shards.len(), plan.shards));
    }
    if found.capacity != plan.capacity {
        return Err(mismatch(&name, "capacity", found.capacity, plan.capacity));
    }
    let opened = ShardedFilter::<K>::open(conn, &name)?;
    for sub in &found.shards {
        make(conn, sub)?;
    }
    Ok(opened)
}
