//! Faults against real servers: replies lost after the server applied a
//! write, connections killed mid-batch, `kill -9` with and without AOF
//! fsync on every write, replicas that do not acknowledge. Each test gives
//! its figure on standard error (`--nocapture`).

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;
#[path = "support/proxy.rs"]
mod proxy;

use harness::RedisServer;
use proxy::Proxy;
use rotabloom::{BloomFilter, Error, WaitReplicas};
use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A filter big enough that none of the test's distinct items is a false
/// positive of another (so "new" is the only right answer for each).
fn roomy(conn: &mut redis::Connection, name: &str) -> BloomFilter {
    BloomFilter::builder(name)
        .capacity(1_000_000)
        .error_rate(1e-6)
        .create_or_open(conn)
        .unwrap()
}

fn urls(tag: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("https://{tag}.example/{i}"))
        .collect()
}

#[test]
fn a_lost_reply_is_answered_again_as_it_was_never_as_seen() {
    let server = RedisServer::start();
    let proxy = Proxy::start(server.port());
    let relayed = redis::Client::open(proxy.url()).unwrap();
    let mut direct = server.connection();
    let f = roomy(&mut direct, "lost");

    // The plain call: its retry answers "seen" for what the lost call did.
    // (First batches load the scripts and make the handle's
    // guarded-transaction check, so the cuts fall on the writes themselves.)
    f.check_and_insert_many(&mut direct, urls("warm", 100))
        .unwrap();
    f.idempotent_batch(urls("warm2", 10))
        .check_and_insert(&mut direct)
        .unwrap();
    let items = urls("plain", 1000);
    let mut conn = relayed.get_connection().unwrap();
    proxy.cut_next_reply();
    let e = f.check_and_insert_many(&mut conn, &items).unwrap_err();
    assert!(e.is_retryable(), "{e}");
    let again = f
        .check_and_insert_many(&mut relayed.get_connection().unwrap(), &items)
        .unwrap();
    let plain_lost = again.iter().filter(|&&new| !new).count();
    assert_eq!(plain_lost, 1000, "the cut reply was applied by the server");

    // The idempotent batch: 20 lost replies, each after the server applied
    // the batch; the retry answers every item new, and the count moves once.
    for round in 0..20 {
        let items = urls(&format!("once{round}"), 1000);
        let before = f.count(&mut direct).unwrap();
        let mut batch = f.idempotent_batch(&items);
        let mut conn = relayed.get_connection().unwrap();
        proxy.cut_next_reply();
        let e = batch.check_and_insert(&mut conn).unwrap_err();
        assert!(e.is_retryable(), "{e}");
        assert_eq!(f.count(&mut direct).unwrap(), before + 1000, "applied");
        let new = batch
            .check_and_insert(&mut relayed.get_connection().unwrap())
            .unwrap();
        let seen = new.iter().filter(|&&n| !n).count();
        assert_eq!(
            seen, 0,
            "round {round}: {seen} of 1000 new items answered seen"
        );
        assert_eq!(f.count(&mut direct).unwrap(), before + 1000, "counted once");
    }
    assert_eq!(proxy.cuts(), 21);
    eprintln!(
        "lost replies: plain retry lost {plain_lost} of 1000 items; idempotent batches lost 0 of 20,000 over 20 cuts"
    );

    // Insert, too: the retry reports the changes of the first run.
    let items = urls("insert", 500);
    let mut batch = f.idempotent_batch(&items);
    let mut conn = relayed.get_connection().unwrap();
    proxy.cut_next_reply();
    assert!(batch.insert(&mut conn).unwrap_err().is_retryable());
    let changed = batch
        .insert(&mut relayed.get_connection().unwrap())
        .unwrap();
    assert!(changed.iter().all(|&c| c));
    // A batch is one write.
    assert!(matches!(
        batch.check_and_insert(&mut direct),
        Err(Error::InvalidParameter { name: "batch", .. })
    ));
}

#[tokio::test]
async fn a_lost_reply_is_answered_again_async() {
    let server = RedisServer::start();
    let proxy = Proxy::start(server.port());
    let relayed = redis::Client::open(proxy.url()).unwrap();
    let f = roomy(&mut server.connection(), "lost-async");
    for round in 0..5 {
        let items = urls(&format!("async{round}"), 1000);
        let mut batch = f.idempotent_batch(&items);
        let mut conn = relayed.get_multiplexed_async_connection().await.unwrap();
        proxy.cut_next_reply();
        let e = batch.check_and_insert_async(&mut conn).await.unwrap_err();
        assert!(e.is_retryable(), "{e}");
        let mut conn = relayed.get_multiplexed_async_connection().await.unwrap();
        let new = batch.check_and_insert_async(&mut conn).await.unwrap();
        assert!(new.iter().all(|&n| n), "round {round}");
    }
    assert_eq!(proxy.cuts(), 5);
}

