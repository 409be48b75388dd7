//! Corrupt metadata never makes rotabloom panic or answer wrongly.
//!
//! Every kind of filter is created once as a template and filled with 50
//! known items; each case copies it under fresh names, applies ONE
//! corruption to the copies, and then drives the whole public API against
//! a real private redis-server: on a handle opened after the corruption
//! (`open`), on a handle opened before it, and through the CLI's `status`.
//! [`judge`] says what each outcome must be: see the rules there, and
//! docs/FORMAT.md §6 (the canonical forms) and §6.4 (every invariant a
//! reader checks), which define which values are corrupt.
//!
//! The test specifies the behaviour of the engine that validates the
//! metadata hash (and the fence) as a whole on every load; it prints every
//! failing case, grouped by rule.

#[path = "../../tests/support/harness.rs"]
mod harness;

use chrono::{DateTime, TimeZone, Utc};
use harness::RedisServer;
use redis::Connection;
use rotabloom::{BloomFilter, CircularFilter, Error, ExpandingFilter, ManualClock, Schedule};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rotabloom");

/// Items every template holds.
const KNOWN: usize = 50;
/// A batch this small takes the script path; 16 and more the transaction.
const SMALL: usize = 8;
/// New items per batch write.
const NEW: usize = 20;
/// How long one case may take before it counts as hung.
const CASE_TIMEOUT: Duration = Duration::from_secs(20);
/// How long one CLI run may take.
const CLI_TIMEOUT: Duration = Duration::from_secs(60);
/// Cases run at the same time.
const LANES: usize = 3;
/// Filter names per CLI run (a failing run is bisected down to the name).
const CLI_BATCH: usize = 300;

/// The clock of every circular handle: 30 minutes before the next hourly
/// boundary, so a lazy filter is not due unless a corruption says so.
fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 15, 12, 30, 0).unwrap()
}
fn past() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2000, 1, 1, 0, 0, 0).unwrap()
}
fn far_future() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2200, 1, 1, 0, 0, 0).unwrap()
}

fn known() -> Vec<String> {
    (0..KNOWN).map(|i| format!("known-{i}")).collect()
}

fn meta_key(name: &str) -> String {
    format!("rotabloom:{{{name}}}:meta")
}
fn fence_key(name: &str) -> String {
    format!("rotabloom:{{{name}}}:fence")
}

// ---------------------------------------------------------------------------
// Templates

/// The filters every case starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tk {
    Bloom,
    /// Capacity 20: two generations after the 50 known items.
    Expanding,
    /// N = 3, schedule `1h`.
    Circular,
    /// N = 3, schedule `1h`, lazy rotation.
    CircularLazy,
    /// N = 3, schedule `monthly:1@00:00`.
    CircularMonthly,
}

const KINDS: [Tk; 5] = [
    Tk::Bloom,
    Tk::Expanding,
    Tk::Circular,
    Tk::CircularLazy,
    Tk::CircularMonthly,
];

impl Tk {
    fn label(self) -> &'static str {
        match self {
            Tk::Bloom => "bloom",
            Tk::Expanding => "expanding",
            Tk::Circular => "circular(1h)",
            Tk::CircularLazy => "circular(1h,lazy)",
            Tk::CircularMonthly => "circular(monthly)",
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Tk::Bloom => "bloom",
            Tk::Expanding => "expanding",
            _ => "circular",
        }
    }

    fn circular(self) -> bool {
        self.kind() == "circular"
    }
}

/// A template filter as stored.
struct Template {
    tk: Tk,
    name: String,
    /// Its keys, without the `rotabloom:{NAME}` prefix.
    suffixes: Vec<String>,
    fields: BTreeMap<String, Vec<u8>>,
    gens: Vec<u64>,
    next_seq: u64,
}

impl Template {
    fn text(&self, field: &str) -> String {
        String::from_utf8_lossy(
            self.fields
                .get(field)
                .map(Vec::as_slice)
                .unwrap_or_default(),
        )
        .into_owned()
    }

    fn gen_num(&self, seq: u64, what: &str) -> u64 {
        self.text(&format!("gen.{seq}.{what}")).parse().unwrap()
    }

    fn newest(&self) -> u64 {
        *self.gens.last().unwrap()
    }

    fn schedule(&self) -> Schedule {
        self.text("schedule").parse().unwrap()
    }

    /// The key of block 0 of the newest generation, for filter `name`.
    fn newest_block(&self, name: &str) -> String {
        format!(
            "rotabloom:{{{name}}}:gen:{}-{}:0",
            self.text("uid"),
            self.newest()
        )
    }
}

fn make_template(conn: &mut Connection, tk: Tk) -> Template {
    let name = match tk {
        Tk::CircularLazy => "tpl-circular-lazy".to_string(),
        Tk::CircularMonthly => "tpl-circular-monthly".to_string(),
        _ => format!("tpl-{}", tk.kind()),
    };
    let items = known();
    let circular = |schedule: &str, lazy: bool| {
        CircularFilter::builder(name.as_str())
            .generations(3)
            .capacity(1000)
            .schedule(schedule)
            .lazy(lazy)
            .clock(Arc::new(ManualClock::new(t0())))
    };
    match tk {
        Tk::Bloom => {
            let f = BloomFilter::builder(name.as_str())
                .capacity(1000)
                .error_rate(0.01)
                .create_or_open(conn)
                .unwrap();
            f.insert_many(conn, &items).unwrap();
        }
        Tk::Expanding => {
            let f = ExpandingFilter::builder(name.as_str())
                .capacity(20)
                .create_or_open(conn)
                .unwrap();
            f.insert_many(conn, &items).unwrap();
        }
        Tk::Circular => {
            let f = circular("1h", false).create_or_open(conn).unwrap();
            f.insert_many(conn, &items).unwrap();
        }
        Tk::CircularLazy => {
            let f = circular("1h", true).create_or_open(conn).unwrap();
            f.insert_many(conn, &items).unwrap();
        }
        Tk::CircularMonthly => {
            let f = circular("monthly:1@00:00", false)
                .create_or_open(conn)
                .unwrap();
            f.insert_many(conn, &items).unwrap();
        }
    }
    let prefix = format!("rotabloom:{{{name}}}");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query(conn)
        .unwrap();
    let fields: BTreeMap<String, Vec<u8>> = redis::cmd("HGETALL")
        .arg(meta_key(&name))
        .query(conn)
        .unwrap();
    let gens_text = String::from_utf8(fields["gens"].clone()).unwrap();
    let gens: Vec<u64> = gens_text.split(',').map(|s| s.parse().unwrap()).collect();
    let next_seq = String::from_utf8(fields["next_seq"].clone())
        .unwrap()
        .parse()
        .unwrap();
    if tk == Tk::Expanding {
        assert!(gens.len() >= 2, "the expanding template has {gens_text}");
    }
    Template {
        tk,
        suffixes: keys.iter().map(|k| k[prefix.len()..].to_string()).collect(),
        name,
        fields,
        gens,
        next_seq,
    }
}

