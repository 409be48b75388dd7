//! The valkey-bloom generation backend. No valkey-bloom server can be
//! installed on the project's machines, so it is tested against what
//! speaks the same BF.* commands: the RedisBloom module, loaded into the
//! same redis-server as the other tests. What sets valkey-bloom apart is
//! checked here: its own names in the metadata, no `BF.SCANDUMP` (never
//! mirrored, never dumped), its 128 MiB object limit, and its own words
//! when the module is missing.

#[path = "support/harness.rs"]
mod harness;
#[path = "support/redisbloom.rs"]
mod module;
#[path = "support/suite.rs"]
mod suite;
#[path = "support/venv.rs"]
mod venv;

use harness::RedisServer;
use rotabloom::{Backend, BloomFilter, CircularFilter, Error, ExpandingFilter};

fn server() -> RedisServer {
    RedisServer::start_with(&["--loadmodule", &module::module()])
}

fn meta(conn: &mut redis::Connection, name: &str, field: &str) -> Option<String> {
    redis::cmd("HGET")
        .arg(format!("rotabloom:{{{name}}}:meta"))
        .arg(field)
        .query(conn)
        .unwrap()
}

#[test]
fn a_valkey_bloom_filter_answers_counts_and_refuses_past_capacity() {
    let server = server();
    let mut conn = server.connection();
    let f = BloomFilter::builder("vb")
        .capacity(2_000)
        .error_rate(0.001)
        .backend(Backend::ValkeyBloom)
        .create_or_open(&mut conn)
        .unwrap();
    assert_eq!(
        meta(&mut conn, "vb", "backend").as_deref(),
        Some("valkey-bloom")
    );
    assert_eq!(
        meta(&mut conn, "vb", "gen.0.scheme").as_deref(),
        Some("valkey-bloom")
    );
    let uid = f.info(&mut conn).unwrap().fields["uid"].clone();
    let key = format!("rotabloom:{{vb}}:gen:{uid}-0:0");
    let ty: String = redis::cmd("TYPE").arg(&key).query(&mut conn).unwrap();
    assert_ne!(ty, "string", "a module's key, not a bitmap");
    assert!(f.check_and_insert(&mut conn, "a").unwrap());
    assert_eq!(
        f.check_and_insert_many(&mut conn, ["b", "a", "b"]).unwrap(),
        vec![true, false, false]
    );
    assert_eq!(
        f.contains_many(&mut conn, ["a", "b", "zz"]).unwrap(),
        vec![true, true, false]
    );
    // The module counts, and refuses the first item past capacity.
    let items: Vec<String> = (0..3_000).map(|i| format!("i{i}")).collect();
    let e = f.insert_many(&mut conn, &items).unwrap_err();
    assert!(matches!(e, Error::Full { .. }), "{e:?}");
    let card: u64 = redis::cmd("BF.CARD").arg(&key).query(&mut conn).unwrap();
    assert_eq!(card, 2_000);
    assert_eq!(f.count(&mut conn).unwrap(), 2_000);
    // Same backend or refused: never silently another.
    let e = BloomFilter::builder("vb")
        .capacity(2_000)
        .error_rate(0.001)
        .backend(Backend::RedisBloom)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(
        matches!(&e, Error::ParameterMismatch { field, .. } if field == "backend"),
        "{e}"
    );
    assert!(f.drop(&mut conn).unwrap());
    assert!(suite::keys_of(&mut conn, "vb").is_empty());
}

#[test]
fn frozen_valkey_bloom_generations_are_never_mirrored_nor_dumped() {
    let server = server();
    let mut conn = server.connection();
    let f = CircularFilter::builder("vbc")
        .generations(4)
        .capacity(1_000)
        .error_rate(0.01)
        .backend(Backend::ValkeyBloom)
        .create_or_open(&mut conn)
        .unwrap();
    let mut inserted = Vec::new();
    for g in 0..3 {
        let batch: Vec<String> = (0..200).map(|i| format!("g{g}-{i}")).collect();
        f.insert_many(&mut conn, &batch).unwrap();
        f.rotate(&mut conn).unwrap();
        inserted.extend(batch);
    }
    let cached = CircularFilter::open(&mut conn, "vbc")
        .unwrap()
        .with_frozen_cache(64 << 20);
    let dumps = harness::command_calls(&mut conn, "bf.scandump");
    let found = cached.contains_many(&mut conn, &inserted).unwrap();
    assert!(
        found.iter().all(|&b| b),
        "every item of a frozen generation"
    );
    assert_eq!(
        harness::command_calls(&mut conn, "bf.scandump"),
        dumps,
        "valkey-bloom has no BF.SCANDUMP: the server answers"
    );
    let mut out = Vec::new();
    let e = rotabloom::dump::dump(&mut conn, "vbc", &mut out).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::InvalidParameter {
                name: "backend",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("cannot be dumped"), "{e}");
    assert!(out.is_empty(), "nothing written");
}

#[test]
fn a_generation_past_the_object_limit_is_refused_before_the_server_is_asked() {
    let server = server();
    let mut conn = server.connection();
    // 100 million items at 0.1%: about 171 MiB in one object.
    let e = BloomFilter::builder("big")
        .capacity(100_000_000)
        .error_rate(0.001)
        .backend(Backend::ValkeyBloom)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(
        matches!(
            &e,
            Error::InvalidParameter {
                name: "backend",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("128 MiB"), "{e}");
    assert!(suite::keys_of(&mut conn, "big").is_empty());
    // RedisBloom sets no such limit of its own: the same sizing is made.
    let e = ExpandingFilter::builder("grow")
        .capacity(100_000_000)
        .error_rate(0.001)
        .backend(Backend::ValkeyBloom)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(e.to_string().contains("128 MiB"), "{e}");
    // Just under the limit is made.
    let f = BloomFilter::builder("under")
        .capacity(70_000_000)
        .error_rate(0.001)
        .backend(Backend::ValkeyBloom)
        .create_or_open(&mut conn)
        .unwrap();
    assert!(f.check_and_insert(&mut conn, "x").unwrap());
    assert!(f.drop(&mut conn).unwrap());
}

#[test]
fn without_the_module_the_error_names_valkey_bloom() {
    let plain = RedisServer::start();
    let mut conn = plain.connection();
    let e = BloomFilter::builder("vb")
        .capacity(1000)
        .backend(Backend::ValkeyBloom)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(
        matches!(&e, Error::ModuleMissing { needs, .. } if needs.contains("valkey-bloom")),
        "{e}"
    );
    assert!(
        suite::keys_of(&mut conn, "vb").is_empty(),
        "nothing was created"
    );
}
