//! What `filter`, `add` and `load` answer for each line, against real
//! servers: only the filter answers (never a memory of lines sent before,
//! which a clear, a drop or a rotation makes wrong), a line repeated in
//! batches in flight together is printed once, and a full filter refuses
//! item by item: exactly what was inserted is printed, then one error line.

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;

use harness::RedisServer;
use std::io::Write;

/// Whether filter `name` (any kind) may hold `item`.
fn holds(server: &RedisServer, name: &str, item: &str) -> bool {
    let mut conn = server.connection();
    rotabloom::AnyFilter::open(&mut conn, name)
        .and_then(|f| f.contains(&mut conn, item))
        .unwrap_or(false)
}

/// What happens to the filter between the two `kk` lines.
#[derive(Clone, Copy, Debug)]
enum Between {
    Clear,
    DropAndCreate,
    /// Two rotations of a circular filter of two generations: the
    /// window no longer holds the first line.
    RotateOut,
}

fn create(url: &str, name: &str, between: Between) {
    match between {
        Between::RotateOut => bin::create(
            url,
            name,
            &[
                "--kind",
                "circular",
                "--generations",
                "2",
                "--capacity",
                "1000",
            ]
            .into_iter()
            .chain(["--every", "daily@00:00"])
            .collect::<Vec<_>>(),
        ),
        _ => bin::create(url, name, &["--kind", "bloom", "--capacity", "1000"]),
    }
}

/// Feeds `kk`, waits until the filter holds it, changes the filter as
/// `between` says, feeds `kk` again and ends the input: the run of
/// `rotabloom COMMAND NAME`.
fn kk_twice(server: &RedisServer, command: &str, name: &str, between: Between) -> bin::Run {
    let url = server.url();
    create(&url, name, between);
    let mut child = bin::spawn(&["--redis", &url, command, name]);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"kk\n").unwrap();
    stdin.flush().unwrap();
    bin::wait_until(20, "first kk in the filter", || holds(server, name, "kk"));
    let admin = |args: &[&str]| {
        let mut all = vec!["--redis", url.as_str()];
        all.extend_from_slice(args);
        bin::rb(&all).ok();
    };
    match between {
        Between::Clear => admin(&["clear", name, "--yes"]),
        Between::DropAndCreate => {
            admin(&["drop", name, "--yes"]);
            create(&url, name, between);
        }
        Between::RotateOut => {
            admin(&["rotate", name]);
            admin(&["rotate", name]);
        }
    }
    assert!(!holds(server, name, "kk"), "{between:?} left kk");
    stdin.write_all(b"kk\n").unwrap();
    drop(stdin);
    bin::finish(child)
}

#[test]
fn filter_answers_a_line_again_from_the_filter_after_a_clear_a_drop_or_a_rotation() {
    let server = RedisServer::start();
    for (i, between) in [Between::Clear, Between::DropAndCreate, Between::RotateOut]
        .into_iter()
        .enumerate()
    {
        let name = format!("f{i}");
        let run = kk_twice(&server, "filter", &name, between);
        if let Between::DropAndCreate = between {
            // A run across a re-create stops loudly (another instance)
            // and writes nothing into the new one.
            assert_eq!(run.code, 2, "{run:?}");
            assert!(run.stderr.contains("dropped and created again"), "{run:?}");
            assert_eq!(run.stdout, "kk\n", "{run:?}");
            assert!(!holds(&server, &name, "kk"));
            continue;
        }
        // The second kk is new to the filter: printed (or, should the
        // filter refuse it, an error), never dropped as "seen".
        assert_eq!(run.code, 0, "{between:?}: {run:?}");
        assert_eq!(run.stdout, "kk\nkk\n", "{between:?}: {run:?}");
        assert!(holds(&server, &name, "kk"), "{between:?}");
    }
}