// ---------------------------------------------------------------------------
// The values written into every field

/// A value written into a field. The three columns say what the bytes are
/// in the canonical form of docs/FORMAT.md §6 (`None`: not canonical):
/// an unsigned integer (`0|[1-9][0-9]*`, at most 2^64 - 1), a signed
/// integer (`0|-?[1-9][0-9]*` within i64), a float (Rust's `{:?}` form).
/// Whether a value is valid in a field follows from these and the field's
/// type ([`Ty`]).
struct Val {
    label: &'static str,
    bytes: Vec<u8>,
    unsigned: Option<u64>,
    signed: Option<i64>,
    float: Option<f64>,
}

#[rustfmt::skip]
fn values() -> Vec<Val> {
    let v = |label, bytes: &[u8], unsigned, signed, float| Val {
        label, bytes: bytes.to_vec(), unsigned, signed, float,
    };
    let (umax, imin, imax) = (u64::MAX, i64::MIN, i64::MAX);
    vec![
        //  label        bytes                          unsigned          signed       float
        v("\"\"",        b"",                           None,             None,        None),
        v("abc",         b"abc",                        None,             None,        None),
        v("-1",          b"-1",                         None,             Some(-1),    None),
        v("+0",          b"+0",                         None,             None,        None),
        v("0100",        b"0100",                       None,             None,        None),
        v("\" 1\"",      b" 1",                         None,             None,        None),
        v("1.5",         b"1.5",                        None,             None,        Some(1.5)),
        v("1e3",         b"1e3",                        None,             None,        None),
        v("2^64",        b"18446744073709551616",       None,             None,        None),
        v("10^23-1",     b"99999999999999999999999",    None,             None,        None),
        v("0",           b"0",                          Some(0),          Some(0),     None),
        v("u64::MAX",    b"18446744073709551615",       Some(umax),       None,        None),
        v("i64::MIN",    b"-9223372036854775808",       None,             Some(imin),  None),
        v("i64::MAX",    b"9223372036854775807",        Some(imax as u64), Some(imax), None),
        v("non-UTF-8",   b"\xff\xfe",                   None,             None,        None),
        v("100 KB",      &[b'7'; 100 * 1024],           None,             None,        None),
    ]
}

/// The type of a metadata field (docs/FORMAT.md §6.1 to §6.4).
#[derive(Clone, Debug)]
enum Ty {
    /// `1`; anything else is an unsupported version.
    Format,
    /// `bloom` | `expanding` | `circular`.
    Kind,
    /// 16 lowercase hex digits.
    Uid,
    /// An unsigned integer in `min..=max`; `optional`: may be absent.
    Unsigned { min: u64, max: u64, optional: bool },
    /// A signed integer.
    Signed,
    /// An unsigned integer above every listed seq.
    NextSeq,
    /// The list of live generations.
    Gens,
    /// `gen.<seq>.bits`: `blocks` divides it, the block size is 8..=2^32.
    GenBits(u64),
    /// `gen.<seq>.blocks`: at least 1, divides `bits`, same block size.
    GenBlocks(u64),
    /// A float in an interval; `open`: the ends are excluded.
    Float { lo: f64, hi: f64, open: bool },
    /// One of these words; `optional`: may be absent.
    Word {
        valid: &'static [&'static str],
        optional: bool,
    },
    /// `generations`: 2..=256 and what `gens` lists.
    Generations,
    /// Empty or a schedule; the templates have one, so empty contradicts
    /// `period` and `due_at`.
    Schedule,
    /// A signed integer with `boundary(period + 1)` representable.
    Period,
    /// Absent, `0` or `1`; `1` needs a legacy first generation.
    LegacyGens,
}

/// The type of `field` in template `t`: the table of docs/FORMAT.md §6.4.
fn field_type(t: &Template, field: &str) -> Ty {
    const U64: u64 = u64::MAX;
    let unsigned = |min, max| Ty::Unsigned {
        min,
        max,
        optional: false,
    };
    let unit = Ty::Float {
        lo: 0.0,
        hi: 1.0,
        open: true,
    };
    if let Some(rest) = field.strip_prefix("gen.") {
        let (seq, what) = rest.split_once('.').unwrap();
        let seq: u64 = seq.parse().unwrap();
        return match what {
            "bits" => Ty::GenBits(seq),
            "hashes" => unsigned(1, 64),
            "blocks" => Ty::GenBlocks(seq),
            // Bitmap backend, no legacy generation: md5-edh only.
            "scheme" => Ty::Word {
                valid: &["md5-edh"],
                optional: false,
            },
            "capacity" => unsigned(1, U64),
            "count" => Ty::Unsigned {
                min: 0,
                max: U64,
                optional: true,
            },
            "created_at" => Ty::Signed,
            _ => panic!("unknown generation field {field}"),
        };
    }
    match (t.tk, field) {
        (_, "format") => Ty::Format,
        (_, "kind") => Ty::Kind,
        (_, "uid") => Ty::Uid,
        (_, "epoch") => unsigned(0, U64),
        (_, "cleared") => Ty::Unsigned {
            min: 0,
            max: U64,
            optional: true,
        },
        (_, "created_at") => Ty::Signed,
        (_, "next_seq") => Ty::NextSeq,
        (_, "gens") => Ty::Gens,
        (_, "capacity") => unsigned(1, U64),
        (_, "error_rate") => unit,
        (_, "backend") => Ty::Word {
            valid: &["bitmap"],
            optional: true,
        },
        (_, "max_bits") => unsigned(8, U64),
        (_, "max_block_bits") => unsigned(8, 1 << 32),
        (Tk::Bloom, "sizing") => Ty::Word {
            valid: &["capacity"],
            optional: false,
        },
        (Tk::Expanding, "growth") => Ty::Float {
            lo: 1.0,
            hi: 16.0,
            open: false,
        },
        (Tk::Expanding, "tightening") => unit,
        (Tk::Expanding, "max_generations") => unsigned(1, 1024),
        (Tk::Expanding, "max_bytes") => unsigned(0, U64),
        (Tk::Expanding, "legacy_gens") => Ty::LegacyGens,
        (_, "generations") => Ty::Generations,
        (_, "mode") => Ty::Word {
            valid: &[
                "insert-newest-query-all",
                "insert-all-query-oldest",
                "query-all",
                "query-oldest",
            ],
            optional: false,
        },
        (_, "schedule") => Ty::Schedule,
        (_, "lazy") => Ty::Word {
            valid: &["0", "1"],
            optional: false,
        },
        (_, "period") => Ty::Period,
        (_, "due_at") => Ty::Signed,
        _ => panic!("no type for field {field} of {}", t.tk.label()),
    }
}

