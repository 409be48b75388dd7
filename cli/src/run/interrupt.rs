//! SIGINT, SIGTERM and SIGHUP for the commands that must clean up before
//! they exit: `restore` deletes the blocks it wrote, `dump FILE` removes
//! its temporary file. Other commands keep the default action (exit at
//! once): they leave nothing half-made behind. A second signal ends the
//! process at once (exit 128 + the signal), as a user pressing Ctrl-C
//! twice expects; a restore's blocks then expire on their own.

use nix::sys::signal::{SigSet, Signal};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::flag;
use signal_hook::iterator::Signals;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;

const SIGNALS: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

/// The signals caught from now on.
pub struct Caught {
    flag: Arc<AtomicBool>,
    which: Arc<AtomicUsize>,
}

impl Caught {
    /// Catches the signals; `then(signal)` runs on a thread of its own at
    /// the first one (the flag is set before it runs). From then on the
    /// calling thread, and the threads it makes, never take the signals:
    /// a socket read with a timeout, which the kernel does not restart
    /// after a handler, would fail with EINTR (the redis crate then drops
    /// the connection the undo needs).
    pub fn install(then: impl FnOnce(i32) + Send + 'static) -> io::Result<Caught> {
        let flag = Arc::new(AtomicBool::new(false));
        let which = Arc::new(AtomicUsize::new(0));
        for sig in SIGNALS {
            // In this order: the shutdown sees the flag of an earlier
            // signal, never of this one.
            flag::register_conditional_shutdown(sig, exit_code(sig).into(), Arc::clone(&flag))?;
            flag::register_usize(sig, Arc::clone(&which), sig as usize)?;
            flag::register(sig, Arc::clone(&flag))?;
        }
        let mut signals = Signals::new(SIGNALS)?;
        std::thread::spawn(move || {
            if let Some(sig) = signals.forever().next() {
                then(sig);
            }
        });
        let blocked: SigSet = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP]
            .into_iter()
            .collect();
        blocked.thread_block().map_err(io::Error::from)?;
        Ok(Caught { flag, which })
    }

    /// True once a signal came.
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }

    /// The signal that came, if one did.
    pub fn signal(&self) -> Option<i32> {
        match self.which.load(Ordering::SeqCst) {
            0 => None,
            n => i32::try_from(n).ok(),
        }
    }
}

/// The conventional exit code after `signal`: 128 + its number.
pub fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(u8::MAX)
}

pub fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

type Chunk = io::Result<Vec<u8>>;

/// How many bytes the input thread reads at a time, and how many such
/// reads it keeps ahead.
const CHUNK: usize = 256 << 10;
const AHEAD: usize = 4;

/// An input read on a thread of its own, so that a signal ends a read
/// that a stalled pipe blocks (the kernel restarts the read itself after
/// the handler runs): the signal thread sends an error in its place.
pub struct Input {
    rx: Receiver<Chunk>,
    flag: Arc<AtomicBool>,
    chunk: Vec<u8>,
    at: usize,
    eof: bool,
}

fn interrupted() -> io::Error {
    io::Error::other("interrupted by a signal")
}

/// Catches the signals and reads `input` on its own thread: a signal sets
/// the flag and ends the read in progress with an error.
pub fn cancellable(input: impl Read + Send + 'static) -> io::Result<(Caught, Input)> {
    let (tx, rx) = mpsc::sync_channel::<Chunk>(AHEAD);
    let wake: SyncSender<Chunk> = tx.clone();
    // The channel may be full: then the reader is not waiting, and it
    // looks at the flag before it waits again.
    let caught = Caught::install(move |_| {
        let _ = wake.try_send(Err(interrupted()));
    })?;
    std::thread::spawn(move || read_ahead(input, tx));
    let input = Input {
        rx,
        flag: Arc::clone(&caught.flag),
        chunk: Vec::new(),
        at: 0,
        eof: false,
    };
    Ok((caught, input))
}

fn read_ahead(mut input: impl Read, tx: SyncSender<Chunk>) {
    loop {
        let mut buf = vec![0u8; CHUNK];
        match input.read(&mut buf) {
            Ok(n) => {
                buf.truncate(n);
                if tx.send(Ok(buf)).is_err() || n == 0 {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}

impl Read for Input {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.chunk.len() {
            if self.eof || out.is_empty() {
                return Ok(0);
            }
            if self.flag.load(Ordering::SeqCst) {
                return Err(interrupted());
            }
            match self.rx.recv() {
                Ok(Ok(chunk)) => {
                    self.eof = chunk.is_empty();
                    self.chunk = chunk;
                    self.at = 0;
                }
                Ok(Err(e)) => return Err(e),
                // The reading thread is gone without an end: never, as it
                // sends one before it returns.
                Err(_) => return Err(io::Error::other("the input thread stopped")),
            }
        }
        let n = out.len().min(self.chunk.len() - self.at);
        out[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
