"""The `moe` op of the kernel contract: closed forms, one formula shared with the operator table
(model/ops/moe.py), the benchmark's routing (validate/moe_routing.py), and the ideal profile as a
lower bound on every measured fused-MoE call (vLLM fused_moe, A100)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooflens.hardware.presets import get_gpu
from rooflens.hardware.profiles import get_profile
from rooflens.model.ops.table import decode_ops
from rooflens.model.predict.api import make_scenario
from rooflens.model.pricing.kernel_table import predict_frame, predict_kernels
from rooflens.validate.aiconfigurator import load_moe
from rooflens.validate.compare import join
from rooflens.validate.moe_routing import power_law_work, with_routing

A100 = get_gpu("a100-sxm-80gb")


def _moe(**cols: object) -> dict[str, object]:
    base = {"op": "moe", "num_tokens": 1, "hidden_size": 4096, "inter_size": 14336, "topk": 2,
            "num_experts": 8, "moe_tp_size": 1, "moe_ep_size": 1, "dtype": "bf16"}  # fmt: skip
    return {**base, **cols}


def test_closed_forms_of_the_moe_row():
    N, D, F, k, E, tp = 64, 4096, 14336, 2, 8, 2
    out = predict_kernels(pd.DataFrame([_moe(num_tokens=N, moe_tp_size=tp), _moe()]), A100)
    # Gated experts: gate+up [2F/tp, D] and down [D, F/tp] per token-expert pair.
    assert out.loc[0, "flops"] == pytest.approx(2 * N * k * 3 * D * F / tp)
    read = E * (1 - (1 - k / E) ** N)  # balls into bins: all 8 experts at 64 tokens
    act = N * k * (2 * D + 2 * F / tp + 2 * F / tp) * 2
    assert out.loc[0, "bytes"] == pytest.approx(read * 3 * D * F / tp * 2 + act)
    # One token reads exactly its k experts: a memory-bound GEMV over 2 experts' weights.
    assert out.loc[1, "bytes"] == pytest.approx(k * 3 * D * F * 2 + k * (2 * D + 4 * F) * 2)
    assert out.loc[1, "bound"] == "memory"
    assert out.loc[1, "predicted_s"] == pytest.approx(out.loc[1, "bytes"] / 2.039e12)


@pytest.mark.parametrize(("tp", "ep"), [(2, 1), (1, 2), (2, 4)])
def test_table_and_kernel_prediction_share_one_formula(tp, ep):
    B, m = 12, "mixtral-8x7b"
    sc = make_scenario(m, "a100-sxm-80gb", batch=B, tp=tp, ep=ep)
    experts = next(op for op in decode_ops(sc, 700.0) if op.name == "moe.experts")
    spec = sc.model
    # The table's EP layout: whole experts (moe_tp 1) on ep GPUs, each serving ep/tp replicas.
    row = _moe(num_tokens=B * (ep // tp if ep > 1 else 1), hidden_size=spec.d_model,
               inter_size=spec.d_ff_expert, topk=spec.experts_per_token,
               num_experts=spec.n_experts, moe_tp_size=tp if ep == 1 else 1,
               moe_ep_size=ep)  # fmt: skip
    out = predict_kernels(pd.DataFrame([row]), A100)
    assert out.loc[0, "flops"] == pytest.approx(float(experts.flops), rel=1e-12)
    assert out.loc[0, "bytes"] == pytest.approx(float(experts.bytes), rel=1e-12)


def test_known_routing_replaces_the_uniform_estimate():
    rows = pd.DataFrame([_moe(num_tokens=16), _moe(num_tokens=16, assignments=20.0,
                                                     experts_read=3.0)])  # fmt: skip
    out = predict_frame(rows, A100)
    assert out.loc[1, "flops"] == pytest.approx(out.loc[0, "flops"] * 20 / 32)
    assert out.loc[1, "bytes"] < out.loc[0, "bytes"]
    pd.testing.assert_series_equal(out["bytes"], predict_kernels(rows, A100)["bytes"])


@pytest.mark.parametrize("alpha", [1.01, 1.2])
def test_power_law_routing_conserves_tokens_and_puts_the_heaviest_group_on_rank_0(alpha):
    tokens = np.array([1, 16, 256, 4096])
    k = np.full(4, 8)
    total, read = power_law_work(tokens, 256, k, 1, alpha)
    assert total == pytest.approx(tokens * 8)  # every pick lands on one of the GPU's experts
    assert (read <= 256).all() and (read >= 8).all()
    ep_total, ep_read = power_law_work(tokens, 256, k, 8, alpha)
    assert (ep_total >= tokens * 8 / 8).all()  # the heaviest of 8 groups carries >= the mean
    assert (ep_read <= 32).all()


@pytest.fixture(scope="module")
def moe_rows(measured_dir):
    return load_moe(measured_dir)


def test_ideal_is_a_lower_bound_on_every_measured_moe_call(moe_rows):
    """vLLM's fused_moe on the A100 (the collector whose power-law routing validate/moe_routing.py
    reproduces): no call below the ideal. Every other engine and GPU: the calls below it that
    no L2 can explain stay a small share (RTX PRO 6000 5.5 %, H100 and B300 under 3 %: rows of
    the `balanced` DeepSeek-V3 shapes faster than streaming every expert once)."""
    vllm_a100 = moe_rows["source"].str.startswith("aiconfigurator-a100/moe/vllm/")
    routed = join(with_routing(moe_rows[vllm_a100]), ("ideal",))
    uniform = join(moe_rows[vllm_a100], ("ideal",))
    print(f"\nMoE rows below the ideal: {int(routed['below_ideal'].sum())} of {len(routed)} "
          f"with the benchmark's routing, {int(uniform['below_ideal'].sum())} with uniform "
          "routing")  # fmt: skip
    assert not routed["below_ideal"].any()
    # Without the skew the uniform formula reads too many experts on some rows: the check bites.
    assert uniform["below_ideal"].any()
    every = join(with_routing(moe_rows), ("ideal",))
    unexplained = every["ideal_under"].groupby(every["gpu"]).mean()
    print("MoE calls below the ideal, not explained by the L2:", unexplained.round(4).to_dict())
    assert (unexplained <= 0.06).all()


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_gpt_oss_experts_on_the_h100_cost_what_each_engine_s_own_kernel_measured(moe_rows, engine):
    """gpt-oss-120b's MXFP4 experts (2,880 wide, 128 experts, top 4) at decode token counts: each
    engine's calibrated terms price its own Triton kernel, SGLang's at a third of vLLM's
    bandwidth, within 20 % of its table. They were fitted on that kernel and on Kimi-K3's Marlin
    rows timed with a stand-in activation (validate/aiconfigurator.py LEFT_OUT_MOE_KERNELS),
    which priced SGLang's at 0.45-0.53x of its table from 8 to 64 tokens."""
    h100 = get_gpu("h100-sxm")
    rows = moe_rows[
        moe_rows["source"].str.startswith(f"aiconfigurator-h100/moe/{engine}/")
        & moe_rows["quant"].eq("w4a16_mxfp4") & moe_rows["num_experts"].eq(128)
        & moe_rows["hidden_size"].eq(2880) & moe_rows["distribution"].eq("balanced")
        & moe_rows["moe_tp_size"].eq(1) & moe_rows["moe_ep_size"].eq(1)
        & moe_rows["num_tokens"].isin([1, 8, 16, 64])
    ]  # fmt: skip
    assert sorted(rows["num_tokens"]) == [1, 8, 16, 64]
    priced = predict_frame(rows, h100, get_profile("calibrated", h100, engine))
    ratio = priced["predicted_s"] / priced["measured_s"]
    assert ratio.between(0.8, 1.2).all(), ratio.round(3).tolist()
