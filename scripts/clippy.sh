#!/usr/bin/env bash
# clippy, warnings as errors: every target, then the library with each of
# its optional parts off (it must build, warning-free, without them).
set -euo pipefail

cd "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

locked=()
if [ -f Cargo.lock ]; then
    locked=(--locked)
fi
cargo clippy ${locked[@]+"${locked[@]}"} --all-targets -- -D warnings
for features in "" async cluster; do
    echo "==> cargo clippy -p rotabloom --no-default-features --features '$features'"
    cargo clippy ${locked[@]+"${locked[@]}"} -p rotabloom --no-default-features --features "$features" -- -D warnings
done
