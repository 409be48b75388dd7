#!/usr/bin/env bash
# Build the Python wheel as users get it (scripts/wheel.sh: release,
# abi3, manylinux, audited), install it into a fresh venv, and run
# python/tests there against private redis-server processes, with no
# `cargo` or `rustc` on PATH: the wheel must work on a host without Rust.
# One build, release: the dev profile optimises dependencies too
# (opt-level 2) and adds debug info, so a debug wheel costs more to
# compile (from scratch on 2 cores, 2026-11-28: 431 s of CPU against 197 s
# for the release one), and would not be the one users get.
# Extra arguments go to pytest. Without any, the Scrapy tests
# (test_dupefilter.py, test_crawl.py) then run again against the oldest
# Scrapy supported, in a second venv
# (python/tests/constraints-scrapy-oldest.txt).
#
#   scripts/test-python.sh --prepare   the wheel and the test dependencies
#                                      only, no test; prints the wheel's
#                                      path, which runs given it in
#                                      ROTABLOOM_WHEEL then share, side by
#                                      side.
# ROTABLOOM_PY_VENV names the tests' venv (default target/py-venv), so that
# two runs side by side (Redis and Valkey) each have their own.
set -euo pipefail

prepare=0
if [ "${1:-}" = "--prepare" ]; then
    prepare=1
    shift
    # Its output is the wheel's path: whatever else is said goes to stderr.
    exec 3>&1 1>&2
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/ensure-redis.sh

# shellcheck source=lib/venv.sh
source "$root/scripts/lib/venv.sh"

# The test dependencies as wheels, fetched once: each run's fresh venv
# installs from here without the network.
deps=(pytest scrapy scrapy-redis scrapy-redis-bloomfilter redis)
wheelhouse="$root/target/py-wheelhouse"
house_marker="$wheelhouse/.fetched-$(printf '%s\n' "${deps[@]}" | cksum | cut -d' ' -f1)"
wheel="${ROTABLOOM_WHEEL:-$(bash scripts/wheel.sh)}"
if [ ! -f "$house_marker" ]; then
    "$root/target/py-build/bin/pip" wheel --quiet --disable-pip-version-check \
        -w "$wheelhouse" "${deps[@]}"
    touch "$house_marker"
fi

oldest=()
if [ $# -eq 0 ] || [ "$prepare" -eq 1 ]; then
    constraints="$root/python/tests/constraints-scrapy-oldest.txt"
    old_venv="$root/target/py-venv-scrapy-oldest"
    old_marker="$old_venv/.installed-$(cksum < "$constraints" | cut -d' ' -f1)"
    if [ ! -f "$old_marker" ]; then
        make_venv "$old_venv"
        pip_quiet "$old_venv" -c "$constraints" pytest scrapy scrapy-redis scrapy-redis-bloomfilter redis
        touch "$old_marker"
    fi
    oldest=("$old_venv")
fi

if [ "$prepare" -eq 1 ]; then
    echo "$wheel" >&3
    exit 0
fi

locked=()
if [ -f Cargo.lock ]; then
    locked=(--locked)
fi

# The sharded tests check what Python made with the command line: the
# binary in $ROTABLOOM_BIN (scripts/test.sh's, built with the Rust tests),
# else a build of its own.
if [ ! -x "${ROTABLOOM_BIN:-}" ]; then
    cargo build ${locked[@]+"${locked[@]}"} --quiet -p rotabloom-cli
    target_dir="$(cargo metadata ${locked[@]+"${locked[@]}"} --format-version 1 --no-deps \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
    export ROTABLOOM_BIN="$target_dir/debug/rotabloom"
fi

# From here on, no Rust: the venv, the install and the tests.
PATH="$(path_without_rust)"
export PATH
if command -v cargo >/dev/null 2>&1 || command -v rustc >/dev/null 2>&1; then
    echo "test-python: cargo or rustc is still on PATH ($PATH)" >&2
    exit 1
fi
export ROTABLOOM_TEST_NO_RUST=1

venv="${ROTABLOOM_PY_VENV:-$root/target/py-venv}"
make_venv "$venv"
pip_quiet "$venv" --no-index --find-links "$wheelhouse" "${deps[@]}" "$wheel"
for v in ${oldest[@]+"${oldest[@]}"}; do
    pip_quiet "$v" --force-reinstall --no-deps "$wheel"
done

cd python/tests
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
for v in ${oldest[@]+"${oldest[@]}"}; do
    echo "test-python: the Scrapy tests again, with $("$v/bin/python" -c 'import scrapy; print("Scrapy", scrapy.__version__)')"
    # The crawls that each use the dupefilter differently.
    "$v/bin/python" -m pytest -q -p no:cacheprovider test_dupefilter.py test_crawl.py \
        -k "not second_crawl and not two_processes"
done
