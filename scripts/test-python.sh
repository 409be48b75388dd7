#!/usr/bin/env bash
# Build the Python wheel (debug: the tests need answers, not speed) into a
# venv of its own under target/, then run python/tests against private
# redis-server processes. Extra arguments go to pytest.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/ensure-redis.sh

venv="$root/target/py-venv"
marker="$venv/.installed-v1"
if [ ! -f "$marker" ]; then
    if ! python3 -m venv --clear "$venv" 2>/dev/null; then
        # Debian's python3 comes without venv: install it the way
        # ensure-redis.sh installs redis-server (root or password-less sudo).
        SUDO=()
        if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            SUDO=(sudo -n)
        fi
        if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || [ ${#SUDO[@]} -gt 0 ]; }; then
            echo "test-python: installing python3-venv with apt-get..." >&2
            ${SUDO[@]+"${SUDO[@]}"} apt-get update -qq >/dev/null
            DEBIAN_FRONTEND=noninteractive ${SUDO[@]+"${SUDO[@]}"} apt-get install -y -qq python3 python3-venv >/dev/null
        fi
        if ! python3 -m venv --clear "$venv"; then
            echo "test-python: 'python3 -m venv' failed; install Python 3.9+ with venv support (Debian/Ubuntu: apt-get install python3-venv)" >&2
            exit 1
        fi
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        "maturin>=1.9.4,<2" pytest scrapy scrapy-redis scrapy-redis-bloomfilter redis
    touch "$marker"
fi

locked=()
if [ -f Cargo.lock ]; then
    locked=(--locked)
fi

rm -rf target/wheels/debug
(cd python && "$venv/bin/maturin" build ${locked[@]+"${locked[@]}"} --quiet -o "$root/target/wheels/debug")
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps \
    target/wheels/debug/rotabloom-*.whl

cd python/tests
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