/// `n` distinct lines, every 7th repeated 50 lines later: the input, and
/// the lines `filter` must print once each.
fn lines_with_repeats(tag: &str, n: usize) -> (Vec<u8>, Vec<String>) {
    let distinct = urls(tag, n);
    let mut input = Vec::new();
    for (i, line) in distinct.iter().enumerate() {
        input.push(line.clone());
        if i >= 50 && i % 7 == 0 {
            input.push(distinct[i - 50].clone());
        }
    }
    let mut text = input.join("\n").into_bytes();
    text.push(b'\n');
    (text, distinct)
}

fn printed(stdout: &str) -> Vec<String> {
    stdout.lines().map(str::to_string).collect()
}

#[test]
fn filter_prints_every_new_line_once_across_20_lost_replies() {
    filter_through_20_lost_replies(&[]);
}

/// The same with a filter of 3 shards on one server: every batch's three
/// parts go side by side in one pipeline, and a lost reply loses all
/// three answers at once.
#[test]
fn a_sharded_filter_prints_every_new_line_once_across_20_lost_replies() {
    filter_through_20_lost_replies(&["--shards", "3"]);
}

fn filter_through_20_lost_replies(settings: &[&str]) {
    let server = RedisServer::start();
    let proxy = Proxy::start(server.port());
    let url = server.url();
    bin::create_roomy_with(&url, "cut", settings);
    let (input, expected) = lines_with_repeats("cut", 20_000);
    proxy.cut_every(4, 20);
    let run = bin::rotabloom(
        &[
            "--redis",
            &proxy.url(),
            "--retries",
            // More than the proxy ever cuts (20): however the workers
            // share the cuts, no batch runs out of attempts.
            "21",
            "filter",
            "cut",
            "--batch",
            "200",
        ],
        &[],
        &input,
    );
    let run = run.ok();
    assert_eq!(proxy.cuts(), 20, "{}", run.stderr);
    let out = printed(&run.stdout);
    assert_eq!(out.len(), expected.len(), "missing or doubled lines");
    let mut sorted = out.clone();
    sorted.sort_unstable();
    sorted.dedup();
    let mut want = expected.clone();
    want.sort_unstable();
    assert!(sorted == want, "lines printed twice or wrong");
    // In input order; a repeated line at its first place, or at its later
    // one when its two batches were in flight together and the later one
    // ran first (a retried batch runs late).
    let text = String::from_utf8_lossy(&input);
    let mut at = text.lines();
    for line in &out {
        assert!(at.any(|l| l == line), "{line} printed out of order");
    }
    assert!(run.stderr.contains("retrying"), "{}", run.stderr);
    assert!(!run.stderr.contains("password"));
    eprintln!(
        "filter {settings:?} through 20 lost replies: {} of {} new lines printed, 0 missing, 0 twice",
        out.len(),
        expected.len()
    );
}

