//! Configuration files: parsing and validation, no Redis needed.

use rotabloom::config::{
    parse_bytes, settings, Config, FilterParams, FilterSpec, RedisSetting, RedisUrl,
};
use rotabloom::{Backend, Kind, Mode};

/// Each text fails with the message paired with it.
fn expect_errors(cases: &[(&str, &str)]) {
    for (text, want) in cases {
        assert_eq!(&err(text), want, "for {text:?}");
    }
}

fn err(text: &str) -> String {
    let e = Config::parse(text, "conf/test.toml")
        .map(|c| format!("parsed: {:?}", c.filters().len()))
        .unwrap_err();
    let s = e.to_string();
    assert!(!s.contains('\n'), "one line: {s:?}");
    s
}

const GOOD: &str = r#"
[defaults]
redis_url_env = "ROTABLOOM_TEST_URL_UNSET"

[filter.crawl]
kind = "bloom"
capacity = 100_000_000
error_rate = 0.001

[filter.growing]
kind = "expanding"
capacity = 1_000_000
error_rate = 0.001
growth = 2.0
tightening = 0.5
max_generations = 32
max_bytes = "4GiB"

[filter.recrawl]
kind = "circular"
generations = 4
mode = "insert-newest-query-all"
capacity = 10_000_000
error_rate = 0.001
schedule = "monthly:1@00:00"
lazy = false
"#;

#[test]
fn the_three_kinds_parse_into_validated_specs() {
    let c = Config::parse(GOOD, "good.toml").unwrap();
    let names: Vec<&str> = c.filters().iter().map(|f| f.name()).collect();
    assert_eq!(names, ["crawl", "growing", "recrawl"], "file order");
    assert_eq!(c.filter("crawl").unwrap().kind(), Kind::Bloom);
    assert_eq!(c.filter("growing").unwrap().kind(), Kind::Expanding);
    let recrawl = c.filter("recrawl").unwrap();
    assert_eq!(recrawl.kind(), Kind::Circular);
    assert!(matches!(recrawl.spec(), FilterSpec::Circular(_)));
    assert_eq!(recrawl.params().generations, Some(4));
    assert_eq!(recrawl.params().mode, Some(Mode::InsertNewestQueryAll));
    assert_eq!(
        recrawl.params().schedule.unwrap().to_string(),
        "monthly:1@00:00"
    );
    assert_eq!(
        c.filter("growing").unwrap().params().max_bytes,
        Some(4 << 30)
    );
    // Locations of keys, for errors found later (a mismatch with Redis).
    let loc = recrawl.location("generations").unwrap();
    assert_eq!((loc.line, loc.column), (21, 1));
    assert_eq!(recrawl.header().unwrap().line, 19);
    assert_eq!(
        c.redis_setting(),
        Some(&RedisSetting::Env("ROTABLOOM_TEST_URL_UNSET".into()))
    );
    assert!(c.filter("nope").is_none());
}

#[test]
fn the_shipped_example_is_valid() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/config/rotabloom.toml");
    let c = Config::load(path).unwrap();
    let kinds: Vec<Kind> = c.filters().iter().map(|f| f.kind()).collect();
    assert_eq!(kinds, [Kind::Bloom, Kind::Expanding, Kind::Circular]);
}

#[test]
fn unknown_keys_name_file_line_and_key() {
    let text = "[filter.crawl]\nkind = \"bloom\"\ncapacity = 10\ncapacty = 10\n";
    let e = err(text);
    assert!(
        e.starts_with("conf/test.toml:4:1: filter.crawl.capacty: unknown field `capacty`"),
        "{e}"
    );
    let e = err("[defaults]\nredis = \"redis://h\"\n");
    assert!(
        e.starts_with("conf/test.toml:2:1: defaults.redis: unknown field `redis`"),
        "{e}"
    );
    let e = err("filters = 1\n");
    assert!(
        e.starts_with("conf/test.toml:1:1: filters: unknown field `filters`"),
        "{e}"
    );
}

