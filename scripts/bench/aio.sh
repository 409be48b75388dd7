#!/usr/bin/env bash
# Items per second of check_and_insert_many in batches of 1,000: the
# blocking Python class, rotabloom.aio and the Rust async API, in one run
# on one private redis-server (scripts/bench/aio_batches.py). Run by
#     scripts/bench.sh --aio [--items N] [--runs N]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

bash scripts/ensure-redis.sh
# shellcheck source=../lib/venv.sh
source "$root/scripts/lib/venv.sh"

wheel="$(bash scripts/wheel.sh)"
venv="$root/target/bench/aio-venv"
if [ ! -f "$venv/.installed-v1" ]; then
    make_venv "$venv"
    pip_quiet "$venv" redis
    touch "$venv/.installed-v1"
fi
pip_quiet "$venv" --force-reinstall --no-deps "$wheel"

locked=()
if [ -f Cargo.lock ]; then
    locked=(--locked)
fi
cargo build ${locked[@]+"${locked[@]}"} --release --quiet --example async_batches
rust="${CARGO_TARGET_DIR:-$root/target}/release/examples/async_batches"

"$venv/bin/python" scripts/bench/aio_batches.py --rust "$rust" "$@"
