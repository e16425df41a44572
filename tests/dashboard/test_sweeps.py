"""The dashboard's sweeps against independent expectations: each point equals a direct
`model.api.run`, the decode crossover brackets the GPU's ridge point, TP and context grids
follow the model's heads and context, and the max-batch grid follows KV bytes per token."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooflens.dashboard import sweeps
from rooflens.dashboard.settings import DEFAULTS
from rooflens.hardware.presets import get_gpu
from rooflens.model.predict.api import make_scenario, run
from rooflens.model.specs.presets import get_model

S = DEFAULTS  # llama-3-70b on 4 x h100-sxm, batch 8, prompt 512, output 128, bf16


@pytest.fixture(scope="module")
def batch_frame() -> pd.DataFrame:
    return sweeps.batch_sweep(S)


def test_a_sweep_point_is_the_direct_prediction(batch_frame: pd.DataFrame) -> None:
    row = batch_frame[batch_frame["batch"] == 32].iloc[0]
    direct = run(make_scenario("llama-3-70b", "h100-sxm", batch=32, tp=4, profile=DEFAULTS.profile))
    assert row["tpot_s"] == pytest.approx(direct.tpot_s, rel=1e-12)
    assert row["ttft_s"] == pytest.approx(direct.ttft_s, rel=1e-12)
    assert row["max_batch"] == direct.memory.max_batch


def test_throughput_grows_and_step_time_never_falls_with_batch(batch_frame: pd.DataFrame) -> None:
    assert list(batch_frame["batch"]) == list(sweeps.BATCH_GRID)
    assert np.all(np.diff(batch_frame["tpot_s"]) >= 0)
    assert np.all(np.diff(batch_frame["ttft_s"]) > 0)
    assert batch_frame["output_tokens_per_s"].iloc[-1] > batch_frame["output_tokens_per_s"].iloc[0]


def test_decode_turns_compute_bound_around_the_ridge_point(batch_frame: pd.DataFrame) -> None:
    # bf16 decode GEMMs do 2·B·N·K FLOPs over ≈ 2·N·K weight bytes: intensity ≈ B, so they
    # cross the H100's ridge point (989.4 TFLOP/s / 3.35 TB/s = 295 FLOP/byte) at B ≈ 295.
    ridge = get_gpu("h100-sxm").ridge_point("bf16")
    lo, hi = sweeps.decode_crossover(batch_frame)  # type: ignore[misc]
    assert lo < ridge <= hi
    assert (lo, hi) == (256, 512)


def test_decode_crossover_of_a_frame_that_never_turns() -> None:
    frame = pd.DataFrame({"batch": [1, 2, 4], "decode_bound": ["memory"] * 3})
    assert sweeps.decode_crossover(frame) is None


def test_context_sweep_reaches_the_longest_prompt_the_model_holds() -> None:
    s = S.with_(output_len=100)
    frame = sweeps.context_sweep(s)
    assert frame["prompt_len"].iloc[-1] == get_model("llama-3-70b").max_context - 100 + 1
    assert frame["context_tokens"].iloc[-1] == get_model("llama-3-70b").max_context
    assert np.all(np.diff(frame["ttft_s"]) > 0)


def test_tp_sweep_keeps_only_degrees_that_divide_the_heads() -> None:
    s = S.with_(model="llama-2-13b", tp=1)  # 40 heads, MHA
    frame = sweeps.tp_sweep(s)
    assert list(frame["tp"]) == [t for t in sweeps.TP_GRID if 40 % t == 0]
    assert list(frame["n_gpus"]) == list(frame["tp"])


def test_max_batch_grid_follows_kv_bytes_per_token() -> None:
    grid = sweeps.max_batch_grid(S)
    m = get_model("llama-3-70b")
    assert sorted(set(grid["context_tokens"])) == [512, 1024, 2048, 4096, m.max_context]
    per_token = grid.drop_duplicates("kv_dtype").set_index("kv_dtype")["kv_bytes_per_token"]
    # layers · 2 (K and V) · KV heads per GPU · head dim · bytes, TP 4 splits 8 KV heads to 2
    closed_form = m.n_layers * 2 * (m.n_kv_heads // 4) * m.head_dim
    assert per_token["bf16"] == closed_form * 2
    assert per_token["fp8"] == closed_form * 1
    assert per_token["int4"] == closed_form * 0.5
    table = grid.pivot(index="kv_dtype", columns="context_tokens", values="max_batch")
    assert np.all(np.diff(table.to_numpy(), axis=1) <= 0)  # longer context, fewer sequences
    assert np.all(table.loc["fp8"] >= table.loc["bf16"])  # smaller KV, more sequences