#[test]
fn bad_values_name_file_line_and_key() {
    let text =
        "# recrawl\n\n[filter.recrawl]\nkind = \"circular\"\ncapacity = 10\ngenerations = 1\n";
    assert_eq!(
        err(text),
        "conf/test.toml:6:1: filter.recrawl.generations: 1 is not between 2 and 256"
    );
    let cases: &[(&str, &str)] = &[
        (
            "[filter.a]\nkind = \"bloom\"\ncapacity = 10\nerror_rate = 1.5\n",
            "conf/test.toml:4:1: filter.a.error_rate: 1.5 is not strictly between 0 and 1",
        ),
        (
            "[filter.a]\nkind = \"bloom\"\ncapacity = -10\n",
            "conf/test.toml:3:1: filter.a.capacity: -10 is negative",
        ),
        (
            "[filter.a]\nkind = \"bloom\"\ncapacity = 0\n",
            "conf/test.toml:3:1: filter.a.capacity: must be at least 1",
        ),
        (
            "[filter.a]\nkind = \"bloomy\"\n",
            "conf/test.toml:2:1: filter.a.kind: \"bloomy\" is not a kind (bloom, expanding or circular)",
        ),
        (
            "[filter.a]\ncapacity = 10\n",
            "conf/test.toml:1:1: filter.a.kind: missing (set kind to bloom, expanding or circular)",
        ),
        (
            "[filter.a]\nkind = \"circular\"\ngenerations = 3\ncapacity = 5\nschedule = \"yearly\"\n",
            "conf/test.toml:5:1: filter.a.schedule: \"yearly\" is not a schedule (try 30d, 6h, hourly, daily@03:00, weekly:mon@03:00, monthly:1@00:00)",
        ),
        (
            "[filter.a]\nkind = \"circular\"\ngenerations = 3\ncapacity = 5\nmode = \"query-newest\"\n",
            "conf/test.toml:5:1: filter.a.mode: \"query-newest\" is not insert-newest-query-all or insert-all-query-oldest",
        ),
        (
            "[filter.a]\nkind = \"circular\"\ngenerations = 3\ncapacity = 5\nlazy = true\n",
            "conf/test.toml:5:1: filter.a.lazy: lazy rotation needs a schedule",
        ),
        (
            "[filter.a]\nkind = \"expanding\"\ncapacity = 5\n  max_bytes = \"4 gigs\"\n",
            "conf/test.toml:4:3: filter.a.max_bytes: \"4 gigs\" is not a size like 4GiB, 512MiB or 1048576",
        ),
        (
            "[filter.a]\nkind = \"expanding\"\ncapacity = 5\ngrowth = 100.0\n",
            "conf/test.toml:4:1: filter.a.growth: 100 is not between 1 and 16",
        ),
        (
            "[filter.a]\nkind = \"bloom\"\ncapacity = 5\ngenerations = 4\n",
            "conf/test.toml:4:1: filter.a.generations: not a setting of a bloom filter (its settings: backend, bits, capacity, error_rate, hashes, kind, max_bits, max_block_bits, shards)",
        ),
        (
            "[filter.a]\nkind = \"bloom\"\nbits = 1024\n",
            "conf/test.toml:1:1: filter.a.hashes: missing (bits needs hashes)",
        ),
        (
            "[filter.a]\nkind = \"bloom\"\ncapacity = 5\nbits = 1024\nhashes = 3\n",
            "conf/test.toml:3:1: filter.a.capacity: give either capacity and error_rate, or bits and hashes, not both",
        ),
        (
            "[filter.a]\nkind = \"bloom\"\nbits = 1024\nhashes = 99\n",
            "conf/test.toml:4:1: filter.a.hashes: 99 is not between 1 and 64",
        ),
        (
            "[filter.\"a b\"]\nkind = \"bloom\"\ncapacity = 5\n",
            "conf/test.toml:1:1: filter.a b: invalid filter name \"a b\": only printable ASCII without whitespace, '{' or '}' is allowed",
        ),
        (
            "[filter]\nx = { kind = \"bloom\", capacity = 0 }\n",
            "conf/test.toml:2:23: filter.x.capacity: must be at least 1",
        ),
    ];
    expect_errors(cases);
    // Type errors come from the TOML parser, located at the value.
    let e = err("[filter.a]\nkind = \"bloom\"\ncapacity = true\n");
    assert!(
        e.starts_with("conf/test.toml:3:12: filter.a.capacity: invalid type: boolean `true`"),
        "{e}"
    );
    // A string is read as on the command line.
    let e = err("[filter.a]\nkind = \"bloom\"\ncapacity = \"many\"\n");
    assert_eq!(
        e,
        "conf/test.toml:3:1: filter.a.capacity: \"many\" is not a whole number"
    );
    let e = err("[filter.a]\nkind = \"bloom\"\ncapacity = 10\n[filter.a]\n");
    assert!(e.starts_with("conf/test.toml:4:"), "{e}");
    let e = err("[filter.a]\nkind = bloom\n");
    assert!(e.starts_with("conf/test.toml:2:8: filter.a.kind: "), "{e}");
}

