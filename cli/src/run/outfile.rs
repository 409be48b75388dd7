//! A command's output FILE (`dump NAME FILE`, `metrics --output FILE`).
//!
//! A regular file, new or existing, is replaced atomically: written to a
//! temporary file beside it, renamed over it once complete, so that a
//! reader (a restore, a scrape) never sees half of it. Through a symbolic
//! link, its target is replaced and the link stays. Anything else that
//! can be written (a FIFO, a character device: `/dev/fd/N` of a pipe,
//! `>(gzip > f)`, `/dev/null`) is written straight through, as a shell's
//! `>` would: a rename would put a regular file in its place, leave a
//! FIFO's reader waiting forever, and as root replace a device node. A
//! directory, a block device or a socket is refused. The temporary file
//! is removed when the command fails, and when SIGINT, SIGTERM or SIGHUP
//! ends it.

use crate::run::interrupt::{self, Caught};
use crate::shared::fail::{file_error, usage};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The temporary files being written, with the FILE each stands for: the
/// signal thread removes them, holding the lock until the process exits,
/// so that none is made or renamed meanwhile.
static TEMPS: Mutex<Vec<(PathBuf, PathBuf)>> = Mutex::new(Vec::new());

/// Catches the signals once, the first time a temporary file is made.
static CAUGHT: OnceLock<Caught> = OnceLock::new();

fn temps() -> std::sync::MutexGuard<'static, Vec<(PathBuf, PathBuf)>> {
    TEMPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn on_signal(signal: i32) {
    let temps = temps();
    for (tmp, shown) in temps.iter() {
        let _ = fs::remove_file(tmp);
        crate::show::term::error_line(format_args!(
            "interrupted by {}: {} is left as it was",
            interrupt::name(signal),
            shown.display()
        ));
    }
    std::process::exit(interrupt::exit_code(signal).into());
}

/// An output file being written.
pub struct Sink {
    out: BufWriter<File>,
    /// The path as the user gave it, for messages.
    shown: PathBuf,
    /// The temporary file and the file it replaces; `None` when written
    /// straight through.
    replace: Option<(PathBuf, PathBuf)>,
}

/// How `path` is written: the file to replace (symbolic links followed),
/// or `None` to write it straight through.
fn resolve(path: &Path) -> anyhow::Result<Option<PathBuf>> {
    let cannot = |e: io::Error| file_error(format!("cannot write {}: {e}", path.display()));
    match fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(Some(fs::canonicalize(path).map_err(cannot)?)),
        Ok(m) if m.file_type().is_fifo() || m.file_type().is_char_device() => Ok(None),
        Ok(m) => {
            let what = if m.is_dir() {
                "a directory"
            } else if m.file_type().is_block_device() {
                "a block device"
            } else {
                "neither a file, a FIFO nor a character device"
            };
            Err(file_error(format!(
                "cannot write {}: it is {what}",
                path.display()
            )))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Some(dangling(path).map_err(cannot)?)),
        Err(e) => Err(cannot(e)),
    }
}

/// The file a path that does not exist makes, as a shell's `>` does: the
/// target of a dangling symbolic link, or the path itself.
fn dangling(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    // Linux's own limit on links followed in one lookup.
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// A temporary file in `path`'s directory (a rename stays on one file
/// system), named after this process.
fn temp_beside(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    tmp.into()
}

/// Makes the temporary file for `target` (with its permissions when it
/// exists), registered for removal on a signal.
fn make_temp(target: &Path, shown: &Path) -> anyhow::Result<(PathBuf, File)> {
    let cannot = |e: io::Error| file_error(format!("cannot write {}: {e}", shown.display()));
    if CAUGHT.get().is_none() {
        let caught = Caught::install(on_signal).map_err(cannot)?;
        let _ = CAUGHT.set(caught);
    }
    let tmp = temp_beside(target);
    let mut temps = temps();
    // A file of that name is left from a killed process that had this
    // pid: replaced, never followed if it is a link.
    let _ = fs::remove_file(&tmp);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(cannot)?;
    temps.push((tmp.clone(), shown.to_path_buf()));
    drop(temps);
    if let Ok(m) = fs::metadata(target) {
        let _ = file.set_permissions(m.permissions());
    }
    Ok((tmp, file))
}

fn forget(tmp: &Path) {
    temps().retain(|(t, _)| t != tmp);
}

/// Opens `path` for writing, as the module says.
pub fn open(path: &Path) -> anyhow::Result<Sink> {
    match resolve(path)? {
        Some(target) => {
            let (tmp, file) = make_temp(&target, path)?;
            Ok(Sink {
                out: BufWriter::new(file),
                shown: path.to_path_buf(),
                replace: Some((tmp, target)),
            })
        }
        None => {
            let file = OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| file_error(format!("cannot write {}: {e}", path.display())))?;
            if file.is_terminal() {
                return Err(usage(format!(
                    "{} is a terminal: give a FILE, or redirect standard output",
                    path.display()
                )));
            }
            Ok(Sink {
                out: BufWriter::new(file),
                shown: path.to_path_buf(),
                replace: None,
            })
        }
    }
}

/// A write error on `shown` (exit 5), one line: a reader that went away
/// is said so.
pub fn write_error(shown: &str, e: &io::Error) -> anyhow::Error {
    let why = if e.kind() == io::ErrorKind::BrokenPipe {
        "its reader went away before the end (broken pipe)".to_string()
    } else {
        e.to_string()
    };
    file_error(format!("cannot write {shown}: {why}"))
}

impl Sink {
    /// Whether it is written straight through (nothing can be taken back).
    pub fn is_through(&self) -> bool {
        self.replace.is_none()
    }

    pub fn out(&mut self) -> &mut BufWriter<File> {
        &mut self.out
    }

    /// The path as given, for messages.
    pub fn shown(&self) -> String {
        self.shown.display().to_string()
    }

    /// Everything written: flushed, and a temporary file synced to disk
    /// and renamed over the file it replaces.
    pub fn commit(mut self) -> anyhow::Result<()> {
        let shown = self.shown();
        self.out.flush().map_err(|e| write_error(&shown, &e))?;
        let Some((tmp, target)) = self.replace.take() else {
            return Ok(());
        };
        let done = self.out.get_ref().sync_all().and_then(|()| {
            let _temps = temps();
            fs::rename(&tmp, &target)
        });
        if let Err(e) = done {
            let _ = fs::remove_file(&tmp);
            forget(&tmp);
            return Err(write_error(&shown, &e));
        }
        forget(&tmp);
        Ok(())
    }
}

impl Drop for Sink {
    /// Not committed: the temporary file goes.
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.replace.take() {
            let _ = fs::remove_file(&tmp);
            forget(&tmp);
        }
    }
}