/// The fields that are part of the fence: writing one of them rewrites
/// the fence too (`FenceFollows`), so that the value itself is the only
/// defect.
const FENCE_FIELDS: [&str; 3] = ["uid", "epoch", "cleared"];

/// Names a `CorruptMetadata` error may give for a defect of `field`: the
/// field itself, and the other side of a rule that relates two fields.
fn blame(field: &str, ty: &Ty) -> Vec<String> {
    let mut names = vec![field.to_string()];
    let also: &[&str] = match ty {
        Ty::NextSeq => &["gens"],
        Ty::Gens => &["next_seq", "generations", "gen.*"],
        Ty::Generations => &["gens"],
        Ty::LegacyGens => &["gen.*"],
        _ => &[],
    };
    names.extend(also.iter().map(|s| s.to_string()));
    match ty {
        Ty::GenBits(seq) => names.push(format!("gen.{seq}.blocks")),
        Ty::GenBlocks(seq) => names.push(format!("gen.{seq}.bits")),
        _ => {}
    }
    names
}

/// What every field's value (or its absence, `None`) must lead to.
fn classify(t: &Template, field: &str, v: Option<&Val>) -> Expect {
    let ty = field_type(t, field);
    let corrupt = || Expect::Corrupt(blame(field, &ty));
    let Some(v) = v else {
        // HDEL: only the fields the format allows to be absent.
        return match ty {
            Ty::Format => Expect::UnsupportedOrCorrupt,
            Ty::Unsigned { optional: true, .. } | Ty::Word { optional: true, .. } => Expect::Valid,
            // The fence still names it.
            Ty::Uid | Ty::Unsigned { .. } if FENCE_FIELDS.contains(&field) => {
                Expect::Corrupt(vec![field.to_string(), "fence".into()])
            }
            _ => corrupt(),
        };
    };
    let text = std::str::from_utf8(&v.bytes).ok();
    let valid = match &ty {
        Ty::Format => return Expect::Unsupported,
        Ty::Kind => false, // No value of the table is a kind.
        Ty::Uid => text.is_some_and(|s| {
            s.len() == 16
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        }),
        Ty::Unsigned { min, max, .. } => v.unsigned.is_some_and(|n| (*min..=*max).contains(&n)),
        Ty::Signed => v.signed.is_some(),
        Ty::NextSeq => v.unsigned.is_some_and(|n| t.gens.iter().all(|&s| s < n)),
        // A one-item list: a live generation (it has fields), below
        // next_seq, and a circular filter lists exactly N.
        Ty::Gens => v
            .unsigned
            .is_some_and(|s| t.gens.contains(&s) && !t.tk.circular()),
        Ty::GenBits(seq) => v.unsigned.is_some_and(|bits| {
            let blocks = t.gen_num(*seq, "blocks");
            bits.is_multiple_of(blocks) && (8..=1 << 32).contains(&(bits / blocks))
        }),
        Ty::GenBlocks(seq) => v.unsigned.is_some_and(|blocks| {
            let bits = t.gen_num(*seq, "bits");
            blocks >= 1 && bits.is_multiple_of(blocks) && (8..=1 << 32).contains(&(bits / blocks))
        }),
        Ty::Float { lo, hi, open } => v.float.is_some_and(|f| {
            if *open {
                *lo < f && f < *hi
            } else {
                *lo <= f && f <= *hi
            }
        }),
        Ty::Word { valid, .. } => text.is_some_and(|s| valid.contains(&s)),
        Ty::Generations => v.unsigned.is_some_and(|n| n as usize == t.gens.len()),
        Ty::Schedule => {
            if v.bytes.is_empty() {
                // Allowed text, but period and due_at are not empty.
                return Expect::Corrupt(
                    ["schedule", "period", "due_at", "lazy"]
                        .map(String::from)
                        .to_vec(),
                );
            }
            // No value of the table has a unit: none is a schedule.
            false
        }
        Ty::Period => v.signed.is_some_and(|p| {
            p.checked_add(1)
                .and_then(|k| t.schedule().checked_boundary(k))
                .is_some()
        }),
        // Absent or 0: the templates have no legacy generation.
        Ty::LegacyGens => v.unsigned == Some(0),
    };
    if valid {
        Expect::Valid
    } else {
        corrupt()
    }
}

// ---------------------------------------------------------------------------
// Corruptions

/// Where a key of the wrong Redis type goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Meta,
    Fence,
    /// Block 0 of the newest generation (where the known items are).
    Block,
}

