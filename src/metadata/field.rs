//! Every field name of the metadata hash, spelled once. The Lua scripts
//! spell the few they read themselves; a unit test checks that each name a
//! script quotes is one of these.

pub const FORMAT: &str = "format";
pub const KIND: &str = "kind";
pub const UID: &str = "uid";
pub const EPOCH: &str = "epoch";
pub const CREATED_AT: &str = "created_at";
pub const NEXT_SEQ: &str = "next_seq";
pub const GENS: &str = "gens";
pub const CLEARED: &str = "cleared";

// Kind parameters and state (which kind uses which is each kind's business).
pub const SIZING: &str = "sizing";
pub const CAPACITY: &str = "capacity";
pub const ERROR_RATE: &str = "error_rate";
pub const BITS: &str = "bits";
pub const HASHES: &str = "hashes";
pub const BACKEND: &str = "backend";
pub const GROWTH: &str = "growth";
pub const TIGHTENING: &str = "tightening";
pub const MAX_GENERATIONS: &str = "max_generations";
pub const MAX_BYTES: &str = "max_bytes";
pub const MAX_BITS: &str = "max_bits";
pub const MAX_BLOCK_BITS: &str = "max_block_bits";
pub const LEGACY_GENS: &str = "legacy_gens";
/// The key (or key prefix) an adopted legacy generation came from; stored,
/// compared when adopting again, never checked on load.
pub const LEGACY_SOURCE: &str = "legacy_source";
pub const GENERATIONS: &str = "generations";
pub const MODE: &str = "mode";
pub const SCHEDULE: &str = "schedule";
pub const LAZY: &str = "lazy";
pub const PERIOD: &str = "period";
pub const DUE_AT: &str = "due_at";

/// The fields of one generation, `gen.<seq>.<what>`.
pub const G_BITS: &str = "bits";
pub const G_HASHES: &str = "hashes";
pub const G_BLOCKS: &str = "blocks";
pub const G_SCHEME: &str = "scheme";
pub const G_CAPACITY: &str = "capacity";
pub const G_COUNT: &str = "count";
pub const G_CREATED_AT: &str = "created_at";

/// Every field of a generation (the roll script spells them itself).
#[cfg(test)]
pub const GENERATION_FIELDS: [&str; 7] = [
    G_BITS,
    G_HASHES,
    G_BLOCKS,
    G_SCHEME,
    G_CAPACITY,
    G_COUNT,
    G_CREATED_AT,
];

/// `gen.<seq>.<what>`.
pub fn gen(seq: u64, what: &str) -> String {
    format!("gen.{seq}.{what}")
}

/// Every filter-level name above, for the spelling test.
#[cfg(test)]
pub const ALL: &[&str] = &[
    FORMAT,
    KIND,
    UID,
    EPOCH,
    CREATED_AT,
    NEXT_SEQ,
    GENS,
    CLEARED,
    SIZING,
    CAPACITY,
    ERROR_RATE,
    BITS,
    HASHES,
    BACKEND,
    GROWTH,
    TIGHTENING,
    MAX_GENERATIONS,
    MAX_BYTES,
    MAX_BITS,
    MAX_BLOCK_BITS,
    LEGACY_GENS,
    LEGACY_SOURCE,
    GENERATIONS,
    MODE,
    SCHEDULE,
    LAZY,
    PERIOD,
    DUE_AT,
];

#[cfg(test)]
mod tests {
    /// Each quoted name a script reads or writes in the metadata hash is a
    /// field spelled here (or a generation field built as `'gen.' .. seq
    /// .. '.<what>'`).
    #[test]
    fn lua_and_rust_spell_the_fields_alike() {
        let scripts = crate::scripts::ALL;
        let mut checked = 0;
        let on_roots = |s: &&crate::scripts::LuaScript| {
            crate::scripts::ROOT.iter().any(|r| std::ptr::eq(*r, *s))
        };
        for s in scripts.iter().filter(|s| !on_roots(s)) {
            // A field name appears in a script as '<name>' next to HGET,
            // HMGET, HSET, HDEL or HINCRBY on the metadata hash; the scripts
            // quote nothing else in lower-case snake case but commands
            // (upper case), reply words (upper case) and type names.
            for quoted in s.source.split('\'').skip(1).step_by(2) {
                let is_name = !quoted.is_empty()
                    && quoted
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'.');
                let not_a_field = [
                    "none",
                    "hash",
                    "string",
                    "created",
                    "exists",
                    "wrongtype",
                    "badsource",
                    "module",
                    "number",
                    "table",
                    "taken",
                    "gone",
                    "bytes",
                    "ok",
                    "bf",
                    "u1",
                    "has",
                    "cai",
                    "add",
                    "q",
                    "d",
                    "w",
                    "l",
                ];
                if !is_name || not_a_field.contains(&quoted) {
                    continue;
                }
                let field = quoted.trim_start_matches('.').trim_end_matches('.');
                if field.is_empty() {
                    continue;
                }
                let known = super::ALL.contains(&field)
                    || super::GENERATION_FIELDS.contains(&field)
                    || field == "gen";
                assert!(
                    known,
                    "script quotes {quoted:?}, which is no field name of metadata::field"
                );
                checked += 1;
            }
        }
        assert!(
            checked >= 5,
            "the test found only {checked} field names in the scripts"
        );
    }
}
