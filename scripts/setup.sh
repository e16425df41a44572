#!/usr/bin/env bash
# Create .venv and install rooflens. `setup.sh` installs the cost model, CLI and dashboard only
# (no torch, no GPU); `setup.sh --all` adds the validator (torch, triton) and test tools.
# torch: with none installed, --all takes the CPU build pinned below (small, no CUDA downloads).
# On a GPU machine install your CUDA build of torch first (README), and this script keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -d .venv ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip 2>/dev/null
if [ "${1:-}" = "--all" ]; then
  python -c "import torch" 2>/dev/null || python -m pip install -q "torch==2.13.0"
  python -m pip install -q -e ".[test,validate]"
else
  python -m pip install -q -e .
fi
