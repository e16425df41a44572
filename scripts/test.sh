#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run every check: ruff, mypy, then the whole pytest suite.
# GPU tests skip with a reason without CUDA; browser tests skip with a reason without Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --all
bash scripts/install-browser.sh || echo "note: Chromium not installed; browser tests will skip"
. .venv/bin/activate
ruff check .
ruff format --check .
mypy
python -m pytest "$@"
