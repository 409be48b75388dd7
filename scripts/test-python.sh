#!/usr/bin/env bash
# Build the Python wheel (debug: the tests need answers, not speed) into a
# venv of its own under target/, then run python/tests against private
# redis-server processes. Extra arguments go to pytest. Without any, the
# Scrapy tests (test_dupefilter.py, test_crawl.py) then run again against
# the oldest Scrapy supported, in a second venv
# (python/tests/constraints-scrapy-oldest.txt).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/ensure-redis.sh

# A fresh venv at $1, installing python3-venv first where Debian's python3
# comes without it (root or password-less sudo, as ensure-redis.sh does).
make_venv() {
    if python3 -m venv --clear "$1" 2>/dev/null; then
        return
    fi
    SUDO=()
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO=(sudo -n)
    fi
    if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || [ ${#SUDO[@]} -gt 0 ]; }; then
        echo "test-python: installing python3-venv with apt-get..." >&2
        ${SUDO[@]+"${SUDO[@]}"} apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive ${SUDO[@]+"${SUDO[@]}"} apt-get install -y -qq python3 python3-venv >/dev/null
    fi
    if ! python3 -m venv --clear "$1"; then
        echo "test-python: 'python3 -m venv' failed; install Python 3.9+ with venv support (Debian/Ubuntu: apt-get install python3-venv)" >&2
        exit 1
    fi
}

pip_quiet() {
    "$1/bin/pip" install --quiet --disable-pip-version-check "${@:2}"
}

venv="$root/target/py-venv"
if [ ! -f "$venv/.installed-v1" ]; then
    make_venv "$venv"
    pip_quiet "$venv" "maturin>=1.9.4,<2" pytest scrapy scrapy-redis scrapy-redis-bloomfilter redis
    touch "$venv/.installed-v1"
fi

oldest=()
if [ $# -eq 0 ]; then
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
        | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
    export ROTABLOOM_BIN="$target_dir/debug/rotabloom"
fi

rm -rf target/wheels/debug
(cd python && "$venv/bin/maturin" build ${locked[@]+"${locked[@]}"} --quiet -o "$root/target/wheels/debug")
for v in "$venv" ${oldest[@]+"${oldest[@]}"}; do
    pip_quiet "$v" --force-reinstall --no-deps target/wheels/debug/rotabloom-*.whl
done

cd python/tests
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
for v in ${oldest[@]+"${oldest[@]}"}; do
    echo "test-python: the Scrapy tests again, with $("$v/bin/python" -c 'import scrapy; print("Scrapy", scrapy.__version__)')"
    # The crawls that each use the dupefilter differently.
    "$v/bin/python" -m pytest -q -p no:cacheprovider test_dupefilter.py test_crawl.py \
        -k "not second_crawl and not two_processes"
done
