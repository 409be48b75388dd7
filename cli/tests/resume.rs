//! `--state FILE` and `--resume FILE` against real servers: a `filter`
//! that gives up (its server unreachable, then killed with SIGKILL) leaves
//! batches applied and not printed; the resumed run prints their answers
//! from the records the server kept (with `appendonly yes` and
//! `appendfsync always` across the kill), so every new line is printed
//! exactly once across the two runs. When the records are gone, the
//! resumed run says which lines' answers are lost instead of "seen".

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;
#[path = "support/proxy.rs"]
mod proxy;

use harness::RedisServer;
use proxy::Proxy;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

fn urls(tag: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("https://{tag}.example/{i}"))
        .collect()
}

/// The standard output and error of a running child, read as they come.
struct Streams {
    out: Arc<Mutex<Vec<String>>>,
    err: Arc<Mutex<String>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Streams {
    fn of(child: &mut std::process::Child) -> Streams {
        let (out, err) = (Arc::default(), Arc::default());
        let (o, e): (Arc<Mutex<Vec<String>>>, Arc<Mutex<String>>) =
            (Arc::clone(&out), Arc::clone(&err));
        let stdout = child.stdout.take().unwrap();
        let o_reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                o.lock().unwrap().push(line.unwrap());
            }
        });
        let mut stderr = child.stderr.take().unwrap();
        let e_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                e.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Streams {
            out,
            err,
            readers: vec![o_reader, e_reader],
        }
    }

    /// Everything, once the child closed its streams.
    fn close(self) -> (Vec<String>, String) {
        for r in self.readers {
            r.join().unwrap();
        }
        let out = self.out.lock().unwrap().clone();
        let err = self.err.lock().unwrap().clone();
        (out, err)
    }

    fn printed(&self) -> usize {
        self.out.lock().unwrap().len()
    }

    fn stderr(&self) -> String {
        self.err.lock().unwrap().clone()
    }
}

/// What the first run left.
struct GaveUp {
    printed: Vec<String>,
    stderr: String,
    input: Vec<String>,
}

