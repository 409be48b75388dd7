//! Real-Redis test harness: private `redis-server` processes and clusters.
//!
//! Include it from a test, example or bench with
//! `#[path = "support/harness.rs"] mod harness;` (from `tests/`) or
//! `#[path = "../tests/support/harness.rs"] mod harness;` (from elsewhere).
//!
//! It depends only on `std` and the `redis` crate. Every server it starts:
//!
//! * listens on `127.0.0.1` only, on a free port (never 6379),
//! * lives in its own temporary directory (`--dir`, log file inside it),
//! * has no persistence (`--save ''`, `--appendonly no`),
//! * is stopped (SIGTERM, then SIGKILL) and its directory removed on drop.
//!
//! The binaries are `redis-server` / `redis-cli` from `PATH`, or the paths in
//! the `REDIS_SERVER` / `REDIS_CLI` environment variables.
//! `scripts/ensure-redis.sh` installs them when missing.
#![allow(dead_code)]

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a freshly spawned server gets to answer PING.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a cluster gets to report `cluster_state:ok` on every node.
const CLUSTER_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a server gets to exit after SIGTERM before it is SIGKILLed.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// Polling interval for all the wait loops (not a fixed delay).
const POLL: Duration = Duration::from_millis(10);
/// How many times to pick a new port when a server fails to start.
const START_ATTEMPTS: usize = 5;
/// The cluster bus listens on `port + 10000`.
const CLUSTER_BUS_OFFSET: u16 = 10000;
/// Port used by a system-wide Redis: never use it.
const DEFAULT_REDIS_PORT: u16 = 6379;

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// The `redis-server` binary: `$REDIS_SERVER`, else `redis-server` from `PATH`.
pub fn redis_server_bin() -> PathBuf {
    match std::env::var_os("REDIS_SERVER") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from("redis-server"),
    }
}

/// The `redis-cli` binary: `$REDIS_CLI`, else a `redis-cli` next to
/// `$REDIS_SERVER`, else `redis-cli` from `PATH`.
pub fn redis_cli_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("REDIS_CLI").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("REDIS_SERVER").filter(|p| !p.is_empty()) {
        if let Some(sibling) = Path::new(&p).parent().map(|d| d.join("redis-cli")) {
            if sibling.is_file() {
                return sibling;
            }
        }
    }
    PathBuf::from("redis-cli")
}

/// A key prefix unique to this process and call, for tests that may share an
/// external server (`REDIS_URL`).
pub fn unique_prefix(tag: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "test:{tag}:{}:{}:{nanos}:",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Pick a free loopback port by binding to port 0. With `cluster`, the port
/// must leave room for the bus port (`port + 10000`), which must be free too.
fn pick_port(cluster: bool) -> u16 {
    for _ in 0..1000 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local_addr").port();
        if port == DEFAULT_REDIS_PORT {
            continue;
        }
        if cluster {
            let Some(bus) = port.checked_add(CLUSTER_BUS_OFFSET) else {
                continue;
            };
            if bus == DEFAULT_REDIS_PORT || TcpListener::bind(("127.0.0.1", bus)).is_err() {
                continue;
            }
        }
        drop(listener);
        return port;
    }
    panic!("could not find a free loopback port");
}

/// A fresh, empty temporary directory.
fn make_temp_dir() -> PathBuf {
    let base = std::env::temp_dir();
    for _ in 0..100 {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = base.join(format!(
            "rotabloom-redis-{}-{}-{nanos}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        match fs::create_dir(&dir) {
            Ok(()) => return dir,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("cannot create temp dir {}: {e}", dir.display()),
        }
    }
    panic!("cannot create a unique temp dir under {}", base.display());
}

/// The last `lines` lines of a file (empty if it cannot be read).
fn file_tail(path: &Path, lines: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Send SIGTERM, wait up to [`STOP_TIMEOUT`], then SIGKILL and reap.
fn stop_child(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    #[cfg(unix)]
    {
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => thread::sleep(POLL),
            }
        }
    }
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
}

/// A private `redis-server` process, stopped and cleaned up on drop.
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    extra_args: Vec<String>,
    role: Role,
}