/// Runs `rotabloom filter NAME` on `url` with its input fed in `chunks`;
/// `between(i)` runs after chunk `i` is written and its output read.
/// Returns the lines printed and the standard error.
fn filter_in_steps(
    url: &str,
    extra: &[&str],
    name: &str,
    chunks: &[Vec<String>],
    mut between: impl FnMut(usize),
) -> (Vec<String>, String, i32) {
    let mut child = bin::spawn_filter(url, extra, name);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut out = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let mut text = chunk.join("\n");
        text.push('\n');
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
        // Every line of a chunk is new: its output is the chunk.
        for _ in 0..chunk.len() {
            let mut line = String::new();
            if stdout.read_line(&mut line).unwrap() == 0 {
                break;
            }
            out.push(line.trim_end().to_string());
        }
        between(i);
    }
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    out.extend(rest.lines().map(str::to_string));
    let o = child.wait_with_output().unwrap();
    (
        out,
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

/// Kills every connection of the filter (one per batch in flight), all
/// but `admin`'s; whether there was one.
fn kill_clients(admin: &mut redis::Connection) -> bool {
    let n: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query(admin)
        .unwrap();
    n > 0
}

#[test]
fn filter_survives_20_client_kills() {
    let server = RedisServer::start();
    let url = server.url();
    let mut admin = server.connection();
    roomy(&mut admin, "killed");
    let chunks: Vec<Vec<String>> = (0..21).map(|c| urls(&format!("k{c}"), 1000)).collect();
    let mut kills = 0;
    let (out, stderr, code) = filter_in_steps(&url, &["--retries", "8"], "killed", &chunks, |i| {
        if i < 20 {
            // The filter's connection, idle between chunks: its next
            // batch finds it dead.
            kills += i64::from(kill_clients(&mut admin));
        }
    });
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(kills, 20, "{stderr}");
    let expected: Vec<String> = chunks.concat();
    assert_eq!(out.len(), expected.len(), "{stderr}");
    assert!(out == expected);
    eprintln!("filter through 20 CLIENT KILLs: 21,000 of 21,000 lines printed once");
}

#[test]
fn retries_run_out_and_the_error_says_how_many_lines_were_done() {
    let mut server = RedisServer::start();
    let url = server.url();
    roomy(&mut server.connection(), "gone");
    let chunks = vec![urls("g0", 500), urls("g1", 500)];
    let (out, stderr, code) = filter_in_steps(&url, &["--retries", "2"], "gone", &chunks, |i| {
        if i == 0 {
            server.kill9();
        }
    });
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(out, chunks[0]);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("rotabloom: "), "{stderr}");
    assert!(
        last.contains("gave up after 2 reconnection attempts")
            && last.contains("500 lines were done")
            && last.contains("run again from line 501"),
        "{stderr}"
    );
    assert!(
        last.contains(&format!("127.0.0.1:{}", server.port())),
        "{stderr}"
    );
}

/// Writes `batches` batches of 1,000 new items through idempotent batches,
/// reconnecting after retryable errors; `kill` runs once `at` batches are
/// done. Returns each batch's answers and how many errors were retried.
fn write_through_a_crash(
    server: &mut RedisServer,
    name: &str,
    batches: usize,
    at: usize,
) -> (Vec<Vec<bool>>, usize) {
    let client = redis::Client::open(server.url()).unwrap();
    let f = roomy(&mut server.connection(), name);
    let done = Arc::new(AtomicUsize::new(0));
    let d = Arc::clone(&done);
    let f2 = f.clone();
    let name = name.to_string();
    let writer = std::thread::spawn(move || {
        let mut answers = Vec::new();
        let mut retried = 0;
        let mut conn = client.get_connection().ok();
        for b in 0..batches {
            let items = urls(&format!("{name}{b}"), 1000);
            let mut batch = f2.idempotent_batch(&items);
            let deadline = Instant::now() + Duration::from_secs(60);
            let new = loop {
                let r = match conn.as_mut() {
                    Some(c) => batch.check_and_insert(c),
                    None => Err(Error::Internal("no connection".into())),
                };
                match r {
                    Ok(new) => break new,
                    Err(e) if Instant::now() < deadline => {
                        assert!(e.is_retryable() || matches!(e, Error::Internal(_)), "{e}");
                        retried += 1;
                        // Reconnect while the server comes back.
                        std::thread::sleep(Duration::from_millis(50));
                        conn = client.get_connection().ok();
                    }
                    Err(e) => panic!("no recovery within 60 s: {e}"),
                }
            };
            answers.push(new);
            d.fetch_add(1, Ordering::SeqCst);
        }
        (answers, retried)
    });
    while done.load(Ordering::SeqCst) < at {
        std::thread::yield_now();
    }
    server.kill9();
    server.respawn();
    writer.join().unwrap()
}

/// Runs [`write_through_a_crash`] on a server with `appendfsync` set to
/// `fsync`; returns the new items answered "seen", the acknowledged items
/// missing after the restart, and the retries.
fn crash_with_aof(fsync: &str) -> (usize, usize, usize) {
    let mut server = RedisServer::start_with(&["--appendonly", "yes", "--appendfsync", fsync]);
    let (answers, retried) = write_through_a_crash(&mut server, fsync, 40, 10);
    assert!(retried > 0, "the kill did not interrupt the writer");
    let f = BloomFilter::open(&mut server.connection(), fsync).unwrap();
    let mut conn = server.connection();
    let (mut seen, mut lost) = (0, 0);
    for (b, new) in answers.iter().enumerate() {
        seen += new.iter().filter(|&&n| !n).count();
        let items = urls(&format!("{fsync}{b}"), 1000);
        let there = f.contains_many(&mut conn, &items).unwrap();
        lost += there.iter().filter(|&&c| !c).count();
    }
    (seen, lost, retried)
}

