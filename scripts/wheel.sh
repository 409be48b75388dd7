#!/usr/bin/env bash
# Builds rotabloom's Python wheel (release) into target/wheels/release and
# prints its path: one abi3 wheel for every CPython from 3.9, stripped,
# tagged manylinux (WHEEL_COMPATIBILITY, default manylinux_2_34: Rust's
# standard library built against a glibc of 2.34 or later asks for
# GLIBC_2.34 symbols, so a lower tag needs an older glibc to build on).
# maturin's own audit checks the tag: no glibc symbol newer than it, no
# shared library outside its policy; it fails rather than tag a wheel that
# would not load.
# The wheel installs with pip alone, no Rust:
#   pip install target/wheels/release/rotabloom-*.whl
# Extra arguments go to `maturin build`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=lib/venv.sh
source "$root/scripts/lib/venv.sh"

tools="$root/target/py-build"
if [ ! -f "$tools/.installed-v1" ]; then
    make_venv "$tools" >&2
    pip_quiet "$tools" "maturin>=1.9.4,<2" >&2
    touch "$tools/.installed-v1"
fi

locked=()
if [ -f Cargo.lock ]; then
    locked=(--locked)
fi

# Built aside, then renamed into place: a script installing the previous
# wheel meanwhile never sees a missing or half-written file.
out="$root/target/wheels/release"
mkdir -p "$out"
tmp="$(mktemp -d "$root/target/wheels/build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
(cd python && "$tools/bin/maturin" build ${locked[@]+"${locked[@]}"} --release --strip --quiet \
    --compatibility "${WHEEL_COMPATIBILITY:-manylinux_2_34}" -o "$tmp" "$@") >&2
built=("$tmp"/rotabloom-*.whl)
if [ "${#built[@]}" -ne 1 ] || [ ! -f "${built[0]}" ]; then
    echo "wheel: expected one wheel in $tmp, found: ${built[*]}" >&2
    exit 1
fi
mv -f "${built[0]}" "$out/"
echo "$out/$(basename "${built[0]}")"
