"""Operator rows of a hybrid model's Mamba mixers (Gu & Dao 2023, "Mamba", §3; the layers of
Jamba, Lieber et al. 2024, that have no attention), per step of B sequences × T new tokens.

E = expand · D channels, split by TP as vLLM's MambaMixer splits them: in_proj [n, D]·[D, 2E]
(x and the gate z), the depthwise causal conv1d (2k FLOPs per channel and token), x_proj to
Δ, B, C (R + 2N wide), dt_proj R → E, the selective scan, out_proj [n, E]·[E, D] (the layer's
TP all-reduce follows, as after attention). The scan costs ~9 FLOPs per channel and state
element (exp(ΔA), ΔB·x, the h update, C·h) and reads x, z, Δ (E each) and B, C (N each) and
writes y; the recurrent state, E × N plus the conv's last k − 1 inputs, is a constant-size
cache (model/predict/memory.py ssm_state_bytes_per_sequence): a decode step reads and writes it
once,
prefill writes it once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rooflens.model.ops.op import Num, Op, gemm_op
from rooflens.model.specs.dtypes import dtype_bytes

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario

SCAN_FLOPS_PER_STATE_ELEMENT = 9.0


def mamba_ops(sc: Scenario, phase: str, B: Num, T: Num) -> list[Op]:
    m, p, tp = sc.model, sc.precision, sc.parallel.tp
    count = m.n_mamba_layers
    if not count:
        return []
    D, N, R, k = m.d_model, m.ssm_state_size, m.ssm_dt_rank, m.ssm_conv_kernel
    E = m.ssm_inner / tp
    n = B * T
    ab, kvb = dtype_bytes(p.act_dtype), dtype_bytes(p.kv_dtype)

    def gemm(name: str, M: Num, width: float, K: float) -> Op:
        return gemm_op(name, phase, count, M, width, K, p.weight_dtype, p.act_dtype,
                       p.weight_group_size, quant=p.quant_label(p.weight_dtype))  # fmt: skip

    conv_act = 2 * n * E * ab
    conv = Op(name="ssm.conv1d", phase=phase, kind="elementwise", count=count,
              flops=2.0 * k * n * E, weight_bytes=E * (k + 1) * 2.0, act_bytes=conv_act,
              kv_bytes=0.0, compute_dtype="fp32", live_bytes=conv_act)  # fmt: skip
    state = B * E * (N + k - 1) * kvb
    passes = 1.0 if phase == "prefill" else 2.0
    scan_act = n * (3 * E + 2 * N + E) * ab  # x, z, Δ, B, C read; y written
    scan = Op(
        name="ssm.scan",
        phase=phase,
        kind="elementwise",
        count=count,
        flops=SCAN_FLOPS_PER_STATE_ELEMENT * n * E * N,
        weight_bytes=E * (N + 2) * 2.0,  # A_log, D and the dt bias, 16-bit
        act_bytes=scan_act,
        kv_bytes=passes * state,
        compute_dtype="fp32",
        live_bytes=scan_act,
        shape={"batch": B, "new_tokens": T, "inner": E, "state": N},
    )
    return [
        gemm("ssm.in_proj", n, 2 * E, D),
        conv,
        gemm("ssm.x_proj", n, R + 2 * N, E),
        gemm("ssm.dt_proj", n, E, R),
        scan,
        gemm("ssm.out_proj", n, D, E),
    ]
