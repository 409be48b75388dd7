//! A sharded filter's own records and requests (docs/FORMAT.md §11): the
//! root record (`root`), the scripts that claim, move and drop it and the
//! reads of it (`script`). Pure: the sharded layer (`crate::shard`) sends
//! them and gives the decoders the replies.

pub(crate) mod orphans;
pub(crate) mod root;
pub(crate) mod script;
pub(crate) mod target;
