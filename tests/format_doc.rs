//! docs/FORMAT.md agrees with what rotabloom writes.
//!
//! The examples of §6.5 are created again on a private redis-server and
//! their metadata hashes compared field by field with the document's
//! tables; the sizing figures of §6.3 and the worked example of §9.3 are
//! computed again with the library. Every figure is read out of the
//! document, so changing one there (or changing what rotabloom writes)
//! makes a test here fail.

#[path = "support/harness.rs"]
mod harness;

use chrono::{DateTime, Utc};
use harness::RedisServer;
use redis::Commands;
use rotabloom::{
    circular_generation_sizing, optimal_bits, optimal_hashes, BloomFilter, BloomParams,
    CircularFilter, ExpandingFilter, ManualClock, Mode,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

type Fields = BTreeMap<String, String>;

fn format_md() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/FORMAT.md");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// The level of a markdown heading line (`### x` is 3), or 0.
fn heading_level(line: &str) -> usize {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    if hashes > 0 && line[hashes..].starts_with(' ') {
        hashes
    } else {
        0
    }
}

/// The lines of `text` outside fenced code blocks.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push(line);
        }
    }
    out
}

/// The section whose heading line starts with `heading`, without code
/// blocks, up to the next heading of the same or a higher level.
fn section(text: &str, heading: &str) -> String {
    let lines = prose_lines(text);
    let start = lines
        .iter()
        .position(|l| l.starts_with(heading))
        .unwrap_or_else(|| panic!("FORMAT.md has no heading {heading:?}"));
    let level = heading_level(lines[start]);
    let end = lines[start + 1..]
        .iter()
        .position(|l| (1..=level).contains(&heading_level(l)))
        .map_or(lines.len(), |i| start + 1 + i);
    lines[start..end].join("\n")
}

/// The paragraph (blank-line separated, joined into one line) of `text`
/// that contains `marker`.
fn paragraph(text: &str, marker: &str) -> String {
    text.split("\n\n")
        .find(|p| p.contains(marker))
        .unwrap_or_else(|| panic!("FORMAT.md has no paragraph containing {marker:?}"))
        .replace('\n', " ")
}

