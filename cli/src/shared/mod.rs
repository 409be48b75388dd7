//! What every layer above takes: the context a command starts from, where
//! its Redis URL came from, how a command reports (`Output`), errors' exit
//! codes, the filters a status report is made of.

pub mod any;
pub mod ctx;
pub mod fail;
pub mod output;
pub mod report;
pub mod url;
