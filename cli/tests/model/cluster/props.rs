//! The cluster model's properties that read the real filter: shards in
//! agreement with the root, counts within the model's, errors loud, and
//! the lines an error says were left unknown.

use crate::cluster::model::MSharded;
use crate::cluster::world::Status;
use crate::model::MFilter;

/// The kind `status` names for a model shard.
fn kind_name(m: &MFilter) -> &'static str {
    match m.spec.shape {
        crate::steps::Shape::Bloom => "bloom",
        crate::steps::Shape::Expanding => "expanding",
        crate::steps::Shape::Circular { .. } => "circular",
    }
}

/// After a completed command: every shard agrees with the root and with
/// each other (kind, epoch, number of generations), the filter has the
/// model's number of shards and kind. This is the one place that decides
/// "the shards agree": when the root records whole-filter targets and
/// `status --check` reports shards that disagree (exit 4), sharpen it
/// here.
pub fn shards_agree(s: &Status, m: &MSharded) -> Result<(), String> {
    if s.shards.len() != m.count() {
        return Err(format!(
            "{} shards, the model {} ({:?})",
            s.shards.len(),
            m.count(),
            s.error
        ));
    }
    if let Some(e) = &s.error {
        return Err(format!("status: {e}"));
    }
    let want = kind_name(&m.shards[0]);
    if s.kind.as_deref() != Some(want) {
        return Err(format!("the root says {:?}, the model {want}", s.kind));
    }
    let first = &s.shards[0];
    // An expanding shard grows when its own generation fills: shards of
    // one filter may hold different numbers of generations.
    let grows = want == "expanding";
    for (j, v) in s.shards.iter().enumerate() {
        let apart = v.epoch != first.epoch || v.counts.len() != first.counts.len();
        if v.kind != want || (apart && !grows) {
            return Err(format!(
                "the shards disagree: shard {j} is {} epoch {} with {} generations, shard 0 {} epoch {} with {}",
                v.kind,
                v.epoch,
                v.counts.len(),
                first.kind,
                first.epoch,
                first.counts.len()
            ));
        }
    }
    Ok(())
}

/// Each shard's count (all generations) within the model's range, and no
/// generation that refuses writes past its capacity holding more.
pub fn counts_hold(s: &Status, m: &MSharded) -> Result<(), String> {
    for (j, (v, ms)) in s.shards.iter().zip(&m.shards).enumerate() {
        let real: u64 = v.counts.iter().sum();
        let (lo, hi) = ms
            .gens
            .iter()
            .map(|g| g.count_range())
            .fold((0, 0), |(a, b), (c, d)| (a + c, b + d));
        // An expanding shard's writes across its growth may count an item
        // again in the new generation (`MFilter::total_maybe`).
        let hi = match ms.spec.shape {
            crate::steps::Shape::Expanding => hi + ms.total_maybe,
            _ => hi,
        };
        if real < lo || real > hi {
            return Err(format!(
                "shard {j} counts {real} ({:?}), the model {lo}..={hi}",
                v.counts
            ));
        }
        for (g, (&c, &cap)) in v.counts.iter().zip(&v.caps).enumerate() {
            if c > cap {
                return Err(format!(
                    "shard {j} generation {g} holds {c} items, past its capacity {cap}"
                ));
            }
        }
    }
    Ok(())
}

/// A failed run's error is loud and in the project's words: a known exit
/// code, only `rotabloom: ` lines (or the documented indented ones) on
/// standard error, never a panic or a raw server script error.
pub fn loud(code: i32, stderr: &str) -> Result<(), String> {
    if ![2, 3, 4, 5, 6].contains(&code) {
        return Err(format!("exit {code}: {stderr}"));
    }
    // A raw Lua runtime error ("user_script:144: attempt to ...").
    for bad in ["panicked", "RUST_BACKTRACE", ": attempt to "] {
        if stderr.contains(bad) {
            return Err(format!(
                "not in the project's words (exit {code}): {stderr}"
            ));
        }
    }
    if !stderr.lines().any(|l| l.starts_with("rotabloom: ")) {
        return Err(format!("exit {code} with no error line: {stderr:?}"));
    }
    Ok(())
}

/// The input lines (1-based) a failed run says may have been applied
/// without an answer ("lines A-B are not confirmed", "may have been
/// applied", "unknown"): the only lines it may have stored unprinted.
/// Lines it says it refused ("refused, ... none of them inserted") are
/// not among them: those must not be stored.
pub fn unknown_lines(stderr: &str) -> Vec<std::ops::RangeInclusive<usize>> {
    let mut out = Vec::new();
    for sentence in stderr.split([';', '\n']) {
        let unknown = ["not confirmed", "may have been applied", "unknown"]
            .iter()
            .any(|w| sentence.contains(w));
        if !unknown || sentence.contains("refused") {
            continue;
        }
        let words: Vec<&str> = sentence.split_whitespace().collect();
        for w in words.windows(2) {
            if !matches!(w[0], "lines" | "line" | "items" | "item") {
                continue;
            }
            let t = w[1].trim_matches(|c: char| !c.is_ascii_digit() && c != '-');
            let t = t.replace(',', "");
            let mut ends = t.split('-').filter_map(|x| x.parse::<usize>().ok());
            if let Some(a) = ends.next() {
                out.push(a..=ends.next().unwrap_or(a));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::unknown_lines;

    #[test]
    fn unknown_lines_are_read_from_the_documented_messages() {
        let gave_up = "rotabloom: x: gave up after 8 reconnection attempts: cannot connect to ...; 41000 lines were done, lines 41001-41500 are not confirmed (the server keeps their answers for 5m): resume";
        assert_eq!(unknown_lines(gave_up), vec![41001..=41500]);
        let full = "rotabloom: filter \"f\" is full: ...; 440 lines refused, the first at line 161, none of them inserted (run again from line 161 once it has room)";
        assert!(unknown_lines(full).is_empty());
    }
}