/// One step of a corruption.
#[derive(Clone, Debug)]
enum Act {
    /// HSET on the metadata hash.
    Set(String, Vec<u8>),
    /// HDEL on the metadata hash.
    Del(String),
    /// Rewrite the fence from the hash's uid, epoch and cleared (as
    /// stored, whatever they are), as every writer of them must.
    FenceFollows,
    /// SET the fence.
    Fence(Vec<u8>),
    /// DEL the fence.
    DelFence,
    /// Replace a key by a list or a set.
    Retype(Target, &'static str),
    /// DEL the metadata hash.
    DelMeta,
}

fn set(field: &str, v: impl AsRef<[u8]>) -> Act {
    Act::Set(field.to_string(), v.as_ref().to_vec())
}

/// What the operations must report (or may do) for a case.
#[derive(Clone, Debug, PartialEq)]
enum Expect {
    /// Valid, perhaps extreme: any typed outcome but those of rules (a)
    /// and (b) of [`judge`].
    Valid,
    /// `CorruptMetadata` naming one of these fields (`gen.*`: any
    /// generation field; `fence`: the fence key).
    Corrupt(Vec<String>),
    /// `UnsupportedFormat`.
    Unsupported,
    /// A missing `format`: `UnsupportedFormat` or `CorruptMetadata` naming it.
    UnsupportedOrCorrupt,
    /// `WrongType` naming the key.
    WrongType(Target),
    /// `NotFound`.
    NotFound,
    /// `KindMismatch` (the typed handle of the original kind).
    KindMismatch,
}

impl Expect {
    fn label(&self) -> String {
        match self {
            Expect::Valid => "valid".into(),
            Expect::Corrupt(f) => format!("CorruptMetadata{{{}}}", f.join("|")),
            Expect::Unsupported => "UnsupportedFormat".into(),
            Expect::UnsupportedOrCorrupt => "UnsupportedFormat|CorruptMetadata{format}".into(),
            Expect::WrongType(t) => format!("WrongType{{{t:?}}}"),
            Expect::NotFound => "NotFound".into(),
            Expect::KindMismatch => "KindMismatch".into(),
        }
    }
}

fn corrupt(fields: &[&str]) -> Expect {
    Expect::Corrupt(fields.iter().map(|s| s.to_string()).collect())
}

struct Case {
    id: usize,
    tpl: usize,
    label: String,
    acts: Vec<Act>,
    expect: Expect,
}

/// Every field of the template × every value, plus HDEL of each.
fn field_cases(t: &Template) -> Vec<(String, Vec<Act>, Expect)> {
    let mut out = Vec::new();
    let mut fields: Vec<String> = t.fields.keys().cloned().collect();
    // Absent until the first clear, but a field of every kind.
    if !fields.iter().any(|f| f == "cleared") {
        fields.push("cleared".into());
    }
    for field in &fields {
        let follows = FENCE_FIELDS.contains(&field.as_str());
        for v in values() {
            let mut acts = vec![Act::Set(field.clone(), v.bytes.clone())];
            if follows {
                acts.push(Act::FenceFollows);
            }
            let expect = classify(t, field, Some(&v));
            let note = if follows { " (fence follows)" } else { "" };
            out.push((format!("{field} = {}{note}", v.label), acts, expect));
        }
        if t.fields.contains_key(field) {
            out.push((
                format!("HDEL {field}"),
                vec![Act::Del(field.clone())],
                classify(t, field, None),
            ));
        }
    }
    out
}

/// The corruptions that are not one value in one field. Each row: what
/// is done, how, and the expected outcome (the class column).
#[rustfmt::skip]
fn special_cases(t: &Template) -> Vec<(String, Vec<Act>, Expect)> {
    let gens_bad = corrupt(&["gens", "next_seq", "generations", "gen.*"]);
    let listed = t.gens.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let (next, newest, kind) = (t.next_seq, t.newest(), t.tk.kind());
    let scheme = format!("gen.{newest}.scheme");
    let shape = ["scheme", "bits", "blocks", "hashes"].map(|w| format!("gen.{newest}.{w}"));
    let scheme_bad = Expect::Corrupt(shape.into_iter().chain(["backend".into()]).collect());
    let other_uid: String =
        t.text("uid").chars().map(|c| if c == 'f' { '0' } else { 'f' }).collect();
    // A second, complete generation for a bloom filter: copies of gen.0.
    let mut second = vec![set("gens", "0,1"), set("next_seq", "2")];
    for (field, value) in t.fields.iter().filter(|(f, _)| f.starts_with("gen.0.")) {
        second.push(set(&field.replacen("gen.0.", "gen.1.", 1), value));
    }
    // Dropping the oldest generation leaves a bloom filter none and a
    // circular one fewer than N; an expanding filter with a shorter list
    // is valid by §6.4 (a reader cannot tell).
    let dropped = listed.split_once(',').map_or("", |(_, rest)| rest).to_string();
    let dropped_expect = if t.tk == Tk::Expanding { Expect::Valid } else { gens_bad.clone() };
    let bloom = t.tk == Tk::Bloom;
    let expanding = t.tk == Tk::Expanding;
    let circular = t.tk.circular();

    let rows: Vec<(bool, String, Vec<Act>, Expect)> = vec![
        // applies  label                                                 acts                                                          expected
        (true,      "gens = \",\"".into(),                                vec![set("gens", ",")],                                       gens_bad.clone()),
        (true,      "gens = \"0,,1\"".into(),                              vec![set("gens", "0,,1")],                                    gens_bad.clone()),
        (true,      "gens = \"1,0\"".into(),                               vec![set("gens", "1,0")],                                     gens_bad.clone()),
        (true,      "gens = \"0,0\"".into(),                               vec![set("gens", "0,0")],                                     gens_bad.clone()),
        (true,      "gens = \"0 ,1\"".into(),                              vec![set("gens", "0 ,1")],                                    gens_bad.clone()),
        (true,      "gens = \"0;1\"".into(),                               vec![set("gens", "0;1")],                                     gens_bad.clone()),
        (true,      format!("gens lists seq {next}, which has no fields"), vec![set("gens", format!("{listed},{next}")),
                                                                               set("next_seq", (next + 1).to_string())],              gens_bad.clone()),
        (true,      format!("gens drops the oldest: {dropped:?}"),        vec![set("gens", &dropped)],                                  dropped_expect),
        (true,      format!("gens duplicated: \"{listed},{listed}\""),    vec![set("gens", format!("{listed},{listed}"))],              gens_bad.clone()),
        (bloom,     "bloom lists two complete generations".into(),        second,                                                       corrupt(&["gens"])),
        (kind != "bloom",     "kind = bloom".into(),                      vec![set("kind", "bloom")],                                   Expect::KindMismatch),
        (kind != "expanding", "kind = expanding".into(),                  vec![set("kind", "expanding")],                               Expect::KindMismatch),
        (kind != "circular",  "kind = circular".into(),                   vec![set("kind", "circular")],                                Expect::KindMismatch),
        (true,      format!("{scheme} = seed000"),                        vec![set(&scheme, "seed000")],                                scheme_bad.clone()),
        (true,      format!("{scheme} = scrapy-redis-bloomfilter"),       vec![set(&scheme, "scrapy-redis-bloomfilter")],               scheme_bad.clone()),
        (true,      format!("{scheme} = redisbloom"),                     vec![set(&scheme, "redisbloom")],                             scheme_bad),
        (expanding, "legacy_gens = 1 on a filter that adopted nothing".into(), vec![set("legacy_gens", "1")],                           corrupt(&["legacy_gens", "gen.*"])),
        (expanding, "tightening = 7.0 (canonical, out of range)".into(),  vec![set("tightening", "7.0")],                               corrupt(&["tightening"])),
        (expanding, "growth = 0.5 (canonical, out of range)".into(),      vec![set("growth", "0.5")],                                   corrupt(&["growth"])),
        (circular,  "schedule = garbage".into(),                          vec![set("schedule", "garbage")],                             corrupt(&["schedule"])),
        (circular,  "lazy = 1, due_at = abc".into(),                      vec![set("lazy", "1"), set("due_at", "abc")],                 corrupt(&["due_at"])),
        (true,      "uid = another 16-hex uid (fence not rewritten)".into(), vec![set("uid", &other_uid)],                              corrupt(&["uid", "fence"])),
        (true,      "uid = \"a}b{\" (fence follows)".into(),              vec![set("uid", "a}b{"), Act::FenceFollows],                  corrupt(&["uid"])),
        (true,      "cleared = abc (fence not rewritten)".into(),         vec![set("cleared", "abc")],                                  corrupt(&["cleared", "fence"])),
        (true,      "epoch = +0 (fence not rewritten)".into(),            vec![set("epoch", "+0")],                                     corrupt(&["epoch", "fence"])),
        (true,      "fence = garbage".into(),                             vec![Act::Fence(b"garbage".to_vec())],                        corrupt(&["fence"])),
        // Filters older than the fence have none (§5).
        (true,      "fence deleted".into(),                               vec![Act::DelFence],                                          Expect::Valid),
        (true,      "fence key is a list".into(),                         vec![Act::Retype(Target::Fence, "list")],                     Expect::WrongType(Target::Fence)),
        (true,      "fence key is a set".into(),                          vec![Act::Retype(Target::Fence, "set")],                      Expect::WrongType(Target::Fence)),
        (true,      "meta key is a list".into(),                          vec![Act::Retype(Target::Meta, "list")],                      Expect::WrongType(Target::Meta)),
        (true,      "meta key is a set".into(),                           vec![Act::Retype(Target::Meta, "set")],                       Expect::WrongType(Target::Meta)),
        (true,      "newest block key is a list".into(),                  vec![Act::Retype(Target::Block, "list")],                     Expect::WrongType(Target::Block)),
        (true,      "newest block key is a set".into(),                   vec![Act::Retype(Target::Block, "set")],                      Expect::WrongType(Target::Block)),
        (true,      "metadata hash deleted".into(),                       vec![Act::DelMeta],                                           Expect::NotFound),
    ];
    rows.into_iter()
        .filter(|row| row.0)
        .map(|(_, label, acts, expect)| (label, acts, expect))
        .collect()
}

fn all_cases(templates: &[Template]) -> Vec<Case> {
    let mut cases = Vec::new();
    for (tpl, t) in templates.iter().enumerate() {
        for (label, acts, expect) in field_cases(t).into_iter().chain(special_cases(t)) {
            cases.push(Case {
                id: cases.len(),
                tpl,
                label: format!("{}: {label}", t.tk.label()),
                acts,
                expect,
            });
        }
    }
    cases
}

/// Copies the template's keys under `name`.
fn copy_template(conn: &mut Connection, t: &Template, name: &str) {
    let mut pipe = redis::pipe();
    for s in &t.suffixes {
        pipe.cmd("COPY")
            .arg(format!("rotabloom:{{{}}}{s}", t.name))
            .arg(format!("rotabloom:{{{name}}}{s}"))
            .ignore();
    }
    pipe.query::<()>(conn).unwrap();
}

fn apply(conn: &mut Connection, t: &Template, name: &str, acts: &[Act]) {
    let meta = meta_key(name);
    let fence = fence_key(name);
    for act in acts {
        match act {
            Act::Set(f, v) => redis::cmd("HSET")
                .arg(&meta)
                .arg(f)
                .arg(v)
                .query::<()>(conn),
            Act::Del(f) => redis::cmd("HDEL").arg(&meta).arg(f).query::<()>(conn),
            Act::FenceFollows => {
                let parts: Vec<Option<Vec<u8>>> = redis::cmd("HMGET")
                    .arg(&meta)
                    .arg(&FENCE_FIELDS[..])
                    .query(conn)
                    .unwrap();
                let mut token = Vec::new();
                for (i, part) in parts.into_iter().enumerate() {
                    if i > 0 {
                        token.push(b':');
                    }
                    // An absent `cleared` is 0.
                    token.extend(part.unwrap_or_else(|| {
                        if i == 2 {
                            b"0".to_vec()
                        } else {
                            Vec::new()
                        }
                    }));
                }
                redis::cmd("SET").arg(&fence).arg(token).query::<()>(conn)
            }
            Act::Fence(v) => redis::cmd("SET").arg(&fence).arg(v).query::<()>(conn),
            Act::DelFence => redis::cmd("DEL").arg(&fence).query::<()>(conn),
            Act::DelMeta => redis::cmd("DEL").arg(&meta).query::<()>(conn),
            Act::Retype(target, ty) => {
                let key = retyped_key(t, name, *target);
                redis::cmd("DEL").arg(&key).query::<()>(conn).unwrap();
                let cmd = if *ty == "list" { "RPUSH" } else { "SADD" };
                redis::cmd(cmd).arg(&key).arg("x").query::<()>(conn)
            }
        }
        .unwrap();
    }
}

fn retyped_key(t: &Template, name: &str, target: Target) -> String {
    match target {
        Target::Meta => meta_key(name),
        Target::Fence => fence_key(name),
        Target::Block => t.newest_block(name),
    }
}

// ---------------------------------------------------------------------------
// Driving the API

/// The outcome of one call.
enum Got {
    /// Success. `present`: for calls about known items, whether each was
    /// reported present (check-and-insert: not new); all must be true.
    Ok {
        present: Vec<bool>,
    },
    Err(Error),
    Panic(String),
}

thread_local! {
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `f`, turning a panic into [`Got::Panic`].
fn call<T>(f: impl FnOnce() -> rotabloom::Result<T>, present: impl FnOnce(&T) -> Vec<bool>) -> Got {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Got::Ok {
            present: present(&v),
        },
        Ok(Err(e)) => Got::Err(e),
        Err(payload) => Got::Panic(panic_text(payload)),
    }
}

/// The message of a caught panic, and where it happened (from the hook).
fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into());
    let at = PANIC.with(|p| p.borrow_mut().take()).unwrap_or_default();
    format!("{msg}{at}")
}

