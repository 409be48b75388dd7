#!/usr/bin/env bash
# Make sure `redis-server` and `redis-cli` are available for the test suite,
# and `openssl`, with which the TLS tests make their certificates.
#
# Silent (exit 0) when both are already on PATH. Otherwise installs the Debian/
# Ubuntu `redis-server` package with apt-get when running as root or with
# password-less sudo; prints what to install and exits 1 when it cannot.
# The tests never use the system service the package may start on port 6379:
# they run private servers on free loopback ports.
set -euo pipefail

# REDIS_SERVER / REDIS_CLI override the binaries, as in tests/support/harness.rs.
have_redis() {
    local cli="${REDIS_CLI:-}"
    if [ -z "$cli" ] && [ -n "${REDIS_SERVER:-}" ] && [ -x "$(dirname "$REDIS_SERVER")/redis-cli" ]; then
        cli="$(dirname "$REDIS_SERVER")/redis-cli"
    fi
    command -v "${REDIS_SERVER:-redis-server}" >/dev/null 2>&1 &&
        command -v "${cli:-redis-cli}" >/dev/null 2>&1
}

have_all() {
    have_redis && command -v openssl >/dev/null 2>&1
}

if have_all; then
    exit 0
fi

cannot_install() {
    echo "ensure-redis: redis-server and redis-cli are needed to run the test suite (the tests start private Redis servers and a 3-node Redis Cluster on free loopback ports), but they are not on PATH and could not be installed automatically (${1}). Install Redis 6.2 or newer yourself, e.g. 'sudo apt-get install redis-server' (Debian/Ubuntu, also provides redis-cli), 'brew install redis' (macOS) or 'dnf install redis' (Fedora), or set the REDIS_SERVER and REDIS_CLI environment variables to the binaries' paths, then re-run." >&2
    exit 1
}

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
        SUDO=(sudo -n)
    else
        cannot_install "not root and no password-less sudo"
    fi
fi

if ! command -v apt-get >/dev/null 2>&1; then
    cannot_install "apt-get not available"
fi

echo "ensure-redis: installing redis-server and openssl with apt-get..." >&2

# Don't let the package's own service start (which may fail in containers
# without systemd, or when 6379 is taken) break the install: a policy-rc.d
# that denies service starts, removed afterwards if we created it.
POLICY=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$POLICY" ]; then
    if printf '#!/bin/sh\nexit 101\n' | ${SUDO[@]+"${SUDO[@]}"} tee "$POLICY" >/dev/null 2>&1; then
        created_policy=1
        ${SUDO[@]+"${SUDO[@]}"} chmod 755 "$POLICY" || true
    fi
fi
cleanup() {
    if [ "$created_policy" -eq 1 ]; then
        ${SUDO[@]+"${SUDO[@]}"} rm -f "$POLICY" || true
    fi
}
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
apt_opts=(-q -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
log="$(mktemp)"
trap 'cleanup; rm -f "$log"' EXIT

if ! ${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get -q update >"$log" 2>&1; then
    echo "ensure-redis: warning: apt-get update failed, trying the install anyway:" >&2
    tail -n 5 "$log" >&2 || true
fi
if ! ${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" \
    --no-install-recommends redis-server openssl >"$log" 2>&1; then
    # A failing post-install service start can leave the package half
    # configured; finish configuring it, and judge by the binaries below.
    ${SUDO[@]+"${SUDO[@]}"} env DEBIAN_FRONTEND=noninteractive dpkg --configure -a >>"$log" 2>&1 || true
fi

hash -r
if ! have_all; then
    tail -n 15 "$log" >&2 || true
    cannot_install "apt-get install redis-server openssl failed or did not provide redis-server, redis-cli and openssl"
fi
echo "ensure-redis: installed $(redis-server --version | head -n1)" >&2