/// Runs `filter NAME --state STATE` through `proxy` on `chunks[0]` and
/// `chunks[1]`: once the first is printed, the next reply is lost after
/// the server applied its batch, the server is out of reach, and once the
/// run retries it is killed with SIGKILL; the run gives up (exit 3).
fn give_up(
    server: &mut RedisServer,
    proxy: &Proxy,
    extra: &[&str],
    state: &Path,
    chunks: &[Vec<String>],
) -> GaveUp {
    let purl = proxy.url();
    let mut args = vec![
        "--redis",
        purl.as_str(),
        "--retries",
        "2",
        "--in-flight",
        "4",
        "filter",
        "crawl",
        "--batch",
        "100",
        "--state",
        state.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut child = bin::spawn(&args);
    let streams = Streams::of(&mut child);
    let mut stdin = child.stdin.take().unwrap();
    let feed = |stdin: &mut std::process::ChildStdin, chunk: &[String]| {
        stdin
            .write_all((chunk.join("\n") + "\n").as_bytes())
            .unwrap();
        stdin.flush().unwrap();
    };
    feed(&mut stdin, &chunks[0]);
    bin::wait_until(30, "the first chunk printed", || {
        streams.printed() == chunks[0].len()
    });
    proxy.cut_next_reply();
    proxy.refuse(true);
    feed(&mut stdin, &chunks[1]);
    bin::wait_until(30, "a retry", || streams.stderr().contains("retrying"));
    server.kill9();
    // The input stays open: the run must end on its own.
    let status = child.wait().unwrap();
    drop(stdin);
    let (printed, stderr) = streams.close();
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert_eq!(proxy.cuts(), 1, "{stderr}");
    GaveUp {
        printed,
        stderr,
        input: chunks.concat(),
    }
}

/// The server again (its AOF reloaded), reached directly.
fn back(server: &mut RedisServer, proxy: &Proxy) {
    server.respawn();
    proxy.refuse(false);
}

fn filter_holds(server: &RedisServer, lines: &[String]) -> Vec<bool> {
    let mut conn = server.connection();
    let f = rotabloom::BloomFilter::open(&mut conn, "crawl").unwrap();
    f.contains_many(&mut conn, lines).unwrap()
}

fn persistent() -> RedisServer {
    RedisServer::start_with(&["--appendonly", "yes", "--appendfsync", "always"])
}

#[test]
fn a_run_that_gave_up_is_resumed_with_the_answers_of_its_batches_in_flight() {
    let mut server = persistent();
    let proxy = Proxy::start(server.port());
    bin::create_roomy(&server.url(), "crawl");
    let state = server.dir().join("crawl.state");
    let chunks: Vec<Vec<String>> = (0..3).map(|c| urls(&format!("c{c}"), 2000)).collect();
    let first = give_up(&mut server, &proxy, &[], &state, &chunks);
    let last = first.stderr.lines().last().unwrap_or_default().to_string();
    let resume_cmd = format!("rotabloom filter crawl --resume {}", state.display());
    assert!(
        last.starts_with("rotabloom: ")
            && last.contains("gave up after 2 reconnection attempts")
            && last.contains("are not confirmed")
            && last.contains(&resume_cmd),
        "{last}"
    );
    assert!(state.exists());
    back(&mut server, &proxy);

    // What a plain rerun would answer "seen": lines the first run never
    // printed, yet applied (at least the batch whose reply was lost).
    let printed: BTreeSet<&String> = first.printed.iter().collect();
    assert_eq!(printed.len(), first.printed.len(), "printed twice");
    let unprinted: Vec<String> = chunks[..2]
        .concat()
        .into_iter()
        .filter(|l| !printed.contains(l))
        .collect();
    let applied = filter_holds(&server, &unprinted)
        .iter()
        .filter(|&&t| t)
        .count();
    assert!(
        applied >= 100,
        "{applied} applied and unprinted lines: {}",
        first.stderr
    );

    // Resuming with other input is refused, and changes nothing.
    let mut other = first.input.clone();
    for l in other.iter_mut().skip(2000) {
        l.push('x');
    }
    let url = server.url();
    let st = state.to_str().unwrap();
    let run = bin::rotabloom(
        &["--redis", &url, "filter", "crawl", "--resume", st],
        &[],
        (other.join("\n") + "\n").as_bytes(),
    );
    assert!(
        run.failed(2).contains("not those of the interrupted run"),
        "{run:?}"
    );

    let run = bin::rotabloom(
        &["--redis", &url, "filter", "crawl", "--resume", st],
        &[],
        (first.input.join("\n") + "\n").as_bytes(),
    )
    .ok();
    assert!(!state.exists(), "the state file stays after a complete run");
    let second: Vec<String> = run.stdout.lines().map(String::from).collect();
    let mut all: Vec<&String> = first.printed.iter().chain(&second).collect();
    all.sort_unstable();
    let n = all.len();
    all.dedup();
    assert_eq!(all.len(), n, "a line printed in both runs");
    let got: BTreeSet<&String> = all.into_iter().collect();
    let lost: Vec<&String> = first.input.iter().filter(|l| !got.contains(l)).collect();
    assert!(
        lost.is_empty(),
        "{} new lines lost, from {:?}",
        lost.len(),
        lost.first()
    );
    assert_eq!(got.len(), first.input.len());
    eprintln!(
        "gave up after {} lines printed ({applied} applied and not printed); the resumed run printed {}: 6000 of 6000 new lines printed once",
        first.printed.len(),
        second.len()
    );
}

#[test]
fn a_resumed_run_says_which_answers_were_lost_when_the_records_expired() {
    let mut server = persistent();
    let proxy = Proxy::start(server.port());
    bin::create_roomy(&server.url(), "crawl");
    let state = server.dir().join("crawl.state");
    let chunks: Vec<Vec<String>> = (0..3).map(|c| urls(&format!("e{c}"), 1000)).collect();
    let first = give_up(
        &mut server,
        &proxy,
        &["--retry-window", "2s"],
        &state,
        &chunks,
    );
    back(&mut server, &proxy);
    let mut conn = server.connection();
    bin::wait_until(30, "the records expired", || {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("rotabloom:{crawl}:done:*")
            .query(&mut conn)
            .unwrap();
        keys.is_empty()
    });
    let url = server.url();
    let run = bin::rotabloom(
        &[
            "--redis",
            &url,
            "filter",
            "crawl",
            "--resume",
            state.to_str().unwrap(),
        ],
        &[],
        (first.input.join("\n") + "\n").as_bytes(),
    );
    assert_eq!(run.code, 3, "{run:?}");
    let last = run.stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("no longer held the answers of lines"),
        "{run:?}"
    );
    // Never "seen" in silence: every line is printed once or named.
    let unknown: u64 = last
        .split("but ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count: {last}"));
    assert!(unknown >= 100, "{last}");
    let second: Vec<String> = run.stdout.lines().map(String::from).collect();
    let printed: BTreeSet<&String> = first.printed.iter().chain(&second).collect();
    assert_eq!(
        printed.len(),
        first.printed.len() + second.len(),
        "printed twice"
    );
    let missing = first.input.iter().filter(|l| !printed.contains(l)).count();
    assert_eq!(missing as u64, unknown, "{last}");
    assert!(!state.exists());
}