fn short(s: &str) -> String {
    if s.len() <= 120 {
        return s.to_string();
    }
    let mut end = 120;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn none<T>(_: &T) -> Vec<bool> {
    Vec::new()
}

/// The operations common to the three handle types.
trait Handle: Sized {
    fn open_as(conn: &mut Connection, name: &str) -> rotabloom::Result<Self>;
    /// Runs every operation on this handle: `info` and `count` first,
    /// then the data calls, whose answers are judged, then rotations.
    fn drive(&self, conn: &mut Connection, tag: &str) -> Vec<(String, Got)>;
}

/// The data operations and `info`/`count`, for any handle type.
macro_rules! data_calls {
    ($h:expr, $conn:expr, $tag:expr) => {{
        let (h, conn, tag) = ($h, $conn, $tag);
        let known = known();
        let new = |what: &str, n: usize| -> Vec<String> {
            (0..n).map(|i| format!("new-{tag}-{what}-{i}")).collect()
        };
        let mut out: Vec<(String, Got)> = Vec::new();
        // First the calls that must see the corruption as applied: a write
        // below may legitimately change the metadata (an expansion
        // rewrites gens, next_seq, epoch and the fence).
        out.push((
            "info".to_string(),
            call(|| h.info(&mut *conn).map(|i| i.generations.len()), none),
        ));
        out.push(("count".to_string(), call(|| h.count(&mut *conn), none)));
        out.push((
            format!("contains_many({KNOWN} known)"),
            call(
                || h.contains_many(&mut *conn, &known),
                |v: &Vec<bool>| v.clone(),
            ),
        ));
        out.push((
            format!("contains_many({SMALL} known)"),
            call(
                || h.contains_many(&mut *conn, &known[..SMALL]),
                |v: &Vec<bool>| v.clone(),
            ),
        ));
        out.push((
            format!("check_and_insert_many({SMALL} known)"),
            call(
                || h.check_and_insert_many(&mut *conn, &known[..SMALL]),
                |v: &Vec<bool>| v.iter().map(|n| !n).collect(),
            ),
        ));
        let mut batch = known.clone();
        batch.extend(new("cai", NEW));
        out.push((
            format!("check_and_insert_many({KNOWN} known + {NEW} new)"),
            call(
                || h.check_and_insert_many(&mut *conn, &batch),
                |v: &Vec<bool>| v.iter().take(KNOWN).map(|n| !n).collect(),
            ),
        ));
        out.push((
            format!("insert_many({NEW} new)"),
            call(|| h.insert_many(&mut *conn, new("ins", NEW)), none),
        ));
        out.push((
            "contains(known)".to_string(),
            call(|| h.contains(&mut *conn, &known[0]), |v: &bool| vec![*v]),
        ));
        out.push((
            "check_and_insert(known)".to_string(),
            call(
                || h.check_and_insert(&mut *conn, &known[1]),
                |v: &bool| vec![!*v],
            ),
        ));
        out.push((
            "check_and_insert(new)".to_string(),
            call(|| h.check_and_insert(&mut *conn, &new("one", 1)[0]), none),
        ));
        out
    }};
}

impl Handle for BloomFilter {
    fn open_as(conn: &mut Connection, name: &str) -> rotabloom::Result<Self> {
        BloomFilter::open(conn, name)
    }
    fn drive(&self, conn: &mut Connection, tag: &str) -> Vec<(String, Got)> {
        data_calls!(self, conn, tag)
    }
}

impl Handle for ExpandingFilter {
    fn open_as(conn: &mut Connection, name: &str) -> rotabloom::Result<Self> {
        ExpandingFilter::open(conn, name)
    }
    fn drive(&self, conn: &mut Connection, tag: &str) -> Vec<(String, Got)> {
        let mut out = data_calls!(self, &mut *conn, tag);
        out.push(("expand".into(), call(|| self.expand(conn), none)));
        out
    }
}

impl Handle for CircularFilter {
    fn open_as(conn: &mut Connection, name: &str) -> rotabloom::Result<Self> {
        CircularFilter::open(conn, name).map(|f| f.with_clock(Arc::new(ManualClock::new(t0()))))
    }
    fn drive(&self, conn: &mut Connection, tag: &str) -> Vec<(String, Got)> {
        let mut out = data_calls!(self, &mut *conn, tag);
        out.push((
            "rotate_if_due_at(2000-01-01)".into(),
            call(|| self.rotate_if_due_at(&mut *conn, past()), none),
        ));
        out.push((
            "rotate_if_due_at(2200-01-01)".into(),
            call(|| self.rotate_if_due_at(&mut *conn, far_future()), none),
        ));
        out.push(("rotate".into(), call(|| self.rotate(&mut *conn), none)));
        out
    }
}

/// Opens `old` before the corruption, corrupts `fresh` and `old`, then
/// drives a handle opened now on `fresh` and the old one on `old`.
fn drive_case<H: Handle>(
    conn: &mut Connection,
    t: &Template,
    case: &Case,
    fresh: &str,
    old: &str,
) -> Vec<(String, Got)> {
    let before = H::open_as(conn, old)
        .unwrap_or_else(|e| panic!("{}: open before corrupting: {e}", case.label));
    apply(conn, t, fresh, &case.acts);
    apply(conn, t, old, &case.acts);
    let mut out = Vec::new();
    let mut opened = None;
    out.push((
        "fresh open".to_string(),
        call(
            || {
                H::open_as(conn, fresh).map(|h| {
                    opened = Some(h);
                })
            },
            none,
        ),
    ));
    if let Some(h) = &opened {
        for (c, g) in h.drive(conn, &format!("{}f", case.id)) {
            out.push((format!("fresh {c}"), g));
        }
    }
    for (c, g) in before.drive(conn, &format!("{}o", case.id)) {
        out.push((format!("old {c}"), g));
    }
    out
}

fn case_names(case: &Case) -> [String; 3] {
    ["f", "o", "s"].map(|s| format!("c{}{s}", case.id))
}

/// Copies, corrupts and drives one case; the CLI copy is corrupted too.
fn run_case(conn: &mut Connection, t: &Template, case: &Case) -> Vec<(String, Got)> {
    let [fresh, old, cli] = case_names(case);
    for name in [&fresh, &old, &cli] {
        copy_template(conn, t, name);
    }
    apply(conn, t, &cli, &case.acts);
    match t.tk {
        Tk::Bloom => drive_case::<BloomFilter>(conn, t, case, &fresh, &old),
        Tk::Expanding => drive_case::<ExpandingFilter>(conn, t, case, &fresh, &old),
        _ => drive_case::<CircularFilter>(conn, t, case, &fresh, &old),
    }
}

// ---------------------------------------------------------------------------
// The rules

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rule {
    /// (a) never a panic (or a hang); the CLI never prints "internal
    /// error" and exits 0, 1, 2 or 3.
    A,
    /// (b) never Contention, UnexpectedReply or a raw Lua error; never
    /// LimitReached for a corruption.
    B,
    /// (c) a corrupt value gives the typed error naming it, from every call
    /// that loads the metadata; never a wrong answer.
    C,
}

impl Rule {
    fn title(self) -> &'static str {
        match self {
            Rule::A => "(a) panic, hang, or CLI internal error / bad exit code",
            Rule::B => {
                "(b) forbidden error: Contention, UnexpectedReply, raw Lua error, \
                 LimitReached on corruption"
            }
            Rule::C => "(c) corrupt value not reported as the typed error, or a wrong answer",
        }
    }
}