#[test]
fn missing_file_is_a_clear_error() {
    let e = Config::load("/nonexistent/rotabloom.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "/nonexistent/rotabloom.toml: cannot read the configuration: no such file"
    );
}

#[test]
fn redis_urls_never_show_their_password() {
    let e = err("[defaults]\nredis_url = \"http://:hunter2-pw@h/\"\n");
    assert!(
        e.starts_with("conf/test.toml:2:1: defaults.redis_url: not a Redis URL"),
        "{e}"
    );
    assert!(!e.contains("hunter2-pw"), "{e}");
    let e = err("[defaults]\nredis_url = \"redis://:pw@h/\"\nredis_url_env = \"X\"\n");
    assert_eq!(
        e,
        "conf/test.toml:2:1: defaults.redis_url: set either redis_url or redis_url_env, not both"
    );

    let c = Config::parse(
        "[defaults]\nredis_url = \"redis://:hunter2-pw@db:6379/0\"\n",
        "x",
    )
    .unwrap();
    let url = c.redis_url().unwrap().unwrap();
    assert_eq!(url.expose(), "redis://:hunter2-pw@db:6379/0");
    assert_eq!(url.to_string(), "redis://***@db:6379/0");
    assert_eq!(url.password().as_deref(), Some("hunter2-pw"));
    for shown in [
        format!("{url:?}"),
        format!("{c:?}"),
        format!("{:?}", c.redis_setting()),
    ] {
        assert!(!shown.contains("hunter2"), "{shown}");
    }
    let u = RedisUrl::new("redis+unix:///tmp/r.sock?db=1&pass=hunter2-pw").unwrap();
    assert!(!u.to_string().contains("hunter2"), "{u}");
}

#[test]
fn redis_url_env_is_resolved_when_asked() {
    let c = Config::parse(
        "[defaults]\nredis_url_env = \"ROTABLOOM_TEST_URL_A\"\n",
        "x.toml",
    )
    .unwrap();
    assert_eq!(
        c.redis_url().unwrap_err().to_string(),
        "x.toml:2:1: defaults.redis_url_env: environment variable ROTABLOOM_TEST_URL_A is not set"
    );
    std::env::set_var("ROTABLOOM_TEST_URL_A", "redis://:hunter2-pw@db:1/");
    assert_eq!(
        c.redis_url().unwrap().unwrap().to_string(),
        "redis://***@db:1/"
    );
    std::env::set_var("ROTABLOOM_TEST_URL_A", "ftp://:hunter2-pw@db");
    let e = c.redis_url().unwrap_err().to_string();
    assert!(e.contains("holds a value that is not a Redis URL"), "{e}");
    assert!(!e.contains("hunter2"), "{e}");
    std::env::remove_var("ROTABLOOM_TEST_URL_A");
}

#[test]
fn errors_found_later_point_at_the_key() {
    let c = Config::parse(GOOD, "good.toml").unwrap();
    let e = c.error_at(
        "crawl",
        "capacity",
        "filter \"crawl\" exists with capacity = 5",
    );
    assert_eq!(
        e.to_string(),
        "good.toml:7:1: filter.crawl.capacity: filter \"crawl\" exists with capacity = 5"
    );
    // A field the file does not set: the filter's section.
    let e = c.error_at("crawl", "max_bits", "differs");
    assert_eq!(e.to_string(), "good.toml:5:1: filter.crawl: differs");
}

#[test]
fn params_from_flags_validate_the_same_way() {
    let mut p = FilterParams::default();
    assert_eq!(p.validate("x").unwrap_err().key, Some("kind"));
    p.kind = Some(Kind::Circular);
    p.capacity = Some(1000);
    assert_eq!(p.validate("x").unwrap_err().key, Some("generations"));
    p.generations = Some(300);
    let e = p.validate("x").unwrap_err();
    assert_eq!(
        (e.key, e.message.as_str()),
        (Some("generations"), "300 is not between 2 and 256")
    );
    p.generations = Some(3);
    let def = p.validate("x").unwrap();
    assert_eq!(def.kind(), Kind::Circular);
    assert!(p.validate("bad*name").unwrap_err().key.is_none());
    assert!(p.validate("spider:dupefilter").is_ok());
}

