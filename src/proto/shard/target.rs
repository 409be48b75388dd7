//! Whole-filter targets of a sharded filter (docs/FORMAT.md §11.8): what
//! the root record says every shard must have (rotations, the period of
//! the last scheduled rotation, clears, the kind), and the check of the
//! shards against it. Pure: the shards' fields come in as read.

use crate::metadata::Kind;
use std::collections::BTreeMap;
use std::fmt;

/// Root field: the rotations every circular shard has made (its `epoch`).
pub const EPOCH: &str = "target.epoch";
/// Root field: the period of the last scheduled rotation every circular
/// shard has made (its `period`).
pub const PERIOD: &str = "target.period";
/// Root field: the clears every shard has had (its `cleared`).
pub const CLEARED: &str = "target.cleared";
/// Root field prefix: `target.expanded.<J>`, the epoch expanding shard J
/// has reached at least (one more than it had when an expansion was
/// recorded; its own growth counts too).
pub const EXPANDED: &str = "target.expanded.";

/// The root field of shard `j`'s expansion target.
pub fn expanded(j: usize) -> String {
    format!("{EXPANDED}{j}")
}

/// The targets a root records; a field a root lacks (one written before
/// targets existed) reads as what the shards have: the furthest shard's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Targets {
    /// Rotations of every circular shard.
    pub epoch: Option<u64>,
    /// Period of the last scheduled rotation of every circular shard.
    pub period: Option<i64>,
    /// Clears of every shard.
    pub cleared: Option<u64>,
    /// Per expanding shard, the epoch it has reached at least.
    pub expanded: BTreeMap<usize, u64>,
}

/// What a shard's metadata says about the fields the root targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardFacts {
    /// The shard's kind.
    pub kind: Kind,
    /// Its structural changes (rotations, for a circular shard).
    pub epoch: u64,
    /// Its clears.
    pub cleared: u64,
    /// Its schedule's period, if it has one.
    pub period: Option<i64>,
}

impl ShardFacts {
    /// The facts of a shard of kind `kind` from its metadata fields
    /// (`field` answers one by name); an absent or unreadable counter
    /// reads as 0, as the shard's own decoder treats `cleared`.
    pub fn read<'a>(kind: Kind, field: impl Fn(&str) -> Option<&'a str>) -> ShardFacts {
        let int = |f: &str| field(f).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        ShardFacts {
            kind,
            epoch: int(crate::metadata::field::EPOCH),
            cleared: int(crate::metadata::field::CLEARED),
            period: field(crate::metadata::field::PERIOD).and_then(|v| v.parse().ok()),
        }
    }
}

/// Which way a shard is off its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardOff {
    /// Short of the target: an interrupted whole-filter change; the next
    /// run of that change (or a convergence) brings it forward.
    Behind,
    /// Past the target: changed on its own, not through the root.
    Ahead,
    /// Another kind than the root's.
    OtherKind,
}

/// One shard that disagrees with its root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardDisagreement {
    /// The shard's number.
    pub shard: u32,
    /// Which way it is off.
    pub off: ShardOff,
    /// What, in words: "rotations 0, the root's target 1".
    pub detail: String,
}

impl fmt::Display for ShardDisagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shard {}: {}", self.shard, self.detail)
    }
}

impl Targets {
    /// The targets recorded in a root's fields; `Err` names a field that
    /// is there but not canonical.
    pub fn decode(fields: &BTreeMap<String, String>) -> Result<Targets, &'static str> {
        fn get<T: std::str::FromStr + ToString>(
            fields: &BTreeMap<String, String>,
            name: &'static str,
        ) -> Result<Option<T>, &'static str> {
            fields
                .get(name)
                .map(|v| {
                    v.parse::<T>()
                        .ok()
                        .filter(|t| t.to_string() == *v)
                        .ok_or(name)
                })
                .transpose()
        }
        let mut expanded = BTreeMap::new();
        for (k, v) in fields {
            let Some(j) = k.strip_prefix(EXPANDED) else {
                continue;
            };
            let canonical = |t: &str| t.parse::<u64>().ok().filter(|n| n.to_string() == t);
            match (canonical(j), canonical(v)) {
                (Some(j), Some(e)) => expanded.insert(j as usize, e),
                _ => return Err(EXPANDED),
            };
        }
        Ok(Targets {
            epoch: get(fields, EPOCH)?,
            period: get(fields, PERIOD)?,
            cleared: get(fields, CLEARED)?,
            expanded,
        })
    }

    /// The targets in force over `shards`: each recorded one, else the
    /// furthest shard's value (a root from before targets).
    pub fn effective(&self, kind: Kind, shards: &[ShardFacts]) -> Targets {
        let circular = kind == Kind::Circular;
        let max_epoch = shards.iter().map(|s| s.epoch).max();
        Targets {
            epoch: circular.then(|| self.epoch.or(max_epoch)).flatten(),
            period: circular
                .then(|| self.period.or(shards.iter().filter_map(|s| s.period).max()))
                .flatten(),
            cleared: self.cleared.or(shards.iter().map(|s| s.cleared).max()),
            expanded: match kind {
                Kind::Expanding => self.expanded.clone(),
                _ => BTreeMap::new(),
            },
        }
    }
}

