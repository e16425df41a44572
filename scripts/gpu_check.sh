#!/usr/bin/env bash
# Every GPU check rooflens has, in one command, in at most 8 minutes on one H100 or H200
# (issue 25). Run from the repository root of a checkout whose python has the CUDA builds of
# torch and triton (on the lent GPU machines: their python3, torch 2.11 / triton 3.6):
#
#   bash scripts/gpu_check.sh              # on the GPU
#   bash scripts/gpu_check.sh --dry-run    # the same steps on the CPU, tiny shapes, < 1 minute
#
# Python packages needed beyond torch and triton. The GPU machines reach no package index and
# lack the first seven: carry them as wheels (cp312, manylinux x86_64) and install them with
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
#   export PYTHONPATH=/tmp/site
# before running this script (docs/validation.md, "One command on a GPU"):
#   pydantic==2.14.4  pydantic-core==2.50.5  annotated-types==0.8.0  typing-inspection==0.4.5
#   typing-extensions==4.16.0 (>= 4.14)  narwhals==2.29.0  plotly==7.1.0
#   numpy  pandas  pyarrow  pyyaml  rich  pytest  hypothesis   (already on the GPU machines)
# (the versions this checkout is tested with; fetch them with
#  pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
#  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl NAME==VERSION ...)
#
# Steps, in order, each with its own time budget (seconds, GPU run) and skipped with a line
# when the 480 s budget is gone. The budgets are sized from the first lent run (H200, cold
# Triton cache, 2026-11-27: every step ran out of the budgets then given it), and each step
# keeps what it measured when its budget stops it:
#   1 provenance  15   device, driver, CUDA, torch, triton, commit, date
#   2 pytest      60   pytest -m gpu (every GPU test against its torch reference), on 8
#                      workers where pytest-xdist is installed: Triton's compiles dominate
#   3 suite      100   rooflens validate run --device cuda --quick (graph-timed kernels and
#                      baselines; decode through the paged and contiguous kernels and SDPA,
#                      with fp8 KV on compute capability >= 8.9, where each bf16 GEMM shape
#                      also runs as a W8A8 FP8 GEMM, torch._scaled_mm); a stopped run keeps its rows
#                      in quick-unfinished.csv, which the summary then reads
#   4 e2e     90+120   rooflens validate e2e, Llama-3-8B random weights, eager then --compile,
#                      batch {1,8,32,128} x context {1k,4k}, 4 of 32 layers (scaled); a stopped
#                      run writes the scenarios that finished
#   5 speed       80   python -m benchmarks.kernels, one kernel per call merged into the stored
#                      table (v2 and v1 kernels beside torch, targets), 5 shapes per kernel;
#                      the kernels no run has measured on this GPU go first, and rows of
#                      kernels not reached stay from the earlier run their provenance names
#   6 summary     15   one page: accuracy per operator class and e2e phase, speed vs target
# Results: src/rooflens/validate/results/<gpu>/ (the suite's run, gpu-check-<stamp>/ with logs
# and summary.md), src/rooflens/validate/results/e2e/<gpu>/ (the two e2e runs) and
# benchmarks/results/<gpu>/ (kernels.csv, kernels.md), provenance columns on every row; with
# $OUT set, a copy there (gpu_check-<gpu>.tar.gz and summary.md).
# The dry run writes under a temporary folder (or $GPU_CHECK_ROOT) and never into the tree.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 2
PY="${PYTHON:-python3}"
DRY=0
case "${1:-}" in
  --dry-run) DRY=1 ;;
  "") ;;
  *) echo "usage: bash scripts/gpu_check.sh [--dry-run]" >&2; exit 2 ;;
esac
export PYTHONPATH="$ROOT/src:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

missing="$("$PY" - <<'EOF'
import importlib, importlib.metadata as md
need = ["pydantic", "pydantic_core", "annotated_types", "typing_inspection", "typing_extensions",
        "narwhals", "plotly", "numpy", "pandas", "pyarrow", "yaml", "rich", "pytest",
        "hypothesis", "torch", "triton"]
gone = []
for name in need:
    try:
        importlib.import_module(name)
    except Exception:
        gone.append(name.replace("_", "-").replace("yaml", "pyyaml"))
try:
    major, minor = (int(p) for p in md.version("typing_extensions").split(".")[:2])
    if (major, minor) < (4, 14):
        gone.append("typing-extensions>=4.14")
except md.PackageNotFoundError:
    pass
print(" ".join(gone))
EOF
)"
if [ -n "$missing" ]; then
  echo "error: missing python packages: $missing (carry their wheels; see this script's header)" >&2
  exit 2
fi

