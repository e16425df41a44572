#!/usr/bin/env bash
# Create .venv and install rooflens with its test and validator extras.
# torch: on a machine with no torch yet this installs the CPU build pinned below (small, no CUDA
# downloads). On a GPU machine, install your CUDA build of torch first (see README), and this
# script keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -d .venv ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip >/dev/null
python -c "import torch" 2>/dev/null || python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[test,validate]"