/// What a server is besides a plain one.
#[derive(Clone)]
enum Role {
    Plain,
    ClusterNode,
    /// Listens with TLS only (`--port 0 --tls-port PORT`); with
    /// `auth_clients`, requires a client certificate.
    Tls {
        files: Box<TlsFiles>,
        auth_clients: bool,
    },
    /// `redis-server --sentinel` watching master `name` at `primary`.
    Sentinel {
        name: String,
        primary: u16,
        down_after_ms: u32,
    },
}

impl RedisServer {
    /// Start a private server with the default configuration.
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// Start a private server with extra `redis-server` arguments, e.g.
    /// `&["--loadmodule", "/path/to/module.so"]`.
    pub fn start_with(extra_args: &[&str]) -> RedisServer {
        Self::start_impl(
            extra_args.iter().map(|s| s.to_string()).collect(),
            Role::Plain,
        )
    }

    /// A cluster-enabled node (used by [`RedisCluster`]) that declares a
    /// silent peer failed after `node_timeout_ms`.
    fn start_cluster_node(node_timeout_ms: u32, extra_args: &[String]) -> RedisServer {
        // Given after the role's own arguments, so it is the one in force.
        let mut args = vec!["--cluster-node-timeout".into(), node_timeout_ms.to_string()];
        args.extend_from_slice(extra_args);
        Self::start_impl(args, Role::ClusterNode)
    }

    /// A server listening with TLS only, with the certificates of `files`;
    /// with `auth_clients`, it requires a client certificate signed by
    /// `files.ca`.
    pub fn start_tls(files: &TlsFiles, auth_clients: bool, extra_args: &[&str]) -> RedisServer {
        let role = Role::Tls {
            files: Box::new(files.clone()),
            auth_clients,
        };
        Self::start_impl(extra_args.iter().map(|s| s.to_string()).collect(), role)
    }

    /// A Sentinel watching the primary on port `primary` as master `name`
    /// (quorum 2).
    pub fn start_sentinel(name: &str, primary: u16) -> RedisServer {
        Self::start_sentinel_with(name, primary, 5000)
    }

    /// A Sentinel that declares the primary down after `down_after_ms`.
    pub fn start_sentinel_with(name: &str, primary: u16, down_after_ms: u32) -> RedisServer {
        let role = Role::Sentinel {
            name: name.to_string(),
            primary,
            down_after_ms,
        };
        Self::start_impl(Vec::new(), role)
    }

    fn start_impl(extra_args: Vec<String>, role: Role) -> RedisServer {
        let cluster = matches!(role, Role::ClusterNode);
        let mut server = RedisServer {
            child: None,
            port: 0,
            dir: make_temp_dir(),
            extra_args,
            role,
        };
        let mut errors = Vec::new();
        for _ in 0..START_ATTEMPTS {
            server.port = pick_port(cluster);
            match server.spawn_and_wait() {
                Ok(()) => return server,
                Err(e) => errors.push(e),
            }
        }
        // Attempts usually fail the same way (bad arguments): show the last.
        panic!(
            "redis-server failed to start ({START_ATTEMPTS} attempts on different ports); last error: {}",
            errors.last().map(String::as_str).unwrap_or("?")
        );
    }