#[test]
fn kill_9_with_appendfsync_always_loses_nothing_acknowledged() {
    let (seen, lost, retried) = crash_with_aof("always");
    assert_eq!(seen, 0, "new items answered seen");
    assert_eq!(lost, 0, "acknowledged items lost");
    eprintln!(
        "kill -9, appendfsync always: 0 of 40,000 acknowledged items lost, {retried} retries"
    );
}

#[test]
fn kill_9_with_appendfsync_everysec_figure() {
    let (seen, lost, retried) = crash_with_aof("everysec");
    // Whatever the last second lost, the retry never answers "seen" for
    // its own items: the record goes with the bits.
    assert_eq!(seen, 0, "new items answered seen");
    eprintln!(
        "kill -9, appendfsync everysec: {lost} of 40,000 acknowledged items lost, {retried} retries"
    );
}

#[test]
fn writes_wait_for_replicas_and_fail_typed_when_too_few_confirm() {
    let primary = RedisServer::start();
    let of = primary.port().to_string();
    let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &of]);
    let mut conn = primary.connection();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut conn)
            .unwrap();
        if info.contains("connected_slaves:1") && info.contains("state=online") {
            break;
        }
        assert!(Instant::now() < deadline, "replica not in sync: {info}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Generous: an acknowledgement on a loaded CI machine can take more
    // than a few hundred milliseconds.
    let wait = WaitReplicas::new(1, Duration::from_millis(2000)).unwrap();
    let f = BloomFilter::builder("w")
        .capacity(10_000)
        .error_rate(0.01)
        .wait_replicas(wait)
        .create_or_open(&mut conn)
        .unwrap();
    assert!(f.check_and_insert(&mut conn, "a").unwrap());
    // Acknowledged means on the replica already.
    assert!(f.contains(&mut replica.connection(), "a").unwrap());

    replica.signal("-STOP");
    let e = f.check_and_insert(&mut conn, "b").unwrap_err();
    assert!(
        matches!(
            e,
            Error::ReplicasTimeout {
                acked: 0,
                wanted: 1,
                timeout_ms: 2000
            }
        ),
        "{e}"
    );
    assert!(e.is_retryable());
    // Reads do not wait.
    assert!(f.contains(&mut conn, "a").unwrap());
    let mut batch = f.idempotent_batch(["c", "d"]);
    assert!(matches!(
        batch.check_and_insert(&mut conn),
        Err(Error::ReplicasTimeout { .. })
    ));
    // The command line: one line, exit 3.
    let run = bin::rb(&[
        "--redis",
        &primary.url(),
        "--wait-replicas",
        "1",
        "--wait-timeout-ms",
        "100",
        "--retries",
        "0",
        "add",
        "w",
        "e",
    ]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.contains("only 0 of 1 replicas acknowledged"),
        "{run:?}"
    );
    replica.signal("-CONT");
    // The retry of the batch answers as its first run: both new.
    assert_eq!(batch.check_and_insert(&mut conn).unwrap(), [true, true]);
    // A handle can stop waiting.
    let g = f.clone().with_wait_replicas(None);
    replica.signal("-STOP");
    assert!(g.check_and_insert(&mut conn, "f").unwrap());
    replica.signal("-CONT");
}

