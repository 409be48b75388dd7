//! The state machines of every operation, and the state a handle shares
//! with its clones. Pure: machines build requests through `proto` and
//! decode replies against the view they started from; `exec` runs them.
//! Nothing here names a kind of filter: each kind's policy answers.

pub(crate) mod adopt;
pub(crate) mod alloc;
pub(crate) mod chain;
pub(crate) mod convert;
pub(crate) mod create;
pub(crate) mod data;
pub(crate) mod dump;
pub(crate) mod fullness;
pub(crate) mod info;
pub(crate) mod load;
pub(crate) mod memory;
pub(crate) mod mirror;
pub(crate) mod now;
pub(crate) mod operation;
pub(crate) mod plan;
pub(crate) mod probe;
pub(crate) mod roll;
pub(crate) mod trash;
pub(crate) mod whole;

use crate::cache::FrozenCache;
use crate::clock::{Clock, ServerClock};
use crate::error::Result;
use crate::keys::Keys;
use crate::view::{Accept, View};
use std::sync::Arc;

/// Consecutive reloads without progress before giving up with
/// [`Error::Contention`](crate::Error::Contention).
pub(crate) const DEFAULT_MAX_RETRIES: u32 = 32;

/// What a handle shares with its clones: key names, the latest view (a
/// cache for the next operation; every operation keeps its own snapshot),
/// options. Owns no connection.
#[derive(Clone, Debug)]
pub(crate) struct Core {
    pub keys: Keys,
    /// What the handle and its clones remember between operations.
    memory: Arc<memory::Memory>,
    /// The kinds this handle reads.
    pub accept: Accept,
    /// Where `now` comes from for schedules (default: the server's clock).
    pub clock: Arc<dyn Clock>,
    /// Frozen generations mirrored in memory, if enabled.
    pub cache: Option<Arc<FrozenCache>>,
    pub max_retries: u32,
    /// Whether data operations may use the guarded-transaction path.
    pub transactions: bool,
    /// Replicas every write waits for, if any.
    pub wait: Option<crate::wait::WaitReplicas>,
    /// What a write does once the generation it fills is full.
    pub when_full: crate::full::WhenFull,
}

impl Core {
    pub fn new(keys: Keys, view: View, accept: Accept) -> Core {
        Core {
            keys,
            memory: Arc::new(memory::Memory::new(view)),
            accept,
            clock: Arc::new(ServerClock),
            cache: None,
            max_retries: DEFAULT_MAX_RETRIES,
            transactions: true,
            wait: None,
            when_full: crate::full::WhenFull::default(),
        }
    }

    /// Runs `m` on a blocking connection with this handle's options.
    pub fn run<M, C>(&self, conn: &mut C, m: M) -> Result<M::Output>
    where
        M: crate::machine::Machine,
        C: redis::ConnectionLike + ?Sized,
    {
        crate::exec::run(conn, m, self.wait)
    }

    #[cfg(feature = "async")]
    /// Runs `m` on an async connection with this handle's options.
    pub async fn run_async<M, C>(&self, conn: &mut C, m: M) -> Result<M::Output>
    where
        M: crate::machine::Machine,
        C: redis::aio::ConnectionLike + Send,
    {
        crate::exec::run_async(conn, m, self.wait).await
    }

    pub fn watch_ok(&self) -> bool {
        self.memory.watch_ok()
    }

    pub fn set_watch_ok(&self) {
        self.memory.set_watch_ok();
    }

    pub fn name(&self) -> &str {
        self.keys.name().as_str()
    }

    /// The latest view any clone loaded. A poisoned lock still holds a
    /// valid `Arc`, so it is used rather than propagated as a panic.
    pub fn view(&self) -> Arc<View> {
        self.memory.view()
    }

    /// Makes a freshly loaded view the latest, after checking that it is
    /// of the instance this handle opened (a filter dropped and created
    /// again is another one: [`Error::Recreated`](crate::Error::Recreated));
    /// returns it as the snapshot the caller goes on with.
    pub fn publish(&self, view: View) -> Result<Arc<View>> {
        self.same_instance(&view.uid)?;
        if let Some(cache) = &self.cache {
            cache.retain(&view);
        }
        let view = Arc::new(view);
        self.memory.remember(Arc::clone(&view));
        Ok(view)
    }

    /// Refuses a filter of another instance than the one this handle
    /// opened, found under its name.
    pub fn same_instance(&self, uid: &str) -> Result<()> {
        if uid == self.view().uid {
            return Ok(());
        }
        Err(crate::error::Error::Recreated {
            name: self.name().to_string(),
        })
    }

    /// Decodes a reload of this handle's filter (the load script's reply)
    /// and publishes it. A hash of another instance under the name is
    /// refused before it is decoded: it may not even be a filter of this
    /// format (a sharded filter's root record).
    pub fn reloaded(&self, reply: redis::RedisResult<redis::Value>) -> Result<Arc<View>> {
        if let Some(uid) = crate::proto::load::uid_of(&reply) {
            self.same_instance(&uid)?;
        }
        self.publish(crate::proto::load::decode(&self.keys, self.accept, reply)?)
    }

    /// The machine that turns this full filter of kind `kind` into one that
    /// grows, when the handle asks for that (`when_full = expand`) and one
    /// of the kinds it accepts can take it over.
    pub fn outgrow(
        &self,
        kind: crate::metadata::Kind,
    ) -> Option<Box<dyn crate::machine::Machine<Output = View> + Send>> {
        if self.when_full != crate::full::WhenFull::Expand {
            return None;
        }
        self.accept
            .codecs()
            .iter()
            .filter_map(|c| c.absorb)
            .find(|a| a.from == kind)
            .map(|a| (a.start)(&self.keys, self.max_retries))
    }

    /// Whether this handle (and its clones) has not warned about
    /// generation `seq` being full yet; from now on it has.
    pub fn first_warning(&self, seq: u64) -> bool {
        self.memory.first_warning(seq)
    }

    /// Notes that the deciding generation `seq` holds `count` of its
    /// `capacity` after a write; warns once per generation when it is full
    /// and the handle writes on. (A handle that refuses writes past
    /// capacity learns it from the server at each write: it keeps no
    /// memory of a full generation, which a clear or a rotation by another
    /// process would make wrong.)
    pub fn note_count(&self, seq: u64, capacity: u64, count: u64) {
        if count < capacity {
            return;
        }
        if self.when_full == crate::full::WhenFull::Warn && self.first_warning(seq) {
            log::warn!(
                "filter {:?} is over its capacity: its generation holds {count} items of the {capacity} it was made for, so its false-positive rate is above its target (rotate it, convert it to an expanding filter or make a bigger one)",
                self.name()
            );
        }
    }

    /// Marks `seq` as allocated ahead of need; false if it already was.
    pub fn claim_prealloc(&self, seq: u64) -> bool {
        self.memory.claim_prealloc(seq)
    }

    /// The error of an operation that kept finding the filter changed.
    pub fn contention(&self, retries: u32) -> crate::error::Error {
        crate::error::Error::Contention {
            name: self.name().to_string(),
            retries,
        }
    }
}