    fn args(&self) -> Vec<String> {
        let dir = self.dir.to_string_lossy().into_owned();
        let mut args: Vec<String> = Vec::new();
        if let Role::Sentinel {
            name,
            primary,
            down_after_ms,
        } = &self.role
        {
            // A Sentinel rewrites its configuration file: it must have one.
            let conf = self.dir.join("sentinel.conf");
            let text = format!(
                "sentinel monitor {name} 127.0.0.1 {primary} 2\n\
                 sentinel down-after-milliseconds {name} {down_after_ms}\n\
                 sentinel failover-timeout {name} 10000\n"
            );
            fs::write(&conf, text).expect("write sentinel.conf");
            args.extend([conf.to_string_lossy().into_owned(), "--sentinel".into()]);
        }
        let port_args: Vec<String> = match &self.role {
            Role::Tls { .. } => vec![
                "--port".into(),
                "0".into(),
                "--tls-port".into(),
                self.port.to_string(),
            ],
            _ => vec!["--port".into(), self.port.to_string()],
        };
        args.extend(port_args);
        args.extend([
            "--bind".into(),
            "127.0.0.1".into(),
            "--dir".into(),
            dir,
            "--logfile".into(),
            self.log_path().to_string_lossy().into_owned(),
            "--daemonize".into(),
            "no".into(),
        ]);
        if matches!(self.role, Role::Sentinel { .. }) {
            return args;
        }
        args.extend([
            "--protected-mode".into(),
            "yes".into(),
            "--save".into(),
            "".into(),
            "--appendonly".into(),
            "no".into(),
        ]);
        match &self.role {
            Role::ClusterNode => args.extend([
                "--cluster-enabled".into(),
                "yes".into(),
                "--cluster-config-file".into(),
                format!("nodes-{}.conf", self.port),
                "--cluster-node-timeout".into(),
                "5000".into(),
            ]),
            Role::Tls {
                files,
                auth_clients,
            } => {
                let path = |p: &PathBuf| p.to_string_lossy().into_owned();
                args.extend([
                    "--tls-cert-file".into(),
                    path(&files.server_cert),
                    "--tls-key-file".into(),
                    path(&files.server_key),
                    "--tls-ca-cert-file".into(),
                    path(&files.ca),
                    "--tls-auth-clients".into(),
                    if *auth_clients { "yes" } else { "no" }.into(),
                ]);
            }
            Role::Plain | Role::Sentinel { .. } => {}
        }
        args.extend(self.extra_args.iter().cloned());
        args
    }

