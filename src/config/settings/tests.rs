//! The settings table checked against itself and against docs/CLI.md's
//! table of settings: one field per row, flags spelled like keys, every
//! setting documented.

use super::*;

#[test]
fn the_kind_settings_help_names_every_kind() {
    let kind = setting("kind").unwrap();
    for k in Kind::ALL {
        assert!(
            kind.help().contains(k.as_str()),
            "{k} missing from {:?}",
            kind.help()
        );
    }
    assert_eq!(kind.words().len(), Kind::ALL.len());
}

/// A value each setting takes, by the kind of its slot.
fn example(s: &Setting) -> &'static str {
    match (s.key, s.slot(&mut FilterParams::default())) {
        ("kind", _) => "circular",
        ("mode", _) => "insert-all-query-oldest",
        ("schedule", _) => "6h",
        ("backend", _) => "redisbloom",
        (_, Slot::Switch(_)) => "true",
        (_, Slot::Number(_)) => "0.5",
        (key, Slot::Word(_)) => panic!("no example for {key}: add one here"),
        _ => "7",
    }
}

#[test]
fn every_row_has_its_own_field() {
    for s in SETTINGS {
        let mut p = FilterParams::default();
        p.set(s.key, example(s)).unwrap();
        assert_eq!(p.keys_set(), [s.key], "{} writes its own field only", s.key);
    }
    let mut keys: Vec<_> = SETTINGS.iter().map(|s| s.key).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), SETTINGS.len(), "keys are unique");
}

#[test]
fn flags_are_unique_and_spelled_like_keys() {
    for s in SETTINGS {
        assert!(
            s.flag == s.key.replace('_', "-") || s.key == "schedule",
            "{}: flag --{} (only schedule has another name: --every)",
            s.key,
            s.flag
        );
        assert_eq!(SETTINGS.iter().filter(|o| o.flag == s.flag).count(), 1);
        assert!(!s.kinds.is_empty(), "{}", s.key);
    }
}

/// The rows of the settings table of docs/CLI.md: key, flag with its
/// value, kinds.
fn documented() -> Vec<(String, String, String)> {
    let doc = include_str!("../../../docs/CLI.md");
    let mut lines = doc
        .lines()
        .skip_while(|l| !l.starts_with("| key | flag | kinds |"))
        .skip(2);
    let mut rows = Vec::new();
    for line in lines.by_ref().take_while(|l| l.starts_with('|')) {
        let cells: Vec<String> = line
            .split(" | ")
            .map(|c| {
                c.trim_matches(|c| c == '|' || c == ' ' || c == '`')
                    .to_string()
            })
            .collect();
        rows.push((cells[0].clone(), cells[1].clone(), cells[2].clone()));
    }
    rows
}

#[test]
fn the_documentation_lists_every_setting() {
    let doc = documented();
    let table: Vec<(String, String, String)> = SETTINGS
        .iter()
        .map(|s| {
            let flag = match s.value_name() {
                Some(v) => format!("--{} {v}", s.flag),
                None => format!("--{}", s.flag),
            };
            let kinds = if s.kinds == ALL {
                "all".to_string()
            } else {
                let names: Vec<&str> = s.kinds.iter().map(|k| k.as_str()).collect();
                names.join(", ")
            };
            (s.key.to_string(), flag, kinds)
        })
        .collect();
    assert_eq!(
        doc, table,
        "docs/CLI.md's settings table (key | flag | kinds) and SETTINGS differ"
    );
}

/// Every setting given in one set of parameters is taken by another's
/// `merge`, and one not given leaves the other's value alone.
#[test]
fn merge_takes_every_setting_given() {
    for s in super::SETTINGS {
        let mut given = super::FilterParams::default();
        let text = match s.key {
            "kind" => "circular",
            "mode" => "insert-all-query-oldest",
            "schedule" => "daily",
            "backend" => "redisbloom",
            "lazy" => "true",
            "error_rate" | "growth" | "tightening" => "0.5",
            _ => "2",
        };
        given.set(s.key, text).unwrap();
        let mut p = super::FilterParams::default();
        p.merge(given.clone());
        assert_eq!(p, given, "{}", s.key);
        let mut kept = given.clone();
        kept.merge(super::FilterParams::default());
        assert_eq!(kept, given, "{}", s.key);
    }
}