/// Whether an error text is a raw Lua error that escaped a script.
fn is_lua_error(text: &str) -> bool {
    ["user_script", "Error running script", "attempt to"]
        .iter()
        .any(|s| text.contains(s))
}

fn field_matches(pattern: &str, field: &str) -> bool {
    match pattern {
        "fence" => field.contains("fence"),
        p if p.ends_with('*') => field.starts_with(&p[..p.len() - 1]),
        p => p == field,
    }
}

/// Whether `e` is the error `expect` asks for.
fn is_expected(expect: &Expect, e: &Error, key: &dyn Fn(Target) -> String) -> bool {
    match (expect, e) {
        // A long batch that met the corruption at a later step keeps the
        // earlier steps' answers; the cause is the typed error.
        (_, Error::Partial(p)) => match &p.failures[..] {
            [one] => is_expected(expect, &one.error, key),
            _ => false,
        },
        (Expect::Corrupt(fields), Error::CorruptMetadata { field, .. }) => {
            fields.iter().any(|p| field_matches(p, field))
        }
        // A handle opened before the uid changed cannot tell a corrupt uid
        // from another instance: it refuses it as re-created (a fresh open,
        // which has no uid to compare, reports the corruption).
        (Expect::Corrupt(fields), Error::Recreated { .. }) => fields.iter().any(|p| *p == "uid"),
        (Expect::Unsupported, Error::UnsupportedFormat { .. }) => true,
        (Expect::UnsupportedOrCorrupt, Error::UnsupportedFormat { .. }) => true,
        (Expect::UnsupportedOrCorrupt, Error::CorruptMetadata { field, .. }) => field == "format",
        (Expect::WrongType(t), Error::WrongType { key: k, .. }) => *k == key(*t),
        (Expect::NotFound, Error::NotFound { .. }) => true,
        (Expect::KindMismatch, Error::KindMismatch { .. }) => true,
        _ => false,
    }
}

