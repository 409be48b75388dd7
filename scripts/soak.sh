#!/usr/bin/env bash
# A long run of the model-based test (cli/tests/model): random seeds for
# MINUTES minutes (default 30), each sequence checked after every step. A
# failure prints its seed and the sequence shrunk to a few steps, as Rust
# to paste into a regression test. CI runs the fixed seeds and one random
# seed only. `--cluster` runs the cluster model (sharded filters on a local
# 3-master Redis Cluster) instead, printing every failing seed and going
# on until the time is up.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cluster=0
if [ "${1:-}" = "--cluster" ]; then
    cluster=1
    shift
fi
minutes="${1:-30}"
case "$minutes" in
    '' | *[!0-9]* | 0) echo "usage: scripts/soak.sh [--cluster] [MINUTES]" >&2; exit 2 ;;
esac
bash scripts/ensure-redis.sh
if [ "$cluster" = 1 ]; then
    # The Python clients' interpreter, with the wheel of this checkout.
    ROTABLOOM_MODEL_PYTHON="$(bash scripts/model-python.sh)"
    export ROTABLOOM_MODEL_PYTHON
    ROTABLOOM_MODEL_CLUSTER_MINUTES="$minutes" cargo test -p rotabloom-cli --test model cluster_sequences -- --nocapture
else
    ROTABLOOM_MODEL_MINUTES="$minutes" cargo test -p rotabloom-cli --test model -- --exact sequences_hold_every_property --nocapture
fi
