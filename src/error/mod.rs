//! The one error type of the crate, and its messages.

mod classify;
mod partial;
mod variants;
mod wording;

pub use classify::RedisError;
pub(crate) use classify::{acl_refusal, plain, unexpected};
pub use partial::{Fate, Partial, ShardFailure};
pub use variants::Error;

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
