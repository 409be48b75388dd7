use super::*;

fn entry(sent: Option<u64>) -> Entry {
    Entry {
        first: 0,
        len: 10,
        digest: digest(&[b"a".to_vec()]),
        token: sent.map(|_| "t".into()),
        sent_ms: sent,
        window_ms: 300_000,
        lost: false,
    }
}

#[test]
fn a_missing_record_is_lost_only_once_it_may_have_expired() {
    let e = entry(Some(1_000_000));
    assert_eq!(fate(&e, true, 9_000_000), Fate::Kept);
    assert_eq!(fate(&e, false, 1_000_500), Fate::NotApplied);
    // 30 s of margin before the 300 s window ends.
    assert_eq!(fate(&e, false, 1_269_999), Fate::NotApplied);
    assert_eq!(fate(&e, false, 1_270_000), Fate::Lost);
    assert_eq!(fate(&entry(None), false, u64::MAX), Fate::NotApplied);
}

#[test]
fn digests_tell_lines_apart() {
    let a = digest(&[b"ab".to_vec(), b"c".to_vec()]);
    assert_eq!(a.len(), 32);
    assert_ne!(a, digest(&[b"a".to_vec(), b"bc".to_vec()]));
    assert_eq!(a, digest(&[b"ab".to_vec(), b"c".to_vec()]));
}

#[test]
fn the_file_follows_the_batches_and_goes_when_none_is_left() {
    let dir = std::env::temp_dir().join(format!("rb-state-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.json");
    let _ = std::fs::remove_file(&path);
    let cmd = |f: &str| format!("rotabloom filter f --resume {f}");
    let j = Journal::start(&path, "filter", "f", 300_000, cmd).unwrap();
    let lines: Vec<Vec<u8>> = (0..4).map(|i| vec![b'a' + i]).collect();
    j.queued(0, &lines[..2]).unwrap();
    j.queued(2, &lines[2..]).unwrap();
    j.sending(0, "tok0", Duration::from_secs(300)).unwrap();
    // Of the batch at 2, its second line was refused: it stays.
    j.handed_on(2, &lines[2..], &[(1, false)]).unwrap();
    // Another process reads what this one wrote.
    let again = Journal::reopen(&path, "filter", "f", 1, cmd).unwrap();
    let plan = again.plan();
    assert_eq!(plan.read, 4);
    assert_eq!(plan.batches.len(), 2);
    assert_eq!(plan.batches[0].token.as_deref(), Some("tok0"));
    assert_eq!((plan.batches[1].first, plan.batches[1].len), (3, 1));
    assert_eq!(plan.batches[1].digest, digest(&lines[3..]));
    assert!(Journal::start(&path, "filter", "f", 1, cmd).is_err());
    assert!(Journal::reopen(&path, "add", "f", 1, cmd).is_err());
    assert!(Journal::reopen(&path, "filter", "g", 1, cmd).is_err());
    assert!(j.finish().unwrap());
    assert!(path.exists());
    j.handed_on(0, &lines[..2], &[]).unwrap();
    j.handed_on(3, &lines[3..], &[]).unwrap();
    assert!(!j.finish().unwrap());
    assert!(!path.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shell_words_are_quoted_when_needed() {
    let words = [
        "rotabloom",
        "filter",
        "crawl:dupes",
        "--resume",
        "/tmp/a b's.json",
    ];
    let line = shell_words(&words);
    assert!(
        line.starts_with("rotabloom filter crawl:dupes --resume "),
        "{line}"
    );
    assert_eq!(shlex::split(&line).unwrap(), words);
}
