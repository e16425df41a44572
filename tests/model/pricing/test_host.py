"""model/pricing/host.py: launches are the operator table's rows × count, host time is launches ×
the
per-launch cost (one launch for a CUDA graph), and only host time beyond the device's shows on
a GPU while all of it shows on a CPU."""

from __future__ import annotations

import pytest

from rooflens.model.ops.table import build_ops, decode_ops
from rooflens.model.predict.api import make_scenario
from rooflens.model.pricing.host import EAGER_LAUNCH_S, exposed_host_s, host_time_s, launches


def test_launches_of_a_llama_step_are_ten_per_layer_plus_three_and_split_kv_adds_one():
    # per layer: norm.attn, qkv, rope, the KV-cache write (vLLM's reshape_and_cache, SGLang's
    # set_kv_buffer: a kernel of its own), attention, o_proj, norm.mlp, up_gate, act, down;
    # once: embed, norm.final, lm_head (model/ops/table.py's default stack)
    sc = make_scenario("llama-3-8b", "h100-sxm", batch=1, prompt_len=1024, output_len=2)
    prefill = build_ops(sc, "prefill", 1.0, 1024.0, 1024.0)
    assert launches(prefill) == 10 * 32 + 3 == sum(op.count for op in prefill) + 32
    assert host_time_s(prefill, 1e-5) == pytest.approx(323 * 1e-5)
    # batch-1 decode splits the KV length over the SMs (Flash-Decoding): each layer's attention
    # is three kernels, the KV write, the split pass and its combine
    ops = decode_ops(sc, 1025.0)
    core = next(op for op in ops if op.name == "attn.core")
    assert core.shape["kv_splits"] > 1
    assert launches(ops) == 11 * 32 + 3


def test_a_cuda_graph_is_one_launch_and_the_default_cost_is_a_few_microseconds():
    sc = make_scenario("llama-2-7b", "a100-sxm-80gb", batch=8, prompt_len=512, output_len=2)
    ops = decode_ops(sc, 513.0)
    assert host_time_s(ops, graphed=True) == EAGER_LAUNCH_S
    assert 5e-6 <= EAGER_LAUNCH_S <= 10e-6
    with pytest.raises(ValueError):
        host_time_s(ops, -1.0)


def test_host_time_shows_beyond_the_device_on_a_gpu_and_whole_on_a_cpu():
    assert exposed_host_s(3e-3, 1e-3, overlapped=True) == pytest.approx(2e-3)  # host-bound
    assert exposed_host_s(1e-3, 3e-3, overlapped=True) == 0.0  # the GPU hides it
    assert exposed_host_s(1e-3, 3e-3, overlapped=False) == 1e-3  # CPU: same cores
