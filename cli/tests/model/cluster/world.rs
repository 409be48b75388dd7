//! The real system of the cluster model: a local 3-master Redis Cluster
//! (started once, emptied between sequences), the `rotabloom` binary on a
//! `redis+cluster://` URL, and the faults on one master.

use crate::bin;
use crate::harness::{scan, RedisCluster};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The name of filter slot `f`.
pub fn name(f: u8) -> String {
    format!("c{f}")
}

/// Lines of input for `ids`.
pub fn lines(ids: &[u32]) -> String {
    ids.iter().map(|&i| crate::world::item(i) + "\n").collect()
}

/// The ids of printed item lines.
pub fn ids(stdout: &str) -> Vec<u32> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix('i')?.parse().ok())
        .collect()
}

/// One shard as `status --json` shows it (an unsharded filter: itself).
#[derive(Clone, Debug)]
pub struct View {
    pub kind: String,
    pub epoch: u64,
    pub counts: Vec<u64>,
    pub caps: Vec<u64>,
}

/// A filter as `status NAME --json` shows it.
#[derive(Clone, Debug)]
pub struct Status {
    pub code: i32,
    pub stderr: String,
    /// The root's kind (a sharded filter) or the filter's.
    pub kind: Option<String>,
    pub sharded: bool,
    pub shards: Vec<View>,
    /// The filter's `error` field, or the shards'.
    pub error: Option<String>,
    pub doc: Value,
}

fn view(v: &Value) -> View {
    let gens = v["generations"].as_array().cloned().unwrap_or_default();
    View {
        kind: v["kind"].as_str().unwrap_or_default().to_string(),
        epoch: v["epoch"].as_u64().unwrap_or(0),
        counts: gens
            .iter()
            .map(|g| g["count"].as_u64().unwrap_or(0))
            .collect(),
        caps: gens
            .iter()
            .map(|g| g["capacity"].as_u64().unwrap_or(0))
            .collect(),
    }
}

pub struct CWorld {
    pub cluster: RedisCluster,
    pub url: String,
    ids: Vec<String>,
    pub dir: std::path::PathBuf,
}

impl CWorld {
    pub fn new() -> CWorld {
        let module = crate::module();
        let args: Vec<&str> = match &module {
            Some(m) => vec!["--loadmodule", m],
            None => vec![],
        };
        let cluster = RedisCluster::start_with_args(3, 0, 5000, &args);
        let seeds: Vec<String> = cluster
            .nodes()
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let url = format!("redis+cluster://{}", seeds.join(","));
        let ids = cluster
            .nodes()
            .iter()
            .map(|n| {
                redis::cmd("CLUSTER")
                    .arg("MYID")
                    .query(&mut n.connection())
                    .unwrap()
            })
            .collect();
        let dir = cluster.nodes()[0].dir().join("model");
        std::fs::create_dir_all(&dir).unwrap();
        CWorld {
            cluster,
            url,
            ids,
            dir,
        }
    }