/// Calls that must report a corruption rather than succeed: `open`, and
/// `count` and `info`, which always read the metadata (and the fence). A
/// data call or a rotation of a handle opened before the corruption may
/// still succeed on its cached view, as long as its answers are right.
/// A block of the wrong type is only seen by calls that read the block.
fn must_fail(expect: &Expect, call: &str) -> bool {
    let op = call.split_once(' ').map_or(call, |(_, op)| op);
    match expect {
        Expect::Valid => false,
        Expect::WrongType(Target::Block) => {
            op == "info" || op == format!("contains_many({KNOWN} known)")
        }
        _ => op == "open" || op == "count" || op == "info",
    }
}

/// The verdict on one call of one case: `None` if the outcome is allowed,
/// else the rule it breaks and why.
///
/// (a) Never a panic, for every call and every case.
/// (b) Never `Contention`, never `UnexpectedReply`, never a `Redis` error
///     that is a raw Lua error ("user_script", "Error running script",
///     "attempt to"); never `LimitReached` for a corruption.
/// (c) For an invalid value (per docs/FORMAT.md §6 and §6.4), an error is
///     exactly the expected one: `CorruptMetadata` naming the corrupted
///     field (or the other field of a violated relation, or the fence key
///     for fence corruption), `UnsupportedFormat` for `format`,
///     `WrongType` naming the key, `NotFound` for a deleted hash,
///     `KindMismatch` for another valid kind; the calls of [`must_fail`]
///     must return it; and no call answers wrongly (a known item reported
///     absent, or new).
/// (d) For a valid value, however extreme, any typed outcome but those of
///     (a) and (b).
fn judge(case: &Case, t: &Template, call: &str, got: &Got) -> Option<(Rule, String)> {
    let [fresh, old, _] = case_names(case);
    let name = if call.starts_with("fresh") {
        fresh
    } else {
        old
    };
    let key = |target: Target| retyped_key(t, &name, target);
    match got {
        Got::Panic(msg) => Some((Rule::A, format!("panic: {msg}"))),
        Got::Err(e) => {
            let text = e.to_string();
            let forbidden = match e {
                Error::Contention { .. } => Some("Contention"),
                Error::UnexpectedReply(_) => Some("UnexpectedReply"),
                Error::Redis(_) if is_lua_error(&text) => Some("raw Lua error"),
                Error::LimitReached { .. } if case.expect != Expect::Valid => Some("LimitReached"),
                _ => None,
            };
            if let Some(what) = forbidden {
                return Some((Rule::B, format!("{what}: {}", short(&text))));
            }
            if case.expect == Expect::Valid || is_expected(&case.expect, e, &key) {
                return None;
            }
            Some((
                Rule::C,
                format!(
                    "expected {}, got {}",
                    case.expect.label(),
                    short(&describe(e))
                ),
            ))
        }
        Got::Ok { present } => {
            if case.expect == Expect::Valid {
                return None;
            }
            if must_fail(&case.expect, call) {
                return Some((Rule::C, format!("expected {}, got Ok", case.expect.label())));
            }
            let missed = present.iter().filter(|p| !**p).count();
            (missed > 0).then(|| {
                (
                    Rule::C,
                    format!(
                        "wrong answer: {missed} of {} known items reported absent or new",
                        present.len()
                    ),
                )
            })
        }
    }
}

