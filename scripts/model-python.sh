#!/usr/bin/env bash
# Builds the Python wheel (scripts/wheel.sh), installs it into a venv of
# its own (target/py-model-venv) and prints that venv's python: the
# interpreter of the cluster model's Python clients
# (cli/tests/model/cluster/python.rs reads it from ROTABLOOM_MODEL_PYTHON).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=lib/venv.sh
source "$root/scripts/lib/venv.sh"
wheel="$(bash scripts/wheel.sh)"
venv="$root/target/py-model-venv"
make_venv "$venv" >&2
pip_quiet "$venv" --no-deps "$wheel" >&2
echo "$venv/bin/python"
