//! The machines of a dump, a restore and a string copy (`crate::dump` has
//! their public functions and the pure parts: options, lease, slices; the
//! file format and the requests are `proto::dump`'s).

pub(crate) mod copy;
pub(crate) mod restore;
pub(crate) mod write;
