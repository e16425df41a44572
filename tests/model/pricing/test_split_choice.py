"""A decode call whose KV split is the engine heuristic's is priced on the cheaper of its split
and unsplit grids (model/pricing/roofline.py price_op), and an eager step takes the unsplit
grid where the combine's host launch costs more than it saves
(model/optimizations/eager_launch.py unsplit_if_host_bound): one more sequence that ends the
heuristic's split never makes a step faster."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import IDEAL, KindEfficiency, Profile
from rooflens.hardware.systems import default_system
from rooflens.model.ops.attention import SPLIT_FREE, attention_op, regrid
from rooflens.model.ops.op import kernels_per_call
from rooflens.model.predict.api import make_scenario, run
from rooflens.model.pricing.host import step_launches
from rooflens.model.pricing.roofline import _price_one, price_op

GPU = get_gpu("b200")
SYSTEM = default_system(GPU)
# a launch floor large against the combine's saving: splitting small grids does not pay
TERMS = KindEfficiency(memory_fraction=0.9, overhead_cycles=20000.0, overlap_power=2.0)
COSTLY = Profile(name="calibrated", kinds={"attention_decode": TERMS}, source="test")


def _decode(batch: np.ndarray, splits: float = 0.0):  # type: ignore[no-untyped-def]
    return attention_op("decode", 1, batch, 1, 405.0, 8, 4, 256, "bf16", "bf16",
                        sm_count=GPU.sm_count, splits=splits)  # fmt: skip


@pytest.mark.parametrize("profile", [IDEAL, COSTLY], ids=["ideal", "costly-launch"])
def test_a_free_split_is_priced_at_the_cheaper_grid(profile: Profile) -> None:
    batch = np.arange(1.0, 80.0)
    op = _decode(batch)
    assert np.any(np.asarray(op.shape["kv_splits"]) > 1)  # the heuristic splits small batches
    split = _price_one(op, SYSTEM, profile).time_s
    unsplit = _price_one(regrid(op, 1.0, GPU.sm_count), SYSTEM, profile).time_s
    priced = price_op(op, SYSTEM, profile)
    np.testing.assert_allclose(priced.time_s, np.minimum(split, unsplit), rtol=1e-12)
    # the op it reports is the grid it priced: one launch where unsplit won
    won = np.asarray(unsplit) < np.asarray(split)
    launches = np.asarray(kernels_per_call(priced.op))
    assert np.all(launches[won] == 1.0)
    if profile is COSTLY:
        assert won.any()  # a 20,000-cycle combine launch does not pay on a small cache
    # and the time never falls as the batch grows
    assert np.all(np.diff(np.asarray(priced.time_s)) >= -1e-15)


def test_a_pinned_split_is_kept() -> None:
    op = _decode(np.arange(1.0, 40.0), splits=4.0)  # a kv_splits column, or flash-decoding
    assert not np.any(op.shape[SPLIT_FREE])
    np.testing.assert_allclose(price_op(op, SYSTEM, COSTLY).time_s,
                               _price_one(op, SYSTEM, COSTLY).time_s)  # fmt: skip
    assert np.all(np.asarray(kernels_per_call(price_op(op, SYSTEM, COSTLY).op)) == 2.0)


def _tpot(batch: int, **settings: object) -> float:
    opts = settings.pop("opts", ())
    sc = make_scenario(batch=batch, profile="calibrated", **settings)  # type: ignore[arg-type]
    return run(sc, opts).tpot_s  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("batch", "settings"),
    [
        # found by benchmarks/scenario_space.py: the split stopped at 2x the batch and the step
        # got faster (graph-captured: 2.834 -> 2.829 ms; eager: 3.142 -> 2.902 ms)
        (19, {"model": "gemma-3-4b", "gpu": "b200", "prompt_len": 341, "opts": ("fusion",),
              "weight_dtype": "fp8", "act_dtype": "fp8"}),
        (39, {"model": "mistral-7b", "gpu": "b200", "tp": 4, "prompt_len": 1960,
              "opts": ("eager-launch",), "weight_dtype": "fp8", "act_dtype": "bf16"}),
        (22, {"model": "llama-3-8b", "gpu": "b200", "tp": 4, "prompt_len": 1400,
              "opts": ("eager-launch",)}),
    ],
)  # fmt: skip
def test_a_step_never_gets_faster_when_the_split_ends(batch: int, settings: dict) -> None:
    assert _tpot(2 * batch, **settings) >= _tpot(batch, **settings)


def test_an_eager_step_is_the_shorter_of_split_and_unsplit() -> None:
    # llama-3-8b on an H100 at TP 4, batch 4, SGLang's terms: graph-captured the split pays on
    # the GPU (2.61 against 3.22 ms); eagerly at 8 us a launch each split call's combine is one
    # more host launch, and the 32 of them cost more than the GPU time the split saves (419
    # launches, 3.35 ms, against 3.22 ms), so the eager step runs it unsplit. (On vLLM's own FA3
    # terms this step does not split even graph-captured.)
    sc = make_scenario("llama-3-8b", "h100-sxm", tp=4, prompt_len=1400, output_len=2, batch=4,
                       profile="calibrated", engine="sglang")  # fmt: skip
    h = 8e-6
    graphed, eager = run(sc), run(sc, ("eager-launch:per_launch_us=8",))
    unsplit = run(sc, ("unsplit-decode",))  # the same step with the split switched off

    def attn(pred):  # type: ignore[no-untyped-def]
        return next(p for p in pred.decode.priced if p.op.name == "attn.core")

    assert np.all(np.asarray(kernels_per_call(attn(graphed).op)) == 3.0)  # split, combine, write
    assert np.all(np.asarray(kernels_per_call(attn(eager).op)) == 2.0)
    n_split = float(np.max(step_launches(p.op for p in graphed.decode.priced)))
    n_unsplit = float(np.max(step_launches(p.op for p in unsplit.decode.priced)))
    assert n_split - n_unsplit == 32  # one combine per layer
    expected = min(max(graphed.tpot_s, n_split * h), max(unsplit.tpot_s, n_unsplit * h))
    assert eager.tpot_s == pytest.approx(expected, rel=1e-9)
    assert eager.tpot_s < max(graphed.tpot_s, n_split * h)  # what it cost split