/// At least once, a lost reply is never silent: the retry cannot know
/// what the lost call applied, so it writes the items again, answers every
/// one new (none lost, some maybe twice) and counts them unknown.
#[test]
fn at_least_once_a_lost_reply_is_counted_and_nothing_is_lost() {
    use rotabloom::Delivery;
    let server = RedisServer::start();
    let proxy = Proxy::start(server.port());
    let relayed = redis::Client::open(proxy.url()).unwrap();
    let mut direct = server.connection();
    let f = roomy(&mut direct, "alo");
    // Warm-up: the handle's transaction check and the scripts.
    f.check_and_insert_many(&mut direct, urls("warm", 100))
        .unwrap();
    // Half of the items are in the filter already: an exact answer would
    // call them seen.
    let items = urls("alo", 1000);
    f.insert_many(&mut direct, &items[..500]).unwrap();
    let mut batch = f
        .idempotent_batch(&items)
        .with_delivery(Delivery::AtLeastOnce);
    let records_before = harness::scan(&mut direct, "rotabloom:{alo}:done:*").len();
    let mut conn = relayed.get_connection().unwrap();
    proxy.cut_next_reply();
    let e = batch.check_and_insert(&mut conn).unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert_eq!(proxy.cuts(), 1);
    let new = batch
        .check_and_insert(&mut relayed.get_connection().unwrap())
        .unwrap();
    assert!(new.iter().all(|&n| n), "an unknown answer taken as seen");
    assert_eq!(batch.unknown(), 1000);
    assert!(f
        .contains_many(&mut direct, &items)
        .unwrap()
        .iter()
        .all(|&b| b));
    // It kept no record on the server.
    assert_eq!(
        harness::scan(&mut direct, "rotabloom:{alo}:done:*").len(),
        records_before
    );
    // Without a loss, the answers are the filter's and nothing is unknown.
    let more = urls("alo-more", 200);
    let mut batch = f
        .idempotent_batch(&more)
        .with_delivery(Delivery::AtLeastOnce);
    let new = batch.check_and_insert(&mut direct).unwrap();
    assert_eq!(new.iter().filter(|&&n| n).count(), 200);
    assert_eq!(batch.unknown(), 0);
    let again = f
        .idempotent_batch(&more)
        .with_delivery(Delivery::AtLeastOnce)
        .check_and_insert(&mut direct)
        .unwrap();
    assert!(again.iter().all(|&n| !n));
}

/// At least once, a batch refused by a full filter after a lost reply
/// must not take the items the lost run applied for seen: the refusal's
/// answers (those before the refused item) are all new, and counted
/// unknown, as a success's are.
#[test]
fn at_least_once_a_refusal_after_a_lost_reply_drops_no_new_item() {
    use rotabloom::Delivery;
    let server = RedisServer::start();
    let proxy = Proxy::start(server.port());
    let relayed = redis::Client::open(proxy.url()).unwrap();
    let mut direct = server.connection();
    let f = BloomFilter::builder("alo-full")
        .capacity(10)
        .error_rate(0.01)
        .create_or_open(&mut direct)
        .unwrap();
    f.check_and_insert(&mut direct, "warm").unwrap();
    // 9 of room: the lost run takes 9 and is refused at the 10th.
    let items = urls("alo-full", 12);
    let mut batch = f
        .idempotent_batch(&items)
        .with_delivery(Delivery::AtLeastOnce);
    let mut conn = relayed.get_connection().unwrap();
    proxy.cut_next_reply();
    let e = batch.check_and_insert(&mut conn).unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert_eq!(proxy.cuts(), 1);
    let e = batch
        .check_and_insert(&mut relayed.get_connection().unwrap())
        .unwrap_err();
    let Error::Full { answered, .. } = e else {
        panic!("not a refusal: {e}");
    };
    assert_eq!(answered.len(), 9, "{answered:?}");
    assert!(
        answered.iter().all(|&n| n),
        "items the lost run applied answered seen: {answered:?}"
    );
    assert_eq!(batch.unknown(), 9);
    assert_eq!(f.count(&mut direct).unwrap(), 10);
}

/// The number in "the answers of N lines were lost".
fn lost_lines(stderr: &str) -> u64 {
    bin::lost_answers(stderr).unwrap_or_else(|| panic!("no count of lost answers: {stderr}"))
}

#[test]
fn filter_at_least_once_prints_every_new_line_across_lost_replies_and_counts_the_unknown() {
    at_least_once_through_20_lost_replies(&[]);
}

/// The same with a filter of 3 shards on one server (its parts side by
/// side in one pipeline): a lost reply makes every part of its batch
/// unknown.
#[test]
fn a_sharded_filter_at_least_once_prints_every_new_line_across_lost_replies() {
    at_least_once_through_20_lost_replies(&["--shards", "3"]);
}