    /// Every node as new: no fault in force, no key, no script.
    pub fn reset(&mut self) {
        for i in 0..self.cluster.nodes().len() {
            let mut c = self.conn(i);
            let _: redis::RedisResult<()> = redis::cmd("CLIENT").arg("UNPAUSE").query(&mut c);
            let _: () = redis::cmd("CONFIG")
                .arg("SET")
                .arg("maxmemory")
                .arg("0")
                .query(&mut c)
                .unwrap();
            let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
            let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut c).unwrap();
        }
    }

    pub fn conn(&self, node: usize) -> redis::Connection {
        self.cluster.nodes()[node].connection()
    }

    /// `rotabloom --redis URL ARGS`, fed `stdin`.
    pub fn rb(&self, args: &[&str], stdin: &str) -> bin::Run {
        let mut all = vec!["--redis", self.url.as_str()];
        all.extend_from_slice(args);
        bin::rotabloom(&all, &[], stdin.as_bytes())
    }

    /// `status NAME --json`, parsed.
    pub fn status(&self, name: &str) -> Status {
        let run = self.rb(&["status", name, "--json"], "");
        let doc: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
        let f = &doc["filters"][0];
        let sharded = f.get("shard_filters").is_some_and(|s| s.is_array());
        let shards: Vec<View> = match sharded {
            true => f["shard_filters"]
                .as_array()
                .map(|a| a.iter().map(view).collect())
                .unwrap_or_default(),
            false if f.get("kind").is_some() => vec![view(f)],
            false => vec![],
        };
        let shard_error = f["shard_filters"]
            .as_array()
            .and_then(|a| a.iter().find_map(|s| s["error"].as_str().map(String::from)));
        Status {
            code: run.code,
            stderr: run.stderr,
            kind: f["kind"].as_str().map(String::from),
            sharded,
            shards,
            error: f["error"].as_str().map(String::from).or(shard_error),
            doc,
        }
    }

    /// Every key of filter `name` on every node, as (node, key).
    pub fn keys(&self, name: &str) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for i in 0..self.cluster.nodes().len() {
            let mut c = self.conn(i);
            for p in [
                format!("rotabloom:{{{name}}}*"),
                format!("rotabloom:{{{name}:*"),
            ] {
                out.extend(scan(&mut c, &p).into_iter().map(|k| (i, k)));
            }
        }
        out
    }

    /// The keys of shard `j` of `name` (an unsharded filter's own keys
    /// when it has no shard keys).
    pub fn shard_keys(&self, name: &str, j: u32) -> Vec<(usize, String)> {
        let prefix = format!("rotabloom:{{{name}:shard:{j}:");
        let all = self.keys(name);
        let shard: Vec<_> = all
            .iter()
            .filter(|(_, k)| k.starts_with(&prefix))
            .cloned()
            .collect();
        match shard.is_empty() && !all.iter().any(|(_, k)| k.contains(":shard:")) {
            true => all,
            false => shard,
        }
    }

    pub fn maxmemory(&self, node: usize, on: bool) {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(if on { "1" } else { "0" })
            .query(&mut self.conn(node))
            .unwrap();
    }

    pub fn pause(&self, node: usize, ms: u32) {
        let _: () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(ms)
            .arg("WRITE")
            .query(&mut self.conn(node))
            .unwrap();
    }

    /// Runs `during` while the client connections of `node` are killed
    /// over and over (not the killer's own).
    pub fn killing<T>(&self, node: usize, during: impl FnOnce() -> T) -> T {
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let killer = s.spawn(|| {
                let mut c = self.conn(node);
                while !done.load(Ordering::Relaxed) {
                    let _: redis::RedisResult<i64> = redis::cmd("CLIENT")
                        .arg("KILL")
                        .arg("TYPE")
                        .arg("normal")
                        .arg("SKIPME")
                        .arg("yes")
                        .query(&mut c);
                    // A gap, so that some commands get through between kills.
                    std::thread::sleep(Duration::from_millis(30));
                }
            });
            let out = during();
            done.store(true, Ordering::Relaxed);
            let _ = killer.join();
            out
        })
    }

    pub fn restart(&mut self, node: usize) {
        self.cluster.restart(node);
    }

    /// Moves hash slot `slot` from node `from` to node `to` the way
    /// `redis-cli --cluster reshard` does, key batch by key batch.
    pub fn migrate(&self, slot: u16, from: usize, to: usize) -> redis::RedisResult<()> {
        let (mut src, mut dst) = (self.conn(from), self.conn(to));
        let setslot = |c: &mut redis::Connection, how: &str, id: &str| -> redis::RedisResult<()> {
            redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg(how)
                .arg(id)
                .query(c)
        };
        setslot(&mut dst, "IMPORTING", &self.ids[from])?;
        setslot(&mut src, "MIGRATING", &self.ids[to])?;
        let port = self.cluster.nodes()[to].port();
        loop {
            let keys: Vec<String> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(slot)
                .arg(3)
                .query(&mut src)?;
            if keys.is_empty() {
                break;
            }
            let _: () = redis::cmd("MIGRATE")
                .arg("127.0.0.1")
                .arg(port)
                .arg("")
                .arg(0)
                .arg(5000)
                .arg("KEYS")
                .arg(&keys)
                .query(&mut src)?;
        }
        for i in 0..self.cluster.nodes().len() {
            setslot(&mut self.conn(i), "NODE", &self.ids[to])?;
        }
        Ok(())
    }

    pub fn slot(&self, key: &str) -> u16 {
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut self.conn(0))
            .unwrap()
    }

    /// `rotabloom --redis URL ARGS`, its three streams piped.
    pub fn spawn(&self, args: &[&str]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_rotabloom"))
            .arg("--redis")
            .arg(&self.url)
            .args(args)
            .env_remove("REDIS_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn rotabloom")
    }
}

/// A live run: `child` fed `first`; once it printed `marker` (or ended,
/// or 20 s passed), `midway` runs; then it is fed `second` and waited for.
/// Returns what it printed, its exit code (-9 when `kill` killed it) and
/// its standard error.
pub fn live(
    mut child: Child,
    first: &str,
    marker: Option<String>,
    second: &str,
    kill: bool,
    midway: impl FnOnce(),
) -> (Vec<String>, i32, String) {
    let mut stdin = child.stdin.take().unwrap();
    let out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let first = first.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(first.as_bytes());
        let _ = stdin.flush();
        stdin
    });
    let mut printed = Vec::new();
    let mut eof = false;
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(line) => {
                let done = marker.is_none() || Some(&line) == marker.as_ref();
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
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                eof = true;
                break;
            }
        }
    }
    // A run that ended on its own before the kill (refused at once, say)
    // keeps its own exit code.
    // Its standard output closed: it is ending by itself (not yet reaped).
    let ended = eof || child.try_wait().ok().flatten().is_some();
    let killed = kill && !ended;
    if killed {
        let _ = child.kill();
    }
    midway();
    let mut stdin = writer.join().unwrap();
    let _ = stdin.write_all(second.as_bytes());
    drop(stdin);
    let status = child.wait().unwrap();
    let _ = reader.join();
    printed.extend(rx.try_iter());
    let code = match killed {
        true => -9,
        false => status.code().unwrap_or(-1),
    };
    (printed, code, errors.join().unwrap())
}