#[test]
fn byte_sizes() {
    assert_eq!(parse_bytes("4GiB"), Ok(4 << 30));
    assert_eq!(parse_bytes("512 MiB"), Ok(512 << 20));
    assert_eq!(parse_bytes("1kib"), Ok(1024));
    assert_eq!(parse_bytes("3MB"), Ok(3_000_000));
    assert_eq!(parse_bytes("0"), Ok(0));
    assert_eq!(parse_bytes("1_000"), Ok(1000));
    for bad in ["", "GiB", "-1", "1 parsec", "1.2.3GiB", "99999999999TiB"] {
        assert!(parse_bytes(bad).is_err(), "{bad:?}");
    }
    let c = Config::parse(
        "[filter.g]\nkind = \"expanding\"\ncapacity = 1000\nmax_bytes = 1048576\n",
        "x",
    )
    .unwrap();
    assert_eq!(c.filter("g").unwrap().params().max_bytes, Some(1 << 20));
}

#[test]
fn backend_is_a_setting_of_every_kind() {
    let c = Config::parse(
        "[filter.b]\nkind = \"bloom\"\ncapacity = 1000\nbackend = \"redisbloom\"\n\n\
         [filter.c]\nkind = \"circular\"\ngenerations = 3\ncapacity = 100\nbackend = \"bitmap\"\n\n\
         [filter.d]\nkind = \"bloom\"\ncapacity = 1000\n\n\
         [filter.e]\nkind = \"expanding\"\ncapacity = 1000\nbackend = \"redisbloom\"\n",
        "x",
    )
    .unwrap();
    assert_eq!(
        c.filter("e").unwrap().params().backend,
        Some(Backend::RedisBloom)
    );
    assert_eq!(
        c.filter("b").unwrap().params().backend,
        Some(Backend::RedisBloom)
    );
    assert_eq!(
        c.filter("c").unwrap().params().backend,
        Some(Backend::Bitmap)
    );
    assert_eq!(c.filter("d").unwrap().params().backend, None, "default");
    assert_eq!(c.filter("b").unwrap().location("backend").unwrap().line, 4);
    let cases: &[(&str, &str)] = &[
        (
            "[filter.a]\nkind = \"bloom\"\ncapacity = 5\nbackend = \"bloomy\"\n",
            "conf/test.toml:4:1: filter.a.backend: \"bloomy\" is not bitmap, redisbloom or valkey-bloom",
        ),
        (
            "[filter.a]\nkind = \"expanding\"\ncapacity = 5\nschedule = \"daily\"\n",
            "conf/test.toml:4:1: filter.a.schedule: not a setting of an expanding filter (its settings: backend, capacity, error_rate, growth, kind, max_bits, max_block_bits, max_bytes, max_generations, shards, tightening)",
        ),
        (
            "[filter.a]\nkind = \"bloom\"\ncapacity = 5\nbackend = 1\n",
            "conf/test.toml:4:11: filter.a.backend: invalid type: integer `1`, expected a string",
        ),
    ];
    expect_errors(cases);
    // The same from a flag's text.
    let mut p = FilterParams::default();
    p.set("backend", "redisbloom").unwrap();
    assert_eq!(p.backend, Some(Backend::RedisBloom));
    let e = p.set("backend", "disk").unwrap_err();
    assert_eq!(
        e.to_string(),
        "backend: \"disk\" is not bitmap, redisbloom or valkey-bloom"
    );
}

#[test]
fn values_of_the_wrong_type_are_located_at_the_value() {
    let cases: &[(&str, &str)] = &[
        (
            "[filter.a]\nkind = \"circular\"\ngenerations = 3\ncapacity = 5\nlazy = \"yes\"\n",
            "conf/test.toml:5:8: filter.a.lazy: invalid type: string \"yes\", expected true or false",
        ),
        (
            "[filter.a]\nkind = \"bloom\"\ncapacity = 5\nerror_rate = \"1 in 100\"\n",
            "conf/test.toml:4:1: filter.a.error_rate: \"1 in 100\" is not a number",
        ),
        (
            "[filter.a]\nkind = \"bloom\"\ncapacity = 5\nerror_rate = [1]\n",
            "conf/test.toml:4:14: filter.a.error_rate: invalid type: sequence, expected a number (or a string like \"0.1%\")",
        ),
        (
            "[filter.a]\nkind = \"expanding\"\ncapacity = 5\nmax_bytes = true\n",
            "conf/test.toml:4:13: filter.a.max_bytes: invalid type: boolean `true`, expected an integer or a string like \"4GiB\"",
        ),
        (
            "[filter.a]\nkind = \"bloom\"\nbits = 1024\nhashes = 5000000000\n",
            "conf/test.toml:4:1: filter.a.hashes: 5000000000 is too large",
        ),
    ];
    expect_errors(cases);
    // A whole number where a float is expected is fine.
    let c = Config::parse(
        "[filter.g]\nkind = \"expanding\"\ncapacity = 10\ngrowth = 3\n",
        "x",
    )
    .unwrap();
    assert_eq!(c.filter("g").unwrap().params().growth, Some(3.0));
}