TOTAL=480
if [ "$DRY" = 1 ]; then
  export TRITON_INTERPRET=1
  TOTAL=400  # under a minute on an idle CPU; the slack keeps a loaded CI machine from skipping
  BASE="${GPU_CHECK_ROOT:-$(mktemp -d)}"
  GPU=cpu
  VAL_ROOT="$BASE/validate"
  BENCH_ROOT="$BASE/benchmarks"
else
  GPU="$("$PY" -c 'import torch
from rooflens.validate.runner import gpu_preset_for
print(gpu_preset_for(torch.cuda.get_device_name()) if torch.cuda.is_available() else "")' 2>/dev/null)"
  if [ -z "$GPU" ]; then
    echo "error: no CUDA GPU with a rooflens preset found (torch sees none, or the name is unknown); use --dry-run on a CPU" >&2
    exit 2
  fi
  VAL_ROOT="$ROOT/src/rooflens/validate/results"
  BENCH_ROOT="$ROOT/benchmarks/results"
fi
STAMP="$(date -u +%Y%m%dT%H%M%SZ)"
LOGS="$VAL_ROOT/$GPU/gpu-check-$STAMP"
mkdir -p "$LOGS"
STEPS="$LOGS/steps.txt"
touch "$LOGS/.start"  # result files older than this belong to earlier runs
START=$SECONDS
echo "gpu_check: $GPU, logs in $LOGS" | tee "$STEPS"

# run NAME BUDGET_S CMD...: the step with min(budget, time left), or a skip line.
run() {
  local name="$1" budget="$2"; shift 2
  local left=$((TOTAL - (SECONDS - START)))
  if [ "$left" -lt 10 ]; then
    echo "step $name: skipped, the ${TOTAL} s budget is gone" | tee -a "$STEPS"; return 0
  fi
  [ "$budget" -gt "$left" ] && budget=$left
  local t0=$SECONDS rc
  echo "== step $name (budget ${budget} s)"
  if [ "$(type -t "$1")" = function ]; then  # a step written as a function of this script
    set -- bash -c "$(declare -f "$1"); PY='$PY'; $1 \"\$@\"" "$@"
  fi
  timeout --signal=INT --kill-after=10 "$budget" "$@" > >(tee "$LOGS/$name.log") 2>&1
  rc=$?
  local status=ok
  [ "$rc" = 124 ] && status="stopped at its ${budget} s budget"
  [ "$rc" != 0 ] && [ "$rc" != 124 ] && status="failed (exit $rc)"
  echo "step $name: $status in $((SECONDS - t0)) s" | tee -a "$STEPS"
}
newest() { ls -t "$@" 2>/dev/null | grep -v unfinished | head -1; }
# The speed step: one kernel per call, merged into one table, so that a budget that runs out
# keeps what was measured. Arguments: the benchmark's own, then "--" and the kernels in order.
speed() {
  local args=() merge=""
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  shift
  for k in "$@"; do
    "$PY" -m benchmarks.kernels "${args[@]}" --kernels "$k" $merge || return 1
    [[ " ${args[*]} " == *" --merge "* ]] || merge=--merge
  done
}

# The speed step's kernels, those without a row in this GPU's stored table first.
speed_order() {
  "$PY" - "$BENCH_ROOT/$GPU/kernels.csv" <<'EOF'
import sys
from pathlib import Path
import pandas as pd
order = ["rmsnorm", "flash_attention", "w4a16_gemm", "w8a16_gemm", "gemm", "decode_attention",
         "paged_decode_attention"]
path = Path(sys.argv[1])
done = set(pd.read_csv(path)["kernel"]) if path.is_file() else set()
print(" ".join(sorted(order, key=lambda k: k in done)))  # stable: the order above otherwise
EOF
}

run provenance 15 "$PY" scripts/gpu_check_summary.py --print-provenance
cp "$LOGS/provenance.log" "$LOGS/provenance.txt" 2>/dev/null

if [ "$DRY" = 1 ]; then
  run pytest 60 "$PY" -m pytest -q -m gpu -p no:cacheprovider tests/kernels/test_w4a16_gemm.py
  run suite 60 "$PY" -m rooflens.cli validate run --device cpu --quick --limit 2 --fresh \
    --results "$VAL_ROOT"
  run speed 90 speed --device cpu --small --reps 2 --results "$BENCH_ROOT" -- gemm w4a16_gemm
  TINY="$ROOT/src/rooflens/validate/e2e/tiny-llama.yaml"
  run e2e_eager 60 "$PY" -m rooflens.cli validate e2e --model "$TINY" --device cpu \
    --batch 1,2 --context 16,32 --repeats 1 --stored-spec --results "$VAL_ROOT"
  E2E_EAGER="$(newest "$VAL_ROOT/e2e/$GPU"/*-e2e.csv)"
  # --compile's path with TorchDynamo disabled: inductor would take minutes on a CPU.
  run e2e_compile 60 env TORCHDYNAMO_DISABLE=1 "$PY" -m rooflens.cli validate e2e --model "$TINY" \
    --device cpu --batch 1 --context 16 --repeats 1 --stored-spec --compile \
    --results "$VAL_ROOT"
