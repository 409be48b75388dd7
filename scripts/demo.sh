#!/usr/bin/env bash
# The demo: de-duplicates a URL stream against a private redis-server that
# the example starts on a free loopback port (and stops when it is done).
# Installs redis-server from the OS packages first if it is missing.
# Usage: scripts/demo.sh [EXAMPLE]   (default: demo; others: monthly_recrawl,
#        capacity_growth, cron_rotation, async_crawler)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/ensure-redis.sh
example="${1:-demo}"
exec cargo run --quiet --release --example "$example"
