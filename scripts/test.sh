#!/usr/bin/env bash
# Run the whole test suite (unit, integration, examples, benches, doctests)
# against real Redis. Extra arguments are passed to both `cargo test` runs,
# e.g. `scripts/test.sh -- --nocapture` or `scripts/test.sh --release`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/ensure-redis.sh

locked=()
if [ -f Cargo.lock ]; then
    locked=(--locked)
fi

# `--all-targets` does not run doctests, hence the second run.
cargo test ${locked[@]+"${locked[@]}"} --all-targets "$@"
cargo test ${locked[@]+"${locked[@]}"} --doc "$@"

# The examples assert their own claims: run each as a smoke test.
for example in demo monthly_recrawl capacity_growth cron_rotation async_crawler; do
    echo "==> example $example"
    cargo run ${locked[@]+"${locked[@]}"} --quiet --example "$example" >/dev/null
done

# The Python package and its Scrapy dupefilter (builds the wheel).
echo "==> python"
bash scripts/test-python.sh