/// Every shard of a root of kind `kind` with `targets` that disagrees with
/// it, shard 0 first: another kind, rotations, period or clears other than
/// the targets in force. Empty when the filter is one filter again.
pub fn disagreements(
    kind: Kind,
    targets: &Targets,
    shards: &[ShardFacts],
) -> Vec<ShardDisagreement> {
    let t = targets.effective(kind, shards);
    let mut out = Vec::new();
    for (j, s) in shards.iter().enumerate() {
        let shard = j as u32;
        if s.kind != kind {
            out.push(ShardDisagreement {
                shard,
                off: if s.kind == Kind::Expanding && kind == Kind::Bloom {
                    ShardOff::Ahead
                } else if s.kind == Kind::Bloom && kind == Kind::Expanding {
                    ShardOff::Behind
                } else {
                    ShardOff::OtherKind
                },
                detail: format!("is {}, the root says {}", s.kind, kind),
            });
            continue;
        }
        let mut check = |what: &str, have: Option<i128>, want: Option<i128>| {
            if let (Some(have), Some(want)) = (have, want) {
                if have != want {
                    out.push(ShardDisagreement {
                        shard,
                        off: if have < want {
                            ShardOff::Behind
                        } else {
                            ShardOff::Ahead
                        },
                        detail: format!("{what} {have}, the root's target {want}"),
                    });
                }
            }
        };
        if kind == Kind::Circular {
            check("rotations", Some(s.epoch.into()), t.epoch.map(i128::from));
            check("period", s.period.map(i128::from), t.period.map(i128::from));
        }
        check("clears", Some(s.cleared.into()), t.cleared.map(i128::from));
        // Growth of its own may take a shard past its expansion target.
        if let Some(&floor) = t.expanded.get(&j) {
            if s.epoch < floor {
                out.push(ShardDisagreement {
                    shard,
                    off: ShardOff::Behind,
                    detail: format!("epoch {}, the root's expansion target {floor}", s.epoch),
                });
            }
        }
    }
    out
}

