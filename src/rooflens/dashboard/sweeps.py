"""The dashboard's sweeps: one setting varied over a grid, every point a full run of
`model.predict.api`.

Each point goes through the whole pipeline (optimizations' `result` hooks included, e.g.
speculative decoding), so a sweep point and the Explore page agree exactly at the same setting.
Pure functions of `Settings` (no Streamlit), so the benchmark and tests call them directly;
`dashboard.compute` caches them. Grids are small (≤ 14 points per axis); a 70B point costs a few
milliseconds.
"""

from __future__ import annotations

import pandas as pd

from rooflens.dashboard.settings import Settings
from rooflens.hardware.errors import RooflensError
from rooflens.model.analysis.advice import FitAdvice, fit_fixes
from rooflens.model.optimizations import parse_opt
from rooflens.model.optimizations.sliding_window import streaming_spec
from rooflens.model.predict.api import make_pipeline, run, scenario_of
from rooflens.model.predict.scenario import Scenario
from rooflens.model.predict.steps import Prediction
from rooflens.model.specs.presets import get_model

BATCH_GRID = tuple(2**k for k in range(13))  # 1 .. 4096 sequences
TP_GRID = (1, 2, 4, 8, 16)
KV_DTYPE_GRID = ("bf16", "fp8", "int8", "int4")
MIN_SWEEP_PROMPT = 128
MIN_GRID_CONTEXT = 512


def scenario(s: Settings) -> Scenario:
    """The scenario of `s`, built as every face builds one (model.predict.api.scenario_of)."""
    return scenario_of(s.request())


def streaming_note(s: Settings) -> str:
    """The quality assumption of running past the model's context under a sliding window ('' when
    the sequence fits the context or no window is on)."""
    opts = [parse_opt(o) for o in s.opts]
    return streaming_spec(get_model(s.model_ref), opts, s.prompt_len + s.output_len - 1)[1]


def predict(s: Settings) -> Prediction:
    return run(scenario(s))  # with the optimizations it was built with


def _row(pred: Prediction) -> dict[str, object]:
    sc, mem = pred.scenario, pred.memory
    return {
        "batch": sc.workload.batch,
        "prompt_len": sc.workload.prompt_len,
        "output_len": sc.workload.output_len,
        "context_tokens": sc.context_tokens,
        "tp": sc.parallel.tp,
        "n_gpus": sc.parallel.n_gpus,
        "ttft_s": pred.ttft_s,
        "tpot_s": pred.tpot_s,
        "e2e_s": pred.e2e_s,
        "output_tokens_per_s": pred.output_tokens_per_s,
        "output_tokens_per_s_per_gpu": pred.output_tokens_per_s / sc.parallel.n_gpus,
        "prefill_bound": pred.prefill.bound,
        "decode_bound": pred.decode.bound,
        "memory_total_bytes": mem.total_bytes,
        "kv_cache_bytes": mem.kv_cache_bytes,
        "capacity_bytes": mem.capacity_bytes,
        "max_batch": mem.max_batch,
        "fits": mem.fits,
    }


def batch_sweep(s: Settings) -> pd.DataFrame:
    """Latency and throughput at batch 1, 2, 4, … 4096 (points past max batch marked unfit)."""
    return pd.DataFrame([_row(predict(s.with_(batch=b))) for b in BATCH_GRID])


def decode_crossover(frame: pd.DataFrame) -> tuple[int, int] | None:
    """(last memory-bound batch, first compute-bound batch) of decode in a batch sweep."""
    compute = frame.index[frame["decode_bound"] == "compute"]
    if len(compute) == 0 or compute[0] == frame.index[0]:
        return None
    first = int(compute[0])
    batch = frame["batch"]  # by label, as `compute` is
    return int(batch[first - 1]), int(batch[first])


def longest_prompt(s: Settings) -> int:
    """The longest prompt the model's context holds with this output: max_context − O + 1."""
    return get_model(s.model_ref).max_context - s.output_len + 1


def context_sweep(s: Settings) -> pd.DataFrame:
    """Latency and throughput over prompt lengths 128, 256, … up to the longest the model holds."""
    longest = longest_prompt(s)
    if longest < 1:
        raise RooflensError(
            f"output length {s.output_len} leaves no room for a prompt in the model's context"
        )
    grid = [p for p in (MIN_SWEEP_PROMPT * 2**k for k in range(20)) if p < longest] + [longest]
    return pd.DataFrame([_row(predict(s.with_(prompt_len=p))) for p in grid])


def tp_sweep(s: Settings) -> pd.DataFrame:
    """Latency, throughput and memory per GPU at each TP degree the model's heads allow."""
    rows = []
    for tp in TP_GRID:
        try:
            sc = scenario_of(s.with_(tp=tp).request())
        except RooflensError:
            continue  # this TP does not divide the heads: not a valid point, left out
        rows.append(_row(run(sc)))
    return pd.DataFrame(rows)


def context_grid(max_context: int) -> list[int]:
    grid = [c for c in (MIN_GRID_CONTEXT * 2**k for k in range(20)) if c < max_context]
    return [*grid, max_context]


def max_batch_grid(s: Settings) -> pd.DataFrame:
    """Max batch that fits, over context length × KV-cache dtype (long form).

    Each cell is `rooflens memory --context C --kv-dtype D`: a prompt of C tokens, one output
    token, so the cache holds C positions per sequence.
    """
    dtypes = list(KV_DTYPE_GRID)
    current = scenario(s).precision.kv_dtype
    if current not in dtypes:
        dtypes.insert(0, current)
    rows = []
    for context in context_grid(get_model(s.model_ref).max_context):
        for kv in dtypes:
            cell = s.with_(prompt_len=context, output_len=1, kv_dtype=kv, batch=1)
            pipeline = make_pipeline(scenario(cell))
            mem = pipeline.memory()
            rows.append(
                {
                    "context_tokens": context,
                    "kv_dtype": kv,
                    "max_batch": mem.max_batch,
                    "kv_bytes_per_token": mem.kv_bytes_per_token,
                }
            )
    return pd.DataFrame(rows)


def fit_advice(s: Settings) -> FitAdvice:
    """`model.advice.fit_fixes` for the sidebar's scenario, each fix checked with the sidebar's
    optimizations in force."""
    sc = scenario(s)

    def fits(candidate: Scenario) -> bool:
        try:
            return bool(make_pipeline(candidate, s.opts).memory().fits)
        except RooflensError:
            return False

    return fit_fixes(sc, make_pipeline(sc).memory(), fits)
