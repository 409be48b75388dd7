//! Python clients beside the command line: a `filter` run and a Python
//! process (`client.py`: the wheel's blocking or asyncio class) on one
//! filter at once, their inputs overlapping. Across both, an item is
//! answered new at most once, and only if the filter lacked it; every
//! item the Python client did not answer is said refused or unknown (the
//! counts then hold the rest, as for the command line alone).
//!
//! The interpreter: `ROTABLOOM_MODEL_PYTHON` (scripts/test.sh and
//! scripts/soak.sh set it), else `scripts/model-python.sh` run here.

use crate::cluster::data::{filter_args, settle_with, Printed};
use crate::cluster::run::{CRun, Hazard};
use crate::cluster::world::{lines, name, CWorld};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const CLIENT: &str = include_str!("client.py");

/// The python that runs `client.py`, with rotabloom's wheel installed.
fn interpreter() -> PathBuf {
    static PYTHON: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PYTHON
        .get_or_init(|| {
            if let Some(p) = std::env::var_os("ROTABLOOM_MODEL_PYTHON") {
                return PathBuf::from(p);
            }
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            // A target directory of its own: the one `cargo test` runs
            // from may be locked by it; one process at a time.
            let lock = Path::new(env!("CARGO_TARGET_TMPDIR")).join("model-python.lock");
            let out = crate::venv::locked(lock, || {
                Command::new("bash")
                    .arg(root.join("scripts/model-python.sh"))
                    .env("CARGO_TARGET_DIR", root.join("target/model-wheel"))
                    .stderr(Stdio::inherit())
                    .output()
                    .expect("run scripts/model-python.sh")
            });
            assert!(out.status.success(), "scripts/model-python.sh failed");
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        })
        .clone()
}

/// What the Python client said.
pub struct PyOut {
    pub new: Vec<u32>,
    pub unknown: Vec<u32>,
    pub refused: Vec<u32>,
    pub code: i32,
    pub stderr: String,
}

fn parse(stdout: &str, code: i32, stderr: String) -> PyOut {
    let mut out = PyOut {
        new: Vec::new(),
        unknown: Vec::new(),
        refused: Vec::new(),
        code,
        stderr,
    };
    for line in stdout.lines() {
        let Some((what, item)) = line.split_once(' ') else {
            continue;
        };
        let Some(id) = item.strip_prefix('i').and_then(|i| i.parse().ok()) else {
            continue;
        };
        match what {
            "new" => out.new.push(id),
            "unknown" => out.unknown.push(id),
            "refused" => out.refused.push(id),
            _ => {}
        }
    }
    out
}

/// Feeds `input` to `child` and reads all it says.
fn finish(mut child: Child, input: String) -> (String, i32, String) {
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut err = child.stderr.take().expect("piped stderr");
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut stdout = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut stdout);
    }
    let _ = writer.join();
    let mut stderr = errors.join().unwrap_or_default();
    let code = match child.wait() {
        Ok(s) => s.code().unwrap_or_else(|| {
            use std::os::unix::process::ExitStatusExt;
            stderr.push_str(&format!("(ended by signal {:?})", s.signal()));
            -1
        }),
        Err(e) => {
            stderr.push_str(&format!("(cannot wait for it: {e})"));
            -1
        }
    };
    (stdout, code, stderr)
}

impl CWorld {
    /// The Python client on filter `name`.
    fn python(&self, name: &str, batch: u32, aio: bool) -> Child {
        let script = self.dir.join("client.py");
        if !script.exists() {
            std::fs::write(&script, CLIENT).expect("write client.py");
        }
        // A crash of the native module prints the Python threads' stacks.
        Command::new(interpreter())
            .args(["-X", "faulthandler"])
            .arg(&script)
            .args([&self.url, name, &batch.to_string()])
            .arg(if aio { "aio" } else { "sync" })
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the Python client")
    }
}

impl CRun<'_> {
    /// `filter` fed `cli` and the Python client fed `py`, at once.
    pub fn beside(
        &mut self,
        f: u8,
        py: &[u32],
        cli: &[u32],
        batch: u32,
        aio: bool,
    ) -> Result<(), String> {
        let n = name(f);
        let b = batch.to_string();
        let args = filter_args(&n, &b, false);
        let hazard = self.hazard;
        let ((stdout, code, stderr), p) = self.with_fault(|w| {
            let rust = w.spawn(&args);
            let python = w.python(&n, batch, aio);
            std::thread::scope(|s| {
                let p = s.spawn(|| finish(python, lines(py)));
                let r = finish(rust, lines(cli));
                (r, p.join().unwrap_or_default())
            })
        });
        self.stats.items += (py.len() + cli.len()) as u64;
        self.stats.python += 1;
        let p = parse(&p.0, p.1, p.2);
        let out = Printed {
            items: crate::cluster::world::ids(&stdout),
            code,
            stderr,
            least: false,
        };
        let Some(m) = self.model[f as usize].as_mut() else {
            self.absent(out.code, &out.stderr)?;
            return match p.code == 3 && p.stderr.contains("NotFoundError") && p.new.is_empty() {
                true => Ok(()),
                false => Err(format!(
                    "python on a filter that does not exist: {}",
                    p.stderr
                )),
            };
        };
        let both: Vec<u32> = py.iter().chain(cli).copied().collect();
        if p.code != 0 {
            let e = p.stderr.lines().last().unwrap_or_default();
            if p.code != 3 || !e.starts_with("rotabloom: ") || p.stderr.contains("Traceback") {
                return Err(format!("python: exit {}: {}", p.code, p.stderr));
            }
            let full = ["FullError", "LimitReachedError"]
                .iter()
                .any(|c| e.contains(c));
            if full && !m.may_fill(&both) {
                return Err(format!(
                    "python refused as full, no shard near its capacity: {e}"
                ));
            }
            if !full && !p.stderr.contains("is full") && hazard == Hazard::None {
                return Err(format!("python failed without a fault: {}", p.stderr));
            }
        }
        // The command line's answers first; then the Python client's new
        // ones must be news to the model as it stands after them: an item
        // both answered new is held present by the first.
        settle_with(m, cli, &both, 1, &out, hazard)?;
        let mut seen = BTreeSet::new();
        for &id in &p.new {
            if m.present(id) || !seen.insert(id) {
                return Err(format!(
                    "i{id} answered new by Python though the filter held it (or the command line answered it new too, or Python twice)"
                ));
            }
            m.changed(id);
        }
        let said: BTreeSet<u32> = p.unknown.iter().chain(&p.refused).copied().collect();
        if p.code == 0 && !said.is_empty() {
            return Err(format!("python exit 0 but said {said:?} unanswered"));
        }
        for &id in &p.unknown {
            if !m.present(id) {
                m.unknown(id);
            }
        }
        self.verify(f)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_clients_lines_are_read_by_their_word() {
        let p = super::parse(
            "new i1\nunknown i2\nrefused i3\nnew i4\nnoise\n",
            3,
            String::new(),
        );
        assert_eq!(
            (p.new, p.unknown, p.refused),
            (vec![1, 4], vec![2], vec![3])
        );
    }
}
