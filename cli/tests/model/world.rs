//! The real system a sequence runs against: a private redis-server (with
//! the RedisBloom module when it could be provisioned), a relay in front of
//! it that can lose replies, up to eight clients each with its own
//! connections and long-lived handles (so stale views and mirrors are
//! exercised), and the `rotabloom` binary.

use crate::harness::RedisServer;
use crate::proxy::Proxy;
use crate::steps::{Call, Full, Op, Protocol, Runner, Shape, Spec, Store};
use rotabloom::{
    AnyFilter, Backend, BloomFilter, CircularFilter, Delivery, Error, ExpandingFilter, Mode,
    WhenFull,
};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// The name of filter slot `f`.
pub fn name(f: u8) -> String {
    format!("m{f}")
}

/// The bytes of item `id`.
pub fn item(id: u32) -> String {
    format!("i{id}")
}

/// A handle of any type, so that typed and by-name handles run the same
/// calls.
#[derive(Clone)]
pub enum Handle {
    Any(AnyFilter),
    Bloom(BloomFilter),
    Expanding(ExpandingFilter),
    Circular(CircularFilter),
}

/// Runs `$body` with `$h` bound to the typed handle inside.
macro_rules! each {
    ($handle:expr, $h:ident => $body:expr) => {
        match $handle {
            Handle::Any($h) => $body,
            Handle::Bloom($h) => $body,
            Handle::Expanding($h) => $body,
            Handle::Circular($h) => $body,
        }
    };
}

impl Handle {
    fn configured(self, call: &Call) -> Handle {
        let when = match call.full {
            Full::Refuse => WhenFull::Error,
            Full::WarnOn => WhenFull::Warn,
            Full::Grow => WhenFull::Expand,
        };
        let tx = call.protocol != Protocol::Script;
        each!(self, h => {
            let h = h.with_transactions(tx).with_when_full(when);
            let h = match call.mirror {
                true => h.with_frozen_cache(64 << 20),
                false => h,
            };
            Handle::from(h)
        })
    }
}

impl From<AnyFilter> for Handle {
    fn from(h: AnyFilter) -> Handle {
        Handle::Any(h)
    }
}
impl From<BloomFilter> for Handle {
    fn from(h: BloomFilter) -> Handle {
        Handle::Bloom(h)
    }
}
impl From<ExpandingFilter> for Handle {
    fn from(h: ExpandingFilter) -> Handle {
        Handle::Expanding(h)
    }
}
impl From<CircularFilter> for Handle {
    fn from(h: CircularFilter) -> Handle {
        Handle::Circular(h)
    }
}

/// What a call came back with.
#[derive(Debug)]
pub enum Outcome {
    /// An answer per item.
    Answers(Vec<bool>),
    /// A library error; `answered` holds the answers of the items handled
    /// before it, when it says (a full generation).
    Failed { error: Error, answered: Vec<bool> },
    /// The command line: the items it printed, its exit code and its
    /// standard error.
    Printed {
        items: Vec<u32>,
        code: i32,
        stderr: String,
    },
}

/// What an idempotent batch said of its runs: how many failed with a
/// retryable error before its last (each may have been applied, its reply
/// lost), and its `unknown()` after the last.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resent {
    pub tries: u32,
    pub unknown: usize,
}

/// One client: its own connections (as the default user, and as the user
/// refused `WATCH`), and handles kept across steps.
#[derive(Default)]
struct Client {
    conn: Option<redis::Connection>,
    no_watch: Option<redis::Connection>,
    handles: HashMap<(u8, bool, bool, bool), Handle>,
}

/// The user the server refuses `WATCH` (and only that).
const NO_WATCH: &str = "nowatch";

/// The command line's `--retries`: a batch runs at most one more time.
pub const CLI_RETRIES: u32 = 3;

/// The user of the test's own connections, which the faults that kill
/// connections spare.
const MODEL: &str = "model";

fn add_users(conn: &mut redis::Connection) {
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(MODEL)
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .query(conn)
        .unwrap();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(NO_WATCH)
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .arg("-watch")
        .query(conn)
        .unwrap();
}

pub struct World {
    pub server: RedisServer,
    pub proxy: Proxy,
    pub module: Option<String>,
    rt: tokio::runtime::Runtime,
    clients: Vec<Client>,
    /// The shape each slot was last created with, for typed handles.
    pub shapes: Vec<Option<Shape>>,
}

fn server(module: Option<&str>) -> RedisServer {
    match module {
        Some(m) => RedisServer::start_with(&["--loadmodule", m]),
        None => RedisServer::start(),
    }
}

