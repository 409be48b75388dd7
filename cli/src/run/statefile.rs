//! The state file of `--state` and `--resume` on disk: one JSON line with
//! the whole state, then one JSON line per change, appended. A change is
//! then one small write (a rename per change costs about half a
//! millisecond on ext4, which flushes a file renamed over another, and
//! halved the throughput of `filter`); the file is rewritten as one state
//! line (into a temporary file renamed over it) when the changes pile up
//! and at the end of a run.
//!
//! A process killed while it appends leaves at most its last line cut
//! short, without its newline: that line is ignored, as its change was
//! never acted on (a batch is sent only once the line saying so is
//! written; a batch struck out or cut short by a refusal is then listed
//! whole again, which at worst prints its lines twice, never loses them).

use crate::show::values::range;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One batch not handed on.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Entry {
    /// Lines of the input before it.
    pub first: u64,
    pub len: u64,
    /// MD5 of its lines (each with its length), so that a resumed run
    /// given other lines refuses rather than take their answers.
    pub digest: String,
    /// Set just before a worker sends it: the record its answers are in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// When it was (last) sent, in ms since the epoch: its record lives at
    /// least `window_ms` from then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_ms: Option<u64>,
    pub window_ms: u64,
    /// Resumed after its record was gone although it may have been
    /// applied: the answers of its lines not new now are unknown.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lost: bool,
}

impl Entry {
    /// The 1-based line range, for messages.
    pub fn range(&self) -> String {
        range(self.first, self.len)
    }
}

/// The state: what a resumed run needs.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct State {
    pub version: u32,
    pub command: String,
    pub filter: String,
    /// Input lines cut into batches so far: every line before it that no
    /// entry lists was handed on.
    pub read: u64,
    /// The batches not handed on, in input order.
    pub batches: Vec<Entry>,
}

/// What a change does: batches struck out (by first line), then batches
/// listed or replaced.
#[derive(Serialize, Deserialize, Debug, Default, PartialEq)]
struct Change {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    del: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    put: Vec<Entry>,
}

#[derive(Serialize, Deserialize, Debug)]
#[serde(rename_all = "lowercase")]
enum Line {
    State(State),
    Change(Change),
}

/// Changes appended before the file is rewritten as one state line: the
/// file stays small (a state lists at most 32 batches) and a rewrite comes
/// once per this many batches.
const REWRITE_AFTER: u32 = 3000;

/// The open file.
pub struct Log {
    path: PathBuf,
    file: File,
    appended: u32,
}

impl Log {
    /// Writes `state` as the whole file and opens it for changes.
    pub fn create(path: &Path, state: &State) -> std::io::Result<Log> {
        write_whole(path, state)?;
        let file = OpenOptions::new().append(true).open(path)?;
        Ok(Log {
            path: path.to_path_buf(),
            file,
            appended: 0,
        })
    }

    /// Records that the state went from `before` to `after`.
    pub fn append(&mut self, before: &State, after: &State) -> std::io::Result<()> {
        if self.appended >= REWRITE_AFTER {
            *self = Log::create(&self.path, after)?;
            return Ok(());
        }
        let change = diff(before, after);
        if change == Change::default() {
            return Ok(());
        }
        // One write of one line: cut short only by the process's death.
        let mut line = serde_json::to_vec(&Line::Change(change)).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.appended += 1;
        Ok(())
    }

    /// Writes `state` as the whole file, on disk for good.
    pub fn settle(&mut self, state: &State) -> std::io::Result<()> {
        *self = Log::create(&self.path, state)?;
        self.file.sync_all()
    }
}

fn diff(before: &State, after: &State) -> Change {
    let del = before
        .batches
        .iter()
        .filter(|b| !after.batches.iter().any(|a| a.first == b.first))
        .map(|b| b.first)
        .collect();
    let put = after
        .batches
        .iter()
        .filter(|a| !before.batches.contains(a))
        .cloned()
        .collect();
    Change { del, put }
}

/// The state a file holds, or why it holds none.
pub fn replay(text: &[u8]) -> Result<State, String> {
    let mut lines = text.split_inclusive(|&b| b == b'\n');
    let parse = |line: &[u8]| serde_json::from_slice::<Line>(line).map_err(|e| e.to_string());
    let mut state = match lines.next().map(parse) {
        Some(Ok(Line::State(s))) => s,
        Some(Ok(Line::Change(_))) => return Err("it starts with a change".into()),
        Some(Err(e)) => return Err(e),
        None => return Err("it is empty".into()),
    };
    for line in lines {
        if line.last() != Some(&b'\n') {
            // Cut short by a kill: never acted on.
            break;
        }
        match parse(line)? {
            Line::State(s) => state = s,
            Line::Change(c) => {
                state.batches.retain(|b| !c.del.contains(&b.first));
                for e in c.put {
                    state.read = state.read.max(e.first + e.len);
                    match state.batches.iter_mut().find(|b| b.first == e.first) {
                        Some(b) => *b = e,
                        None => state.batches.push(e),
                    }
                }
                state.batches.sort_by_key(|b| b.first);
            }
        }
    }
    Ok(state)
}

/// Writes `state` into a temporary file beside `path` and renames it over
/// `path`: the file holds the old content or the new, never a part.
fn write_whole(path: &Path, state: &State) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut f = File::create(&tmp)?;
    let mut text =
        serde_json::to_vec(&Line::State(state.clone())).map_err(std::io::Error::other)?;
    text.push(b'\n');
    f.write_all(&text)?;
    drop(f);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(first: u64, token: Option<&str>) -> Entry {
        Entry {
            first,
            len: 10,
            digest: format!("d{first}"),
            token: token.map(String::from),
            sent_ms: token.map(|_| 5),
            window_ms: 1000,
            lost: false,
        }
    }

    fn state(batches: Vec<Entry>, read: u64) -> State {
        State {
            version: 1,
            command: "filter".into(),
            filter: "f".into(),
            read,
            batches,
        }
    }

    #[test]
    fn changes_replay_to_the_state_and_a_line_cut_short_is_ignored() {
        let dir = std::env::temp_dir().join(format!("rb-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s");
        let s0 = state(vec![], 0);
        let mut log = Log::create(&path, &s0).unwrap();
        let s1 = state(vec![entry(0, None), entry(10, None)], 20);
        log.append(&s0, &s1).unwrap();
        let s2 = state(vec![entry(0, Some("t0")), entry(10, None)], 20);
        log.append(&s1, &s2).unwrap();
        let s3 = state(vec![entry(10, None), entry(20, None)], 30);
        log.append(&s2, &s3).unwrap();
        let text = std::fs::read(&path).unwrap();
        assert_eq!(text.iter().filter(|&&b| b == b'\n').count(), 4);
        assert_eq!(replay(&text).unwrap(), s3);
        // A kill in the middle of the last line: the state before it.
        for cut in 1..40 {
            let short = &text[..text.len() - cut];
            assert_eq!(replay(short).unwrap(), s2, "cut {cut}");
        }
        log.settle(&s3).unwrap();
        let text = std::fs::read(&path).unwrap();
        assert_eq!(text.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(replay(&text).unwrap(), s3);
        assert!(replay(b"").is_err());
        assert!(replay(b"{\"change\":{}}\n").is_err());
        assert!(replay(b"not json\n").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
