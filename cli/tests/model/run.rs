//! Runs a sequence against a fresh world and the model side by side, and
//! checks the properties after every step:
//!
//! * no false negative: an item the model has in the window answers
//!   present (a query) and is never answered new (a check-and-insert);
//! * "new" at most once per item per window across all clients, but
//!   for the calls delivered at least once that lost a reply: every
//!   answer of theirs new, `unknown()` the whole batch (the lines the
//!   command line says, exit 6, no more lines printed again than that),
//!   and 0 for every call that lost nothing or is exactly once;
//! * counts equal the model's (within the writes of unknown outcome; an
//!   item sent again is counted at most once, by the bits);
//! * a capped generation never holds more than its capacity, and a
//!   refused item is an error, never "present";
//! * the false-positive rate within its bound (a binomial test);
//! * every error is one the step allows, typed, with a plain message;
//!   no panic;
//! * no key but those docs/FORMAT.md §5 names, and none at all of a
//!   dropped filter;
//! * rotations exactly as owed, whatever the number of callers.

use crate::model::{MFilter, Model};
use crate::steps::{
    Call, Fault, Full, Midway, Op, Protocol, Runner, Shape, Spec, Step, Store, FILTERS,
};
use crate::world::{item, name, Outcome, Resent, World};
use rotabloom::{Error, ExpandingFilter, Legacy};
use std::collections::{BTreeMap, BTreeSet};

/// A property that did not hold, at a step.
#[derive(Debug, Clone)]
pub struct Failure {
    pub step: usize,
    pub message: String,
}

/// Figures of a run.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub steps: u64,
    pub calls: u64,
    pub items: u64,
    /// Writes delivered at least once, and of them those that lost
    /// answers with a reply (sent again, counted unknown).
    pub least: u64,
    pub lost: u64,
    /// Cluster: filters whose root a restart lost, dropped by their
    /// shards' names.
    pub orphans: u64,
    /// Cluster: filters created on each backend (bitmap, RedisBloom,
    /// valkey-bloom), by `Store::index`.
    pub backends: [u64; 3],
    /// Cluster: steps with a Python client beside a Rust one.
    pub python: u64,
}

/// What may go wrong during a step, besides the model's own answers.
#[derive(Clone, Copy, Default)]
struct Hazards {
    /// Replies may be lost: retryable errors, writes of unknown outcome.
    lossy: bool,
    /// A writer may turn the base filter into an expanding one during the
    /// step (`when_full = expand`): typed handles of the base kind refuse
    /// it from then on.
    converting: bool,
}

pub struct Run {
    pub world: World,
    model: Model,
    /// Per slot: whether a filter of this name existed before, so a
    /// handle kept from then may find another kind or other parameters.
    reborn: Vec<bool>,
    hazards: Hazards,
    /// Faults that apply to the next step only.
    pending: Option<Fault>,
    fresh: u32,
    pub stats: Stats,
}

fn fail<T>(message: impl Into<String>) -> Result<T, String> {
    Err(message.into())
}

/// Library text that must never reach a user.
fn plain(e: &Error) -> Result<(), String> {
    let text = e.to_string();
    for raw in [
        "Incompatible type",
        "Parse error",
        "value was",
        "An error was signalled",
        "script: ",
        "@user_script",
    ] {
        if text.contains(raw) {
            return fail(format!(
                "error message with raw library text ({raw:?}): {text}"
            ));
        }
    }
    Ok(())
}

/// Whether `e` is a loud sign of damaged data (never a wrong answer).
fn damage_error(e: &Error) -> bool {
    match e {
        Error::MissingData { .. } | Error::WrongType { .. } | Error::CorruptMetadata { .. } => true,
        Error::Redis(r) => r.inner().code() == Some("WRONGTYPE"),
        _ => false,
    }
}

/// P(X >= x) for X ~ Binomial(n, p), by summing the terms in logs.
fn binomial_tail(n: u64, p: f64, x: u64) -> f64 {
    let ln_choose = |k: u64| -> f64 { (1..=k).map(|i| ((n - k + i) as f64 / i as f64).ln()).sum() };
    (x..=n)
        .map(|k| (ln_choose(k) + k as f64 * p.ln() + (n - k) as f64 * (1.0 - p).ln()).exp())
        .sum()
}

impl Run {
    pub fn new(module: Option<String>) -> Run {
        Run {
            world: World::new(module),
            model: Model::new(FILTERS as usize),
            reborn: vec![false; FILTERS as usize],
            hazards: Hazards::default(),
            pending: None,
            fresh: 100_000_000,
            stats: Stats::default(),
        }
    }

    fn model(&self, f: u8) -> Option<&MFilter> {
        self.model.filters[f as usize].as_ref()
    }

    fn set(&mut self, f: u8, m: Option<MFilter>) {
        if self.model.filters[f as usize].is_some() || m.is_none() {
            self.reborn[f as usize] = true;
        }
        self.world.reshaped(f, m.as_ref().map(|m| m.spec.shape));
        self.model.filters[f as usize] = m;
    }