#[test]
fn add_inserts_a_line_again_after_a_clear_a_drop_or_a_rotation() {
    let server = RedisServer::start();
    for (i, between) in [Between::Clear, Between::DropAndCreate, Between::RotateOut]
        .into_iter()
        .enumerate()
    {
        let name = format!("a{i}");
        if let Between::DropAndCreate = between {
            // A run across a re-create stops loudly (another instance)
            // and writes nothing into the new one.
            let run = kk_twice(&server, "add", &name, between);
            assert_eq!(run.code, 2, "{run:?}");
            assert!(run.stderr.contains("dropped and created again"), "{run:?}");
            assert!(!holds(&server, &name, "kk"));
            continue;
        }
        let run = kk_twice(&server, "add", &name, between).ok();
        // Both were new: the second after the filter forgot the first (a
        // circular filter counts in its current period).
        let said = match between {
            Between::RotateOut => "2 new to the current period, 0 already in it",
            _ => "2 new, 0 already present",
        };
        assert_eq!(run.stdout, format!("{name}: added 2 items: {said}\n"));
        // What `rotabloom check` says after `add` said it added it.
        let check = bin::rb(&["--redis", &server.url(), "check", &name, "kk"]);
        assert_eq!(check.code, 0, "{between:?}: kk not inserted: {check:?}");
    }
}

/// `n` distinct lines, each again 13 and 31 lines later: with batches of
/// 10 and 4 in flight, the copies of a line are sent in batches at work
/// together.
fn repeats(n: usize) -> (Vec<String>, Vec<String>) {
    let distinct: Vec<String> = (0..n).map(|i| format!("https://r.example/{i}")).collect();
    let mut input = Vec::new();
    for i in 0..n + 31 {
        if i < n {
            input.push(distinct[i].clone());
        }
        for back in [13, 31] {
            if i >= back && i - back < n {
                input.push(distinct[i - back].clone());
            }
        }
    }
    (input, distinct)
}

#[test]
fn a_line_repeated_across_batches_in_flight_is_printed_once() {
    let server = RedisServer::start();
    let url = server.url();
    bin::create_roomy(&url, "rep");
    let (input, distinct) = repeats(3000);
    let text = input.join("\n") + "\n";
    let run = bin::rotabloom(
        &[
            "--redis",
            &url,
            "--in-flight",
            "4",
            "filter",
            "rep",
            "--batch",
            "10",
        ],
        &[],
        text.as_bytes(),
    )
    .ok();
    let out: Vec<&str> = run.stdout.lines().collect();
    let mut sorted = out.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), out.len(), "a line printed twice");
    let missing = distinct
        .iter()
        .filter(|l| sorted.binary_search(&l.as_str()).is_err());
    assert_eq!(missing.count(), 0, "new lines missing");
    assert_eq!(sorted.len(), distinct.len());
    // In input order: the output is a subsequence of the input (a repeated
    // line at one of its places).
    let mut at = input.iter();
    for line in &out {
        assert!(at.any(|l| l == line), "{line} printed out of order");
    }
    // A second run: every line seen.
    let again = bin::rotabloom(&["--redis", &url, "filter", "rep"], &[], text.as_bytes()).ok();
    assert_eq!(again.stdout, "");
}

fn new_lines(n: usize) -> (String, Vec<String>) {
    let lines: Vec<String> = (0..n)
        .map(|i| format!("https://full.example/{i}"))
        .collect();
    (lines.join("\n") + "\n", lines)
}

fn create_small(url: &str, name: &str) {
    bin::create(url, name, &["--kind", "bloom", "--capacity", "100"]);
}

/// The one error line of a refused run: the first line refused and how
/// many were.
fn refused(run: &bin::Run) -> (u64, u64) {
    assert_eq!(run.code, 3, "{run:?}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one error line: {run:?}");
    let line = lines[0];
    assert!(
        line.starts_with("rotabloom: filter ") && line.contains("is full"),
        "{line}"
    );
    let words: Vec<&str> = line.split(' ').collect();
    let after = |w: &str| {
        words
            .iter()
            .position(|x| *x == w)
            .and_then(|i| words.get(i + 1))
            .and_then(|v| v.trim_end_matches(',').parse::<u64>().ok())
    };
    let count = words
        .iter()
        .position(|x| *x == "refused,")
        .and_then(|i| words.get(i - 2))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no count refused: {line}"));
    let first = after("line")
        .or_else(|| after("item"))
        .unwrap_or_else(|| panic!("no first line: {line}"));
    (first, count)
}

