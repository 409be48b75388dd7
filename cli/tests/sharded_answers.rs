//! A full shard refuses only its own lines (issue 28, reproduction 1):
//! `filter` into a 3-shard filter of capacity 300 given 600 distinct
//! lines prints every line stored, names every line refused by its line
//! number, and a resumed `--state` run prints the refused ones once, none
//! printed before.

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;

use harness::RedisServer;
use std::collections::BTreeSet;

fn input(n: usize) -> (String, Vec<String>) {
    let lines: Vec<String> = (0..n)
        .map(|i| format!("https://shard.example/{i}"))
        .collect();
    (lines.join("\n") + "\n", lines)
}

/// The line numbers (1-based) the one error line names after each
/// "): lines ".
fn named(message: &str) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for part in message.split("): lines ").skip(1) {
        let part = part.split(';').next().unwrap_or_default();
        for token in part.split(", ") {
            let number = token.split(' ').next().unwrap_or_default();
            let bounds: Vec<usize> = number.split('-').filter_map(|v| v.parse().ok()).collect();
            match bounds[..] {
                [a] => out.extend(a..=a),
                [a, b] => out.extend(a..=b),
                _ => break,
            }
            if number.len() < token.len() {
                break; // the group's last range: words follow
            }
        }
    }
    out
}

/// The 1-based numbers of the printed lines.
fn printed(stdout: &str, lines: &[String]) -> BTreeSet<usize> {
    stdout
        .lines()
        .map(|l| {
            lines
                .iter()
                .position(|x| x == l)
                .expect("a line of the input")
                + 1
        })
        .collect()
}

fn check(url: &str, name: &str, lines: &[String], which: &BTreeSet<usize>) -> usize {
    let text: String = which
        .iter()
        .map(|&i| format!("{}\n", lines[i - 1]))
        .collect();
    let run = bin::rotabloom(&["--redis", url, "check", name], &[], text.as_bytes());
    run.stdout.lines().count()
}

#[test]
fn a_full_shard_refuses_only_its_own_lines_and_every_stored_line_is_printed() {
    let server = RedisServer::start();
    let url = server.url();
    let f3 = ["--kind", "bloom", "--capacity", "300", "--shards", "3"];
    bin::create(&url, "f3", &f3);
    let (text, lines) = input(600);
    let run = bin::rotabloom(&["--redis", &url, "filter", "f3"], &[], text.as_bytes());
    assert_eq!(run.code, 3, "{run:?}");
    let errors: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(errors.len(), 1, "one error line: {run:?}");
    let refused = named(errors[0]);
    let out = printed(&run.stdout, &lines);
    eprintln!(
        "printed {}, refused {}: {}",
        out.len(),
        refused.len(),
        errors[0]
    );
    assert!(out.is_disjoint(&refused), "a line printed and refused");
    // Every shard filled: each holds 160 (a shard's capacity is rounded
    // up), but for false positives.
    assert!((450..=480).contains(&out.len()), "printed {}", out.len());
    // The rest were refused, but for false positives answered seen.
    let seen = 600 - out.len() - refused.len();
    assert!(seen <= 10, "{seen} lines neither printed nor refused");
    assert!(
        errors[0].contains(&format!("{} lines were not answered", refused.len())),
        "{}",
        errors[0]
    );
    // Stored: exactly the printed ones (the count is of insertions).
    let mut conn = server.connection();
    let f = rotabloom::ShardedFilter::<rotabloom::kinds::Any>::open(&mut conn, "f3").unwrap();
    assert_eq!(f.count(&mut conn).unwrap(), out.len() as u64);
    assert_eq!(check(&url, "f3", &lines, &out), out.len());
    // None of the refused is in, but for false positives.
    assert!(check(&url, "f3", &lines, &refused) <= refused.len() / 20);
}

#[test]
fn a_resumed_run_sends_only_the_refused_lines_and_prints_none_twice() {
    let server = RedisServer::start();
    let url = server.url();
    let f4 = ["--kind", "bloom", "--capacity", "300", "--shards", "3"];
    bin::create(&url, "f4", &f4);
    let (text, lines) = input(600);
    let state = server.dir().join("f4.state");
    let state = state.to_str().unwrap();
    let args = ["--redis", &url, "filter", "f4", "--state", state];
    let first = bin::rotabloom(&args, &[], text.as_bytes());
    assert_eq!(first.code, 3, "{first:?}");
    let refused = named(&first.stderr);
    assert!(first.stderr.contains("resume with"), "{first:?}");
    let before = printed(&first.stdout, &lines);
    // Room again (writes on past capacity): the resumed run answers the
    // refused lines, and only them.
    let args = [
        "--redis",
        &url,
        "--when-full",
        "warn",
        "filter",
        "f4",
        "--resume",
        state,
    ];
    let again = bin::rotabloom(&args, &[], text.as_bytes());
    assert_eq!(again.code, 0, "{again:?}");
    let after = printed(&again.stdout, &lines);
    assert!(before.is_disjoint(&after), "a line printed twice");
    assert!(
        after.is_subset(&refused),
        "a line not refused printed again"
    );
    // Refused lines all new but for false positives.
    assert!(
        after.len() + refused.len() / 20 >= refused.len(),
        "{again:?}"
    );
    assert!(!std::path::Path::new(state).exists());
    let mut conn = server.connection();
    let f = rotabloom::ShardedFilter::<rotabloom::kinds::Any>::open(&mut conn, "f4").unwrap();
    let stored = f.count(&mut conn).unwrap();
    assert_eq!(stored, (before.len() + after.len()) as u64);
    eprintln!(
        "first run: printed {}, refused {}; resumed: printed {}",
        before.len(),
        refused.len(),
        after.len()
    );
}