    /// Runs `steps`; the first property that fails, with its step.
    pub fn steps(&mut self, steps: &[Step]) -> Result<(), Failure> {
        for (i, step) in steps.iter().enumerate() {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.step(step)));
            let r = match r {
                Ok(r) => r,
                Err(p) => Err(format!(
                    "panic: {}",
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default()
                )),
            };
            self.stats.steps += 1;
            r.and_then(|()| self.keys())
                .map_err(|message| Failure { step: i, message })?;
        }
        Ok(())
    }

    fn step(&mut self, step: &Step) -> Result<(), String> {
        // A fault for "the next step" applies to this one, then lapses.
        let pending = self.pending.take();
        let lossy = matches!(
            pending,
            Some(Fault::LoseReplies { .. } | Fault::KillConnections)
        );
        self.hazards = Hazards {
            lossy,
            converting: false,
        };
        // Connections killed while the step runs.
        let stop = std::sync::atomic::AtomicBool::new(false);
        let r = std::thread::scope(|s| {
            // Only while calls or a creation run: the model's own reads
            // must get through.
            let killable = matches!(step, Step::Data { .. } | Step::Create { .. });
            if killable && matches!(pending, Some(Fault::KillConnections)) {
                let mut conn = self.world.admin();
                let stop = &stop;
                s.spawn(move || {
                    for pause in [0u64, 1, 2, 5, 10, 20] {
                        if stop.load(std::sync::atomic::Ordering::Relaxed) {
                            break;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(pause));
                        // The clients' connections, not the model's own.
                        for user in ["default", "nowatch"] {
                            let _: redis::RedisResult<i64> = redis::cmd("CLIENT")
                                .arg("KILL")
                                .arg("USER")
                                .arg(user)
                                .query(&mut conn);
                        }
                    }
                });
            }
            let r = self.act(step);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            r
        });
        if lossy {
            self.world.proxy.cut_every(0, 0);
            self.world.reconnect_all();
        }
        r
    }

    fn act(&mut self, step: &Step) -> Result<(), String> {
        match step {
            Step::Create { f, spec } => self.create(*f, spec),
            Step::Data { f, calls } => self.data(*f, calls),
            Step::Rotate { f, clients } => self.rotate(*f, *clients, None),
            Step::RotateIfDue { f, clients, hour } => self.rotate(*f, *clients, Some(*hour)),
            Step::Expand { f } => self.expand(*f),
            Step::Convert { f } => self.convert(*f),
            Step::Clear { f } => self.clear(*f),
            Step::DumpRestore { f, to } => self.dump_restore(*f, *to),
            Step::Adopt { f, items } => self.adopt(*f, items),
            Step::Drop { f } => self.drop(*f),
            Step::Fault(fault) => self.fault(*fault),
            Step::Probe { f } => self.probe(*f),
            Step::Stream {
                f,
                first,
                midway,
                second,
            } => self.stream(*f, first, *midway, second),
        }
    }

    /// An error a step that expected success got: allowed only when a
    /// hazard explains it.
    fn excused(&self, f: u8, e: &Error) -> Result<(), String> {
        plain(e)?;
        // A long batch that met the fault at a later step keeps the
        // earlier steps' answers; the cause is what must be excused.
        if let Error::Partial(p) = e {
            if let [one] = &p.failures[..] {
                return self.excused(f, &one.error);
            }
        }
        let m = self.model(f);
        let ok = match e {
            Error::NotFound { .. } => m.is_none(),
            e if e.is_retryable() => self.hazards.lossy,
            e if damage_error(e) => m.is_some_and(|m| m.damaged),
            Error::KindMismatch { .. }
            | Error::ParameterMismatch { .. }
            | Error::Recreated { .. } => self.reborn[f as usize] || self.hazards.converting,
            _ => false,
        };
        match ok {
            true => Ok(()),
            false => fail(format!("unexpected error: {e} ({e:?})")),
        }
    }

    fn create(&mut self, f: u8, spec: &Spec) -> Result<(), String> {
        if spec.store.is_module() && self.world.module.is_none() {
            return Ok(());
        }
        let existed = self.model(f).is_some();
        match self.world.create(f, spec) {
            Ok(()) if existed => {
                // Opened: it must be the very filter asked for.
                match self.model(f).map(|m| m.spec) {
                    Some(s) if s == *spec => Ok(()),
                    other => fail(format!("create_or_open of {spec:?} opened {other:?}")),
                }
            }
            Ok(()) => {
                let any = self.world.any(f).map_err(|e| e.to_string())?;
                let info = any
                    .info(&mut self.world.admin())
                    .map_err(|e| e.to_string())?;
                let caps = info.generations.iter().map(|g| g.capacity).collect();
                let period = info
                    .fields
                    .get("period")
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(0);
                if info.generations.iter().any(|g| g.count != 0) {
                    return fail("a new filter has items");
                }
                self.set(f, Some(MFilter::new(*spec, caps, period)));
                Ok(())
            }
            Err(Error::ParameterMismatch { .. } | Error::KindMismatch { .. }) if existed => Ok(()),
            Err(e) if e.is_retryable() && self.hazards.lossy && !existed => {
                // The reply was lost: made or not, the server says which.
                plain(&e)?;
                let made: bool = redis::cmd("EXISTS")
                    .arg(format!("rotabloom:{{{}}}:meta", name(f)))
                    .query(&mut self.world.admin())
                    .map_err(|e| e.to_string())?;
                if made {
                    self.world.reshaped(f, Some(spec.shape));
                    let any = self.world.any(f).map_err(|e| e.to_string())?;
                    let info = any
                        .info(&mut self.world.admin())
                        .map_err(|e| e.to_string())?;
                    let caps = info.generations.iter().map(|g| g.capacity).collect();
                    let period = info
                        .fields
                        .get("period")
                        .and_then(|p| p.parse().ok())
                        .unwrap_or(0);
                    self.set(f, Some(MFilter::new(*spec, caps, period)));
                }
                Ok(())
            }
            Err(e) => self.excused(f, &e),
        }
    }

    fn data(&mut self, f: u8, calls: &[Call]) -> Result<(), String> {
        self.hazards.converting = self.model(f).is_some_and(|m| m.spec.shape == Shape::Bloom)
            && calls.iter().any(converts);
        self.stats.calls += calls.len() as u64;
        self.stats.items += calls.iter().map(|c| c.items.len() as u64).sum::<u64>();
        let (outcomes, resent): (Vec<Outcome>, Vec<Resent>) =
            self.world.run_calls(f, calls).into_iter().unzip();
        if std::env::var("ROTABLOOM_MODEL_TRACE").is_ok() {
            for ((c, o), r) in calls.iter().zip(&outcomes).zip(&resent) {
                eprintln!(
                    "trace: {:?} {:?} {:?}\n  -> {o:?} {r:?}",
                    c.op, c.protocol, c.items
                );
            }
        }
        let Some(pre) = self.model(f).cloned() else {
            for (call, o) in calls.iter().zip(&outcomes) {
                match o {
                    Outcome::Answers(_) => {
                        return fail("answers from a filter that does not exist")
                    }
                    // A handle kept from a filter of this name plans by
                    // that one, and may ask for the transaction first.
                    Outcome::Failed {
                        error: Error::PermissionDenied { .. },
                        ..
                    } if call.no_watch && self.reborn[f as usize] => {}
                    Outcome::Failed { error, .. } => self.excused(f, error)?,
                    Outcome::Printed { code, stderr, .. } => {
                        if *code != 2 && !(self.hazards.lossy && *code == 3) {
                            return fail(format!(
                                "the command line on a missing filter: exit {code}: {stderr}"
                            ));
                        }
                    }
                }
            }
            return Ok(());
        };
        // A user refused WATCH: a call that takes the guarded transaction
        // must fail loudly; one that takes the script answers.
        for (call, o) in calls.iter().zip(&outcomes) {
            if !call.no_watch {
                continue;
            }
            let refused = matches!(o, Outcome::Failed { error: Error::PermissionDenied { message }, .. } if message.contains("watch"));
            match (takes_transaction(&pre, call), refused) {
                (true, false) if !self.hazards.lossy && !pre.damaged => {
                    if let Outcome::Answers(_) = o {
                        return fail("a guarded transaction ran for a user refused WATCH");
                    }
                }
                // Unless a handle kept from another filter of this name
                // planned by that one (whose writes the transaction
                // could express): refused before it could see the change.
                (false, true) if !self.reborn[f as usize] => {
                    return fail("a call that takes the script was refused for WATCH");
                }
                _ => {}
            }
        }
        // Pass 1: every answer against the filter as it was before the
        // step (the calls ran at once: only what held before is certain).
        let mut new_by_item: BTreeMap<u32, u32> = BTreeMap::new();
        let mut warned = false;
        // Per call: its answers are those of a run sent again after a lost
        // reply (at least once), which say nothing of what it changed.
        let mut lost = Vec::with_capacity(calls.len());
        for ((call, o), &r) in calls.iter().zip(&outcomes).zip(&resent) {
            lost.push(self.delivered(call, o, r)?);
            let lost = lost[lost.len() - 1];
            if call.protocol == Protocol::AtLeastOnce {
                self.stats.least += 1;
                self.stats.lost += u64::from(lost);
            }
            warned |= call.full == Full::WarnOn && call.op != Op::Contains && !pre.capped(true);
            let (answers, refused) = match o {
                Outcome::Answers(a) => {
                    if a.len() != call.items.len() {
                        return fail(format!(
                            "{} answers for {} items",
                            a.len(),
                            call.items.len()
                        ));
                    }
                    (a.as_slice(), None)
                }
                Outcome::Failed { error, answered } => {
                    match error {
                        Error::PermissionDenied { .. } if call.no_watch => {}
                        Error::Full { .. } => {
                            if !pre.capped(call.full == Full::WarnOn) || call.op == Op::Contains {
                                return fail(format!("full error where writes go on: {error}"));
                            }
                            plain(error)?;
                        }
                        Error::LimitReached { .. } if pre.spec.shape == Shape::Expanding => {}
                        e => self.excused(f, e)?,
                    }
                    let refused = matches!(error, Error::Full { .. }).then_some(answered.len());
                    (answered.as_slice(), refused)
                }
                Outcome::Printed {
                    items,
                    code,
                    stderr,
                } => {
                    // Every line `filter` printed is a "new" answer, but
                    // those of a run that lost some may repeat anyone's.
                    let lost = self.check_cli(&pre, call, items, *code, stderr)?;
                    self.stats.lost += u64::from(lost);
                    if call.op != Op::Contains && !lost {
                        for &it in items {
                            *new_by_item.entry(it).or_default() += 1;
                        }
                    }
                    continue;
                }
            };
            if let Some(r) = refused {
                if let Some(&it) = call.items.get(r) {
                    // A check-and-insert answers an item anywhere in the
                    // window; an insert, one its deciding generation holds.
                    let held = match call.op {
                        Op::Insert => pre.gens[pre.decider()].present.contains(&it),
                        _ => pre.present(it),
                    };
                    if held && !pre.maybe(it) {
                        return fail(format!("item {it} refused as full, but it is present"));
                    }
                }
            }
            for (&it, &a) in call.items.iter().zip(answers) {
                let known = pre.present(it) && !pre.maybe(it);
                match call.op {
                    Op::Contains if known && !a => {
                        return fail(format!("false negative: item {it} is in the window"));
                    }
                    // All new (`delivered` checked it), maybe again.
                    Op::CheckAndInsert if lost => {}
                    Op::CheckAndInsert if known && a => {
                        return fail(format!("item {it} answered new, but it is in the window"));
                    }
                    Op::CheckAndInsert if a => {
                        *new_by_item.entry(it).or_default() += 1;
                    }
                    // An insert into an expanding filter writes its newest
                    // generation only: after a growth it may change the
                    // filter again (a base filter too, once `expand` made
                    // it grow).
                    Op::Insert
                        if a && pre.spec.shape != Shape::Expanding && !self.hazards.converting =>
                    {
                        *new_by_item.entry(it).or_default() += 1;
                    }
                    _ => {}
                }
            }
        }
        if let Some((it, n)) = new_by_item.iter().find(|(_, &n)| n > 1) {
            return fail(format!(
                "item {it} answered new {n} times in one step by calls that lost no reply"
            ));
        }
        // Pass 2: the model takes the answers: every "changed" first (each
        // counted once), then the rest (present, not counted).
        let mut m = pre.clone();
        m.over |= warned;
        let mut changed = Vec::new();
        let mut unchanged = Vec::new();
        let mut again = Vec::new();
        for (((call, o), r), &lost) in calls.iter().zip(&outcomes).zip(&resent).zip(&lost) {
            if call.op == Op::Contains {
                continue;
            }
            let cai = call.op == Op::CheckAndInsert;
            if self.hazards.lossy {
                // Every run of the call may have lost its reply after its
                // transaction counted all it wrote: the command line's
                // retries, or the library's runs sent again (and a last
                // one that failed).
                let runs = match call.runner {
                    Runner::Cli => crate::world::CLI_RETRIES + 1,
                    _ => r.tries + 1,
                };
                m.lost_runs(u64::from(runs) * call.items.len() as u64);
            }
            if lost && !cai {
                // Each lost run may have counted each item once: in a
                // generation that grew since, the next run counts it again.
                m.total_maybe += u64::from(r.tries) * call.items.len() as u64;
            }
            let mut take = |answers: &mut dyn Iterator<Item = (u32, bool)>| {
                for (it, yes) in answers {
                    match (yes, lost) {
                        // An insert's "changed" is this run's own: exact.
                        (true, false) => changed.push(it),
                        (true, true) if !cai => changed.push(it),
                        (_, true) => again.push(it),
                        (false, false) => unchanged.push((it, cai)),
                    }
                }
            };
            match o {
                Outcome::Answers(a) => take(&mut call.items.iter().copied().zip(a.iter().copied())),
                Outcome::Failed { error, answered } => {
                    take(&mut call.items.iter().copied().zip(answered.iter().copied()));
                    // A refusal wrote nothing after the prefix (but a lost
                    // run before it may have); anything else may have
                    // written anything.
                    if !matches!(error, Error::Full { .. }) || lost {
                        for &it in &call.items[answered.len().min(call.items.len())..] {
                            m.unknown(it);
                        }
                    }
                }
                Outcome::Printed {
                    items,
                    code,
                    stderr,
                } => {
                    let lost = crate::bin::lost_answers(stderr).is_some();
                    let mut printed: BTreeSet<u32> = items.iter().copied().collect();
                    for &it in &call.items {
                        // A line is printed once, for its first occurrence
                        // (of a batch whose answers were lost, each).
                        if printed.remove(&it) {
                            match lost {
                                true => again.push(it),
                                false => changed.push(it),
                            }
                        } else if *code == 0 || *code == 6 {
                            unchanged.push((it, true));
                        } else {
                            m.unknown(it);
                        }
                    }
                }
            }
        }
        // A base filter whose by-name writer says `when_full = expand`
        // becomes an expanding filter once full.
        if m.spec.shape == Shape::Bloom && calls.iter().any(converts) {
            let kind = self.world.any(f).map(|a| a.kind());
            if matches!(kind, Ok(rotabloom::Kind::Expanding)) {
                // Items whose writes nobody heard (a killed process) may
                // have filled it too: only with all of them it must be full.
                let g0 = &m.gens[0];
                let first = g0.counted.len() as u64
                    + g0.maybe.difference(&g0.counted).count() as u64
                    + changed.len() as u64
                    + again.len() as u64;
                if first < g0.capacity {
                    return fail("converted to expanding before it was full");
                }
                m.spec.shape = Shape::Expanding;
                m.spec.capacity = m.gens[0].capacity;
                self.reborn[f as usize] = true;
                self.world.reshaped(f, Some(Shape::Expanding));
            }
        }
        for it in changed {
            m.changed(it);
        }
        for it in again {
            m.resent(it);
        }
        for (it, cai) in unchanged {
            m.unchanged(it, cai);
        }
        self.model.filters[f as usize] = Some(m);
        self.counts(f)
    }

    /// What an idempotent batch of `call` said of its runs (`r`) against
    /// what its delivery promises; whether its answers are those of a run
    /// sent again after a lost reply (at least once).
    fn delivered(&self, call: &Call, o: &Outcome, r: Resent) -> Result<bool, String> {
        let batch = matches!(call.protocol, Protocol::Idempotent | Protocol::AtLeastOnce)
            && call.op != Op::Contains
            && call.runner != Runner::Cli;
        if !batch {
            return Ok(false);
        }
        if r.tries > 0 && !self.hazards.lossy {
            return fail(format!(
                "a batch was sent {} times with no fault to lose a reply",
                r.tries + 1
            ));
        }
        let lost = call.protocol == Protocol::AtLeastOnce && r.tries > 0;
        // Exactly once, nothing is unknown; at least once, every answer of
        // the run after a lost reply (a refusal's too), and none else.
        let answers = match o {
            Outcome::Answers(a) => a.as_slice(),
            Outcome::Failed {
                error: Error::Full { .. },
                answered,
            } => answered.as_slice(),
            _ => &[],
        };
        let unknown = if lost { answers.len() } else { 0 };
        if r.unknown != unknown {
            return fail(format!(
                "a {:?} batch of {} items, sent {} times, {o:?}: unknown() {}, owed {unknown}",
                call.protocol,
                call.items.len(),
                r.tries + 1,
                r.unknown
            ));
        }
        if lost && call.op == Op::CheckAndInsert {
            if let Some(i) = answers.iter().position(|&a| !a) {
                return fail(format!(
                    "at least once, after {} lost replies, item {} answered seen: which of its writes the lost run applied nobody knows, and a new item must never be dropped",
                    r.tries,
                    call.items[i]
                ));
            }
        }
        Ok(lost)
    }

    /// A command-line call's output against the filter before the step;
    /// whether the run said it lost answers (at least once), whose lines'
    /// answers are then all "new".
    fn check_cli(
        &self,
        pre: &MFilter,
        call: &Call,
        printed: &[u32],
        code: i32,
        stderr: &str,
    ) -> Result<bool, String> {
        let set: BTreeSet<u32> = printed.iter().copied().collect();
        let least = call.protocol == Protocol::AtLeastOnce && call.op != Op::Contains;
        let lost = crate::bin::lost_answers(stderr);
        match lost {
            Some(_) if !least => {
                return fail(format!("an exactly-once run lost answers: {stderr}"));
            }
            Some(_) if !self.hazards.lossy => {
                return fail(format!("answers lost with no fault to lose them: {stderr}"));
            }
            Some(n) if n == 0 || n > call.items.len() as u64 => {
                return fail(format!(
                    "the answers of {n} of {} lines lost: {stderr}",
                    call.items.len()
                ));
            }
            Some(_) if code == 0 => {
                return fail(format!("exit 0 though answers were lost: {stderr}"));
            }
            None if code == 6 => {
                return fail(format!("exit 6 but no count of lost answers: {stderr}"));
            }
            _ => {}
        }
        let allowed_code = match (call.op, code) {
            (_, 0) => true,
            (Op::CheckAndInsert, 6) => least,
            (Op::Contains, 1) => set.is_empty(),
            (_, 3) => {
                self.hazards.lossy
                    || pre.damaged
                    || (call.op != Op::Contains && pre.capped(call.full == Full::WarnOn))
            }
            (_, 2) => self.reborn_any(),
            _ => false,
        };
        if !allowed_code {
            return fail(format!("the command line exited {code}: {}", stderr.trim()));
        }
        if stderr.contains("Incompatible type") || stderr.contains("Parse error") {
            return fail(format!("raw library text on standard error: {stderr}"));
        }
        if code != 0 && code != 1 && code != 6 {
            return Ok(lost.is_some());
        }
        // Lines printed that a run with exact answers would not print: a
        // line in the window, a line printed again. Each is a line of a
        // batch whose answers were lost, of which there were `lost`.
        let extra = printed.len() - set.len()
            + set
                .iter()
                .filter(|&&it| pre.present(it) && !pre.maybe(it))
                .count();
        if let Some(n) = lost {
            if extra as u64 > n {
                return fail(format!(
                    "`filter` printed {extra} lines it had seen or printed before, but said the answers of only {n} were lost"
                ));
            }
            return Ok(true);
        }
        for &it in &call.items {
            let known = pre.present(it) && !pre.maybe(it);
            match call.op {
                Op::Contains if known && !set.contains(&it) => {
                    return fail(format!(
                        "`check` did not print item {it}, which is in the window"
                    ));
                }
                Op::CheckAndInsert if known && set.contains(&it) => {
                    return fail(format!(
                        "`filter` printed item {it}, which is in the window"
                    ));
                }
                _ => {}
            }
        }
        if call.op != Op::Contains && printed.len() != set.len() {
            return fail("`filter` printed a line twice");
        }
        Ok(false)
    }

    fn reborn_any(&self) -> bool {
        self.reborn.iter().any(|&r| r)
    }

    /// Counts against the model, and capacity.
    fn counts(&mut self, f: u8) -> Result<(), String> {
        let Some(m) = self.model.filters[f as usize].as_mut() else {
            return Ok(());
        };
        if m.damaged {
            return Ok(());
        }
        // The model's own read; a connection killed by the step's fault
        // is tried again.
        let mut last = String::new();
        let mut got = None;
        for _ in 0..20 {
            let mut conn = self.world.admin();
            match rotabloom::AnyFilter::open(&mut conn, &name(f)).and_then(|a| a.info(&mut conn)) {
                Ok(info) => {
                    got = Some(info);
                    break;
                }
                Err(e) if e.is_retryable() && self.hazards.lossy => last = e.to_string(),
                Err(e) => return fail(format!("the filter cannot be read: {e}")),
            }
        }
        let Some(info) = got else {
            return fail(format!("the filter cannot be read: {last}"));
        };
        let real: Vec<u64> = info.generations.iter().map(|g| g.count).collect();
        if m.spec.shape == Shape::Expanding {
            m.sync_growth(real.len(), self.hazards.converting)?;
            if self.hazards.converting {
                m.resync_counts(&real);
            }
        }
        if real.len() != m.gens.len() {
            return fail(format!(
                "{} generations, the model has {}",
                real.len(),
                m.gens.len()
            ));
        }
        let iaqo = matches!(m.spec.shape, Shape::Circular { newest: false, .. });
        let expanding = m.spec.shape == Shape::Expanding;
        if expanding {
            // Which generation took an item depends on how concurrent
            // writers met its growth; the sum does not.
            let sum: u64 = real.iter().skip(usize::from(m.legacy)).sum();
            if sum < m.total || sum > m.total + m.total_maybe {
                return fail(format!(
                    "the generations count {sum} in all, the model {}..={}",
                    m.total,
                    m.total + m.total_maybe
                ));
            }
        }
        for (i, (g, &count)) in m.gens.iter().zip(&real).enumerate() {
            if m.legacy && i == 0 {
                continue;
            }
            let cap = info.generations[i].capacity;
            if g.capacity != cap {
                return fail(format!(
                    "generation {i} has capacity {cap}, the model {}",
                    g.capacity
                ));
            }
            if !m.over && count > cap {
                return fail(format!(
                    "generation {i} holds {count} items, past its capacity {cap}"
                ));
            }
            // Write-only generations count what they took themselves.
            if (iaqo && i != m.decider()) || expanding {
                continue;
            }
            let (lo, hi) = g.count_range();
            if count < lo || count > hi {
                return fail(format!(
                    "generation {i} counts {count}, the model {lo}..={hi}"
                ));
            }
        }
        Ok(())
    }

    fn rotate(&mut self, f: u8, clients: u8, hour: Option<i64>) -> Result<(), String> {
        let results = match hour {
            Some(h) => self.world.rotate_if_due(f, clients, h),
            None => self.world.rotate(f, clients),
        };
        let circular = self
            .model(f)
            .is_some_and(|m| matches!(m.spec.shape, Shape::Circular { .. }));
        let mut done = 0;
        for r in results {
            match r {
                Ok(n) => done += n,
                Err(Error::KindMismatch { .. }) if !circular => {}
                Err(e) => self.excused(f, &e)?,
            }
        }
        let Some(m) = self.model.filters[f as usize].as_mut() else {
            return Ok(());
        };
        if !circular {
            return Ok(());
        }
        let n = match m.spec.shape {
            Shape::Circular { n, .. } => n as i64,
            _ => 0,
        };
        let owed = match hour {
            Some(h) if h > m.period => (h - m.period).min(n) as u32,
            Some(_) => 0,
            // Every caller opened its handle just before: one rotates.
            None => 1,
        };
        if done != owed && !self.hazards.lossy && !m.damaged {
            return fail(format!("{done} rotations, {owed} owed"));
        }
        for _ in 0..done {
            m.rotate();
        }
        if let Some(h) = hour {
            m.period = m.period.max(h);
        }
        self.counts(f)
    }

    fn expand(&mut self, f: u8) -> Result<(), String> {
        let mut conn = self.world.admin();
        let r = ExpandingFilter::open(&mut conn, &name(f)).and_then(|h| h.expand(&mut conn));
        match (r, self.model.filters[f as usize].as_mut()) {
            (Ok(true), Some(m)) if m.spec.shape == Shape::Expanding => {
                m.grow();
                self.counts(f)
            }
            (Ok(x), m) => fail(format!("expand said {x} for {:?}", m.map(|m| m.spec))),
            (Err(Error::KindMismatch { .. }), Some(m)) if m.spec.shape != Shape::Expanding => {
                Ok(())
            }
            (Err(Error::LimitReached { .. }), Some(_)) => Ok(()),
            (Err(e), _) => self.excused(f, &e),
        }
    }

    fn convert(&mut self, f: u8) -> Result<(), String> {
        let mut conn = self.world.admin();
        let r = ExpandingFilter::builder(name(f)).convert_bloom(&mut conn);
        let shape = self.model(f).map(|m| m.spec.shape);
        match (r, shape) {
            (Ok(_), Some(Shape::Bloom)) => {
                if let Some(m) = self.model.filters[f as usize].as_mut() {
                    m.spec.shape = Shape::Expanding;
                    m.spec.capacity = m.gens[0].capacity;
                }
                self.reborn[f as usize] = true;
                self.world.reshaped(f, Some(Shape::Expanding));
                self.counts(f)
            }
            (Ok(_), Some(Shape::Expanding)) => Ok(()),
            (Ok(_), s) => fail(format!("converted a filter of shape {s:?}")),
            (Err(Error::KindMismatch { .. }), Some(Shape::Circular { .. })) => Ok(()),
            (Err(e), _) => self.excused(f, &e),
        }
    }

    fn clear(&mut self, f: u8) -> Result<(), String> {
        let r = self
            .world
            .any(f)
            .and_then(|a| a.clear(&mut self.world.admin()));
        match r {
            Ok(()) => match self.model.filters[f as usize].as_mut() {
                Some(m) => {
                    m.clear();
                    self.counts(f)
                }
                None => fail("cleared a filter that does not exist"),
            },
            Err(e) => self.excused(f, &e),
        }
    }

    fn dump_restore(&mut self, f: u8, to: u8) -> Result<(), String> {
        let mut conn = self.world.admin();
        let mut buf = Vec::new();
        let dumped = rotabloom::dump::dump(&mut conn, &name(f), &mut buf);
        let Some(m) = self.model(f).cloned() else {
            return match dumped {
                Err(e) => self.excused(f, &e),
                Ok(_) => fail("dumped a filter that does not exist"),
            };
        };
        match dumped {
            Err(e) if m.spec.store.is_module() || m.damaged => return plain(&e),
            Err(e) => return fail(format!("dump: {e}")),
            Ok(_) if m.spec.store.is_module() => return fail("dumped a module filter"),
            Ok(_) => {}
        }
        let restored = rotabloom::dump::restore(&mut conn, &buf[..], Some(&name(to)));
        match (restored, self.model(to).is_some()) {
            (Ok(_), false) => {
                self.set(to, Some(m));
                self.counts(to)
            }
            (Ok(_), true) => fail("restore overwrote a filter"),
            (Err(Error::AlreadyExists { .. }), true) => Ok(()),
            (Err(e), _) => fail(format!("restore: {e}")),
        }
    }

    fn adopt(&mut self, f: u8, items: &[u32]) -> Result<(), String> {
        let mut conn = self.world.admin();
        let key = format!("legacy:{f}");
        write_legacy(&mut conn, &key, items);
        let r = ExpandingFilter::builder(name(f))
            .capacity(1_000)
            .error_rate(0.01)
            .adopt_legacy(
                &mut conn,
                // Short item texts hash into the bitmap's first bytes,
                // which adoption takes for a wrong BLOOMFILTER_BIT unless
                // items known to be in it say otherwise.
                Legacy::ScrapyRedisBloomfilter {
                    key,
                    bit: LEGACY_BIT,
                    hashes: LEGACY_HASHES,
                }
                .verify(items.iter().map(|&i| item(i))),
            );
        match (r, self.model(f).is_some()) {
            (Ok(_), false) => {
                let spec = Spec {
                    shape: Shape::Expanding,
                    store: Store::Bitmap,
                    capacity: 1_000,
                    error_rate: 0.01,
                };
                let mut m = MFilter::new(spec, vec![0, 1_000], 0);
                m.legacy = true;
                m.gens[0].present = items.iter().copied().collect();
                self.set(f, Some(m));
                self.counts(f)
            }
            (Ok(_), true) => Ok(()),
            (Err(Error::ParameterMismatch { .. } | Error::KindMismatch { .. }), true) => Ok(()),
            (Err(e), _) => fail(format!("adopt: {e}")),
        }
    }

    fn drop(&mut self, f: u8) -> Result<(), String> {
        let r = match self.world.any(f) {
            Ok(a) => a.drop(&mut self.world.admin()),
            // Metadata nobody can read: dropped as such.
            Err(Error::CorruptMetadata { .. }) => {
                rotabloom::AnyFilter::drop_unreadable(&mut self.world.admin(), &name(f))
            }
            Err(e) => Err(e),
        };
        match r {
            Ok(_) => {
                if self.model(f).is_none() {
                    return fail("dropped a filter that does not exist");
                }
                self.set(f, None);
                Ok(())
            }
            Err(e) => {
                self.excused(f, &e)?;
                // A filter whose data is damaged can still be dropped.
                if self.model(f).is_some_and(|m| m.damaged) {
                    return fail(format!("drop of a damaged filter failed: {e}"));
                }
                Ok(())
            }
        }
    }

    fn fault(&mut self, fault: Fault) -> Result<(), String> {
        let mut conn = self.world.admin();
        match fault {
            Fault::LoseReplies { every, budget } => {
                self.world.proxy.cut_every(every, budget);
                self.pending = Some(fault);
            }
            Fault::ScriptFlush => {
                let _: () = redis::cmd("SCRIPT")
                    .arg("FLUSH")
                    .query(&mut conn)
                    .map_err(|e| e.to_string())?;
            }
            Fault::Pause { ms } => {
                let _: () = redis::cmd("CLIENT")
                    .arg("PAUSE")
                    .arg(ms)
                    .arg("WRITE")
                    .query(&mut conn)
                    .map_err(|e| e.to_string())?;
            }
            Fault::DeleteBlock { f } | Fault::TruncateBlock { f } | Fault::WrongTypeBlock { f } => {
                let Some(key) = self.newest_block(f) else {
                    return Ok(());
                };
                let r: redis::RedisResult<()> = match fault {
                    Fault::DeleteBlock { .. } => redis::cmd("DEL").arg(&key).query(&mut conn),
                    Fault::TruncateBlock { .. } => {
                        let len: u64 = redis::cmd("STRLEN").arg(&key).query(&mut conn).unwrap_or(0);
                        redis::cmd("SET")
                            .arg(&key)
                            .arg(vec![0u8; (len / 2) as usize])
                            .query(&mut conn)
                    }
                    _ => redis::pipe()
                        .cmd("DEL")
                        .arg(&key)
                        .cmd("HSET")
                        .arg(&key)
                        .arg("x")
                        .arg("y")
                        .query(&mut conn),
                };
                r.map_err(|e| e.to_string())?;
                if let Some(m) = self.model.filters[f as usize].as_mut() {
                    m.damaged = true;
                }
            }
            Fault::Restart => {
                self.world.restart();
                for f in 0..FILTERS {
                    if self.model(f).is_some() {
                        self.set(f, None);
                    }
                }
            }
            // The next step's connections are killed while it runs.
            Fault::KillConnections => self.pending = Some(fault),
            Fault::DeleteFence { f } => {
                let _: () = redis::cmd("DEL")
                    .arg(format!("rotabloom:{{{}}}:fence", name(f)))
                    .query(&mut conn)
                    .map_err(|e| e.to_string())?;
            }
            Fault::CorruptCount { f } => {
                let Some(m) = self.model.filters[f as usize].as_mut() else {
                    return Ok(());
                };
                let seq = self
                    .world
                    .any(f)
                    .ok()
                    .and_then(|a| a.generations().get(m.decider()).map(|g| g.seq));
                if let Some(seq) = seq {
                    let _: () = redis::cmd("HSET")
                        .arg(format!("rotabloom:{{{}}}:meta", name(f)))
                        .arg(format!("gen.{seq}.count"))
                        .arg("lots")
                        .query(&mut conn)
                        .map_err(|e| e.to_string())?;
                    m.damaged = true;
                }
            }
            Fault::KillCli { f } => {
                let items: Vec<u32> = (0..400).map(|i| self.fresh + i).collect();
                self.fresh += 400;
                let printed = self.world.killed_cli(f, &items);
                if let Some(m) = self.model.filters[f as usize].as_mut() {
                    for &it in &items {
                        match printed.contains(&it) {
                            true => m.changed(it),
                            false => m.unknown(it),
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// A `rotabloom filter` run with the filter changed in its middle:
    /// lines of the second part that it did not print must be in the
    /// filter (it said "seen"), whatever it saw in the first part.
    fn stream(
        &mut self,
        f: u8,
        first: &[u32],
        midway: Midway,
        second: &[u32],
    ) -> Result<(), String> {
        let Some(pre) = self.model(f).cloned() else {
            return Ok(());
        };
        if pre.damaged || (pre.spec.store.is_module() && self.world.module.is_none()) {
            return Ok(());
        }
        let spec = pre.spec;
        // A fresh line ends the first part: its answer marks, in the
        // output, where the change came. One the filter answers present
        // already (a false positive) would never be printed: the next.
        let marker = loop {
            let m = self.fresh;
            self.fresh += 1;
            let present = self
                .world
                .any(f)
                .and_then(|a| a.contains(&mut self.world.admin(), crate::world::item(m)));
            if !matches!(present, Ok(true)) {
                break m;
            }
        };
        let mut first = first.to_vec();
        first.push(marker);
        let first = &first[..];
        let mut midway_error = None;
        // The re-created filter as it was made: its generations' capacities
        // and period, read before the second part writes to it.
        let mut made: Option<(Vec<u64>, i64)> = None;
        let (printed, code, stderr) = {
            let world = &self.world;
            world.stream(f, first, second, || {
                let r = match (midway, spec.shape) {
                    // N manual rotations: every generation new.
                    (Midway::EmptyWindow, Shape::Circular { n, .. }) => (0..n)
                        .map(|_| world.rotate(f, 1).into_iter().next())
                        .find_map(|r| match r {
                            Some(Err(e)) => Some(Err(e.to_string())),
                            _ => None,
                        })
                        .unwrap_or(Ok(())),
                    (Midway::Recreate, _) => world
                        .any(f)
                        .and_then(|a| a.drop(&mut world.admin()))
                        .map_err(|e| e.to_string())
                        .and_then(|_| {
                            let mut w = world.admin();
                            crate::world::create_on(&mut w, f, &spec).map_err(|e| e.to_string())
                        })
                        .and_then(|()| {
                            let info = world
                                .any(f)
                                .and_then(|a| a.info(&mut world.admin()))
                                .map_err(|e| e.to_string())?;
                            made = Some((
                                info.generations.iter().map(|g| g.capacity).collect(),
                                info.fields
                                    .get("period")
                                    .and_then(|p| p.parse().ok())
                                    .unwrap_or(0),
                            ));
                            Ok(())
                        }),
                    _ => world
                        .any(f)
                        .and_then(|a| a.clear(&mut world.admin()))
                        .map_err(|e| e.to_string()),
                };
                midway_error = r.err();
            })
        };
        if let Some(e) = midway_error {
            return fail(format!("midway: {e}"));
        }
        if std::env::var("ROTABLOOM_MODEL_TRACE").is_ok() {
            eprintln!(
                "trace: stream {midway:?}: exit {code}, printed {} of {}+{}: {stderr}",
                printed.len(),
                first.len(),
                second.len()
            );
        }
        // A run across a drop and a re-create stops there, in words: the
        // new filter is another one (its second part: unknown, unwritten).
        let recreated = midway == Midway::Recreate
            && code == 2
            && stderr.contains("was dropped and created again");
        if code != 0 && code != 3 && !recreated {
            return fail(format!("`filter` exited {code}: {}", stderr.trim()));
        }
        // The lines printed after the marker are the second part's new
        // ones, in input order. A marker not printed (a false positive,
        // or a run that stopped) leaves the second part unknown.
        let after = printed
            .iter()
            .position(|&i| i == marker)
            .map(|at| &printed[at + 1..]);
        let mut second_printed = Vec::with_capacity(second.len());
        let mut out = after.unwrap_or(&[]).iter().peekable();
        for &it in second {
            let hit = out.peek() == Some(&&it);
            if hit {
                out.next();
            }
            second_printed.push(hit);
        }
        if out.next().is_some() {
            return fail("`filter` printed lines out of input order");
        }
        let code = if after.is_none() { -1 } else { code };
        let mut once = BTreeSet::new();
        for (&it, &p) in second.iter().zip(&second_printed) {
            if p && !once.insert(it) {
                return fail(format!("`filter` printed item {it} twice after the change"));
            }
        }
        // The filter after the change: empty, then the second part.
        let mut m = pre.clone();
        match midway {
            Midway::Recreate => {
                let (caps, period) = made.take().unwrap_or_default();
                m = MFilter::new(spec, caps, period);
                self.reborn[f as usize] = true;
            }
            _ => {
                m.clear();
            }
        }
        // What the second part left: a line printed is new, a line not
        // printed was "seen", so it must read present now.
        if code == 0 {
            let lines: Vec<String> = second.iter().map(|&i| item(i)).collect();
            let found = self
                .world
                .any(f)
                .and_then(|a| a.contains_many(&mut self.world.admin(), &lines))
                .map_err(|e| e.to_string())?;
            for (&it, &present) in second.iter().zip(&found) {
                if !present {
                    return fail(format!(
                        "`filter` answered line {} of the second part seen, but the filter does not hold it",
                        item(it)
                    ));
                }
            }
        }
        for (&it, &p) in second.iter().zip(&second_printed) {
            match (p, code) {
                (true, _) => m.changed(it),
                (false, 0) => m.unchanged(it, true),
                _ => m.unknown(it),
            }
        }
        self.model.filters[f as usize] = Some(m);
        // The first part's lines printed before the change were counted in
        // generations the change emptied; counts are the second part's.
        self.counts(f)
    }

    /// The key of block 0 of filter `f`'s deciding generation.
    fn newest_block(&self, f: u8) -> Option<String> {
        let m = self.model(f)?;
        let any = self.world.any(f).ok()?;
        let gens = any.generations();
        let seq = gens.get(m.decider())?.seq;
        let uid: String = redis::cmd("HGET")
            .arg(format!("rotabloom:{{{}}}:meta", name(f)))
            .arg("uid")
            .query(&mut self.world.admin())
            .ok()?;
        Some(format!("rotabloom:{{{}}}:gen:{uid}-{seq}:0", name(f)))
    }

    fn probe(&mut self, f: u8) -> Result<(), String> {
        let items: Vec<String> = (0..2_000).map(|i| item(self.fresh + i)).collect();
        self.fresh += 2_000;
        let r = self
            .world
            .any(f)
            .and_then(|a| a.contains_many(&mut self.world.admin(), &items));
        let Some(m) = self.model(f) else {
            return match r {
                Err(e) => self.excused(f, &e),
                Ok(_) => fail("answers from a filter that does not exist"),
            };
        };
        let found = match r {
            Ok(found) => found,
            Err(e) => return self.excused(f, &e),
        };
        if !m.bounded() {
            return Ok(());
        }
        let queried = m.queried();
        let module = m.spec.store.is_module();
        let target = m.spec.error_rate;
        let info = self
            .world
            .any(f)
            .and_then(|a| a.info(&mut self.world.admin()))
            .map_err(|e| format!("info: {e}"))?;
        let gens: Vec<_> = queried
            .iter()
            .filter_map(|&g| info.generations.get(g))
            .collect();
        // The rate the filter's bits give now: each generation's fill to
        // the power k, combined over the generations a query reads. Plus
        // double hashing's floor (Kirsch and Mitzenmacher): a fresh item
        // whose two hashes equal an inserted item's modulo the block's b
        // bits has all its positions set, which happens with probability
        // about count / b^2 whatever the fill; for 1,024-bit generations
        // it outweighs fill^k by orders of magnitude.
        let now = 1.0
            - gens
                .iter()
                .map(|g| {
                    let b = (g.bits / u64::from(g.blocks.max(1))).max(1) as f64;
                    let floor = g.count as f64 / (b * b);
                    1.0 - (g.false_positive_rate + floor).min(1.0)
                })
                .product::<f64>();
        let x = found.iter().filter(|&&p| p).count() as u64;
        let n = found.len() as u64;
        // Queries answer as a Bloom filter of those bits does.
        if !module {
            let tail = binomial_tail(n, now.max(1e-12), x);
            if tail < 1e-6 {
                let seen: Vec<String> = info
                    .generations
                    .iter()
                    .map(|g| {
                        format!(
                            "gen {} {} bits, {} items, rate {:.2e}",
                            g.seq, g.bits, g.count, g.false_positive_rate
                        )
                    })
                    .collect();
                return fail(format!(
                    "{x} of {n} fresh items present where the bits give a rate of {now:.4}: P = {tail:.2e} (the model queries {queried:?} of [{}])",
                    seen.join("; ")
                ));
            }
        }
        // And that rate is within the target at or below capacity, where
        // generations are big enough for it to be more than luck.
        let big = gens.iter().all(|g| g.bits >= 20_000);
        let rate = if module { x as f64 / n as f64 } else { now };
        if big && rate > target * 1.5 + 3.0 * (target / n as f64).sqrt() {
            return fail(format!("false-positive rate {rate:.4} at target {target}"));
        }
        Ok(())
    }

    /// Every key is one FORMAT.md §5 names, of a filter that exists.
    fn keys(&self) -> Result<(), String> {
        let mut conn = self.world.admin();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("*")
            .query(&mut conn)
            .map_err(|e| e.to_string())?;
        let mut metas: BTreeMap<String, (String, BTreeSet<u64>, u64)> = BTreeMap::new();
        for f in 0..FILTERS {
            let n = name(f);
            let meta: BTreeMap<String, String> = redis::cmd("HGETALL")
                .arg(format!("rotabloom:{{{n}}}:meta"))
                .query(&mut conn)
                .map_err(|e| e.to_string())?;
            match (meta.is_empty(), self.model(f).is_some()) {
                (true, true) => return fail(format!("filter {n} vanished")),
                (false, false) => return fail(format!("filter {n} exists, the model has none")),
                _ => {}
            }
            if let Some(uid) = meta.get("uid") {
                let gens = meta
                    .get("gens")
                    .map(|g| g.split(',').filter_map(|s| s.parse().ok()).collect())
                    .unwrap_or_default();
                let next = meta
                    .get("next_seq")
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                metas.insert(n, (uid.clone(), gens, next));
            }
        }
        for key in keys {
            if key.starts_with("legacy:") {
                continue;
            }
            let Some((n, rest)) = key
                .strip_prefix("rotabloom:{")
                .and_then(|k| k.split_once("}:"))
            else {
                return fail(format!("a key no filter names: {key}"));
            };
            // A block of an instance being created or restored that died
            // halfway: it has a lease, and lapses.
            let mut leased = || -> bool {
                rest.starts_with("gen:")
                    && redis::cmd("PTTL")
                        .arg(&key)
                        .query::<i64>(&mut conn)
                        .is_ok_and(|t| t > 0 && t <= 15 * 60 * 1000)
            };
            let Some((uid, gens, next)) = metas.get(n) else {
                if leased() {
                    continue;
                }
                return fail(format!("a key of filter {n}, which does not exist: {key}"));
            };
            let ok = match rest {
                "meta" | "fence" | "trash" | "reserved" => true,
                r if r.starts_with("done:") => r.len() == 21,
                r => r
                    .strip_prefix("gen:")
                    .and_then(|g| g.split_once('-'))
                    .filter(|(u, _)| u == uid)
                    .and_then(|(_, s)| s.split_once(':'))
                    .and_then(|(s, _)| s.parse::<u64>().ok())
                    .is_some_and(|s| gens.contains(&s) || s >= *next),
            };
            if !ok && !leased() {
                return fail(format!("a key FORMAT.md §5 does not name: {key}"));
            }
        }
        Ok(())
    }
}

/// The legacy bitmap's shape: 2^20 bits, six hash functions.
const LEGACY_BIT: u32 = 20;
const LEGACY_HASHES: u32 = 6;

/// Writes `items` into `key` the way the PyPI package
/// `scrapy-redis-bloomfilter` does: `k` polynomial hashes with multipliers
/// 1..=k over the item's code points, modulo 2^bit (an independent
/// implementation of docs/LEGACY.md, not the library's).
fn write_legacy(conn: &mut redis::Connection, key: &str, items: &[u32]) {
    let mask = (1u64 << LEGACY_BIT) - 1;
    let mut pipe = redis::pipe();
    pipe.cmd("DEL").arg(key);
    for &id in items {
        let text = item(id);
        for mult in 1..=u64::from(LEGACY_HASHES) {
            let h = text
                .chars()
                .fold(0u64, |h, c| h.wrapping_mul(mult).wrapping_add(c as u64));
            pipe.cmd("SETBIT").arg(key).arg(h & mask).arg(1);
        }
    }
    let _: () = pipe.query(conn).unwrap();
}

/// Whether `call` takes the guarded transaction (as the library plans it):
/// a library call of 16 items or more that allows transactions, on a
/// filter whose operation a transaction can express.
fn takes_transaction(m: &MFilter, call: &Call) -> bool {
    let allowed = match call.protocol {
        Protocol::Script => false,
        Protocol::Transaction => true,
        // A batch with a record takes the script; a query is no batch.
        Protocol::Idempotent => call.op == Op::Contains,
        // Without one it goes as the handle's transactions.
        Protocol::AtLeastOnce => true,
    };
    // A module's generation caps itself (docs/FORMAT.md §6.6): a capped
    // write to it is expressible, unless write-only generations follow the
    // decision (their writes could not stop where it stops).
    let module = m.spec.store.is_module();
    let write_only =
        matches!(m.spec.shape, Shape::Circular { newest: false, .. }) && m.gens.len() > 1;
    let expressible = match call.op {
        Op::Contains => true,
        Op::Insert if module => !write_only,
        Op::Insert => m.spec.shape != Shape::Expanding,
        Op::CheckAndInsert => {
            (m.spec.shape != Shape::Expanding || module)
                && !matches!(m.spec.shape, Shape::Circular { newest: false, .. })
        }
    };
    call.runner != Runner::Cli && allowed && call.items.len() >= 16 && expressible
}

/// Whether `call` may turn a full base filter into an expanding one: a
/// write with `when_full = expand` through a handle that follows a change
/// of kind (opened by name; the command line always is).
fn converts(call: &Call) -> bool {
    call.full == Full::Grow
        && call.op != Op::Contains
        && (call.by_name || call.runner == Runner::Cli)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_binomial_tail_is_right_at_its_ends() {
        assert!((super::binomial_tail(10, 0.5, 0) - 1.0).abs() < 1e-9);
        assert!((super::binomial_tail(10, 0.5, 10) - 1.0 / 1024.0).abs() < 1e-12);
    }
}
