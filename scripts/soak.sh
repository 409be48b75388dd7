#!/usr/bin/env bash
# A long run of the model-based test (cli/tests/model): random seeds for
# MINUTES minutes (default 30), each sequence checked after every step. A
# failure prints its seed and the sequence shrunk to a few steps, as Rust
# to paste into a regression test. CI runs the fixed seeds and one random
# seed only.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
minutes="${1:-30}"
case "$minutes" in
    '' | *[!0-9]*) echo "usage: scripts/soak.sh [MINUTES]" >&2; exit 2 ;;
esac
bash scripts/ensure-redis.sh
ROTABLOOM_MODEL_MINUTES="$minutes" cargo test -p rotabloom-cli --test model sequences -- --nocapture