impl World {
    pub fn new(module: Option<String>) -> World {
        let server = server(module.as_deref());
        add_users(&mut server.connection());
        let proxy = Proxy::start(server.port());
        World {
            server,
            proxy,
            module,
            rt: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
            clients: (0..8).map(|_| Client::default()).collect(),
            shapes: vec![None; crate::steps::FILTERS as usize],
        }
    }

    /// The URL clients use: through the relay.
    pub fn url(&self) -> String {
        self.proxy.url()
    }

    /// A connection straight to the server, for the test's own reads and
    /// admin steps, as a user whose connections no fault kills.
    pub fn admin(&self) -> redis::Connection {
        let url = format!("redis://{MODEL}:pw@127.0.0.1:{}", self.server.port());
        // Until its AUTH is through, a new connection is the default
        // user's, whose connections a KillConnections fault running
        // meanwhile closes: such a reset is tried again, for a while.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match redis::Client::open(url.as_str()).and_then(|c| c.get_connection()) {
                Ok(c) => return c,
                Err(e) if e.is_connection_dropped() && std::time::Instant::now() < deadline => {}
                Err(e) => panic!("the model's own connection: {e}"),
            }
        }
    }

    /// Forgets every connection (after a restart).
    pub fn reconnect_all(&mut self) {
        for c in &mut self.clients {
            c.conn = None;
            c.no_watch = None;
        }
    }

    /// The server restarted without persistence.
    pub fn restart(&mut self) {
        self.server.restart();
        add_users(&mut self.server.connection());
        self.reconnect_all();
    }

    fn url_of(&self, no_watch: bool) -> String {
        match no_watch {
            true => self
                .url()
                .replace("redis://", &format!("redis://{NO_WATCH}:pw@")),
            false => self.url(),
        }
    }

    fn connect_as(&self, no_watch: bool) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(self.url_of(no_watch))?.get_connection()
    }

    /// Creates filter `f` as `spec`.
    pub fn create(&mut self, f: u8, spec: &Spec) -> rotabloom::Result<()> {
        // As a client does, through the relay: faults reach it.
        let mut conn = self.connect_as(false)?;
        create_on(&mut conn, f, spec)?;
        self.shapes[f as usize] = Some(spec.shape);
        Ok(())
    }

    /// A fresh handle of client `c` on filter `f`, typed as the slot was
    /// last created, or by name.
    fn open(
        &self,
        conn: &mut redis::Connection,
        f: u8,
        by_name: bool,
    ) -> rotabloom::Result<Handle> {
        let n = name(f);
        if by_name {
            return AnyFilter::open(conn, &n).map(Handle::from);
        }
        match self.shapes[f as usize] {
            Some(Shape::Bloom) => BloomFilter::open(conn, &n).map(Handle::from),
            Some(Shape::Expanding) => ExpandingFilter::open(conn, &n).map(Handle::from),
            Some(Shape::Circular { .. }) => CircularFilter::open(conn, &n).map(Handle::from),
            None => AnyFilter::open(conn, &n).map(Handle::from),
        }
    }

    /// Notes that slot `f` is now of `shape` (a conversion, a restore).
    pub fn reshaped(&mut self, f: u8, shape: Option<Shape>) {
        self.shapes[f as usize] = shape;
    }

    /// Runs the calls of one step at once, each on its own thread; the
    /// outcomes (and what each batch said of its retries) come back in
    /// call order.
    pub fn run_calls(&mut self, f: u8, calls: &[Call]) -> Vec<(Outcome, Resent)> {
        // Each client's state goes to its thread and comes back.
        let mut taken: Vec<(usize, Client)> = calls
            .iter()
            .map(|c| {
                let i = c.client as usize % self.clients.len();
                (i, std::mem::take(&mut self.clients[i]))
            })
            .collect();
        let this = &*self;
        let outcomes: Vec<((Outcome, Resent), Client)> = std::thread::scope(|s| {
            let threads: Vec<_> = calls
                .iter()
                .zip(taken.drain(..))
                .map(|(call, (_, mut client))| {
                    s.spawn(move || {
                        let out = this.run_call(&mut client, f, call);
                        (out, client)
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut out = Vec::with_capacity(calls.len());
        for (call, (o, client)) in calls.iter().zip(outcomes) {
            let i = call.client as usize % self.clients.len();
            // A client given two calls in one step keeps the last state.
            self.clients[i] = client;
            out.push(o);
        }
        out
    }

    fn run_call(&self, client: &mut Client, f: u8, call: &Call) -> (Outcome, Resent) {
        let mut resent = Resent::default();
        let out = match call.runner {
            Runner::Cli => self.run_cli(f, call),
            Runner::Sync | Runner::Async => match self.run_lib(client, f, call, &mut resent) {
                Ok(a) => Outcome::Answers(a),
                Err(error) => Outcome::Failed {
                    answered: match &error {
                        Error::Full { answered, .. } => answered.clone(),
                        _ => Vec::new(),
                    },
                    error,
                },
            },
        };
        (out, resent)
    }

    fn handle(
        &self,
        client: &mut Client,
        conn: &mut redis::Connection,
        f: u8,
        call: &Call,
    ) -> rotabloom::Result<Handle> {
        let key = (f, call.by_name, call.mirror, call.no_watch);
        if let Some(h) = client.handles.get(&key) {
            return Ok(h.clone().configured(call));
        }
        let h = self.open(conn, f, call.by_name)?;
        let h = h.configured(call);
        client.handles.insert(key, h.clone());
        Ok(h)
    }

    fn run_lib(
        &self,
        client: &mut Client,
        f: u8,
        call: &Call,
        resent: &mut Resent,
    ) -> rotabloom::Result<Vec<bool>> {
        let slot = match call.no_watch {
            true => &mut client.no_watch,
            false => &mut client.conn,
        };
        let mut conn = match slot.take() {
            Some(c) => c,
            None => self.connect_as(call.no_watch)?,
        };
        let h = self.handle(client, &mut conn, f, call)?;
        let items: Vec<String> = call.items.iter().map(|&i| item(i)).collect();
        let result = match call.runner {
            Runner::Async => self.rt.block_on(async {
                let mut a = async_conn(self.url_of(call.no_watch)).await?;
                data_async(&h, &mut a, call, &items, resent, || {
                    async_conn(self.url_of(call.no_watch))
                })
                .await
            }),
            _ => data_sync(&h, &mut conn, call, &items, resent, || {
                self.connect_as(call.no_watch)
            }),
        };
        // A connection that failed is not reused.
        if !matches!(&result, Err(e) if e.is_retryable()) {
            match call.no_watch {
                true => client.no_watch = Some(conn),
                false => client.conn = Some(conn),
            }
        }
        result
    }

    fn run_cli(&self, f: u8, call: &Call) -> Outcome {
        let when = match call.full {
            Full::Refuse => "error",
            Full::WarnOn => "warn",
            Full::Grow => "expand",
        };
        let mirror = if call.mirror { "16" } else { "0" };
        let verb = match call.op {
            Op::Contains => "check",
            _ => "filter",
        };
        let url = self.url();
        let n = name(f);
        let retries = CLI_RETRIES.to_string();
        let mut args = vec![
            "--redis",
            &url,
            "--when-full",
            when,
            "--mirror-mib",
            mirror,
            "--retries",
            &retries,
            verb,
            &n,
        ];
        if call.op != Op::Contains {
            args.extend(["--batch", "100"]);
        }
        // At least once, by its flag or (odd batches) its variable.
        let mut env = vec![];
        if call.protocol == Protocol::AtLeastOnce && call.op != Op::Contains {
            match call.items.len() % 2 {
                0 => args.extend(["--delivery", "at-least-once"]),
                _ => env.push(("ROTABLOOM_DELIVERY", "at-least-once")),
            }
        }
        let input: String = call.items.iter().map(|&i| item(i) + "\n").collect();
        let run = crate::bin::rotabloom(&args, &env, input.as_bytes());
        Outcome::Printed {
            items: run
                .stdout
                .lines()
                .filter_map(|l| l.strip_prefix('i')?.parse().ok())
                .collect(),
            code: run.code,
            stderr: run.stderr,
        }
    }

    /// Starts `rotabloom filter` on `items` and kills it with SIGKILL once
    /// it printed its first line (or ended); returns what it printed.
    pub fn killed_cli(&self, f: u8, items: &[u32]) -> Vec<u32> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rotabloom"))
            .args(["--redis", &self.url(), "filter", &name(f), "--batch", "50"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let input: String = items.iter().map(|&i| item(i) + "\n").collect();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut printed = Vec::new();
        let mut line = String::new();
        if out.read_line(&mut line).unwrap_or(0) > 0 {
            if let Some(id) = line.trim().strip_prefix('i').and_then(|s| s.parse().ok()) {
                printed.push(id);
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let _ = writer.join();
        printed
    }

    /// One `rotabloom filter` run (a batch per line, two in flight): fed
    /// `first`; once every item of `first` is in the filter (or the run
    /// ended), `midway` runs; then fed `second`. Returns what it printed,
    /// its exit code and its standard error.
    pub fn stream(
        &self,
        f: u8,
        first: &[u32],
        second: &[u32],
        midway: impl FnOnce(),
    ) -> (Vec<u32>, i32, String) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rotabloom"))
            .args([
                "--redis",
                &self.url(),
                "--in-flight",
                "2",
                "filter",
                &name(f),
                "--batch",
                "1",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        // Lines as they are printed: the first part is over when its last
        // line, the marker (new to the filter), comes out.
        let (lines, printed_rx) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let errors = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut s);
            s
        });
        let text = |ids: &[u32]| ids.iter().map(|&i| item(i) + "\n").collect::<String>();
        let _ = stdin.write_all(text(first).as_bytes());
        let _ = stdin.flush();
        // Waits for the marker's answer: output comes in input order, so
        // every batch of the first part was answered then, and none is in
        // flight when the filter changes (its lines being in the filter
        // says less: a line already there is, before its batch ran). A
        // run that stopped prints it never.
        let marker = first.last().map(|&i| item(i));
        let mut printed = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            match printed_rx.recv_timeout(std::time::Duration::from_millis(20)) {
                Ok(line) => {
                    let done = Some(&line) == marker.as_ref();
                    printed.push(line);
                    if done {
                        break;
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if child.try_wait().ok().flatten().is_some() {
                        break;
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        midway();
        let _ = stdin.write_all(text(second).as_bytes());
        drop(stdin);
        let status = child.wait().unwrap();
        let _ = reader.join();
        printed.extend(printed_rx.try_iter());
        let printed = printed
            .iter()
            .filter_map(|l| l.strip_prefix('i')?.parse().ok())
            .collect();
        (printed, status.code().unwrap_or(-1), errors.join().unwrap())
    }

    /// Opens filter `f` by name on a direct connection.
    pub fn any(&self, f: u8) -> rotabloom::Result<AnyFilter> {
        AnyFilter::open(&mut self.admin(), &name(f))
    }

    /// `clients` concurrent manual rotations, each with its own handle;
    /// the rotations each reported.
    pub fn rotate(&self, f: u8, clients: u8) -> Vec<rotabloom::Result<u32>> {
        let handles: Vec<_> = (0..clients)
            .map(|_| CircularFilter::open(&mut self.admin(), &name(f)))
            .collect();
        std::thread::scope(|s| {
            let threads: Vec<_> = handles
                .into_iter()
                .map(|h| {
                    s.spawn(move || {
                        let h = h?;
                        let mut conn = self.admin();
                        match h.rotate(&mut conn)? {
                            rotabloom::Rotation::Rotated { rotations, .. } => Ok(rotations),
                            _ => Ok(0),
                        }
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        })
    }

    /// `clients` concurrent scheduled rotations at hour `hour`.
    pub fn rotate_if_due(&self, f: u8, clients: u8, hour: i64) -> Vec<rotabloom::Result<u32>> {
        let now = chrono::DateTime::from_timestamp(hour * 3600, 0).unwrap();
        let handles: Vec<_> = (0..clients)
            .map(|_| CircularFilter::open(&mut self.admin(), &name(f)))
            .collect();
        std::thread::scope(|s| {
            let threads: Vec<_> = handles
                .into_iter()
                .map(|h| {
                    s.spawn(move || {
                        let h = h?;
                        let mut conn = self.admin();
                        match h.rotate_if_due_at(&mut conn, now)? {
                            rotabloom::Rotation::Rotated { rotations, .. } => Ok(rotations),
                            _ => Ok(0),
                        }
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        })
    }
}

/// How an idempotent batch of `call` is delivered.
fn delivery(call: &Call) -> Delivery {
    match call.protocol {
        Protocol::AtLeastOnce => Delivery::AtLeastOnce,
        _ => Delivery::ExactlyOnce,
    }
}

/// One call's data operation on a blocking connection; an idempotent
/// batch is run again on a new connection after a retryable error.
fn data_sync(
    h: &Handle,
    conn: &mut redis::Connection,
    call: &Call,
    items: &[String],
    resent: &mut Resent,
    reconnect: impl Fn() -> redis::RedisResult<redis::Connection>,
) -> rotabloom::Result<Vec<bool>> {
    let single = items.len() == 1;
    match (call.op, call.protocol) {
        (Op::Contains, _) if single => each!(h, f => f.contains(conn, &items[0]).map(|x| vec![x])),
        (Op::Contains, _) => each!(h, f => f.contains_many(conn, items)),
        (op, Protocol::Idempotent | Protocol::AtLeastOnce) => {
            let mut batch = each!(h, f => f.idempotent_batch(items)).with_delivery(delivery(call));
            loop {
                let r = match op {
                    Op::Insert => batch.insert(conn),
                    _ => batch.check_and_insert(conn),
                };
                resent.unknown = batch.unknown();
                match r {
                    // Run again on a new connection, which the client keeps.
                    Err(e) if e.is_retryable() && resent.tries < 20 => {
                        resent.tries += 1;
                        if let Ok(c) = reconnect() {
                            *conn = c;
                        }
                    }
                    other => return other,
                }
            }
        }
        (Op::Insert, _) if single => each!(h, f => f.insert(conn, &items[0]).map(|x| vec![x])),
        (Op::Insert, _) => each!(h, f => f.insert_many(conn, items)),
        (_, _) if single => each!(h, f => f.check_and_insert(conn, &items[0]).map(|x| vec![x])),
        _ => each!(h, f => f.check_and_insert_many(conn, items)),
    }
}

/// The same on an async connection.
async fn data_async<F, Fut>(
    h: &Handle,
    conn: &mut redis::aio::MultiplexedConnection,
    call: &Call,
    items: &[String],
    resent: &mut Resent,
    reconnect: F,
) -> rotabloom::Result<Vec<bool>>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = redis::RedisResult<redis::aio::MultiplexedConnection>>,
{
    let single = items.len() == 1;
    match (call.op, call.protocol) {
        (Op::Contains, _) if single => {
            each!(h, f => f.contains_async(conn, &items[0]).await.map(|x| vec![x]))
        }
        (Op::Contains, _) => each!(h, f => f.contains_many_async(conn, items).await),
        (op, Protocol::Idempotent | Protocol::AtLeastOnce) => {
            let mut batch = each!(h, f => f.idempotent_batch(items)).with_delivery(delivery(call));
            let mut c = None;
            loop {
                let conn: &mut redis::aio::MultiplexedConnection = match c.as_mut() {
                    Some(c) => c,
                    None => &mut *conn,
                };
                let r = match op {
                    Op::Insert => batch.insert_async(conn).await,
                    _ => batch.check_and_insert_async(conn).await,
                };
                resent.unknown = batch.unknown();
                match r {
                    Err(e) if e.is_retryable() && resent.tries < 20 => {
                        resent.tries += 1;
                        c = reconnect().await.ok();
                    }
                    other => return other,
                }
            }
        }
        (Op::Insert, _) if single => {
            each!(h, f => f.insert_async(conn, &items[0]).await.map(|x| vec![x]))
        }
        (Op::Insert, _) => each!(h, f => f.insert_many_async(conn, items).await),
        (_, _) if single => {
            each!(h, f => f.check_and_insert_async(conn, &items[0]).await.map(|x| vec![x]))
        }
        _ => each!(h, f => f.check_and_insert_many_async(conn, items).await),
    }
}

/// Creates filter `f` as `spec` on `conn`.
pub fn create_on(conn: &mut redis::Connection, f: u8, spec: &Spec) -> rotabloom::Result<()> {
    let backend = match spec.store {
        Store::Bitmap => Backend::Bitmap,
        Store::Module => Backend::RedisBloom,
        Store::ValkeyBloom => Backend::ValkeyBloom,
    };
    let n = name(f);
    match spec.shape {
        Shape::Bloom => BloomFilter::builder(&n)
            .capacity(spec.capacity)
            .error_rate(spec.error_rate)
            .backend(backend)
            .create_or_open(conn)
            .map(|_| ()),
        Shape::Expanding => ExpandingFilter::builder(&n)
            .capacity(spec.capacity)
            .error_rate(spec.error_rate)
            .backend(backend)
            .create_or_open(conn)
            .map(|_| ()),
        Shape::Circular { n: gens, newest } => CircularFilter::builder(&n)
            .generations(gens)
            .mode(match newest {
                true => Mode::InsertNewestQueryAll,
                false => Mode::InsertAllQueryOldest,
            })
            .capacity(spec.capacity)
            .error_rate(spec.error_rate)
            .schedule("1h")
            .backend(backend)
            .create_or_open(conn)
            .map(|_| ()),
    }
}

/// An async connection without redis-rs's default 500 ms reply timeout: a
/// loaded CI machine (two servers' test suites side by side) can take
/// longer than that for one script, and the model injects its faults
/// itself, so a timeout would be a failure nobody caused.
async fn async_conn(url: String) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
    let config = redis::AsyncConnectionConfig::new()
        .set_response_timeout(Some(std::time::Duration::from_secs(60)));
    redis::Client::open(url)?
        .get_multiplexed_async_connection_with_config(&config)
        .await
}
