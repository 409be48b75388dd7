//! The Lua scripts, and building the commands that call them. Pure.

use redis::Cmd;
use std::sync::OnceLock;

/// A server-side script, called by SHA1 and re-sent in full when the server
/// has lost it (restart, failover, `SCRIPT FLUSH`).
pub(crate) struct LuaScript {
    pub source: &'static str,
    sha: OnceLock<String>,
}

impl LuaScript {
    const fn new(source: &'static str) -> LuaScript {
        LuaScript {
            source,
            sha: OnceLock::new(),
        }
    }

    pub fn sha(&self) -> &str {
        self.sha
            .get_or_init(|| redis::Script::new(self.source).get_hash().to_string())
    }

    /// `EVALSHA sha numkeys keys... args...`, with the args left for the
    /// caller to append.
    pub fn invoke<K: AsRef<str>>(&self, keys: &[K]) -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.sha()).arg(keys.len());
        for k in keys {
            cmd.arg(k.as_ref());
        }
        cmd
    }

    /// The same call as `evalsha`, as `EVAL` with the full source.
    pub fn as_eval(&self, evalsha: &Cmd) -> Cmd {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(self.source);
        for a in evalsha.args_iter().skip(2) {
            if let redis::Arg::Simple(bytes) = a {
                cmd.arg(bytes);
            }
        }
        cmd
    }
}

/// The shared prelude prepended to the scripts that change a filter (Redis
/// has no script libraries before 7.0's functions, which need a deploy step).
macro_rules! with_prelude {
    ($file:literal) => {
        concat!(include_str!("lua/prelude.lua"), include_str!($file))
    };
}

/// The stores' pieces of the scripts, each kept in its store's room
/// (`src/store/`), put before a script that makes, empties or uses a
/// generation: the scripts name no backend, they call what these define.
/// Included by path, not imported: the scripts depend on no store's code.
macro_rules! with_stores {
    ($($part:expr),+) => {
        concat!(include_str!("store/bf/dialect.lua"), $($part),+)
    };
}

pub(crate) static LOAD: LuaScript = LuaScript::new(include_str!("lua/load.lua"));
pub(crate) static DATA: LuaScript = LuaScript::new(with_stores!(with_prelude!("lua/data.lua")));
pub(crate) static CREATE: LuaScript = LuaScript::new(include_str!("lua/create.lua"));
pub(crate) static CLEAR: LuaScript = LuaScript::new(with_prelude!("lua/clear.lua"));
pub(crate) static ZERO: LuaScript = LuaScript::new(with_stores!(with_prelude!("lua/zero.lua")));
pub(crate) static DROP: LuaScript = LuaScript::new(with_prelude!("lua/drop.lua"));
pub(crate) static ROLL: LuaScript = LuaScript::new(with_prelude!("lua/roll.lua"));
pub(crate) static GUARD: LuaScript = LuaScript::new(with_prelude!("lua/guard.lua"));
pub(crate) static COMMIT: LuaScript = LuaScript::new(with_prelude!("lua/commit.lua"));
pub(crate) static SETTLE: LuaScript = LuaScript::new(with_prelude!("lua/settle.lua"));
pub(crate) static PREALLOC: LuaScript =
    LuaScript::new(with_stores!(include_str!("lua/prealloc.lua")));
pub(crate) static ALLOC_NEW: LuaScript =
    LuaScript::new(with_stores!(include_str!("lua/alloc_new.lua")));
pub(crate) static DROP_UNREADABLE: LuaScript =
    LuaScript::new(include_str!("lua/drop_unreadable.lua"));