#[test]
fn a_run_killed_with_sigkill_leaves_a_state_file_that_resumes_it() {
    let server = RedisServer::start();
    let url = server.url();
    bin::create_roomy(&url, "crawl");
    let state = server.dir().join("killed.state");
    let st = state.to_str().unwrap();
    let input = urls("k", 200_000);
    let text = input.join("\n") + "\n";
    let mut child = bin::spawn(&[
        "--redis",
        &url,
        "--in-flight",
        "4",
        "filter",
        "crawl",
        "--batch",
        "100",
        "--state",
        st,
    ]);
    let streams = Streams::of(&mut child);
    let mut stdin = child.stdin.take().unwrap();
    let writer = {
        let text = text.clone();
        std::thread::spawn(move || {
            // The pipe breaks when the process is killed.
            let _ = stdin.write_all(text.as_bytes());
        })
    };
    bin::wait_until(60, "some lines printed", || streams.printed() >= 20_000);
    child.kill().unwrap(); // SIGKILL, mid-stream
    child.wait().unwrap();
    writer.join().unwrap();
    let (first, _) = streams.close();
    assert!(first.len() < input.len(), "the run ended before the kill");
    // The file is whole, and a new run does not take it over.
    let again = bin::rotabloom(
        &["--redis", &url, "filter", "crawl", "--state", st],
        &[],
        b"x\n",
    );
    assert!(again.failed(2).contains("--resume"), "{again:?}");
    let run = bin::rotabloom(
        &["--redis", &url, "filter", "crawl", "--resume", st],
        &[],
        text.as_bytes(),
    )
    .ok();
    assert!(!state.exists());
    let second: Vec<String> = run.stdout.lines().map(String::from).collect();
    let got: BTreeSet<&String> = first.iter().chain(&second).collect();
    let lost = input.iter().filter(|l| !got.contains(l)).count();
    assert_eq!(lost, 0, "new lines lost across the kill");
    // Printed by the first run just before it could strike its batch out.
    let twice = first.len() + second.len() - got.len();
    assert!(twice <= 100, "{twice} lines printed twice");
    eprintln!(
        "SIGKILL after {} lines printed: the resumed run printed {}, 0 lost, {twice} twice",
        first.len(),
        second.len()
    );
}

/// A sharded filter with little room, its `filter --state` killed after
/// its first line while batches refused in part and batches answered were
/// in flight: the resumed run, refused again for the first, still prints
/// the answers the server kept for the others, so every item the filter
/// stored was printed (its count equals the lines printed across the two
/// runs). A refusal used to stop the resumed run before those batches.
/// The kill's moment varies; each trial checks the whole property.
#[test]
fn a_resumed_run_refused_again_still_prints_the_answers_kept_for_its_other_batches() {
    // On a cluster, whose masters answer the shards' parts apart.
    let cluster = harness::RedisCluster::start();
    let url = format!("redis+cluster://127.0.0.1:{}", cluster.nodes()[0].port());
    let state = cluster.nodes()[0].dir().join("full.state");
    let st = state.to_str().unwrap();
    for trial in 0..40 {
        let name = format!("small{trial}");
        bin::create(
            &url,
            &name,
            &["--kind", "bloom", "--capacity", "10", "--shards", "2"],
        );
        let input = urls(&format!("t{trial}"), 200);
        let text = input.join("\n") + "\n";
        let _ = std::fs::remove_file(&state);
        let mut child = bin::spawn(&[
            "--redis", &url, "filter", &name, "--batch", "20", "--state", st,
        ]);
        let mut stdin = child.stdin.take().unwrap();
        let writer = {
            let text = text.clone();
            std::thread::spawn(move || {
                let _ = stdin.write_all(text.as_bytes());
                stdin
            })
        };
        // Killed as soon as its first line is out: batches are then in
        // flight, answered or refused, and not yet printed.
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let _ = out.read_line(&mut line);
        let _ = child.kill();
        child.wait().unwrap();
        drop(writer.join());
        let mut rest = String::new();
        let _ = out.read_to_string(&mut rest);
        let first: Vec<String> = line.lines().chain(rest.lines()).map(String::from).collect();
        let mut printed: BTreeSet<String> = first.into_iter().collect();
        if state.exists() {
            let run = bin::rotabloom(
                &[
                    "--redis", &url, "filter", &name, "--batch", "20", "--resume", st,
                ],
                &[],
                text.as_bytes(),
            );
            assert!(
                run.code == 0 || run.stderr.contains("is full"),
                "trial {trial}: {run:?}"
            );
            // What it says was not read follows what the killed run read
            // (its first batch of 20 lines at least: it printed a line).
            if let Some(at) = run.stderr.find("input after line ") {
                let n: String = run.stderr[at + 17..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                let n: u64 = n.parse().unwrap();
                assert!(
                    n >= 20,
                    "trial {trial}: not read after line {n}: {}",
                    run.stderr
                );
            }
            printed.extend(run.stdout.lines().map(String::from));
        }
        let status = bin::rotabloom(&["--redis", &url, "status", &name, "--json"], &[], b"");
        let doc: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
        let count = doc["filters"][0]["items"].as_u64().unwrap();
        assert_eq!(
            count,
            printed.len() as u64,
            "trial {trial}: items stored, lines printed"
        );
    }
}