#[test]
fn unknown_keys_list_every_setting() {
    let e = err("[filter.a]\nkind = \"bloom\"\nbackends = \"bitmap\"\n");
    let listed: Vec<String> = settings()
        .iter()
        .map(|s| format!("`{}`", s.key()))
        .collect();
    assert_eq!(
        e,
        format!(
            "conf/test.toml:3:1: filter.a.backends: unknown field `backends`, expected one of {}",
            listed.join(", ")
        )
    );
    assert!(e.contains("`kind`, `capacity`, "), "{e}");
}

#[test]
fn the_first_mistake_in_the_file_is_reported() {
    // Filters are checked in file order, whatever their names.
    let text = "[filter.z]\nkind = \"bloom\"\ncapacity = -1\n\n[filter.a]\nkind = \"bloom\"\ncapacity = 0\n";
    assert_eq!(
        err(text),
        "conf/test.toml:3:1: filter.z.capacity: -1 is negative"
    );
    let text = "[filter.a]\nkind = \"bloom\"\ncapacty = 1\ncapacity = -1\n";
    assert_eq!(
        err(text).split(',').next().unwrap(),
        "conf/test.toml:3:1: filter.a.capacty: unknown field `capacty`"
    );
}

#[test]
fn flags_and_files_share_the_settings() {
    // Every setting can be given as text, the way a flag gives it.
    let mut p = FilterParams::default();
    for (key, value) in [
        ("kind", "circular"),
        ("capacity", "100"),
        ("error_rate", "0.001"),
        ("generations", "3"),
        ("mode", "insert-all-query-oldest"),
        ("schedule", "daily@03:00"),
        ("lazy", "true"),
        ("backend", "bitmap"),
        ("max_bits", "1048576"),
        ("max_block_bits", "65536"),
    ] {
        p.set(key, value).unwrap();
    }
    let from_text = p.validate("w").unwrap();
    let c = Config::parse(
        "[filter.w]\nkind = \"circular\"\ncapacity = 100\nerror_rate = 0.001\ngenerations = 3\n\
         mode = \"insert-all-query-oldest\"\nschedule = \"daily@03:00\"\nlazy = true\n\
         backend = \"bitmap\"\nmax_bits = 1048576\nmax_block_bits = 65536\n",
        "x",
    )
    .unwrap();
    assert_eq!(c.filter("w").unwrap().params(), from_text.params());
    assert_eq!(
        p.set("capacity", "lots").unwrap_err().to_string(),
        "capacity: \"lots\" is not a whole number"
    );
    assert!(p.set("capacityy", "1").unwrap_err().key.is_none());
}

#[test]
fn strings_are_read_as_people_write_them() {
    let words = Config::parse(
        "[filter.w]\nkind = \"circular\"\ncapacity = \"10M\"\nerror_rate = \"0.1%\"\n\
         generations = \"4\"\nschedule = \"monthly\"\nmax_bits = \"1e9\"\n",
        "x",
    )
    .unwrap();
    let numbers = Config::parse(
        "[filter.w]\nkind = \"circular\"\ncapacity = 10_000_000\nerror_rate = 0.001\n\
         generations = 4\nschedule = \"monthly:1@00:00\"\nmax_bits = 1_000_000_000\n",
        "x",
    )
    .unwrap();
    assert_eq!(
        words.filter("w").unwrap().params(),
        numbers.filter("w").unwrap().params()
    );
    let mut p = FilterParams::default();
    for (key, text, want) in [
        ("capacity", "1_000_000", 1_000_000u64),
        ("capacity", "1,000,000", 1_000_000),
        ("capacity", "1e6", 1_000_000),
        ("capacity", "2.5k", 2500),
        ("capacity", "10M", 10_000_000),
        ("bits", "1G", 1_000_000_000),
    ] {
        p.set(key, text).unwrap();
        let got = if key == "bits" { p.bits } else { p.capacity };
        assert_eq!(got, Some(want), "{text}");
    }
    for bad in ["1.5", "-1", "1e30", "10X", "M", "1e", ""] {
        assert!(p.set("capacity", bad).is_err(), "{bad:?} parsed");
    }
    p.set("error_rate", "0.1%").unwrap();
    assert_eq!(p.error_rate, Some(0.001));
    p.set("generations", "1e1").unwrap();
    assert_eq!(p.generations, Some(10));
    assert!(p.set("generations", "5G").is_err());
}