pub(crate) static RESTORE: LuaScript = LuaScript::new(include_str!("lua/restore.lua"));
pub(crate) static RESTORE_WRITE: LuaScript = LuaScript::new(include_str!("lua/restore_write.lua"));
pub(crate) static SWEEP: LuaScript = LuaScript::new(include_str!("lua/sweep.lua"));
pub(crate) static ROOT_CLAIM: LuaScript = LuaScript::new(include_str!("lua/root_claim.lua"));
pub(crate) static ROOT_MOVE: LuaScript = LuaScript::new(include_str!("lua/root_move.lua"));
pub(crate) static ROOT_TARGET: LuaScript = LuaScript::new(include_str!("lua/root_target.lua"));
pub(crate) static FIND_SHARDS: LuaScript = LuaScript::new(include_str!("lua/find_shards.lua"));

/// The scripts on a sharded filter's root record (§11), which is no
/// filter's metadata hash.
#[cfg(test)]
pub(crate) static ROOT: [&LuaScript; 3] = [&ROOT_CLAIM, &ROOT_MOVE, &ROOT_TARGET];

/// Every script: tests go over all of them, and an error names the
/// command of the line it points to ([`command_at`]).
pub(crate) static ALL: [&LuaScript; 20] = [
    &LOAD,
    &DATA,
    &CREATE,
    &CLEAR,
    &ZERO,
    &DROP,
    &ROLL,
    &GUARD,
    &COMMIT,
    &SETTLE,
    &PREALLOC,
    &RESTORE,
    &RESTORE_WRITE,
    &ALLOC_NEW,
    &DROP_UNREADABLE,
    &SWEEP,
    &ROOT_CLAIM,
    &ROOT_MOVE,
    &ROOT_TARGET,
    &FIND_SHARDS,
];

/// The Redis command a script calls on `line` (1-based, as an error's
/// `@user_script:LINE` counts), for the script whose SHA1 is `sha`.
pub(crate) fn command_at(sha: &str, line: usize) -> Option<String> {
    let script = ALL.iter().find(|s| s.sha() == sha)?;
    let text = script.source.lines().nth(line.checked_sub(1)?)?;
    let call = text
        .split("redis.call(")
        .nth(1)
        .or_else(|| text.split("redis.pcall(").nth(1))?;
    let name = call.trim_start().strip_prefix('\'')?.split('\'').next()?;
    Some(name.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_line_names_the_command_it_calls() {
        let line = |script: &LuaScript, needle: &str| {
            1 + script
                .source
                .lines()
                .position(|l| l.contains(needle))
                .unwrap()
        };
        let scan = line(&SWEEP, "redis.call('SCAN'");
        assert_eq!(command_at(SWEEP.sha(), scan).as_deref(), Some("scan"));
        // Line numbers count the prelude of the scripts that have one.
        let rpush = line(&DROP, "redis.call('RPUSH'");
        assert!(rpush > include_str!("lua/prelude.lua").lines().count());
        // And the stores' pieces, for the scripts that have them.
        let card = line(&DATA, "redis.call('BF.CARD'");
        assert_eq!(command_at(DATA.sha(), card).as_deref(), Some("bf.card"));
        assert_eq!(command_at(DROP.sha(), rpush).as_deref(), Some("rpush"));
        assert_eq!(command_at(DROP.sha(), 1), None);
        assert_eq!(command_at(&"0".repeat(40), scan), None);
    }

    #[test]
    fn eval_form_carries_the_same_arguments() {
        let mut c = DROP.invoke(&["k1", "k2"]);
        c.arg("uid").arg(3);
        let e = DROP.as_eval(&c);
        let args: Vec<Vec<u8>> = e
            .args_iter()
            .filter_map(|a| match a {
                redis::Arg::Simple(b) => Some(b.to_vec()),
                _ => None,
            })
            .collect();
        assert_eq!(args[0], b"EVAL");
        assert_eq!(args[1], DROP.source.as_bytes());
        assert_eq!(
            &args[2..],
            &[
                b"2".to_vec(),
                b"k1".to_vec(),
                b"k2".to_vec(),
                b"uid".to_vec(),
                b"3".to_vec()
            ]
        );
        assert_eq!(DROP.sha().len(), 40);
    }
}