    /// Spawn on `self.port` and wait until this very process answers PING.
    fn spawn_and_wait(&mut self) -> Result<(), String> {
        let bin = redis_server_bin();
        let stderr_path = self.dir.join("stderr.log");
        let out = File::create(&stderr_path).map_err(|e| format!("create stderr.log: {e}"))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("clone stderr.log: {e}"))?;
        let child = Command::new(&bin)
            .args(self.args())
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
                "`{}` not found: install Redis (run scripts/ensure-redis.sh, or \
                 `apt-get install redis-server`), or set REDIS_SERVER to the binary",
                bin.display()
            ),
            Err(e) => panic!("cannot run `{}`: {e}", bin.display()),
        };
        let pid = child.id();
        self.child = Some(child);

        let client = self.client();
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let child = self.child.as_mut().expect("child");
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Err(format!(
                    "redis-server on port {} exited early ({status}); log tail:\n{}",
                    self.port,
                    self.log_tail(20)
                ));
            }
            if let Ok(mut con) = client.get_connection_with_timeout(Duration::from_millis(250)) {
                // Make sure the server answering is ours, not another one that
                // grabbed the same port in the meantime.
                let info: redis::RedisResult<String> =
                    redis::cmd("INFO").arg("server").query(&mut con);
                if let Ok(info) = info {
                    if info_field(&info, "process_id") == Some(pid.to_string().as_str()) {
                        let pong: redis::RedisResult<String> = redis::cmd("PING").query(&mut con);
                        if pong.is_ok() {
                            return Ok(());
                        }
                    }
                }
            }
            if Instant::now() >= deadline {
                let mut child = self.child.take().expect("child");
                stop_child(&mut child);
                return Err(format!(
                    "redis-server on port {} did not answer PING within {:?}; log tail:\n{}",
                    self.port,
                    READY_TIMEOUT,
                    self.log_tail(20)
                ));
            }
            thread::sleep(POLL);
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("redis.log")
    }

    /// The last `lines` lines of the server's log file and captured stderr.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = file_tail(&self.log_path(), lines);
        let stderr = file_tail(&self.dir.join("stderr.log"), lines);
        match (log.trim().is_empty(), stderr.trim().is_empty()) {
            (_, true) => log,
            (true, false) => stderr,
            (false, false) => format!("{log}\n[stdout/stderr]\n{stderr}"),
        }
    }

    /// `redis://127.0.0.1:PORT/` (`rediss://` for a TLS server).
    pub fn url(&self) -> String {
        match self.role {
            Role::Tls { .. } => format!("rediss://127.0.0.1:{}/", self.port),
            _ => format!("redis://127.0.0.1:{}/", self.port),
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's working directory (a private temp dir).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The server's process id, if running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// A client; for a TLS server, trusting the test CA and presenting
    /// the client certificate.
    pub fn client(&self) -> redis::Client {
        match &self.role {
            Role::Tls { files, .. } => {
                redis::Client::build_with_tls(self.url(), files.certificates()).expect("TLS client")
            }
            _ => redis::Client::open(self.url()).expect("valid redis URL"),
        }
    }

    pub fn connection(&self) -> redis::Connection {
        self.client()
            .get_connection()
            .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", self.url()))
    }

    /// Stop the server (SIGTERM, then SIGKILL). Idempotent.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop_child(&mut child);
        }
    }

    /// Stop the server and start it again on the same port and directory.
    /// All data and the script cache are lost (no persistence).
    pub fn restart(&mut self) {
        self.stop();
        self.respawn();
    }

    /// `kill -9`: the server dies at once, without saving or closing its
    /// connections cleanly.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes (`-STOP`) or thaws (`-CONT`) the server process.
    pub fn signal(&self, sig: &str) {
        let pid = self.pid().expect("server running").to_string();
        let ok = Command::new("kill")
            .args([sig, &pid])
            .status()
            .expect("kill");
        assert!(ok.success(), "kill {sig} {pid}");
    }

    /// [`respawn`](Self::respawn) with `extra` arguments added, from now
    /// on.
    pub fn respawn_with(&mut self, extra: &[&str]) {
        self.extra_args.extend(extra.iter().map(|a| a.to_string()));
        self.respawn();
    }

    /// Starts a stopped (or killed) server again on the same port and
    /// directory, with the same arguments: with persistence on, it reloads
    /// what it had written.
    pub fn respawn(&mut self) {
        let mut errors = Vec::new();
        // The port is normally free right away (redis uses SO_REUSEADDR); retry
        // a few times in case someone else briefly grabbed it.
        for _ in 0..START_ATTEMPTS {
            match self.spawn_and_wait() {
                Ok(()) => return,
                Err(e) => errors.push(e),
            }
        }
        panic!(
            "redis-server failed to restart on port {} ({START_ATTEMPTS} attempts); last error: {}",
            self.port,
            errors.last().map(String::as_str).unwrap_or("?")
        );
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// How many times the server behind `conn` ran `cmd` (lower case, as
/// `INFO commandstats` names it), scripts' inner calls included.
pub fn command_calls(conn: &mut redis::Connection, cmd: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(conn)
        .expect("INFO commandstats");
    info.lines()
        .find(|l| l.starts_with(&format!("cmdstat_{cmd}:")))
        .and_then(|l| l.split("calls=").nth(1))
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The keys matching `pattern`, by SCAN, sorted.
pub fn scan(conn: &mut redis::Connection, pattern: &str) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("SCAN")
        .cursor_arg(0)
        .arg("MATCH")
        .arg(pattern)
        .arg("COUNT")
        .arg(1000)
        .clone()
        .iter::<String>(conn)
        .expect("SCAN")
        .map(|k| k.expect("SCAN"))
        .collect();
    keys.sort();
    keys
}

/// The value of `field` in `INFO` output (`field:value` lines).
fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k == field).then(|| v.trim())
    })
}

/// Either a private server owned by the test, or an external one from
/// `REDIS_URL`. Tests using `External` share it: use [`unique_prefix`] keys
/// and don't FLUSHALL.
pub enum Redis {
    Private(RedisServer),
    External(String),
}

impl Redis {
    pub fn url(&self) -> String {
        match self {
            Redis::Private(s) => s.url(),
            Redis::External(u) => u.clone(),
        }
    }

    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url())
            .unwrap_or_else(|e| panic!("invalid redis URL {}: {e}", self.url()))
    }

    pub fn connection(&self) -> redis::Connection {
        self.client()
            .get_connection()
            .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", self.url()))
    }

    pub fn is_private(&self) -> bool {
        matches!(self, Redis::Private(_))
    }

    /// The private server, if any (e.g. to `restart()` it).
    pub fn server_mut(&mut self) -> Option<&mut RedisServer> {
        match self {
            Redis::Private(s) => Some(s),
            Redis::External(_) => None,
        }
    }
}

/// `REDIS_URL` (if set and non-empty) as an external server, else a freshly
/// started private server.
pub fn external_or_private() -> Redis {
    match std::env::var("REDIS_URL") {
        Ok(url) if !url.trim().is_empty() => Redis::External(url.trim().to_string()),
        _ => Redis::Private(RedisServer::start()),
    }
}

