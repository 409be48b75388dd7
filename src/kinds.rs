//! The list of kinds: every kind this library reads, and the marker types
//! that name each in a [`Filter`](crate::Filter) handle. Adding a kind is
//! its own module (its policy, its codec, its marker) and one line in
//! [`ALL`] and in the re-exports below.

use crate::handle::{
    sealed::{Opens, Sealed},
    FilterKind,
};
use crate::view::{Accept, Codec};

pub use crate::bloom::Bloom;
pub use crate::circular::Circular;
pub use crate::expanding::Expanding;

/// Every kind this library reads, in the order they are listed to users.
pub(crate) const ALL: &[Codec] = &[
    crate::bloom::CODEC,
    crate::expanding::CODEC,
    crate::circular::CODEC,
];

/// Whatever kind the filter stored in Redis is:
/// [`AnyFilter`](crate::AnyFilter) is `Filter<Any>`.
#[derive(Debug)]
pub enum Any {}

impl Sealed for Any {
    fn accept() -> Opens {
        Opens(Accept::Any(ALL))
    }
}

impl FilterKind for Any {}