/// The shards of `found` in one phrase: "shards 1, 2 (shard 1: ...; ...)".
pub fn describe(found: &[ShardDisagreement]) -> String {
    let mut nums: Vec<u32> = found.iter().map(|d| d.shard).collect();
    nums.sort_unstable();
    nums.dedup();
    let list: Vec<String> = nums.iter().map(u32::to_string).collect();
    let what: Vec<String> = found.iter().map(ToString::to_string).collect();
    format!(
        "shard{} {} ({})",
        if nums.len() == 1 { "" } else { "s" },
        list.join(", "),
        what.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn circ(epoch: u64, cleared: u64, period: i64) -> ShardFacts {
        ShardFacts {
            kind: Kind::Circular,
            epoch,
            cleared,
            period: Some(period),
        }
    }

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn targets_decode_and_refuse_what_is_not_canonical() {
        let t = Targets::decode(&fields(&[(EPOCH, "3"), (PERIOD, "-2"), (CLEARED, "0")]));
        assert_eq!(
            t,
            Ok(Targets {
                epoch: Some(3),
                period: Some(-2),
                cleared: Some(0),
                expanded: BTreeMap::new(),
            })
        );
        let t = Targets::decode(&fields(&[("target.expanded.1", "4")])).unwrap();
        assert_eq!(t.expanded, BTreeMap::from([(1, 4)]));
        assert_eq!(
            Targets::decode(&fields(&[("target.expanded.x", "4")])),
            Err(EXPANDED)
        );
        assert_eq!(
            Targets::decode(&fields(&[("target.expanded.1", "04")])),
            Err(EXPANDED)
        );
        assert_eq!(Targets::decode(&fields(&[])), Ok(Targets::default()));
        assert_eq!(Targets::decode(&fields(&[(EPOCH, "03")])), Err(EPOCH));
        assert_eq!(Targets::decode(&fields(&[(EPOCH, "-1")])), Err(EPOCH));
        assert_eq!(Targets::decode(&fields(&[(PERIOD, "x")])), Err(PERIOD));
        assert_eq!(Targets::decode(&fields(&[(CLEARED, "+1")])), Err(CLEARED));
    }

    #[test]
    fn shards_at_their_targets_agree() {
        let t = Targets {
            epoch: Some(2),
            period: Some(7),
            cleared: Some(1),
            ..Targets::default()
        };
        let s = [circ(2, 1, 7), circ(2, 1, 7), circ(2, 1, 7)];
        assert!(disagreements(Kind::Circular, &t, &s).is_empty());
    }

    #[test]
    fn a_rotation_interrupted_after_shard_0_names_the_shards_behind() {
        // Reproduction 2 read by a root with a target: 1 recorded, shard 0
        // rotated, shards 1 and 2 not.
        let t = Targets {
            epoch: Some(1),
            ..Targets::default()
        };
        let s = [circ(1, 0, 5), circ(0, 0, 5), circ(0, 0, 5)];
        let d = disagreements(Kind::Circular, &t, &s);
        assert_eq!(d.iter().map(|d| d.shard).collect::<Vec<_>>(), [1, 2]);
        assert!(d.iter().all(|d| d.off == ShardOff::Behind));
        assert_eq!(
            d[0].to_string(),
            "shard 1: rotations 0, the root's target 1"
        );
        assert!(describe(&d).starts_with("shards 1, 2 (shard 1: rotations 0"));
    }

    #[test]
    fn a_root_without_targets_reads_the_furthest_shard_as_its_target() {
        let s = [circ(1, 0, 6), circ(0, 0, 5), circ(1, 0, 6)];
        let d = disagreements(Kind::Circular, &Targets::default(), &s);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d.iter().all(|d| d.shard == 1 && d.off == ShardOff::Behind));
        let t = Targets::default().effective(Kind::Circular, &s);
        assert_eq!((t.epoch, t.period, t.cleared), (Some(1), Some(6), Some(0)));
    }

    #[test]
    fn a_shard_past_the_target_is_ahead() {
        let t = Targets {
            epoch: Some(1),
            period: Some(5),
            cleared: Some(0),
            ..Targets::default()
        };
        let d = disagreements(Kind::Circular, &t, &[circ(1, 0, 5), circ(2, 1, 5)]);
        assert_eq!(d.len(), 2);
        assert!(d.iter().all(|d| d.shard == 1 && d.off == ShardOff::Ahead));
    }

    #[test]
    fn kinds_other_than_the_roots_are_named_and_not_compared_further() {
        let bloom = ShardFacts {
            kind: Kind::Bloom,
            epoch: 0,
            cleared: 0,
            period: None,
        };
        let exp = ShardFacts {
            kind: Kind::Expanding,
            epoch: 1,
            ..bloom
        };
        // A conversion recorded (root expanding) that reached shard 0 only.
        let d = disagreements(Kind::Expanding, &Targets::default(), &[exp, bloom, bloom]);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].detail, "is bloom, the root says expanding");
        assert!(d.iter().all(|d| d.off == ShardOff::Behind));
        // The same read by a root from before targets (still bloom).
        let d = disagreements(Kind::Bloom, &Targets::default(), &[exp, bloom, bloom]);
        assert_eq!((d.len(), d[0].shard, d[0].off), (1, 0, ShardOff::Ahead));
        // Expanding shards' epochs move on their own: only an expansion
        // target is a floor, and growth past it agrees.
        let grown = ShardFacts { epoch: 9, ..exp };
        assert!(disagreements(Kind::Expanding, &Targets::default(), &[exp, grown]).is_empty());
        let t = Targets {
            expanded: BTreeMap::from([(0, 2), (1, 2)]),
            ..Targets::default()
        };
        let d = disagreements(Kind::Expanding, &t, &[exp, grown]);
        assert_eq!((d.len(), d[0].shard, d[0].off), (1, 0, ShardOff::Behind));
        assert_eq!(d[0].detail, "epoch 1, the root's expansion target 2");
    }

    #[test]
    fn facts_read_from_metadata_fields() {
        let f = fields(&[("epoch", "4"), ("cleared", "2"), ("period", "-3")]);
        let s = ShardFacts::read(Kind::Circular, |k| f.get(k).map(String::as_str));
        assert_eq!(s, circ(4, 2, -3));
        let none = ShardFacts::read(Kind::Bloom, |_| None);
        assert_eq!((none.epoch, none.cleared, none.period), (0, 0, None));
    }
}
