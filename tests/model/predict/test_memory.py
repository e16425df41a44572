"""Memory: the largest batch that fits is the boundary of `fits`, checked by re-pricing the
scenario at that batch and one more (a second route through the public API)."""

from __future__ import annotations

import pytest

from rooflens.model.predict.api import make_pipeline, make_scenario

CASES = [
    ("llama-2-7b", "a100-sxm-80gb", 1, 2048, "bf16", "bf16"),
    ("llama-3-70b", "h100-sxm", 4, 4096, "bf16", "fp8"),
    ("mixtral-8x7b", "h200", 2, 32_000, "int4", "bf16"),
    ("phi-2", "l4", 1, 2048, "bf16", "bf16"),
    ("deepseek-v3", "b200", 8, 16_000, "fp8", "fp8"),
]


@pytest.mark.parametrize(("model", "gpu", "tp", "context", "weights", "kv"), CASES)
def test_max_batch_is_the_fit_boundary(
    model: str, gpu: str, tp: int, context: int, weights: str, kv: str
) -> None:
    def mem(batch: int):  # type: ignore[no-untyped-def]
        sc = make_scenario(model, gpu, tp=tp, batch=batch, prompt_len=context, output_len=1,
                           weight_dtype=weights, kv_dtype=kv)  # fmt: skip
        return make_pipeline(sc).memory()

    best = mem(1).max_batch
    assert best >= 1
    assert mem(best).fits
    assert not mem(best + 1).fits


def test_weights_split_by_tp_and_kv_by_kv_heads() -> None:
    one = make_pipeline(make_scenario("llama-3-70b", "h200", output_len=1)).memory()
    four = make_pipeline(make_scenario("llama-3-70b", "h200", tp=4, output_len=1)).memory()
    assert four.weights_bytes == pytest.approx(one.weights_bytes / 4, rel=0.01)
    assert four.kv_bytes_per_token == one.kv_bytes_per_token / 4  # 8 KV heads over 4 GPUs
    # TP beyond the KV heads replicates them: 16 GPUs still hold one KV head each.
    sixteen = make_scenario("llama-3-70b", "h200", tp=16, output_len=1)
    assert make_pipeline(sixteen).memory().kv_bytes_per_token == one.kv_bytes_per_token / 8


def test_int4_weights_are_a_quarter_plus_group_scales() -> None:
    bf16 = make_pipeline(make_scenario("llama-2-7b", "a100-sxm-80gb", output_len=1)).memory()
    int4 = make_pipeline(
        make_scenario("llama-2-7b", "a100-sxm-80gb", output_len=1, weight_dtype="int4")
    ).memory()
    # linear weights: 0.5 B + 2 B per 128 (fp16 group scale); embeddings and norms stay 16-bit
    linear = 6_476_005_376  # 32 layers × (4·4096² + 3·4096·11008)
    plain = bf16.weights_bytes - 2 * linear
    assert int4.weights_bytes == pytest.approx(plain + linear * (0.5 + 2 / 128))


@pytest.mark.parametrize("ceiling", [2, 3, 64, 65, 1000, 1 << 20])
def test_max_batch_search_equals_a_scan(ceiling: int) -> None:
    # the bracket search against a plain scan over every batch, on non-decreasing totals with
    # flat stretches and jumps (activations that stop growing once a prefill chunk is full)
    import numpy as np

    from rooflens.model.predict.memory import _max_batch

    def total(b):  # type: ignore[no-untyped-def]
        b = np.asarray(b, dtype=float)
        return 100.0 + 3.0 * b + np.minimum(b, 40.0) * 7.0 + (b > 500) * 50.0

    scan = np.arange(1, min(ceiling, 5000) + 1)
    for capacity in (50.0, 109.0, 110.0, 111.0, 500.0, 2000.0, 2203.0, 3e6):
        fitting = scan[total(scan) <= capacity]
        expected = int(fitting.max()) if len(fitting) else 0
        if capacity == 3e6:  # beyond the scan: everything up to the ceiling fits
            expected = ceiling if total(ceiling) <= capacity else int((capacity - 430) // 3)
        assert _max_batch(total, capacity, ceiling) == expected, capacity