#[test]
fn filter_into_a_full_filter_prints_exactly_what_it_inserted_then_one_error() {
    let server = RedisServer::start();
    let url = server.url();
    create_small(&url, "small");
    let (input, lines) = new_lines(500);
    let run = bin::rotabloom(&["--redis", &url, "filter", "small"], &[], input.as_bytes());
    let out: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(out.len(), 100, "printed; stderr: {}", run.stderr);
    // The 100 new lines are those before the first refused one, in order
    // (a false positive among them is handled, answered seen).
    let (first, count) = refused(&run);
    let handled: Vec<&str> = lines[..first as usize - 1]
        .iter()
        .map(String::as_str)
        .collect();
    let mut at = handled.iter();
    for line in &out {
        assert!(at.any(|l| l == line), "{line} not among the lines handled");
    }
    assert_eq!(count, 500 - (first - 1), "{run:?}");
    let mut conn = server.connection();
    let f = rotabloom::BloomFilter::open(&mut conn, "small").unwrap();
    assert_eq!(f.count(&mut conn).unwrap(), 100);
    // Refused means not inserted.
    let there = f
        .contains_many(&mut conn, &lines[first as usize - 1..])
        .unwrap();
    assert!(
        there.iter().filter(|&&t| t).count() <= 5,
        "refused lines inserted"
    );
}

#[test]
fn add_and_load_into_a_full_filter_count_only_what_they_inserted() {
    let server = RedisServer::start();
    let url = server.url();
    let dir = server.dir().to_path_buf();
    let (input, _) = new_lines(500);
    let file = dir.join("items.txt");
    std::fs::write(&file, &input).unwrap();
    for (name, run) in [("viaadd", None), ("viaload", Some(file.to_str().unwrap()))] {
        create_small(&url, name);
        let run = match run {
            None => bin::rotabloom(&["--redis", &url, "add", name], &[], input.as_bytes()),
            Some(f) => bin::rotabloom(&["--redis", &url, "load", name, f, "--quiet"], &[], b""),
        };
        let (first, count) = refused(&run);
        let handled = first - 1;
        assert_eq!(count, 500 - handled, "{run:?}");
        // Handled: the 100 inserted and any false positive before the
        // generation filled.
        assert!((100..=110).contains(&handled), "{run:?}");
        if run.stdout.contains("added") {
            // The 100 the generation took were new; what came before the
            // refusal beyond them was answered present (false positives).
            assert_eq!(
                run.stdout,
                format!(
                    "{name}: added {handled} items: 100 new, {} already present\n",
                    handled - 100
                )
            );
        } else {
            assert!(run.stdout.is_empty(), "--quiet: {run:?}");
        }
        let mut conn = server.connection();
        let f = rotabloom::BloomFilter::open(&mut conn, name).unwrap();
        assert_eq!(f.count(&mut conn).unwrap(), 100);
    }
}

#[test]
fn under_when_full_warn_every_line_is_inserted() {
    let server = RedisServer::start();
    let url = server.url();
    create_small(&url, "warned");
    let (input, _) = new_lines(500);
    let run = bin::rotabloom(
        &["--redis", &url, "--when-full", "warn", "add", "warned"],
        &[],
        input.as_bytes(),
    )
    .ok();
    // Past its capacity the filter answers some new lines "present"
    // (false positives): new is what it counted.
    let new: u64 = run
        .stdout
        .strip_prefix("warned: added 500 items: ")
        .and_then(|rest| rest.split_once(" new, "))
        .map(|(new, rest)| {
            let present: u64 = rest.trim_end_matches(" already present\n").parse().unwrap();
            let new: u64 = new.parse().unwrap();
            assert_eq!(new + present, 500, "{run:?}");
            new
        })
        .unwrap_or_else(|| panic!("{run:?}"));
    assert!(run.stderr.contains("warning"), "{run:?}");
    let mut conn = server.connection();
    let f = rotabloom::BloomFilter::open(&mut conn, "warned").unwrap();
    assert_eq!(f.count(&mut conn).unwrap(), new);
}