/// The variant and the salient field of an error.
fn describe(e: &Error) -> String {
    match e {
        Error::CorruptMetadata { field, reason, .. } => {
            format!("CorruptMetadata{{{}}} ({})", short(field), short(reason))
        }
        Error::WrongType { key, .. } => format!("WrongType{{{key}}}"),
        Error::Redis(r) => format!("Redis({})", short(&r.to_string())),
        other => format!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------
// The CLI

struct CliRun {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn cli(url: &str, args: &[&str], names: &[String]) -> CliRun {
    let child = Command::new(BIN)
        .arg("--redis")
        .arg(url)
        .args(args)
        .args(names)
        .env_remove("REDIS_URL")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rotabloom");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(CLI_TIMEOUT) {
        Ok(Ok(o)) => CliRun {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        },
        _ => {
            // Hung: end it (our own child, by its id).
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(pid.to_string())
                .status();
            CliRun {
                code: None,
                stdout: String::new(),
                stderr: String::new(),
            }
        }
    }
}

/// Rule (a) for the CLI: the problem with a run, if any.
fn cli_problem(run: &CliRun) -> Option<String> {
    if run.stdout.contains("internal error") || run.stderr.contains("internal error") {
        let line = run
            .stderr
            .lines()
            .chain(run.stdout.lines())
            .find(|l| l.contains("internal error"))
            .unwrap_or_default();
        return Some(format!("CLI: {}", short(line)));
    }
    match run.code {
        Some(0..=3) => None,
        Some(c) => Some(format!("CLI exit code {c}: {}", short(run.stderr.trim()))),
        None => Some("CLI hung or was killed".into()),
    }
}

/// Whether a `status --json` run reported every name (it stops at the
/// first Redis error, leaving the rest unchecked).
fn json_complete(run: &CliRun, names: &[String]) -> bool {
    serde_json::from_str::<serde_json::Value>(&run.stdout)
        .ok()
        .and_then(|v| v.get("filters").and_then(|f| f.as_array()).map(|f| f.len()))
        == Some(names.len())
}

/// Runs `status` (text, then `--json`) over `names`, splitting a batch
/// until each problem is pinned to one name. Returns (name, problem).
fn cli_failures(url: &str, names: &[String], out: &mut Vec<(String, String)>) {
    let text = cli(url, &["status"], names);
    let json = cli(url, &["status", "--json"], names);
    let problems: Vec<String> = [("status", &text), ("status --json", &json)]
        .into_iter()
        .filter_map(|(what, run)| cli_problem(run).map(|p| format!("{what}: {p}")))
        .collect();
    let complete = json_complete(&json, names);
    match (problems.is_empty(), names.len()) {
        (true, _) if complete => {}
        (true, 1) => {}
        (false, 1) => out.extend(problems.into_iter().map(|p| (names[0].clone(), p))),
        _ => {
            let (a, b) = names.split_at(names.len() / 2);
            cli_failures(url, a, out);
            cli_failures(url, b, out);
        }
    }
}

/// `detail` with the case filter names (`c123f`) and uids replaced by
/// `cN` and `UID`, so that the same problem in different cases reads the
/// same.
fn without_case_names(detail: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let b = word.as_bytes();
        let case_name = b.len() > 2
            && b[0] == b'c'
            && b[1..b.len() - 1].iter().all(u8::is_ascii_digit)
            && b"fos".contains(&b[b.len() - 1]);
        let uid = b.len() == 16 && b.iter().all(|c| c.is_ascii_hexdigit());
        out.push_str(if case_name {
            "cN"
        } else if uid {
            "UID"
        } else {
            word
        });
        word.clear();
    };
    for ch in detail.chars() {
        if ch.is_ascii_alphanumeric() {
            word.push(ch);
        } else {
            flush(&mut word, &mut out);
            out.push(ch);
        }
    }
    flush(&mut word, &mut out);
    out
}

// ---------------------------------------------------------------------------
// The test

#[test]
fn corrupt_metadata_never_panics_or_answers_wrongly() {
    let started = Instant::now();
    let server = RedisServer::start();
    let url = server.url();
    let mut conn = server.connection();
    let templates: Vec<Template> = KINDS
        .iter()
        .map(|&tk| make_template(&mut conn, tk))
        .collect();
    let templates = Arc::new(templates);
    let cases = Arc::new(all_cases(&templates));

    // Panics are outcomes here: keep their location, print nothing.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        PANIC.with(|p| *p.borrow_mut() = Some(at));
    }));

    // Cases run in a few lanes at once; each case in its own thread, so
    // that a hung case is reported and the others go on.
    let client = server.client();
    let next = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    for _ in 0..LANES {
        let (next, tx, cases, templates, client) = (
            Arc::clone(&next),
            tx.clone(),
            Arc::clone(&cases),
            Arc::clone(&templates),
            client.clone(),
        );
        std::thread::spawn(move || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= cases.len() {
                break;
            }
            let (case_tx, case_rx) = mpsc::channel();
            let (cs, ts, cl) = (Arc::clone(&cases), Arc::clone(&templates), client.clone());
            std::thread::spawn(move || {
                let out = catch_unwind(AssertUnwindSafe(|| {
                    let mut conn = cl.get_connection().expect("connect");
                    conn.set_read_timeout(Some(CASE_TIMEOUT)).unwrap();
                    run_case(&mut conn, &ts[cs[i].tpl], &cs[i])
                }));
                let _ = case_tx.send(out.map_err(panic_text));
            });
            let out = case_rx.recv_timeout(CASE_TIMEOUT).unwrap_or_else(|_| {
                Err(format!("hung or died (no result within {CASE_TIMEOUT:?})"))
            });
            if tx.send((i, out)).is_err() {
                break;
            }
        });
    }
    drop(tx);
    let mut outcomes: Vec<_> = rx.into_iter().collect();
    outcomes.sort_by_key(|(i, _)| *i);
    let mut failures: Vec<(Rule, String, String, String)> = Vec::new(); // rule, detail, case, call
    let mut calls = 0usize;
    for (i, out) in outcomes {
        let case = &cases[i];
        match out {
            Err(msg) => failures.push((
                Rule::A,
                format!("case aborted: {msg}"),
                case.label.clone(),
                "(case)".into(),
            )),
            Ok(out) => {
                for (call_name, got) in &out {
                    calls += 1;
                    if let Some((rule, detail)) = judge(case, &templates[case.tpl], call_name, got)
                    {
                        failures.push((rule, detail, case.label.clone(), call_name.clone()));
                    }
                }
            }
        }
    }
    std::panic::set_hook(default_hook);
    let lib_time = started.elapsed();

    // The CLI, on the untouched corrupted copies, in batches.
    let cli_names: Vec<String> = cases.iter().map(|c| case_names(c)[2].clone()).collect();
    let mut cli_out = Vec::new();
    for batch in cli_names.chunks(CLI_BATCH) {
        cli_failures(&url, batch, &mut cli_out);
    }
    for (name, problem) in cli_out {
        let id: usize = name[1..name.len() - 1].parse().unwrap();
        failures.push((
            Rule::A,
            problem,
            cases[id].label.clone(),
            "CLI status".into(),
        ));
    }

    // The summary: per rule, per distinct problem, the cases and calls.
    let mut by_class: BTreeMap<String, usize> = BTreeMap::new();
    for c in cases.iter() {
        let class = match &c.expect {
            Expect::Valid => "valid (d)".to_string(),
            Expect::Corrupt(_) => "CorruptMetadata".into(),
            other => other.label(),
        };
        *by_class.entry(class).or_default() += 1;
    }
    let mut summary = String::new();
    let failed_cases: BTreeSet<&String> = failures.iter().map(|f| &f.2).collect();
    let _ = writeln!(
        summary,
        "{} cases ({}), {calls} library calls, CLI status on every case; {} cases failed; \
         library part {:.1?}, total {:.1?}",
        cases.len(),
        by_class
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        failed_cases.len(),
        lib_time,
        started.elapsed(),
    );
    for rule in [Rule::A, Rule::B, Rule::C] {
        let of_rule: Vec<_> = failures.iter().filter(|f| f.0 == rule).collect();
        if of_rule.is_empty() {
            continue;
        }
        let cases_of_rule: BTreeSet<&String> = of_rule.iter().map(|f| &f.2).collect();
        let _ = writeln!(
            summary,
            "\n== {}: {} cases, {} calls",
            rule.title(),
            cases_of_rule.len(),
            of_rule.len()
        );
        // Group by problem (with the case-specific numbers of the filter
        // name left out), then by case.
        let mut groups: BTreeMap<String, BTreeMap<&String, Vec<&String>>> = BTreeMap::new();
        for (_, detail, case, call_name) in &of_rule {
            groups
                .entry(without_case_names(detail))
                .or_default()
                .entry(case)
                .or_default()
                .push(call_name);
        }
        for (problem, cases_of) in groups {
            let _ = writeln!(summary, "  -- {problem}  [{} cases]", cases_of.len());
            for (case, calls_of) in cases_of {
                let calls_of: Vec<&str> = calls_of.iter().map(|s| s.as_str()).collect();
                let _ = writeln!(summary, "       {case}  <- {}", calls_of.join(", "));
            }
        }
    }
    assert!(failures.is_empty(), "corruption cases failed:\n{summary}");
    println!("{summary}");
}
