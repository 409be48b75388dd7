//! What a dump or a restore reports having moved.

use crate::metadata::Kind;
use crate::view::View;

/// What a dump or a restore moved.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// The filter's name (for a restore, the name it was restored as).
    pub name: String,
    /// Its kind.
    pub kind: Kind,
    /// Its generations.
    pub generations: usize,
    /// Its block keys.
    pub blocks: u64,
    /// Bytes of the blocks (all-zero stretches are not in the file).
    pub bytes: u64,
    /// Distinct items, as the metadata counts them.
    pub items: u64,
}

impl Summary {
    pub(crate) fn of(name: &str, view: &View) -> Summary {
        Summary {
            name: name.to_string(),
            kind: view.kind,
            generations: view.gens.len(),
            blocks: view.gens.iter().map(|g| u64::from(g.layout.blocks)).sum(),
            bytes: 0,
            items: view.count(),
        }
    }
}
