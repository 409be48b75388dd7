//! A TCP relay on loopback between clients and a real redis-server that
//! can lose a reply on purpose: the request reaches the server and is
//! executed in full, its answer is dropped and the connection closed. That is the
//! fault that makes a write's outcome unknown to its client (a dropped
//! connection, a crash between execution and reply), made exact and
//! repeatable. Redis itself is never imitated: every byte goes to it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

#[derive(Default)]
struct Faults {
    /// Replies still to cut, one each.
    pending: AtomicU32,
    /// With `every` > 0: cut every `every`-th reply chunk, up to `budget`.
    every: AtomicU32,
    budget: AtomicU32,
    seen: AtomicU32,
    /// Replies cut so far.
    cut: AtomicU32,
    stop: AtomicBool,
    /// New connections are closed at once, as by a server that is gone.
    refuse: AtomicBool,
}

impl Faults {
    /// Whether the reply chunk just read is to be lost.
    fn take(&self) -> bool {
        let n = self.seen.fetch_add(1, Ordering::SeqCst) + 1;
        let every = self.every.load(Ordering::SeqCst);
        let scheduled = every > 0
            && n.is_multiple_of(every)
            && self
                .budget
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| b.checked_sub(1))
                .is_ok();
        let one = !scheduled
            && self
                .pending
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |p| p.checked_sub(1))
                .is_ok();
        if scheduled || one {
            self.cut.fetch_add(1, Ordering::SeqCst);
        }
        scheduled || one
    }
}

/// The relay; stops accepting when dropped.
pub struct Proxy {
    port: u16,
    faults: Arc<Faults>,
}

impl Proxy {
    /// Relays a free loopback port to `127.0.0.1:upstream`.
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let faults = Arc::new(Faults::default());
        let f = Arc::clone(&faults);
        thread::spawn(move || {
            for client in listener.incoming() {
                if f.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                if f.refuse.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                relay(client, server, Arc::clone(&f));
            }
        });
        Proxy { port, faults }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The next reply (on any connection) is lost, its connection closed.
    pub fn cut_next_reply(&self) {
        self.faults.pending.fetch_add(1, Ordering::SeqCst);
    }

    /// Loses every `every`-th reply chunk from now on, `budget` times.
    pub fn cut_every(&self, every: u32, budget: u32) {
        self.faults.budget.store(budget, Ordering::SeqCst);
        self.faults.every.store(every, Ordering::SeqCst);
    }

    /// From now on (`true`), new connections are closed at once: the
    /// server is out of reach, while the connections already relayed go on.
    pub fn refuse(&self, refuse: bool) {
        self.faults.refuse.store(refuse, Ordering::SeqCst);
    }

    /// Replies lost so far.
    pub fn cuts(&self) -> u32 {
        self.faults.cut.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.faults.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees `stop`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Counts the RESP values of a byte stream as it goes by: requests (arrays
/// of bulk strings) one way, replies (nested for EXEC and scripts) the
/// other. A cut waits until every request sent was answered, so a lost
/// reply always belongs to a request the server ran in full.
#[derive(Default)]
struct Resp {
    /// Elements left in each open array.
    open: Vec<i64>,
    line: Vec<u8>,
    /// Bytes of a bulk string still to skip, with its CRLF.
    bulk: usize,
    /// Complete top-level values so far.
    values: u64,
}

impl Resp {
    fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.bulk > 0 {
                let n = self.bulk.min(data.len());
                self.bulk -= n;
                data = &data[n..];
                if self.bulk == 0 {
                    self.done();
                }
                continue;
            }
            let Some(end) = data.iter().position(|&b| b == b'\n') else {
                self.line.extend_from_slice(data);
                return;
            };
            self.line.extend_from_slice(&data[..=end]);
            data = &data[end + 1..];
            let line = std::mem::take(&mut self.line);
            let body = std::str::from_utf8(&line[1..line.len().saturating_sub(2)]).unwrap_or("");
            let n: i64 = body.parse().unwrap_or(0);
            match line[0] {
                b'$' | b'=' | b'!' if n >= 0 => self.bulk = n as usize + 2,
                b'*' | b'~' | b'>' if n > 0 => self.open.push(n),
                b'%' if n > 0 => self.open.push(2 * n),
                _ => self.done(),
            }
        }
    }

    /// A value ended: it is an element of the innermost open array, or a
    /// top-level value.
    fn done(&mut self) {
        loop {
            match self.open.last_mut() {
                None => {
                    self.values += 1;
                    return;
                }
                Some(left) => {
                    *left -= 1;
                    if *left > 0 {
                        return;
                    }
                    self.open.pop();
                }
            }
        }
    }

    /// Between two values.
    fn at_boundary(&self) -> bool {
        self.open.is_empty() && self.line.is_empty() && self.bulk == 0
    }
}

/// What the two directions of one relayed connection tell each other.
#[derive(Default)]
struct Link {
    /// Requests forwarded in full.
    requests: AtomicU64,
    /// The client has sent nothing for a while, and nothing partial.
    idle: AtomicBool,
}

/// How long a direction waits for bytes before it looks at the state.
const TICK: Duration = Duration::from_millis(10);

fn relay(client: TcpStream, server: TcpStream, faults: Arc<Faults>) {
    let (Ok(mut c_in), Ok(mut s_out)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let link = Arc::new(Link::default());
    let l = Arc::clone(&link);
    // Requests: client to server, untouched, counted.
    thread::spawn(move || {
        let _ = c_in.set_read_timeout(Some(TICK));
        let mut resp = Resp::default();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match c_in.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    l.idle.store(false, Ordering::SeqCst);
                    resp.feed(&buf[..n]);
                    if s_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    l.requests.store(resp.values, Ordering::SeqCst);
                }
                Err(e) if is_timeout(&e) => l.idle.store(resp.at_boundary(), Ordering::SeqCst),
                Err(_) => break,
            }
        }
        let _ = s_out.shutdown(Shutdown::Both);
        let _ = c_in.shutdown(Shutdown::Both);
    });
    // Replies: server to client; once a cut is taken, swallowed until the
    // server answered every request and the client sends no more, then
    // the connection is closed.
    thread::spawn(move || {
        let (mut s_in, mut c_out) = (server, client);
        let _ = s_in.set_read_timeout(Some(TICK));
        let mut resp = Resp::default();
        let mut cutting = false;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match s_in.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    resp.feed(&buf[..n]);
                    cutting = cutting || faults.take();
                    if !cutting && c_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                Err(e) if is_timeout(&e) => {}
                Err(_) => break,
            }
            if cutting
                && resp.at_boundary()
                && resp.values >= link.requests.load(Ordering::SeqCst)
                && link.idle.load(Ordering::SeqCst)
            {
                break;
            }
        }
        let _ = c_out.shutdown(Shutdown::Both);
        let _ = s_in.shutdown(Shutdown::Both);
    });
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}
