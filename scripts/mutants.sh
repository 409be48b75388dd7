#!/usr/bin/env bash
# Shows that the model-based test (cli/tests/model) bites: each patch in
# scripts/mutants/ reintroduces one defect the model must catch; this
# applies them one at a time to a scratch copy of HEAD, runs the model's
# fixed seeds, and prints which property caught each (or that one was
# missed, exit 1). The patches are against the code of the commit that
# added them: regenerate one when the code it touches moves.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/ensure-redis.sh

scratch="$(mktemp -d)"
trap 'git -C "$root" worktree remove --force "$scratch/wt" >/dev/null 2>&1 || true; rm -rf "$scratch"' EXIT
git worktree add --detach --quiet "$scratch/wt" HEAD
# A target directory of the mutants' own, kept between runs (dependencies
# are built once). Not the checkout's: a mutant's build would overwrite
# target/debug/rotabloom, the binary the checkout's tests run, and the
# checkout's next build, its sources unchanged, would not replace it.
export CARGO_TARGET_DIR="$root/target/mutants"

missed=0
for patch in "$root"/scripts/mutants/*.patch; do
    name="$(basename "$patch" .patch)"
    (cd "$scratch/wt" && git checkout --quiet -- . && git apply "$patch")
    log="$scratch/$name.log"
    if (cd "$scratch/wt" && ROTABLOOM_MODEL_NO_SHRINK=1 ROTABLOOM_MODEL_FIXED_ONLY=1 \
        cargo test --quiet -p rotabloom-cli --test model sequences -- --nocapture) >"$log" 2>&1; then
        echo "MISSED  $name"
        missed=1
    else
        caught="$(grep -m1 -E '^model: seed [0-9]+ failed at step' "$log" || grep -m1 -E 'error(\[|:)' "$log" || echo '(see log)')"
        echo "caught  $name: $caught"
    fi
done
exit "$missed"
