//! What people read: values written for people, `status` as text and
//! JSON, a circular filter's window in dates, errors and warnings on
//! standard error, the progress of `load`, colour, help and the words
//! completion offers.

pub mod errors;
pub mod help;
pub mod progress;
pub mod status;
pub mod suggest;
pub mod term;
pub mod values;
pub mod version;
pub mod warnings;
pub mod window;
pub mod words;