fn at_least_once_through_20_lost_replies(settings: &[&str]) {
    let server = RedisServer::start();
    let proxy = Proxy::start(server.port());
    bin::create_roomy_with(&server.url(), "alo-cut", settings);
    let (input, expected) = lines_with_repeats("alo", 20_000);
    // Opening a sharded filter takes more round trips in a row (the root,
    // then its shards) than a cut every 4th reply lets through.
    proxy.cut_every(if settings.is_empty() { 4 } else { 9 }, 20);
    let run = bin::rotabloom(
        &[
            "--redis",
            &proxy.url(),
            "--retries",
            // More than the proxy ever cuts (20): however the workers
            // share the cuts, no batch runs out of attempts.
            "21",
            "filter",
            "alo-cut",
            "--batch",
            "200",
        ],
        &[("ROTABLOOM_DELIVERY", "at-least-once")],
        &input,
    );
    assert_eq!(run.code, 6, "{}", run.stderr);
    assert_eq!(proxy.cuts(), 20, "{}", run.stderr);
    let out = printed(&run.stdout);
    let unknown = lost_lines(&run.stderr);
    assert!(unknown >= 200, "{}", run.stderr);
    // Every new line at least once; the extra ones are lines already seen
    // whose answers were lost, at most the lines counted.
    let mut distinct = out.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let mut want = expected.clone();
    want.sort_unstable();
    assert!(
        distinct == want,
        "a new line missing, or a line never given"
    );
    let extra = (out.len() - expected.len()) as u64;
    assert!(
        extra <= unknown,
        "{extra} lines printed twice, {unknown} counted"
    );
    let text = String::from_utf8_lossy(&input);
    let mut at = text.lines();
    for line in &out {
        assert!(at.any(|l| l == line), "{line} printed out of order");
    }
    eprintln!(
        "filter {settings:?} at least once through 20 lost replies: {} of {} new lines printed, 0 missing, {extra} printed again, {unknown} lines counted unknown",
        expected.len(),
        expected.len()
    );
}

#[test]
fn filter_at_least_once_through_client_kills_reports_the_lines_it_could_not_know() {
    let server = RedisServer::start();
    let url = server.url();
    let mut admin = server.connection();
    roomy(&mut admin, "alo-killed");
    let chunks: Vec<Vec<String>> = (0..6).map(|c| urls(&format!("ak{c}"), 1000)).collect();
    let mut kills = 0;
    let extra = ["--retries", "8", "--delivery", "at-least-once"];
    let (out, stderr, code) = filter_in_steps(&url, &extra, "alo-killed", &chunks, |i| {
        if i < 5 {
            kills += i64::from(kill_clients(&mut admin));
        }
    });
    assert_eq!(kills, 5, "{stderr}");
    assert_eq!(code, 6, "{stderr}");
    // Each killed connection failed the batch sent on it: its lines are
    // counted, and printed (they are all new) once.
    assert!(lost_lines(&stderr) >= 250, "{stderr}");
    assert!(out == chunks.concat(), "{stderr}");
    let f = BloomFilter::open(&mut admin, "alo-killed").unwrap();
    assert_eq!(f.count(&mut admin).unwrap(), 6_000);
}

#[test]
fn add_at_least_once_says_the_unknown_items_in_json_and_refuses_state_files() {
    let server = RedisServer::start();
    let proxy = Proxy::start(server.port());
    let mut direct = server.connection();
    let f = roomy(&mut direct, "alo-add");
    f.check_and_insert_many(&mut direct, urls("warm", 100))
        .unwrap();
    let items = urls("alo-add", 20_000);
    let mut input = items.join("\n").into_bytes();
    input.push(b'\n');
    // One connection, so that the cuts fall on its batches (or on its
    // opening, which is retried too).
    proxy.cut_every(6, 2);
    let run = bin::rotabloom(
        &[
            "--redis",
            &proxy.url(),
            "--in-flight",
            "1",
            "--retries",
            "8",
            "--delivery",
            "at-least-once",
            "add",
            "alo-add",
            "--json",
        ],
        &[],
        &input,
    );
    assert_eq!(run.code, 6, "{run:?}");
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["items"], 20_000, "{run:?}");
    let unknown = v["unknown"].as_u64().unwrap();
    assert!(unknown >= 1, "{run:?}");
    assert_eq!(lost_lines(&run.stderr), unknown);
    assert!(f
        .contains_many(&mut direct, &items)
        .unwrap()
        .iter()
        .all(|&b| b));
    // Resuming needs the server's records.
    let dir = std::env::temp_dir().join(harness::unique_prefix("alo-state"));
    let state = dir.to_string_lossy().into_owned();
    let run = bin::rotabloom(
        &[
            "--redis",
            &server.url(),
            "--delivery",
            "at-least-once",
            "add",
            "alo-add",
            "--state",
            &state,
        ],
        &[],
        b"x\n",
    );
    assert!(run.failed(2).contains("--delivery exactly-once"), "{run:?}");
    assert!(!dir.exists());
}
