use super::*;

fn lines(from: u64, n: u64) -> Vec<Vec<u8>> {
    (from..from + n)
        .map(|i| i.to_string().into_bytes())
        .collect()
}

fn full(answered: Vec<bool>) -> anyhow::Error {
    anyhow::Error::new(rotabloom::Error::Full {
        name: "small".into(),
        capacity: 100,
        count: 100,
        answered,
    })
}

fn words(writes: Writes) -> Words {
    Words {
        unit: "lines",
        writes,
        journal: None,
    }
}

/// Feeds `batches` (first line, length, result) in order; returns the
/// lines handed on and the verdict's message and code.
fn run(
    writes: Writes,
    batches: Vec<(u64, u64, anyhow::Result<Vec<bool>>)>,
) -> (Vec<String>, Option<(String, u8)>) {
    let w = words(writes);
    let mut t = Tally::default();
    let mut out = Vec::new();
    for (first, n, result) in batches {
        let l = lines(first, n);
        t.take(first, &l, false, result, &w, |l, a| {
            for (line, new) in l.iter().zip(a) {
                if new {
                    out.push(String::from_utf8(line.clone()).unwrap());
                }
            }
            Ok(())
        });
    }
    let v = t
        .verdict(&w, false, Some(40))
        .err()
        .map(|e| (e.to_string(), exit_code(&e)));
    (out, v)
}

#[test]
fn a_refusal_prints_what_was_inserted_and_names_the_first_line_refused() {
    // Batch 2 (lines 11-20) fills the filter after 4 of its lines;
    // batch 3, in flight with it, got in before it filled (2 lines) and
    // batch 4 found it full.
    let (out, v) = run(
        Writes::Answers,
        vec![
            (0, 10, Ok(vec![true; 10])),
            (10, 10, Err(full(vec![true, false, true, true]))),
            (20, 10, Err(full(vec![true, true]))),
            (30, 10, Err(full(vec![]))),
        ],
    );
    let mut want: Vec<String> = (0..10).map(|i| i.to_string()).collect();
    want.extend(["10", "12", "13", "20", "21"].map(String::from));
    assert_eq!(out, want);
    let (message, code) = v.unwrap();
    assert_eq!(code, 3);
    assert!(
        message.contains("holds 100 items of the 100")
            && message.contains("24 lines refused, the first at line 15, none of them inserted")
            && message.contains("run again from line 15 once it has room"),
        "{message}"
    );
}

#[test]
fn a_shard_that_failed_leaves_every_other_answer_printed_and_its_lines_named() {
    // Lines 11-16: shard 1 (lines 12, 14, 16) is full after one, shard
    // 2 (line 13) is missing.
    let full = rotabloom::Error::Full {
        name: "f-1".into(),
        capacity: 5,
        count: 5,
        answered: vec![],
    };
    let gone = rotabloom::Error::NotFound { name: "f-2".into() };
    let p = rotabloom::Partial::new(
        "f",
        vec![Some(true), Some(true), None, Some(false), None, None],
        vec![
            rotabloom::ShardFailure::new(1, vec![4, 5], full),
            rotabloom::ShardFailure::new(2, vec![2], gone),
        ],
    );
    let partial = anyhow::Error::new(rotabloom::Error::Partial(Box::new(p)));
    let (out, v) = run(
        Writes::Answers,
        vec![(0, 10, Ok(vec![true; 10])), (10, 6, Err(partial))],
    );
    let mut want: Vec<String> = (0..10).map(|i| i.to_string()).collect();
    want.extend(["10", "11"].map(String::from));
    assert_eq!(out, want);
    let (message, code) = v.unwrap();
    assert_eq!(code, 3);
    assert!(
        message.starts_with("3 lines were not answered, every other one was")
            && message
                .contains("2 lines refused (not inserted) by shard 1 (filter \"f-1\" is full")
            && message.contains("lines 15-16")
            && message.contains("1 lines refused (not inserted) by shard 2")
            && message.contains("lines 13")
            && message.contains("run again from line 13 once the cause is gone"),
        "{message}"
    );
}

#[test]
fn a_batch_that_gave_up_names_the_lines_that_may_be_applied() {
    let gave_up = || {
        anyhow::Error::new(GaveUp {
            message: "redis://h:1: gave up after 2 reconnection attempts: refused".into(),
        })
    };
    let (out, v) = run(
        Writes::Answers,
        vec![
            (0, 10, Ok(vec![true; 10])),
            (10, 10, Err(gave_up())),
            (20, 10, Ok(vec![true; 10])),
            (30, 10, Err(gave_up())),
        ],
    );
    assert_eq!(out.len(), 20, "later answers are printed: {out:?}");
    let (message, code) = v.unwrap();
    assert_eq!(code, 3);
    assert!(
        message.contains("gave up after 2 reconnection attempts")
            && message.contains(
                "10 lines were done, the next 10 are not confirmed (run again from line 11)"
            )
            && message.contains("lines 11-20, 31-40 may have been applied without being printed")
            && message.contains("--state FILE")
            && message.contains("10 lines after those were done too"),
        "{message}"
    );
    let (_, v) = run(Writes::None, vec![(0, 5, Err(gave_up()))]);
    assert!(v
        .unwrap()
        .0
        .ends_with("0 lines were done, the next 5 are not confirmed (run again from line 1)"));
}

#[test]
fn other_errors_keep_their_exit_code() {
    let gone = anyhow::Error::new(rotabloom::Error::NotFound { name: "f".into() });
    let (_, v) = run(Writes::Inserts, vec![(0, 3, Err(gone))]);
    let (message, code) = v.unwrap();
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("inserting again is harmless"), "{message}");
}
