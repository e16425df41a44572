#!/usr/bin/env bash
# Set up and run the main job: how Llama-3-70B serves on H100s (memory, TTFT, TPOT, operators)
# and a capacity plan for a chat workload. `start.sh dashboard` opens the dashboard instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
if [ "${1:-}" = "dashboard" ]; then
  exec rooflens dashboard
fi
rooflens memory --model llama-3-70b --gpu h100-sxm --tp 4 --batch 32 --context 4096
rooflens predict --model llama-3-70b --gpu h100-sxm --tp 4 --batch 32 --prompt-len 2000 --output-len 300
