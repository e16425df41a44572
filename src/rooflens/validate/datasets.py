"""The shared public GPU measurements (../shared/data/measured/, see its README) as one kernel
table (`load_kernels`) and the table calibration learns from (`training_table`). The loaders of
each source are validate/aiconfigurator.py (GEMM, attention, MoE, NCCL) and validate/vidur.py,
the reading they share validate/measured_files.py.

Each loader returns rows in the kernel CSV contract of DESIGN.md (`op` plus its shape columns)
plus `measured_s` (seconds per call), `impl` (engine and kernel), `gpu` (preset id) and `source`
(file, relative to the measurement folder), so measured and predicted tables join on identical
keys. Beyond the contract's `gemm`, `attention_prefill` and `attention_decode`, the memory-bound
operators of Vidur's tables use three validator ops (priced in model/pricing/kernel_table.py):
`norm` (rows, hidden, residual, norm), `elementwise` (elements_read, elements_written) and
`embedding` (rows, hidden). The fused-MoE table loads as the contract's `moe` op
(`load_moe`, labelled tuned or untuned by vLLM's shipped configs, validate/moe_configs.py;
`load_moe_kernels` adds the benchmark's routing and keeps moe_ep_size = 1); the
NCCL table has its own columns (`load_nccl`; comm is fitted in validate/comm_fit.py).
The project's own H100 runs (`rooflens-*/`, this validator's results format) load with
`load_rooflens`; `load_kernels` keeps the rows that time the kernel alone (`kernel_rows`).

Units on disk: aiconfigurator `latency` is milliseconds per call (CUDA-graph replay); Vidur
`time_stats.*.median` is milliseconds of CUDA time (eager PyTorch, profiler); NCCL
`message_size` counts elements, not bytes; rooflens `measured_s` is seconds per call.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pandas as pd

from rooflens.hardware.errors import RooflensError
from rooflens.validate.aiconfigurator import (
    load_aiconfigurator_attention,
    load_aiconfigurator_gemm,
    load_moe,
)
from rooflens.validate.measured_files import DEFAULT_ROOT, check_root, concat
from rooflens.validate.moe_routing import with_routing
from rooflens.validate.runs import as_run, kernel_rows, read_runs
from rooflens.validate.store import load_results
from rooflens.validate.vidur import load_vidur

KERNEL_OPS = ("gemm", "attention_prefill", "attention_decode", "moe", "norm", "elementwise",
              "embedding")  # fmt: skip


@cache
def _load_kernels(root: str) -> pd.DataFrame:
    path = Path(root)
    frame = concat(
        [
            load_aiconfigurator_gemm(path),
            load_aiconfigurator_attention(path),
            load_vidur(path),
            load_moe_kernels(path),
            kernel_rows(read_runs(path)),
        ]
    )
    return frame[frame["measured_s"] > 0].reset_index(drop=True)


def load_rooflens(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """Every row of the validator's own GPU runs (`rooflens-<gpu>/{torch,triton}/*.csv`),
    as validate/runs.py reads them; `load_kernels` keeps their `kernel_rows`."""
    return read_runs(check_root(root))


def load_moe_kernels(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """The MoE rows the kernel comparison and calibration use: moe_ep_size = 1, with the work
    the benchmark's power-law routing gave the GPU (validate/moe_routing.py).

    The expert-parallel rows are left out: the collector feeds all N tokens to one GPU and
    masks the experts it does not hold, so the kernel sorts and pads every token's picks, and
    the GPU holds the heaviest expert group by construction; neither is what an EP deployment
    runs (its GPUs receive only their own tokens after the all-to-all dispatch).
    """
    moe = load_moe(root)
    return with_routing(moe[moe["moe_ep_size"] == 1]) if len(moe) else moe


def load_kernels(root: Path = DEFAULT_ROOT) -> pd.DataFrame:
    """Every kernel measurement of the shared folder in one table (a fresh copy, cached read)."""
    return _load_kernels(str(check_root(root))).copy()


def own_runs(table: pd.DataFrame) -> pd.Series:
    """Rows of this project's own runs in the shared folder (`rooflens-<gpu>/`: torch baselines
    and the project's Triton kernels). They describe this project's kernels, not a deployment's:
    the calibration leaves them out, `validate compare` and `validate cv` still score them."""
    if "source" not in table.columns:
        return pd.Series(False, index=table.index)
    return table["source"].astype(str).str.startswith("rooflens-")


def training_table(
    measured: Path, results: Path, devices: list[str], include_own: bool = False
) -> pd.DataFrame:
    """What `calibrate fit` and `validate cv` learn from: the shared measurements
    (`load_kernels`; this project's own runs there only with `include_own`, which `validate cv`
    scores but never trains on) plus each device's stored runs, named on purpose, reduced as
    the shared H100 runs are (`as_run`, then `kernel_rows`)."""
    shared = load_kernels(measured)
    tables = [shared if include_own else shared[~own_runs(shared)]]
    for device in devices:
        runs = load_results(device, results)
        if runs.empty:
            raise RooflensError(f"no results stored for device '{device}' under {results}")
        tables.append(kernel_rows(as_run(runs)))
    return pd.concat(tables, ignore_index=True)