/// The code spans (`...`) of a line of text.
fn spans(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The spans `NAME = NUMBER` of a paragraph, in order, with the spaces
/// that group digits removed (`n = 10 000 000` gives `("n", "10000000")`).
fn assignments(text: &str) -> Vec<(String, String)> {
    spans(text)
        .iter()
        .filter_map(|s| {
            let (name, value) = s.split_once(" = ")?;
            let name_ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            let value_ok = value.starts_with(|c: char| c.is_ascii_digit())
                && value
                    .chars()
                    .all(|c| c.is_ascii_digit() || " .e-".contains(c));
            (name_ok && value_ok).then(|| (name.to_string(), value.replace(' ', "")))
        })
        .collect()
}

/// Groups assignments into examples: a name seen again starts a new one.
fn examples(text: &str) -> Vec<Fields> {
    let mut out: Vec<Fields> = Vec::new();
    for (name, value) in assignments(text) {
        match out.last_mut() {
            Some(cur) if !cur.contains_key(&name) => {
                cur.insert(name, value);
            }
            _ => out.push(BTreeMap::from([(name, value)])),
        }
    }
    out
}

/// `key` of an example or a documented hash, parsed.
fn get<T: std::str::FromStr>(fields: &Fields, key: &str) -> T {
    let v = fields
        .get(key)
        .unwrap_or_else(|| panic!("FORMAT.md: no `{key}` in {fields:?}"));
    v.parse()
        .unwrap_or_else(|_| panic!("FORMAT.md: `{key}` = {v:?} does not parse"))
}

/// The code span right after the text `before` in a paragraph.
fn span_after(text: &str, before: &str) -> String {
    let rest = text
        .split_once(before)
        .unwrap_or_else(|| panic!("FORMAT.md: no {before:?} in {text:?}"))
        .1;
    rest.strip_prefix('`')
        .and_then(|r| r.split('`').next())
        .unwrap_or_else(|| panic!("FORMAT.md: no code span after {before:?}"))
        .to_string()
}

/// The pairs "`NAME` is `VALUE`" of a paragraph.
fn is_pairs(text: &str) -> Fields {
    let parts: Vec<&str> = text.split('`').collect();
    let mut out = Fields::new();
    // parts[odd] are spans; a pair is span, " is ", span.
    for i in (1..parts.len().saturating_sub(2)).step_by(2) {
        if parts[i + 1] == " is " {
            out.insert(parts[i].to_string(), parts[i + 2].to_string());
        }
    }
    out
}

/// The metadata hash documented by the `n`-th table (from 0) of `text`:
/// rows `| \`field\`, ... | \`value\`, ... |`, with `<s>` in a field name
/// standing for every seq of the table's `gens`.
fn documented_hash(text: &str, n: usize) -> Fields {
    let tables: Vec<Vec<&str>> = text
        .split("\n\n")
        .map(|p| p.lines().filter(|l| l.starts_with('|')).collect::<Vec<_>>())
        .filter(|rows| rows.len() > 2)
        .collect();
    let rows = tables
        .get(n)
        .unwrap_or_else(|| panic!("FORMAT.md: no table {n} in the section"));
    let mut out = Fields::new();
    for row in &rows[2..] {
        let cells: Vec<&str> = row.split('|').collect();
        let (names, values) = (spans(cells[1]), spans(cells[2]));
        assert_eq!(names.len(), values.len(), "FORMAT.md: row {row:?}");
        for (name, value) in names.iter().zip(values) {
            if name.contains("<s>") {
                for seq in get::<String>(&out, "gens").split(',') {
                    out.insert(name.replace("<s>", seq), value.clone());
                }
            } else {
                out.insert(name.clone(), value);
            }
        }
    }
    out
}

/// Whether a field holds a time, which the document only gives as an
/// example.
fn is_time(field: &str) -> bool {
    field == "created_at" || field.ends_with(".created_at")
}

/// Every field of `documented` but `uid` and the times equals the stored
/// one, and the two hashes have the same fields.
fn assert_same_hash(what: &str, documented: &Fields, stored: &Fields) {
    let doc_keys: BTreeSet<&String> = documented.keys().collect();
    let stored_keys: BTreeSet<&String> = stored.keys().collect();
    assert_eq!(
        doc_keys, stored_keys,
        "{what}: FORMAT.md lists other fields than rotabloom writes"
    );
    for (field, value) in documented {
        if field != "uid" && !is_time(field) {
            assert_eq!(
                value, &stored[field],
                "{what}: field `{field}` in FORMAT.md differs from what rotabloom writes"
            );
        }
    }
    let uid = &stored["uid"];
    assert!(
        uid.len() == 16
            && uid
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{what}: uid {uid:?}"
    );
}

fn hgetall(conn: &mut redis::Connection, name: &str) -> Fields {
    conn.hgetall(format!("rotabloom:{{{name}}}:meta")).unwrap()
}

fn fence(conn: &mut redis::Connection, name: &str) -> String {
    conn.get(format!("rotabloom:{{{name}}}:fence")).unwrap()
}

/// The name of the filter an example paragraph ("A `kind` filter `NAME`
/// ...") describes.
fn example_name(text: &str) -> String {
    spans(text)
        .get(1)
        .cloned()
        .unwrap_or_else(|| panic!("FORMAT.md: no filter name in {text:?}"))
}

fn millis(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap()
}

/// §6.3, `bloom`: the two sizing examples.
#[test]
fn section_6_3_bloom_sizing_examples_are_what_rotabloom_computes() {
    let text = section(&section(&format_md(), "### 6.3 "), "#### `bloom`");
    let found = examples(&paragraph(&text, "`n = "));
    assert_eq!(found.len(), 2, "FORMAT.md §6.3 bloom examples: {found:?}");
    for ex in &found {
        let (n, p): (u64, f64) = (get(ex, "n"), get(ex, "p"));
        let params = BloomParams::for_capacity(n, p).unwrap();
        assert_eq!(get::<u64>(ex, "m0"), optimal_bits(n, p).unwrap(), "{ex:?}");
        assert_eq!(get::<u32>(ex, "k"), params.hashes(), "{ex:?}");
        assert_eq!(get::<u64>(ex, "m"), params.bits(), "{ex:?}");
        let layout = BloomFilter::builder("crawl")
            .capacity(n)
            .error_rate(p)
            .spec()
            .unwrap()
            .layout();
        assert_eq!(get::<u32>(ex, "blocks"), layout.blocks, "{ex:?}");
        assert_eq!(get::<u64>(ex, "block_bits"), layout.block_bits(), "{ex:?}");
        assert_eq!(get::<u64>(ex, "gen.0.bits"), layout.bits, "{ex:?}");
    }
}

/// §6.3, `expanding`: the example of the sizing rule, against the
/// generations a real expanding filter makes.
#[test]
fn section_6_3_expanding_example_is_what_rotabloom_writes() {
    let text = section(&section(&format_md(), "### 6.3 "), "#### `expanding`");
    let found = examples(&paragraph(&text, "`n0 = "));
    assert!(
        found.len() >= 2,
        "FORMAT.md §6.3 expanding example: {found:?}"
    );
    let head = &found[0];
    let (n0, p, r, s): (u64, f64, f64, f64) = (
        get(head, "n0"),
        get(head, "p"),
        get(head, "r"),
        get(head, "s"),
    );
    let server = RedisServer::start();
    let mut conn = server.connection();
    let filter = ExpandingFilter::builder("grow")
        .capacity(n0)
        .error_rate(p)
        .tightening(r)
        .growth(s)
        .create_or_open(&mut conn)
        .unwrap();
    for ex in &found {
        let i: i32 = get(ex, "i");
        let (cap, rate): (u64, f64) = (get(ex, "cap"), get(ex, "rate"));
        assert_eq!(cap as f64, (n0 as f64 * s.powi(i)).ceil(), "{ex:?}");
        assert_eq!(rate, p * (1.0 - r) * r.powi(i), "{ex:?}");
        let m0 = optimal_bits(cap, rate).unwrap();
        assert_eq!(get::<u64>(ex, "m0"), m0, "{ex:?}");
        assert_eq!(
            get::<u32>(ex, "k"),
            optimal_hashes(m0, cap).unwrap(),
            "{ex:?}"
        );
        assert_eq!(
            get::<u64>(ex, "m"),
            BloomParams::for_capacity(cap, rate).unwrap().bits(),
            "{ex:?}"
        );
        // What the filter itself writes for sizing index i (no legacy
        // generation: generation i, seq i).
        while hgetall(&mut conn, "grow")["gens"].split(',').count() <= i as usize {
            assert!(filter.expand(&mut conn).unwrap(), "expansion {i}");
        }
        let stored = hgetall(&mut conn, "grow");
        let gen = |what: &str| stored[&format!("gen.{i}.{what}")].clone();
        assert_eq!(gen("bits"), ex["m"], "gen.{i}.bits, {ex:?}");
        assert_eq!(gen("hashes"), ex["k"], "gen.{i}.hashes, {ex:?}");
        assert_eq!(gen("capacity"), ex["cap"], "gen.{i}.capacity, {ex:?}");
        assert_eq!(gen("blocks"), "1", "gen.{i}.blocks (\"one block\")");
    }
}

/// §6.5: the `bloom` example, its table and the paragraph after it.
#[test]
fn section_6_5_bloom_example_is_what_rotabloom_writes() {
    let text = section(&format_md(), "### 6.5 ");
    let documented = documented_hash(&text, 0);
    let name = example_name(&paragraph(&text, "A `bloom` filter"));
    let (n, p): (u64, f64) = (get(&documented, "capacity"), get(&documented, "error_rate"));
    let server = RedisServer::start();
    let mut conn = server.connection();
    BloomFilter::builder(&name)
        .capacity(n)
        .error_rate(p)
        .create_or_open(&mut conn)
        .unwrap();
    let stored = hgetall(&mut conn, &name);
    assert_same_hash("§6.5 bloom example", &documented, &stored);

    let prose = paragraph(&text, "The sizing of §6.3 gives");
    let ex = examples(&prose).remove(0);
    let params = BloomParams::for_capacity(n, p).unwrap();
    assert_eq!(get::<u64>(&ex, "m"), params.bits(), "{prose}");
    assert_eq!(get::<u32>(&ex, "k"), params.hashes(), "{prose}");
    assert_eq!(ex["blocks"], stored["gen.0.blocks"], "{prose}");
    assert_eq!(ex["bits"], stored["gen.0.bits"], "{prose}");
    let (blocks, block_bits): (u64, u64) = (get(&ex, "blocks"), get(&ex, "block_bits"));
    assert_eq!(blocks * block_bits, get::<u64>(&ex, "bits"), "{prose}");
    let unsplit = BloomFilter::builder(&name)
        .capacity(n)
        .error_rate(p)
        .max_block_bits(1 << 32)
        .spec()
        .unwrap()
        .layout();
    assert_eq!((unsplit.blocks, unsplit.bits), (1, get(&ex, "gen.0.bits")));

    // The block keys exist, each at its full size (§8.12), and the fence.
    let uid = &stored["uid"];
    let first_block = spans(&prose)
        .into_iter()
        .find(|s| s.starts_with("rotabloom:{") && s.contains(":gen:"))
        .expect("a block key in the paragraph")
        .replace(&documented["uid"], uid);
    let block_keys: Vec<String> = conn
        .keys(format!("rotabloom:{{{name}}}:gen:{uid}-0:*"))
        .unwrap();
    assert_eq!(block_keys.len() as u64, blocks);
    assert!(block_keys.contains(&first_block), "{first_block}");
    for key in &block_keys {
        let len: u64 = conn.strlen(key).unwrap();
        assert_eq!(len, block_bits.div_ceil(8), "{key}");
    }
    assert_eq!(
        span_after(&prose, "holds ").replace(&documented["uid"], uid),
        fence(&mut conn, &name)
    );
}

/// §6.5: the `circular` example, its table, its fence and the state after
/// the scheduled rotation.
#[test]
fn section_6_5_circular_example_and_its_rotation_are_what_rotabloom_writes() {
    let text = section(&format_md(), "### 6.5 ");
    let documented = documented_hash(&text, 1);
    let intro = paragraph(&text, "A `circular` filter");
    let name = example_name(&intro);
    let mode: Mode = get(&documented, "mode");
    let (n, per_period, p): (u32, u64, f64) = (
        get(&documented, "generations"),
        get(&documented, "capacity"),
        get(&documented, "error_rate"),
    );
    let created = millis(get(&documented, "created_at"));
    let server = RedisServer::start();
    let mut conn = server.connection();
    let filter = CircularFilter::builder(&name)
        .generations(n)
        .mode(mode)
        .capacity(per_period)
        .error_rate(p)
        .schedule(get::<String>(&documented, "schedule"))
        .lazy(documented["lazy"] == "1")
        // "and rotabloom's default limits": `max_bits` and
        // `max_block_bits` are checked against the defaults.
        .clock(Arc::new(ManualClock::new(created)))
        .create_or_open(&mut conn)
        .unwrap();
    let stored = hgetall(&mut conn, &name);
    assert_same_hash("§6.5 circular example", &documented, &stored);

    // The sizing in the paragraph before the table.
    let ex = examples(&intro).remove(0);
    let (cap, rate) = circular_generation_sizing(mode, n, per_period, p).unwrap();
    assert_eq!(
        (get::<u64>(&ex, "cap"), get::<f64>(&ex, "rate")),
        (cap, rate)
    );
    let m0 = optimal_bits(cap, rate).unwrap();
    assert_eq!(get::<u64>(&ex, "m0"), m0, "{intro}");
    assert_eq!(
        get::<u32>(&ex, "k"),
        optimal_hashes(m0, cap).unwrap(),
        "{intro}"
    );
    assert_eq!(ex["m"], stored["gen.0.bits"], "{intro}");

    let uid = stored["uid"].clone();
    let example_uid = &documented["uid"];
    let fence_text = paragraph(&text, &format!("Its fence `rotabloom:{{{name}}}:fence`"));
    assert_eq!(
        span_after(&fence_text, "holds ").replace(example_uid, &uid),
        fence(&mut conn, &name)
    );

    // The scheduled rotation, made at the documented `due_at`.
    let after = paragraph(&text, "After the scheduled rotation");
    filter
        .rotate_if_due_at(&mut conn, millis(get(&documented, "due_at")))
        .unwrap();
    let rotated = hgetall(&mut conn, &name);
    let state = is_pairs(&after);
    for field in ["gens", "next_seq", "period", "due_at", "epoch"] {
        assert_eq!(
            state.get(field),
            rotated.get(field),
            "`{field}` after the rotation: {after}"
        );
    }
    assert_eq!(
        span_after(&after, "the fence holds ").replace(example_uid, &uid),
        fence(&mut conn, &name)
    );
    let gone = spans(&after)
        .into_iter()
        .find(|s| s.starts_with("rotabloom:{") && s.contains(":gen:"))
        .expect("a block key in the paragraph")
        .replace(example_uid, &uid);
    assert!(
        !conn.exists::<_, bool>(&gone).unwrap(),
        "{gone} still exists"
    );
    // Every other field is unchanged; every listed generation, the new one
    // included, has the documented generation values.
    let mut expected = documented.clone();
    expected.retain(|k, _| !k.starts_with("gen."));
    expected.extend(state);
    for seq in rotated["gens"].split(',') {
        for what in [
            "bits",
            "hashes",
            "blocks",
            "scheme",
            "capacity",
            "count",
            "created_at",
        ] {
            let value = documented[&format!("gen.0.{what}")].clone();
            expected.insert(format!("gen.{seq}.{what}"), value);
        }
    }
    assert_same_hash(
        "§6.5 circular example after the rotation",
        &expected,
        &rotated,
    );
}

/// §9.3: the worked example's bytes and string lengths.
#[test]
fn section_9_3_worked_example_is_what_rotabloom_writes() {
    let text = paragraph(&section(&format_md(), "### 9.3 "), "Worked example");
    let lengths: Vec<u64> = text
        .split(" bytes long")
        .map(|before| before.rsplit(' ').next().unwrap_or(""))
        .filter_map(|word| word.parse().ok())
        .collect();
    assert_eq!(lengths.len(), 2, "FORMAT.md §9.3: {text}");
    let bytes: Vec<(usize, u8)> = text
        .split("byte ")
        .skip(1)
        .filter_map(|s| {
            let (index, rest) = s.split_once(" |= `0x")?;
            Some((
                index.parse().ok()?,
                u8::from_str_radix(rest.get(..2)?, 16).ok()?,
            ))
        })
        .collect();
    assert_eq!(bytes.len(), 3, "FORMAT.md §9.3: {text}");

    let server = RedisServer::start();
    let mut conn = server.connection();
    let item = "http://example.com/";
    let filter = BloomFilter::builder("t")
        .bits_hashes(1000, get(&examples(&text).remove(0), "k"))
        .create_or_open(&mut conn)
        .unwrap();
    filter.insert(&mut conn, item).unwrap();
    let uid = hgetall(&mut conn, "t")["uid"].clone();
    let block: Vec<u8> = conn.get(format!("rotabloom:{{t}}:gen:{uid}-0:0")).unwrap();
    assert_eq!(block.len() as u64, lengths[0], "created by rotabloom");
    for (index, mask) in &bytes {
        assert_eq!(block[*index], *mask, "byte {index}");
    }
    assert_eq!(block.iter().filter(|&&b| b != 0).count(), bytes.len());
    for (index, mask) in &bytes {
        let offset = index * 8 + mask.leading_zeros() as usize;
        let _: u8 = conn.setbit("bare", offset, true).unwrap();
    }
    assert_eq!(
        conn.strlen::<_, u64>("bare").unwrap(),
        lengths[1],
        "SETBIT alone"
    );
}

/// The routing table of §11.3 is what rotabloom computes: every row's item,
/// mixed value and shards are read out of the document.
#[test]
fn section_11_3_routing_table_is_what_rotabloom_computes() {
    let doc = format_md();
    let text = section(&doc, "### 11.3");
    let header = text
        .lines()
        .find(|l| l.starts_with("| Item | x |"))
        .expect("§11.3 has the routing table");
    let counts: Vec<u32> = header
        .split('|')
        .skip(3)
        .filter_map(|c| c.trim().trim_start_matches("S = ").parse().ok())
        .collect();
    assert_eq!(counts, [1, 2, 3, 6, 16, 256]);
    let mut rows = 0;
    for line in text
        .lines()
        .filter(|l| l.starts_with("| `") || l.starts_with("| bytes"))
    {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let item: Vec<u8> = if cells[1].starts_with("bytes `0x00..0xff`") {
            (0..=255u8).collect()
        } else {
            spans(cells[1])[0].trim_matches('"').as_bytes().to_vec()
        };
        let h = rotabloom::ItemHash::of(&item);
        let mix = u64::from_str_radix(spans(cells[2])[0].trim_start_matches("0x"), 16).unwrap();
        assert_eq!(h.shard_mix(), mix, "{line}");
        for (s, cell) in counts.iter().zip(&cells[3..]) {
            assert_eq!(h.shard(*s).to_string(), *cell, "S = {s}: {line}");
        }
        rows += 1;
    }
    assert_eq!(rows, 8, "§11.3 lists eight items");
}

/// The sizing example of §11.2 is what rotabloom sizes a shard for.
#[test]
fn section_11_2_shard_sizing_example_is_what_rotabloom_computes() {
    let doc = format_md();
    let text = paragraph(&section(&doc, "### 11.2"), "per shard");
    let capacity: u64 = span_after(&text, "e.g. ")
        .trim_start_matches("capacity = ")
        .parse()
        .unwrap();
    let shards: u32 = span_after(&text, "and ")
        .trim_start_matches("S = ")
        .parse()
        .unwrap();
    let sum = span_after(&text, "give ");
    let (share, slack) = sum.split_once(" + ").unwrap();
    let (share, slack): (u64, u64) = (share.parse().unwrap(), slack.parse().unwrap());
    assert_eq!(capacity.div_ceil(u64::from(shards)), share);
    assert_eq!(rotabloom::shard_capacity(capacity, shards), share + slack);
    assert!(text.contains(&format!("{} items", share + slack)), "{text}");
}