else
  XDIST=()
  "$PY" -c 'import xdist' 2>/dev/null && XDIST=(-n 8)
  # --durations: the slowest tests, printed even when the budget stops the step (218 tests;
  # 62 passed in 70 s cold, 130 in 110 s warm on 8 workers, 2026-11-28), to trim the set
  run pytest 60 "$PY" -m pytest -q -m gpu -p no:cacheprovider --continue-on-collection-errors \
    --durations=25 "${XDIST[@]}" tests/kernels tests/validate
  run suite 100 "$PY" -m rooflens.cli validate run --device cuda --quick --fresh
  E2E=(--model llama-3-8b --device cuda --batch 1,8,32,128 --context 1024,4096 --layers 4
       --repeats 3)
  run e2e_eager 90 "$PY" -m rooflens.cli validate e2e "${E2E[@]}"
  E2E_EAGER="$(newest "$VAL_ROOT/e2e/$GPU"/*-e2e.csv)"
  run e2e_compile 120 "$PY" -m rooflens.cli validate e2e "${E2E[@]}" --compile
  MERGE=()
  [ -f "$BENCH_ROOT/$GPU/kernels.csv" ] && MERGE=(--merge)
  run speed 80 speed --device cuda --limit 5 "${MERGE[@]}" -- $(speed_order)
fi
# e2e runs go to their own store (validate/results/e2e/<gpu>/), apart from the kernel runs that
# `calibrate fit --results-device` reads; "newest" is this run's only if it finished.
E2E_COMPILE="$(newest "$VAL_ROOT/e2e/$GPU"/*-e2e.csv)"
[ "$E2E_COMPILE" = "$E2E_EAGER" ] && E2E_COMPILE=""
[ -n "$E2E_EAGER" ] && [ "$E2E_EAGER" -ot "$LOGS/.start" ] && E2E_EAGER=""
[ -n "$E2E_COMPILE" ] && [ "$E2E_COMPILE" -ot "$LOGS/.start" ] && E2E_COMPILE=""

SUITE_CSV="$(newest "$VAL_ROOT/$GPU"/*quick*.csv)"
[ -n "$SUITE_CSV" ] && [ "$SUITE_CSV" -ot "$LOGS/.start" ] && SUITE_CSV=""  # an older run's
if [ -z "$SUITE_CSV" ] && [ -f "$VAL_ROOT/$GPU/quick-unfinished.csv" ] \
   && [ "$VAL_ROOT/$GPU/quick-unfinished.csv" -nt "$LOGS/.start" ]; then
  SUITE_CSV="$VAL_ROOT/$GPU/quick-unfinished.csv"  # stopped at its budget: the rows it measured
fi
KERNELS_CSV="$BENCH_ROOT/$GPU/kernels.csv"
[ -f "$KERNELS_CSV" ] || KERNELS_CSV=""
FILES=()
for f in "$LOGS/provenance.txt" "$SUITE_CSV" "$KERNELS_CSV" "$BENCH_ROOT/$GPU/kernels.md" \
         "$E2E_EAGER" "$E2E_COMPILE"; do
  [ -n "$f" ] && [ -f "$f" ] && FILES+=(--files "$f")
done
run summary 15 "$PY" scripts/gpu_check_summary.py --out "$LOGS" --provenance "$LOGS/provenance.txt" \
  --steps "$STEPS" --validate "$SUITE_CSV" --kernels "$KERNELS_CSV" \
  --e2e "$E2E_EAGER" --e2e "$E2E_COMPILE" \
  "${FILES[@]}"

if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
  paths=("$LOGS")
  for f in "$SUITE_CSV" "$KERNELS_CSV" "$BENCH_ROOT/$GPU/kernels.md" "$E2E_EAGER" \
           "$E2E_COMPILE"; do
    [ -n "$f" ] && [ -f "$f" ] && paths+=("$f")
  done
  tar -czf "$OUT/gpu_check-$GPU.tar.gz" -C / "${paths[@]#/}" && cp "$LOGS/summary.md" "$OUT/summary.md"
  echo "copied to $OUT: gpu_check-$GPU.tar.gz, summary.md"
fi
echo "gpu_check: done in $((SECONDS - START)) s; summary: $LOGS/summary.md"
grep -q "failed" "$STEPS" && exit 1
exit 0