/// A private Redis Cluster on loopback: 3 masters and no replica, or
/// [`RedisCluster::start_with`] masters and replicas.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    node_timeout_ms: u32,
    /// Every node's extra `redis-server` arguments (a module to load).
    extra_args: Vec<String>,
}

impl RedisCluster {
    pub fn start() -> RedisCluster {
        Self::start_with(3, 0, 5000)
    }

    /// `masters` masters with `replicas` replicas each, every node
    /// declaring a silent peer failed after `node_timeout_ms`; returns once
    /// every node says `cluster_state:ok` and every replica is in sync.
    pub fn start_with(masters: usize, replicas: usize, node_timeout_ms: u32) -> RedisCluster {
        Self::start_with_args(masters, replicas, node_timeout_ms, &[])
    }

    /// As [`start_with`](Self::start_with), every node (and every node
    /// added later) started with `extra_args` too, e.g.
    /// `&["--loadmodule", "/path/to/redisbloom.so"]`.
    pub fn start_with_args(
        masters: usize,
        replicas: usize,
        node_timeout_ms: u32,
        extra_args: &[&str],
    ) -> RedisCluster {
        let extra_args: Vec<String> = extra_args.iter().map(|s| s.to_string()).collect();
        let nodes: Vec<RedisServer> = (0..masters * (1 + replicas))
            .map(|_| RedisServer::start_cluster_node(node_timeout_ms, &extra_args))
            .collect();
        let cluster = RedisCluster {
            nodes,
            node_timeout_ms,
            extra_args,
        };
        let addrs: Vec<String> = cluster
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();

        let cli = redis_cli_bin();
        let output = Command::new(&cli)
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run `{}` (install Redis, or set REDIS_CLI): {e}",
                    cli.display()
                )
            });
        if !output.status.success() {
            panic!(
                "`redis-cli --cluster create {}` failed ({}):\n{}\n{}",
                addrs.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }

        cluster.wait_until_ok();
        if replicas > 0 {
            cluster.wait_for_replicas(replicas);
        }
        cluster
    }

    /// Polls every master until it has `replicas` replicas online.
    fn wait_for_replicas(&self, replicas: usize) {
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        let want = replicas.to_string();
        loop {
            let synced = self.nodes.iter().all(|node| {
                let info: redis::RedisResult<String> = node
                    .client()
                    .get_connection_with_timeout(Duration::from_secs(1))
                    .and_then(|mut c| redis::cmd("INFO").arg("replication").query(&mut c));
                match info {
                    Ok(info) => {
                        info_field(&info, "role") != Some("master")
                            || (info_field(&info, "connected_slaves") == Some(want.as_str())
                                && info.matches("state=online").count() == replicas)
                    }
                    Err(_) => false,
                }
            });
            if synced {
                return;
            }
            if Instant::now() >= deadline {
                panic!("replicas not in sync within {CLUSTER_TIMEOUT:?}");
            }
            thread::sleep(POLL);
        }
    }

    /// `kill -9` of node `i` (by its process id): it dies at once.
    pub fn kill9(&mut self, i: usize) {
        self.nodes[i].kill9();
    }

    /// Starts a new node and adds it to the cluster as a replica of the
    /// master whose node id is `master_id`; returns its index in
    /// [`nodes`](Self::nodes). Returns once it is in sync with its master.
    pub fn add_replica(&mut self, master_id: &str) -> usize {
        let node = RedisServer::start_cluster_node(self.node_timeout_ms, &self.extra_args);
        let existing = self
            .nodes
            .iter()
            .find(|n| n.pid().is_some())
            .expect("a running node");
        // By hand, not `redis-cli --cluster add-node`, which refuses while
        // the nodes still disagree after a failover (and a node is dead).
        let mut conn = node.connection();
        let _: () = redis::cmd("CLUSTER")
            .arg("MEET")
            .arg("127.0.0.1")
            .arg(existing.port())
            .query(&mut conn)
            .expect("CLUSTER MEET");
        // REPLICATE needs the master known to the new node: retried until
        // the handshake has told it.
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        loop {
            let r: redis::RedisResult<()> = redis::cmd("CLUSTER")
                .arg("REPLICATE")
                .arg(master_id)
                .query(&mut conn);
            match r {
                Ok(()) => break,
                Err(e) if Instant::now() >= deadline => {
                    panic!("CLUSTER REPLICATE {master_id}: {e}")
                }
                Err(_) => thread::sleep(POLL),
            }
        }
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        loop {
            let info: redis::RedisResult<String> = node
                .client()
                .get_connection_with_timeout(Duration::from_secs(1))
                .and_then(|mut c| redis::cmd("INFO").arg("replication").query(&mut c));
            if let Ok(info) = info {
                if info_field(&info, "master_link_status") == Some("up") {
                    break;
                }
            }
            if Instant::now() >= deadline {
                panic!("the new replica did not sync within {CLUSTER_TIMEOUT:?}");
            }
            thread::sleep(POLL);
        }
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// Poll `CLUSTER INFO` on every node until all report `cluster_state:ok`,
    /// all slots assigned and all nodes known.
    fn wait_until_ok(&self) {
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        let n = self.nodes.len().to_string();
        let mut last = String::new();
        loop {
            let mut all_ok = true;
            for node in &self.nodes {
                let info: redis::RedisResult<String> = node
                    .client()
                    .get_connection_with_timeout(Duration::from_secs(1))
                    .and_then(|mut c| redis::cmd("CLUSTER").arg("INFO").query(&mut c));
                let ok = match &info {
                    Ok(info) => {
                        info_field(info, "cluster_state") == Some("ok")
                            && info_field(info, "cluster_slots_assigned") == Some("16384")
                            && info_field(info, "cluster_known_nodes") == Some(n.as_str())
                    }
                    Err(_) => false,
                };
                if !ok {
                    last = format!("node {}: {info:?}", node.port());
                    all_ok = false;
                    break;
                }
            }
            if all_ok {
                return;
            }
            if Instant::now() >= deadline {
                panic!("cluster not ready within {CLUSTER_TIMEOUT:?}; last: {last}");
            }
            thread::sleep(POLL);
        }
    }

    /// `redis://127.0.0.1:PORT/` for every node.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.url()).collect()
    }

    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    pub fn client(&self) -> redis::cluster::ClusterClient {
        redis::cluster::ClusterClient::new(self.urls()).expect("valid cluster URLs")
    }

    pub fn connection(&self) -> redis::cluster::ClusterConnection {
        self.client()
            .get_connection()
            .unwrap_or_else(|e| panic!("cannot connect to cluster {:?}: {e}", self.urls()))
    }

    /// Restarts node `i` without persistence (its keys are gone, its
    /// slots and node id stay, from its nodes file); returns once every
    /// node says `cluster_state:ok` again.
    pub fn restart(&mut self, i: usize) {
        self.nodes[i].restart();
        self.wait_until_ok();
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        // SIGTERM everyone first so the nodes shut down in parallel.
        #[cfg(unix)]
        for node in &self.nodes {
            if let Some(pid) = node.pid() {
                let _ = Command::new("kill")
                    .args(["-TERM", &pid.to_string()])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
        // Each node's own Drop then reaps (or SIGKILLs) it and removes its dir.
        self.nodes.clear();
    }
}

/// A CA, a server certificate for 127.0.0.1 / localhost and a client
/// certificate it signed, and a second CA that signed nothing of these:
/// PEM files made with `openssl` (scripts/ensure-redis.sh installs it) in
/// a temporary directory, removed when the last clone is dropped.
#[derive(Clone)]
pub struct TlsFiles {
    _dir: std::sync::Arc<TempDir>,
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    /// A CA that signed none of the certificates above.
    pub other_ca: PathBuf,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `openssl` (run scripts/ensure-redis.sh, or apt-get install openssl): {e}")
        });
    assert!(
        out.status.success(),
        "openssl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl TlsFiles {
    pub fn make() -> TlsFiles {
        let dir = make_temp_dir();
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        for ca in ["ca", "other-ca"] {
            let mut args = vec!["req", "-x509"];
            args.extend(ec);
            let (key, crt, subj) = (
                format!("{ca}.key"),
                format!("{ca}.crt"),
                format!("/CN=rotabloom test {ca}"),
            );
            args.extend([
                "-keyout",
                &key,
                "-out",
                &crt,
                "-days",
                "2",
                "-subj",
                &subj,
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ]);
            openssl(&dir, &args);
        }
        fs::write(
            dir.join("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        fs::write(
            dir.join("client.ext"),
            "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        for who in ["server", "client"] {
            let (key, csr, crt, ext, subj) = (
                format!("{who}.key"),
                format!("{who}.csr"),
                format!("{who}.crt"),
                format!("{who}.ext"),
                format!("/CN=rotabloom test {who}"),
            );
            let mut args = vec!["req"];
            args.extend(ec);
            args.extend(["-keyout", &key, "-out", &csr, "-subj", &subj]);
            openssl(&dir, &args);
            openssl(
                &dir,
                &[
                    "x509",
                    "-req",
                    "-in",
                    &csr,
                    "-CA",
                    "ca.crt",
                    "-CAkey",
                    "ca.key",
                    "-CAcreateserial",
                    "-out",
                    &crt,
                    "-days",
                    "2",
                    "-extfile",
                    &ext,
                ],
            );
        }
        TlsFiles {
            ca: dir.join("ca.crt"),
            server_cert: dir.join("server.crt"),
            server_key: dir.join("server.key"),
            client_cert: dir.join("client.crt"),
            client_key: dir.join("client.key"),
            other_ca: dir.join("other-ca.crt"),
            _dir: std::sync::Arc::new(TempDir(dir)),
        }
    }

    /// The test CA and the client certificate, for the redis crate.
    pub fn certificates(&self) -> redis::TlsCertificates {
        redis::TlsCertificates {
            client_tls: Some(redis::ClientTlsConfig {
                client_cert: fs::read(&self.client_cert).unwrap(),
                client_key: fs::read(&self.client_key).unwrap(),
            }),
            root_cert: Some(fs::read(&self.ca).unwrap()),
        }
    }
}

/// A primary, one replica of it, and three Sentinels watching it as
/// master `name`, on loopback.
pub struct SentinelSet {
    pub primary: RedisServer,
    pub replica: RedisServer,
    pub sentinels: Vec<RedisServer>,
    pub name: String,
}

impl SentinelSet {
    pub fn start(name: &str) -> SentinelSet {
        Self::start_with(name, 5000, &[])
    }

    /// Sentinels that declare the primary down after `down_after_ms`;
    /// `extra` goes to both data nodes.
    pub fn start_with(name: &str, down_after_ms: u32, extra: &[&str]) -> SentinelSet {
        let primary = RedisServer::start_with(extra);
        let of = primary.port().to_string();
        let mut args = vec!["--replicaof", "127.0.0.1", &of];
        args.extend_from_slice(extra);
        let replica = RedisServer::start_with(&args);
        let sentinels: Vec<RedisServer> = (0..3)
            .map(|_| RedisServer::start_sentinel_with(name, primary.port(), down_after_ms))
            .collect();
        let set = SentinelSet {
            primary,
            replica,
            sentinels,
            name: name.to_string(),
        };
        set.wait_until_ready();
        set
    }

    /// Every Sentinel names the primary; the replica is in sync.
    fn wait_until_ready(&self) {
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        let mut last = String::new();
        loop {
            let primary = self.primary.port().to_string();
            let ready = self.sentinels.iter().all(|s| {
                let addr: redis::RedisResult<Vec<String>> = s
                    .client()
                    .get_connection_with_timeout(Duration::from_secs(1))
                    .and_then(|mut c| {
                        redis::cmd("SENTINEL")
                            .arg("GET-MASTER-ADDR-BY-NAME")
                            .arg(&self.name)
                            .query(&mut c)
                    });
                last = format!("sentinel {}: {addr:?}", s.port());
                matches!(&addr, Ok(a) if a.get(1) == Some(&primary))
            });
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut self.replica.connection())
                .unwrap_or_default();
            if ready && info_field(&info, "master_link_status") == Some("up") {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "sentinels not ready within {CLUSTER_TIMEOUT:?}; last: {last}; replica: {info}"
                );
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// `redis+sentinel://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/NAME`
    pub fn url(&self) -> String {
        let addrs: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port()))
            .collect();
        format!("redis+sentinel://{}/{}", addrs.join(","), self.name)
    }
}
