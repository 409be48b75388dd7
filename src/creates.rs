//! What creating a filter of one kind is, to the code that runs every
//! kind's creation alike (a spec's `create_or_open`, a sharded filter's
//! shards): a machine, and the replicas it waits for.

use crate::error::Result;
use crate::handle::Filter;
use crate::proto::create::Opened;

pub(crate) mod sealed {
    /// A validated spec of one kind, ready to create (sealed: the specs
    /// are this crate's, and no one outside can name it, so the crate's
    /// own machine may appear in it).
    #[allow(private_interfaces, private_bounds)]
    pub trait Creates: Send + Sync {
        /// The kind of filter it makes.
        type Kind: crate::handle::OneKind;

        /// The creation (or the opening of the same filter), as a machine.
        #[allow(private_interfaces, private_bounds)]
        fn machine(
            &self,
        ) -> impl crate::machine::Machine<
            Output = (
                crate::handle::Filter<Self::Kind>,
                crate::proto::create::Opened,
            ),
        > + Send;

        /// The replicas its creation and its handle's writes wait for.
        fn wait(&self) -> Option<crate::wait::WaitReplicas>;
    }
}

pub(crate) use sealed::Creates;

/// Creates or opens `spec`'s filter; also says which happened.
pub(crate) fn run<S: Creates, C: redis::ConnectionLike + ?Sized>(
    spec: &S,
    conn: &mut C,
) -> Result<(Filter<S::Kind>, Opened)> {
    crate::exec::run(conn, spec.machine(), spec.wait())
}

/// Async [`run`].
#[cfg(feature = "async")]
pub(crate) async fn run_async<S: Creates, C: redis::aio::ConnectionLike + Send>(
    spec: &S,
    conn: &mut C,
) -> Result<(Filter<S::Kind>, Opened)> {
    crate::exec::run_async(conn, spec.machine(), spec.wait()).await
}
