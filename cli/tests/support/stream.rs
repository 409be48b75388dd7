//! A running `rotabloom filter` fed chunk by chunk from a test, its
//! output read as it comes. The test includes `support/bin.rs` as `bin`.
#![allow(dead_code)]

use super::bin;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// A running `rotabloom filter`, fed chunk by chunk; its output read as it
/// comes.
pub struct Filter {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    pub printed: Vec<String>,
}

impl Filter {
    pub fn start(url: &str, extra: &[&str], name: &str) -> Filter {
        let mut child = bin::spawn_filter(url, extra, name);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Filter {
            child,
            stdin,
            lines,
            printed: Vec::new(),
        }
    }

    pub fn feed(&mut self, chunk: &[String]) {
        let mut text = chunk.join("\n");
        text.push('\n');
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Waits until `n` lines in all were printed.
    pub fn printed_at_least(&mut self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.printed.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.printed.push(line),
                Err(e) => panic!("{} of {n} lines printed: {e}", self.printed.len()),
            }
        }
    }

    /// Takes in the lines printed so far, without waiting.
    pub fn drain(&mut self) -> usize {
        self.printed.extend(self.lines.try_iter());
        self.printed.len()
    }

    /// Closes the input; returns every line printed, the standard error
    /// and the exit code.
    pub fn finish(mut self) -> (Vec<String>, String, i32) {
        drop(self.stdin.take());
        let o = self.child.wait_with_output().unwrap();
        self.printed.extend(self.lines.iter());
        (
            self.printed,
            String::from_utf8_lossy(&o.stderr).into_owned(),
            o.status.code().unwrap_or(-1),
        )
    }
}
